/* conv2d op front: validate, compute the output shape, dispatch. */
#include <string.h>

#include "validate.h"

void tsr_conv2d_desc_init(tsr_conv2d_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->format = TSR_NHWC;
    d->filter_format = TSR_FILTER_OHWI;
    d->n = d->c = d->h = d->w = d->k = d->r = d->s = 1;
    d->stride_h = d->stride_w = d->dilation_h = d->dilation_w = d->groups = 1;
    d->x_dtype = d->w_dtype = d->y_dtype = TSR_F32;
}

static tsr_status out_dim(const char *dim, int64_t in, int64_t pad0, int64_t pad1, int64_t f,
                          int64_t dil, int64_t stride, int64_t *out) {
    int64_t padded, eff;
    if (!tsr_add_i64(in, pad0, &padded) || !tsr_add_i64(padded, pad1, &padded) ||
        !tsr_mul_i64(dil, f - 1, &eff) || !tsr_add_i64(eff, 1, &eff))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the %s extent overflows int64", dim);
    if (eff > padded)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: the output is empty: the dilated filter %s (%lld) exceeds the padded input %s (%lld)",
                        dim, (long long)eff, dim, (long long)padded);
    *out = (padded - eff) / stride + 1;
    return TSR_OK;
}

static tsr_status shape_check(const tsr_conv2d_desc *d, int64_t *p, int64_t *q) {
    if (d->n < 0 || d->c < 1 || d->h < 1 || d->w < 1 || d->k < 1 || d->r < 1 || d->s < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: sizes must be >= 1 (n >= 0): n=%lld c=%lld h=%lld w=%lld k=%lld r=%lld s=%lld",
                        (long long)d->n, (long long)d->c, (long long)d->h, (long long)d->w,
                        (long long)d->k, (long long)d->r, (long long)d->s);
    if (d->stride_h < 1 || d->stride_w < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: stride_h (%lld) and stride_w (%lld) must be >= 1",
                        (long long)d->stride_h, (long long)d->stride_w);
    if (d->dilation_h < 1 || d->dilation_w < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: dilation_h (%lld) and dilation_w (%lld) must be >= 1",
                        (long long)d->dilation_h, (long long)d->dilation_w);
    if (d->pad_top < 0 || d->pad_bottom < 0 || d->pad_left < 0 || d->pad_right < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: pads must be >= 0 (top %lld, bottom %lld, left %lld, right %lld)",
                        (long long)d->pad_top, (long long)d->pad_bottom, (long long)d->pad_left,
                        (long long)d->pad_right);
    if (d->groups < 1) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: groups (%lld) must be >= 1", (long long)d->groups);
    if (d->c % d->groups)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: groups (%lld) does not divide c (%lld)",
                        (long long)d->groups, (long long)d->c);
    if (d->k % d->groups)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: groups (%lld) does not divide k (%lld)",
                        (long long)d->groups, (long long)d->k);
    tsr_status st = out_dim("height", d->h, d->pad_top, d->pad_bottom, d->r, d->dilation_h, d->stride_h, p);
    if (!st) st = out_dim("width", d->w, d->pad_left, d->pad_right, d->s, d->dilation_w, d->stride_w, q);
    return st;
}

tsr_status tsr_conv2d_output_shape(const tsr_conv2d_desc *d, int64_t *p, int64_t *q) {
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: desc is NULL");
    if (!p || !q) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: p and q (the outputs) must not be NULL");
    return shape_check(d, p, q);
}

static bool bytes_of(tsr_dtype t, int64_t a, int64_t b, int64_t c, int64_t e, int64_t *bytes) {
    int64_t x;
    return tsr_mul_i64(a, b, &x) && tsr_mul_i64(x, c, &x) && tsr_mul_i64(x, e, &x) &&
           tsr_span_bytes(x, t, bytes);
}

static tsr_status conv_prepare(const tsr_context *ctx, const tsr_conv2d_desc *d, const void *x,
                               const void *w, void *y, bool check_ptrs, tsr_problem *prob) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, "conv2d", "tsr_conv2d_desc_init");
    if (st) return st;
    if ((unsigned)d->format > TSR_NCHW)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: format (%d) is not a tsr_tensor_format", (int)d->format);
    if ((unsigned)d->filter_format > TSR_FILTER_HWIO)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: filter_format (%d) is not a tsr_filter_format",
                        (int)d->filter_format);
    int64_t p, q;
    if ((st = shape_check(d, &p, &q))) return st;
    bool ok = d->x_dtype == d->w_dtype &&
              ((d->x_dtype == TSR_F32 && d->y_dtype == TSR_F32) ||
               ((d->x_dtype == TSR_F16 || d->x_dtype == TSR_BF16) &&
                (d->y_dtype == TSR_F32 || d->y_dtype == d->x_dtype)));
    if (!ok)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "conv2d: dtypes x=%s w=%s y=%s are not supported (f32, or f16/bf16 in with f32 or the same out)",
                        tsr_dtype_name(d->x_dtype), tsr_dtype_name(d->w_dtype), tsr_dtype_name(d->y_dtype));
    if ((st = tsr_epilogue_check(&d->epilogue, "conv2d", d->y_dtype))) return st;
    for (int i = 0; i < d->epilogue.num_steps; i++)
        if (d->epilogue.steps[i].op == TSR_EPI_RESIDUAL &&
            (d->epilogue.steps[i].ld || d->epilogue.steps[i].batch_stride))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "conv2d: epilogue.steps[%d] residual ld/batch_stride must be 0: the residual is dense "
                            "in the output's format", i);
    int64_t xb, wb, yb;
    if (!bytes_of(d->x_dtype, d->n, d->c, d->h, d->w, &xb) ||
        !bytes_of(d->w_dtype, d->k, d->c / d->groups, d->r, d->s, &wb) ||
        !bytes_of(d->y_dtype, d->n, d->k, p, q, &yb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: a tensor's byte size overflows int64");
    if (check_ptrs && d->n > 0) {
        if (!x) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: x is NULL");
        if (!w) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: w is NULL");
        if (!y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: y is NULL");
        if (ctx->ops->host_addressable &&
            (tsr_ranges_overlap(y, yb, x, xb) || tsr_ranges_overlap(y, yb, w, wb)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: y overlaps x or w (outputs must not alias inputs)");
    }
    memset(prob, 0, sizeof *prob);
    prob->op = TSR_OP_CONV2D;
    prob->u.conv.d = *d;
    prob->u.conv.p = p;
    prob->u.conv.q = q;
    prob->u.conv.x = x;
    prob->u.conv.w = w;
    prob->u.conv.y = y;
    return TSR_OK;
}

tsr_status tsr_conv2d(tsr_context *ctx, const tsr_conv2d_desc *desc, const void *x, const void *w, void *y) {
    tsr_problem p;
    tsr_status st = conv_prepare(ctx, desc, x, w, y, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (desc->n == 0) return TSR_OK;
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_conv2d_supported(const tsr_context *ctx, const tsr_conv2d_desc *desc, char *why, size_t why_len) {
    tsr_problem p;
    return tsr_supported_answer(ctx, conv_prepare(ctx, desc, NULL, NULL, NULL, false, &p), &p, why, why_len);
}
