/* CUDA attention for sm80-class GPUs on tensor cores, FlashAttention-2
 * style: attention.sm80.flash, f16/bf16, head_dim 64, 96, 128 or 256.
 *
 * One thread block owns block_q query rows of one (batch, head); its warps
 * split those rows, 16 or 32 each (one or two m16 MMA row blocks). K and V
 * tiles of block_kv keys stream through shared memory by cp.async, double
 * buffered (tile t + 1 lands while tile t is computed). Per tile a warp
 * computes S = Q K^T with ldmatrix + mma.sync m16n8k16, runs the online
 * softmax on S in registers (exp2 with scale * log2(e) folded into one
 * multiply), converts P to f16/bf16 in registers (the S accumulator layout
 * is the A-operand layout of the next MMA, so no shared-memory round trip)
 * and accumulates O += P V. Rows are normalised once, at the end.
 *
 * Causal (both alignments): a block visits only the key tiles some row of
 * it can see; masking runs only on tiles that cross a row's visible end
 * (the diagonal ones) or the end of the keys. GQA: the kv head is h /
 * group, K/V are never copied. The additive mask is added per element.
 *
 * Decode (seq_q <= 16): the rows of a block are the (query head of the GQA
 * group, query) pairs of one kv head, so one K/V read serves the whole
 * group, and the key tiles are split over kv_splits blocks, each writing an
 * f32 partial O and its log-sum-exp to the context's workspace; a combine
 * kernel merges them.
 *
 * Semantics as attention.ref: a row that sees no key gives O = 0 and
 * lse = -inf; a NaN or +inf logit gives a NaN row. One difference remains,
 * as in every tensor-core attention: a hidden key whose V holds inf or NaN
 * poisons its row (the MMA computes 0 * inf), where the reference skips it.
 *
 * f32, other head dims, unaligned or odd strides go to attention.sm80.rowwise
 * (supports() says why). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/mma.cuh"
#include "../../arch/sm80/runtime.h"

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

typedef struct fa_args {
    const void *q, *k, *v, *mask;
    void *o;
    float *lse;
    float *part_o, *part_lse; /* split-KV partials: [split][row][D], [split][row] (log2) */
    int64_t B, Hq, Hkv, Sq, Skv;
    int64_t group; /* query heads per kv head */
    int64_t qs[3], ks[3], vs[3], os[3], ms[3];
    int64_t rows;  /* rows per (batch, grid.y): seq_q, or group * seq_q when packed */
    float scale_log2;
    tsr_causal causal;
    bool mask_f32;
    bool pack;     /* decode: rows are (query head in group, query) of kv head grid.y */
    int splits;    /* > 1: write partials for the combine */
    int tiles_per_split;
} fa_args;

/* Keys [0, end) are visible to query i (tsr_attention_visible_end). */
__device__ __forceinline__ int64_t fa_visible_end(const fa_args &a, int64_t i) {
    int64_t end = a.Skv;
    if (a.causal == TSR_CAUSAL_TOP_LEFT) end = i + 1;
    else if (a.causal == TSR_CAUSAL_BOTTOM_RIGHT) end = (i + 1) + (a.Skv - a.Sq);
    return end < 0 ? 0 : (end > a.Skv ? a.Skv : end);
}

/* Query head and query index of block row R of grid.y index hy. */
__device__ __forceinline__ void fa_row(const fa_args &a, int64_t hy, int64_t R, int64_t &h, int64_t &i) {
    if (a.pack) h = hy * a.group + R / a.Sq, i = R % a.Sq;
    else h = hy, i = R;
}

/* The smallest and largest query index among rows [R0, R1) (R1 > R0):
 * visible ends grow with i, so these bound every row's end. */
__device__ __forceinline__ void fa_query_span(const fa_args &a, int64_t R0, int64_t R1, int64_t &ilo, int64_t &ihi) {
    if (!a.pack) {
        ilo = R0, ihi = R1 - 1;
        return;
    }
    const int64_t a0 = R0 % a.Sq, a1 = (R1 - 1) % a.Sq;
    if (R1 - R0 >= a.Sq || a0 > a1) ilo = 0, ihi = a.Sq - 1;
    else ilo = a0, ihi = a1;
}

__device__ __forceinline__ uint32_t fa_pack2(float lo, float hi, __half *) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&h;
}
__device__ __forceinline__ uint32_t fa_pack2(float lo, float hi, __nv_bfloat16 *) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&h;
}

