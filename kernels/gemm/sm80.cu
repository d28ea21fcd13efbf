/* CUDA GEMM for sm80-class GPUs (Ampere instructions; also assembled for
 * Hopper). Four kernels, in priority order:
 *  - skinny: M <= 16 with B stored k-contiguous (decode: y = x W^T), a
 *    bandwidth-bound streaming kernel, one warp per few columns of N;
 *  - tc: f16/bf16 on tensor cores: cp.async multi-stage pipeline into
 *    XOR-swizzled shared memory, ldmatrix, mma.sync m16n8k16, grouped tile
 *    rasterisation for L2 reuse, split-k through an f32 workspace;
 *  - sgemm: f32 on the FMA units, 128x128 tiles, 8x8 per thread, double
 *    buffered shared memory;
 *  - generic: one thread per output, every dtype, layout and alignment (int8
 *    exactly as the reference), the device-side last resort.
 * All apply alpha, beta and the fused epilogue while the value is in
 * registers; beta == 0 never reads C. */
#include <stdio.h>
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/mma.cuh"
#include "../../arch/sm80/runtime.h"

/* ------------------------------------------------------------ arguments */

typedef struct gemm_args {
    int64_t M, N, K;
    const void *A, *B;
    void *C;
    int64_t lda, ldb, ldc;
    int64_t sa, sb, sc; /* batch strides */
    int64_t batch;
    float alpha, beta;
    tsr_dtype a_dtype, c_dtype;
    bool trans_a, trans_b;
    bool bias_along_m;
    tsr_epilogue epi;
    int split;           /* k slices; > 1 writes f32 partials, reduced afterwards */
    int64_t k_per_split; /* multiple of the kernel's k tile */
    float *partial;      /* [split][batch][M][N] when split > 1 */
} gemm_args;

static gemm_args args_for(const tsr_gemm_problem *g) {
    const tsr_gemm_desc *d = &g->d;
    gemm_args a;
    memset(&a, 0, sizeof a);
    a.M = d->m, a.N = d->n, a.K = d->k;
    a.A = g->a, a.B = g->b, a.C = g->c;
    a.lda = d->lda, a.ldb = d->ldb, a.ldc = d->ldc;
    a.sa = d->stride_a, a.sb = d->stride_b, a.sc = d->stride_c;
    a.batch = d->batch;
    a.alpha = d->alpha, a.beta = d->beta;
    a.a_dtype = d->a_dtype, a.c_dtype = d->c_dtype;
    a.trans_a = d->trans_a == TSR_TRANS, a.trans_b = d->trans_b == TSR_TRANS;
    a.bias_along_m = g->bias_along_m;
    a.epi = d->epilogue;
    a.split = 1;
    a.k_per_split = d->k;
    return a;
}

/* alpha, beta, the epilogue and the store of one output value. Out of line:
 * inlined at each of a thread's up to 128 accumulators, the epilogue (with
 * its erf/tanh/exp activations) multiplied code size and compile time by
 * an order of magnitude for no speed; a call per output is noise next to
 * the k loop. */
__device__ __noinline__ void store_out(const gemm_args &g, int64_t b, int64_t row, int64_t col,
                                       float acc) {
    int64_t ci = b * g.sc + row * g.ldc + col;
    float v = g.alpha * acc;
    if (g.beta != 0.0f) v += g.beta * tsr_dev_load(g.C, g.c_dtype, ci);
    v = tsr_dev_epilogue(g.epi, v, g.bias_along_m ? row : col, b, row, col);
    tsr_dev_store(g.C, g.c_dtype, ci, v);
}

/* alpha, beta, the epilogue and the stores of a tensor-core thread's NV
 * values in one output row, value i at column col0 + (i / 2) * 8 + i % 2
 * (its column pairs across the warp tile). Out of line, once per NV: the
 * loads (C for beta, the bias, a residual) of all NV values go out before
 * the first is used, where store_out per value waited for each in turn. */
template <int NV>
__device__ __noinline__ void store_out_row(const gemm_args &g, int64_t b, int64_t row, int64_t col0,
                                           const float (&acc)[NV]) {
    if (row >= g.M || col0 >= g.N) return;
    const int64_t base = b * g.sc + row * g.ldc;
    int64_t col[NV];
    float v[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) {
        col[i] = col0 + (i >> 1) * 8 + (i & 1);
        v[i] = g.alpha * acc[i];
    }
    if (g.beta != 0.0f) tsr_dev_add_n(v, g.C, g.c_dtype, g.beta, base, 1, col, g.N);
    tsr_dev_epilogue_n(g.epi, v, col, g.N, g.bias_along_m ? row : 0, g.bias_along_m ? 0 : 1, b, row);
    tsr_dev_store_n(g.C, g.c_dtype, base, v, col, g.N);
}

/* int8 results as the reference: the int32 accumulator wraps; alpha/beta
 * other than (1, 0|1) are applied in double, rounded to even, saturated. */
__device__ int32_t i32_result(int32_t acc, int32_t c, float alpha, float beta) {
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
        return (int32_t)((uint32_t)acc + (beta == 1.0f ? (uint32_t)c : 0u));
    double v = (double)alpha * acc + (beta != 0.0f ? (double)beta * c : 0.0);
    v = rint(v);
    if (v > 2147483647.0) return INT32_MAX;
    if (v < -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

/* A finished accumulator: to the workspace when k is split, straight to C
 * when there is nothing to fuse, else through store_out. */
__device__ __forceinline__ void emit(const gemm_args &g, int z, int64_t b, int64_t row, int64_t col,
                                     float acc) {
    if (g.split > 1)
        g.partial[((int64_t)z * g.batch + b) * g.M * g.N + row * g.N + col] = acc;
    else if (g.beta == 0.0f && g.epi.num_steps == 0)
        tsr_dev_store(g.C, g.c_dtype, b * g.sc + row * g.ldc + col, g.alpha * acc);
    else
        store_out(g, b, row, col, acc);
}

/* An int8 tile's accumulator (i32 output, never split, no epilogue). */
__device__ __forceinline__ void emit(const gemm_args &g, int z, int64_t b, int64_t row, int64_t col, int acc) {
    (void)z;
    int32_t *C = (int32_t *)g.C + b * g.sc + row * g.ldc + col;
    *C = i32_result(acc, g.beta != 0.0f ? *C : 0, g.alpha, g.beta);
}

/* Sums the k slices in a fixed order (deterministic), then the epilogue. */
__global__ void splitk_reduce(const __grid_constant__ gemm_args g) {
    int64_t total = g.batch * g.M * g.N, slice = total;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int z = 0; z < g.split; z++) acc += g.partial[z * slice + i];
        int64_t b = i / (g.M * g.N), r = i % (g.M * g.N);
        store_out(g, b, r / g.N, r % g.N, acc);
    }
}

