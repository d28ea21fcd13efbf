/* Elementwise op fronts: unary, binary and fused chains (one problem kind,
 * TSR_OP_CHAIN), with NumPy broadcasting resolved here. */
#include <stdio.h>
#include <string.h>

#include "validate.h"

void tsr_chain_desc_init(tsr_chain_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
}

static tsr_status push(tsr_chain_desc *d, tsr_chain_step s) {
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    if (d->num_steps < 0 || d->num_steps >= TSR_MAX_CHAIN_STEPS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: already %d steps (at most %d)", d->num_steps,
                        TSR_MAX_CHAIN_STEPS);
    d->steps[d->num_steps++] = s;
    return TSR_OK;
}

tsr_status tsr_chain_push_unary(tsr_chain_desc *d, tsr_unary_op op) {
    tsr_chain_step s = {.kind = TSR_STEP_UNARY, .unary = op};
    return push(d, s);
}

tsr_status tsr_chain_push_scalar(tsr_chain_desc *d, tsr_binary_op op, float scalar, int scalar_on_left) {
    tsr_chain_step s = {.kind = scalar_on_left ? TSR_STEP_SCALAR_LEFT : TSR_STEP_SCALAR, .binary = op,
                        .scalar = scalar};
    return push(d, s);
}

tsr_status tsr_chain_push_tensor(tsr_chain_desc *d, tsr_binary_op op, const tsr_tensor_desc *operand,
                                 int tensor_on_left) {
    if (!d || !operand) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc or operand is NULL");
    if (d->num_operands < 0 || d->num_operands >= TSR_MAX_CHAIN_OPERANDS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: already %d operands (at most %d)", d->num_operands,
                        TSR_MAX_CHAIN_OPERANDS);
    tsr_chain_step s = {.kind = tensor_on_left ? TSR_STEP_TENSOR_LEFT : TSR_STEP_TENSOR, .binary = op,
                        .operand = d->num_operands};
    tsr_status st = push(d, s);
    if (!st) d->operands[d->num_operands++] = *operand;
    return st;
}

/* Checks t, fills all-zero strides as contiguous; *elems = element count. */
static tsr_status check_tensor(const char *who, const char *name, tsr_tensor_desc *t, int64_t *elems) {
    if (t->ndim < 0 || t->ndim > TSR_MAX_DIMS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.ndim (%d) must be in 0..%d", who, name, t->ndim, TSR_MAX_DIMS);
    if (!tsr_is_float_dtype(t->dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s: %s.dtype %s is not supported (f32, f16, bf16)", who, name,
                        tsr_dtype_name(t->dtype));
    bool all_zero = true;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] (%lld) < 0", who, name, i, (long long)t->shape[i]);
        if (t->strides[i] < 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] (%lld) < 0", who, name, i,
                            (long long)t->strides[i]);
        if (t->strides[i]) all_zero = false;
        if (!tsr_mul_i64(n, t->shape[i], &n))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the element count of %s overflows int64", who, name);
    }
    if (all_zero) {
        int64_t s = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            t->strides[i] = s;
            s *= t->shape[i] > 0 ? t->shape[i] : 1; /* bounded by n, checked above */
        }
    }
    *elems = n;
    return TSR_OK;
}

/* Bytes from the first to past the last element of t (t non-empty). */
static bool tensor_bytes(const tsr_tensor_desc *t, int64_t *bytes) {
    int64_t last = 0, x;
    for (int i = 0; i < t->ndim; i++)
        if (!tsr_mul_i64(t->shape[i] - 1, t->strides[i], &x) || !tsr_add_i64(last, x, &last)) return false;
    return tsr_add_i64(last, 1, &last) && tsr_span_bytes(last, t->dtype, bytes);
}

