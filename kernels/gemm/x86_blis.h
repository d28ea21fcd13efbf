/* BLIS-style f32 GEMM, written once over the simd.h vector names and
 * instantiated per ISA by kernels/gemm/x86_avx2.c and x86_avx512.c (which
 * define MR, NV, GEMM_ARCH, GEMM_FEATURES and GEMM_SYMBOL first). Loops: jc (NC) > pc (KC) > ic (MC) >
 * micro-tiles MR x NR, NR = NV * VL. A is packed into MR-row micro-panels
 * and B into NR-column ones (f16/bf16 converted while packing); with
 * pack_b = 0 (skinny M, f32 row-major B) full tiles read B in place.
 * alpha/beta and the epilogue are applied to the accumulators on the last
 * K block, before the only store of C. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx512/vdtype.h"
#include "internal.h"

#define NR (NV * VL)
#include "x86_ukernel.h"

enum { KNOB_MC, KNOB_KC, KNOB_NC, KNOB_PACK_B, KNOB_BATCH_PAR };

static const int mc_values[] = {48, 96, 144, 192, 288};
static const int kc_values[] = {128, 192, 256, 384, 512};
static const int nc_values[] = {1008, 2016, 4032, 8064};
static const int onoff_values[] = {0, 1};

static const tsr_knob gemm_knobs[] = {
    {"mc", 5, mc_values}, {"kc", 5, kc_values}, {"nc", 4, nc_values},
    {"pack_b", 2, onoff_values}, {"batch_parallel", 2, onoff_values},
};

static bool f32_or_same(const void *p, tsr_dtype t) { return !p || t == TSR_F32; }

/* Bytes spanned by batch matrices of m x n, ld apart, stride apart. */
static int64_t span_bytes(const tsr_gemm_desc *d, int64_t ld, int64_t stride) {
    if (d->m == 0 || d->n == 0) return 0;
    return ((d->batch - 1) * stride + (d->m - 1) * ld + d->n) * (int64_t)sizeof(float);
}

static bool residual_overlaps_c(const tsr_gemm_problem *g, const tsr_epilogue_step *e) {
    const tsr_gemm_desc *d = &g->d;
    return tsr_ranges_overlap(g->c, span_bytes(d, d->ldc, d->stride_c), e->data,
                              span_bytes(d, e->ld, e->batch_stride));
}

static bool blis_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (ctx->backend != TSR_BACKEND_CPU || (ctx->cpu_features & GEMM_FEATURES) != GEMM_FEATURES) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "gemm.%s needs a CPU with its ISA", GEMM_ARCH);
        return false;
    }
    if (d->c_dtype != TSR_F32 || d->a_dtype == TSR_I8) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "gemm.%s: f32 outputs from f32/f16/bf16 inputs only", GEMM_ARCH);
        return false;
    }
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *e = &d->epilogue.steps[i];
        if (!f32_or_same(e->data, e->dtype)) {
            tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "gemm.%s: f32 bias/residual only", GEMM_ARCH);
            return false;
        }
        /* Partial sums are stored into C between K blocks, so a residual that
         * is (or overlaps) C would be read after it was overwritten. */
        if (e->op == TSR_EPI_RESIDUAL && residual_overlaps_c(&p->u.gemm, e)) {
            tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "gemm.%s: a residual overlapping C (in-place) is left to the reference", GEMM_ARCH);
            return false;
        }
    }
    return true;
}

/* Without packing, B (f32) is read in place: row-major B by the micro-kernel,
 * transposed B (rows of op(B)^T, the Llama weight layout) as dot products
 * with rows of A, which then must be f32 and untransposed too. */
static bool can_skip_pack_b(const tsr_gemm_desc *d) {
    if (d->b_dtype != TSR_F32) return false;
    return d->trans_b == TSR_NO_TRANS || (d->a_dtype == TSR_F32 && d->trans_a == TSR_NO_TRANS);
}

