/* The x86 chain kernels on their own, over the whole float range: ~70000
 * values spread evenly over the bit patterns plus every edge (±0, ±inf,
 * NaN, denormals, FLT_MAX, the overflow and underflow thresholds of exp).
 * Each op's error against the math library (double, rounded once) is
 * measured in ulp and held to the bound documented in
 * kernels/elementwise/x86_chain.h; lane-by-lane ops must equal the
 * reference bit for bit. Kernels this CPU cannot run print SKIP. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

static const char *kernels[] = {"chain.x86_avx512_bf16", "chain.x86_avx512", "chain.x86_avx2"};

/* The definitions, from libm in double (as test_elementwise.c writes them). */
static float want_unary(tsr_unary_op op, float xf) {
    const double x = xf;
    switch (op) {
    case TSR_UNARY_NEG: return -xf;
    case TSR_UNARY_ABS: return fabsf(xf);
    case TSR_UNARY_SQUARE: return (float)(x * x);
    case TSR_UNARY_SQRT: return (float)sqrt(x);
    case TSR_UNARY_RSQRT: return (float)(1.0 / sqrt(x));
    case TSR_UNARY_RECIPROCAL: return (float)(1.0 / x);
    case TSR_UNARY_EXP: return (float)exp(x);
    case TSR_UNARY_SIGMOID: return (float)(1.0 / (1.0 + exp(-x)));
    case TSR_UNARY_SILU: return (float)(x / (1.0 + exp(-x)));
    case TSR_UNARY_RELU: return isnan(xf) ? xf : xf > 0 ? xf : 0.0f;
    case TSR_UNARY_TANH: return (float)tanh(x);
    case TSR_UNARY_ERF: return (float)erf(x);
    case TSR_UNARY_GELU_ERF: return (float)(0.5 * x * erfc(-x * 0.70710678118654752440));
    case TSR_UNARY_GELU_TANH: return (float)(x / (1.0 + exp(-2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x))));
    default: return tsr_unary_ref(op, xf);
    }
}

static int fill_range(float *x) {
    int n = 0;
    for (uint64_t bits = 0; bits < (1ull << 32); bits += 61681) { /* ~69600 patterns, both signs */
        uint32_t b = (uint32_t)bits;
        memcpy(&x[n++], &b, 4);
    }
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f, 1e-40f,
                           FLT_MAX, -FLT_MAX, 88.72283f, 88.72284f, 88.7f, 89.0f, -87.33f, -87.34f, -100.0f,
                           -103.97f, -103.98f, -104.0f, -150.0f, 1.0f, -1.0f, 0.5f, 1e-8f, -1e-8f, 16.0f, -16.0f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) x[n++] = edges[i];
    return n;
}

static void run_chain(const tsr_kernel *k, tsr_context *ctx, const tsr_chain_desc *ch, const float *x,
                      const float *b, float *y, int64_t n) {
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_CHAIN;
    p.u.chain.chain = *ch;
    p.u.chain.x = tsr_tensor_contiguous(TSR_F32, 1, &n);
    p.u.chain.y = p.u.chain.x;
    if (ch->num_operands) p.u.chain.chain.operands[0] = p.u.chain.x, p.u.chain.operands[0] = b;
    p.u.chain.xp = x, p.u.chain.yp = y;
    char why[160];
    ck_assert_msg(tsr_kernel_supports(k, &p, ctx, why, sizeof why), "%s", why);
    ck_assert_msg(k->run(ctx, &p, NULL) == TSR_OK, "%s", tsr_last_error());
}

/* false (and a SKIP line) when this CPU cannot run k */
static bool usable(const tsr_kernel *k, tsr_context *ctx) {
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_CHAIN;
    tsr_chain_desc_init(&p.u.chain.chain);
    const int64_t one = 1;
    p.u.chain.x = p.u.chain.y = tsr_tensor_contiguous(TSR_F32, 1, &one);
    char why[160];
    if (tsr_kernel_supports(k, &p, ctx, why, sizeof why)) return true;
    printf("SKIP elementwise_x86: %s: %s\n", k->name, why);
    return false;
}

/* Kernel k (one this CPU runs) on the chain problem cp. */
static void run_chain_problem(const tsr_kernel *k, tsr_context *ctx, const tsr_chain_problem *cp) {
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_CHAIN;
    p.u.chain = *cp;
    char why[160];
    ck_assert_msg(tsr_kernel_supports(k, &p, ctx, why, sizeof why), "%s: %s", k->name, why);
    ck_assert_msg(k->run(ctx, &p, NULL) == TSR_OK, "%s: %s", k->name, tsr_last_error());
}

/* Kernel k's chain of op alone on x[0..n) into y, held to max_ulp of the
 * double-precision definition (want_unary), or with max_ulp 0 to the
 * reference's own values exactly (ops it runs lane by lane); where: the
 * values' description for the log. */
static void check_unary(const tsr_kernel *k, tsr_context *ctx, tsr_unary_op op, int64_t max_ulp, const float *x,
                        float *y, int n, const char *where) {
    tsr_chain_desc ch;
    tsr_chain_desc_init(&ch);
    tsr_chain_push_unary(&ch, op);
    run_chain(k, ctx, &ch, x, NULL, y, n);
    int64_t worst = 0;
    int at = 0;
    for (int i = 0; i < n; i++) {
        const float want = max_ulp ? want_unary(op, x[i]) : tsr_unary_ref(op, x[i]);
        int64_t u = tt_ulps(y[i], want);
        if (!max_ulp && !(y[i] == want || (isnan(y[i]) && isnan(want)))) u = INT64_MAX;
        if (u > worst) worst = u, at = i;
    }
    printf("elementwise_x86: %s unary %d: max %lld ulp over %d values %s\n", k->name, (int)op, (long long)worst, n,
           where);
    ck_assert_msg(worst <= max_ulp, "%s op %d at x = %a: got %a, want %a (%lld ulp > %lld)", k->name, (int)op,
                  (double)x[at], (double)y[at], (double)want_unary(op, x[at]), (long long)worst, (long long)max_ulp);
}

/* An op and the most ulps it may be off the definition (0: the reference's
 * own values exactly). */
typedef struct unary_bound {
    tsr_unary_op op;
    int64_t max_ulp;
} unary_bound;

