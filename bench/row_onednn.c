/* oneDNN 2.6 primitives for the row ops (see row_onednn.h). One primitive
 * and its memory objects per case; data handles are set per call. */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "row_onednn.h"

struct row_prim {
    int op;
    dnnl_primitive_t prim, mul; /* mul: SwiGLU's second primitive */
    dnnl_memory_t src, dst, g, scale, shift;
};

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_data_type_t dnnl_type(tsr_dtype t) {
    return t == TSR_BF16 ? dnnl_bf16 : t == TSR_F16 ? dnnl_f16 : dnnl_f32;
}

row_prim *row_onednn_create(int op, tsr_dtype t, int64_t rows, int64_t cols, float epsilon, const char **why) {
    *why = NULL;
    if (op == ROW_ONEDNN_RMSNORM) return *why = "oneDNN 2.6 has no RMS normalization", NULL;
    if (!engine && (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
                    dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success))
        return *why = "no oneDNN CPU engine", NULL;
    row_prim *p = calloc(1, sizeof *p);
    if (!p) return *why = "out of memory", NULL;
    p->op = op;
    dnnl_memory_desc_t md, vec_md;
    const dnnl_dims_t dims = {rows, cols}, vdims = {cols};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_type(t), dnnl_ab);
    if (!st) st = dnnl_memory_desc_init_by_tag(&vec_md, 1, vdims, dnnl_f32, dnnl_a);
    if (!st && op == ROW_ONEDNN_SOFTMAX) {
        dnnl_softmax_desc_t d;
        st = dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1);
        if (!st) st = dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL);
    } else if (!st && op == ROW_ONEDNN_LAYERNORM) {
        dnnl_layer_normalization_desc_t d;
        st = dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md, NULL, epsilon,
                                                        dnnl_use_scale | dnnl_use_shift);
        if (!st) st = dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL);
    } else if (!st && op == ROW_ONEDNN_GELU_ERF) {
        dnnl_eltwise_desc_t d;
        st = dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_gelu_erf, &md, 0.0f, 0.0f);
        if (!st) st = dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL);
    } else if (!st) {
        /* swish(x) = x sigmoid(x) into y, then y * g: two jit primitives, two
         * passes. (A binary-mul post-op on the eltwise primitive would be one
         * pass, but oneDNN 2.6 runs that through its slow reference code.) */
        dnnl_eltwise_desc_t d;
        dnnl_binary_desc_t bd;
        dnnl_primitive_desc_t bpd = NULL;
        st = dnnl_binary_desc_init(&bd, dnnl_binary_mul, &md, &md, &md);
        if (!st) st = dnnl_primitive_desc_create(&bpd, &bd, NULL, engine, NULL);
        if (!st) st = dnnl_primitive_create(&p->mul, bpd);
        if (bpd) dnnl_primitive_desc_destroy(bpd);
        if (!st) st = dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_swish, &md, 1.0f, 0.0f);
        if (!st) st = dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL);
    }
    if (!st) st = dnnl_primitive_create(&p->prim, pd);
    if (!st) st = dnnl_memory_create(&p->src, &md, engine, DNNL_MEMORY_NONE);
    if (!st) st = dnnl_memory_create(&p->dst, &md, engine, DNNL_MEMORY_NONE);
    if (!st && op == ROW_ONEDNN_SWIGLU) st = dnnl_memory_create(&p->g, &md, engine, DNNL_MEMORY_NONE);
    if (!st && op == ROW_ONEDNN_LAYERNORM) st = dnnl_memory_create(&p->scale, &vec_md, engine, DNNL_MEMORY_NONE);
    if (!st && op == ROW_ONEDNN_LAYERNORM) st = dnnl_memory_create(&p->shift, &vec_md, engine, DNNL_MEMORY_NONE);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (st) {
        row_onednn_destroy(p);
        return *why = "oneDNN has no such primitive for this dtype and shape", NULL;
    }
    return p;
}

int row_onednn_run(row_prim *p, const void *x, const void *g, const float *gamma, const float *beta, void *y) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}};
    int n = 2;
    if (dnnl_memory_set_data_handle(p->src, (void *)x) || dnnl_memory_set_data_handle(p->dst, y)) return -1;
    if (p->op == ROW_ONEDNN_SWIGLU) {
        if (dnnl_memory_set_data_handle(p->g, (void *)g) || dnnl_primitive_execute(p->prim, stream, n, args))
            return -1;
        dnnl_exec_arg_t margs[3] = {{DNNL_ARG_SRC_0, p->dst}, {DNNL_ARG_SRC_1, p->g}, {DNNL_ARG_DST, p->dst}};
        return dnnl_primitive_execute(p->mul, stream, 3, margs) || dnnl_stream_wait(stream) ? -1 : 0;
    }
    if (p->op == ROW_ONEDNN_LAYERNORM) {
        if (dnnl_memory_set_data_handle(p->scale, (void *)gamma) || dnnl_memory_set_data_handle(p->shift, (void *)beta))
            return -1;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCALE, p->scale};
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SHIFT, p->shift};
    }
    return dnnl_primitive_execute(p->prim, stream, n, args) || dnnl_stream_wait(stream) ? -1 : 0;
}

void row_onednn_destroy(row_prim *p) {
    if (!p) return;
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->mul) dnnl_primitive_destroy(p->mul);
    dnnl_memory_t m[5] = {p->src, p->dst, p->g, p->scale, p->shift};
    for (int i = 0; i < 5; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    free(p);
}
