/* CUDA attention (SDPA forward) for sm80-class GPUs: one warp per
 * (batch, head, query row), the device-side counterpart of attention.ref.
 * It takes every problem the op front accepts: f32/f16/bf16, any strides
 * (0 strides broadcast reads), GQA/MQA, both causal alignments, an additive
 * mask in f32 or the dtype with broadcasting strides, optional lse, any
 * head_dim and any seq_kv.
 *
 * The 32 lanes split head_dim (lane e holds dims e, e + 32, ...): q . k is a
 * per-lane partial sum and a butterfly shuffle reduction, which leaves the
 * bit-identical logit in every lane, so every branch on it is warp-uniform.
 * The softmax is online (running max, rescaled sum and accumulator, in f32),
 * so no seq_kv-sized scratch exists and seq_kv is unbounded. Keys go KU at a
 * time so that their loads overlap and one rescale serves the group.
 *
 * head_dim <= 256 keeps q and the accumulator in registers (NC = head_dim /
 * 32 rounded up to 1, 2, 4 or 8 per lane). Beyond that the row is produced in
 * 256-wide slices of the output, each recomputing the logits with q read from
 * memory (cached): rare shapes pay compute rather than needing scratch. */
#include <math.h>
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/runtime.h"

enum { WARPS_PER_BLOCK = 4, KU = 4 };

typedef struct attn_args {
    const void *q, *k, *v, *mask;
    void *o;
    float *lse;
    int64_t B, Hq, Sq, Skv, D;
    int64_t group; /* query heads per kv head */
    int64_t qs[3], ks[3], vs[3], os[3], ms[3];
    float scale;
    tsr_causal causal;
    bool mask_f32; /* else the mask is in the tensors' dtype */
} attn_args;

/* Keys [0, end) are visible to query i, as attention.ref's visible_end. */
__device__ __forceinline__ int64_t visible_end(const attn_args &a, int64_t i) {
    int64_t end = a.Skv;
    if (a.causal == TSR_CAUSAL_TOP_LEFT) end = i + 1;
    else if (a.causal == TSR_CAUSAL_BOTTOM_RIGHT) end = (i + 1) + (a.Skv - a.Sq);
    return end < 0 ? 0 : (end > a.Skv ? a.Skv : end);
}

template <typename T>
__device__ __forceinline__ float mask_at(const attn_args &a, int64_t idx) {
    return a.mask_f32 ? ((const float *)a.mask)[idx] : tsr_to_f32<T>(((const T *)a.mask)[idx]);
}

template <typename T, int NC>
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, 4) attn_rowwise(const __grid_constant__ attn_args a) {
    const int lane = threadIdx.x & 31;
    const int64_t rows = a.B * a.Hq * a.Sq, D = a.D;
    const int64_t nwarps = (int64_t)gridDim.x * WARPS_PER_BLOCK;
    const bool qreg = D <= 32 * NC;
    for (int64_t r = (int64_t)blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5); r < rows; r += nwarps) {
        /* r is also the row's lse index: [batch][heads_q][seq_q] */
        const int64_t i = r % a.Sq, h = (r / a.Sq) % a.Hq, b = r / a.Sq / a.Hq, hk = h / a.group;
        const T *qp = (const T *)a.q + (b * a.qs[0] + h * a.qs[1] + i * a.qs[2]);
        const T *kp = (const T *)a.k + (b * a.ks[0] + hk * a.ks[1]);
        const T *vp = (const T *)a.v + (b * a.vs[0] + hk * a.vs[1]);
        T *op = (T *)a.o + (b * a.os[0] + h * a.os[1] + i * a.os[2]);
        const int64_t mo = b * a.ms[0] + h * a.ms[1] + i * a.ms[2];
        const int64_t end = visible_end(a, i), ks2 = a.ks[2], vs2 = a.vs[2];

        float qr[NC];
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int64_t e = lane + 32 * c;
            qr[c] = qreg && e < D ? tsr_to_f32<T>(qp[e]) : 0.0f;
        }

        for (int64_t d0 = 0; d0 < D; d0 += 32 * NC) {
            float acc[NC];
#pragma unroll
            for (int c = 0; c < NC; c++) acc[c] = 0.0f;
            /* m: running max of the non-NaN logits (the softmax's shift);
             * rmx: the reference's own running max, folded with its exact rule
             * (a NaN takes over, and the next logit replaces it), because
             * attention.ref decides "fully masked" on that value alone. */
            float m = -INFINITY, l = 0.0f, rmx = -INFINITY;
            for (int64_t j0 = 0; j0 < end; j0 += KU) {
                float s[KU];
#pragma unroll
                for (int u = 0; u < KU; u++) s[u] = 0.0f;
                if (qreg) {
#pragma unroll
                    for (int u = 0; u < KU; u++) {
                        if (j0 + u >= end) break;
                        const T *kr = kp + (j0 + u) * ks2;
#pragma unroll
                        for (int c = 0; c < NC; c++) {
                            const int64_t e = lane + 32 * c;
                            if (e < D) s[u] = fmaf(qr[c], tsr_to_f32<T>(kr[e]), s[u]);
                        }
                    }
                } else {
                    for (int64_t e = lane; e < D; e += 32) {
                        const float qe = tsr_to_f32<T>(qp[e]);
#pragma unroll
                        for (int u = 0; u < KU; u++)
                            if (j0 + u < end) s[u] = fmaf(qe, tsr_to_f32<T>(kp[(j0 + u) * ks2 + e]), s[u]);
                    }
                }
                /* Butterfly: lanes i and i^off add the same two values, so all
                 * lanes end with the same bits. */
#pragma unroll
                for (int off = 16; off > 0; off >>= 1)
#pragma unroll
                    for (int u = 0; u < KU; u++) s[u] += __shfl_xor_sync(0xffffffffu, s[u], off);

                float mnew = m;
#pragma unroll
                for (int u = 0; u < KU; u++) {
                    if (j0 + u < end) {
                        float x = a.scale * s[u];
                        if (a.mask) x += mask_at<T>(a, mo + j0 + u);
                        s[u] = x;
                        if (!(x <= rmx)) rmx = x;
                        mnew = fmaxf(mnew, x); /* ignores NaN; NaN reaches l and acc below */
                    } else {
                        s[u] = -INFINITY;
                    }
                }
                /* m == mnew covers -inf == -inf (nothing seen yet), where
                 * expf(m - mnew) would be NaN. */
                const float alpha = m == mnew ? 1.0f : expf(m - mnew);
                float p[KU], psum = 0.0f;
#pragma unroll
                for (int u = 0; u < KU; u++) {
                    /* A -inf logit is skipped, never 0 * v: v may hold inf or NaN. */
                    p[u] = s[u] == -INFINITY ? 0.0f : expf(s[u] - mnew);
                    psum += p[u];
                }
                l = l * alpha + psum;
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    const int64_t e = d0 + lane + 32 * c;
                    if (e >= D) continue;
                    float t = acc[c] * alpha;
#pragma unroll
                    for (int u = 0; u < KU; u++)
                        if (s[u] != -INFINITY) t = fmaf(p[u], tsr_to_f32<T>(vp[(j0 + u) * vs2 + e]), t);
                    acc[c] = t;
                }
                m = mnew;
            }
            /* Every key hidden (causal, -inf mask, no keys): 0 and -inf, not 0/0. */
            const bool empty = rmx == -INFINITY;
            const float inv = empty ? 0.0f : 1.0f / l;
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const int64_t e = d0 + lane + 32 * c;
                if (e < D) op[e] = tsr_from_f32<T>(empty ? 0.0f : acc[c] * inv);
            }
            if (d0 == 0 && lane == 0 && a.lse) a.lse[r] = empty ? -INFINITY : m + logf(l);
        }
    }
}