static int blocks_for(int64_t n, int threads, int sms) {
    int64_t blocks = (n + threads - 1) / threads, cap = (int64_t)sms * 16;
    return (int)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

/* Workspace and the reduce launch around a split-k kernel. */
static tsr_status splitk_prepare(tsr_context *ctx, gemm_args *a, int split, int64_t k_tile) {
    if (split <= 1 || a->K <= 0) return TSR_OK; /* k == 0: nothing to split, C = beta C (+ epilogue) */
    int64_t per = (a->K + split - 1) / split;
    per = (per + k_tile - 1) / k_tile * k_tile;
    int used = (int)((a->K + per - 1) / per);
    if (used <= 1) return TSR_OK;
    void *ws = NULL;
    size_t bytes = sizeof(float) * (size_t)used * (size_t)a->batch * (size_t)a->M * (size_t)a->N;
    tsr_status st = tsr_cuda_workspace(ctx, bytes, &ws);
    if (st) return st;
    a->split = used;
    a->k_per_split = per;
    a->partial = (float *)ws;
    return TSR_OK;
}

/* After a GEMM kernel's launch: its error, else the split-k reduce. */
static tsr_status finish_launch(tsr_context *ctx, const gemm_args *a, const char *who) {
    tsr_status st = tsr_cuda_after_launch(who);
    if (st || a->split <= 1) return st;
    splitk_reduce<<<blocks_for(a->batch * a->M * a->N, 256, tsr_cuda(ctx)->sm_count), 256, 0,
                    tsr_cuda_stream(ctx)>>>(*a);
    char what[96];
    snprintf(what, sizeof what, "%s: split-k reduce", who);
    return tsr_cuda_after_launch(what);
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ---------------------------------------------------- tensor-core kernel */

/* Physical 16-byte chunk of logical chunk c in a row of W chunks: an XOR
 * swizzle so that the 8 rows one ldmatrix phase reads, and the rows
 * cp.async writes, fall in 8 different bank groups. */
template <int W> __device__ __forceinline__ int swz_key(int row) {
    return W >= 8 ? row & 7 : W == 4 ? (row >> 1) & 3 : W == 2 ? (row >> 2) & 1 : 0;
}
template <int W> __device__ __forceinline__ int swz(int row, int c) { return c ^ swz_key<W>(row); }

/* One thread's share of copying an operand's k tiles into shared memory by
 * cp.async: a tile is ROWS rows of W 16-byte chunks; the thread copies N
 * chunks of one chunk column, RS rows apart. KMAJ: a row is one m (or n)
 * index and its chunks step along k; else a row is one k index and its
 * chunks step along m (or n). Everything but the source pointer and the k
 * left is fixed when the CTA starts, so a tile costs a few adds per chunk;
 * chunks past the matrix edge or kend are zero-filled (src-size 0..16). */
template <typename T, int ROWS, int W, int THREADS, bool KMAJ> struct operand_copy {
    static constexpr int ES = (int)sizeof(T), EPC = 16 / ES, N = ROWS * W / THREADS, RS = THREADS / W;
    /* with RS a multiple of 8, every chunk of a thread has the same swizzle */
    static_assert(THREADS % W == 0 && RS % 8 == 0 && ROWS % RS == 0, "operand_copy: tile/threads");
    const T *src; /* chunk 0 at the next k tile */
    uint32_t dst; /* byte offset of chunk 0 in the operand's tile */
    int other;    /* KMAJ: rows of the matrix left from chunk 0; else its columns left */
    int kleft;    /* k left from chunk 0 (KMAJ: its first k; else its row's k); tc_supports keeps k < 2^31 */

    __device__ __forceinline__ operand_copy(const T *g, int64_t ld, int64_t x0, int64_t xlim, int64_t k0,
                                            int64_t kend, int tid) {
        const int r = tid / W, c = tid % W;
        int64_t x = KMAJ ? x0 + r : x0 + c * EPC, k = KMAJ ? k0 + c * EPC : k0 + r;
        src = KMAJ ? g + x * ld + k : g + k * ld + x;
        dst = (uint32_t)((r * W + swz<W>(r, c)) * 16);
        other = (int)min(xlim - x, (int64_t)INT32_MAX);
        kleft = (int)(kend - k);
    }
    /* issues this thread's chunks of the next k tile into the tile at smem
     * (a shared-space address); a chunk with nothing to read names any valid
     * address (base, a kernel parameter: no register). Where every chunk is
     * whole (all but the edge tiles), one compare replaces the per-chunk
     * byte counts: the issue sits in the k loop beside the mmas of warps
     * that share its scheduler. */
    __device__ __forceinline__ void issue(uint32_t smem, const void *base, int64_t ld) {
        const int span = (N - 1) * RS;
        if (KMAJ ? other > span && kleft >= EPC : kleft > span && other >= EPC) {
            const T *p = src;
            const int64_t step = (int64_t)RS * ld;
#pragma unroll
            for (int it = 0; it < N; it++, p += step) tsr_cp_async16_full_s(smem + dst + it * RS * W * 16, p);
            return;
        }
#pragma unroll
        for (int it = 0; it < N; it++) {
            const int o = KMAJ ? other - it * RS : kleft - it * RS, left = KMAJ ? kleft : other;
            const int bytes = o > 0 && left > 0 ? (left >= EPC ? 16 : left * ES) : 0;
            tsr_cp_async16_s(smem + dst + it * RS * W * 16, bytes ? (const void *)(src + it * RS * ld) : base, bytes);
        }
    }
    __device__ __forceinline__ void next(int64_t ld, int bk) {
        src += KMAJ ? (int64_t)bk : bk * ld;
        kleft -= bk;
    }
};

/* cp.async.wait_group takes an immediate: stages - 2 groups may stay in flight */
__device__ __forceinline__ void wait_stages(int stages) {
    switch (stages) {
    case 2: tsr_cp_async_wait<0>(); break;
    case 3: tsr_cp_async_wait<1>(); break;
    case 4: tsr_cp_async_wait<2>(); break;
    default: tsr_cp_async_wait<3>(); break;
    }
}

/* Two accumulators of adjacent columns (col even) to C or the workspace:
 * one 4- or 8-byte store where both are in C and the address allows. */
__device__ __forceinline__ void emit_pair(const gemm_args &g, int z, int64_t b, int64_t row, int64_t col,
                                          float v0, float v1) {
    if (row >= g.M || col >= g.N) return;
    const bool two = col + 1 < g.N;
    if (g.split > 1) {
        float *p = g.partial + (((int64_t)z * g.batch + b) * g.M + row) * g.N + col;
        if (two && (g.N & 1) == 0) *(float2 *)p = make_float2(v0, v1);
        else {
            p[0] = v0;
            if (two) p[1] = v1;
        }
    } else if (g.beta == 0.0f && g.epi.num_steps == 0) {
        const int64_t ci = b * g.sc + row * g.ldc + col;
        const size_t es = g.c_dtype == TSR_F32 ? 4 : 2;
        char *p = (char *)g.C + ci * (int64_t)es;
        if (two && ((uintptr_t)p & (2 * es - 1)) == 0) {
            if (g.c_dtype == TSR_F32) *(float2 *)p = make_float2(g.alpha * v0, g.alpha * v1);
            else if (g.c_dtype == TSR_F16) *(__half2 *)p = __floats2half2_rn(g.alpha * v0, g.alpha * v1);
            else *(__nv_bfloat162 *)p = __floats2bfloat162_rn(g.alpha * v0, g.alpha * v1);
        } else {
            tsr_dev_store(g.C, g.c_dtype, ci, g.alpha * v0);
            if (two) tsr_dev_store(g.C, g.c_dtype, ci + 1, g.alpha * v1);
        }
    } else {
        store_out(g, b, row, col, v0);
        if (two) store_out(g, b, row, col + 1, v1);
    }
}
__device__ __forceinline__ void emit_pair(const gemm_args &g, int z, int64_t b, int64_t row, int64_t col, int v0,
                                          int v1) {
    if (row >= g.M || col >= g.N) return;
    emit(g, z, b, row, col, v0);
    if (col + 1 < g.N) emit(g, z, b, row, col + 1, v1);
}

/* One CTA computes a BM x BN tile of C from k tiles of BK elements. AK: A is
 * stored k-contiguous (m x k row-major); else m-contiguous (A^T stored).
 * BKM: B is stored k-contiguous (n x k); else n-contiguous (k x n). T is
 * f16/bf16, or int8 (k-contiguous A and B only: ldmatrix cannot transpose
 * bytes); shared memory moves in 16-byte chunks of EPC elements, and an mma
 * step consumes two chunks of k.
 *
 * The k loop is CUTLASS's multistage order: each warp loads the fragments
 * of step kk + 1 before the mmas of step kk (two fragment buffers), so the
 * ldmatrix latency hides behind tensor work; the next k tile's copies are
 * issued at the first step; the wait for the tile after and the one barrier
 * per k tile come before the last step, whose fragment load already reads
 * the next tile. */
template <typename T, int BM, int BN, int BK, int WM, int WN, bool AK, bool BKM>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    tc_gemm(const __grid_constant__ gemm_args g, int stages, int raster) {
    typedef typename tsr_mma_op<T>::acc Acc;
    constexpr int ES = (int)sizeof(T), EPC = 16 / ES, KSTEP = 2 * EPC, KK = BK / KSTEP;
    static_assert(ES == 2 || (AK && BKM), "int8 tiles need k-contiguous A and B");
    static_assert(KK >= 2 && KK % 2 == 0, "the k loop alternates two fragment buffers within a k tile");
    constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * WARPS_N * 32;
    constexpr int MI = WM / 16, NI = WN / 8;
    constexpr int A_ROWS = AK ? BM : BK, A_W = (AK ? BK : BM) / EPC;
    constexpr int B_ROWS = BKM ? BN : BK, B_W = (BKM ? BK : BN) / EPC;
    constexpr uint32_t A_BYTES = BM * BK * ES, STAGE_BYTES = (BM + BN) * BK * ES;
    static_assert(NI % 2 == 0, "B fragments load in pairs");
    constexpr int B_STEP = KK > 2 ? 1 : 0; /* B's copies issue by the commit at step KK - 2 */

    extern __shared__ uint4 smem_raw[];
    const uint32_t smem = tsr_smem_addr(smem_raw);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;

    /* grouped rasterisation: `raster` tile rows sweep N together */
    const int tiles_m = (int)((g.M + BM - 1) / BM), tiles_n = (int)((g.N + BN - 1) / BN);
    const int pid = blockIdx.x, group = raster * tiles_n;
    const int first_m = (pid / group) * raster;
    const int gsz = min(tiles_m - first_m, raster);
    const int tm = first_m + (pid % group) % gsz, tn = (pid % group) / gsz;
    const int64_t m0 = (int64_t)tm * BM, n0 = (int64_t)tn * BN;
    const int z = blockIdx.z % g.split;
    const int64_t b = blockIdx.z / g.split;
    const int64_t kbeg = z * g.k_per_split;
    const int64_t kend = min(g.K, kbeg + g.k_per_split);
    const int ktiles = kend > kbeg ? (int)((kend - kbeg + BK - 1) / BK) : 0;

    operand_copy<T, A_ROWS, A_W, THREADS, AK> ca((const T *)g.A + b * g.sa, g.lda, m0, g.M, kbeg, kend, tid);
    operand_copy<T, B_ROWS, B_W, THREADS, BKM> cb((const T *)g.B + b * g.sb, g.ldb, n0, g.N, kbeg, kend, tid);

    /* ldmatrix addresses. A lane reads row r, chunk c of a stage at byte
     * (r W + (c ^ key(r))) 16. Along the step that moves r by multiples of
     * 16 the key stays; along the other, c moves by 2 (or by a multiple of
     * 2 within bits that the lane's part of c leaves free), so c ^ key =
     * (lane part ^ key) ^ (2 step): each operand stream is one base and one
     * XOR term per lane, and an address one add and one XOR from them
     * (kernel and former address formulas checked equal for every tile,
     * layout, warp, lane and step). */
    const int j8 = lane >> 3, i8 = lane & 7;
    const uint32_t a_base = AK ? (uint32_t)((wm * WM + (lane & 15)) * A_W * 16) : (uint32_t)(((j8 >> 1) * 8 + i8) * A_W * 16);
    const uint32_t a_x = AK ? (uint32_t)(((lane >> 4) ^ swz_key<A_W>(lane & 15)) * 16)
                            : (uint32_t)(((wm * WM / 8 + (j8 & 1)) ^ swz_key<A_W>((j8 >> 1) * 8 + i8)) * 16);
    const uint32_t b_base = A_BYTES + (BKM ? (uint32_t)((wn * WN + (j8 >> 1) * 8 + i8) * B_W * 16)
                                           : (uint32_t)(((j8 & 1) * 8 + i8) * B_W * 16));
    const uint32_t b_x = BKM ? (uint32_t)(((j8 & 1) ^ swz_key<B_W>((j8 >> 1) * 8 + i8)) * 16)
                             : (uint32_t)(((wn * WN / 8 + (j8 >> 1)) ^ swz_key<B_W>((j8 & 1) * 8 + i8)) * 16);
    auto a_frag = [&](uint32_t (&f)[4], uint32_t stage, int mi, int kk) {
        if (AK) tsr_ldmatrix_x4_s(f, stage + a_base + mi * 16 * A_W * 16 + (a_x ^ (uint32_t)(kk * 32)));
        else tsr_ldmatrix_x4_trans_s(f, stage + a_base + kk * 16 * A_W * 16 + (a_x ^ (uint32_t)(mi * 32)));
    };
    auto b_frags = [&](uint32_t (&f0)[2], uint32_t (&f1)[2], uint32_t stage, int np, int kk) {
        uint32_t r4[4];
        if (BKM) tsr_ldmatrix_x4_s(r4, stage + b_base + np * 16 * B_W * 16 + (b_x ^ (uint32_t)(kk * 32)));
        else tsr_ldmatrix_x4_trans_s(r4, stage + b_base + kk * 16 * B_W * 16 + (b_x ^ (uint32_t)(np * 32)));
        f0[0] = r4[0], f0[1] = r4[1], f1[0] = r4[2], f1[1] = r4[3];
    };
    uint32_t af[2][MI][4], bf[2][NI][2];
    auto load_frags = [&](int buf, uint32_t stage, int kk) {
#pragma unroll
        for (int mi = 0; mi < MI; mi++) a_frag(af[buf][mi], stage, mi, kk);
#pragma unroll
        for (int np = 0; np < NI / 2; np++) b_frags(bf[buf][2 * np], bf[buf][2 * np + 1], stage, np, kk);
    };

    Acc acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0;

    for (int s = 0; s < stages - 1; s++) {
        if (s < ktiles) {
            ca.issue(smem + s * STAGE_BYTES, g.A, g.lda);
            cb.issue(smem + s * STAGE_BYTES + A_BYTES, g.B, g.ldb);
        }
        ca.next(g.lda, BK), cb.next(g.ldb, BK);
        tsr_cp_async_commit();
    }
    wait_stages(stages);
    __syncthreads();

    int read = 0, write = stages - 1;
    load_frags(0, smem, 0);
    for (int kt = 0; kt < ktiles; kt++) {
#pragma unroll
        for (int kk = 0; kk < KK; kk++) {
            /* fragments of the next step: this tile's, or at the last step
             * the next tile's (its stage landed at the barrier below) */
            load_frags((kk + 1) % 2, smem + read * STAGE_BYTES, (kk + 1) % KK);
            /* into the stage every warp finished reading before the last
             * barrier: A's chunks at the first step, B's at the second (if
             * it comes before the commit), so that neither block of address
             * work stands alone between two steps' mmas */
            if (kk == 0) {
                if (kt + stages - 1 < ktiles) ca.issue(smem + write * STAGE_BYTES, g.A, g.lda);
                ca.next(g.lda, BK);
            }
            if (kk == B_STEP) {
                if (kt + stages - 1 < ktiles) cb.issue(smem + write * STAGE_BYTES + A_BYTES, g.B, g.ldb);
                cb.next(g.ldb, BK);
                write = write + 1 == stages ? 0 : write + 1;
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) tsr_mma_op<T>::run(acc[mi][ni], af[kk % 2][mi], bf[kk % 2][ni]);
            if (kk == KK - 2) {
                tsr_cp_async_commit();
                wait_stages(stages);
                __syncthreads();
                read = read + 1 == stages ? 0 : read + 1;
            }
        }
    }
    tsr_cp_async_wait<0>();

    if constexpr (ES == 2) {
        if (g.split == 1 && (g.beta != 0.0f || g.epi.num_steps != 0)) {
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float v[2 * NI];
#pragma unroll
                    for (int ni = 0; ni < NI; ni++) v[2 * ni] = acc[mi][ni][2 * h], v[2 * ni + 1] = acc[mi][ni][2 * h + 1];
                    store_out_row<2 * NI>(g, b, m0 + wm * WM + mi * 16 + (lane >> 2) + 8 * h,
                                          n0 + wn * WN + (lane & 3) * 2, v);
                }
            return;
        }
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int64_t row = m0 + wm * WM + mi * 16 + (lane >> 2) + 8 * h;
                int64_t col = n0 + wn * WN + ni * 8 + (lane & 3) * 2;
                emit_pair(g, z, b, row, col, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
            }
}

/* The tile shapes the "tile" knob picks from. */
typedef struct tc_config {
    int bm, bn, bk, wm, wn;
} tc_config;
static const tc_config tc_configs[] = {
    {128, 128, 32, 64, 64}, /* 0: 4 warps, the all-rounder */
    {128, 256, 32, 64, 64}, /* 1: 8 warps, large N */
    {256, 128, 32, 64, 64}, /* 2: 8 warps, large M */
    {64, 128, 64, 32, 64},  /* 3: 4 warps, medium shapes */
    {64, 64, 64, 32, 32},   /* 4: 4 warps, small shapes and split-k */
    {128, 256, 64, 64, 64}, /* 5: 1 with half the barriers per k */
    {256, 128, 64, 64, 64}, /* 6: 2 likewise */
};
#define TC_CONFIGS 7
/* int8: the same tiles in bytes, so twice the k elements per tile */
static const tc_config tc_i8_configs[TC_CONFIGS] = {
    {128, 128, 64, 64, 64}, {128, 256, 64, 64, 64}, {256, 128, 64, 64, 64},  {64, 128, 128, 32, 64},
    {64, 64, 128, 32, 32},  {128, 256, 128, 64, 64}, {256, 128, 128, 64, 64},
};

static const tc_config *tc_config_of(tsr_dtype t, int cfg) {
    return t == TSR_I8 ? &tc_i8_configs[cfg] : &tc_configs[cfg];
}

static size_t tc_smem(const tc_config *c, int stages, tsr_dtype t) {
    return (size_t)stages * (size_t)(c->bm + c->bn) * (size_t)c->bk * tsr_dtype_size(t);
}

typedef void (*tc_fn)(gemm_args, int, int);

template <typename T, int BM, int BN, int BK, int WM, int WN>
static tc_fn tc_pick_layout(bool ak, bool bkm) {
    if (ak && bkm) return tc_gemm<T, BM, BN, BK, WM, WN, true, true>;
    if (ak) return tc_gemm<T, BM, BN, BK, WM, WN, true, false>;
    if (bkm) return tc_gemm<T, BM, BN, BK, WM, WN, false, true>;
    return tc_gemm<T, BM, BN, BK, WM, WN, false, false>;
}

template <typename T> static tc_fn tc_pick(int cfg, bool ak, bool bkm) {
    switch (cfg) {
    case 0: return tc_pick_layout<T, 128, 128, 32, 64, 64>(ak, bkm);
    case 1: return tc_pick_layout<T, 128, 256, 32, 64, 64>(ak, bkm);
    case 2: return tc_pick_layout<T, 256, 128, 32, 64, 64>(ak, bkm);
    case 3: return tc_pick_layout<T, 64, 128, 64, 32, 64>(ak, bkm);
    case 4: return tc_pick_layout<T, 64, 64, 64, 32, 32>(ak, bkm);
    case 5: return tc_pick_layout<T, 128, 256, 64, 64, 64>(ak, bkm);
    default: return tc_pick_layout<T, 256, 128, 64, 64, 64>(ak, bkm);
    }
}

static tc_fn tc_pick_i8(int cfg) {
    switch (cfg) {
    case 0: return tc_gemm<int8_t, 128, 128, 64, 64, 64, true, true>;
    case 1: return tc_gemm<int8_t, 128, 256, 64, 64, 64, true, true>;
    case 2: return tc_gemm<int8_t, 256, 128, 64, 64, 64, true, true>;
    case 3: return tc_gemm<int8_t, 64, 128, 128, 32, 64, true, true>;
    case 4: return tc_gemm<int8_t, 64, 64, 128, 32, 32, true, true>;
    case 5: return tc_gemm<int8_t, 128, 256, 128, 64, 64, true, true>;
    default: return tc_gemm<int8_t, 256, 128, 128, 64, 64, true, true>;
    }
}

static const int tc_tile_values[] = {0, 1, 2, 3, 4, 5, 6};
static const int tc_stage_values[] = {2, 3, 4, 5};
static const int tc_split_values[] = {1, 2, 3, 4, 6, 8, 12, 16};
static const int tc_raster_values[] = {1, 4, 8, 16};
static const tsr_knob tc_knobs[] = {
    {"tile", TC_CONFIGS, tc_tile_values},
    {"stages", 4, tc_stage_values},
    {"split_k", 8, tc_split_values},
    {"raster", 4, tc_raster_values},
};
enum { K_TILE, K_STAGES, K_SPLIT, K_RASTER };

static bool tc_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc runs on cuda"), false;
    if (d->k > INT32_MAX - 256) /* the copies count k left in 32 bits */
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc: k > 2^31 - 257"), false;
    if (d->a_dtype == TSR_I8) {
        /* m16n8k32 on bytes: k-contiguous A and B (x W^T), i32 out, no epilogue */
        if (d->b_dtype != TSR_I8 || d->c_dtype != TSR_I32 || d->trans_a == TSR_TRANS ||
            d->trans_b != TSR_TRANS || d->epilogue.num_steps)
            return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED,
                           "gemm.sm80.tc int8: A k-contiguous, B transposed, i32 out, no epilogue"), false;
        if (!aligned16(g->a) || !aligned16(g->b) || d->lda % 16 || d->ldb % 16 ||
            (d->batch > 1 && (d->stride_a % 16 || d->stride_b % 16)))
            return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED,
                           "gemm.sm80.tc int8 needs 16-byte aligned rows (lda, ldb, strides %% 16 == 0)"), false;
        if (d->batch > 65535)
            return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc: batch > 65535"), false;
        return true;
    }
    if ((d->a_dtype != TSR_F16 && d->a_dtype != TSR_BF16) || d->b_dtype != d->a_dtype ||
        !tsr_is_float_dtype(d->c_dtype))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc takes f16/bf16 or int8 inputs"), false;
    /* cp.async moves 16-byte chunks: 8 elements per row start, every batch */
    if (!aligned16(g->a) || !aligned16(g->b) || d->lda % 8 || d->ldb % 8 ||
        (d->batch > 1 && (d->stride_a % 8 || d->stride_b % 8)))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED,
                       "gemm.sm80.tc needs 16-byte aligned A/B rows (lda, ldb, strides %% 8 == 0)"), false;
    if (d->batch > 65535 / 16)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc: batch > 4095"), false;
    return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static void tc_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    int sms = tsr_cuda(ctx)->sm_count;
    /* The largest tile that still gives every SM a CTA (the large ones with
     * k tiles of 64 and 3 stages, as CUTLASS's sm80 default); else the
     * smallest tile with k split until the SMs are busy. */
    const int order[] = {d->n >= d->m ? 5 : 6, 0, 3, 4};
    int cfg = 4, split = 1;
    for (int i = 0; i < 4; i++) {
        const tc_config *c = &tc_configs[order[i]];
        int64_t ctas = ceil_div(d->m, c->bm) * ceil_div(d->n, c->bn) * d->batch;
        if (ctas >= sms) {
            cfg = order[i];
            break;
        }
    }
    if (cfg == 4 && d->a_dtype != TSR_I8) { /* int8 sums exactly in i32: never split */
        int64_t ctas = ceil_div(d->m, 64) * ceil_div(d->n, 64) * d->batch;
        int64_t want = sms / (ctas ? ctas : 1);
        int64_t kmax = d->k / 512; /* keep each slice long enough to pipeline */
        if (want > kmax) want = kmax;
        for (int i = 7; i >= 0; i--)
            if (tc_split_values[i] <= want) {
                split = tc_split_values[i];
                break;
            }
    }
    s->v[K_TILE] = cfg;
    s->v[K_STAGES] = tc_configs[cfg].bk == 64 ? 3 : 4;
    s->v[K_SPLIT] = split;
    s->v[K_RASTER] = 8;
}

