/* The sm80 conv2d kernels on their own: the implicit GEMM on tensor cores
 * with every tile and stage count, the SIMT implicit GEMM and the depthwise
 * kernel, on shapes with stride 2, padding (asymmetric, larger than half
 * the filter), dilation, groups, depthwise, 1x1, the 7x7 stride-2 stem,
 * channel counts that are odd or cross every tile, f16/bf16/f32 in and
 * out, and each epilogue step (a residual that is y itself too), against
 * the reference. A case a kernel declines is skipped for that kernel (the
 * direct kernel runs it in the every-context suite). Without a GPU the
 * suite prints SKIP and passes having checked nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

static tsr_context *cuda_context(void) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_CUDA;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        printf("SKIP conv_cuda: backend cuda: %s\n", tsr_last_error());
        return NULL;
    }
    return ctx;
}

enum { EPI_NONE, EPI_BIAS, EPI_BIAS_ACT, EPI_RES, EPI_ALL, EPI_RES_INPLACE };

typedef struct ccase {
    int64_t n, c, h, w, k, r, s, sh, sw, pt, pb, pl, pr, dh, dw, g;
    tsr_tensor_format fmt;
    tsr_filter_format ffmt;
    tsr_dtype dt, yt;
    int epi;
    tsr_activation act;
} ccase;

static void desc_of(const ccase *c, tsr_conv2d_desc *d) {
    tsr_conv2d_desc_init(d);
    d->format = c->fmt, d->filter_format = c->ffmt;
    d->n = c->n, d->c = c->c, d->h = c->h, d->w = c->w, d->k = c->k, d->r = c->r, d->s = c->s;
    d->stride_h = c->sh, d->stride_w = c->sw, d->pad_top = c->pt, d->pad_bottom = c->pb;
    d->pad_left = c->pl, d->pad_right = c->pr, d->dilation_h = c->dh, d->dilation_w = c->dw, d->groups = c->g;
    d->x_dtype = d->w_dtype = c->dt, d->y_dtype = c->yt;
}

/* Runs kernel k with schedule s; returns 1 when the schedule applied. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const ccase *c, const tsr_schedule *s) {
    tsr_conv2d_desc d;
    desc_of(c, &d);
    int64_t P, Q;
    ck_assert_msg(tsr_conv2d_output_shape(&d, &P, &Q) == TSR_OK, "%s", tsr_last_error());
    const int64_t xn = c->n * c->c * c->h * c->w, wn = c->k * (c->c / c->g) * c->r * c->s, yn = c->n * c->k * P * Q;
    const size_t es = tsr_dtype_size(c->dt), ys = tsr_dtype_size(c->yt);
    void *x = malloc((size_t)xn * es + 1), *w = malloc((size_t)wn * es + 1);
    void *y1 = malloc((size_t)yn * ys + 1), *y2 = malloc((size_t)yn * ys + 1), *res = malloc((size_t)yn * ys + 1);
    void *bias = malloc((size_t)c->k * ys + 1);
    tt_fill(x, c->dt, xn, 11 + (uint64_t)c->c, -1, 1);
    tt_fill(w, c->dt, wn, 12 + (uint64_t)c->k, -1, 1);
    tt_fill(bias, c->yt, c->k, 13, -1, 1);
    tt_fill(res, c->yt, yn, 14, -1, 1);
    tt_fill_sentinel(y2, (size_t)yn * ys);

    /* sum |x||w| per output: the reference on absolute values */
    float *ax = malloc(sizeof(float) * (size_t)(xn + 1)), *aw = malloc(sizeof(float) * (size_t)(wn + 1));
    float *bound = malloc(sizeof(float) * (size_t)(yn + 1));
    for (int64_t i = 0; i < xn; i++) ax[i] = fabsf(tsr_load_f(x, c->dt, i));
    for (int64_t i = 0; i < wn; i++) aw[i] = fabsf(tsr_load_f(w, c->dt, i));
    tsr_conv2d_desc da = d;
    da.x_dtype = da.w_dtype = da.y_dtype = TSR_F32;
    ck_assert_msg(tsr_conv2d(ref, &da, ax, aw, bound) == TSR_OK, "%s", tsr_last_error());

    tsr_epilogue *e = &d.epilogue;
    if (c->epi == EPI_BIAS || c->epi == EPI_BIAS_ACT || c->epi == EPI_ALL)
        e->steps[e->num_steps++] = tsr_epilogue_bias(bias, c->epi == EPI_ALL ? TSR_F32 : c->yt);
    if (c->epi == EPI_ALL && c->yt != TSR_F32) e->steps[0].dtype = c->yt; /* an f32 bias only with f32 data */
    if (c->epi == EPI_BIAS_ACT) e->steps[e->num_steps++] = tsr_epilogue_activation(c->act);
    if (c->epi == EPI_RES || c->epi == EPI_ALL)
        e->steps[e->num_steps++] = tsr_epilogue_residual(res, c->yt, 0, c->epi == EPI_ALL ? 0.5f : 1.0f);
    if (c->epi == EPI_ALL) e->steps[e->num_steps++] = tsr_epilogue_activation(c->act);
    ck_assert_msg(tsr_conv2d(ref, &d, x, w, y1) == TSR_OK, "%s", tsr_last_error());
    if (c->epi == EPI_RES_INPLACE) { /* y += conv: y starts as the residual */
        memcpy(y1, res, (size_t)yn * ys);
        e->steps[e->num_steps++] = tsr_epilogue_residual(y1, c->yt, 0, 1.0f);
        ck_assert_msg(tsr_conv2d(ref, &d, x, w, y1) == TSR_OK, "%s", tsr_last_error());
        memcpy(y2, res, (size_t)yn * ys);
        e->steps[0].data = y2;
    }

    /* the kernel's operands on the device: the epilogue's pointers too */
    void *dx = tt_upload(ctx, x, (size_t)xn * es), *dw = tt_upload(ctx, w, (size_t)wn * es);
    void *dy = tt_upload(ctx, y2, (size_t)yn * ys), *dbias = tt_upload(ctx, bias, (size_t)c->k * ys + 1);
    void *dres = tt_upload(ctx, res, (size_t)yn * ys);
    for (int i = 0; i < e->num_steps; i++) {
        if (e->steps[i].data == bias) e->steps[i].data = dbias;
        else if (e->steps[i].data == res) e->steps[i].data = dres;
        else if (e->steps[i].data == y2) e->steps[i].data = dy;
    }
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_CONV2D;
    p.u.conv.d = d, p.u.conv.p = P, p.u.conv.q = Q;
    p.u.conv.x = dx, p.u.conv.w = dw, p.u.conv.y = dy;
    int ran = 0;
    char why[200];
    if (k->supports(&p, ctx, why, sizeof why) && (!k->schedule_valid || k->schedule_valid(&p, ctx, s))) {
        ck_assert_msg(k->run(ctx, &p, s) == TSR_OK, "%s", tsr_last_error());
        ck_assert_int_eq(tsr_synchronize(ctx), TSR_OK);
        tt_download(ctx, y2, dy, (size_t)yn * ys);
        const double out_eps = c->yt == TSR_F32 ? 1e-6 : c->yt == TSR_F16 ? 1.0 / 1024 : 1.0 / 128;
        int64_t bad = 0;
        for (int64_t i = 0; i < yn; i++) {
            const double want = tsr_load_f(y1, c->yt, i), got = tsr_load_f(y2, c->yt, i);
            const double tol = 1e-5 + 1e-4 * bound[i] + out_eps * (fabs(want) + 1e-3);
            if (!(fabs(got - want) <= tol) && bad++ < 3)
                printf("  %s n%lld c%lld %lldx%lld k%lld %lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld d%lld,%lld g%lld "
                       "fmt%d ffmt%d %s->%s epi%d act%d tile%d stages%d: y[%lld] = %g, want %g (tol %g)\n",
                       k->name, (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k,
                       (long long)c->r, (long long)c->s, (long long)c->sh, (long long)c->sw, (long long)c->pt,
                       (long long)c->pb, (long long)c->pl, (long long)c->pr, (long long)c->dh, (long long)c->dw,
                       (long long)c->g, (int)c->fmt, (int)c->ffmt, tsr_dtype_name(c->dt), tsr_dtype_name(c->yt),
                       c->epi, (int)c->act, s->v[0], s->v[1], (long long)i, got, want, tol);
        }
        fflush(stdout);
        ck_assert_msg(bad == 0, "%s: %lld outputs differ from the reference", k->name, (long long)bad);
        ran = 1;
    }
    tt_free(ctx, dx), tt_free(ctx, dw), tt_free(ctx, dy), tt_free(ctx, dbias), tt_free(ctx, dres);
    free(x), free(w), free(y1), free(y2), free(res), free(bias), free(ax), free(aw), free(bound);
    return ran;
}

