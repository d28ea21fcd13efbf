/* 512-bit float vectors for the AVX-512 kernels (the same names as
 * arch/x86_avx2/simd.h, so one kernel source serves both). */
#ifndef TSR_SIMD_AVX512_H
#define TSR_SIMD_AVX512_H

#include <immintrin.h>

typedef __m512 vf;
#define VL 16
#define vf_zero() _mm512_setzero_ps()
#define vf_set1(x) _mm512_set1_ps(x)
#define vf_load(p) _mm512_loadu_ps(p)
#define vf_store(p, v) _mm512_storeu_ps(p, v)
#define vf_fma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vf_fms(a, b, c) _mm512_fmsub_ps(a, b, c) /* a b - c, rounded once */
#define vf_add(a, b) _mm512_add_ps(a, b)
#define vf_sub(a, b) _mm512_sub_ps(a, b)
#define vf_mul(a, b) _mm512_mul_ps(a, b)
#define vf_div(a, b) _mm512_div_ps(a, b)
#define vf_max(a, b) _mm512_max_ps(a, b)
#define vf_min(a, b) _mm512_min_ps(a, b)
#define vf_round(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vf_pow2i(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
#define vf_relu(x) _mm512_mask_max_ps(x, _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, _mm512_setzero_ps())

/* |m| with the sign of s (integer ops: AVX-512F has no float and/or) */
#define vf_copysign(m, s) _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(m), \
    _mm512_castps_si512(s), _mm512_set1_epi32((int)0x80000000u), 0xD8))

/* c in every 32-bit lane, made once where a loop's body uses it: GCC
 * rematerialises an integer splat that is short of a register by mov +
 * vpbroadcastd inside the loop, a vector operation each time; an opaque
 * value is kept or reloaded from the stack, a load (bf16 gelu_erf in L1
 * on Zen 4: 4 of the 68 vector operations per 64 values). Identical calls
 * are one value to the compiler. */
static inline __attribute__((always_inline)) __m512i vi_kept(int c) {
    __m512i k = _mm512_set1_epi32(c);
    __asm__("" : "+v"(k));
    return k;
}

static inline vf vf_load_n(const float *p, int n) {
    return n >= VL ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}
static inline void vf_store_n(float *p, vf v, int n) {
    if (n >= VL) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}

#endif
