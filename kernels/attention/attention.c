/* Attention (SDPA forward) op front: validate every argument, fill the
 * strides, resolve the scale, dispatch. Nothing is written before
 * validation has passed.
 *
 * Pointers: q and o may be NULL when seq_q == 0, k and v when seq_kv == 0,
 * since nothing is then read or written through them. Fields that only
 * matter with a mask (mask_dtype, mask_strides) are checked only when the
 * mask is given. */
#include <math.h>
#include <string.h>

#include "validate.h"

void tsr_attention_desc_init(tsr_attention_desc *d) {
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->size = sizeof *d;
    d->batch = d->heads_q = d->heads_kv = d->seq_q = d->seq_kv = d->head_dim = 1;
    d->dtype = TSR_F32;
    d->mask_dtype = TSR_F32;
    d->causal = TSR_CAUSAL_NONE;
}

static tsr_status at_least(const char *name, int64_t v, int64_t min) {
    if (v >= min) return TSR_OK;
    return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: %s (%lld) must be >= %lld", name, (long long)v,
                    (long long)min);
}

static tsr_status shape_check(const tsr_attention_desc *d) {
    tsr_status st;
    if ((st = at_least("batch", d->batch, 1)) || (st = at_least("heads_q", d->heads_q, 1)) ||
        (st = at_least("heads_kv", d->heads_kv, 1)) || (st = at_least("head_dim", d->head_dim, 1)) ||
        (st = at_least("seq_q", d->seq_q, 0)) || (st = at_least("seq_kv", d->seq_kv, 0)))
        return st;
    if (d->heads_q % d->heads_kv)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: heads_q (%lld) is not a multiple of heads_kv (%lld) (GQA groups must be whole)",
                        (long long)d->heads_q, (long long)d->heads_kv);
    return TSR_OK;
}

static tsr_status enum_check(const tsr_attention_desc *d) {
    if (!tsr_dtype_valid(d->dtype))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: dtype (%d) is not a tsr_dtype value", (int)d->dtype);
    if (!tsr_is_float_dtype(d->dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention: dtype %s is not supported (f32, f16 or bf16)",
                        tsr_dtype_name(d->dtype));
    if ((unsigned)d->causal > (unsigned)TSR_CAUSAL_BOTTOM_RIGHT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: causal (%d) is not a tsr_causal (none 0, top_left 1, bottom_right 2)",
                        (int)d->causal);
    if (!isfinite(d->scale) || d->scale < 0.0f)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: scale (%g) must be finite and >= 0 (0 = 1/sqrt(head_dim))", (double)d->scale);
    if (d->mask) {
        if (!tsr_dtype_valid(d->mask_dtype))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: mask_dtype (%d) is not a tsr_dtype value",
                            (int)d->mask_dtype);
        if (d->mask_dtype != TSR_F32 && d->mask_dtype != d->dtype)
            return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention: mask_dtype %s is not supported (f32 or dtype %s)",
                            tsr_dtype_name(d->mask_dtype), tsr_dtype_name(d->dtype));
    }
    return TSR_OK;
}

/* Fills an all-zero stride triple as contiguous BHSD, rejects negative
 * strides, and returns the bytes spanned by the [B][H][S][D] view. */
