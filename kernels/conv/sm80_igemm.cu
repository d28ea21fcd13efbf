/* CUDA conv2d forward for sm80-class GPUs as an implicit GEMM over NHWC
 * activations and OHWI filters, one GEMM per group:
 *   y[pixel m][k] = sum over kk = (r, s, c) of x[im2col(m, kk)] * w[k][kk]
 * with M = n * p * q output pixels, N = k / groups, K = r * s * c / groups.
 * No im2col buffer exists: each thread's output pixels are decoded once, and
 * the (r, s, c) of its k chunk once per k tile, so the input address of a
 * 16-byte chunk (8 channels of one tap) is a few integer operations; taps
 * that fall in the padding are zero-filled by cp.async's src-size.
 *  - conv2d.sm80.igemm_tc: f16/bf16 on tensor cores: multi-stage cp.async
 *    pipeline into XOR-swizzled shared memory, ldmatrix, mma.sync
 *    m16n8k16, f32 accumulators. Needs channels per group % 8 == 0 and
 *    16-byte aligned x and w. Knobs: tile (3 shapes), stages (2-4).
 *  - conv2d.sm80.igemm_simt: f32 (and f16/bf16 that the tensor-core kernel
 *    declines, such as 3-channel stems) on the FMA units: 64x64 tiles,
 *    element-wise im2col into shared memory, 4x4 outputs per thread.
 * Both apply the fused epilogue (bias, activation, residual) to the
 * accumulator before the only store of y; a residual that is y itself is
 * read by the thread that then overwrites it. NCHW and other filter
 * formats are declined by supports() and run on conv2d.sm80.direct. */
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/mma.cuh"
#include "../../arch/sm80/runtime.h"

typedef struct ig_args {
    const void *x, *w;
    void *y;
    int64_t M;             /* n * p * q */
    int N, K;              /* GEMM n = k / groups, GEMM k = r * s * cg */
    int H, W, C, P, Q, R, S, Cg, Kout;
    int sh, sw, pt, pl, dh, dw;
    tsr_dtype y_dtype;
    tsr_epilogue epi;
} ig_args;

static ig_args ig_args_for(const tsr_conv2d_problem *cp) {
    const tsr_conv2d_desc *d = &cp->d;
    ig_args a;
    memset(&a, 0, sizeof a);
    a.x = cp->x, a.w = cp->w, a.y = cp->y;
    a.M = d->n * cp->p * cp->q;
    a.N = (int)(d->k / d->groups);
    a.Cg = (int)(d->c / d->groups);
    a.K = (int)(d->r * d->s * a.Cg);
    a.H = (int)d->h, a.W = (int)d->w, a.C = (int)d->c, a.P = (int)cp->p, a.Q = (int)cp->q;
    a.R = (int)d->r, a.S = (int)d->s, a.Kout = (int)d->k;
    a.sh = (int)d->stride_h, a.sw = (int)d->stride_w, a.pt = (int)d->pad_top, a.pl = (int)d->pad_left;
    a.dh = (int)d->dilation_h, a.dw = (int)d->dilation_w;
    a.y_dtype = d->y_dtype;
    a.epi = d->epilogue;
    return a;
}

/* The epilogue and the store of one output. Out of line (as the GEMM's):
 * inlined at each of 64 accumulators, the activations multiply code size
 * and compile time for no speed. */
__device__ __noinline__ void ig_store_epi(const ig_args &a, int64_t yi, int k, float v) {
    tsr_dev_store(a.y, a.y_dtype, yi, tsr_dev_epilogue(a.epi, v, k, 0, 0, yi));
}
__device__ __forceinline__ void ig_emit(const ig_args &a, int64_t m, int k, float v) {
    const int64_t yi = m * a.Kout + k; /* NHWC y: pixel-major, channels contiguous */
    if (a.epi.num_steps == 0) tsr_dev_store(a.y, a.y_dtype, yi, v);
    else ig_store_epi(a, yi, k, v);
}

/* An output pixel's input origin: the (n, ih0, iw0) of pixel m, with n
 * folded into the base offset of its image. */