/* Rewrites in (already checked) as a view of out's shape, NumPy rules. */
static tsr_status broadcast_to(const char *who, const char *name, const tsr_tensor_desc *in,
                               const tsr_tensor_desc *out, tsr_tensor_desc *view) {
    if (in->ndim > out->ndim)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s has %d dims, more than the output's %d", who, name,
                        in->ndim, out->ndim);
    memset(view, 0, sizeof *view);
    view->dtype = in->dtype;
    view->ndim = out->ndim;
    int off = out->ndim - in->ndim;
    for (int i = 0; i < out->ndim; i++) {
        view->shape[i] = out->shape[i];
        if (i < off) continue;
        int64_t s = in->shape[i - off];
        if (s == out->shape[i]) view->strides[i] = in->strides[i - off];
        else if (s == 1) view->strides[i] = 0;
        else
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: %s.shape[%d] (%lld) does not broadcast to the output's dim %d (%lld)", who, name,
                            i - off, (long long)s, i, (long long)out->shape[i]);
    }
    return TSR_OK;
}

/* Distinct elements of y must be distinct memory. */
static bool elements_disjoint(const tsr_tensor_desc *t) {
    int idx[TSR_MAX_DIMS], n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] > 1) idx[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && t->strides[idx[j]] < t->strides[idx[j - 1]]; j--) {
            int tmp = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = tmp;
        }
    int64_t span = 1;
    for (int i = 0; i < n; i++) {
        int64_t s = t->strides[idx[i]];
        if (s < span) return false;
        span = s * (t->shape[idx[i]] - 1) + span;
    }
    return true;
}

static bool same_view(const tsr_tensor_desc *a, const tsr_tensor_desc *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] > 1 && a->strides[i] != b->strides[i]) return false;
    return true;
}

