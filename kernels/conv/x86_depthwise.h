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
 * no one-pixel calls: a 7-wide row is one tile. Bias and relu run per tile
 * in registers (a leading bias is where the sums start); other epilogues
 * store through dw_store_general. bf16 x and filter on a CPU with
 * AVX512_BF16 take a vdpbf16ps walk along each row that pairs filter rows
 * (see dw_pair_row); elsewhere f16/bf16 activations are widened as loaded.
 * The filter is packed per call, by each thread for the channels it takes:
 * as f32 [r][s][c] (an f32 HWIO filter is that already), or for the pair
 * walk as its bf16 pairs (dw_pairs_pack) and f32 for the channels past the
 * last whole 32. */

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

/* Depthwise filter as f32 [r][s][c]: every format holds c as k (one input
 * channel per group), OHWI and OIHW as [c][r][s], HWIO as [r][s][c]. The
 * [c][r][s] filter is turned by 8x8 transposes of 8 channels by 8 taps
 * straight from the caller's filter into dst (the last block of taps
 * storing the taps it has); f16/bf16 blocks are widened on the stack
 * first, and the block that would read past the filter's end is copied
 * there. Through a copy of each channel vector and its transposes into
 * stack buffers, packing took 33 K instructions of a 7x7x960 call's 230 K
 * (one thread; 14 K this way). A scalar loop cost a fifth of such a layer;
 * gathers, twice that on Zen 4. Channels c_lo (a multiple of VL) to c_hi. */
static void pack_depthwise(const tsr_conv2d_desc *d, const void *w, float *dst, int64_t c_lo, int64_t c_hi) {
    const int64_t C = d->c, RS = d->r * d->s;
    const bool f32 = d->w_dtype == TSR_F32;
    if (d->filter_format == TSR_FILTER_HWIO) {
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += VL) {
            const int n = C - c0 < VL ? (int)(C - c0) : VL;
            for (int64_t t = 0; t < RS; t++) vf_store_n(dst + t * C + c0, vf_load_n_dtype(w, d->w_dtype, t * C + c0, n), n);
        }
        return;
    }
    const int64_t c_end = c_hi < C ? c_hi : C;
    int64_t c0 = c_lo;
    /* blocks of 8 f32 channels whose rows of 8 taps stay in the filter: the
     * counts constant (a test per row and column otherwise) */
    for (; f32 && c0 + 8 <= c_end && (c0 + 8 < C || RS % 8 == 0); c0 += 8) {
        const float *src = (const float *)w + c0 * RS;
        int64_t t0 = 0;
        for (; t0 + 8 <= RS; t0 += 8) tsr_transpose8x8(src + t0, RS, 8, dst + t0 * C + c0, C, 8);
        if (RS - t0 == 1) tsr_transpose8x8_cols(src + t0, RS, 8, dst + t0 * C + c0, C, 8, 1); /* 9, 25, 49 taps */
        else if (t0 < RS) tsr_transpose8x8_cols(src + t0, RS, 8, dst + t0 * C + c0, C, 8, (int)(RS - t0));
    }
    /* the rest (f16/bf16, the filter's last channels): widened into a block on the stack, kept in the filter */
    for (; c0 < c_end; c0 += 8) {
        const int rows = c_end - c0 < 8 ? (int)(c_end - c0) : 8;
        for (int64_t t0 = 0; t0 < RS; t0 += 8) {
            const int cols = RS - t0 < 8 ? (int)(RS - t0) : 8;
            float blk[64] __attribute__((aligned(32)));
            for (int i = 0; i < rows; i++) {
                const int64_t e = (c0 + i) * RS + t0;
                if (c0 + i + 1 < C || cols == 8)
                    _mm256_store_ps(blk + 8 * i, f32 ? _mm256_loadu_ps((const float *)w + e) : tsr_widen8(w, d->w_dtype, e));
                else
                    for (int q = 0; q < 8; q++) blk[8 * i + q] = q < cols ? tsr_load_f(w, d->w_dtype, e + q) : 0.0f;
            }
            tsr_transpose8x8_cols(blk, 8, rows, dst + t0 * C + c0, C, rows, cols);
        }
    }
}

/* --------------------------------------------------------------- depthwise */

/* The first n lanes (n in 1..VL) at p; whole vectors without a mask. */
static inline __attribute__((always_inline)) vf load_lanes(const float *p, int n) {
    return n == VL ? vf_load(p) : vf_load_n(p, n);
}

/* n (1..VL) activations at p (in x), as f32; t is j->x_dtype, a
 * constant where the caller instantiates per dtype. A ragged 16-bit vector
 * is a masked load on AVX-512 rather than a lane-by-lane conversion. */
static inline __attribute__((always_inline)) vf dw_load_xp(const char *p, const tsr_dtype t, int n) {
    if (t == TSR_F32) return load_lanes((const float *)(const void *)p, n);
    if (n == VL) return vf_load_dtype(p, t, 0);
#if VL == 16
    const __m256i raw = _mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), p);
    return t == TSR_F16 ? _mm512_cvtph_ps(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
    return vf_load_n_dtype(p, t, 0, n);
#endif
}

/* Bytes of an x element (f32, f16 or bf16), known at compile time where t
 * is: tsr_dtype_size is a call, around which every accumulator would be
 * spilled. */
static inline __attribute__((always_inline)) int64_t dw_x_size(const tsr_dtype t) { return t == TSR_F32 ? 4 : 2; }

/* dw_load_xp at element e of x. */
static inline __attribute__((always_inline)) vf dw_load_x(const conv_job *j, const tsr_dtype t, int64_t e, int n) {
    return dw_load_xp((const char *)j->x + e * dw_x_size(t), t, n);
}

/* Columns at each end of a column walk's tile that may be padding. */
#define DW_EDGE 1

/* What a tile needs besides its position, fixed for the call. */
typedef struct dw_geo {
    int64_t C, H, W, R, S, sh, sw, dh, dw, pt, pl, P, Q;
    bool regs_epi_full, regs_epi_tail; /* dw_regs_epilogue */
    bool y_f32;
    const void *pairs; /* bf16 filter pairs (dw_pairs_pack), or NULL */
    bool bias0;      /* whole vectors: a leading bias step is where the sums start */
    int8_t walk_epi; /* whole vectors, after bias0: DW_EPI_NONE, DW_EPI_RELU, or DW_EPI_STEPS */
} dw_geo;

/* What a column walk's tile does to its sums after a leading bias:
 * nothing, relu, or the steps one by one (dw_store_tile). */
enum { DW_EPI_NONE, DW_EPI_RELU, DW_EPI_STEPS };

/* Whether dw_epilogue_regs applies e to tiles of whole vectors (full) or of
 * a ragged one (tail): bias steps (f32 data for a tail) and relu or no
 * activation. A residual or another activation take dw_store_general:
 * kept inline for each of a row's tile widths, their dtype branches made
 * the kernel four times the size. */