static bool tc_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (s->v[K_TILE] < 0 || s->v[K_TILE] >= TC_CONFIGS) return false;
    const tc_config *c = tc_config_of(d->a_dtype, s->v[K_TILE]);
    if (tc_smem(c, s->v[K_STAGES], d->a_dtype) > tsr_cuda(ctx)->smem_optin) return false;
    if (d->a_dtype == TSR_I8) return s->v[K_SPLIT] == 1;
    /* a split whose slices would be shorter than a few k tiles only adds traffic */
    return s->v[K_SPLIT] == 1 || d->k >= (int64_t)s->v[K_SPLIT] * 2 * c->bk;
}

static tsr_status tc_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    const tsr_dtype t = g->d.a_dtype;
    int cfg = s->v[K_TILE] >= 0 && s->v[K_TILE] < TC_CONFIGS ? s->v[K_TILE] : 0;
    const tc_config *c = tc_config_of(t, cfg);
    int stages = s->v[K_STAGES] >= 2 && s->v[K_STAGES] <= 5 ? s->v[K_STAGES] : 3;
    while (stages > 2 && tc_smem(c, stages, t) > tsr_cuda(ctx)->smem_optin) stages--;
    int raster = s->v[K_RASTER] > 0 ? s->v[K_RASTER] : 1;
    gemm_args a = args_for(g);
    st = splitk_prepare(ctx, &a, t == TSR_I8 ? 1 : s->v[K_SPLIT], c->bk);
    if (st) return st;
    bool ak = !a.trans_a, bkm = a.trans_b;
    tc_fn fn = t == TSR_F16    ? tc_pick<__half>(cfg, ak, bkm)
               : t == TSR_BF16 ? tc_pick<__nv_bfloat16>(cfg, ak, bkm)
                               : tc_pick_i8(cfg);
    size_t smem = tc_smem(c, stages, t);
    st = tsr_cuda_status(cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)smem),
                         "gemm.sm80.tc: cudaFuncSetAttribute");
    if (st) return st;
    int64_t tiles = ceil_div(a.M, c->bm) * ceil_div(a.N, c->bn);
    if (tiles > 0x7fffffff)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "gemm.sm80.tc: %lld tiles exceed the grid", (long long)tiles);
    dim3 grid((unsigned)tiles, 1, (unsigned)(a.batch * a.split));
    int threads = (c->bm / c->wm) * (c->bn / c->wn) * 32;
    fn<<<grid, threads, smem, tsr_cuda_stream(ctx)>>>(a, stages, raster);
    return finish_launch(ctx, &a, "gemm.sm80.tc");
}