typedef struct ig_pix {
    int64_t base; /* n * H * W * C, or -1 past the last pixel */
    int ih0, iw0;
} ig_pix;

__device__ __forceinline__ ig_pix ig_pixel(const ig_args &a, int64_t m) {
    ig_pix px;
    if (m >= a.M) {
        px.base = -1, px.ih0 = px.iw0 = 0;
        return px;
    }
    const int ow = (int)(m % a.Q);
    const int64_t t = m / a.Q;
    const int oh = (int)(t % a.P);
    const int64_t n = t / a.P;
    px.base = n * a.H * a.W * a.C;
    px.ih0 = oh * a.sh - a.pt, px.iw0 = ow * a.sw - a.pl;
    return px;
}

/* ---------------------------------------------------- tensor-core kernel */

/* Chunk c of a 4-chunk (32-element) row r sits at c ^ ((r >> 1) & 3): the 8
 * rows an ldmatrix phase reads (64 bytes apart) then cover all 32 banks. */
__device__ __forceinline__ int ig_swz(int r, int c) { return c ^ ((r >> 1) & 3); }

template <typename T, int BM, int BN, int WM, int WN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) ig_tc(const __grid_constant__ ig_args a, int stages) {
    constexpr int BK = 32, CPR = BK / 8; /* k elements per tile, 16-byte chunks per row */
    constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * WARPS_N * 32;
    constexpr int MI = WM / 16, NI = WN / 8;
    constexpr int A_IT = BM * CPR / THREADS, B_IT = BN * CPR / THREADS;
    static_assert(BM * CPR % THREADS == 0 && BN * CPR % THREADS == 0 && NI % 2 == 0, "tile");
    extern __shared__ uint4 ig_smem_raw[];
    T *smem = (T *)ig_smem_raw;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int64_t m0 = (int64_t)blockIdx.x * BM;
    const int n0 = blockIdx.y * BN, g = blockIdx.z;
    const T *x = (const T *)a.x + (int64_t)g * a.Cg;
    const T *w = (const T *)a.w + (int64_t)g * a.N * a.K;
    const int ktiles = (a.K + BK - 1) / BK;

    /* A thread's chunks keep their column (tid % CPR) and rows across k
     * tiles: decode its pixels once. */
    const int cc = tid % CPR, r_first = tid / CPR;
    ig_pix px[A_IT];
#pragma unroll
    for (int it = 0; it < A_IT; it++) px[it] = ig_pixel(a, m0 + r_first + it * (THREADS / CPR));

    auto load_tile = [&](int slot, int kt) {
        T *sA = smem + slot * (BM + BN) * BK, *sB = sA + BM * BK;
        const int kk = kt * BK + cc * 8;
        /* the chunk's tap and channel: 8 channels of one (r, s), as cg % 8 == 0 */
        const int tap = kk / a.Cg, c = kk - tap * a.Cg, r = tap / a.S, s = tap - r * a.S;
        const bool kin = kk < a.K;
#pragma unroll
        for (int it = 0; it < A_IT; it++) {
            const int row = r_first + it * (THREADS / CPR);
            const int ih = px[it].ih0 + r * a.dh, iw = px[it].iw0 + s * a.dw;
            const bool in = kin && px[it].base >= 0 && ih >= 0 && ih < a.H && iw >= 0 && iw < a.W;
            const T *src = in ? x + px[it].base + ((int64_t)ih * a.W + iw) * a.C + c : (const T *)a.x;
            tsr_cp_async16(sA + row * BK + ig_swz(row, cc) * 8, src, in ? 16 : 0);
        }
#pragma unroll
        for (int it = 0; it < B_IT; it++) {
            const int row = r_first + it * (THREADS / CPR);
            const bool in = kin && n0 + row < a.N;
            const T *src = in ? w + (int64_t)(n0 + row) * a.K + kk : (const T *)a.w;
            tsr_cp_async16(sB + row * BK + ig_swz(row, cc) * 8, src, in ? 16 : 0);
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

    for (int st = 0; st < stages - 1; st++) {
        if (st < ktiles) load_tile(st, st);
        tsr_cp_async_commit();
    }
    const int j8 = lane >> 3, i8 = lane & 7;
    for (int kt = 0; kt < ktiles; kt++) {
        /* stages - 2 groups may stay in flight: tile kt has landed */
        switch (stages) {
        case 2: tsr_cp_async_wait<0>(); break;
        case 3: tsr_cp_async_wait<1>(); break;
        default: tsr_cp_async_wait<2>(); break;
        }
        __syncthreads(); /* tile kt visible to all; slot (kt - 1) % stages is free */
        const int next = kt + stages - 1;
        if (next < ktiles) load_tile(next % stages, next);
        tsr_cp_async_commit();

        const T *sA = smem + (kt % stages) * (BM + BN) * BK, *sB = sA + BM * BK;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ks++) {
            uint32_t af[MI][4], bf[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                const int row = wm * WM + mi * 16 + (lane & 15), ch = ks * 2 + (lane >> 4);
                tsr_ldmatrix_x4(af[mi], sA + row * BK + ig_swz(row, ch) * 8);
            }
#pragma unroll
            for (int np = 0; np < NI / 2; np++) {
                uint32_t r4[4];
                const int row = wn * WN + np * 16 + (j8 >> 1) * 8 + i8, ch = ks * 2 + (j8 & 1);
                tsr_ldmatrix_x4(r4, sB + row * BK + ig_swz(row, ch) * 8);
                bf[2 * np][0] = r4[0], bf[2 * np][1] = r4[1];
                bf[2 * np + 1][0] = r4[2], bf[2 * np + 1][1] = r4[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) tsr_mma_op<T>::run(acc[mi][ni], af[mi], bf[ni]);
        }
    }
    tsr_cp_async_wait<0>();

#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int64_t m = m0 + wm * WM + mi * 16 + (lane >> 2) + 8 * (r >> 1);
                const int n = n0 + wn * WN + ni * 8 + (lane & 3) * 2 + (r & 1);
                if (m < a.M && n < a.N) ig_emit(a, m, g * a.N + n, acc[mi][ni][r]);
            }
}

typedef struct ig_config {
    int bm, bn, wm, wn;
} ig_config;
#define IG_CONFIGS 3
static const ig_config ig_configs[IG_CONFIGS] = {
    {128, 128, 64, 64}, /* 0: 4 warps, large layers */
    {128, 64, 64, 32},  /* 1: 4 warps, 64-channel layers */
    {64, 64, 32, 32},   /* 2: 4 warps, small grids */
};

static size_t ig_smem(const ig_config *c, int stages) { return (size_t)stages * (size_t)(c->bm + c->bn) * 32 * 2; }

typedef void (*ig_fn)(ig_args, int);
template <typename T> static ig_fn ig_pick(int cfg) {
    switch (cfg) {
    case 1: return ig_tc<T, 128, 64, 64, 32>;
    case 2: return ig_tc<T, 64, 64, 32, 32>;
    default: return ig_tc<T, 128, 128, 64, 64>;
    }
}

static const int ig_tile_values[] = {0, 1, 2};
static const int ig_stage_values[] = {2, 3, 4};
static const tsr_knob ig_knobs[] = {{"tile", 3, ig_tile_values}, {"stages", 3, ig_stage_values}};

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* What both implicit-GEMM kernels need: CUDA, NHWC, OHWI, sizes in int. */
static bool ig_common(const tsr_conv2d_problem *cp, const tsr_context *ctx, const char *who, char *why, size_t n) {
    const tsr_conv2d_desc *d = &cp->d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s runs on cuda", who), false;
    if (d->format != TSR_NHWC || d->filter_format != TSR_FILTER_OHWI)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s takes NHWC x with OHWI filters (conv2d.sm80.direct runs "
                       "the others)", who), false;
    /* the pixel and tap arithmetic is int32 within an image; the pixel
     * index and offsets are int64 */
    const int64_t lim = (int64_t)1 << 30;
    if (d->h * d->w * d->c >= lim || d->r * d->s * (d->c / d->groups) >= lim || d->k >= lim ||
        cp->p * cp->q >= lim || d->groups > 65535 || d->pad_top >= lim || d->pad_left >= lim)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: an image, filter or padding of 2^30 elements or more",
                       who), false;
    return true;
}

