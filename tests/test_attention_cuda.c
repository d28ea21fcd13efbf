/* The sm80 flash-attention kernel on its own: every (block_q, block_kv,
 * warps) shape it instantiates and every kv_splits value, on shapes that
 * cross each block boundary (seq 1, primes, blocks +- 1), head dims 64, 96,
 * 128 and 256, GQA ratios 1/4/8, both causal alignments with seq_q !=
 * seq_kv (rows that see no key), additive masks with fully masked rows,
 * huge logits, decode shapes with long seq_kv split over blocks, lse, and
 * strided (BSHD) tensors, against the reference. Without a GPU the suite
 * prints SKIP and passes having checked nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_check.h"

/* Runs kernel k with schedule s on device copies of the case's buffers;
 * returns 1 when the kernel took the case and the schedule applied. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const attn_case *c, const tsr_schedule *s) {
    attn_data t;
    tt_attention_setup(ref, c, &t);
    /* device copies of the operands and of the NaN-filled outputs */
    const size_t qb = (size_t)t.nq * t.es, kb = (size_t)t.nk * t.es, lb = sizeof(float) * (size_t)t.rows;
    void *dq = tt_upload(ctx, t.q, qb), *dk = tt_upload(ctx, t.k, kb), *dv = tt_upload(ctx, t.v, kb);
    void *dout = tt_upload(ctx, t.o, qb);
    float *dl = tt_upload(ctx, t.lse, lb);
    void *dmask = t.mask ? tt_upload(ctx, t.mask, t.mask_bytes) : NULL;
    tsr_problem p = t.p;
    p.u.attention.d.mask = dmask;
    p.u.attention.d.lse = dl;
    p.u.attention.q = dq, p.u.attention.k = dk, p.u.attention.v = dv, p.u.attention.o = dout;
    int ran = 0;
    char why[160];
    if (!tsr_kernel_supports(k, &p, ctx, why, sizeof why) || (k->schedule_valid && !k->schedule_valid(&p, ctx, s))) goto done;
    ck_assert_msg(k->run(ctx, &p, s) == TSR_OK, "%s", tsr_last_error());
    ck_assert_int_eq(tsr_synchronize(ctx), TSR_OK);
    tt_download(ctx, t.o, dout, qb);
    tt_download(ctx, t.lse, dl, lb);
    char knobs[64];
    snprintf(knobs, sizeof knobs, "bq%d bk%d warps%d split%d", s->v[0], s->v[1], s->v[2], s->v[3]);
    tt_attention_compare(&t, c, k->name, knobs, tt_attention_o_tol(c->dt), tt_attention_o_tol(c->dt));
    ran = 1;
done:
    tt_free(ctx, dq), tt_free(ctx, dk), tt_free(ctx, dv), tt_free(ctx, dout), tt_free(ctx, dl), tt_free(ctx, dmask);
    tt_attention_release(&t);
    return ran;
}

