/* The machine limits for the summary's "% of peak": FP32 FMA throughput,
 * bf16 vdpbf16ps throughput where AVX512_BF16 exists and int8 vpdpbusd
 * throughput where AVX-512 VNNI exists, with 12 independent vector chains
 * in registers, on every thread at once. The limit is the
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

/* body(n) on every thread at once; this run's rate (ops in all) into
 * *best if faster. */
static float timed_on_threads(float (*body)(long), long n, int threads, double ops, double *best) {
    float sink = 0;
    const double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += body(n);
    const double rate = ops / (now_s() - t0) / 1e9;
    if (rate > *best) *best = rate;
    return sink;
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
__attribute__((target("avx512f,avx512vnni"))) static float dot_vnni(long iters) {
    __m512i acc[CHAINS], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-5);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_epi32(i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], x, y);
    float s = 0; /* the sums wrap (int32 lanes): only a sink */
    for (int i = 0; i < CHAINS; i++) s += (float)_mm512_reduce_add_epi32(acc[i]);
    return s;
}

/* 16 int16 multiplies and their pair sums (32 ops, an int8 GEMM's ops on
 * sign-extended bytes) per instruction: the AVX2 int8 kernel's ceiling. */
__attribute__((target("avx2"))) static float madd_avx2(long iters) {
    /* twelve chains held in registers (the empty asm): GCC 12 otherwise
     * stores them to the stack at every step, and the stores, not
     * vpmaddwd, set the pace (one instruction a cycle where the GEMM did
     * more) */
    const __m256i y = _mm256_set1_epi16(1);
    __m256i a0 = _mm256_set1_epi16(2), a1 = _mm256_set1_epi16(3), a2 = _mm256_set1_epi16(4), a3 = _mm256_set1_epi16(5),
            a4 = _mm256_set1_epi16(6), a5 = _mm256_set1_epi16(7), a6 = _mm256_set1_epi16(8), a7 = _mm256_set1_epi16(9),
            a8 = _mm256_set1_epi16(10), a9 = _mm256_set1_epi16(11), a10 = _mm256_set1_epi16(12),
            a11 = _mm256_set1_epi16(13);
    for (long it = 0; it < iters; it++) {
        a0 = _mm256_madd_epi16(a0, y), a1 = _mm256_madd_epi16(a1, y), a2 = _mm256_madd_epi16(a2, y);
        a3 = _mm256_madd_epi16(a3, y), a4 = _mm256_madd_epi16(a4, y), a5 = _mm256_madd_epi16(a5, y);
        a6 = _mm256_madd_epi16(a6, y), a7 = _mm256_madd_epi16(a7, y), a8 = _mm256_madd_epi16(a8, y);
        a9 = _mm256_madd_epi16(a9, y), a10 = _mm256_madd_epi16(a10, y), a11 = _mm256_madd_epi16(a11, y);
        __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                "+x"(a9), "+x"(a10), "+x"(a11));
    }
    const __m256i s = _mm256_add_epi32(
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                         _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7))),
        _mm256_add_epi32(_mm256_add_epi32(a8, a9), _mm256_add_epi32(a10, a11)));
    return (float)_mm256_extract_epi32(s, 0); /* only a sink */
}

/* The f32 micro-kernel's own ceiling: the 8 x 48 tile of
 * kernels/gemm/x86_avx512.c (24 accumulators, A broadcast, three B vectors
 * a k) over panels in L1 (kc 128: B 24 KiB, A 4 KiB), added into a C tile
 * after each panel as a GEMM's later K blocks are. Below the register peak
 * by what the loads and the C updates cost: the most a GEMM with this tile
 * can reach. */
#define UKR_MR 8
#define UKR_NV 3
#define UKR_KC 128
#define UKR_NR (UKR_NV * 16)