#define F32 TSR_F32, TSR_F32
#define H16 TSR_F16, TSR_F16
#define B16 TSR_BF16, TSR_BF16
#define NHWC_OHWI TSR_NHWC, TSR_FILTER_OHWI
static const ccase cases[] = {
    /* n  c   h   w   k   r  s sh sw pt pb pl pr dh dw  g */
    /* tensor-core shapes: channels per group % 8 == 0 */
    {2, 16, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NHWC_OHWI, TSR_F16, TSR_F32, EPI_BIAS, 0},
    {1, 32, 11, 13, 19, 3, 3, 2, 2, 1, 0, 2, 1, 1, 1, 1, NHWC_OHWI, H16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 24, 12, 10, 40, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, NHWC_OHWI, B16, EPI_ALL, TSR_ACT_SILU},
    {1, 64, 14, 14, 136, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, H16, EPI_RES, 0},
    {3, 64, 9, 9, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NHWC_OHWI, TSR_BF16, TSR_F32, EPI_ALL, TSR_ACT_GELU_ERF},
    {1, 16, 7, 7, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, NHWC_OHWI, H16, EPI_BIAS, 0},
    {2, 48, 5, 6, 72, 3, 3, 1, 2, 3, 2, 4, 3, 1, 1, 3, NHWC_OHWI, B16, EPI_RES_INPLACE, 0},
    {1, 40, 15, 15, 264, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, H16, EPI_ALL, TSR_ACT_TANH},
    {2, 8, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, H16, EPI_NONE, 0},
    {1, 8, 30, 29, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, NHWC_OHWI, B16, EPI_BIAS_ACT, TSR_ACT_GELU_TANH},
    /* SIMT: f32, odd channels, the 3-channel stem */
    {1, 3, 23, 23, 20, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, NHWC_OHWI, TSR_F16, TSR_F16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 13, 5, 7, 19, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 17, 9, 11, 67, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NHWC_OHWI, F32, EPI_BIAS, 0},
    {2, 9, 10, 9, 33, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, NHWC_OHWI, F32, EPI_ALL, TSR_ACT_SILU},
    {1, 24, 8, 8, 40, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 12, 7, 7, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, NHWC_OHWI, F32, EPI_BIAS, 0},
    {1, 6, 5, 4, 9, 3, 3, 1, 1, 3, 2, 4, 3, 1, 1, 1, NHWC_OHWI, TSR_BF16, TSR_F32, EPI_NONE, 0},
    {1, 8, 12, 10, 17, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, NHWC_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_GELU_ERF},
    /* depthwise */
    {2, 37, 9, 8, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 37, NHWC_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 32, 10, 10, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32, NHWC_OHWI, H16, EPI_RES_INPLACE, 0},
    {1, 19, 11, 13, 19, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 19, TSR_NHWC, TSR_FILTER_HWIO, B16, EPI_ALL, TSR_ACT_SIGMOID},
    {1, 20, 5, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, TSR_NHWC, TSR_FILTER_OIHW, TSR_F16, TSR_F32, EPI_ALL, TSR_ACT_RELU},
    /* declined by every kernel here (NCHW, HWIO with groups): the direct kernel's */
    {2, 11, 6, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, F32, EPI_ALL, TSR_ACT_GELU_TANH},
};

