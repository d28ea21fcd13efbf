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
 * 1/8: piece i = rint(8a - 1/2) a polynomial in v = a - 1/16 - i/8 in
 * [-1/16, 1/16] (fitted as the others here, relative, in u = 8v; the
 * rows below are those coefficients times 8^k, which is exact, so the
 * sums are the fit's to the bit), its coefficients picked per lane by
 * vpermt2ps from two registers each: [degree][piece]. Degree 5: 1.6e-7
 * the most seen for x Phi(x) over two million x (2 ulp); degree 4 for a
 * result rounded to f16 next: 4.4e-7; degree 3 for one rounded to bf16
 * next: 1.6e-5 (at |x| near 4; every bf16 x still rounds exactly, and all
 * but 0.009% of test_elementwise_x86's f32 x, dense in [1/4, 4]). */
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
        -3.981638551e-01f, -3.919909000e-01f, -3.799306154e-01f, -3.625323176e-01f,
        -3.405675888e-01f, -3.149735332e-01f, -2.867866755e-01f, -2.570739090e-01f,
        -2.268669307e-01f, -1.971054077e-01f, -1.685931832e-01f, -1.419696957e-01f,
        -1.176970080e-01f, -9.606149793e-02f, -7.718758285e-02f, -6.106040627e-02f,
        -4.755388945e-02f, -3.646083176e-02f, -2.752208151e-02f, -2.045267448e-02f,
        -1.496349555e-02f, -1.077780128e-02f, -7.642605808e-03f, -5.335398950e-03f,
        -3.666962264e-03f, -2.481190721e-03f, -1.652829465e-03f, -1.083952026e-03f,
        -6.998520112e-04f, -4.448530090e-04f, -2.783818927e-04f, -1.715061080e-04f,
    },
    {
        1.244261581e-02f, 3.674913570e-02f, 5.936413631e-02f, 7.930392027e-02f,
        9.578461200e-02f, 1.082721278e-01f, 1.165070608e-01f, 1.205033734e-01f,
        1.205230430e-01f, 1.170313209e-01f, 1.106392741e-01f, 1.020407230e-01f,
        9.195079654e-02f, 8.105190098e-02f, 6.995125860e-02f, 5.915227905e-02f,
        4.903995991e-02f, 3.987904638e-02f, 3.182241321e-02f, 2.492670156e-02f,
        1.917198300e-02f, 1.448267233e-02f, 1.074741501e-02f, 7.836366072e-03f,
        5.615035072e-03f, 3.954396117e-03f, 2.737496980e-03f, 1.863040845e-03f,
        1.246609958e-03f, 8.201964665e-04f, 5.306644598e-04f, 3.376518725e-04f,
    },
    {
        6.610139459e-02f, 6.303495914e-02f, 5.713796616e-02f, 4.885685444e-02f,
        3.880160674e-02f, 2.768318541e-02f, 1.624374650e-02f, 5.188320298e-03f,
        -4.874104634e-03f, -1.347400155e-02f, -2.030581050e-02f, -2.523287572e-02f,
        -2.827484347e-02f, -2.958140895e-02f, -2.939758450e-02f, -2.802574262e-02f,
        -2.578929067e-02f, -2.300163545e-02f, -1.994273998e-02f, -1.684414968e-02f,
        -1.388214249e-02f, -1.117775682e-02f, -8.801935241e-03f, -6.783880293e-03f,
        -5.120861344e-03f, -3.788022557e-03f, -2.747189952e-03f, -1.954083797e-03f,
        -1.363714691e-03f, -9.340224206e-04f, -6.279944791e-04f, -4.145879939e-04f,
    },
    {
        -3.103581490e-03f, -9.070869535e-03f, -1.434438583e-02f, -1.854412444e-02f,
        -2.140199579e-02f, -2.278492972e-02f, -2.270062640e-02f, -2.128623053e-02f,
        -1.878272183e-02f, -1.549963001e-02f, -1.177569665e-02f, -7.941019721e-03f,
        -4.285417031e-03f, -1.036044327e-03f, 1.654232386e-03f, 3.708155826e-03f,
        5.116769578e-03f, 5.926078185e-03f, 6.220565643e-03f, 6.106270943e-03f,
        5.695571192e-03f, 5.095086992e-03f, 4.397355020e-03f, 3.676248714e-03f,
        2.985649742e-03f, 2.360573970e-03f, 1.819900004e-03f, 1.369878999e-03f,
        1.007777639e-03f, 7.251970819e-04f, 5.108046462e-04f, 3.523800988e-04f,
    },
    {
        -9.866402484e-03f, -9.103922173e-03f, -7.662460674e-03f, -5.694371648e-03f,
        -3.401896683e-03f, -1.010596287e-03f, 1.258934382e-03f, 3.216783982e-03f,
        4.723285325e-03f, 5.700099748e-03f, 6.132108159e-03f, 6.060859188e-03f,
        5.571736023e-03f, 4.777372815e-03f, 3.800398670e-03f, 2.757961629e-03f,
        1.749857445e-03f, 8.511968772e-04f, 1.096664346e-04f, -4.532535386e-04f,
        -8.381946245e-04f, -1.062178053e-03f, -1.152436831e-03f, -1.140710083e-03f,
        -1.058641705e-03f, -9.345312719e-04f, -7.914740709e-04f, -6.466847844e-04f,
        -5.117116380e-04f, -3.932198742e-04f, -2.940506965e-04f, -2.143279562e-04f,
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
        -3.981637955e-01f, -3.919908404e-01f, -3.799305558e-01f, -3.625322878e-01f,
        -3.405675888e-01f, -3.149735332e-01f, -2.867866755e-01f, -2.570739090e-01f,
        -2.268669456e-01f, -1.971054226e-01f, -1.685932130e-01f, -1.419697255e-01f,
        -1.176970378e-01f, -9.606152028e-02f, -7.718760520e-02f, -6.106041744e-02f,
        -4.755390063e-02f, -3.646083549e-02f, -2.752208151e-02f, -2.045267075e-02f,
        -1.496349182e-02f, -1.077779662e-02f, -7.642600220e-03f, -5.335393362e-03f,
        -3.666957375e-03f, -2.481186530e-03f, -1.652825740e-03f, -1.083948999e-03f,
        -6.998496247e-04f, -4.448511463e-04f, -2.783805248e-04f, -1.715051039e-04f,
    },
    {
        1.244267728e-02f, 3.674919158e-02f, 5.936418846e-02f, 7.930395752e-02f,
        9.578462690e-02f, 1.082721204e-01f, 1.165070385e-01f, 1.205033287e-01f,
        1.205229759e-01f, 1.170312464e-01f, 1.106391922e-01f, 1.020406336e-01f,
        9.195071459e-02f, 8.105182648e-02f, 6.995119900e-02f, 5.915223435e-02f,
        4.903993383e-02f, 3.987903520e-02f, 3.182241321e-02f, 2.492671274e-02f,
        1.917200163e-02f, 1.448269747e-02f, 1.074744202e-02f, 7.836394012e-03f,
        5.615061149e-03f, 3.954420332e-03f, 2.737517934e-03f, 1.863058424e-03f,
        1.246624161e-03f, 8.202077006e-04f, 5.306730745e-04f, 3.376583045e-04f,
    },
    {
        6.605322659e-02f, 6.299051642e-02f, 5.710055679e-02f, 4.882905632e-02f,
        3.878499940e-02f, 2.767825499e-02f, 1.624987647e-02f, 5.204007495e-03f,
        -4.851066507e-03f, -1.344619971e-02f, -2.027590200e-02f, -2.520331740e-02f,
        -2.824767120e-02f, -2.955811471e-02f, -2.937905490e-02f, -2.801229618e-02f,
        -2.578075975e-02f, -2.299748547e-02f, -1.994220726e-02f, -1.684635319e-02f,
        -1.388622075e-02f, -1.118292473e-02f, -8.807540871e-03f, -6.789428648e-03f,
        -5.126009695e-03f, -3.792566247e-03f, -2.751037246e-03f, -1.957226545e-03f,
        -1.366200857e-03f, -9.359322721e-04f, -6.294222549e-04f, -4.156283394e-04f,
    },
    {
        -3.119228873e-03f, -9.085796773e-03f, -1.435721479e-02f, -1.855351217e-02f,
        -2.140681073e-02f, -2.278442867e-02f, -2.269448712e-02f, -2.127470076e-02f,
        -1.876657270e-02f, -1.548004895e-02f, -1.175414678e-02f, -7.919082418e-03f,
        -4.264594521e-03f, -1.017624396e-03f, 1.669295249e-03f, 3.719298402e-03f,
        5.123825278e-03f, 5.929235369e-03f, 6.220330950e-03f, 6.103213876e-03f,
        5.690468475e-03f, 5.088678561e-03f, 4.390311893e-03f, 3.669130616e-03f,
        2.978879958e-03f, 2.354439348e-03f, 1.814562711e-03f, 1.365397824e-03f,
        1.004134072e-03f, 7.223208086e-04f, 5.085956655e-04f, 3.507271467e-04f,
    },
};

