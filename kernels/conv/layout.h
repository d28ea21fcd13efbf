/* Element offsets of conv2d tensors in each format. */
#ifndef TSR_CONV_LAYOUT_H
#define TSR_CONV_LAYOUT_H

#include "internal.h"

/* act[n][c][h][w] of an activation tensor of C channels, H x W, in fmt. */
static inline int64_t tsr_act_offset(tsr_tensor_format fmt, int64_t n, int64_t c, int64_t h, int64_t w,
                                     int64_t C, int64_t H, int64_t W) {
    return fmt == TSR_NHWC ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

/* filter[k][c][r][s] with K outputs, Cg inputs per group, R x S taps, in fmt. */
static inline int64_t tsr_filter_offset(tsr_filter_format fmt, int64_t k, int64_t c, int64_t r, int64_t s,
                                        int64_t K, int64_t Cg, int64_t R, int64_t S) {
    switch (fmt) {
    case TSR_FILTER_OIHW: return ((k * Cg + c) * R + r) * S + s;
    case TSR_FILTER_HWIO: return ((r * S + s) * Cg + c) * K + k;
    default: return ((k * R + r) * S + s) * Cg + c; /* OHWI */
    }
}

/* filter[k][c][r][s] of a packed filter's payload, as an element index of
 * its dtype (f32 panels, bf16 pair panels, or a copy in h->format). */
static inline int64_t tsr_packed_filter_offset(const tsr_packed_filter *h, int64_t k, int64_t c, int64_t r, int64_t s) {
    const int64_t Kg = h->k / h->groups, Cg = h->c / h->groups, nr = h->nr;
    if (h->layout == TSR_PACKED_COPY)
        return tsr_filter_offset((tsr_filter_format)h->format, k, c, r, s, h->k, Cg, h->r, h->s);
    const int64_t rsc = h->r * h->s * Cg, jj = (r * h->s + s) * Cg + c, kk = k % Kg;
    const int64_t panel = (k / Kg) * ((Kg + nr - 1) / nr) + kk / nr, lane = kk % nr;
    if (h->layout == TSR_PACKED_PANELS) return (panel * rsc + jj) * nr + lane;
    return panel * rsc * nr + ((jj / 2) * nr + lane) * 2 + (jj & 1);
}

/* The payload's dtype. */
static inline tsr_dtype tsr_packed_filter_dtype(const tsr_packed_filter *h) {
    return h->layout == TSR_PACKED_PANELS ? TSR_F32 : h->layout == TSR_PACKED_PAIR_PANELS ? TSR_BF16 : (tsr_dtype)h->w_dtype;
}

#endif
