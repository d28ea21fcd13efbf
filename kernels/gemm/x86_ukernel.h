/* The x86 f32 micro-kernel and the vector epilogue, shared by the GEMM
 * (x86_blis.h) and the convolution (kernels/conv/x86_conv.h). Written over
 * the simd.h names; include it after a simd.h, vmath.h and vdtype.h, with MR
 * (rows of the tile) and NV (vectors of VL columns) defined.
 *
 * The tile's A rows are given as MR pointers and a step between consecutive
 * k: a packed GEMM panel is rows[i] = ap + i, step MR; an NHWC convolution
 * tap is rows[i] = the input pixel of output pixel i (or a row of zeros
 * where the tap falls into the padding), step 1. B is NR = NV * VL columns,
 * rows ldb apart. The accumulators are not cleared: a convolution adds one
 * filter tap after another into the same registers. */
#ifndef TSR_X86_UKERNEL_H
#define TSR_X86_UKERNEL_H

#include "../../arch/x86_avx2/prefetch.h"
#include "../../arch/x86_avx512/vact.h"
#include "internal.h"

/* How many rows ahead in-place B is fetched, into L1 and into L2. The
 * best distances differ by CPU (16x4096x4096 f32, B 64 MiB read in place):
 * Zen 4 wants the far ones (L1 12-16 alike, 6-8 and 24+ slower; L2 384
 * rows, which keeps enough misses in flight for DRAM: 90 -> 111 GFLOP/s on
 * two threads, 128-256 less, 512 no more); on an Emerald Rapids VM those
 * halve the speed (46 / 96 GFLOP/s on one / two threads) and the near ones
 * (L1 6-8, L2 20-24 best) give 88 / 182 (L2 48: 75 / 158; none: 79 / 170). */
typedef struct ukr_ahead {
    int64_t l1, l2;
} ukr_ahead;
static const ukr_ahead ukr_ahead_near = {8, 24}, ukr_ahead_far = {12, 384};

/* acc += A(mr x 1) * B(1 x nv * VL) for step p (mr <= MR, a constant). */
static inline __attribute__((always_inline)) void ukr_step(const int nv, const int mr, int64_t p,
                                                           const float *const r[MR], int64_t step,
                                                           const float *restrict bp, int64_t ldb, vf (*acc)[NV]) {
    vf b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) b[v] = vf_load(bp + p * ldb + v * VL);
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++) {
        vf a = vf_set1(r[i][p * step]);
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = vf_fma(a, b[v], acc[i][v]);
    }
}

/* acc += A(mr x kc) * B(kc x nv * VL): nv (a constant after inlining, at
 * most NV) narrows the tile for the last column panel of a GEMM, so that a
 * ragged edge does not pay for NV vectors of FMAs; mr (a constant, at most
 * MR) does the same for rows (conv's 7-pixel tiles; acc may be a tile's
 * rows from an offset, conv's tap_fma). ahead: B is read in
 * place from beyond L2, and its rows are fetched that far ahead (NULL: B is
 * packed or in cache). unroll4 (a constant): B in cache is walked four steps
 * a round, the A row pointers bumped once a round rather than every step:
 * conv's tiles, whose rows point into x, gained 2-5% on 3x3 and 1x1 layers
 * (Emerald Rapids); the GEMM takes it from UNROLL4_MIN_KC on. */
static inline __attribute__((always_inline)) void ukr_fma_nv(const int nv, const int mr, int64_t kc,
                                                             const float *const rows[MR], int64_t step,
                                                             const float *restrict bp, int64_t ldb,
                                                             const ukr_ahead *ahead, const bool unroll4,
                                                             vf (*acc)[NV]) {
    const float *r[MR];
    const int64_t ahead1 = ahead ? ahead->l1 * ldb : 0, ahead2 = ahead ? ahead->l2 * ldb : 0;
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) r[i] = rows[i];
    /* B read in place has rows pages apart: the hardware prefetcher stops
     * at page boundaries, so fetch rows ahead ourselves: every line of them
     * (the first line alone left 16x4096x4096 at ~65 GFLOP/s against ~85).
     * A B in cache gains nothing from them, and their addresses lie past
     * its end (32^3: ~3% without). Two loops rather than a test in one:
     * GCC kept the test, and the pointer it reads, in every step. */
    if (ahead) {
        for (int64_t p = 0; p < kc; p++) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                tsr_prefetch_l1((const char *)(bp + p * ldb + ahead1 + v * VL));
                tsr_prefetch_l2((const char *)(bp + p * ldb + ahead2 + v * VL));
            }
            ukr_step(nv, mr, p, r, step, bp, ldb, acc);
        }
        return;
    }
    if (unroll4) {
#pragma GCC unroll 4
        for (int64_t p = 0; p < kc; p++) ukr_step(nv, mr, p, r, step, bp, ldb, acc);
        return;
    }
    for (int64_t p = 0; p < kc; p++) ukr_step(nv, mr, p, r, step, bp, ldb, acc);
}

static inline void ukr_zero(vf acc[MR][NV]) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = vf_zero();
}

/* e's steps on n (1..VL) outputs in r, as tsr_epilogue_apply_ref defines
 * them: the bias at element bias_i of its vector (one value broadcast when
 * bias_bcast, else n consecutive), the residual at element
 * b * batch_stride + row * ld + col of its tensor (n consecutive). */
