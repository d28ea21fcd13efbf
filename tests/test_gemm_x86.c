/* The x86 GEMM kernels on their own: shapes across every block boundary
 * (MR, NR, MC, KC, NC and +-1), every schedule family, thread counts,
 * against the reference. Kernels this CPU cannot run print SKIP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

/* Each kernel with the input dtype it takes (F32: every float dtype). */
static const struct {
    const char *name;
    tsr_dtype only_in;
} kernels[] = {{"gemm.x86_avx512_bf16.bf16", TSR_BF16}, {"gemm.x86_avx512.f32", TSR_F32}, {"gemm.x86_avx2.f32", TSR_F32}};

typedef struct xcase {
    int64_t m, n, k;
    int ta, tb, bias_m, epi;
    tsr_dtype in;
    float alpha, beta;
    int64_t batch;
    int narrow_c; /* C in the input dtype (f16/bf16) instead of f32 */
} xcase;

/* Runs kernel k with schedule s on a row-major problem and compares with the
 * reference through the public API. */
static void check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const xcase *x, const tsr_schedule *s) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = x->m, d.n = x->n, d.k = x->k, d.trans_a = (tsr_transpose)x->ta, d.trans_b = (tsr_transpose)x->tb;
    d.a_dtype = d.b_dtype = x->in, d.alpha = x->alpha, d.beta = x->beta, d.batch = x->batch;
    const tsr_dtype ct = x->narrow_c && x->in != TSR_F32 ? x->in : TSR_F32;
    d.c_dtype = ct;
    d.lda = (x->ta ? x->m : x->k) + 3, d.ldb = (x->tb ? x->k : x->n) + 1, d.ldc = x->n + 2;
    d.stride_a = (x->ta ? x->k : x->m) * d.lda, d.stride_b = (x->tb ? x->n : x->k) * d.ldb;
    d.stride_c = x->m * d.ldc;
    size_t na = (size_t)(d.stride_a * x->batch), nb = (size_t)(d.stride_b * x->batch), nc = (size_t)(d.stride_c * x->batch);
    size_t e = tsr_dtype_size(x->in);
    void *a = malloc(na * e + 1), *b = malloc(nb * e + 1);
    float *c1 = malloc(nc * 4 + 4), *c2 = malloc(nc * 4 + 4), *bias = malloc(sizeof(float) * (size_t)(x->m + x->n));
    float *res = malloc(nc * 4 + 4);
    tt_fill(a, x->in, (int64_t)na, 61, -1, 1);
    tt_fill(b, x->in, (int64_t)nb, 62, -1, 1);
    tt_fill(c1, ct, (int64_t)nc, 63, -1, 1);
    tt_fill(bias, TSR_F32, x->m + x->n, 64, -1, 1);
    tt_fill(res, TSR_F32, (int64_t)nc, 65, -1, 1);
    if (x->beta == 0)
        for (size_t i = 0; i < nc; i++) tsr_store_f(c1, ct, (int64_t)i, NAN);
    memcpy(c2, c1, nc * 4);
    if (x->epi) {
        d.epilogue.num_steps = 3;
        d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
        d.epilogue.steps[1] = tsr_epilogue_residual(res, TSR_F32, 0, -0.5f);
        d.epilogue.steps[2] = tsr_epilogue_activation((tsr_activation)x->epi);
    }
    /* The reference through the public API; the kernel on the same problem,
     * normalised as the front would (row-major; bias_along_m through the
     * column-major form is covered by test_gemm). */
    tsr_status st = tsr_gemm(ref, &d, a, b, c1);
    ck_assert_msg(st == TSR_OK, "%s", tsr_last_error());
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_GEMM;
    p.u.gemm.d = d;
    for (int i = 0; i < d.epilogue.num_steps; i++) {
        tsr_epilogue_step *es = &p.u.gemm.d.epilogue.steps[i];
        if (es->op == TSR_EPI_RESIDUAL) es->ld = d.ldc, es->batch_stride = d.stride_c;
    }
    p.u.gemm.a = a, p.u.gemm.b = b, p.u.gemm.c = c2;
    char why[128];
    ck_assert_msg(tsr_kernel_supports(k, &p, ctx, why, sizeof why), "%s", why);
    if (k->schedule_valid && !k->schedule_valid(&p, ctx, s)) goto done;
    st = k->run(ctx, &p, s);
    ck_assert_msg(st == TSR_OK, "%s", tsr_last_error());
    char what[200];
    snprintf(what, sizeof what,
             "%s %lldx%lldx%lld b%lld T%d%d %s epi%d a%g b%g mc%d kc%d nc%d pack_b%d bp%d pack_a%d rows_outer%d",
             k->name, (long long)x->m, (long long)x->n, (long long)x->k, (long long)x->batch, x->ta, x->tb,
             tsr_dtype_name(x->in), x->epi, (double)x->alpha, (double)x->beta, s->v[0], s->v[1], s->v[2], s->v[3],
             s->v[4], s->v[5], s->v[7]);
    /* a narrow C: one rounding apart at most (both round the same f32-ish sum) */
    double rtol = ct == TSR_F32 ? tt_rtol(TSR_F32, x->k) * 4 : tt_rtol(ct, x->k);
    ck_assert_msg(tt_compare(what, c2, c1, ct, (int64_t)nc, 1e-5 * sqrt((double)x->k + 1), rtol) == 0, "%s", what);
