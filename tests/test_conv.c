/* conv2d: the reference against hand-computed values and identities (1x1 =
 * GEMM, every format gives the same numbers, delta filters, depthwise =
 * per-channel convs, groups = independent convs); every context against
 * the reference oracle; bad input. */
#include <math.h>
#include <stdint.h>
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

static void set_pads(tsr_conv2d_desc *d, int64_t top, int64_t bottom, int64_t left, int64_t right) {
    d->pad_top = top, d->pad_bottom = bottom, d->pad_left = left, d->pad_right = right;
}

static void run_ok(tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w, void *y) {
    tsr_status st = tsr_conv2d(ctx, d, x, w, y);
    ck_assert_msg(st == TSR_OK, "tsr_conv2d: %s: %s", tsr_status_string(st), tsr_last_error());
}

static void out_shape(const tsr_conv2d_desc *d, int64_t *p, int64_t *q) {
    tsr_status st = tsr_conv2d_output_shape(d, p, q);
    ck_assert_msg(st == TSR_OK, "tsr_conv2d_output_shape: %s", tsr_last_error());
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* The formats as the header defines them, written here independently of the
 * library's own index helpers. */
static int64_t t_act(tsr_tensor_format f, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H,
                     int64_t W) {
    return f == TSR_NHWC ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

static int64_t t_filt(tsr_filter_format f, int64_t k, int64_t c, int64_t r, int64_t s, int64_t K, int64_t Cg,
                      int64_t R, int64_t S) {
    switch (f) {
    case TSR_FILTER_OHWI: return ((k * R + r) * S + s) * Cg + c;
    case TSR_FILTER_OIHW: return ((k * Cg + c) * R + r) * S + s;
    default: return ((r * S + s) * Cg + c) * K + k;
    }
}

static void act_convert(const float *src, tsr_tensor_format from, float *dst, tsr_tensor_format to, int64_t N,
                        int64_t C, int64_t H, int64_t W) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++)
                    dst[t_act(to, n, c, h, w, C, H, W)] = src[t_act(from, n, c, h, w, C, H, W)];
}

static void filt_convert(const float *src, tsr_filter_format from, float *dst, tsr_filter_format to, int64_t K,
                         int64_t Cg, int64_t R, int64_t S) {
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t s = 0; s < S; s++)
                    dst[t_filt(to, k, c, r, s, K, Cg, R, S)] = src[t_filt(from, k, c, r, s, K, Cg, R, S)];
}

/* Channels [c0, c0 + cn) of an NHWC tensor with C channels, as a dense NHWC tensor. */
static void nhwc_slice(const float *src, int64_t npix, int64_t C, int64_t c0, int64_t cn, float *dst) {
    for (int64_t i = 0; i < npix; i++)
        for (int64_t c = 0; c < cn; c++) dst[i * cn + c] = src[i * C + c0 + c];
}

/* ============================================================ reference */

