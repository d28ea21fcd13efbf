/* The exp family of the x86 softmax-like kernels (rows, chains,
 * attention), over the simd.h names; include it after a simd.h, vmath.h
 * and vdtype.h.
 *
 * exp(x) = 2^n exp(r) with vmath.h's reduction and polynomial; 2^n is
 * applied in one rounding by vf_scale2, so that results in the denormal
 * range are rounded once and anything below half the smallest denormal is
 * an exact 0, without clamps to the normal range or blends after the fact.
 * NaN goes through every step (the clamps take it as their second
 * operand, which max/min return for NaN). */
#ifndef TSR_X86_VEXP_H
#define TSR_X86_VEXP_H

/* p 2^n for integral n in [-252, 254], rounded once. AVX-512: vscalefps.
 * AVX2 has no such instruction: 2^n as two halves, each a normal power of
 * two, so only the second product rounds. */
static inline vf vf_scale2(vf p, vf n) {
#if VL == 16
    return _mm512_scalef_ps(p, n);
#else
    const vf h = vf_round(vf_mul(n, vf_set1(0.5f)));
    return vf_mul(vf_mul(p, vf_pow2i(h)), vf_pow2i(vf_sub(n, h)));
#endif
}

/* p 2^n where the result is known to be normal (n integral): one product
 * on AVX2, where vf_scale2 needs two and a split of n. */
static inline vf vf_scale2_normal(vf p, vf n) {
#if VL == 16
    return _mm512_scalef_ps(p, n);
#else
    return vf_mul(p, vf_pow2i(n));
#endif
}

/* exp(x) 2^k for every float x (k = 0: exp itself); k integral in [0, 64],
 * and x <= 0 when k > 0. Below lo the result is below 2^-158 before
 * rounding, hence 0; from exp's overflow threshold on it is inf. */
static inline vf exp_scaled(vf x, float k) {
    const float lo = -110.0f - 0.6931472f * k;
    vf n;
    const vf y = vf_exp_reduced(vf_min(vf_set1(89.0f), vf_max(vf_set1(lo), x)), &n);
    return vf_select(vf_is(x, vf_set1(88.72283935546875f), _CMP_GE_OQ), vf_scale2(y, vf_add(n, vf_set1(k))),
                     vf_set1(INFINITY));
}

/* Whether every lane of x lies in [-87, 87] (NaN does not): exp's 2^n
 * is normal there and needs no clamp. */
static inline bool vf_exp_in_normal_range(vf x) {
    return !vf_any(vf_is(vf_copysign(x, vf_zero()), vf_set1(87.0f), _CMP_NLE_UQ));
}

/* exp(d) for d in [-87, 88] (or NaN): 2^n normal, applied by one product;
 * the same bits as exp_scaled(d, 0). */
static inline vf exp_normal(vf d) {
    vf n;
    const vf y = vf_exp_reduced(d, &n);
    return vf_scale2_normal(y, n);
}

/* exp of every float. AVX2: vectors within [-87, 87] skip the clamps, the
 * overflow select and the split 2^n (the same bits, some nine operations
 * fewer); AVX-512's scalef has no split to save. */
static inline vf exp_full(vf x) {
    if (VL == 8 && vf_exp_in_normal_range(x)) return exp_normal(x);
    return exp_scaled(x, 0.0f);
}

/* exp(d) 2^k, k integral in [0, 64], for d below exp's overflow
 * threshold (up to 88 with k = 0, as sigmoid's and silu's exp(-x) for
 * x >= -87; d <= 0 when k > 0, as softmax's x - max): exp_scaled without
 * its overflow test. -inf gives exactly 0, NaN stays NaN. */
static inline vf exp_unchecked_scaled(vf d, float k) {
    vf n;
    const vf y = vf_exp_reduced(vf_max(vf_set1(-110.0f - 0.6931472f * k), d), &n);
    return vf_scale2(y, k != 0.0f ? vf_add(n, vf_set1(k)) : n);
}

/* exp_unchecked_scaled(d, 0), with exp_full's short form for vectors
 * within [-87, 87] (sigmoid, silu, softmax rows within 87 of their max). */
static inline vf exp_unchecked(vf d) {
    if (VL == 8 && vf_exp_in_normal_range(d)) return exp_normal(d);
    return exp_unchecked_scaled(d, 0.0f);
}

/* exp_unchecked_scaled(d, 0) by vf_exp_reduced_narrow, for a result
 * rounded to bf16 or f16 soon after (softmax rows into such a y): 2.8e-6
 * relative, two FMAs fewer. */
static inline vf exp_unchecked_narrow(vf d) {
    vf n;
    const vf y = vf_exp_reduced_narrow(vf_max(vf_set1(-110.0f), d), &n);
    return vf_scale2(y, n);
}

/* 2^t for t <= 0 or -inf (exactly 0), for attention's softmax weights
 * (t = (s - max) log2(e) times the scale): 2^f (f = t - round(t), in
 * [-1/2, 1/2]) times 2^round(t). AVX-512 takes f by vreduceps (AVX512DQ),
 * which gives 0 for -inf (and for every |t| >= 2^23), so 2^round(t) = 0
 * needs no clamp; without it t is clamped at -160 first (2^-160 rounds to
 * 0), NaN kept by the operand order. Polynomials fitted here for relative
 * error over [-1/2, 1/2], constant term 1 (exact at the max); evaluated in
 * float (test_vexp_x86): degree 5, 1.7e-7 relative (as Cephes exp2f's
 * degree 6), for f32 weights; narrow: degree 4, 2.9e-6, for weights
 * rounded to bf16 (2^-9) before they are used. NaN gives NaN. */
static inline vf exp2_nonpos(vf t, const bool narrow) {
#if VL == 16 && defined(__AVX512DQ__)
    const vf n = vf_round(t), f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    t = vf_max(vf_set1(-160.0f), t);
    const vf n = vf_round(t), f = vf_sub(t, n);
#endif
    static const float wide[] = {1.3264698209241033e-3f, 9.671509265899658e-3f, 5.550733953714371e-2f,
                                 2.402224242687225e-1f, 6.931470036506653e-1f, 1.0f};
    static const float bf16[] = {9.582818485796452e-3f, 5.590637028217316e-2f, 2.402409911155701e-1f,
                                 6.931241750717163e-1f, 1.0f};
    return vf_scale2(narrow ? vf_horner(f, bf16, 5) : vf_horner(f, wide, 6), n);
}

#endif
