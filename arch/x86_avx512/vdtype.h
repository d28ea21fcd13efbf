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

/* 2 VL bf16 at element i of p as f32, out of order: *even holds the values
 * at even positions, *odd those at odd ones. bf16 is the upper half of an
 * f32, so each half is one shift or one mask of the loaded bits, with no
 * lane shuffle (vf_load_dtype widens VL values in order with two
 * operations, one of them a shuffle): for passes that only sum. */
static inline __attribute__((always_inline)) void vf_load_bf16_evens_odds(const void *p, int64_t i, vf *even,
                                                                          vf *odd) {
    const uint16_t *h = (const uint16_t *)p + i;
#if VL == 16
    const __m512i raw = _mm512_loadu_si512((const void *)h);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(raw, vi_kept((int)0xffff0000u)));
#else
    const __m256i raw = _mm256_loadu_si256((const __m256i *)h);
    *even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
    *odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32((int)0xffff0000u)));
#endif
}

/* 2 VL f32 at p split as vf_load_bf16_evens_odds splits bf16: the values
 * at even positions into *even, the odd ones into *odd. */
static inline __attribute__((always_inline)) void vf_load_evens_odds(const float *p, vf *even, vf *odd) {
    const vf a = vf_load(p), b = vf_load(p + VL);
#if VL == 16
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ie, _mm512_set1_epi32(1)), b);
#else /* per 128-bit lane, then the lanes' 64-bit halves in order */
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
#endif
}

/* The bits of f32 lanes u with the rounding to bf16 added: their upper
 * halves are then the bf16 values, rounded to nearest even (for non-NaN
 * lanes; a NaN's payload could carry into its sign). */
static inline __m256i bf16_rounded_256(__m256i u) {
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
}
#if VL == 16
/* The integer constants of the rounding below: made once (vi_kept) where
 * the rounding is the loop's own path (without AVX512_BF16: bf16 gelu_erf
 * in L1 on Zen 4 with that feature masked, 13.8 -> 11.7 TSC ticks per 16
 * values); plain splats where it is the AVX512_BF16 stores' rare
 * denormal path, whose constants would otherwise hold registers through
 * the loop (bf16 softmax 64x4096 lost 5%). */
#ifdef TSR_BF16_STORES_NATIVE
#define bf16_splat(c) _mm512_set1_epi32(c)
#else
#define bf16_splat(c) vi_kept(c)
#endif

static inline __m512i bf16_rounded_512(__m512i u) {
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), bf16_splat(1));
    return _mm512_add_epi32(u, _mm512_add_epi32(bf16_splat(0x7fff), lsb));
}
#endif

/* TSR_BF16_STORES_NATIVE: a file whose kernels require AVX512_BF16 (in
 * their cpu_features) stores bf16 through its conversions; a file built
 * with -mavx512bf16 for a per-call path (conv) must not. */
#if defined(TSR_BF16_STORES_NATIVE) && !(VL == 16 && defined(__AVX512BF16__))
#error "TSR_BF16_STORES_NATIVE needs AVX-512 and -mavx512bf16"
#endif

#ifdef TSR_BF16_STORES_NATIVE
/* AVX512_BF16's conversions round to nearest even and keep NaN quiet as
 * tsr_f32_to_bf16 does (every f32 pattern checked), but flush denormal
 * inputs to zero, where it rounds them: the lanes of v that are denormal,
 * by vfpclassps (AVX512DQ, on every CPU with AVX512_BF16) in one operation
 * where two integer tests took two (bf16 gelu_erf in L1, Zen 4, after its
 * degree 3: 11.3-11.9 -> 10.0-10.7 TSC ticks per 16 values). */
static inline __mmask16 vf_denormals(vf v) {
    return _mm512_fpclass_ps_mask(v, 0x20); /* 0x20: the denormal class */
}
#endif

/* The inverse of vf_load_bf16_evens_odds: 2 VL bf16 into element i of p,
 * rounded to nearest even, NaN kept quiet (maybe_nan false: the caller
 * knows no lane is NaN, and the test is skipped). The evens' rounded bits
 * land in the low halves of the 32-bit lanes, the odds' in the high
 * halves: in order, with no pack or shuffle. Streamed past the caches
 * when stream is set and the 2 VL values are vector-aligned. */
static inline __attribute__((always_inline)) void vf_put_bf16_evens_odds(void *p, int64_t i, vf even, vf odd,
                                                                        bool stream, bool maybe_nan) {
    uint16_t *h = (uint16_t *)p + i;
#if VL == 16
    __m512i out;
#ifdef TSR_BF16_STORES_NATIVE
    if (_kortestz_mask16_u8(vf_denormals(even), vf_denormals(odd))) {
        /* evens in words 0..15, odds in 16..31, then interleaved */
        const __m512i packed = (__m512i)_mm512_cvtne2ps_pbh(odd, even);
        out = _mm512_permutexvar_epi16(_mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                                         23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0),
                                       packed);
    } else