START_TEST(hand_computed) {
    tsr_context *ctx = tt_ref_context();
    /* x = 1..9 in a 3x3 plane, w = [1 0; 0 -1]: y[i][j] = x[i][j] - x[i+1][j+1] = -4 */
    float x[9], w[4] = {1, 0, 0, -1}, y[16];
    for (int i = 0; i < 9; i++) x[i] = (float)(i + 1);
    tsr_conv2d_desc d = cdesc(1, 1, 3, 3, 1, 2, 2);
    run_ok(ctx, &d, x, w, y);
    ck_assert_str_eq(tsr_last_kernel(), "conv2d.ref");
    const float want[4] = {-4, -4, -4, -4};
    ck_assert_int_eq(tt_compare("2x2", y, want, TSR_F32, 4, 0, 0), 0);

    /* stride 2, one row/column of bottom/right padding: taps past the edge read 0 */
    d.stride_h = d.stride_w = 2, set_pads(&d, 0, 1, 0, 1);
    run_ok(ctx, &d, x, w, y);
    const float want_s2[4] = {1 - 5, 3 - 0, 7 - 0, 9};
    ck_assert_int_eq(tt_compare("stride 2, pad", y, want_s2, TSR_F32, 4, 0, 0), 0);

    /* padding 1 all round with w = [1 2; 3 4]: 4x4 output over the zero-bordered input */
    const float w2[4] = {1, 2, 3, 4};
    d = cdesc(1, 1, 3, 3, 1, 2, 2);
    set_pads(&d, 1, 1, 1, 1);
    run_ok(ctx, &d, x, w2, y);
    const float want_p1[16] = {4, 11, 18, 9, 18, 37, 47, 21, 36, 67, 77, 33, 14, 23, 26, 9};
    ck_assert_int_eq(tt_compare("pad 1", y, want_p1, TSR_F32, 16, 0, 0), 0);

    /* dilation 2: the 2x2 filter touches the four corners */
    d = cdesc(1, 1, 3, 3, 1, 2, 2);
    d.dilation_h = d.dilation_w = 2;
    run_ok(ctx, &d, x, w2, y);
    ck_assert_float_eq(y[0], 1 * 1 + 2 * 3 + 3 * 7 + 4 * 9);

    /* asymmetric: 3x4 plane 1..12, 1x1 filter [1], stride (1, 2), one row of top
     * padding and two columns of right padding: y[i][j] = x[i - 1][2j] or 0 */
    float x12[12], one = 1;
    for (int i = 0; i < 12; i++) x12[i] = (float)(i + 1);
    d = cdesc(1, 1, 3, 4, 1, 1, 1);
    d.stride_w = 2, set_pads(&d, 1, 0, 0, 2);
    int64_t p, q;
    out_shape(&d, &p, &q);
    ck_assert(p == 4 && q == 3);
    run_ok(ctx, &d, x12, &one, y);
    const float want_asym[12] = {0, 0, 0, 1, 3, 0, 5, 7, 0, 9, 11, 0};
    ck_assert_int_eq(tt_compare("asymmetric stride, pads", y, want_asym, TSR_F32, 12, 0, 0), 0);
    /* dilation (2, 1) with [1 0; 0 1]: y[0][j] = x[0][j] + x[2][j + 1] */
    const float wdiag[4] = {1, 0, 0, 1};
    d = cdesc(1, 1, 3, 4, 1, 2, 2);
    d.dilation_h = 2;
    out_shape(&d, &p, &q);
    ck_assert(p == 1 && q == 3);
    run_ok(ctx, &d, x12, wdiag, y);
    const float want_dil[3] = {1 + 10, 2 + 11, 3 + 12};
    ck_assert_int_eq(tt_compare("dilation (2, 1)", y, want_dil, TSR_F32, 3, 0, 0), 0);

    /* the same 2x2 case in f16 and bf16 (all values exact), to every output dtype */
    const tsr_dtype ins[] = {TSR_F16, TSR_F16, TSR_BF16, TSR_BF16};
    const tsr_dtype outs[] = {TSR_F32, TSR_F16, TSR_F32, TSR_BF16};
    for (int t = 0; t < 4; t++) {
        uint16_t xh[9], wh[4], yh[4];
        for (int i = 0; i < 9; i++) xh[i] = ins[t] == TSR_F16 ? tsr_f32_to_f16(x[i]) : tsr_f32_to_bf16(x[i]);
        for (int i = 0; i < 4; i++) wh[i] = ins[t] == TSR_F16 ? tsr_f32_to_f16(w[i]) : tsr_f32_to_bf16(w[i]);
        d = cdesc(1, 1, 3, 3, 1, 2, 2);
        d.x_dtype = d.w_dtype = ins[t], d.y_dtype = outs[t];
        void *out = outs[t] == TSR_F32 ? (void *)y : (void *)yh;
        tt_fill_sentinel(out, 4 * tsr_dtype_size(outs[t]));
        run_ok(ctx, &d, xh, wh, out);
        for (int i = 0; i < 4; i++) ck_assert_double_eq(tt_get(out, outs[t], i), -4.0);
    }
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(hand_computed_epilogue) {
    tsr_context *ctx = tt_ref_context();
    /* c = 1, k = 2: filter 0 = [1 0; 0 -1] gives -4, filter 1 = [0 0; 0 1] gives x[i+1][j+1] */
    float x[9], w[8] = {1, 0, 0, -1, 0, 0, 0, 1}, bias[2] = {5, -7}, res[8], y[8];
    for (int i = 0; i < 9; i++) x[i] = (float)(i + 1);
    for (int i = 0; i < 8; i++) res[i] = (float)(i + 1);
    tsr_conv2d_desc d = cdesc(1, 1, 3, 3, 2, 2, 2);
    d.epilogue.num_steps = 3;
    d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
    d.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_RELU);
    d.epilogue.steps[2] = tsr_epilogue_residual(res, TSR_F32, 0, 0.5f);
    run_ok(ctx, &d, x, w, y);
    /* NHWC: y[(i * 2 + j) * 2 + k] = relu(conv + bias[k]) + 0.5 * res[same] */
    const float want[8] = {1.5f, 1, 2.5f, 2, 3.5f, 4, 4.5f, 6};
    ck_assert_int_eq(tt_compare("bias relu residual", y, want, TSR_F32, 8, 0, 0), 0);
    /* residual, bias, relu: the order matters where relu clips */
    d.epilogue.steps[0] = tsr_epilogue_residual(res, TSR_F32, 0, 0.5f);
    d.epilogue.steps[1] = tsr_epilogue_bias(bias, TSR_F32);
    d.epilogue.steps[2] = tsr_epilogue_activation(TSR_ACT_RELU);
    run_ok(ctx, &d, x, w, y);
    const float want2[8] = {1.5f, 0, 2.5f, 1, 3.5f, 4, 4.5f, 6};
    ck_assert_int_eq(tt_compare("residual bias relu", y, want2, TSR_F32, 8, 0, 0), 0);
    /* in place: the residual is y itself (y = conv + y) */
    d.epilogue.num_steps = 1;
    d.epilogue.steps[0] = tsr_epilogue_residual(y, TSR_F32, 0, 1.0f);
    memcpy(y, res, sizeof y);
    run_ok(ctx, &d, x, w, y);
    const float want3[8] = {-4 + 1, 5 + 2, -4 + 3, 6 + 4, -4 + 5, 8 + 6, -4 + 7, 9 + 8};
    ck_assert_int_eq(tt_compare("in-place residual", y, want3, TSR_F32, 8, 0, 0), 0);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(output_shapes) {
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    tsr_conv2d_desc_init(NULL); /* no crash */
    ck_assert_uint_eq(d.size, sizeof d);
    ck_assert(d.format == TSR_NHWC && d.filter_format == TSR_FILTER_OHWI);
    ck_assert(d.x_dtype == TSR_F32 && d.w_dtype == TSR_F32 && d.y_dtype == TSR_F32);
    ck_assert(d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 && d.groups == 1);
    ck_assert(d.pad_top == 0 && d.pad_bottom == 0 && d.pad_left == 0 && d.pad_right == 0);
    ck_assert_int_eq(d.epilogue.num_steps, 0);
    int64_t p = -7, q = -7;
    out_shape(&d, &p, &q);
    ck_assert(p == 1 && q == 1);

    d = cdesc(1, 3, 224, 224, 64, 7, 7); /* ResNet stem */
    d.stride_h = d.stride_w = 2, set_pads(&d, 3, 3, 3, 3);
    out_shape(&d, &p, &q);
    ck_assert(p == 112 && q == 112);
    d = cdesc(1, 8, 10, 10, 8, 5, 5); /* dilated 5x5 spans 9 */
    d.dilation_h = d.dilation_w = 2;
    out_shape(&d, &p, &q);
    ck_assert(p == 2 && q == 2);
    d.stride_h = 3, d.stride_w = 2;
    out_shape(&d, &p, &q);
    ck_assert(p == 1 && q == 1);
    d = cdesc(1, 1, 5, 7, 1, 3, 1); /* asymmetric: height 5+2+0, width 7+1+2 */
    d.stride_h = 2, set_pads(&d, 2, 0, 1, 2);
    out_shape(&d, &p, &q);
    ck_assert(p == 3 && q == 10);

    /* errors leave p and q alone */
    p = q = -7;
    d.r = 9;
    ck_assert_int_eq(tsr_conv2d_output_shape(&d, &p, &q), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "height"));
    ck_assert(p == -7 && q == -7);
    ck_assert_int_eq(tsr_conv2d_output_shape(NULL, &p, &q), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_conv2d_output_shape(&d, NULL, &q), TSR_ERR_INVALID_ARGUMENT);
    d.r = 1, d.size = 8;
    ck_assert_int_eq(tsr_conv2d_output_shape(&d, &p, &q), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "desc->size"));
}
END_TEST

