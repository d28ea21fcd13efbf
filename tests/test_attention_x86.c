/* The x86 flash-attention kernels on their own: every query block, key block
 * and key-split count on shapes that cross each block boundary (1, primes,
 * blocks +- 1), GQA ratios 1/4/8, both causal alignments with seq_q != seq_kv,
 * masks with fully masked rows, huge logits, decode shapes with long seq_kv,
 * against the reference. Kernels this CPU cannot run print SKIP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_check.h"

#define BF16_DOT_KERNEL "attention.x86_avx512_bf16.flash"
static const char *kernels[] = {BF16_DOT_KERNEL, "attention.x86_avx512.flash", "attention.x86_avx2.flash"};

/* Whether kernel k (registered) runs on this CPU; where it does not, prints
 * the skip with the test's name. Every x86 kernel takes bf16. */
static bool kernel_runs(const tsr_kernel *k, tsr_context *ctx, const char *test) {
    ck_assert_ptr_nonnull(k);
    tsr_problem probe;
    memset(&probe, 0, sizeof probe);
    probe.op = TSR_OP_ATTENTION;
    tsr_attention_desc_init(&probe.u.attention.d);
    probe.u.attention.d.dtype = TSR_BF16;
    char why[160];
    if (tsr_kernel_supports(k, &probe, ctx, why, sizeof why)) return true;
    printf("SKIP attention_x86%s: %s: %s\n", test, k->name, why);
    return false;
}

/* Runs kernel k with schedule s on t's host buffers and compares; returns 1
 * when it ran. */
static int run_compare(tsr_context *ctx, const tsr_kernel *k, const attn_case *c, const tsr_schedule *s,
                       attn_data *t) {
    char why[128];
    if (k->schedule_valid && !k->schedule_valid(&t->p, ctx, s)) return 0;
    if (!strcmp(k->name, BF16_DOT_KERNEL) && c->dt != TSR_BF16) return 0; /* bf16 only, by design */
    ck_assert_msg(tsr_kernel_supports(k, &t->p, ctx, why, sizeof why), "%s", why);
    ck_assert_msg(k->run(ctx, &t->p, s) == TSR_OK, "%s", tsr_last_error());
    char knobs[48];
    snprintf(knobs, sizeof knobs, "bq%d bk%d split%d", s->v[0], s->v[1], s->v[2]);
    double atol = tt_attention_o_tol(c->dt), rtol = atol;
    if (!strcmp(k->name, BF16_DOT_KERNEL) && c->amp <= 1) {
        /* P V on P rounded to bf16 (relative error <= 2^-9 per weight, the
         * weights summing to 1 in f32) moves an output by at most
         * 2^-9 max|v| = 2^-9 here (v in [-1, 1]); the two outputs compared
         * were each rounded to bf16 (2^-9 relative apiece). Q K^T has exact
         * bf16 products summed in f32, as the f32 path. */
        atol = 0x1p-9 * 1.25, rtol = 0x1p-8 * 1.25;
    } /* huge logits: their f32 rounding (as on the f32 path) moves the weights more */
    tt_attention_compare(t, c, k->name, knobs, atol, rtol);
    return 1;
}

/* Runs kernel k with schedule s on case c against the reference; returns 1
 * when it ran. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const attn_case *c, const tsr_schedule *s) {
    attn_data t;
    tt_attention_setup(ref, c, &t);
    const int ran = run_compare(ctx, k, c, s, &t);
    tt_attention_release(&t);
    return ran;
}

/* check() with element 3 of key nan_key[h] NaN in kv head h (batch 0), the
 * reference run again on those keys: the rows that see such a key are NaN
 * (o and lse), and at least `nan_rows` of them are, the others as before.
 * Returns 1 when it ran. */
static int check_nan_keys(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const attn_case *c,
                          const int64_t *nan_key, int64_t nan_rows, const tsr_schedule *s) {
    attn_data t;
    tt_attention_setup(ref, c, &t);
    for (int64_t h = 0; h < c->hkv; h++) {
        const int64_t i = (h * c->skv + nan_key[h]) * c->d + 3;
        if (c->dt == TSR_F32) ((float *)t.k)[i] = NAN;
        else ((uint16_t *)t.k)[i] = c->dt == TSR_BF16 ? 0x7fc0 : 0x7e00;
    }
    tsr_attention_desc d = t.p.u.attention.d;
    d.lse = t.want_lse;
    ck_assert_msg(tsr_attention(ref, &d, t.q, t.k, t.v, t.want_o) == TSR_OK, "%s", tsr_last_error());
    int64_t nans = 0;
    for (int64_t r = 0; r < t.rows; r++) nans += isnan(t.want_lse[r]);
    ck_assert_msg(nans >= nan_rows, "the reference gives %lld NaN rows, not %lld", (long long)nans,
                  (long long)nan_rows);
    const int ran = run_compare(ctx, k, c, s, &t);
    tt_attention_release(&t);
    return ran;
}