extern "C" const tsr_kernel tsr_gemm_sm80_tc = {
    "gemm.sm80.tc", TSR_OP_GEMM, TSR_BACKEND_CUDA, "sm80", tc_supports, 4, tc_knobs,
    tc_default, tc_valid, tc_run,
};

/* -------------------------------------------------------- skinny kernel */

/* y (M <= 16 rows) = x W^T with W stored n x k: the weights stream once
 * from memory at full width. Each warp owns NW columns; lanes stride k in
 * 16-byte vectors, so a warp reads 512 contiguous bytes of each W row per
 * step; the few rows of A come from L1. A warp-shuffle reduction ends it. */
template <typename T> struct vec16 {
    static constexpr int n = 16 / sizeof(T);
};

template <typename T> __device__ __forceinline__ void unpack16(const uint4 &v, float *out) {
    const T *e = (const T *)&v;
#pragma unroll
    for (int i = 0; i < vec16<T>::n; i++) out[i] = tsr_to_f32<T>(e[i]);
}

template <typename T, int MT, int NW>
__global__ void __launch_bounds__(128) skinny_nt(const __grid_constant__ gemm_args g) {
    constexpr int VE = vec16<T>::n;
    const int lane = threadIdx.x & 31;
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int64_t n0 = warp * NW;
    if (n0 >= g.N) return;
    const int z = blockIdx.z % g.split;
    const int64_t b = blockIdx.z / g.split;
    const int64_t kbeg = z * g.k_per_split, kend = min(g.K, kbeg + g.k_per_split);
    const T *A = (const T *)g.A + b * g.sa;
    const T *B = (const T *)g.B + b * g.sb;
    const int M = (int)g.M;

    float acc[MT][NW];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NW; j++) acc[m][j] = 0.0f;

    /* whole vectors; both loads of a step issue before the arithmetic */
    const int64_t kvec_end = kbeg + (kend - kbeg) / VE * VE;
    for (int64_t k = kbeg + lane * VE; k < kvec_end; k += 32 * VE) {
        uint4 bv[NW];
#pragma unroll
        for (int j = 0; j < NW; j++) {
            int64_t n = min(n0 + j, g.N - 1);
            bv[j] = __ldg((const uint4 *)(B + n * g.ldb + k));
        }
#pragma unroll
        for (int m = 0; m < MT; m++) {
            if (m >= M) break;
            float af[VE];
            unpack16<T>(__ldg((const uint4 *)(A + m * g.lda + k)), af);
#pragma unroll
            for (int j = 0; j < NW; j++) {
                float bf[VE];
                unpack16<T>(bv[j], bf);
#pragma unroll
                for (int e = 0; e < VE; e++) acc[m][j] = fmaf(af[e], bf[e], acc[m][j]);
            }
        }
    }
    for (int64_t k = kvec_end + lane; k < kend; k += 32) /* the k tail */
