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
    /* why the last call that returned nonzero failed */
    const char *(*last_error)(void);
} gemm_impl;

extern const gemm_impl impl_tessera, impl_onednn, impl_openblas;

/* OpenBLAS's DYNAMIC_ARCH build picks its kernels from the CPU model when it
 * is loaded, before main, and falls back to old ones on models it does not
 * know (Prescott's SSE3 on Emerald Rapids): on a CPU with the AVX-512 its
 * SkylakeX kernels need, this sets OPENBLAS_CORETYPE=SkylakeX (unless the
 * caller set it) and runs the program again with it. Returns only when it
 * does not re-execute. */
void openblas_fair_coretype(char **argv);

#endif