/* Rows of D elements (16-byte chunks, 8 elements) into a shared tile whose
 * rows are SW chunks wide (D / 8 rounded up to a multiple of 8, so the XOR
 * swizzle stays inside the row); chunk c of row r sits at c ^ (r & 7), so
 * the 8 rows an ldmatrix phase reads hit 8 different bank groups. Rows the
 * caller marks invalid are zero-filled (src-size 0 reads nothing). */
template <int D> struct fa_geom {
    static constexpr int CH = D / 8;                     /* chunks per row */
    static constexpr int SW = (CH + 7) / 8 * 8;          /* chunks per smem row */
    static constexpr int SE = SW * 8;                    /* elements per smem row */
};

__device__ __forceinline__ int fa_swz(int r, int c) { return c ^ (r & 7); }

/* A K or V tile: each thread owns one chunk column c and rows r0 + it *
 * RSTEP, so its source advances by a constant stride and its destination
 * by constants (the swizzle of row r0 + it * RSTEP is that of r0 XOR a
 * constant, as r0 < RSTEP and RSTEP is a power of two). Register-light on
 * purpose: with per-chunk addresses recomputed from the chunk index the
 * compiler hoisted every address out of the key loop (~60 registers). */
template <typename T, int D, int ROWS, int THREADS>
__device__ __forceinline__ void fa_load_kv(uint32_t s_addr, const T *base, int64_t stride, int key0, int nkeys, int tid) {
    typedef fa_geom<D> G;
    constexpr int RSTEP = THREADS / G::SW, ITERS = ROWS / RSTEP;
    static_assert(THREADS % G::SW == 0 && ROWS % RSTEP == 0 && (RSTEP & (RSTEP - 1)) == 0, "tile geometry");
    const int r0 = tid / G::SW, c = tid % G::SW;
    if (c >= G::CH) return; /* the padding chunks of a head_dim-96 row */
    const uint32_t row = s_addr + (uint32_t)r0 * (G::SE * 2), inrow = (uint32_t)(c ^ (r0 & 7)) * 16;
    const T *src = base + (int64_t)(key0 + r0) * stride + c * 8;
    const int64_t step = (int64_t)RSTEP * stride;
#pragma unroll
    for (int it = 0; it < ITERS; it++) {
        const bool in = key0 + r0 + it * RSTEP < nkeys;
        tsr_cp_async16_s(row + (uint32_t)(it * RSTEP * G::SE * 2) + (inrow ^ (uint32_t)(((it * RSTEP) & 7) * 16)),
                         in ? src : base, in ? 16 : 0);
        src += step;
    }
}

template <typename T, int D, int BQ, int THREADS>
__device__ __forceinline__ void fa_load_q(T *s, const fa_args &a, int64_t b, int64_t hy, int64_t R0, int tid) {
    typedef fa_geom<D> G;
    const T *q = (const T *)a.q;
#pragma unroll
    for (int it = 0; it < (BQ * G::CH + THREADS - 1) / THREADS; it++) {
        const int idx = tid + it * THREADS;
        if (BQ * G::CH % THREADS != 0 && idx >= BQ * G::CH) break;
        const int r = idx / G::CH, c = idx % G::CH;
        const bool in = R0 + r < a.rows;
        const T *src = q;
        if (in) {
            int64_t h, i;
            fa_row(a, hy, R0 + r, h, i);
            src = q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2] + c * 8;
        }
        tsr_cp_async16(s + r * G::SE + fa_swz(r, c) * 8, src, in ? 16 : 0);
    }
}

template <typename T> __device__ __forceinline__ float fa_mask_at(const fa_args &a, int64_t idx) {
    return a.mask_f32 ? ((const float *)a.mask)[idx] : tsr_to_f32<T>(((const T *)a.mask)[idx]);
}

/* The result of one row of one thread: the store of O (or of the f32
 * partial) and the lse. Inline: out of line, the row's accumulators went
 * through a stack frame and the call cost ~20 registers in the k loop. */