typedef void (*attn_fn)(attn_args);

template <typename T> static attn_fn pick_nc(int64_t D) {
    if (D <= 32) return attn_rowwise<T, 1>;
    if (D <= 64) return attn_rowwise<T, 2>;
    if (D <= 128) return attn_rowwise<T, 4>;
    return attn_rowwise<T, 8>; /* > 256 runs in 256-wide slices */
}

static tsr_status rowwise_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    (void)sch;
    const tsr_attention_problem *ap = &p->u.attention;
    const tsr_attention_desc *d = &ap->d;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;

    attn_args a;
    memset(&a, 0, sizeof a);
    a.q = ap->q, a.k = ap->k, a.v = ap->v, a.o = ap->o;
    a.mask = d->mask;
    a.lse = (float *)d->lse;
    a.B = d->batch, a.Hq = d->heads_q, a.Sq = d->seq_q, a.Skv = d->seq_kv, a.D = d->head_dim;
    a.group = d->heads_q / d->heads_kv;
    for (int t = 0; t < 3; t++) {
        a.qs[t] = d->q_strides[t], a.ks[t] = d->k_strides[t], a.vs[t] = d->v_strides[t];
        a.os[t] = d->o_strides[t], a.ms[t] = d->mask_strides[t];
    }
    a.scale = d->scale;
    a.causal = d->causal;
    a.mask_f32 = d->mask_dtype == TSR_F32;

    const int64_t rows = a.B * a.Hq * a.Sq;
    if (rows == 0) return TSR_OK;
    attn_fn fn;
    switch (d->dtype) {
    case TSR_F16: fn = pick_nc<__half>(a.D); break;
    case TSR_BF16: fn = pick_nc<__nv_bfloat16>(a.D); break;
    default: fn = pick_nc<float>(a.D); break;
    }
    /* One warp per row; the grid-stride loop takes the rest, and the cap
     * keeps gridDim.x in range however many rows there are. */
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    int64_t blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, cap = (int64_t)sms * 32;
    if (blocks > cap) blocks = cap;
    fn<<<(unsigned)blocks, WARPS_PER_BLOCK * 32, 0, tsr_cuda_stream(ctx)>>>(a);
    return tsr_cuda_after_launch("attention.sm80.rowwise");
}

static bool rowwise_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    if (ctx->backend == TSR_BACKEND_CUDA) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.rowwise runs on cuda");
    return false;
}

extern "C" const tsr_kernel tsr_attention_sm80_rowwise = {
    "attention.sm80.rowwise", TSR_OP_ATTENTION, TSR_BACKEND_CUDA, "sm80", rowwise_supports, 0, NULL,
    NULL, NULL, rowwise_run,
};