static tsr_status chain_prepare(const tsr_context *ctx, const tsr_chain_desc *chain, const tsr_tensor_desc *xd,
                                const void *x, const void *const *operands, const tsr_tensor_desc *yd, void *y,
                                bool check_ptrs, tsr_problem *p, int64_t *count) {
    const char *who = "chain";
    tsr_status st = tsr_check_desc(ctx, chain, chain ? chain->size : 0, sizeof *chain, who, "tsr_chain_desc_init");
    if (st) return st;
    if (!xd || !yd) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, xd ? "y_desc" : "x_desc");
    if (chain->num_steps < 0 || chain->num_steps > TSR_MAX_CHAIN_STEPS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: num_steps (%d) must be in 0..%d", who, chain->num_steps,
                        TSR_MAX_CHAIN_STEPS);
    if (chain->num_operands < 0 || chain->num_operands > TSR_MAX_CHAIN_OPERANDS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: num_operands (%d) must be in 0..%d", who, chain->num_operands,
                        TSR_MAX_CHAIN_OPERANDS);
    for (int i = 0; i < chain->num_steps; i++) {
        const tsr_chain_step *s = &chain->steps[i];
        if ((unsigned)s->kind > TSR_STEP_TENSOR_LEFT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].kind (%d) is not a tsr_chain_step_kind", who, i,
                            (int)s->kind);
        if (s->kind == TSR_STEP_UNARY && (unsigned)s->unary >= TSR_UNARY_COUNT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].unary (%d) is not a tsr_unary_op", who, i,
                            (int)s->unary);
        if (s->kind != TSR_STEP_UNARY && (unsigned)s->binary >= TSR_BINARY_COUNT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].binary (%d) is not a tsr_binary_op", who, i,
                            (int)s->binary);
        if ((s->kind == TSR_STEP_TENSOR || s->kind == TSR_STEP_TENSOR_LEFT) &&
            (s->operand < 0 || s->operand >= chain->num_operands))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].operand (%d) is not in 0..%d", who, i, s->operand,
                            chain->num_operands - 1);
    }
    memset(p, 0, sizeof *p);
    p->op = TSR_OP_CHAIN;
    tsr_chain_problem *c = &p->u.chain;
    c->chain = *chain;
    tsr_tensor_desc xt = *xd, yt = *yd;
    int64_t nx, ny, no;
    if ((st = check_tensor(who, "x", &xt, &nx)) || (st = check_tensor(who, "y", &yt, &ny))) return st;
    if ((st = broadcast_to(who, "x", &xt, &yt, &c->x))) return st;
    c->y = yt;
    for (int i = 0; i < chain->num_operands; i++) {
        tsr_tensor_desc o = chain->operands[i];
        char name[32];
        snprintf(name, sizeof name, "operands[%d]", i);
        if ((st = check_tensor(who, name, &o, &no)) || (st = broadcast_to(who, name, &o, &yt, &c->chain.operands[i])))
            return st;
    }
    *count = ny;
    if (ny == 0) return TSR_OK;
    if (!elements_disjoint(&yt))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y's strides make distinct elements overlap (0 or small strides)", who);
    int64_t yb, xb;
    if (!tensor_bytes(&yt, &yb) || !tensor_bytes(&c->x, &xb))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: a tensor's byte extent overflows int64", who);
    if (check_ptrs) {
        if (!x || !y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, x ? "y" : "x");
        if (chain->num_operands > 0 && !operands)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: operands is NULL but the chain has %d", who, chain->num_operands);
        bool host = ctx->ops->host_addressable;
        if (host && tsr_ranges_overlap(y, yb, x, xb) && !(y == x && same_view(&c->x, &yt)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps x (only exact in-place, y == x with equal strides, is allowed)", who);
        for (int i = 0; i < chain->num_operands; i++) {
            int64_t ob;
            if (!operands[i]) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: operands[%d] is NULL", who, i);
            if (!tensor_bytes(&c->chain.operands[i], &ob))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: operands[%d]'s byte extent overflows int64", who, i);
            if (host && tsr_ranges_overlap(y, yb, operands[i], ob) &&
                !(y == operands[i] && same_view(&c->chain.operands[i], &yt)))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y overlaps operands[%d]", who, i);
            c->operands[i] = operands[i];
        }
    }
    c->xp = x;
    c->yp = y;
    return TSR_OK;
}

tsr_status tsr_elementwise_chain(tsr_context *ctx, const tsr_chain_desc *chain, const tsr_tensor_desc *x_desc,
                                 const void *x, const void *const *operands, const tsr_tensor_desc *y_desc, void *y) {
    tsr_problem p;
    int64_t n;
    tsr_status st = chain_prepare(ctx, chain, x_desc, x, operands, y_desc, y, true, &p, &n);
    if (st) return st;
    tsr_clear_error();
    return n == 0 ? TSR_OK : tsr_dispatch(ctx, &p);
}

tsr_status tsr_elementwise_chain_supported(const tsr_context *ctx, const tsr_chain_desc *chain,
                                           const tsr_tensor_desc *x_desc, const tsr_tensor_desc *y_desc, char *why,
                                           size_t why_len) {
    tsr_problem p;
    int64_t n;
    tsr_status st = chain_prepare(ctx, chain, x_desc, NULL, NULL, y_desc, NULL, false, &p, &n);
    return tsr_supported_answer(ctx, st, &p, why, why_len);
}

tsr_status tsr_unary(tsr_context *ctx, tsr_unary_op op, const tsr_tensor_desc *x_desc, const void *x,
                     const tsr_tensor_desc *y_desc, void *y) {
    if (x_desc && y_desc) {
        bool same = x_desc->ndim == y_desc->ndim;
        for (int i = 0; same && i < x_desc->ndim && i < TSR_MAX_DIMS; i++) same = x_desc->shape[i] == y_desc->shape[i];
        if (!same) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "unary: x and y must have the same shape");
    }
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    tsr_chain_step s = {.kind = TSR_STEP_UNARY, .unary = op};
    c.steps[c.num_steps++] = s;
    return tsr_elementwise_chain(ctx, &c, x_desc, x, NULL, y_desc, y);
}

tsr_status tsr_binary(tsr_context *ctx, tsr_binary_op op, const tsr_tensor_desc *a_desc, const void *a,
                      const tsr_tensor_desc *b_desc, const void *b, const tsr_tensor_desc *y_desc, void *y) {
    if (!b_desc) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "binary: b_desc is NULL");
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    tsr_chain_step s = {.kind = TSR_STEP_TENSOR, .binary = op, .operand = 0};
    c.steps[c.num_steps++] = s;
    c.operands[c.num_operands++] = *b_desc;
    const void *ops[1] = {b};
    return tsr_elementwise_chain(ctx, &c, a_desc, a, ops, y_desc, y);
}