template <typename T, int D>
__device__ __forceinline__ void fa_store_row(const fa_args &a, int64_t b, int sp, int64_t h, int64_t i, int lane,
                                          const float *o, float m, float l) {
    const bool empty = m == -INFINITY && l == 0.0f; /* no visible key (NaN keeps l NaN) */
    const float inv = empty ? 0.0f : 1.0f / l;
    const float lse2 = empty ? -INFINITY : m + log2f(l);
    const int64_t r = (b * a.Hq + h) * a.Sq + i; /* the lse index */
    const int cq = (lane & 3) * 2;
    if (a.splits > 1) {
        float *po = a.part_o + ((int64_t)sp * a.B * a.Hq * a.Sq + r) * D;
#pragma unroll
        for (int db = 0; db < D / 8; db++)
            *(float2 *)(po + db * 8 + cq) = make_float2(o[2 * db] * inv, o[2 * db + 1] * inv);
        if ((lane & 3) == 0) a.part_lse[(int64_t)sp * a.B * a.Hq * a.Sq + r] = lse2;
        return;
    }
    T *op = (T *)a.o + b * a.os[0] + h * a.os[1] + i * a.os[2];
#pragma unroll
    for (int db = 0; db < D / 8; db++)
        *(uint32_t *)(op + db * 8 + cq) = fa_pack2(o[2 * db] * inv, o[2 * db + 1] * inv, (T *)0);
    if (a.lse && (lane & 3) == 0) a.lse[r] = lse2 * LN2;
}

/* grid: x = row tile (heaviest causal tiles first), y = query head (kv head
 * when packed), z = batch * splits + split. */
