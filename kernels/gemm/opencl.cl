/* OpenCL GEMM, row-major after the op front's normalisation:
 * C[b] (M x N, ldc) = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b]).
 * A_T is the input dtype and TRANS_A/TRANS_B the transposes (compile time);
 * the output dtype, alpha/beta and the epilogue are arguments, so one
 * program serves every epilogue.
 *  - tiled: local-memory tiles and register blocks (opencl_tiled.cl);
 *  - direct: no local memory, each work-item NB columns of an M <= MR row
 *    panel (skinny and decode shapes), k vectorised by KV when both
 *    operands are k-contiguous;
 *  - generic: one work-item per output, every dtype (i8 -> i32 too). */
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef A_T
#define A_T 0
#endif

#define GEMM_ARGS long M, long N, long K, gcptr A, long lda, long sa, gcptr B, long ldb, long sb, \
    global void *C, long ldc, long sc, int c_t, int bias_m, float alpha, float beta, EPI_PARAMS

inline long a_index(long lda, long i, long q) { return TRANS_A ? q * lda + i : i * lda + q; }
inline long b_index(long ldb, long q, long j) { return TRANS_B ? j * ldb + q : q * ldb + j; }

#define GEMM_STORE(b, i, j, acc) \
    store_out(C, c_t, (b) * sc + (i) * ldc + (j), acc, alpha, beta, bias_m ? (i) : (j), b, i, j, EPI_PASS)

#ifdef TILED
#define TILED_ARGS GEMM_ARGS
#define TILE_M M
#define TILE_N N
#define TILE_K K
#define A_KFAST (!TRANS_A)
#define B_KFAST TRANS_B
#define LOAD_A(b, i, q) ((i) < M && (q) < K ? ld_f(A, A_T, (b) * sa + a_index(lda, i, q)) : 0.0f)
#define LOAD_B(b, q, j) ((j) < N && (q) < K ? ld_f(B, A_T, (b) * sb + b_index(ldb, q, j)) : 0.0f)
#define STORE(b, i, j, acc) GEMM_STORE(b, i, j, acc)
#endif

#ifdef DIRECT
/* Each work-item NB columns of C for all M <= MR rows. */
kernel void direct(GEMM_ARGS) {
    const long j0 = get_global_id(0) * NB, b = get_global_id(1);
    if (j0 >= N) return;
#if KV > 1 && !TRANS_A && TRANS_B && A_T == DT_F32
    /* A and B k-contiguous (x W^T): MB x NB dot products at a time, KV wide,
     * so each vector of A serves NB FMAs and each of B MB (one load per FMA
     * with one row of B a work-item left the loads the bottleneck). Rows
     * and columns past the edge re-read the last one and are not stored. */
    global const float *Af = (global const float *)A + b * sa, *Bf = (global const float *)B + b * sb;
    global const float *brow[NB];
    #pragma unroll
    for (int c = 0; c < NB; c++) brow[c] = Bf + min(j0 + c, N - 1) * ldb;
    for (long i0 = 0; i0 < M; i0 += MB) {
        global const float *arow[MB];
        CAT(float, KV) acc[MB][NB];
        #pragma unroll
        for (int r = 0; r < MB; r++) {
            arow[r] = Af + min(i0 + r, M - 1) * lda;
            #pragma unroll
            for (int c = 0; c < NB; c++) acc[r][c] = (CAT(float, KV))0.0f;
        }
        long q = 0;
        for (; q + KV <= K; q += KV) {
            CAT(float, KV) bv[NB];
            #pragma unroll
            for (int c = 0; c < NB; c++) bv[c] = CAT(vload, KV)(0, brow[c] + q);
            #pragma unroll
            for (int r = 0; r < MB; r++) {
                const CAT(float, KV) av = CAT(vload, KV)(0, arow[r] + q);
                #pragma unroll
                for (int c = 0; c < NB; c++) acc[r][c] = fma(av, bv[c], acc[r][c]);
            }
        }
        for (int r = 0; r < MB && i0 + r < M; r++)
            for (int c = 0; c < NB && j0 + c < N; c++) {
                float t[KV], sum = 0.0f;
                CAT(vstore, KV)(acc[r][c], 0, t);
                for (int v = 0; v < KV; v++) sum += t[v];
                for (long u = q; u < K; u++) sum = fma(arow[r][u], brow[c][u], sum);
                GEMM_STORE(b, i0 + r, j0 + c, sum);
            }
    }
#else
    /* MR rows at once (rows past M re-read row M-1 and are not stored). */
    long arow[MR];
    for (int r = 0; r < MR; r++) arow[r] = b * sa + a_index(lda, r < M ? r : M - 1, 0);
    for (long j = j0; j < j0 + NB && j < N; j++) {
        float acc[MR];
        for (int r = 0; r < MR; r++) acc[r] = 0.0f;
        for (long q = 0; q < K; q++) {
            const float bv = ld_f(B, A_T, b * sb + b_index(ldb, q, j));
            for (int r = 0; r < MR; r++) acc[r] = fma(ld_f(A, A_T, arow[r] + (TRANS_A ? q * lda : q)), bv, acc[r]);
        }
        for (int r = 0; r < MR; r++)
            if (r < M) GEMM_STORE(b, (long)r, j, acc[r]);
    }
#endif
}
#endif

