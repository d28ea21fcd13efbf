/* OpenCL elementwise host side: fused chains, softmax, layernorm and
 * rmsnorm (kernels of opencl.cl). The row kernels' knob is the work-group
 * size per row. */
#include <stdio.h>
#include <string.h>

#include "../../arch/opencl/runtime.h"

static const char *const ew_srcs[] = {tsr_cl_common, tsr_cl_elementwise};

static bool on_opencl(const tsr_context *ctx, const char *name, char *why, size_t why_len) {
    if (ctx->backend == TSR_BACKEND_OPENCL) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s runs on opencl", name);
    return false;
}

static bool chain_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    return on_opencl(ctx, "chain.opencl", why, why_len);
}

static cl_long8 long8_of(const int64_t *v, int n) {
    cl_long8 r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < n && i < 8; i++) r.s[i] = v[i];
    return r;
}

static tsr_status chain_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_chain_problem *c = &prob->u.chain;
    const tsr_chain_desc *ch = &c->chain;
    const int nd = c->y.ndim;
    cl_mem x = tsr_ocl_mem(c->xp), y = tsr_ocl_mem(c->yp), ops[4] = {0};
    cl_int x_t = (cl_int)c->x.dtype, y_t = (cl_int)c->y.dtype, ndim = nd, nsteps = ch->num_steps;
    cl_long8 xs = long8_of(c->x.strides, nd), ys = long8_of(c->y.strides, nd), shape = long8_of(c->y.shape, nd);
    cl_long8 os[4];
    cl_int4 o_t = {{0, 0, 0, 0}};
    for (int k = 0; k < 4; k++) {
        os[k] = k < ch->num_operands ? long8_of(ch->operands[k].strides, nd) : long8_of(NULL, 0);
        if (k < ch->num_operands) ops[k] = tsr_ocl_mem(c->operands[k]), o_t.s[k] = (cl_int)ch->operands[k].dtype;
    }
    cl_int16 codes, opnd;
    cl_float16 scal;
    memset(&codes, 0, sizeof codes), memset(&opnd, 0, sizeof opnd), memset(&scal, 0, sizeof scal);
    for (int s = 0; s < ch->num_steps; s++) {
        const tsr_chain_step *st = &ch->steps[s];
        codes.s[s] = (cl_int)st->kind * 64 + (st->kind == TSR_STEP_UNARY ? (cl_int)st->unary : (cl_int)st->binary);
        opnd.s[s] = st->operand;
        scal.s[s] = st->scalar;
    }
    const tsr_ocl_arg args[] = {TSR_CL_ARG(x), TSR_CL_ARG(x_t), TSR_CL_ARG(xs), TSR_CL_ARG(y), TSR_CL_ARG(y_t),
                                TSR_CL_ARG(ys), TSR_CL_ARG(shape), TSR_CL_ARG(ndim), TSR_CL_ARG(ops[0]),
                                TSR_CL_ARG(ops[1]), TSR_CL_ARG(ops[2]), TSR_CL_ARG(ops[3]), TSR_CL_ARG(o_t),
                                TSR_CL_ARG(os[0]), TSR_CL_ARG(os[1]), TSR_CL_ARG(os[2]), TSR_CL_ARG(os[3]),
                                TSR_CL_ARG(nsteps), TSR_CL_ARG(codes), TSR_CL_ARG(opnd), TSR_CL_ARG(scal)};
    int64_t outer = 1;
    for (int i = 0; i < nd - 1; i++) outer *= c->y.shape[i];
    const size_t global[2] = {(size_t)(nd ? c->y.shape[nd - 1] : 1), (size_t)outer};
    return tsr_ocl_run(ctx, ew_srcs, 2, "", "chain", 2, global, NULL, (int)(sizeof args / sizeof args[0]), args,
                       "chain.opencl");
}

const tsr_kernel tsr_chain_opencl = {
    .name = "chain.opencl", .op = TSR_OP_CHAIN, .backend = TSR_BACKEND_OPENCL, .arch = "opencl",
    .supports = chain_supports, .run = chain_run,
};

/* ------------------------------------------------------------ row kernels */

static const int rw_values[] = {16, 32, 64, 128, 256};
static const tsr_knob row_knobs[] = {{"rw", 5, rw_values}};

static bool row_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    return on_opencl(ctx, tsr_op_name(p->op), why, why_len);
}

static bool row_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p;
    const int rw = s->v[0];
    return rw >= 1 && (rw & (rw - 1)) == 0 && (size_t)rw <= tsr_ocl(ctx)->max_wg;
}

static void row_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const int64_t cols = p->u.rowwise.d.cols;
    s->v[0] = cols >= 4096 ? 256 : cols >= 512 ? 64 : 16;
    while (!row_valid(p, ctx, s) && s->v[0] > 1) s->v[0] /= 2;
}

static tsr_status row_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_rowwise_problem *r = &p->u.rowwise;
    const tsr_rowwise_desc *d = &r->d;
    tsr_schedule t = *s;
    if (!row_valid(p, ctx, &t)) row_default(p, ctx, &t);
    char o[64] = "";
    tsr_ocl_define(o, sizeof o, "RW", t.v[0]);
    cl_mem x = tsr_ocl_mem(r->x), y = tsr_ocl_mem(r->y), gamma = tsr_ocl_mem(r->gamma), beta = tsr_ocl_mem(r->beta);
    cl_int x_t = (cl_int)d->x_dtype, y_t = (cl_int)d->y_dtype, center = p->op == TSR_OP_LAYERNORM;
    cl_long xrs = d->x_row_stride, yrs = d->y_row_stride, cols = d->cols;
    cl_float eps = d->epsilon;
    const tsr_ocl_arg args[] = {TSR_CL_ARG(x), TSR_CL_ARG(x_t), TSR_CL_ARG(xrs), TSR_CL_ARG(y), TSR_CL_ARG(y_t),
                                TSR_CL_ARG(yrs), TSR_CL_ARG(cols), TSR_CL_ARG(center), TSR_CL_ARG(gamma),
                                TSR_CL_ARG(beta), TSR_CL_ARG(eps)};
    const size_t local[2] = {(size_t)t.v[0], 1}, global[2] = {(size_t)t.v[0], (size_t)d->rows};
    const bool softmax = p->op == TSR_OP_SOFTMAX;
    return tsr_ocl_run(ctx, ew_srcs, 2, o, softmax ? "softmax" : "norm", 2, global, local, softmax ? 7 : 11, args,
                       softmax ? "softmax.opencl" : "norm.opencl");
}

#define ROW_KERNEL(sym, kname, kop) \
    const tsr_kernel sym = {.name = kname, .op = kop, .backend = TSR_BACKEND_OPENCL, .arch = "opencl", \
                            .supports = row_supports, .num_knobs = 1, .knobs = row_knobs, \
                            .default_schedule = row_default, .schedule_valid = row_valid, .run = row_run}

ROW_KERNEL(tsr_softmax_opencl, "softmax.opencl", TSR_OP_SOFTMAX);
ROW_KERNEL(tsr_layernorm_opencl, "layernorm.opencl", TSR_OP_LAYERNORM);
ROW_KERNEL(tsr_rmsnorm_opencl, "rmsnorm.opencl", TSR_OP_RMSNORM);