START_TEST(flash_knobs_shapes) {
    tsr_context *ctx = tt_cuda_context("attention_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = tsr_registry_find("attention.sm80.flash");
    ck_assert_ptr_nonnull(k);
    const attn_case cases[] = {
        {1, 1, 1, 1, 1, 64, TSR_CAUSAL_NONE, TSR_F16, 0, 1},
        {2, 4, 1, 7, 67, 64, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, 1, 1},    /* GQA 4, seq_q < seq_kv, masked rows */
        {1, 8, 1, 1, 1031, 128, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},         /* decode, MQA 8 */
        {2, 8, 1, 3, 2053, 128, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F16, 0, 1},  /* decode, 3 queries */
        {1, 3, 3, 65, 33, 96, TSR_CAUSAL_TOP_LEFT, TSR_F16, 2, 2},        /* seq_q > seq_kv, rows with no key */
        {1, 3, 3, 65, 33, 96, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, 0, 1},   /* the first rows see nothing */
        {1, 2, 2, 129, 257, 128, TSR_CAUSAL_TOP_LEFT, TSR_F16, 1, 1},
        {1, 8, 2, 131, 263, 128, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, 0, 1}, /* GQA 4 */
        {2, 2, 2, 127, 129, 64, TSR_CAUSAL_NONE, TSR_F16, 2, 1},
        {1, 1, 1, 17, 300, 64, TSR_CAUSAL_NONE, TSR_F16, 0, 30},          /* huge logits */
        {1, 2, 1, 67, 61, 256, TSR_CAUSAL_TOP_LEFT, TSR_BF16, 0, 1},
        {1, 4, 4, 13, 517, 256, TSR_CAUSAL_NONE, TSR_F16, 1, 1},          /* seq_q <= 16: the packed path */
        {1, 16, 2, 2, 700, 64, TSR_CAUSAL_TOP_LEFT, TSR_BF16, 0, 1},      /* GQA 8, top-left decode: 1-2 keys */
    };
    int ran = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int ran_case = 0;
        for (int bq = 0; bq < k->knobs[0].num_values; bq++)
            for (int bk = 0; bk < k->knobs[1].num_values; bk++)
                for (int w = 0; w < k->knobs[2].num_values; w++)
                    for (int sp = 0; sp < k->knobs[3].num_values; sp++) {
                        tsr_schedule s;
                        memset(&s, 0, sizeof s);
                        s.v[0] = k->knobs[0].values[bq], s.v[1] = k->knobs[1].values[bk];
                        s.v[2] = k->knobs[2].values[w], s.v[3] = k->knobs[3].values[sp];
                        ran_case += check(ctx, ref, k, &cases[ci], &s);
                    }
        /* every case runs at least one tile shape; decode ones every split count too */
        const int want = cases[ci].sq <= 16 ? k->knobs[3].num_values : 1;
        ck_assert_msg(ran_case >= want, "case %zu: %d schedules ran, want >= %d", ci, ran_case, want);
        ran += ran_case;
    }
    /* the heuristic's schedule, decode and prefill */
    const attn_case dflt[] = {{1, 32, 8, 1, 4099, 128, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},
                              {2, 4, 4, 200, 200, 64, TSR_CAUSAL_TOP_LEFT, TSR_F16, 0, 1},
                              {1, 4, 1, 300, 333, 96, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F16, 0, 1}};
    for (int ci = 0; ci < 3; ci++) {
        tsr_schedule s;
        tt_attention_default_schedule(k, ctx, &dflt[ci], &s);
        ran += check(ctx, ref, k, &dflt[ci], &s);
    }
    printf("attention_cuda: flash: %d kernel runs checked\n", ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Dispatch: f16/bf16 at the supported head dims take the flash kernel,
 * f32, head dim 80 and odd strides go to the row-wise kernel, and the
 * public call through it matches the reference on BSHD (strided) tensors. */
START_TEST(dispatch_and_strides) {
    tsr_context *ctx = tt_cuda_context("attention_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_ATTENTION;
    tsr_attention_desc *d = &p.u.attention.d;
    tsr_attention_desc_init(d);
    d->batch = 2, d->heads_q = 4, d->heads_kv = 2, d->seq_q = 33, d->seq_kv = 45, d->head_dim = 64, d->dtype = TSR_F16;
    const int64_t qs[3] = {33 * 4 * 64, 64, 4 * 64}, ks[3] = {45 * 2 * 64, 64, 2 * 64}; /* BSHD */
    memcpy(d->q_strides, qs, sizeof qs), memcpy(d->o_strides, qs, sizeof qs);
    memcpy(d->k_strides, ks, sizeof ks), memcpy(d->v_strides, ks, sizeof ks);
    p.u.attention.q = p.u.attention.k = p.u.attention.v = p.u.attention.o = (void *)(uintptr_t)256;
    char why[200];
    const tsr_kernel *k = tsr_dispatch_select(ctx, &p, why, sizeof why);
    ck_assert_msg(k && strcmp(k->name, "attention.sm80.flash") == 0, "%s", k ? k->name : why);
    d->head_dim = 80;
    k = tsr_dispatch_select(ctx, &p, why, sizeof why);
    ck_assert_msg(k && strcmp(k->name, "attention.sm80.rowwise") == 0, "%s", k ? k->name : why);
    d->head_dim = 64, d->dtype = TSR_F32;
    k = tsr_dispatch_select(ctx, &p, why, sizeof why);
    ck_assert_msg(k && strcmp(k->name, "attention.sm80.rowwise") == 0, "%s", k ? k->name : why);

    /* BSHD through the public API, against the reference */
    d->dtype = TSR_BF16;
    const int64_t nq = 2 * 33 * 4 * 64, nk = 2 * 45 * 2 * 64;
    uint16_t *q = malloc(2 * nq), *kk = malloc(2 * nk), *v = malloc(2 * nk), *o1 = malloc(2 * nq), *o2 = malloc(2 * nq);
    tt_fill(q, TSR_BF16, nq, 1, -1, 1), tt_fill(kk, TSR_BF16, nk, 2, -1, 1), tt_fill(v, TSR_BF16, nk, 3, -1, 1);
    d->causal = TSR_CAUSAL_BOTTOM_RIGHT;
    ck_assert_msg(tsr_attention(ref, d, q, kk, v, o1) == TSR_OK, "%s", tsr_last_error());
    void *dq = tt_upload(ctx, q, 2 * nq), *dk = tt_upload(ctx, kk, 2 * nk), *dv = tt_upload(ctx, v, 2 * nk);
    void *dout = tt_upload(ctx, NULL, 2 * nq);
    ck_assert_msg(tsr_attention(ctx, d, dq, dk, dv, dout) == TSR_OK, "%s", tsr_last_error());
    tt_download(ctx, o2, dout, 2 * nq);
    ck_assert(tt_compare("bshd", o2, o1, TSR_BF16, nq, 1.6e-2, 1.6e-2) == 0);
    tt_free(ctx, dq), tt_free(ctx, dk), tt_free(ctx, dv), tt_free(ctx, dout);
    free(q), free(kk), free(v), free(o1), free(o2);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention_cuda");
    TCase *tc = tcase_create("sm80");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, flash_knobs_shapes);
    tcase_add_test(tc, dispatch_and_strides);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
