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

#if VL == 16
/* Phi(-a) = erfc(a / sqrt 2) / 2 for a = |x| in [0, 4) by 32 pieces of
 * 1/8: piece i = rint(8a - 1/2) a polynomial in u = 8a - 1/2 - i in
 * [-1/2, 1/2] (fitted as the others here, relative), its coefficients
 * picked per lane by vpermt2ps from two registers each: [degree][piece].
 * Degree 5: 1.6e-7 the most seen for x Phi(x) over two million x (2
 * ulp); degree 4 for a result rounded to bf16 or f16 next: 4.4e-7. */
static const float gelu_erf_pieces[6][32] __attribute__((aligned(64))) = {
    {
        4.750823379e-01f, 4.256343246e-01f, 3.773302734e-01f, 3.308743834e-01f,
        2.868877053e-01f, 2.458838522e-01f, 2.082524002e-01f, 1.742507070e-01f,
        1.440043747e-01f, 1.175152287e-01f, 9.467574209e-02f, 7.528798282e-02f,
        5.908512324e-02f, 4.575362429e-02f, 3.495448828e-02f, 2.634212747e-02f,
        1.958007924e-02f, 1.435302198e-02f, 1.037507225e-02f, 7.394607179e-03f,
        5.196079612e-03f, 3.599455114e-03f, 2.457901137e-03f, 1.654350897e-03f,
        1.097482396e-03f, 7.175423088e-04f, 4.623306450e-04f, 2.935553493e-04f,
        1.836699521e-04f, 1.132340476e-04f, 6.878411659e-05f, 4.116746641e-05f,
    },
    {
        -4.977048188e-02f, -4.899886250e-02f, -4.749132693e-02f, -4.531653970e-02f,
        -4.257094860e-02f, -3.937169164e-02f, -3.584833443e-02f, -3.213423863e-02f,
        -2.835836634e-02f, -2.463817596e-02f, -2.107414789e-02f, -1.774621196e-02f,
        -1.471212599e-02f, -1.200768724e-02f, -9.648447856e-03f, -7.632550783e-03f,
        -5.944236182e-03f, -4.557603970e-03f, -3.440260189e-03f, -2.556584310e-03f,
        -1.870436943e-03f, -1.347225159e-03f, -9.553257260e-04f, -6.669248687e-04f,
        -4.583702830e-04f, -3.101488401e-04f, -2.066036832e-04f, -1.354940032e-04f,
        -8.748150140e-05f, -5.560662612e-05f, -3.479773659e-05f, -2.143826350e-05f,
    },
    {
        1.944158721e-04f, 5.742052454e-04f, 9.275646298e-04f, 1.239123754e-03f,
        1.496634562e-03f, 1.691751997e-03f, 1.820422825e-03f, 1.882865210e-03f,
        1.883172547e-03f, 1.828614390e-03f, 1.728738658e-03f, 1.594386296e-03f,
        1.436731196e-03f, 1.266435953e-03f, 1.092988416e-03f, 9.242543601e-04f,
        7.662493736e-04f, 6.231100997e-04f, 4.972252063e-04f, 3.894797119e-04f,
        2.995622344e-04f, 2.262917551e-04f, 1.679283596e-04f, 1.224432199e-04f,
        8.773492300e-05f, 6.178743934e-05f, 4.277339031e-05f, 2.911001320e-05f,
        1.947828059e-05f, 1.281556979e-05f, 8.291632184e-06f, 5.275810508e-06f,
    },
    {
        1.291042863e-04f, 1.231151546e-04f, 1.115975901e-04f, 9.542354383e-05f,
        7.578438817e-05f, 5.406872151e-05f, 3.172606739e-05f, 1.013343808e-05f,
        -9.519735613e-06f, -2.631640928e-05f, -3.965978613e-05f, -4.928296039e-05f,
        -5.522430365e-05f, -5.777618935e-05f, -5.741715722e-05f, -5.473777856e-05f,
        -5.036970833e-05f, -4.492506923e-05f, -3.895066402e-05f, -3.289872984e-05f,
        -2.711355955e-05f, -2.183155630e-05f, -1.719127977e-05f, -1.324976620e-05f,
        -1.000168231e-05f, -7.398481557e-06f, -5.365605375e-06f, -3.816569915e-06f,
        -2.663505256e-06f, -1.824262540e-06f, -1.226551717e-06f, -8.097421755e-07f,
    },
    {
        -7.577103247e-07f, -2.214567758e-06f, -3.502047321e-06f, -4.527374131e-06f,
        -5.225096629e-06f, -5.562726983e-06f, -5.542145118e-06f, -5.196833627e-06f,
        -4.585625447e-06f, -3.784089358e-06f, -2.874925940e-06f, -1.938725518e-06f,
        -1.046244392e-06f, -2.529405094e-07f, 4.038653287e-07f, 9.053114809e-07f,
        1.249211323e-06f, 1.446796432e-06f, 1.518692784e-06f, 1.490788804e-06f,
        1.390520310e-06f, 1.243917723e-06f, 1.073573003e-06f, 8.975216588e-07f,
        7.289183941e-07f, 5.763120043e-07f, 4.443115245e-07f, 3.344431150e-07f,
        2.460394626e-07f, 1.770500688e-07f, 1.247081656e-07f, 8.603029755e-08f,
    },
    {
        -3.010987086e-07f, -2.778296562e-07f, -2.338397422e-07f, -1.737784316e-07f,
        -1.038176478e-07f, -3.084095113e-08f, 3.841962837e-08f, 9.816845647e-08f,
        1.441432289e-07f, 1.739532394e-07f, 1.871370898e-07f, 1.849627438e-07f,
        1.700358894e-07f, 1.457938481e-07f, 1.159789633e-07f, 8.416630948e-08f,
        5.340141129e-08f, 2.597646720e-08f, 3.346753985e-09f, -1.383220027e-08f,
        -2.557966994e-08f, -3.241510171e-08f, -3.516958103e-08f, -3.481170907e-08f,
        -3.230718093e-08f, -2.851963110e-08f, -2.415387179e-08f, -1.973525343e-08f,
        -1.561619989e-08f, -1.200011823e-08f, -8.973715104e-09f, -6.540770148e-09f,
    },
};