static const char *kernels[] = {"conv2d.sm80.igemm_tc", "conv2d.sm80.igemm_simt", "conv2d.sm80.depthwise"};

START_TEST(kernels_knobs_shapes) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    int ran[3] = {0, 0, 0};
    for (size_t ki = 0; ki < 3; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            tsr_problem p;
            memset(&p, 0, sizeof p);
            p.op = TSR_OP_CONV2D;
            desc_of(&cases[ci], &p.u.conv.d);
            tsr_conv2d_output_shape(&p.u.conv.d, &p.u.conv.p, &p.u.conv.q);
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            if (k->default_schedule) k->default_schedule(&p, ctx, &s);
            ran[ki] += check(ctx, ref, k, &cases[ci], &s);
            /* every knob value: tile x stages */
            for (int kn = 0; k->num_knobs == 2 && kn < k->knobs[0].num_values; kn++)
                for (int sv = 0; sv < k->knobs[1].num_values; sv++) {
                    s.v[0] = k->knobs[0].values[kn], s.v[1] = k->knobs[1].values[sv];
                    ran[ki] += check(ctx, ref, k, &cases[ci], &s);
                }
        }
    }
    printf("conv_cuda: igemm_tc %d, igemm_simt %d, depthwise %d kernel runs checked\n", ran[0], ran[1], ran[2]);
    ck_assert_int_ge(ran[0], 100);
    ck_assert_int_ge(ran[1], 15);
    ck_assert_int_ge(ran[2], 4);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Through the public API: dispatch on a CUDA context picks the kernels
 * above for what they take and the direct kernel for the rest; the
 * ResNet-50-like layer sizes with the default schedule. */