template <typename T, int D, int BQ, int BKV, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 1) fa_fwd(fa_args a) {
    typedef fa_geom<D> G;
    constexpr int THREADS = WARPS * 32, MI = BQ / (16 * WARPS), NB = BKV / 8, DB = D / 8;
    static_assert(MI == 1 || MI == 2, "16 or 32 rows per warp");
    static_assert(D % 16 == 0 && BKV % 16 == 0, "MMA shapes");
    extern __shared__ uint4 fa_smem_raw[];
    T *sQ = (T *)fa_smem_raw, *sK = sQ + BQ * G::SE, *sV = sK + 2 * BKV * G::SE;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t hy = blockIdx.y, b = blockIdx.z / a.splits;
    const int sp = (int)(blockIdx.z % a.splits);
    const int64_t R0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * BQ; /* long causal tiles launch first */
    const int64_t R1 = min(R0 + BQ, a.rows);
    const int64_t hk = a.pack ? hy : hy / a.group;

    /* Key tiles this block visits: up to the last row's visible end. */
    int64_t ilo, ihi;
    fa_query_span(a, R0, R1, ilo, ihi);
    const int64_t block_end = fa_visible_end(a, ihi);
    const int ntiles = (int)((block_end + BKV - 1) / BKV);
    const int t_begin = min(ntiles, sp * a.tiles_per_split);
    const int t_end = min(ntiles, t_begin + a.tiles_per_split);

    /* This warp's rows; a warp with none only helps with the loads. */
    const int64_t W0 = R0 + warp * 16 * MI, W1 = min(W0 + 16 * MI, a.rows);
    const bool warp_active = W0 < W1;
    int wmin_end = 0;
    if (warp_active) {
        int64_t wlo, whi;
        fa_query_span(a, W0, W1, wlo, whi);
        wmin_end = (int)fa_visible_end(a, wlo); /* keys below this are visible to all its rows */
    }

    /* Per thread: the visible end of rows g and g + 8 of each 16-row
     * block. A row past the end has zero Q, so finite logits; it is never
     * stored and must not force masking. */
    int rend[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int64_t R = W0 + mi * 16 + (lane >> 2) + 8 * hf;
            int64_t h, i;
            fa_row(a, hy, R < a.rows ? R : 0, h, i);
            rend[mi][hf] = (int)(R < a.rows ? fa_visible_end(a, i) : a.Skv);
        }

    float o[MI][DB][4], m[MI][2], l[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
        for (int db = 0; db < DB; db++)
#pragma unroll
            for (int r = 0; r < 4; r++) o[mi][db][r] = 0.0f;
        m[mi][0] = m[mi][1] = -INFINITY;
        l[mi][0] = l[mi][1] = 0.0f;
    }

    const T *kb = (const T *)a.k + b * a.ks[0] + hk * a.ks[1];
    const T *vb = (const T *)a.v + b * a.vs[0] + hk * a.vs[1];
    if (t_begin < t_end) {
        fa_load_q<T, D, BQ, THREADS>(sQ, a, b, hy, R0, tid);
        fa_load_kv<T, D, BKV, THREADS>(tsr_smem_addr(sK), kb, a.ks[2], t_begin * BKV, (int)a.Skv, tid);
        fa_load_kv<T, D, BKV, THREADS>(tsr_smem_addr(sV), vb, a.vs[2], t_begin * BKV, (int)a.Skv, tid);
    }
    tsr_cp_async_commit();

    /* ldmatrix addresses: chunk 2 * kk + e of row r sits at chunk
     * (2 * kk + e) ^ (r & 7), which is byte 128 * (kk / 4) + ((32 * (kk % 4))
     * ^ (16 * (e ^ (r & 7)))) of the row. So each operand stream needs one
     * row address and one in-row offset, stepped by constants per kk. */
    constexpr uint32_t RB = G::SE * 2; /* bytes per smem row, a multiple of 128 */
    const int j8 = lane >> 3, i8 = lane & 7;
    const uint32_t sQa = tsr_smem_addr(sQ), sKa = tsr_smem_addr(sK), sVa = tsr_smem_addr(sV);
    const uint32_t q_row = sQa + (uint32_t)(warp * 16 * MI + (lane & 15)) * RB, q_off = (uint32_t)((lane >> 4) ^ i8) * 16;
    const uint32_t k_row = (uint32_t)((j8 >> 1) * 8 + i8) * RB, k_off = (uint32_t)((j8 & 1) ^ i8) * 16;
    const uint32_t v_row = (uint32_t)((j8 & 1) * 8 + i8) * RB, v_off = (uint32_t)((j8 >> 1) ^ i8) * 16;
    for (int t = t_begin; t < t_end; t++) {
        const int slot = (t - t_begin) & 1;
        tsr_cp_async_wait<0>();
        /* Tile t (and Q) landed for every thread, and every warp is done
         * with tile t - 1, whose slot the prefetch below overwrites. */
        __syncthreads();
        if (t + 1 < t_end) {
            const int key1 = (t + 1) * BKV;
            fa_load_kv<T, D, BKV, THREADS>(sKa + (slot ^ 1) * BKV * RB, kb, a.ks[2], key1, (int)a.Skv, tid);
            fa_load_kv<T, D, BKV, THREADS>(sVa + (slot ^ 1) * BKV * RB, vb, a.vs[2], key1, (int)a.Skv, tid);
        }
        tsr_cp_async_commit();
        if (!warp_active) continue;

        const uint32_t cK = sKa + slot * BKV * RB, cV = sVa + slot * BKV * RB;
        const int kv0 = t * BKV;

        /* S = Q K^T */
        float s[MI][NB][4];
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int r = 0; r < 4; r++) s[mi][nb][r] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t kx = (uint32_t)(kk & 3) * 32, ky = (uint32_t)(kk >> 2) * 128;
            uint32_t qf[MI][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) tsr_ldmatrix_x4_s(qf[mi], q_row + mi * 16 * RB + ((q_off ^ kx) + ky));
#pragma unroll
            for (int np = 0; np < NB / 2; np++) {
                uint32_t r4[4];
                tsr_ldmatrix_x4_s(r4, cK + k_row + np * 16 * RB + ((k_off ^ kx) + ky));
                const uint32_t b0[2] = {r4[0], r4[1]}, b1[2] = {r4[2], r4[3]};
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    tsr_mma_op<T>::run(s[mi][2 * np], qf[mi], b0);
                    tsr_mma_op<T>::run(s[mi][2 * np + 1], qf[mi], b1);
                }
            }
        }

        /* Scale into log2 units; hide keys past a row's end (the diagonal
         * and last tiles only) and add the mask. */
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int r = 0; r < 4; r++) s[mi][nb][r] *= a.scale_log2;
        if (kv0 + BKV > wmin_end || a.mask) {
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int64_t R = W0 + mi * 16 + (lane >> 2) + 8 * hf;
                    int64_t moff = -1;
                    if (a.mask && R < a.rows) {
                        int64_t h, i;
                        fa_row(a, hy, R, h, i);
                        moff = b * a.ms[0] + h * a.ms[1] + i * a.ms[2];
                    }
#pragma unroll
                    for (int nb = 0; nb < NB; nb++)
#pragma unroll
                        for (int c = 0; c < 2; c++) {
                            const int j = kv0 + nb * 8 + (lane & 3) * 2 + c;
                            float &x = s[mi][nb][2 * hf + c];
                            if (j >= rend[mi][hf]) x = -INFINITY;
                            else if (moff >= 0) x += fa_mask_at<T>(a, moff + j) * LOG2E;
                        }
                }
        }

        /* Online softmax: the tile's row max over the quad of lanes that
         * shares a row, rescale what was accumulated, P = 2^(x - m). */
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                float mx = m[mi][hf];
#pragma unroll
                for (int nb = 0; nb < NB; nb++) mx = fmaxf(mx, fmaxf(s[mi][nb][2 * hf], s[mi][nb][2 * hf + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                /* all hidden so far: shift by 0, so 2^(-inf - 0) = 0, not NaN */
                const float mu = mx == -INFINITY ? 0.0f : mx;
                const float alpha = tsr_ex2_ftz(m[mi][hf] - mu);
                float ls = 0.0f;
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    s[mi][nb][2 * hf] = tsr_ex2_ftz(s[mi][nb][2 * hf] - mu);
                    s[mi][nb][2 * hf + 1] = tsr_ex2_ftz(s[mi][nb][2 * hf + 1] - mu);
                    ls += s[mi][nb][2 * hf] + s[mi][nb][2 * hf + 1];
                }
                l[mi][hf] = l[mi][hf] * alpha + ls; /* this lane's part; the quad sums at the end */
                m[mi][hf] = mx;
#pragma unroll
                for (int db = 0; db < DB; db++) o[mi][db][2 * hf] *= alpha, o[mi][db][2 * hf + 1] *= alpha;
            }

        /* O += P V: P's accumulator layout is the A-operand layout. */
#pragma unroll
        for (int kj = 0; kj < BKV / 16; kj++) {
            uint32_t pf[MI][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                pf[mi][0] = fa_pack2(s[mi][2 * kj][0], s[mi][2 * kj][1], (T *)0);
                pf[mi][1] = fa_pack2(s[mi][2 * kj][2], s[mi][2 * kj][3], (T *)0);
                pf[mi][2] = fa_pack2(s[mi][2 * kj + 1][0], s[mi][2 * kj + 1][1], (T *)0);
                pf[mi][3] = fa_pack2(s[mi][2 * kj + 1][2], s[mi][2 * kj + 1][3], (T *)0);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                const uint32_t dx = (uint32_t)(dp & 3) * 32, dy = (uint32_t)(dp >> 2) * 128;
                uint32_t r4[4];
                tsr_ldmatrix_x4_trans_s(r4, cV + v_row + kj * 16 * RB + ((v_off ^ dx) + dy));
                const uint32_t b0[2] = {r4[0], r4[1]}, b1[2] = {r4[2], r4[3]};
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    tsr_mma_op<T>::run(o[mi][2 * dp], pf[mi], b0);
                    tsr_mma_op<T>::run(o[mi][2 * dp + 1], pf[mi], b1);
                }
            }
        }
    }
    tsr_cp_async_wait<0>();
    if (!warp_active) return;

