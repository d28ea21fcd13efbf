/* The path of one checked call: reference BLAS's quick returns and its
 * alpha == 0 / k == 0 shortcut (which must not read A or B: NaN there must
 * not reach C), then Tessera, then the fallback. */
#include "bridge.h"

void tsrb_scale_c(const tsrb_gemm *g) {
    for (int64_t bt = 0; bt < g->batch; bt++) {
        float *c = g->c + bt * g->stride_c;
        for (int64_t j = 0; j < g->n; j++) {
            float *col = c + j * g->ldc;
            if (g->beta == 0.0f) /* exact zeros: NaN/Inf in C are not read */
                for (int64_t i = 0; i < g->m; i++) col[i] = 0.0f;
            else
                for (int64_t i = 0; i < g->m; i++) col[i] *= g->beta;
        }
    }
}

/* Returns the path's name; detail says which kernel ran or why Tessera
 * declined. */
static const char *run_one(const tsrb_gemm *g, const char **detail) {
    *detail = NULL;
    if (g->alpha == 0.0f || g->k == 0) {
        tsrb_scale_c(g);
        return "scale-c";
    }
    if (tsrb_tessera(g, detail)) return "tessera";
    return tsrb_fallback(g);
}

void tsrb_run(const tsrb_gemm *g) {
    /* Reference sgemm: IF ((M.EQ.0) .OR. (N.EQ.0) .OR.
     * (((ALPHA.EQ.ZERO).OR. (K.EQ.0)).AND. (BETA.EQ.ONE))) RETURN */
    if (g->m == 0 || g->n == 0 || g->batch == 0 ||
        ((g->alpha == 0.0f || g->k == 0) && g->beta == 1.0f)) {
        if (tsrb_verbose()) tsrb_log_call(g, "quick-return", NULL);
        return;
    }
    const char *path, *detail;
    if (g->batch > 1 && (g->stride_a == 0 || g->stride_b == 0)) {
        /* One A (or B) for the whole batch: tsr_gemm's stride 0 means
         * "tight", so such a batch runs one matrix at a time. */
        path = "quick-return";
        detail = NULL;
        for (int64_t bt = 0; bt < g->batch; bt++) {
            tsrb_gemm one = *g;
            one.batch = 1;
            one.a = g->a + bt * g->stride_a;
            one.b = g->b + bt * g->stride_b;
            one.c = g->c + bt * g->stride_c;
            path = run_one(&one, &detail);
        }
    } else {
        path = run_one(g, &detail);
    }
    if (tsrb_verbose()) tsrb_log_call(g, path, detail);
}