static bool ig_tc_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    if (!ig_common(cp, ctx, "conv2d.sm80.igemm_tc", why, n)) return false;
    if (d->x_dtype != TSR_F16 && d->x_dtype != TSR_BF16)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_tc takes f16/bf16"), false;
    if ((d->c / d->groups) % 8 || !aligned16(cp->x) || !aligned16(cp->w))
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_tc needs channels per group %% 8 == 0 "
                       "and 16-byte aligned x and w (conv2d.sm80.igemm_simt runs the others)"), false;
    if (ceil_div(d->k / d->groups, 64) > 65535)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_tc: too many output channels per group"),
               false;
    return true;
}

/* The largest tile that still gives every SM a CTA, three stages. */
static void ig_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    const int64_t M = d->n * cp->p * cp->q, N = d->k / d->groups;
    int cfg = 2;
    for (int i = 0; i < IG_CONFIGS; i++) {
        if (i == 0 && N <= 64) continue; /* half the 128-wide tile would be padding */
        if (ceil_div(M, ig_configs[i].bm) * ceil_div(N, ig_configs[i].bn) * d->groups >= sms) {
            cfg = i;
            break;
        }
    }
    s->v[0] = cfg;
    s->v[1] = 3;
}

static bool ig_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p;
    if (s->v[0] < 0 || s->v[0] >= IG_CONFIGS || s->v[1] < 2 || s->v[1] > 4) return false;
    return ig_smem(&ig_configs[s->v[0]], s->v[1]) <= tsr_cuda(ctx)->smem_optin;
}

