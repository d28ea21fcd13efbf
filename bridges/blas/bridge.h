/* Internals of libtessera_blas, the BLAS/CBLAS drop-in over tsr_gemm.
 *
 * Every entry point (sgemm_, cblas_sgemm, cblas_sgemm_batch_strided) checks
 * its arguments as reference BLAS does, then rewrites the call as one
 * column-major problem (tsrb_gemm) and hands it to tsrb_run(). Row-major
 * CBLAS calls become C^T = op(B)^T op(A)^T, exactly as netlib CBLAS does
 * before it calls the Fortran routine. Nothing here is exported: the version
 * script (exports.map) keeps the three entry points only. */
#ifndef TSRB_BRIDGE_H
#define TSRB_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "tessera.h"

#if defined(__GNUC__)
#define TSRB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TSRB_PRINTF(f, a)
#endif

/* One column-major (batched) sgemm after its arguments were checked:
 * C[i] = alpha op(A[i]) op(B[i]) + beta C[i], i in [0, batch). */
typedef struct tsrb_gemm {
    bool trans_a, trans_b; /* 'T' and 'C' alike: the data are real */
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c; /* elements; 0 = the same matrix */
    int64_t batch;
    /* For TESSERA_BLAS_VERBOSE: the entry point and its layout letter. */
    const char *entry;
    char layout; /* 'C' or 'R' as the caller wrote it */
} tsrb_gemm;

/* --------------------------------------------------------------- checks */

/* Reference sgemm's argument checks in its order; 0 when legal, else the
 * parameter number that xerbla reports (1 transa ... 13 ldc). */
int tsrb_check_sgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, int64_t lda,
                     int64_t ldb, int64_t ldc);
/* 'N'/'n' -> 'N', 'T'/'t'/'C'/'c' -> 'T', anything else -> 0. */
char tsrb_trans_letter(char c);

/* --------------------------------------------------------------- errors */

/* Reports through the process's xerbla_ (the system BLAS's, or the
 * application's own, as BLAS allows) when there is one, else prints
 * reference BLAS's message to stderr. Never exits. */
void tsrb_xerbla(const char *srname, int info);
/* Reports through the process's cblas_xerbla when there is one (netlib's
 * exits, as netlib CBLAS does), else prints netlib's message to stderr and
 * returns. info is already the caller's parameter number. */
void tsrb_cblas_xerbla(int info, const char *rout, const char *form, ...) TSRB_PRINTF(3, 4);

/* ----------------------------------------------------- state, verbosity */

/* The shared CPU context, created once (NULL when creation failed or
 * TESSERA_BLAS_DISABLE is set: every call then takes the fallback). */
tsr_context *tsrb_context(void);
/* TESSERA_BLAS_VERBOSE was set to something other than "" or "0". */
bool tsrb_verbose(void);
/* One line to stderr, written with a single write() so that lines from
 * concurrent calls do not interleave. */
void tsrb_log(const char *fmt, ...) TSRB_PRINTF(1, 2);
/* The line's prefix describing g, shared by every path's log line. */
void tsrb_log_call(const tsrb_gemm *g, const char *path, const char *detail);

/* ---------------------------------------------------------------- paths */

/* Quick returns, C = beta C, then Tessera, then the fallback. */
void tsrb_run(const tsrb_gemm *g);
/* C = beta C for every batch matrix; beta == 0 writes exact zeros. */
void tsrb_scale_c(const tsrb_gemm *g);
/* tsr_gemm on the shared context. True when it ran (detail: the kernel's
 * name); false, with nothing written, when Tessera cannot take the call
 * (detail: why). */
bool tsrb_tessera(const tsrb_gemm *g, const char **detail);
/* The next BLAS's sgemm_ when there is one, else a plain loop. Requires
 * alpha != 0 and k > 0 (tsrb_run handles the rest). Returns the path taken:
 * "next-blas" or "builtin". */
const char *tsrb_fallback(const tsrb_gemm *g);

#endif