static void blis_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[KNOB_MC] = 144;
    s->v[KNOB_KC] = 256;
    s->v[KNOB_NC] = 4032;
    /* Skinny M: packing B costs as much memory traffic as the GEMM itself. */
    s->v[KNOB_PACK_B] = !(d->m <= 4 * MR && can_skip_pack_b(d));
    /* Many small matrices: one thread per matrix beats splitting each. */
    double flops = 2.0 * (double)d->m * (double)d->n * (double)d->k;
    s->v[KNOB_BATCH_PAR] = d->batch >= ctx->num_threads && flops < 2.0 * 128 * 128 * 128;
}

static bool blis_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    if (s->v[KNOB_MC] % MR || s->v[KNOB_NC] % NR || s->v[KNOB_KC] < 1) return false;
    return s->v[KNOB_PACK_B] || can_skip_pack_b(&p->u.gemm.d);
}

/* One matrix's operands and the work shape. */
typedef struct job {
    const tsr_gemm_problem *g;
    const char *a, *b;
    float *c;
    int64_t batch_index;
    int64_t mc, kc, nc;
    bool pack_b;
} job;

static inline float load_in(const void *p, tsr_dtype t, int64_t i) {
    return t == TSR_F32 ? ((const float *)p)[i] : tsr_load_f(p, t, i);
}

/* A(i, p) for rows [i0, i0+mr) and k in [p0, p0+kc) into an MR-row panel. */
static void pack_a(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    for (int64_t p = 0; p < kc; p++) {
        for (int64_t i = 0; i < mr; i++) {
            int64_t idx = d->trans_a ? (p0 + p) * d->lda + i0 + i : (i0 + i) * d->lda + p0 + p;
            dst[p * MR + i] = load_in(j->a, d->a_dtype, idx);
        }
        for (int64_t i = mr; i < MR; i++) dst[p * MR + i] = 0.0f;
    }
}

/* B(p, j) for k in [p0, p0+kc) and columns [j0, j0+nr) into an NR-column panel. */
static void pack_b(const job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    if (d->trans_b) {
        /* Read each stored row of B (a column of op(B)) contiguously; the
         * panel written with stride NR stays in L1. */
        for (int64_t c = 0; c < nr; c++) {
            const int64_t base = (j0 + c) * d->ldb + p0;
            if (d->b_dtype == TSR_F32) {
                const float *src = (const float *)j->b + base;
                for (int64_t p = 0; p < kc; p++) dst[p * NR + c] = src[p];
            } else {
                for (int64_t p = 0; p < kc; p++) dst[p * NR + c] = load_in(j->b, d->b_dtype, base + p);
            }
        }
        for (int64_t p = 0; p < kc; p++)
            for (int64_t c = nr; c < NR; c++) dst[p * NR + c] = 0.0f;
        return;
    }
    for (int64_t p = 0; p < kc; p++) {
        float *row = dst + p * NR;
        if (d->b_dtype == TSR_F32) {
            memcpy(row, (const float *)j->b + (p0 + p) * d->ldb + j0, sizeof(float) * (size_t)nr);
        } else {
            for (int64_t c = 0; c < nr; c++) row[c] = load_in(j->b, d->b_dtype, (p0 + p) * d->ldb + j0 + c);
        }
        for (int64_t c = nr; c < NR; c++) row[c] = 0.0f;
    }
}

/* acc = A-panel (MR x kc, packed) * B (kc x NR, rows ldb apart). */
static inline void micro_kernel(int64_t kc, const float *restrict ap, const float *restrict bp, int64_t ldb,
                                vf acc[MR][NV]) {
    const float *rows[MR];
    for (int i = 0; i < MR; i++) rows[i] = ap + i;
    ukr_zero(acc);
    ukr_fma(kc, rows, MR, bp, ldb, acc);
}

/* C tile (mr x nr at row i0, column j0) from the accumulators of K block
 * [p0, p0 + kc): the first block applies alpha and beta, later ones add, the
 * last one also runs the epilogue. */