#endif
    {
        const __m512i ue = _mm512_castps_si512(even), uo = _mm512_castps_si512(odd);
        __m512i re = _mm512_srli_epi32(bf16_rounded_512(ue), 16), ro = bf16_rounded_512(uo);
        if (maybe_nan) {
            re = _mm512_mask_or_epi32(re, _mm512_cmp_ps_mask(even, even, _CMP_UNORD_Q), _mm512_srli_epi32(ue, 16),
                                      bf16_splat(0x40));
            ro = _mm512_mask_or_epi32(ro, _mm512_cmp_ps_mask(odd, odd, _CMP_UNORD_Q), uo,
                                      bf16_splat(0x400000));
        }
        /* (ro & 0xffff0000) | re */
        out = _mm512_ternarylogic_epi32(ro, re, bf16_splat((int)0xffff0000u), 0xEC);
    }
    if (stream && !((uintptr_t)h % 64)) _mm512_stream_si512((void *)h, out);
    else _mm512_storeu_si512((void *)h, out);
#else
    const __m256i ue = _mm256_castps_si256(even), uo = _mm256_castps_si256(odd);
    __m256i re = _mm256_srli_epi32(bf16_rounded_256(ue), 16), ro = bf16_rounded_256(uo);
    if (maybe_nan) {
        re = _mm256_blendv_epi8(re, _mm256_or_si256(_mm256_srli_epi32(ue, 16), _mm256_set1_epi32(0x40)),
                                _mm256_castps_si256(_mm256_cmp_ps(even, even, _CMP_UNORD_Q)));
        ro = _mm256_blendv_epi8(ro, _mm256_or_si256(uo, _mm256_set1_epi32(0x400000)),
                                _mm256_castps_si256(_mm256_cmp_ps(odd, odd, _CMP_UNORD_Q)));
    }
    const __m256i out = _mm256_or_si256(_mm256_and_si256(ro, _mm256_set1_epi32((int)0xffff0000u)), re);
    if (stream && !((uintptr_t)h % 32)) _mm256_stream_si256((__m256i *)h, out);
    else _mm256_storeu_si256((__m256i *)h, out);
#endif
}

/* Eight f32 as bf16, rounded to nearest even, NaN kept quiet (tsr_f32_to_bf16).
 * maybe_nan false: the caller knows no lane is NaN and the NaN test is
 * skipped (the rounding add would carry a NaN's payload into its sign). */
static inline __attribute__((always_inline)) __m128i vf_bf16_from_8(__m256 v, bool maybe_nan) {
    __m256i u = _mm256_castps_si256(v);
    __m256i r = _mm256_srli_epi32(bf16_rounded_256(u), 16);
    if (maybe_nan) {
        __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        r = _mm256_blendv_epi8(r, q, nan);
    }
    __m256i packed = _mm256_packus_epi32(r, r); /* per 128-bit lane: 4 values twice */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

#if VL == 16
/* Sixteen f32 as bf16, the same rounding and NaN rule in one 512-bit pass,
 * packed by vpmovdw (a third of the operations of two 8-wide passes). */
static inline __attribute__((always_inline)) __m256i vf_bf16_from_16(__m512 v, bool maybe_nan) {
#ifdef TSR_BF16_STORES_NATIVE
    if (!vf_denormals(v)) return (__m256i)_mm512_cvtneps_pbh(v);
#endif
    const __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_srli_epi32(bf16_rounded_512(u), 16);
    if (maybe_nan)
        r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_srli_epi32(u, 16),
                                 bf16_splat(0x40));
    return _mm512_cvtepi32_epi16(r);
}
#endif

/* VL values into element i of p in dtype t; maybe_nan as vf_bf16_from_16's. */
static inline __attribute__((always_inline)) void vf_store_dtype_nan(void *p, tsr_dtype t, int64_t i, vf v,
                                                                     bool maybe_nan) {
    if (t == TSR_F32) {
        vf_store((float *)p + i, v);
        return;
    }
    uint16_t *h = (uint16_t *)p + i;
#if VL == 16
    if (t == TSR_F16) _mm256_storeu_si256((__m256i *)h, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else _mm256_storeu_si256((__m256i *)h, vf_bf16_from_16(v, maybe_nan));
#else
    if (t == TSR_F16) _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else _mm_storeu_si128((__m128i *)h, vf_bf16_from_8(v, maybe_nan));
#endif
}

/* VL values into element i of p in dtype t. */
static inline __attribute__((always_inline)) void vf_store_dtype(void *p, tsr_dtype t, int64_t i, vf v) {
    vf_store_dtype_nan(p, t, i, v, true);
}

/* Outputs of this many bytes are worth storing past the caches: past half
 * the L3 they would only evict the inputs still to be read. */
static inline bool vf_streams(int64_t bytes) { return bytes > (16 << 20); }

/* vf_store_dtype, or a streaming store past the caches when stream is set
 * and the destination is aligned to the stored width (AVX-512; f32 on
 * AVX2): outputs larger than the caches then skip the read of each line
 * before its write, as memcpy's large copies do. The caller issues an
 * sfence before another thread may read what it stored. maybe_nan false:
 * the caller knows no lane is NaN, and bf16 rounds without the NaN test. */
static inline __attribute__((always_inline)) void vf_put_dtype_nan(void *p, tsr_dtype t, int64_t i, vf v, bool stream,
                                                                   bool maybe_nan) {
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
                            t == TSR_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT) : vf_bf16_from_16(v, maybe_nan));
        return;
    }
#endif
    vf_store_dtype_nan(p, t, i, v, maybe_nan);
}

static inline __attribute__((always_inline)) void vf_put_dtype(void *p, tsr_dtype t, int64_t i, vf v, bool stream) {
    vf_put_dtype_nan(p, t, i, v, stream, true);
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
        const __m256i h = t == TSR_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT) : vf_bf16_from_16(v, true);
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
