/* CUDA conv2d for sm80-class GPUs: a direct convolution, the device-side
 * counterpart of conv2d.ref. It takes every problem the op front accepts
 * (NHWC/NCHW, OHWI/OIHW/HWIO, stride, asymmetric padding, dilation, groups,
 * f32/f16/bf16 inputs, the fused epilogue), so CUDA contexts never fall back
 * to the host.
 *
 * One thread per output element, grid-stride, int64 index math throughout
 * (the op front only promises that element counts fit in int64). The thread
 * index is the output's own offset: y is dense in its format, so the store is
 * coalesced in both formats, and in NHWC neighbouring threads share a pixel,
 * which makes their x reads one broadcast. Accumulation is f32 (fmaf); the
 * reference's double accumulation differs only by rounding. */
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/runtime.h"

typedef struct conv_args {
    const void *x, *w;
    void *y;
    int64_t N, C, H, W, K, R, S, P, Q;
    int64_t Cg, Kg; /* channels per group, in and out */
    int64_t sh, sw, pt, pl, dh, dw;
    /* Element steps along the group's input channel in x and in w, so the
     * innermost loop is one multiply-add whatever the formats are. */
    int64_t x_cstep, w_cstep;
    bool nhwc;
    tsr_filter_format ffmt;
    tsr_dtype y_dtype;
    tsr_epilogue epi;
} conv_args;

/* w[k][c = 0][r][s] in the filter's format; layout.h's tsr_filter_offset
 * with c = 0 (that header is C, not usable from device code). */
__device__ __forceinline__ int64_t filter_base(const conv_args &a, int64_t k, int64_t r, int64_t s) {
    switch (a.ffmt) {
    case TSR_FILTER_OIHW: return (k * a.Cg * a.R + r) * a.S + s;
    case TSR_FILTER_HWIO: return (r * a.S + s) * a.Cg * a.K + k;
    default: return ((k * a.R + r) * a.S + s) * a.Cg; /* OHWI */
    }
}

template <typename T>
__global__ void __launch_bounds__(256, 4) conv_direct(const __grid_constant__ conv_args a) {
    const T *x = (const T *)a.x, *w = (const T *)a.w;
    const int64_t total = a.N * a.K * a.P * a.Q;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t n, k, oh, ow, t;
        if (a.nhwc) { /* [n][oh][ow][k]: k fastest */
            k = idx % a.K, t = idx / a.K;
            ow = t % a.Q, t /= a.Q;
            oh = t % a.P, n = t / a.P;
        } else { /* [n][k][oh][ow]: ow fastest */
            ow = idx % a.Q, t = idx / a.Q;
            oh = t % a.P, t /= a.P;
            k = t % a.K, n = t / a.K;
        }
        const int64_t c0 = (k / a.Kg) * a.Cg;
        const int64_t ih0 = oh * a.sh - a.pt, iw0 = ow * a.sw - a.pl;
        float acc = 0.0f;
        for (int64_t r = 0; r < a.R; r++) {
            const int64_t ih = ih0 + r * a.dh;
            if (ih < 0 || ih >= a.H) continue; /* padding contributes zeros */
            for (int64_t s = 0; s < a.S; s++) {
                const int64_t iw = iw0 + s * a.dw;
                if (iw < 0 || iw >= a.W) continue;
                const T *xp = x + (a.nhwc ? ((n * a.H + ih) * a.W + iw) * a.C + c0
                                          : ((n * a.C + c0) * a.H + ih) * a.W + iw);
                const T *wp = w + filter_base(a, k, r, s);
                for (int64_t c = 0; c < a.Cg; c++)
                    acc = fmaf(tsr_to_f32<T>(xp[c * a.x_cstep]), tsr_to_f32<T>(wp[c * a.w_cstep]), acc);
            }
        }
        /* The residual is dense in y's format: with batch and row 0 the shared
         * epilogue reads it at column idx, exactly as conv2d.ref calls it. */
        const float v = tsr_dev_epilogue(a.epi, acc, k, 0, 0, idx);
        tsr_dev_store(a.y, a.y_dtype, idx, v);
    }
}

static int blocks_for(int64_t n, int threads, int sms) {
    /* Enough blocks to fill every SM several times over; the grid-stride
     * loop covers the rest, and the cap keeps gridDim.x in range. */
    int64_t blocks = (n + threads - 1) / threads, cap = (int64_t)(sms > 0 ? sms : 1) * 32;
    return (int)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

static tsr_status direct_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    (void)sch;
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;

    conv_args a;
    memset(&a, 0, sizeof a);
    a.x = cp->x, a.w = cp->w, a.y = cp->y;
    a.N = d->n, a.C = d->c, a.H = d->h, a.W = d->w, a.K = d->k, a.R = d->r, a.S = d->s;
    a.P = cp->p, a.Q = cp->q;
    a.Cg = d->c / d->groups, a.Kg = d->k / d->groups;
    a.sh = d->stride_h, a.sw = d->stride_w, a.pt = d->pad_top, a.pl = d->pad_left;
    a.dh = d->dilation_h, a.dw = d->dilation_w;
    a.nhwc = d->format == TSR_NHWC;
    a.x_cstep = a.nhwc ? 1 : d->h * d->w;
    a.ffmt = d->filter_format;
    a.w_cstep = a.ffmt == TSR_FILTER_OIHW ? d->r * d->s : a.ffmt == TSR_FILTER_HWIO ? d->k : 1;
    a.y_dtype = d->y_dtype;
    a.epi = d->epilogue;

    const int64_t total = a.N * a.K * a.P * a.Q;
    if (total == 0) return TSR_OK;
    const int threads = 256, blocks = blocks_for(total, threads, tsr_cuda(ctx)->sm_count);
    cudaStream_t stream = tsr_cuda_stream(ctx);
    switch (d->x_dtype) { /* the front makes w_dtype equal x_dtype */
    case TSR_F16: conv_direct<__half><<<blocks, threads, 0, stream>>>(a); break;
    case TSR_BF16: conv_direct<__nv_bfloat16><<<blocks, threads, 0, stream>>>(a); break;
    default: conv_direct<float><<<blocks, threads, 0, stream>>>(a); break;
    }
    return tsr_cuda_after_launch("conv2d.sm80.direct");
}

static bool direct_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    if (ctx->backend == TSR_BACKEND_CUDA) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.direct runs on cuda");
    return false;
}

extern "C" const tsr_kernel tsr_conv2d_sm80_direct = {
    "conv2d.sm80.direct", TSR_OP_CONV2D, TSR_BACKEND_CUDA, "sm80", direct_supports, 0, NULL,
    NULL, NULL, direct_run,
};