#pragma unroll
        for (int m = 0; m < MT; m++) {
            if (m >= M) break;
            float av = tsr_to_f32<T>(A[m * g.lda + k]);
#pragma unroll
            for (int j = 0; j < NW; j++) {
                int64_t n = min(n0 + j, g.N - 1);
                acc[m][j] = fmaf(av, tsr_to_f32<T>(B[n * g.ldb + k]), acc[m][j]);
            }
        }

#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NW; j++)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], o);
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < NW; j++)
            if (lane == ((m * NW + j) & 31) && m < M && n0 + j < g.N) emit(g, z, b, m, n0 + j, acc[m][j]);
}

typedef void (*skinny_fn)(gemm_args);

template <typename T> static skinny_fn skinny_pick(int64_t m, int nw) {
#define SK(MT)                                                                        \
    if (m <= MT) return nw == 2 ? skinny_nt<T, MT, 2> : nw == 8 ? skinny_nt<T, MT, 8> \
                                                                : skinny_nt<T, MT, 4>;
    SK(1) SK(2) SK(4) SK(8)
#undef SK
    return nw == 2 ? skinny_nt<T, 16, 2> : skinny_nt<T, 16, 4>;
}

static const int sk_cols_values[] = {2, 4, 8};
static const int sk_split_values[] = {1, 2, 4, 8};
static const tsr_knob sk_knobs[] = {
    {"cols_per_warp", 3, sk_cols_values},
    {"split_k", 4, sk_split_values},
};

