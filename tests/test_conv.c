/* conv2d: the reference against hand computations and identities (1x1 =
 * GEMM, formats agree, delta filter, groups); contexts vs reference; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static tsr_conv2d_desc cdesc(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s) {
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.n = n, d.c = c, d.h = h, d.w = w, d.k = k, d.r = r, d.s = s;
    return d;
}

static void run_ok(tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w, void *y) {
    tsr_status st = tsr_conv2d(ctx, d, x, w, y);
    ck_assert_msg(st == TSR_OK, "tsr_conv2d: %s", tsr_last_error());
}

START_TEST(hand_computed) {
    tsr_context *ctx = tt_ref_context();
    /* x = 1..9 in a 3x3 plane, w = [1 0; 0 -1]: y[i][j] = x[i][j] - x[i+1][j+1] = -4 */
    float x[9], w[4] = {1, 0, 0, -1}, y[16];
    for (int i = 0; i < 9; i++) x[i] = (float)(i + 1);
    tsr_conv2d_desc d = cdesc(1, 1, 3, 3, 1, 2, 2);
    run_ok(ctx, &d, x, w, y);
    const float want[4] = {-4, -4, -4, -4};
    ck_assert_int_eq(tt_compare("2x2", y, want, TSR_F32, 4, 0, 0), 0);
    d.stride_h = d.stride_w = 2, d.pad_bottom = d.pad_right = 1; /* out 2x2: taps past the edge read 0 */
    run_ok(ctx, &d, x, w, y);
    const float want2[4] = {1 - 5, 3 - 0, 7 - 0, 9};
    ck_assert_int_eq(tt_compare("stride2 pad", y, want2, TSR_F32, 4, 0, 0), 0);
    int64_t p, q;
    ck_assert_int_eq(tsr_conv2d_output_shape(&d, &p, &q), TSR_OK);
    ck_assert(p == 2 && q == 2);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(identities) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 6, H = 5, W = 4, K = 3 };
    float x[N * H * W * C], w1[K * C], y[N * H * W * K], want[N * H * W * K];
    tt_fill(x, TSR_F32, N * H * W * C, 1, -1, 1);
    tt_fill(w1, TSR_F32, K * C, 2, -1, 1);
    /* 1x1 conv in NHWC == GEMM [NHW, C] x [C, K] */
    for (int i = 0; i < N * H * W; i++)
        for (int k = 0; k < K; k++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += (double)x[i * C + c] * w1[k * C + c];
            want[i * K + k] = (float)s;
        }
    tsr_conv2d_desc d = cdesc(N, C, H, W, K, 1, 1);
    run_ok(ctx, &d, x, w1, y);
    ck_assert_int_eq(tt_compare("1x1 as gemm", y, want, TSR_F32, N * H * W * K, 1e-6, 1e-6), 0);
    /* NCHW input + OIHW filter gives the same numbers, transposed */
    float xn[N * C * H * W], yn[N * K * H * W];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H * W; i++) xn[(n * C + c) * H * W + i] = x[(n * H * W + i) * C + c];
    d.format = TSR_NCHW, d.filter_format = TSR_FILTER_OIHW;
    run_ok(ctx, &d, xn, w1, yn);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < H * W; i++)
                ck_assert_float_eq_tol(yn[(n * K + k) * H * W + i], want[(n * H * W + i) * K + k], 1e-5);
    /* a 3x3 delta filter with same padding reproduces the input (per channel, depthwise) */
    float delta[C * 9] = {0}, yd[N * H * W * C];
    for (int c = 0; c < C; c++) delta[c * 9 + 4] = 1;
    tsr_conv2d_desc dd = cdesc(N, C, H, W, C, 3, 3);
    dd.groups = C, dd.pad_top = dd.pad_bottom = dd.pad_left = dd.pad_right = 1;
    run_ok(ctx, &dd, x, delta, yd);
    ck_assert_int_eq(tt_compare("delta", yd, x, TSR_F32, N * H * W * C, 0, 0), 0);
    /* groups = 2 equals two independent convs on channel halves */
    float wg[4 * 3 * 9], yg[N * H * W * 4], yh[N * H * W * 2], xh[N * H * W * 3];
    tt_fill(wg, TSR_F32, 4 * 3 * 9, 3, -1, 1);
    tsr_conv2d_desc g = cdesc(N, C, H, W, 4, 3, 3);
    g.groups = 2, g.pad_top = g.pad_left = 1;
    run_ok(ctx, &g, x, wg, yg);
    int64_t P, Q;
    tsr_conv2d_output_shape(&g, &P, &Q);
    for (int half = 0; half < 2; half++) {
        for (int i = 0; i < N * H * W; i++)
            for (int c = 0; c < 3; c++) xh[i * 3 + c] = x[i * C + half * 3 + c];
        tsr_conv2d_desc h1 = g;
        h1.c = 3, h1.k = 2, h1.groups = 1;
        run_ok(ctx, &h1, xh, wg + half * 2 * 3 * 9, yh);
        for (int i = 0; i < N * P * Q; i++)
            for (int k = 0; k < 2; k++) ck_assert_float_eq_tol(yg[i * 4 + half * 2 + k], yh[i * 2 + k], 1e-5);
    }
    tsr_context_destroy(ctx);
}
END_TEST