/* check_unary for each op of ops on x[0..n), on every kernel this CPU runs. */
static void check_unary_ops(const unary_bound *ops, size_t nops, const float *x, int n, const char *where) {
    float *y = malloc(sizeof(float) * (size_t)n);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        if (!usable(k, ctx)) continue;
        for (size_t oi = 0; oi < nops; oi++) check_unary(k, ctx, ops[oi].op, ops[oi].max_ulp, x, y, n, where);
    }
    tsr_context_destroy(ctx);
    free(y);
}

START_TEST(unary_whole_range) {
    /* documented bounds (x86_chain.h); 0 for lane-by-lane reference ops */
    static const unary_bound ops[] = {
        {TSR_UNARY_NEG, 0},     {TSR_UNARY_ABS, 0},        {TSR_UNARY_SQUARE, 0}, {TSR_UNARY_SQRT, 0},
        {TSR_UNARY_RSQRT, 1},   {TSR_UNARY_RECIPROCAL, 1}, {TSR_UNARY_EXP, 2},    {TSR_UNARY_SIGMOID, 3},
        {TSR_UNARY_SILU, 3},    {TSR_UNARY_RELU, 0},       {TSR_UNARY_LOG, 0},    {TSR_UNARY_ERF, 2},
        {TSR_UNARY_TANH, 1},    {TSR_UNARY_GELU_ERF, 6},   {TSR_UNARY_GELU_TANH, 4},
    };
    float *x = malloc(sizeof(float) * 80000);
    const int n = fill_range(x);
    check_unary_ops(ops, sizeof ops / sizeof ops[0], x, n, "over the whole range");
    free(x);
}
END_TEST

/* ops on every STEP-th float of |x| in [lo, hi) (bit patterns of
 * positive floats), each with its negation next to it. */
static void check_unary_dense(uint32_t lo, uint32_t hi, const unary_bound *ops, size_t nops, const char *where) {
    enum { STEP = 64 };
    float *x = malloc(sizeof(float) * 2 * ((hi - lo) / STEP + 1));
    int n = 0;
    for (uint32_t b = lo; b < hi; b += STEP) {
        float f;
        memcpy(&f, &b, 4);
        x[n++] = f, x[n++] = -f;
    }
    check_unary_ops(ops, nops, x, n, where);
    free(x);
}

/* gelu_erf densely where activations live, |x| in [1/4, 4], both signs:
 * vectors wholly within the chains' short form's range take it (AVX-512:
 * |x| < 4, every one of verf.h's 32 pieces; AVX2: |x| <= 3,
 * gelu_erf_small), the others and those straddling 3 the general one; the
 * whole-range test samples this region only a few hundred times. */
START_TEST(gelu_erf_dense_core) {
    static const unary_bound ops[] = {{TSR_UNARY_GELU_ERF, 6}};
    check_unary_dense(0x3e800000, 0x40800000, ops, 1, "with |x| in [1/4, 4]");
}
END_TEST

/* sigmoid and silu densely over |x| in [1/4, 32], where gates live (the
 * whole-range test samples it a few hundred times). */
START_TEST(sigmoid_silu_dense_core) {
    static const unary_bound ops[] = {{TSR_UNARY_SIGMOID, 3}, {TSR_UNARY_SILU, 3}};
    check_unary_dense(0x3e800000, 0x42000000, ops, 2, "with |x| in [1/4, 32]");
}
END_TEST

/* Bit patterns of a 16-bit float as a count along the number line (±0
 * alike), so neighbours differ by 1. */
static int32_t half_key(uint16_t b) { return b & 0x8000 ? -(int32_t)(b & 0x7fff) : (int32_t)b; }

/* gelu_erf alone into a bf16 or f16 y, where the chains take its narrow
 * form (x86_chain.h; AVX2 1e-5 relative, AVX-512 3.9e-7 into f16 and
 * 1.6e-5 into bf16): every value within 1 ulp of y's type of the
 * definition rounded to it (NaN where that is NaN). x: every bf16 pattern
 * as a bf16 x, and as f32 x the whole-range spread plus |x| in [1/4, 4]
 * densely; at least 99% of them rounded exactly so, and with AVX-512
 * every bf16 x into a bf16 y. */
START_TEST(gelu_erf_16bit_outputs) {
    enum { NB = 65536, NF = 80000 + 2 * ((0x40800000 - 0x3e800000) / 512) };
    uint16_t *xb = malloc(2 * NB), *y = malloc(2 * NF);
    float *xf = malloc(sizeof(float) * NF);
    for (int i = 0; i < NB; i++) xb[i] = (uint16_t)i;
    int nf = fill_range(xf);
    for (uint32_t b = 0x3e800000; b < 0x40800000; b += 512) {
        float f;
        memcpy(&f, &b, 4);
        xf[nf++] = f, xf[nf++] = -f;
    }
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!usable(k, ctx)) continue;
        for (int run = 0; run < 3; run++) { /* bf16 x into bf16 y; f32 x into bf16 y, into f16 y */
            const tsr_dtype yt = run == 2 ? TSR_F16 : TSR_BF16;
            const int64_t n = run == 0 ? NB : nf;
            tsr_chain_problem cp;
            memset(&cp, 0, sizeof cp);
            cp.x = tsr_tensor_contiguous(run == 0 ? TSR_BF16 : TSR_F32, 1, &n);
            cp.y = tsr_tensor_contiguous(yt, 1, &n);
            tsr_chain_desc_init(&cp.chain);
            tsr_chain_push_unary(&cp.chain, TSR_UNARY_GELU_ERF);
            cp.xp = run == 0 ? (const void *)xb : (const void *)xf, cp.yp = y;
            run_chain_problem(k, ctx, &cp);
            int64_t exact = 0, worst = 0, at = 0;
            for (int64_t i = 0; i < n; i++) {
                const float xi = run == 0 ? tsr_bf16_to_f32(xb[i]) : xf[i];
                const float w = want_unary(TSR_UNARY_GELU_ERF, xi);
                const uint16_t wb = yt == TSR_F16 ? tsr_f32_to_f16(w) : tsr_f32_to_bf16(w);
                const float got = yt == TSR_F16 ? tsr_f16_to_f32(y[i]) : tsr_bf16_to_f32(y[i]);
                int64_t d = isnan(w) || isnan(got) ? (isnan(w) && isnan(got) ? 0 : INT64_MAX)
                                                   : llabs((long long)half_key(y[i]) - half_key(wb));
                exact += d == 0;
                if (d > worst) worst = d, at = i;
            }
            printf("elementwise_x86: %s gelu_erf %s x into %s y: max %lld ulp, %.4f%% exact over %lld values\n",
                   k->name, run == 0 ? "bf16" : "f32", yt == TSR_F16 ? "f16" : "bf16", (long long)worst,
                   100.0 * (double)exact / (double)n, (long long)n);
            ck_assert_msg(worst <= 1, "%s run %d at x = %a: %lld ulp", k->name, run,
                          (double)(run == 0 ? tsr_bf16_to_f32(xb[at]) : xf[at]), (long long)worst);
            /* 1e-5 (AVX2's narrow form) puts ~0.3% of bf16 values across a
             * rounding boundary, an error of 1e-4 (still under 1 bf16 ulp)
             * ~5%; AVX-512's pieces every bf16 x and all but 0.009% (into
             * bf16, degree 3) or 0.0015% (f16, degree 4) of these f32 x on
             * the rounding of the definition */
            const int64_t slack = !strstr(k->name, "avx512") ? n / 100 : run == 0 ? 0 : n / 5000;
            ck_assert_msg(exact >= n - slack, "%s run %d: only %lld of %lld exact", k->name, run, (long long)exact,
                          (long long)n);
        }
    }
    tsr_context_destroy(ctx);
    free(xb), free(y), free(xf);
}
END_TEST

