/* The x86 flash-attention kernels on their own: every query block, key block
 * and key-split count on shapes that cross each block boundary (1, primes,
 * blocks +- 1), GQA ratios 1/4/8, both causal alignments with seq_q != seq_kv,
 * masks with fully masked rows, huge logits, decode shapes with long seq_kv,
 * against the reference. Kernels this CPU cannot run print SKIP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

#define BF16_DOT_KERNEL "attention.x86_avx512_bf16.flash"
static const char *kernels[] = {BF16_DOT_KERNEL, "attention.x86_avx512.flash", "attention.x86_avx2.flash"};

typedef struct fcase {
    int64_t b, hq, hkv, sq, skv, d;
    tsr_causal causal;
    tsr_dtype dt;
    int mask; /* 0 none, 1 per-row f32 with whole rows at -inf, 2 in the dtype, broadcast over heads */
    float amp;
} fcase;

/* Runs kernel k with schedule s; returns 1 when it ran. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const fcase *c, const tsr_schedule *s) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.batch = c->b, d.heads_q = c->hq, d.heads_kv = c->hkv, d.seq_q = c->sq, d.seq_kv = c->skv, d.head_dim = c->d;
    d.dtype = c->dt, d.causal = c->causal;
    const int64_t nq = c->b * c->hq * c->sq * c->d, nk = c->b * c->hkv * c->skv * c->d;
    const size_t es = tsr_dtype_size(c->dt);
    void *q = malloc((size_t)nq * es + 1), *kk = malloc((size_t)nk * es + 1), *v = malloc((size_t)nk * es + 1);
    void *o1 = malloc((size_t)nq * es + 1), *o2 = malloc((size_t)nq * es + 1);
    float *l1 = malloc(sizeof(float) * (size_t)(c->b * c->hq * c->sq + 1)), *l2 = malloc(sizeof(float) * (size_t)(c->b * c->hq * c->sq + 1));
    tt_fill(q, c->dt, nq, 91, -c->amp, c->amp);
    tt_fill(kk, c->dt, nk, 92, -c->amp, c->amp);
    tt_fill(v, c->dt, nk, 93, -1, 1);
    void *mask = NULL;
    if (c->mask == 1) { /* [b][h][i][j] dense f32; every 3rd row fully -inf */
        int64_t n = c->b * c->hq * c->sq * c->skv;
        float *m = malloc(sizeof(float) * (size_t)(n + 1));
        tt_fill(m, TSR_F32, n, 94, -2, 2);
        for (int64_t r = 0; r < c->b * c->hq * c->sq; r += 3)
            for (int64_t j = 0; j < c->skv; j++) m[r * c->skv + j] = -INFINITY;
        mask = m, d.mask_dtype = TSR_F32;
        d.mask_strides[0] = c->hq * c->sq * c->skv, d.mask_strides[1] = c->sq * c->skv, d.mask_strides[2] = c->skv;
    } else if (c->mask == 2) { /* [b][i][j] in the dtype, broadcast over heads */
        int64_t n = c->b * c->sq * c->skv;
        mask = malloc((size_t)n * es + 1);
        tt_fill(mask, c->dt, n, 95, -3, 1);
        d.mask_dtype = c->dt;
        d.mask_strides[0] = c->sq * c->skv, d.mask_strides[1] = 0, d.mask_strides[2] = c->skv;
    }
    d.mask = mask;
    d.lse = l1;
    ck_assert_msg(tsr_attention(ref, &d, q, kk, v, o1) == TSR_OK, "%s", tsr_last_error());
    int ran = 0;
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_ATTENTION;
    p.u.attention.d = d;
    p.u.attention.d.lse = l2;
    p.u.attention.d.scale = (float)(1.0 / sqrt((double)c->d)); /* as the front resolves it */
    p.u.attention.d.q_strides[0] = c->hq * c->sq * c->d, p.u.attention.d.q_strides[1] = c->sq * c->d;
    p.u.attention.d.q_strides[2] = c->d;
    memcpy(p.u.attention.d.o_strides, p.u.attention.d.q_strides, sizeof p.u.attention.d.o_strides);
    p.u.attention.d.k_strides[0] = c->hkv * c->skv * c->d, p.u.attention.d.k_strides[1] = c->skv * c->d;
    p.u.attention.d.k_strides[2] = c->d;
    memcpy(p.u.attention.d.v_strides, p.u.attention.d.k_strides, sizeof p.u.attention.d.v_strides);
    p.u.attention.q = q, p.u.attention.k = kk, p.u.attention.v = v, p.u.attention.o = o2;
    char why[128];
    if (k->schedule_valid && !k->schedule_valid(&p, ctx, s)) goto done;
    if (!strcmp(k->name, BF16_DOT_KERNEL) && c->dt != TSR_BF16) goto done; /* bf16 only, by design */
    ck_assert_msg(k->supports(&p, ctx, why, sizeof why), "%s", why);
    ck_assert_msg(k->run(ctx, &p, s) == TSR_OK, "%s", tsr_last_error());
    char what[200];
    snprintf(what, sizeof what, "%s b%lld h%lld/%lld sq%lld skv%lld d%lld causal%d %s mask%d amp%g bq%d bk%d split%d",
             k->name, (long long)c->b, (long long)c->hq, (long long)c->hkv, (long long)c->sq, (long long)c->skv,
             (long long)c->d, (int)c->causal, tsr_dtype_name(c->dt), c->mask, (double)c->amp, s->v[0], s->v[1],
             s->v[2]);
    double atol = c->dt == TSR_F32 ? 2e-5 : c->dt == TSR_F16 ? 2e-3 : 1.6e-2, rtol = atol;
    if (!strcmp(k->name, BF16_DOT_KERNEL) && c->amp <= 1) {
        /* P V on P rounded to bf16 (relative error <= 2^-9 per weight, the
         * weights summing to 1 in f32) moves an output by at most
         * 2^-9 max|v| = 2^-9 here (v in [-1, 1]); the two outputs compared
         * were each rounded to bf16 (2^-9 relative apiece). Q K^T has exact
         * bf16 products summed in f32, as the f32 path. */
        atol = 0x1p-9 * 1.25, rtol = 0x1p-8 * 1.25;
    } /* huge logits: their f32 rounding (as on the f32 path) moves the weights more */
    ck_assert_msg(tt_compare(what, o2, o1, c->dt, nq, atol, rtol) == 0, "%s", what);
    ck_assert_msg(tt_compare(what, l2, l1, TSR_F32, c->b * c->hq * c->sq, 1e-4, 1e-5) == 0, "lse: %s", what);
    ran = 1;