START_TEST(blocks_splits_shapes) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const attn_case cases[] = {
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
        {{256, 128, 1}}, {{256, 16, 2}},
    };
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!kernel_runs(k, ctx, "")) continue;
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
                for (int threads = 1; threads <= 2; threads++) {
                    tsr_context_set_num_threads(ctx, threads);
                    ran += check(ctx, ref, k, &cases[ci], &scheds[si]);
                }
        /* the heuristic's schedule, decode and prefill */
        const attn_case dflt[] = {{1, 32, 8, 1, 4099, 128, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},
                                  {2, 4, 4, 200, 200, 64, TSR_CAUSAL_TOP_LEFT, TSR_F32, 0, 1},
                                  {1, 4, 2, 300, 150, 64, TSR_CAUSAL_NONE, TSR_F32, 0, 1}}; /* 256-row blocks */
        for (int ci = 0; ci < 3; ci++) {
            tsr_schedule s;
            tt_attention_default_schedule(k, ctx, &dflt[ci], &s);
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
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    if (!kernel_runs(k, ctx, " bf16_dot")) {
        tsr_context_destroy(ctx), tsr_context_destroy(ref);
        return;
    }
    static const int64_t dims[] = {32, 64, 80, 96, 128, 256, 40, 72, 13};
    static const tsr_causal causals[] = {TSR_CAUSAL_NONE, TSR_CAUSAL_TOP_LEFT, TSR_CAUSAL_BOTTOM_RIGHT};
    static const int64_t gqa[] = {1, 4, 8};
    /* block_q x block_kv x kv_splits: each value of each knob at least once */
    const tsr_schedule scheds[] = {
        {{4, 16, 1}}, {{8, 32, 2}}, {{16, 64, 4}}, {{32, 128, 8}}, {{64, 256, 16}}, {{128, 64, 1}}, {{128, 16, 2}},
        {{256, 128, 1}},
    };
    int ran = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t D = dims[di];
        for (int ci = 0; ci < 3; ci++) {
            const int64_t g = gqa[(di + (size_t)ci) % 3];
            /* prefill: seq_q != seq_kv, sizes crossing the blocks; mask kind by case */
            const attn_case pre = {ci == 2 ? 2 : 1, g, 1, 37 + 20 * ci, 131 - 30 * ci, D, causals[ci], TSR_BF16,
                               (int)((di + (size_t)ci) % 3), 1};
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++) {
                tsr_context_set_num_threads(ctx, 1 + (int)(si % 2));
                ran += check(ctx, ref, k, &pre, &scheds[si]);
            }
        }
        /* decode: 1 and 5 query rows per head over long keys, splits; then huge logits */
        const attn_case dec[] = {{1, 8, 1, 1, 1500, D, TSR_CAUSAL_NONE, TSR_BF16, 0, 1},
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

/* A NaN key makes every row that sees it NaN, on every path: the tiles
 * (prefill) and the direct path (decode), key splits, a NaN alone in a row's
 * first block (key 0, causal: the block's max is -inf or NaN), and the
 * rows before it under a causal mask untouched. */
START_TEST(nan_keys) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    static const tsr_dtype dts[] = {TSR_F32, TSR_BF16, TSR_F16};
    const tsr_schedule scheds[] = {{{4, 16, 1}}, {{8, 16, 2}}, {{64, 128, 1}}, {{128, 16, 4}}, {{16, 64, 8}}};
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki]);
        if (!kernel_runs(k, ctx, " nan_keys")) continue;
        for (int di = 0; di < 3; di++) {
            /* head 0: key 0 seen by all 40 rows; head 1: key 17 by rows 17..39 */
            const attn_case pre = {1, 2, 2, 40, 40, 64, TSR_CAUSAL_TOP_LEFT, dts[di], 0, 1};
            const int64_t pre_keys[] = {0, 17};
            const attn_case dec = {1, 8, 1, 1, 300, 64, TSR_CAUSAL_NONE, dts[di], 0, 1};
            const int64_t dec_keys[] = {250};
            for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
                for (int threads = 1; threads <= 2; threads++) {
                    tsr_context_set_num_threads(ctx, threads);
                    ran += check_nan_keys(ctx, ref, k, &pre, pre_keys, 63, &scheds[si]);
                    ran += check_nan_keys(ctx, ref, k, &dec, dec_keys, 8, &scheds[si]);
                }
        }
    }
    printf("attention_x86 nan_keys: %d kernel runs checked\n", ran);
    ck_assert_int_gt(ran, 0);
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
    tcase_add_test(tc, nan_keys);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
