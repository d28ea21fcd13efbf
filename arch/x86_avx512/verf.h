/* tanh, erf and the two GELUs over the simd.h names, for the x86 chain
 * kernels and, through vact.h, the GEMM and convolution epilogues;
 * include it after a simd.h, vmath.h, vdtype.h and vexp.h.
 * Polynomials were fitted to the functions (Chebyshev nodes, weighted
 * least squares iterated toward minimax, coefficients rounded to f32);
 * each comment gives the fit's error. The bounds over the whole float
 * range (tests/test_elementwise_x86.c measures them against libm in
 * double) are listed in kernels/elementwise/x86_chain.h.
 *
 * The GELUs are x Phi(x), with Phi = 1/2 erfc(-x/sqrt 2) or sigmoid(z),
 * z = 2 sqrt(2/pi) (x + 0.044715 x^3). Phi's tail for x < 0 is a tiny
 * exp(-something large): an argument rounded to f32 would carry its
 * rounding, times its size, into the result (x = -10: some hundred ulps),
 * so there the argument is formed as an unevaluated sum hi + lo of f32
 * (the products' errors recovered by fma) and exp(hi + lo) = exp(hi)
 * (1 + lo). The tails also reach below the normal range: exp is taken at
 * 2^64 scale and the product scaled back last, so a denormal result is
 * rounded once. */
#ifndef TSR_X86_VERF_H
#define TSR_X86_VERF_H

/* tanh(x) for |x| < 0.625 as x + x z P(z), z = x^2: P's error 3.9e-8. */
static inline vf tanh_small(vf x, vf z) {
    static const float c[] = {2.338996623e-03f, -8.392967284e-03f, 2.178768627e-02f,
                              -5.396236479e-02f, 1.333332360e-01f,  -3.333333433e-01f};
    return vf_fma(vf_mul(x, z), vf_horner(z, c, 6), x);
}

/* tanh(x): the polynomial below |x| = 0.625, else 1 - 2 / (exp(2|x|) + 1)
 * with x's sign (from 0.625 on, 2 / (e + 1) < 0.45: no bits cancel;
 * exp overflows to inf past |x| = 44 and the result is 1). */
static inline vf tanh_full(vf x) {
    const vf one = vf_set1(1.0f), ax = vf_copysign(x, vf_zero());
    const vf large = vf_copysign(vf_sub(one, vf_div(vf_set1(2.0f), vf_add(exp_full(vf_add(ax, ax)), one))), x);
    return vf_select(vf_is(ax, vf_set1(0.625f), _CMP_LT_OQ), large, tanh_small(x, vf_mul(x, x)));
}

/* erf(x) / x - 1 for |x| < 0.875, z = x^2: error 1.1e-8. */
static inline vf erf_small_q(vf z) {
    static const float c[] = {8.698958845e-05f,  -8.216545102e-04f, 5.207219161e-03f, -2.686177380e-02f,
                              1.128373668e-01f, -3.761263490e-01f, 1.283791661e-01f};
    return vf_horner(z, c, 7);
}

/* erfc(v) exp(v^2) for v >= 0 (fitted on [0, 10.6], 9.8e-9 relative;
 * past 10.6 erfc(v) itself is below every float, and the polynomial only
 * has to stay bounded) as a polynomial in t = 1 / (1 + v/2). v = inf
 * gives the constant term, NaN stays NaN. */
static inline vf erfcx(vf v) {
    static const float c[] = {2.574140206e-02f, -1.288470328e-01f, 2.109286040e-01f, -1.746615209e-02f,
                              -3.022931218e-01f, 2.306584269e-01f, -3.873006254e-02f, 2.164182216e-01f,
                              2.383606285e-01f,  2.832160294e-01f, 2.820102870e-01f,  2.763678140e-06f};
    return vf_horner(vf_div(vf_set1(1.0f), vf_fma(v, vf_set1(0.5f), vf_set1(1.0f))), c, 12);
}

/* erf(x): x + x Q(x^2) below |x| = 0.875, else 1 - erfc(|x|) with x's
 * sign (erfc < 0.22 there: no bits cancel). x^2 needs no second part
 * here: erfc is small beside 1 wherever its argument's rounding shows. */