/* exp, sigmoid, silu and tanh densely for |x| in [80, 90], each sign in
 * its own ascending sweep: on AVX2 vectors wholly within [-87, 87] take
 * exp's short form (one product for 2^n, no clamp), those past it or
 * straddling 87 the general one; exp overflows at 88.72. */
START_TEST(exp_family_dense_edges) {
    enum { STEP = 32, HALF = (0x42b40000 - 0x42a00000) / STEP, N = 2 * HALF };
    static const unary_bound ops[] = {
        {TSR_UNARY_EXP, 2}, {TSR_UNARY_SIGMOID, 3}, {TSR_UNARY_SILU, 3}, {TSR_UNARY_TANH, 1}};
    float *x = malloc(sizeof(float) * N);
    int n = 0;
    for (uint32_t b = 0x42a00000; b < 0x42b40000; b += STEP) memcpy(&x[n++], &b, 4);
    for (int i = 0; i < HALF; i++) x[n++] = -x[i];
    check_unary_ops(ops, sizeof ops / sizeof ops[0], x, n, "with |x| in [80, 90]");
    free(x);
}
END_TEST

/* A chain (silu(x) * b) whose y is past 16 MiB, on a 64-byte boundary:
 * stored past the caches, and still the reference's values. */
START_TEST(chain_out_of_cache) {
    const int64_t n = 4500007;
    float *x = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
    float *y = aligned_alloc(64, (sizeof(float) * (size_t)n + 63) / 64 * 64);
    tt_fill(x, TSR_F32, n, 31, -8, 8);
    tt_fill(b, TSR_F32, n, 32, -2, 2);
    tsr_chain_desc ch;
    tsr_chain_desc_init(&ch);
    tsr_chain_push_unary(&ch, TSR_UNARY_SILU);
    const tsr_tensor_desc bd = tsr_tensor_contiguous(TSR_F32, 1, &n);
    ck_assert_int_eq(tsr_chain_push_tensor(&ch, TSR_BINARY_MUL, &bd, 0), TSR_OK);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_kernel *ref = tsr_registry_find("chain.ref");
    ck_assert_ptr_nonnull(ref);
    run_chain(ref, ctx, &ch, x, b, want, n);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!usable(k, ctx)) continue;
        for (int threads = 1; threads <= 2; threads++) {
            ck_assert_int_eq(tsr_context_set_num_threads(ctx, threads), TSR_OK);
            run_chain(k, ctx, &ch, x, b, y, n);
            int64_t bad = 0;
            for (int64_t i = 0; i < n; i++) bad += !(fabsf(y[i] - want[i]) <= 1e-6f * fabsf(want[i]) + 1e-30f);
            ck_assert_msg(bad == 0, "%s, %d threads: %lld of %lld differ", k->name, threads, (long long)bad, (long long)n);
        }
    }
    tsr_context_destroy(ctx);
    free(x), free(b), free(want), free(y);
}
END_TEST

/* A chain of one unary step, or of a unary step times a tensor (a gated
 * unit, the tensor on either side), takes x and the gate into registers
 * and y out of them with no tile buffer (x86_chain.h's unary_direct;
 * AVX-512, AVX2 checked on its tile path alike): each pair of x and y
 * dtypes (the gate's x's), rows padded apart in x and in the gate by
 * different gaps (so rows are not merged) of a length that is no multiple
 * of a step (whole steps and a tail), and a bf16 x and y past the caches
 * (y streamed), against the reference within one rounding of y's type
 * (both round an f32 a few ulps apart). */
static float elem_f(const void *p, tsr_dtype t, int64_t i) {
    return t == TSR_F32 ? ((const float *)p)[i]
         : t == TSR_BF16 ? tsr_bf16_to_f32(((const uint16_t *)p)[i]) : tsr_f16_to_f32(((const uint16_t *)p)[i]);
}