START_TEST(one_by_one_is_gemm) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 7, H = 5, W = 3, K = 5 };
    float x[N * H * W * C], w[K * C], y[N * H * W * K], want[N * H * W * K];
    tt_fill(x, TSR_F32, N * H * W * C, 1, -1, 1);
    tt_fill(w, TSR_F32, K * C, 2, -1, 1);
    /* NHWC x is a [N*H*W, C] matrix, OHWI 1x1 w is [K, C]: y = x w^T */
    for (int i = 0; i < N * H * W; i++)
        for (int k = 0; k < K; k++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += (double)x[i * C + c] * w[k * C + c];
            want[i * K + k] = (float)s;
        }
    tsr_conv2d_desc d = cdesc(N, C, H, W, K, 1, 1);
    run_ok(ctx, &d, x, w, y);
    ck_assert_int_eq(tt_compare("1x1 as gemm", y, want, TSR_F32, N * H * W * K, 1e-6, 1e-6), 0);

    /* stride 2: the GEMM over every other row and column (3 x 2 pixels) */
    d.stride_h = d.stride_w = 2;
    int64_t P, Q;
    out_shape(&d, &P, &Q);
    ck_assert(P == 3 && Q == 2);
    tt_fill_sentinel(y, sizeof y);
    run_ok(ctx, &d, x, w, y);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < P; i++)
            for (int j = 0; j < Q; j++)
                for (int k = 0; k < K; k++)
                    ck_assert_float_eq_tol(y[((n * P + i) * Q + j) * K + k],
                                           want[((n * H + 2 * i) * W + 2 * j) * K + k], 1e-6);
    tsr_context_destroy(ctx);
}
END_TEST

/* Stride, padding and dilation rebuilt from a plain conv (stride 1, no
 * padding, dilation 1): pad the input with zeros, spread the filter taps
 * out with zeros, then keep every stride-th output. */
