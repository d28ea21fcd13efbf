/* Dtype-converting vector loads and stores, lane reductions and the masks
 * the softmax-style kernels need, over the simd.h names (vf_*), so they serve
 * the AVX2 and AVX-512 builds alike (as vmath.h does). Include it after
 * arch/x86_avx2/simd.h or arch/x86_avx512/simd.h, and vmath.h. f16 goes
 * through F16C, bf16 by shifts; stores round to nearest even, as
 * tsr_f32_to_f16/bf16 do. */
#ifndef TSR_X86_VDTYPE_H
#define TSR_X86_VDTYPE_H

#include <math.h>
#include <stdbool.h>

#include "internal.h" /* tsr_load_f, tsr_store_f */

#if VL == 16
/* lanes 8..15 (AVX-512F has no 32x8 extract without DQ) */
static inline __m256 vf_upper8(vf v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
#define vf_is(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
#define vf_any(mask) ((mask) != 0)
typedef __mmask16 vmask;
#define vf_select(m, if_false, if_true) _mm512_mask_blend_ps(m, if_false, if_true)
#else
#define vf_is(a, b, pred) _mm256_cmp_ps(a, b, pred)
#define vf_any(mask) (_mm256_movemask_ps(mask) != 0)
typedef __m256 vmask;
#define vf_select(m, if_false, if_true) _mm256_blendv_ps(if_false, if_true, m)
#endif

/* VL values of dtype t (f32, f16, bf16) at element i of p, as f32. */
static inline __attribute__((always_inline)) vf vf_load_dtype(const void *p, tsr_dtype t, int64_t i) {
    if (t == TSR_F32) return vf_load((const float *)p + i);
    const uint16_t *h = (const uint16_t *)p + i;
#if VL == 16
    __m256i raw = _mm256_loadu_si256((const __m256i *)h);
    return t == TSR_F16 ? _mm512_cvtph_ps(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
    __m128i raw = _mm_loadu_si128((const __m128i *)h);
    return t == TSR_F16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
#endif
}

/* Eight f32 as bf16, rounded to nearest even, NaN kept quiet (tsr_f32_to_bf16). */
static inline __m128i vf_bf16_from_8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, q, nan);
    __m256i packed = _mm256_packus_epi32(r, r); /* per 128-bit lane: 4 values twice */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

#if VL == 16
/* Sixteen f32 as bf16, the same rounding and NaN rule in one 512-bit pass,
 * packed by vpmovdw (a third of the operations of two 8-wide passes). */
static inline __m256i vf_bf16_from_16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), hi, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}
#endif

static inline void vf_store8_dtype(uint16_t *h, tsr_dtype t, __m256 v) {
    if (t == TSR_F16) _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else _mm_storeu_si128((__m128i *)h, vf_bf16_from_8(v));
}

/* VL values into element i of p in dtype t. */
static inline __attribute__((always_inline)) void vf_store_dtype(void *p, tsr_dtype t, int64_t i, vf v) {
    if (t == TSR_F32) {
        vf_store((float *)p + i, v);
        return;
    }
    uint16_t *h = (uint16_t *)p + i;
#if VL == 16
    if (t == TSR_F16) _mm256_storeu_si256((__m256i *)h, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else _mm256_storeu_si256((__m256i *)h, vf_bf16_from_16(v));
#else
    vf_store8_dtype(h, t, v);
#endif
}

/* Outputs of this many bytes are worth storing past the caches: past half
 * the L3 they would only evict the inputs still to be read. */
static inline bool vf_streams(int64_t bytes) { return bytes > (16 << 20); }

/* vf_store_dtype, or a streaming store past the caches when stream is set
 * and the destination is aligned to the stored width (AVX-512; f32 on
 * AVX2): outputs larger than the caches then skip the read of each line
 * before its write, as memcpy's large copies do. The caller issues an
 * sfence before another thread may read what it stored. */
static inline __attribute__((always_inline)) void vf_put_dtype(void *p, tsr_dtype t, int64_t i, vf v, bool stream) {
    if (stream && t == TSR_F32 && !((uintptr_t)((float *)p + i) % (VL * 4))) {
#if VL == 16
        _mm512_stream_ps((float *)p + i, v);
#else
        _mm256_stream_ps((float *)p + i, v);
#endif
        return;
    }
#if VL == 16
    if (stream && t != TSR_F32 && !((uintptr_t)((uint16_t *)p + i) % 32)) {
        _mm256_stream_si256((__m256i *)((uint16_t *)p + i),
                            t == TSR_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT) : vf_bf16_from_16(v));
        return;
    }
#endif
    vf_store_dtype(p, t, i, v);
}

/* The first n (1..VL) values of dtype t at element i of p, as f32; lanes
 * past n read as 0 and their memory is not touched (AVX-512BW masks the
 * 16-bit loads; AVX2 has no 16-bit mask and goes through a buffer). */
static inline vf vf_load_n_dtype(const void *p, tsr_dtype t, int64_t i, int n) {
    if (t == TSR_F32) return vf_load_n((const float *)p + i, n);
    if (n >= VL) return vf_load_dtype(p, t, i);
#if VL == 16
    const __m256i raw = _mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), (const uint16_t *)p + i);
    return t == TSR_F16 ? _mm512_cvtph_ps(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
    float tmp[VL] = {0};
    for (int j = 0; j < n; j++) tmp[j] = tsr_load_f(p, t, i + j);
    return vf_load(tmp);
#endif
}

/* The first n (1..VL) lanes of v into element i of p in dtype t. */
static inline void vf_store_n_dtype(void *p, tsr_dtype t, int64_t i, vf v, int n) {
    if (t == TSR_F32) {
        vf_store_n((float *)p + i, v, n);
    } else if (n >= VL) {
        vf_store_dtype(p, t, i, v);
    } else {
#if VL == 16
        const __m256i h = t == TSR_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT) : vf_bf16_from_16(v);
        _mm256_mask_storeu_epi16((uint16_t *)p + i, (__mmask16)((1u << n) - 1), h);
#else
        float tmp[VL];
        vf_store(tmp, v);
        for (int j = 0; j < n; j++) tsr_store_f(p, t, i + j, tmp[j]);
#endif
    }
}

/* v with the lanes from n on (0 <= n <= VL) replaced by fill: a partial
 * vector made neutral for a reduction (-inf for max, 0 for sums). */
static inline vf vf_fill_past(vf v, int n, vf fill) {
#if VL == 16
    return _mm512_mask_blend_ps((__mmask16)~((1u << n) - 1), v, fill);
#else
    return _mm256_blendv_ps(fill, v, _mm256_castsi256_ps(vf_lane_mask(n)));
#endif
}

/* The sums of four vectors, lane-reduced, into out[0..3]: one shuffle tree. */
static inline void vf_hsum4(vf a, vf b, vf c, vf d, float *out) {
#if VL == 16
    __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), vf_upper8(a));
    __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), vf_upper8(b));
    __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), vf_upper8(c));
    __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), vf_upper8(d));
#else
    __m256 a8 = a, b8 = b, c8 = c, d8 = d;
#endif
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

static inline float vf_hsum(vf v) {
    float s[4];
    vf_hsum4(v, vf_zero(), vf_zero(), vf_zero(), s);
    return s[0];
}

/* The largest lane; NaN lanes are ignored (callers test for NaN apart). */
static inline float vf_hmax(vf v) {
    float t[VL], m = -INFINITY;
    vf_store(t, v);
    for (int i = 0; i < VL; i++) m = t[i] > m ? t[i] : m;
    return m;
}

#endif
