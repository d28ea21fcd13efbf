/* Vector exp and the epilogue activations, written over the simd.h names
 * (vf_*), so it serves the AVX2 and the AVX-512 builds alike. Include it
 * after arch/x86_avx2/simd.h or arch/x86_avx512/simd.h.
 * Accuracy: exp within ~2 ulp on [-87, 88] (Cephes polynomial); erf with
 * absolute error < 1.5e-7 (Abramowitz-Stegun 7.1.26). */
#ifndef TSR_X86_VMATH_H
#define TSR_X86_VMATH_H

#include "tessera.h"

/* c[0] x^(n-1) + c[1] x^(n-2) + ... + c[n-1] by Horner's rule (n a
 * constant: the loop unrolls into n - 1 FMAs). */
static inline __attribute__((always_inline)) vf vf_horner(vf x, const float *c, int n) {
    vf p = vf_set1(c[0]);
    for (int i = 1; i < n; i++) p = vf_fma(p, x, vf_set1(c[i]));
    return p;
}

/* exp(x) = 2^n exp(r): n = round(x / ln 2) into *n, and exp(r) for
 * r = x - n ln 2 (Cody-Waite, two constants) by the Cephes polynomial.
 * The caller applies 2^n. */
static inline vf vf_exp_reduced(vf x, vf *n) {
    *n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    vf r = vf_fma(*n, vf_set1(-0.693359375f), x);
    r = vf_fma(*n, vf_set1(2.12194440e-4f), r);
    vf y = vf_set1(1.9875691500e-4f);
    y = vf_fma(y, r, vf_set1(1.3981999507e-3f));
    y = vf_fma(y, r, vf_set1(8.3334519073e-3f));
    y = vf_fma(y, r, vf_set1(4.1665795894e-2f));
    y = vf_fma(y, r, vf_set1(1.6666665459e-1f));
    y = vf_fma(y, r, vf_set1(5.0000001201e-1f));
    return vf_fma(vf_mul(y, r), r, vf_add(r, vf_set1(1.0f)));
}

static inline vf vf_exp(vf x) {
    vf n;
    const vf y = vf_exp_reduced(vf_min(vf_max(x, vf_set1(-87.3f)), vf_set1(88.7f)), &n);
    return vf_mul(y, vf_pow2i(n));
}

static inline vf vf_sigmoid(vf x) {
    return vf_div(vf_set1(1.0f), vf_add(vf_set1(1.0f), vf_exp(vf_sub(vf_zero(), x))));
}

static inline vf vf_tanh(vf x) { /* 1 - 2 / (exp(2x) + 1) */
    return vf_sub(vf_set1(1.0f), vf_div(vf_set1(2.0f), vf_add(vf_exp(vf_add(x, x)), vf_set1(1.0f))));
}

static inline vf vf_erf(vf x) {
    vf ax = vf_max(x, vf_sub(vf_zero(), x));
    vf t = vf_div(vf_set1(1.0f), vf_fma(vf_set1(0.3275911f), ax, vf_set1(1.0f)));
    vf p = vf_set1(1.061405429f);
    p = vf_fma(p, t, vf_set1(-1.453152027f));
    p = vf_fma(p, t, vf_set1(1.421413741f));
    p = vf_fma(p, t, vf_set1(-0.284496736f));
    p = vf_fma(p, t, vf_set1(0.254829592f));
    vf e = vf_sub(vf_set1(1.0f), vf_mul(vf_mul(p, t), vf_exp(vf_sub(vf_zero(), vf_mul(ax, ax)))));
    return vf_copysign(e, x);
}

static inline vf vf_activation(tsr_activation act, vf x) {
    const vf half = vf_set1(0.5f), one = vf_set1(1.0f);
    switch (act) {
    case TSR_ACT_RELU: return vf_relu(x);
    case TSR_ACT_SIGMOID: return vf_sigmoid(x);
    case TSR_ACT_SILU: return vf_mul(x, vf_sigmoid(x));
    case TSR_ACT_TANH: return vf_tanh(x);
    case TSR_ACT_GELU_ERF: return vf_mul(vf_mul(half, x), vf_add(one, vf_erf(vf_mul(x, vf_set1(0.70710678118654752f)))));
    case TSR_ACT_GELU_TANH: {
        vf x3 = vf_mul(vf_mul(x, x), x);
        vf in = vf_mul(vf_set1(0.79788456080286535f), vf_fma(vf_set1(0.044715f), x3, x));
        return vf_mul(vf_mul(half, x), vf_add(one, vf_tanh(in)));
    }
    default: return x;
    }
}

#endif
