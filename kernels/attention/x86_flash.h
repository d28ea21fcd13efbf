/* Flash attention forward on x86 (FlashAttention-2's algorithm on a CPU),
 * one source for the AVX2 and AVX-512 builds: include a simd.h and define
 * ATTN_ARCH, ATTN_SYMBOL and ATTN_FEATURES first (and ATTN_NAME and
 * ATTN_BF16_DOT for the AVX512_BF16 build).
 *
 * Per (batch, kv head), the query rows of every head that shares that kv
 * head (GQA: K and V are read once per group and never copied per head) are
 * cut into blocks of BQ rows. A block streams its keys in blocks of BK
 * through per-thread buffers (f16/bf16 converted to f32 while packing, but
 * for the bf16 path),
 * keeps a running max, sum and output accumulator per row (the online
 * softmax) and never materialises the seq_q x seq_kv logits: extra memory is
 * O(BQ * (BK + head_dim)) per thread. Key blocks a causal mask hides from
 * every row of a block are never read. When there are few row blocks
 * (decode: seq_q of 1..16), the keys are also split into ranges computed in
 * parallel and combined through their max and sum.
 *
 * Blocks of many rows run BLIS-style: the K block is packed transposed
 * (Kt[e][key]) once per block, so S = Q K^T is a register tile of MR rows
 * by up to four 16-key vectors updated rank-1 per head-dim element (a
 * broadcast q value times a vector of keys: no lane reductions), and
 * O += P V is the same tile with P broadcast and V rows as the vector
 * operand (f32 V of whole vectors is read where it lies). The softmax
 * runs between the two tiles as a row pass over the block's logits, which
 * are still in L1/L2: the tiles keep ~90% of the FMA peak, the row pass and
 * the packing cost 10-20% of the time (measured on Zen 4; fusing the max
 * into the S tile would save about a fifth of the row pass, not tried).
 * Decode blocks (few rows) take the direct path below, which reads K and V
 * in place, converted in registers, never packed (bf16 on AVX512_BF16:
 * vdpbf16ps on K's rows as they lie, and on pairs of V rows interleaved in
 * registers; 1.6-2.4x the converting path on one core). With ATTN_BF16_DOT (bf16 inputs on AVX512_BF16) both products
 * run on vdpbf16ps over bf16 pairs: Kt holds pairs of head-dim elements,
 * P is rounded to bf16 (as FlashAttention does on GPUs) and V is packed as
 * pairs of consecutive keys; accumulation stays f32 and the row sums
 * (hence lse) are taken over the f32 weights. Rounding P costs at most
 * 2^-9 max|v| per output element.
 *
 * Semantics are attention.ref's: a row that sees no key gives o = 0 and
 * lse = -inf; a NaN (or +inf) logit among a row's visible keys gives a NaN
 * row, as the reference's arithmetic does. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx2/prefetch.h"
#include "../../arch/x86_avx512/vmath.h"
#include "../../arch/x86_avx512/vdtype.h"
#include "../../arch/x86_avx512/vexp.h"
#include "internal.h"

enum { K_BLOCK_Q, K_BLOCK_KV, K_SPLITS };
#define BLOCK_Q_MAX 256
#define BLOCK_Q_COUNT 7
static const int block_q_values[BLOCK_Q_COUNT] = {4, 8, 16, 32, 64, 128, BLOCK_Q_MAX};
static const int block_kv_values[] = {16, 32, 64, 128, 256};
static const int split_values[] = {1, 2, 4, 8, 16};
static const tsr_knob flash_knobs[] = {
    {"block_q", BLOCK_Q_COUNT, block_q_values},
    {"block_kv", 5, block_kv_values},
    {"kv_splits", 5, split_values},
};

#define MAX_HEAD_DIM 1024
#define MAX_PARTIAL_BYTES ((int64_t)256 << 20)

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* ------------------------------------------------------ vector helpers */

/* n values of dtype t from src + off into dst as f32, zeros up to np. */
static void load_row(float *dst, const void *src, tsr_dtype t, int64_t off, int64_t n, int64_t np) {
    int64_t e = 0;
    if (t == TSR_F32) {
        memcpy(dst, (const float *)src + off, sizeof(float) * (size_t)n);
        e = n;
    } else {
        for (; e + VL <= n; e += VL) vf_store(dst + e, vf_load_dtype(src, t, off + e));
        for (; e < n; e++) dst[e] = tsr_load_f(src, t, off + e);
    }
    for (; e < np; e++) dst[e] = 0.0f;
}

/* ------------------------------------------------------------- the job */

/* The logits' units: S holds q.k times s_scale, the scale, or 1 where the
 * softmax takes the scale (one multiply fewer per logit): where no mask is
 * added to scaled logits, and the scale is at most 1, so a scaled logit
 * overflows only where its product already has. The weights are
 * 2^((s - max) t_scale), log2(e) in t_scale; a logit is s * s_unit. */
typedef struct flash_job {
    const tsr_attention_problem *a;
    int64_t group, rows_per_kv, bq, bk, dp, nblocks, splits, keys_per_split;
    float s_scale, t_scale, s_unit;
    float *partial; /* splits > 1: [row][split] (m, l, nan, O[dp]) */
} flash_job;

/* Per-thread buffers, in floats. q: the block's query rows (f32, head dim
 * padded to dp); qw: the same rows as bf16 pairs (ATTN_BF16_DOT); k: Kt, the
 * packed K block; v: the packed V block; s: logits, then f32 weights; p: the
 * weights as bf16 pairs (ATTN_BF16_DOT); o: accumulators; m, l, nan: per-row
 * max, sum and NaN flag. A bf16 pair takes one float's 32 bits. */
typedef struct flash_buf {
    float *q, *qw, *k, *v, *s, *p, *o, *m, *l, *nan;
} flash_buf;

static size_t buf_floats(const flash_job *j) {
    int64_t bqp = round_up(j->bq, 4), bkp = round_up(j->bk, VL);
    return (size_t)(bqp * j->dp + bqp * j->dp / 2 + 2 * bkp * j->dp + bqp * bkp + bqp * bkp / 2 + bqp * j->dp +
                    3 * bqp);
}

