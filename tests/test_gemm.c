/* GEMM: the reference against hand-computed values and identities; every
 * context against the reference; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static tsr_gemm_desc desc(int64_t m, int64_t n, int64_t k) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = m, d.n = n, d.k = k;
    return d;
}

static void run_ok(tsr_context *ctx, const tsr_gemm_desc *d, const void *a, const void *b, void *c) {
    tsr_status st = tsr_gemm(ctx, d, a, b, c);
    ck_assert_msg(st == TSR_OK, "tsr_gemm: %s: %s", tsr_status_string(st), tsr_last_error());
}

START_TEST(hand_computed_all_layouts) {
    /* A (2x3) = [1 2 3; 4 5 6], B (3x2) = [7 8; 9 10; 11 12], A*B = [58 64; 139 154] */
    const float A_rm[] = {1, 2, 3, 4, 5, 6}, A_cm[] = {1, 4, 2, 5, 3, 6};
    const float B_rm[] = {7, 8, 9, 10, 11, 12}, B_cm[] = {7, 9, 11, 8, 10, 12};
    const float want_rm[] = {58, 64, 139, 154}, want_cm[] = {58, 139, 64, 154};
    tsr_context *ctx = tt_ref_context();
    for (int layout = 0; layout < 2; layout++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                tsr_gemm_desc d = desc(2, 2, 3);
                d.layout = (tsr_layout)layout, d.trans_a = (tsr_transpose)ta, d.trans_b = (tsr_transpose)tb;
                bool rm = layout == TSR_ROW_MAJOR;
                /* A transposed in row-major memory is A's column-major storage, and vice versa. */
                const float *a = (rm != (ta == 1)) ? A_rm : A_cm;
                const float *b = (rm != (tb == 1)) ? B_rm : B_cm;
                float c[4] = {0};
                run_ok(ctx, &d, a, b, c);
                ck_assert_int_eq(tt_compare("2x3x2", c, rm ? want_rm : want_cm, TSR_F32, 4, 0, 0), 0);
            }
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(identity_permutation_alpha_beta) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 7 };
    float I[N * N] = {0}, P[N * N] = {0}, X[N * N], C[N * N], want[N * N];
    for (int i = 0; i < N; i++) I[i * N + i] = 1, P[i * N + (i + 3) % N] = 1;
    tt_fill(X, TSR_F32, N * N, 1, -2, 2);
    tsr_gemm_desc d = desc(N, N, N);
    run_ok(ctx, &d, I, X, C);
    ck_assert_int_eq(tt_compare("I*X", C, X, TSR_F32, N * N, 0, 0), 0);
    run_ok(ctx, &d, X, P, C); /* column j of X*P is column (j-3) mod N of X */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) want[i * N + j] = X[i * N + (j + N - 3) % N];
    ck_assert_int_eq(tt_compare("X*P", C, want, TSR_F32, N * N, 0, 0), 0);
    /* alpha 2, beta -1 on C = X: 2*I*X - X = X */
    memcpy(C, X, sizeof C);
    d.alpha = 2, d.beta = -1;
    run_ok(ctx, &d, I, X, C);
    ck_assert_int_eq(tt_compare("2IX-X", C, X, TSR_F32, N * N, 1e-6, 0), 0);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(int8_and_int32_rules) {
    tsr_context *ctx = tt_ref_context();
    const int8_t a[] = {-128, 127, -1}, b[] = {-128, -128, 5};
    tsr_gemm_desc d = desc(1, 1, 3);
    d.a_dtype = d.b_dtype = TSR_I8, d.c_dtype = TSR_I32;
    int32_t c = 7;
    run_ok(ctx, &d, a, b, &c);
    ck_assert_int_eq(c, 16384 - 16256 - 5);
    d.beta = 1;
    run_ok(ctx, &d, a, b, &c); /* pure integer: c += acc */
    ck_assert_int_eq(c, 2 * (16384 - 16256 - 5));
    d.alpha = 0.5f, d.beta = 0;
    run_ok(ctx, &d, a, b, &c); /* 123 * 0.5 = 61.5 rounds to even 62 */
    ck_assert_int_eq(c, 62);
    d.alpha = 3e9f; /* saturates */
    run_ok(ctx, &d, a, b, &c);
    ck_assert_int_eq(c, INT32_MAX);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(epilogue_order_and_rounding) {
    tsr_context *ctx = tt_ref_context();
    const float a[] = {1, -2}, b[] = {3, 4}; /* 2x1 * 1x2 = [3 4; -6 -8] */
    const float bias[] = {1, 10}, res[] = {100, 200, 300, 400};
    tsr_gemm_desc d = desc(2, 2, 1);
    d.epilogue.num_steps = 3;
    d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
    d.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_RELU);
    d.epilogue.steps[2] = tsr_epilogue_residual(res, TSR_F32, 0, 0.5f);
    float c[4];
    run_ok(ctx, &d, a, b, c);
    const float want[] = {4 + 50, 14 + 100, 0 + 150, 2 + 200};
    ck_assert_int_eq(tt_compare("bias,relu,res", c, want, TSR_F32, 4, 0, 0), 0);
    /* residual before relu */
    d.epilogue.steps[1] = tsr_epilogue_residual(res, TSR_F32, 0, -0.1f);
    d.epilogue.steps[2] = tsr_epilogue_activation(TSR_ACT_RELU);
    run_ok(ctx, &d, a, b, c);
    const float want2[] = {0, 0, 0, 0};
    ck_assert_int_eq(tt_compare("bias,res,relu", c, want2, TSR_F32, 4, 0, 0), 0);
    /* column-major: bias still indexes the user's columns */
    d.layout = TSR_COL_MAJOR;
    d.epilogue.num_steps = 1;
    const float acm[] = {1, -2}, bcm[] = {3, 4};
    run_ok(ctx, &d, acm, bcm, c);
    const float want3[] = {4, -5, 14, 2};
    ck_assert_int_eq(tt_compare("col-major bias", c, want3, TSR_F32, 4, 0, 0), 0);
    /* bf16 output rounds to nearest even: 1 + 2^-8 is a tie between 1 and 1+2^-7 -> 1 */
    const uint16_t one = tsr_f32_to_bf16(1.0f), eps = tsr_f32_to_bf16(0.00390625f);
    uint16_t ab[2] = {one, one}, bb[2] = {one, eps}, cb;
    tsr_gemm_desc e = desc(1, 1, 2);
    e.a_dtype = e.b_dtype = e.c_dtype = TSR_BF16;
    run_ok(ctx, &e, ab, bb, &cb);
    ck_assert_float_eq(tsr_bf16_to_f32(cb), 1.0f);
    /* each activation at a known point */
    const tsr_activation acts[] = {TSR_ACT_GELU_ERF, TSR_ACT_GELU_TANH, TSR_ACT_SILU, TSR_ACT_SIGMOID, TSR_ACT_TANH};
    const double x = 0.75, wants[] = {0.75 * 0.5 * (1 + erf(0.75 / sqrt(2.0))),
                                      0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))),
                                      x / (1 + exp(-x)), 1 / (1 + exp(-x)), tanh(x)};
    for (int i = 0; i < 5; i++) {
        tsr_gemm_desc g = desc(1, 1, 1);
        g.epilogue.num_steps = 1;
        g.epilogue.steps[0] = tsr_epilogue_activation(acts[i]);
        float one_f = 1, xv = (float)x, out;
        run_ok(ctx, &g, &one_f, &xv, &out);
        ck_assert_msg(fabs(out - wants[i]) < 1e-6, "activation %d: %g vs %g", (int)acts[i], out, wants[i]);
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* One randomized case on every context against the reference. */
typedef struct gcase {
    int64_t m, n, k, batch;
    tsr_dtype in, out;
    int layout, ta, tb, pad, offset, epi;
    float alpha, beta;
} gcase;

static void check_case(tsr_context *ref, const tt_context *tc, const gcase *g) {
    tsr_gemm_desc d = desc(g->m, g->n, g->k);
    d.layout = (tsr_layout)g->layout, d.trans_a = (tsr_transpose)g->ta, d.trans_b = (tsr_transpose)g->tb;
    d.a_dtype = d.b_dtype = g->in, d.c_dtype = g->out;
    d.alpha = g->alpha, d.beta = g->beta, d.batch = g->batch;
    bool rm = g->layout == TSR_ROW_MAJOR;
    int64_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    int64_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    d.lda = (rm ? ac : ar) + g->pad, d.ldb = (rm ? bc : br) + g->pad, d.ldc = (rm ? g->n : g->m) + g->pad;
    int64_t sa = (rm ? ar : ac) * d.lda + g->pad, sb = (rm ? br : bc) * d.ldb + g->pad,
            sc = (rm ? g->m : g->n) * d.ldc + g->pad;
    d.stride_a = sa, d.stride_b = sb, d.stride_c = sc;
    /* an element offset (unaligned pointers) where pointers are addresses; a
     * cl_mem cannot be offset, so handle contexts take the buffer's start */
    size_t ea = tsr_dtype_size(g->in), ec = tsr_dtype_size(g->out),
           off = tt_handles(tc->ctx) ? 0 : (size_t)g->offset;
    size_t na = (size_t)(sa * g->batch) + off, nb = (size_t)(sb * g->batch) + off, nc = (size_t)(sc * g->batch) + off;
    void *A = malloc(na * ea), *B = malloc(nb * ea), *C0 = malloc(nc * ec), *C1 = malloc(nc * ec), *C2 = malloc(nc * ec);
    float lo = g->in == TSR_I8 ? -128 : -1, hi = g->in == TSR_I8 ? 128 : 1;
    tt_fill(A, g->in, (int64_t)na, 11, lo, hi);
    tt_fill(B, g->in, (int64_t)nb, 12, lo, hi);
    tt_fill(C0, g->out, (int64_t)nc, 13, -1, 1);
    if (g->beta == 0 && g->out == TSR_F32)
        for (size_t i = 0; i < nc; i++) ((float *)C0)[i] = NAN; /* must not propagate */
    float *bias = malloc(sizeof(float) * (size_t)(g->n + 1));
    tt_fill(bias, TSR_F32, g->n + 1, 14, -1, 1);
    void *res = malloc(nc * ec);
    tt_fill(res, g->out, (int64_t)nc, 15, -1, 1);
    /* the epilogue's operands live where the context's memory does */
    void *dbias = tt_upload(tc->ctx, bias, sizeof(float) * (size_t)(g->n + 1)), *dres = tt_upload(tc->ctx, res, nc * ec);
    tsr_gemm_desc dd = d;
    if (g->epi) {
        d.epilogue.num_steps = 3;
        d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
        d.epilogue.steps[1] = tsr_epilogue_activation((tsr_activation)(g->epi % 7));
        d.epilogue.steps[2] = tsr_epilogue_residual((char *)res + off * ec, g->out, 0, 0.5f);
        dd.epilogue = d.epilogue;
        dd.epilogue.steps[0].data = dbias;
        dd.epilogue.steps[2].data = (char *)dres + off * ec;
    }
    memcpy(C1, C0, nc * ec);
    run_ok(ref, &d, (char *)A + off * ea, (char *)B + off * ea, (char *)C1 + off * ec);
    void *dA = tt_upload(tc->ctx, A, na * ea), *dB = tt_upload(tc->ctx, B, nb * ea), *dC = tt_upload(tc->ctx, C0, nc * ec);
    run_ok(tc->ctx, &dd, (char *)dA + off * ea, (char *)dB + off * ea, (char *)dC + off * ec);
    tt_download(tc->ctx, C2, dC, nc * ec);
    char what[160];
    snprintf(what, sizeof what, "%s %s %lldx%lldx%lld b%lld %s->%s L%d T%d%d pad%d off%d epi%d a%g b%g",
             tc->label, tsr_last_kernel(), (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch,
             tsr_dtype_name(g->in), tsr_dtype_name(g->out), g->layout, g->ta, g->tb, g->pad, g->offset, g->epi,
             (double)g->alpha, (double)g->beta);
    double rtol = tt_rtol(g->out, g->k), atol = g->out == TSR_I32 ? 0 : rtol * sqrt((double)g->k + 1);
    /* padding between matrices must be untouched: compare the whole buffer */
    ck_assert_msg(tt_compare(what, C2, C1, g->out, (int64_t)nc, atol, rtol) == 0, "%s", what);
    tt_free(tc->ctx, dA), tt_free(tc->ctx, dB), tt_free(tc->ctx, dC), tt_free(tc->ctx, dbias), tt_free(tc->ctx, dres);
    free(A), free(B), free(C0), free(C1), free(C2), free(bias), free(res);
}

START_TEST(every_context_matches_reference) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("gemm", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const int64_t shapes[][3] = {{1, 1, 1}, {1, 61, 31}, {13, 1, 7}, {7, 13, 31}, {17, 33, 65},
                                 {63, 129, 47}, {100, 1, 300}, {31, 17, 0}, {5, 64, 128}};
    const tsr_dtype ins[] = {TSR_F32, TSR_F16, TSR_F16, TSR_BF16, TSR_BF16, TSR_I8};
    const tsr_dtype outs[] = {TSR_F32, TSR_F32, TSR_F16, TSR_F32, TSR_BF16, TSR_I32};
    int count = 0;
    for (int c = 0; c < nc; c++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 6; t++)
                for (int v = 0; v < 8; v++) {
                    gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], v % 3 == 2 ? 3 : 1, ins[t], outs[t],
                               v & 1, (v >> 1) & 1, (v >> 2) & 1, (int)(s + v) % 3, (int)(s + t) % 2,
                               outs[t] == TSR_I32 ? 0 : (int)(s + v + t) % 8, 1.0f, 0.0f};
                    if (v == 5) g.alpha = 0.75f, g.beta = outs[t] == TSR_I32 ? 1.0f : -0.5f;
                    check_case(ref, &cs[c], &g);
                    count++;
                }
    printf("gemm: %d cases on %d contexts\n", count, nc);
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

START_TEST(thread_count_does_not_change_results) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("gemm", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    for (int c = 0; c < nc; c++) {
        gcase g = {67, 45, 129, 2, TSR_F32, TSR_F32, 0, 0, 1, 1, 0, 3, 1.0f, 0.0f};
        check_case(ref, &cs[c], &g);
        tsr_context_set_num_threads(cs[c].ctx, 1);
        check_case(ref, &cs[c], &g);
    }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

/* Bad input: status, a message naming the argument, C untouched. */
static void expect_bad(tsr_context *ctx, const tsr_gemm_desc *d, const void *a, const void *b, void *c,
                       tsr_status want, const char *needle) {
    float guard[64];
    tt_fill_sentinel(guard, sizeof guard);
    void *out = c ? c : NULL;
    if (c) tt_fill_sentinel(c, sizeof guard);
    tsr_status st = tsr_gemm(ctx, d, a, b, out);
    ck_assert_msg(st == want, "want %s got %s (%s)", tsr_status_string(want), tsr_status_string(st), tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    if (c) ck_assert_msg(tt_unchanged(c, sizeof guard), "output written on bad input (%s)", needle);
    /* the support query agrees, except on pointer problems it cannot see */
    if (d && ctx && !strstr(needle, "is NULL") && !strstr(needle, "overlaps")) {
        char why[256];
        ck_assert_int_eq(tsr_gemm_supported(ctx, d, why, sizeof why), want);
        ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
    }
}

START_TEST(bad_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float a[64], b[64], c[64];
    tt_fill(a, TSR_F32, 64, 1, -1, 1);
    tt_fill(b, TSR_F32, 64, 2, -1, 1);
    tsr_gemm_desc d = desc(4, 4, 4), x;
    expect_bad(NULL, &d, a, b, c, TSR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    ck_assert_int_eq(tsr_gemm(ctx, NULL, a, b, c), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "desc is NULL"));
    expect_bad(ctx, &d, NULL, b, c, TSR_ERR_INVALID_ARGUMENT, "a is NULL");
    expect_bad(ctx, &d, a, NULL, c, TSR_ERR_INVALID_ARGUMENT, "b is NULL");
    ck_assert_int_eq(tsr_gemm(ctx, &d, a, b, NULL), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "c is NULL"));
    x = d, x.size = 8;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "desc->size");
    x = d, x.m = -1;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "m (-1)");
    x = d, x.batch = 0;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "batch (0)");
    x = d, x.layout = (tsr_layout)7;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "layout (7)");
    x = d, x.trans_b = (tsr_transpose)-1;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "trans_b");
    x = desc(2, 4, 4), x.lda = 3;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "gemm: lda (3) < k (4) for row-major A");
    x = desc(2, 4, 4), x.lda = 1, x.layout = TSR_COL_MAJOR;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "lda (1) < m (2) for column-major A");
    x = d, x.ldc = 2;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "ldc (2) < n (4)");
    x = d, x.m = x.n = x.k = (int64_t)1 << 40;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    expect_bad(ctx, &d, c, b, c, TSR_ERR_INVALID_ARGUMENT, "c overlaps a");
    expect_bad(ctx, &d, a, c + 3, c, TSR_ERR_INVALID_ARGUMENT, "c overlaps b");
    x = desc(2, 2, 2), x.batch = 2, x.stride_c = 3;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "stride_c (3)");
    x = d, x.b_dtype = TSR_F16;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_NOT_SUPPORTED, "a=f32 b=f16");
    x = d, x.a_dtype = x.b_dtype = TSR_I8;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_NOT_SUPPORTED, "c=f32");
    x = d, x.a_dtype = x.b_dtype = TSR_I8, x.c_dtype = TSR_I32, x.epilogue.num_steps = 1;
    x.epilogue.steps[0] = tsr_epilogue_activation(TSR_ACT_RELU);
    expect_bad(ctx, &x, a, b, c, TSR_ERR_NOT_SUPPORTED, "needs a float output");
    x = d, x.epilogue.num_steps = 1, x.epilogue.steps[0] = tsr_epilogue_bias(NULL, TSR_F32);
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "steps[0].data is NULL");
    x = d, x.epilogue.num_steps = 1, x.epilogue.steps[0] = tsr_epilogue_activation((tsr_activation)42);
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "activation (42)");
    x = d, x.epilogue.num_steps = 9;
    expect_bad(ctx, &x, a, b, c, TSR_ERR_INVALID_ARGUMENT, "num_steps (9)");
    /* valid calls: the support query says OK and names no problem */
    char why[128];
    ck_assert_int_eq(tsr_gemm_supported(ctx, &d, why, sizeof why), TSR_OK);
    /* m == 0: nothing is touched, not even NULL pointers */
    x = desc(0, 4, 4);
    ck_assert_int_eq(tsr_gemm(ctx, &x, NULL, NULL, NULL), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, hand_computed_all_layouts);
    tcase_add_test(ref, identity_permutation_alpha_beta);
    tcase_add_test(ref, int8_and_int32_rules);
    tcase_add_test(ref, epilogue_order_and_rounding);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, every_context_matches_reference);
    tcase_add_test(dispatch, thread_count_does_not_change_results);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_input);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
