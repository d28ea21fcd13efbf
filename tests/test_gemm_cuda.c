/* The sm80 GEMM kernels on their own: each kernel forced with each value of
 * its knobs (tile shapes, pipeline stages, split-k, rasterisation, columns
 * per warp) on shapes that cross every tile boundary, all transposes, batch,
 * alpha/beta and the fused epilogue, against the reference. Without a GPU
 * the suite prints SKIP and passes having checked nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_check.h"

/* Every tile shape x stages x split-k x raster on tile-crossing shapes. */
START_TEST(tensor_core_knobs) {
    tsr_context *ctx = tt_cuda_context("gemm_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = tt_kernel("gemm.sm80.tc");
    const ccase cases[] = {
        {1, 8, 8, 0, 1, 0, TSR_F16, TSR_F32, 1, 0, 1},
        {17, 24, 40, 0, 0, 1, TSR_BF16, TSR_BF16, 1, 0, 1},
        {129, 264, 72, 1, 0, 0, TSR_F16, TSR_F16, 0.5f, 1, 1},       /* BM+1, BN+8 */
        {257, 136, 200, 1, 1, 4, TSR_BF16, TSR_F32, 1, -1, 2},       /* 2*BM+1, batch */
        {64, 520, 1000, 0, 1, 3, TSR_F16, TSR_F32, 1, 0, 1},         /* k tail, long k */
        {300, 72, 4104, 0, 0, 6, TSR_BF16, TSR_F32, 1, 0.5f, 3},     /* split-k with batch */
        /* int8 (x W^T only), exact: wrapping sums, then alpha/beta as the reference */
        {1, 8, 16, 0, 1, 0, TSR_I8, TSR_I32, 1, 0, 1},
        {129, 264, 80, 0, 1, 0, TSR_I8, TSR_I32, 1, 1, 2},
        {257, 136, 1000, 0, 1, 0, TSR_I8, TSR_I32, 0.75f, 0.5f, 1},
    };
    /* TESSERA_TEST_QUICK (the sanitizer runs, 10-100x slower): 2 and 3
     * stages, where the slot written is nearest the slot read, split 1 and 3 */
    const int quick = getenv("TESSERA_TEST_QUICK") != NULL;
    int ran = 0;
    for (int tile = 0; tile < k->knobs[0].num_values; tile++)
        for (int stages = 2; stages <= (quick ? 3 : 5); stages++)
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                const int splits[] = {1, 3, 8};
                for (int si = 0; si < (quick ? 2 : 3); si++) {
                    tsr_schedule s;
                    memset(&s, 0, sizeof s);
                    s.v[0] = tile, s.v[1] = stages, s.v[2] = splits[si], s.v[3] = (int)(ci % 2 ? 8 : 1);
                    ran += tt_gemm_kernel_check(ctx, ref, k, &cases[ci], &s);
                }
            }
    printf("gemm_cuda: tc: %d kernel runs checked\n", ran);
    ck_assert_int_gt(ran, quick ? 100 : 250);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* A skinny kernel (knobs: columns or 8-column tiles per warp 2/4/8, split_k
 * 1/4/16 up to max_split) over every M x (N, K) x input dtype given: C in
 * bf16 for bf16, in f16 or f32 for f16 (by M), f32 for f32; an epilogue on
 * two of three cases. */
static int skinny_sweep(const char *name, const int64_t *ms, int nm, const int64_t (*nks)[2], int nnk,
                        const tsr_dtype *dts, int nd, int max_split) {
    tsr_context *ctx = tt_cuda_context("gemm_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), -1;
    const tsr_kernel *k = tt_kernel(name);
    int ran = 0;
    for (int mi = 0; mi < nm; mi++)
        for (int ni = 0; ni < nnk; ni++)
            for (int t = 0; t < nd; t++)
                for (int knob = 2; knob <= 8; knob *= 2)
                    for (int split = 1; split <= max_split; split *= 4) {
                        const tsr_dtype out = dts[t] == TSR_BF16 ? TSR_BF16 : dts[t] == TSR_F16 && mi % 2 ? TSR_F16 : TSR_F32;
                        ccase c = {ms[mi], nks[ni][0], nks[ni][1], 0, 1, (mi + ni) % 3, dts[t], out, 1,
                                   mi == 2 ? 0.5f : 0, 1 + (int64_t)(ni == 1)};
                        tsr_schedule s;
                        memset(&s, 0, sizeof s);
                        s.v[0] = knob, s.v[1] = split;
                        ran += tt_gemm_kernel_check(ctx, ref, k, &c, &s);
                    }
    printf("gemm_cuda: %s: %d kernel runs checked\n", name, ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
    return ran;
}

START_TEST(skinny_knobs) {
    const int64_t ms[] = {1, 2, 3, 5, 8, 9, 16};
    const int64_t nks[][2] = {{1, 8}, {7, 200}, {130, 4104}, {33, 1016}};
    const tsr_dtype dts[] = {TSR_F32, TSR_F16, TSR_BF16};
    int ran = skinny_sweep("gemm.sm80.skinny", ms, 7, nks, 4, dts, 3, 8);
    if (ran >= 0) ck_assert_int_gt(ran, 300);
}
END_TEST

/* The tensor-core skinny kernel: every M to 16 (its rows past M read as
 * zeros), k tails within a 32-k step and a chunk, N off the 8-column tiles. */
START_TEST(skinny_tc_knobs) {
    const int64_t ms[] = {1, 2, 7, 8, 9, 15, 16};
    const int64_t nks[][2] = {{1, 8}, {7, 200}, {130, 4104}, {67, 1016}};
    const tsr_dtype dts[] = {TSR_F16, TSR_BF16};
    int ran = skinny_sweep("gemm.sm80.skinny_tc", ms, 7, nks, 4, dts, 2, 16);
    if (ran >= 0) ck_assert_int_gt(ran, 300);
}
END_TEST

START_TEST(sgemm_and_generic) {
    tsr_context *ctx = tt_cuda_context("gemm_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const ccase cases[] = {
        {1, 1, 1, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1},
        {129, 130, 17, 0, 0, 1, TSR_F32, TSR_F32, 1, 0, 1},
        {257, 31, 300, 1, 0, 2, TSR_F32, TSR_F32, 2, 0.5f, 2},
        {5, 300, 129, 0, 1, 0, TSR_F32, TSR_F32, 1, 0, 1},
        {140, 140, 520, 1, 1, 5, TSR_F32, TSR_F32, 1, -1, 1},
        {31, 17, 0, 0, 0, 0, TSR_F32, TSR_F32, 1, 0.5f, 1}, /* k == 0 */
    };
    int ran = 0;
    const tsr_kernel *sg = tt_kernel("gemm.sm80.sgemm"), *gen = tt_kernel("gemm.sm80.generic");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int split = 1; split <= 4; split *= 2) {
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            s.v[0] = split;
            ran += tt_gemm_kernel_check(ctx, ref, sg, &cases[ci], &s);
        }
    /* the last resort takes every dtype pair, int8 exactly */
    const ccase any[] = {
        {13, 7, 33, 0, 1, 0, TSR_I8, TSR_I32, 1, 0, 1},   {9, 11, 5, 1, 1, 0, TSR_I8, TSR_I32, 1, 1, 2},
        {3, 5, 7, 1, 0, 1, TSR_F16, TSR_F16, 1, 0, 1},    {6, 2, 9, 0, 0, 3, TSR_BF16, TSR_F32, 1, 0.5f, 1},
        {40, 33, 65, 1, 1, 2, TSR_F32, TSR_F32, 1, 0, 3},
    };
    tsr_schedule s0;
    memset(&s0, 0, sizeof s0);
    for (size_t ci = 0; ci < sizeof any / sizeof any[0]; ci++) ran += tt_gemm_kernel_check(ctx, ref, gen, &any[ci], &s0);
    printf("gemm_cuda: sgemm + generic: %d kernel runs checked\n", ran);
    ck_assert_int_ge(ran, 17);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* The heuristic's choices through the public API at model-like sizes. */
START_TEST(defaults_at_scale) {
    tsr_context *ctx = tt_cuda_context("gemm_cuda"), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const ccase cases[] = {
        {1, 4096, 4096, 0, 1, 0, TSR_F16, TSR_F16, 1, 0, 1},   {16, 1024, 4096, 0, 1, 0, TSR_BF16, TSR_BF16, 1, 0, 1},
        {512, 1024, 1024, 0, 1, 0, TSR_BF16, TSR_BF16, 1, 0, 1}, {1000, 1000, 1000, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1},
        {64, 64, 8192, 0, 0, 0, TSR_F16, TSR_F32, 1, 0, 1},
    };
    int ran = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const ccase *x = &cases[ci];
        tsr_problem p;
        memset(&p, 0, sizeof p);
        p.op = TSR_OP_GEMM;
        tsr_gemm_desc_init(&p.u.gemm.d);
        p.u.gemm.d.m = x->m, p.u.gemm.d.n = x->n, p.u.gemm.d.k = x->k, p.u.gemm.d.trans_b = (tsr_transpose)x->tb;
        p.u.gemm.d.a_dtype = p.u.gemm.d.b_dtype = x->in, p.u.gemm.d.c_dtype = x->out;
        const char *names[] = {"gemm.sm80.skinny_tc", "gemm.sm80.skinny", "gemm.sm80.tc", "gemm.sm80.sgemm"};
        for (int ki = 0; ki < 4; ki++) {
            const tsr_kernel *k = tt_kernel(names[ki]);
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            k->default_schedule(&p, ctx, &s);
            ran += tt_gemm_kernel_check(ctx, ref, k, x, &s);
        }
    }
    printf("gemm_cuda: defaults: %d kernel runs checked\n", ran);
    ck_assert_int_ge(ran, 5);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm_cuda");
    TCase *tc = tcase_create("sm80");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tensor_core_knobs);
    tcase_add_test(tc, skinny_knobs);
    tcase_add_test(tc, skinny_tc_knobs);
    tcase_add_test(tc, sgemm_and_generic);
    tcase_add_test(tc, defaults_at_scale);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
