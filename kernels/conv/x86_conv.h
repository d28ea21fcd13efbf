/* conv2d forward on x86, written once over the simd.h vector names and
 * instantiated per ISA by kernels/conv/x86_avx2.c and x86_avx512.c (which
 * define MR, NV, CONV_ARCH, CONV_FEATURES and CONV_SYMBOL first).
 *
 * NHWC is the working layout. Three algorithms, a schedule knob picks one:
 *  - direct (brgemm-style): the filter is packed per call into
 *    [group][K/NR panel][R][S][C/groups][NR] f32 panels (f16/bf16 converted
 *    while packing); a tile of MR output pixels (consecutive in the
 *    flattened n*p*q order, so 7x7 outputs waste little) by NR output
 *    channels stays in registers while the GEMM micro-kernel (x86_ukernel.h)
 *    runs over the taps and channels. Each pixel's A row points into x
 *    itself: no im2col, no padded copy. A tap that falls into the padding
 *    points at a row of zeros; where every pixel of the tile sees a whole
 *    filter row and groups == 1 with dilation_w 1, the S taps of that row are
 *    one contiguous run of S*C values and one micro-kernel call. A 1x1,
 *    stride 1, unpadded, one-group convolution takes pointwise tiles: the
 *    rows of MR consecutive pixels, nothing to place or clip. A one-group
 *    f32 tile (on AVX-512 only under 16 channels: the stem) runs all its
 *    filter rows in one loop (row_tile_panels; in assembly on AVX2), the
 *    rows at the image's edges copied with their zeros.
 *  - 1x1-GEMM (a tuner's choice): the same 1x1 as the GEMM
 *    [n*h*w, c] x [c, k], handed to tsr_gemm with the epilogue.
 *  - depthwise (groups == c == k): vectorised over channels (contiguous in
 *    NHWC), up to 16 output pixels along the width by one channel vector in
 *    registers, channels in L1-sized chunks (x86_depthwise.h).
 * Grouped convolutions run the direct kernel per group. NCHW inputs are
 * reordered into NHWC scratch (and the output back), f16/bf16 activations
 * converted into f32 scratch, all inside the call and so inside its time.
 * The epilogue (bias, activation, residual) runs on the accumulators before
 * the only store of y (ukr_epilogue, shared with the GEMM); a residual that
 * is y itself is read just before the same thread overwrites it. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx2/transpose.h"
#include "../../arch/x86_avx2/prefetch.h"
#if VL == 8 && MR == 6 && NV == 2
#include "../../arch/x86_avx2/fma_6x16.h"
#define CONV_FMA_6X16 1 /* pointwise_fast_tile's and row_tile_panels' loops in assembly */
#endif
#include "../../arch/x86_avx512/vdtype.h"
#include "layout.h"

#define NR (NV * VL)
#define CONV_NAME "conv2d." CONV_ARCH ".f32"
#include "../gemm/x86_ukernel.h"

enum { KNOB_ALGO, KNOB_OCB, KNOB_PXB, KNOB_ORDER };
enum { ALGO_DIRECT = 0, ALGO_GEMM = 1, ALGO_DEPTHWISE = 2 };

static const int algo_values[] = {ALGO_DIRECT, ALGO_GEMM, ALGO_DEPTHWISE};
static const int ocb_values[] = {1, 2, 4, 8, 16};
static const int pxb_values[] = {1, 2, 4, 8, 16, 32};
static const int order_values[] = {0, 1};

/* algo: the algorithm; ocb: NR-wide output-channel panels per work item;
 * pxb: MR-pixel tiles per work item; order: 0 = tiles outer (a tile's input
 * rows stay in L1 across the panels), 1 = panels outer (a panel's weights
 * stay in L1/L2 across the tiles). */
static const tsr_knob conv_knobs[] = {
    {"algo", 3, algo_values}, {"ocb", 5, ocb_values}, {"pxb", 6, pxb_values}, {"order", 2, order_values},
};

static bool is_depthwise(const tsr_conv2d_desc *d) { return d->groups == d->c && d->k == d->c && d->c > 1; }

static bool is_1x1_gemm(const tsr_conv2d_problem *cp) {
    const tsr_conv2d_desc *d = &cp->d;
    if (d->r != 1 || d->s != 1 || d->stride_h != 1 || d->stride_w != 1 || d->groups != 1 || d->pad_top ||
        d->pad_bottom || d->pad_left || d->pad_right || d->y_dtype != TSR_F32)
        return false;
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *e = &d->epilogue.steps[i];
        if (e->data && e->dtype != TSR_F32) return false;
        /* the GEMM stores partial sums between K blocks: no in-place residual */
        if (e->op == TSR_EPI_RESIDUAL && cp->y &&
            tsr_ranges_overlap(cp->y, d->n * d->h * d->w * d->k * 4, e->data, d->n * d->h * d->w * d->k * 4))
            return false;
    }
    return true;
}

static bool conv_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    const tsr_conv2d_desc *d = &p->u.conv.d;
    const tsr_packed_filter *h = p->u.conv.packed;
    if (h && (strcmp(h->producer, CONV_NAME) || h->nr != NR)) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: the filter was packed for %s", CONV_NAME, h->producer);
        return false;
    }
    int residuals = 0;
    for (int i = 0; i < d->epilogue.num_steps; i++) residuals += d->epilogue.steps[i].op == TSR_EPI_RESIDUAL;
    if (d->format == TSR_NCHW && residuals > 1) { /* one NHWC scratch copy per call */
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.%s: NCHW with more than one residual step is left to the "
                "reference", CONV_ARCH);
        return false;
    }
    return true;
}

static int64_t panels_of(const tsr_conv2d_desc *d) { return (d->k / d->groups + NR - 1) / NR; }

static void conv_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t Cg = d->c / d->groups, panels = panels_of(d);
    const int64_t pixels = d->n * cp->p * cp->q, tiles = (pixels + MR - 1) / MR;
    /* 1x1, stride 1 stays on the direct kernel's pointwise tiles: on Zen 4
     * (2 threads, f32, best of many) they beat handing it to the GEMM on
     * all nine of ResNet-50's, by 2-20%; the GEMM stays a tuner choice */
    const bool packed = d->filter_format == TSR_FILTER_PACKED; /* in direct panels */
    s->v[KNOB_ALGO] = !packed && is_depthwise(d) ? ALGO_DEPTHWISE : ALGO_DIRECT;
    /* Enough panels per item that a tile's input rows are reused, few
     * enough that their weights stay in L2 (~256 KiB of f32 panels). */
    const int64_t panel_bytes = d->r * d->s * Cg * NR * 4;
    int ocb = 1;
    while (ocb < 16 && ocb * 2 <= panels && (ocb * 2) * panel_bytes <= (256 << 10)) ocb *= 2;
    if (s->v[KNOB_ALGO] == ALGO_DEPTHWISE) ocb = 1;
    s->v[KNOB_OCB] = ocb;
    /* enough items for every thread several times over */
    const int64_t pblocks = (d->groups * panels + ocb - 1) / ocb, want = 8 * (int64_t)ctx->num_threads;
    int pxb = 32;
    while (pxb > 1 && ((tiles + pxb - 1) / pxb) * pblocks < want) pxb /= 2;
    s->v[KNOB_PXB] = pxb;
    s->v[KNOB_ORDER] = 0;
}

static bool conv_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    if (p->u.conv.d.filter_format == TSR_FILTER_PACKED && s->v[KNOB_ALGO] != ALGO_DIRECT) return false;
    if (s->v[KNOB_ALGO] == ALGO_GEMM) return is_1x1_gemm(&p->u.conv);
    if (s->v[KNOB_ALGO] == ALGO_DEPTHWISE) return is_depthwise(&p->u.conv.d);
    return s->v[KNOB_ALGO] == ALGO_DIRECT && s->v[KNOB_OCB] >= 1 && s->v[KNOB_PXB] >= 1;
}

#ifdef CONV_BF16
/* One pair of k from p (one value when single, the other half zero). */
static inline __attribute__((always_inline)) void ukr_dot_bf16_step(const int mr, const uint16_t *const r[MR],
                                                                    int64_t p, const uint16_t *restrict bp,
                                                                    const bool single, vf (*acc)[NV]) {
    __m512bh b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_loadu_si512((const void *)(bp + p * NR + v * VL * 2));
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++) {
        uint32_t pair = r[i][p];
        if (!single) memcpy(&pair, r[i] + p, sizeof pair);
        const __m512bh a = (__m512bh)_mm512_set1_epi32((int)pair);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
    }
}

/* acc += A(mr x kc) * B(kc x NR) in bf16 pairs (vdpbf16ps, f32 sums): A rows
 * are bf16, B is packed [(kc + 1) / 2][NR][2]; mr <= MR, a constant. An odd
 * kc's last value is taken alone, its pair's other half zero in A (as it is
 * in B): the value past the row, maybe inf or NaN, never meets a zero. */
static inline __attribute__((always_inline)) void ukr_dot_bf16(const int mr, int64_t kc, const float *const rows[MR],
                                                               const uint16_t *restrict bp, vf (*acc)[NV]) {
    const uint16_t *r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) r[i] = (const uint16_t *)(const void *)rows[i];
    for (int64_t p = 0; p + 1 < kc; p += 2) ukr_dot_bf16_step(mr, r, p, bp, false, acc);
    if (kc & 1) ukr_dot_bf16_step(mr, r, kc - 1, bp, true, acc);
}

