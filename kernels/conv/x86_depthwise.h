/* Depthwise conv2d (groups == c == k) on x86, part of x86_conv.h (which
 * defines conv_job, MR, NV and the vector names first).
 *
 * Vectorised over channels (contiguous in NHWC): one vector of VL channels
 * by a tile of up to DW_TMAX output pixels along a row in registers. Each
 * channel is independent, so a wider channel block would only add
 * registers, not reuse; the tile's width is what amortises the filter and
 * the input. For the common filter (S == 3, dilation_w 1, stride_w 1 or 2)
 * the tile walks the input columns it covers and loads each once into the
 * up to three accumulators that use it (stride 1: T + 2 loads per filter
 * row instead of 3 T), so the FMA port, not the loads, sets the pace.
 * Taps in the padding are skipped per column, so the edges of a row need
 * no one-pixel calls: a 7-wide row is one tile. The epilogue runs per tile
 * in registers (a leading bias is where the sums start). bf16 x and filter
 * on a CPU with AVX512_BF16 take vdpbf16ps tiles that pair filter rows
 * (see dw_pair_tile); elsewhere f16/bf16 activations are widened as
 * loaded. The filter is packed per call as f32 [r][s][c] (an f32 HWIO
 * filter is that already). */

#include "../../arch/x86_avx2/transpose.h"
#include "../../arch/x86_avx2/prefetch.h"

/* Accumulators of a tile: 16 of the 32 zmm leave room for the three taps
 * and the loaded inputs; AVX2's 16 ymm take 8. */
#define DW_TMAX (VL == 16 ? 16 : 8)

/* Whether the depthwise kernel reads the caller's filter as it is: an f32
 * HWIO filter is [r][s][c], the packed layout. */
static bool depthwise_filter_in_place(const tsr_conv2d_desc *d) {
    return d->filter_format == TSR_FILTER_HWIO && d->w_dtype == TSR_F32;
}

/* Taps of a filter whose [c][r][s] transpose goes through registers
 * (pack_depthwise's stack buffers); more take the scalar loop. */
#define DW_PACK_RS 64

/* Depthwise filter as f32 [r][s][c]: every format holds c as k (one input
 * channel per group), OHWI and OIHW as [c][r][s], HWIO as [r][s][c]. A
 * block of VL channels of [c][r][s] is widened to f32 as it lies, then
 * turned by 8x8 transposes (a scalar loop cost a fifth of a 7x7x960 layer;
 * gathers, twice that on Zen 4). */
static void pack_depthwise(const tsr_conv2d_desc *d, const void *w, float *dst) {
    const int64_t C = d->c, RS = d->r * d->s;
    const bool hwio = d->filter_format == TSR_FILTER_HWIO;
    const int64_t blocks = (C + VL - 1) / VL;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t c0 = b * VL, n = C - c0 < VL ? C - c0 : VL;
        if (hwio) {
            for (int64_t t = 0; t < RS; t++) vf_store_n(dst + t * C + c0, vf_load_n_dtype(w, d->w_dtype, t * C + c0, (int)n), (int)n);
            continue;
        }
        if (RS > DW_PACK_RS) {
            for (int64_t c = 0; c < n; c++)
                for (int64_t t = 0; t < RS; t++) dst[t * C + c0 + c] = tsr_load_f(w, d->w_dtype, (c0 + c) * RS + t);
            continue;
        }
        /* in: [VL][RS] plus 8 for the transposes' reads past the last
         * channel (zeroed: their lanes are never stored, but nothing reads
         * uninitialised memory); out: [RS rounded up to 8][VL] */
        float in[VL * DW_PACK_RS + 8] __attribute__((aligned(64))), out[DW_PACK_RS * VL] __attribute__((aligned(64)));
        const int64_t len = n * RS, whole = len / VL * VL;
        for (int64_t i = 0; i < whole; i += VL) vf_store(in + i, vf_load_dtype(w, d->w_dtype, c0 * RS + i));
        if (len > whole) vf_store(in + whole, vf_load_n_dtype(w, d->w_dtype, c0 * RS + whole, (int)(len - whole)));
        for (int64_t i = len; i < VL * RS + 8; i++) in[i] = 0.0f;
        for (int64_t t0 = 0; t0 < RS; t0 += 8)
            for (int i0 = 0; i0 < VL; i0 += 8) tsr_transpose8x8(in + i0 * RS + t0, RS, 8, out + t0 * VL + i0, VL, 8);
        for (int64_t t = 0; t < RS; t++) vf_store_n(dst + t * C + c0, vf_load(out + t * VL), (int)n);
    }
}