#ifdef BLOCKED
/* f32: each work-item an RM x (NV*VW) block of C held in NV vector
 * registers per row, A and B read straight from global memory (caches on
 * CPUs; no local memory, no barriers but the KC chunks'). Per k step: NV
 * loads of B and RM scalars of A, each a broadcast operand of NV FMAs (an
 * embedded-broadcast FMA with AVX-512). The loops over the RM*NV
 * accumulators are unrolled explicitly: PoCL's LLVM left them rolled, the
 * accumulators in memory, at half the speed. The micro-kernel of a BLAS,
 * written once in OpenCL C. */
#define PW (VW * NV) /* the columns of a work-item's block and of a packed panel */
#if PACKB
/* B (any transpose) as panels of PW columns, each K x PW contiguous and zero
 * padded past N: the blocked kernel then streams its panel (no strided walk
 * down B's columns, no TLB miss per row). Bp[b][j / PW][q][j % PW]. */
kernel void pack_b(long N, long K, gcptr B, long ldb, long sb, global float *Bp) {
    const long j = get_global_id(0), q = get_global_id(1), b = get_global_id(2);
    const long NP = (N + PW - 1) / PW * PW;
    if (j >= NP || q >= K) return;
    Bp[b * NP * K + (j / PW) * K * PW + q * PW + j % PW] =
        j < N ? ld_f(B, DT_F32, b * sb + b_index(ldb, q, j)) : 0.0f;
}
#endif

/* KC > 0: k runs in KC-deep chunks with a work-group barrier between them,
 * so the work-group's slices of A and B (RM*wg rows, PW*wg columns, KC deep)
 * are reused from cache by all its work-items (PoCL runs a work-group's
 * work-items one after the other between barriers). */