START_TEST(dispatch_and_defaults) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const ccase big[] = {
        {4, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NHWC_OHWI, H16, EPI_BIAS_ACT, TSR_ACT_RELU},
        {2, 256, 14, 14, 1024, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, B16, EPI_ALL, TSR_ACT_RELU},
        {2, 3, 64, 64, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, NHWC_OHWI, H16, EPI_BIAS_ACT, TSR_ACT_RELU},
    };
    int ran = 0;
    char why[200];
    for (size_t ci = 0; ci < sizeof big / sizeof big[0]; ci++) {
        tsr_problem p;
        memset(&p, 0, sizeof p);
        p.op = TSR_OP_CONV2D;
        desc_of(&big[ci], &p.u.conv.d);
        tsr_conv2d_output_shape(&p.u.conv.d, &p.u.conv.p, &p.u.conv.q);
        p.u.conv.x = p.u.conv.w = (void *)(uintptr_t)256; /* aligned, never read by select */
        const tsr_kernel *k = tsr_dispatch_select(ctx, &p, why, sizeof why);
        ck_assert_msg(k != NULL, "%s", why);
        ck_assert_str_eq(k->name, ci == 2 ? "conv2d.sm80.igemm_simt" : "conv2d.sm80.igemm_tc");
        tsr_schedule s;
        memset(&s, 0, sizeof s);
        if (k->default_schedule) k->default_schedule(&p, ctx, &s);
        ran += check(ctx, ref, k, &big[ci], &s);
    }
    ck_assert_int_eq(ran, 3);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conv_cuda");
    TCase *tc = tcase_create("sm80");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, kernels_knobs_shapes);
    tcase_add_test(tc, dispatch_and_defaults);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
