/* Elementwise: ops vs libm, fused chains, broadcasting, views, row-wise ops;
 * contexts vs reference; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

START_TEST(unary_and_chains) {
    tsr_context *ctx = tt_ref_context();
    const float xs[] = {0.0f, 1.0f, -1.0f, 0.5f, -3.25f, 20.0f, -20.0f, 1e-30f, INFINITY, -INFINITY, NAN};
    enum { N = sizeof xs / sizeof xs[0] };
    int64_t shape[1] = {N};
    tsr_tensor_desc t = tsr_tensor_contiguous(TSR_F32, 1, shape);
    float y[N], y2[N];
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &t, xs, &t, y), TSR_OK);
    for (int i = 0; i < N; i++) {
        float w = expf(xs[i]);
        ck_assert_msg(isnan(w) ? isnan(y[i]) : (y[i] == w || fabsf(y[i] - w) <= 1e-6f * fabsf(w)), "exp(%g) = %g", xs[i], y[i]);
    }
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SIGMOID, &t, xs, &t, y), TSR_OK);
    /* sigmoid written as neg -> exp -> +1 -> reciprocal is one chain */
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    tsr_chain_push_unary(&c, TSR_UNARY_NEG);
    tsr_chain_push_unary(&c, TSR_UNARY_EXP);
    tsr_chain_push_scalar(&c, TSR_BINARY_ADD, 1.0f, 0);
    tsr_chain_push_unary(&c, TSR_UNARY_RECIPROCAL);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, xs, NULL, &t, y2), TSR_OK);
    ck_assert_int_eq(tt_compare("sigmoid chain", y2, y, TSR_F32, N, 1e-7, 1e-6), 0);
    /* scalar on the left: 1 - x vs x - 1 */
    tsr_chain_desc_init(&c);
    tsr_chain_push_scalar(&c, TSR_BINARY_SUB, 1.0f, 1);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, xs, NULL, &t, y), TSR_OK);
    ck_assert_float_eq(y[4], 4.25f);
    /* relu and max propagate NaN */
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_RELU, &t, xs, &t, y), TSR_OK);
    ck_assert(isnan(y[N - 1]) && y[2] == 0 && y[1] == 1);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(broadcast_views_inplace) {
    tsr_context *ctx = tt_ref_context();
    float a[15], b[4], y[60];
    tt_fill(a, TSR_F32, 15, 1, -1, 1);
    tt_fill(b, TSR_F32, 4, 2, -1, 1);
    int64_t sa[3] = {3, 1, 5}, sb[2] = {4, 1}, sy[3] = {3, 4, 5};
    tsr_tensor_desc ta = tsr_tensor_contiguous(TSR_F32, 3, sa), tb = tsr_tensor_contiguous(TSR_F32, 2, sb),
                    ty = tsr_tensor_contiguous(TSR_F32, 3, sy);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MUL, &ta, a, &tb, b, &ty, y), TSR_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) ck_assert_float_eq(y[(i * 4 + j) * 5 + k], a[i * 5 + k] * b[j]);
    /* a transposed view as x, a strided slice as y */
    float m[12], out[24];
    tt_fill(m, TSR_F32, 12, 3, -1, 1);
    tsr_tensor_desc mt = {.dtype = TSR_F32, .ndim = 2, .shape = {4, 3}, .strides = {1, 4}};
    tsr_tensor_desc os = {.dtype = TSR_F32, .ndim = 2, .shape = {4, 3}, .strides = {6, 2}};
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SQUARE, &mt, m, &os, out), TSR_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) ck_assert_float_eq(out[i * 6 + j * 2], m[j * 4 + i] * m[j * 4 + i]);
    /* in place, f16 in / f32 out, a scalar tensor */
    float z[5] = {1, 2, 3, 4, 5};
    int64_t s5[1] = {5};
    tsr_tensor_desc t5 = tsr_tensor_contiguous(TSR_F32, 1, s5), s0 = tsr_tensor_contiguous(TSR_F32, 0, NULL);
    float two = 2;
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_POW, &t5, z, &s0, &two, &t5, z), TSR_OK);
    ck_assert(z[4] == 25 && z[0] == 1);
    uint16_t h[5];
    for (int i = 0; i < 5; i++) h[i] = tsr_f32_to_f16((float)i / 3);
    tsr_tensor_desc t5h = tsr_tensor_contiguous(TSR_F16, 1, s5);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_IDENTITY, &t5h, h, &t5, z), TSR_OK);
    ck_assert_float_eq(z[1], tsr_f16_to_f32(h[1]));
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(rowwise) {
    tsr_context *ctx = tt_ref_context();
    enum { R = 3, C = 7 };
    float x[R * 8], y[R * 8], gamma[C], beta[C];
    tt_fill(x, TSR_F32, R * 8, 5, -3, 3);
    tt_fill(gamma, TSR_F32, C, 6, 0.5f, 2);
    tt_fill(beta, TSR_F32, C, 7, -1, 1);
    x[0] = 1e4f, x[8] = -INFINITY;
    for (int j = 0; j < C; j++) x[16 + j] = -INFINITY; /* a fully masked row */
    tsr_rowwise_desc d;
    tsr_rowwise_desc_init(&d);
    d.rows = R, d.cols = C, d.x_row_stride = d.y_row_stride = 8;
    ck_assert_int_eq(tsr_softmax(ctx, &d, x, y), TSR_OK);
    for (int r = 0; r < 2; r++) {
        double s = 0;
        for (int j = 0; j < C; j++) s += y[r * 8 + j], ck_assert(!isnan(y[r * 8 + j]));
        ck_assert_double_eq_tol(s, 1.0, 1e-6);
    }
    ck_assert_float_eq(y[8], 0.0f);
    ck_assert_float_eq_tol(y[0], 1.0f, 1e-6);
    for (int j = 0; j < C; j++) ck_assert_float_eq(y[16 + j], 0.0f);
    tt_fill(x, TSR_F32, R * 8, 5, -3, 3);
    ck_assert_int_eq(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_OK);
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int j = 0; j < C; j++) m += y[r * 8 + j];
        for (int j = 0; j < C; j++) v += (y[r * 8 + j] - m / C) * (y[r * 8 + j] - m / C);
        ck_assert_double_eq_tol(m / C, 0.0, 1e-6);
        ck_assert_double_eq_tol(v / C, 1.0, 1e-4);
    }
    ck_assert_int_eq(tsr_layernorm(ctx, &d, x, gamma, beta, y), TSR_OK);
    double mean = 0, var = 0;
    for (int j = 0; j < C; j++) mean += x[j];
    mean /= C;
    for (int j = 0; j < C; j++) var += (x[j] - mean) * (x[j] - mean);
    ck_assert_double_eq_tol(y[3], (x[3] - mean) / sqrt(var / C + 1e-5) * gamma[3] + beta[3], 1e-5);
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, x, gamma, y), TSR_OK);
    double ms = 0;
    for (int j = 0; j < C; j++) ms += (double)x[j] * x[j];
    ck_assert_double_eq_tol(y[2], x[2] / sqrt(ms / C + 1e-5) * gamma[2], 1e-5);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(every_context_matches_reference) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("elementwise", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const int64_t cols[] = {1, 7, 31, 1000, 4097}, rows[] = {1, 13};
    const tsr_dtype dts[][2] = {{TSR_F32, TSR_F32}, {TSR_F16, TSR_F32}, {TSR_BF16, TSR_BF16}};
    for (int c = 0; c < nc; c++)
        for (int ri = 0; ri < 2; ri++)
            for (int ci = 0; ci < 5; ci++)
                for (int t = 0; t < 3; t++) {
                    int64_t R = rows[ri], C = cols[ci], n = R * C;
                    tsr_dtype xi = dts[t][0], yo = dts[t][1];
                    size_t ex = tsr_dtype_size(xi), ey = tsr_dtype_size(yo);
                    void *x = malloc((size_t)n * ex), *y1 = malloc((size_t)n * ey), *y2 = malloc((size_t)n * ey);
                    float *bias = malloc(sizeof(float) * (size_t)C);
                    tt_fill(x, xi, n, 40 + ci, -4, 4);
                    tt_fill(bias, TSR_F32, C, 50 + ci, -1, 1);
                    void *dx = tt_upload(cs[c].ctx, x, (size_t)n * ex), *dy = tt_upload(cs[c].ctx, NULL, (size_t)n * ey);
                    void *db = tt_upload(cs[c].ctx, bias, sizeof(float) * (size_t)C);
                    char what[96];
                    /* a chain: silu(x * 0.5 + bias[col]) with the row vector broadcast */
                    int64_t shp[2] = {R, C}, bs[1] = {C};
                    tsr_tensor_desc tx = tsr_tensor_contiguous(xi, 2, shp), ty = tsr_tensor_contiguous(yo, 2, shp),
                                    tb = tsr_tensor_contiguous(TSR_F32, 1, bs);
                    tsr_chain_desc ch;
                    tsr_chain_desc_init(&ch);
                    tsr_chain_push_scalar(&ch, TSR_BINARY_MUL, 0.5f, 0);
                    tsr_chain_push_tensor(&ch, TSR_BINARY_ADD, &tb, 0);
                    tsr_chain_push_unary(&ch, TSR_UNARY_SILU);
                    const void *hops[1] = {bias}, *dops[1] = {db};
                    ck_assert_int_eq(tsr_elementwise_chain(ref, &ch, &tx, x, hops, &ty, y1), TSR_OK);
                    ck_assert_int_eq(tsr_elementwise_chain(cs[c].ctx, &ch, &tx, dx, dops, &ty, dy), TSR_OK);
                    tt_download(cs[c].ctx, y2, dy, (size_t)n * ey);
                    snprintf(what, sizeof what, "%s chain %lldx%lld %s", cs[c].label, (long long)R, (long long)C, tsr_dtype_name(xi));
                    ck_assert_msg(tt_compare(what, y2, y1, yo, n, 1e-6, tt_rtol(yo, 1)) == 0, "%s", what);
                    tsr_rowwise_desc d;
                    tsr_rowwise_desc_init(&d);
                    d.rows = R, d.cols = C, d.x_dtype = xi, d.y_dtype = yo;
                    for (int op = 0; op < 3; op++) {
                        tsr_status s1 = op == 0 ? tsr_softmax(ref, &d, x, y1)
                                        : op == 1 ? tsr_layernorm(ref, &d, x, bias, bias, y1)
                                                  : tsr_rmsnorm(ref, &d, x, bias, y1);
                        tsr_status s2 = op == 0 ? tsr_softmax(cs[c].ctx, &d, dx, dy)
                                        : op == 1 ? tsr_layernorm(cs[c].ctx, &d, dx, db, db, dy)
                                                  : tsr_rmsnorm(cs[c].ctx, &d, dx, db, dy);
                        ck_assert(s1 == TSR_OK && s2 == TSR_OK);
                        tt_download(cs[c].ctx, y2, dy, (size_t)n * ey);
                        snprintf(what, sizeof what, "%s rowwise%d %lldx%lld %s", cs[c].label, op, (long long)R, (long long)C,
                                 tsr_dtype_name(xi));
                        ck_assert_msg(tt_compare(what, y2, y1, yo, n, 1e-6, tt_rtol(yo, C)) == 0, "%s", what);
                    }
                    tt_free(cs[c].ctx, dx), tt_free(cs[c].ctx, dy), tt_free(cs[c].ctx, db);
                    free(x), free(y1), free(y2), free(bias);
                }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

static void expect(tsr_status st, tsr_status want, const char *needle, const void *y, size_t bytes) {
    ck_assert_msg(st == want, "want %s got %s (%s)", tsr_status_string(want), tsr_status_string(st), tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    ck_assert_msg(tt_unchanged(y, bytes), "y written on bad input (%s)", needle);
}

START_TEST(bad_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[64] = {0}, y[64];
    tt_fill_sentinel(y, sizeof y);
    int64_t s4[2] = {4, 4}, s3[1] = {3};
    tsr_tensor_desc t = tsr_tensor_contiguous(TSR_F32, 2, s4), t3 = tsr_tensor_contiguous(TSR_F32, 1, s3), bad;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &t, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "x is NULL", y, sizeof y);
    bad = t, bad.ndim = 9;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "ndim (9)", y, sizeof y);
    bad = t, bad.shape[0] = -2;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "shape[0] (-2)", y, sizeof y);
    bad = t, bad.strides[1] = -1;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "strides[1] (-1)", y, sizeof y);
    expect(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, &t3, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "does not broadcast", y, sizeof y);
    bad = t, bad.strides[0] = 0, bad.strides[1] = 1;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "distinct elements overlap", y, sizeof y);
    tsr_tensor_desc shifted = t;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &t, y + 1, &shifted, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x", y, sizeof y);
    expect(tsr_unary(ctx, (tsr_unary_op)99, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary (99)", y, sizeof y);
    bad = t, bad.dtype = TSR_I32;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_NOT_SUPPORTED, "dtype i32", y, sizeof y);
    bad = t, bad.shape[0] = bad.shape[1] = (int64_t)1 << 40, bad.strides[0] = bad.strides[1] = 0;
    expect(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "overflows int64", y, sizeof y);
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    c.num_steps = 1, c.steps[0].kind = TSR_STEP_TENSOR, c.steps[0].operand = 2;
    expect(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "operand (2)", y, sizeof y);
    tsr_chain_desc_init(&c);
    for (int i = 0; i < TSR_MAX_CHAIN_STEPS; i++) tsr_chain_push_unary(&c, TSR_UNARY_ABS);
    ck_assert_int_eq(tsr_chain_push_unary(&c, TSR_UNARY_ABS), TSR_ERR_INVALID_ARGUMENT);
    tsr_rowwise_desc d;
    tsr_rowwise_desc_init(&d);
    d.rows = 2, d.cols = 4, d.x_row_stride = 3;
    expect(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "x_row_stride (3) < cols (4)", y, sizeof y);
    d.x_row_stride = 0, d.epsilon = 0;
    expect(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_ERR_INVALID_ARGUMENT, "epsilon (0)", y, sizeof y);
    d.epsilon = 1e-5f, d.size = 3;
    expect(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_ERR_INVALID_ARGUMENT, "desc->size", y, sizeof y);
    char why[128];
    tsr_rowwise_desc_init(&d);
    d.rows = 2, d.cols = 4;
    ck_assert_int_eq(tsr_rowwise_supported(ctx, &d, why, sizeof why), TSR_OK);
    tsr_chain_desc_init(&c);
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &t, &t, why, sizeof why), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("elementwise");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, unary_and_chains);
    tcase_add_test(ref, broadcast_views_inplace);
    tcase_add_test(ref, rowwise);
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