/* --------------------------------------------------------------- depthwise */

/* The first n lanes (n in 1..VL) at p; whole vectors without a mask. */
static inline __attribute__((always_inline)) vf load_lanes(const float *p, int n) {
    return n == VL ? vf_load(p) : vf_load_n(p, n);
}

/* n (1..VL) activations from element e of x, as f32; t is j->x_dtype,
 * a constant where the caller instantiates per dtype. A ragged 16-bit
 * vector is a masked load on AVX-512 rather than a lane-by-lane
 * conversion. */
static inline __attribute__((always_inline)) vf dw_load_x(const conv_job *j, const tsr_dtype t, int64_t e, int n) {
    if (t == TSR_F32) return load_lanes(j->x + e, n);
    if (n == VL) return vf_load_dtype(j->x, t, e);
#if VL == 16
    const __m256i raw = _mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), (const uint16_t *)(const void *)j->x + e);
    return t == TSR_F16 ? _mm512_cvtph_ps(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
    return vf_load_n_dtype(j->x, t, e, n);
#endif
}

/* What a tile needs besides its position, fixed for the call. */
typedef struct dw_geo {
    int64_t C, H, W, R, S, sh, sw, dh, dw, pt, pl, P, Q;
    bool regs_epi_full, regs_epi_tail; /* dw_regs_epilogue */
} dw_geo;

/* Whether dw_epilogue_regs applies e to tiles of whole vectors (full) or of
 * a ragged one (tail), and their stores stay call-free: relu or no
 * activation, and for a tail f32 data and y (a ragged 16-bit vector
 * converts lane by lane). */
static bool dw_regs_epilogue(const tsr_epilogue *e, tsr_dtype y_dtype, bool full) {
    for (int s = 0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_ACTIVATION ? st->activation != TSR_ACT_RELU && st->activation != TSR_ACT_NONE
                                         : !full && st->dtype != TSR_F32)
            return false;
    }
    return full || y_dtype == TSR_F32;
}

/* The bias of a step at channel c0 (f32 data where lanes < VL). */
static inline __attribute__((always_inline)) vf dw_bias(const tsr_epilogue_step *st, int64_t c0, int lanes) {
    return lanes == VL ? vf_load_dtype(st->data, st->dtype, c0) : vf_load_n((const float *)st->data + c0, lanes);
}

/* ukr_epilogue from step `first` on the T accumulators of a tile (one
 * channel vector at c0, outputs C apart from element y0), step by step:
 * each step's test once per tile rather than per pixel, the bias loaded
 * once. relu is max(0, x), one instruction: maxps returns its second
 * operand where either is NaN, so NaN stays NaN as in vf_relu. */
static inline __attribute__((always_inline)) void dw_epilogue_regs(const tsr_epilogue *e, int first, vf acc[],
                                                                    const int T, int64_t c0, int64_t y0, int64_t C,
                                                                    int lanes) {
    for (int s = first; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_BIAS) {
            const vf b = dw_bias(st, c0, lanes);
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) acc[i] = vf_add(acc[i], b);
        } else if (st->op == TSR_EPI_RESIDUAL) {
            const vf scale = vf_set1(st->scale);
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) {
                const int64_t at = y0 + i * C;
                const vf r = lanes == VL ? vf_load_dtype(st->data, st->dtype, at) : vf_load_n((const float *)st->data + at, lanes);
                acc[i] = vf_fma(scale, r, acc[i]);
            }
        } else if (st->activation == TSR_ACT_RELU) {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) acc[i] = vf_max(vf_zero(), acc[i]);
        }
    }
}