static bool dw_regs_epilogue(const tsr_epilogue *e, bool full) {
    for (int s = 0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_RESIDUAL ||
            (st->op == TSR_EPI_ACTIVATION ? st->activation != TSR_ACT_RELU && st->activation != TSR_ACT_NONE
                                          : !full && st->dtype != TSR_F32))
            return false;
    }
    return true;
}

/* The walk's epilogue kind (see dw_geo): the steps after a leading bias,
 * told apart once per call rather than per tile. */
static int8_t dw_walk_epi(const tsr_epilogue *e, bool bias0) {
    int relu = 0;
    for (int s = bias0; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op != TSR_EPI_ACTIVATION || (st->activation != TSR_ACT_RELU && st->activation != TSR_ACT_NONE))
            return DW_EPI_STEPS;
        relu |= st->activation == TSR_ACT_RELU;
    }
    return relu ? DW_EPI_RELU : DW_EPI_NONE;
}

/* Whether a tile of whole vectors (full) or of a ragged one keeps its sums
 * in registers through the epilogue and the store. */
static inline bool dw_regs(const dw_geo *g, bool full) { return full ? g->regs_epi_full : g->regs_epi_tail; }

/* The bias of a step at channel c0 (f32 data where lanes < VL). */
static inline __attribute__((always_inline)) vf dw_bias(const tsr_epilogue_step *st, int64_t c0, int lanes) {
    return lanes == VL ? vf_load_dtype(st->data, st->dtype, c0) : vf_load_n((const float *)st->data + c0, lanes);
}

/* The bias and relu steps from step `first` on the T accumulators of a
 * tile (one channel vector at c0), step by step: each step's test once per
 * tile rather than per pixel, the bias loaded once. relu is max(0, x), one
 * instruction: maxps returns its second operand where either is NaN, so
 * NaN stays NaN as in vf_relu. */
static inline __attribute__((always_inline)) void dw_epilogue_regs(const tsr_epilogue *e, int first, vf acc[],
                                                                    const int T, int64_t c0, int lanes) {
    for (int s = first; s < e->num_steps; s++) {
        const tsr_epilogue_step *st = &e->steps[s];
        if (st->op == TSR_EPI_BIAS) {
            const vf b = dw_bias(st, c0, lanes);
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) acc[i] = vf_add(acc[i], b);
        } else if (st->op == TSR_EPI_ACTIVATION && st->activation == TSR_ACT_RELU) {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) acc[i] = vf_max(vf_zero(), acc[i]);
        }
    }
}

/* The whole epilogue and the store of T sums spilled to acc (outputs C
 * apart from element y0, channels from c0). */
static __attribute__((noinline)) void dw_store_general(const conv_job *j, int64_t C, const float (*acc)[VL], int T,
                                                       int64_t c0, int64_t y0, int lanes) {
    for (int i = 0; i < T; i++)
        vf_store_n_dtype(j->y, j->d->y_dtype, y0 + i * C,
                         ukr_epilogue(j->epi, vf_load(acc[i]), c0, false, 0, 0, y0 + i * C, lanes), lanes);
}

/* The epilogue and the store of a tile's T accumulators (one channel
 * vector at c0, outputs C apart from element y0); steps before `first`
 * were applied already (in registers only). */
static inline __attribute__((always_inline)) void dw_store_tile(const conv_job *j, const dw_geo *g, vf acc[],
                                                                 const int T, int64_t c0, int64_t y0, const bool full,
                                                                 const int lanes, int first) {
    const int64_t C = g->C;
    if (dw_regs(g, full)) { /* the accumulators stay in registers */
        dw_epilogue_regs(j->epi, first, acc, T, c0, lanes);
        if (!g->y_f32) { /* f16/bf16 y: rounded in registers (bf16 through dw_store_general took a third of the time) */
            const tsr_dtype yt = j->d->y_dtype;
#pragma GCC unroll 16
            for (int i = 0; i < T; i++)
                if (lanes < VL) vf_store_n_dtype(j->y, yt, y0 + i * C, acc[i], lanes);
                else vf_put_dtype(j->y, yt, y0 + i * C, acc[i], j->stream_y);
            return;
        }
        float *y = (float *)j->y + y0;
        if (lanes < VL) {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) vf_store_n(y + i * C, acc[i], lanes);
        } else if (j->stream_y) {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) vf_put_dtype(y, TSR_F32, i * C, acc[i], true);
        } else {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) vf_store(y + i * C, acc[i]);
        }
        return;
    }
    float spill[DW_TMAX][VL] __attribute__((aligned(64)));
#pragma GCC unroll 16
    for (int i = 0; i < T; i++) vf_store(spill[i], acc[i]);
    dw_store_general(j, C, (const float (*)[VL])spill, T, c0, y0, lanes);
}

/* Where the column walk's tiles at pixel (n, oh, ow0) read and write,
 * the same for each channel vector of a span: elements at channel 0 of x
 * (the first filter row whose input row is in the image, column iw0), of
 * the packed filter (that row's first tap) and of y; how many filter rows
 * are in the image; the tile's columns that are, [u_lo, u_hi). Rows in
 * the padding are left out once per output row (dw_span_row) instead of
 * tested per tile; a tile's place is the row's shifted (dw_span_at_ow). */
typedef struct dw_span_at {
    int64_t x0, w0, y0, rows, u_lo, u_hi;
} dw_span_at;

/* Output row (n, oh) at ow0 = 0. */
static inline dw_span_at dw_span_row(const dw_geo *g, int64_t n, int64_t oh) {
    const int64_t ih0 = oh * g->sh - g->pt;
    const int64_t r_lo = ih0 < 0 ? (-ih0 + g->dh - 1) / g->dh : 0;
    int64_t r_hi = g->H - ih0 <= 0 ? 0 : (g->H - ih0 + g->dh - 1) / g->dh;
    r_hi = r_hi < g->R ? r_hi : g->R;
    return (dw_span_at){.x0 = ((n * g->H + ih0 + r_lo * g->dh) * g->W - g->pl) * g->C,
                        .w0 = r_lo * g->S * g->C,
                        .y0 = (n * g->P + oh) * g->Q * g->C,
                        .rows = r_hi > r_lo ? r_hi - r_lo : 0,
                        .u_lo = g->pl,
                        .u_hi = g->W + g->pl};
}

/* The row's place `row` shifted to output column ow0. */
static inline dw_span_at dw_span_at_ow(const dw_geo *g, const dw_span_at *row, int64_t ow0) {
    const int64_t du = ow0 * g->sw;
    dw_span_at at = *row;
    at.x0 += du * g->C;
    at.y0 += ow0 * g->C;
    at.u_lo = row->u_lo > du ? row->u_lo - du : 0;
    at.u_hi -= du;
    return at;
}

/* f32 x of column k (0-3) of a run of four from xp, s bytes apart (s3 =
 * 3 s): loaded, or folded into an FMA with w into acc, by the load's own
 * addressing, (xp), (xp,s), (xp,s,2), (xp,s3). Written in C, GCC turned
 * the four addresses into a chain of one add per column (16 adds per
 * filter row of a stride-2 tile of 8, beside 24 FMAs). x is only read
 * while a convolution runs, so the statements name no memory operand. */
