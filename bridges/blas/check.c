/* Reference BLAS sgemm's argument checks, in its order: the first failing
 * test sets INFO, so a call with several bad arguments reports the same
 * parameter number as reference BLAS and OpenBLAS do. */
#include "bridge.h"

char tsrb_trans_letter(char c) {
    switch (c) {
    case 'N': case 'n': return 'N';
    case 'T': case 't': case 'C': case 'c': return 'T'; /* conjugate == transpose for reals */
    default: return 0;
    }
}

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

int tsrb_check_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, int64_t lda,
                     int64_t ldb, int64_t ldc) {
    char ta = tsrb_trans_letter(transa), tb = tsrb_trans_letter(transb);
    /* Rows of A and B as stored (column-major), whatever the transposes. */
    int64_t nrowa = ta == 'N' ? m : k, nrowb = tb == 'N' ? k : n;
    if (!ta) return 1;
    if (!tb) return 2;
    if (m < 0) return 3;
    if (n < 0) return 4;
    if (k < 0) return 5;
    if (lda < max1(nrowa)) return 8;
    if (ldb < max1(nrowb)) return 10;
    if (ldc < max1(m)) return 13;
    return 0;
}
