/* conv2d op front: validate every argument, compute the output shape,
 * dispatch. Nothing is written before validation has passed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
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

static tsr_status at_least(const char *name, int64_t v, int64_t min) {
    if (v >= min) return TSR_OK;
    return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: %s (%lld) must be >= %lld", name, (long long)v,
                    (long long)min);
}

/* One output extent: (in + pad0 + pad1 - (dil * (f - 1) + 1)) / stride + 1. */
static tsr_status out_dim(const char *dim, char axis, int64_t in, int64_t pad0, int64_t pad1, int64_t f,
                          int64_t dil, int64_t stride, int64_t *out) {
    int64_t padded, eff;
    if (!tsr_add_i64(in, pad0, &padded) || !tsr_add_i64(padded, pad1, &padded))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the padded input %s (%c plus pads) overflows int64",
                        dim, axis);
    if (!tsr_mul_i64(dil, f - 1, &eff) || !tsr_add_i64(eff, 1, &eff))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the dilated filter %s (dilation_%c * (%c - 1) + 1) "
                        "overflows int64", dim, axis, dim[0] == 'h' ? 'r' : 's');
    if (eff > padded)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: the output is empty: the dilated filter %s (%lld) exceeds the padded input "
                        "%s (%lld)", dim, (long long)eff, dim, (long long)padded);
    *out = (padded - eff) / stride + 1;
    return TSR_OK;
}

/* Sizes, strides, pads, dilations, groups and the output shape. */
static tsr_status shape_check(const tsr_conv2d_desc *d, int64_t *p, int64_t *q) {
    tsr_status st;
    if ((st = at_least("n", d->n, 0)) || (st = at_least("c", d->c, 1)) || (st = at_least("h", d->h, 1)) ||
        (st = at_least("w", d->w, 1)) || (st = at_least("k", d->k, 1)) || (st = at_least("r", d->r, 1)) ||
        (st = at_least("s", d->s, 1)) || (st = at_least("stride_h", d->stride_h, 1)) ||
        (st = at_least("stride_w", d->stride_w, 1)) || (st = at_least("dilation_h", d->dilation_h, 1)) ||
        (st = at_least("dilation_w", d->dilation_w, 1)) || (st = at_least("pad_top", d->pad_top, 0)) ||
        (st = at_least("pad_bottom", d->pad_bottom, 0)) || (st = at_least("pad_left", d->pad_left, 0)) ||
        (st = at_least("pad_right", d->pad_right, 0)) || (st = at_least("groups", d->groups, 1)))
        return st;
    if (d->c % d->groups)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: groups (%lld) does not divide c (%lld)",
                        (long long)d->groups, (long long)d->c);
    if (d->k % d->groups)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: groups (%lld) does not divide k (%lld)",
                        (long long)d->groups, (long long)d->k);
    if ((st = out_dim("height", 'h', d->h, d->pad_top, d->pad_bottom, d->r, d->dilation_h, d->stride_h, p)))
        return st;
    return out_dim("width", 'w', d->w, d->pad_left, d->pad_right, d->s, d->dilation_w, d->stride_w, q);
}

tsr_status tsr_conv2d_output_shape(const tsr_conv2d_desc *d, int64_t *p, int64_t *q) {
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: desc is NULL");
    if (d->size < sizeof *d)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: desc->size (%zu) is smaller than this library's descriptor (%zu); "
                        "call tsr_conv2d_desc_init first", d->size, sizeof *d);
    if (!p || !q) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: p and q (the outputs) must not be NULL");
    int64_t pp, qq;
    tsr_status st = shape_check(d, &pp, &qq);
    if (st) return st;
    *p = pp, *q = qq;
    return TSR_OK;
}

static bool dtypes_ok(const tsr_conv2d_desc *d) {
    if (d->x_dtype != d->w_dtype) return false;
    switch (d->x_dtype) {
    case TSR_F32: return d->y_dtype == TSR_F32;
    case TSR_F16: return d->y_dtype == TSR_F32 || d->y_dtype == TSR_F16;
    case TSR_BF16: return d->y_dtype == TSR_F32 || d->y_dtype == TSR_BF16;
    default: return false;
    }
}

/* Elements and bytes of an a x b x c x e tensor of dtype t; false on int64 overflow. */
static bool tensor_size(tsr_dtype t, int64_t a, int64_t b, int64_t c, int64_t e, int64_t *elems, int64_t *bytes) {
    return tsr_mul_i64(a, b, elems) && tsr_mul_i64(*elems, c, elems) && tsr_mul_i64(*elems, e, elems) &&
           tsr_span_bytes(*elems, t, bytes);
}