static const float gelu_erf_pieces_narrow[5][32] __attribute__((aligned(64))) = {
    {
        4.750823379e-01f, 4.256343246e-01f, 3.773302734e-01f, 3.308743834e-01f,
        2.868877053e-01f, 2.458838522e-01f, 2.082524002e-01f, 1.742507070e-01f,
        1.440043747e-01f, 1.175152287e-01f, 9.467574209e-02f, 7.528798282e-02f,
        5.908512324e-02f, 4.575362429e-02f, 3.495448828e-02f, 2.634212747e-02f,
        1.958007924e-02f, 1.435302198e-02f, 1.037507225e-02f, 7.394607179e-03f,
        5.196079146e-03f, 3.599455114e-03f, 2.457901137e-03f, 1.654350897e-03f,
        1.097482396e-03f, 7.175422506e-04f, 4.623306158e-04f, 2.935553493e-04f,
        1.836699521e-04f, 1.132340403e-04f, 6.878410932e-05f, 4.116746277e-05f,
    },
    {
        -4.977047443e-02f, -4.899885505e-02f, -4.749131948e-02f, -4.531653598e-02f,
        -4.257094860e-02f, -3.937169164e-02f, -3.584833443e-02f, -3.213423863e-02f,
        -2.835836820e-02f, -2.463817783e-02f, -2.107415162e-02f, -1.774621569e-02f,
        -1.471212972e-02f, -1.200769003e-02f, -9.648450650e-03f, -7.632552180e-03f,
        -5.944237579e-03f, -4.557604436e-03f, -3.440260189e-03f, -2.556583844e-03f,
        -1.870436477e-03f, -1.347224577e-03f, -9.553250275e-04f, -6.669241702e-04f,
        -4.583696718e-04f, -3.101483162e-04f, -2.066032175e-04f, -1.354936248e-04f,
        -8.748120308e-05f, -5.560639329e-05f, -3.479756560e-05f, -2.143813799e-05f,
    },
    {
        1.944168325e-04f, 5.742061185e-04f, 9.275654447e-04f, 1.239124336e-03f,
        1.496634795e-03f, 1.691751881e-03f, 1.820422476e-03f, 1.882864512e-03f,
        1.883171499e-03f, 1.828613225e-03f, 1.728737378e-03f, 1.594384899e-03f,
        1.436729915e-03f, 1.266434789e-03f, 1.092987484e-03f, 9.242536617e-04f,
        7.662489661e-04f, 6.231099251e-04f, 4.972252063e-04f, 3.894798865e-04f,
        2.995625255e-04f, 2.262921480e-04f, 1.679287816e-04f, 1.224436564e-04f,
        8.773533045e-05f, 6.178781769e-05f, 4.277371772e-05f, 2.911028787e-05f,
        1.947850251e-05f, 1.281574532e-05f, 8.291766790e-06f, 5.275911008e-06f,
    },
    {
        1.290102082e-04f, 1.230283524e-04f, 1.115245250e-04f, 9.536925063e-05f,
        7.575195195e-05f, 5.405909178e-05f, 3.173803998e-05f, 1.016407714e-05f,
        -9.474739272e-06f, -2.626210880e-05f, -3.960137110e-05f, -4.922522930e-05f,
        -5.517123282e-05f, -5.773069279e-05f, -5.738096661e-05f, -5.471151599e-05f,
        -5.035304639e-05f, -4.491696382e-05f, -3.894962356e-05f, -3.290303357e-05f,
        -2.712152491e-05f, -2.184164987e-05f, -1.720222826e-05f, -1.326060283e-05f,
        -1.001173769e-05f, -7.407355952e-06f, -5.373119620e-06f, -3.822708095e-06f,
        -2.668361049e-06f, -1.827992719e-06f, -1.229340342e-06f, -8.117741004e-07f,
    },
    {
        -7.615304867e-07f, -2.218212103e-06f, -3.505179393e-06f, -4.529666057e-06f,
        -5.226272151e-06f, -5.562604656e-06f, -5.540646271e-06f, -5.194018740e-06f,
        -4.581682788e-06f, -3.779308827e-06f, -2.869664741e-06f, -1.933369731e-06f,
        -1.041160772e-06f, -2.484434560e-07f, 4.075427853e-07f, 9.080318364e-07f,
        1.250933906e-06f, 1.447567229e-06f, 1.518635486e-06f, 1.490042450e-06f,
        1.389274530e-06f, 1.242353164e-06f, 1.071853490e-06f, 8.957838418e-07f,
        7.272656148e-07f, 5.748142939e-07f, 4.430084743e-07f, 3.333490781e-07f,
        2.451499199e-07f, 1.763478537e-07f, 1.241688636e-07f, 8.562674481e-08f,
    },
};

