/* Attention workloads: contiguous BHSD q, k, v and o, the scale resolved as
 * the op front does, no mask, no lse: the shapes tessera-tune tunes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner.h"

enum { BUF_Q, BUF_K, BUF_V, BUF_O };

static void bind_attention(tsr_problem *p, void *const *bufs) {
    p->u.attention.q = bufs[BUF_Q];
    p->u.attention.k = bufs[BUF_K];
    p->u.attention.v = bufs[BUF_V];
    p->u.attention.o = bufs[BUF_O];
}

static double visible_pairs(int64_t sq, int64_t skv, tsr_causal causal) {
    if (causal == TSR_CAUSAL_NONE) return (double)sq * (double)skv;
    double n = 0;
    for (int64_t i = 0; i < sq; i++) {
        int64_t end = causal == TSR_CAUSAL_TOP_LEFT ? i + 1 : i + 1 + skv - sq;
        n += (double)(end < 0 ? 0 : end > skv ? skv : end);
    }
    return n;
}

tsr_status tsr_workload_attention(tsr_workload *w, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seq_q,
                                  int64_t seq_kv, int64_t head_dim, tsr_causal causal, tsr_dtype t) {
    memset(w, 0, sizeof *w);
    if (batch < 1 || heads_q < 1 || heads_kv < 1 || seq_q < 1 || seq_kv < 1 || head_dim < 1 ||
        heads_q % heads_kv != 0 || (unsigned)causal > TSR_CAUSAL_BOTTOM_RIGHT)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "tune: attention batch %lld, heads %lld/%lld, seq %lld/%lld, head_dim %lld: all >= 1, "
                        "heads_q a multiple of heads_kv",
                        (long long)batch, (long long)heads_q, (long long)heads_kv, (long long)seq_q,
                        (long long)seq_kv, (long long)head_dim);
    if (!tsr_is_float_dtype(t))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: attention dtype %s is not f32, f16 or bf16", tsr_dtype_name(t));
    int64_t nq, nk, bq, bk;
    const int64_t es = (int64_t)tsr_dtype_size(t);
    if (!tsr_mul_i64(batch * heads_q, seq_q * head_dim, &nq) || !tsr_mul_i64(batch * heads_kv, seq_kv * head_dim, &nk) ||
        !tsr_mul_i64(nq, es, &bq) || !tsr_mul_i64(nk, es, &bk) || bq > ((int64_t)1 << 33) || bk > ((int64_t)1 << 33))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: attention shape too large to tune");
    w->num_bufs = 4;
    for (int i = 0; i < 4; i++) w->dtype[i] = t;
    w->bytes[BUF_Q] = w->bytes[BUF_O] = (size_t)bq;
    w->bytes[BUF_K] = w->bytes[BUF_V] = (size_t)bk;
    w->is_output[BUF_O] = true;
    w->check_buf = BUF_O;
    w->bind = bind_attention;

    tsr_problem *p = &w->problem;
    p->op = TSR_OP_ATTENTION;
    tsr_attention_desc *d = &p->u.attention.d;
    tsr_attention_desc_init(d);
    d->batch = batch, d->heads_q = heads_q, d->heads_kv = heads_kv, d->seq_q = seq_q, d->seq_kv = seq_kv;
    d->head_dim = head_dim, d->dtype = t, d->causal = causal;
    d->scale = (float)(1.0 / sqrt((double)head_dim));
    d->q_strides[0] = heads_q * seq_q * head_dim, d->q_strides[1] = seq_q * head_dim, d->q_strides[2] = head_dim;
    memcpy(d->o_strides, d->q_strides, sizeof d->o_strides);
    d->k_strides[0] = heads_kv * seq_kv * head_dim, d->k_strides[1] = seq_kv * head_dim, d->k_strides[2] = head_dim;
    memcpy(d->v_strides, d->k_strides, sizeof d->v_strides);
    tsr_problem_key(p, &w->key);

    w->flops = 4.0 * (double)batch * (double)heads_q * visible_pairs(seq_q, seq_kv, causal) * (double)head_dim;
    w->bytes_moved = 2.0 * (double)bq + 2.0 * (double)bk;
    /* f32 sums in blocks and a vector exp against the reference's double:
     * a few ulps; narrow outputs add their rounding */
    w->atol = t == TSR_F32 ? 2e-5 : t == TSR_F16 ? 2e-3 : 1.6e-2;
    w->rtol = w->atol;
    return TSR_OK;
}

/* A table record of an attention problem back into its workload (for
 * --verify): variant "d=<head_dim>,causal=<mode>", shape
 * batch,heads_q,heads_kv,seq_q,seq_kv, one dtype. */
tsr_status tsr_workload_attention_from_record(tsr_workload *w, const tsr_table_rec_view *v) {
    static const char *const names[] = {"batch", "heads_q", "heads_kv", "seq_q", "seq_kv"};
    static const char *const causal[] = {"none", "top_left", "bottom_right"};
    if (v->ndims != 5) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: attention record shape '%s'", v->shape);
    for (int i = 0; i < 5; i++)
        if (strcmp(v->dim_names[i], names[i]) != 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: attention record shape '%s' is not %s,...", v->shape,
                            names[0]);
    long long d = 0;
    char mode[32] = "";
    int commas = 0;
    for (const char *q = v->variant; *q; q++) commas += *q == ',';
    if (sscanf(v->variant, "d=%lld,causal=%31[a-z_]", &d, mode) != 2 || commas != 1)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: attention records with a mask or lse (%s) cannot be re-timed yet",
                        v->variant);
    int c = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(mode, causal[i])) c = i;
    tsr_dtype t = TSR_F32;
    bool named = false;
    for (int i = TSR_F32; i <= TSR_BF16; i++)
        if (!strcmp(v->dtypes, tsr_dtype_name((tsr_dtype)i))) t = (tsr_dtype)i, named = true;
    if (c < 0 || !named || strcmp(v->layout, "BHSD") != 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: attention record '%s %s %s' is not a BHSD f32/f16/bf16 case",
                        v->dtypes, v->layout, v->variant);
    return tsr_workload_attention(w, v->dims[0], v->dims[1], v->dims[2], v->dims[3], v->dims[4], d, (tsr_causal)c, t);
}