START_TEST(stride_pad_dilation_identity) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 3, H = 7, W = 6, K = 4, R = 3, S = 2 };
    enum { SH = 2, SW = 3, DH = 2, DW = 3, PT = 2, PB = 0, PL = 1, PR = 3 };
    enum { HP = H + PT + PB, WP = W + PL + PR, RD = DH * (R - 1) + 1, SD = DW * (S - 1) + 1 };
    enum { P1 = HP - RD + 1, Q1 = WP - SD + 1 };
    float x[N * H * W * C], w[K * R * S * C], xp[N * HP * WP * C] = {0}, wd[K * RD * SD * C] = {0};
    float y1[N * P1 * Q1 * K], y[N * P1 * Q1 * K];
    tt_fill(x, TSR_F32, N * H * W * C, 12, -1, 1);
    tt_fill(w, TSR_F32, K * R * S * C, 13, -1, 1);
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < W; i++)
                for (int c = 0; c < C; c++)
                    xp[((n * HP + h + PT) * WP + i + PL) * C + c] = x[((n * H + h) * W + i) * C + c];
    for (int k = 0; k < K; k++)
        for (int r = 0; r < R; r++)
            for (int s = 0; s < S; s++)
                for (int c = 0; c < C; c++)
                    wd[((k * RD + r * DH) * SD + s * DW) * C + c] = w[((k * R + r) * S + s) * C + c];
    tsr_conv2d_desc plain = cdesc(N, C, HP, WP, K, RD, SD);
    run_ok(ctx, &plain, xp, wd, y1);

    tsr_conv2d_desc d = cdesc(N, C, H, W, K, R, S);
    d.stride_h = SH, d.stride_w = SW, d.dilation_h = DH, d.dilation_w = DW;
    set_pads(&d, PT, PB, PL, PR);
    int64_t P, Q;
    out_shape(&d, &P, &Q);
    ck_assert(P == (P1 - 1) / SH + 1 && Q == (Q1 - 1) / SW + 1);
    run_ok(ctx, &d, x, w, y);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < P; i++)
            for (int j = 0; j < Q; j++)
                for (int k = 0; k < K; k++)
                    ck_assert_float_eq_tol(y[((n * P + i) * Q + j) * K + k],
                                           y1[((n * P1 + i * SH) * Q1 + j * SW) * K + k], 1e-6);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(formats_agree) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 6, H = 7, W = 6, K = 4, G = 2, R = 3, S = 3, CG = C / G };
    tsr_conv2d_desc d = cdesc(N, C, H, W, K, R, S);
    d.groups = G, d.stride_h = 2, d.dilation_w = 2;
    set_pads(&d, 1, 0, 2, 1);
    int64_t P, Q;
    out_shape(&d, &P, &Q);
    const int64_t ny = N * K * P * Q;
    float x[N * C * H * W], w[K * CG * R * S], xf[N * C * H * W], wf[K * CG * R * S];
    float *y0 = xmalloc(sizeof(float) * (size_t)ny), *yf = xmalloc(sizeof(float) * (size_t)ny),
          *yb = xmalloc(sizeof(float) * (size_t)ny);
    tt_fill(x, TSR_F32, N * C * H * W, 5, -1, 1);
    tt_fill(w, TSR_F32, K * CG * R * S, 6, -1, 1);
    run_ok(ctx, &d, x, w, y0); /* NHWC / OHWI */
    const tsr_tensor_format fmts[] = {TSR_NHWC, TSR_NCHW};
    const tsr_filter_format ffmts[] = {TSR_FILTER_OHWI, TSR_FILTER_OIHW, TSR_FILTER_HWIO};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++) {
            act_convert(x, TSR_NHWC, xf, fmts[a], N, C, H, W);
            filt_convert(w, TSR_FILTER_OHWI, wf, ffmts[b], K, CG, R, S);
            tsr_conv2d_desc e = d;
            e.format = fmts[a], e.filter_format = ffmts[b];
            run_ok(ctx, &e, xf, wf, yf);
            act_convert(yf, fmts[a], yb, TSR_NHWC, N, K, P, Q);
            char what[32];
            snprintf(what, sizeof what, "format %d filter %d", a, b);
            ck_assert_int_eq(tt_compare(what, yb, y0, TSR_F32, ny, 1e-6, 1e-6), 0);
        }
    free(y0), free(yf), free(yb);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(delta_filters) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 5, H = 6, W = 7 };
    float x[N * H * W * C], y[N * H * W * C], xn[N * H * W * C], yn[N * H * W * C];
    tt_fill(x, TSR_F32, N * H * W * C, 7, -1, 1);

    /* full conv, w[k][c] = (k == c) at the centre tap, same padding: y == x */
    float w[C * 3 * 3 * C] = {0}, wh[C * 3 * 3 * C];
    for (int k = 0; k < C; k++) w[t_filt(TSR_FILTER_OHWI, k, k, 1, 1, C, C, 3, 3)] = 1;
    tsr_conv2d_desc d = cdesc(N, C, H, W, C, 3, 3);
    set_pads(&d, 1, 1, 1, 1);
    run_ok(ctx, &d, x, w, y);
    ck_assert_int_eq(tt_compare("delta nhwc", y, x, TSR_F32, N * H * W * C, 0, 0), 0);
    act_convert(x, TSR_NHWC, xn, TSR_NCHW, N, C, H, W);
    filt_convert(w, TSR_FILTER_OHWI, wh, TSR_FILTER_HWIO, C, C, 3, 3);
    d.format = TSR_NCHW, d.filter_format = TSR_FILTER_HWIO;
    run_ok(ctx, &d, xn, wh, yn);
    ck_assert_int_eq(tt_compare("delta nchw", yn, xn, TSR_F32, N * H * W * C, 0, 0), 0);

    /* depthwise 5x5 delta with dilation 2 spans 9: same padding is 4 */
    float wd[C * 25] = {0};
    for (int c = 0; c < C; c++) wd[c * 25 + 12] = 1;
    d = cdesc(N, C, H, W, C, 5, 5);
    d.groups = C, d.dilation_h = d.dilation_w = 2;
    set_pads(&d, 4, 4, 4, 4);
    run_ok(ctx, &d, x, wd, y);
    ck_assert_int_eq(tt_compare("dilated depthwise delta", y, x, TSR_F32, N * H * W * C, 0, 0), 0);

    /* a delta in the top-left tap without padding crops: y[i][j] = x[i][j] */
    memset(wd, 0, sizeof wd);
    for (int c = 0; c < C; c++) wd[c * 9] = 1;
    d = cdesc(N, C, H, W, C, 3, 3);
    d.groups = C;
    run_ok(ctx, &d, x, wd, y);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < H - 2; i++)
            for (int j = 0; j < W - 2; j++)
                for (int c = 0; c < C; c++)
                    ck_assert_float_eq(y[((n * (H - 2) + i) * (W - 2) + j) * C + c],
                                       x[((n * H + i) * W + j) * C + c]);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(depthwise_is_per_channel) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 5, H = 6, W = 7, M = 2 };
    float x[N * H * W * C], w[C * M * 9], y[N * H * W * C * M], xs[N * H * W], ys[N * H * W];
    tt_fill(x, TSR_F32, N * H * W * C, 8, -1, 1);
    tt_fill(w, TSR_F32, C * M * 9, 9, -1, 1);
    for (int mult = 1; mult <= M; mult++) {
        /* groups == c, k == mult * c: output channel kk reads input channel kk / mult */
        tsr_conv2d_desc d = cdesc(N, C, H, W, C * mult, 3, 3);
        d.groups = C, d.stride_w = 2;
        set_pads(&d, 1, 1, 1, 1);
        int64_t P, Q;
        out_shape(&d, &P, &Q);
        run_ok(ctx, &d, x, w, y);
        for (int kk = 0; kk < C * mult; kk++) {
            tsr_conv2d_desc one = d;
            one.c = one.k = one.groups = 1;
            nhwc_slice(x, N * H * W, C, kk / mult, 1, xs);
            run_ok(ctx, &one, xs, w + kk * 9, ys);
            for (int64_t i = 0; i < N * P * Q; i++)
                ck_assert_float_eq_tol(y[i * C * mult + kk], ys[i], 1e-6);
        }
    }
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(groups_are_independent) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 2, C = 6, H = 6, W = 5, K = 9, G = 3, CG = C / G, KG = K / G };
    float x[N * H * W * C], w[K * 9 * CG], y[N * H * W * K], xs[N * H * W * CG], ys[N * H * W * KG];
    tt_fill(x, TSR_F32, N * H * W * C, 10, -1, 1);
    tt_fill(w, TSR_F32, K * 9 * CG, 11, -1, 1);
    tsr_conv2d_desc d = cdesc(N, C, H, W, K, 3, 3);
    d.groups = G, d.stride_h = 2;
    set_pads(&d, 1, 1, 0, 2);
    int64_t P, Q;
    out_shape(&d, &P, &Q);
    run_ok(ctx, &d, x, w, y);
    for (int g = 0; g < G; g++) {
        /* group g: input channels [g*CG, +CG) and OHWI filter rows [g*KG, +KG) */
        tsr_conv2d_desc one = d;
        one.c = CG, one.k = KG, one.groups = 1;
        nhwc_slice(x, N * H * W, C, g * CG, CG, xs);
        run_ok(ctx, &one, xs, w + g * KG * 9 * CG, ys);
        for (int64_t i = 0; i < N * P * Q; i++)
            for (int k = 0; k < KG; k++) ck_assert_float_eq_tol(y[i * K + g * KG + k], ys[i * KG + k], 1e-6);
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* ========================================================= every context */

typedef struct ccase {
    const char *name;
    int64_t n, c, h, w, k, r, s;
    int64_t sh, sw, dh, dw, g;  /* 0 means 1 */
    int64_t pt, pb, pl, pr;
    tsr_tensor_format fmt;
    tsr_filter_format ffmt;
    tsr_dtype in, out;          /* x and w; y */
    /* epilogue, one letter a step: b bias, R residual (scale 0.5), I residual
     * that is y itself (scale 1), r relu, g gelu_erf, t gelu_tanh, s silu,
     * S sigmoid, h tanh */
    const char *epi;
    bool data_f32;              /* bias/residual in f32 rather than y's dtype */
    bool unaligned;             /* CPU: every pointer one element past 64-byte alignment */
} ccase;

static int64_t or1(int64_t v) { return v ? v : 1; }

static tsr_conv2d_desc case_desc(const ccase *cc) {
    tsr_conv2d_desc d = cdesc(cc->n, cc->c, cc->h, cc->w, cc->k, cc->r, cc->s);
    d.stride_h = or1(cc->sh), d.stride_w = or1(cc->sw);
    d.dilation_h = or1(cc->dh), d.dilation_w = or1(cc->dw), d.groups = or1(cc->g);
    set_pads(&d, cc->pt, cc->pb, cc->pl, cc->pr);
    d.format = cc->fmt, d.filter_format = cc->ffmt;
    d.x_dtype = d.w_dtype = cc->in, d.y_dtype = cc->out;
    return d;
}

static void set_epilogue(tsr_conv2d_desc *d, const char *epi, const void *bias, const void *res, void *y,
                         tsr_dtype data_t) {
    d->epilogue.num_steps = 0;
    for (const char *e = epi ? epi : ""; *e; e++) {
        tsr_epilogue_step *s = &d->epilogue.steps[d->epilogue.num_steps++];
        switch (*e) {
        case 'b': *s = tsr_epilogue_bias(bias, data_t); break;
        case 'R': *s = tsr_epilogue_residual(res, data_t, 0, 0.5f); break;
        case 'I': *s = tsr_epilogue_residual(y, d->y_dtype, 0, 1.0f); break;
        case 'r': *s = tsr_epilogue_activation(TSR_ACT_RELU); break;
        case 'g': *s = tsr_epilogue_activation(TSR_ACT_GELU_ERF); break;
        case 't': *s = tsr_epilogue_activation(TSR_ACT_GELU_TANH); break;
        case 's': *s = tsr_epilogue_activation(TSR_ACT_SILU); break;
        case 'S': *s = tsr_epilogue_activation(TSR_ACT_SIGMOID); break;
        case 'h': *s = tsr_epilogue_activation(TSR_ACT_TANH); break;
        default: ck_abort_msg("bad epilogue letter %c", *e);
        }
    }
}

/* Device buffer holding host's bytes, `off` bytes past an aligned allocation
 * (off > 0 only where device pointers are host addresses). */
typedef struct dbuf {
    void *base;
    void *p;
} dbuf;

static dbuf dput(tsr_context *ctx, const void *host, size_t bytes, size_t off) {
    unsigned char *stage = xmalloc(bytes + off);
    memset(stage, 0, off);
    memcpy(stage + off, host, bytes);
    dbuf b;
    b.base = tt_upload(ctx, stage, bytes + off);
    b.p = (unsigned char *)b.base + off;
    free(stage);
    return b;
}

static bool is_cpu(tsr_context *ctx) {
    tsr_context_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    ck_assert_int_eq(tsr_context_get_info(ctx, &info), TSR_OK);
    return info.backend == TSR_BACKEND_CPU;
}

static void check_case(tsr_context *ref, const tt_context *tc, const ccase *cc) {
    tsr_conv2d_desc d = case_desc(cc);
    int64_t p, q;
    out_shape(&d, &p, &q);
    const int64_t cg = cc->c / or1(cc->g);
    const size_t nx = (size_t)(cc->n * cc->c * cc->h * cc->w), nw = (size_t)(cc->k * cg * cc->r * cc->s),
                 ny = (size_t)(cc->n * cc->k * p * q);
    const tsr_dtype data_t = cc->data_f32 ? TSR_F32 : cc->out;
    const size_t ei = tsr_dtype_size(cc->in), eo = tsr_dtype_size(cc->out), ed = tsr_dtype_size(data_t);
    void *x = xmalloc(nx * ei), *w = xmalloc(nw * ei), *res = xmalloc(ny * ed), *bias = xmalloc((size_t)cc->k * ed);
    void *want = xmalloc(ny * eo), *got = xmalloc(ny * eo), *yinit = xmalloc(ny * eo);
    tt_fill(x, cc->in, (int64_t)nx, 21, -1, 1);
    tt_fill(w, cc->in, (int64_t)nw, 22, -1, 1);
    tt_fill(res, data_t, (int64_t)ny, 23, -1, 1);
    tt_fill(bias, data_t, cc->k, 24, -1, 1);
    /* y starts as the in-place residual, or as garbage that every output must overwrite */
    const bool in_place = cc->epi && strchr(cc->epi, 'I');
    if (in_place) tt_fill(yinit, cc->out, (int64_t)ny, 25, -1, 1);
    else tt_fill_sentinel(yinit, ny * eo);

    memcpy(want, yinit, ny * eo);
    set_epilogue(&d, cc->epi, bias, res, want, data_t);
    run_ok(ref, &d, x, w, want);

    tsr_context *ctx = tc->ctx;
    const size_t off_in = cc->unaligned && is_cpu(ctx) ? ei : 0, off_out = off_in ? eo : 0,
                 off_d = off_in ? ed : 0;
    dbuf dx = dput(ctx, x, nx * ei, off_in), dw = dput(ctx, w, nw * ei, off_in);
    dbuf dres = dput(ctx, res, ny * ed, off_d), dbias = dput(ctx, bias, (size_t)cc->k * ed, off_d);
    dbuf dy = dput(ctx, yinit, ny * eo, off_out);
    set_epilogue(&d, cc->epi, dbias.p, dres.p, dy.p, data_t);
    tsr_status st = tsr_conv2d(ctx, &d, dx.p, dw.p, dy.p);
    ck_assert_msg(st == TSR_OK, "%s on %s: %s", cc->name, tc->label, tsr_last_error());
    tt_download(ctx, got, dy.p, ny * eo);

    char what[160];
    snprintf(what, sizeof what, "%s on %s (%s)", cc->name, tc->label, tsr_last_kernel());
    const int64_t red = cg * cc->r * cc->s;
    const double rtol = tt_rtol(cc->out, red);
    ck_assert_msg(tt_compare(what, got, want, cc->out, (int64_t)ny, rtol * sqrt((double)red), rtol) == 0, "%s",
                  what);
    tt_free(ctx, dx.base), tt_free(ctx, dw.base), tt_free(ctx, dres.base), tt_free(ctx, dbias.base);
    tt_free(ctx, dy.base);
    free(x), free(w), free(res), free(bias), free(want), free(got), free(yinit);
}

#define NHWC TSR_NHWC, TSR_FILTER_OHWI
#define NHWC_HWIO TSR_NHWC, TSR_FILTER_HWIO
#define NHWC_OIHW TSR_NHWC, TSR_FILTER_OIHW
#define NCHW TSR_NCHW, TSR_FILTER_OIHW
#define NCHW_HWIO TSR_NCHW, TSR_FILTER_HWIO
#define NCHW_OHWI TSR_NCHW, TSR_FILTER_OHWI
#define F32 TSR_F32, TSR_F32

/*  name                     n   c   h   w   k  r  s  sh sw dh dw  g  pt pb pl pr  formats    dtypes  epi */
static const ccase cases[] = {
    {"3x3 same",              1,  3,  9,  9,  7, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      F32, "b", false, false},
    {"3x3 nchw",              3,  7,  8,  6, 17, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NCHW,      F32, "br", false, true},
    {"1x1 projection",        2, 17,  6,  5, 16, 1, 1, 0, 0, 0, 0, 0,  0, 0, 0, 0, NHWC_HWIO, F32, "", false, false},
    {"1x1 stride 2",          3,  7,  9,  8,  3, 1, 1, 2, 2, 0, 0, 0,  0, 0, 0, 0, NCHW_HWIO, F32, "bgR", false, false},
    {"7x7 s2 p3 stem",        1,  3, 15, 15,  8, 7, 7, 2, 2, 0, 0, 0,  3, 3, 3, 3, NHWC,      F32, "bgR", false, false},
    {"7x7 s2 p3 stem nchw",   1,  3, 16, 13,  7, 7, 7, 2, 2, 0, 0, 0,  3, 3, 3, 3, NCHW,      F32, "br", false, false},
    {"5x5 dilation 2",        3,  6, 11, 10,  4, 5, 5, 0, 0, 2, 2, 2,  4, 3, 0, 2, NHWC,      F32, "Rbt", false, false},
    {"dilation/stride mixed", 1,  5,  9,  9,  3, 3, 3, 1, 2, 2, 1, 0,  2, 2, 1, 1, NCHW_HWIO, F32, "", false, false},
    {"asymmetric pads",       1,  3,  6,  7,  7, 3, 3, 0, 0, 0, 0, 0,  0, 2, 1, 0, NHWC_OIHW, F32, "b", false, false},
    {"pads > half filter",    1,  5,  4,  4,  3, 3, 3, 0, 0, 0, 0, 0,  2, 2, 2, 2, NHWC,      F32, "bh", false, false},
    {"pads = filter",         1,  3,  2,  3,  7, 3, 3, 0, 0, 0, 0, 0,  3, 3, 3, 3, NCHW_OHWI, F32, "bs", false, false},
    {"depthwise 3x3",         1,  8,  9,  9,  8, 3, 3, 0, 0, 0, 0, 8,  1, 1, 1, 1, NHWC,      F32, "Rb", false, true},
    {"depthwise s2 nchw",     3, 17, 10,  9, 17, 3, 3, 2, 2, 0, 0, 17, 1, 1, 1, 1, NCHW,      F32, "br", false, false},
    {"depthwise multiplier",  1,  4,  7,  7,  8, 3, 3, 2, 1, 0, 0, 4,  1, 1, 1, 1, NCHW,      F32, "bS", false, false},
    {"depthwise mult hwio",   1,  3,  5,  6,  6, 5, 5, 0, 0, 0, 0, 3,  2, 2, 2, 2, NHWC_HWIO, F32, "", false, false},
    {"groups 2",              3,  6,  7,  7,  4, 3, 3, 0, 0, 0, 0, 2,  1, 1, 1, 1, NHWC_HWIO, F32, "bgR", false, false},
    {"groups 2 nchw",         1, 14,  5,  6, 34, 3, 3, 0, 0, 0, 0, 2,  1, 1, 1, 1, NCHW_OHWI, F32, "rR", false, false},
    {"1x1 spatial",           1,  7,  1,  1,  5, 1, 1, 0, 0, 0, 0, 0,  0, 0, 0, 0, NHWC,      F32, "", false, false},
    {"h = 1",                 3,  3,  1,  9,  7, 1, 3, 0, 0, 0, 0, 0,  0, 0, 1, 1, NCHW_OHWI, F32, "b", false, false},
    {"w = 1, 3x3 pad 1",      1, 17,  6,  1,  3, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      F32, "", false, false},
    {"3x5 filter",            1,  7,  6,  9,  3, 3, 5, 0, 0, 0, 0, 0,  1, 1, 2, 2, NHWC_OIHW, F32, "", false, false},
    {"relu res bias silu",    1,  7,  5,  6, 17, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      F32, "rRbs", false, false},
    {"in-place residual",     3,  7,  5,  5,  7, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NCHW,      F32, "bIr", false, false},
    {"f16 -> f32",            2,  5,  6,  6,  7, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      TSR_F16, TSR_F32, "b", false, true},
    {"f16 -> f16",            1,  5,  6,  6,  7, 3, 3, 2, 2, 0, 0, 0,  0, 1, 0, 1, NCHW,      TSR_F16, TSR_F16, "bgR", false, false},
    {"f16 -> f16, f32 data",  1,  7,  6,  6,  3, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC_HWIO, TSR_F16, TSR_F16, "bR", true, false},
    {"f16 long reduction",    1, 67,  6,  6,  9, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      TSR_F16, TSR_F16, "", false, false},
    {"bf16 -> f32",           3,  3,  5,  7, 17, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC_HWIO, TSR_BF16, TSR_F32, "br", false, false},
    {"bf16 -> bf16",          2,  5,  6,  6,  7, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NCHW_HWIO, TSR_BF16, TSR_BF16, "brR", false, true},
    {"bf16 depthwise, f32 data", 1, 7, 6, 6, 7, 3, 3, 0, 0, 0, 0, 7,  1, 1, 1, 1, NHWC,      TSR_BF16, TSR_BF16, "bR", true, false},
    {"bf16 in-place residual", 1, 5,  4,  4,  3, 3, 3, 0, 0, 0, 0, 0,  1, 1, 1, 1, NHWC,      TSR_BF16, TSR_BF16, "Ib", false, false},
};

START_TEST(every_context_matches_reference) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("conv", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    for (int c = 0; c < nc; c++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ref, &cs[c], &cases[i]);
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

/* The result does not depend on how many threads share the work. */
START_TEST(thread_counts) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("conv", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const int threads[] = {1, 3};
    for (int c = 0; c < nc; c++) {
        if (!is_cpu(cs[c].ctx)) continue;
        for (int t = 0; t < 2; t++) {
            ck_assert_int_eq(tsr_context_set_num_threads(cs[c].ctx, threads[t]), TSR_OK);
            check_case(ref, &cs[c], &cases[1]);
            check_case(ref, &cs[c], &cases[12]);
        }
    }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

/* n == 0 is an empty batch: OK, nothing read or written, pointers may be NULL. */
START_TEST(empty_batch) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("conv", cs, TT_MAX_CONTEXTS);
    for (int c = 0; c < nc; c++) {
        tsr_conv2d_desc d = cdesc(0, 4, 5, 5, 3, 3, 3);
        ck_assert_int_eq(tsr_conv2d(cs[c].ctx, &d, NULL, NULL, NULL), TSR_OK);
        ck_assert_int_eq(tsr_conv2d_supported(cs[c].ctx, &d, NULL, 0), TSR_OK);
    }
    tt_contexts_close(cs, nc);
    tsr_context *ctx = tt_ref_context();
    float x[4] = {0}, w[108] = {0}, y[16];
    tsr_conv2d_desc d = cdesc(0, 4, 5, 5, 3, 3, 3);
    tt_fill_sentinel(y, sizeof y);
    ck_assert_int_eq(tsr_conv2d(ctx, &d, x, w, y), TSR_OK);
    ck_assert(tt_unchanged(y, sizeof y));
    tsr_context_destroy(ctx);
}
END_TEST

/* ============================================================ bad input */

enum { XN = 256, YN = 256 };

/* Expects status `want` with `needle` in the message and y untouched; when
 * the fault is in the descriptor (not the pointers), tsr_conv2d_supported
 * must give the same answer. */
static void expect_bad_at(tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w, void *y,
                          size_t ybytes, tsr_status want, const char *needle, bool desc_fault) {
    if (y) tt_fill_sentinel(y, ybytes);
    tsr_status st = tsr_conv2d(ctx, d, x, w, y);
    ck_assert_msg(st == want, "%s: want %s, got %s (%s)", needle, tsr_status_string(want), tsr_status_string(st),
                  tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    ck_assert_msg(strncmp(tsr_last_error(), "conv2d: ", 8) == 0, "message '%s' lacks the op", tsr_last_error());
    if (y) ck_assert_msg(tt_unchanged(y, ybytes), "y written on bad input (%s)", needle);
    if (desc_fault) {
        char why[512] = "unset";
        ck_assert_int_eq(tsr_conv2d_supported(ctx, d, why, sizeof why), want);
        ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
        ck_assert_int_eq(tsr_conv2d_supported(ctx, d, NULL, 0), want);
    }
}

static void expect_bad(tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w, void *y,
                       tsr_status want, const char *needle) {
    expect_bad_at(ctx, d, x, w, y, sizeof(float) * YN, want, needle, true);
}

START_TEST(bad_pointers_and_descriptor) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[XN] = {0}, w[XN] = {0}, y[YN];
    const tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3); /* x 36, w 72, y 2 floats */
    tsr_conv2d_desc e;
    expect_bad_at(ctx, &d, NULL, w, y, sizeof y, TSR_ERR_INVALID_ARGUMENT, "x is NULL", false);
    expect_bad_at(ctx, &d, x, NULL, y, sizeof y, TSR_ERR_INVALID_ARGUMENT, "w is NULL", false);
    expect_bad_at(ctx, &d, x, w, NULL, 0, TSR_ERR_INVALID_ARGUMENT, "y is NULL", false);
    expect_bad_at(ctx, NULL, x, w, y, sizeof y, TSR_ERR_INVALID_ARGUMENT, "desc is NULL", true);
    tt_fill_sentinel(y, sizeof y);
    ck_assert_int_eq(tsr_conv2d(NULL, &d, x, w, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "ctx is NULL"));
    ck_assert(tt_unchanged(y, sizeof y));
    ck_assert_int_eq(tsr_conv2d_supported(NULL, &d, NULL, 0), TSR_ERR_INVALID_ARGUMENT);

    e = d, e.size = 4;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "desc->size (4)");
    e = d, e.format = (tsr_tensor_format)9;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "format (9)");
    e = d, e.filter_format = (tsr_filter_format)-1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "filter_format (-1)");

    /* a good call after all that clears the error */
    run_ok(ctx, &d, x, w, y);
    ck_assert_str_eq(tsr_last_error(), "");
    char why[64] = "unset";
    ck_assert_int_eq(tsr_conv2d_supported(ctx, &d, why, sizeof why), TSR_OK);
    ck_assert_str_eq(why, "");
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(bad_sizes) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[XN] = {0}, w[XN] = {0}, y[YN];
    const tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3);
    tsr_conv2d_desc e;
    e = d, e.n = -1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "n (-1) must be >= 0");
    e = d, e.c = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "c (0) must be >= 1");
    e = d, e.h = -3;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "h (-3)");
    e = d, e.w = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "w (0)");
    e = d, e.k = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "k (0)");
    e = d, e.r = -1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "r (-1)");
    e = d, e.s = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "s (0)");
    e = d, e.stride_h = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "stride_h (0)");
    e = d, e.stride_w = -2;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "stride_w (-2)");
    e = d, e.dilation_h = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "dilation_h (0)");
    e = d, e.dilation_w = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "dilation_w (0)");
    e = d, e.pad_top = -1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "pad_top (-1)");
    e = d, e.pad_right = -5;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "pad_right (-5)");
    e = d, e.groups = 0;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "groups (0)");
    e = d, e.groups = 3;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "groups (3) does not divide c (4)");
    e = d, e.groups = 4;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "groups (4) does not divide k (2)");

    /* empty output: the (dilated) filter is bigger than the padded input */
    e = d, e.r = 5;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "filter height (5) exceeds the padded input height (3)");
    e = d, e.r = 5, e.pad_top = 1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "padded input height (4)");
    e = d, e.dilation_w = 2;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "filter width (5)");

    /* int64 overflow anywhere is an invalid argument, caught before any access */
    e = d, e.n = e.h = e.w = e.c = (int64_t)1 << 20;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "byte size of x");
    e = d, e.k = (int64_t)1 << 61;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "byte size of w");
    e = cdesc(1, 1, (int64_t)1 << 30, (int64_t)1 << 30, 8, 1, 1); /* x fits, y is 2^65 bytes */
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "byte size of y");
    e = d, e.pad_top = INT64_MAX;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "padded input height");
    e = d, e.pad_left = INT64_MAX - 1, e.pad_right = 2;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "padded input width");
    e = d, e.dilation_h = INT64_MAX / 2 + 1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "dilated filter height");
    e = d, e.s = INT64_MAX, e.w = INT64_MAX, e.dilation_w = 1; /* fits until the byte sizes */
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(bad_dtypes_and_epilogue) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[XN] = {0}, w[XN] = {0}, y[YN], bias[8] = {0};
    const tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3);
    tsr_conv2d_desc e;
    e = d, e.w_dtype = TSR_F16;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "x=f32 w=f16 y=f32");
    e = d, e.y_dtype = TSR_F16;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "x=f32 w=f32 y=f16");
    e = d, e.x_dtype = e.w_dtype = TSR_F16, e.y_dtype = TSR_BF16;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "y=bf16");
    e = d, e.x_dtype = e.w_dtype = TSR_BF16, e.y_dtype = TSR_F16;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "x=bf16 w=bf16 y=f16");
    e = d, e.x_dtype = e.w_dtype = TSR_I8, e.y_dtype = TSR_I32;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "x=i8 w=i8 y=i32");
    e = d, e.x_dtype = (tsr_dtype)99;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "x_dtype (99)");

    e = d, e.epilogue.num_steps = TSR_MAX_EPILOGUE_STEPS + 1;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "epilogue.num_steps (5)");
    e = d, e.epilogue.num_steps = 1, e.epilogue.steps[0] = tsr_epilogue_bias(NULL, TSR_F32);
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "epilogue.steps[0].data is NULL");
    e = d, e.epilogue.num_steps = 1, e.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F16);
    expect_bad(ctx, &e, x, w, y, TSR_ERR_NOT_SUPPORTED, "epilogue.steps[0].dtype");
    e = d, e.epilogue.num_steps = 1, e.epilogue.steps[0] = tsr_epilogue_activation((tsr_activation)42);
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "activation (42)");
    e = d, e.epilogue.num_steps = 2, e.epilogue.steps[0] = tsr_epilogue_activation(TSR_ACT_RELU);
    e.epilogue.steps[1] = tsr_epilogue_residual(bias, TSR_F32, 5, 1);
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "epilogue.steps[1] residual ld (5)");
    e.epilogue.steps[1].ld = 0, e.epilogue.steps[1].batch_stride = 7;
    expect_bad(ctx, &e, x, w, y, TSR_ERR_INVALID_ARGUMENT, "batch_stride (7) must be 0");
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(bad_aliasing) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float buf[1024] = {0};
    float *x = buf, *w = buf + 256, *other = buf + 512;
    const size_t yb = 2 * sizeof(float); /* y is 1 x 2 x 1 x 1 */
    tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3), e;
    expect_bad_at(ctx, &d, x, w, x + 10, yb, TSR_ERR_INVALID_ARGUMENT, "y overlaps x", false);
    expect_bad_at(ctx, &d, x, w, w + 71, yb, TSR_ERR_INVALID_ARGUMENT, "y overlaps w", false);
    /* y touching the ends of x and w is fine */
    run_ok(ctx, &d, x, w, x + 36);
    run_ok(ctx, &d, x, w, w - 2);

    float *y = other;
    e = d, e.epilogue.num_steps = 1, e.epilogue.steps[0] = tsr_epilogue_bias(y + 1, TSR_F32);
    expect_bad_at(ctx, &e, x, w, y, yb, TSR_ERR_INVALID_ARGUMENT, "y overlaps the bias", false);
    e.epilogue.steps[0] = tsr_epilogue_residual(y + 1, TSR_F32, 0, 1);
    expect_bad_at(ctx, &e, x, w, y, yb, TSR_ERR_INVALID_ARGUMENT, "y overlaps the residual", false);
    /* the residual may be y itself ... */
    e.epilogue.steps[0] = tsr_epilogue_residual(y, TSR_F32, 0, 1);
    run_ok(ctx, &e, x, w, y);
    /* ... but not y reinterpreted in another dtype */
    uint16_t xh[64] = {0}, wh[128] = {0}, yh[8];
    e.x_dtype = e.w_dtype = e.y_dtype = TSR_F16;
    e.epilogue.steps[0] = tsr_epilogue_residual(yh, TSR_F32, 0, 1);
    expect_bad_at(ctx, &e, xh, wh, yh, sizeof(uint16_t) * 2, TSR_ERR_INVALID_ARGUMENT, "y overlaps the residual",
                  false);
    e.epilogue.steps[0] = tsr_epilogue_residual(yh, TSR_F16, 0, 1);
    run_ok(ctx, &e, xh, wh, yh);
    tsr_context_destroy(ctx);
}
END_TEST