#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float lt = l[mi][hf];
            lt += __shfl_xor_sync(0xffffffffu, lt, 1);
            lt += __shfl_xor_sync(0xffffffffu, lt, 2);
            const int64_t R = W0 + mi * 16 + (lane >> 2) + 8 * hf;
            if (R >= a.rows) continue;
            float ov[2 * DB];
#pragma unroll
            for (int db = 0; db < DB; db++) ov[2 * db] = o[mi][db][2 * hf], ov[2 * db + 1] = o[mi][db][2 * hf + 1];
            int64_t h, i;
            fa_row(a, hy, R, h, i);
            fa_store_row<T, D>(a, b, sp, h, i, lane, ov, m[mi][hf], lt);
        }
}

/* Merges the split-KV partials: O = sum_s 2^(lse_s - lse) O_s with
 * lse = log2 sum_s 2^lse_s. One thread per output element. */
template <typename T>
__global__ void __launch_bounds__(256) fa_combine(fa_args a, int D) {
    const int64_t rows = a.B * a.Hq * a.Sq, total = rows * D;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / D, e = idx % D;
        float mx = -INFINITY;
        bool nan = false;
        for (int s = 0; s < a.splits; s++) {
            const float v = a.part_lse[s * rows + r];
            nan |= v != v;
            mx = fmaxf(mx, v);
        }
        float acc = 0.0f, sum = 0.0f;
        if (mx != -INFINITY && !nan) {
            for (int s = 0; s < a.splits; s++) {
                const float w = exp2f(a.part_lse[s * rows + r] - mx);
                sum += w;
                acc += w * a.part_o[(s * rows + r) * D + e];
            }
        }
        const int64_t i = r % a.Sq, h = (r / a.Sq) % a.Hq, b = r / a.Sq / a.Hq;
        T *op = (T *)a.o + b * a.os[0] + h * a.os[1] + i * a.os[2];
        op[e] = tsr_from_f32<T>(nan ? NAN : mx == -INFINITY ? 0.0f : acc / sum);
        if (e == 0 && a.lse) a.lse[r] = nan ? NAN : mx == -INFINITY ? -INFINITY : (mx + log2f(sum)) * LN2;
    }
}