typedef struct ccase {
    int64_t n, c, h, w, k, r, s, sh, sw, pt, pb, pl, pr, dh, dw, g;
    int fmt, ffmt, epi;
    tsr_dtype in, out;
} ccase;

static void check_case(tsr_context *ref, const tt_context *tc, const ccase *cc) {
    tsr_conv2d_desc d = cdesc(cc->n, cc->c, cc->h, cc->w, cc->k, cc->r, cc->s);
    d.stride_h = cc->sh, d.stride_w = cc->sw, d.pad_top = cc->pt, d.pad_bottom = cc->pb;
    d.pad_left = cc->pl, d.pad_right = cc->pr, d.dilation_h = cc->dh, d.dilation_w = cc->dw, d.groups = cc->g;
    d.format = (tsr_tensor_format)cc->fmt, d.filter_format = (tsr_filter_format)cc->ffmt;
    d.x_dtype = d.w_dtype = cc->in, d.y_dtype = cc->out;
    int64_t p, q;
    ck_assert_int_eq(tsr_conv2d_output_shape(&d, &p, &q), TSR_OK);
    size_t nx = (size_t)(cc->n * cc->c * cc->h * cc->w), nw = (size_t)(cc->k * (cc->c / cc->g) * cc->r * cc->s),
           ny = (size_t)(cc->n * cc->k * p * q);
    size_t ei = tsr_dtype_size(cc->in), eo = tsr_dtype_size(cc->out);
    void *x = malloc(nx * ei), *w = malloc(nw * ei), *y1 = malloc(ny * eo), *y2 = malloc(ny * eo), *res = malloc(ny * eo);
    float *bias = malloc(sizeof(float) * (size_t)cc->k);
    tt_fill(x, cc->in, (int64_t)nx, 21, -1, 1);
    tt_fill(w, cc->in, (int64_t)nw, 22, -1, 1);
    tt_fill(res, cc->out, (int64_t)ny, 23, -1, 1);
    tt_fill(bias, TSR_F32, cc->k, 24, -1, 1);
    if (cc->epi) {
        d.epilogue.num_steps = 3;
        d.epilogue.steps[cc->epi % 2 ? 0 : 1] = tsr_epilogue_bias(bias, TSR_F32);
        d.epilogue.steps[cc->epi % 2 ? 1 : 0] = tsr_epilogue_residual(res, cc->out, 0, 1.0f);
        d.epilogue.steps[2] = tsr_epilogue_activation((tsr_activation)(cc->epi % 7));
    }
    run_ok(ref, &d, x, w, y1);
    void *dx = tt_upload(tc->ctx, x, nx * ei), *dw = tt_upload(tc->ctx, w, nw * ei), *dy = tt_upload(tc->ctx, NULL, ny * eo);
    run_ok(tc->ctx, &d, dx, dw, dy);
    tt_download(tc->ctx, y2, dy, ny * eo);
    char what[128];
    snprintf(what, sizeof what, "%s %s n%lld c%lld %lldx%lld k%lld %lldx%lld g%lld fmt%d", tc->label, tsr_last_kernel(),
             (long long)cc->n, (long long)cc->c, (long long)cc->h, (long long)cc->w, (long long)cc->k, (long long)cc->r,
             (long long)cc->s, (long long)cc->g, cc->fmt);
    int64_t red = (cc->c / cc->g) * cc->r * cc->s;
    double rtol = tt_rtol(cc->out, red);
    ck_assert_msg(tt_compare(what, y2, y1, cc->out, (int64_t)ny, rtol * sqrt((double)red), rtol) == 0, "%s", what);
    tt_free(tc->ctx, dx), tt_free(tc->ctx, dw), tt_free(tc->ctx, dy);
    free(x), free(w), free(y1), free(y2), free(res), free(bias);
}

