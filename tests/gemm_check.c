#include "gemm_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

/* Runs kernel k with schedule s on device copies; returns 1 when it ran, 0
 * when the kernel or the schedule does not take the case. */
int tt_gemm_kernel_check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const ccase *x,
                         const tsr_schedule *s) {
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
    if (!tsr_kernel_supports(k, &p, ctx, why, sizeof why)) goto done;
    if (k->schedule_valid && !k->schedule_valid(&p, ctx, s)) goto done;
    st = k->run(ctx, &p, s);
    ck_assert_msg(st == TSR_OK, "%s: %s", k->name, tsr_last_error());
    tt_download(ctx, c2, dc, nc * ec);
    char what[240];
    snprintf(what, sizeof what, "%s %lldx%lldx%lld b%lld T%d%d %s->%s epi%d a%g b%g knobs %d %d %d %d %d %d", k->name,
             (long long)x->m, (long long)x->n, (long long)x->k, (long long)x->batch, x->ta, x->tb,
             tsr_dtype_name(x->in), tsr_dtype_name(x->out), x->epi, (double)x->alpha, (double)x->beta, s->v[0],
             s->v[1], s->v[2], s->v[3], s->v[4], s->v[5]);
    double rtol = tt_rtol(x->out, x->k) * 4, atol = x->out == TSR_I32 ? 0 : rtol * sqrt((double)x->k + 1);
    ck_assert_msg(tt_compare(what, c2, c1, x->out, (int64_t)nc, atol, rtol) == 0, "%s", what);
    ran = 1;
done:
    tt_free(ctx, da), tt_free(ctx, db), tt_free(ctx, dc), tt_free(ctx, dres), tt_free(ctx, dbias);
    free(a), free(b), free(c1), free(c2), free(res), free(bias);
    return ran;
}

const tsr_kernel *tt_kernel(const char *name) {
    const tsr_kernel *k = tsr_registry_find(name);
    ck_assert_msg(k != NULL, "kernel %s is not registered", name);
    return k;
}

