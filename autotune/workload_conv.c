/* conv2d workloads: NHWC x, OHWI filter, no epilogue: the shapes
 * tessera-tune tunes (`--op conv`, with the bench's shape files,
 * bench/shapes/conv_*.txt, at batch 1). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner.h"

enum { BUF_X, BUF_W, BUF_Y };

static void bind_conv(tsr_problem *p, void *const *bufs) {
    p->u.conv.x = bufs[BUF_X];
    p->u.conv.w = bufs[BUF_W];
    p->u.conv.y = bufs[BUF_Y];
}

tsr_status tsr_workload_conv(tsr_workload *w, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t k, int64_t r,
                             int64_t s, int64_t stride, int64_t pad, int64_t groups, tsr_dtype t) {
    memset(w, 0, sizeof *w);
    if (!tsr_is_float_dtype(t))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: conv dtype %s is not f32, f16 or bf16", tsr_dtype_name(t));
    tsr_problem *p = &w->problem;
    p->op = TSR_OP_CONV2D;
    tsr_conv2d_desc *d = &p->u.conv.d;
    tsr_conv2d_desc_init(d);
    d->n = n, d->c = c, d->h = h, d->w = wd, d->k = k, d->r = r, d->s = s;
    d->stride_h = d->stride_w = stride;
    d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = pad;
    d->groups = groups;
    d->x_dtype = d->w_dtype = d->y_dtype = t;
    int64_t P, Q;
    tsr_status st = tsr_conv2d_output_shape(d, &P, &Q);
    if (st) return st;
    if (n < 1) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: conv batch %lld must be >= 1", (long long)n);
    p->u.conv.p = P, p->u.conv.q = Q;
    const int64_t es = (int64_t)tsr_dtype_size(t), taps = r * s * (c / groups);
    int64_t xe, we, ye;
    if (!tsr_mul_i64(n * h, wd * c, &xe) || !tsr_mul_i64(k, taps, &we) || !tsr_mul_i64(n * P, Q * k, &ye) ||
        xe * es > ((int64_t)1 << 33) || ye * es > ((int64_t)1 << 33))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: conv shape too large to tune");
    w->num_bufs = 3;
    for (int i = 0; i < 3; i++) w->dtype[i] = t;
    w->bytes[BUF_X] = (size_t)(xe * es), w->bytes[BUF_W] = (size_t)(we * es), w->bytes[BUF_Y] = (size_t)(ye * es);
    w->is_output[BUF_Y] = true;
    w->check_buf = BUF_Y;
    w->bind = bind_conv;
    tsr_problem_key(p, &w->key);
    w->flops = 2.0 * (double)ye * (double)taps;
    w->bytes_moved = (double)(xe + we + ye) * (double)es;
    /* f32 accumulation over r*s*c/groups terms against the reference's double */
    w->atol = (double)taps * ldexp(1.0, -21);
    w->rtol = t == TSR_F16 ? ldexp(1.0, -9) : t == TSR_BF16 ? ldexp(1.0, -6) : 1e-5;
    return TSR_OK;
}

/* A record tessera-tune wrote for tsr_workload_conv: NHWC x, OHWI filter,
 * one dtype, square stride and padding, no dilation, no epilogue. */
tsr_status tsr_workload_conv_from_record(tsr_workload *w, const tsr_table_rec_view *v) {
    static const char *const names[] = {"n", "c", "h", "w", "k", "groups"};
    if (v->ndims != 6) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: conv2d record shape '%s'", v->shape);
    for (int i = 0; i < 6; i++)
        if (strcmp(v->dim_names[i], names[i]) != 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: conv2d record shape '%s' is not n,c,h,w,k,groups",
                            v->shape);
    long long r, s, sh, sw, pt, pb, pl, pr, dh, dw;
    char rest[64] = "";
    if (sscanf(v->variant, "rs=%lldx%lld,st=%lldx%lld,pad=%lld.%lld.%lld.%lld,dil=%lldx%lld,%63s", &r, &s, &sh, &sw,
               &pt, &pb, &pl, &pr, &dh, &dw, rest) != 11)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: conv2d record variant '%s'", v->variant);
    const char *epi = strstr(rest, "epi=");
    if (sh != sw || pt != pb || pt != pl || pt != pr || dh != 1 || dw != 1 || !epi || strcmp(epi, "epi=none") != 0 ||
        strcmp(v->layout, "NHWC.OHWI") != 0)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "tune: conv2d records other than NHWC.OHWI, square stride and padding, no dilation or "
                        "epilogue (%s %s) cannot be re-timed yet", v->layout, v->variant);
    tsr_dtype t = TSR_F32;
    char three[64];
    bool named = false;
    for (int i = TSR_F32; i <= TSR_BF16 && !named; i++) {
        const char *n = tsr_dtype_name((tsr_dtype)i);
        snprintf(three, sizeof three, "%s,%s,%s", n, n, n);
        if (!strcmp(v->dtypes, three)) t = (tsr_dtype)i, named = true;
    }
    if (!named) return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: conv2d record dtypes '%s' are not one float dtype", v->dtypes);
    return tsr_workload_conv(w, v->dims[0], v->dims[1], v->dims[2], v->dims[3], v->dims[4], r, s, sh, pt, v->dims[5], t);
}
