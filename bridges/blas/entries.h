/* The three symbols libtessera_blas exports, with the ABI of reference
 * BLAS (LP64: 32-bit INTEGER), netlib CBLAS and MKL. The CBLAS enums are
 * taken as int, which is how C passes an enum of these values. Not
 * installed: users keep their own cblas.h / mkl.h; this header is for the
 * bridge's sources and its tests. */
#ifndef TSRB_ENTRIES_H
#define TSRB_ENTRIES_H

#include "cblas_defs.h"

#if defined(__GNUC__)
#define TSRB_ENTRY __attribute__((visibility("default")))
#else
#define TSRB_ENTRY
#endif

/* Fortran: every argument by reference; the hidden string lengths that
 * gfortran appends are not read, so C callers may omit them. */
TSRB_ENTRY void sgemm_(const char *transa, const char *transb, const int *m, const int *n,
                       const int *k, const float *alpha, const float *a, const int *lda,
                       const float *b, const int *ldb, const float *beta, float *c,
                       const int *ldc);

TSRB_ENTRY void cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha,
                            const float *a, int lda, const float *b, int ldb, float beta, float *c,
                            int ldc);

/* MKL's argument order: C[i] = alpha op(A[i]) op(B[i]) + beta C[i] with
 * A[i] = a + i * stridea (likewise B, C), i in [0, batch_size). */
TSRB_ENTRY void cblas_sgemm_batch_strided(int layout, int transa, int transb, int m, int n, int k,
                                          float alpha, const float *a, int lda, int stridea,
                                          const float *b, int ldb, int strideb, float beta,
                                          float *c, int ldc, int stridec, int batch_size);

#endif
