/* CUDA depthwise conv2d (groups == c == k) over NHWC for sm80-class GPUs:
 * conv2d.sm80.depthwise, f32/f16/bf16, any filter format (with one channel
 * per group OHWI and OIHW are the same [k][r][s] array; HWIO is [r][s][k]).
 *
 * A depthwise layer has no reduction over channels, so it is memory bound:
 * one thread per output element in y's own order (channels fastest), so
 * that a warp's loads of x and its store of y are contiguous runs of
 * channels, and the filter taps of neighbouring threads are neighbours in
 * HWIO (in OHWI they are r * s apart and come from L1). Each thread does
 * every tap of its channel in f32 and applies the fused epilogue before the
 * only store. */
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/runtime.h"

typedef struct dw_args {
    const void *x, *w;
    void *y;
    int64_t total; /* n * p * q * k */
    int H, W, C, P, Q, R, S;
    int sh, sw, pt, pl, dh, dw;
    int64_t w_tap, w_chan; /* filter element steps per tap and per channel */
    tsr_dtype y_dtype;
    tsr_epilogue epi;
} dw_args;

__device__ __noinline__ void dw_store_epi(const dw_args &a, int64_t yi, int k, float v) {
    tsr_dev_store(a.y, a.y_dtype, yi, tsr_dev_epilogue(a.epi, v, k, 0, 0, yi));
}

template <typename T> __global__ void __launch_bounds__(256) dw_conv(const __grid_constant__ dw_args a) {
    const T *x = (const T *)a.x, *w = (const T *)a.w;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < a.total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int k = (int)(idx % a.C);
        int64_t t = idx / a.C;
        const int ow = (int)(t % a.Q);
        t /= a.Q;
        const int oh = (int)(t % a.P);
        const int64_t n = t / a.P;
        const int ih0 = oh * a.sh - a.pt, iw0 = ow * a.sw - a.pl;
        const T *xn = x + n * a.H * a.W * a.C + k;
        const T *wk = w + k * a.w_chan;
        float acc = 0.0f;
        for (int r = 0; r < a.R; r++) {
            const int ih = ih0 + r * a.dh;
            if (ih < 0 || ih >= a.H) continue; /* padding: zeros */
            for (int s = 0; s < a.S; s++) {
                const int iw = iw0 + s * a.dw;
                if (iw < 0 || iw >= a.W) continue;
                acc = fmaf(tsr_to_f32<T>(xn[((int64_t)ih * a.W + iw) * a.C]),
                           tsr_to_f32<T>(wk[(int64_t)(r * a.S + s) * a.w_tap]), acc);
            }
        }
        if (a.epi.num_steps == 0) tsr_dev_store(a.y, a.y_dtype, idx, acc);
        else dw_store_epi(a, idx, k, acc);
    }
}

static bool dw_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    const tsr_conv2d_desc *d = &p->u.conv.d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.depthwise runs on cuda"), false;
    if (d->groups != d->c || d->k != d->c)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.depthwise takes groups == c == k"), false;
    if (d->format != TSR_NHWC)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.depthwise takes NHWC (conv2d.sm80.direct runs "
                       "NCHW)"), false;
    const int64_t lim = (int64_t)1 << 30;
    if (d->h * d->w * d->c >= lim || d->r * d->s * d->c >= lim || d->pad_top >= lim || d->pad_left >= lim)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.depthwise: an image or filter of 2^30 elements "
                       "or more"), false;
    return true;
}

static tsr_status dw_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    (void)sch;
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    dw_args a;
    memset(&a, 0, sizeof a);
    a.x = cp->x, a.w = cp->w, a.y = cp->y;
    a.total = d->n * cp->p * cp->q * d->k;
    if (a.total == 0) return TSR_OK;
    a.H = (int)d->h, a.W = (int)d->w, a.C = (int)d->c, a.P = (int)cp->p, a.Q = (int)cp->q;
    a.R = (int)d->r, a.S = (int)d->s;
    a.sh = (int)d->stride_h, a.sw = (int)d->stride_w, a.pt = (int)d->pad_top, a.pl = (int)d->pad_left;
    a.dh = (int)d->dilation_h, a.dw = (int)d->dilation_w;
    if (d->filter_format == TSR_FILTER_HWIO) a.w_tap = d->k, a.w_chan = 1;
    else a.w_tap = 1, a.w_chan = d->r * d->s; /* OHWI and OIHW alike with one channel per group */
    a.y_dtype = d->y_dtype;
    a.epi = d->epilogue;
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    int64_t blocks = (a.total + 255) / 256, cap = (int64_t)sms * 32;
    if (blocks > cap) blocks = cap;
    cudaStream_t stream = tsr_cuda_stream(ctx);
    switch (d->x_dtype) {
    case TSR_F16: dw_conv<__half><<<(unsigned)blocks, 256, 0, stream>>>(a); break;
    case TSR_BF16: dw_conv<__nv_bfloat16><<<(unsigned)blocks, 256, 0, stream>>>(a); break;
    default: dw_conv<float><<<(unsigned)blocks, 256, 0, stream>>>(a); break;
    }
    return tsr_cuda_after_launch("conv2d.sm80.depthwise");
}

extern "C" const tsr_kernel tsr_conv2d_sm80_depthwise = {
    "conv2d.sm80.depthwise", TSR_OP_CONV2D, TSR_BACKEND_CUDA, "sm80", dw_supports, 0, NULL,
    NULL, NULL, dw_run,
};
