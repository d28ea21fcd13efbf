/* Depthwise conv2d (groups == c == k) on x86, part of x86_conv.h (which
 * defines conv_job, MR, NV and the vector names first): vectorised over
 * channels (contiguous in NHWC), up to MR output pixels along the width by
 * NR channels in registers; f16/bf16 activations converted as loaded. */

/* Depthwise filter as f32 [r][s][c]. */
static void pack_depthwise(const tsr_conv2d_desc *d, const void *w, float *dst) {
    const int64_t C = d->c, R = d->r, S = d->s;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; c++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t s = 0; s < S; s++)
                dst[(r * S + s) * C + c] = tsr_load_f(w, d->w_dtype, tsr_filter_offset(d->filter_format, c, 0, r, s, C, 1, R, S));
}

/* --------------------------------------------------------------- depthwise */

/* The first n lanes (n in 1..VL) at p; whole vectors without a mask. */
static inline __attribute__((always_inline)) vf load_lanes(const float *p, int n) {
    return n == VL ? vf_load(p) : vf_load_n(p, n);
}

/* n (1..VL) activations from element e of x, converted from f16/bf16 as
 * loaded where the depthwise kernel reads the caller's tensor: a batch-32
 * f32 copy of it cost more than the convolution (page faults included). */
static inline __attribute__((always_inline)) vf x_load(const conv_job *j, int64_t e, int n) {
    if (j->x_dtype == TSR_F32) return load_lanes(j->x + e, n);
    return n == VL ? vf_load_dtype(j->x, j->x_dtype, e) : vf_load_n_dtype(j->x, j->x_dtype, e, n);
}

/* T output pixels ow0 .. ow0 + T - 1 of row (n, oh), channels c0 + the
 * lanes cnt[] says; taps s in [s_lo, s_hi) (clipped at the edges by the
 * caller so that every pixel's taps lie inside the row). */
static inline __attribute__((always_inline)) void depthwise_pixels(const conv_job *j, int64_t n, int64_t oh,
                                                                    int64_t ow0, const int T, int64_t c0,
                                                                    const int cnt[NV], const bool full,
                                                                    int64_t s_lo, int64_t s_hi) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t C = d->c, H = d->h, W = d->w, S = d->s, sw = d->stride_w, dw = d->dilation_w;
    vf acc[MR][NV];
    ukr_zero(acc);
    const int64_t iw0 = ow0 * sw - d->pad_left;
    for (int64_t r = 0; r < d->r; r++) {
        const int64_t ih = oh * d->stride_h - d->pad_top + r * d->dilation_h;
        if (ih < 0 || ih >= H) continue;
        const int64_t xrow = ((n * H + ih) * W + iw0) * C + c0;
        for (int64_t s = s_lo; s < s_hi; s++) {
            const float *wt = j->wp + (r * S + s) * C + c0;
            const int64_t xp = xrow + s * dw * C;
            vf wv[NV];
            if (full) { /* NR channels: whole vectors, no tests (the accumulators stay in registers) */
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) wv[v] = vf_load(wt + v * VL);
#pragma GCC unroll 16
                for (int i = 0; i < T; i++)
#pragma GCC unroll 4
                    for (int v = 0; v < NV; v++) acc[i][v] = vf_fma(x_load(j, xp + i * sw * C + v * VL, VL), wv[v], acc[i][v]);
                continue;
            }
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) wv[v] = cnt[v] ? load_lanes(wt + v * VL, cnt[v]) : vf_zero();
#pragma GCC unroll 16
            for (int i = 0; i < T; i++)
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
                    if (cnt[v]) acc[i][v] = vf_fma(x_load(j, xp + i * sw * C + v * VL, cnt[v]), wv[v], acc[i][v]);
        }
    }
    if (j->plain) { /* unrolled and call-free: acc indexed by constants stays in registers */
#pragma GCC unroll 16
        for (int i = 0; i < T; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                if (!cnt[v]) continue;
                const int64_t k = c0 + v * VL, yi = ((n * j->P + oh) * j->Q + ow0 + i) * C + k;
                vf_store_n((float *)j->y + yi, ukr_epilogue_plain(j->epi, acc[i][v], k, false, 0, 0, yi, cnt[v]), cnt[v]);
            }
        return;
    }
    for (int i = 0; i < T; i++)
        for (int v = 0; v < NV && cnt[v]; v++) {
            const int64_t k = c0 + v * VL, yi = ((n * j->P + oh) * j->Q + ow0 + i) * C + k;
            vf_store_n_dtype(j->y, d->y_dtype, yi, ukr_epilogue(j->epi, acc[i][v], k, false, 0, 0, yi, cnt[v]), cnt[v]);
        }
}