/* The bf16 filter as bf16 panels [g][panel][(r, s, c) / 2][NR][2], zero past k/groups. */
static void pack_filter_bf16(const tsr_conv2d_desc *d, const void *w, uint16_t *dst) {
    const int64_t G = d->groups, K = d->k, Kg = K / G, Cg = d->c / G, R = d->r, S = d->s;
    const int64_t Kp = (Kg + NR - 1) / NR, rsc = R * S * Cg;
    const uint16_t *src = w;
#pragma omp for schedule(static)
    for (int64_t gp = 0; gp < G * Kp; gp++) {
        const int64_t g = gp / Kp, k0 = g * Kg + gp % Kp * NR;
        const int64_t nk = Kg - gp % Kp * NR < NR ? Kg - gp % Kp * NR : NR;
        uint16_t *panel = dst + gp * rsc * NR;
        if (d->filter_format == TSR_FILTER_OHWI) { /* row k is [r][s][c]: channel pairs are 32-bit words, transposed 8x8 */
            const int64_t pairs = rsc / 2, p8 = pairs / 8 * 8;
            const uint16_t *rows0 = src + k0 * rsc;
            for (int64_t kk = 0; kk < NR; kk += 8) {
                const int rows = (int)(nk - kk < 0 ? 0 : nk - kk < 8 ? nk - kk : 8);
                for (int64_t p = 0; p < p8; p += 8)
                    tsr_transpose8x8(rows0 + kk * rsc + 2 * p, pairs, rows, panel + (p * NR + kk) * 2, NR, 8);
                for (int64_t p = p8; p < pairs; p++)
                    for (int64_t q = kk; q < kk + 8; q++)
                        for (int e = 0; e < 2; e++) panel[(p * NR + q) * 2 + e] = q < nk ? rows0[q * rsc + 2 * p + e] : 0;
            }
            continue;
        }
        if (d->filter_format == TSR_FILTER_HWIO) { /* row (r, s, c) holds k contiguously */
            for (int64_t jj = 0; jj < rsc; jj++) {
                const uint16_t *row = src + jj * K + k0;
                uint16_t *out = panel + (jj / 2) * NR * 2 + (jj & 1);
                for (int64_t kk = 0; kk < NR; kk++) out[kk * 2] = kk < nk ? row[kk] : 0;
            }
            continue;
        }
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t c = 0; c < Cg; c++) {
                    const int64_t jj = (r * S + s) * Cg + c;
                    uint16_t *row = panel + (jj / 2) * NR * 2 + (jj & 1);
                    for (int64_t kk = 0; kk < NR; kk++)
                        row[kk * 2] = kk < nk ? src[tsr_filter_offset(d->filter_format, k0 + kk, c, r, s, K, Cg, R, S)] : 0;
                }
    }
}
#endif

/* The vdpbf16ps path: bf16 x and filter, channel pairs that never straddle
 * a group or a pixel. */
static bool use_bf16(const tsr_context *ctx, const tsr_conv2d_desc *d) {
#ifdef CONV_BF16
    return (ctx->cpu_features & TSR_CPU_AVX512BF16) && d->x_dtype == TSR_BF16 && d->w_dtype == TSR_BF16 &&
           (d->c / d->groups) % 2 == 0;
#else
    (void)ctx, (void)d;
    return false;
#endif
}

/* Pairs per filter row of the stem tiles (x86_stem_bf16.h): S x C values and, odd, one zero. */
static int64_t stem_pairs(const tsr_conv2d_desc *d) { return (d->s * d->c + 1) / 2; }

/* bf16 with an odd channel count in one group: one zero channel, added to
 * copies of x and the filter, makes the pairs that vdpbf16ps takes (f32
 * scratch would run at half its rate). Where each filter row's run of S x C
 * values fits the stem tiles (stem_of, x86_stem_bf16.h: the 3-channel
 * stem) they take it instead, with no copy. */
static bool pads_channel(const tsr_context *ctx, const tsr_conv2d_desc *d) {
    tsr_conv2d_desc even = *d;
    even.c = d->c + 1;
    return d->groups == 1 && d->c % 2 == 1 && d->filter_format != TSR_FILTER_PACKED && use_bf16(ctx, &even);
}

/* ---------------------------------------------------------------- reorders */

/* NCHW <-> NHWC for n images of c channels and hw pixels, elements of es
 * bytes (2 or 4), in 16 x 16 blocks. */
static void reorder_act(const void *src, void *dst, size_t es, int64_t n, int64_t c, int64_t hw, bool to_nhwc) {
    const int64_t cb = (c + 15) / 16, pb = (hw + 15) / 16;
#pragma omp for collapse(2) schedule(static)
    for (int64_t b = 0; b < n; b++)
        for (int64_t blk = 0; blk < cb * pb; blk++) {
            const int64_t c0 = blk / pb * 16, p0 = blk % pb * 16;
            const int64_t c1 = c0 + 16 < c ? c0 + 16 : c, p1 = p0 + 16 < hw ? p0 + 16 : hw;
            for (int64_t ci = c0; ci < c1; ci++)
                for (int64_t pi = p0; pi < p1; pi++) {
                    const int64_t nchw = (b * c + ci) * hw + pi, nhwc = (b * hw + pi) * c + ci;
                    const int64_t from = to_nhwc ? nchw : nhwc, to = to_nhwc ? nhwc : nchw;
                    if (es == 4) ((uint32_t *)dst)[to] = ((const uint32_t *)src)[from];
                    else ((uint16_t *)dst)[to] = ((const uint16_t *)src)[from];
                }
        }
}

/* n f16/bf16 values as f32. */
static void widen(const void *src, tsr_dtype t, float *dst, int64_t n) {
    const int64_t n0 = n / VL * VL;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n0; i += VL) vf_store(dst + i, vf_load_dtype(src, t, i));
#pragma omp single nowait
    for (int64_t i = n0; i < n; i++) dst[i] = tsr_load_f(src, t, i);
}

/* The filter as f32 panels [g][panel][r][s][c][NR], zero past k/groups. */
static void pack_filter(const tsr_conv2d_desc *d, const void *w, float *dst) {
    const int64_t G = d->groups, K = d->k, Kg = K / G, Cg = d->c / G, R = d->r, S = d->s;
    const int64_t Kp = (Kg + NR - 1) / NR, rsc = R * S * Cg;
    const tsr_dtype t = d->w_dtype;
#pragma omp for schedule(static)
    for (int64_t gp = 0; gp < G * Kp; gp++) {
        const int64_t g = gp / Kp, k0 = g * Kg + gp % Kp * NR;
        const int64_t nk = Kg - gp % Kp * NR < NR ? Kg - gp % Kp * NR : NR;
        float *panel = dst + gp * rsc * NR;
        if (d->filter_format == TSR_FILTER_OHWI) {
            /* row k of the filter is [r][s][c]: 8x8 register transposes
             * (rows past nk read as 0), f16/bf16 widened on the way */
            const int64_t j8 = rsc / 8 * 8;
            for (int64_t kk = 0; kk < NR; kk += 8) {
                const int rows = (int)(nk - kk < 0 ? 0 : nk - kk < 8 ? nk - kk : 8);
                for (int64_t j = 0; j < j8; j += 8)
                    tsr_transpose8x8_of(w, t, (k0 + kk) * rsc + j, rsc, rows, panel + j * NR + kk, NR, 8);
                for (int64_t j = j8; j < rsc; j++)
                    for (int64_t q = kk; q < kk + 8; q++)
                        panel[j * NR + q] = q < nk ? tsr_load_f(w, t, (k0 + q) * rsc + j) : 0.0f;
            }
            continue;
        }
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t c = 0; c < Cg; c++) {
                    float *row = panel + ((r * S + s) * Cg + c) * NR;
                    for (int64_t kk = 0; kk < nk; kk++)
                        row[kk] = tsr_load_f(w, d->w_dtype, tsr_filter_offset(d->filter_format, k0 + kk, c, r, s, K, Cg, R, S));
                    for (int64_t kk = nk; kk < NR; kk++) row[kk] = 0.0f;
                }
    }
}

/* ------------------------------------------------------------------ direct */

/* An f32 HWIO filter ([r][s][c][k]) whose groups fill whole panels is read
 * in place: its rows are the panels' rows, K apart (no per-call packing). */
static bool filter_in_place(const tsr_conv2d_desc *d) {
    return d->filter_format == TSR_FILTER_HWIO && d->w_dtype == TSR_F32 && (d->k / d->groups) % NR == 0;
}

/* The direct work items: tblocks of tiles by pblocks of panels (pxb and
 * ocb set how many blocks there are; the tiles and panels are then shared
 * evenly among them: 25 tiles in blocks of 16 and 9 had one thread doing
 * 16/25 of a 14x14 layer). */
typedef struct item_grid {
    int64_t tiles, panels, tblocks, pblocks;
} item_grid;

typedef struct conv_job {
    const tsr_conv2d_desc *d;
    int64_t P, Q;
    const float *x;    /* NHWC, f32 (bf16 when bf; x_dtype for depthwise) */
    tsr_dtype x_dtype; /* of x as the depthwise kernel reads it: f16/bf16 converted as loaded */
    bool bf;           /* bf16 x and bf16 pair-interleaved panels (vdpbf16ps) */
    const float *wp;   /* packed filter, or an f32 HWIO filter read in place */
    int64_t w_ld;      /* between consecutive (r, s, c) rows of a panel: NR packed, k in place */
    const ukr_ahead *ahead; /* a filter read in place: how far ahead its rows are fetched (NULL: packed) */
    const float *zero; /* max(c, 1) zeros */
    void *y;           /* NHWC, d->y_dtype */
    const tsr_epilogue *epi;
    bool plain;        /* f32 or bf16 y and an epilogue ukr_epilogue_is_plain accepts: tiles
                        * stored from registers by plain_store */
    bool bias0;        /* plain, and the epilogue starts with a bias: the sums start from it (tile_start) */
    bool fast_epi;     /* the epilogue is told by fe_* (fast_epilogue_of) */
    const float *fe_bias, *fe_res; /* bias (or NULL), residual (or NULL), the residual's scale, relu */
    float fe_scale;
    bool fe_relu;
    bool pw_fast;      /* pointwise tiles of whole f32 panels take pointwise_fast_tile (pointwise_fast_of) */
    bool stream_y;     /* y is larger than the caches: whole aligned vectors stored past them */
    bool prefetch_x;   /* x is out of L2: input ahead prefetched (depthwise: rows; pointwise: FETCH_TILES) */
    bool pointwise;    /* 1x1, stride 1, unpadded, one group: output pixel i reads input pixel i */
    bool row_tiles;    /* whole f32 tiles take row_tile_panels (row_tiles_of) */
    bool stem;         /* bf16 with an odd channel count: stem_tile_panels (x86_stem_bf16.h) */
    int64_t tiles, wide; /* tile_span */
    item_grid grid;      /* the direct work items (grid_of) */
    bool by_panel;       /* numbered by panel block (by_panel_evens) */
    const char *res;   /* a residual larger than L2 (its lines fetched when a tile starts), or NULL */
    int res_es;        /* its element size */
} conv_job;

