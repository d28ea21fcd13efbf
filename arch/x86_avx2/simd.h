/* 256-bit float vectors for the AVX2 + FMA kernels (the same names as
 * arch/x86_avx512/simd.h, so one kernel source serves both). */
#ifndef TSR_SIMD_AVX2_H
#define TSR_SIMD_AVX2_H

#include <immintrin.h>

typedef __m256 vf;
typedef __m256i vi;
#define VL 8
#define vf_zero() _mm256_setzero_ps()
#define vf_set1(x) _mm256_set1_ps(x)
#define vf_load(p) _mm256_loadu_ps(p)
#define vf_store(p, v) _mm256_storeu_ps(p, v)
#define vf_fma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vf_fms(a, b, c) _mm256_fmsub_ps(a, b, c) /* a b - c, rounded once */
#define vf_add(a, b) _mm256_add_ps(a, b)
#define vf_sub(a, b) _mm256_sub_ps(a, b)
#define vf_mul(a, b) _mm256_mul_ps(a, b)
#define vf_div(a, b) _mm256_div_ps(a, b)
#define vf_max(a, b) _mm256_max_ps(a, b)
#define vf_min(a, b) _mm256_min_ps(a, b)
#define vf_round(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* 2^n for integral n in [-126, 127], built in the exponent field. */
#define vf_pow2i(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
/* relu that keeps NaN: x where x > 0 or x is NaN ("not less or equal",
 * unordered true), else +0. Two instructions where max and a NaN blend took
 * three: a third of a 64-channel 1x1 convolution tile's epilogue. */
#define vf_relu(x) _mm256_and_ps(x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ))

/* |m| with the sign of s */
#define vf_copysign(m, s) _mm256_or_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), m), _mm256_and_ps(_mm256_set1_ps(-0.0f), s))

static inline vi vf_lane_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
/* The first n lanes (0 < n <= VL); the others read as 0 and are never stored. */
static inline vf vf_load_n(const float *p, int n) {
    return n >= VL ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, vf_lane_mask(n));
}
static inline void vf_store_n(float *p, vf v, int n) {
    if (n >= VL) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, vf_lane_mask(n), v);
}

#endif
