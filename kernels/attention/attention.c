/* Attention (SDPA forward) op front: validate, fill strides, dispatch. */
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
}

/* Fills all-zero strides as contiguous BHSD and returns the span in elements. */
static tsr_status fill_strides(const char *name, int64_t st[3], int64_t B, int64_t H, int64_t S,
                               int64_t D, int64_t *span) {
    if (st[0] == 0 && st[1] == 0 && st[2] == 0) {
        int64_t sd, hsd;
        if (!tsr_mul_i64(S, D, &sd) || !tsr_mul_i64(H, sd, &hsd))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the size of %s overflows int64", name);
        st[2] = D, st[1] = sd, st[0] = hsd;
    }
    if (st[0] < 0 || st[1] < 0 || st[2] < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: %s_strides (%lld, %lld, %lld) must be >= 0", name,
                        (long long)st[0], (long long)st[1], (long long)st[2]);
    int64_t a, b, c, e;
    if (!tsr_mul_i64(B - 1, st[0], &a) || !tsr_mul_i64(H - 1, st[1], &b) ||
        !tsr_mul_i64(S > 0 ? S - 1 : 0, st[2], &c) || !tsr_add_i64(a, b, &e) || !tsr_add_i64(e, c, &e) ||
        !tsr_add_i64(e, D, &e) || !tsr_mul_i64(H, S, &a) || !tsr_mul_i64(a, D, &a) || !tsr_mul_i64(a, B, &a))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the size of %s overflows int64", name);
    *span = S > 0 ? e : 0;
    return TSR_OK;
}

/* Distinct output rows must not overlap: sort the three (stride, count)
 * pairs and require each stride to cover the span of the inner ones. */
static bool rows_disjoint(const int64_t st[3], int64_t B, int64_t H, int64_t S, int64_t D) {
    int64_t s[3] = {st[0], st[1], st[2]}, n[3] = {B, H, S};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (s[j] < s[i] || (s[j] == s[i] && n[j] < n[i])) {
                int64_t t = s[i]; s[i] = s[j]; s[j] = t;
                t = n[i]; n[i] = n[j]; n[j] = t;
            }
    int64_t span = D;
    for (int i = 0; i < 3; i++) {
        if (n[i] <= 1) continue;
        if (s[i] < span) return false;
        span = s[i] * (n[i] - 1) + span;
    }
    return true;
}