/* The lines of bytes from p, towards L1, or L2 where l2. */
static inline __attribute__((always_inline)) void prefetch_bytes(const void *p, int64_t bytes, bool l2) {
    const char *c = p;
    for (int64_t b = 0; b < bytes; b += 64) l2 ? tsr_prefetch_l2(c + b) : tsr_prefetch_l1(c + b);
    l2 ? tsr_prefetch_l2(c + bytes - 1) : tsr_prefetch_l1(c + bytes - 1);
}

/* Pointwise tiles of up to 1 KiB per pixel with x larger than L2 fetch the
 * input pixels of the tile FETCH_TILES ahead into L2, as they start their
 * first panel. The hardware prefetcher had left a 256 -> 64 1x1 at batch 32
 * waiting on memory (Emerald Rapids, 2 threads, six bench runs each:
 * 0.64-0.88x -> 0.83-1.06x oneDNN; 2, 4 or 8 tiles ahead, to L1 or L2,
 * measured alike).
 * With 512-2048 channels, and on the direct tiles (1x1 stride 2, 3x3), the
 * same fetch cost 5-20%: their long rows keep the prefetcher streaming. */
enum { FETCH_TILES = 4, FETCH_PIXEL_BYTES = 1024 };

/* The lines of the residual that a tile's store will read (mr outputs at
 * elements y[i], nk channels from kc0): the epilogue waited on each of them
 * from memory (bf16 64->256 1x1 at batch 32, one core: 167 GFLOP/s without
 * the residual, 128 with it). Fetched when the tile starts, they arrive
 * while its FMAs run. */
static inline __attribute__((always_inline)) void prefetch_residual(const conv_job *j, const int64_t y[MR], int mr,
                                                                    int64_t kc0, int64_t nk) {
    if (!j->res) return;
    for (int i = 0; i < mr; i++) prefetch_bytes(j->res + (y[i] + kc0) * j->res_es, nk * j->res_es, false);
}

/* Output pixels t0 .. t0 + mr - 1 of the flattened n*p*q order: where their
 * inputs start and where their outputs go. */
typedef struct tile_geo {
    int mr;
    int64_t n[MR], ih[MR], iw[MR]; /* top-left input tap (may be in the padding) */
    int64_t y[MR];                 /* element of y[.][0] */
} tile_geo;

static void tile_geometry(const conv_job *j, int64_t t0, int mr, tile_geo *t) {
    const tsr_conv2d_desc *d = j->d;
    t->mr = mr;
    const int64_t PQ = j->P * j->Q;
    int64_t n = t0 / PQ, oh = t0 % PQ / j->Q, ow = t0 % j->Q;
    for (int i = 0; i < MR; i++) {
        /* rows past mr repeat the last pixel: computed, never stored */
        t->n[i] = n, t->ih[i] = oh * d->stride_h - d->pad_top, t->iw[i] = ow * d->stride_w - d->pad_left;
        t->y[i] = ((n * j->P + oh) * j->Q + ow) * d->k;
        if (i + 1 < mr && ++ow == j->Q) {
            ow = 0;
            if (++oh == j->P) oh = 0, n++;
        }
    }
}

/* Tile t of the flattened n*p*q pixels: its first pixel and its size. The
 * tiles are MR wide and the last one ragged, unless MR and MR - 1 wide
 * tiles cover the pixels exactly; then `wide` of them are MR wide and the
 * rest MR - 1, and those compute MR - 1 rows: a 7x7 image at batch 1 as
 * seven 8-row tiles, the last holding one pixel, spent 8/7 of the FMAs. */
static inline void tile_span(const conv_job *j, int64_t t, int64_t *t0, int *mr) {
    const int64_t pixels = j->d->n * j->P * j->Q;
    if (t < j->wide) {
        *t0 = t * MR;
        *mr = (int)(pixels - *t0 < MR ? pixels - *t0 : MR);
    } else {
        *t0 = j->wide * MR + (t - j->wide) * (MR - 1);
        *mr = MR - 1;
    }
}

static inline void tile_at(const conv_job *j, int64_t t, tile_geo *geo) {
    int64_t t0;
    int mr;
    tile_span(j, t, &t0, &mr);
    tile_geometry(j, t0, mr, geo);
}

/* Element e of x, and of the panels, as the pointers the micro-kernels take
 * (bf16 data travels as float pointers and is read back as uint16_t). */
#define ELEM(base, e, bf) ((bf) ? (const float *)((const uint16_t *)(const void *)(base) + (e)) : (base) + (e))

static inline __attribute__((always_inline)) void tile_fma(const conv_job *j, const int mr, int64_t kc,
                                                            const float *const rows[MR], const float *bp, bool bf,
                                                            vf (*acc)[NV]) {
#ifdef CONV_BF16
    if (bf) {
        ukr_dot_bf16(mr, kc, rows, (const uint16_t *)(const void *)bp, acc);
        return;
    }
#endif
    (void)bf;
    ukr_fma_nv(NV, mr, kc, rows, 1, bp, j->w_ld, j->ahead, true, acc);
}

/* One tap of the tile's first mr pixels, rows[i] pointing at j->zero where
 * pixel i's input for it is in the padding. Such pixels at the tile's start
 * or end (a row's first or last pixel where the tile lies within one output
 * row) are left out of the FMAs, one at each end at most (a constant row
 * count for each case): a 7-wide output row of a 3x3 pad-1 layer had 2 of
 * every 21 pixel-taps of a filter row computed on zeros (oneDNN skips them
 * too). Pixels in the padding elsewhere in the tile still read zeros. Taken
 * from TRIM_MIN_KC channels a tap (tile_fn): a row of FMAs of a 3-channel
 * tap saves less than finding the ends costs. rows holds MR + 1 pointers:
 * the micro-kernels read MR from rows + 1. */
enum { TRIM_MIN_KC = 32 };
static inline __attribute__((always_inline)) void tap_fma(const conv_job *j, const int mr, int64_t kc,
                                                           const float *const rows[MR + 1], const float *bp,
                                                           bool bf, vf acc[MR][NV]) {
    int lo = 0, hi = mr;
    while (lo < hi && rows[lo] == j->zero) lo++;
    while (hi > lo && rows[hi - 1] == j->zero) hi--;
    if (lo == hi) return; /* rows past mr (never stored) alone in the image */
    bool gap = false;
    for (int i = lo; i < hi; i++) gap |= rows[i] == j->zero;
    if (gap || lo > 1 || hi < mr - 1 || (lo == 0 && hi == mr)) tile_fma(j, mr, kc, rows, bp, bf, acc);
    else if (lo == 0) tile_fma(j, mr - 1, kc, rows, bp, bf, acc);
    else if (hi == mr) tile_fma(j, mr - 1, kc, rows + 1, bp, bf, acc + 1);
    else tile_fma(j, mr - 2, kc, rows + 1, bp, bf, acc + 1);
}

/* A tile's sums for nk channels from output channel kc0 before its FMAs:
 * the bias where the epilogue starts with one (plain_store then skips it),
 * else zero. A load per vector where the bias step took a zeroing and an
 * add per accumulator. */
static inline __attribute__((always_inline)) void tile_start(const conv_job *j, vf acc[MR][NV], int64_t kc0,
                                                              const int64_t nk) {
    if (!j->bias0) {
        ukr_zero(acc);
        return;
    }
    const tsr_epilogue_step *b = &j->epi->steps[0];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        const vf bv = v * VL < nk ? ukr_load_n(b->data, b->dtype, kc0 + v * VL, (int)(nk - v * VL < VL ? nk - v * VL : VL))
                                  : vf_zero();
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) acc[i][v] = bv;
    }
}

/* The first mr pixels (outputs at elements y[i] of y) by nk channels from
 * output channel kc0 under a plain epilogue (bias, residual, relu), step by
 * step: a step's kind and dtype tested once a tile, a bias vector loaded
 * once for all rows (per vector, those tests were a third of a 1x1 tile's
 * instructions at 64 input channels); then the only store. Unrolled and
 * call-free, acc indexed by constants stays in registers. */
static inline __attribute__((always_inline)) void plain_store(const conv_job *j, vf acc[MR][NV], const int64_t y[MR],
                                                               const int mr, int64_t kc0, const int64_t nk) {
    const tsr_epilogue *e = j->epi;
    for (int s = j->bias0; s < e->num_steps; s++) { /* a leading bias: in the sums already (tile_start) */
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_BIAS) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                if (v * VL >= nk) break;
                const vf b = ukr_load_n(st->data, st->dtype, kc0 + v * VL, (int)(nk - v * VL < VL ? nk - v * VL : VL));
#pragma GCC unroll 16
                for (int i = 0; i < MR; i++) acc[i][v] = vf_add(acc[i][v], b); /* rows past mr: never stored */
            }
        } else if (st->op == TSR_EPI_RESIDUAL) {
            const vf scale = vf_set1(st->scale);
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++) {
                if (i >= mr) break;
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                    if (v * VL >= nk) break;
                    const int n = (int)(nk - v * VL < VL ? nk - v * VL : VL);
                    acc[i][v] = vf_fma(scale, ukr_load_n(st->data, st->dtype, y[i] + kc0 + v * VL, n), acc[i][v]);
                }
            }
        } else if (st->activation == TSR_ACT_RELU) {
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[i][v] = vf_relu(acc[i][v]);
        }
    }
    /* read once: the stores could alias *j, and each reread a test */
    const tsr_dtype t = j->d->y_dtype;
    void *const yp = j->y;
    const bool stream = j->stream_y, bf = j->bf;
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        if (i >= mr) break;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            if (v * VL >= nk) break;
            const int n = (int)(nk - v * VL < VL ? nk - v * VL : VL);
            const int64_t yi = y[i] + kc0 + v * VL;
            if (stream && n == VL) vf_put_dtype(yp, t, yi, acc[i][v], true);
            else ukr_store_n(yp, t, yi, acc[i][v], n, bf);
        }
    }
}

