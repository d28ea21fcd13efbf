/* OpenCL GEMM host side: the tiled, direct (skinny) and generic kernels of
 * opencl.cl, their schedule spaces and heuristics. The schedule becomes the
 * program's -D defines; built programs are cached in memory and on disk
 * (arch/opencl). */
#include <stdio.h>
#include <string.h>

#include "../../arch/opencl/runtime.h"

static bool on_opencl(const tsr_context *ctx, const char *name, char *why, size_t why_len) {
    if (ctx->backend == TSR_BACKEND_OPENCL) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s runs on opencl", name);
    return false;
}

static bool float_inputs(const tsr_gemm_desc *d) {
    return d->a_dtype == TSR_F32 || d->a_dtype == TSR_F16 || d->a_dtype == TSR_BF16;
}

/* The arguments every GEMM kernel takes (GEMM_ARGS in opencl.cl). */
typedef struct gemm_args {
    cl_long M, N, K, lda, sa, ldb, sb, ldc, sc;
    cl_mem A, B, C;
    cl_int c_t, bias_m;
    cl_float alpha, beta;
    tsr_ocl_epi epi;
    tsr_ocl_arg list[16 + TSR_OCL_EPI_ARGS];
} gemm_args;

static int gemm_args_fill(gemm_args *a, const tsr_gemm_problem *g) {
    const tsr_gemm_desc *d = &g->d;
    a->M = d->m, a->N = d->n, a->K = d->k;
    a->lda = d->lda, a->sa = d->stride_a, a->ldb = d->ldb, a->sb = d->stride_b, a->ldc = d->ldc, a->sc = d->stride_c;
    a->A = tsr_ocl_mem(g->a), a->B = tsr_ocl_mem(g->b), a->C = tsr_ocl_mem(g->c);
    a->c_t = (cl_int)d->c_dtype, a->bias_m = g->bias_along_m, a->alpha = d->alpha, a->beta = d->beta;
    tsr_ocl_arg *l = a->list;
    int n = 0;
    l[n++] = TSR_CL_ARG(a->M), l[n++] = TSR_CL_ARG(a->N), l[n++] = TSR_CL_ARG(a->K);
    l[n++] = TSR_CL_ARG(a->A), l[n++] = TSR_CL_ARG(a->lda), l[n++] = TSR_CL_ARG(a->sa);
    l[n++] = TSR_CL_ARG(a->B), l[n++] = TSR_CL_ARG(a->ldb), l[n++] = TSR_CL_ARG(a->sb);
    l[n++] = TSR_CL_ARG(a->C), l[n++] = TSR_CL_ARG(a->ldc), l[n++] = TSR_CL_ARG(a->sc);
    l[n++] = TSR_CL_ARG(a->c_t), l[n++] = TSR_CL_ARG(a->bias_m);
    l[n++] = TSR_CL_ARG(a->alpha), l[n++] = TSR_CL_ARG(a->beta);
    tsr_ocl_epilogue(&d->epilogue, &a->epi, l + n);
    return n + TSR_OCL_EPI_ARGS;
}

/* A tunable kernel's descriptor from its <pre>_supports/_knobs/_default/
 * _valid/_run functions. */