/* The epilogue and the store of a tile's T accumulators (one channel
 * vector at c0, outputs C apart from element y0); steps before `first`
 * were applied already (in registers only). */
static inline __attribute__((always_inline)) void dw_store_tile(const conv_job *j, const dw_geo *g, vf acc[],
                                                                 const int T, int64_t c0, int64_t y0, const bool full,
                                                                 const int lanes, int first) {
    const int64_t C = g->C;
    const tsr_dtype yt = j->d->y_dtype;
    if (full ? g->regs_epi_full : g->regs_epi_tail) { /* call-free: the accumulators stay in registers */
        dw_epilogue_regs(j->epi, first, acc, T, c0, y0, C, lanes);
#pragma GCC unroll 16
        for (int i = 0; i < T; i++) {
            if (yt == TSR_F32 && lanes < VL) vf_store_n((float *)j->y + y0 + i * C, acc[i], lanes);
            else vf_put_dtype(j->y, yt, y0 + i * C, acc[i], j->stream_y);
        }
        return;
    }
    float spill[DW_TMAX][VL]; /* the general epilogue calls out: store the tile first */
#pragma GCC unroll 16
    for (int i = 0; i < T; i++) vf_store(spill[i], acc[i]);
    for (int i = 0; i < T; i++)
        vf_store_n_dtype(j->y, yt, y0 + i * C, ukr_epilogue(j->epi, vf_load(spill[i]), c0, false, 0, 0, y0 + i * C, lanes),
                         lanes);
}

/* T output pixels ow0 .. ow0 + T - 1 of row (n, oh), the nc (1..VL; VL
 * when full) channels at c0. SW is the stride when the tile takes the
 * column walk (S == 3, dilation_w 1, stride_w SW in 1..2), 0 for the
 * per-tap loop that serves any filter. xt: j->x_dtype (see dw_load_x). */
static inline __attribute__((always_inline)) void dw_tile(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh,
                                                           int64_t ow0, const int T, const int SW,
                                                           const tsr_dtype xt, int64_t c0, const int nc,
                                                           const bool full) {
    const int lanes = full ? VL : nc;
    const int64_t C = g->C, W = g->W, iw0 = ow0 * g->sw - g->pl;
    /* a leading bias step is where the sums start (one add less per pixel) */
    const bool regs = full ? g->regs_epi_full : g->regs_epi_tail;
    const bool bias0 = regs && j->epi->num_steps > 0 && j->epi->steps[0].op == TSR_EPI_BIAS;
    const vf start = bias0 ? dw_bias(&j->epi->steps[0], c0, lanes) : vf_zero();
    vf acc[DW_TMAX];
#pragma GCC unroll 16
    for (int i = 0; i < T; i++) acc[i] = start;
    for (int64_t r = 0; r < g->R; r++) {
        const int64_t ih = oh * g->sh - g->pt + r * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        const int64_t xrow = ((n * g->H + ih) * W + iw0) * C + c0; /* element of column iw0 (maybe padding) */
        const float *wr = j->wp + r * g->S * C + c0;
        if (SW) {
            /* input column u of the tile feeds output i through tap s where
             * u = i * SW + s; columns outside [0, W) are padding */
            const int span = (T - 1) * SW + 3;
            const int64_t u_lo = -iw0 > 0 ? -iw0 : 0, u_hi = W - iw0;
            const vf w0 = load_lanes(wr, lanes), w1 = load_lanes(wr + C, lanes), w2 = load_lanes(wr + 2 * C, lanes);
#pragma GCC unroll 48
            for (int u = 0; u < span; u++) {
                if (u < u_lo || u >= u_hi) continue;
                const vf xv = dw_load_x(j, xt, xrow + u * C, lanes);
                if (u % SW == 0 && u / SW < T) acc[u / SW] = vf_fma(xv, w0, acc[u / SW]);
                if (u >= 1 && (u - 1) % SW == 0 && (u - 1) / SW < T) acc[(u - 1) / SW] = vf_fma(xv, w1, acc[(u - 1) / SW]);
                if (u >= 2 && (u - 2) % SW == 0 && (u - 2) / SW < T) acc[(u - 2) / SW] = vf_fma(xv, w2, acc[(u - 2) / SW]);
            }
            continue;
        }
        for (int64_t s = 0; s < g->S; s++) {
            const vf ws = load_lanes(wr + s * C, lanes);
            const int64_t col0 = s * g->dw;
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) {
                const int64_t iw = iw0 + i * g->sw + col0;
                if (iw < 0 || iw >= W) continue;
                acc[i] = vf_fma(dw_load_x(j, xt, xrow + (i * g->sw + col0) * C, lanes), ws, acc[i]);
            }
        }
    }
    dw_store_tile(j, g, acc, T, c0, ((n * g->P + oh) * g->Q + ow0) * C + c0, full, lanes, bias0);
}

