/* GEMM op front: validate every argument, normalise to a row-major problem,
 * dispatch. Nothing is written before validation has passed. */
#include <string.h>

#include "validate.h"

void tsr_gemm_desc_init(tsr_gemm_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->layout = TSR_ROW_MAJOR;
    d->a_dtype = d->b_dtype = d->c_dtype = TSR_F32;
    d->batch = 1;
    d->alpha = 1.0f;
}

static bool dtypes_ok(const tsr_gemm_desc *d) {
    if (d->a_dtype != d->b_dtype) return false;
    switch (d->a_dtype) {
    case TSR_F32: return d->c_dtype == TSR_F32;
    case TSR_F16: return d->c_dtype == TSR_F32 || d->c_dtype == TSR_F16;
    case TSR_BF16: return d->c_dtype == TSR_F32 || d->c_dtype == TSR_BF16;
    case TSR_I8: return d->c_dtype == TSR_I32;
    default: return false;
    }
}

/* One operand as the user sees it: stored rows x cols in the user's layout,
 * converted to the row-major view. */
typedef struct operand {
    const char *name;
    const char *cols_name; /* what the row-major view's columns count: "k", "m", "n" */
    int64_t rows, cols;    /* row-major view */
    int64_t ld, stride, min_ld;
} operand;

static tsr_status check_operand(operand *o, const char *layout, int64_t ld, int64_t stride,
                                int64_t batch, tsr_dtype t, int64_t *bytes) {
    if (ld < 0) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: ld%s (%lld) < 0", o->name, (long long)ld);
    if (stride < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: stride_%s (%lld) < 0", o->name, (long long)stride);
    o->ld = ld ? ld : (o->cols > 0 ? o->cols : 1);
    if (o->ld < o->cols)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: ld%s (%lld) < %s (%lld) for %s %c%s",
                        o->name, (long long)o->ld, o->cols_name, (long long)o->cols, layout,
                        o->name[0] - 32, o->name + 1);
    int64_t one;
    if (!tsr_matrix_span(o->rows, o->cols, o->ld, 1, 0, &one))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: the size of %s overflows int64", o->name);
    o->stride = stride ? stride : one;
    if (batch > 1 && stride && stride < one && o->name[0] == 'c')
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "gemm: stride_c (%lld) < the extent of one C matrix (%lld): batch outputs would overlap",
                        (long long)stride, (long long)one);
    int64_t elems;
    if (!tsr_matrix_span(o->rows, o->cols, o->ld, batch, o->stride, &elems) ||
        !tsr_span_bytes(elems, t, bytes))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: the byte size of %s overflows int64", o->name);
    return TSR_OK;
}

