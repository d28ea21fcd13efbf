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
 * 1/8: piece i = floor(8a) a polynomial in v = a - i/8 in [0, 1/8), its
 * coefficients picked per lane by vpermt2ps from two registers each:
 * [degree][piece]. Fitted by scripts/gelu_pieces.py (relative, in u = 8v;
 * the rows are those coefficients times 8^k, which is exact, so the sums
 * are the fit's to the bit). Worst relative error of q in float, over
 * every 97th float a: degree 5 1.1e-7 (x Phi(x) within 2 ulp), degree 4
 * for a result rounded to f16 next 3.9e-7, degree 3 for one rounded to
 * bf16 next 1.6e-5 (at a near 4; every bf16 x still rounds exactly, and
 * all but 0.009% of test_elementwise_x86's f32 x, dense in [1/4, 4]). */
static const float gelu_erf_pieces[6][32] __attribute__((aligned(64))) = {
    {
        5.000000000e-01f, 4.502617717e-01f, 4.012936652e-01f, 3.538302481e-01f,
        3.085375428e-01f, 2.659855187e-01f, 2.266273499e-01f, 1.907869577e-01f,
        1.586552560e-01f, 1.302945167e-01f, 1.056497768e-01f, 8.456572145e-02f,
        6.680720299e-02f, 5.208127946e-02f, 4.005915672e-02f, 3.039636090e-02f,
        2.275013179e-02f, 1.679330692e-02f, 1.222447306e-02f, 8.774475195e-03f,
        6.209665444e-03f, 4.332448356e-03f, 2.979763318e-03f, 2.020137385e-03f,
        1.349898055e-03f, 8.890252793e-04f, 5.770250573e-04f, 3.690784506e-04f,
        2.326290851e-04f, 1.444807276e-04f, 8.841728413e-05f, 5.331234934e-05f,
    },
    {
        -3.989422917e-01f, -3.958363533e-01f, -3.866645992e-01f, -3.718607724e-01f,
        -3.520669043e-01f, -3.281570077e-01f, -3.011364639e-01f, -2.720568478e-01f,
        -2.419715226e-01f, -2.118764669e-01f, -1.826502532e-01f, -1.550119221e-01f,
        -1.295182407e-01f, -1.065382808e-01f, -8.627726138e-02f, -6.878595799e-02f,
        -5.399090797e-02f, -4.172116145e-02f, -3.173980117e-02f, -2.377193794e-02f,
        -1.752834395e-02f, -1.272417884e-02f, -9.093592875e-03f, -6.398081779e-03f,
        -4.431856796e-03f, -3.022250719e-03f, -2.029053401e-03f, -1.341117430e-03f,
        -8.726847591e-04f, -5.590619985e-04f, -3.525952343e-04f, -2.189314400e-04f,
    },
    {
        8.542251067e-07f, 2.465605363e-02f, 4.811242595e-02f, 7.007905096e-02f,
        8.811518550e-02f, 1.023023054e-01f, 1.128658578e-01f, 1.191392243e-01f,
        1.210350171e-01f, 1.191693619e-01f, 1.142281964e-01f, 1.065495983e-01f,
        9.717810899e-02f, 8.656299859e-02f, 7.548913360e-02f, 6.446764618e-02f,
        5.398743972e-02f, 4.433943704e-02f, 3.571629152e-02f, 2.823143639e-02f,
        2.191304602e-02f, 1.670032740e-02f, 1.250550058e-02f, 9.194953367e-03f,
        6.648273673e-03f, 4.721826408e-03f, 3.297518007e-03f, 2.263042144e-03f,
        1.527310931e-03f, 1.013319939e-03f, 6.610846613e-04f, 4.241642018e-04f,
    },
    {
        6.647040695e-02f, 6.679850817e-02f, 6.531187892e-02f, 4.538921639e-02f,
        4.182798788e-02f, 3.880495951e-02f, 2.329984680e-02f, 8.096073754e-03f,
        -1.089792582e-03f, -9.130584076e-03f, -1.871442236e-02f, -2.254183590e-02f,
        -2.785737254e-02f, -2.914432809e-02f, -2.958248928e-02f, -2.841708250e-02f,
        -2.692060918e-02f, -2.468475699e-02f, -2.169123664e-02f, -1.843709871e-02f,
        -1.539576706e-02f, -1.248903852e-02f, -9.986257181e-03f, -7.696969900e-03f,
        -5.919741932e-03f, -4.405328538e-03f, -3.240304533e-03f, -2.320172265e-03f,
        -1.638525748e-03f, -1.131453086e-03f, -7.667653845e-04f, -5.109372432e-04f,
    },
    {
        1.820184843e-04f, -2.300878055e-02f, -5.623730645e-02f, 5.460040271e-02f,
        -5.082434509e-04f, -7.188775390e-02f, -3.513229638e-02f, 6.257928908e-04f,
        -1.037460007e-02f, -1.950167678e-02f, 6.459489814e-04f, -1.405798085e-02f,
        1.807320863e-03f, -2.474083565e-03f, -2.532965445e-04f, -9.884996107e-04f,
        3.859778866e-03f, 7.764690556e-03f, 7.954396307e-03f, 6.683822256e-03f,
        6.466602907e-03f, 5.391604733e-03f, 5.113730207e-03f, 3.582737641e-03f,
        3.415125888e-03f, 2.569347620e-03f, 2.131177811e-03f, 1.557170297e-03f,
        1.192992553e-03f, 8.547129110e-04f, 5.988875637e-04f, 4.182422708e-04f,
    },
    {
        -1.052520983e-02f, 4.425290227e-02f, 1.330968738e-01f, -2.323767543e-01f,
        -6.636133045e-02f, 1.557954997e-01f, 3.944431990e-02f, -6.938838959e-02f,
        -2.657611109e-02f, 1.273906045e-02f, -3.921780735e-02f, 1.941380091e-02f,
        -1.917095482e-02f, 4.660631996e-03f, 6.070819683e-03f, 1.484025363e-02f,
        3.981713671e-03f, -5.779632833e-03f, -5.454117898e-03f, -1.825929852e-03f,
        -2.438387834e-03f, -9.513140540e-04f, -2.270181663e-03f, 2.701437625e-04f,
        -1.367164659e-03f, -6.732827169e-04f, -9.910196532e-04f, -5.998580600e-04f,
        -5.902713747e-04f, -4.134819319e-04f, -2.818528155e-04f, -2.106502798e-04f,
    },
};

static const float gelu_erf_pieces_narrow[5][32] __attribute__((aligned(64))) = {
    {
        5.000000000e-01f, 4.502617717e-01f, 4.012936652e-01f, 3.538302183e-01f,
        3.085375428e-01f, 2.659855187e-01f, 2.266273499e-01f, 1.907869577e-01f,
        1.586552560e-01f, 1.302945167e-01f, 1.056497768e-01f, 8.456572145e-02f,
        6.680720299e-02f, 5.208127946e-02f, 4.005915672e-02f, 3.039636277e-02f,
        2.275013179e-02f, 1.679330692e-02f, 1.222447306e-02f, 8.774475195e-03f,
        6.209665444e-03f, 4.332448356e-03f, 2.979763085e-03f, 2.020137385e-03f,
        1.349897939e-03f, 8.890252211e-04f, 5.770249991e-04f, 3.690783924e-04f,
        2.326290414e-04f, 1.444806985e-04f, 8.841726230e-05f, 5.331233479e-05f,
    },
    {
        -3.989421129e-01f, -3.958367109e-01f, -3.866657615e-01f, -3.718513250e-01f,
        -3.520662785e-01f, -3.281584382e-01f, -3.011368513e-01f, -2.720562220e-01f,
        -2.419712991e-01f, -2.118766904e-01f, -1.826499104e-01f, -1.550122052e-01f,
        -1.295180917e-01f, -1.065383628e-01f, -8.627737314e-02f, -6.878655404e-02f,
        -5.399097875e-02f, -4.172110930e-02f, -3.173974901e-02f, -2.377191372e-02f,
        -1.752830669e-02f, -1.272416022e-02f, -9.093513712e-03f, -6.398083642e-03f,
        -4.431815352e-03f, -3.022231162e-03f, -2.029027790e-03f, -1.341097406e-03f,
        -8.726685192e-04f, -5.590507062e-04f, -3.525873472e-04f, -2.189257066e-04f,
    },
    {
        -1.311624783e-05f, 2.469491586e-02f, 4.823533818e-02f, 6.957072765e-02f,
        8.805086464e-02f, 1.024506018e-01f, 1.129047722e-01f, 1.190738976e-01f,
        1.210110709e-01f, 1.191866398e-01f, 1.141921282e-01f, 1.065734476e-01f,
        9.716153890e-02f, 8.656927943e-02f, 7.549758255e-02f, 6.449996680e-02f,
        5.399288610e-02f, 4.433401302e-02f, 3.571096063e-02f, 2.822929434e-02f,
        2.190996334e-02f, 1.669895276e-02f, 1.250099856e-02f, 9.195158258e-03f,
        6.645822432e-03f, 4.720668308e-03f, 3.295911243e-03f, 2.261888469e-03f,
        1.526325126e-03f, 1.012630877e-03f, 6.606095703e-04f, 4.238133261e-04f,
    },
    {
        6.680802256e-02f, 6.566015631e-02f, 6.178708002e-02f, 5.528074130e-02f,
        4.363426566e-02f, 3.460873291e-02f, 2.221728303e-02f, 9.953411296e-03f,
        -3.960272879e-04f, -9.544643573e-03f, -1.767948456e-02f, -2.314083651e-02f,
        -2.736777999e-02f, -2.929483727e-02f, -2.978242934e-02f, -2.904843725e-02f,
        -2.705066092e-02f, -2.453045547e-02f, -2.154207043e-02f, -1.838201843e-02f,
        -1.531929802e-02f, -1.245702896e-02f, -9.894887917e-03f, -7.703240030e-03f,
        -5.868156441e-03f, -4.380687140e-03f, -3.205148270e-03f, -2.296473132e-03f,
        -1.617276343e-03f, -1.116578351e-03f, -7.565678679e-04f, -5.033573252e-04f,
    },
    {
        -3.029176733e-03f, -1.069883723e-02f, -1.873736270e-02f, -2.576217987e-02f,
        -1.942888461e-02f, -2.767237462e-02f, -2.385015041e-02f, -1.901380345e-02f,
        -1.781483740e-02f, -1.559104305e-02f, -1.038330793e-02f, -8.226282895e-03f,
        -3.510834416e-03f, -1.048677834e-03f, 1.620146795e-03f, 4.146844614e-03f,
        5.084683187e-03f, 6.130993366e-03f, 6.396074779e-03f, 6.140182260e-03f,
        5.728930235e-03f, 5.095241126e-03f, 4.347372334e-03f, 3.654098837e-03f,
        2.967675915e-03f, 2.352496609e-03f, 1.816207543e-03f, 1.356325578e-03f,
        1.004282851e-03f, 7.225470035e-04f, 5.085860612e-04f, 3.508916125e-04f,
    },
};

static const float gelu_erf_pieces_bf16[4][32] __attribute__((aligned(64))) = {
    {
        5.000000000e-01f, 4.502618015e-01f, 4.012936950e-01f, 3.538302779e-01f,
        3.085375726e-01f, 2.659855783e-01f, 2.266273946e-01f, 1.907870024e-01f,
        1.586553007e-01f, 1.302945465e-01f, 1.056497991e-01f, 8.456573635e-02f,
        6.680721045e-02f, 5.208128318e-02f, 4.005915299e-02f, 3.039635345e-02f,
        2.275012061e-02f, 1.679329388e-02f, 1.222445909e-02f, 8.774461225e-03f,
        6.209652405e-03f, 4.332436714e-03f, 2.979753073e-03f, 2.020129003e-03f,
        1.349891070e-03f, 8.890196914e-04f, 5.770206917e-04f, 3.690751619e-04f,
        2.326266404e-04f, 1.444789668e-04f, 8.841603267e-05f, 5.331147986e-05f,
    },
    {
        -3.989432752e-01f, -3.958434463e-01f, -3.866747022e-01f, -3.718655109e-01f,
        -3.520755172e-01f, -3.281727135e-01f, -3.011487722e-01f, -2.720663548e-01f,
        -2.419816703e-01f, -2.118845433e-01f, -1.826553196e-01f, -1.550163031e-01f,
        -1.295199245e-01f, -1.065391451e-01f, -8.627649397e-02f, -6.878434867e-02f,
        -5.398827791e-02f, -4.171787947e-02f, -3.173635155e-02f, -2.376861125e-02f,
        -1.752522029e-02f, -1.272140909e-02f, -9.091154672e-03f, -6.396100856e-03f,
        -4.430198576e-03f, -3.020943142e-03f, -2.028029412e-03f, -1.340348623e-03f,
        -8.721132763e-04f, -5.586502375e-04f, -3.523043124e-04f, -2.187296923e-04f,
    },
    {
        4.156164141e-05f, 2.494035289e-02f, 4.859962314e-02f, 7.011204213e-02f,
        8.842845261e-02f, 1.030063629e-01f, 1.133780330e-01f, 1.194617674e-01f,
        1.213988662e-01f, 1.194971874e-01f, 1.144020036e-01f, 1.067366228e-01f,
        9.723267704e-02f, 8.659622073e-02f, 7.546409965e-02f, 6.441526860e-02f,
        5.388896167e-02f, 4.420912266e-02f, 3.558018059e-02f, 2.810305171e-02f,
        2.179205418e-02f, 1.659395732e-02f, 1.241115667e-02f, 9.119628929e-03f,
        6.584357005e-03f, 4.671839066e-03f, 3.258137498e-03f, 2.233603504e-03f,
        1.505370834e-03f, 9.975330904e-04f, 6.499603624e-04f, 4.164515994e-04f,
    },
    {
        6.606937945e-02f, 6.276919693e-02f, 5.710539967e-02f, 4.861531779e-02f,
        3.877932206e-02f, 2.761153877e-02f, 1.621166058e-02f, 5.115365144e-03f,
        -5.084955599e-03f, -1.347658597e-02f, -2.031262405e-02f, -2.521245368e-02f,
        -2.825927176e-02f, -2.959460206e-02f, -2.936771885e-02f, -2.799238637e-02f,
        -2.575507015e-02f, -2.297014557e-02f, -1.991193369e-02f, -1.681381464e-02f,
        -1.385545824e-02f, -1.115442533e-02f, -8.782067336e-03f, -6.767769810e-03f,
        -5.107787438e-03f, -3.777464619e-03f, -2.739060670e-03f, -1.947969431e-03f,
        -1.359198242e-03f, -9.307827568e-04f, -6.256784545e-04f, -4.129784938e-04f,
    },
};

/* |x| as bits, for the range check and the pieces alike: the same
 * operation with the same kept constant, so the compiler does it once. */
static inline __attribute__((always_inline)) __m512i gelu_abs_bits(vf x) {
    return _mm512_and_si512(_mm512_castps_si512(x), vi_kept(0x7fffffff));
}

/* Whether every lane of the n vectors x is in gelu_erf_by_pieces' range:
 * the largest |x| as bits below 4's (NaN's and inf's are above), by
 * integer operations, which leave the FMA pipes to the pieces. */
static inline __attribute__((always_inline)) bool gelu_erf_pieces_ok(const vf *x, int n) {
    __m512i most = gelu_abs_bits(x[0]);
    for (int u = 1; u < n; u++) most = _mm512_max_epu32(most, gelu_abs_bits(x[u]));
    return !_mm512_cmpge_epu32_mask(most, vi_kept(0x40800000));
}

/* gelu_erf_full for |x| < 4: x Phi(x) with Phi(x) = Phi(-|x|) for x < 0
 * and 1 - Phi(-|x|) else, so x Phi(x) = max(x, 0) - |x| Phi(-|x|) with
 * one rounding (Phi(-|x|) <= 1/2: no bits cancel), from the pieces t of
 * the given degree (a constant): degree + 1 table lookups and degree FMAs
 * in place of an exp and a long polynomial. The piece and v come from
 * adding 1.5 * 2^20, whose ulp is 1/8, rounding down: the sum's low bits
 * are floor(8a), the index vpermt2ps reads, and subtracting it back leaves
 * that times 1/8. So nothing but the polynomial and the last step
 * multiplies, and the index and v are made by three adders' operations:
 * on Zen 4 vpermt2ps occupies the FMA pipes, which a multiply,
 * vpternlogd or a conversion to int would also take, and the loops these
 * serve are bound by their operations of every kind. Degree 5 is 16
 * operations a vector (gelu_erf_small: 36), degree 4 14 (gelu_erf_narrow,
 * 1e-5 relative: 24), degree 3 12. */
static inline __attribute__((always_inline)) vf gelu_erf_by_pieces(vf x, const float (*t)[32], const int degree) {
    const vf a = _mm512_castsi512_ps(gelu_abs_bits(x)), magic = vf_set1(0x1.8p20f);
    /* floor, whatever MXCSR's rounding mode */
    const vf m = _mm512_add_round_ps(a, magic, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512i i = _mm512_castps_si512(m);
    const vf v = vf_sub(a, vf_sub(m, magic));
    vf q = _mm512_permutex2var_ps(_mm512_load_ps(t[degree]), i, _mm512_load_ps(t[degree] + 16));
    for (int d = degree - 1; d >= 0; d--)
        q = vf_fma(q, v, _mm512_permutex2var_ps(_mm512_load_ps(t[d]), i, _mm512_load_ps(t[d] + 16)));
    /* max(0, x), not max(x, 0): -0 stays -0, as x Phi(x) */
    return _mm512_fnmadd_ps(a, q, _mm512_max_ps(vf_zero(), x));
}
#endif

#endif