static void store_tile(const job *j, vf acc[MR][NV], int64_t i0, int64_t mr, int64_t j0, int64_t nr, bool first,
                       bool last) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    const vf alpha = vf_set1(d->alpha), beta = vf_set1(d->beta);
    for (int64_t i = 0; i < mr; i++) {
        float *crow = j->c + (i0 + i) * d->ldc + j0;
        for (int v = 0; v < NV && v * VL < nr; v++) {
            int n = (int)(nr - v * VL < VL ? nr - v * VL : VL);
            vf r = vf_mul(acc[i][v], alpha);
            if (!first) r = vf_add(r, vf_load_n(crow + v * VL, n));
            else if (d->beta != 0.0f) r = vf_fma(beta, vf_load_n(crow + v * VL, n), r);
            if (last) {
                int64_t row = i0 + i, col = j0 + v * VL;
                r = ukr_epilogue(&d->epilogue, r, g->bias_along_m ? row : col, g->bias_along_m, j->batch_index,
                                 row, col, n);
            }
            vf_store_n(crow + v * VL, r, n);
        }
    }
}

/* k == 0: C = epilogue(beta * C) with no product. */
static void scale_only(const job *j, int tid, int nth) {
    const tsr_gemm_desc *d = &j->g->d;
    vf acc[MR][NV];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = vf_zero();
    int64_t tiles_m = (d->m + MR - 1) / MR, tiles_n = (d->n + NR - 1) / NR;
    for (int64_t t = tid; t < tiles_m * tiles_n; t += nth) {
        int64_t i0 = (t / tiles_n) * MR, j0 = (t % tiles_n) * NR;
        store_tile(j, acc, i0, d->m - i0 < MR ? d->m - i0 : MR, j0, d->n - j0 < NR ? d->n - j0 : NR, true, true);
    }
}

static float hsum(vf v) {
    float t[VL], s = 0.0f;
    vf_store(t, v);
    for (int i = 0; i < VL; i++) s += t[i];
    return s;
}

enum { DOT_ROWS = 4, DOT_COLS = 3 }; /* 12 accumulators + 3 B vectors + 1 A vector */

/* Columns [jlo, jhi) of C as dot products of A's rows with B's stored rows:
 * B streams through once, whatever M. The scalar epilogue runs per output
 * (M*N values against M*N*K multiply-adds). */
static void dot_columns(const job *j, int64_t jlo, int64_t jhi) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    const int64_t K = d->k, kfull = K / VL * VL;
    const float *A = (const float *)j->a, *B = (const float *)j->b;
    /* column blocks outermost: their few B rows stay in L1/L2 while every
     * group of A rows (all of A is small: M is skinny) passes over them */
    for (int64_t j0 = jlo; j0 < jhi; j0 += DOT_COLS) {
        const int nr = (int)(jhi - j0 < DOT_COLS ? jhi - j0 : DOT_COLS);
        const float *brow[DOT_COLS];
        for (int c = 0; c < DOT_COLS; c++) brow[c] = B + (j0 + (c < nr ? c : 0)) * d->ldb;
        for (int64_t i0 = 0; i0 < d->m; i0 += DOT_ROWS) {
            const int mr = (int)(d->m - i0 < DOT_ROWS ? d->m - i0 : DOT_ROWS);
            const float *arow[DOT_ROWS];
            for (int r = 0; r < DOT_ROWS; r++) arow[r] = A + (i0 + (r < mr ? r : 0)) * d->lda;
            vf acc[DOT_ROWS][DOT_COLS];
            for (int r = 0; r < DOT_ROWS; r++)
                for (int c = 0; c < DOT_COLS; c++) acc[r][c] = vf_zero();
            for (int64_t p = 0; p <= K - VL || (p < K && p == kfull); p += VL) {
                const int n = p < kfull ? VL : (int)(K - p);
                vf b[DOT_COLS];
                for (int c = 0; c < DOT_COLS; c++) b[c] = vf_load_n(brow[c] + p, n);
                for (int r = 0; r < DOT_ROWS; r++) {
                    vf a = vf_load_n(arow[r] + p, n);
                    for (int c = 0; c < DOT_COLS; c++) acc[r][c] = vf_fma(a, b[c], acc[r][c]);
                }
            }
            for (int r = 0; r < mr; r++)
                for (int c = 0; c < nr; c++) {
                    int64_t row = i0 + r, col = j0 + c;
                    float *cp = j->c + row * d->ldc + col;
                    float v = d->alpha * hsum(acc[r][c]);
                    if (d->beta != 0.0f) v += d->beta * *cp;
                    *cp = tsr_epilogue_apply_ref(&d->epilogue, v, g->bias_along_m ? row : col, j->batch_index, row, col);
                }
        }
    }
}

