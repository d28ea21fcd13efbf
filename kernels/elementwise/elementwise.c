/* Elementwise op fronts: unary, binary and fused chains. All three become one
 * problem kind, TSR_OP_CHAIN (tsr_unary is a one-step chain, tsr_binary a
 * TENSOR step with b as operand 0), so there is one set of kernels.
 *
 * Tensor descriptors:
 *  - ndim 0..TSR_MAX_DIMS; ndim 0 is a scalar (one element).
 *  - shape >= 0; a 0 anywhere makes the tensor empty and the call returns
 *    TSR_OK without reading or writing anything (pointers may then be NULL).
 *  - strides >= 0, in elements. A tensor whose strides are ALL 0 is taken as
 *    contiguous row-major for its shape (so a zeroed desc with only a shape
 *    works, like tsr_tensor_contiguous); broadcasting every dim is written
 *    with shape-1 dims instead.
 *  - x, y and operands: f32, f16 or bf16, each its own.
 * Broadcasting follows NumPy with y's shape as the result shape: shapes are
 * aligned from the right, each input dim equals y's or is 1, and an input may
 * have fewer dims than y (never more). The problem handed to the kernels has
 * x and every operand rewritten as views of y's shape with 0 strides on the
 * broadcast dims.
 * Outputs: y's distinct elements must be distinct memory. The check is
 * sufficient, not exact: sorted by stride, each dim's stride must be at least
 * the span of the dims inside it (every dense, transposed or sliced layout
 * passes). On host-addressable backends y may not overlap x or an operand,
 * except exactly: the same pointer, dtype and strides (in-place, each element
 * read before it is written). Overlap is judged by byte ranges, so two
 * interleaved views of one buffer count as overlapping.
 *
 * tsr_elementwise_chain_supported runs the same validation minus what needs
 * the pointers it does not receive (NULL checks, aliasing). */
#include <stdio.h>
#include <string.h>

#include "validate.h"

void tsr_chain_desc_init(tsr_chain_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
}

static tsr_status push(tsr_chain_desc *d, tsr_chain_step s) {
    if (d->num_steps < 0 || d->num_steps >= TSR_MAX_CHAIN_STEPS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc already has %d steps (at most %d)", d->num_steps,
                        TSR_MAX_CHAIN_STEPS);
    d->steps[d->num_steps++] = s;
    return TSR_OK;
}