static void buf_carve(const flash_job *j, float *base, flash_buf *b) {
    int64_t bqp = round_up(j->bq, 4), bkp = round_up(j->bk, VL);
    b->q = base, b->qw = b->q + bqp * j->dp, b->k = b->qw + bqp * j->dp / 2, b->v = b->k + bkp * j->dp;
    b->s = b->v + bkp * j->dp, b->p = b->s + bqp * bkp, b->o = b->p + bqp * bkp / 2;
    b->m = b->o + bqp * j->dp, b->l = b->m + bqp, b->nan = b->l + bqp;
}

/* ------------------------------------------- the register-tiled products */

/* MR rows of a tile (rows of A); NV_MAX vectors of C per tile: 6 x 4 zmm
 * accumulators leave room for the 4 B vectors and a broadcast in 32
 * registers (6 x 2 ymm in AVX2's 16). */
#define MR 6
#if VL == 16
#define NV_MAX 4
#else
#define NV_MAX 2
#endif

/* One packed multiply-add: f32 FMA, or two bf16 products per lane. */
#ifdef ATTN_BF16_DOT
#define PK_PER_WORD 2
#define PK_DOT(acc, a, b) \
    _mm512_dpbf16_ps(acc, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b))
#else
#define PK_PER_WORD 1
#define PK_DOT(acc, a, b) vf_fma(a, b, acc)
#endif

/* C[M][NV vectors] (+)= A[M][kn] B[kn][NV vectors]: A's element broadcast,
 * B's row the vector operand (a rank-1 update per k). With acc_in the tile
 * adds to C, else C = scale * (A B) (A B where scale is 1: the softmax
 * takes the scale). M and NV are constants after inlining,
 * so the tile lives in registers for the whole k loop. */