static tsr_status tensor_layout(const char *name, int64_t st[3], int64_t B, int64_t H, int64_t S, int64_t D,
                                tsr_dtype t, int64_t *bytes) {
    if (st[0] == 0 && st[1] == 0 && st[2] == 0) {
        int64_t sd, hsd;
        if (!tsr_mul_i64(S, D, &sd) || !tsr_mul_i64(H, sd, &hsd))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the size of %s (%lld x %lld x %lld x %lld) "
                            "overflows int64", name, (long long)B, (long long)H, (long long)S, (long long)D);
        st[0] = hsd, st[1] = sd, st[2] = D;
    }
    if (st[0] < 0 || st[1] < 0 || st[2] < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: %s_strides (%lld, %lld, %lld) must be >= 0", name,
                        (long long)st[0], (long long)st[1], (long long)st[2]);
    *bytes = 0;
    if (S == 0) return TSR_OK;
    int64_t a, b, c, e;
    if (!tsr_mul_i64(B - 1, st[0], &a) || !tsr_mul_i64(H - 1, st[1], &b) || !tsr_mul_i64(S - 1, st[2], &c) ||
        !tsr_add_i64(a, b, &e) || !tsr_add_i64(e, c, &e) || !tsr_add_i64(e, D, &e) || !tsr_span_bytes(e, t, bytes))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: the extent of %s (%lld x %lld x %lld x %lld with %s_strides %lld, %lld, %lld) "
                        "overflows int64", name, (long long)B, (long long)H, (long long)S, (long long)D, name,
                        (long long)st[0], (long long)st[1], (long long)st[2]);
    return TSR_OK;
}

/* Distinct output rows must not share an element, or parallel rows would
 * race. Sufficient test: order the (stride, count) pairs by stride and
 * require each stride to step over everything the inner ones span. */
static tsr_status rows_disjoint(const int64_t st[3], int64_t B, int64_t H, int64_t S, int64_t D) {
    static const char *const dim[3] = {"batch", "head", "seq"};
    int idx[3] = {0, 1, 2};
    const int64_t n[3] = {B, H, S};
    if (S == 0) return TSR_OK; /* no rows at all */
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && st[idx[j]] < st[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = t;
        }
    int64_t span = D; /* elements spanned by one step of the next dimension */
    for (int r = 0; r < 3; r++) {
        int i = idx[r];
        if (n[i] <= 1) continue;
        if (st[i] < span)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "attention: o_strides (%lld, %lld, %lld) make distinct output rows overlap: the %s stride "
                            "(%lld) is smaller than the %lld elements spanned by the dimensions inside it",
                            (long long)st[0], (long long)st[1], (long long)st[2], dim[i], (long long)st[i],
                            (long long)span);
        /* the terms add up to o's extent, already known to fit */
        span += st[i] * (n[i] - 1);
    }
    return TSR_OK;
}

/* Bytes the mask may be read from: [b][h][i][j] through mask_strides. */
static tsr_status mask_extent(const tsr_attention_desc *d, int64_t *bytes) {
    const int64_t *ms = d->mask_strides;
    if (ms[0] < 0 || ms[1] < 0 || ms[2] < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: mask_strides (%lld, %lld, %lld) must be >= 0 "
                        "(0 broadcasts)", (long long)ms[0], (long long)ms[1], (long long)ms[2]);
    *bytes = 0;
    if (d->seq_q == 0 || d->seq_kv == 0) return TSR_OK;
    int64_t a, b, c, e;
    if (!tsr_mul_i64(d->batch - 1, ms[0], &a) || !tsr_mul_i64(d->heads_q - 1, ms[1], &b) ||
        !tsr_mul_i64(d->seq_q - 1, ms[2], &c) || !tsr_add_i64(a, b, &e) || !tsr_add_i64(e, c, &e) ||
        !tsr_add_i64(e, d->seq_kv, &e) || !tsr_span_bytes(e, d->mask_dtype, bytes))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: the extent of the mask (mask_strides %lld, %lld, %lld) overflows int64",
                        (long long)ms[0], (long long)ms[1], (long long)ms[2]);
    return TSR_OK;
}

typedef struct extents {
    int64_t q, k, v, o, mask, lse; /* bytes */
} extents;