/* Epilogue checks that depend on the conv's shapes: residual strides, extents. */
static tsr_status epilogue_extents(const tsr_conv2d_desc *d, int64_t y_elems) {
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *s = &d->epilogue.steps[i];
        int64_t bytes;
        if (s->op == TSR_EPI_RESIDUAL) {
            if (s->ld || s->batch_stride)
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                                "conv2d: epilogue.steps[%d] residual ld (%lld) and batch_stride (%lld) must be 0: "
                                "a conv2d residual is dense in the output's format", i, (long long)s->ld,
                                (long long)s->batch_stride);
            if (!tsr_span_bytes(y_elems, s->dtype, &bytes))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                                "conv2d: the byte size of the residual (epilogue.steps[%d]) overflows int64", i);
        } else if (s->op == TSR_EPI_BIAS && !tsr_span_bytes(d->k, s->dtype, &bytes)) {
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "conv2d: the byte size of the bias (epilogue.steps[%d]) overflows int64", i);
        }
    }
    return TSR_OK;
}

/* A residual may be y itself (y += conv, read and written at the same
 * element); any other overlap of y with an input would race. */
static tsr_status epilogue_aliasing(const tsr_conv2d_desc *d, const void *y, int64_t y_elems, int64_t y_bytes) {
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *s = &d->epilogue.steps[i];
        if (s->op == TSR_EPI_BIAS &&
            tsr_ranges_overlap(y, y_bytes, s->data, d->k * (int64_t)tsr_dtype_size(s->dtype)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "conv2d: y overlaps the bias (epilogue.steps[%d].data)", i);
        if (s->op == TSR_EPI_RESIDUAL && !(s->data == y && s->dtype == d->y_dtype) &&
            tsr_ranges_overlap(y, y_bytes, s->data, y_elems * (int64_t)tsr_dtype_size(s->dtype)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "conv2d: y overlaps the residual (epilogue.steps[%d].data) other than being the "
                            "same tensor with y's dtype", i);
    }
    return TSR_OK;
}

/* ------------------------------------------------------- packed filters */

_Static_assert(sizeof(tsr_packed_filter) <= TSR_PACKED_FILTER_HEADER, "the packed filter header outgrew its room");

static uint64_t packed_check(const tsr_packed_filter *h) { return tsr_fnv1a(h, offsetof(tsr_packed_filter, check), 0); }

/* w of a TSR_FILTER_PACKED desc: a header this library wrote, for d. */
static tsr_status packed_header(const tsr_conv2d_desc *d, const void *w, const tsr_packed_filter **out) {
    const tsr_packed_filter *h = w;
    if ((uintptr_t)w % 8)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: w (a packed filter) must be 8-byte aligned, as "
                        "tsr_conv2d_pack_filter requires of its output");
    if (memcmp(h->magic, TSR_PACKED_FILTER_MAGIC, sizeof h->magic) || h->check != packed_check(h))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: filter_format is TSR_FILTER_PACKED but w does not start "
                        "with a packed filter's header (make w with tsr_conv2d_pack_filter)");
    if (h->k != d->k || h->c != d->c || h->r != d->r || h->s != d->s || h->groups != d->groups)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: the packed filter w was made for k=%lld c=%lld r=%lld s=%lld groups=%lld, not for "
                        "this desc's k=%lld c=%lld r=%lld s=%lld groups=%lld", (long long)h->k, (long long)h->c,
                        (long long)h->r, (long long)h->s, (long long)h->groups, (long long)d->k, (long long)d->c,
                        (long long)d->r, (long long)d->s, (long long)d->groups);
    if (h->w_dtype != (int32_t)d->w_dtype)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the packed filter w was made for w_dtype %s, not %s",
                        tsr_dtype_name((tsr_dtype)h->w_dtype), tsr_dtype_name(d->w_dtype));
    /* the layout fields agree with the payload's size (a header from a
     * future version or a bad copy is refused, never read past its end) */
    const int64_t Kg = d->k / d->groups, rsc = d->r * d->s * (d->c / d->groups);
    int64_t want = -1;
    if (h->layout == TSR_PACKED_COPY && (uint32_t)h->format <= TSR_FILTER_HWIO)
        want = d->k * rsc * (int64_t)tsr_dtype_size(d->w_dtype);
    else if ((h->layout == TSR_PACKED_PANELS || h->layout == TSR_PACKED_PAIR_PANELS) && h->nr > 0 && h->nr <= 256)
        want = d->groups * ((Kg + h->nr - 1) / h->nr) * rsc * h->nr * (h->layout == TSR_PACKED_PANELS ? 4 : 2);
    if (want < 0 || h->payload_bytes != want)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the packed filter w has a layout (%d, width %d, %lld bytes) "
                        "this library does not read; pack it again with tsr_conv2d_pack_filter", (int)h->layout,
                        (int)h->nr, (long long)h->payload_bytes);
    *out = h;
    return TSR_OK;
}