static inline __attribute__((always_inline)) vf dw_load_x4(const char *xp, int64_t s, int64_t s3, const int k) {
    vf v;
    if (k == 0) __asm__("vmovups (%1), %0" : "=v"(v) : "r"(xp));
    else if (k == 1) __asm__("vmovups (%1,%2,1), %0" : "=v"(v) : "r"(xp), "r"(s));
    else if (k == 2) __asm__("vmovups (%1,%2,2), %0" : "=v"(v) : "r"(xp), "r"(s));
    else __asm__("vmovups (%1,%2,1), %0" : "=v"(v) : "r"(xp), "r"(s3));
    return v;
}

static inline __attribute__((always_inline)) vf dw_fma_x(vf acc, vf w, const char *xp, int64_t s, int64_t s3,
                                                         const int k) {
    if (k == 0) __asm__("vfmadd231ps (%2), %1, %0" : "+v"(acc) : "v"(w), "r"(xp));
    else if (k == 1) __asm__("vfmadd231ps (%2,%3,1), %1, %0" : "+v"(acc) : "v"(w), "r"(xp), "r"(s));
    else if (k == 2) __asm__("vfmadd231ps (%2,%3,2), %1, %0" : "+v"(acc) : "v"(w), "r"(xp), "r"(s));
    else __asm__("vfmadd231ps (%2,%3,1), %1, %0" : "+v"(acc) : "v"(w), "r"(xp), "r"(s3));
    return acc;
}

/* A leading bias step (dw_geo.bias0), where the walks' sums start: f32
 * data loaded as is (f), another dtype converted (p), or neither. */
typedef struct dw_lead_bias {
    const float *f;
    const void *p;
    tsr_dtype t;
} dw_lead_bias;

static inline dw_lead_bias dw_lead_bias_of(const conv_job *j, const dw_geo *g) {
    const tsr_epilogue_step *b = g->bias0 ? &j->epi->steps[0] : NULL;
    return (dw_lead_bias){.f = b && b->dtype == TSR_F32 ? (const float *)b->data : NULL,
                          .p = b && b->dtype != TSR_F32 ? b->data : NULL, .t = b ? b->dtype : TSR_F32};
}

/* The lead bias of the VL channels at c0 (zeros where there is none). */
static inline __attribute__((always_inline)) vf dw_lead_bias_at(const dw_lead_bias *b, int64_t c0) {
    return b->f ? vf_load(b->f + c0) : b->p ? vf_load_dtype(b->p, b->t, c0) : vf_zero();
}

/* What the column walk's tiles of a span share, read once per span into
 * locals: read through j and g per tile, each was reloaded after the
 * stores to y (which may alias them), 40 instructions a tile at 7x7x960. */
typedef struct dw_walk_at {
    int64_t C, xstep, rstep;
    const char *zero;    /* a vector of zeros: an edge column in the padding */
    dw_lead_bias bias;
    float *y_fast; /* f32 y stored from registers (relu or nothing after the bias), or NULL */
    bool relu;
} dw_walk_at;

/* The column walk: T output pixels at `at` of the whole channel vector
 * at c0, for a filter of 3 columns, dilation_w 1, stride_w SW (1 or 2).
 * Input column u of the tile feeds output i through tap s where u = i *
 * SW + s; each column is loaded once into the up to three accumulators
 * that use it (stride 1: T + 2 loads per filter row instead of 3 T), so
 * the FMA port, not the loads, sets the pace. Only a tile's first and last
 * columns can be padding (depthwise_run keeps pads to one column): where
 * `edges`, those two are read through pointers of their own that a padded
 * column points at zeros (and does not step), for one FMA each on zeros
 * (per filter row: two adds where testing the columns took twelve
 * instructions: 7x7x960, one thread, 197 K instructions a call -> 164 K
 * with the span's values in locals, dw_walk_at).
 * x is read through a pointer stepped four pixels per four columns (the
 * three between are it plus one, two or three strides in registers), each
 * column loaded once into a register: with an index u * C GCC kept the
 * multiples of C on the stack and in vector registers (three more
 * instructions and two more loads per column, 1.5x the time at
 * 28x28x192), and with the load folded into the FMAs of a column that
 * feeds two or three, as many loads; f32 columns are loaded (or folded
 * into the FMA of a column that feeds one, stride 2's odd ones) by
 * dw_load_x4 and dw_fma_x, whose addressing GCC cannot turn into a chain
 * of adds (7x7x960 164 K -> 156 K instructions a call, 14x14x576 stride 2
 * 112 K -> 99 K, 112x112x96 stride 2 1.42 M -> 1.24 M).
 *
 * What surrounds the FMAs counts as much: on AVX2 the instructions, not
 * the FMA port, set the pace. A tile that found its filter rows, x and y
 * by multiplying per tile and tested every row and edge column took 394
 * instructions per 72 FMAs (112x112x32 on one thread: 2.49 M per call by
 * callgrind, oneDNN's 1.41 M; 25 against 53 GFLOP/s). Rows in the padding
 * left out per output row, pointers stepped per row and channel vector,
 * tiles inside the row without column tests and the epilogue's kind told
 * once per call (dw_geo.walk_epi): 1.54 M, and 0.55x -> 0.83x oneDNN on
 * the MobileNet-v2 set (Zen 3, two threads). */