/* Row (n, oh), channels [c0, c0 + nc): interior pixels (every tap along w
 * inside the row) in tiles of MR, MR/2 and 1 with no tests; edge pixels one
 * at a time with their tap range clipped. */
static void depthwise_row(const conv_job *j, int64_t n, int64_t oh, int64_t c0, int64_t nc) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t W = d->w, S = d->s, sw = d->stride_w, dw = d->dilation_w, pl = d->pad_left, Q = j->Q;
    int cnt[NV];
    for (int v = 0; v < NV; v++) cnt[v] = (int)(nc - v * VL >= VL ? VL : nc - v * VL > 0 ? nc - v * VL : 0);
    /* interior: ow * sw - pl >= 0 and ow * sw - pl + (S - 1) * dw < W */
    int64_t lo = (pl + sw - 1) / sw, hi = W - 1 - (S - 1) * dw + pl >= 0 ? (W - 1 - (S - 1) * dw + pl) / sw + 1 : 0;
    if (lo > Q) lo = Q;
    if (hi > Q) hi = Q;
    if (hi < lo) hi = lo;
    const bool full = nc == NR;
    for (int64_t ow = 0; ow < Q; ow++) {
        if (ow == lo) { /* the interior run */
            if (full) {
                for (; ow + MR <= hi; ow += MR) depthwise_pixels(j, n, oh, ow, MR, c0, cnt, true, 0, S);
                for (; ow + MR / 2 <= hi; ow += MR / 2) depthwise_pixels(j, n, oh, ow, MR / 2, c0, cnt, true, 0, S);
                for (; ow < hi; ow++) depthwise_pixels(j, n, oh, ow, 1, c0, cnt, true, 0, S);
            } else {
                for (; ow + MR / 2 <= hi; ow += MR / 2) depthwise_pixels(j, n, oh, ow, MR / 2, c0, cnt, false, 0, S);
                for (; ow < hi; ow++) depthwise_pixels(j, n, oh, ow, 1, c0, cnt, false, 0, S);
            }
            if (ow >= Q) break;
        }
        const int64_t iw0 = ow * sw - pl;
        int64_t s_lo = 0, s_hi = S;
        while (s_lo < S && iw0 + s_lo * dw < 0) s_lo++;
        while (s_hi > s_lo && iw0 + (s_hi - 1) * dw >= W) s_hi--;
        if (full) depthwise_pixels(j, n, oh, ow, 1, c0, cnt, true, s_lo, s_hi);
        else depthwise_pixels(j, n, oh, ow, 1, c0, cnt, false, s_lo, s_hi);
    }
}

static void depthwise_run(const conv_job *j) {
    const tsr_conv2d_desc *d = j->d;
    const int64_t rows = d->n * j->P, cblocks = (d->c + NR - 1) / NR;
#pragma omp for collapse(2) schedule(static)
    for (int64_t row = 0; row < rows; row++)
        for (int64_t cb = 0; cb < cblocks; cb++) {
            const int64_t c0 = cb * NR, nc = d->c - c0 < NR ? d->c - c0 : NR;
            depthwise_row(j, row / j->P, row % j->P, c0, nc);
        }
}