/* The tile's first mr pixels (outputs at elements y[i] of y) by nk of its
 * channels from output channel kc0: the epilogue, then the only store.
 * rows: the rows the tile computed (a constant). */
static inline __attribute__((always_inline)) void tile_store(const conv_job *j, vf acc[MR][NV], const int64_t y[MR],
                                                              int mr, int64_t kc0, int64_t nk, const int rows) {
    const tsr_conv2d_desc *d = j->d;
    if (j->plain) {
        if (mr == rows && nk == NR) plain_store(j, acc, y, rows, kc0, NR); /* a whole tile: every bound a constant */
        else plain_store(j, acc, y, mr, kc0, nk);
        return;
    }
    /* indexed by variables from a copy: indexed so itself, acc would live
     * in memory in every tile (zeroed, spilled and reloaded there) */
    vf spill[MR][NV];
    memcpy(spill, acc, sizeof spill);
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < NV && v * VL < nk; v++) {
            const int n = (int)(nk - v * VL < VL ? nk - v * VL : VL);
            const int64_t k = kc0 + v * VL, yi = y[i] + k;
            vf r = ukr_epilogue(j->epi, spill[i][v], k, false, 0, 0, yi, n);
            vf_store_n_dtype(j->y, d->y_dtype, yi, r, n);
        }
}

enum { FE_RES_NONE, FE_RES_UNIT, FE_RES_SCALED }; /* a fast epilogue's residual: none, scale 1, other */

/* F(args..., res, relu) with j's fast epilogue (fast_epilogue_of) as
 * constants: each epilogue its own loop, the tests out of the tiles. */
#define FE_DISPATCH(j, F, ...)                                                                                  \
    do {                                                                                                       \
        const int fe_res_ = !(j)->fe_res ? FE_RES_NONE : (j)->fe_scale == 1.0f ? FE_RES_UNIT : FE_RES_SCALED;  \
        if (fe_res_ == FE_RES_UNIT && (j)->fe_relu) F(__VA_ARGS__, FE_RES_UNIT, true);                        \
        else if (fe_res_ == FE_RES_UNIT) F(__VA_ARGS__, FE_RES_UNIT, false);                                  \
        else if (fe_res_ == FE_RES_SCALED && (j)->fe_relu) F(__VA_ARGS__, FE_RES_SCALED, true);               \
        else if (fe_res_ == FE_RES_SCALED) F(__VA_ARGS__, FE_RES_SCALED, false);                              \
        else if ((j)->fe_relu) F(__VA_ARGS__, FE_RES_NONE, true);                                              \
        else F(__VA_ARGS__, FE_RES_NONE, false);                                                               \
    } while (0)

/* A whole f32 tile's sums under a fast epilogue (fast_epilogue_of) before
 * its FMAs, for the panel of output channels from k0: the bias, or zero. */
static inline __attribute__((always_inline)) void fast_start(const conv_job *j, vf acc[MR][NV], int64_t k0) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        const vf b = j->fe_bias ? vf_load(j->fe_bias + k0 + v * VL) : vf_zero();
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) acc[i][v] = b;
    }
}

/* Its only store: MR consecutive output pixels from yk, K apart (their
 * residual from rk), res and relu constants, each vector stored once. */
static inline __attribute__((always_inline)) void fast_store(vf acc[MR][NV], float *yk, const float *rk, int64_t K,
                                                              vf scale, const int res, const bool relu) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            vf o = acc[i][v];
            if (res == FE_RES_UNIT) o = vf_add(o, vf_load(rk + i * K + v * VL));
            if (res == FE_RES_SCALED) o = vf_fma(vf_load(rk + i * K + v * VL), scale, o);
            if (relu) o = vf_relu(o);
            vf_store(yk + i * K + v * VL, o);
        }
}

/* row_tile_rows' copies of x, floats: a 7x7 stride-2 stem's are up to 7 x 21 x 3
 * (a row's window) and 8 x 7 x 7 x 3 (a tile's patches) */
enum { ROW_WINDOW_FLOATS = 2048 };

/* cols pixels of C channels from column iw of the input row at src (NULL:
 * a row in the padding) into dst, zeros where they leave the W columns. */
static inline void copy_window(float *dst, const float *src, int64_t iw, int64_t cols, int64_t W, int64_t C) {
    const int64_t c_lo = !src ? cols : iw < 0 ? (-iw < cols ? -iw : cols) : 0;
    const int64_t c_hi = !src ? cols : iw + cols > W ? (W - iw > c_lo ? W - iw : c_lo) : cols;
    memset(dst, 0, sizeof(float) * (size_t)(c_lo * C));
    if (c_hi > c_lo) memcpy(dst + c_lo * C, src + (iw + c_lo) * C, sizeof(float) * (size_t)((c_hi - c_lo) * C));
    memset(dst + c_hi * C, 0, sizeof(float) * (size_t)((cols - c_hi) * C));
}

/* Where a row tile's A rows are (row_tile_rows): nr filter rows of kc
 * values per pixel, pixels lda apart, filter rows pitch apart, from filter
 * row r_lo (B's rows from r_lo * S * C on). */
typedef struct row_src {
    const float *a;
    int64_t nr, kc, lda, pitch, r_lo;
} row_src;

/* The A rows of a whole f32 tile of MR pixels (row_tiles_of). Pixels of
 * one output row share their input rows, so filter rows in the top or
 * bottom padding are skipped as a range, and each filter row is a run of
 * S * C values per pixel, stride_w * C apart; at the left or right edge
 * the rows' window (zeros outside the image) is copied into win first. A
 * tile across output rows copies each pixel's R x S x C patch, one run of
 * them all. False where the copies would not fit in win. */
static bool row_tile_rows(const conv_job *j, const tile_geo *t, float *win, row_src *src) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t C = d->c, H = d->h, W = d->w, R = d->r, S = d->s, dh = d->dilation_h, sw = d->stride_w;
    const int64_t ih = t->ih[0], iw = t->iw[0], cols = sw * (MR - 1) + S;
    if (t->n[MR - 1] != t->n[0] || t->ih[MR - 1] != ih) { /* across output rows */
        const int64_t run = R * S * C;
        if (MR * run > ROW_WINDOW_FLOATS) return false;
        for (int i = 0; i < MR; i++)
            for (int64_t r = 0; r < R; r++) {
                const int64_t h = t->ih[i] + r * dh;
                copy_window(win + i * run + r * S * C, h >= 0 && h < H ? j->x + (t->n[i] * H + h) * W * C : NULL,
                            t->iw[i], S, W, C);
            }
        *src = (row_src){win, 1, run, run, run, 0};
        return true;
    }
    const int64_t r_lo = ih >= 0 ? 0 : (-ih + dh - 1) / dh, r_hi = H - ih <= 0 ? 0 : (H - ih + dh - 1) / dh;
    const int64_t rows = (r_hi < R ? r_hi : R) - r_lo;
    if (iw >= 0 && iw + cols <= W) {
        *src = (row_src){j->x + ((t->n[0] * H + ih + r_lo * dh) * W + iw) * C, rows, S * C, sw * C, dh * W * C, r_lo};
        return true;
    }
    if (rows * cols * C > ROW_WINDOW_FLOATS) return false;
    for (int64_t r = 0; r < rows; r++)
        copy_window(win + r * cols * C, j->x + (t->n[0] * H + ih + (r_lo + r) * dh) * W * C, iw, cols, W, C);
    *src = (row_src){win, rows, S * C, sw * C, cols * C, r_lo};
    return true;
}

static void (*tile_fn(const conv_job *j))(const conv_job *, const tile_geo *, int64_t, int64_t);

/* acc += a whole tile's nr filter rows: row r of pixel i is kc values from
 * a + r * pitch + i * lda, against kc rows of B from b + r * kc * ldb. */
static inline __attribute__((always_inline)) void rows_fma(int64_t nr, int64_t kc, const float *a, int64_t lda,
                                                           int64_t pitch, const float *b, int64_t ldb,
                                                           vf acc[MR][NV]) {
#ifdef CONV_FMA_6X16
    tsr_fma_6x16_rows(nr, kc, a, lda, pitch, b, ldb, acc);
#else
    for (int64_t r = 0; r < nr; r++) {
        const float *rows[MR];
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) rows[i] = a + r * pitch + i * lda;
        ukr_fma_nv(NV, MR, kc, rows, 1, b + r * kc * ldb, ldb, NULL, true, acc);
    }
#endif
}

/* Tile t by panels p_lo..p_hi of a row_tiles_of job: its A rows found (or
 * copied) once, then each panel's filter rows in one loop (rows_fma);
 * under a fast epilogue (fast: res and relu constants) stored as the
 * pointwise tiles store. At the 3-channel stem (AVX2)
 * the general tile had run each filter row through a call of 21 channels
 * and its edge tiles tap by tap, 3 channels a call: 36.9 M instructions a
 * call, 29.7 M here with the general epilogue, 29.3 M with the fast one,
 * 25.9 M for oneDNN's (cachegrind). */