static tsr_status ig_tc_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    ig_args a = ig_args_for(cp);
    if (a.M == 0 || a.N == 0) return TSR_OK;
    tsr_schedule s = *sch;
    if (!ig_valid(p, ctx, &s)) ig_default(p, ctx, &s);
    const ig_config *c = &ig_configs[s.v[0]];
    const size_t smem = ig_smem(c, s.v[1]);
    const int64_t mt = ceil_div(a.M, c->bm);
    if (mt > 0x7fffffff)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_tc: %lld pixel tiles exceed the grid", (long long)mt);
    ig_fn fn = cp->d.x_dtype == TSR_F16 ? ig_pick<__half>(s.v[0]) : ig_pick<__nv_bfloat16>(s.v[0]);
    st = tsr_cuda_status(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                         "conv2d.sm80.igemm_tc: cudaFuncSetAttribute");
    if (st) return st;
    dim3 grid((unsigned)mt, (unsigned)ceil_div(a.N, c->bn), (unsigned)cp->d.groups);
    fn<<<grid, (c->bm / c->wm) * (c->bn / c->wn) * 32, smem, tsr_cuda_stream(ctx)>>>(a, s.v[1]);
    return tsr_cuda_after_launch("conv2d.sm80.igemm_tc");
}

extern "C" const tsr_kernel tsr_conv2d_sm80_igemm_tc = {
    "conv2d.sm80.igemm_tc", TSR_OP_CONV2D, TSR_BACKEND_CUDA, "sm80", ig_tc_supports, 2, ig_knobs,
    ig_default, ig_valid, ig_tc_run,
};

/* ----------------------------------------------------------- SIMT kernel */

/* 64 pixels x 64 channels per block, k steps of 16, 256 threads with 4 x 4
 * outputs each. Loads go element by element (any channel count, any
 * alignment), consecutive threads along k, which within a tap is along the
 * contiguous channels; shared tiles are k-major so that the compute reads
 * float4s. The next k tile is fetched into registers during the compute. */
