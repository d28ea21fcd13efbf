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

static const char *kernels[] = {"chain.x86_avx512", "chain.x86_avx2"};

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
    default: return tsr_unary_ref(op, xf);
    }
}

/* Distance in representable floats; 0 for NaN vs NaN, huge for a NaN or
 * infinity mismatch. */
static int64_t ulps(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    if (isinf(a) || isinf(b)) return a == b ? 0 : INT64_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
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
    ck_assert_msg(k->supports(&p, ctx, why, sizeof why), "%s", why);
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
    if (k->supports(&p, ctx, why, sizeof why)) return true;
    printf("SKIP elementwise_x86: %s: %s\n", k->name, why);
    return false;
}

START_TEST(unary_whole_range) {
    /* documented bounds (x86_chain.h); 0 for lane-by-lane reference ops */
    static const struct {
        tsr_unary_op op;
        int64_t max_ulp;
    } ops[] = {
        {TSR_UNARY_NEG, 0},     {TSR_UNARY_ABS, 0},        {TSR_UNARY_SQUARE, 0}, {TSR_UNARY_SQRT, 0},
        {TSR_UNARY_RSQRT, 1},   {TSR_UNARY_RECIPROCAL, 1}, {TSR_UNARY_EXP, 2},    {TSR_UNARY_SIGMOID, 3},
        {TSR_UNARY_SILU, 3},    {TSR_UNARY_RELU, 0},       {TSR_UNARY_LOG, 0},    {TSR_UNARY_ERF, 0},
        {TSR_UNARY_TANH, 0},    {TSR_UNARY_GELU_ERF, 0},   {TSR_UNARY_GELU_TANH, 0},
    };
    float *x = malloc(sizeof(float) * 80000), *y = malloc(sizeof(float) * 80000);
    const int n = fill_range(x);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        if (!usable(k, ctx)) continue;
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            tsr_chain_desc ch;
            tsr_chain_desc_init(&ch);
            tsr_chain_push_unary(&ch, ops[oi].op);
            run_chain(k, ctx, &ch, x, NULL, y, n);
            int64_t worst = 0;
            int at = 0;
            for (int i = 0; i < n; i++) {
                const float want = ops[oi].max_ulp ? want_unary(ops[oi].op, x[i]) : tsr_unary_ref(ops[oi].op, x[i]);
                int64_t u = ulps(y[i], want);
                if (!ops[oi].max_ulp && !(y[i] == want || (isnan(y[i]) && isnan(want)))) u = INT64_MAX;
                if (u > worst) worst = u, at = i;
            }
            printf("elementwise_x86: %s unary %d: max %lld ulp over %d values\n", k->name, (int)ops[oi].op,
                   (long long)worst, n);
            ck_assert_msg(worst <= ops[oi].max_ulp, "%s op %d at x = %a: got %a, want %a (%lld ulp > %lld)", k->name,
                          (int)ops[oi].op, (double)x[at], (double)y[at], (double)want_unary(ops[oi].op, x[at]),
                          (long long)worst, (long long)ops[oi].max_ulp);
        }
    }
    tsr_context_destroy(ctx);
    free(x), free(y);
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

int main(void) {
    Suite *s = suite_create("elementwise_x86");
    TCase *tc = tcase_create("x86");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, unary_whole_range);
    tcase_add_test(tc, binary_whole_range);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
