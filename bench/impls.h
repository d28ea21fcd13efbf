/* One sgemm entry point per implementation, row-major C = op(A) op(B). */
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
} gemm_impl;

extern const gemm_impl impl_tessera, impl_onednn, impl_openblas;

#endif