static inline __attribute__((always_inline)) vf ukr_epilogue(const tsr_epilogue *e, vf r, int64_t bias_i, bool bias_bcast, int64_t b, int64_t row,
                              int64_t col, int n) {
    for (int s = 0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_BIAS)
            r = vf_add(r, bias_bcast ? vf_set1(tsr_load_f(st->data, st->dtype, bias_i))
                                     : vf_load_n_dtype(st->data, st->dtype, bias_i, n));
        else if (st->op == TSR_EPI_RESIDUAL)
            r = vf_fma(vf_set1(st->scale), vf_load_n_dtype(st->data, st->dtype, b * st->batch_stride + row * st->ld + col, n), r);
        else r = vf_activation(st->activation, r);
    }
    return r;
}

/* Whether e is bias, residual and relu steps only, on f32 or bf16 data:
 * what ukr_epilogue_plain applies without a single call. Any call in a tile's
 * store loop (an exp, a dtype conversion) makes the compiler keep the whole
 * tile of accumulators on the stack, since every vector register is
 * caller-saved; the common epilogues then cost more than the tile's FMAs. */
static inline bool ukr_epilogue_is_plain(const tsr_epilogue *e) {
    for (int s = 0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_ACTIVATION ? st->activation != TSR_ACT_RELU && st->activation != TSR_ACT_NONE
                                         : st->dtype != TSR_F32 && st->dtype != TSR_BF16)
            return false;
    }
    return true;
}

/* Element i of p, f32 or bf16, inline. */
static inline __attribute__((always_inline)) float ukr_load_1(const void *p, tsr_dtype t, int64_t i) {
    if (t == TSR_F32) return ((const float *)p)[i];
    const uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* n (1..VL) values at element i of p, f32 or bf16, inline. Not
 * vf_load_n_dtype/vf_store_n_dtype forced inline: their f16 and AVX2
 * paths, unrolled into a tile's stores, cost the f32 pointwise tile 7%
 * (one core, 96 -> 89 GFLOP/s); and called, they put the tile on the
 * stack (AVX2 bf16 residual layers ran at half the f32 speed). AVX2 has no
 * 16-bit masked load: a ragged bf16 vector goes through 16 bytes on the
 * stack, element by element. */
static inline __attribute__((always_inline)) vf ukr_load_n(const void *p, tsr_dtype t, int64_t i, int n) {
    if (t == TSR_BF16) {
        const uint16_t *h = (const uint16_t *)p + i;
#if VL == 16
        const __m256i raw = n >= VL ? _mm256_loadu_si256((const __m256i *)h)
                                    : _mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), h);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
        __m128i raw;
        if (n >= VL) {
            raw = _mm_loadu_si128((const __m128i *)h);
        } else {
            _Alignas(16) uint16_t part[8] = {0};
            for (int j = 0; j < n; j++) part[j] = h[j];
            raw = _mm_load_si128((const __m128i *)part);
        }
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
#endif
    }
    return n >= VL ? vf_load((const float *)p + i) : vf_load_n((const float *)p + i, n);
}

/* The first n (1..VL) lanes of v into element i of p, f32 or bf16
 * rounded to nearest even, inline. native: the CPU has AVX512_BF16
 * and this file was built for it: vcvtneps2bf16, one instruction for the
 * eight of the integer rounding (it flushes denormal inputs to zero). */
static inline __attribute__((always_inline)) void ukr_store_n(void *p, tsr_dtype t, int64_t i, vf v, int n,
                                                              bool native) {
    if (t == TSR_BF16) {
#if VL == 16
        __m256i h;
#ifdef __AVX512BF16__
        if (native) h = (__m256i)_mm512_cvtneps_pbh(v);
        else
#endif
            h = vf_bf16_from_16(v, true);
        if (n >= VL) _mm256_storeu_si256((__m256i *)((uint16_t *)p + i), h);
        else _mm256_mask_storeu_epi16((uint16_t *)p + i, (__mmask16)((1u << n) - 1), h);
#else
        (void)native;
        const __m128i h = vf_bf16_from_8(v, true);
        uint16_t *out = (uint16_t *)p + i;
        if (n >= VL) {
            _mm_storeu_si128((__m128i *)out, h);
        } else {
            _Alignas(16) uint16_t part[8];
            _mm_store_si128((__m128i *)part, h);
            for (int j = 0; j < n; j++) out[j] = part[j];
        }
#endif
        return;
    }
    (void)native;
    if (n >= VL) vf_store((float *)p + i, v);
    else vf_store_n((float *)p + i, v, n);
}

/* ukr_epilogue for an e that ukr_epilogue_is_plain accepts. */
static inline __attribute__((always_inline)) vf ukr_epilogue_plain(const tsr_epilogue *e, vf r, int64_t bias_i,
                                                                   bool bias_bcast, int64_t b, int64_t row,
                                                                   int64_t col, int n) {
    for (int s = 0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_BIAS)
            r = vf_add(r, bias_bcast ? vf_set1(ukr_load_1(st->data, st->dtype, bias_i)) : ukr_load_n(st->data, st->dtype, bias_i, n));
        else if (st->op == TSR_EPI_RESIDUAL)
            r = vf_fma(vf_set1(st->scale), ukr_load_n(st->data, st->dtype, b * st->batch_stride + row * st->ld + col, n), r);
        else if (st->activation == TSR_ACT_RELU)
            r = vf_relu(r);
    }
    return r;
}

#endif