__attribute__((target("avx512f"))) static float ukr_avx512(long rounds) {
    static _Thread_local float a[UKR_KC * UKR_MR] __attribute__((aligned(64))),
        b[UKR_KC * UKR_NR] __attribute__((aligned(64))), c[UKR_MR * UKR_NR] __attribute__((aligned(64)));
    for (int i = 0; i < UKR_KC * UKR_MR; i++) a[i] = 1e-3f * (float)(i % 7);
    for (int i = 0; i < UKR_KC * UKR_NR; i++) b[i] = 1e-3f * (float)(i % 5);
    for (int i = 0; i < UKR_MR * UKR_NR; i++) c[i] = 0.0f;
    for (long r = 0; r < rounds; r++) {
        __m512 acc[UKR_MR][UKR_NV];
#pragma GCC unroll 8
        for (int i = 0; i < UKR_MR; i++)
#pragma GCC unroll 3
            for (int v = 0; v < UKR_NV; v++) acc[i][v] = _mm512_setzero_ps();
        for (int p = 0; p < UKR_KC; p++) {
            __m512 bv[UKR_NV];
#pragma GCC unroll 3
            for (int v = 0; v < UKR_NV; v++) bv[v] = _mm512_load_ps(b + p * UKR_NR + v * 16);
#pragma GCC unroll 8
            for (int i = 0; i < UKR_MR; i++) {
                const __m512 av = _mm512_set1_ps(a[p * UKR_MR + i]);
#pragma GCC unroll 3
                for (int v = 0; v < UKR_NV; v++) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
        }
#pragma GCC unroll 8
        for (int i = 0; i < UKR_MR; i++)
#pragma GCC unroll 3
            for (int v = 0; v < UKR_NV; v++) {
                float *cp = c + i * UKR_NR + v * 16;
                _mm512_store_ps(cp, _mm512_add_ps(_mm512_load_ps(cp), acc[i][v]));
            }
    }
    return c[0] + c[UKR_MR * UKR_NR - 1];
}

static double best_ukr;

int peak_ukr_available(void) { return __builtin_cpu_supports("avx512f"); }

double peak_ukr_flops_per_round(long rounds, int threads) {
    return 2.0 * UKR_MR * UKR_NR * UKR_KC * (double)rounds * threads;
}

float peak_ukr_run(long rounds, int threads) {
    return timed_on_threads(ukr_avx512, rounds, threads, peak_ukr_flops_per_round(rounds, threads), &best_ukr);
}

double peak_ukr_best(void) { return best_ukr; }

/* 16 lanes x 2 bf16 products (64 flops) per instruction. On Emerald
 * Rapids it issues every other cycle, so its flops peak is half the f32
 * FMA's: a bf16 GEMM cannot outrun an f32 one there. */
__attribute__((target("avx512f,avx512bf16"))) static float dot_bf16(long iters) {
    __m512 acc[CHAINS];
    const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    float s = 0;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(acc[i]);
    return s;
}

static double best_bf16;

int peak_bf16_available(void) { return __builtin_cpu_supports("avx512bf16"); }

double peak_bf16_flops_per_iter(long iters, int threads) { return 64.0 * CHAINS * (double)iters * threads; }

float peak_bf16_run(long iters, int threads) {
    return timed_on_threads(dot_bf16, iters, threads, peak_bf16_flops_per_iter(iters, threads), &best_bf16);
}

double peak_bf16_best(void) { return best_bf16; }

int peak_i8_available(void) { return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avx2"); }

const char *peak_i8_name(void) {
    return __builtin_cpu_supports("avx512vnni") ? "peak/i8/vpdpbusd/avx512_vnni/registers"
                                                : "peak/i8/vpmaddwd/avx2/registers";
}

double peak_i8_ops_per_iter(long iters, int threads) {
    return (__builtin_cpu_supports("avx512vnni") ? 128.0 : 32.0) * CHAINS * (double)iters * threads;
}

float peak_i8_run(long iters, int threads) {
    return timed_on_threads(__builtin_cpu_supports("avx512vnni") ? dot_vnni : madd_avx2, iters, threads,
                            peak_i8_ops_per_iter(iters, threads), &best_i8);
}

const char *peak_isa(void) {
    return __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "none";
}

double peak_flops_per_iter(long iters, int threads) {
    int lanes = __builtin_cpu_supports("avx512f") ? 16 : 8;
    return 2.0 * lanes * CHAINS * (double)iters * threads;
}

float peak_run(long iters, int threads) {
    return timed_on_threads(__builtin_cpu_supports("avx512f") ? fma_avx512 : fma_avx2, iters, threads,
                            peak_flops_per_iter(iters, threads), &best_f32);
}