static inline __attribute__((always_inline)) void row_tile_panels_as(const conv_job *j, const tile_geo *t,
                                                                      int64_t p_lo, int64_t p_hi, const bool fast,
                                                                      const int res, const bool relu) {
    float win[ROW_WINDOW_FLOATS] __attribute__((aligned(32)));
    row_src src;
    if (t->mr != MR || !row_tile_rows(j, t, win, &src)) {
        void (*const tile)(const conv_job *, const tile_geo *, int64_t, int64_t) = tile_fn(j);
        for (int64_t p = p_lo; p < p_hi; p++) tile(j, t, 0, p);
        return;
    }
    const int64_t K = j->d->k, ld = j->w_ld, rsc = j->d->r * j->d->s * j->d->c;
    const float *b0 = j->wp + src.r_lo * j->d->s * j->d->c * ld;
    const vf scale = vf_set1(j->fe_scale);
    for (int64_t p = p_lo; p < p_hi; p++) {
        const int64_t nk = K - p * NR < NR ? K - p * NR : NR;
        prefetch_residual(j, t->y, MR, p * NR, nk);
        vf acc[MR][NV];
        if (fast) fast_start(j, acc, p * NR);
        else tile_start(j, acc, p * NR, nk);
        rows_fma(src.nr, src.kc, src.a, src.lda, src.pitch, b0 + (ld == NR ? p * rsc * NR : p * NR), ld, acc);
        if (fast)
            fast_store(acc, (float *)j->y + t->y[0] + p * NR, res ? j->fe_res + t->y[0] + p * NR : NULL, K, scale, res,
                       relu);
        else
            tile_store(j, acc, t->y, MR, p * NR, nk, MR);
    }
}

static void row_tile_panels(const conv_job *j, const tile_geo *t, int64_t p_lo, int64_t p_hi) {
    if (j->fast_epi) FE_DISPATCH(j, row_tile_panels_as, j, t, p_lo, p_hi, true);
    else row_tile_panels_as(j, t, p_lo, p_hi, false, FE_RES_NONE, false);
}

static inline __attribute__((always_inline)) void direct_tile(const conv_job *j, const tile_geo *t, int64_t g,
                                                               int64_t kp, const bool bf, const int mr,
                                                               const bool trim) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t C = d->c, H = d->h, W = d->w, R = d->r, S = d->s, Cg = C / d->groups, Kg = d->k / d->groups;
    const int64_t dh = d->dilation_h, dw = d->dilation_w;
    const int64_t ld = j->w_ld;
    const float *wpan = ld == NR ? ELEM(j->wp, (g * panels_of(d) + kp) * R * S * Cg * NR, bf) : j->wp + g * Kg + kp * NR;
    const bool fuse_s = d->groups == 1 && dw == 1;
    const int64_t nk = Kg - kp * NR < NR ? Kg - kp * NR : NR;
    prefetch_residual(j, t->y, t->mr, g * Kg + kp * NR, nk);
    vf acc[MR][NV];
    tile_start(j, acc, g * Kg + kp * NR, nk);
    const float *rows[MR + 1]; /* tap_fma may pass rows + 1 */
    rows[MR] = j->zero;
    bool inside = fuse_s; /* every tap of every pixel in the image */
    for (int i = 0; i < MR; i++)
        inside = inside && t->ih[i] >= 0 && t->ih[i] + (R - 1) * dh < H && t->iw[i] >= 0 && t->iw[i] + S - 1 < W;
    if (inside) { /* one run of S x C per filter row, the next row W x C on: no per-row checks */
        for (int i = 0; i < MR; i++) rows[i] = ELEM(j->x, ((t->n[i] * H + t->ih[i]) * W + t->iw[i]) * C, bf);
        for (int64_t r = 0; r < R; r++) {
            tile_fma(j, mr, S * C, rows, ELEM(wpan, r * S * Cg * ld, bf), bf, acc);
            for (int i = 0; i < MR; i++) rows[i] = ELEM(rows[i], dh * W * C, bf);
        }
    } else /* rows and taps in the padding: checked per filter row, per tap at the edges */
        for (int64_t r = 0; r < R; r++) {
            bool any = false, whole = fuse_s;
            int64_t xrow[MR];
            bool rvalid[MR];
            for (int i = 0; i < MR; i++) {
                const int64_t ih = t->ih[i] + r * dh;
                rvalid[i] = ih >= 0 && ih < H;
                any |= rvalid[i];
                whole = whole && rvalid[i] && t->iw[i] >= 0 && t->iw[i] + (S - 1) * dw < W;
                xrow[i] = (t->n[i] * H + ih) * W;
            }
            if (!any) continue;
            if (whole) { /* S taps x C channels: one run per pixel */
                for (int i = 0; i < MR; i++) rows[i] = ELEM(j->x, (xrow[i] + t->iw[i]) * C, bf);
                tile_fma(j, mr, S * C, rows, ELEM(wpan, r * S * Cg * ld, bf), bf, acc);
                continue;
            }
            for (int64_t s = 0; s < S; s++) {
                bool hit = false;
                for (int i = 0; i < MR; i++) {
                    const int64_t iw = t->iw[i] + s * dw;
                    const bool ok = rvalid[i] && iw >= 0 && iw < W;
                    rows[i] = ok ? ELEM(j->x, (xrow[i] + iw) * C + g * Cg, bf) : j->zero;
                    hit |= ok;
                }
                if (!hit) continue;
                const float *bp = ELEM(wpan, (r * S + s) * Cg * ld, bf);
                if (trim) tap_fma(j, mr, Cg, rows, bp, bf, acc);
                else tile_fma(j, mr, Cg, rows, bp, bf, acc);
            }
        }
    tile_store(j, acc, t->y, t->mr, g * Kg + kp * NR, nk, mr);
}

/* A tile of MR - 1 pixels computes MR - 1 rows (see tile_span). Taps of
 * TRIM_MIN_KC channels or more trim the tile's ends (tap_fma) in functions
 * of their own (tile_fn): in the same function as the 3-channel stem's tap
 * loop, the trim left the stem's f32 code 2-7% slower. */
#define DIRECT_TILE_FN(name, bf, trim)                                                   \
    static void name(const conv_job *j, const tile_geo *t, int64_t g, int64_t kp) {      \
        if (t->mr == MR - 1) direct_tile(j, t, g, kp, bf, MR - 1, trim);                 \
        else direct_tile(j, t, g, kp, bf, MR, trim);                                     \
    }
DIRECT_TILE_FN(direct_tile_f32, false, false)
DIRECT_TILE_FN(direct_tile_f32_trim, false, true)
#ifdef CONV_BF16
DIRECT_TILE_FN(direct_tile_bf16, true, false)
DIRECT_TILE_FN(direct_tile_bf16_trim, true, true)
#include "x86_stem_bf16.h"
#else
#define direct_tile_bf16 direct_tile_f32 /* never reached: bf is only set where CONV_BF16 is */
#define direct_tile_bf16_trim direct_tile_f32
#endif

/* A 1x1, stride 1, unpadded, one-group convolution is a GEMM whose A rows
 * are the input pixels: tile t by panels p_lo..p_hi inlined into its loops
 * (no per-tile geometry, no call per tile; at 64 channels that overhead was
 * a quarter of a bf16 tile's time). The rows and outputs are placed once per
 * tile, not once per panel: at 64 channels placing them per panel took a
 * fifth of the instructions of a 1x1 (cachegrind, AVX2). */
static inline __attribute__((always_inline)) void pointwise_tile_rows(const conv_job *j, int64_t t0, int mr,
                                                                       int64_t p_lo, int64_t p_hi, bool fetch,
                                                                       const bool bf, const int nrows) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t C = d->c, K = d->k;
    const float *rows[MR];
    int64_t y[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) { /* rows past mr repeat the last pixel: computed, never stored */
        const int64_t px = t0 + (i < mr ? i : mr - 1);
        rows[i] = ELEM(j->x, px * C, bf), y[i] = px * K;
    }
    if (fetch) prefetch_bytes(ELEM(j->x, (t0 + FETCH_TILES * MR) * C, bf), MR * C * (bf ? 2 : 4), true);
    for (int64_t p = p_lo; p < p_hi; p++) {
        const int64_t nk = K - p * NR < NR ? K - p * NR : NR;
        prefetch_residual(j, y, mr, p * NR, nk);
        vf acc[MR][NV];
        tile_start(j, acc, p * NR, nk);
        tile_fma(j, nrows, C, rows, j->w_ld == NR ? ELEM(j->wp, p * C * NR, bf) : j->wp + p * NR, bf, acc);
        tile_store(j, acc, y, mr, p * NR, nk, nrows);
    }
}

/* A pointwise_fast_of f32 tile that pointwise_fast_tile does not take:
 * out of line, since inlined beside it GCC kept the accumulators of its
 * 5-pixel tiles on the stack (a 7x7 512 -> 2048 layer 14 -> 19 M
 * instructions). A strided 1x1's (across output rows) is a direct tile. */
static __attribute__((noinline)) void pointwise_any_tile_f32(const conv_job *j, int64_t t0, int mr, int64_t p_lo,
                                                             int64_t p_hi, bool fetch) {
    if (!j->pointwise) {
        tile_geo geo;
        tile_geometry(j, t0, mr, &geo);
        for (int64_t p = p_lo; p < p_hi; p++) direct_tile_f32(j, &geo, 0, p);
    } else if (mr == MR - 1) {
        pointwise_tile_rows(j, t0, mr, p_lo, p_hi, fetch, false, MR - 1);
    } else {
        pointwise_tile_rows(j, t0, mr, p_lo, p_hi, fetch, false, MR);
    }
}

/* Where the input pixels of whole tile t0 start and how far apart they are,
 * for pointwise_fast_tile: consecutive, or a strided 1x1's within one output
 * row (false where the tile crosses one). */
static inline bool fast_rows(const conv_job *j, int64_t t0, const float **a, int64_t *lda) {
    const tsr_conv2d_desc *d = j->d;
    if (j->pointwise) {
        *a = j->x + t0 * d->c, *lda = d->c;
        return true;
    }
    const int64_t n = t0 / (j->P * j->Q), oh = t0 / j->Q % j->P, ow = t0 % j->Q;
    if (ow + MR > j->Q) return false;
    *a = j->x + ((n * d->h + oh * d->stride_h) * d->w + ow * d->stride_w) * d->c, *lda = d->stride_w * d->c;
    return true;
}

