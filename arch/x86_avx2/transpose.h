/* An 8x8 transpose of 32-bit elements in AVX registers, for packing. */
#ifndef TSR_X86_TRANSPOSE_H
#define TSR_X86_TRANSPOSE_H

#include <immintrin.h>
#include <stdint.h>

#include "tessera.h" /* tsr_dtype */

/* 8 consecutive 32-bit elements of up to 8 rows (lda apart; missing rows
 * read as 0) transposed: dst[q * dstride + i] = row i's element q, for the
 * first `lanes` (<= 8) rows. The moves are bit-exact, so it packs int8
 * groups of four as well as floats: GEMM panels from rows of A and from
 * transposed B's stored rows. Only the first `cols` (<= 8) columns are
 * stored (dst rows q < cols). */
static inline void tsr_transpose8x8_cols(const void *src, int64_t lda, int rows, void *out, int64_t dstride, int lanes,
                                         int cols) {
    const float *a = (const float *)src; /* lda and dstride count 32-bit elements */
    float *dst = (float *)out;
    __m256 r[8];
    for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(a + i * lda) : _mm256_setzero_ps();
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                   _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                   _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                   _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    if (lanes == 8) {
        for (int q = 0; q < cols; q++) _mm256_storeu_ps(dst + q * dstride, c[q]);
    } else {
        const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int q = 0; q < cols; q++) _mm256_maskstore_ps(dst + q * dstride, keep, c[q]);
    }
}

/* tsr_transpose8x8_cols of all 8 columns. */
static inline void tsr_transpose8x8(const void *src, int64_t lda, int rows, void *out, int64_t dstride, int lanes) {
    tsr_transpose8x8_cols(src, lda, rows, out, dstride, lanes, 8);
}

/* 8 f16 (F16C) or bf16 values at element i of p, as f32. */
static inline __m256 tsr_widen8(const void *p, tsr_dtype t, int64_t i) {
    const __m128i raw = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    return t == TSR_F16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

/* tsr_transpose8x8 of 8 values from element i of up to 8 stored rows ld
 * apart, of dtype t (f32, f16, bf16) into f32: f16/bf16 rows are widened
 * into an L1 block first. */
static inline void tsr_transpose8x8_of(const void *src, tsr_dtype t, int64_t i, int64_t ld, int rows, float *out,
                                       int64_t dstride, int lanes) {
    if (t == TSR_F32) {
        tsr_transpose8x8((const float *)src + i, ld, rows, out, dstride, lanes);
        return;
    }
    _Alignas(32) float wide[64];
    for (int r = 0; r < rows; r++) _mm256_store_ps(wide + 8 * r, tsr_widen8(src, t, i + r * ld));
    tsr_transpose8x8(wide, 8, rows, out, dstride, lanes);
}

#endif