kernel void blocked(GEMM_ARGS) {
#if MFAST /* neighbouring work-items share a column panel of B (kept in cache) */
    const long i0 = get_global_id(0) * RM, j0 = get_global_id(1) * PW, b = get_global_id(2);
#else /* neighbouring work-items share rows of A */
    const long j0 = get_global_id(0) * PW, i0 = get_global_id(1) * RM, b = get_global_id(2);
#endif
    const bool live = j0 < N && i0 < M;
#if KC == 0
    if (!live) return;
#endif
    /* a work-item past the edge computes on row/column 0 and stores nothing */
    const long jl = live ? j0 : 0, il = live ? i0 : 0;
#if PACKB /* B is the packed panels (ldb and sb unused) */
    global const float *Af = (global const float *)A + b * sa;
    global const float *Bf = (global const float *)B + b * ((N + PW - 1) / PW * PW) * K + jl * K;
#define BROW(q) (Bf + (q) * PW)
#else
    global const float *Af = (global const float *)A + b * sa, *Bf = (global const float *)B + b * sb;
#define BROW(q) (Bf + (q) * ldb + jl)
#endif
    realv acc[RM][NV];
    #pragma unroll
    for (int r = 0; r < RM; r++)
        #pragma unroll
        for (int v = 0; v < NV; v++) acc[r][v] = (realv)0.0f;
    global const float *arow[RM];
    #pragma unroll
    for (int r = 0; r < RM; r++) {
        const long i = il + r < M ? il + r : M - 1;
        arow[r] = Af + (TRANS_A ? i : i * lda);
    }
    const long astep = TRANS_A ? lda : 1;
#define AVAL(r, q) arow[r][(q) * astep]
    const bool full = PACKB || jl + PW <= N;
    const long chunk = KC > 0 ? KC : (K > 0 ? K : 1);
    for (long k0 = 0; k0 < K; k0 += chunk) {
        const long k1 = min(k0 + chunk, K);
        for (long q = k0; q < k1; q++) {
            realv bv[NV];
            if (full) {
                #pragma unroll
                for (int v = 0; v < NV; v++) bv[v] = VLOADV(v, BROW(q));
            } else { /* the right edge: columns past N read as 0 */
                float t[PW];
                #pragma unroll
                for (int e = 0; e < PW; e++) t[e] = jl + e < N ? Bf[q * ldb + jl + e] : 0.0f;
                #pragma unroll
                for (int v = 0; v < NV; v++) bv[v] = VLOADV(v, t);
            }
            #pragma unroll
            for (int r = 0; r < RM; r++) {
                const realv a = (realv)AVAL(r, q);
                #pragma unroll
                for (int v = 0; v < NV; v++) acc[r][v] = fma(a, bv[v], acc[r][v]);
            }
        }
#if KC > 0
        barrier(CLK_GLOBAL_MEM_FENCE);
#endif
    }
#undef BROW
#undef AVAL
    if (!live) return;
    /* f32 C, no epilogue, a whole block: vector stores (the per-element
     * store_out costs more than the FMAs when K is a few hundred) */
    const bool vec = c_t == DT_F32 && en == 0 && j0 + PW <= N;
    global float *Cf = (global float *)C + b * sc + i0 * ldc + j0;
    for (int r = 0; r < RM && i0 + r < M; r++)
        #pragma unroll
        for (int v = 0; v < NV; v++) {
            if (vec) {
                realv o = (realv)alpha * acc[r][v];
                if (beta != 0.0f) o = fma((realv)beta, VLOADV(v, Cf + r * ldc), o);
                VSTOREV(o, v, Cf + r * ldc);
                continue;
            }
            float out[VW];
            VSTOREV(acc[r][v], 0, out);
            for (int e = 0; e < VW && j0 + v * VW + e < N; e++) GEMM_STORE(b, i0 + r, j0 + v * VW + e, out[e]);
        }
}
#endif

#ifdef GENERIC
/* i32 = alpha * wrap32(sum) + beta * c, rounded half to even, saturated;
 * exact integer arithmetic when alpha == 1 and beta is 0 or 1. */
inline int i32_result(int acc, int c, float alpha, float beta) {
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) return (int)((uint)acc + (beta == 1.0f ? (uint)c : 0u));
#ifdef cl_khr_fp64
    double v = rint((double)alpha * acc + (beta != 0.0f ? (double)beta * c : 0.0));
    return v > 2147483647.0 ? INT_MAX : v < -2147483648.0 ? INT_MIN : (int)v;
#else
    float v = rint(alpha * (float)acc + (beta != 0.0f ? beta * (float)c : 0.0f));
    return v >= 2147483648.0f ? INT_MAX : v < -2147483648.0f ? INT_MIN : (int)v;
#endif
}

kernel void gemm_any(GEMM_ARGS) {
    const long j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (i >= M || j >= N) return;
    const long a0 = b * sa, b0 = b * sb;
    if (A_T == DT_I8) {
        global const char *Ai = (global const char *)A, *Bi = (global const char *)B;
        uint acc = 0;
        for (long q = 0; q < K; q++) acc += (uint)((int)Ai[a0 + a_index(lda, i, q)] * (int)Bi[b0 + b_index(ldb, q, j)]);
        global int *Ci = (global int *)C + b * sc + i * ldc + j;
        *Ci = i32_result((int)acc, beta != 0.0f ? *Ci : 0, alpha, beta);
        return;
    }
    float acc = 0.0f;
    for (long q = 0; q < K; q++) acc = fma(ld_f(A, A_T, a0 + a_index(lda, i, q)), ld_f(B, A_T, b0 + b_index(ldb, q, j)), acc);
    GEMM_STORE(b, i, j, acc);
}
#endif