/* ------------------------------------------------------------ host side */

/* The (block_q, block_kv, warps) shapes instantiated per head dim; the
 * first is the default for prefill, the second the smaller-grid and decode
 * one. Chosen so that none spills (ptxas -v): 32 rows per warp fit only at
 * head_dim 64; at 96/128 they spilled 64-356 bytes. */
typedef struct fa_config {
    int bq, bkv, warps;
} fa_config;
#define FA_CONFIGS 3
static const fa_config fa_configs_d64[FA_CONFIGS] = {{128, 64, 4}, {64, 64, 4}, {128, 128, 8}};
static const fa_config fa_configs_d128[FA_CONFIGS] = {{128, 64, 8}, {64, 64, 4}, {128, 128, 8}};
static const fa_config fa_configs_d256[FA_CONFIGS] = {{64, 64, 4}, {64, 32, 4}, {128, 32, 8}};

static const fa_config *fa_configs_for(int64_t D) {
    return D == 64 ? fa_configs_d64 : D == 256 ? fa_configs_d256 : fa_configs_d128; /* 96 and 128 */
}

static int fa_config_index(int64_t D, int bq, int bkv, int warps) {
    const fa_config *c = fa_configs_for(D);
    for (int i = 0; i < FA_CONFIGS; i++)
        if (c[i].bq == bq && c[i].bkv == bkv && c[i].warps == warps) return i;
    return -1;
}

static size_t fa_smem(int64_t D, const fa_config *c) {
    const int64_t se = ((D / 8 + 7) / 8 * 8) * 8;
    return (size_t)(c->bq + 4 * c->bkv) * (size_t)se * 2;
}

typedef void (*fa_fn)(fa_args);

/* Spelled out: template arguments must be constants, not table reads. */
template <typename T> static fa_fn fa_pick(int64_t D, int cfg) {
    switch (D) {
    case 64:
        return cfg == 1 ? fa_fwd<T, 64, 64, 64, 4> : cfg == 2 ? fa_fwd<T, 64, 128, 128, 8> : fa_fwd<T, 64, 128, 64, 4>;
    case 96:
        return cfg == 1 ? fa_fwd<T, 96, 64, 64, 4> : cfg == 2 ? fa_fwd<T, 96, 128, 128, 8> : fa_fwd<T, 96, 128, 64, 8>;
    case 128:
        return cfg == 1 ? fa_fwd<T, 128, 64, 64, 4> : cfg == 2 ? fa_fwd<T, 128, 128, 128, 8>
                                                              : fa_fwd<T, 128, 128, 64, 8>;
    default:
        return cfg == 1 ? fa_fwd<T, 256, 64, 32, 4> : cfg == 2 ? fa_fwd<T, 256, 128, 32, 8> : fa_fwd<T, 256, 64, 64, 4>;
    }
}

static const int fa_bq_values[] = {64, 128};
static const int fa_bkv_values[] = {32, 64, 128};
static const int fa_warps_values[] = {4, 8};
static const int fa_split_values[] = {1, 2, 4, 8, 16, 32};
static const tsr_knob fa_knobs[] = {
    {"block_q", 2, fa_bq_values},
    {"block_kv", 3, fa_bkv_values},
    {"warps", 2, fa_warps_values},
    {"kv_splits", 6, fa_split_values},
};
enum { K_BQ, K_BKV, K_WARPS, K_SPLITS };