/* Row (n, oh), channels c0 .. c0 + nc - 1, in tiles: DW_TMAX wide, then
 * one of 8 and one of the rest (1..7), so that a row of 7, 14, 28, 56 or
 * 112 takes at most three tiles. */
static inline __attribute__((always_inline)) void dw_row_tiles(const conv_job *j, const dw_geo *g, int64_t n,
                                                                int64_t oh, const int SW, const tsr_dtype xt,
                                                                int64_t c0) {
    int64_t ow = 0;
    const int64_t Q = g->Q;
    for (; ow + DW_TMAX <= Q; ow += DW_TMAX) dw_tile(j, g, n, oh, ow, DW_TMAX, SW, xt, c0, VL, true);
#if DW_TMAX > 8
    if (Q - ow >= 8) dw_tile(j, g, n, oh, ow, 8, SW, xt, c0, VL, true), ow += 8;
#endif
    switch (Q - ow) {
    case 7: dw_tile(j, g, n, oh, ow, 7, SW, xt, c0, VL, true); break;
    case 6: dw_tile(j, g, n, oh, ow, 6, SW, xt, c0, VL, true); break;
    case 5: dw_tile(j, g, n, oh, ow, 5, SW, xt, c0, VL, true); break;
    case 4: dw_tile(j, g, n, oh, ow, 4, SW, xt, c0, VL, true); break;
    case 3: dw_tile(j, g, n, oh, ow, 3, SW, xt, c0, VL, true); break;
    case 2: dw_tile(j, g, n, oh, ow, 2, SW, xt, c0, VL, true); break;
    case 1: dw_tile(j, g, n, oh, ow, 1, SW, xt, c0, VL, true); break;
    default: break;
    }
}

/* The instantiations: the column walk for stride 1 and 2 on f32 and bf16
 * x; the per-tap loop (MR-wide tiles) for other filters, f16 x and the
 * ragged last channel vector. */
static void dw_row_f32_s1(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_row_tiles(j, g, n, oh, 1, TSR_F32, c0);
}
static void dw_row_f32_s2(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_row_tiles(j, g, n, oh, 2, TSR_F32, c0);
}
static void dw_row_bf16_s1(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_row_tiles(j, g, n, oh, 1, TSR_BF16, c0);
}
static void dw_row_bf16_s2(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_row_tiles(j, g, n, oh, 2, TSR_BF16, c0);
}

static void dw_row_any(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0, int64_t nc) {
    int64_t ow = 0;
    if (nc == VL) {
        for (; ow + MR <= g->Q; ow += MR) dw_tile(j, g, n, oh, ow, MR, 0, j->x_dtype, c0, VL, true);
        for (; ow < g->Q; ow++) dw_tile(j, g, n, oh, ow, 1, 0, j->x_dtype, c0, VL, true);
        return;
    }
    for (; ow + MR <= g->Q; ow += MR) dw_tile(j, g, n, oh, ow, MR, 0, j->x_dtype, c0, (int)nc, false);
    for (; ow < g->Q; ow++) dw_tile(j, g, n, oh, ow, 1, 0, j->x_dtype, c0, (int)nc, false);
}

#ifdef CONV_BF16
/* ------------------------------------------- bf16 pairs of filter rows */