static const float gelu_erf_pieces_bf16[4][32] __attribute__((aligned(64))) = {
    {
        4.750823379e-01f, 4.256343246e-01f, 3.773303032e-01f, 3.308744133e-01f,
        2.868877351e-01f, 2.458838969e-01f, 2.082524300e-01f, 1.742507517e-01f,
        1.440044194e-01f, 1.175152585e-01f, 9.467576444e-02f, 7.528800517e-02f,
        5.908513069e-02f, 4.575362802e-02f, 3.495448455e-02f, 2.634212002e-02f,
        1.958006993e-02f, 1.435301080e-02f, 1.037506107e-02f, 7.394595537e-03f,
        5.196068902e-03f, 3.599445568e-03f, 2.457892988e-03f, 1.654343912e-03f,
        1.097476808e-03f, 7.175378851e-04f, 4.623272398e-04f, 2.935528173e-04f,
        1.836680749e-04f, 1.132327016e-04f, 6.878316344e-05f, 4.116681157e-05f,
    },
    {
        -3.981637657e-01f, -3.919907808e-01f, -3.799304664e-01f, -3.625321686e-01f,
        -3.405674100e-01f, -3.149733543e-01f, -2.867864966e-01f, -2.570737600e-01f,
        -2.268667966e-01f, -1.971053034e-01f, -1.685931087e-01f, -1.419696510e-01f,
        -1.176970080e-01f, -9.606152773e-02f, -7.718763500e-02f, -6.106047705e-02f,
        -4.755397514e-02f, -3.646092489e-02f, -2.752217650e-02f, -2.045276761e-02f,
        -1.496358309e-02f, -1.077788044e-02f, -7.642675191e-03f, -5.335457623e-03f,
        -3.667011159e-03f, -2.481230302e-03f, -1.652860432e-03f, -1.083975891e-03f,
        -6.998699973e-04f, -4.448662221e-04f, -2.783914097e-04f, -1.715128310e-04f,
    },
    {
        1.243054029e-02f, 3.671373427e-02f, 5.930814520e-02f, 7.923153043e-02f,
        9.570106119e-02f, 1.081831828e-01f, 1.164184511e-01f, 1.204202920e-01f,
        1.204497367e-01f, 1.169708371e-01f, 1.105933189e-01f, 1.020097286e-01f,
        9.193406999e-02f, 8.104786277e-02f, 6.995768100e-02f, 5.916671455e-02f,
        4.905988649e-02f, 3.990212083e-02f, 3.184663132e-02f, 2.495047264e-02f,
        1.919415034e-02f, 1.450249832e-02f, 1.076452155e-02f, 7.850663736e-03f,
        5.626643077e-03f, 3.963571507e-03f, 2.744568745e-03f, 1.868362073e-03f,
        1.250523259e-03f, 8.230115636e-04f, 5.326466053e-04f, 3.390187048e-04f,
    },
    {
        6.603858620e-02f, 6.296529621e-02f, 5.706484616e-02f, 4.878379032e-02f,
        3.873204067e-02f, 2.762025222e-02f, 1.619006880e-02f, 5.145844072e-03f,
        -4.904203117e-03f, -1.349135023e-02f, -2.031080052e-02f, -2.522657253e-02f,
        -2.825883217e-02f, -2.955771051e-02f, -2.936816961e-02f, -2.799276821e-02f,
        -2.575474791e-02f, -2.296723612e-02f, -1.990986802e-02f, -1.681382582e-02f,
        -1.385503262e-02f, -1.115420181e-02f, -8.782003075e-03f, -6.767430343e-03f,
        -5.107603036e-03f, -3.777577076e-03f, -2.739139600e-03f, -1.948010526e-03f,
        -1.359227230e-03f, -9.307736182e-04f, -6.256889319e-04f, -4.129837034e-04f,
    },
};