#define OCL_GEMM_KERNEL(sym, kname, pre)                                                                  \
    const tsr_kernel sym = {.name = kname, .op = TSR_OP_GEMM, .backend = TSR_BACKEND_OPENCL, .arch = "opencl", \
                            .supports = pre##_supports, .num_knobs = (int)(sizeof pre##_knobs / sizeof(tsr_knob)), \
                            .knobs = pre##_knobs, .default_schedule = pre##_default,                       \
                            .schedule_valid = pre##_valid, .run = pre##_run}

/* m rounded up to a power of two: the direct kernel's MR (few programs) */
static int rows_rounded(int64_t m) {
    int mr = 1;
    while (mr < m) mr *= 2;
    return mr;
}

static void base_options(char *o, size_t n, const tsr_gemm_desc *d, const char *kind) {
    snprintf(o, n, "-D%s", kind);
    tsr_ocl_define(o, n, "A_T", d->a_dtype);
    tsr_ocl_define(o, n, "TRANS_A", d->trans_a);
    tsr_ocl_define(o, n, "TRANS_B", d->trans_b);
}

static tsr_status run_kernel(tsr_context *ctx, const tsr_gemm_problem *g, const char *opts, const char *name,
                             int nsrc, const size_t *global, const size_t *local, const char *who) {
    const char *srcs[] = {tsr_cl_common, tsr_cl_gemm, tsr_cl_gemm_tiled};
    gemm_args a;
    int na = gemm_args_fill(&a, g);
    return tsr_ocl_run(ctx, srcs, nsrc, opts, name, 3, global, local, na, a.list, who);
}

enum { DIRECT_MAX_M = 16 }; /* the direct kernel's rows */

/* ------------------------------------------------------------------ tiled */

static const int mwg_values[] = {16, 32, 64, 128};
static const int nwg_values[] = {16, 32, 64, 128};
static const int kwg_values[] = {8, 16, 32};
static const int dimc_values[] = {4, 8, 16};
static const int vw_values[] = {1, 2, 4, 8};
static const tsr_knob tiled_knobs[] = {
    {"mwg", 4, mwg_values}, {"nwg", 4, nwg_values}, {"kwg", 3, kwg_values},
    {"mdimc", 3, dimc_values}, {"ndimc", 3, dimc_values}, {"vw", 4, vw_values},
};
enum { K_MWG, K_NWG, K_KWG, K_MDIMC, K_NDIMC, K_VW };

static bool tiled_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (!on_opencl(ctx, "gemm.opencl.tiled", why, why_len)) return false;
    if (!float_inputs(&p->u.gemm.d))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.opencl.tiled takes f32/f16/bf16 inputs"), false;
    return true;
}

static bool tiled_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p;
    const int mwg = s->v[K_MWG], nwg = s->v[K_NWG], kwg = s->v[K_KWG], md = s->v[K_MDIMC], nd = s->v[K_NDIMC],
              vw = s->v[K_VW];
    if (mwg <= 0 || nwg <= 0 || kwg <= 0 || md <= 0 || nd <= 0 || vw <= 0) return false;
    if (mwg % md || nwg % (nd * vw)) return false;
    const tsr_ocl_state *o = tsr_ocl(ctx);
    if ((size_t)(md * nd) > o->max_wg) return false;
    if ((cl_ulong)kwg * (cl_ulong)(mwg + nwg) * 4 > o->local_mem) return false;
    return (mwg / md) * (nwg / nd) <= 64; /* registers per work-item */
}

static void tiled_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    /* Measured on PoCL (CPU): 64x64 tiles, 8x8 work-items, 4x8 blocks;
     * smaller tiles when the problem is small in m or n. */
    s->v[K_MWG] = d->m <= 16 ? 16 : d->m <= 32 ? 32 : 64;
    s->v[K_NWG] = d->n <= 16 ? 16 : d->n <= 32 ? 32 : 64;
    s->v[K_KWG] = 16;
    s->v[K_MDIMC] = s->v[K_MWG] >= 32 ? 8 : 4;
    s->v[K_NDIMC] = s->v[K_NWG] >= 32 ? 8 : 4;
    s->v[K_VW] = 1;
    if (!tiled_valid(p, ctx, s)) s->v[K_MWG] = s->v[K_NWG] = 16, s->v[K_MDIMC] = s->v[K_NDIMC] = 4, s->v[K_KWG] = 8;
}

static tsr_status tiled_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_schedule t = *s;
    if (!tiled_valid(p, ctx, &t)) tiled_default(p, ctx, &t);
    char o[512];
    base_options(o, sizeof o, &g->d, "TILED");
    for (int i = 0; i < 6; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "%s", (const char *[]){"MWG", "NWG", "KWG", "MDIMC", "NDIMC", "VW"}[i]);
        tsr_ocl_define(o, sizeof o, nm, t.v[i]);
    }
    const size_t local[3] = {(size_t)t.v[K_NDIMC], (size_t)t.v[K_MDIMC], 1};
    const size_t global[3] = {(size_t)((g->d.n + t.v[K_NWG] - 1) / t.v[K_NWG]) * local[0],
                              (size_t)((g->d.m + t.v[K_MWG] - 1) / t.v[K_MWG]) * local[1], (size_t)g->d.batch};
    return run_kernel(ctx, g, o, "tiled", 3, global, local, "gemm.opencl.tiled");
}

