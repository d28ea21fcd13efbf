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

#include "conv_check.h"

/* Runs kernel k with schedule s on device copies of the case's buffers;
 * returns 1 when the kernel took the case and the schedule applied. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const conv_case *c, const tsr_schedule *s) {
    conv_data t;
    tt_conv_setup(ref, c, &t);
    /* the kernel's operands on the device: the epilogue's pointers too */
    const size_t xb = (size_t)t.xn * t.es, wb = (size_t)t.wn * t.es, yb = (size_t)t.yn * t.ys;
    void *dx = tt_upload(ctx, t.x, xb), *dw = tt_upload(ctx, t.w, wb);
    void *dy = tt_upload(ctx, t.y, yb), *dbias = tt_upload(ctx, t.bias, (size_t)c->k * t.ys + 1);
    void *dres = tt_upload(ctx, t.res, yb);
    tsr_problem p = t.p;
    tsr_epilogue *e = &p.u.conv.d.epilogue;
    for (int i = 0; i < e->num_steps; i++) {
        if (e->steps[i].data == t.bias) e->steps[i].data = dbias;
        else if (e->steps[i].data == t.res) e->steps[i].data = dres;
        else if (e->steps[i].data == t.y) e->steps[i].data = dy;
    }
    p.u.conv.x = dx, p.u.conv.w = dw, p.u.conv.y = dy;
    int ran = 0;
    char why[200];
    if (tsr_kernel_supports(k, &p, ctx, why, sizeof why) && (!k->schedule_valid || k->schedule_valid(&p, ctx, s))) {
        ck_assert_msg(k->run(ctx, &p, s) == TSR_OK, "%s", tsr_last_error());
        ck_assert_int_eq(tsr_synchronize(ctx), TSR_OK);
        tt_download(ctx, t.y, dy, yb);
        char knobs[48];
        snprintf(knobs, sizeof knobs, "tile%d stages%d", s->v[0], s->v[1]);
        tt_conv_compare(&t, c, k->name, knobs);
        ran = 1;
    }
    tt_free(ctx, dx), tt_free(ctx, dw), tt_free(ctx, dy), tt_free(ctx, dbias), tt_free(ctx, dres);
    tt_conv_release(&t);
    return ran;
}

#define F32 TSR_F32, TSR_F32
#define H16 TSR_F16, TSR_F16
#define B16 TSR_BF16, TSR_BF16
#define NHWC_OHWI TSR_NHWC, TSR_FILTER_OHWI
static const conv_case cases[] = {
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
    tsr_context *ctx = tt_cuda_context("conv_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    int ran[3] = {0, 0, 0};
    for (size_t ki = 0; ki < 3; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            tsr_schedule s;
            tt_conv_default_schedule(k, ctx, &cases[ci], &s);
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
    tsr_context *ctx = tt_cuda_context("conv_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const conv_case big[] = {
        {4, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, NHWC_OHWI, H16, EPI_BIAS_ACT, TSR_ACT_RELU},
        {2, 256, 14, 14, 1024, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, NHWC_OHWI, B16, EPI_ALL, TSR_ACT_RELU},
        {2, 3, 64, 64, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, NHWC_OHWI, H16, EPI_BIAS_ACT, TSR_ACT_RELU},
    };
    int ran = 0;
    char why[200];
    for (size_t ci = 0; ci < sizeof big / sizeof big[0]; ci++) {
        tsr_problem p;
        tt_conv_problem_of(&big[ci], &p);
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