/* bf16 x and filter with AVX512_BF16, a 3x3 filter (dilation_w 1, stride_w
 * 1 or 2): vdpbf16ps multiplies a pair of bf16 per f32 lane, so filter rows
 * 0 and 1 share one instruction (row 2 pairs with a zero): 6 instructions
 * per output vector instead of 9 FMAs, and no conversion of x at all. The
 * pairs of 32 channels are vpunpck{l,h}wd of two rows' 512-bit loads: two
 * vectors whose channels come in the unpack order (lanes 0-3, 8-11, 16-19,
 * 24-27, then 4-7, ...); the filter pairs are built by the same unpacks,
 * and one permute per vector brings the sums back to channel order. */
static bool depthwise_dpbf16(const tsr_context *ctx, const tsr_conv2d_desc *d) {
    return (ctx->cpu_features & TSR_CPU_AVX512BF16) && d->x_dtype == TSR_BF16 && d->w_dtype == TSR_BF16 && d->r == 3 &&
           d->s == 3 && d->dilation_w == 1 && (d->stride_w == 1 || d->stride_w == 2);
}

/* Pixels per tile: 2 T accumulators and the 12 filter pairs in 32 zmm. */
#define DW_PAIR_T 8

/* The 12 filter pairs of 32 channels at c0: [row pair][s][low/high half]. */
typedef struct dw_pairs {
    __m512bh w[2][3][2];
} dw_pairs;

static inline __attribute__((always_inline)) void dw_pairs_of(const conv_job *j, int64_t C, int64_t c0, dw_pairs *p) {
    for (int s = 0; s < 3; s++) {
        __m512i rows[3]; /* the packed f32 taps are bf16 values: exact in bf16 again */
        for (int r = 0; r < 3; r++) {
            const float *t = j->wp + (r * 3 + s) * C + c0;
            rows[r] = (__m512i)_mm512_cvtne2ps_pbh(vf_load(t + VL), vf_load(t));
        }
        p->w[0][s][0] = (__m512bh)_mm512_unpacklo_epi16(rows[0], rows[1]);
        p->w[0][s][1] = (__m512bh)_mm512_unpackhi_epi16(rows[0], rows[1]);
        p->w[1][s][0] = (__m512bh)_mm512_unpacklo_epi16(rows[2], _mm512_setzero_si512());
        p->w[1][s][1] = (__m512bh)_mm512_unpackhi_epi16(rows[2], _mm512_setzero_si512());
    }
}

/* T output pixels from ow0 of row (n, oh), the 32 channels at c0, stride
 * SW: the column walk of dw_tile over pairs of rows. */