OCL_GEMM_KERNEL(tsr_gemm_opencl_tiled, "gemm.opencl.tiled", tiled);

/* ---------------------------------------------------------------- blocked */

static const int rm_values[] = {1, 2, 4, 6, 8, 12};
static const int bvw_values[] = {4, 8, 16};
static const int bwg_values[] = {0, 2, 4, 16, 64};
static const int order_values[] = {0, 1};
static const int wg2_values[] = {1, 2, 4, 8};
static const int kc_values[] = {0, 64, 128, 256, 512};
static const int nv_values[] = {1, 2, 3, 4};
static const tsr_knob blocked_knobs[] = {{"rm", 6, rm_values},     {"vw", 3, bvw_values},
                                         {"wg", 5, bwg_values},    {"mfast", 2, order_values},
                                         {"packb", 2, order_values}, {"wg2", 4, wg2_values},
                                         {"kc", 5, kc_values},     {"nv", 4, nv_values}};
enum { K_RM, K_BVW, K_BWG, K_MFAST, K_PACKB, K_WG2, K_KC, K_NV };

static bool blocked_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (!on_opencl(ctx, "gemm.opencl.blocked", why, why_len)) return false;
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (d->a_dtype != TSR_F32)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.opencl.blocked takes f32"), false;
    if (d->trans_b && d->m <= DIRECT_MAX_M) /* x W^T decode: the direct kernel reads W once */
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.opencl.blocked: B transposed and m <= %d",
                       DIRECT_MAX_M), false;
    return true;
}

static bool blocked_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    return s->v[K_RM] >= 1 && s->v[K_RM] <= 12 && s->v[K_NV] >= 1 && s->v[K_NV] <= 4 &&
           (s->v[K_BVW] == 4 || s->v[K_BVW] == 8 || s->v[K_BVW] == 16) &&
           s->v[K_BWG] >= 0 && (size_t)s->v[K_BWG] <= tsr_ocl(ctx)->max_wg && (unsigned)s->v[K_MFAST] <= 1 &&
           (unsigned)s->v[K_PACKB] <= 1 && (s->v[K_PACKB] || !p->u.gemm.d.trans_b) && s->v[K_WG2] >= 1 &&
           s->v[K_KC] >= 0 && (s->v[K_KC] == 0 || s->v[K_BWG] > 0) &&
           (size_t)(s->v[K_BWG] ? s->v[K_BWG] : 1) * (size_t)s->v[K_WG2] <= tsr_ocl(ctx)->max_wg;
}

static void blocked_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    const int64_t m = d->m;
    /* Measured on PoCL (AVX-512, one core). Blocks of RM rows x NV 16-wide
     * vectors, at most 16 zmm accumulators (more spilled or lost). */
    s->v[K_BVW] = 16, s->v[K_NV] = 2, s->v[K_RM] = 8;
    if (m <= 8 && !d->trans_b) {
        /* decode, GEMV (B streamed once from memory, the bandwidth is the
         * limit): work-items of every row and 64 columns side by side along
         * n, B read in place in short k chunks, so a chunk's rows are read in
         * runs of wg * 256 bytes, not one 256-byte run per row and page
         * (1 and 4 x 4096 x 4096: 2-3x one 256-column run a work-item). One
         * row: 64 work-items (16 KB runs), 8 rows deep; more rows: 8
         * work-items, 64 deep. Work-groups stay at least one per compute unit. */
        s->v[K_RM] = (int)rows_rounded(m), s->v[K_NV] = m <= 4 ? 4 : 2;
        s->v[K_MFAST] = 0, s->v[K_PACKB] = 0, s->v[K_WG2] = 1;
        s->v[K_BWG] = m <= 1 ? 64 : 8, s->v[K_KC] = m <= 1 ? 8 : 64;
        const int64_t blocks = (d->n + 16 * s->v[K_NV] - 1) / (16 * s->v[K_NV]);
        while (s->v[K_BWG] > 4 && blocks / s->v[K_BWG] < ctx->compute_units) s->v[K_BWG] /= 2;
    } else if (m <= 16 && !d->trans_b) {
        /* decode with up to 16 rows (16x4096x4096: 1.5x 4 x 16 blocks): 4
         * work-items of 4 rows cover every row and share 256-deep chunks of
         * 8 x 48 columns of B, so B streams once */
        s->v[K_RM] = 4, s->v[K_NV] = 3, s->v[K_BWG] = 4, s->v[K_WG2] = 8, s->v[K_MFAST] = 1;
        s->v[K_PACKB] = 0, s->v[K_KC] = 256;
    } else if (d->k > 1024 || d->trans_b) {
        /* deep k, or B k-contiguous: B packed into 32-column panels (a pass
         * over B, no strided walk down its columns: rows 8 KB apart alias
         * in L1), 2 x 8 work-items of 8 x 32 blocks sharing 64 rows of A
         * and 64 columns of B in 256-deep chunks (~128 KB, L2 resident):
         * 2048^3 3.4x the unpacked unchunked schedule; 6 x 16 blocks and
         * 128-deep chunks 5-15% slower, A packed too slower still */
        s->v[K_BWG] = 2, s->v[K_WG2] = 8, s->v[K_MFAST] = 0, s->v[K_PACKB] = 1;
        s->v[K_KC] = d->k >= 256 ? 256 : 0;
    } else {
        /* k <= 1024, B n-contiguous: B read in place (no packing pass),
         * work-groups of 2 x 8 blocks of 8 x 32 (16 rows, 256 columns),
         * consecutive ones down m, so those columns of B stay in cache while
         * A streams: 256^3 and 512^3 1.3x the packed schedule, 32x1024x1024
         * 2.8x and 200x300x400 1.5x the 6 x 8 blocks it replaced */
        s->v[K_NV] = d->n >= 32 ? 2 : 1;
        s->v[K_BWG] = 2, s->v[K_WG2] = 8, s->v[K_MFAST] = 1, s->v[K_PACKB] = 0, s->v[K_KC] = 0;
    }
}

