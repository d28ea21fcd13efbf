/* OpenCL attention host side: the tiled online-softmax kernel of
 * opencl.cl; its knobs are the query and key block sizes. */
#include <stdio.h>
#include <string.h>

#include "../../arch/opencl/runtime.h"

static const int bq_values[] = {8, 16, 32, 64};
static const int bk_values[] = {8, 16, 32, 64};
static const tsr_knob flash_knobs[] = {{"bq", 4, bq_values}, {"bk", 4, bk_values}};
enum { K_BQ, K_BK };

static bool flash_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (ctx->backend != TSR_BACKEND_OPENCL)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.opencl.flash runs on opencl"), false;
    if (p->u.attention.d.head_dim > 512)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.opencl.flash: head_dim (%lld) > 512",
                       (long long)p->u.attention.d.head_dim), false;
    return true;
}

static bool flash_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    const tsr_ocl_state *o = tsr_ocl(ctx);
    const int bq = s->v[K_BQ], bk = s->v[K_BK];
    return bq > 0 && bk > 0 && (size_t)bq <= o->max_wg &&
           (cl_ulong)2 * (cl_ulong)bk * (cl_ulong)p->u.attention.d.head_dim * 4 <= o->local_mem;
}

static void flash_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_attention_desc *d = &p->u.attention.d;
    s->v[K_BQ] = d->seq_q >= 32 ? 32 : d->seq_q > 8 ? 16 : 8;
    s->v[K_BK] = d->seq_kv >= 32 ? 32 : 16;
    if (!flash_valid(p, ctx, s)) s->v[K_BQ] = s->v[K_BK] = 8;
}

static tsr_status flash_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_attention_problem *a = &p->u.attention;
    const tsr_attention_desc *d = &a->d;
    tsr_schedule t = *s;
    if (!flash_valid(p, ctx, &t)) flash_default(p, ctx, &t);
    if (d->seq_q == 0) return TSR_OK;
    char o[128] = "";
    tsr_ocl_define(o, sizeof o, "HD", d->head_dim);
    tsr_ocl_define(o, sizeof o, "BQ", t.v[K_BQ]);
    tsr_ocl_define(o, sizeof o, "BK", t.v[K_BK]);
    cl_mem q = tsr_ocl_mem(a->q), k = tsr_ocl_mem(a->k), v = tsr_ocl_mem(a->v), out = tsr_ocl_mem(a->o);
    cl_mem mask = tsr_ocl_mem(d->mask), lse = tsr_ocl_mem(d->lse);
    cl_int dt = (cl_int)d->dtype, causal = (cl_int)d->causal, m_t = (cl_int)d->mask_dtype;
    cl_long4 qs = {{d->q_strides[0], d->q_strides[1], d->q_strides[2], 0}};
    cl_long4 ks = {{d->k_strides[0], d->k_strides[1], d->k_strides[2], 0}};
    cl_long4 vs = {{d->v_strides[0], d->v_strides[1], d->v_strides[2], 0}};
    cl_long4 os = {{d->o_strides[0], d->o_strides[1], d->o_strides[2], 0}};
    cl_long4 ms = {{d->mask_strides[0], d->mask_strides[1], d->mask_strides[2], 0}};
    cl_long hq = d->heads_q, hkv = d->heads_kv, sq = d->seq_q, skv = d->seq_kv;
    cl_float scale = d->scale;
    const tsr_ocl_arg args[] = {TSR_CL_ARG(q), TSR_CL_ARG(k), TSR_CL_ARG(v), TSR_CL_ARG(out), TSR_CL_ARG(dt),
                                TSR_CL_ARG(qs), TSR_CL_ARG(ks), TSR_CL_ARG(vs), TSR_CL_ARG(os), TSR_CL_ARG(hq),
                                TSR_CL_ARG(hkv), TSR_CL_ARG(sq), TSR_CL_ARG(skv), TSR_CL_ARG(scale),
                                TSR_CL_ARG(causal), TSR_CL_ARG(mask), TSR_CL_ARG(m_t), TSR_CL_ARG(ms),
                                TSR_CL_ARG(lse)};
    const size_t local[3] = {(size_t)t.v[K_BQ], 1, 1};
    const size_t global[3] = {(size_t)((d->seq_q + t.v[K_BQ] - 1) / t.v[K_BQ] * t.v[K_BQ]), (size_t)d->heads_q,
                              (size_t)d->batch};
    const char *srcs[] = {tsr_cl_common, tsr_cl_attention};
    return tsr_ocl_run(ctx, srcs, 2, o, "flash", 3, global, local, (int)(sizeof args / sizeof args[0]), args,
                       "attention.opencl.flash");
}

const tsr_kernel tsr_attention_opencl_flash = {
    .name = "attention.opencl.flash", .op = TSR_OP_ATTENTION, .backend = TSR_BACKEND_OPENCL, .arch = "opencl",
    .supports = flash_supports, .num_knobs = 2, .knobs = flash_knobs,
    .default_schedule = flash_default, .schedule_valid = flash_valid, .run = flash_run,
};