START_TEST(chain_unary_direct) {
    static const tsr_dtype pairs[][2] = {{TSR_BF16, TSR_BF16}, {TSR_F16, TSR_F16}, {TSR_F32, TSR_BF16},
                                         {TSR_BF16, TSR_F32},  {TSR_F32, TSR_F32}, {TSR_BF16, TSR_BF16}};
    static const tsr_unary_op ops[] = {TSR_UNARY_SILU, TSR_UNARY_GELU_ERF, TSR_UNARY_TANH};
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_kernel *ref = tsr_registry_find("chain.ref");
    ck_assert_ptr_nonnull(ref);
    for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++) {
        const bool big = pi == sizeof pairs / sizeof pairs[0] - 1; /* 2 x 12 MiB: y streamed */
        const int64_t rows = big ? 3 : 5, cols = big ? 2100007 : 1037, n = rows * cols;
        const int64_t ld = cols + 5, gld = cols + 3; /* x's and the gate's row strides */
        const tsr_dtype xt = pairs[pi][0], yt = pairs[pi][1];
        void *x = malloc(tsr_dtype_size(xt) * (size_t)(rows * ld));
        void *g = malloc(tsr_dtype_size(xt) * (size_t)(rows * gld));
        void *want = malloc(tsr_dtype_size(yt) * (size_t)n), *y = malloc(tsr_dtype_size(yt) * (size_t)n);
        tt_fill(x, xt, rows * ld, 40 + pi, -6, 6);
        tt_fill(g, xt, rows * gld, 50 + pi, -3, 3);
        tsr_chain_problem cp;
        memset(&cp, 0, sizeof cp);
        const int64_t shape[2] = {rows, cols};
        cp.x = tsr_tensor_contiguous(xt, 2, shape);
        cp.x.strides[0] = ld, cp.x.strides[1] = 1;
        cp.y = tsr_tensor_contiguous(yt, 2, shape);
        cp.xp = x, cp.operands[0] = g;
        tsr_tensor_desc gd = tsr_tensor_contiguous(xt, 2, shape);
        gd.strides[0] = gld;
        /* gate 0: op alone; 1: op(x) * g; 2: g * op(x) */
        for (size_t oi = 0; oi < 3 * sizeof ops / sizeof ops[0]; oi++) {
            const int gate = (int)(oi % 3);
            tsr_chain_desc_init(&cp.chain);
            tsr_chain_push_unary(&cp.chain, ops[oi / 3]);
            if (gate) tsr_chain_push_tensor(&cp.chain, TSR_BINARY_MUL, &gd, gate == 2);
            cp.yp = want;
            run_chain_problem(ref, ctx, &cp);
            for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
                const tsr_kernel *k = tsr_registry_find(kernels[ki]);
                if (!usable(k, ctx)) continue;
                memset(y, 0x7f, tsr_dtype_size(yt) * (size_t)n);
                cp.yp = y;
                run_chain_problem(k, ctx, &cp);
                /* 16-bit y: neighbours at most (one rounding); f32: a few ulps */
                int64_t bad = 0, at = -1;
                for (int64_t i = 0; i < n; i++) {
                    const float w = elem_f(want, yt, i), g = elem_f(y, yt, i);
                    const bool ok = yt == TSR_F32 ? fabsf(g - w) <= 0x1p-20f * fabsf(w) + 1e-30f
                                                  : abs(half_key(((const uint16_t *)y)[i]) -
                                                        half_key(((const uint16_t *)want)[i])) <= 1;
                    if (!ok) bad++, at = at < 0 ? i : at;
                }
                ck_assert_msg(bad == 0, "%s op %d gate %d, x %d y %d, %lldx%lld: %lld differ, first at %lld",
                              k->name, (int)ops[oi / 3], gate, (int)xt, (int)yt, (long long)rows, (long long)cols,
                              (long long)bad, (long long)at);
            }
        }
        free(x), free(g), free(want), free(y);
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* Binary ops exactly as the reference, NaN propagation of max/min both
 * ways, on the same values against a shifted copy of themselves. */
START_TEST(binary_whole_range) {
    float *x = malloc(sizeof(float) * 80000), *b = malloc(sizeof(float) * 80000), *y = malloc(sizeof(float) * 80000);
    const int n = fill_range(x);
    for (int i = 0; i < n; i++) b[i] = x[(i * 7 + 3) % n];
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        if (!usable(k, ctx)) continue;
        for (int op = 0; op < TSR_BINARY_COUNT; op++)
            for (int left = 0; left < 2; left++) {
                tsr_chain_desc ch;
                tsr_chain_desc_init(&ch);
                tsr_tensor_desc bd = tsr_tensor_contiguous(TSR_F32, 1, (const int64_t[]){n});
                tsr_chain_push_tensor(&ch, (tsr_binary_op)op, &bd, left);
                run_chain(k, ctx, &ch, x, b, y, n);
                for (int i = 0; i < n; i++) {
                    const float want = left ? tsr_binary_ref((tsr_binary_op)op, b[i], x[i])
                                            : tsr_binary_ref((tsr_binary_op)op, x[i], b[i]);
                    ck_assert_msg(y[i] == want || (isnan(y[i]) && isnan(want)), "%s binary %d left %d: %a, %a -> %a, want %a",
                                  k->name, op, left, (double)x[i], (double)b[i], (double)y[i], (double)want);
                }
            }
    }
    tsr_context_destroy(ctx);
    free(x), free(b), free(y);
}
END_TEST

/* ------------------------------------------------------------- row kernels */

static const char *const row_ops[] = {"softmax", "layernorm", "rmsnorm"};
static const tsr_op row_op_ids[] = {TSR_OP_SOFTMAX, TSR_OP_LAYERNORM, TSR_OP_RMSNORM};
/* the x86 row kernels' archs, as registered (fastest first) */
static const char *const row_archs[] = {"x86_avx512_bf16", "x86_avx512", "x86_avx2"};

/* The row kernel op.arch, which must be registered. */
static const tsr_kernel *row_kernel(const char *op, const char *arch) {
    char name[48];
    snprintf(name, sizeof name, "%s.%s", op, arch);
    const tsr_kernel *k = tsr_registry_find(name);
    ck_assert_msg(k != NULL, "%s is not registered", name);
    return k;
}

static void run_row_kernel(const tsr_kernel *k, tsr_context *ctx, tsr_op op, const tsr_rowwise_desc *d, const void *x,
                           const float *g, const float *b, void *y) {
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.u.rowwise.d = *d;
    p.u.rowwise.x = x, p.u.rowwise.y = y, p.u.rowwise.gamma = g, p.u.rowwise.beta = op == TSR_OP_LAYERNORM ? b : NULL;
    char why[160];
    ck_assert_msg(tsr_kernel_supports(k, &p, ctx, why, sizeof why), "%s: %s", k->name, why);
    ck_assert_msg(k->run(ctx, &p, NULL) == TSR_OK, "%s: %s", k->name, tsr_last_error());
}