static inline __attribute__((always_inline)) void dw_pair_tile(const conv_job *j, const dw_geo *g, const dw_pairs *wp,
                                                                int64_t n, int64_t oh, int64_t ow0, const int T,
                                                                const int SW, int64_t c0) {
    const int64_t C = g->C, W = g->W, iw0 = ow0 * SW - g->pl;
    /* each filter row's input row; a row in the padding reads zeros, in place */
    const uint16_t *row[3];
    int64_t step[3];
    for (int r = 0; r < 3; r++) {
        const int64_t ih = oh * g->sh - g->pt + r * g->dh;
        const bool in = ih >= 0 && ih < g->H;
        row[r] = in ? (const uint16_t *)(const void *)j->x + ((n * g->H + ih) * W + iw0) * C + c0
                    : (const uint16_t *)(const void *)j->zero;
        step[r] = in ? C : 0;
    }
    vf lo[DW_PAIR_T], hi[DW_PAIR_T];
#pragma GCC unroll 8
    for (int i = 0; i < T; i++) lo[i] = hi[i] = vf_zero();
    const int span = (T - 1) * SW + 3;
    const int64_t u_lo = -iw0 > 0 ? -iw0 : 0, u_hi = W - iw0;
#pragma GCC unroll 24
    for (int u = 0; u < span; u++) {
        if (u < u_lo || u >= u_hi) continue;
        const __m512i x0 = _mm512_loadu_si512(row[0] + u * step[0]), x1 = _mm512_loadu_si512(row[1] + u * step[1]);
        const __m512i x2 = _mm512_loadu_si512(row[2] + u * step[2]), z = _mm512_setzero_si512();
        const __m512bh p01l = (__m512bh)_mm512_unpacklo_epi16(x0, x1), p01h = (__m512bh)_mm512_unpackhi_epi16(x0, x1);
        const __m512bh p2l = (__m512bh)_mm512_unpacklo_epi16(x2, z), p2h = (__m512bh)_mm512_unpackhi_epi16(x2, z);
#pragma GCC unroll 3
        for (int s = 0; s < 3; s++) {
            if (u < s || (u - s) % SW || (u - s) / SW >= T) continue;
            const int i = (u - s) / SW;
            lo[i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(lo[i], p01l, wp->w[0][s][0]), p2l, wp->w[1][s][0]);
            hi[i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(hi[i], p01h, wp->w[0][s][1]), p2h, wp->w[1][s][1]);
        }
    }
    /* channel order: 0-15 are lanes 0-3 of lo, 0-3 of hi, 4-7 of lo, ... */
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    vf a[DW_PAIR_T], b[DW_PAIR_T];
#pragma GCC unroll 8
    for (int i = 0; i < T; i++) {
        a[i] = _mm512_permutex2var_ps(lo[i], first, hi[i]);
        b[i] = _mm512_permutex2var_ps(lo[i], second, hi[i]);
    }
    const int64_t y0 = ((n * g->P + oh) * g->Q + ow0) * C + c0;
    if (j->d->y_dtype == TSR_BF16 && g->regs_epi_full) {
        /* vcvtne2ps2bf16: 32 outputs rounded to nearest even in one
         * instruction (vf_store_dtype takes seven per 16); it flushes
         * denormals, which bf16 activations do not carry */
        dw_epilogue_regs(j->epi, 0, a, T, c0, y0, C, VL);
        dw_epilogue_regs(j->epi, 0, b, T, c0 + VL, y0 + VL, C, VL);
#pragma GCC unroll 8
        for (int i = 0; i < T; i++) {
            uint16_t *p = (uint16_t *)j->y + y0 + i * C;
            const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(b[i], a[i]);
            if (j->stream_y && !((uintptr_t)p % 64)) _mm512_stream_si512((void *)p, v);
            else _mm512_storeu_si512(p, v);
        }
        return;
    }
    dw_store_tile(j, g, a, T, c0, y0, true, VL, 0);
    dw_store_tile(j, g, b, T, c0 + VL, y0 + VL, true, VL, 0);
}

static inline __attribute__((always_inline)) void dw_pair_row(const conv_job *j, const dw_geo *g, int64_t n,
                                                               int64_t oh, int64_t c0, const int SW) {
    dw_pairs wp;
    dw_pairs_of(j, g->C, c0, &wp);
    int64_t ow = 0;
    for (; ow + DW_PAIR_T <= g->Q; ow += DW_PAIR_T) dw_pair_tile(j, g, &wp, n, oh, ow, DW_PAIR_T, SW, c0);
    switch (g->Q - ow) {
    case 7: dw_pair_tile(j, g, &wp, n, oh, ow, 7, SW, c0); break;
    case 6: dw_pair_tile(j, g, &wp, n, oh, ow, 6, SW, c0); break;
    case 5: dw_pair_tile(j, g, &wp, n, oh, ow, 5, SW, c0); break;
    case 4: dw_pair_tile(j, g, &wp, n, oh, ow, 4, SW, c0); break;
    case 3: dw_pair_tile(j, g, &wp, n, oh, ow, 3, SW, c0); break;
    case 2: dw_pair_tile(j, g, &wp, n, oh, ow, 2, SW, c0); break;
    case 1: dw_pair_tile(j, g, &wp, n, oh, ow, 1, SW, c0); break;
    default: break;
    }
}

static void dw_pair_row_s1(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_pair_row(j, g, n, oh, c0, 1);
}
static void dw_pair_row_s2(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0) {
    dw_pair_row(j, g, n, oh, c0, 2);
}
#else
static bool depthwise_dpbf16(const tsr_context *ctx, const tsr_conv2d_desc *d) {
    (void)ctx, (void)d;
    return false;
}
#endif