/* The common 1x1 tile (pointwise_fast_of): MR pixels by whole f32 panels,
 * its epilogue told once per call (res and relu constants). The sums start
 * from the bias, a residual is added from memory, each output vector is
 * stored once; the input pixels are a pointer and a row stride apart
 * (fast_rows), the outputs consecutive. The general tile's per-tile tests,
 * placements and spills were an eighth of a 64 -> 64 layer's instructions
 * (cachegrind, AVX2). */
static inline __attribute__((always_inline)) void pointwise_fast_tile(const conv_job *j, const float *a, int64_t lda,
                                                                       int64_t t0, int64_t p_lo, int64_t p_hi,
                                                                       bool fetch, const int res, const bool relu) {
    const int64_t C = j->d->c, K = j->d->k;
    const float *rows[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) rows[i] = a + i * lda;
    float *const y = (float *)j->y + t0 * K;
    const float *const r = res ? j->fe_res + t0 * K : NULL;
    if (fetch) prefetch_bytes(j->x + (t0 + FETCH_TILES * MR) * C, MR * C * 4, true);
    const vf scale = vf_set1(j->fe_scale);
    for (int64_t p = p_lo; p < p_hi; p++) {
        const int64_t k0 = p * NR;
        if (j->res)
            for (int i = 0; i < MR; i++) prefetch_bytes(j->res + ((t0 + i) * K + k0) * 4, NR * 4, false);
        vf acc[MR][NV];
        fast_start(j, acc, k0);
        const float *bp = j->w_ld == NR ? j->wp + p * C * NR : j->wp + k0;
#ifdef CONV_FMA_6X16
        if (!j->ahead) tsr_fma_6x16(C, a, lda, bp, j->w_ld, acc);
        else
#endif
            ukr_fma_nv(NV, MR, C, rows, 1, bp, j->w_ld, j->ahead, true, acc);
        /* opaque each panel: else GCC keeps a pointer per row and operand
         * and steps them on the stack; with the residual 1% fewer
         * instructions at 64 -> 256, without it 1% more at 64 -> 64 */
        float *yk = y + k0;
        const float *rk = res ? r + k0 : NULL;
        __asm__("" : "+r"(yk), "+r"(rk));
        fast_store(acc, yk, rk, K, scale, res, relu);
    }
}

static inline __attribute__((always_inline)) void pointwise_items(const conv_job *j, int64_t t_lo, int64_t t_hi,
                                                                   int64_t p_lo, int64_t p_hi, bool panels_outer,
                                                                   const bool bf, const bool fast, const int res,
                                                                   const bool relu) {
    for (int64_t po = panels_outer ? p_lo : 0; po < (panels_outer ? p_hi : 1); po++) {
        /* panels outer: one panel at a time, x fetched ahead on the first */
        const int64_t pl = panels_outer ? po : p_lo, ph = panels_outer ? po + 1 : p_hi;
        const bool fetch = j->prefetch_x && pl == p_lo;
        for (int64_t t = t_lo; t < t_hi; t++) {
            int64_t t0;
            int mr;
            tile_span(j, t, &t0, &mr);
            const float *a;
            int64_t lda;
            if (fast && mr == MR && fast_rows(j, t0, &a, &lda)) pointwise_fast_tile(j, a, lda, t0, pl, ph, fetch, res, relu);
            else if (fast) pointwise_any_tile_f32(j, t0, mr, pl, ph, fetch);
            else if (mr == MR - 1) pointwise_tile_rows(j, t0, mr, pl, ph, fetch, bf, MR - 1);
            else pointwise_tile_rows(j, t0, mr, pl, ph, fetch, bf, MR);
        }
    }
}

static void pointwise_f32(const conv_job *j, int64_t t_lo, int64_t t_hi, int64_t p_lo, int64_t p_hi, bool po) {
    if (j->pw_fast) {
        FE_DISPATCH(j, pointwise_items, j, t_lo, t_hi, p_lo, p_hi, po, false, true);
        return;
    }
    pointwise_items(j, t_lo, t_hi, p_lo, p_hi, po, false, false, FE_RES_NONE, false);
}

#ifdef CONV_BF16
static void pointwise_bf16(const conv_job *j, int64_t t_lo, int64_t t_hi, int64_t p_lo, int64_t p_hi, bool po) {
    pointwise_items(j, t_lo, t_hi, p_lo, p_hi, po, true, false, FE_RES_NONE, false);
}
#else
#define pointwise_bf16 pointwise_f32
#endif

/* Whether j's whole f32 tiles can be stored by fast_store: f32 x, filter,
 * y, bias and residual, K a multiple of NR, y not streamed, and an
 * epilogue of an optional bias, residual and relu (or none) in that order;
 * if so its steps are noted in j's fe_* fields. On AVX-512 too (its loop in
 * C): Zen 5, 2 threads, batch 1, 3 rounds alternated, per call against
 * oneDNN res3a_br1 0.90x -> 0.98x and res2a_br2c 0.92x -> 0.97x in one A/B,
 * the 1x1s -2..+8% (most +1-4%) in a second. */
static bool fast_epilogue_of(conv_job *j) {
    const tsr_conv2d_desc *d = j->d;
    if (j->bf || j->stream_y || d->y_dtype != TSR_F32 || d->k % NR) return false;
    const tsr_epilogue *e = j->epi;
    int s = 0;
    if (s < e->num_steps && e->steps[s].op == TSR_EPI_BIAS) {
        if (e->steps[s].dtype != TSR_F32) return false;
        j->fe_bias = e->steps[s++].data;
    }
    if (s < e->num_steps && e->steps[s].op == TSR_EPI_RESIDUAL) {
        if (e->steps[s].dtype != TSR_F32) return false;
        j->fe_res = e->steps[s].data, j->fe_scale = e->steps[s++].scale;
    }
    if (s < e->num_steps && e->steps[s].op == TSR_EPI_ACTIVATION &&
        (e->steps[s].activation == TSR_ACT_RELU || e->steps[s].activation == TSR_ACT_NONE))
        j->fe_relu = e->steps[s++].activation == TSR_ACT_RELU;
    return s == e->num_steps;
}

/* Whether j's tiles can take pointwise_fast_tile: a 1x1, unpadded, one
 * group (any stride: res3a_br1 and its like at 0.79-0.89x oneDNN on the
 * direct tiles) under a fast epilogue (fast_epilogue_of, called first). */
static bool pointwise_fast_of(const conv_job *j) {
    const tsr_conv2d_desc *d = j->d;
    return j->fast_epi && d->r == 1 && d->s == 1 && d->groups == 1 && !d->pad_top && !d->pad_bottom &&
           !d->pad_left && !d->pad_right;
}

/* Whether j's f32 direct tiles take row_tile_panels: one group and
 * dilation_w 1 (each filter row one run of S * C values per pixel), and a
 * filter that is packed, or read in place (fetched ahead by the C loop
 * only) with fewer than 16 channels. Against the general tiles, in one
 * process (2 threads, packed once, Zen 3): the stem 0.81-0.84x -> 0.92-0.98x
 * oneDNN, 3x3 64 -> 64 at 56x56 3-4% faster, 3x3s of 128-512 channels
 * alike within the noise. On AVX-512 (the loop in C, rows_fma) only under
 * 16 channels: on Zen 5 (2 threads, batch 1, 3 rounds alternated) the stem
 * 0.79x -> 0.93x oneDNN (batch 32 0.83x -> 0.97x), while 3x3s of 64-256
 * channels moved -3..+1% and res5a_br2b lost 10% (its 7-pixel tiles then
 * fell back to the untrimmed tile; the fallback now takes tile_fn's). */
static bool row_tiles_of(const conv_job *j) {
    const tsr_conv2d_desc *d = j->d;
    return !j->bf && !j->pointwise && d->groups == 1 && d->dilation_w == 1 && (d->c < 16 || (VL == 8 && !j->ahead));
}

/* The tile blocks are one or two more than pxb gives where that makes the
 * items a multiple of the nt threads: a 56x56 1x1 in 17 blocks had one of
 * two threads doing 9/17 of it. */
static item_grid grid_of(const conv_job *j, const tsr_schedule *s, int nt) {
    const int64_t panels = j->d->groups * panels_of(j->d);
    item_grid g = {j->tiles, panels, (j->tiles + s->v[KNOB_PXB] - 1) / s->v[KNOB_PXB],
                   (panels + s->v[KNOB_OCB] - 1) / s->v[KNOB_OCB]};
    while ((g.tblocks * g.pblocks) % nt && g.tblocks < g.tiles) g.tblocks++;
    return g;
}

/* Item i's blocks, numbered tile block by tile block (a thread's run of
 * items shares its tiles across the panel blocks), or by_panel. */
static inline void item_blocks(const item_grid *g, bool by_panel, int64_t i, int64_t *tb, int64_t *pb) {
    *tb = by_panel ? i % g->tblocks : i / g->pblocks;
    *pb = by_panel ? i / g->tblocks : i % g->pblocks;
}

/* schedule(static) gives each of nt threads one contiguous run of items.
 * They are numbered by panel block where that evens out the threads'
 * shares: 7 tiles in blocks of 4 and 3, numbered by tile block, had one
 * thread doing 4/7 of res5a_br2a at batch 1 (Emerald Rapids, 2 threads:
 * 0.83-0.87x -> 1.00x oneDNN). Counted up to 512 items; past that each
 * thread's run is long enough. */
static bool by_panel_evens(const item_grid *g, int nt) {
    const int64_t n = g->tblocks * g->pblocks;
    if (nt < 2 || n > 512 || g->tblocks == 1 || g->pblocks == 1) return false;
    int64_t worst[2] = {0, 0};
    for (int m = 0; m < 2; m++)
        for (int th = 0, lo = 0; th < nt; th++) {
            const int hi = lo + (int)(n / nt) + (th < n % nt);
            int64_t w = 0;
            for (int i = lo; i < hi; i++) {
                int64_t tb, pb;
                item_blocks(g, m == 1, i, &tb, &pb);
                w += ((tb + 1) * g->tiles / g->tblocks - tb * g->tiles / g->tblocks) *
                     ((pb + 1) * g->panels / g->pblocks - pb * g->panels / g->pblocks);
            }
            worst[m] = w > worst[m] ? w : worst[m];
            lo = hi;
        }
    return worst[1] < worst[0];
}