tsr_status tsr_chain_push_unary(tsr_chain_desc *d, tsr_unary_op op) {
    tsr_clear_error();
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    if ((unsigned)op >= TSR_UNARY_COUNT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: op (%d) is not a tsr_unary_op", (int)op);
    tsr_chain_step s = {.kind = TSR_STEP_UNARY, .unary = op};
    return push(d, s);
}

tsr_status tsr_chain_push_scalar(tsr_chain_desc *d, tsr_binary_op op, float scalar, int scalar_on_left) {
    tsr_clear_error();
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    if ((unsigned)op >= TSR_BINARY_COUNT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: op (%d) is not a tsr_binary_op", (int)op);
    tsr_chain_step s = {.kind = scalar_on_left ? TSR_STEP_SCALAR_LEFT : TSR_STEP_SCALAR, .binary = op,
                        .scalar = scalar};
    return push(d, s);
}

tsr_status tsr_chain_push_tensor(tsr_chain_desc *d, tsr_binary_op op, const tsr_tensor_desc *operand,
                                 int tensor_on_left) {
    tsr_clear_error();
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    if (!operand) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: operand is NULL");
    if ((unsigned)op >= TSR_BINARY_COUNT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: op (%d) is not a tsr_binary_op", (int)op);
    if (d->num_operands < 0 || d->num_operands >= TSR_MAX_CHAIN_OPERANDS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "chain: desc already has %d operands (at most %d)",
                        d->num_operands, TSR_MAX_CHAIN_OPERANDS);
    tsr_chain_step s = {.kind = tensor_on_left ? TSR_STEP_TENSOR_LEFT : TSR_STEP_TENSOR, .binary = op,
                        .operand = d->num_operands};
    tsr_status st = push(d, s);
    if (!st) d->operands[d->num_operands++] = *operand;
    return st;
}

/* ------------------------------------------------------------ validation */

/* How the arguments are called in messages: tsr_binary's are a and b. */
typedef struct names {
    const char *who; /* "unary", "binary", "chain" */
    const char *x;
    bool unary;      /* x and y must have one shape; the step is "op" */
    bool binary;     /* operand 0 is "b"; the step is "op" */
} names;

/* Built by hand: every call names its operands for the checks' messages,
 * and snprintf was a tenth of a small chain's time. */
_Static_assert(TSR_MAX_CHAIN_OPERANDS <= 10, "operand_name writes one digit");
static const char *operand_name(const names *nm, int i, char *buf, size_t n) {
    static const char prefix[] = "operands[";
    if (n < sizeof prefix + 2) return "operand";
    if (nm->binary) {
        buf[0] = 'b', buf[1] = '\0';
        return buf;
    }
    memcpy(buf, prefix, sizeof prefix - 1);
    buf[sizeof prefix - 1] = (char)('0' + i), buf[sizeof prefix] = ']', buf[sizeof prefix + 1] = '\0';
    return buf;
}

static const char *shape_str(const tsr_tensor_desc *t, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}

/* Checks t; all-zero strides become contiguous. *empty when a dim is 0. */
static tsr_status check_tensor(const char *who, const char *name, tsr_tensor_desc *t, bool *empty) {
    if (t->ndim < 0 || t->ndim > TSR_MAX_DIMS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.ndim (%d) must be in 0..%d", who, name, (int)t->ndim,
                        TSR_MAX_DIMS);
    if (!tsr_dtype_valid(t->dtype))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.dtype (%d) is not a tsr_dtype", who, name, (int)t->dtype);
    if (!tsr_is_float_dtype(t->dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s: %s.dtype %s is not supported (f32, f16 or bf16)", who, name,
                        tsr_dtype_name(t->dtype));
    bool all_zero = true;
    *empty = false;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] (%lld) < 0", who, name, i,
                            (long long)t->shape[i]);
        if (t->strides[i] < 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] (%lld) < 0", who, name, i,
                            (long long)t->strides[i]);
        if (t->strides[i]) all_zero = false;
        if (t->shape[i] == 0) *empty = true;
    }
    int64_t n = 1;
    for (int i = 0; i < t->ndim && !*empty; i++)
        if (!tsr_mul_i64(n, t->shape[i], &n)) {
            char s[200];
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the element count of %s %s overflows int64", who, name,
                            shape_str(t, s, sizeof s));
        }
    if (all_zero) {
        /* Bounded by the element count checked above; an empty tensor's
         * strides are never used, so they only need to stay defined. */
        int64_t s = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            t->strides[i] = s;
            if (!tsr_mul_i64(s, t->shape[i] > 0 ? t->shape[i] : 1, &s)) s = INT64_MAX;
        }
    }
    return TSR_OK;
}

/* Elements from the first to one past the last of t (t non-empty). */
static bool tensor_elems(const tsr_tensor_desc *t, int64_t *elems) {
    int64_t last = 0, x;
    for (int i = 0; i < t->ndim; i++)
        if (!tsr_mul_i64(t->shape[i] - 1, t->strides[i], &x) || !tsr_add_i64(last, x, &last)) return false;
    return tsr_add_i64(last, 1, elems);
}

static tsr_status tensor_bytes(const char *who, const char *name, const tsr_tensor_desc *t, int64_t *bytes) {
    int64_t elems;
    if (!tensor_elems(t, &elems) || !tsr_span_bytes(elems, t->dtype, bytes)) {
        char s[200];
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the byte extent of %s %s (its shape and strides) overflows int64",
                        who, name, shape_str(t, s, sizeof s));
    }
    return TSR_OK;
}