static inline vf erf_full(vf x) {
    const vf ax = vf_copysign(x, vf_zero()), z = vf_mul(x, x);
    const vf ec = vf_mul(exp_unchecked(vf_mul(z, vf_set1(-1.0f))), erfcx(ax));
    const vf large = vf_copysign(vf_sub(vf_set1(1.0f), ec), x);
    return vf_select(vf_is(ax, vf_set1(0.875f), _CMP_LT_OQ), large, vf_fma(x, erf_small_q(z), x));
}

/* x limited to [-lim, lim], NaN kept (the clamps take x second, which
 * max/min return for NaN): the hi + lo products below stay finite. */
static inline vf clamp_abs(vf x, float lim) { return vf_min(vf_set1(lim), vf_max(vf_set1(-lim), x)); }

/* exp(-(hi + lo)) 2^64 for hi >= 0 (lo small beside hi). */
static inline vf exp_neg_pair_2p64(vf hi, vf lo) {
    const vf e = exp_unchecked_scaled(vf_mul(hi, vf_set1(-1.0f)), 64.0f);
    return vf_fma(e, vf_mul(lo, vf_set1(-1.0f)), e);
}

/* 0.5 x (1 + erf(x / sqrt 2)) = x Phi(x), Phi from erfc(u), u = |x| /
 * sqrt 2, alone: 1 - erfc(u)/2 for x >= 0 (erfc(u)/2 <= 1/2: no bits
 * cancel), erfc(u)/2 for x < 0, where erfc(u) = exp(-x^2/2) erfcx(u) and
 * x^2 = hi + lo. +inf gives inf and -inf NaN (-inf * 0), as the
 * definition does. */
static inline vf gelu_erf_full(vf x) {
    const vf half = vf_set1(0.5f), xc = clamp_abs(x, 1e19f);
    const vf u = vf_mul(vf_copysign(x, vf_zero()), vf_set1(0.70710678118654752f));
    const vf hi = vf_mul(xc, xc), lo = vf_fms(xc, xc, hi);
    /* erfc(u) / 2 at 2^64 scale */
    const vf ec = vf_mul(vf_mul(exp_neg_pair_2p64(vf_mul(hi, half), vf_mul(lo, half)), erfcx(u)), half);
    const vf pos = vf_mul(x, vf_fma(ec, vf_set1(-0x1p-64f), vf_set1(1.0f)));
    return vf_select(vf_is(x, vf_zero(), _CMP_LT_OQ), pos, vf_mul(vf_mul(x, ec), vf_set1(0x1p-64f)));
}

/* gelu_erf_full for |x| <= 3 (no NaN): erfc(u)/2 exp(u^2), u = |x| /
 * sqrt 2 in [0, 2.13], as one polynomial in s = 2|x|/3 - 1 (fitted on
 * [-1, 1], 4.7e-8 relative) in place of erfcx's division and longer
 * polynomial; no clamp and no 2^64 scale (exp(-x^2/2) >= 0.011 here).
 * About a third fewer operations; the chains take it for vectors whose
 * every lane is in range. */
static inline vf gelu_erf_small(vf x) {
    static const float c[] = {1.561287354e-05f,  -4.936721234e-05f, 9.268378926e-05f, -2.427267900e-04f,
                              6.913702236e-04f,  -1.753839781e-03f, 4.197746050e-03f, -9.612417780e-03f,
                              2.080840245e-02f,  -4.217776656e-02f, 7.917048782e-02f, -1.354069114e-01f,
                              2.057806700e-01f};
    /* -x^2/2 = hi + lo exactly (the halving is exact) */
    const vf ax = vf_copysign(x, vf_zero()), a = vf_mul(x, vf_set1(-0.5f)), hi = vf_mul(x, a), lo = vf_fms(x, a, hi);
    vf n;
    const vf er = vf_exp_reduced(hi, &n), e = vf_scale2_normal(er, n); /* hi >= -4.5: no clamp, e normal */
    const vf ec = vf_mul(vf_fma(e, lo, e), vf_horner(vf_fms(ax, vf_set1(2.0f / 3.0f), vf_set1(1.0f)), c, 13));
    return vf_mul(x, vf_select(vf_is(x, vf_zero(), _CMP_LT_OQ), vf_sub(vf_set1(1.0f), ec), ec));
}