/* The direct tile function for j (DIRECT_TILE_FN). */
static void (*tile_fn(const conv_job *j))(const conv_job *, const tile_geo *, int64_t, int64_t) {
    const bool trim = j->d->c / j->d->groups >= TRIM_MIN_KC;
    if (j->bf) return trim ? direct_tile_bf16_trim : direct_tile_bf16;
    return trim ? direct_tile_f32_trim : direct_tile_f32;
}

static void direct_run(const conv_job *j, const tsr_schedule *s) {
    const tsr_conv2d_desc *d = j->d;
    const item_grid *grid = &j->grid;
    const int64_t tiles = grid->tiles, panels = grid->panels, Kp = panels_of(d);
    const int64_t tblocks = grid->tblocks, pblocks = grid->pblocks;
    void (*const tile)(const conv_job *, const tile_geo *, int64_t, int64_t) = tile_fn(j);
#pragma omp for schedule(static) nowait
    for (int64_t item = 0; item < tblocks * pblocks; item++) {
        int64_t tb, pb;
        item_blocks(grid, j->by_panel, item, &tb, &pb);
        const int64_t t_lo = tb * tiles / tblocks, t_hi = (tb + 1) * tiles / tblocks;
        const int64_t p_lo = pb * panels / pblocks, p_hi = (pb + 1) * panels / pblocks;
        if (j->pointwise || j->pw_fast) {
            (j->bf ? pointwise_bf16 : pointwise_f32)(j, t_lo, t_hi, p_lo, p_hi, s->v[KNOB_ORDER] == 1);
            continue;
        }
        tile_geo geo;
        if (s->v[KNOB_ORDER] == 0) {
            for (int64_t t = t_lo; t < t_hi; t++) {
                tile_at(j, t, &geo);
                if (j->row_tiles) {
                    row_tile_panels(j, &geo, p_lo, p_hi);
                    continue;
                }
#ifdef CONV_BF16
                if (j->stem) {
                    stem_tile_panels(j, &geo, p_lo, p_hi);
                    continue;
                }
#endif
                for (int64_t p = p_lo; p < p_hi; p++) tile(j, &geo, p / Kp, p % Kp);
            }
        } else {
            for (int64_t p = p_lo; p < p_hi; p++)
                for (int64_t t = t_lo; t < t_hi; t++) {
                    tile_at(j, t, &geo);
                    if (j->row_tiles) {
                        row_tile_panels(j, &geo, p, p + 1);
                        continue;
                    }
#ifdef CONV_BF16
                    if (j->stem) {
                        stem_tile_panels(j, &geo, p, p + 1);
                        continue;
                    }
#endif
                    tile(j, &geo, p / Kp, p % Kp);
                }
        }
    }
    /* streamed stores are weakly ordered: done before the region's barrier */
    if (j->stream_y) _mm_sfence();
#pragma omp barrier
}

#include "x86_depthwise.h"

/* -------------------------------------------------------------------- run */

/* 1x1, stride 1, unpadded NHWC: y[n*h*w, k] = x[n*h*w, c] * w^T. */
static tsr_status gemm_run(tsr_context *ctx, const tsr_conv2d_problem *cp) {
    const tsr_conv2d_desc *d = &cp->d;
    tsr_gemm_desc g;
    tsr_gemm_desc_init(&g);
    g.m = d->n * d->h * d->w, g.n = d->k, g.k = d->c;
    g.a_dtype = d->x_dtype, g.b_dtype = d->w_dtype, g.c_dtype = TSR_F32;
    g.trans_b = d->filter_format == TSR_FILTER_HWIO ? TSR_NO_TRANS : TSR_TRANS; /* [c][k] or [k][c] */
    g.epilogue = d->epilogue; /* bias per column = per output channel; residual dense as y */
    return tsr_gemm(ctx, &g, cp->x, cp->w, cp->y);
}

static tsr_status nhwc_run(tsr_context *ctx, const tsr_conv2d_problem *cp, const tsr_schedule *s);

/* pads_channel's problem: x as n*h*w pixels of c + 1 bf16 channels, the
 * filter as OHWI of c + 1, the last channel zero in both. */
static tsr_status padded_run(tsr_context *ctx, const tsr_conv2d_problem *cp, const tsr_schedule *s) {
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t C = d->c, C1 = C + 1, pixels = d->n * d->h * d->w, taps = d->k * d->r * d->s;
    const size_t bytes = (size_t)((pixels + taps) * C1) * 2;
    uint16_t *x1 = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!x1) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "conv2d.%s: no memory for the channel-padded copy of x", CONV_ARCH);
    uint16_t *w1 = x1 + pixels * C1;
    const uint16_t *x = cp->x, *w = cp->w;
    const int nt = tsr_threads_for(ctx, (double)pixels * (double)C1, 1e5);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t px = 0; px < pixels; px++) {
        memcpy(x1 + px * C1, x + px * C, (size_t)C * 2);
        x1[px * C1 + C] = 0;
    }
    for (int64_t t = 0; t < taps; t++) { /* t = (k, r, s) */
        const int64_t k = t / (d->r * d->s), r = t / d->s % d->r, sc = t % d->s;
        for (int64_t c = 0; c < C; c++)
            w1[t * C1 + c] = w[tsr_filter_offset(d->filter_format, k, c, r, sc, d->k, C, d->r, d->s)];
        w1[t * C1 + C] = 0;
    }
    tsr_conv2d_problem even = *cp;
    even.d.c = C1, even.d.filter_format = TSR_FILTER_OHWI, even.x = x1, even.w = w1;
    const tsr_status st = nhwc_run(ctx, &even, s);
    free(x1);
    return st;
}

/* One NHWC call's work, run by every thread of its team (or by the
 * caller alone): x widened and the filter packed into buf where needed,
 * then the tiles. */
typedef struct nhwc_call {
    const tsr_conv2d_problem *cp;
    const tsr_schedule *s;
    conv_job *j;
    float *xf, *buf; /* widened x (or NULL); packed filter */
    int64_t xn;
    bool dw, in_place, packed;
} nhwc_call;

static void nhwc_work(const nhwc_call *c) {
    const tsr_conv2d_desc *d = &c->cp->d;
    if (c->dw) { /* each thread packs the channels it takes: no barrier */
        depthwise_run(c->j, c->in_place ? NULL : c->cp->w, c->buf);
        return;
    }
    if (c->xf) widen(c->cp->x, d->x_dtype, c->xf, c->xn);
    if (c->packed || c->in_place) { /* the filter is read as it is */
    }
#ifdef CONV_BF16
    else if (c->j->stem) pack_filter_stem(d, c->cp->w, (uint16_t *)c->buf);
    else if (c->j->bf) pack_filter_bf16(d, c->cp->w, (uint16_t *)c->buf);
#endif
    else pack_filter(d, c->cp->w, c->buf);
#pragma omp barrier
    direct_run(c->j, c->s);
}

