/* Reference GEMM: the test oracle and the fallback on CPUs without SIMD
 * kernels. Float paths accumulate in double; i8 accumulates exactly and
 * wraps to int32 as int32 hardware accumulation does. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

static inline double load_in(const void *x, tsr_dtype t, int64_t i) {
    return t == TSR_I8 ? (double)((const int8_t *)x)[i] : (double)tsr_load_f(x, t, i);
}

static int32_t i32_result(int64_t acc, const int32_t *c, float alpha, float beta) {
    int32_t wrapped = (int32_t)(uint32_t)(uint64_t)acc;
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
        uint32_t r = (uint32_t)wrapped + (beta == 1.0f ? (uint32_t)*c : 0u);
        return (int32_t)r;
    }
    double v = (double)alpha * wrapped + (beta != 0.0f ? (double)beta * *c : 0.0);
    v = nearbyint(v);
    if (v > 2147483647.0) return INT32_MAX;
    if (v < -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

static tsr_status ref_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    const int64_t M = d->m, N = d->n, K = d->k;
    const size_t ea = tsr_dtype_size(d->a_dtype), eb = tsr_dtype_size(d->b_dtype), ec = tsr_dtype_size(d->c_dtype);
    tsr_status status = TSR_OK;
#pragma omp parallel num_threads(ctx->num_threads)
    {
        double *acc = malloc(sizeof(double) * (size_t)(N ? N : 1));
        int64_t *iacc = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
        if (!acc || !iacc) {
#pragma omp atomic write
            status = TSR_ERR_OUT_OF_MEMORY;
        } else {
#pragma omp for collapse(2) schedule(static)
            for (int64_t bt = 0; bt < d->batch; bt++)
                for (int64_t i = 0; i < M; i++) {
                    const char *A = (const char *)g->a + (size_t)(bt * d->stride_a) * ea;
                    const char *B = (const char *)g->b + (size_t)(bt * d->stride_b) * eb;
                    char *C = (char *)g->c + (size_t)(bt * d->stride_c) * ec;
                    for (int64_t j = 0; j < N; j++) acc[j] = 0.0, iacc[j] = 0;
                    for (int64_t q = 0; q < K; q++) {
                        int64_t ai = d->trans_a ? q * d->lda + i : i * d->lda + q;
                        for (int64_t j = 0; j < N; j++) {
                            int64_t bi = d->trans_b ? j * d->ldb + q : q * d->ldb + j;
                            if (d->a_dtype == TSR_I8)
                                iacc[j] += (int64_t)((const int8_t *)A)[ai] * ((const int8_t *)B)[bi];
                            else
                                acc[j] += load_in(A, d->a_dtype, ai) * load_in(B, d->b_dtype, bi);
                        }
                    }
                    for (int64_t j = 0; j < N; j++) {
                        int64_t ci = i * d->ldc + j;
                        if (d->c_dtype == TSR_I32) {
                            int32_t *c32 = (int32_t *)C;
                            c32[ci] = i32_result(iacc[j], &c32[ci], d->alpha, d->beta);
                            continue;
                        }
                        double v = (double)d->alpha * acc[j];
                        if (d->beta != 0.0f) v += (double)d->beta * tsr_load_f(C, d->c_dtype, ci);
                        float out = tsr_epilogue_apply_ref(&d->epilogue, (float)v,
                                                           g->bias_along_m ? i : j, bt, i, j);
                        tsr_store_f(C, d->c_dtype, ci, out);
                    }
                }
        }
        free(acc);
        free(iacc);
    }
    if (status) return tsr_fail(status, "gemm.ref: out of host memory for a row of %lld accumulators", (long long)N);
    return TSR_OK;
}

const tsr_kernel tsr_gemm_ref = {
    .name = "gemm.ref",
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = "ref",
    .supports = tsr_supports_any_cpu,
    .run = ref_run,
};
