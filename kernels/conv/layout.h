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

#endif