enum { STREAM_ROWS = 4, STREAM_COLS = 1024 };

/* Columns [jlo, jhi) of C for M <= STREAM_ROWS with row-major f32 B: each
 * row of B is read once, contiguously (the hardware prefetcher follows),
 * into accumulators that stay in L1. */
static void stream_rows(const job *j, int64_t jlo, int64_t jhi) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    const float *B = (const float *)j->b;
    _Alignas(64) float acc[STREAM_ROWS][STREAM_COLS];
    const int mr = (int)d->m;
    for (int64_t c0 = jlo; c0 < jhi; c0 += STREAM_COLS) {
        const int64_t nc = jhi - c0 < STREAM_COLS ? jhi - c0 : STREAM_COLS;
        for (int r = 0; r < mr; r++) memset(acc[r], 0, sizeof(float) * (size_t)nc);
        for (int64_t p = 0; p < d->k; p++) {
            const float *brow = B + p * d->ldb + c0;
            vf a[STREAM_ROWS];
            for (int r = 0; r < mr; r++)
                a[r] = vf_set1(load_in(j->a, d->a_dtype, d->trans_a ? p * d->lda + r : r * d->lda + p));
            for (int64_t c = 0; c < nc; c += VL) {
                const int n = (int)(nc - c < VL ? nc - c : VL);
                vf b = vf_load_n(brow + c, n);
                for (int r = 0; r < mr; r++) vf_store_n(acc[r] + c, vf_fma(a[r], b, vf_load_n(acc[r] + c, n)), n);
            }
        }
        for (int r = 0; r < mr; r++)
            for (int64_t c = 0; c < nc; c++) {
                int64_t col = c0 + c;
                float *cp = j->c + r * d->ldc + col;
                float v = d->alpha * acc[r][c];
                if (d->beta != 0.0f) v += d->beta * *cp;
                *cp = tsr_epilogue_apply_ref(&d->epilogue, v, g->bias_along_m ? r : col, j->batch_index, r, col);
            }
    }
}

static void team_barrier(int nth) {
    if (nth > 1) {
#pragma omp barrier
    }
}

/* One matrix, by a team of nth threads (tid in it), with shared buffers
 * ap (MC x KC) and bp (KC x NC), both packed. */
static void gemm_one(const job *j, float *ap, float *bp, int tid, int nth) {
    const tsr_gemm_desc *d = &j->g->d;
    const int64_t M = d->m, N = d->n, K = d->k;
    if (K == 0) {
        scale_only(j, tid, nth);
        return;
    }
    if (!j->pack_b && (d->trans_b || M <= STREAM_ROWS)) { /* contiguous column ranges per thread */
        int64_t lo = N * tid / nth / VL * VL, hi = tid == nth - 1 ? N : N * (tid + 1) / nth / VL * VL;
        if (d->trans_b) dot_columns(j, lo, hi);
        else stream_rows(j, lo, hi);
        return;
    }
    for (int64_t jc = 0; jc < N; jc += j->nc) {
        int64_t ncur = N - jc < j->nc ? N - jc : j->nc, npanels = (ncur + NR - 1) / NR;
        for (int64_t pc = 0; pc < K; pc += j->kc) {
            int64_t kcur = K - pc < j->kc ? K - pc : j->kc;
            bool first = pc == 0, last = pc + kcur == K;
            /* B panels: all of them packed, or only the ragged last one */
            for (int64_t jr = tid; jr < npanels; jr += nth) {
                int64_t nr = ncur - jr * NR < NR ? ncur - jr * NR : NR;
                if (j->pack_b || nr < NR) pack_b(j, pc, kcur, jc + jr * NR, nr, bp + jr * NR * kcur);
            }
            team_barrier(nth);
            for (int64_t ic = 0; ic < M; ic += j->mc) {
                int64_t mcur = M - ic < j->mc ? M - ic : j->mc, mpanels = (mcur + MR - 1) / MR;
                for (int64_t ir = tid; ir < mpanels; ir += nth) {
                    int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    pack_a(j, ic + ir * MR, mr, pc, kcur, ap + ir * MR * kcur);
                }
                team_barrier(nth);
                /* tiles split across the team, column panels outermost */
                for (int64_t t = tid; t < npanels * mpanels; t += nth) {
                    int64_t jr = t / mpanels, ir = t % mpanels;
                    int64_t nr = ncur - jr * NR < NR ? ncur - jr * NR : NR;
                    int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    vf acc[MR][NV];
                    if (j->pack_b || nr < NR)
                        micro_kernel(kcur, ap + ir * MR * kcur, bp + jr * NR * kcur, NR, acc);
                    else
                        micro_kernel(kcur, ap + ir * MR * kcur, (const float *)j->b + pc * d->ldb + jc + jr * NR,
                                     d->ldb, acc);
                    store_tile(j, acc, ic + ir * MR, mr, jc + jr * NR, nr, first, last);
                }
                team_barrier(nth);
            }
        }
    }
}