done:
    free(a), free(b), free(c1), free(c2), free(bias), free(res);
}

START_TEST(blocks_schedules_threads) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki].name);
        const tsr_dtype only = kernels[ki].only_in;
        ck_assert_ptr_nonnull(k);
        tsr_problem probe;
        memset(&probe, 0, sizeof probe);
        probe.op = TSR_OP_GEMM;
        tsr_gemm_desc_init(&probe.u.gemm.d);
        probe.u.gemm.d.a_dtype = probe.u.gemm.d.b_dtype = only;
        char why[128];
        if (!tsr_kernel_supports(k, &probe, ctx, why, sizeof why)) {
            printf("SKIP gemm_x86: %s: %s\n", k->name, why);
            continue;
        }
        /* small blocks so that every boundary is crossed at modest sizes;
         * mc, kc, nc, pack_b, batch_parallel, pack_a, far_prefetch, rows_outer */
        const tsr_schedule scheds[] = {{{48, 128, 1008, 1, 0, 1, 0, 0}},
                                       {{96, 192, 2016, 0, 0, 0, 1, 1}},
                                       {{144, 256, 4032, 1, 1, 0, 1, 0}},
                                       {{48, 128, 1008, 0, 1, 1, 0, 1}},
                                       {{48, 64, 480, 1, 0, 0, 0, 1}}};
        const xcase cases[] = {
            {1, 1, 1, 0, 0, 0, 0, TSR_F32, 1, 0, 1, 0},
            {5, 17, 129, 0, 0, 0, 1, TSR_F32, 1, 0, 1, 0},
            {49, 1009, 257, 0, 0, 0, 2, TSR_F32, 0.5f, 1, 1, 0},   /* mc+1, nc+1, 2*kc+1 */
            {97, 50, 131, 1, 1, 0, 3, TSR_F32, 1, -1, 1, 0},
            {7, 2017, 300, 0, 1, 0, 4, TSR_F32, 1, 0, 1, 0},
            {16, 100, 385, 1, 0, 0, 5, TSR_BF16, 1, 0, 1, 0},
            {13, 47, 64, 0, 0, 0, 6, TSR_F16, 2, 0.5f, 1, 0},
            {11, 19, 23, 0, 0, 0, 1, TSR_F32, 1, 0, 5, 0},           /* batch */
            {8, 48, 0, 0, 0, 0, 1, TSR_F32, 1, 0.5f, 1, 0},          /* k == 0 */
            {17, 53, 700, 0, 1, 0, 1, TSR_BF16, 1, 0.5f, 2, 1},   /* bf16 C, K over several kc */
            {9, 100, 300, 1, 0, 0, 2, TSR_F16, 1, 0, 1, 1},       /* f16 C */
            {1, 77, 1001, 0, 1, 0, 3, TSR_BF16, 1, 0.5f, 1, 1},   /* decode x W^T: the bf16 dot path */
            {16, 41, 33, 0, 1, 0, 1, TSR_BF16, 2, 0, 3, 0},       /* M = 16 dot path, batch, k % 32 */
            {3, 1400, 50, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0},    /* streamed rows: two passes of 1360 columns */
            /* unpacked B: a last panel of whole vectors read in place (no
             * packing, so no barriers), over K blocks, and batched in one team */
            {37, 80, 300, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0},
            {11, 64, 23, 0, 0, 1, 1, TSR_F32, 1, 0, 3, 0},
            /* row-major B and pack_b off: streamed rows (f32: M <= 4; bf16:
             * M <= 16, blocks interleaved to k pairs), A stored k x m, odd
             * K, a narrow C, a column tail */
            {2, 70, 301, 1, 0, 0, 2, TSR_F32, 1, 0.5f, 2, 1},
            {4, 1500, 64, 0, 0, 1, 3, TSR_F32, 2, 0, 1, 0},
            {16, 1100, 157, 0, 0, 1, 3, TSR_F32, 1, 0.5f, 2, 0}, /* bf16: 512-column chunks, blocks of 32 k and 29 */
            {2, 2100, 45, 1, 0, 0, 2, TSR_F32, 1, 0, 1, 1},      /* bf16: five chunks, the last of 52 columns */
            {9, 40, 7, 0, 0, 0, 4, TSR_F32, 0.5f, 0, 1, 0},
            /* AVX2 streamed rows over blocks of 8 chunks and K blocks of
             * 256: 16 rows (256-column chunks; 2250 columns a thread at two,
             * a block of 8 and one of 202) over K blocks of 256, 256 and
             * 18; 5 rows of A stored k x m (816-column chunks), 301 k */
            {16, 4500, 530, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0},
            {5, 3000, 301, 1, 0, 1, 3, TSR_F32, 1, 0, 2, 0},
            /* f32 B past 16 MiB (16.9 MB) read in place by 13 rows: the
             * micro-kernel (AVX-512; or packed) or streamed rows (AVX2:
             * 304-column chunks, 2050 columns a thread at two, a block of
             * 7 chunks the last ragged; K blocks of 256 and a 6) */
            {13, 4100, 1030, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0},
            /* f16/bf16 B read in place by the f32 kernels' dot and stream
             * paths, widened in registers: k tails past whole bf16 pairs of
             * vectors (1001 % 16, all of K under one step), a narrow C */
            {1, 77, 1001, 0, 1, 0, 3, TSR_F16, 1, 0.5f, 1, 1},
            {6, 29, 15, 0, 1, 1, 2, TSR_BF16, 1, 0, 2, 0},
            {5, 31, 100, 0, 1, 0, 1, TSR_BF16, 1, 0.5f, 1, 1},
            {4, 1500, 64, 0, 0, 1, 3, TSR_BF16, 2, 0, 1, 1},
            {3, 70, 301, 1, 0, 0, 2, TSR_F16, 1, 0.5f, 2, 0},
            /* x W^T with A widened once by the team (dot_widen_a): rows
             * split unevenly between two threads, k past the last whole
             * step, batch (the next matrix's A overwrites the copy) */
            {7, 45, 203, 0, 1, 0, 2, TSR_F16, 1, 0.5f, 2, 0},
            {15, 38, 77, 0, 1, 1, 1, TSR_BF16, 1, 0, 3, 1},
            /* B read in place from beyond L2 (1.7 MB), its rows fetched ahead near or far */
            {20, 1500, 301, 0, 0, 0, 1, TSR_F32, 1, 0.5f, 1, 0},
            /* two threads split by row panels (one column panel): bias
             * along m, the residual, transposes, batch, a narrow C */
            {96, 40, 200, 1, 1, 1, 2, TSR_F32, 1, 0.5f, 2, 0},
            {96, 40, 200, 0, 0, 0, 3, TSR_F32, 1, 0, 1, 1},
            /* past 256^3: with rows_outer each thread owns a share, else the team shares buffers */
            {260, 257, 263, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0},
            /* a last panel of one vector or less takes columns from the one
             * before (tsr_panel_cols): shares of 64 columns split by vectors
             * (48 + 16 -> 32 + 32); 100 columns (48 + 48 + 4 -> 48 + 32 + 20)
             * with tiles split by their vectors in a team */
            {30, 128, 70, 0, 1, 0, 2, TSR_F32, 1, 0.5f, 1, 0},
            {9, 100, 700, 0, 0, 0, 1, TSR_F32, 1, 0, 2, 0},
        };
        for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
                for (int threads = 1; threads <= 2; threads++) {
                    xcase x = cases[ci];
                    if (only != TSR_F32) x.in = only;
                    tsr_context_set_num_threads(ctx, threads);
                    check(ctx, ref, k, &x, &scheds[si]);
                    ran++;
                }
        /* the heuristic's schedule on skinny and square shapes */
        const xcase dflt[] = {{1, 333, 517, 0, 0, 0, 4, TSR_F32, 1, 0, 1, 0}, {16, 4100, 64, 0, 0, 0, 2, TSR_F32, 1, 1, 1, 0},
                              {200, 190, 300, 1, 1, 0, 1, TSR_F32, 1, 0, 1, 0}, {1, 333, 517, 0, 1, 0, 2, TSR_BF16, 1, 0, 1, 1},
                              {16, 70, 260, 0, 1, 0, 1, TSR_F16, 1, 0.5f, 1, 0}, {3, 500, 90, 0, 0, 0, 3, TSR_BF16, 1, 0, 1, 0},
                              {9, 4100, 1030, 0, 0, 0, 1, TSR_F32, 1, 0, 1, 0},
                              /* packed B past 16 MiB (f32 34 MB, bf16 17 MB): the next block's
                               * B fetched during the tiles, over K blocks and into the second
                               * column block */
                              {40, 4100, 2100, 0, 0, 0, 2, TSR_F32, 1, 0.5f, 1, 0}};
        for (size_t ci = 0; ci < sizeof dflt / sizeof dflt[0]; ci++) {
            tsr_problem p;
            memset(&p, 0, sizeof p);
            p.op = TSR_OP_GEMM;
            tsr_gemm_desc_init(&p.u.gemm.d);
            p.u.gemm.d.m = dflt[ci].m, p.u.gemm.d.n = dflt[ci].n, p.u.gemm.d.k = dflt[ci].k;
            p.u.gemm.d.trans_b = (tsr_transpose)dflt[ci].tb;
            xcase x = dflt[ci];
            if (only != TSR_F32) x.in = only;
            p.u.gemm.d.a_dtype = p.u.gemm.d.b_dtype = x.in;
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            k->default_schedule(&p, ctx, &s);
            check(ctx, ref, k, &x, &s);
            ran++;
        }
    }
    printf("gemm_x86: %d kernel runs checked\n", ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* C as its own residual with K across several K blocks: the x86 kernel
 * stores partial sums into C, so it must leave this case to the reference. */
START_TEST(inplace_residual) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    enum { M = 9, N = 37, K = 700 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float c1[M * N], c2[M * N];
    tt_fill(a, TSR_F32, M * K, 71, -1, 1);
    tt_fill(b, TSR_F32, K * N, 72, -1, 1);
    tt_fill(c1, TSR_F32, M * N, 73, -1, 1);
    memcpy(c2, c1, sizeof c1);
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = M, d.n = N, d.k = K, d.epilogue.num_steps = 1;
    d.epilogue.steps[0] = tsr_epilogue_residual(c1, TSR_F32, 0, 1.0f);
    ck_assert_int_eq(tsr_gemm(ref, &d, a, b, c1), TSR_OK);
    d.epilogue.steps[0] = tsr_epilogue_residual(c2, TSR_F32, 0, 1.0f);
    ck_assert_int_eq(tsr_gemm(ctx, &d, a, b, c2), TSR_OK);
    ck_assert_int_eq(tt_compare("in-place residual", c2, c1, TSR_F32, M * N, 1e-4, 1e-5), 0);
    free(a), free(b);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* The int8 VNNI kernel: exact against the reference (int32 wrap-around
 * included) on every path, transpose, K tail (k % 4, % 64), block edge and
 * alpha/beta family. */
typedef struct icase {
    int64_t m, n, k;
    int ta, tb;
    float alpha, beta;
    int64_t batch;
    int8_t fill; /* 0: pseudo-random bytes; else every element this value */
} icase;

/* false when s is not valid for the problem (nothing run) */
static bool check_i8(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const icase *x, const tsr_schedule *s) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = x->m, d.n = x->n, d.k = x->k, d.trans_a = (tsr_transpose)x->ta, d.trans_b = (tsr_transpose)x->tb;
    d.a_dtype = d.b_dtype = TSR_I8, d.c_dtype = TSR_I32, d.alpha = x->alpha, d.beta = x->beta, d.batch = x->batch;
    d.lda = (x->ta ? x->m : x->k) + 5, d.ldb = (x->tb ? x->k : x->n) + 3, d.ldc = x->n + 1;
    d.stride_a = (x->ta ? x->k : x->m) * d.lda, d.stride_b = (x->tb ? x->n : x->k) * d.ldb;
    d.stride_c = x->m * d.ldc;
    size_t na = (size_t)(d.stride_a * x->batch), nb = (size_t)(d.stride_b * x->batch), nc = (size_t)(d.stride_c * x->batch);
    int8_t *a = malloc(na + 1), *b = malloc(nb + 1);
    int32_t *c1 = malloc(nc * 4 + 4), *c2 = malloc(nc * 4 + 4);
    uint64_t r = 0x9e3779b97f4a7c15ull ^ (uint64_t)(x->m * 131 + x->n * 17 + x->k);
    for (size_t i = 0; i < na; i++) a[i] = x->fill ? x->fill : (int8_t)((r = r * 6364136223846793005ull + 1) >> 56);
    for (size_t i = 0; i < nb; i++) b[i] = x->fill ? x->fill : (int8_t)((r = r * 6364136223846793005ull + 1) >> 56);
    for (size_t i = 0; i < nc; i++) c1[i] = (int32_t)((r = r * 6364136223846793005ull + 1) >> 40) - (1 << 23);
    memcpy(c2, c1, nc * 4);
    ck_assert_msg(tsr_gemm(ref, &d, a, b, c1) == TSR_OK, "%s", tsr_last_error());
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_GEMM;
    p.u.gemm.d = d;
    p.u.gemm.a = a, p.u.gemm.b = b, p.u.gemm.c = c2;
    char why[128];
    ck_assert_msg(tsr_kernel_supports(k, &p, ctx, why, sizeof why), "%s", why);
    const bool valid = k->schedule_valid(&p, ctx, s);
    if (!valid) goto done;
    ck_assert_msg(k->run(ctx, &p, s) == TSR_OK, "%s", tsr_last_error());
    for (size_t i = 0; i < nc; i++)
        ck_assert_msg(c1[i] == c2[i],
                      "%s %lldx%lldx%lld b%lld T%d%d a%g b%g mc%d kc%d nc%d path%d pack_a%d: c[%zu] = %d, want %d",
                      k->name, (long long)x->m, (long long)x->n, (long long)x->k, (long long)x->batch, x->ta, x->tb,
                      (double)x->alpha, (double)x->beta, s->v[0], s->v[1], s->v[2], s->v[3], s->v[4], i, c2[i], c1[i]);
done:
    free(a), free(b), free(c1), free(c2);
    return valid;
}

/* The int8 kernels: VNNI (AVX-512) and vpmaddwd (AVX2), each on the
 * schedules valid for it. */
START_TEST(int8_kernels) {
    static const char *const names[] = {"gemm.x86_avx512_vnni.s8", "gemm.x86_avx2.s8"};
    for (size_t ki = 0; ki < sizeof names / sizeof names[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(names[ki]);
        ck_assert_ptr_nonnull(k);
        tsr_context *ctx = NULL, *ref = tt_ref_context();
        ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
        tsr_problem probe;
        memset(&probe, 0, sizeof probe);
        probe.op = TSR_OP_GEMM;
        tsr_gemm_desc_init(&probe.u.gemm.d);
        probe.u.gemm.d.a_dtype = probe.u.gemm.d.b_dtype = TSR_I8, probe.u.gemm.d.c_dtype = TSR_I32;
        char why[128];
        if (!tsr_kernel_supports(k, &probe, ctx, why, sizeof why)) {
            printf("SKIP gemm_x86: %s: %s\n", k->name, why);
            goto out;
        }
        /* mc, kc, nc, path (0 packed, 1 dot, 2 stream; an inapplicable path is skipped), and
         * VNNI's pack_a (0: A read in place where it can be, else skipped; 1 packed) */
        const tsr_schedule scheds[] = {{{48, 256, 1008, 0}}, {{96, 512, 2016, 0}}, {{192, 1024, 2016, 1}},
                                       {{48, 256, 1008, 1}}, {{48, 256, 1008, 2}}};
        const icase cases[] = {
            {1, 1, 1, 0, 0, 1, 0, 1, 0},
            {5, 17, 130, 0, 1, 1, 0, 1, 0},          /* k % 4 = 2, dot path */
            {1, 37, 300, 0, 1, 1, 1, 1, 0},          /* decode: the 1 x 8 dot tile, a column tail of 5 */
            {1, 4100, 4096, 0, 1, 1, 1, 1, 0},      /* decode, B past 16 MiB: next tiles fetched, to a ragged last */
            {9, 49, 257, 0, 0, 1, 1, 1, 0},          /* MR+1, NR+1, kc+1 */
            {49, 1009, 515, 1, 1, 1, 0, 1, 0},       /* mc+1, nc+1, 2*kc+3 */
            {16, 100, 1027, 1, 1, 1, 1, 1, 0},       /* dot path with A stored k x m */
            {3, 97, 65, 0, 1, 0.5f, -2, 1, 0},       /* alpha/beta rounded: one K block */
            {21, 101, 1001, 0, 1, 1, 1, 1, 0},       /* B n x k with ldb % 4 == 0: packed by transposes; equal K blocks */
            {19, 70, 291, 0, 0, 1, 1, 1, 0},         /* lda % 4 == 0: A packed by transposes; ragged rows and panel */
            {13, 47, 700, 0, 0, 2, 0.25f, 1, 0},
            {11, 19, 23, 1, 0, 1, 1, 4, 0},          /* batch */
            {8, 48, 0, 0, 0, 1, 1, 1, 0},            /* k == 0: C unchanged with beta 1 */
            {8, 48, 0, 0, 1, 3, 0.5f, 1, 0},         /* k == 0, beta rounded */
            {2, 3, 140000, 0, 1, 1, 0, 1, -128},     /* 16384 k overflows int32: wraps like the reference */
            {2, 3, 140000, 0, 0, 1, 1, 1, -128},
            /* two threads split the packed path by column panels or, when those
             * do not split evenly, by row panels (each packing its own copies) */
            {24, 192, 300, 0, 1, 1, 0, 2, 0},        /* columns, B stored n x k, batch */
            {64, 40, 600, 0, 0, 1, 1, 1, 0},         /* rows, beta 1 */
            {64, 40, 600, 1, 0, 1, 0, 3, 0},         /* rows, A stored k x m, batch */
            {48, 40, 400, 1, 1, 0.5f, -2, 1, 0},     /* rows, alpha/beta rounded */
            {30, 128, 300, 0, 0, 1, 1, 2, 0},        /* columns by vectors: 64 each, 48 + 16 -> 32 + 32 */
            {9, 100, 700, 0, 1, 1, 0, 1, 0},         /* a team: 48 + 48 + 4 -> 48 + 32 + 20, tiles split by vectors */
            /* the stream path (M <= 16, row-major B): k % 4 = 2, a ragged group of 64 columns */
            {4, 200, 130, 0, 0, 1, 0, 1, 0},
            {3, 1100, 77, 1, 0, 1, 1, 3, 0},         /* A stored k x m, three 512-column chunks, beta 1, batch */
            {2, 65, 33, 0, 0, 0.5f, -2, 1, 0},       /* alpha/beta rounded */
            {1, 2100, 9, 0, 0, 1, 0, 2, 127},        /* every byte 127: the b + 128 correction at its largest */
            {2, 4200, 70, 0, 0, 1, 1, 1, 0},         /* 2048-column chunks, a ragged third; two k blocks of 32 */
            {16, 1100, 267, 0, 0, 1, 1, 2, 0},       /* 16 rows; k blocks of 64 and a last group of 3 rows */
            {7, 1000, 130, 1, 0, 1, 0, 1, 0},        /* A stored k x m, an odd row count */
            {16, 45, 5, 0, 0, 1, 0, 1, -128},       /* every byte -128: b + 128 = 0, all from the row sums */
            {12, 77, 64, 0, 0, 3, 0.5f, 1, 0},       /* alpha/beta rounded at 12 rows */
            /* the packed path with A read in place (k % 4 == 0): b + 128 at its largest, and 0 */
            {9, 50, 256, 0, 0, 1, 0, 1, 127},
            {9, 50, 256, 0, 1, 1, 1, 1, -128},
        };
        int ran = 0;
        for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
            for (int pack_a = 0; pack_a <= (k->num_knobs > 4); pack_a++)
                for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
                    for (int threads = 1; threads <= 2; threads++) {
                        tsr_schedule s = scheds[si];
                        s.v[4] = pack_a;
                        tsr_context_set_num_threads(ctx, threads);
                        ran += check_i8(ctx, ref, k, &cases[ci], &s);
                    }
        printf("gemm_x86: %s: %d int8 runs checked\n", k->name, ran);
out:
        tsr_context_destroy(ctx);
        tsr_context_destroy(ref);
    }
}
END_TEST

/* The epilogue's activations against the reference's, on pre-activation
 * values the GEMM forms exactly (k = 1: v times 1, v = i/16 for |i| <= 255,
 * exact in bf16 too), so the activation alone is measured: within the ulps
 * x86_chain.h lists for the same functions, tails for x < 0 included
 * (where 0.5 x (1 + erf(x / sqrt 2)) loses every digit from x = -6 on).
 * The values run down the rows of A (the packed path) and along B (the
 * few-rows paths). */
START_TEST(activation_tails) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_activation acts[] = {TSR_ACT_SIGMOID, TSR_ACT_SILU, TSR_ACT_TANH, TSR_ACT_GELU_ERF, TSR_ACT_GELU_TANH};
    const int64_t max_ulp[] = {3, 3, 2, 6, 4}; /* tanh: the kernel's 1 and the reference's tanhf */
    enum { NV = 511, OTHER = 19 };
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = tsr_registry_find(kernels[ki].name);
        const tsr_dtype in = kernels[ki].only_in;
        for (int along_b = 0; along_b < 2; along_b++) {
            tsr_gemm_desc d;
            tsr_gemm_desc_init(&d);
            d.m = along_b ? 9 : NV, d.n = along_b ? NV : OTHER, d.k = 1;
            d.a_dtype = d.b_dtype = in, d.c_dtype = TSR_F32;
            d.lda = 1, d.ldb = d.n, d.ldc = d.n;
            void *a = malloc((size_t)d.m * 4), *b = malloc((size_t)d.n * 4);
            float *c = malloc(sizeof(float) * (size_t)(d.m * d.n));
            for (int64_t i = 0; i < d.m; i++) tsr_store_f(a, in, i, along_b ? 1.0f : (float)(i - NV / 2) / 16);
            for (int64_t j = 0; j < d.n; j++) tsr_store_f(b, in, j, along_b ? (float)(j - NV / 2) / 16 : 1.0f);
            tsr_problem p;
            memset(&p, 0, sizeof p);
            p.op = TSR_OP_GEMM;
            p.u.gemm.a = a, p.u.gemm.b = b, p.u.gemm.c = c;
            char why[128];
            p.u.gemm.d = d;
            if (!tsr_kernel_supports(k, &p, ctx, why, sizeof why)) {
                printf("SKIP gemm_x86: activation_tails: %s: %s\n", k->name, why);
                free(a), free(b), free(c);
                break;
            }
            for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
                p.u.gemm.d.epilogue.num_steps = 1;
                p.u.gemm.d.epilogue.steps[0] = tsr_epilogue_activation(acts[ai]);
                tsr_schedule s;
                memset(&s, 0, sizeof s);
                k->default_schedule(&p, ctx, &s);
                ck_assert_msg(k->run(ctx, &p, &s) == TSR_OK, "%s", tsr_last_error());
                int64_t worst = 0;
                float at = 0;
                for (int64_t i = 0; i < d.m; i++)
                    for (int64_t j = 0; j < d.n; j++) {
                        const float v = (float)((along_b ? j : i) - NV / 2) / 16;
                        const int64_t u = tt_ulps(c[i * d.n + j], tsr_activation_ref(acts[ai], v));
                        if (u > worst) worst = u, at = v;
                    }
                ck_assert_msg(worst <= max_ulp[ai], "%s activation %d along %s: %lld ulp at x = %g (bound %lld)",
                              k->name, (int)acts[ai], along_b ? "B" : "A", (long long)worst, (double)at,
                              (long long)max_ulp[ai]);
                ran++;
            }
            free(a), free(b), free(c);
        }
    }
    printf("gemm_x86: activation_tails: %d kernel runs checked\n", ran);
    ck_assert_int_ge(ran, 10); /* the AVX2 kernel runs on every x86-64 CPU this suite builds for */
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gemm_x86");
    TCase *tc = tcase_create("x86");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, blocks_schedules_threads);
    tcase_add_test(tc, inplace_residual);
    tcase_add_test(tc, int8_kernels);
    tcase_add_test(tc, activation_tails);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