/* Validates d (and the pointers when check_ptrs) and fills p. */
static tsr_status gemm_prepare(const tsr_context *ctx, const tsr_gemm_desc *d, const void *a,
                               const void *b, void *c, bool check_ptrs, tsr_problem *p) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, "gemm", "tsr_gemm_desc_init");
    if (st) return st;
    if ((unsigned)d->layout > TSR_COL_MAJOR)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: layout (%d) is not a tsr_layout", (int)d->layout);
    if ((unsigned)d->trans_a > TSR_TRANS || (unsigned)d->trans_b > TSR_TRANS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: trans_a (%d) / trans_b (%d) must be tsr_transpose values",
                        (int)d->trans_a, (int)d->trans_b);
    if (d->m < 0 || d->n < 0 || d->k < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: m (%lld), n (%lld) and k (%lld) must be >= 0",
                        (long long)d->m, (long long)d->n, (long long)d->k);
    if (d->batch < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: batch (%lld) must be >= 1", (long long)d->batch);
    if (!tsr_dtype_valid(d->a_dtype) || !tsr_dtype_valid(d->b_dtype) || !tsr_dtype_valid(d->c_dtype))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: a_dtype/b_dtype/c_dtype must be tsr_dtype values");
    if (!dtypes_ok(d))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "gemm: dtypes a=%s b=%s c=%s are not supported (f32*f32->f32, f16*f16->f32|f16, "
                        "bf16*bf16->f32|bf16, i8*i8->i32)",
                        tsr_dtype_name(d->a_dtype), tsr_dtype_name(d->b_dtype), tsr_dtype_name(d->c_dtype));
    st = tsr_epilogue_check(&d->epilogue, "gemm", d->c_dtype);
    if (st) return st;

    bool row = d->layout == TSR_ROW_MAJOR;
    const char *lname = row ? "row-major" : "column-major";
    /* Stored shapes in the user's layout, then as the row-major view. */
    int64_t ar = d->trans_a ? d->k : d->m, ac = d->trans_a ? d->m : d->k;
    int64_t br = d->trans_b ? d->n : d->k, bc = d->trans_b ? d->k : d->n;
    operand A = {"a", row ? (d->trans_a ? "m" : "k") : (d->trans_a ? "k" : "m"),
                 row ? ar : ac, row ? ac : ar, 0, 0, 0};
    operand B = {"b", row ? (d->trans_b ? "k" : "n") : (d->trans_b ? "n" : "k"),
                 row ? br : bc, row ? bc : br, 0, 0, 0};
    operand C = {"c", row ? "n" : "m", row ? d->m : d->n, row ? d->n : d->m, 0, 0, 0};
    int64_t abytes, bbytes, cbytes;
    bool empty = d->m == 0 || d->n == 0;
    if ((st = check_operand(&A, lname, d->lda, d->stride_a, d->batch, d->a_dtype, &abytes)) ||
        (st = check_operand(&B, lname, d->ldb, d->stride_b, d->batch, d->b_dtype, &bbytes)) ||
        (st = check_operand(&C, lname, d->ldc, d->stride_c, d->batch, d->c_dtype, &cbytes)))
        return st;

    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *s = &d->epilogue.steps[i];
        if (s->op != TSR_EPI_RESIDUAL) continue;
        int64_t ld = s->ld ? s->ld : C.ld;
        if (ld < C.cols)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: epilogue.steps[%d].ld (%lld) < %lld for the %s residual",
                            i, (long long)ld, (long long)C.cols, lname);
        int64_t elems, bytes;
        if (!tsr_matrix_span(C.rows, C.cols, ld, d->batch, s->batch_stride ? s->batch_stride : C.stride, &elems) ||
            !tsr_span_bytes(elems, s->dtype, &bytes))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: the residual's byte size overflows int64");
    }
    if (check_ptrs && !empty) {
        if (!c) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: c is NULL");
        if (d->k > 0 && !a) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: a is NULL");
        if (d->k > 0 && !b) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: b is NULL");
        if (ctx->ops->host_addressable && d->k > 0) {
            if (tsr_ranges_overlap(c, cbytes, a, abytes))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: c overlaps a (outputs must not alias inputs)");
            if (tsr_ranges_overlap(c, cbytes, b, bbytes))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "gemm: c overlaps b (outputs must not alias inputs)");
        }
    }

    /* every field is set below: clearing the whole problem union (1.2 KB)
     * was a tenth of a 1x1x1 call */
    p->op = TSR_OP_GEMM;
    tsr_gemm_problem *g = &p->u.gemm;
    g->d = *d;
    g->bias_along_m = false;
    g->d.layout = TSR_ROW_MAJOR;
    g->d.ldc = C.ld;
    g->d.stride_c = C.stride;
    if (row) {
        g->d.lda = A.ld, g->d.stride_a = A.stride, g->a = a;
        g->d.ldb = B.ld, g->d.stride_b = B.stride, g->b = b;
    } else { /* C^T = op(B)^T op(A)^T in row-major terms */
        g->d.m = d->n, g->d.n = d->m;
        g->d.trans_a = d->trans_b, g->d.trans_b = d->trans_a;
        g->d.a_dtype = d->b_dtype, g->d.b_dtype = d->a_dtype;
        g->d.lda = B.ld, g->d.stride_a = B.stride, g->a = b;
        g->d.ldb = A.ld, g->d.stride_b = A.stride, g->b = a;
        g->bias_along_m = true;
    }
    for (int i = 0; i < g->d.epilogue.num_steps; i++) {
        tsr_epilogue_step *s = &g->d.epilogue.steps[i];
        if (s->op != TSR_EPI_RESIDUAL) continue;
        if (!s->ld) s->ld = C.ld;
        if (!s->batch_stride) s->batch_stride = C.stride;
    }
    g->c = c;
    return TSR_OK;
}

tsr_status tsr_gemm(tsr_context *ctx, const tsr_gemm_desc *desc, const void *a, const void *b, void *c) {
    tsr_problem p;
    tsr_status st = gemm_prepare(ctx, desc, a, b, c, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (desc->m == 0 || desc->n == 0) return TSR_OK;
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_gemm_supported(const tsr_context *ctx, const tsr_gemm_desc *desc, char *why, size_t why_len) {
    tsr_problem p;
    return tsr_supported_answer(ctx, gemm_prepare(ctx, desc, NULL, NULL, NULL, false, &p), &p, why, why_len);
}