/* Rewrites in (checked) as a view of y's shape, NumPy rules. */
static tsr_status broadcast_to(const char *who, const char *name, const tsr_tensor_desc *in,
                               const tsr_tensor_desc *y, tsr_tensor_desc *view) {
    char si[200], sy[200];
    if (in->ndim > y->ndim)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s %s has %d dims, more than y %s (%d)", who, name,
                        shape_str(in, si, sizeof si), (int)in->ndim, shape_str(y, sy, sizeof sy), (int)y->ndim);
    memset(view, 0, sizeof *view);
    view->dtype = in->dtype;
    view->ndim = y->ndim;
    const int off = y->ndim - in->ndim;
    for (int i = 0; i < y->ndim; i++) {
        view->shape[i] = y->shape[i];
        if (i < off) continue; /* a missing leading dim broadcasts */
        int64_t s = in->shape[i - off];
        if (s == y->shape[i]) view->strides[i] = in->strides[i - off];
        else if (s == 1) view->strides[i] = 0;
        else
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: %s.shape[%d] (%lld) does not broadcast to y.shape[%d] (%lld): %s %s vs y %s "
                            "(each dim must equal y's or be 1)",
                            who, name, i - off, (long long)s, i, (long long)y->shape[i], name,
                            shape_str(in, si, sizeof si), shape_str(y, sy, sizeof sy));
    }
    return TSR_OK;
}

/* y (non-empty, extent known not to overflow): sorted by stride, every
 * dim's stride covers the span of the dims inside it. */
static tsr_status check_output_disjoint(const char *who, const tsr_tensor_desc *y) {
    int idx[TSR_MAX_DIMS], n = 0;
    for (int i = 0; i < y->ndim; i++) {
        if (y->shape[i] <= 1) continue;
        if (y->strides[i] == 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: y.strides[%d] is 0 but y.shape[%d] is %lld: an output cannot broadcast", who, i,
                            i, (long long)y->shape[i]);
        idx[n++] = i;
    }
    for (int i = 1; i < n; i++) /* insertion sort by stride; n <= 8 */
        for (int j = i; j > 0 && y->strides[idx[j]] < y->strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    int64_t span = 1; /* elements the inner dims cover; <= y's checked extent */
    for (int i = 0; i < n; i++) {
        int d = idx[i];
        if (y->strides[d] < span)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: y.strides[%d] (%lld) < %lld, the span of y's inner dims: distinct outputs would "
                            "share memory",
                            who, d, (long long)y->strides[d], (long long)span);
        span += y->strides[d] * (y->shape[d] - 1);
    }
    return TSR_OK;
}

static bool same_view(const tsr_tensor_desc *a, const tsr_tensor_desc *y) {
    if (a->dtype != y->dtype || a->ndim != y->ndim) return false;
    for (int i = 0; i < y->ndim; i++)
        if (y->shape[i] > 1 && a->strides[i] != y->strides[i]) return false;
    return true;
}

static bool step_uses_operand(const tsr_chain_step *s) {
    return s->kind == TSR_STEP_TENSOR || s->kind == TSR_STEP_TENSOR_LEFT;
}

static tsr_status check_steps(const names *nm, const tsr_chain_desc *c) {
    const char *who = nm->who;
    if (c->num_steps < 0 || c->num_steps > TSR_MAX_CHAIN_STEPS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: num_steps (%d) must be in 0..%d", who, c->num_steps,
                        TSR_MAX_CHAIN_STEPS);
    if (c->num_operands < 0 || c->num_operands > TSR_MAX_CHAIN_OPERANDS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: num_operands (%d) must be in 0..%d", who, c->num_operands,
                        TSR_MAX_CHAIN_OPERANDS);
    for (int i = 0; i < c->num_steps; i++) {
        const tsr_chain_step *s = &c->steps[i];
        char at[32];
        if (nm->binary || nm->unary) snprintf(at, sizeof at, "op");
        else snprintf(at, sizeof at, "steps[%d].%s", i, s->kind == TSR_STEP_UNARY ? "unary" : "binary");
        if ((unsigned)s->kind > TSR_STEP_TENSOR_LEFT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].kind (%d) is not a tsr_chain_step_kind", who, i,
                            (int)s->kind);
        if (s->kind == TSR_STEP_UNARY && (unsigned)s->unary >= TSR_UNARY_COUNT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%d) is not a tsr_unary_op", who, at, (int)s->unary);
        if (s->kind != TSR_STEP_UNARY && (unsigned)s->binary >= TSR_BINARY_COUNT)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s (%d) is not a tsr_binary_op", who, at, (int)s->binary);
        if (step_uses_operand(s) && (s->operand < 0 || s->operand >= c->num_operands))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: steps[%d].operand (%d) is out of range: num_operands is %d",
                            who, i, s->operand, c->num_operands);
    }
    return TSR_OK;
}