static tsr_status blocked_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_schedule t = *s;
    if (!blocked_valid(p, ctx, &t)) blocked_default(p, ctx, &t);
    char o[512];
    base_options(o, sizeof o, &g->d, "BLOCKED");
    tsr_ocl_define(o, sizeof o, "RM", t.v[K_RM]);
    tsr_ocl_define(o, sizeof o, "VW", t.v[K_BVW]);
    tsr_ocl_define(o, sizeof o, "MFAST", t.v[K_MFAST]);
    tsr_ocl_define(o, sizeof o, "PACKB", t.v[K_PACKB]);
    tsr_ocl_define(o, sizeof o, "KC", t.v[K_KC]);
    tsr_ocl_define(o, sizeof o, "NV", t.v[K_NV]);
    const int64_t pw = (int64_t)t.v[K_BVW] * t.v[K_NV]; /* a work-item's columns */
    tsr_gemm_problem packed = *g;
    if (t.v[K_PACKB]) {
        const int64_t np = (g->d.n + pw - 1) / pw * pw;
        cl_mem bp;
        tsr_status st = tsr_ocl_workspace(ctx, (size_t)(np * g->d.k * g->d.batch) * sizeof(float), &bp);
        if (st) return st;
        cl_long N = g->d.n, K = g->d.k, ldb = g->d.ldb, sb = g->d.stride_b;
        cl_mem B = tsr_ocl_mem(g->b);
        const tsr_ocl_arg args[] = {TSR_CL_ARG(N), TSR_CL_ARG(K), TSR_CL_ARG(B), TSR_CL_ARG(ldb), TSR_CL_ARG(sb),
                                    TSR_CL_ARG(bp)};
        const char *srcs[] = {tsr_cl_common, tsr_cl_gemm};
        const size_t pg[3] = {(size_t)np, (size_t)g->d.k, (size_t)g->d.batch};
        st = tsr_ocl_run(ctx, srcs, 2, o, "pack_b", 3, pg, NULL, 6, args, "gemm.opencl.blocked");
        if (st) return st;
        packed.b = bp;
    }
    const size_t local[3] = {(size_t)t.v[K_BWG], (size_t)t.v[K_WG2], 1};
    const size_t cols = (size_t)((g->d.n + pw - 1) / pw),
                 rows = (size_t)((g->d.m + t.v[K_RM] - 1) / t.v[K_RM]);
    const size_t global[3] = {t.v[K_MFAST] ? rows : cols, t.v[K_MFAST] ? cols : rows, (size_t)g->d.batch};
    return run_kernel(ctx, &packed, o, "blocked", 2, global, t.v[K_BWG] ? local : NULL, "gemm.opencl.blocked");
}