static inline __attribute__((always_inline)) void dw_walk_tile(const conv_job *j, const dw_geo *g,
                                                                const dw_walk_at *k, const dw_span_at *at,
                                                                const int T, const int SW, const tsr_dtype xt,
                                                                int64_t c0, const char *xr, const float *wr,
                                                                const bool edges) {
    const int64_t C = k->C, xstep = k->xstep, xstep3 = 3 * xstep, rstep = k->rstep;
    const vf start = dw_lead_bias_at(&k->bias, c0);
    vf acc[DW_TMAX];
#pragma GCC unroll 16
    for (int i = 0; i < T; i++) acc[i] = start;
    const int span = (T - 1) * SW + 3;
    /* the edge columns: their own pointers and steps (zeros and 0 where padding) */
    const bool pad_a = edges && at->u_lo > 0, pad_z = edges && at->u_hi < span;
    const char *xa = pad_a ? k->zero : xr, *xz = pad_z ? k->zero : xr + (span - 1) * xstep;
    const int64_t sa = pad_a ? 0 : rstep, sz = pad_z ? 0 : rstep;
    for (int64_t r = 0; r < at->rows; r++, xr += rstep, wr += 3 * C) {
        const vf w0 = vf_load(wr), w1 = vf_load(wr + C), w2 = vf_load(wr + 2 * C);
        const char *xp = xr;
#pragma GCC unroll 48
        for (int u = 0; u < span; u++) {
            if (u % 4 == 0 && !(edges && u == span - 1)) {
                if (u) xp += 4 * xstep;
                __asm__("" : "+r"(xp));
            }
            /* the column: at xp plus 0-3 strides, or an edge column's own pointer */
            const bool own = edges && (u == 0 || u == span - 1);
            const char *base = !own ? xp : u == 0 ? xa : xz;
            const int k4 = own ? 0 : u % 4;
            /* whether tap s takes this column: for output (u - s) / SW */
            const bool t0 = u % SW == 0 && u / SW < T, t1 = u >= 1 && (u - 1) % SW == 0 && (u - 1) / SW < T,
                       t2 = u >= 2 && (u - 2) % SW == 0 && (u - 2) / SW < T;
            if (xt == TSR_F32 && t0 + t1 + t2 == 1) { /* one FMA: the load folded in */
                const int i = t0 ? u / SW : t1 ? (u - 1) / SW : (u - 2) / SW;
                acc[i] = dw_fma_x(acc[i], t0 ? w0 : t1 ? w1 : w2, base, xstep, xstep3, k4);
                continue;
            }
            const vf xv = xt == TSR_F32 ? dw_load_x4(base, xstep, xstep3, k4)
                                        : dw_load_xp(base + (k4 == 3 ? xstep3 : k4 * xstep), xt, VL);
            if (t0) acc[u / SW] = vf_fma(xv, w0, acc[u / SW]);
            if (t1) acc[(u - 1) / SW] = vf_fma(xv, w1, acc[(u - 1) / SW]);
            if (t2) acc[(u - 2) / SW] = vf_fma(xv, w2, acc[(u - 2) / SW]);
        }
        if (edges) xa += sa, xz += sz;
    }
    const int64_t y0 = at->y0 + c0;
    if (k->y_fast) {
        float *y = k->y_fast + y0;
        if (k->relu) {
#pragma GCC unroll 16
            for (int i = 0; i < T; i++) acc[i] = vf_max(vf_zero(), acc[i]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < T; i++) vf_store(y + i * C, acc[i]);
        return;
    }
    dw_store_tile(j, g, acc, T, c0, y0, true, VL, g->bias0);
}

/* The walk's T-wide tiles at ow of row (n, oh) for each whole channel
 * vector from c_lo to c_hi in turn, so that a pixel's lines are read in
 * address order, the next vector's right after this one's. The rows' x
 * and filter pointers step with the vector instead of being computed for
 * each (a multiply chain per tile). */
static inline __attribute__((always_inline)) void dw_walk_span(const conv_job *j, const dw_geo *g,
                                                                const dw_span_at *row, int64_t ow, const int T,
                                                                const int SW, const tsr_dtype xt, int64_t c_lo,
                                                                int64_t c_hi) {
    const dw_span_at at = dw_span_at_ow(g, row, ow);
    const int64_t es = dw_x_size(xt);
    const dw_walk_at k = {.C = g->C, .xstep = g->C * es, .rstep = g->dh * g->W * g->C * es,
                          .zero = (const char *)j->zero, .bias = dw_lead_bias_of(j, g),
                          .y_fast = g->walk_epi != DW_EPI_STEPS && g->y_f32 && !j->stream_y ? (float *)j->y : NULL,
                          .relu = g->walk_epi == DW_EPI_RELU};
    const char *xr = (const char *)j->x + (at.x0 + c_lo) * es;
    const float *wr = j->wp + at.w0 + c_lo;
    /* a tile inside the row has neighbours on both sides: a row of three
     * tiles or more, each 2 DW_TMAX / 3 - 1 wide at least (dw_row_tiles);
     * narrower widths are not instantiated without edge columns of their
     * own (each variant is unrolled code: the AVX-512 file took 125 s to
     * compile before them, 186 s with these, more with every width) */
    if (at.u_lo > 0 || at.u_hi < (T - 1) * SW + 3 || 3 * T < 2 * DW_TMAX - 3) {
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += VL, xr += VL * es, wr += VL)
            dw_walk_tile(j, g, &k, &at, T, SW, xt, c0, xr, wr, true);
    } else {
        for (int64_t c0 = c_lo; c0 < c_hi; c0 += VL, xr += VL * es, wr += VL)
            dw_walk_tile(j, g, &k, &at, T, SW, xt, c0, xr, wr, false);
    }
}

/* T output pixels ow0 .. ow0 + T - 1 of row (n, oh), the nc (1..VL; VL
 * when full) channels at c0, tap by tap: any filter, f16 x and the ragged
 * last channel vector. xt: j->x_dtype (see dw_load_x). */