START_TEST(every_context_matches_reference) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("conv", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const ccase cases[] = {
        {1, 3, 9, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, TSR_F32, TSR_F32},
        {2, 17, 6, 5, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, TSR_F32, TSR_F32},
        {1, 3, 15, 15, 8, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 0, 2, 3, TSR_F32, TSR_F32},  /* stem */
        {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 0, 0, 4, TSR_F32, TSR_F32},    /* depthwise */
        {1, 4, 7, 7, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 5, TSR_F32, TSR_F32},    /* multiplier 2 */
        {3, 6, 11, 10, 4, 5, 5, 1, 1, 4, 3, 0, 2, 2, 2, 2, 0, 0, 6, TSR_F32, TSR_F32},  /* dilation, pads */
        {1, 7, 1, 1, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, TSR_F32, TSR_F32},    /* 1x1 spatial */
        {1, 5, 4, 4, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1, 1, 0, 0, 1, TSR_F32, TSR_F32},    /* pad > half */
        {2, 5, 6, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, TSR_F16, TSR_F32},
        {2, 5, 6, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, TSR_BF16, TSR_BF16},
        {1, 5, 6, 6, 7, 3, 3, 2, 2, 0, 1, 0, 1, 1, 1, 1, 0, 0, 3, TSR_F16, TSR_F16},
    };
    for (int c = 0; c < nc; c++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ref, &cs[c], &cases[i]);
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

static void expect_bad(tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w, void *y,
                       tsr_status want, const char *needle) {
    tt_fill_sentinel(y, 256);
    tsr_status st = tsr_conv2d(ctx, d, x, w, y);
    ck_assert_msg(st == want, "want %s got %s (%s)", tsr_status_string(want), tsr_status_string(st), tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    ck_assert_msg(tt_unchanged(y, 256), "y written on bad input (%s)", needle);
    if (!strstr(needle, "NULL") && !strstr(needle, "overlaps")) {
        char why[256];
        ck_assert_int_eq(tsr_conv2d_supported(ctx, d, why, sizeof why), want);
        ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
    }
}

START_TEST(bad_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[64] = {0}, w[64] = {0}, y[64];
    tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3), e;
    expect_bad(ctx, &d, NULL, w, y, TSR_ERR_INVALID_ARGUMENT, "x is NULL");
    expect_bad(ctx, &d, x, NULL, y, TSR_ERR_INVALID_ARGUMENT, "w is NULL");
    ck_assert_int_eq(tsr_conv2d(ctx, &d, x, w, NULL), TSR_ERR_INVALID_ARGUMENT);
    e = d, e.size = 4;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "desc->size");
    e = d, e.c = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "c=0");
    e = d, e.stride_w = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "stride_w (0)");
    e = d, e.pad_left = -1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "left -1");
    e = d, e.groups = 3;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "groups (3) does not divide c (4)");
    e = d, e.groups = 4;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "groups (4) does not divide k (2)");
    e = d, e.r = 5;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "output is empty");
    e = d, e.n = e.h = e.w = e.c = (int64_t)1 << 20;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    expect_bad(ctx, &d, y, w, y, TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    e = d, e.w_dtype = TSR_F16;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "x=f32 w=f16");
    e = d, e.format = (tsr_tensor_format)9;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "format (9)");
    e = d, e.epilogue.num_steps = 1, e.epilogue.steps[0] = tsr_epilogue_residual(x, TSR_F32, 5, 1);
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "ld/batch_stride must be 0");
    char why[64];
    ck_assert_int_eq(tsr_conv2d_supported(ctx, &d, why, sizeof why), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conv");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, hand_computed);
    tcase_add_test(ref, identities);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, every_context_matches_reference);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_input);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
