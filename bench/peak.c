/* The machine limits for the summary's "% of peak": FP32 FMA throughput, and
 * int8 vpdpbusd throughput where AVX-512 VNNI exists, with 12 independent
 * vector chains in registers, on every thread at once. The limit is the
 * fastest single run seen, not a mean: on a VM whose clock moves by tens of
 * percent, a mean ceiling put GEMMs timed in a faster minute above 100%. */
#include "peak.h"

#include <immintrin.h>
#include <omp.h>
#include <time.h>

static double best_f32, best_i8; /* GFLOP/s, GOP/s */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void keep_best(double *best, double ops, double t0) {
    const double rate = ops / (now_s() - t0) / 1e9;
    if (rate > *best) *best = rate;
}

double peak_best(void) { return best_f32; }
double peak_i8_best(void) { return best_i8; }

#define CHAINS 12

__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
    __m256 acc[CHAINS], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    float s = 0, out[8];
    for (int i = 0; i < CHAINS; i++) _mm256_storeu_ps(out, acc[i]), s += out[0];
    return s;
}

__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
    __m512 acc[CHAINS], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    float s = 0;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(acc[i]);
    return s;
}

/* 64 int8 multiply-adds (128 ops) per instruction. */
__attribute__((target("avx512f,avx512vnni"))) static int dot_vnni(long iters) {
    __m512i acc[CHAINS], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-5);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_epi32(i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], x, y);
    int s = 0;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_epi32(acc[i]);
    return s;
}

int peak_i8_available(void) { return __builtin_cpu_supports("avx512vnni"); }

double peak_i8_ops_per_iter(long iters, int threads) { return 128.0 * CHAINS * (double)iters * threads; }

int peak_i8_run(long iters, int threads) {
    int sink = 0;
    const double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += dot_vnni(iters);
    keep_best(&best_i8, peak_i8_ops_per_iter(iters, threads), t0);
    return sink;
}

const char *peak_isa(void) {
    return __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "none";
}

double peak_flops_per_iter(long iters, int threads) {
    int lanes = __builtin_cpu_supports("avx512f") ? 16 : 8;
    return 2.0 * lanes * CHAINS * (double)iters * threads;
}

float peak_run(long iters, int threads) {
    float sink = 0;
    int avx512 = __builtin_cpu_supports("avx512f");
    const double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += avx512 ? fma_avx512(iters) : fma_avx2(iters);
    keep_best(&best_f32, peak_flops_per_iter(iters, threads), t0);
    return sink;
}