/* What both skinny kernels need: M <= 16 rows of x times W^T, A and B
 * k-contiguous with 16-byte aligned rows, batch x split within the grid. */
static bool skinny_shape_ok(const tsr_gemm_problem *g, const char *name, int64_t max_batch, char *why,
                            size_t why_len) {
    const tsr_gemm_desc *d = &g->d;
    if (d->m > 16 || d->trans_a == TSR_TRANS || d->trans_b != TSR_TRANS)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s: M <= 16 with A and B both k-contiguous", name),
               false;
    int64_t ve = 16 / (int64_t)tsr_dtype_size(d->a_dtype);
    if (!aligned16(g->a) || !aligned16(g->b) || d->lda % ve || d->ldb % ve ||
        (d->batch > 1 && (d->stride_a % ve || d->stride_b % ve)) || d->batch > max_batch)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s needs 16-byte aligned rows and batch <= %lld", name,
                       (long long)max_batch), false;
    return true;
}

static bool sk_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.skinny runs on cuda"), false;
    if (!tsr_is_float_dtype(d->a_dtype) || d->b_dtype != d->a_dtype || !tsr_is_float_dtype(d->c_dtype))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.skinny takes float inputs"), false;
    return skinny_shape_ok(g, "gemm.sm80.skinny", 65535 / 8, why, why_len); /* grid z: batch x split <= 8 */
}

/* The split-k that puts ~16 warps streaming W on each SM (enough memory
 * requests in flight) while each slice keeps k >= 1024 (several rounds of
 * loads), at most max. */
static int stream_split(const tsr_context *ctx, int64_t warps, int64_t k, int max) {
    const int64_t want = (int64_t)tsr_cuda(ctx)->sm_count * 16;
    int split = 1;
    while (split < max && warps * split < want && k / (split * 2) >= 1024) split *= 2;
    return split;
}

static void sk_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[0] = d->m <= 4 ? 4 : 2;
    s->v[1] = stream_split(ctx, ceil_div(d->n, s->v[0]) * d->batch, d->k, 8);
}

static tsr_status sk_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    gemm_args a = args_for(g);
    int nw = s->v[0] == 2 || s->v[0] == 8 ? s->v[0] : 4;
    if (nw == 8 && a.M > 8) nw = 4; /* 16 x 8 accumulators would spill */
    st = splitk_prepare(ctx, &a, s->v[1], 256);
    if (st) return st;
    skinny_fn fn = g->d.a_dtype == TSR_F16    ? skinny_pick<__half>(a.M, nw)
                   : g->d.a_dtype == TSR_BF16 ? skinny_pick<__nv_bfloat16>(a.M, nw)
                                              : skinny_pick<float>(a.M, nw);
    int64_t warps = ceil_div(a.N, nw);
    dim3 grid((unsigned)ceil_div(warps, 4), 1, (unsigned)(a.batch * a.split));
    fn<<<grid, 128, 0, tsr_cuda_stream(ctx)>>>(a);
    return finish_launch(ctx, &a, "gemm.sm80.skinny");
}

extern "C" const tsr_kernel tsr_gemm_sm80_skinny = {
    "gemm.sm80.skinny", TSR_OP_GEMM, TSR_BACKEND_CUDA, "sm80", sk_supports, 2, sk_knobs,
    sk_default, NULL, sk_run,
};

/* ------------------------------------------------- skinny tensor cores */