/* Validation is the op front's, the same on every context. */
START_TEST(bad_input_every_context) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("conv", cs, TT_MAX_CONTEXTS);
    for (int c = 0; c < nc; c++) {
        tsr_context *ctx = cs[c].ctx;
        void *x = tt_upload(ctx, NULL, 256), *w = tt_upload(ctx, NULL, 512), *y = tt_upload(ctx, NULL, 64);
        tsr_conv2d_desc d = cdesc(1, 4, 3, 3, 2, 3, 3), e;
        ck_assert_int_eq(tsr_conv2d(ctx, &d, NULL, w, y), TSR_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(tsr_last_error(), "x is NULL"));
        e = d, e.groups = 3;
        ck_assert_int_eq(tsr_conv2d(ctx, &e, x, w, y), TSR_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(tsr_last_error(), "groups (3) does not divide c (4)"));
        ck_assert_int_eq(tsr_conv2d_supported(ctx, &e, NULL, 0), TSR_ERR_INVALID_ARGUMENT);
        e = d, e.x_dtype = TSR_BF16;
        ck_assert_int_eq(tsr_conv2d(ctx, &e, x, w, y), TSR_ERR_NOT_SUPPORTED);
        ck_assert_int_eq(tsr_conv2d_supported(ctx, &e, NULL, 0), TSR_ERR_NOT_SUPPORTED);
        /* packed filters: host memory, so CPU contexts only; elsewhere a clear refusal */
        size_t bytes = 0;
        tsr_context_info info = {.size = sizeof info};
        ck_assert_int_eq(tsr_context_get_info(ctx, &info), TSR_OK);
        const bool host = info.backend == TSR_BACKEND_CPU;
        ck_assert_int_eq(tsr_conv2d_packed_filter_size(ctx, &d, &bytes), host ? TSR_OK : TSR_ERR_NOT_SUPPORTED);
        if (!host) ck_assert_ptr_nonnull(strstr(tsr_last_error(), "packed filters are for CPU contexts"));
        e = d, e.filter_format = TSR_FILTER_PACKED;
        ck_assert_int_eq(tsr_conv2d(ctx, &e, x, w, y), host ? TSR_ERR_INVALID_ARGUMENT : TSR_ERR_NOT_SUPPORTED);
        e.filter_format = (tsr_filter_format)4;
        ck_assert_int_eq(tsr_conv2d(ctx, &e, x, w, y), TSR_ERR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(tsr_last_error(), "filter_format (4) is not a tsr_filter_format"));
        tt_free(ctx, x), tt_free(ctx, w), tt_free(ctx, y);
    }
    tt_contexts_close(cs, nc);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conv");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, hand_computed);
    tcase_add_test(ref, hand_computed_epilogue);
    tcase_add_test(ref, output_shapes);
    tcase_add_test(ref, one_by_one_is_gemm);
    tcase_add_test(ref, stride_pad_dilation_identity);
    tcase_add_test(ref, formats_agree);
    tcase_add_test(ref, delta_filters);
    tcase_add_test(ref, depthwise_is_per_channel);
    tcase_add_test(ref, groups_are_independent);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, every_context_matches_reference);
    tcase_add_test(dispatch, thread_counts);
    tcase_add_test(dispatch, empty_batch);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_pointers_and_descriptor);
    tcase_add_test(bad, bad_sizes);
    tcase_add_test(bad, bad_dtypes_and_epilogue);
    tcase_add_test(bad, bad_aliasing);
    tcase_add_test(bad, bad_input_every_context);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
