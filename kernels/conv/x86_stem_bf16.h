/* The bf16 stem on AVX512_BF16: one group, an odd channel count (3 at
 * ResNet's 7x7 stride-2 stem), dilation_w 1. vdpbf16ps takes values in
 * pairs; a channel pair per tap needs C padded to C + 1, and that had the
 * stem copy x with a zero channel (a pass over x per call) and spend
 * (C + 1) / C of the products. Here each filter row of a pixel is one run
 * of L = S * C values, contiguous in NHWC x: its first L - 1 (an even
 * count) are taken in pairs straight from x and its last alone
 * (ukr_dot_bf16's odd kc: the next pixel's value never meets a zero
 * weight). A 7x7x3 row: 11 instructions per pixel
 * and vector, against 14. Pixels whose run leaves the image at the left or
 * right are copied with their zeros into a window first; filter rows in
 * the top or bottom padding point at zeros. Included by x86_conv.h, after
 * the direct tiles. */

enum { STEM_RUN_MAX = 64, STEM_ROWS_MAX = 11 }; /* L + 1 and R bounds: the windows on the stack */

/* Whether d takes the stem tiles (see above); pads_channel's copy is left
 * for longer runs, taller filters and dilated rows. */
static bool stem_of(const tsr_context *ctx, const tsr_conv2d_desc *d) {
    return pads_channel(ctx, d) && d->dilation_w == 1 && 2 * stem_pairs(d) <= STEM_RUN_MAX && d->r <= STEM_ROWS_MAX;
}

/* The filter's panels as [panel][r][stem_pairs][NR][2] bf16, zero past k. */
static void pack_filter_stem(const tsr_conv2d_desc *d, const void *w, uint16_t *dst) {
    const int64_t K = d->k, C = d->c, R = d->r, S = d->s, L = S * C, pairs = stem_pairs(d);
    const uint16_t *src = w;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels_of(d); p++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t e = 0; e < 2 * pairs; e++) { /* e = s * C + c */
                uint16_t *out = dst + ((p * R + r) * pairs + e / 2) * NR * 2 + (e & 1);
                for (int64_t kk = 0; kk < NR; kk++) {
                    const int64_t k = p * NR + kk;
                    out[kk * 2] = k < K && e < L ? src[tsr_filter_offset(d->filter_format, k, e % C, r, e / C, K, C, R, S)]
                                                 : 0;
                }
            }
}

/* Tile t by panels p_lo..p_hi: each pixel's runs found (or copied) once,
 * then every panel over them; mr rows computed (a constant, MR or MR - 1,
 * as in direct_tile). */
static inline __attribute__((always_inline)) void stem_tile_as(const conv_job *j, const tile_geo *t, int64_t p_lo,
                                                               int64_t p_hi, const int mr) {
    static const uint16_t zeros[STEM_RUN_MAX];
    const tsr_conv2d_desc *d = j->d;
    const int64_t C = d->c, H = d->h, W = d->w, R = d->r, S = d->s, L = S * C, K = d->k, pairs = stem_pairs(d);
    const uint16_t *x = (const uint16_t *)(const void *)j->x;
    uint16_t win[STEM_ROWS_MAX][MR][STEM_RUN_MAX];
    const uint16_t *rows[STEM_ROWS_MAX][MR];
    bool live[STEM_ROWS_MAX];
    for (int64_t r = 0; r < R; r++) {
        live[r] = false;
        for (int i = 0; i < MR; i++) {
            const int64_t ih = t->ih[i] + r * d->dilation_h, iw = t->iw[i];
            if (ih < 0 || ih >= H) {
                rows[r][i] = zeros;
                continue;
            }
            live[r] = true;
            const uint16_t *row = x + (t->n[i] * H + ih) * W * C;
            if (iw >= 0 && iw + S <= W) {
                rows[r][i] = row + iw * C;
                continue;
            }
            for (int64_t s = 0; s < S; s++) {
                const bool in = iw + s >= 0 && iw + s < W;
                for (int64_t c = 0; c < C; c++) win[r][i][s * C + c] = in ? row[(iw + s) * C + c] : 0;
            }
            rows[r][i] = win[r][i];
        }
    }
    for (int64_t p = p_lo; p < p_hi; p++) {
        const int64_t nk = K - p * NR < NR ? K - p * NR : NR;
        const uint16_t *bp = (const uint16_t *)(const void *)j->wp + p * R * pairs * NR * 2;
        prefetch_residual(j, t->y, t->mr, p * NR, nk);
        vf acc[MR][NV];
        tile_start(j, acc, p * NR, nk);
        for (int64_t r = 0; r < R; r++)
            if (live[r]) ukr_dot_bf16(mr, L, (const float *const *)rows[r], bp + r * pairs * NR * 2, acc);
        tile_store(j, acc, t->y, t->mr, p * NR, nk, mr);
    }
}

static void stem_tile_panels(const conv_job *j, const tile_geo *t, int64_t p_lo, int64_t p_hi) {
    if (t->mr == MR - 1) stem_tile_as(j, t, p_lo, p_hi, MR - 1);
    else stem_tile_as(j, t, p_lo, p_hi, MR);
}
