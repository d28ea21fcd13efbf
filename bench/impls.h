/* The GEMM entry points of each implementation, row-major C = op(A) op(B). */
#ifndef TSR_BENCH_IMPLS_H
#define TSR_BENCH_IMPLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gemm_impl {
    const char *name; /* the <impl> part of a benchmark name */
    /* Prepares the implementation for `threads` threads; false (with why) when absent. */
    bool (*init)(int threads, char *why, size_t why_len);
    /* 0 on success */
    int (*sgemm)(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);
    /* int8 x int8 -> int32, alpha 1, beta 0; NULL when the library has none */
    int (*gemm_i8)(int ta, int tb, int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *c);
    /* bf16 x bf16 -> f32 (bf16 as raw bits), alpha 1, beta 0; NULL when none */
    int (*gemm_bf16)(int ta, int tb, int64_t m, int64_t n, int64_t k, const uint16_t *a, const uint16_t *b, float *c);
} gemm_impl;

extern const gemm_impl impl_tessera, impl_onednn, impl_openblas;

#endif