static bool aligned(const void *p, uintptr_t n) { return ((uintptr_t)p & (n - 1)) == 0; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool fa_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    const tsr_attention_problem *ap = &p->u.attention;
    const tsr_attention_desc *d = &ap->d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash runs on cuda"), false;
    if (d->dtype != TSR_F16 && d->dtype != TSR_BF16)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash takes f16/bf16 (f32 runs on "
                       "attention.sm80.rowwise)"), false;
    if (d->head_dim != 64 && d->head_dim != 96 && d->head_dim != 128 && d->head_dim != 256)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash: head_dim %lld is not 64, 96, "
                       "128 or 256", (long long)d->head_dim), false;
    /* cp.async moves 16-byte chunks of q, k and v rows; o is stored in pairs */
    for (int t = 0; t < 3; t++)
        if (d->q_strides[t] % 8 || d->k_strides[t] % 8 || d->v_strides[t] % 8 || d->o_strides[t] % 2)
            return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash needs q/k/v strides that are "
                           "multiples of 8 elements and even o strides"), false;
    if (!aligned(ap->q, 16) || !aligned(ap->k, 16) || !aligned(ap->v, 16) || !aligned(ap->o, 4))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash needs 16-byte aligned q/k/v "
                       "and 4-byte aligned o"), false;
    if (d->batch > 65535 || d->heads_q > 65535)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash: batch and heads_q must be "
                       "<= 65535 (grid limits)"), false;
    if (d->seq_q > ((int64_t)1 << 31) / 2 || d->seq_kv > ((int64_t)1 << 31) / 2)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash: seq_q and seq_kv must be "
                       "< 2^30"), false;
    return true;
}

/* Decode (seq_q <= 16) packs the GQA group's rows into one block and may
 * split the keys; prefill takes the largest tile that still gives every SM
 * a block, with one block of the default shape as the floor. */
static void fa_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_attention_desc *d = &p->u.attention.d;
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    const fa_config *cfg = fa_configs_for(d->head_dim);
    const bool decode = d->seq_q <= 16;
    const int64_t group = d->heads_kv > 0 ? d->heads_q / d->heads_kv : 1;
    int pick = 0;
    if (decode) {
        pick = 1; /* 64-row blocks: a GQA group's rows, few wasted */
    } else {
        const int64_t blocks = ceil_div(d->seq_q, cfg[0].bq) * d->heads_q * d->batch;
        if (blocks < sms && cfg[1].bq < cfg[0].bq) pick = 1;
    }
    s->v[K_BQ] = cfg[pick].bq, s->v[K_BKV] = cfg[pick].bkv, s->v[K_WARPS] = cfg[pick].warps;
    int split = 1;
    if (decode) {
        const int64_t rows = group * d->seq_q;
        const int64_t blocks = ceil_div(rows, cfg[pick].bq) * d->heads_kv * d->batch;
        const int64_t tiles = ceil_div(d->seq_kv, cfg[pick].bkv);
        /* ~2 blocks per SM, each with at least 4 key tiles to stream */
        while (split < 32 && blocks * split < 2 * (int64_t)sms && tiles / (split * 2) >= 4) split *= 2;
    }
    s->v[K_SPLITS] = split;
}

static bool fa_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    const tsr_attention_desc *d = &p->u.attention.d;
    const int ci = fa_config_index(d->head_dim, s->v[K_BQ], s->v[K_BKV], s->v[K_WARPS]);
    if (ci < 0) return false;
    if (fa_smem(d->head_dim, &fa_configs_for(d->head_dim)[ci]) > tsr_cuda(ctx)->smem_optin) return false;
    bool split_ok = false;
    for (int i = 0; i < 6; i++) split_ok |= s->v[K_SPLITS] == fa_split_values[i];
    /* the split-KV path is the decode path */
    return split_ok && (s->v[K_SPLITS] == 1 || d->seq_q <= 16);
}

