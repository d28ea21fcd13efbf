/* When Tessera cannot take a legal call (no context, TESSERA_BLAS_DISABLE,
 * no memory), the answer must still be right: the next sgemm_ in the
 * process (the BLAS we were preloaded in front of), else a plain loop. */
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_NOLOAD, dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

typedef void sgemm_fn(const char *transa, const char *transb, const int *m, const int *n,
                      const int *k, const float *alpha, const float *a, const int *lda,
                      const float *b, const int *ldb, const float *beta, float *c, const int *ldc,
                      size_t transa_len, size_t transb_len);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sgemm_fn *next_sgemm;

/* A function pointer from dlsym (POSIX guarantees the round trip). */
static sgemm_fn *as_fn(void *p) {
    sgemm_fn *f;
    _Static_assert(sizeof f == sizeof p, "function and object pointers differ in size");
    memcpy(&f, &p, sizeof f);
    return f;
}

static bool is_ours(void *sym) {
    Dl_info mine, theirs;
    return dladdr((void *)&tsrb_run, &mine) && dladdr(sym, &theirs) &&
           mine.dli_fbase == theirs.dli_fbase;
}

static void resolve(void) {
    /* The BLAS after us in the global scope: a program linked with -lblas,
     * or LD_PRELOAD in front of a directly linked BLAS. */
    void *sym = dlsym(RTLD_NEXT, "sgemm_");
    /* Python extensions (NumPy) load their BLAS with RTLD_LOCAL, out of
     * RTLD_NEXT's sight; ask the usual sonames, only if already loaded. */
    static const char *const sonames[] = {"libblas.so.3", "libopenblas.so.0"};
    for (size_t i = 0; (!sym || is_ours(sym)) && i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        /* The handle is kept: it keeps that library loaded while we use it. */
        sym = h ? dlsym(h, "sgemm_") : NULL;
    }
    if (sym && !is_ours(sym)) next_sgemm = as_fn(sym);
}

/* Some BLAS's sgemm_ may call back into cblas_sgemm (a CBLAS shim over
 * another Fortran BLAS); the guard sends such a loop to the plain loop. */
static _Thread_local int depth;

static void next_blas(const tsrb_gemm *g) {
    char ta = g->trans_a ? 'T' : 'N', tb = g->trans_b ? 'T' : 'N';
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    int lda = (int)g->lda, ldb = (int)g->ldb, ldc = (int)g->ldc;
    for (int64_t bt = 0; bt < g->batch; bt++)
        next_sgemm(&ta, &tb, &m, &n, &k, &g->alpha, g->a + bt * g->stride_a, &lda,
                   g->b + bt * g->stride_b, &ldb, &g->beta, g->c + bt * g->stride_c, &ldc, 1, 1);
}

static double op_b(const tsrb_gemm *g, const float *b, int64_t l, int64_t j) {
    return g->trans_b ? b[j + l * g->ldb] : b[l + j * g->ldb];
}

/* C = alpha op(A) op(B) + beta C, accumulated in double, one column of C at
 * a time: with A untransposed, as sums of A's (contiguous) columns; with A
 * transposed, as dot products of A's (contiguous) columns. */
static void builtin(const tsrb_gemm *g) {
    double *acc = malloc((size_t)g->m * sizeof(double));
    for (int64_t bt = 0; bt < g->batch; bt++) {
        const float *a = g->a + bt * g->stride_a, *b = g->b + bt * g->stride_b;
        float *c = g->c + bt * g->stride_c;
        for (int64_t j = 0; j < g->n; j++) {
            float *cj = c + j * g->ldc;
            if (acc && !g->trans_a) {
                for (int64_t i = 0; i < g->m; i++) acc[i] = 0.0;
                for (int64_t l = 0; l < g->k; l++) {
                    const float *al = a + l * g->lda;
                    double y = op_b(g, b, l, j);
                    for (int64_t i = 0; i < g->m; i++) acc[i] += al[i] * y;
                }
            }
            for (int64_t i = 0; i < g->m; i++) {
                double s = 0.0;
                if (acc && !g->trans_a) s = acc[i];
                else /* A transposed (or no memory for acc): a dot product */
                    for (int64_t l = 0; l < g->k; l++)
                        s += (double)(g->trans_a ? a[l + i * g->lda] : a[i + l * g->lda]) * op_b(g, b, l, j);
                double v = (double)g->alpha * s;
                if (g->beta != 0.0f) v += (double)g->beta * cj[i]; /* beta == 0: C not read */
                cj[i] = (float)v;
            }
        }
    }
    free(acc);
}

const char *tsrb_fallback(const tsrb_gemm *g) {
    pthread_once(&once, resolve);
    if (next_sgemm && depth == 0) {
        /* beta == 0 must not read C; not every BLAS is careful about it,
         * so C holds zeros (not NaN) before it is handed over. */
        if (g->beta == 0.0f) tsrb_scale_c(g);
        depth++;
        next_blas(g);
        depth--;
        return "next-blas";
    }
    builtin(g);
    return "builtin";
}