/* Work items: (image, NR channels, block of rows). Rows run inside an item
 * so that the input rows shared by consecutive output rows are still in
 * L1; NR channels (two vectors) so that a bf16 pixel's 64-byte line is used
 * whole while it is there. */
static void depthwise_run(const conv_job *j) {
    const tsr_conv2d_desc *d = j->d;
    const dw_geo g = {.C = d->c, .H = d->h, .W = d->w, .R = d->r, .S = d->s, .sh = d->stride_h, .sw = d->stride_w,
                      .dh = d->dilation_h, .dw = d->dilation_w, .pt = d->pad_top, .pl = d->pad_left, .P = j->P,
                      .Q = j->Q, .regs_epi_full = dw_regs_epilogue(j->epi, d->y_dtype, true),
                      .regs_epi_tail = dw_regs_epilogue(j->epi, d->y_dtype, false)};
    const bool walk = d->s == 3 && d->dilation_w == 1 && (d->stride_w == 1 || d->stride_w == 2);
    void (*row)(const conv_job *, const dw_geo *, int64_t, int64_t, int64_t) = NULL;
    if (walk && j->x_dtype == TSR_F32) row = d->stride_w == 1 ? dw_row_f32_s1 : dw_row_f32_s2;
    if (walk && j->x_dtype == TSR_BF16) row = d->stride_w == 1 ? dw_row_bf16_s1 : dw_row_bf16_s2;
    void (*pair)(const conv_job *, const dw_geo *, int64_t, int64_t, int64_t) = NULL;
#ifdef CONV_BF16
    _Static_assert(NR == 2 * VL, "the pair tiles are two vectors of channels");
    if (j->bf) pair = d->stride_w == 1 ? dw_pair_row_s1 : dw_pair_row_s2;
#endif
    const int64_t cvecs = (d->c + VL - 1) / VL, cblocks = (cvecs + NV - 1) / NV;
    /* An item is one output row of one channel block, the channel blocks
     * innermost: a thread's contiguous items take each input row whole
     * while it is in L1/L2. With the rows innermost, every channel block
     * walked the whole image again, lines 4*C bytes apart: out of cache
     * (batch 32) that ran 4-5x slower per image than batch 1. */
    const size_t xes = tsr_dtype_size(j->x_dtype);
#pragma omp for schedule(static) nowait
    for (int64_t item = 0; item < d->n * j->P * cblocks; item++) {
        const int64_t n = item / (j->P * cblocks), cb = item % cblocks, row0 = item / cblocks % j->P;
        /* The input rows the next output row adds, this block's channels:
         * out of L2 the loads would otherwise wait (batch 32, 14x14x384 on
         * one core: 1.44 -> 1.13 ms) */
        for (int64_t ih = (row0 + 1) * d->stride_h - d->pad_top + (d->r - 1) * d->dilation_h, i = 0;
             j->prefetch_x && i < d->stride_h; i++, ih--)
            if (ih >= 0 && ih < d->h) {
                const char *xr = (const char *)j->x + (((n * d->h + ih) * d->w) * d->c + cb * NR) * xes;
                for (int64_t w = 0; w < d->w; w++)
                    for (size_t b = 0; b < NR * xes; b += 64) tsr_prefetch_l1(xr + w * d->c * xes + b);
            }
        for (int64_t oh = row0; oh < row0 + 1; oh++) {
            if (pair && (cb + 1) * NR <= d->c) {
                pair(j, &g, n, oh, cb * NR);
                continue;
            }
            for (int64_t c0 = cb * NR; c0 < (cb + 1) * NR && c0 < d->c; c0 += VL) {
                const int64_t nc = d->c - c0 < VL ? d->c - c0 : VL;
                if (row && nc == VL) row(j, &g, n, oh, c0);
                else dw_row_any(j, &g, n, oh, c0, nc);
            }
        }
    }
    /* streamed stores are weakly ordered: done before the region's barrier */
    if (j->stream_y) _mm_sfence();
#pragma omp barrier
}
