#include <stdio.h>

#include "impls.h"
#include "tessera.h"

static tsr_context *ctx;

static bool init(int threads, char *why, size_t n) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.num_threads = threads;
    if (!ctx && tsr_context_create(&ctx, &o) != TSR_OK) return snprintf(why, n, "%s", tsr_last_error()), false;
    tsr_context_set_num_threads(ctx, threads);
    return true;
}

static int sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = m, d.n = n, d.k = k, d.trans_a = ta ? TSR_TRANS : TSR_NO_TRANS, d.trans_b = tb ? TSR_TRANS : TSR_NO_TRANS;
    return tsr_gemm(ctx, &d, a, b, c) == TSR_OK ? 0 : -1;
}

static int gemm_i8(int ta, int tb, int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *c) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = m, d.n = n, d.k = k, d.trans_a = ta ? TSR_TRANS : TSR_NO_TRANS, d.trans_b = tb ? TSR_TRANS : TSR_NO_TRANS;
    d.a_dtype = d.b_dtype = TSR_I8, d.c_dtype = TSR_I32;
    return tsr_gemm(ctx, &d, a, b, c) == TSR_OK ? 0 : -1;
}

static int gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, const uint16_t *a, const uint16_t *b, float *c) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = m, d.n = n, d.k = k, d.trans_a = ta ? TSR_TRANS : TSR_NO_TRANS, d.trans_b = tb ? TSR_TRANS : TSR_NO_TRANS;
    d.a_dtype = d.b_dtype = TSR_BF16;
    return tsr_gemm(ctx, &d, a, b, c) == TSR_OK ? 0 : -1;
}

const gemm_impl impl_tessera = {"tessera", init, sgemm, gemm_i8, gemm_bf16, tsr_last_error};