static inline __attribute__((always_inline)) void dw_tile(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh,
                                                           int64_t ow0, const int T, const tsr_dtype xt, int64_t c0,
                                                           const int nc, const bool full) {
    const int lanes = full ? VL : nc;
    const int64_t C = g->C, W = g->W, iw0 = ow0 * g->sw - g->pl;
    /* a leading bias step is where the sums start (one add less per pixel) */
    const bool bias0 = dw_regs(g, full) && j->epi->num_steps > 0 && j->epi->steps[0].op == TSR_EPI_BIAS;
    const vf start = bias0 ? dw_bias(&j->epi->steps[0], c0, lanes) : vf_zero();
    vf acc[DW_TMAX];
#pragma GCC unroll 16
    for (int i = 0; i < T; i++) acc[i] = start;
    for (int64_t r = 0; r < g->R; r++) {
        const int64_t ih = oh * g->sh - g->pt + r * g->dh;
        if (ih < 0 || ih >= g->H) continue;
        const int64_t xrow = ((n * g->H + ih) * W + iw0) * C + c0; /* element of column iw0 (maybe padding) */
        const float *wr = j->wp + r * g->S * C + c0;
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

/* Row (n, oh), the whole channel vectors c_lo .. c_hi, in as few tiles
 * as DW_TMAX allows, of widths that differ by one at most: a row of 28 in
 * tiles of 16, 8 and 4 paid each tile's fixed cost (weights, edges,
 * epilogue) three times and ran at 0.68-0.79x the speed of a row of 32 per FLOP. */
static inline __attribute__((always_inline)) void dw_row_tiles(const conv_job *j, const dw_geo *g, int64_t n,
                                                                int64_t oh, const int SW, const tsr_dtype xt,
                                                                int64_t c_lo, int64_t c_hi) {
    const int64_t Q = g->Q, tiles = (Q + DW_TMAX - 1) / DW_TMAX, T = (Q + tiles - 1) / tiles;
    const int64_t wide = Q - tiles * (T - 1); /* tiles T wide; the rest T - 1 */
    const dw_span_at row = dw_span_row(g, n, oh);
    int64_t ow = 0;
    for (int64_t k = 0; k < tiles; k++) {
        const int t = (int)(k < wide ? T : T - 1);
        switch (t) {
#define DW_TILE_CASE(w)                                                                                                \
    case w: dw_walk_span(j, g, &row, ow, w, SW, xt, c_lo, c_hi); break;
            DW_TILE_CASE(1) DW_TILE_CASE(2) DW_TILE_CASE(3) DW_TILE_CASE(4)
            DW_TILE_CASE(5) DW_TILE_CASE(6) DW_TILE_CASE(7) DW_TILE_CASE(8)
#if DW_TMAX > 8
            DW_TILE_CASE(9) DW_TILE_CASE(10) DW_TILE_CASE(11) DW_TILE_CASE(12)
            DW_TILE_CASE(13) DW_TILE_CASE(14) DW_TILE_CASE(15) DW_TILE_CASE(16)
#endif
#undef DW_TILE_CASE
        default: break;
        }
        ow += t;
    }
}

/* The instantiations: the column walk for stride 1 and 2 on f32 and bf16
 * x; the per-tap loop (MR-wide tiles) for other filters, f16 x and the
 * ragged last channel vector. */
typedef void dw_row_fn(const conv_job *, const dw_geo *, int64_t, int64_t, int64_t, int64_t);
static void dw_row_f32_s1(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {
    dw_row_tiles(j, g, n, oh, 1, TSR_F32, c_lo, c_hi);
}
static void dw_row_f32_s2(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {
    dw_row_tiles(j, g, n, oh, 2, TSR_F32, c_lo, c_hi);
}
static void dw_row_bf16_s1(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {
    dw_row_tiles(j, g, n, oh, 1, TSR_BF16, c_lo, c_hi);
}
static void dw_row_bf16_s2(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {
    dw_row_tiles(j, g, n, oh, 2, TSR_BF16, c_lo, c_hi);
}

static void dw_row_any(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c0, int64_t nc) {
    int64_t ow = 0;
    if (nc == VL) {
        for (; ow + MR <= g->Q; ow += MR) dw_tile(j, g, n, oh, ow, MR, j->x_dtype, c0, VL, true);
        for (; ow < g->Q; ow++) dw_tile(j, g, n, oh, ow, 1, j->x_dtype, c0, VL, true);
        return;
    }
    for (; ow + MR <= g->Q; ow += MR) dw_tile(j, g, n, oh, ow, MR, j->x_dtype, c0, (int)nc, false);
    for (; ow < g->Q; ow++) dw_tile(j, g, n, oh, ow, 1, j->x_dtype, c0, (int)nc, false);
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

/* The 12 filter pairs of 32 channels: [row pair][s][low/high half]. */
typedef struct dw_pairs {
    __m512bh w[2][3][2];
} dw_pairs;

/* Where tap t of a [c][r][s] filter block's 32 channels lies among the
 * block's 288 values, 9 vectors in a row (tap t of channel c is value 9 c
 * + t): the index within each run of 64 values that a two-vector permute
 * takes (idx) and which of the five runs holds each lane (run). The same
 * for every block: built once per call. */
typedef struct dw_tap_gather {
    __m512i idx[9];
    __mmask32 run[9][5];
} dw_tap_gather;

static void dw_tap_gather_init(dw_tap_gather *gt) {
    uint16_t nine[32];
    for (int i = 0; i < 32; i++) nine[i] = (uint16_t)(9 * i);
    const __m512i e0 = _mm512_loadu_si512(nine);
    for (int t = 0; t < 9; t++) {
        const __m512i e = _mm512_add_epi16(e0, _mm512_set1_epi16((short)t)), part = _mm512_srli_epi16(e, 6);
        gt->idx[t] = _mm512_and_si512(e, _mm512_set1_epi16(63));
        for (int p = 0; p < 5; p++) gt->run[t][p] = _mm512_cmpeq_epi16_mask(part, _mm512_set1_epi16((short)p));
    }
}

/* The 9 taps of the 32 bf16 channels at c0 of a 3x3 depthwise filter,
 * tap t at rows[t]: loaded where the filter is HWIO ([r][s][c]); where it
 * is [c][r][s] (OHWI, OIHW), gathered from the block's 9 vectors by five
 * two-vector permutes (one per 64 values they span; gt). */
static inline void dw_taps_bf16(const tsr_conv2d_desc *d, const uint16_t *w, int64_t c0, const dw_tap_gather *gt,
                                __m512i rows[9]) {
    if (d->filter_format == TSR_FILTER_HWIO) {
        for (int t = 0; t < 9; t++) rows[t] = _mm512_loadu_si512(w + t * d->c + c0);
        return;
    }
    __m512i src[10];
    for (int k = 0; k < 9; k++) src[k] = _mm512_loadu_si512(w + c0 * 9 + 32 * k);
    src[9] = src[8]; /* the last 64 values' second half: past the block, never picked */
    for (int t = 0; t < 9; t++) {
        __m512i v = _mm512_setzero_si512();
        for (int p = 0; p < 5; p++)
            v = _mm512_mask_mov_epi16(v, gt->run[t][p], _mm512_permutex2var_epi16(src[2 * p], gt->idx[t], src[2 * p + 1]));
        rows[t] = v;
    }
}

/* The pairs of the 32-channel blocks from c_lo (a multiple of 32) to c_hi
 * (c_lo plus whole blocks) of the caller's bf16 filter w, block c / 32 at
 * pairs[c / 32]: built once per call by each thread straight from w, not
 * per output row, and with no f32 copy (built from one, the copy's stores
 * took a sixth of a 14x14x576 stride-2 call at batch 1 on two threads). */
static void dw_pairs_pack(const tsr_conv2d_desc *d, const void *w, int64_t c_lo, int64_t c_hi, dw_pairs *pairs) {
    dw_tap_gather gt;
    if (d->filter_format != TSR_FILTER_HWIO) dw_tap_gather_init(&gt);
    for (int64_t c0 = c_lo; c0 < c_hi; c0 += NR) {
        dw_pairs *p = pairs + c0 / NR;
        __m512i rows[9];
        dw_taps_bf16(d, (const uint16_t *)w, c0, &gt, rows);
        for (int s = 0; s < 3; s++) {
            p->w[0][s][0] = (__m512bh)_mm512_unpacklo_epi16(rows[s], rows[3 + s]);
            p->w[0][s][1] = (__m512bh)_mm512_unpackhi_epi16(rows[s], rows[3 + s]);
            p->w[1][s][0] = (__m512bh)_mm512_unpacklo_epi16(rows[6 + s], _mm512_setzero_si512());
            p->w[1][s][1] = (__m512bh)_mm512_unpackhi_epi16(rows[6 + s], _mm512_setzero_si512());
        }
    }
}

/* Whether the pair walk applies the epilogue itself: bf16 y after a bias
 * and relu at most. Other epilogues take dw_store_tile per output
 * (instances of their own: with both ways in one, GCC kept the sums on
 * the stack in both). */
static bool dw_pair_fast(const conv_job *j, const dw_geo *g) {
    return j->d->y_dtype == TSR_BF16 && g->regs_epi_full && g->walk_epi != DW_EPI_STEPS;
}

/* The sums of one output pixel's 32 channels, in the unpack order. */
typedef struct dw_pacc {
    vf lo, hi;
} dw_pacc;

/* What the walk of one 32-channel block holds in registers. */
typedef struct dw_pair_regs {
    __m512bh w01[3][2], w2[3][2]; /* the filter pairs (dw_pairs) */
    vf ba, bb, floor;             /* the bias of channels c0 and c0 + VL; the relu floor */
} dw_pair_regs;

/* Column u of the walk, its pixel at p0, p1, p2 in the three input rows:
 * loaded once and unpacked into the pairs (rows 0 and 1, row 2 and a
 * zero) that the outputs taking it through tap s add into *o[s] (NULL:
 * no output). */
static inline __attribute__((always_inline)) void dw_pair_col(const dw_pair_regs *k, const char *p0, const char *p1,
                                                               const char *p2, dw_pacc *o0, dw_pacc *o1,
                                                               dw_pacc *o2) {
    const __m512i x0 = _mm512_loadu_si512(p0), x1 = _mm512_loadu_si512(p1), x2 = _mm512_loadu_si512(p2);
    const __m512i z = _mm512_setzero_si512();
    const __m512bh p01l = (__m512bh)_mm512_unpacklo_epi16(x0, x1), p01h = (__m512bh)_mm512_unpackhi_epi16(x0, x1);
    const __m512bh p2l = (__m512bh)_mm512_unpacklo_epi16(x2, z), p2h = (__m512bh)_mm512_unpackhi_epi16(x2, z);
    dw_pacc *o[3] = {o0, o1, o2};
#pragma GCC unroll 3
    for (int s = 0; s < 3; s++) {
        if (!o[s]) continue;
        o[s]->lo = _mm512_dpbf16_ps(_mm512_dpbf16_ps(o[s]->lo, p01l, k->w01[s][0]), p2l, k->w2[s][0]);
        o[s]->hi = _mm512_dpbf16_ps(_mm512_dpbf16_ps(o[s]->hi, p01h, k->w01[s][1]), p2h, k->w2[s][1]);
    }
}

/* An output's sums brought back to channel order, its epilogue applied
 * and stored at element y of y (channels c0 ..). */
static inline __attribute__((always_inline)) void dw_pair_put(const conv_job *j, const dw_geo *g,
                                                               const dw_pair_regs *k, const dw_pacc *acc, int64_t y,
                                                               int64_t c0, const bool stream, const bool fast) {
    /* channel order: 0-15 are lanes 0-3 of lo, 0-3 of hi, 4-7 of lo, ... */
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    vf a = _mm512_permutex2var_ps(acc->lo, first, acc->hi), b = _mm512_permutex2var_ps(acc->lo, second, acc->hi);
    if (!fast) {
        dw_store_tile(j, g, &a, 1, c0, y, true, VL, 0);
        dw_store_tile(j, g, &b, 1, c0 + VL, y + VL, true, VL, 0);
        return;
    }
    a = vf_max(k->floor, vf_add(a, k->ba)), b = vf_max(k->floor, vf_add(b, k->bb));
    /* vcvtne2ps2bf16: 32 outputs rounded to nearest even in one
     * instruction (vf_store_dtype takes seven per 16); it flushes
     * denormals, which bf16 activations do not carry */
    uint16_t *p = (uint16_t *)j->y + y;
    const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(b, a);
    if (stream && !((uintptr_t)p % 64)) _mm512_stream_si512((void *)p, v);
    else if (stream && !((uintptr_t)p % 32)) { /* C an odd multiple of 16: lines in halves, not cached */
        _mm256_stream_si256((__m256i *)p, _mm512_castsi512_si256(v));
        _mm256_stream_si256((__m256i *)(p + 16), _mm512_extracti64x4_epi64(v, 1));
    } else _mm512_storeu_si512(p, v);
}

/* Row (n, oh) of bf16 x and filter with AVX512_BF16, a 3x3 filter
 * (dilation_w 1, stride_w SW 1 or 2, pads of one column at most), the
 * 32-channel blocks from c_lo to c_hi in turn: the column walk of
 * dw_walk_tile over pairs of filter rows, one column at a time along the
 * whole row. Each column is loaded once from each filter row and unpacked
 * into the pairs that up to three outputs take; the unpacks run beside the
 * vdpbf16ps for free on Zen 4 (12 of them per 8 unpacks took 12 cycles),
 * so the dot products set the pace. An output is stored as soon as its
 * last column is in, so that only the outputs a column feeds (three at
 * stride 1, two at stride 2) hold registers, beside the 12 filter pairs.
 * Tiles of up to 7 outputs, their sums kept to the tile's end, read two
 * columns more than they had outputs, and GCC spilled sums and pairs, 33
 * stack stores a tile, which queued behind the stores to y where those
 * waited for their lines from memory (Zen 4, one thread, 28x28x192: 27.4
 * -> 22.2 us a call at batch 1, 774 -> 508 us at batch 20 with y through
 * the caches). A column in the padding (the row's first or last only) is
 * left out. */
static inline __attribute__((always_inline)) void dw_pair_row(const conv_job *j, const dw_geo *g, int64_t n,
                                                               int64_t oh, int64_t c_lo, int64_t c_hi, const int SW,
                                                               const bool fast) {
    const int64_t C = g->C, Q = g->Q, span = (Q - 1) * SW + 3;
    const char *x[3];
    int64_t step[3];
    for (int r = 0; r < 3; r++) { /* at column -pl; a row in the padding reads zeros, in place */
        const int64_t ih = oh * g->sh - g->pt + r * g->dh;
        const bool in = ih >= 0 && ih < g->H;
        x[r] = in ? (const char *)j->x + ((n * g->H + ih) * g->W - g->pl) * C * 2 : (const char *)j->zero;
        step[r] = in ? C * 2 : 0;
    }
    const bool pad_a = g->pl > 0, pad_z = span - g->pl > g->W;
    /* read once per row: stores to y may alias j and g, so read through
     * them each was reloaded per output */
    const dw_lead_bias bias = dw_lead_bias_of(j, g);
    const vf relu_floor = vf_set1(g->walk_epi == DW_EPI_RELU ? 0.0f : -INFINITY); /* max(-inf, x) keeps a NaN x */
    const bool stream = j->stream_y;
    const int64_t s0 = step[0], s1 = step[1], s2 = step[2];
    for (int64_t c0 = c_lo; c0 + NR <= c_hi; c0 += NR) {
        const dw_pairs *wp = (const dw_pairs *)g->pairs + c0 / NR;
        dw_pair_regs k = {
            .ba = dw_lead_bias_at(&bias, c0), .bb = dw_lead_bias_at(&bias, c0 + VL), .floor = relu_floor};
        for (int s = 0; s < 3; s++)
            for (int h = 0; h < 2; h++) k.w01[s][h] = wp->w[0][s][h], k.w2[s][h] = wp->w[1][s][h];
        const char *p0 = x[0] + c0 * 2, *p1 = x[1] + c0 * 2, *p2 = x[2] + c0 * 2;
        int64_t y = (n * g->P + oh) * Q * C + c0;
        const dw_pacc zero = {vf_zero(), vf_zero()};
        if (SW == 1) {
            /* column u feeds outputs u (tap 0, into c), u - 1 (b) and u - 2
             * (a, then complete); columns 0 and 1 complete none */
            dw_pacc a = zero, b = zero, c = zero;
            int64_t u = 0;
            if (pad_a) p0 += s0, p1 += s1, p2 += s2, u = 1; /* column 0: zeros, out 0 in b as it is */
            for (; u < 2; u++, p0 += s0, p1 += s1, p2 += s2) {
                c = zero;
                dw_pair_col(&k, p0, p1, p2, &c, u ? &b : NULL, NULL);
                a = b, b = c;
            }
            const int64_t u_end = pad_z ? span - 1 : span; /* the last column may be padding */
            for (; u < u_end; u++, p0 += s0, p1 += s1, p2 += s2, y += C) {
                c = zero;
                dw_pair_col(&k, p0, p1, p2, &c, &b, &a);
                dw_pair_put(j, g, &k, &a, y, c0, stream, fast);
                a = b, b = c;
            }
            if (pad_z) dw_pair_put(j, g, &k, &a, y, c0, stream, fast);
        } else {
            /* output i: column 2i (tap 0), 2i + 1 (tap 1), 2i + 2 (tap 2,
             * and tap 0 of output i + 1) */
            dw_pacc a = zero, b;
            if (!pad_a) dw_pair_col(&k, p0, p1, p2, &a, NULL, NULL);
            p0 += s0, p1 += s1, p2 += s2;
            for (int64_t i = 0; i < Q; i++, y += C) {
                dw_pair_col(&k, p0, p1, p2, NULL, &a, NULL);
                p0 += s0, p1 += s1, p2 += s2;
                b = zero;
                if (i < Q - 1 || !pad_z) dw_pair_col(&k, p0, p1, p2, &b, NULL, &a);
                p0 += s0, p1 += s1, p2 += s2;
                dw_pair_put(j, g, &k, &a, y, c0, stream, fast);
                a = b;
            }
        }
    }
}

#define DW_PAIR_ROW(name, SW, fast)                                                                                    \
    static void name(const conv_job *j, const dw_geo *g, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {          \
        dw_pair_row(j, g, n, oh, c_lo, c_hi, SW, fast);                                                                \
    }
DW_PAIR_ROW(dw_pair_row_s1, 1, true)
DW_PAIR_ROW(dw_pair_row_s2, 2, true)
DW_PAIR_ROW(dw_pair_row_s1_any, 1, false)
DW_PAIR_ROW(dw_pair_row_s2_any, 2, false)
#undef DW_PAIR_ROW
#else
static bool depthwise_dpbf16(const tsr_context *ctx, const tsr_conv2d_desc *d) {
    (void)ctx, (void)d;
    return false;
}
#endif

/* Floats of a thread's filter copy in depthwise_run's buffer: the f32
 * [r][s][c] filter and, for bf16 pairs, 24 bytes a channel behind it
 * (a 32-channel block's dw_pairs), 64-byte aligned. */
static int64_t dw_filter_floats(const tsr_conv2d_desc *d, bool pairs) {
    return d->r * d->s * d->c + (pairs ? 6 * d->c + 16 : 0);
}

/* L1 bytes that the input rows of a chunk of channels may take, and L2
 * bytes for the input rows of a block of output rows across its chunks. */
#define DW_L1_ROWS (24 << 10)
#define DW_L2_ROWS (512 << 10)

/* The kernels that take one output row. */
typedef struct dw_rows {
    dw_geo g;
    dw_row_fn *walk; /* the column walk over whole vectors, or NULL */
    dw_row_fn *pair; /* the bf16 pairs over whole 32-channel blocks, or NULL */
} dw_rows;

/* Output row (n, oh), channels c_lo .. c_hi. */
static void dw_row(const conv_job *j, const dw_rows *k, int64_t n, int64_t oh, int64_t c_lo, int64_t c_hi) {
    const tsr_conv2d_desc *d = j->d;
    const size_t xes = tsr_dtype_size(j->x_dtype);
    /* The input rows the next output row adds, these channels: out of L2
     * the loads would otherwise wait (batch 32, 14x14x384 on one core:
     * 1.44 -> 1.13 ms). Into L2: into L1, next to the r rows in use, they
     * evicted those (Emerald Rapids, 2 threads, against oneDNN: 56x56x144
     * batch 32 stride 1 1.49-1.62x -> 1.68-1.74x, stride 2 0.85-0.87x ->
     * 0.94-0.98x, 112x112x96 stride 2 batch 1 0.68-0.69x -> 0.70-0.72x) */
    for (int64_t ih = (oh + 1) * d->stride_h - d->pad_top + (d->r - 1) * d->dilation_h, i = 0;
         j->prefetch_x && i < d->stride_h; i++, ih--)
        if (ih >= 0 && ih < d->h) {
            const char *xr = (const char *)j->x + (((n * d->h + ih) * d->w) * d->c + c_lo) * xes;
            const int64_t bytes = (c_hi - c_lo) * (int64_t)xes, pitch = d->c * (int64_t)xes;
            if (bytes == pitch) { /* every channel: the row is one run of lines */
                prefetch_bytes(xr, d->w * pitch, true);
                continue;
            }
            for (int64_t w = 0; w < d->w; w++) prefetch_bytes(xr + w * pitch, bytes, true);
        }
    const int64_t whole = d->c / VL * VL, c_whole = c_hi < whole ? c_hi : whole; /* a ragged vector: dw_row_any */
    int64_t c0 = c_lo;
    if (k->pair && c_hi - c_lo >= NR) {
        const int64_t c_pairs = c_lo + (c_hi - c_lo) / NR * NR;
        k->pair(j, &k->g, n, oh, c_lo, c_pairs), c0 = c_pairs;
    }
    if (k->walk && c0 < c_whole) k->walk(j, &k->g, n, oh, c0, c_whole), c0 = c_whole;
    for (; c0 < c_hi; c0 += VL) dw_row_any(j, &k->g, n, oh, c0, d->c - c0 < VL ? d->c - c0 : VL);
}

/* The work is split in chunks of channels, each as many vectors as keep
 * the r input rows under it within DW_L1_ROWS, so that consecutive output
 * rows find the rows they share in L1: with every channel of a row at once,
 * C = 192 at 28x28 read each input line from L2 three times (on Emerald
 * Rapids, one core: 56 -> 43 us, oneDNN 37). A chunk keeps two vectors at
 * least (one line per pixel ran at 0.75x the speed at 112x112); AVX2 does
 * not chunk (see cv below). Each thread takes an equal run of (channel
 * group, image, output row): blocks of rows, and within a block chunk by
 * chunk, each chunk's rows in order
 * (static items of unequal rows gave one of two threads 30 rows of work
 * and the other 12). A filter to pack (w, else NULL) is packed by each
 * thread into its own copy in bufs, the channels it takes: halves packed by
 * two threads behind a barrier cost 5.5 us of a 14x14x384 layer's 18 (the
 * halves then crossed between the cores). */
static void depthwise_run(const conv_job *job, const void *w, float *bufs) {
    conv_job jt = *job;
    const conv_job *j = &jt;
    const tsr_conv2d_desc *d = j->d;
    dw_rows k = {.g = {.C = d->c, .H = d->h, .W = d->w, .R = d->r, .S = d->s, .sh = d->stride_h, .sw = d->stride_w,
                       .dh = d->dilation_h, .dw = d->dilation_w, .pt = d->pad_top, .pl = d->pad_left, .P = j->P,
                       .Q = j->Q, .regs_epi_full = dw_regs_epilogue(j->epi, true),
                       .regs_epi_tail = dw_regs_epilogue(j->epi, false), .y_f32 = d->y_dtype == TSR_F32}};
    k.g.bias0 = k.g.regs_epi_full && j->epi->num_steps > 0 && j->epi->steps[0].op == TSR_EPI_BIAS;
    k.g.walk_epi = dw_walk_epi(j->epi, k.g.bias0);
    /* the column walk: its padding within DW_EDGE columns of a tile's ends */
    const bool walk = d->s == 3 && d->dilation_w == 1 && (d->stride_w == 1 || d->stride_w == 2) &&
                      d->pad_left <= DW_EDGE && (j->Q - 1) * d->stride_w + 3 - d->pad_left - d->w <= DW_EDGE;
    if (walk && j->x_dtype == TSR_F32) k.walk = d->stride_w == 1 ? dw_row_f32_s1 : dw_row_f32_s2;
    if (walk && j->x_dtype == TSR_BF16) k.walk = d->stride_w == 1 ? dw_row_bf16_s1 : dw_row_bf16_s2;
#ifdef CONV_BF16
    _Static_assert(NR == 2 * VL, "the pair walk takes two vectors of channels");
    if (j->bf && walk)
        k.pair = dw_pair_fast(j, &k.g) ? (d->stride_w == 1 ? dw_pair_row_s1 : dw_pair_row_s2)
                                       : (d->stride_w == 1 ? dw_pair_row_s1_any : dw_pair_row_s2_any);
#endif
    const int64_t es = dw_x_size(j->x_dtype), cvecs = (d->c + VL - 1) / VL, NP = d->n * j->P;
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t step = k.pair ? NV : 1, blocks = (cvecs + step - 1) / step; /* a pair walk takes NV vectors */
    /* channel groups: as many as rows fall short of 4 per thread. Rows are
     * split among the threads, each packing the whole filter, where a group
     * per thread had packed only its own channels: on Zen 3 (AVX2, two
     * threads) 28x28x192 24-25 -> 35 GFLOP/s, 14x14x576 14-22 -> 30-31,
     * 7x7x960 14-19 -> 18-20; on Zen 4 (AVX-512, two threads, 4 runs
     * alternated, per call) 14x14x384 24 -> 119, 14x14x576 23 -> 129, its
     * stride-2 23 -> 63, 7x7x960 30 -> 62, bf16 alike (33 -> 93-102) */
    int64_t groups = (4 * (int64_t)nt + NP - 1) / NP;
    groups = groups > blocks ? blocks : groups;
    /* chunks: as many vectors (whole steps, two at least) as keep the r
     * input rows under DW_L1_ROWS. AVX2 takes every vector at once: its
     * 32-byte vectors ask half the L2 bytes per FMA, which L2 serves (Zen
     * 3, one process, variants alternated, best of 9: 112x112x32 31 -> 50
     * GFLOP/s on one thread, 50 -> 62 on two; 112x112x96 stride 2 33 -> 42
     * on two; the other MobileNet-v2 layers alike or 1-8% faster) */
    int64_t cv = VL == 16 ? DW_L1_ROWS / (d->r * d->w * VL * es) : cvecs;
    cv = cv < 2 ? 2 : cv;
    cv = (cv + step - 1) / step * step;
    const int64_t units = groups * NP, u0 = units * t / nt, u1 = units * (t + 1) / nt;
    /* group g: the steps from g * blocks / groups, in equal chunks */
#define DW_GROUP_VEC(g) ((g) * blocks / groups * step)
    /* The units' order: row by row, a thread's rows whole but for the two
     * at its ends. Threads whose channel halves of every pixel lay side by
     * side ran both at half speed in one process of two (Zen 3 VM, two
     * threads, 7x7x960: 55 K cycles a thread a call against 28 K,
     * 14x14x576 stride 2 alike, oneDNN's rate unchanged beside them); rows
     * never did. Threads pack every channel they touch, all of them but
     * where a thread's units lie in one row. */
    if (w && u0 < u1) {
        const bool one_row = u0 / groups == (u1 - 1) / groups;
        const int64_t v_lo = one_row ? DW_GROUP_VEC(u0 % groups) : 0,
                      v_hi = one_row ? DW_GROUP_VEC((u1 - 1) % groups + 1) : blocks * step;
        const int64_t c_lo = v_lo * VL, c_hi = v_hi * VL < d->c ? v_hi * VL : d->c;
        float *own = bufs + t * dw_filter_floats(d, j->bf);
        int64_t c_f32 = c_lo; /* the channels past the pairs' blocks: f32 */
        jt.wp = own;
#ifdef CONV_BF16
        if (k.pair) {
            dw_pairs *pairs = (dw_pairs *)(((uintptr_t)(own + d->r * d->s * d->c) + 63) & ~(uintptr_t)63);
            c_f32 = c_lo + (c_hi - c_lo) / NR * NR;
            dw_pairs_pack(d, w, c_lo, c_f32, pairs);
            k.g.pairs = pairs;
        }
#endif
        if (c_f32 < c_hi) pack_depthwise(d, w, own, c_f32, c_hi);
    }
    for (int64_t u = u0; u < u1;) {
        /* rows row .. row + len - 1 of n * P, vectors v0 .. v1, per_row units a row */
        const int64_t row = u / groups;
        const int64_t g_lo = u % groups, g_hi = u1 - row * groups < groups ? u1 - row * groups : groups;
        const int64_t v0 = DW_GROUP_VEC(g_lo), v1 = DW_GROUP_VEC(g_hi), per_row = g_hi - g_lo;
        int64_t len = per_row < groups ? 1 : (u1 - u) / groups; /* a row's part, or whole rows */
        /* rows per block: their input rows, these channels, within DW_L2_ROWS */
        const int64_t rb = DW_L2_ROWS / (d->stride_h * d->w * (v1 - v0) * VL * es);
        const int64_t n = row / j->P, oh0 = row % j->P;
        len = len < rb ? len : rb > 1 ? rb : 1;
        len = len < j->P - oh0 ? len : j->P - oh0; /* within the image */
        const int64_t chunks = (v1 - v0 + cv - 1) / cv, vc = ((v1 - v0 + chunks - 1) / chunks + step - 1) / step * step;
        for (int64_t c0 = v0; c0 < v1; c0 += vc) {
            const int64_t c_lo = c0 * VL, c_hi = (c0 + vc < v1 ? c0 + vc : v1) * VL;
            for (int64_t oh = oh0; oh < oh0 + len; oh++) dw_row(j, &k, n, oh, c_lo, c_hi < d->c ? c_hi : d->c);
        }
        u += len * per_row;
    }
#undef DW_GROUP_VEC
    /* streamed stores are weakly ordered: done before the region's barrier
     * (the one ending the region: a barrier of its own here cost a second
     * wait per call) */
    if (j->stream_y) _mm_sfence();
}