/* M <= 16 on tensor cores (decode and small batches, f16/bf16): the 16 rows
 * of an m16n8k16 step are the rows of A (zeros past M), its 8 columns are 8
 * rows of W. A dot product may sum its k in any order, so each lane loads 16
 * contiguous bytes (k 8t .. 8t+7, t = lane % 4) of its rows of A and of W,
 * and those fill the fragments of two mma steps, as if k were permuted the
 * same way in both operands: no shared memory and no shuffles in the k loop,
 * and W moves in 64-byte runs per row. Each warp owns NT tiles of 8
 * columns; the CTA's four warps take every fourth 32-k step of its k range
 * and add up through shared memory at the end. */
/* The first `left` (1..7) two-byte elements from p, then zeros: out of line,
 * so the k tail's element loads do not take registers in the k loop (they
 * had doubled the kernel's). */
template <typename T> __device__ __noinline__ uint4 load16_part(const T *p, int64_t left) {
    static_assert(sizeof(T) == 2, "two-byte elements");
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (i < left) w[i / 2] |= (uint32_t)__ldg((const unsigned short *)p + i) << (16 * (i % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* 16 bytes (8 elements) from p, the first `left` of them, or zeros (left <= 0) */
template <typename T> __device__ __forceinline__ uint4 load16_upto(const T *p, int64_t left) {
    return left >= 8 ? __ldg((const uint4 *)p) : left <= 0 ? make_uint4(0, 0, 0, 0) : load16_part(p, left);
}

template <typename T, int NT>
__global__ void __launch_bounds__(128) skinny_mma(const __grid_constant__ gemm_args g) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t = lane & 3, gq = lane >> 2;
    const int64_t n0 = (int64_t)blockIdx.x * 8 * NT;
    const int z = blockIdx.z % g.split;
    const int64_t b = blockIdx.z / g.split;
    const int64_t kbeg = z * g.k_per_split, kend = min(g.K, kbeg + g.k_per_split);
    const T *A = (const T *)g.A + b * g.sa, *B = (const T *)g.B + b * g.sb;
    /* rows of A past M read as zeros; columns past N repeat the last (not stored) */
    const int64_t lo_left = gq < g.M ? kend : 0, hi_left = gq + 8 < g.M ? kend : 0;
    const T *a_lo = A + min((int64_t)gq, g.M - 1) * g.lda, *a_hi = A + min((int64_t)gq + 8, g.M - 1) * g.lda;
    const T *w[NT];
#pragma unroll
    for (int j = 0; j < NT; j++) w[j] = B + min(n0 + 8 * j + gq, g.N - 1) * g.ldb;

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

    /* two 32-k steps a round, their loads first */
    for (int64_t s0 = kbeg + warp * 32; s0 < kend; s0 += 2 * 128) {
        uint4 al[2], ah[2], bv[2][NT];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int64_t k = s0 + u * 128 + 8 * t;
            al[u] = load16_upto(a_lo + k, lo_left - k);
            ah[u] = load16_upto(a_hi + k, hi_left - k);
#pragma unroll
            for (int j = 0; j < NT; j++) bv[u][j] = load16_upto(w[j] + k, kend - k);
        }
#pragma unroll
        for (int u = 0; u < 2; u++)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                const uint32_t f0[4] = {al[u].x, ah[u].x, al[u].y, ah[u].y}, b0[2] = {bv[u][j].x, bv[u][j].y};
                const uint32_t f1[4] = {al[u].z, ah[u].z, al[u].w, ah[u].w}, b1[2] = {bv[u][j].z, bv[u][j].w};
                tsr_mma_op<T>::run(acc[j], f0, b0);
                tsr_mma_op<T>::run(acc[j], f1, b1);
            }
    }

    __shared__ float part[3][NT * 4][32];
    if (warp)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) part[warp - 1][j * 4 + r][lane] = acc[j][r];
    __syncthreads();
    if (warp) return;
#pragma unroll
    for (int j = 0; j < NT; j++) {
#pragma unroll
        for (int r = 0; r < 4; r++) acc[j][r] += part[0][j * 4 + r][lane] + part[1][j * 4 + r][lane] + part[2][j * 4 + r][lane];
        const int64_t col = n0 + 8 * j + 2 * t;
        emit_pair(g, z, b, gq, col, acc[j][0], acc[j][1]);
        emit_pair(g, z, b, gq + 8, col, acc[j][2], acc[j][3]);
    }
}

static const int skt_tiles_values[] = {2, 4, 8};
static const int skt_split_values[] = {1, 2, 4, 8, 16};
static const tsr_knob skt_knobs[] = {
    {"n_tiles", 3, skt_tiles_values},
    {"split_k", 5, skt_split_values},
};

static bool skt_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.skinny_tc runs on cuda"), false;
    if ((d->a_dtype != TSR_F16 && d->a_dtype != TSR_BF16) || d->b_dtype != d->a_dtype ||
        !tsr_is_float_dtype(d->c_dtype))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.skinny_tc takes f16/bf16 inputs"), false;
    return skinny_shape_ok(g, "gemm.sm80.skinny_tc", 65535 / 16, why, why_len); /* split <= 16 */
}

static void skt_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[0] = 4; /* 4 tiles of 8 columns a CTA of 4 warps */
    s->v[1] = stream_split(ctx, ceil_div(d->n, 8 * 4) * 4 * d->batch, d->k, 16);
}

static tsr_status skt_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    gemm_args a = args_for(g);
    int nt = s->v[0] == 2 || s->v[0] == 8 ? s->v[0] : 4;
    st = splitk_prepare(ctx, &a, s->v[1], 256);
    if (st) return st;
    bool h = g->d.a_dtype == TSR_F16;
    void (*fn)(gemm_args) = nt == 2 ? (h ? skinny_mma<__half, 2> : skinny_mma<__nv_bfloat16, 2>)
                            : nt == 8 ? (h ? skinny_mma<__half, 8> : skinny_mma<__nv_bfloat16, 8>)
                                      : (h ? skinny_mma<__half, 4> : skinny_mma<__nv_bfloat16, 4>);
    dim3 grid((unsigned)ceil_div(a.N, 8 * nt), 1, (unsigned)(a.batch * a.split));
    fn<<<grid, 128, 0, tsr_cuda_stream(ctx)>>>(a);
    return finish_launch(ctx, &a, "gemm.sm80.skinny_tc");
}

extern "C" const tsr_kernel tsr_gemm_sm80_skinny_tc = {
    "gemm.sm80.skinny_tc", TSR_OP_GEMM, TSR_BACKEND_CUDA, "sm80", skt_supports, 2, skt_knobs,
    skt_default, NULL, skt_run,
};

/* ---------------------------------------------------------- f32 SGEMM */

/* 128 x 128 tile, k steps of 8, 256 threads each computing 8 x 8 as four
 * 4 x 4 blocks 64 apart (so the shared-memory float4 reads of a warp do not
 * conflict). Shared tiles hold A^T and B k-major-by-row: As[k][m], Bs[k][n];
 * the next k tile is loaded into registers while this one is computed. */