static tsr_status attn_prepare(const tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k,
                               const void *v, void *o, bool check_ptrs, tsr_problem *p) {
    tsr_status st = tsr_check_desc(ctx, d, d ? d->size : 0, sizeof *d, "attention", "tsr_attention_desc_init");
    if (st) return st;
    if (d->batch < 1 || d->heads_q < 1 || d->heads_kv < 1 || d->head_dim < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: batch (%lld), heads_q (%lld), heads_kv (%lld) and head_dim (%lld) must be >= 1",
                        (long long)d->batch, (long long)d->heads_q, (long long)d->heads_kv, (long long)d->head_dim);
    if (d->seq_q < 0 || d->seq_kv < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: seq_q (%lld) and seq_kv (%lld) must be >= 0",
                        (long long)d->seq_q, (long long)d->seq_kv);
    if (d->heads_q % d->heads_kv)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: heads_q (%lld) is not a multiple of heads_kv (%lld)",
                        (long long)d->heads_q, (long long)d->heads_kv);
    if (d->dtype != TSR_F32 && d->dtype != TSR_F16 && d->dtype != TSR_BF16)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention: dtype %s is not supported (f32, f16, bf16)",
                        tsr_dtype_name(d->dtype));
    if ((unsigned)d->causal > TSR_CAUSAL_BOTTOM_RIGHT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: causal (%d) is not a tsr_causal", (int)d->causal);
    if (!isfinite(d->scale) || d->scale < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: scale (%g) must be finite and >= 0 (0 = 1/sqrt(head_dim))",
                        (double)d->scale);
    if (d->mask && d->mask_dtype != TSR_F32 && d->mask_dtype != d->dtype)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention: mask_dtype %s must be f32 or the tensors' %s",
                        tsr_dtype_name(d->mask_dtype), tsr_dtype_name(d->dtype));
    if (d->mask_strides[0] < 0 || d->mask_strides[1] < 0 || d->mask_strides[2] < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: mask_strides must be >= 0");

    memset(p, 0, sizeof *p);
    p->op = TSR_OP_ATTENTION;
    tsr_attention_problem *a = &p->u.attention;
    a->d = *d;
    const int64_t B = d->batch, D = d->head_dim;
    int64_t qs, ks, vs, os;
    if ((st = fill_strides("q", a->d.q_strides, B, d->heads_q, d->seq_q, D, &qs)) ||
        (st = fill_strides("k", a->d.k_strides, B, d->heads_kv, d->seq_kv, D, &ks)) ||
        (st = fill_strides("v", a->d.v_strides, B, d->heads_kv, d->seq_kv, D, &vs)) ||
        (st = fill_strides("o", a->d.o_strides, B, d->heads_q, d->seq_q, D, &os)))
        return st;
    if (!rows_disjoint(a->d.o_strides, B, d->heads_q, d->seq_q, D))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "attention: o_strides (%lld, %lld, %lld) make distinct output rows overlap",
                        (long long)a->d.o_strides[0], (long long)a->d.o_strides[1], (long long)a->d.o_strides[2]);
    int64_t esz = (int64_t)tsr_dtype_size(d->dtype), qb, kb, vb, ob, lb = 0, mb = 0;
    if (!tsr_mul_i64(qs, esz, &qb) || !tsr_mul_i64(ks, esz, &kb) || !tsr_mul_i64(vs, esz, &vb) ||
        !tsr_mul_i64(os, esz, &ob))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: a tensor's byte size overflows int64");
    if (d->lse && (!tsr_mul_i64(B * d->heads_q, d->seq_q, &lb) || !tsr_mul_i64(lb, 4, &lb)))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the lse size overflows int64");
    if (d->mask) {
        int64_t a0, a1, a2, e;
        if (!tsr_mul_i64(B - 1, d->mask_strides[0], &a0) || !tsr_mul_i64(d->heads_q - 1, d->mask_strides[1], &a1) ||
            !tsr_mul_i64(d->seq_q > 0 ? d->seq_q - 1 : 0, d->mask_strides[2], &a2) || !tsr_add_i64(a0, a1, &e) ||
            !tsr_add_i64(e, a2, &e) || !tsr_add_i64(e, d->seq_kv, &e) ||
            !tsr_mul_i64(e, (int64_t)tsr_dtype_size(d->mask_dtype), &mb))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: the mask size overflows int64");
    }
    if (a->d.scale == 0.0f) a->d.scale = (float)(1.0 / sqrt((double)D));
    if (check_ptrs && d->seq_q > 0) {
        if (!q || !o) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: %s is NULL", q ? "o" : "q");
        if (d->seq_kv > 0 && (!k || !v))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: %s is NULL", k ? "v" : "k");
        if (ctx->ops->host_addressable) {
            const void *ins[4] = {q, k, v, d->mask};
            const int64_t inb[4] = {qb, kb, vb, mb};
            const char *names[4] = {"q", "k", "v", "mask"};
            for (int i = 0; i < 4; i++) {
                if (tsr_ranges_overlap(o, ob, ins[i], inb[i]))
                    return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: o overlaps %s", names[i]);
                if (tsr_ranges_overlap(d->lse, lb, ins[i], inb[i]))
                    return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: lse overlaps %s", names[i]);
            }
            if (tsr_ranges_overlap(o, ob, d->lse, lb))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "attention: o overlaps lse");
        }
    }
    a->q = q, a->k = k, a->v = v, a->o = o;
    return TSR_OK;
}

tsr_status tsr_attention(tsr_context *ctx, const tsr_attention_desc *desc, const void *q, const void *k,
                         const void *v, void *o) {
    tsr_problem p;
    tsr_status st = attn_prepare(ctx, desc, q, k, v, o, true, &p);
    if (st) return st;
    tsr_clear_error();
    if (desc->seq_q == 0) return TSR_OK;
    return tsr_dispatch(ctx, &p);
}

tsr_status tsr_attention_supported(const tsr_context *ctx, const tsr_attention_desc *desc, char *why,
                                   size_t why_len) {
    tsr_problem p;
    return tsr_supported_answer(ctx, attn_prepare(ctx, desc, NULL, NULL, NULL, NULL, false, &p), &p, why, why_len);
}
