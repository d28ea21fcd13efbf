/* The sm80 GEMM kernels on their own: each kernel forced with each value of
 * its knobs (tile shapes, pipeline stages, split-k, rasterisation, columns
 * per warp) on shapes that cross every tile boundary, all transposes, batch,
 * alpha/beta and the fused epilogue, against the reference. Without a GPU
 * the suite prints SKIP and passes having checked nothing else. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

typedef struct ccase {
    int64_t m, n, k;
    int ta, tb, epi;
    tsr_dtype in, out;
    float alpha, beta;
    int64_t batch;
} ccase;

static tsr_context *cuda_context(void) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_CUDA;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        printf("SKIP gemm_cuda: backend cuda: %s\n", tsr_last_error());
        return NULL;
    }
    return ctx;
}

static int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

/* Runs kernel k with schedule s on device copies; returns 1 when it ran, 0
 * when the kernel or the schedule does not take the case. */
static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const ccase *x, const tsr_schedule *s) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = x->m, d.n = x->n, d.k = x->k, d.trans_a = (tsr_transpose)x->ta, d.trans_b = (tsr_transpose)x->tb;
    d.a_dtype = d.b_dtype = x->in, d.c_dtype = x->out, d.alpha = x->alpha, d.beta = x->beta, d.batch = x->batch;
    /* leading dimensions padded to keep rows 16-byte aligned for every dtype
     * (the tensor-core and skinny kernels need it) but not equal to the extent */
    d.lda = round16(x->ta ? x->m : x->k) + 16, d.ldb = round16(x->tb ? x->k : x->n) + 32, d.ldc = x->n + 3;
    d.stride_a = (x->ta ? x->k : x->m) * d.lda + 16, d.stride_b = (x->tb ? x->n : x->k) * d.ldb;
    d.stride_c = x->m * d.ldc + 1;
    size_t na = (size_t)(d.stride_a * x->batch), nb = (size_t)(d.stride_b * x->batch),
           nc = (size_t)(d.stride_c * x->batch);
    size_t ea = tsr_dtype_size(x->in), ec = tsr_dtype_size(x->out);
    void *a = malloc(na * ea + 16), *b = malloc(nb * ea + 16), *c1 = malloc(nc * ec + 16), *c2 = malloc(nc * ec + 16);
    void *res = malloc(nc * ec + 16);
    float *bias = malloc(sizeof(float) * (size_t)(x->n + 1));
    float lo = x->in == TSR_I8 ? -128 : -1, hi = x->in == TSR_I8 ? 128 : 1;
    tt_fill(a, x->in, (int64_t)na, 81, lo, hi);
    tt_fill(b, x->in, (int64_t)nb, 82, lo, hi);
    tt_fill(c1, x->out, (int64_t)nc, 83, -1, 1);
    tt_fill(res, x->out, (int64_t)nc, 84, -1, 1);
    tt_fill(bias, TSR_F32, x->n + 1, 85, -1, 1);
    if (x->beta == 0 && x->out == TSR_F32)
        for (size_t i = 0; i < nc; i++) ((float *)c1)[i] = NAN; /* beta == 0 never reads C */
    void *da = tt_upload(ctx, a, na * ea), *db = tt_upload(ctx, b, nb * ea), *dc = tt_upload(ctx, c1, nc * ec);
    void *dres = tt_upload(ctx, res, nc * ec), *dbias = tt_upload(ctx, bias, sizeof(float) * (size_t)(x->n + 1));
    tsr_gemm_desc dd = d;
    if (x->epi) {
        d.epilogue.num_steps = 3;
        d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
        d.epilogue.steps[1] = tsr_epilogue_residual(res, x->out, 0, -0.5f);
        d.epilogue.steps[2] = tsr_epilogue_activation((tsr_activation)x->epi);
        dd.epilogue = d.epilogue;
        dd.epilogue.steps[0].data = dbias;
        dd.epilogue.steps[1].data = dres;
    }
    int ran = 0;
    tsr_status st = tsr_gemm(ref, &d, a, b, c1);
    ck_assert_msg(st == TSR_OK, "%s", tsr_last_error());
    /* the problem as the op front hands it to a kernel */
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_GEMM;
    p.u.gemm.d = dd;
    for (int i = 0; i < dd.epilogue.num_steps; i++) {
        tsr_epilogue_step *es = &p.u.gemm.d.epilogue.steps[i];
        if (es->op == TSR_EPI_RESIDUAL) es->ld = d.ldc, es->batch_stride = d.stride_c;
    }
    p.u.gemm.a = da, p.u.gemm.b = db, p.u.gemm.c = dc;
    char why[160];
    if (!k->supports(&p, ctx, why, sizeof why)) goto done;
    if (k->schedule_valid && !k->schedule_valid(&p, ctx, s)) goto done;
    st = k->run(ctx, &p, s);
    ck_assert_msg(st == TSR_OK, "%s: %s", k->name, tsr_last_error());
    tt_download(ctx, c2, dc, nc * ec);
    char what[240];
    snprintf(what, sizeof what, "%s %lldx%lldx%lld b%lld T%d%d %s->%s epi%d a%g b%g knobs %d %d %d %d", k->name,
             (long long)x->m, (long long)x->n, (long long)x->k, (long long)x->batch, x->ta, x->tb,
             tsr_dtype_name(x->in), tsr_dtype_name(x->out), x->epi, (double)x->alpha, (double)x->beta, s->v[0],
             s->v[1], s->v[2], s->v[3]);
    double rtol = tt_rtol(x->out, x->k) * 4, atol = x->out == TSR_I32 ? 0 : rtol * sqrt((double)x->k + 1);
    ck_assert_msg(tt_compare(what, c2, c1, x->out, (int64_t)nc, atol, rtol) == 0, "%s", what);
    ran = 1;