/* Whether every lane of x is in gelu_erf_by_pieces' range (NaN is not). */
static inline bool gelu_erf_pieces_ok(vf x) {
    return !vf_any(vf_is(vf_copysign(x, vf_zero()), vf_set1(4.0f), _CMP_NLT_UQ));
}

/* gelu_erf_full for |x| < 4: x Phi(x) with Phi(x) = Phi(-|x|) for x < 0
 * and 1 - Phi(-|x|) else (Phi(-|x|) <= 1/2: no bits cancel) from the
 * pieces t of the given degree (a constant): degree + 1 table lookups
 * and degree FMAs in place of an exp and a long polynomial. Degree 5 is
 * 19 operations a vector (gelu_erf_small: 36), degree 4 17 (gelu_erf_narrow,
 * 1e-5 relative: 24). */
static inline __attribute__((always_inline)) vf gelu_erf_by_pieces(vf x, const float (*t)[32], const int degree) {
    const vf m = vf_fms(vf_copysign(x, vf_zero()), vf_set1(8.0f), vf_set1(0.5f));
    /* to nearest, as vf_round, whatever MXCSR's rounding mode */
    const __m512i i = _mm512_cvt_roundps_epi32(m, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const vf u = vf_sub(m, vf_round(m));
    vf q = _mm512_permutex2var_ps(_mm512_load_ps(t[degree]), i, _mm512_load_ps(t[degree] + 16));
    for (int d = degree - 1; d >= 0; d--)
        q = vf_fma(q, u, _mm512_permutex2var_ps(_mm512_load_ps(t[d]), i, _mm512_load_ps(t[d] + 16)));
    return vf_mul(x, _mm512_mask_sub_ps(q, vf_is(x, vf_zero(), _CMP_GE_OQ), vf_set1(1.0f), q));
}
#endif

#endif