static inline __attribute__((always_inline)) void tile(int64_t kn, const float *a, int64_t lda, const float *b,
                                                       int64_t ldb, float *c, int64_t ldc, const int M,
                                                       const int NV, const int acc_in, float scale) {
    vf acc[MR][NV_MAX];
#pragma GCC unroll 8
    for (int r = 0; r < M; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[r][v] = acc_in ? vf_load(c + r * ldc + v * VL) : vf_zero();
    for (int64_t k = 0; k < kn; k++) {
        vf bv[NV_MAX];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bv[v] = vf_load(b + k * ldb + v * VL);
#pragma GCC unroll 8
        for (int r = 0; r < M; r++) {
            const vf av = vf_set1(a[r * lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = PK_DOT(acc[r][v], av, bv[v]);
        }
    }
    const vf sc = vf_set1(scale);
#pragma GCC unroll 8
    for (int r = 0; r < M; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            vf_store(c + r * ldc + v * VL, acc_in || scale == 1.0f ? acc[r][v] : vf_mul(sc, acc[r][v]));
}

/* One row panel of M rows across cols (a multiple of VL) columns. */
static inline __attribute__((always_inline)) void panel(int64_t kn, const float *a, int64_t lda, const float *b,
                                                        int64_t ldb, float *c, int64_t ldc, int64_t cols,
                                                        const int M, const int acc_in, float scale) {
    int64_t c0 = 0;
    for (; c0 + NV_MAX * VL <= cols; c0 += NV_MAX * VL)
        tile(kn, a, lda, b + c0, ldb, c + c0, ldc, M, NV_MAX, acc_in, scale);
    switch ((cols - c0) / VL) {
    case 3: if (NV_MAX > 3) tile(kn, a, lda, b + c0, ldb, c + c0, ldc, M, 3, acc_in, scale); break;
    case 2: if (NV_MAX > 2) tile(kn, a, lda, b + c0, ldb, c + c0, ldc, M, 2, acc_in, scale); break;
    case 1: tile(kn, a, lda, b + c0, ldb, c + c0, ldc, M, 1, acc_in, scale); break;
    default: break;
    }
}

/* C[rows][cols] (+)= A[rows][kn] B[kn][cols] (rows even, cols a multiple
 * of VL), in panels of MR rows and a 2- or 4-row tail. */
static void gemm_tiles(int64_t kn, const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                       int64_t rows, int64_t cols, const int acc_in, float scale) {
    int64_t r0 = 0;
    for (; r0 + MR <= rows; r0 += MR)
        panel(kn, a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc, cols, MR, acc_in, scale);
    if (rows - r0 >= 4) panel(kn, a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc, cols, 4, acc_in, scale), r0 += 4;
    if (rows - r0 >= 2) panel(kn, a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc, cols, 2, acc_in, scale);
}

/* S = s_scale * Q K^T for the block (rows of q, packed Kt). */
static void s_tiles(const flash_job *j, const flash_buf *b, int64_t nr2, int64_t bkp) {
#ifdef ATTN_BF16_DOT
    const int64_t kn = (j->a->d.head_dim + 1) / 2, lda = j->dp / 2;
    const float *q = b->qw;
#else
    const int64_t kn = j->a->d.head_dim, lda = j->dp;
    const float *q = b->q;
#endif
    gemm_tiles(kn, q, lda, b->k, bkp, b->s, bkp, nr2, bkp, 0, j->s_scale);
}

/* O += P V for the block's nk keys; V rows ldv apart from v (the packed
 * block, or f32 V where it lies). */
static void pv_tiles(const flash_job *j, const flash_buf *b, int64_t nr2, int64_t nk, int64_t bkp, const float *v,
                     int64_t ldv) {
#ifdef ATTN_BF16_DOT
    gemm_tiles((nk + 1) / 2, b->p, bkp / 2, v, ldv, b->o, j->dp, nr2, j->dp, 1, 1.0f);
#else
    gemm_tiles(nk, b->s, bkp, v, ldv, b->o, j->dp, nr2, j->dp, 1, 1.0f);
#endif
}

/* --------------------------------------------------------------- packing */

/* Eight rows of eight 32-bit values transposed in registers. */
static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {
        const __m256 *x = t + 4 * h;
        u[4 * h] = _mm256_shuffle_ps(x[0], x[2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 1] = _mm256_shuffle_ps(x[0], x[2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * h + 2] = _mm256_shuffle_ps(x[1], x[3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * h + 3] = _mm256_shuffle_ps(x[1], x[3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

#ifdef ATTN_BF16_DOT
/* Word w (0-based) of a bf16 row of n elements: elements 2w and 2w + 1,
 * the second zero past the row's end. */
static inline float bf16_word(const uint16_t *row, int64_t w, int64_t n) {
    uint32_t lo = row[2 * w], hi = 2 * w + 1 < n ? row[2 * w + 1] : 0, x = lo | hi << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Eight consecutive 32-bit words (16 bf16) of row at word w. */
static inline __m256 row_words8(const void *row, int64_t w) {
    return _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + 2 * w)));
}
#else
/* Eight elements of dtype t at element i of row, as f32. */
static inline __attribute__((always_inline)) __m256 row_words8_t(const void *row, int64_t i, tsr_dtype t) {
    if (t == TSR_F32) return _mm256_loadu_ps((const float *)row + i);
    __m128i raw = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    return t == TSR_F16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}
#endif

/* Kt[w][c] for the block's nk keys (rows ks elements apart from kp): w runs
 * over head-dim elements (f32) or bf16 pairs of them; keys nk..bkp are 0.
 * 8 x 8 blocks go through registers; edges element by element. */
static inline __attribute__((always_inline)) void pack_kt_t(const flash_job *j, float *kt, int64_t bkp,
                                                           const char *kp, int64_t ks, int64_t nk, tsr_dtype t) {
    const int64_t D = j->a->d.head_dim, es = (int64_t)tsr_dtype_size(t);
#ifdef ATTN_BF16_DOT
    const int64_t W = (D + 1) / 2, Wfull = D / 16 * 8; /* words, and words in whole groups of 8 */
#else
    const int64_t W = D, Wfull = D / 8 * 8;
#endif
    int64_t c0 = 0;
    for (; c0 + 8 <= nk; c0 += 8) {
        const char *rows = kp + c0 * ks * es;
        for (int64_t w0 = 0; w0 < Wfull; w0 += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
#ifdef ATTN_BF16_DOT
                r[i] = row_words8(rows + i * ks * es, w0);
#else
                r[i] = row_words8_t(rows + i * ks * es, w0, t);
#endif
            transpose8(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(kt + (w0 + i) * bkp + c0, r[i]);
        }
    }
    for (int64_t w = 0; w < W; w++) {
        for (int64_t c = w < Wfull ? c0 : 0; c < nk; c++) {
            const char *row = kp + c * ks * es;
#ifdef ATTN_BF16_DOT
            kt[w * bkp + c] = bf16_word((const uint16_t *)row, w, D);
#else
            kt[w * bkp + c] = tsr_load_f(row, t, w);
#endif
        }
        for (int64_t c = nk; c < bkp; c++) kt[w * bkp + c] = 0.0f;
    }
}

static void pack_kt(const flash_job *j, float *kt, int64_t bkp, const char *kp, int64_t nk) {
    const int64_t ks = j->a->d.k_strides[2];
#ifdef ATTN_BF16_DOT
    pack_kt_t(j, kt, bkp, kp, ks, nk, TSR_BF16);
#else
    switch (j->a->d.dtype) {
    case TSR_F16: pack_kt_t(j, kt, bkp, kp, ks, nk, TSR_F16); break;
    case TSR_BF16: pack_kt_t(j, kt, bkp, kp, ks, nk, TSR_BF16); break;
    default: pack_kt_t(j, kt, bkp, kp, ks, nk, TSR_F32); break;
    }
#endif
}

/* The V block as the P V tile's vector operand: f32 rows [key][dp], or
 * (ATTN_BF16_DOT) pairs of consecutive keys interleaved per head-dim
 * element, [key pair][dp words], with a zero partner for an odd last key. */
static void pack_v(const flash_job *j, float *vb, int64_t vo, int64_t nk) {
    const tsr_attention_desc *d = &j->a->d;
    const int64_t D = d->head_dim, dp = j->dp, vs = d->v_strides[2];
#ifdef ATTN_BF16_DOT
    /* word e of a pair = (v[2c][e], v[2c + 1][e]): lanes 2i and 2i + 1 take element i of the two rows */
    static const uint16_t inter[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_loadu_si512(inter);
    const uint16_t *v = (const uint16_t *)j->a->v + vo;
    for (int64_t c = 0; c < nk; c += 2) {
        const uint16_t *r0 = v + c * vs, *r1 = r0 + vs;
        for (int64_t e = 0; e < dp; e += VL) {
            const int64_t n = D - e >= VL ? VL : D - e > 0 ? D - e : 0;
            const __mmask16 m = (__mmask16)((1u << n) - 1);
            const __m256i a = _mm256_maskz_loadu_epi16(m, r0 + e);
            const __m256i b = c + 1 < nk ? _mm256_maskz_loadu_epi16(m, r1 + e) : _mm256_setzero_si256();
            const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
            _mm512_storeu_si512(vb + c / 2 * dp + e, _mm512_permutexvar_epi16(idx, ab));
        }
    }
#else
    for (int64_t c = 0; c < nk; c++) load_row(vb + c * dp, j->a->v, d->dtype, vo + c * vs, D, dp);
#endif
}

#ifdef ATTN_BF16_DOT
/* The block's query rows as bf16 pairs (exact: they came from bf16). */
static void pack_qw(const flash_job *j, const flash_buf *b, int64_t nr2) {
    for (int64_t r = 0; r < nr2; r++)
        for (int64_t e = 0; e < j->dp; e += VL)
            _mm256_storeu_si256((__m256i *)(b->qw + r * j->dp / 2 + e / 2),
                                (__m256i)_mm512_cvtneps_pbh(vf_load(b->q + r * j->dp + e)));
}
#endif

/* The next key block's K and V rows (direct path): fetched into L2 while
 * this block computes. Decode reads every byte of K and V once, and the
 * hardware prefetchers do not keep up with P V's column passes over V
 * (eight strided sweeps of a 64 KB block at head_dim 128, each line first
 * touched by a demand miss): one Zen 3 core spent 75% of a 4096-key f32
 * decode stalled on those loads and on K's. */
typedef struct next_rows {
    const char *k, *v; /* key 0 of the next block, or NULL */
    int64_t ks, vs;    /* row strides, bytes */
    int64_t n, bytes;  /* its keys; bytes a row */
} next_rows;

static inline __attribute__((always_inline)) void prefetch_row_l2(const char *row, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) tsr_prefetch_l2(row + o);
    tsr_prefetch_l2(row + bytes - 1);
}

/* Keys c and c + 1 of the next block, K and V. */
static inline __attribute__((always_inline)) void prefetch_pair(const next_rows *nx, int64_t c) {
    if (!nx->k) return;
    for (int64_t i = c; i < c + 2 && i < nx->n; i++) {
        prefetch_row_l2(nx->k + i * nx->ks, nx->bytes);
        prefetch_row_l2(nx->v + i * nx->vs, nx->bytes);
    }
}

/* S[r][c] = s_scale q_r . k_c for rows [0, nr4) and keys [0, nk): 4 x 2 dot
 * products share their loads, and four lane reductions cost one shuffle
 * tree. Key pairs outside, so a pair stays in L1 while the rows pass. Keys
 * are rows of len elements of dtype t, ks apart, from kp: the packed f32
 * block (len = dp), or, on the direct path for few rows (decode), K where it
 * lies, converted in registers and never packed (len = head_dim, a
 * multiple of VL), so each byte of the cache is read once per row block.
 * Blocks of more rows use s_tiles instead. */
static inline __attribute__((always_inline)) void scores(const flash_job *j, const flash_buf *b, int64_t nr4,
                                                          int64_t nk, int64_t bkp, const char *kp, int64_t ks,
                                                          tsr_dtype t, int64_t len, const next_rows *nx) {
    const int64_t dp = j->dp, es = (int64_t)tsr_dtype_size(t);
    const float scale = j->s_scale;
    for (int64_t c = 0; c < nk; c += 2) {
        prefetch_pair(nx, c);
        const char *k0 = kp + c * ks * es, *k1 = c + 1 < nk ? k0 + ks * es : k0;
        for (int64_t r = 0; r < nr4; r += 4) {
            const float *q0 = b->q + r * dp, *q1 = q0 + dp, *q2 = q1 + dp, *q3 = q2 + dp;
            vf a00 = vf_zero(), a01 = vf_zero(), a10 = vf_zero(), a11 = vf_zero();
            vf a20 = vf_zero(), a21 = vf_zero(), a30 = vf_zero(), a31 = vf_zero();
            for (int64_t e = 0; e < len; e += VL) {
                vf x0 = vf_load_dtype(k0, t, e), x1 = vf_load_dtype(k1, t, e), y;
                y = vf_load(q0 + e), a00 = vf_fma(y, x0, a00), a01 = vf_fma(y, x1, a01);
                y = vf_load(q1 + e), a10 = vf_fma(y, x0, a10), a11 = vf_fma(y, x1, a11);
                y = vf_load(q2 + e), a20 = vf_fma(y, x0, a20), a21 = vf_fma(y, x1, a21);
                y = vf_load(q3 + e), a30 = vf_fma(y, x0, a30), a31 = vf_fma(y, x1, a31);
            }
            float s0[4], s1[4];
            vf_hsum4(a00, a10, a20, a30, s0);
            vf_hsum4(a01, a11, a21, a31, s1);
            for (int i = 0; i < 4; i++) {
                b->s[(r + i) * bkp + c] = scale * s0[i];
                if (c + 1 < nk) b->s[(r + i) * bkp + c + 1] = scale * s1[i];
            }
        }
    }
}

/* O[r] += sum_c P[r][c] V[c], four rows by two vectors, V converted once per
 * four rows. */
static inline __attribute__((always_inline)) void pv_direct(const flash_job *j, const flash_buf *b, int64_t nr4,
                                                             int64_t nk, int64_t bkp, const char *vp, int64_t vs,
                                                             tsr_dtype t) {
    const int64_t dp = j->dp, D = j->a->d.head_dim, es = (int64_t)tsr_dtype_size(t);
    for (int64_t r = 0; r < nr4; r += 4) {
        const float *p0 = b->s + r * bkp, *p1 = p0 + bkp, *p2 = p1 + bkp, *p3 = p2 + bkp;
        float *o0 = b->o + r * dp, *o1 = o0 + dp, *o2 = o1 + dp, *o3 = o2 + dp;
        for (int64_t e = 0; e < D; e += 2 * VL) {
            const int two = e + VL < D;
            vf c00 = vf_load(o0 + e), c10 = vf_load(o1 + e), c20 = vf_load(o2 + e), c30 = vf_load(o3 + e);
            vf c01 = two ? vf_load(o0 + e + VL) : vf_zero(), c11 = two ? vf_load(o1 + e + VL) : vf_zero();
            vf c21 = two ? vf_load(o2 + e + VL) : vf_zero(), c31 = two ? vf_load(o3 + e + VL) : vf_zero();
            for (int64_t c = 0; c < nk; c++) {
                const char *vr = vp + (c * vs + e) * es;
                vf x0 = vf_load_dtype(vr, t, 0), x1 = two ? vf_load_dtype(vr, t, VL) : vf_zero();
                vf w0 = vf_set1(p0[c]), w1 = vf_set1(p1[c]), w2 = vf_set1(p2[c]), w3 = vf_set1(p3[c]);
                c00 = vf_fma(w0, x0, c00), c01 = vf_fma(w0, x1, c01);
                c10 = vf_fma(w1, x0, c10), c11 = vf_fma(w1, x1, c11);
                c20 = vf_fma(w2, x0, c20), c21 = vf_fma(w2, x1, c21);
                c30 = vf_fma(w3, x0, c30), c31 = vf_fma(w3, x1, c31);
            }
            vf_store(o0 + e, c00), vf_store(o1 + e, c10), vf_store(o2 + e, c20), vf_store(o3 + e, c30);
            if (two) vf_store(o0 + e + VL, c01), vf_store(o1 + e + VL, c11), vf_store(o2 + e + VL, c21), vf_store(o3 + e + VL, c31);
        }
    }
}

#ifdef ATTN_BF16_DOT
/* scores() on vdpbf16ps: bf16 query pairs (qw) against K's rows as they
 * lie, 32 head-dim elements a step (a masked tail), 4 rows x 2 keys, the
 * same lane reductions; half the multiply-add instructions and no
 * conversion of K. */
static void scores_bf16(const flash_job *j, const flash_buf *b, int64_t nr4, int64_t nk, int64_t bkp,
                        const uint16_t *kp, int64_t ks, const next_rows *nx) {
    const int64_t D = j->a->d.head_dim, qs = j->dp; /* qw rows: dp bf16 */
    const uint16_t *qw = (const uint16_t *)b->qw;
    const float scale = j->s_scale;
    for (int64_t c = 0; c < nk; c += 2) {
        prefetch_pair(nx, c);
        const uint16_t *k0 = kp + c * ks, *k1 = c + 1 < nk ? k0 + ks : k0;
        for (int64_t r = 0; r < nr4; r += 4) {
            __m512 a[4][2];
            for (int i = 0; i < 4; i++) a[i][0] = a[i][1] = _mm512_setzero_ps();
            for (int64_t e = 0; e < D; e += 32) {
                const __mmask32 m = D - e >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (D - e)) - 1);
                const __m512bh x0 = (__m512bh)_mm512_maskz_loadu_epi16(m, k0 + e);
                const __m512bh x1 = (__m512bh)_mm512_maskz_loadu_epi16(m, k1 + e);
                for (int i = 0; i < 4; i++) {
                    const __m512bh y = (__m512bh)_mm512_maskz_loadu_epi16(m, qw + (r + i) * qs + e);
                    a[i][0] = _mm512_dpbf16_ps(a[i][0], y, x0), a[i][1] = _mm512_dpbf16_ps(a[i][1], y, x1);
                }
            }
            float s0[4], s1[4];
            vf_hsum4(a[0][0], a[1][0], a[2][0], a[3][0], s0);
            vf_hsum4(a[0][1], a[1][1], a[2][1], a[3][1], s1);
            for (int i = 0; i < 4; i++) {
                b->s[(r + i) * bkp + c] = scale * s0[i];
                if (c + 1 < nk) b->s[(r + i) * bkp + c + 1] = scale * s1[i];
            }
        }
    }
}
#endif

#ifdef ATTN_BF16_DOT
/* Rows r..r+3 of O, NV vectors from element e: O += P V on vdpbf16ps with
 * the bf16 weight pairs (p) broadcast and each pair of V rows interleaved
 * in registers (vpermw), as pack_v lays them out for the packed path. */
static inline __attribute__((always_inline)) void pv_bf16_rows(const flash_job *j, const flash_buf *b, int64_t r,
                                                               int64_t e, int64_t nk, int64_t bkp, const uint16_t *vp,
                                                               int64_t vs, const __m512i idx, const int NV) {
    const int64_t dp = j->dp;
    const float *pw = b->p + r * (bkp / 2);
    float *o = b->o + r * dp + e;
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_loadu_ps(o + i * dp + v * VL);
    for (int64_t c = 0; c < nk; c += 2) {
        const uint16_t *v0 = vp + c * vs + e, *v1 = v0 + vs;
        const bool pair = c + 1 < nk; /* an odd last key pairs with zeros */
        __m512bh x[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(v0 + v * VL));
            const __m256i hi = pair ? _mm256_loadu_si256((const __m256i *)(v1 + v * VL)) : _mm256_setzero_si256();
            x[v] = (__m512bh)_mm512_permutexvar_epi16(idx, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const __m512bh w = (__m512bh)_mm512_castps_si512(_mm512_set1_ps(pw[i * (bkp / 2) + c / 2]));
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], w, x[v]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(o + i * dp + v * VL, acc[i][v]);
}

/* pv_direct for bf16 V where it lies (head_dim a multiple of VL). */
static void pv_direct_bf16(const flash_job *j, const flash_buf *b, int64_t nr4, int64_t nk, int64_t bkp,
                           const uint16_t *vp, int64_t vs) {
    static const uint16_t inter[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_loadu_si512(inter);
    const int64_t D = j->a->d.head_dim;
    for (int64_t r = 0; r < nr4; r += 4) {
        int64_t e = 0;
        for (; e + 4 * VL <= D; e += 4 * VL) pv_bf16_rows(j, b, r, e, nk, bkp, vp, vs, idx, 4);
        switch ((D - e) / VL) {
        case 3: pv_bf16_rows(j, b, r, e, nk, bkp, vp, vs, idx, 3); break;
        case 2: pv_bf16_rows(j, b, r, e, nk, bkp, vp, vs, idx, 2); break;
        case 1: pv_bf16_rows(j, b, r, e, nk, bkp, vp, vs, idx, 1); break;
        default: break;
        }
    }
}
#endif

/* The direct path, specialised per dtype so the converting loads inline. */
static void block_direct(const flash_job *j, const flash_buf *b, int64_t nr4, int64_t nk, int64_t bkp,
                         const void *kp, const void *vp, int pass, const next_rows *nx) {
    const tsr_attention_desc *d = &j->a->d;
    switch (d->dtype) {
    case TSR_F16:
        if (pass == 0) scores(j, b, nr4, nk, bkp, kp, d->k_strides[2], TSR_F16, d->head_dim, nx);
        else pv_direct(j, b, nr4, nk, bkp, vp, d->v_strides[2], TSR_F16);
        break;
    case TSR_BF16:
#ifdef ATTN_BF16_DOT
        if (pass == 0) scores_bf16(j, b, nr4, nk, bkp, kp, d->k_strides[2], nx);
        else pv_direct_bf16(j, b, nr4, nk, bkp, vp, d->v_strides[2]);
#else
        if (pass == 0) scores(j, b, nr4, nk, bkp, kp, d->k_strides[2], TSR_BF16, d->head_dim, nx);
        else pv_direct(j, b, nr4, nk, bkp, vp, d->v_strides[2], TSR_BF16);
#endif
        break;
    default:
        if (pass == 0) scores(j, b, nr4, nk, bkp, kp, d->k_strides[2], TSR_F32, d->head_dim, nx);
        else pv_direct(j, b, nr4, nk, bkp, vp, d->v_strides[2], TSR_F32);
        break;
    }
}

/* The largest lane (NaN lanes: the caller has its own test). */
static inline float row_max(vf v) {
#if VL == 16
    return _mm512_reduce_max_ps(v);
#else
    return vf_hmax(v);
#endif
}

/* Whether any of the n logits at s is NaN. */
static bool any_nan(const float *s, int64_t n) {
    for (int64_t c = 0; c < n; c += VL) {
        const vf x = vf_load(s + c);
        if (vf_any(vf_is(x, x, _CMP_UNORD_Q))) return true;
    }
    return false;
}

/* Zeroes row r's weights, so P V adds nothing to it. */
static void zero_weights(const flash_buf *b, int64_t r, int64_t bkp) {
    memset(b->s + r * bkp, 0, sizeof(float) * (size_t)bkp);
#ifdef ATTN_BF16_DOT
    memset(b->p + r * (bkp / 2), 0, sizeof(float) * (size_t)(bkp / 2));
#endif
}

/* Marks row r NaN (it stays so) and zeroes its weights. */
static void nan_row(const flash_buf *b, int64_t r, int64_t bkp) {
    b->nan[r] = 1.0f;
    zero_weights(b, r, bkp);
}

/* The online softmax over one block of a row's logits (in place: logits
 * become weights); rescales the row's accumulator when the max moves. A
 * NaN logit is found by its weight, NaN, in the row's sum (the max may
 * drop it), with a scan of its own only where the block shows no max. */
static void online_row(const flash_job *j, const flash_buf *b, int64_t r, int64_t bkp) {
    float *s = b->s + r * bkp;
    vf mx = vf_set1(-INFINITY);
    for (int64_t c = 0; c < bkp; c += VL) mx = vf_max(mx, vf_load(s + c));
    float m_old = b->m[r], m_new = row_max(mx);
    if (m_new < m_old) m_new = m_old;
    if (m_new == INFINITY || (m_new == -INFINITY && any_nan(s, bkp))) return nan_row(b, r, bkp);
    if (m_new == -INFINITY) return zero_weights(b, r, bkp); /* nothing visible yet */
#ifdef ATTN_BF16_DOT
    float *pw = b->p + r * (bkp / 2);
    const bool narrow = true;
#else
    const bool narrow = false;
#endif
    vf sum = vf_zero();
    const vf mv = vf_set1(m_new), ts = vf_set1(j->t_scale);
    for (int64_t c = 0; c < bkp; c += VL) {
        /* s <= the max, or -inf: exactly 0 */
        const vf p = exp2_nonpos(vf_mul(vf_sub(vf_load(s + c), mv), ts), narrow);
#ifdef ATTN_BF16_DOT
        /* P V runs on P rounded to bf16; the sum (and so lse) keeps the f32
         * weights, as FlashAttention's rowsum does */
        _mm256_storeu_si256((__m256i *)(pw + c / 2), (__m256i)_mm512_cvtneps_pbh(p));
#else
        vf_store(s + c, p);
#endif
        sum = vf_add(sum, p);
    }
#if VL == 16
    const float block_sum = _mm512_reduce_add_ps(sum);
#else
    const float block_sum = vf_hsum(sum);
#endif
    if (isnan(block_sum)) return nan_row(b, r, bkp);
    /* once a row's max has settled, most blocks leave it where it was */
    const float alpha = m_old == -INFINITY ? 0.0f : m_old == m_new ? 1.0f : exp2f((m_old - m_new) * j->t_scale);
    b->l[r] = b->l[r] * alpha + block_sum;
    b->m[r] = m_new;
    if (alpha != 1.0f) {
        float *o = b->o + r * j->dp;
        vf av = vf_set1(alpha);
        for (int64_t e = 0; e < j->dp; e += VL) vf_store(o + e, vf_mul(av, vf_load(o + e)));
    }
}

/* Row r of kv head hk's rows: its query head and query index. */
static void row_of(const flash_job *j, int64_t hk, int64_t r, int64_t *h, int64_t *i) {
    *h = hk * j->group + r / j->a->d.seq_q;
    *i = r % j->a->d.seq_q;
}

static void write_row(const flash_job *j, int64_t b, int64_t h, int64_t i, const float *acc, float m, float l,
                      bool nan) {
    const tsr_attention_desc *d = &j->a->d;
    const int64_t oo = b * d->o_strides[0] + h * d->o_strides[1] + i * d->o_strides[2];
    const bool empty = !nan && m == -INFINITY;
    const float inv = nan ? NAN : empty ? 0.0f : 1.0f / l;
    const vf iv = vf_set1(inv);
    for (int64_t e = 0; e < d->head_dim; e += VL) {
        const vf x = nan || empty ? iv : vf_mul(iv, vf_load(acc + e)); /* NaN or 0 whatever acc holds */
        vf_store_n_dtype(j->a->o, d->dtype, oo + e, x, d->head_dim - e < VL ? (int)(d->head_dim - e) : VL);
    }
    if (d->lse) {
        float *lse = (float *)d->lse + (b * d->heads_q + h) * d->seq_q + i;
        *lse = nan ? NAN : empty ? -INFINITY : m * j->s_unit + logf(l);
    }
}

static void run_task(const flash_job *j, int64_t task, const flash_buf *B) {
    const tsr_attention_problem *a = j->a;
    const tsr_attention_desc *d = &a->d;
    const int64_t split = task % j->splits, blk = task / j->splits % j->nblocks;
    const int64_t hk = task / j->splits / j->nblocks % d->heads_kv, b = task / j->splits / j->nblocks / d->heads_kv;
    const int64_t r0 = blk * j->bq, nr = j->rows_per_kv - r0 < j->bq ? j->rows_per_kv - r0 : j->bq;
    const int64_t nr4 = round_up(nr, 4), dp = j->dp, bkp = round_up(j->bk, VL), D = d->head_dim;
    const int64_t klo = split * j->keys_per_split;
    const int64_t khi = klo + j->keys_per_split < d->seq_kv ? klo + j->keys_per_split : d->seq_kv;

    int64_t ends[BLOCK_Q_MAX + 4], heads[BLOCK_Q_MAX + 4], qi[BLOCK_Q_MAX + 4], kend = klo;
    for (int64_t r = 0; r < nr4; r++) {
        float *q = B->q + r * dp;
        B->m[r] = -INFINITY, B->l[r] = 0.0f, B->nan[r] = 0.0f;
        memset(B->o + r * dp, 0, sizeof(float) * (size_t)dp);
        if (r >= nr) {
            memset(q, 0, sizeof(float) * (size_t)dp);
            ends[r] = klo;
            continue;
        }
        row_of(j, hk, r0 + r, &heads[r], &qi[r]);
        const int64_t qo = b * d->q_strides[0] + heads[r] * d->q_strides[1] + qi[r] * d->q_strides[2];
        load_row(q, a->q, d->dtype, qo, D, dp); /* unscaled: S takes the scale */
        int64_t end = tsr_attention_visible_end(d, qi[r]);
        ends[r] = end > khi ? khi : end < klo ? klo : end;
        if (ends[r] > kend) kend = ends[r];
    }

    const int64_t ko = b * d->k_strides[0] + hk * d->k_strides[1], vo = b * d->v_strides[0] + hk * d->v_strides[1];
    const size_t es = tsr_dtype_size(d->dtype);
    /* few rows: packing K/V would cost more than the dot products it feeds */
    const bool direct = nr4 <= 8 && D % VL == 0;
    const int64_t nr2 = round_up(nr, 2);
#ifdef ATTN_BF16_DOT
    const bool v_in_place = false;
#else
    /* f32 rows of whole vectors are already the P V tile's operand */
    const bool v_in_place = d->dtype == TSR_F32 && D % VL == 0;
#endif
#ifdef ATTN_BF16_DOT
    pack_qw(j, B, direct ? nr4 : nr2);
#endif
    next_rows nx = {NULL, NULL, d->k_strides[2] * (int64_t)es, d->v_strides[2] * (int64_t)es, 0, D * (int64_t)es};
    for (int64_t j0 = klo; j0 < kend; j0 += j->bk) {
        const int64_t nk = kend - j0 < j->bk ? kend - j0 : j->bk;
        const char *kp = (const char *)a->k + (size_t)(ko + j0 * d->k_strides[2]) * es;
        const char *vp = (const char *)a->v + (size_t)(vo + j0 * d->v_strides[2]) * es;
        if (direct) {
            const int64_t next = kend - (j0 + nk) < j->bk ? kend - (j0 + nk) : j->bk;
            nx.k = next > 0 ? kp + nk * nx.ks : NULL;
            nx.v = next > 0 ? vp + nk * nx.vs : NULL, nx.n = next;
            block_direct(j, B, nr4, nk, bkp, kp, vp, 0, &nx);
        } else {
            pack_kt(j, B->k, bkp, kp, nk);
            if (!v_in_place) pack_v(j, B->v, vo + j0 * d->v_strides[2], nk);
            s_tiles(j, B, nr2, bkp);
        }
        for (int64_t r = 0; r < nr4; r++) {
            float *s = B->s + r * bkp;
            const int64_t vis = r < nr ? (ends[r] - j0 < 0 ? 0 : ends[r] - j0 > nk ? nk : ends[r] - j0) : 0;
            if (d->mask && vis > 0) {
                const int64_t mo = b * d->mask_strides[0] + heads[r] * d->mask_strides[1] +
                                   qi[r] * d->mask_strides[2] + j0;
                if (d->mask_dtype == TSR_F32) {
                    const float *mk = (const float *)d->mask + mo;
                    for (int64_t c = 0; c < vis; c++) s[c] += mk[c];
                } else {
                    for (int64_t c = 0; c < vis; c++) s[c] += tsr_load_f(d->mask, d->mask_dtype, mo + c);
                }
            }
            for (int64_t c = vis; c < bkp; c++) s[c] = -INFINITY;
            online_row(j, B, r, bkp);
        }
        if (direct) block_direct(j, B, nr4, nk, bkp, kp, vp, 1, &nx);
        else if (v_in_place) pv_tiles(j, B, nr2, nk, bkp, (const float *)vp, d->v_strides[2]);
        else pv_tiles(j, B, nr2, nk, bkp, B->v, dp);
    }

    for (int64_t r = 0; r < nr; r++) {
        if (j->splits == 1) {
            write_row(j, b, heads[r], qi[r], B->o + r * dp, B->m[r], B->l[r], B->nan[r] != 0.0f);
            continue;
        }
        const int64_t row = (b * d->heads_q + heads[r]) * d->seq_q + qi[r];
        float *p = j->partial + (row * j->splits + split) * (dp + 3);
        p[0] = B->m[r], p[1] = B->l[r], p[2] = B->nan[r];
        memcpy(p + 3, B->o + r * dp, sizeof(float) * (size_t)dp);
    }
}

/* Merges a row's key ranges: weights e^(m_s - M), then normalises. */
static void combine_row(const flash_job *j, int64_t row, float *acc) {
    const tsr_attention_desc *d = &j->a->d;
    const int64_t dp = j->dp, i = row % d->seq_q, h = row / d->seq_q % d->heads_q, b = row / d->seq_q / d->heads_q;
    const float *p = j->partial + row * j->splits * (dp + 3);
    float M = -INFINITY, L = 0.0f;
    bool nan = false;
    for (int64_t s = 0; s < j->splits; s++) {
        const float *q = p + s * (dp + 3);
        nan |= q[2] != 0.0f;
        if (q[0] > M) M = q[0];
    }
    memset(acc, 0, sizeof(float) * (size_t)dp);
    if (!nan && M != -INFINITY)
        for (int64_t s = 0; s < j->splits; s++) {
            const float *q = p + s * (dp + 3);
            if (q[0] == -INFINITY) continue;
            const float w = exp2f((q[0] - M) * j->t_scale);
            L += w * q[1];
            const vf wv = vf_set1(w);
            for (int64_t e = 0; e < dp; e += VL) vf_store(acc + e, vf_fma(wv, vf_load(q + 3 + e), vf_load(acc + e)));
        }
    write_row(j, b, h, i, acc, M, L, nan);
}

/* ------------------------------------------------------------ the kernel */

static bool flash_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    const tsr_attention_desc *d = &p->u.attention.d;
    if (d->head_dim > MAX_HEAD_DIM)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "attention.%s: head_dim > %d", ATTN_ARCH, MAX_HEAD_DIM), false;
    if (d->mask && d->mask_dtype != TSR_F32 && d->mask_dtype != d->dtype)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "attention.%s: mask dtype", ATTN_ARCH), false;
#ifdef ATTN_BF16_DOT
    if (d->dtype != TSR_BF16)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s takes bf16 q/k/v only (not %s)", ATTN_NAME,
                       tsr_dtype_name(d->dtype)), false;
#endif
    return true;
}

static int64_t pick(const int *values, int count, int64_t want) {
    for (int i = 0; i < count; i++)
        if (values[i] >= want) return values[i];
    return values[count - 1];
}

/* Tasks of a split-free run: one per (batch, KV head, block of bq rows). */
static int64_t blocks_for(const tsr_attention_desc *d, int64_t rows, int64_t bq) {
    return d->batch * d->heads_kv * ((rows + bq - 1) / bq);
}

static void flash_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_attention_desc *d = &p->u.attention.d;
    const int64_t group = d->heads_kv > 0 ? d->heads_q / d->heads_kv : 1, rows = group * d->seq_q;
    /* decode: every row of the group in one block, so K/V stream once;
     * prefill: 128 rows share each packed K/V block (packing costs ~8% of
     * the bf16 time at 64 rows; 128 measured 1-5% faster on one Zen 4 core),
     * 64 when that leaves fewer than two blocks per thread. Without a causal
     * mask 256 rows halve the packing again (Zen 5, two threads, head dim
     * 64-128, 512-4096 keys, three alternated rounds: f32 -1 to +5%, bf16
     * -2 to +5%); a causal block runs every row to its last row's keys, and
     * 256 there lost 5-10% at 1024. AVX-512 only: the block's buffers
     * (~640 KB at head dim 128) pass Zen 3's 512 KB L2, where AVX2 has not
     * been measured. */
    const int64_t threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
    const bool wide = VL == 16 && d->causal == TSR_CAUSAL_NONE && d->head_dim <= 128 &&
                      blocks_for(d, rows, 256) >= 2 * threads;
    s->v[K_BLOCK_Q] = (int)pick(block_q_values, BLOCK_Q_COUNT,
                                rows < 64                                  ? rows
                                : wide                                     ? 256
                                : blocks_for(d, rows, 128) >= 2 * threads ? 128
                                                                           : 64);
    /* a packed K^T block of 128 keys (32-64 KB at head_dim 64-128) stays in
     * L2 beside the logits; measured 5-25% over 64 on one Zen 4 core */
    s->v[K_BLOCK_KV] = d->head_dim > 128 ? 64 : 128;
    const int64_t tasks = blocks_for(d, rows, s->v[K_BLOCK_Q]);
    int split = 1;
    while (split < 16 && tasks * split < 2 * threads && d->seq_kv / (split * 2) >= 256) split *= 2;
    s->v[K_SPLITS] = split;
}

static bool flash_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    const tsr_attention_desc *d = &p->u.attention.d;
    if (s->v[K_BLOCK_Q] < 1 || s->v[K_BLOCK_Q] > BLOCK_Q_MAX || s->v[K_BLOCK_KV] < 1 || s->v[K_SPLITS] < 1) return false;
    const int64_t rows = d->batch * d->heads_q * d->seq_q;
    return s->v[K_SPLITS] == 1 ||
           (int64_t)s->v[K_SPLITS] * rows * (round_up(d->head_dim, VL) + 3) * 4 <= MAX_PARTIAL_BYTES;
}

static tsr_status flash_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_attention_problem *a = &p->u.attention;
    const tsr_attention_desc *d = &a->d;
    const int64_t rows_all = d->batch * d->heads_q * d->seq_q;
    if (rows_all == 0) return TSR_OK;
    flash_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.group = d->heads_q / d->heads_kv;
    j.rows_per_kv = j.group * d->seq_q;
    j.bq = s->v[K_BLOCK_Q] >= 1 && s->v[K_BLOCK_Q] <= BLOCK_Q_MAX ? s->v[K_BLOCK_Q] : 64;
    j.bk = s->v[K_BLOCK_KV] >= 1 && s->v[K_BLOCK_KV] <= 256 ? s->v[K_BLOCK_KV] : 64;
    j.dp = round_up(d->head_dim > 0 ? d->head_dim : 1, VL);
    const bool scale_in_softmax = !d->mask && d->scale <= 1.0f; /* see flash_job */
    j.s_scale = scale_in_softmax ? 1.0f : d->scale;
    j.s_unit = scale_in_softmax ? d->scale : 1.0f;
    j.t_scale = (float)(1.4426950408889634 * (double)j.s_unit);
    j.nblocks = (j.rows_per_kv + j.bq - 1) / j.bq;
    j.splits = flash_valid(p, ctx, s) ? s->v[K_SPLITS] : 1;
    j.keys_per_split = round_up((d->seq_kv + j.splits - 1) / j.splits, j.bk);
    if (j.keys_per_split == 0) j.keys_per_split = j.bk;
    j.splits = d->seq_kv > 0 ? (d->seq_kv + j.keys_per_split - 1) / j.keys_per_split : 1;
    if (j.splits > 1) {
        j.partial = malloc(sizeof(float) * (size_t)(rows_all * j.splits * (j.dp + 3)));
        if (!j.partial)
            return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "attention.%s: out of memory for %lld key-split partials",
                            ATTN_ARCH, (long long)j.splits);
    }
    const int64_t tasks = d->batch * d->heads_kv * j.nblocks * j.splits;
    int threads = tsr_threads_for(ctx, 4.0 * (double)rows_all * (double)d->seq_kv * (double)d->head_dim, 2e6);
    if (tasks < threads) threads = (int)tasks;
    const size_t floats = buf_floats(&j);
    int failed = 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        float *mem = aligned_alloc(64, round_up((int64_t)(floats * sizeof(float)), 64));
        if (!mem) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp barrier
        int any_failed;
#pragma omp atomic read
        any_failed = failed;
        if (!any_failed) {
            flash_buf B;
            buf_carve(&j, mem, &B);
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < tasks; t++) run_task(&j, t, &B);
            if (j.splits > 1) {
                float *acc = B.o; /* the accumulator block is free again */
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows_all; r++) combine_row(&j, r, acc);
            }
        }
        free(mem);
    }
    free(j.partial);
    if (failed)
        return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "attention.%s: out of host memory for %zu bytes of block buffers",
                        ATTN_ARCH, floats * sizeof(float));
    return TSR_OK;
}

#ifndef ATTN_NAME
#define ATTN_NAME "attention." ATTN_ARCH ".flash"
#endif

const tsr_kernel ATTN_SYMBOL = {
    .name = ATTN_NAME,
    .op = TSR_OP_ATTENTION,
    .backend = TSR_BACKEND_CPU,
    .arch = ATTN_ARCH,
    .supports = flash_supports,
    .cpu_features = ATTN_FEATURES,
    .num_knobs = 3,
    .knobs = flash_knobs,
    .default_schedule = flash_default,
    .schedule_valid = flash_valid,
    .run = flash_run,
};
