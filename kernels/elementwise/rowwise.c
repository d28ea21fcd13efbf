/* Row-wise op fronts: softmax, layernorm, rmsnorm over a rows x cols matrix.
 *
 *  - rows, cols >= 0; either 0 returns TSR_OK touching nothing (pointers may
 *    then be NULL).
 *  - Row strides: 0 means cols, anything else must be >= cols (rows never
 *    overlap each other).
 *  - x_dtype, y_dtype: f32, f16 or bf16; gamma and beta are f32 and may be
 *    NULL (1 and 0).
 *  - epsilon: finite and > 0 for the norms; softmax ignores it.
 *  - On host-addressable backends y may not overlap x, except exactly
 *    (x == y with the same dtype and row stride: in-place), and may not
 *    overlap gamma or beta.
 *
 * tsr_rowwise_supported cannot know which of the three ops the caller means,
 * so it answers for all of them: it validates epsilon as the norms do (the
 * default from tsr_rowwise_desc_init passes) and requires a kernel for each. */
#include <math.h>
#include <string.h>

#include "validate.h"

void tsr_rowwise_desc_init(tsr_rowwise_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->x_dtype = d->y_dtype = TSR_F32;
    d->epsilon = 1e-5f;
}

static tsr_status check_dtype(const char *who, const char *name, tsr_dtype t) {
    if (!tsr_dtype_valid(t))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%d) is not a tsr_dtype", who, name, (int)t);
    if (!tsr_is_float_dtype(t))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s: %s %s is not supported (f32, f16 or bf16)", who, name,
                        tsr_dtype_name(t));
    return TSR_OK;
}

/* 0 becomes cols; returns the byte extent of the matrix in *bytes. */
static tsr_status check_rows(const char *who, const char *name, int64_t *stride, const tsr_rowwise_desc *d,
                             tsr_dtype t, int64_t *bytes) {
    if (*stride < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%lld) < 0", who, name, (long long)*stride);
    if (*stride == 0) *stride = d->cols;
    if (*stride < d->cols)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%lld) < cols (%lld)", who, name, (long long)*stride,
                        (long long)d->cols);
    int64_t elems;
    if (!tsr_matrix_span(d->rows, d->cols, *stride, 1, 0, &elems) || !tsr_span_bytes(elems, t, bytes))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "%s: the byte size of %.1s (%lld rows of %s %lld, %s) overflows int64", who, name,
                        (long long)d->rows, name, (long long)*stride, tsr_dtype_name(t));
    return TSR_OK;
}

/* Validates d (and the pointers when check_ptrs) and fills p; *empty when
 * there is nothing to compute. */
static tsr_status rowwise_prepare(const tsr_context *ctx, tsr_op op, const char *who, const tsr_rowwise_desc *d,
                                  const void *x, const float *gamma, const float *beta, void *y, bool check_ptrs,
                                  tsr_problem *p, bool *empty) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, who, "tsr_rowwise_desc_init");
    if (st) return st;
    if (d->rows < 0) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: rows (%lld) < 0", who, (long long)d->rows);
    if (d->cols < 0) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: cols (%lld) < 0", who, (long long)d->cols);
    if ((st = check_dtype(who, "x_dtype", d->x_dtype)) || (st = check_dtype(who, "y_dtype", d->y_dtype))) return st;
    if (op != TSR_OP_SOFTMAX && (!isfinite(d->epsilon) || d->epsilon <= 0))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: epsilon (%g) must be finite and > 0", who, (double)d->epsilon);
    memset(&p->u.rowwise, 0, sizeof p->u.rowwise); /* not the whole union: a tiny call's cost */
    p->op = op;
    tsr_rowwise_problem *r = &p->u.rowwise;
    r->d = *d;
    r->d.size = sizeof r->d;
    int64_t xb, yb, vb;
    if ((st = check_rows(who, "x_row_stride", &r->d.x_row_stride, d, d->x_dtype, &xb)) ||
        (st = check_rows(who, "y_row_stride", &r->d.y_row_stride, d, d->y_dtype, &yb)))
        return st;
    if (!tsr_span_bytes(d->cols, TSR_F32, &vb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the byte size of gamma/beta (cols %lld f32) overflows int64",
                        who, (long long)d->cols);
    *empty = d->rows == 0 || d->cols == 0;
    if (!check_ptrs || *empty) return TSR_OK;

    if (!x) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: x is NULL", who);
    if (!y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y is NULL", who);
    if (ctx->ops->host_addressable) {
        bool in_place = x == y && d->x_dtype == d->y_dtype && (r->d.x_row_stride == r->d.y_row_stride || d->rows == 1);
        if (!in_place && tsr_ranges_overlap(y, yb, x, xb))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: y overlaps x (only exact in-place is allowed: x == y with the same dtype and row "
                            "stride)",
                            who);
        if (tsr_ranges_overlap(y, yb, gamma, vb))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps gamma", who);
        if (tsr_ranges_overlap(y, yb, beta, vb))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps beta", who);
    }
    r->x = x, r->y = y, r->gamma = gamma, r->beta = beta;
    return TSR_OK;
}

static tsr_status rowwise_call(tsr_context *ctx, tsr_op op, const tsr_rowwise_desc *d, const void *x,
                               const float *gamma, const float *beta, void *y) {
    tsr_clear_error();
    tsr_problem p;
    bool empty = false;
    tsr_status st = rowwise_prepare(ctx, op, tsr_op_name(op), d, x, gamma, beta, y, true, &p, &empty);
    if (st) return st;
    return empty ? TSR_OK : tsr_dispatch(ctx, &p);
}

tsr_status tsr_softmax(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, void *y) {
    return rowwise_call(ctx, TSR_OP_SOFTMAX, d, x, NULL, NULL, y);
}

tsr_status tsr_layernorm(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, const float *gamma,
                         const float *beta, void *y) {
    return rowwise_call(ctx, TSR_OP_LAYERNORM, d, x, gamma, beta, y);
}

tsr_status tsr_rmsnorm(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, const float *gamma, void *y) {
    return rowwise_call(ctx, TSR_OP_RMSNORM, d, x, gamma, NULL, y);
}

tsr_status tsr_rowwise_supported(const tsr_context *ctx, const tsr_rowwise_desc *d, char *why, size_t why_len) {
    tsr_clear_error();
    tsr_problem p;
    bool empty = false;
    /* Validated as a norm, the strictest of the three. */
    tsr_status st = rowwise_prepare(ctx, TSR_OP_LAYERNORM, "rowwise", d, NULL, NULL, NULL, NULL, false, &p, &empty);
    if (st || empty) return tsr_report_why(st, why, why_len);
    static const tsr_op ops[] = {TSR_OP_SOFTMAX, TSR_OP_LAYERNORM, TSR_OP_RMSNORM};
    for (int i = 0; i < 3; i++) {
        p.op = ops[i];
        if ((st = tsr_supported_answer(ctx, TSR_OK, &p, why, why_len))) return st;
    }
    return TSR_OK;
}