/* false (and a SKIP line) when this CPU cannot run row kernel k */
static bool row_usable(const tsr_kernel *k, tsr_context *ctx, tsr_op op) {
    tsr_problem probe;
    memset(&probe, 0, sizeof probe);
    probe.op = op;
    probe.u.rowwise.d.rows = probe.u.rowwise.d.cols = 1;
    probe.u.rowwise.d.x_dtype = probe.u.rowwise.d.y_dtype = TSR_F32;
    char why[160];
    if (tsr_kernel_supports(k, &probe, ctx, why, sizeof why)) return true;
    printf("SKIP elementwise_x86: %s: %s\n", k->name, why);
    return false;
}

/* Row r's special values. Softmax: 0 plain; 1 logits near 90 (whose exp
 * overflows unshifted); 2 the row max first, then a NaN in the same
 * vector lane (the vector max loses the max there, the row must still be
 * NaN); 3 all -inf; 4 -inf entries and a +inf at the end; 5 a NaN (every
 * payload bit set) alone at the end. Norms: 0 plain; 1 around 1e4 (where
 * a one-pass variance about 0 cancels); 2 the first 16 values 50 above
 * the rest (the shift the one-pass sums take from them is far from the
 * mean: the centred second pass); 3 all equal (variance 0); 4 a NaN in
 * the middle; 5 a +inf at the end (NaN and inf rows need the bf16
 * store's NaN test). */
static void special_row(void *x, tsr_dtype t, int64_t at, int64_t cols, int r, bool softmax) {
    /* a NaN with every payload bit set: rounded to bf16 as a number, it
     * would carry into the sign and become -0 */
    const uint32_t nan_bits = 0x7fffffffu;
    float nan_payload;
    memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
    for (int64_t j = 0; j < cols; j++) {
        float v = (float)tsr_load_f(x, t, at + j);
        if (softmax) switch (r) {
            case 1: v += 90.0f; break;
            case 2: v = j == 0 ? 9.0f : j == 16 % cols && j ? NAN : v; break;
            case 3: v = -INFINITY; break;
            case 4: v = j == cols - 1 ? INFINITY : j % 3 == 1 ? -INFINITY : v; break;
            case 5: v = j == cols - 1 ? nan_payload : v; break;
            default: break;
            }
        else switch (r) {
            case 1: v += 1e4f; break;
            case 2: v += j < 16 ? 50.0f : 0.0f; break;
            case 3: v = 2.75f; break;
            case 4: v = j == cols / 2 ? nan_payload : v; break;
            case 5: v = j == cols - 1 ? INFINITY : v; break;
            default: break;
            }
        tsr_store_f(x, t, at + j, v);
    }
}

/* |got - want| within half an ulp of the output dtype (its rounding) plus
 * the f32 computation's own error; NaN matches NaN. */
static int64_t row_mismatches(const char *what, const void *got, tsr_dtype t, int64_t got_at, const float *want,
                              int64_t cols, double f32_rtol, double atol) {
    const double half_ulp = t == TSR_BF16 ? 0x1p-8 : t == TSR_F16 ? 0x1p-11 : 0.0;
    const double sub = t == TSR_F16 ? 0x1p-25 : 0.0; /* f16's subnormal spacing, halved */
    int64_t bad = 0;
    for (int64_t j = 0; j < cols; j++) {
        const double g = tsr_load_f(got, t, got_at + j), w = want[j];
        const bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w
                                            : fabs(g - w) <= atol + sub + (half_ulp + f32_rtol) * fabs(w);
        if (!ok && bad++ < 3) printf("  %s: [%lld] got %.9g want %.9g\n", what, (long long)j, g, w);
    }
    return bad;
}

/* Every row kernel against the reference on awkward lengths (1, below,
 * at and past the vector width and the 4-vector step, primes, longer
 * than the stack scratch), every dtype pair, strided rows with their gaps
 * untouched, in place, the special rows above, one and two threads. */