template <bool AK, bool BKM> __global__ void __launch_bounds__(256) sgemm_128(const __grid_constant__ gemm_args g) {
    __shared__ __align__(16) float As[2][8][128];
    __shared__ __align__(16) float Bs[2][8][128];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int tiles_n = (int)((g.N + 127) / 128);
    const int64_t m0 = (int64_t)(blockIdx.x / tiles_n) * 128, n0 = (int64_t)(blockIdx.x % tiles_n) * 128;
    const int z = blockIdx.z % g.split;
    const int64_t b = blockIdx.z / g.split;
    const int64_t kbeg = z * g.k_per_split, kend = min(g.K, kbeg + g.k_per_split);
    const float *A = (const float *)g.A + b * g.sa, *B = (const float *)g.B + b * g.sb;

    /* each thread moves 4 values of A and 4 of B per k tile */
    const int a_r = AK ? tid >> 1 : tid >> 5, a_c = AK ? (tid & 1) * 4 : (tid & 31) * 4;
    const int b_r = BKM ? tid >> 1 : tid >> 5, b_c = BKM ? (tid & 1) * 4 : (tid & 31) * 4;
    float ra[4], rb[4];
    auto fetch = [&](int64_t k0) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int64_t m, k;
            if (AK) m = m0 + a_r, k = k0 + a_c + i;
            else k = k0 + a_r, m = m0 + a_c + i;
            ra[i] = m < g.M && k < kend ? A[AK ? m * g.lda + k : k * g.lda + m] : 0.0f;
            int64_t n, kb;
            if (BKM) n = n0 + b_r, kb = k0 + b_c + i;
            else kb = k0 + b_r, n = n0 + b_c + i;
            rb[i] = n < g.N && kb < kend ? B[BKM ? n * g.ldb + kb : kb * g.ldb + n] : 0.0f;
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (AK) As[buf][a_c + i][a_r] = ra[i];
            else As[buf][a_r][a_c + i] = ra[i];
            if (BKM) Bs[buf][b_c + i][b_r] = rb[i];
            else Bs[buf][b_r][b_c + i] = rb[i];
        }
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    int buf = 0;
    if (kbeg < kend) {
        fetch(kbeg);
        stash(0);
    }
    __syncthreads();
    for (int64_t k0 = kbeg; k0 < kend; k0 += 8) {
        bool more = k0 + 8 < kend;
        if (more) fetch(k0 + 8);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float a[8], bb[8];
            *(float4 *)&a[0] = *(const float4 *)&As[buf][k][ty * 4];
            *(float4 *)&a[4] = *(const float4 *)&As[buf][k][64 + ty * 4];
            *(float4 *)&bb[0] = *(const float4 *)&Bs[buf][k][tx * 4];
            *(float4 *)&bb[4] = *(const float4 *)&Bs[buf][k][64 + tx * 4];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], bb[j], acc[i][j]);
        }
        if (more) {
            stash(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int64_t row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
            int64_t col = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (row < g.M && col < g.N) emit(g, z, b, row, col, acc[i][j]);
        }
}

static const int sg_split_values[] = {1, 2, 4, 8};
static const tsr_knob sg_knobs[] = {{"split_k", 4, sg_split_values}};

static bool sg_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (ctx->backend != TSR_BACKEND_CUDA)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.sgemm runs on cuda"), false;
    if (d->a_dtype != TSR_F32 || d->b_dtype != TSR_F32 || d->c_dtype != TSR_F32)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.sgemm is f32 only"), false;
    if (d->batch > 65535 / 8)
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.sgemm: batch > 8191"), false;
    return true;
}

static void sg_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    int64_t ctas = ceil_div(d->m, 128) * ceil_div(d->n, 128) * d->batch;
    int64_t want = tsr_cuda(ctx)->sm_count / (ctas ? ctas : 1);
    int split = 1;
    while (split < 8 && split * 2 <= want && d->k / (split * 2) >= 256) split *= 2;
    s->v[0] = split;
}

static tsr_status sg_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    gemm_args a = args_for(g);
    st = splitk_prepare(ctx, &a, s->v[0], 8);
    if (st) return st;
    int64_t tiles = ceil_div(a.M, 128) * ceil_div(a.N, 128);
    dim3 grid((unsigned)tiles, 1, (unsigned)(a.batch * a.split));
    void (*fn)(gemm_args) = !a.trans_a ? (a.trans_b ? sgemm_128<true, true> : sgemm_128<true, false>)
                                       : (a.trans_b ? sgemm_128<false, true> : sgemm_128<false, false>);
    fn<<<grid, 256, 0, tsr_cuda_stream(ctx)>>>(a);
    return finish_launch(ctx, &a, "gemm.sm80.sgemm");
}

extern "C" const tsr_kernel tsr_gemm_sm80_sgemm = {
    "gemm.sm80.sgemm", TSR_OP_GEMM, TSR_BACKEND_CUDA, "sm80", sg_supports, 1, sg_knobs,
    sg_default, NULL, sg_run,
};

/* ------------------------------------------------------------- generic */

__global__ void generic_gemm(const __grid_constant__ gemm_args g, tsr_dtype bt) {
    int64_t total = g.batch * g.M * g.N;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = idx / (g.M * g.N), r = idx % (g.M * g.N), i = r / g.N, j = r % g.N;
        const char *A = (const char *)g.A, *B = (const char *)g.B;
        int64_t a0 = b * g.sa + (g.trans_a ? i : i * g.lda), as = g.trans_a ? g.lda : 1;
        int64_t b0 = b * g.sb + (g.trans_b ? j * g.ldb : j), bs = g.trans_b ? 1 : g.ldb;
        if (g.c_dtype == TSR_I32) {
            uint32_t acc = 0;
            for (int64_t k = 0; k < g.K; k++)
                acc += (uint32_t)((int32_t)((const int8_t *)A)[a0 + k * as] *
                                  (int32_t)((const int8_t *)B)[b0 + k * bs]);
            int32_t *C = (int32_t *)g.C + b * g.sc + i * g.ldc + j;
            *C = i32_result((int32_t)acc, g.beta != 0.0f ? *C : 0, g.alpha, g.beta);
            continue;
        }
        float acc = 0.0f;
        for (int64_t k = 0; k < g.K; k++)
            acc = fmaf(tsr_dev_load(A, g.a_dtype, a0 + k * as), tsr_dev_load(B, bt, b0 + k * bs), acc);
        store_out(g, b, i, j, acc);
    }
}

static tsr_status generic_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_gemm_problem *g = &p->u.gemm;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    gemm_args a = args_for(g);
    generic_gemm<<<blocks_for(a.batch * a.M * a.N, 256, tsr_cuda(ctx)->sm_count), 256, 0,
                   tsr_cuda_stream(ctx)>>>(a, g->d.b_dtype);
    return tsr_cuda_after_launch("gemm.sm80.generic");
}

static bool generic_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    if (ctx->backend == TSR_BACKEND_CUDA) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "gemm.sm80.generic runs on cuda");
    return false;
}

extern "C" const tsr_kernel tsr_gemm_sm80_generic = {
    "gemm.sm80.generic", TSR_OP_GEMM, TSR_BACKEND_CUDA, "sm80", generic_supports, 0, NULL,
    NULL, NULL, generic_run,
};