/* An NHWC problem (x of any float dtype). */
static tsr_status nhwc_run(tsr_context *ctx, const tsr_conv2d_problem *cp, const tsr_schedule *s) {
    const tsr_conv2d_desc *d = &cp->d;
    if (s->v[KNOB_ALGO] == ALGO_GEMM && is_1x1_gemm(cp)) return gemm_run(ctx, cp);
#ifdef CONV_BF16
    const bool stem = s->v[KNOB_ALGO] == ALGO_DIRECT && !cp->packed && stem_of(ctx, d);
#else
    const bool stem = false;
#endif
    if (s->v[KNOB_ALGO] == ALGO_DIRECT && !cp->packed && !stem && pads_channel(ctx, d)) return padded_run(ctx, cp, s);
    const bool dw = s->v[KNOB_ALGO] == ALGO_DEPTHWISE && is_depthwise(d);
    const int64_t Cg = d->c / d->groups, xn = d->n * d->h * d->w * d->c;
    const tsr_packed_filter *packed = cp->packed; /* direct panels: never depthwise */
    const bool in_place = dw ? depthwise_filter_in_place(d) : filter_in_place(d);
    const bool bf = packed ? packed->layout == TSR_PACKED_PAIR_PANELS : stem || (!dw && use_bf16(ctx, d));
    const bool dw_bf = dw && depthwise_dpbf16(ctx, d); /* bf16 pairs of filter rows (x86_depthwise.h) */
    const double flops = 2.0 * (double)d->n * (double)cp->p * (double)cp->q * (double)d->k * (double)(d->r * d->s * Cg);
    /* depthwise runs at a fraction of the FMA rate (a load per FMA): weigh
     * its work as such; a second thread pays from ~0.25 MFLOP (MobileNet-v2's
     * 7x7x960 and stride-2 14x14 layers at batch 1, on Zen 4: 17 -> 12 and
     * 13 -> 9 us, best of many) */
    const int nt = tsr_threads_for(ctx, dw ? 16 * flops : flops, 2e6);
    /* depthwise: a filter copy per thread (depthwise_run) */
    const int64_t wn = in_place || packed ? 0
                     : dw             ? dw_filter_floats(d, dw_bf) * nt
                     : stem           ? panels_of(d) * d->r * stem_pairs(d) * NR /* bf16 pairs: a float each */
                                      : d->groups * panels_of(d) * d->r * d->s * Cg * NR;
    const int64_t zn = d->c + 2 * VL, xs = d->x_dtype == TSR_F32 || bf || dw ? 0 : xn;
    float *buf = tsr_scratch_get((size_t)(wn + zn + xs) * 4);
    if (!buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "conv2d.%s: no memory for the packed filter", CONV_ARCH);
    float *zero = buf + wn, *xf = xs ? zero + zn : NULL;
    memset(zero, 0, sizeof(float) * (size_t)zn);
    conv_job j = {.d = d, .P = cp->p, .Q = cp->q, .x = xf ? xf : (const float *)cp->x,
                  .x_dtype = xf || bf ? TSR_F32 : d->x_dtype, .bf = bf,
                  .wp = in_place || packed ? (const float *)cp->w : buf, .w_ld = in_place ? d->k : NR, .zero = zero,
                  .y = cp->y, .epi = &d->epilogue,
                  .plain = (d->y_dtype == TSR_F32 || d->y_dtype == TSR_BF16) &&
                           ukr_epilogue_is_plain(&d->epilogue),
                  .pointwise = !stem && d->r == 1 && d->s == 1 && d->stride_h == 1 && d->stride_w == 1 &&
                               d->groups == 1 && !d->pad_top && !d->pad_bottom && !d->pad_left && !d->pad_right};
    j.bias0 = j.plain && d->epilogue.num_steps > 0 && d->epilogue.steps[0].op == TSR_EPI_BIAS;
    j.stem = stem;
    if (dw) j.bf = dw_bf;
    /* a filter read in place is B read in place to the micro-kernel: its
     * rows fetched ahead by the distances the GEMM defaults to for this
     * CPU's vendor (ukr_ahead) */
    if (in_place && !dw && j.w_ld != NR) j.ahead = ctx->cpu_amd ? &ukr_ahead_far : &ukr_ahead_near;
    const int64_t pixels = d->n * cp->p * cp->q;
    j.tiles = (pixels + MR - 1) / MR;
    j.wide = pixels - j.tiles * (MR - 1); /* tile_span */
    if (j.wide < 0) j.wide = j.tiles;
    /* Output rows of MR - 1 pixels (7x7 on AVX-512) past batch 1: tiles of
     * MR - 1, one output row each, so those in an image's first and last
     * rows skip the filter rows in the padding (a third of a 3x3's), where
     * every tile of MR straddles two rows and computes them on zeros (Zen 4,
     * two threads, 4 rounds alternated: res5a_br2b at batch 32 f32 207 ->
     * 233 GFLOP/s, bf16 411 -> 459). Rows of 14 measured -3 to +10% (7-row
     * tiles skip a little more, and pay their overhead over fewer rows). */
    if (!j.pointwise && d->r > 1 && (d->pad_top || d->pad_bottom) && cp->q == MR - 1)
        j.tiles = pixels / (MR - 1), j.wide = 0;
    if (!dw) {
        j.grid = grid_of(&j, s, nt);
        j.by_panel = by_panel_evens(&j.grid, nt);
    }
    /* depthwise y is not streamed on AMD without AVX-512 (Zen 2 and 3): on
     * Zen 3 (two threads, MobileNet-v2 at batch 32, y past 16 MiB, against
     * oneDNN in the same process) streamed stores ran 112x112x32 at
     * 0.37-0.43x, cached 0.78-0.87x; 56x56x144 0.79x -> 1.11x, 112x112x96
     * stride 2 0.87x -> 1.08x, 28x28x192 0.71x -> 0.86x. With AVX-512 its
     * x and y pass through the caches together, each once: y is streamed
     * where both are past half the L3, not y alone. Stored through the
     * caches, each line of y was first read from memory, and the stores
     * waiting for those lines held back the loads behind them (Zen 4, one
     * thread, 28x28x192 bf16 at batch 32, 19 MB in all: 3.1 -> 1.1 ms a
     * call; oneDNN 3.9) */
    const int64_t y_bytes = d->n * cp->p * cp->q * d->k * (int64_t)tsr_dtype_size(d->y_dtype);
    j.stream_y = !(dw && VL == 8 && ctx->cpu_amd) &&
                 vf_streams(y_bytes + (dw && VL == 16 ? xn * (int64_t)tsr_dtype_size(d->x_dtype) : 0));
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *st = &d->epilogue.steps[i];
        if (st->op != TSR_EPI_RESIDUAL) continue;
        const int es = (int)tsr_dtype_size(st->dtype);
        if (d->n * cp->p * cp->q * d->k * es > ((int64_t)1 << 20)) j.res = st->data, j.res_es = es;
    }
    j.fast_epi = fast_epilogue_of(&j);
    j.pw_fast = pointwise_fast_of(&j);
    j.row_tiles = !dw && !j.pw_fast && row_tiles_of(&j);
    const int64_t x_es = xf ? 4 : (int64_t)tsr_dtype_size(d->x_dtype);
    /* depthwise rows are not fetched ahead on AMD without AVX-512: four
     * instructions a line (a fifth of a 112x112x96 stride-2 layer's) for
     * no gain, its L3 and hardware prefetchers keeping up (Zen 3, two
     * threads, against oneDNN in the same process: batch 1 0.75-0.83x ->
     * 0.93x; batch 32, from memory, 56x56x144 stride 1 and 2 alike within
     * the noise). On Zen 4 (AVX-512, two threads, MobileNet-v2 at batch 32,
     * 2 runs alternated) they pay: 56x56x144 f32 32 -> 82 GFLOP/s, bf16 29
     * -> 50, stride 2 bf16 22 -> 48, 28x28x192 bf16 65 -> 130; 7x7x960
     * f32 157 -> 147, within this VM's noise (bf16, not fetched, moved as
     * much) */
    j.prefetch_x = xn * x_es > (4 << 20) &&
                   (dw ? !ctx->cpu_amd || VL == 16 : j.pointwise && d->c * x_es <= FETCH_PIXEL_BYTES);
    const nhwc_call call = {cp, s, &j, xf, buf, xn, dw, in_place, packed != NULL};
    /* One thread runs it without a region of its own (libgomp's if (false)
     * one costs ~0.3 us), unless the caller is inside one: the work's loops
     * and barriers would then bind to the caller's team, each of its threads
     * taking a share of its own call's work. */
    if (nt == 1 && !omp_in_parallel()) {
        nhwc_work(&call);
    } else {
#pragma omp parallel num_threads(nt)
        nhwc_work(&call);
    }
    tsr_scratch_put(buf);
    return TSR_OK;
}

static tsr_status conv_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    if (d->format == TSR_NHWC) return nhwc_run(ctx, cp, s);
    /* NCHW: x (and a residual) into NHWC scratch, y back afterwards */
    const size_t xe = tsr_dtype_size(d->x_dtype), ye = tsr_dtype_size(d->y_dtype);
    const int64_t xn = d->n * d->c * d->h * d->w, yn = d->n * d->k * cp->p * cp->q;
    int res = -1;
    for (int i = 0; i < d->epilogue.num_steps; i++)
        if (d->epilogue.steps[i].op == TSR_EPI_RESIDUAL) res = i;
    const size_t re = res >= 0 ? tsr_dtype_size(d->epilogue.steps[res].dtype) : 0;
    char *buf = malloc((size_t)xn * xe + (size_t)yn * (ye + re) + 64);
    if (!buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "conv2d.%s: no memory for the NHWC scratch", CONV_ARCH);
    tsr_conv2d_problem nh = *cp;
    nh.d.format = TSR_NHWC;
    nh.x = buf, nh.y = buf + (size_t)xn * xe;
    char *rs = buf + (size_t)xn * xe + (size_t)yn * ye;
    const int nt = tsr_threads_for(ctx, (double)(xn + yn), 1e5);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        reorder_act(cp->x, buf, xe, d->n, d->c, d->h * d->w, true);
        if (res >= 0) reorder_act(d->epilogue.steps[res].data, rs, re, d->n, d->k, cp->p * cp->q, true);
    }
    if (res >= 0) nh.d.epilogue.steps[res].data = rs;
    tsr_status st = nhwc_run(ctx, &nh, s);
    if (st == TSR_OK) {
#pragma omp parallel num_threads(nt) if (nt > 1)
        reorder_act(nh.y, cp->y, ye, d->n, d->k, cp->p * cp->q, false);
    }
    free(buf);
    return st;
}

/* Filters packed once (tsr_conv2d_pack_filter): the direct algorithm's
 * panels, exactly as it packs them per call (1x1 layers included: their
 * pointwise tiles beat the GEMM). Depthwise: a copy in HWIO, [r][s][c],
 * the layout its kernel reads (f32 in place; per call, an OHWI filter's
 * transposes cost 2 of the 9 us of a 14x14x576 stride-2 layer at batch 1). */
static void conv_pack_filter(tsr_context *ctx, const tsr_problem *p, tsr_packed_filter *h, void *payload) {
    const tsr_conv2d_desc *d = &p->u.conv.d;
    tsr_schedule s;
    memset(&s, 0, sizeof s);
    conv_default(p, ctx, &s);
    if (s.v[KNOB_ALGO] == ALGO_DEPTHWISE) { /* HWIO: read in place (f32) or copied as it lies, never transposed */
        h->format = TSR_FILTER_HWIO;
        return;
    }
    if (pads_channel(ctx, d)) { /* padded per call, as its copy of x is */
        h->format = TSR_FILTER_OHWI;
        return;
    }
    const bool bf = use_bf16(ctx, d);
    h->layout = bf ? TSR_PACKED_PAIR_PANELS : TSR_PACKED_PANELS, h->nr = NR;
    h->payload_bytes = d->groups * panels_of(d) * d->r * d->s * (d->c / d->groups) * NR * (bf ? 2 : 4);
    if (!payload) return;
    const int nt = tsr_threads_for(ctx, (double)h->payload_bytes, 1e6);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#ifdef CONV_BF16
        if (bf) pack_filter_bf16(d, p->u.conv.w, payload);
        else
#endif
            pack_filter(d, p->u.conv.w, payload);
    }
}

const tsr_kernel CONV_SYMBOL = {
    .name = CONV_NAME,
    .op = TSR_OP_CONV2D,
    .backend = TSR_BACKEND_CPU,
    .arch = CONV_ARCH,
    .supports = conv_supports,
    .cpu_features = CONV_FEATURES,
    .num_knobs = (int)(sizeof conv_knobs / sizeof conv_knobs[0]),
    .knobs = conv_knobs,
    .default_schedule = conv_default,
    .schedule_valid = conv_valid,
    .run = conv_run,
    .pack_filter = conv_pack_filter,
};
