/* Row-wise op fronts: softmax, layernorm, rmsnorm. */
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

static tsr_status rowwise_prepare(const tsr_context *ctx, tsr_op op, const tsr_rowwise_desc *d, const void *x,
                                  const float *gamma, const float *beta, void *y, bool check_ptrs, tsr_problem *p) {
    const char *who = tsr_op_name(op);
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, who, "tsr_rowwise_desc_init");
    if (st) return st;
    if (d->rows < 0 || d->cols < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: rows (%lld) and cols (%lld) must be >= 0", who,
                        (long long)d->rows, (long long)d->cols);
    if (!tsr_is_float_dtype(d->x_dtype) || !tsr_is_float_dtype(d->y_dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s: dtypes x=%s y=%s are not supported (f32, f16, bf16)", who,
                        tsr_dtype_name(d->x_dtype), tsr_dtype_name(d->y_dtype));
    if (op != TSR_OP_SOFTMAX && (!isfinite(d->epsilon) || d->epsilon <= 0))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: epsilon (%g) must be finite and > 0", who, (double)d->epsilon);
    memset(p, 0, sizeof *p);
    p->op = op;
    tsr_rowwise_problem *r = &p->u.rowwise;
    r->d = *d;
    int64_t *strides[2] = {&r->d.x_row_stride, &r->d.y_row_stride};
    const char *names[2] = {"x_row_stride", "y_row_stride"};
    for (int i = 0; i < 2; i++) {
        if (*strides[i] == 0) *strides[i] = d->cols;
        if (*strides[i] < d->cols)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%lld) < cols (%lld)", who, names[i],
                            (long long)*strides[i], (long long)d->cols);
    }
    int64_t xe, ye, xb, yb;
    if (!tsr_matrix_span(d->rows, d->cols, r->d.x_row_stride, 1, 0, &xe) || !tsr_span_bytes(xe, d->x_dtype, &xb) ||
        !tsr_matrix_span(d->rows, d->cols, r->d.y_row_stride, 1, 0, &ye) || !tsr_span_bytes(ye, d->y_dtype, &yb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the byte size of x or y overflows int64", who);
    if (check_ptrs && d->rows > 0 && d->cols > 0) {
        if (!x || !y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, x ? "y" : "x");
        bool in_place = x == y && d->x_dtype == d->y_dtype && r->d.x_row_stride == r->d.y_row_stride;
        if (ctx->ops->host_addressable && !in_place && tsr_ranges_overlap(y, yb, x, xb))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps x (only exact in-place is allowed)", who);
        int64_t vb = d->cols * 4;
        if (ctx->ops->host_addressable &&
            (tsr_ranges_overlap(y, yb, gamma, vb) || tsr_ranges_overlap(y, yb, beta, vb)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps gamma or beta", who);
    }
    r->x = x, r->y = y, r->gamma = gamma, r->beta = beta;
    return TSR_OK;
}

static tsr_status rowwise_run(tsr_context *ctx, tsr_op op, const tsr_rowwise_desc *d, const void *x,
                              const float *gamma, const float *beta, void *y) {
    tsr_problem p;
    tsr_status st = rowwise_prepare(ctx, op, d, x, gamma, beta, y, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (d->rows == 0 || d->cols == 0) return TSR_OK;
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_softmax(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, void *y) {
    return rowwise_run(ctx, TSR_OP_SOFTMAX, d, x, NULL, NULL, y);
}

tsr_status tsr_layernorm(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, const float *gamma,
                         const float *beta, void *y) {
    return rowwise_run(ctx, TSR_OP_LAYERNORM, d, x, gamma, beta, y);
}

tsr_status tsr_rmsnorm(tsr_context *ctx, const tsr_rowwise_desc *d, const void *x, const float *gamma, void *y) {
    return rowwise_run(ctx, TSR_OP_RMSNORM, d, x, gamma, NULL, y);
}

tsr_status tsr_rowwise_supported(const tsr_context *ctx, const tsr_rowwise_desc *d, char *why, size_t why_len) {
    tsr_problem p;
    tsr_status st = rowwise_prepare(ctx, TSR_OP_LAYERNORM, d, NULL, NULL, NULL, NULL, false, &p);
    return tsr_supported_answer(ctx, st, &p, why, why_len);
}