static tsr_status pointer_check(const tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k,
                                const void *v, const void *o, const extents *x) {
    if (d->seq_q > 0 && !q) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: q is NULL (seq_q %lld > 0)",
                                            (long long)d->seq_q);
    if (d->seq_kv > 0 && !k) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: k is NULL (seq_kv %lld > 0)",
                                             (long long)d->seq_kv);
    if (d->seq_kv > 0 && !v) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: v is NULL (seq_kv %lld > 0)",
                                             (long long)d->seq_kv);
    if (d->seq_q > 0 && !o) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: o is NULL (seq_q %lld > 0)",
                                            (long long)d->seq_q);
    /* Device handles (cl_mem...) cannot be compared as addresses. */
    if (!ctx->ops->host_addressable) return TSR_OK;
    const void *in[4] = {q, k, v, d->mask};
    const int64_t in_bytes[4] = {x->q, x->k, x->v, x->mask};
    static const char *const in_name[4] = {"q", "k", "v", "the mask"};
    for (int i = 0; i < 4; i++) {
        if (tsr_ranges_overlap(o, x->o, in[i], in_bytes[i]))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: o overlaps %s (outputs must not alias inputs)",
                            in_name[i]);
        if (tsr_ranges_overlap(d->lse, x->lse, in[i], in_bytes[i]))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: lse overlaps %s (outputs must not alias inputs)",
                            in_name[i]);
    }
    if (tsr_ranges_overlap(o, x->o, d->lse, x->lse))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: o overlaps lse");
    return TSR_OK;
}

/* Validates d (and the pointers when check_ptrs) and fills p. */
static tsr_status attn_prepare(const tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k,
                               const void *v, void *o, bool check_ptrs, tsr_problem *p) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, "attention", "tsr_attention_desc_init");
    if (st) return st;
    if ((st = shape_check(d)) || (st = enum_check(d))) return st;

    tsr_attention_desc n = *d;
    const int64_t B = d->batch, Hq = d->heads_q, Hkv = d->heads_kv, Sq = d->seq_q, Skv = d->seq_kv,
                  D = d->head_dim;
    extents x = {0, 0, 0, 0, 0, 0};
    if ((st = tensor_layout("q", n.q_strides, B, Hq, Sq, D, d->dtype, &x.q)) ||
        (st = tensor_layout("k", n.k_strides, B, Hkv, Skv, D, d->dtype, &x.k)) ||
        (st = tensor_layout("v", n.v_strides, B, Hkv, Skv, D, d->dtype, &x.v)) ||
        (st = tensor_layout("o", n.o_strides, B, Hq, Sq, D, d->dtype, &x.o)))
        return st;
    if ((st = rows_disjoint(n.o_strides, B, Hq, Sq, D))) return st;
    if (d->mask && (st = mask_extent(d, &x.mask))) return st;
    if (d->lse && (!tsr_mul_i64(B, Hq, &x.lse) || !tsr_mul_i64(x.lse, Sq, &x.lse) ||
                   !tsr_span_bytes(x.lse, TSR_F32, &x.lse)))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the size of lse (%lld x %lld x %lld f32) overflows "
                        "int64", (long long)B, (long long)Hq, (long long)Sq);
    if (check_ptrs && (st = pointer_check(ctx, d, q, k, v, o, &x))) return st;

    if (n.scale == 0.0f) n.scale = (float)(1.0 / sqrt((double)D));
    memset(p, 0, sizeof *p);
    p->op = TSR_OP_ATTENTION;
    p->u.attention.d = n;
    p->u.attention.q = q;
    p->u.attention.k = k;
    p->u.attention.v = v;
    p->u.attention.o = o;
    return TSR_OK;
}

tsr_status tsr_attention(tsr_context *ctx, const tsr_attention_desc *desc, const void *q, const void *k,
                         const void *v, void *o) {
    tsr_problem p;
    tsr_status st = attn_prepare(ctx, desc, q, k, v, o, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (desc->seq_q == 0) return TSR_OK; /* no query rows: nothing to read or write */
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_attention_supported(const tsr_context *ctx, const tsr_attention_desc *desc, char *why,
                                   size_t why_len) {
    tsr_problem p;
    return tsr_supported_answer(ctx, attn_prepare(ctx, desc, NULL, NULL, NULL, NULL, false, &p), &p, why, why_len);
}