/* Validates d (and the pointers when check_ptrs) and fills prob. */
static tsr_status conv_prepare(const tsr_context *ctx, const tsr_conv2d_desc *d, const void *x, const void *w,
                               void *y, bool check_ptrs, tsr_problem *prob) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, "conv2d", "tsr_conv2d_desc_init");
    if (st) return st;
    if ((unsigned)d->format > TSR_NCHW)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: format (%d) is not a tsr_tensor_format", (int)d->format);
    if ((unsigned)d->filter_format > TSR_FILTER_PACKED)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: filter_format (%d) is not a tsr_filter_format",
                        (int)d->filter_format);
    if (!tsr_dtype_valid(d->x_dtype) || !tsr_dtype_valid(d->w_dtype) || !tsr_dtype_valid(d->y_dtype))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "conv2d: x_dtype (%d), w_dtype (%d) and y_dtype (%d) must be tsr_dtype values",
                        (int)d->x_dtype, (int)d->w_dtype, (int)d->y_dtype);
    int64_t p, q;
    if ((st = shape_check(d, &p, &q))) return st;
    if (!dtypes_ok(d))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "conv2d: dtypes x=%s w=%s y=%s are not supported (f32*f32->f32, f16*f16->f32|f16, "
                        "bf16*bf16->f32|bf16)",
                        tsr_dtype_name(d->x_dtype), tsr_dtype_name(d->w_dtype), tsr_dtype_name(d->y_dtype));
    if ((st = tsr_epilogue_check(&d->epilogue, "conv2d", d->y_dtype))) return st;

    int64_t xe, we, ye, xb, wb, yb;
    if (!tensor_size(d->x_dtype, d->n, d->c, d->h, d->w, &xe, &xb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the byte size of x (n*c*h*w = %lld*%lld*%lld*%lld) "
                        "overflows int64", (long long)d->n, (long long)d->c, (long long)d->h, (long long)d->w);
    if (!tensor_size(d->w_dtype, d->k, d->c / d->groups, d->r, d->s, &we, &wb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the byte size of w (k*(c/groups)*r*s = "
                        "%lld*%lld*%lld*%lld) overflows int64", (long long)d->k, (long long)(d->c / d->groups),
                        (long long)d->r, (long long)d->s);
    if (!tensor_size(d->y_dtype, d->n, d->k, p, q, &ye, &yb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: the byte size of y (n*k*p*q = %lld*%lld*%lld*%lld) "
                        "overflows int64", (long long)d->n, (long long)d->k, (long long)p, (long long)q);
    if ((st = epilogue_extents(d, ye))) return st;

    const tsr_packed_filter *packed = NULL;
    if (d->filter_format == TSR_FILTER_PACKED) {
        if (!ctx->ops->host_addressable)
            return tsr_fail(TSR_ERR_NOT_SUPPORTED, "conv2d: packed filters are for CPU contexts (this one is %s); "
                            "pass the filter in its own format", tsr_backend_name(ctx->backend));
        if (w) {
            if ((st = packed_header(d, w, &packed))) return st;
            wb = TSR_PACKED_FILTER_HEADER + packed->payload_bytes;
        }
    }

    if (check_ptrs && d->n > 0) {
        if (!x) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: x is NULL");
        if (!w) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: w is NULL");
        if (!y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: y is NULL");
        if (ctx->ops->host_addressable) {
            if (tsr_ranges_overlap(y, yb, x, xb))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: y overlaps x (outputs must not alias inputs)");
            if (tsr_ranges_overlap(y, yb, w, wb))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: y overlaps w (outputs must not alias inputs)");
            if ((st = epilogue_aliasing(d, y, ye, yb))) return st;
        }
    }

    memset(prob, 0, sizeof *prob);
    prob->op = TSR_OP_CONV2D;
    prob->u.conv.d = *d;
    prob->u.conv.p = p;
    prob->u.conv.q = q;
    prob->u.conv.x = x;
    prob->u.conv.w = w;
    prob->u.conv.y = y;
    if (packed && packed->layout == TSR_PACKED_COPY) { /* any kernel reads it in its format */
        prob->u.conv.d.filter_format = (tsr_filter_format)packed->format;
        prob->u.conv.w = (const char *)w + TSR_PACKED_FILTER_HEADER;
    } else if (packed) {
        prob->u.conv.packed = packed;
        prob->u.conv.w = (const char *)w + TSR_PACKED_FILTER_HEADER;
    }
    return TSR_OK;
}

tsr_status tsr_conv2d(tsr_context *ctx, const tsr_conv2d_desc *desc, const void *x, const void *w, void *y) {
    tsr_problem p;
    tsr_status st = conv_prepare(ctx, desc, x, w, y, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (desc->n == 0) return TSR_OK; /* an empty batch: nothing to read or write */
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_conv2d_supported(const tsr_context *ctx, const tsr_conv2d_desc *desc, char *why, size_t why_len) {
    tsr_problem p;
    return tsr_supported_answer(ctx, conv_prepare(ctx, desc, NULL, NULL, NULL, false, &p), &p, why, why_len);
}

/* The header (layout and payload size) of p's filter packed for the kernel
 * this context picks for it. */
static tsr_status pack_plan(tsr_context *ctx, const tsr_conv2d_desc *desc, tsr_problem *p, tsr_packed_filter *h,
                            const tsr_kernel **kernel) {
    tsr_status st = conv_prepare(ctx, desc, NULL, NULL, NULL, false, p);
    if (st) return st;
    if (desc->filter_format == TSR_FILTER_PACKED)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: desc->filter_format is TSR_FILTER_PACKED; to pack a "
                        "filter, the desc names the format w is in");
    if (!ctx->ops->host_addressable)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "conv2d: packed filters are for CPU contexts (this one is %s); pass "
                        "the filter in its own format", tsr_backend_name(ctx->backend));
    char why[256];
    const tsr_kernel *k = tsr_dispatch_select(ctx, p, why, sizeof why);
    if (!k) return tsr_fail(TSR_ERR_NOT_SUPPORTED, "conv2d: %s", why);
    memset(h, 0, sizeof *h);
    memcpy(h->magic, TSR_PACKED_FILTER_MAGIC, sizeof h->magic);
    snprintf(h->producer, sizeof h->producer, "%s", k->name);
    h->layout = TSR_PACKED_COPY, h->format = desc->filter_format, h->w_dtype = desc->w_dtype;
    h->k = desc->k, h->c = desc->c, h->r = desc->r, h->s = desc->s, h->groups = desc->groups;
    if (k->pack_filter) k->pack_filter(ctx, p, h, NULL);
    if (h->layout == TSR_PACKED_COPY)
        h->payload_bytes = desc->k * (desc->c / desc->groups) * desc->r * desc->s * (int64_t)tsr_dtype_size(desc->w_dtype);
    *kernel = k;
    return TSR_OK;
}

tsr_status tsr_conv2d_packed_filter_size(tsr_context *ctx, const tsr_conv2d_desc *desc, size_t *bytes) {
    tsr_problem p;
    tsr_packed_filter h;
    const tsr_kernel *k;
    tsr_status st = pack_plan(ctx, desc, &p, &h, &k);
    if (st) return st;
    if (!bytes) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: bytes (the output) must not be NULL");
    *bytes = (size_t)(TSR_PACKED_FILTER_HEADER + h.payload_bytes);
    tsr_clear_error();
    return TSR_OK;
}

tsr_status tsr_conv2d_pack_filter(tsr_context *ctx, const tsr_conv2d_desc *desc, const void *w, void *packed,
                                  size_t bytes) {
    tsr_problem p;
    tsr_packed_filter h;
    const tsr_kernel *k = NULL;
    tsr_status st = pack_plan(ctx, desc, &p, &h, &k);
    if (st) return st;
    if (!w) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: w is NULL");
    if (!packed) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: packed is NULL");
    if ((uintptr_t)packed % 8)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: packed must be 8-byte aligned (malloc's memory is)");
    const int64_t need = TSR_PACKED_FILTER_HEADER + h.payload_bytes;
    if ((uint64_t)bytes < (uint64_t)need)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: bytes (%zu) is less than the %lld the packed filter needs "
                        "(tsr_conv2d_packed_filter_size)", bytes, (long long)need);
    const int64_t Cg = desc->c / desc->groups, elems = desc->k * Cg * desc->r * desc->s;
    const size_t es = tsr_dtype_size(desc->w_dtype);
    if (tsr_ranges_overlap(packed, need, w, elems * (int64_t)es))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "conv2d: packed overlaps w");
    p.u.conv.w = w;
    char *payload = (char *)packed + TSR_PACKED_FILTER_HEADER;
    if (h.layout == TSR_PACKED_COPY) { /* element by element into h.format */
        for (int64_t kk = 0; kk < desc->k; kk++)
            for (int64_t c = 0; c < Cg; c++)
                for (int64_t r = 0; r < desc->r; r++)
                    for (int64_t s = 0; s < desc->s; s++)
                        memcpy(payload + es * (size_t)tsr_packed_filter_offset(&h, kk, c, r, s),
                               (const char *)w + es * (size_t)tsr_filter_offset(desc->filter_format, kk, c, r, s,
                                                                                desc->k, Cg, desc->r, desc->s),
                               es);
    } else {
        k->pack_filter(ctx, &p, &h, payload);
    }
    memset(packed, 0, TSR_PACKED_FILTER_HEADER);
    h.check = packed_check(&h);
    memcpy(packed, &h, sizeof h);
    tsr_clear_error();
    return TSR_OK;
}