/* Validates everything (the pointers too when check_ptrs) and fills p with
 * the broadcast-normalised problem; *empty when y has no elements. */
static tsr_status chain_prepare(const tsr_context *ctx, const names *nm, const tsr_chain_desc *chain,
                                const tsr_tensor_desc *xd, const void *x, const void *const *operands,
                                const tsr_tensor_desc *yd, void *y, bool check_ptrs, tsr_problem *p, bool *empty) {
    const char *who = nm->who;
    char name[32], s1[200], s2[200];
    tsr_status st = tsr_check_desc(ctx, chain, chain ? chain->size : 0, sizeof *chain, who, "tsr_chain_desc_init");
    if (st) return st;
    if (!xd) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s_desc is NULL", who, nm->x);
    if (!yd) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y_desc is NULL", who);
    if ((st = check_steps(nm, chain))) return st;

    memset(p, 0, sizeof *p);
    p->op = TSR_OP_CHAIN;
    tsr_chain_problem *c = &p->u.chain;
    c->chain = *chain;
    c->chain.size = sizeof c->chain;
    tsr_tensor_desc xt = *xd, yt = *yd;
    bool x_empty, y_empty, o_empty;
    if ((st = check_tensor(who, nm->x, &xt, &x_empty)) || (st = check_tensor(who, "y", &yt, &y_empty))) return st;
    if (nm->unary) {
        bool same = xt.ndim == yt.ndim;
        for (int i = 0; same && i < xt.ndim; i++) same = xt.shape[i] == yt.shape[i];
        if (!same)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "unary: x.shape %s differs from y.shape %s (tsr_unary does not broadcast; "
                            "tsr_elementwise_chain does)",
                            shape_str(&xt, s1, sizeof s1), shape_str(&yt, s2, sizeof s2));
    }
    if ((st = broadcast_to(who, nm->x, &xt, &yt, &c->x))) return st;
    c->y = yt;
    for (int i = 0; i < chain->num_operands; i++) {
        tsr_tensor_desc o = chain->operands[i];
        operand_name(nm, i, name, sizeof name);
        if ((st = check_tensor(who, name, &o, &o_empty)) ||
            (st = broadcast_to(who, name, &o, &yt, &c->chain.operands[i])))
            return st;
    }
    *empty = y_empty;
    if (y_empty) return TSR_OK; /* nothing is read or written */

    int64_t yb, xb, ob[TSR_MAX_CHAIN_OPERANDS];
    if ((st = tensor_bytes(who, "y", &yt, &yb)) || (st = tensor_bytes(who, nm->x, &c->x, &xb))) return st;
    for (int i = 0; i < chain->num_operands; i++)
        if ((st = tensor_bytes(who, operand_name(nm, i, name, sizeof name), &c->chain.operands[i], &ob[i])))
            return st;
    if ((st = check_output_disjoint(who, &yt))) return st;
    if (!check_ptrs) return TSR_OK;

    if (!x) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, nm->x);
    if (!y) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: y is NULL", who);
    bool used[TSR_MAX_CHAIN_OPERANDS] = {false};
    for (int i = 0; i < chain->num_steps; i++)
        if (step_uses_operand(&chain->steps[i])) used[chain->steps[i].operand] = true;
    for (int i = 0; i < chain->num_operands; i++) {
        if (!used[i]) continue; /* an unused operand is never read */
        if (!operands)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: operands is NULL but steps use %d operand(s)", who,
                            chain->num_operands);
        if (!operands[i])
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, operand_name(nm, i, name, sizeof name));
        c->operands[i] = operands[i];
    }
    if (ctx->ops->host_addressable) {
        if (tsr_ranges_overlap(y, yb, x, xb) && !(y == x && same_view(&c->x, &yt)))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: y overlaps %s (only exact in-place is allowed: the same pointer, dtype and strides)",
                            who, nm->x);
        for (int i = 0; i < chain->num_operands; i++)
            if (c->operands[i] && tsr_ranges_overlap(y, yb, c->operands[i], ob[i]) &&
                !(y == c->operands[i] && same_view(&c->chain.operands[i], &yt)))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                                "%s: y overlaps %s (only exact in-place is allowed: the same pointer, dtype and "
                                "strides)",
                                who, operand_name(nm, i, name, sizeof name));
    }
    c->xp = x;
    c->yp = y;
    return TSR_OK;
}