OCL_GEMM_KERNEL(tsr_gemm_opencl_blocked, "gemm.opencl.blocked", blocked);

/* ----------------------------------------------------------------- direct */

static const int wgs_values[] = {16, 32, 64, 128, 256};
static const int kv_values[] = {1, 4, 8, 16};
static const int nb_values[] = {1, 2, 4, 8};
static const int mb_values[] = {1, 2, 4, 8};
static const tsr_knob direct_knobs[] = {
    {"wgs", 5, wgs_values}, {"kv", 4, kv_values}, {"nb", 4, nb_values}, {"mb", 4, mb_values}};
enum { K_WGS, K_KV, K_NB, K_MB };

static bool direct_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (!on_opencl(ctx, "gemm.opencl.direct", why, why_len)) return false;
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (!float_inputs(d))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.opencl.direct takes f32/f16/bf16 inputs"), false;
    if (d->m > DIRECT_MAX_M)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.opencl.direct: m (%lld) > %d", (long long)d->m,
                       DIRECT_MAX_M), false;
    return true;
}

static bool direct_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p;
    return s->v[K_WGS] > 0 && (size_t)s->v[K_WGS] <= tsr_ocl(ctx)->max_wg && s->v[K_KV] >= 1 && s->v[K_KV] <= 16 &&
           s->v[K_NB] >= 1 && s->v[K_NB] <= 8 && s->v[K_MB] >= 1 && s->v[K_MB] <= 8;
}

static void direct_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[K_WGS] = 64;
    /* k-contiguous A and B (x W^T): 16-wide vectors along k, 4 x 4 dot
     * products a work-item (16 zmm accumulators, 8 loads per 16 FMAs);
     * measured on PoCL (AVX-512, one core), 16x4096x4096: 3x the kernel
     * with one column a work-item and 8-wide vectors; fewer rows: 8
     * columns a work-item (1x4096x4096: 2.5x) */
    const bool dot = !d->trans_a && d->trans_b && d->a_dtype == TSR_F32 && d->k >= 64;
    s->v[K_KV] = dot ? 16 : 1;
    s->v[K_MB] = dot ? (d->m >= 4 ? 4 : (int)rows_rounded(d->m)) : 1;
    s->v[K_NB] = dot ? (s->v[K_MB] >= 4 ? 4 : 8) : 1;
    if (!direct_valid(p, ctx, s)) s->v[K_WGS] = 16;
}

static tsr_status direct_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_schedule t = *s;
    if (!direct_valid(p, ctx, &t)) direct_default(p, ctx, &t);
    char o[512];
    base_options(o, sizeof o, &g->d, "DIRECT");
    tsr_ocl_define(o, sizeof o, "MR", rows_rounded(g->d.m));
    tsr_ocl_define(o, sizeof o, "KV", t.v[K_KV]);
    tsr_ocl_define(o, sizeof o, "NB", t.v[K_NB]);
    tsr_ocl_define(o, sizeof o, "MB", t.v[K_MB]);
    const size_t local[3] = {(size_t)t.v[K_WGS], 1, 1};
    const size_t global[3] = {(size_t)((g->d.n + t.v[K_NB] - 1) / t.v[K_NB]), (size_t)g->d.batch, 1};
    return run_kernel(ctx, g, o, "direct", 2, global, local, "gemm.opencl.direct");
}

OCL_GEMM_KERNEL(tsr_gemm_opencl_direct, "gemm.opencl.direct", direct);

/* ---------------------------------------------------------------- generic */

static bool generic_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    return on_opencl(ctx, "gemm.opencl.generic", why, why_len);
}

static tsr_status generic_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_gemm_problem *g = &p->u.gemm;
    char o[256];
    base_options(o, sizeof o, &g->d, "GENERIC");
    const size_t global[3] = {(size_t)g->d.n, (size_t)g->d.m, (size_t)g->d.batch};
    return run_kernel(ctx, g, o, "gemm_any", 2, global, NULL, "gemm.opencl.generic");
}

const tsr_kernel tsr_gemm_opencl_generic = {
    .name = "gemm.opencl.generic", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_OPENCL, .arch = "opencl",
    .supports = generic_supports, .run = generic_run,
};