START_TEST(row_kernels) {
    static const int64_t cols_list[] = {1, 2, 15, 16, 17, 31, 33, 63, 64, 65, 97, 127, 257, 1031, 8209};
    static const tsr_dtype dts[] = {TSR_F32, TSR_F16, TSR_BF16};
    enum { R = 6 };
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
    for (int oi = 0; oi < 3; oi++) {
        const tsr_kernel *ref = tsr_registry_find(oi == 0 ? "softmax.ref"
                                                  : oi == 1               ? "layernorm.ref"
                                                                          : "rmsnorm.ref");
        ck_assert_ptr_nonnull(ref);
        for (size_t ai = 0; ai < sizeof row_archs / sizeof row_archs[0]; ai++) {
            const tsr_kernel *k = row_kernel(row_ops[oi], row_archs[ai]);
            if (!row_usable(k, ctx, row_op_ids[oi])) continue;
            for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++)
                for (int xi = 0; xi < 3; xi++)
                    for (int yi = 0; yi < 3; yi++)
                        for (int strided = 0; strided < 2; strided++) {
                            const int64_t C = cols_list[ci], XS = strided ? C + 3 : C, YS = strided ? C + 5 : C;
                            const tsr_dtype xt = dts[xi], yt = dts[yi];
                            const size_t ex = tsr_dtype_size(xt), ey = tsr_dtype_size(yt);
                            void *x = malloc((size_t)(R * XS) * ex), *y = malloc((size_t)(R * YS) * ey);
                            float *want = malloc(sizeof(float) * (size_t)(R * C));
                            float *g = malloc(sizeof(float) * (size_t)C), *b = malloc(sizeof(float) * (size_t)C);
                            tt_fill(x, xt, R * XS, 80 + ci, -5, 5);
                            tt_fill(g, TSR_F32, C, 81, 0.5f, 1.5f);
                            tt_fill(b, TSR_F32, C, 82, -1, 1);
                            for (int r = 0; r < R; r++) special_row(x, xt, r * XS, C, r, oi == 0);
                            tt_fill_sentinel(y, (size_t)(R * YS) * ey);
                            tsr_rowwise_desc d, dw;
                            tsr_rowwise_desc_init(&d);
                            d.rows = R, d.cols = C, d.x_dtype = xt, d.y_dtype = yt;
                            d.x_row_stride = XS, d.y_row_stride = YS;
                            dw = d, dw.y_dtype = TSR_F32, dw.y_row_stride = C;
                            run_row_kernel(ref, ctx, row_op_ids[oi], &dw, x, g, b, want);
                            run_row_kernel(k, ctx, row_op_ids[oi], &d, x, g, b, y);
                            char what[96];
                            snprintf(what, sizeof what, "%s %lld cols%s %s->%s", k->name, (long long)C,
                                     strided ? " strided" : "", tsr_dtype_name(xt), tsr_dtype_name(yt));
                            const double rtol = tt_rtol(TSR_F32, C), atol = oi == 0 ? 1e-7 : rtol;
                            int64_t bad = 0;
                            for (int r = 0; r < R; r++)
                                bad += row_mismatches(what, y, yt, r * YS, want + r * C, C, rtol, atol);
                            /* the gaps between strided rows keep their bytes */
                            void *probe_y = malloc((size_t)(R * YS) * ey);
                            tt_fill_sentinel(probe_y, (size_t)(R * YS) * ey);
                            for (int r = 0; r < R; r++)
                                bad += memcmp((char *)y + (size_t)(r * YS + C) * ey,
                                              (char *)probe_y + (size_t)(r * YS + C) * ey, (size_t)(YS - C) * ey) != 0;
                            free(probe_y);
                            /* in place (same dtype and stride): the same bytes as out of place */
                            if (xt == yt && !strided) {
                                void *ip = malloc((size_t)(R * XS) * ex);
                                memcpy(ip, x, (size_t)(R * XS) * ex);
                                run_row_kernel(k, ctx, row_op_ids[oi], &d, ip, g, b, ip);
                                bad += memcmp(ip, y, (size_t)(R * C) * ey) != 0;
                                free(ip);
                            }
                            ck_assert_msg(bad == 0, "%s: %lld mismatches", what, (long long)bad);
                            free(x), free(y), free(want), free(g), free(b);
                        }
            /* two threads, rows split between them, each prefetching its
             * next row; y past 16 MiB on a 64-byte boundary, so the rows
             * whose vectors line up are stored past the caches */
            ck_assert_int_eq(tsr_context_set_num_threads(ctx, 2), TSR_OK);
            const int64_t R2 = 2053, C2 = 4099;
            float *x2 = malloc(sizeof(float) * (size_t)(R2 * C2)), *y2 = aligned_alloc(64, (sizeof(float) * (size_t)(R2 * C2) + 63) / 64 * 64);
            float *w2 = malloc(sizeof(float) * (size_t)(R2 * C2)), *g2 = malloc(sizeof(float) * (size_t)C2);
            tt_fill(x2, TSR_F32, R2 * C2, 90, -5, 5);
            tt_fill(g2, TSR_F32, C2, 91, 0.5f, 1.5f);
            tsr_rowwise_desc d2;
            tsr_rowwise_desc_init(&d2);
            d2.rows = R2, d2.cols = C2;
            d2.x_row_stride = d2.y_row_stride = C2; /* the op front's job, skipped here */
            run_row_kernel(ref, ctx, row_op_ids[oi], &d2, x2, g2, g2, w2);
            for (int yi = 0; yi < 2; yi++) {
                d2.y_dtype = yi ? TSR_F32 : TSR_BF16;
                run_row_kernel(k, ctx, row_op_ids[oi], &d2, x2, g2, g2, y2);
                const double rtol2 = tt_rtol(TSR_F32, C2); /* norms: absolute error of terms near 1 cancelling */
                ck_assert_int_eq(row_mismatches(k->name, y2, d2.y_dtype, 0, w2, R2 * C2, rtol2, oi == 0 ? 1e-7 : rtol2), 0);
            }
            ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
            free(x2), free(y2), free(w2), free(g2);
        }
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* Softmax into bf16 and f16 y (AVX-512 takes a degree-4 exp there): each
 * output is the reference's f32 result rounded to y's type or its
 * neighbour, and 99.8% at least are that rounding exactly (x of the
 * 16-bit type over [-8, 8], rows of 1031 and 4096). Measured with the
 * degree-4 exp: bf16 99.975%, f16 99.926%; with AVX2's degree 6: bf16
 * 100%, f16 99.997%. */
START_TEST(softmax_16bit_outputs) {
    static const int64_t cols_list[] = {1031, 4096};
    static const tsr_dtype yts[] = {TSR_BF16, TSR_F16};
    enum { R = 64 };
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_kernel *ref = tsr_registry_find("softmax.ref");
    ck_assert_ptr_nonnull(ref);
    for (size_t ai = 0; ai < sizeof row_archs / sizeof row_archs[0]; ai++) {
        const tsr_kernel *k = row_kernel("softmax", row_archs[ai]);
        if (!row_usable(k, ctx, TSR_OP_SOFTMAX)) continue;
        for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++)
            for (size_t ti = 0; ti < sizeof yts / sizeof yts[0]; ti++) {
                const int64_t C = cols_list[ci], n = R * C;
                const tsr_dtype t = yts[ti];
                uint16_t *x = malloc(sizeof(uint16_t) * (size_t)n), *y = malloc(sizeof(uint16_t) * (size_t)n);
                float *want = malloc(sizeof(float) * (size_t)n);
                tt_fill(x, t, n, 120 + ci, -8, 8);
                tsr_rowwise_desc d, dw;
                tsr_rowwise_desc_init(&d);
                d.rows = R, d.cols = C, d.x_dtype = d.y_dtype = t;
                d.x_row_stride = d.y_row_stride = C; /* the kernels see them as validated */
                dw = d, dw.y_dtype = TSR_F32;
                run_row_kernel(ref, ctx, TSR_OP_SOFTMAX, &dw, x, NULL, NULL, want);
                run_row_kernel(k, ctx, TSR_OP_SOFTMAX, &d, x, NULL, NULL, y);
                int64_t exact = 0, worst = 0;
                for (int64_t i = 0; i < n; i++) {
                    const uint16_t w = t == TSR_BF16 ? tsr_f32_to_bf16(want[i]) : tsr_f32_to_f16(want[i]);
                    const int64_t dk = llabs((long long)half_key(y[i]) - half_key(w));
                    exact += dk == 0;
                    worst = dk > worst ? dk : worst;
                }
                printf("elementwise_x86: %s %lld cols into %s: max %lld ulp, %.4f%% exact over %lld values\n",
                       k->name, (long long)C, tsr_dtype_name(t), (long long)worst, 100.0 * (double)exact / (double)n,
                       (long long)n);
                ck_assert_msg(worst <= 1 && exact >= n - n / 500,
                              "%s %lld cols into %s: %lld exact of %lld, max %lld", k->name, (long long)C,
                              tsr_dtype_name(t), (long long)exact, (long long)n, (long long)worst);
                free(x), free(y), free(want);
            }
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* Layernorm rows whose first 16 values sit 1000 above the rest: the
 * kernels' one-pass sums are shifted by the mean of those 16, far from the
 * row's mean, and mean(d^2) - mean(d)^2 would cancel most of its bits; the
 * centred second pass keeps the output within a few f32 ulps of the
 * reference's double computation, on outputs of every size (the bound is
 * relative to the row's largest output, as the outputs are differences). */
START_TEST(norm_shift_far_from_mean) {
    static const int64_t cols_list[] = {1031, 8209};
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
    const tsr_kernel *ref = tsr_registry_find("layernorm.ref");
    for (size_t ai = 0; ai < sizeof row_archs / sizeof row_archs[0]; ai++) {
        const tsr_kernel *k = row_kernel("layernorm", row_archs[ai]);
        if (!row_usable(k, ctx, TSR_OP_LAYERNORM)) continue;
        for (int ci = 0; ci < 2; ci++) {
            const int64_t C = cols_list[ci];
            float *x = malloc(sizeof(float) * (size_t)C), *y = malloc(sizeof(float) * (size_t)C);
            float *want = malloc(sizeof(float) * (size_t)C);
            tt_fill(x, TSR_F32, C, 95 + ci, -1, 1);
            for (int j = 0; j < 16; j++) x[j] += 1000.0f;
            tsr_rowwise_desc d;
            tsr_rowwise_desc_init(&d);
            d.rows = 1, d.cols = C, d.x_row_stride = d.y_row_stride = C;
            run_row_kernel(ref, ctx, TSR_OP_LAYERNORM, &d, x, NULL, NULL, want);
            run_row_kernel(k, ctx, TSR_OP_LAYERNORM, &d, x, NULL, NULL, y);
            double err = 0, big = 0;
            for (int64_t j = 0; j < C; j++) {
                err = fmax(err, fabs((double)y[j] - want[j]));
                big = fmax(big, fabs((double)want[j]));
            }
            printf("%s %lld cols, first 16 +1000: max error %.3g of the largest output %.3g\n", k->name,
                   (long long)C, err, big);
            ck_assert_msg(err <= 8 * FLT_EPSILON * big, "%s %lld cols: error %g > 8 ulp of %g", k->name,
                          (long long)C, err, big);
            free(x), free(y), free(want);
        }
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* Norms into bf16 with a NaN (every payload bit set) and infs in gamma and
 * beta: the outputs there are NaN and inf as the reference's, where a
 * store that took every row for finite would round the NaN to -0. */
START_TEST(norm_nonfinite_params) {
    const uint32_t nan_bits = 0x7fffffffu;
    float nan_payload;
    memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
    for (int oi = 1; oi < 3; oi++)
        for (size_t ai = 0; ai < sizeof row_archs / sizeof row_archs[0]; ai++) {
            const tsr_kernel *k = row_kernel(row_ops[oi], row_archs[ai]);
            const tsr_kernel *ref = tsr_registry_find(oi == 1 ? "layernorm.ref" : "rmsnorm.ref");
            if (!row_usable(k, ctx, row_op_ids[oi])) continue;
            enum { R = 3, C = 257 };
            uint16_t x[R * C], y[R * C];
            float want[R * C], g[C], b[C];
            tt_fill(x, TSR_BF16, R * C, 97, -5, 5);
            tt_fill(g, TSR_F32, C, 98, 0.5f, 1.5f);
            tt_fill(b, TSR_F32, C, 99, -1, 1);
            g[5] = nan_payload, g[40] = INFINITY, b[70] = -INFINITY, b[200] = nan_payload;
            tsr_rowwise_desc d, dw;
            tsr_rowwise_desc_init(&d);
            d.rows = R, d.cols = C, d.x_dtype = d.y_dtype = TSR_BF16, d.x_row_stride = d.y_row_stride = C;
            dw = d, dw.y_dtype = TSR_F32;
            run_row_kernel(ref, ctx, row_op_ids[oi], &dw, x, g, b, want);
            run_row_kernel(k, ctx, row_op_ids[oi], &d, x, g, b, y);
            const double rtol = tt_rtol(TSR_F32, C);
            ck_assert_int_eq(row_mismatches(k->name, y, TSR_BF16, 0, want, R * C, rtol, rtol), 0);
            ck_assert(isnan(want[5]) && isinf(want[40]));
        }
    tsr_context_destroy(ctx);
}
END_TEST

/* bf16 chains whose every unit-stride tensor is bf16 keep evens and odds
 * apart through their steps: y = silu(x) * g[col] + s over rows whose
 * length is no multiple of the 64-value step (whole steps and tails), g a
 * bf16 row broadcast over the rows, s a scalar broadcast, NaN (every
 * payload bit set) and infs among x. Each value must be the reference's,
 * within one bf16 rounding (both round an f32 within a few ulps of the
 * same value), and NaN where it is NaN, a NaN scalar's payload included. */
START_TEST(chain_bf16_pairs) {
    enum { R = 5, C = 203 };
    const uint32_t nan_bits = 0x7fffffffu;
    float nan_payload;
    memcpy(&nan_payload, &nan_bits, sizeof nan_payload);
    uint16_t x[R * C], g[C], want[R * C], y[R * C];
    tt_fill(x, TSR_BF16, R * C, 41, -6, 6);
    tt_fill(g, TSR_BF16, C, 42, -2, 2);
    x[3] = tsr_f32_to_bf16(nan_payload), x[70] = tsr_f32_to_bf16(INFINITY), x[140] = tsr_f32_to_bf16(-INFINITY);
    x[C + 64] = tsr_f32_to_bf16(nan_payload);
    const int64_t shape[2] = {R, C}, gshape[2] = {1, C};
    tsr_chain_problem cp;
    memset(&cp, 0, sizeof cp);
    cp.x = cp.y = tsr_tensor_contiguous(TSR_BF16, 2, shape);
    tsr_tensor_desc gd = tsr_tensor_contiguous(TSR_BF16, 2, gshape);
    gd.strides[0] = 0; /* one row of g for every row of x */
    gd.shape[0] = R;
    tsr_chain_desc_init(&cp.chain);
    tsr_chain_push_unary(&cp.chain, TSR_UNARY_SILU);
    ck_assert_int_eq(tsr_chain_push_tensor(&cp.chain, TSR_BINARY_MUL, &gd, 0), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_scalar(&cp.chain, TSR_BINARY_ADD, 0.25f, 0), TSR_OK);
    cp.operands[0] = g;
    cp.chain.operands[0] = gd;
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    cp.xp = x, cp.yp = want;
    run_chain_problem(tsr_registry_find("chain.ref"), ctx, &cp);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!usable(k, ctx)) continue;
        cp.yp = y;
        run_chain_problem(k, ctx, &cp);
        int64_t bad = 0;
        for (int i = 0; i < R * C; i++) {
            const float a = tsr_bf16_to_f32(y[i]), w = tsr_bf16_to_f32(want[i]);
            const bool ok = isnan(w) ? isnan(a) : a == w || fabsf(a - w) <= 0x1p-7f * fabsf(w);
            if (!ok && bad++ < 3) printf("  %s [%d]: got %g want %g\n", k->name, i, a, w), fflush(stdout);
        }
        ck_assert_msg(bad == 0, "%s: %lld of %d differ", k->name, (long long)bad, R * C);
        ck_assert(isnan(tsr_bf16_to_f32(y[3])) && isnan(tsr_bf16_to_f32(y[C + 64])));
        /* a scalar NaN whose low payload bits are set: every output NaN
         * (rounded as a number, it would carry into the sign: -0) */
        tsr_chain_problem cn = cp;
        tsr_chain_desc_init(&cn.chain);
        ck_assert_int_eq(tsr_chain_push_scalar(&cn.chain, TSR_BINARY_ADD, nan_payload, 0), TSR_OK);
        run_chain_problem(k, ctx, &cn);
        for (int i = 0; i < R * C; i++) ck_assert_msg(isnan(tsr_bf16_to_f32(y[i])), "%s: [%d] not NaN", k->name, i);
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* A chain over rows that span whole and partial tiles (C = 613: two
 * tiles of 256 and 101 values, not a multiple of a vector group), x
 * broadcast along each row (stride 0), one operand read in place (f32),
 * one converted (bf16, rows broadcast), one broadcast along the row, a
 * scalar on the left, exp between; y f32 (written in place by the last
 * step) and f16 (converted from the tile). Each value as the reference's
 * within exp's error and f16's rounding. */
START_TEST(chain_tiles_broadcast) {
    enum { R = 3, C = 613 };
    float x[R], a[R * C], c[R], want[R * C], y[R * C];
    uint16_t b[C], yh[R * C];
    tt_fill(x, TSR_F32, R, 51, -2, 2);
    tt_fill(a, TSR_F32, R * C, 52, -2, 2);
    tt_fill(b, TSR_BF16, C, 53, -2, 2);
    tt_fill(c, TSR_F32, R, 54, -1, 1);
    const int64_t shape[2] = {R, C};
    tsr_chain_problem cp;
    memset(&cp, 0, sizeof cp);
    cp.y = tsr_tensor_contiguous(TSR_F32, 2, shape);
    cp.x = cp.y, cp.x.strides[0] = 1, cp.x.strides[1] = 0; /* x[r] along row r */
    tsr_tensor_desc ad = cp.y, bd = tsr_tensor_contiguous(TSR_BF16, 2, shape), cd = cp.x;
    bd.strides[0] = 0;
    tsr_chain_desc_init(&cp.chain);
    ck_assert_int_eq(tsr_chain_push_tensor(&cp.chain, TSR_BINARY_ADD, &ad, 0), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_tensor(&cp.chain, TSR_BINARY_MUL, &bd, 1), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_scalar(&cp.chain, TSR_BINARY_SUB, 0.5f, 1), TSR_OK);
    tsr_chain_push_unary(&cp.chain, TSR_UNARY_EXP);
    ck_assert_int_eq(tsr_chain_push_tensor(&cp.chain, TSR_BINARY_MAX, &cd, 0), TSR_OK);
    cp.operands[0] = a, cp.operands[1] = b, cp.operands[2] = c;
    cp.chain.operands[0] = ad, cp.chain.operands[1] = bd, cp.chain.operands[2] = cd;
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    cp.xp = x, cp.yp = want;
    run_chain_problem(tsr_registry_find("chain.ref"), ctx, &cp);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!usable(k, ctx)) continue;
        for (int half = 0; half < 2; half++) {
            tsr_chain_problem cy = cp;
            if (half) cy.y = tsr_tensor_contiguous(TSR_F16, 2, shape);
            cy.yp = half ? (void *)yh : (void *)y;
            run_chain_problem(k, ctx, &cy);
            int64_t bad = 0;
            for (int i = 0; i < R * C; i++) {
                const float got = half ? tsr_f16_to_f32(yh[i]) : y[i], tol = half ? 0x1p-10f : 0x1p-21f;
                if (!(fabsf(got - want[i]) <= tol * fabsf(want[i])) && bad++ < 3)
                    printf("  %s y %s [%d]: got %g want %g\n", k->name, half ? "f16" : "f32", i, got, want[i]);
            }
            ck_assert_msg(bad == 0, "%s, y %s: %lld of %d differ", k->name, half ? "f16" : "f32", (long long)bad, R * C);
        }
    }
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("elementwise_x86");
    TCase *tc = tcase_create("x86");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, unary_whole_range);
    tcase_add_test(tc, gelu_erf_dense_core);
    tcase_add_test(tc, sigmoid_silu_dense_core);
    tcase_add_test(tc, softmax_16bit_outputs);
    tcase_add_test(tc, gelu_erf_16bit_outputs);
    tcase_add_test(tc, exp_family_dense_edges);
    tcase_add_test(tc, binary_whole_range);
    tcase_add_test(tc, row_kernels);
    tcase_add_test(tc, norm_shift_far_from_mean);
    tcase_add_test(tc, norm_nonfinite_params);
    tcase_add_test(tc, chain_out_of_cache);
    tcase_add_test(tc, chain_unary_direct);
    tcase_add_test(tc, chain_bf16_pairs);
    tcase_add_test(tc, chain_tiles_broadcast);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