/* Whether every lane of the n vectors x is in gelu_erf_by_pieces' range:
 * the largest |x| as bits below 4's (NaN's and inf's are above), by
 * integer operations, which leave the FMA pipes to the pieces. */
static inline __attribute__((always_inline)) bool gelu_erf_pieces_ok(const vf *x, int n) {
    const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
    __m512i most = _mm512_and_si512(_mm512_castps_si512(x[0]), magnitude);
    for (int u = 1; u < n; u++) most = _mm512_max_epu32(most, _mm512_and_si512(_mm512_castps_si512(x[u]), magnitude));
    return !_mm512_cmpge_epu32_mask(most, _mm512_set1_epi32(0x40800000));
}

/* gelu_erf_full for |x| < 4: x Phi(x) with Phi(x) = Phi(-|x|) for x < 0
 * and 1 - Phi(-|x|) else, so x Phi(x) = max(x, 0) - |x| Phi(-|x|) with
 * one rounding (Phi(-|x|) <= 1/2: no bits cancel), from the pieces t of
 * the given degree (a constant): degree + 1 table lookups and degree FMAs
 * in place of an exp and a long polynomial. The piece and v come from
 * adding 1.5 * 2^20, whose ulp is 1/8: the sum's low bits are the index
 * vpermt2ps reads, and subtracting it back leaves the nearest multiple of
 * 1/8. So nothing but the polynomial and the last step multiplies, and
 * the index and v are made by the adders: on Zen 4 vpermt2ps occupies
 * the FMA pipes, which a multiply, vpternlogd or a conversion to int
 * would also take. Degree 5 is 17 operations a vector (gelu_erf_small:
 * 36), degree 4 15 (gelu_erf_narrow, 1e-5 relative: 24), degree 3 13. */
static inline __attribute__((always_inline)) vf gelu_erf_by_pieces(vf x, const float (*t)[32], const int degree) {
    const vf a = _mm512_abs_ps(x), s = vf_sub(a, vf_set1(0.0625f));
    const vf magic = vf_set1(0x1.8p20f);
    /* to nearest even, as rint(8a - 1/2), whatever MXCSR's rounding mode */
    const vf m = _mm512_add_round_ps(s, magic, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i i = _mm512_castps_si512(m);
    const vf v = vf_sub(s, vf_sub(m, magic));
    vf q = _mm512_permutex2var_ps(_mm512_load_ps(t[degree]), i, _mm512_load_ps(t[degree] + 16));
    for (int d = degree - 1; d >= 0; d--)
        q = vf_fma(q, v, _mm512_permutex2var_ps(_mm512_load_ps(t[d]), i, _mm512_load_ps(t[d] + 16)));
    /* max(0, x), not max(x, 0): -0 stays -0, as x Phi(x) */
    return _mm512_fnmadd_ps(a, q, _mm512_max_ps(vf_zero(), x));
}
#endif

#endif