done:
    free(q), free(kk), free(v), free(o1), free(o2), free(l1), free(l2), free(mask);
    return ran;
}

START_TEST(blocks_splits_shapes) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const fcase cases[] = {
        {1, 1, 1, 1, 1, 1, TSR_CAUSAL_NONE, TSR_F32, 0, 1},
        {2, 4, 1, 7, 67, 24, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F32, 1, 1},     /* GQA 4, seq_q < seq_kv */
        {1, 8, 1, 1, 1031, 64, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},          /* decode, MQA 8 */
        {1, 3, 3, 65, 33, 40, TSR_CAUSAL_TOP_LEFT, TSR_F32, 2, 2},        /* seq_q > seq_kv, rows with no key */
        {1, 2, 2, 33, 129, 80, TSR_CAUSAL_TOP_LEFT, TSR_F16, 1, 1},
        {1, 2, 1, 129, 257, 128, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, 0, 1},
        {1, 1, 1, 17, 300, 13, TSR_CAUSAL_NONE, TSR_F32, 2, 30},          /* huge logits */
    };
    const tsr_schedule scheds[] = {
        {{4, 16, 1}}, {{8, 32, 2}}, {{16, 64, 4}}, {{32, 16, 16}}, {{64, 128, 1}}, {{128, 256, 8}}, {{4, 64, 8}},
    };
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        ck_assert_ptr_nonnull(k);
        tsr_problem probe;
        memset(&probe, 0, sizeof probe);
        probe.op = TSR_OP_ATTENTION;
        tsr_attention_desc_init(&probe.u.attention.d);
        probe.u.attention.d.dtype = TSR_BF16; /* every x86 kernel takes bf16 */
        char why[128];
        if (!k->supports(&probe, ctx, why, sizeof why)) {
            printf("SKIP attention_x86: %s: %s\n", k->name, why);
            continue;
        }
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
                for (int threads = 1; threads <= 2; threads++) {
                    tsr_context_set_num_threads(ctx, threads);
                    ran += check(ctx, ref, k, &cases[ci], &scheds[si]);
                }
        /* the heuristic's schedule, decode and prefill */
        const fcase dflt[] = {{1, 32, 8, 1, 4099, 128, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},
                              {2, 4, 4, 200, 200, 64, TSR_CAUSAL_TOP_LEFT, TSR_F32, 0, 1}};
        for (int ci = 0; ci < 2; ci++) {
            tsr_problem p;
            memset(&p, 0, sizeof p);
            p.op = TSR_OP_ATTENTION;
            tsr_attention_desc_init(&p.u.attention.d);
            tsr_attention_desc *d = &p.u.attention.d;
            d->batch = dflt[ci].b, d->heads_q = dflt[ci].hq, d->heads_kv = dflt[ci].hkv, d->seq_q = dflt[ci].sq;
            d->seq_kv = dflt[ci].skv, d->head_dim = dflt[ci].d;
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            k->default_schedule(&p, ctx, &s);
            ran += check(ctx, ref, k, &dflt[ci], &s);
        }
    }
    printf("attention_x86: %d kernel runs checked\n", ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* The bf16 vdpbf16ps kernel on every head dim the issue names, odd
 * multiples of 8 and an odd one (pairs with a zero partner), every value of
 * every knob, GQA 1/4/8, both causal alignments, both mask kinds, and
 * decode shapes (direct path, key splits). */
START_TEST(bf16_dot_dims_knobs) {
    const tsr_kernel *k = tsr_registry_find(BF16_DOT_KERNEL);
    ck_assert_ptr_nonnull(k);
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_problem probe;
    memset(&probe, 0, sizeof probe);
    probe.op = TSR_OP_ATTENTION;
    tsr_attention_desc_init(&probe.u.attention.d);
    probe.u.attention.d.dtype = TSR_BF16;
    char why[160];
    if (!k->supports(&probe, ctx, why, sizeof why)) {
        printf("SKIP attention_x86 bf16_dot: %s\n", why);
        tsr_context_destroy(ctx), tsr_context_destroy(ref);
        return;
    }
    static const int64_t dims[] = {32, 64, 80, 96, 128, 256, 40, 72, 13};
    static const tsr_causal causals[] = {TSR_CAUSAL_NONE, TSR_CAUSAL_TOP_LEFT, TSR_CAUSAL_BOTTOM_RIGHT};
    static const int64_t gqa[] = {1, 4, 8};
    /* block_q x block_kv x kv_splits: each value of each knob at least once */
    const tsr_schedule scheds[] = {
        {{4, 16, 1}}, {{8, 32, 2}}, {{16, 64, 4}}, {{32, 128, 8}}, {{64, 256, 16}}, {{128, 64, 1}}, {{128, 16, 2}},
    };
    int ran = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t D = dims[di];
        for (int ci = 0; ci < 3; ci++) {
            const int64_t g = gqa[(di + (size_t)ci) % 3];
            /* prefill: seq_q != seq_kv, sizes crossing the blocks; mask kind by case */
            const fcase pre = {ci == 2 ? 2 : 1, g, 1, 37 + 20 * ci, 131 - 30 * ci, D, causals[ci], TSR_BF16,
                               (int)((di + (size_t)ci) % 3), 1};
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++) {
                tsr_context_set_num_threads(ctx, 1 + (int)(si % 2));
                ran += check(ctx, ref, k, &pre, &scheds[si]);
            }
        }
        /* decode: 1 and 5 query rows per head over long keys, splits; then huge logits */
        const fcase dec[] = {{1, 8, 1, 1, 1500, D, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},
                             {1, 4, 2, 5, 777, D, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, 1, 1},
                             {1, 4, 1, 20, 300, D, TSR_CAUSAL_NONE, TSR_BF16, 2, 30}}; /* + huge logits */
        for (int ci = 0; ci < 3; ci++)
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si += 2)
                ran += check(ctx, ref, k, &dec[ci], &scheds[si]);
    }
    printf("attention_x86 bf16_dot: %d kernel runs checked\n", ran);
    ck_assert_int_gt(ran, 150);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention_x86");
    TCase *tc = tcase_create("x86");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, blocks_splits_shapes);
    tcase_add_test(tc, bf16_dot_dims_knobs);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