/* gelu_erf_small to about 1e-5 relative, for a result rounded to bf16 or
 * f16 next (half an ulp of those is 2^-9 and 2^-12 relative; the 4.7e-8
 * above buys those outputs nothing): the same erfc(u)/2 exp(u^2) in s, a
 * degree-8 fit (6.0e-6 relative), times exp(-x^2/2) = 2^t as 2^f 2^n
 * (f = t - round(t) in [-1/2, 1/2], a degree-4 fit, 2.6e-6; t's rounding
 * costs at most 6.5 2^-23, 8e-7, so no hi + lo). 24 operations against
 * gelu_erf_small's 36; |x| <= 3, as there. */
static inline vf gelu_erf_narrow(vf x) {
    static const float c[] = {8.929576725e-04f,  -2.450930420e-03f, 4.105688538e-03f,
                              -9.065417573e-03f, 2.079760842e-02f,  -4.232879356e-02f,
                              7.917930186e-02f,  -1.353960335e-01f, 2.057802826e-01f};
    static const float p[] = {9.570087306e-03f, 5.591785908e-02f, 2.402474582e-01f, 6.931217909e-01f,
                              9.999992847e-01f};
    const vf ax = vf_copysign(x, vf_zero());
    const vf t = vf_mul(vf_mul(x, x), vf_set1(-0.72134752044448170f)); /* -x^2/2 log2(e), in [-6.5, 0] */
    const vf n = vf_round(t);
    const vf e = vf_scale2_normal(vf_horner(vf_sub(t, n), p, 5), n);
    const vf ec = vf_mul(e, vf_horner(vf_fms(ax, vf_set1(2.0f / 3.0f), vf_set1(1.0f)), c, 9));
    return vf_mul(x, vf_select(vf_is(x, vf_zero(), _CMP_LT_OQ), vf_sub(vf_set1(1.0f), ec), ec));
}

/* Whether every lane of x is in gelu_erf_small's range (NaN is not). */
static inline bool gelu_erf_small_ok(vf x) {
    return !vf_any(vf_is(vf_copysign(x, vf_zero()), vf_set1(3.0f), _CMP_NLE_UQ));
}

/* x sigmoid(z), z = 2 sqrt(2/pi) x (1 + 0.044715 x^2) (the tanh form
 * 0.5 x (1 + tanh(z/2)) without its cancellation for x < 0), with z as
 * zh + zl and the constants as f32 pairs: sigmoid(z) = (z < 0 ? e : 1) /
 * (1 + e), e = exp(-|z|). Past |x| = 16 the clamp changes nothing (e is
 * 0 or sigmoid is 1 there): the result is then x times 1 or 0. */
static inline vf gelu_tanh_full(vf x) {
    const vf one = vf_set1(1.0f), xc = clamp_abs(x, 16.0f);
    const vf ah = vf_set1(0.044715f), al = vf_set1((float)(0.044715 - (double)0.044715f));
    const vf kh = vf_set1(1.5957691216057308f), kl = vf_set1((float)(1.5957691216057308 - (double)1.5957691216057308f));
    const vf sh = vf_mul(xc, xc), sl = vf_fms(xc, xc, sh);
    const vf th = vf_mul(ah, sh), tl = vf_add(vf_fms(ah, sh, th), vf_fma(ah, sl, vf_mul(al, sh)));
    const vf wh = vf_add(one, th), bb = vf_sub(wh, one); /* 1 + t, both roundings' errors kept (two-sum) */
    const vf wl = vf_add(vf_add(vf_sub(one, vf_sub(wh, bb)), vf_sub(th, bb)), tl);
    const vf ph = vf_mul(xc, wh), pl = vf_fma(xc, wl, vf_fms(xc, wh, ph));
    const vf zh = vf_mul(kh, ph), zl = vf_add(vf_fms(kh, ph, zh), vf_fma(kh, pl, vf_mul(kl, ph)));
    const vmask neg = vf_is(zh, vf_zero(), _CMP_LT_OQ);
    /* -|z| = -|zh| + (zh < 0 ? zl : -zl) */
    const vf e64 = exp_neg_pair_2p64(vf_copysign(zh, vf_zero()), vf_select(neg, zl, vf_mul(zl, vf_set1(-1.0f))));
    const vf e = vf_mul(e64, vf_set1(0x1p-64f));
    const vf q = vf_div(vf_select(neg, x, vf_mul(x, e64)), vf_add(one, e));
    return vf_select(neg, q, vf_mul(q, vf_set1(0x1p-64f)));
}

#endif