static tsr_status fa_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    const tsr_attention_problem *ap = &p->u.attention;
    const tsr_attention_desc *d = &ap->d;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    const int64_t rows_total = d->batch * d->heads_q * d->seq_q;
    if (rows_total == 0) return TSR_OK;

    tsr_schedule s = *sch;
    if (!fa_valid(p, ctx, &s)) fa_default(p, ctx, &s); /* a stale or foreign table entry */
    int ci = fa_config_index(d->head_dim, s.v[K_BQ], s.v[K_BKV], s.v[K_WARPS]);
    if (ci < 0) ci = 0;
    const fa_config *c = &fa_configs_for(d->head_dim)[ci];
    const size_t smem = fa_smem(d->head_dim, c);
    if (smem > tsr_cuda(ctx)->smem_optin)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash: %zu bytes of shared memory exceed the "
                        "device's %zu", smem, tsr_cuda(ctx)->smem_optin);

    fa_args a;
    memset(&a, 0, sizeof a);
    a.q = ap->q, a.k = ap->k, a.v = ap->v, a.o = ap->o;
    a.mask = d->mask;
    a.lse = (float *)d->lse;
    a.B = d->batch, a.Hq = d->heads_q, a.Hkv = d->heads_kv, a.Sq = d->seq_q, a.Skv = d->seq_kv;
    a.group = d->heads_q / d->heads_kv;
    for (int t = 0; t < 3; t++) {
        a.qs[t] = d->q_strides[t], a.ks[t] = d->k_strides[t], a.vs[t] = d->v_strides[t];
        a.os[t] = d->o_strides[t], a.ms[t] = d->mask_strides[t];
    }
    a.scale_log2 = d->scale * LOG2E;
    a.causal = d->causal;
    a.mask_f32 = d->mask_dtype == TSR_F32;
    a.pack = d->seq_q <= 16;
    a.rows = a.pack ? a.group * a.Sq : a.Sq;

    /* Split the key tiles; the count actually used leaves no split empty
     * for the longest block. */
    const int64_t tiles = ceil_div(d->seq_kv, c->bkv);
    int splits = a.pack && tiles > 1 ? s.v[K_SPLITS] : 1;
    if (splits > tiles) splits = (int)tiles;
    while (splits > 1 && d->batch * splits > 65535) splits /= 2;
    if (splits < 1) splits = 1;
    const int64_t tps = tiles > 0 ? ceil_div(tiles, splits) : 1;
    splits = tiles > 0 ? (int)ceil_div(tiles, tps) : 1;
    a.splits = splits;
    a.tiles_per_split = (int)(splits > 1 ? tps : (tiles > 0 ? tiles : 1));
    if (splits > 1) {
        void *ws = NULL;
        const size_t per = (size_t)rows_total * ((size_t)d->head_dim + 1) * sizeof(float);
        st = tsr_cuda_workspace(ctx, per * (size_t)splits, &ws);
        if (st) return st;
        a.part_o = (float *)ws;
        a.part_lse = a.part_o + (size_t)splits * (size_t)rows_total * (size_t)d->head_dim;
    }

    const int64_t row_tiles = ceil_div(a.rows, c->bq);
    if (row_tiles > 0x7fffffff)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "attention.sm80.flash: %lld row tiles exceed the grid",
                        (long long)row_tiles);
    fa_fn fn = d->dtype == TSR_F16 ? fa_pick<__half>(d->head_dim, ci) : fa_pick<__nv_bfloat16>(d->head_dim, ci);
    st = tsr_cuda_status(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                         "attention.sm80.flash: cudaFuncSetAttribute");
    if (st) return st;
    dim3 grid((unsigned)row_tiles, (unsigned)(a.pack ? a.Hkv : a.Hq), (unsigned)(a.B * splits));
    cudaStream_t stream = tsr_cuda_stream(ctx);
    fn<<<grid, c->warps * 32, smem, stream>>>(a);
    st = tsr_cuda_after_launch("attention.sm80.flash");
    if (st || splits == 1) return st;

    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    int64_t blocks = ceil_div(rows_total * d->head_dim, 256), cap = (int64_t)sms * 16;
    if (blocks > cap) blocks = cap;
    if (d->dtype == TSR_F16) fa_combine<__half><<<(unsigned)blocks, 256, 0, stream>>>(a, (int)d->head_dim);
    else fa_combine<__nv_bfloat16><<<(unsigned)blocks, 256, 0, stream>>>(a, (int)d->head_dim);
    return tsr_cuda_after_launch("attention.sm80.flash: split-KV combine");
}

extern "C" const tsr_kernel tsr_attention_sm80_flash = {
    "attention.sm80.flash", TSR_OP_ATTENTION, TSR_BACKEND_CUDA, "sm80", fa_supports, 4, fa_knobs,
    fa_default, fa_valid, fa_run,
};
