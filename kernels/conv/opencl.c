/* OpenCL conv2d host side: the NHWC implicit GEMM (igemm) with its schedule
 * space, and the direct kernel for every other case (NCHW, groups,
 * depthwise, f16/bf16 inputs). */
#include <stdio.h>
#include <string.h>

#include "../../arch/opencl/runtime.h"

static bool on_opencl(const tsr_context *ctx, const char *name, char *why, size_t why_len) {
    if (ctx->backend == TSR_BACKEND_OPENCL) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s runs on opencl", name);
    return false;
}

/* CONV_SIZES of opencl.cl, in order. */
typedef struct conv_sizes {
    cl_long v[15];
} conv_sizes;

static int sizes_fill(conv_sizes *z, const tsr_conv2d_problem *cp, tsr_ocl_arg *args) {
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t v[15] = {d->n, d->c, d->h, d->w, d->k, d->r, d->s, cp->p, cp->q,
                           d->stride_h, d->stride_w, d->pad_top, d->pad_left, d->dilation_h, d->dilation_w};
    for (int i = 0; i < 15; i++) z->v[i] = v[i], args[i] = TSR_CL_ARG(z->v[i]);
    return 15;
}

static const char *const conv_srcs[] = {tsr_cl_common, tsr_cl_conv};

/* ----------------------------------------------------------------- igemm */

static const int rm_values[] = {2, 4, 6, 8};
static const int vw_values[] = {4, 8, 16};
static const tsr_knob igemm_knobs[] = {{"rm", 4, rm_values}, {"vw", 3, vw_values}};
enum { K_RM, K_VW };

static bool igemm_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (!on_opencl(ctx, "conv2d.opencl.igemm", why, why_len)) return false;
    const tsr_conv2d_desc *d = &p->u.conv.d;
    if (d->format != TSR_NHWC || d->groups != 1 || d->x_dtype != TSR_F32)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "conv2d.opencl.igemm takes NHWC f32 x, one group"), false;
    return true;
}

static bool igemm_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p, (void)ctx;
    return s->v[K_RM] >= 1 && s->v[K_RM] <= 8 && (s->v[K_VW] == 4 || s->v[K_VW] == 8 || s->v[K_VW] == 16);
}

static void igemm_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)ctx;
    s->v[K_RM] = 6;
    s->v[K_VW] = p->u.conv.d.k >= 16 ? 8 : 4;
}

static tsr_status igemm_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    tsr_schedule t = *s;
    if (!igemm_valid(p, ctx, &t)) igemm_default(p, ctx, &t);
    const int vw = t.v[K_VW], rm = t.v[K_RM];
    /* the filter as HWIO f32 with K padded to a multiple of vw */
    cl_long KP = (d->k + vw - 1) / vw * vw, Kl = d->k, Cg = d->c, R = d->r, S = d->s;
    const size_t rows = (size_t)(d->r * d->s * d->c);
    cl_mem wt;
    tsr_status st = tsr_ocl_workspace(ctx, rows * (size_t)KP * sizeof(float), &wt);
    if (st) return st;
    cl_mem wsrc = tsr_ocl_mem(cp->w);
    cl_int w_t = (cl_int)d->w_dtype, ff = (cl_int)d->filter_format;
    const tsr_ocl_arg targs[] = {TSR_CL_ARG(wsrc), TSR_CL_ARG(w_t), TSR_CL_ARG(ff), TSR_CL_ARG(Kl), TSR_CL_ARG(Cg),
                                 TSR_CL_ARG(R), TSR_CL_ARG(S), TSR_CL_ARG(KP), TSR_CL_ARG(wt)};
    const size_t tglobal[2] = {(size_t)KP, rows};
    st = tsr_ocl_run(ctx, conv_srcs, 2, "", "filter_hwio", 2, tglobal, NULL, 9, targs, "conv2d.opencl.igemm");
    if (st) return st;

    char o[128] = "";
    tsr_ocl_define(o, sizeof o, "VW", vw);
    tsr_ocl_define(o, sizeof o, "RM", rm);
    cl_mem x = tsr_ocl_mem(cp->x), y = tsr_ocl_mem(cp->y);
    cl_int y_t = (cl_int)d->y_dtype;
    tsr_ocl_arg args[5 + 15 + TSR_OCL_EPI_ARGS] = {TSR_CL_ARG(x), TSR_CL_ARG(wt), TSR_CL_ARG(KP), TSR_CL_ARG(y),
                                                   TSR_CL_ARG(y_t)};
    conv_sizes z;
    int n = 5 + sizes_fill(&z, cp, args + 5);
    tsr_ocl_epi ev;
    tsr_ocl_epilogue(&d->epilogue, &ev, args + n);
    const size_t global[2] = {(size_t)(KP / vw), (size_t)((d->n * cp->p * cp->q + rm - 1) / rm)};
    return tsr_ocl_run(ctx, conv_srcs, 2, o, "igemm", 2, global, NULL, n + TSR_OCL_EPI_ARGS, args,
                       "conv2d.opencl.igemm");
}

const tsr_kernel tsr_conv2d_opencl_igemm = {
    .name = "conv2d.opencl.igemm", .op = TSR_OP_CONV2D, .backend = TSR_BACKEND_OPENCL, .arch = "opencl",
    .supports = igemm_supports, .num_knobs = 2, .knobs = igemm_knobs,
    .default_schedule = igemm_default, .schedule_valid = igemm_valid, .run = igemm_run,
};

/* ---------------------------------------------------------------- direct */

static bool direct_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    return on_opencl(ctx, "conv2d.opencl.direct", why, why_len);
}

static tsr_status direct_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    cl_mem x = tsr_ocl_mem(cp->x), w = tsr_ocl_mem(cp->w), y = tsr_ocl_mem(cp->y);
    cl_int x_t = (cl_int)d->x_dtype, w_t = (cl_int)d->w_dtype, y_t = (cl_int)d->y_dtype;
    cl_int nhwc = d->format == TSR_NHWC, ff = (cl_int)d->filter_format;
    cl_long groups = d->groups;
    tsr_ocl_arg args[9 + 15 + TSR_OCL_EPI_ARGS] = {TSR_CL_ARG(x), TSR_CL_ARG(x_t), TSR_CL_ARG(w), TSR_CL_ARG(w_t),
                                                   TSR_CL_ARG(y), TSR_CL_ARG(y_t), TSR_CL_ARG(nhwc), TSR_CL_ARG(ff),
                                                   TSR_CL_ARG(groups)};
    conv_sizes z;
    int n = 9 + sizes_fill(&z, cp, args + 9);
    tsr_ocl_epi ev;
    tsr_ocl_epilogue(&d->epilogue, &ev, args + n);
    const size_t global[1] = {(size_t)(d->n * d->k * cp->p * cp->q)};
    return tsr_ocl_run(ctx, conv_srcs, 2, "", "direct", 1, global, NULL, n + TSR_OCL_EPI_ARGS, args,
                       "conv2d.opencl.direct");
}

const tsr_kernel tsr_conv2d_opencl_direct = {
    .name = "conv2d.opencl.direct", .op = TSR_OP_CONV2D, .backend = TSR_BACKEND_OPENCL, .arch = "opencl",
    .supports = direct_supports, .run = direct_run,
};
