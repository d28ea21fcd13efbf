/* The CBLAS enumerations, with the values every CBLAS (netlib, OpenBLAS, MKL,
 * BLIS) uses, so that callers compiled against any cblas.h pass the same
 * integers. Defined here rather than including a system cblas.h: the bridge
 * must build where no BLAS headers are installed, and must not pick up a
 * vendor's prototypes that differ in constness or integer width. */
#ifndef TSRB_CBLAS_DEFS_H
#define TSRB_CBLAS_DEFS_H

enum {
    TSRB_CBLAS_ROW_MAJOR = 101,
    TSRB_CBLAS_COL_MAJOR = 102,
    TSRB_CBLAS_NO_TRANS = 111,
    TSRB_CBLAS_TRANS = 112,
    TSRB_CBLAS_CONJ_TRANS = 113
};

#endif
