/* Horner's rule and exp's argument reduction and polynomial, written over
 * the simd.h names (vf_*), so they serve the AVX2 and the AVX-512 builds
 * alike; vexp.h builds the exps on them, vact.h the activations. Include
 * it after arch/x86_avx2/simd.h or arch/x86_avx512/simd.h. */
#ifndef TSR_X86_VMATH_H
#define TSR_X86_VMATH_H


/* c[0] x^(n-1) + c[1] x^(n-2) + ... + c[n-1] by Horner's rule (n a
 * constant: the loop unrolls into n - 1 FMAs). */
static inline __attribute__((always_inline)) vf vf_horner(vf x, const float *c, int n) {
    vf p = vf_set1(c[0]);
    for (int i = 1; i < n; i++) p = vf_fma(p, x, vf_set1(c[i]));
    return p;
}

/* exp's argument reduction: n = round(x / ln 2) into *n, and r = x - n ln 2
 * (Cody-Waite, two constants), |r| <= ln2/2. */
static inline vf vf_exp_reduce(vf x, vf *n) {
    *n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    const vf r = vf_fma(*n, vf_set1(-0.693359375f), x);
    return vf_fma(*n, vf_set1(2.12194440e-4f), r);
}

/* exp(x) = 2^n exp(r) (vf_exp_reduce), exp(r) by a degree-6 polynomial
 * led by 1 + r, by Horner's rule (fitted relative on [-ln2/2, ln2/2]:
 * 2.0e-9; 1.05 ulp the most over 20 million x in [-87, 0] evaluated in
 * f32, where the Cephes form it replaced reached 1.26 in two operations
 * more; degree 5 reaches 2.02). The caller applies 2^n. */
static inline vf vf_exp_reduced(vf x, vf *n) {
    static const float c[] = {1.384365256e-03f, 8.374155499e-03f, 4.166800156e-02f, 1.666643173e-01f,
                              4.999999404e-01f, 1.0f,             1.0f};
    return vf_horner(vf_exp_reduce(x, n), c, 7);
}

/* vf_exp_reduced to degree 4 (2.8e-6 relative), two FMAs fewer, for an
 * exp whose result is rounded to bf16 or f16 soon after (half an ulp:
 * 2e-3 and 4.9e-4). */
static inline vf vf_exp_reduced_narrow(vf x, vf *n) {
    static const float c[] = {4.151384532e-02f, 1.678747386e-01f, 5.000301600e-01f, 9.999668598e-01f, 1.0f};
    return vf_horner(vf_exp_reduce(x, n), c, 5);
}

#endif