template <typename T> __global__ void __launch_bounds__(256) ig_simt(const __grid_constant__ ig_args a) {
    constexpr int BM = 64, BN = 64, BK = 16, PAD = 4;
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int64_t m0 = (int64_t)blockIdx.x * BM;
    const int n0 = blockIdx.y * BN, g = blockIdx.z;
    const T *x = (const T *)a.x + (int64_t)g * a.Cg;
    const T *w = (const T *)a.w + (int64_t)g * a.N * a.K;

    /* element e = tid + 256 * it: k column e % 16 (= tid % 16), row e / 16 */
    const int kc = tid & 15, r_first = tid >> 4;
    ig_pix px[4];
#pragma unroll
    for (int it = 0; it < 4; it++) px[it] = ig_pixel(a, m0 + r_first + it * 16);
    float ra[4], rb[4];
    auto fetch = [&](int k0) {
        const int kk = k0 + kc;
        const bool kin = kk < a.K;
        const int tap = kin ? kk / a.Cg : 0, c = kk - tap * a.Cg, r = tap / a.S, s = tap - r * a.S;
#pragma unroll
        for (int it = 0; it < 4; it++) {
            const int ih = px[it].ih0 + r * a.dh, iw = px[it].iw0 + s * a.dw;
            const bool in = kin && px[it].base >= 0 && ih >= 0 && ih < a.H && iw >= 0 && iw < a.W;
            ra[it] = in ? tsr_to_f32<T>(x[px[it].base + ((int64_t)ih * a.W + iw) * a.C + c]) : 0.0f;
            const int n = n0 + r_first + it * 16;
            rb[it] = kin && n < a.N ? tsr_to_f32<T>(w[(int64_t)n * a.K + kk]) : 0.0f;
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int it = 0; it < 4; it++) As[buf][kc][r_first + it * 16] = ra[it], Bs[buf][kc][r_first + it * 16] = rb[it];
    };

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    int buf = 0;
    if (a.K > 0) {
        fetch(0);
        stash(0);
    }
    __syncthreads();
    for (int k0 = 0; k0 < a.K; k0 += BK) {
        const bool more = k0 + BK < a.K;
        if (more) fetch(k0 + BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            const float4 av = *(const float4 *)&As[buf][k][ty * 4];
            const float4 bv = *(const float4 *)&Bs[buf][k][tx * 4];
            const float am[4] = {av.x, av.y, av.z, av.w}, bn[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(am[i], bn[j], acc[i][j]);
        }
        if (more) {
            /* the other buffer was last read before the previous barrier */
            stash(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t m = m0 + ty * 4 + i;
            const int n = n0 + tx * 4 + j;
            if (m < a.M && n < a.N) ig_emit(a, m, g * a.N + n, acc[i][j]);
        }
}

static bool ig_simt_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    const tsr_conv2d_problem *cp = &p->u.conv;
    if (!ig_common(cp, ctx, "conv2d.sm80.igemm_simt", why, n)) return false;
    if (ceil_div(cp->d.k / cp->d.groups, 64) > 65535)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_simt: too many output channels per group"),
               false;
    return true;
}

static tsr_status ig_simt_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    (void)sch;
    const tsr_conv2d_problem *cp = &p->u.conv;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    ig_args a = ig_args_for(cp);
    if (a.M == 0 || a.N == 0) return TSR_OK;
    const int64_t mt = ceil_div(a.M, 64);
    if (mt > 0x7fffffff)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "conv2d.sm80.igemm_simt: %lld pixel tiles exceed the grid", (long long)mt);
    dim3 grid((unsigned)mt, (unsigned)ceil_div(a.N, 64), (unsigned)cp->d.groups);
    cudaStream_t stream = tsr_cuda_stream(ctx);
    switch (cp->d.x_dtype) {
    case TSR_F16: ig_simt<__half><<<grid, 256, 0, stream>>>(a); break;
    case TSR_BF16: ig_simt<__nv_bfloat16><<<grid, 256, 0, stream>>>(a); break;
    default: ig_simt<float><<<grid, 256, 0, stream>>>(a); break;
    }
    return tsr_cuda_after_launch("conv2d.sm80.igemm_simt");
}

extern "C" const tsr_kernel tsr_conv2d_sm80_igemm_simt = {
    "conv2d.sm80.igemm_simt", TSR_OP_CONV2D, TSR_BACKEND_CUDA, "sm80", ig_simt_supports, 0, NULL,
    NULL, NULL, ig_simt_run,
};