done:
    tt_free(ctx, da), tt_free(ctx, db), tt_free(ctx, dc), tt_free(ctx, dres), tt_free(ctx, dbias);
    free(a), free(b), free(c1), free(c2), free(res), free(bias);
    return ran;
}

static const tsr_kernel *kernel(const char *name) {
    const tsr_kernel *k = tsr_registry_find(name);
    ck_assert_msg(k != NULL, "kernel %s is not registered", name);
    return k;
}

/* Every tile shape x stages x split-k x raster on tile-crossing shapes. */
START_TEST(tensor_core_knobs) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = kernel("gemm.sm80.tc");
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
    int ran = 0;
    for (int tile = 0; tile < 5; tile++)
        for (int stages = 2; stages <= 5; stages++)
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                const int splits[] = {1, 3, 8};
                for (int si = 0; si < 3; si++) {
                    tsr_schedule s;
                    memset(&s, 0, sizeof s);
                    s.v[0] = tile, s.v[1] = stages, s.v[2] = splits[si], s.v[3] = (int)(ci % 2 ? 8 : 1);
                    ran += check(ctx, ref, k, &cases[ci], &s);
                }
            }
    printf("gemm_cuda: tc: %d kernel runs checked\n", ran);
    ck_assert_int_gt(ran, 250);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

START_TEST(skinny_knobs) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = kernel("gemm.sm80.skinny");
    const int64_t ms[] = {1, 2, 3, 5, 8, 9, 16};
    const int64_t nks[][2] = {{1, 8}, {7, 200}, {130, 4104}, {33, 1016}};
    const tsr_dtype dts[] = {TSR_F32, TSR_F16, TSR_BF16};
    int ran = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t ni = 0; ni < sizeof nks / sizeof nks[0]; ni++)
            for (int t = 0; t < 3; t++)
                for (int cols = 2; cols <= 8; cols *= 2)
                    for (int split = 1; split <= 8; split *= 4) {
                        ccase c = {ms[mi], nks[ni][0], nks[ni][1], 0, 1, (int)(mi + ni) % 3, dts[t],
                                   t == 2 ? TSR_BF16 : TSR_F32, 1, mi == 2 ? 0.5f : 0, 1 + (int64_t)(ni == 1)};
                        tsr_schedule s;
                        memset(&s, 0, sizeof s);
                        s.v[0] = cols, s.v[1] = split;
                        ran += check(ctx, ref, k, &c, &s);
                    }
    printf("gemm_cuda: skinny: %d kernel runs checked\n", ran);
    ck_assert_int_gt(ran, 300);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

START_TEST(sgemm_and_generic) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
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
    const tsr_kernel *sg = kernel("gemm.sm80.sgemm"), *gen = kernel("gemm.sm80.generic");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int split = 1; split <= 4; split *= 2) {
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            s.v[0] = split;
            ran += check(ctx, ref, sg, &cases[ci], &s);
        }
    /* the last resort takes every dtype pair, int8 exactly */
    const ccase any[] = {
        {13, 7, 33, 0, 1, 0, TSR_I8, TSR_I32, 1, 0, 1},   {9, 11, 5, 1, 1, 0, TSR_I8, TSR_I32, 1, 1, 2},
        {3, 5, 7, 1, 0, 1, TSR_F16, TSR_F16, 1, 0, 1},    {6, 2, 9, 0, 0, 3, TSR_BF16, TSR_F32, 1, 0.5f, 1},
        {40, 33, 65, 1, 1, 2, TSR_F32, TSR_F32, 1, 0, 3},
    };
    tsr_schedule s0;
    memset(&s0, 0, sizeof s0);
    for (size_t ci = 0; ci < sizeof any / sizeof any[0]; ci++) ran += check(ctx, ref, gen, &any[ci], &s0);
    printf("gemm_cuda: sgemm + generic: %d kernel runs checked\n", ran);
    ck_assert_int_ge(ran, 17);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* The heuristic's choices through the public API at model-like sizes. */
START_TEST(defaults_at_scale) {
    tsr_context *ctx = cuda_context(), *ref = tt_ref_context();
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
        const char *names[] = {"gemm.sm80.skinny", "gemm.sm80.tc", "gemm.sm80.sgemm"};
        for (int ki = 0; ki < 3; ki++) {
            const tsr_kernel *k = kernel(names[ki]);
            tsr_schedule s;
            memset(&s, 0, sizeof s);
            k->default_schedule(&p, ctx, &s);
            ran += check(ctx, ref, k, x, &s);
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
    tcase_add_test(tc, sgemm_and_generic);
    tcase_add_test(tc, defaults_at_scale);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