static tsr_status chain_call(tsr_context *ctx, const names *nm, const tsr_chain_desc *chain,
                             const tsr_tensor_desc *xd, const void *x, const void *const *operands,
                             const tsr_tensor_desc *yd, void *y) {
    tsr_problem p;
    bool empty = false;
    tsr_status st = chain_prepare(ctx, nm, chain, xd, x, operands, yd, y, true, &p, &empty);
    if (st) return st;
    return empty ? TSR_OK : tsr_dispatch(ctx, &p);
}

/* ---------------------------------------------------------------- entries */

tsr_status tsr_elementwise_chain(tsr_context *ctx, const tsr_chain_desc *chain, const tsr_tensor_desc *x_desc,
                                 const void *x, const void *const *operands, const tsr_tensor_desc *y_desc, void *y) {
    tsr_clear_error();
    const names nm = {"chain", "x", false, false};
    return chain_call(ctx, &nm, chain, x_desc, x, operands, y_desc, y);
}

tsr_status tsr_elementwise_chain_supported(const tsr_context *ctx, const tsr_chain_desc *chain,
                                           const tsr_tensor_desc *x_desc, const tsr_tensor_desc *y_desc, char *why,
                                           size_t why_len) {
    tsr_clear_error();
    const names nm = {"chain", "x", false, false};
    tsr_problem p;
    bool empty = false;
    tsr_status st = chain_prepare(ctx, &nm, chain, x_desc, NULL, NULL, y_desc, NULL, false, &p, &empty);
    if (st == TSR_OK && empty) return tsr_report_why(TSR_OK, why, why_len); /* runs no kernel */
    return tsr_supported_answer(ctx, st, &p, why, why_len);
}

tsr_status tsr_unary(tsr_context *ctx, tsr_unary_op op, const tsr_tensor_desc *x_desc, const void *x,
                     const tsr_tensor_desc *y_desc, void *y) {
    tsr_clear_error();
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    c.num_steps = 1;
    c.steps[0].kind = TSR_STEP_UNARY;
    c.steps[0].unary = op;
    const names nm = {"unary", "x", true, false};
    return chain_call(ctx, &nm, &c, x_desc, x, NULL, y_desc, y);
}

tsr_status tsr_binary(tsr_context *ctx, tsr_binary_op op, const tsr_tensor_desc *a_desc, const void *a,
                      const tsr_tensor_desc *b_desc, const void *b, const tsr_tensor_desc *y_desc, void *y) {
    tsr_clear_error();
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "binary: ctx is NULL");
    if (!b_desc) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "binary: b_desc is NULL");
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    c.num_steps = 1;
    c.steps[0].kind = TSR_STEP_TENSOR;
    c.steps[0].binary = op;
    c.steps[0].operand = 0;
    c.num_operands = 1;
    c.operands[0] = *b_desc;
    const void *ops[1] = {b};
    const names nm = {"binary", "a", false, true};
    return chain_call(ctx, &nm, &c, a_desc, a, ops, y_desc, y);
}
