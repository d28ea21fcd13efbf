#include "attention_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tt_attention_desc_of(const attn_case *c, tsr_attention_desc *d) {
    tsr_attention_desc_init(d);
    d->batch = c->b, d->heads_q = c->hq, d->heads_kv = c->hkv, d->seq_q = c->sq, d->seq_kv = c->skv, d->head_dim = c->d;
    d->dtype = c->dt, d->causal = c->causal;
}

void tt_attention_default_schedule(const tsr_kernel *k, tsr_context *ctx, const attn_case *c, tsr_schedule *s) {
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_ATTENTION;
    tt_attention_desc_of(c, &p.u.attention.d);
    memset(s, 0, sizeof *s);
    k->default_schedule(&p, ctx, s);
}

void tt_attention_setup(tsr_context *ref, const attn_case *c, attn_data *t) {
    memset(t, 0, sizeof *t);
    tsr_attention_desc d;
    tt_attention_desc_of(c, &d);
    const int64_t nq = c->b * c->hq * c->sq * c->d, nk = c->b * c->hkv * c->skv * c->d, rows = c->b * c->hq * c->sq;
    const size_t es = tsr_dtype_size(c->dt);
    t->nq = nq, t->nk = nk, t->rows = rows, t->es = es;
    void *q = t->q = malloc((size_t)nq * es + 1), *kk = t->k = malloc((size_t)nk * es + 1);
    void *v = t->v = malloc((size_t)nk * es + 1);
    t->want_o = malloc((size_t)nq * es + 1), t->o = malloc((size_t)nq * es + 1);
    t->want_lse = malloc(sizeof(float) * (size_t)(rows + 1)), t->lse = malloc(sizeof(float) * (size_t)(rows + 1));
    tt_fill(q, c->dt, nq, 91, -c->amp, c->amp);
    tt_fill(kk, c->dt, nk, 92, -c->amp, c->amp);
    tt_fill(v, c->dt, nk, 93, -1, 1);
    void *mask = NULL;
    if (c->mask == 1) { /* [b][h][i][j] dense f32; every 3rd row fully -inf */
        int64_t n = c->b * c->hq * c->sq * c->skv;
        float *m = malloc(sizeof(float) * (size_t)(n + 1));
        tt_fill(m, TSR_F32, n, 94, -2, 2);
        for (int64_t r = 0; r < rows; r += 3)
            for (int64_t j = 0; j < c->skv; j++) m[r * c->skv + j] = -INFINITY;
        mask = m, d.mask_dtype = TSR_F32, t->mask_bytes = sizeof(float) * (size_t)n;
        d.mask_strides[0] = c->hq * c->sq * c->skv, d.mask_strides[1] = c->sq * c->skv, d.mask_strides[2] = c->skv;
    } else if (c->mask == 2) { /* [b][i][j] in the dtype, broadcast over heads */
        int64_t n = c->b * c->sq * c->skv;
        mask = malloc((size_t)n * es + 1);
        tt_fill(mask, c->dt, n, 95, -3, 1);
        d.mask_dtype = c->dt, t->mask_bytes = (size_t)n * es;
        d.mask_strides[0] = c->sq * c->skv, d.mask_strides[1] = 0, d.mask_strides[2] = c->skv;
    }
    d.mask = t->mask = mask;
    d.lse = t->want_lse;
    ck_assert_msg(tsr_attention(ref, &d, q, kk, v, t->want_o) == TSR_OK, "%s", tsr_last_error());
    /* the kernel's outputs start as NaN patterns so unwritten rows show */
    memset(t->o, 0xff, (size_t)nq * es);
    memset(t->lse, 0xff, sizeof(float) * (size_t)rows);

    tsr_problem *p = &t->p;
    p->op = TSR_OP_ATTENTION;
    tsr_attention_desc *pd = &p->u.attention.d;
    *pd = d;
    pd->lse = t->lse;
    pd->scale = (float)(1.0 / sqrt((double)c->d)); /* as the front resolves it */
    pd->q_strides[0] = c->hq * c->sq * c->d, pd->q_strides[1] = c->sq * c->d, pd->q_strides[2] = c->d;
    memcpy(pd->o_strides, pd->q_strides, sizeof pd->o_strides);
    pd->k_strides[0] = c->hkv * c->skv * c->d, pd->k_strides[1] = c->skv * c->d, pd->k_strides[2] = c->d;
    memcpy(pd->v_strides, pd->k_strides, sizeof pd->v_strides);
    p->u.attention.q = q, p->u.attention.k = kk, p->u.attention.v = v, p->u.attention.o = t->o;
}

double tt_attention_o_tol(tsr_dtype dt) { return dt == TSR_F32 ? 2e-5 : dt == TSR_F16 ? 2e-3 : 1.6e-2; }

void tt_attention_compare(const attn_data *t, const attn_case *c, const char *kernel, const char *knobs,
                          double o_atol, double o_rtol) {
    char what[200];
    snprintf(what, sizeof what, "%s b%lld h%lld/%lld sq%lld skv%lld d%lld causal%d %s mask%d amp%g %s", kernel,
             (long long)c->b, (long long)c->hq, (long long)c->hkv, (long long)c->sq, (long long)c->skv,
             (long long)c->d, (int)c->causal, tsr_dtype_name(c->dt), c->mask, (double)c->amp, knobs);
    ck_assert_msg(tt_compare(what, t->o, t->want_o, c->dt, t->nq, o_atol, o_rtol) == 0, "%s", what);
    ck_assert_msg(tt_compare(what, t->lse, t->want_lse, TSR_F32, t->rows, 1e-4, 1e-5) == 0, "lse: %s", what);
}

void tt_attention_release(attn_data *t) {
    free(t->q), free(t->k), free(t->v), free(t->mask), free(t->o), free(t->lse), free(t->want_o), free(t->want_lse);
    memset(t, 0, sizeof *t);
}