/* The job for batch matrix bt. */
static job job_for(const job *base, int64_t bt) {
    const tsr_gemm_problem *g = base->g;
    const tsr_gemm_desc *d = &g->d;
    job j = *base;
    j.a = (const char *)g->a + (size_t)(bt * d->stride_a) * tsr_dtype_size(d->a_dtype);
    j.b = (const char *)g->b + (size_t)(bt * d->stride_b) * tsr_dtype_size(d->b_dtype);
    j.c = (float *)g->c + bt * d->stride_c;
    j.batch_index = bt;
    return j;
}

static tsr_status blis_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    job base = {.g = g, .mc = s->v[KNOB_MC], .kc = s->v[KNOB_KC], .nc = s->v[KNOB_NC],
                .pack_b = s->v[KNOB_PACK_B] != 0};
    if (!base.pack_b && !can_skip_pack_b(d)) base.pack_b = true;
    const int64_t kc = d->k < base.kc ? (d->k > 0 ? d->k : 1) : base.kc;
    const int64_t nc = ((d->n < base.nc ? d->n : base.nc) + NR - 1) / NR * NR;
    const int64_t mc = ((d->m < base.mc ? d->m : base.mc) + MR - 1) / MR * MR;
    const size_t abuf = (size_t)(mc * kc), bbuf = (size_t)(nc * kc);
    const bool per_matrix = s->v[KNOB_BATCH_PAR] && d->batch > 1;
    const int nt = tsr_threads_for(ctx, 2.0 * (double)d->m * (double)d->n * (double)d->k * (double)d->batch, 2e6);
    const int nbuf = per_matrix ? nt : 1;
    float *buf = aligned_alloc(64, ((abuf + bbuf) * sizeof(float) * (size_t)nbuf + 63) / 64 * 64);
    if (!buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "gemm.%s: no memory for packing buffers", GEMM_ARCH);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        if (per_matrix) { /* each thread owns whole matrices */
            float *ap = buf + (size_t)tid * (abuf + bbuf), *bp = ap + abuf;
#pragma omp for schedule(dynamic, 1)
            for (int64_t bt = 0; bt < d->batch; bt++) {
                job j = job_for(&base, bt);
                gemm_one(&j, ap, bp, 0, 1);
            }
        } else {
            for (int64_t bt = 0; bt < d->batch; bt++) {
                job j = job_for(&base, bt);
                gemm_one(&j, buf, buf + abuf, tid, nth);
            }
        }
    }
    free(buf);
    return TSR_OK;
}

const tsr_kernel GEMM_SYMBOL = {
    .name = "gemm." GEMM_ARCH ".f32",
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = GEMM_ARCH,
    .supports = blis_supports,
    .num_knobs = (int)(sizeof gemm_knobs / sizeof gemm_knobs[0]),
    .knobs = gemm_knobs,
    .default_schedule = blis_default,
    .schedule_valid = blis_valid,
    .run = blis_run,
};
