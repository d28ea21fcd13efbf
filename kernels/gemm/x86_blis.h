/* BLIS-style f32 GEMM, written once over the simd.h vector names and
 * instantiated per ISA by kernels/gemm/x86_avx2.c, x86_avx512.c and
 * x86_avx512_bf16.c (which define MR, NV, GEMM_ARCH, GEMM_FEATURES and
 * GEMM_SYMBOL first). Loops: jc (NC) > pc (KC) > ic (MC) >
 * micro-tiles MR x NR, NR = NV * VL. A is packed into MR-row micro-panels
 * and B into NR-column ones (f16/bf16 converted while packing); with
 * pack_b = 0 (skinny M, f32 row-major B) full tiles read B in place.
 * With GEMM_BF16_DOT (bf16 inputs, AVX512_BF16) the panels keep bf16 in
 * pairs of k, one 32-bit word per pair, and vdpbf16ps does two k per
 * instruction; the loops, the buffers (half used) and the store are shared.
 * alpha/beta and the epilogue are applied to the accumulators on the last
 * K block, before the only store of C. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx2/transpose.h"
#include "x86_tiles.h"
#include "../../arch/x86_avx512/vdtype.h"
#include "internal.h"

#define NR (NV * VL)
#ifndef GEMM_NAME
#define GEMM_NAME "gemm." GEMM_ARCH ".f32"
#endif
#include "x86_ukernel.h"

enum { KNOB_MC, KNOB_KC, KNOB_NC, KNOB_PACK_B, KNOB_BATCH_PAR, KNOB_PACK_A, KNOB_AHEAD, KNOB_ROWS_OUTER };

static const int mc_values[] = {48, 96, 144, 192, 288};
static const int kc_values[] = {128, 192, 256, 384, 512};
static const int nc_values[] = {480, 720, 1008, 2016, 4032, 8064};
static const int onoff_values[] = {0, 1};

static const tsr_knob gemm_knobs[] = {
    {"mc", 5, mc_values}, {"kc", 5, kc_values}, {"nc", 6, nc_values},
    {"pack_b", 2, onoff_values}, {"batch_parallel", 2, onoff_values}, {"pack_a", 2, onoff_values},
    {"far_prefetch", 2, onoff_values}, /* in-place B fetched ukr_ahead_near (0) or _far (1) rows ahead */
    {"rows_outer", 2, onoff_values}, /* a block's tiles row panel by row panel (1) or column by column (0) */
};

static bool f32_or_same(const void *p, tsr_dtype t) { return !p || t == TSR_F32; }

/* Bytes spanned by batch matrices of m x n, ld apart, stride apart. */
static int64_t span_bytes(const tsr_gemm_desc *d, int64_t ld, int64_t stride) {
    if (d->m == 0 || d->n == 0) return 0;
    return ((d->batch - 1) * stride + (d->m - 1) * ld + d->n) * (int64_t)sizeof(float);
}

static bool residual_overlaps_c(const tsr_gemm_problem *g, const tsr_epilogue_step *e) {
    const tsr_gemm_desc *d = &g->d;
    return tsr_ranges_overlap(g->c, span_bytes(d, d->ldc, d->stride_c), e->data,
                              span_bytes(d, e->ld, e->batch_stride));
}

static bool blis_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (d->a_dtype == TSR_I8 || (d->c_dtype != TSR_F32 && d->c_dtype != d->a_dtype)) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: f32 or f16/bf16 inputs, f32 or input-dtype outputs only", GEMM_NAME);
        return false;
    }
#ifdef GEMM_BF16_DOT
    if (d->a_dtype != TSR_BF16 || d->b_dtype != TSR_BF16) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: bf16 inputs only", GEMM_NAME);
        return false;
    }
#endif
    for (int i = 0; i < d->epilogue.num_steps; i++) {
        const tsr_epilogue_step *e = &d->epilogue.steps[i];
        if (!f32_or_same(e->data, e->dtype)) {
            tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: f32 bias/residual only", GEMM_NAME);
            return false;
        }
        /* Partial sums are stored into C between K blocks, so a residual that
         * is (or overlaps) C would be read after it was overwritten. */
        if (e->op == TSR_EPI_RESIDUAL && residual_overlaps_c(&p->u.gemm, e)) {
            tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: a residual overlapping C (in-place) is left to the reference", GEMM_NAME);
            return false;
        }
    }
    return true;
}

#ifdef GEMM_BF16_DOT
/* Rows of C that stream_rows takes (row-major B read in place); the bytes
 * of B it interleaves a block, the columns of one (its rows: 16 k), and
 * the bytes of the f32 sums beside it (16 rows of 512 columns, padded).
 * Wider blocks for one or two rows, as int8 has, measured slower (one
 * core, 2x4096x4096: 22-25 GFLOP/s at 1024 columns, 27-37 at 512). */
enum { STREAM_ROWS = 16, STREAM_BLOCK = 32768, STREAM_WIDTH = 512, STREAM_SUMS = STREAM_ROWS * (STREAM_WIDTH + 16) * 4 };
#endif
/* Rows of C that widen_rows takes (row-major B read in place, f16/bf16
 * widened as loaded), and the f32 sums its chunk of columns keeps in L1.
 * On AVX2 (Zen 3, two threads) streaming up to 16 rows beat the
 * micro-kernel reading B in place (a line per k row, ldb apart) and
 * packing B alike: 6 x 4096 x 4096 28 -> 34-48 GFLOP/s, 8 x 4096 x 4096
 * 16-20 -> 39-60, 16 x 4096 x 4096 20-32 -> 46-66 (ranges: this VM's
 * spread over repeats). AVX-512 keeps the rows it was measured with. */
enum { WIDEN_ROWS = VL == 8 ? 16 : 4, STREAM_ACC = 4096 };
/* widen_rows' chunks per block of columns (128 KiB of sums with AVX2) and
 * rows of B per K block; AVX-512 keeps the one chunk it was measured with */
enum { WIDEN_SUPER = VL == 8 ? 8 : 1, WIDEN_KB = 256 };
enum { WIDEN_AHEAD = 8 }; /* rows of B fetched ahead (see widen_rows_of) */
#ifndef GEMM_BF16_DOT
enum { STREAM_ROWS = WIDEN_ROWS };
#endif

/* Without packing, B is read in place: f32 row-major B by the micro-kernel,
 * transposed B (rows of op(B)^T, the Llama weight layout) as dot products
 * with rows of A, which then must be untransposed and of B's dtype. f16 and
 * bf16 row-major B (and, with GEMM_BF16_DOT, bf16 B) are read in place by
 * stream_rows only. */
static bool can_skip_pack_b(const tsr_gemm_desc *d) {
#ifdef GEMM_BF16_DOT
    return d->trans_b == TSR_NO_TRANS && d->m <= STREAM_ROWS;
#else
    if (d->trans_b) return d->trans_a == TSR_NO_TRANS && d->a_dtype == d->b_dtype;
    return d->b_dtype == TSR_F32 || (d->m <= STREAM_ROWS && d->a_dtype == d->b_dtype);
#endif
}

/* Without packing, f32 row-major A is read in place: the micro-kernel
 * broadcasts from MR rows lda apart. */
static bool can_skip_pack_a(const tsr_gemm_desc *d) {
#ifdef GEMM_BF16_DOT
    /* k pairs are adjacent words in a row; an odd K would pair the last k
     * with whatever follows it (perhaps a NaN, perhaps past the end) */
    return d->trans_a == TSR_NO_TRANS && d->k % 2 == 0;
#else
    return d->a_dtype == TSR_F32 && d->trans_a == TSR_NO_TRANS;
#endif
}

static void blis_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[KNOB_MC] = 144;
    /* bf16 pairs: a k costs half an f32 one, so a longer block amortises C */
#ifdef GEMM_BF16_DOT
    s->v[KNOB_KC] = 512;
#else
    s->v[KNOB_KC] = 384;
#endif
    /* Skinny M: packing B costs as much memory traffic as the GEMM itself.
     * Row-major B up to 1 MiB (512 x 512) stays in L2 and is read in place
     * faster than packed (Zen 4: 256^3 1.09x, 512^3 1.06x; 1024^3 0.94x). */
    const bool b_in_l2 = d->trans_b == TSR_NO_TRANS && d->k * d->n <= 512 * 512;
#if VL == 8
    /* AVX2 (Zen 3, two threads): past the stream path's rows, a row-major
     * B larger than L2 read in place by the micro-kernel (a line per k
     * row, ldb apart) lost to packing it: 24 x 4096 x 4096 23.2 -> 49.7
     * GFLOP/s */
    const bool skinny = d->trans_b ? d->m <= 4 * MR : d->m <= STREAM_ROWS;
#else
    const bool skinny = d->m <= 4 * MR;
#endif
    s->v[KNOB_PACK_B] = !((skinny || b_in_l2) && can_skip_pack_b(d));
    /* Many small matrices: one thread per matrix beats splitting each. */
    double flops = 2.0 * (double)d->m * (double)d->n * (double)d->k;
    s->v[KNOB_BATCH_PAR] = d->batch >= ctx->num_threads && flops < 2.0 * 128 * 128 * 128;
    /* A tile's MR rows of kc floats stay in L1 wherever they lie, so f32
     * row-major A is read in place: packing it measured 1-10% slower from
     * 32^3 to 4096^3 on Zen 4 (most at small N, where a move per element
     * of A weighs against only N multiply-adds). */
    s->v[KNOB_PACK_A] = !can_skip_pack_a(d);
    s->v[KNOB_AHEAD] = ctx->cpu_amd; /* see ukr_ahead */
    /* Tall C on Intel: row panels outermost keep a tile's rows of A in L1
     * while B's block streams from L2 (nc 1008: 1.5 MiB at kc 384), where
     * column panels outermost streamed both. Emerald Rapids, best of 5-8:
     * 2048^3 one thread 143 -> 156 GFLOP/s, two 253 -> 288; 4096^3 two
     * 276 -> 269-281, 301-307 with blis_run's split; 1024^3 one thread 147
     * -> 156, two the same; 1024 x 4096 x 4096 two 284 -> 297, 1536^3 301
     * -> 307. It loses where B is read by few rows, both threads then
     * reading all of it (128 x 4096 x 4096: 174 -> 151; 512 x 4096 x 4096:
     * 284 -> 272; 512^3 309 -> 296). Zen 4 has not been measured. */
    s->v[KNOB_ROWS_OUTER] = !ctx->cpu_amd && d->m >= 1024;
    s->v[KNOB_NC] = s->v[KNOB_ROWS_OUTER] ? 1008 : 4032;
}

static bool blis_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    if (s->v[KNOB_MC] % MR || s->v[KNOB_NC] % NR || s->v[KNOB_KC] < 1) return false;
    if (!s->v[KNOB_PACK_A] && !can_skip_pack_a(&p->u.gemm.d)) return false;
    return s->v[KNOB_PACK_B] || can_skip_pack_b(&p->u.gemm.d);
}

/* Flops that pay for a thread: a team costs ~1.2 us to fork and join on
 * the Zen 4 VM. f32 on two threads gains 1.2x at 64^3, 1.4x at 96^3 and
 * breaks even at 56^3; bf16 does twice the flops per instruction (two
 * threads lose at 64^3, break even at 80^3). */
#ifdef GEMM_BF16_DOT
#define THREAD_MIN_FLOPS 5e5
#else
#define THREAD_MIN_FLOPS 2.5e5
#endif

/* Bytes of B that pay for a thread: a call of few rows (M of 1-3) reads
 * all of B for two flops an element, bound by that read, and a second
 * thread pays from 256 KiB of it, under the flops above (Zen 4 VM, two
 * threads, best of 7 alternated: bf16 1 x 512 x 512 16.7 -> 10.2 us,
 * 1 x 384 x 384 9.1 -> 6.5, 1 x 128 x 1024 8.2 -> 7.1; f32 1 x 256 x 256
 * 4.37 -> 4.17). */
#define B_BYTES_PER_THREAD (128.0 * 1024)

/* A's element size and the elements in one packed 32-bit slot: a float,
 * or a bf16 k pair. */
#ifdef GEMM_BF16_DOT
#define A_ELEM 2
#define A_WORD 2
#else
#define A_ELEM 4
#define A_WORD 1
#endif

/* One matrix's operands and the work shape. */
typedef struct job {
    const tsr_gemm_problem *g;
    const char *a, *b;
    float *c;   /* f32 C */
    char *cn;   /* f16/bf16 C (one K block: partial sums never round to it) */
    int64_t batch_index;
    int64_t mc, kc, nc;
    bool pack_a, pack_b;
    bool rows_outer; /* a block's tiles row panel by row panel: see blis_default */
    bool fetch_b;    /* B packed and past the caches: the next block's source fetched during the tiles (fetch_b_part) */
    bool plain_epilogue; /* ukr_epilogue_plain can run it: tiles still stored from registers */
    const ukr_ahead *ahead; /* B read in place is larger than L2: its rows are fetched this far ahead */
    const float *a_wide;    /* the dot path's f16/bf16 A widened once (dot_widen_a), or NULL */
} job;

static inline float load_in(const void *p, tsr_dtype t, int64_t i) {
    return t == TSR_F32 ? ((const float *)p)[i] : tsr_load_f(p, t, i);
}

#ifdef GEMM_BF16_DOT
/* bf16 bits of x(i), 0 past the matrix: pairs of k are packed as words. */
static inline uint32_t bf16_at(const void *x, int64_t i) { return ((const uint16_t *)x)[i]; }

/* A(i, p) for rows [i0, i0+mr), k in [p0, p0+kc): dst[q * MR + i] holds
 * A(i, 2q) in its low half and A(i, 2q + 1) in its high half. */
static void pack_a(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    uint32_t *w = (uint32_t *)dst;
    int64_t q = 0;
    if (!d->trans_a && d->lda % 2 == 0) { /* p0 is even: 8 rows x 8 pairs of k per 8x8 transpose of words */
        const uint16_t *a = (const uint16_t *)j->a + i0 * d->lda + p0;
        for (; q + 8 <= kc / 2; q += 8) tsr_transpose8x8(a + 2 * q, d->lda / 2, (int)mr, w + q * MR, MR, MR);
    }
    for (; q < (kc + 1) / 2; q++)
        for (int64_t i = 0; i < MR; i++) {
            uint32_t lo = 0, hi = 0;
            if (i < mr) {
                int64_t p = p0 + 2 * q, idx = d->trans_a ? p * d->lda + i0 + i : (i0 + i) * d->lda + p;
                if (!d->trans_a && 2 * q + 1 < kc) { /* the pair is adjacent in memory */
                    memcpy(&w[q * MR + i], (const uint16_t *)j->a + idx, 4);
                    continue;
                }
                lo = bf16_at(j->a, idx);
                if (2 * q + 1 < kc) hi = bf16_at(j->a, d->trans_a ? idx + d->lda : idx + 1);
            }
            w[q * MR + i] = lo | hi << 16;
        }
}

/* B(p, j), k in [p0, p0+kc), columns [j0, j0+nr): dst[q * NR + c] holds
 * B(2q, c) low and B(2q + 1, c) high. */
static void pack_b(const job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    uint32_t *w = (uint32_t *)dst;
    int64_t q = 0;
    if (d->trans_b && d->ldb % 2 == 0) { /* B stored n x k: 8 columns x 8 pairs of k per transpose */
        const int64_t q8 = kc / 16 * 8;
        for (int64_t c = 0; c < NR; c += 8) {
            const int rows = nr - c <= 0 ? 0 : nr - c < 8 ? (int)(nr - c) : 8; /* 0: padding columns of zeros */
            const uint16_t *src = (const uint16_t *)j->b + (rows ? (j0 + c) * d->ldb + p0 : 0);
            for (int64_t qq = 0; qq < q8; qq += 8) tsr_transpose8x8(src + 2 * qq, d->ldb / 2, rows, w + qq * NR + c, NR, 8);
        }
        q = q8;
    }
    for (; q < (kc + 1) / 2; q++) {
        const int64_t p = p0 + 2 * q;
        const bool pair = 2 * q + 1 < kc;
        if (!d->trans_b) { /* two rows interleaved by vector; zeros past nr and past an odd kc */
            const uint16_t *r0 = (const uint16_t *)j->b + p * d->ldb + j0, *r1 = r0 + d->ldb;
            for (int v = 0; v < NV; v++) {
                const int64_t left = nr - v * 16;
                const __mmask16 m = left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
                __m256i x0 = _mm256_maskz_loadu_epi16(m, r0 + v * 16);
                __m256i x1 = pair ? _mm256_maskz_loadu_epi16(m, r1 + v * 16) : _mm256_setzero_si256();
                __m512i lo = _mm512_cvtepu16_epi32(x0), hi = _mm512_cvtepu16_epi32(x1);
                _mm512_storeu_si512(w + q * NR + v * 16, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
            continue;
        }
        for (int64_t c = 0; c < NR; c++) {
            uint32_t lo = 0, hi = 0;
            if (c < nr && d->trans_b && pair) { /* adjacent in B's stored row */
                memcpy(&w[q * NR + c], (const uint16_t *)j->b + (j0 + c) * d->ldb + p, 4);
                continue;
            }
            if (c < nr) {
                int64_t idx = d->trans_b ? (j0 + c) * d->ldb + p : p * d->ldb + j0 + c;
                lo = bf16_at(j->b, idx);
                if (pair) hi = bf16_at(j->b, d->trans_b ? idx + 1 : idx + d->ldb);
            }
            w[q * NR + c] = lo | hi << 16;
        }
    }
}

/* acc = A * B panel over kc k, two k per vdpbf16ps, on the first nv
 * vectors of columns. A's k pairs are 32-bit words: row i's pair q at
 * a + i * a_rs + q * a_step (in bf16 elements; rows past mr repeat the
 * last). B is always packed (ldb unused). */
static inline __attribute__((always_inline)) void micro_kernel(const int nv, int64_t kc, const float *restrict ap,
                                                               int64_t a_rs, int64_t a_step, int64_t mr,
                                                               const float *restrict bp, int64_t ldb, const ukr_ahead *ahead,
                                                               vf acc[MR][NV]) {
    (void)ldb, (void)ahead;
    const uint32_t *bw = (const uint32_t *)bp;
    const uint16_t *rows[MR];
    for (int i = 0; i < MR; i++) rows[i] = (const uint16_t *)ap + (i < mr ? i : mr - 1) * a_rs;
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = vf_zero();
    for (int64_t q = 0; q < (kc + 1) / 2; q++) {
        __m512bh b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) b[v] = (__m512bh)_mm512_loadu_si512(bw + q * NR + v * VL);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            int32_t pair;
            memcpy(&pair, rows[i] + q * a_step, 4);
            __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
        }
    }
}
#else
/* A(i, p) for rows [i0, i0+mr) and k in [p0, p0+kc) into an MR-row panel. */
static void pack_a(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    int64_t p = 0;
    if (!d->trans_a) /* rows of A become columns: 8 k at a time */
        for (; p + 8 <= kc; p += 8)
            tsr_transpose8x8_of(j->a, d->a_dtype, i0 * d->lda + p0 + p, d->lda, (int)mr, dst + p * MR, MR, MR);
    for (; p < kc; p++) {
        for (int64_t i = 0; i < mr; i++) {
            int64_t idx = d->trans_a ? (p0 + p) * d->lda + i0 + i : (i0 + i) * d->lda + p0 + p;
            dst[p * MR + i] = load_in(j->a, d->a_dtype, idx);
        }
        for (int64_t i = mr; i < MR; i++) dst[p * MR + i] = 0.0f;
    }
}

/* B(p, j) for k in [p0, p0+kc) and columns [j0, j0+nr) into an NR-column panel. */
static void pack_b(const job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    const tsr_dtype t = d->b_dtype;
    if (d->trans_b) {
        /* Stored rows of B (columns of op(B)) 8 at a time, 8 k at a time,
         * through an 8x8 transpose in registers; the panel stays in L1. */
        const int64_t kfull = kc / 8 * 8;
        for (int64_t c = 0; c < nr; c += 8) {
            const int rows = (int)(nr - c < 8 ? nr - c : 8);
            const int64_t base = (j0 + c) * d->ldb + p0;
            for (int64_t p = 0; p < kfull; p += 8) tsr_transpose8x8_of(j->b, t, base + p, d->ldb, rows, dst + p * NR + c, NR, 8);
        }
        for (int64_t c = 0; c < nr; c++) {
            const int64_t base = (j0 + c) * d->ldb + p0;
            for (int64_t p = kfull; p < kc; p++) dst[p * NR + c] = load_in(j->b, d->b_dtype, base + p);
        }
        for (int64_t p = 0; p < kc; p++)
            for (int64_t c = nr; c < NR; c++) dst[p * NR + c] = 0.0f;
        return;
    }
    for (int64_t p = 0; p < kc; p++) {
        float *row = dst + p * NR;
        if (t == TSR_F32) {
            memcpy(row, (const float *)j->b + (p0 + p) * d->ldb + j0, sizeof(float) * (size_t)nr);
        } else {
            for (int64_t c = 0; c < nr; c += VL) {
                const int n = (int)(nr - c < VL ? nr - c : VL);
                vf_store_n(row + c, vf_load_n_dtype(j->b, t, (p0 + p) * d->ldb + j0 + c, n), n);
            }
        }
        for (int64_t c = nr; c < NR; c++) row[c] = 0.0f;
    }
}

/* B in cache walked four steps a round (A's row pointers bumped once a
 * round, ukr_fma_nv) from this many k on: one thread, Emerald Rapids, best
 * of 8: 2048^3 142 -> 143 GFLOP/s column panels outermost, 150 -> 156 row
 * panels outermost; two threads 512^3 to 4096^3 2-7% faster; 64^3 to
 * 256^3 the same within the noise (an older build had lost 20% at 64^3
 * that way). */
#define UNROLL4_MIN_KC 64
/* acc = A (MR x kc: row i at a + i * a_rs, consecutive k a_step apart; a
 * packed panel is 1 and MR, A in place lda and 1, its rows past mr repeat
 * the last one) * B (kc x nv * VL, rows ldb apart). */
static inline __attribute__((always_inline)) void micro_kernel(const int nv, int64_t kc, const float *restrict a,
                                                               int64_t a_rs, int64_t a_step, int64_t mr,
                                                               const float *restrict bp, int64_t ldb, const ukr_ahead *ahead,
                                                               vf acc[MR][NV]) {
    const float *rows[MR];
    for (int i = 0; i < MR; i++) rows[i] = a + (i < mr ? i : mr - 1) * a_rs;
    ukr_zero(acc);
    if (!ahead && kc >= UNROLL4_MIN_KC) ukr_fma_nv(nv, MR, kc, rows, a_step, bp, ldb, NULL, true, acc);
    else ukr_fma_nv(nv, MR, kc, rows, a_step, bp, ldb, ahead, false, acc);
}

#endif /* GEMM_BF16_DOT */

/* C tile (mr x nr at row i0, column j0) from the accumulators of K block
 * [p0, p0 + kc): the first block applies alpha and beta, later ones add, the
 * last one also runs the epilogue. */
static void store_tile(const job *j, vf acc[MR][NV], int64_t i0, int64_t mr, int64_t j0, int64_t nr, bool first,
                       bool last) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    const vf alpha = vf_set1(d->alpha), beta = vf_set1(d->beta);
    for (int64_t i = 0; i < mr; i++) {
        for (int v = 0; v < NV && v * VL < nr; v++) {
            int n = (int)(nr - v * VL < VL ? nr - v * VL : VL);
            const int64_t ci = (i0 + i) * d->ldc + j0 + v * VL;
            vf r = vf_mul(acc[i][v], alpha);
            if (!first) r = vf_add(r, vf_load_n_dtype(j->cn, d->c_dtype, ci, n)); /* f32: a narrow C is one K block */
            else if (d->beta != 0.0f) r = vf_fma(beta, vf_load_n_dtype(j->cn, d->c_dtype, ci, n), r);
            if (last) {
                int64_t row = i0 + i, col = j0 + v * VL;
                r = ukr_epilogue(&d->epilogue, r, g->bias_along_m ? row : col, g->bias_along_m, j->batch_index,
                                 row, col, n);
            }
            vf_store_n_dtype(j->cn, d->c_dtype, ci, r, n);
        }
    }
}

/* The common tile (f32 C, all MR rows, nv whole vectors, no epilogue or a
 * plain one: bias, residual, relu) stored straight from the registers.
 * Through store_tile the accumulators would go to the stack and come back
 * as 64-byte loads that the store buffer cannot forward: ~100 ns a tile, a
 * third of a 32^3 GEMM. */
static inline __attribute__((always_inline)) bool store_tile_regs(const job *j, vf acc[MR][NV], const int nv,
                                                                  int64_t i0, int64_t mr, int64_t j0, int64_t nr,
                                                                  bool first, bool last) {
    const tsr_gemm_desc *d = &j->g->d;
    const bool epi = last && d->epilogue.num_steps;
    if (d->c_dtype != TSR_F32 || mr != MR || nr != nv * VL || (epi && !j->plain_epilogue)) return false;
    const vf alpha = vf_set1(d->alpha), beta = vf_set1(d->beta);
    const bool add = !first, scale_c = first && d->beta != 0.0f;
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        float *c = j->c + (i0 + i) * d->ldc + j0;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            vf r = vf_mul(acc[i][v], alpha);
            if (add) r = vf_add(r, vf_load(c + v * VL));
            else if (scale_c) r = vf_fma(beta, vf_load(c + v * VL), r);
            if (epi) {
                const int64_t row = i0 + i, col = j0 + v * VL;
                r = ukr_epilogue_plain(&d->epilogue, r, j->g->bias_along_m ? row : col, j->g->bias_along_m,
                                       j->batch_index, row, col, VL);
            }
            vf_store(c + v * VL, r);
        }
    }
    return true;
}

/* One tile: the micro-kernel narrowed to the vectors that its nr columns
 * need (the ragged last panel of N, 16 of 48 columns at N = 64 or 1024,
 * would otherwise spend two thirds of its FMAs on padding), then the store. */
static inline __attribute__((always_inline)) void tile_nv(const int nv, const job *j, int64_t kc,
                                                          const float *restrict a, int64_t a_rs, int64_t a_step,
                                                          const float *restrict bp, int64_t ldb, int64_t i0,
                                                          int64_t mr, int64_t j0, int64_t nr, bool first, bool last) {
    vf acc[MR][NV];
    micro_kernel(nv, kc, a, a_rs, a_step, mr, bp, ldb, ldb != NR ? j->ahead : NULL, acc);
    if (store_tile_regs(j, acc, nv, i0, mr, j0, nr, first, last)) return;
    /* a copy for the general store: were acc's own address taken, every
     * tile would keep its accumulators in memory (zeroed and spilled
     * there), ~100 cycles a tile */
    vf spill[MR][NV];
    memcpy(spill, acc, sizeof spill);
    store_tile(j, spill, i0, mr, j0, nr, first, last);
}

static void tile(const job *j, int64_t kc, const float *restrict a, int64_t a_rs, int64_t a_step,
                 const float *restrict bp, int64_t ldb, int64_t i0, int64_t mr, int64_t j0, int64_t nr, bool first,
                 bool last) {
    if (NV > 1 && nr <= VL) tile_nv(1, j, kc, a, a_rs, a_step, bp, ldb, i0, mr, j0, nr, first, last);
    else if (NV > 2 && nr <= 2 * VL)
        tile_nv(2 < NV ? 2 : NV, j, kc, a, a_rs, a_step, bp, ldb, i0, mr, j0, nr, first, last);
    else tile_nv(NV, j, kc, a, a_rs, a_step, bp, ldb, i0, mr, j0, nr, first, last);
}

/* k == 0: C = epilogue(beta * C) with no product. */
static void scale_only(const job *j, int tid, int nth) {
    const tsr_gemm_desc *d = &j->g->d;
    vf acc[MR][NV];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = vf_zero();
    int64_t tiles_m = (d->m + MR - 1) / MR, tiles_n = (d->n + NR - 1) / NR;
    for (int64_t t = tid; t < tiles_m * tiles_n; t += nth) {
        int64_t i0 = (t / tiles_n) * MR, j0 = (t % tiles_n) * NR;
        store_tile(j, acc, i0, d->m - i0 < MR ? d->m - i0 : MR, j0, d->n - j0 < NR ? d->n - j0 : NR, true, true);
    }
}

static float hsum(vf v) {
    float t[VL], s = 0.0f;
    vf_store(t, v);
    for (int i = 0; i < VL; i++) s += t[i];
    return s;
}


/* Tiles of the dot path: 4 rows x 3 columns (12 accumulators + 3 B vectors
 * + 1 A vector), or for a single row (decode) 1 x 8, so that no FMA works
 * on a duplicated row. */
enum { DOT_MAX_ROWS = 4, DOT_MAX_COLS = 8 };

/* A tile of finished dot products into C (any dtype): alpha, beta and the
 * epilogue per output, M*N scalar steps against M*N*K multiply-adds. */
static void dot_store(const job *j, const float tot[DOT_MAX_ROWS][DOT_MAX_COLS], int64_t i0, int mr, int64_t j0,
                      int nr) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) {
            const int64_t row = i0 + r, col = j0 + c, ci = row * d->ldc + col;
            float v = d->alpha * tot[r][c];
            if (d->beta != 0.0f) v += d->beta * tsr_load_f(j->cn, d->c_dtype, ci);
            tsr_store_f(j->cn, d->c_dtype, ci,
                        tsr_epilogue_apply_ref(&d->epilogue, v, g->bias_along_m ? row : col, j->batch_index, row, col));
        }
}

/* One vector of the k values from element p of a row of dtype t, as f32:
 * f32 and f16 (F16C) VL values in order; bf16 2 VL values of which part h
 * takes the evens (0) or the odds (1), one operation per vector and no
 * lane shuffle (vf_load_bf16_evens_odds). A dot product only sums, so A
 * and B permuted alike give the same terms. */
static inline __attribute__((always_inline)) vf dot_part(const char *row, tsr_dtype t, int64_t p, int h) {
    if (t != TSR_BF16) return vf_load_dtype(row, t, p);
    vf even, odd;
    vf_load_bf16_evens_odds(row, p, &even, &odd);
    return h ? odd : even;
}

/* Rows [i0, i0+mr) x columns [j0, j0+nr) of C, an R x CC tile of dot
 * products over K with inputs of dtype t (constants after inlining): f16
 * and bf16 widened in registers, so B is read once at its own width. With
 * j->a_wide (wide, a constant), A's rows are read from it as f32, already
 * in dot_part's order: the 4x3 tile would otherwise widen each A vector
 * again for every column group, an operation per three FMAs (Zen 3, two
 * threads, best of 4: bf16 16 x 4096 x 4096 71 -> 91-97 GFLOP/s, f32 at
 * 90-109). */
static inline __attribute__((always_inline)) void dot_tile(const job *j, int64_t i0, int mr, int64_t j0, int nr,
                                                           const int R, const int CC, const tsr_dtype t,
                                                           const bool wide) {
    const tsr_gemm_desc *d = &j->g->d;
    const int parts = t == TSR_BF16 ? 2 : 1;
    const int64_t K = d->k, kfull = K / (parts * VL) * (parts * VL), es = (int64_t)tsr_dtype_size(t);
    const int64_t a_es = wide ? 4 : es, lda = wide ? K : d->lda;
    const tsr_dtype ta = wide ? TSR_F32 : t;
    const char *brow[DOT_MAX_COLS], *arow[DOT_MAX_ROWS];
    for (int c = 0; c < CC; c++) brow[c] = j->b + (j0 + (c < nr ? c : 0)) * d->ldb * es;
    for (int r = 0; r < R; r++)
        arow[r] = (wide ? (const char *)j->a_wide : j->a) + (i0 + (r < mr ? r : 0)) * lda * a_es;
    vf acc[DOT_MAX_ROWS][DOT_MAX_COLS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < CC; c++) acc[r][c] = vf_zero();
    for (int64_t p = 0; p < kfull; p += parts * VL)
        for (int h = 0; h < parts; h++) {
            vf b[DOT_MAX_COLS];
            for (int c = 0; c < CC; c++) b[c] = dot_part(brow[c], t, p, h);
            for (int r = 0; r < R; r++) {
                const vf a = wide ? vf_load((const float *)(const void *)arow[r] + p + h * VL) : dot_part(arow[r], t, p, h);
                for (int c = 0; c < CC; c++) acc[r][c] = vf_fma(a, b[c], acc[r][c]);
            }
        }
    for (int64_t p = kfull; p < K; p += VL) { /* the tail in order, masked */
        const int n = (int)(K - p < VL ? K - p : VL);
        vf b[DOT_MAX_COLS];
        for (int c = 0; c < CC; c++) b[c] = vf_load_n_dtype(brow[c], t, p, n);
        for (int r = 0; r < R; r++) {
            const vf a = vf_load_n_dtype(arow[r], ta, p, n);
            for (int c = 0; c < CC; c++) acc[r][c] = vf_fma(a, b[c], acc[r][c]);
        }
    }
    /* reduced with constant indices, so the tile stays in registers */
    float tot[DOT_MAX_ROWS][DOT_MAX_COLS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < CC; c++) tot[r][c] = hsum(acc[r][c]);
    dot_store(j, tot, i0, mr, j0, nr);
}

#ifndef GEMM_BF16_DOT
/* Whether the dot path reads A from a widened copy: f16 or bf16 with more
 * than one row (one row is widened once per column group of eight). */
static bool dot_widens_a(const tsr_gemm_desc *d) { return d->a_dtype != TSR_F32 && d->m > 1; }

/* Rows [r0, r1) of A (f16/bf16, row-major) into dst as f32, K apart, in
 * dot_part's order: bf16 2 VL k at a time as evens then odds, the tail
 * past the last whole 2 VL in order (as dot_tile's masked tail reads it). */
static void dot_widen_a(const job *j, float *dst, int64_t r0, int64_t r1) {
    const tsr_gemm_desc *d = &j->g->d;
    const tsr_dtype t = d->a_dtype;
    const int64_t K = d->k, step = t == TSR_BF16 ? 2 * VL : VL, kfull = K / step * step;
    for (int64_t r = r0; r < r1; r++) {
        const char *row = j->a + r * d->lda * 2;
        float *out = dst + r * K;
        for (int64_t p = 0; p < kfull; p += step)
            if (t == TSR_BF16) {
                vf even, odd;
                vf_load_bf16_evens_odds(row, p, &even, &odd);
                vf_store(out + p, even), vf_store(out + p + VL, odd);
            } else vf_store(out + p, vf_load_dtype(row, t, p));
        for (int64_t p = kfull; p < K; p += VL) {
            const int n = (int)(K - p < VL ? K - p : VL);
            vf_store_n(out + p, vf_load_n_dtype(row, t, p, n), n);
        }
    }
}
#endif

#ifdef GEMM_BF16_DOT
/* bf16 A row-major and B stored n x k with M <= 16: both operands are
 * k-contiguous, so vdpbf16ps takes 32 k of a row of A and a row of B as
 * they lie in memory. */
static bool bf16_dot_ok(const tsr_gemm_desc *d) { return d->trans_b && !d->trans_a && d->m <= 16; }

/* Rows [i0, i0+mr) x columns [j0, j0+nr) of C, an R x CC tile (constants
 * after inlining) of bf16 dot products, 32 k per step, masked tail. */
static inline __attribute__((always_inline)) void dot_tile_bf16(const job *j, int64_t i0, int mr, int64_t j0, int nr,
                                                                const int R, const int CC) {
    const tsr_gemm_desc *d = &j->g->d;
    const int64_t K = d->k;
    const uint16_t *A = (const uint16_t *)j->a, *B = (const uint16_t *)j->b, *brow[DOT_MAX_COLS], *arow[DOT_MAX_ROWS];
    for (int c = 0; c < CC; c++) brow[c] = B + (j0 + (c < nr ? c : 0)) * d->ldb;
    for (int r = 0; r < R; r++) arow[r] = A + (i0 + (r < mr ? r : 0)) * d->lda;
    __m512 acc[DOT_MAX_ROWS][DOT_MAX_COLS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < CC; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < K; p += 32) {
        const __mmask32 m = K - p >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (K - p)) - 1);
        __m512bh b[DOT_MAX_COLS];
        for (int c = 0; c < CC; c++) b[c] = (__m512bh)_mm512_maskz_loadu_epi16(m, brow[c] + p);
        for (int r = 0; r < R; r++) {
            const __m512bh a = (__m512bh)_mm512_maskz_loadu_epi16(m, arow[r] + p);
            for (int c = 0; c < CC; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], a, b[c]);
        }
    }
    float tot[DOT_MAX_ROWS][DOT_MAX_COLS]; /* reduced at constant indices: the tile stays in registers */
    for (int r = 0; r < R; r++)
        for (int c = 0; c < CC; c++) tot[r][c] = _mm512_reduce_add_ps(acc[r][c]);
    dot_store(j, tot, i0, mr, j0, nr);
}

#endif

/* Columns [jlo, jhi) of C as dot products of A's rows with B's stored rows:
 * B streams through once, whatever M. The scalar epilogue runs per output
 * (M*N values against M*N*K multiply-adds). Column blocks outermost: their
 * few B rows stay in L1/L2 while every group of A rows (all of A is small:
 * M is skinny) passes over them. */
#ifdef GEMM_BF16_DOT /* bf16 B is never read in place but by this path */
#define DOT_TILE(j, i0, mr, j0, nr, R, CC, t, wide) ((void)(t), (void)(wide), dot_tile_bf16(j, i0, mr, j0, nr, R, CC))
#define DOT_COLS 4
#else
#define DOT_TILE dot_tile
#define DOT_COLS 3
#endif
/* One row reads A as it lies; more rows of f16/bf16 read j->a_wide
 * (dot_widens_a: the same rule, A and B of one dtype on this path). */
static inline __attribute__((always_inline)) void dot_columns_of(const job *j, int64_t jlo, int64_t jhi,
                                                                 const tsr_dtype t) {
    const int64_t M = j->g->d.m;
    if (M == 1) {
        for (int64_t j0 = jlo; j0 < jhi; j0 += 8)
            DOT_TILE(j, 0, 1, j0, (int)(jhi - j0 < 8 ? jhi - j0 : 8), 1, 8, t, false);
        return;
    }
    for (int64_t j0 = jlo; j0 < jhi; j0 += DOT_COLS)
        for (int64_t i0 = 0; i0 < M; i0 += 4)
            DOT_TILE(j, i0, (int)(M - i0 < 4 ? M - i0 : 4), j0, (int)(jhi - j0 < DOT_COLS ? jhi - j0 : DOT_COLS), 4,
                     DOT_COLS, t, t != TSR_F32);
}

static void dot_columns(const job *j, int64_t jlo, int64_t jhi) {
#ifdef GEMM_BF16_DOT
    dot_columns_of(j, jlo, jhi, TSR_BF16);
#else
    switch (j->g->d.b_dtype) {
    case TSR_BF16: dot_columns_of(j, jlo, jhi, TSR_BF16); break;
    case TSR_F16: dot_columns_of(j, jlo, jhi, TSR_F16); break;
    default: dot_columns_of(j, jlo, jhi, TSR_F32); break;
    }
#endif
}

#ifdef GEMM_BF16_DOT
/* The stream path's rows of A, bf16 with K padded by a zero to pairs, an
 * odd number of cache lines apart (4 KiB apart, 16 rows' broadcasts would
 * share one L1 set). */
static int64_t stream_a_ld(int64_t k) { return ((k + 1) / 2 * 4 + 63) / 64 * 64 + 64; }

/* Bytes of the stream path's region for a team of nth: the rows of A, then
 * each thread's interleaved block and sums. */
static size_t stream_region_bytes(const tsr_gemm_desc *d, int nth) {
    return (size_t)(d->m * stream_a_ld(d->k)) + (size_t)nth * (STREAM_BLOCK + STREAM_SUMS);
}

/* kb rows of B from p0 (row-major bf16, columns [c0, c0+w)) interleaved to
 * k pairs: vector v of pair g at blk + (g * nv + v) * 64. The word unpacks
 * work within 128-bit lanes, so dword 4L + e of vector 2h (2h + 1) holds
 * column 32h + 8L + e (+ 4). Rows past K and columns past w read as zero. */
static void stream_interleave(const job *j, int64_t p0, int kb, int64_t c0, int64_t w, int nv, char *blk) {
    const tsr_gemm_desc *d = &j->g->d;
    const uint16_t *B = (const uint16_t *)j->b;
    for (int g = 0; g * 2 < kb; g++) {
        const uint16_t *b0 = B + (p0 + 2 * g) * d->ldb + c0;
        const bool pair = 2 * g + 1 < kb;
        for (int64_t h = 0; h * 32 < w; h++) {
            const __mmask32 m = w - h * 32 >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (w - h * 32)) - 1);
            const __m512i r0 = _mm512_maskz_loadu_epi16(m, b0 + h * 32);
            const __m512i r1 = pair ? _mm512_maskz_loadu_epi16(m, b0 + d->ldb + h * 32) : _mm512_setzero_si512();
            char *out = blk + ((int64_t)g * nv + h * 2) * 64;
            _mm512_store_si512(out, _mm512_unpacklo_epi16(r0, r1));
            _mm512_store_si512(out + 64, _mm512_unpackhi_epi16(r0, r1));
        }
    }
}

/* Row i of op(A), bf16, K padded by zeros to the stream path's layout. */
static void stream_row_of_a(const job *j, int64_t i, uint16_t *dst) {
    const tsr_gemm_desc *d = &j->g->d;
    uint16_t *row = dst + i * (stream_a_ld(d->k) / 2);
    const uint16_t *A = (const uint16_t *)j->a;
    if (!d->trans_a) memcpy(row, A + i * d->lda, (size_t)d->k * 2);
    else
        for (int64_t p = 0; p < d->k; p++) row[p] = A[p * d->lda + i];
    if (d->k % 2) row[d->k] = 0;
}

/* C for 2 <= M <= STREAM_ROWS with row-major bf16 B, by thread tid of a team of
 * nth, with the region of stream_region_bytes(d, nth). B is read once, in
 * place (a packed copy would write as many bytes as the GEMM reads): each
 * block of kb rows by w columns of a thread's range is interleaved to k
 * pairs in an L1 buffer (the next block fetched into L2 meanwhile: each
 * row's segment starts a new page, where the hardware prefetcher stops),
 * then each vector of it adds into all M rows' sums, held in registers
 * over the block's k, a row's pair broadcast from memory per vdpbf16ps. */
static void stream_rows(const job *j, char *region, int tid, int nth) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    const int M = (int)d->m;
    const int64_t K = d->k, N = d->n, ldb = d->ldb, sw = STREAM_WIDTH, skb = STREAM_BLOCK / 2 / sw;
    const int64_t ls = sw + 16, a_ld = stream_a_ld(K) / 2; /* the sums' rows an odd number of lines apart */
    uint16_t *A = (uint16_t *)(void *)region;
    for (int64_t i = tid; i < M; i += nth) stream_row_of_a(j, i, A);
    tsr_team_barrier(nth);
    char *blk = region + (size_t)(M * a_ld * 2) + (size_t)tid * (STREAM_BLOCK + STREAM_SUMS);
    float *sums = (float *)(void *)(blk + STREAM_BLOCK);
    const int64_t groups = (N + 31) / 32, jlo = groups * tid / nth * 32, jhi_ = groups * (tid + 1) / nth * 32,
                  jhi = jhi_ < N ? jhi_ : N;
    for (int64_t c0 = jlo; c0 < jhi; c0 += sw) {
        const int64_t w = jhi - c0 < sw ? jhi - c0 : sw;
        const int nv = (int)((w + 31) / 32 * 2);
        for (int64_t p0 = 0; p0 < K; p0 += skb) {
            const int kb = (int)(K - p0 < skb ? K - p0 : skb);
            tsr_stream_prefetch_next(j->b, ldb, 2, K, p0, skb, c0, sw, jhi);
            stream_interleave(j, p0, kb, c0, w, nv, blk);
            tsr_stream_block(M, TSR_STREAM_BF16, (kb + 1) / 2, nv, blk, (const char *)(A + p0), a_ld * 2, p0 == 0, (int32_t *)sums, ls);
        }
        /* back to column order: columns 32h + 0..15 are blocks 0 of 2h, 0
         * of 2h + 1, 1 of 2h, 1 of 2h + 1; 16..31 the same of blocks 2, 3 */
        const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
        const __m512i hi_idx = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        for (int r = 0; r < M; r++)
            for (int64_t c = 0; c < w; c += VL) {
                const int n = (int)(w - c < VL ? w - c : VL);
                const float *s = sums + r * ls + c / 32 * 32;
                const __m512 v0 = _mm512_load_ps(s), v1 = _mm512_load_ps(s + 16);
                vf x = _mm512_permutex2var_ps(v0, c % 32 ? hi_idx : lo_idx, v1);
                const int64_t ci = r * d->ldc + c0 + c, colg = c0 + c;
                x = vf_mul(vf_set1(d->alpha), x);
                if (d->beta != 0.0f) x = vf_fma(vf_set1(d->beta), vf_load_n_dtype(j->cn, d->c_dtype, ci, n), x);
                x = ukr_epilogue(&d->epilogue, x, g->bias_along_m ? r : colg, g->bias_along_m, j->batch_index, r, colg,
                                 n);
                vf_store_n_dtype(j->cn, d->c_dtype, ci, x, n);
            }
    }
}
#endif /* GEMM_BF16_DOT */

/* acc[r][0, nc) += the sum over q < Q of a[r][q] times the row of B (dtype
 * t) at element brow[q], for R rows; constants after inlining, so that the
 * whole vectors run unmasked, with no branch per vector. */
static inline __attribute__((always_inline)) void widen_pass(float *const acc[WIDEN_ROWS], const void *b,
                                                             const int64_t brow[4], const vf a[WIDEN_ROWS][4],
                                                             int64_t nc, const int R, const int Q, const tsr_dtype t,
                                                             int64_t ahead) {
    const int64_t es = (int64_t)tsr_dtype_size(t);
    int64_t c = 0;
    for (; c + VL <= nc; c += VL) {
        vf bv[4];
        for (int q = 0; q < Q; q++) bv[q] = vf_load_dtype(b, t, brow[q] + c);
        if (ahead)
            for (int q = 0; q < Q; q++) _mm_prefetch((const char *)b + (brow[q] + ahead + c) * es, _MM_HINT_T0);
        for (int r = 0; r < R; r++) {
            vf x = vf_load(acc[r] + c);
            for (int q = 0; q < Q; q++) x = vf_fma(a[r][q], bv[q], x);
            vf_store(acc[r] + c, x);
        }
    }
    if (c < nc) {
        const int n = (int)(nc - c);
        vf bv[4];
        for (int q = 0; q < Q; q++) bv[q] = vf_load_n_dtype(b, t, brow[q] + c, n);
        for (int r = 0; r < R; r++) {
            vf x = vf_load_n(acc[r] + c, n);
            for (int q = 0; q < Q; q++) x = vf_fma(a[r][q], bv[q], x);
            vf_store_n(acc[r] + c, x, n);
        }
    }
}

/* widen_pass for the run-time row count mr (1..WIDEN_ROWS). */
static inline __attribute__((always_inline)) void widen_pass_rows(float *const acc[WIDEN_ROWS], const void *b,
                                                                  const int64_t brow[4], const vf a[WIDEN_ROWS][4],
                                                                  int64_t nc, int mr, const int Q, const tsr_dtype t,
                                                                  int64_t ahead) {
    int r0 = 0;
    for (; r0 + 4 <= mr; r0 += 4) widen_pass(acc + r0, b, brow, a + r0, nc, 4, Q, t, r0 ? 0 : ahead);
    switch (mr - r0) {
    case 1: widen_pass(acc + r0, b, brow, a + r0, nc, 1, Q, t, r0 ? 0 : ahead); break;
    case 2: widen_pass(acc + r0, b, brow, a + r0, nc, 2, Q, t, r0 ? 0 : ahead); break;
    case 3: widen_pass(acc + r0, b, brow, a + r0, nc, 3, Q, t, r0 ? 0 : ahead); break;
    default: break;
    }
}

/* Columns in one chunk of widen_rows' sums for mr rows. */
static int64_t widen_cols(int mr) { return STREAM_ACC / mr / VL * VL; }

/* Columns [jlo, jhi) of C for M <= WIDEN_ROWS with row-major B of dtype t
 * (f16/bf16 widened as loaded, so B is read at its own width): each
 * row of B is read once, contiguously (the hardware prefetcher follows),
 * into accumulators that stay in L1: 16 KiB of them, so one row gets 4096
 * columns a pass (the prefetcher restarts at every page a segment ends in).
 * Past one chunk, with a buffer of WIDEN_SUPER of them (buf; NULL: one
 * chunk at a time, on the stack), the chunks of a block of columns take K
 * in blocks of WIDEN_KB rows, each chunk in turn, their sums waiting in L2
 * meanwhile. A chunk that swept all of K alone read a segment of each row
 * of B, one page each: at 16 rows (256-column chunks, 1 KiB of a 16 KiB
 * row) a 4096-row B was 4096 pages a sweep, past the TLB's reach, and ran
 * at 19 GFLOP/s on one Zen 1 core where 1024 rows ran at 24. */
static inline __attribute__((always_inline)) void widen_rows_of(const job *j, int64_t jlo, int64_t jhi,
                                                                const tsr_dtype t, float *buf) {
    const tsr_gemm_problem *g = j->g;
    const tsr_gemm_desc *d = &g->d;
    _Alignas(64) float local[STREAM_ACC];
    const int mr = (int)d->m;
    const int64_t cols = widen_cols(mr);
    float *const accs = buf && jhi - jlo > cols ? buf : local; /* one chunk: on the stack, as before */
    const int64_t super = accs == buf ? WIDEN_SUPER : 1;
    /* where a chunk's run of each B row is a page or less (f32, 4 rows:
     * 1024 columns), the prefetcher restarts at every row: those lines
     * are fetched WIDEN_AHEAD rows ahead (Zen 4, two threads, f32 NN
     * 4 x 3072 x 1024 35-51 -> 84-96 GFLOP/s, 4 x 4608 x 1536 37-42 ->
     * 65-75; at 2 and 3 rows, 5-8 KiB runs, 10-20% slower, not taken) */
    const int64_t ahead = VL == 16 && t == TSR_F32 && cols * 4 <= 4096 ? WIDEN_AHEAD * d->ldb : 0;
    for (int64_t s0 = jlo; s0 < jhi; s0 += cols * super) {
        const int64_t s1 = jhi - s0 < cols * super ? jhi : s0 + cols * super, chunks = (s1 - s0 + cols - 1) / cols;
        for (int64_t ch = 0; ch < chunks; ch++) {
            const int64_t c0 = s0 + ch * cols, nc = s1 - c0 < cols ? s1 - c0 : cols;
            for (int r = 0; r < mr; r++) memset(accs + ch * STREAM_ACC + r * cols, 0, sizeof(float) * (size_t)nc);
        }
        for (int64_t p0 = 0; p0 < d->k; p0 += WIDEN_KB) {
            const int64_t pend = d->k - p0 < WIDEN_KB ? d->k : p0 + WIDEN_KB;
            for (int64_t ch = 0; ch < chunks; ch++) {
                const int64_t c0 = s0 + ch * cols, nc = s1 - c0 < cols ? s1 - c0 : cols;
                float *acc[WIDEN_ROWS];
                for (int r = 0; r < mr; r++) acc[r] = accs + ch * STREAM_ACC + r * cols;
                /* four rows of B per pass over the accumulators: a quarter
                 * of the accumulator loads and stores (the L1 port limit
                 * here); then the last k % 4 rows one at a time */
                int64_t p = p0;
                for (; p + 4 <= pend; p += 4) {
                    int64_t brow[4];
                    vf a[WIDEN_ROWS][4];
                    for (int q = 0; q < 4; q++) {
                        brow[q] = (p + q) * d->ldb + c0;
                        for (int r = 0; r < mr; r++)
                            a[r][q] = vf_set1(load_in(j->a, t, d->trans_a ? (p + q) * d->lda + r : r * d->lda + p + q));
                    }
                    widen_pass_rows(acc, j->b, brow, (const vf(*)[4])a, nc, mr, 4, t, p + WIDEN_AHEAD + 4 <= d->k ? ahead : 0);
                }
                for (; p < pend; p++) {
                    const int64_t brow[4] = {p * d->ldb + c0};
                    vf a[WIDEN_ROWS][4];
                    for (int r = 0; r < mr; r++)
                        a[r][0] = vf_set1(load_in(j->a, t, d->trans_a ? p * d->lda + r : r * d->lda + p));
                    widen_pass_rows(acc, j->b, brow, (const vf(*)[4])a, nc, mr, 1, t, 0);
                }
            }
        }
        for (int64_t ch = 0; ch < chunks; ch++) {
            const int64_t c0 = s0 + ch * cols, nc = s1 - c0 < cols ? s1 - c0 : cols;
            for (int r = 0; r < mr; r++)
                for (int64_t c = 0; c < nc; c++) {
                    const int64_t col = c0 + c, ci = r * d->ldc + col;
                    float v = d->alpha * accs[ch * STREAM_ACC + r * cols + c];
                    if (d->beta != 0.0f) v += d->beta * tsr_load_f(j->cn, d->c_dtype, ci);
                    tsr_store_f(j->cn, d->c_dtype, ci,
                                tsr_epilogue_apply_ref(&d->epilogue, v, g->bias_along_m ? r : col, j->batch_index, r, col));
                }
        }
    }
}

static void widen_rows(const job *j, int64_t jlo, int64_t jhi, float *buf) {
#ifdef GEMM_BF16_DOT
    widen_rows_of(j, jlo, jhi, TSR_BF16, buf);
#else
    switch (j->g->d.b_dtype) {
    case TSR_BF16: widen_rows_of(j, jlo, jhi, TSR_BF16, buf); break;
    case TSR_F16: widen_rows_of(j, jlo, jhi, TSR_F16, buf); break;
    default: widen_rows_of(j, jlo, jhi, TSR_F32, buf); break;
    }
#endif
}

#ifdef GEMM_BF16_DOT
/* One row of C with B read in place: widen_rows, not stream_rows (see gemm_one). */
static bool widens_one_row(const tsr_gemm_desc *d, bool pack_b) { return !pack_b && d->m == 1; }
#else
/* Whether gemm_one takes widen_rows: row-major B read in place by few rows. */
static bool widens(const tsr_gemm_desc *d, bool pack_b) { return !pack_b && !d->trans_b && d->m <= STREAM_ROWS; }
#endif

/* Columns [lo, hi) of N for thread tid of nth: whole vectors but the last thread's. */
static void column_share(int64_t N, int tid, int nth, int64_t *lo, int64_t *hi) {
    *lo = N * tid / nth / VL * VL;
    *hi = tid == nth - 1 ? N : N * (tid + 1) / nth / VL * VL;
}

/* Part part of parts of what packing panel jr of the block (p0, jc: kc k,
 * ncur columns) will read of B, fetched into L2: issued between the last
 * row block's tiles, so that B's read from memory overlaps the tiles rather
 * than stalling the team's packing after them (lines that L2 cannot keep
 * until then fall to L3, which AMD fills from L2's evictions). */
static void fetch_b_part(const job *j, int64_t p0, int64_t kc, int64_t jc, int64_t ncur, int64_t jr, int64_t part,
                         int64_t parts) {
    const tsr_gemm_desc *d = &j->g->d;
    const int64_t es = (int64_t)tsr_dtype_size(d->b_dtype);
    int64_t nr;
    const int64_t j0 = jc + tsr_panel_cols(ncur, NV, VL, jr, &nr);
    const int64_t rows = d->trans_b ? nr : kc, lo = rows * part / parts, hi = rows * (part + 1) / parts;
    if (hi <= lo) return;
    const char *b = (const char *)j->b;
    if (d->trans_b) tsr_prefetch_tile_l2(b + ((j0 + lo) * d->ldb + p0) * es, d->ldb * es, hi - lo, kc * es);
    else tsr_prefetch_tile_l2(b + ((p0 + lo) * d->ldb + j0) * es, d->ldb * es, hi - lo, nr * es);
}

/* One matrix, by a team of nth threads (tid in it), with shared buffers
 * ap (MC x KC) and bp (KC x NC), both packed. */
static void gemm_one(const job *j, float *ap, float *bp, int tid, int nth) {
    const tsr_gemm_desc *d = &j->g->d;
    const int64_t M = d->m, N = d->n, K = d->k, es = (int64_t)tsr_dtype_size(d->c_dtype);
    if (K == 0) {
        scale_only(j, tid, nth);
        return;
    }
#ifdef GEMM_BF16_DOT
    if (bf16_dot_ok(d)) { /* x W^T with few rows: B streams once, unpacked */
        dot_columns(j, N * tid / nth, N * (tid + 1) / nth);
        return;
    }
#endif
#ifdef GEMM_BF16_DOT
    /* One row: each pair of B rows interleaved for vdpbf16ps would serve a
     * single row of sums; widened as loaded, B feeds FMAs directly (Zen 4,
     * two threads, best of 5 alternated, M x N x K: 1 x 4096 x 4096 842 ->
     * 541 us, 1 x 11008 x 4096 2157 -> 921, 1 x 4096 x 11008 1833 -> 1171,
     * 1 x 512 x 512 13.2 -> 10.4; two rows measured alike either way) */
    if (widens_one_row(d, j->pack_b)) {
        int64_t lo, hi;
        column_share(N, tid, nth, &lo, &hi);
        widen_rows(j, lo, hi, NULL);
        return;
    }
    if (!j->pack_b) { /* row-major B, M <= STREAM_ROWS: the region in ap */
        stream_rows(j, (char *)ap, tid, nth);
        return;
    }
#else
    if (widens(d, j->pack_b)) { /* ap: WIDEN_SUPER chunks of sums a thread (blis_run) */
        int64_t lo, hi;
        column_share(N, tid, nth, &lo, &hi);
        widen_rows(j, lo, hi, ap + (size_t)tid * WIDEN_SUPER * STREAM_ACC);
        return;
    }
    if (!j->pack_b && d->trans_b) { /* contiguous column ranges per thread */
        int64_t lo, hi;
        column_share(N, tid, nth, &lo, &hi);
        if (!dot_widens_a(d)) {
            dot_columns(j, lo, hi);
            return;
        }
        /* A widened into ap by the team, a share of the rows each; a
         * barrier before any thread reads it, and one after the last
         * reader (the next batch matrix's rows overwrite it) */
        job jw = *j;
        jw.a_wide = ap;
        dot_widen_a(j, ap, M * tid / nth, M * (tid + 1) / nth);
        if (nth > 1) tsr_team_barrier(nth);
        dot_columns(&jw, lo, hi);
        if (nth > 1) tsr_team_barrier(nth);
        return;
    }
#endif
    /* Equal blocks of at most nc columns and kc k: no thin last column block
     * repacking all of A, no short last K block paying a full pass over C.
     * K blocks stay multiples of 8 (whole transposes when packing). */
    const int64_t nblocks = (N + j->nc - 1) / j->nc, ncb = ((N + nblocks - 1) / nblocks + NR - 1) / NR * NR;
    const int64_t kblocks = (K + j->kc - 1) / j->kc, kc8 = ((K + kblocks - 1) / kblocks + 7) / 8 * 8;
    const int64_t kcb = kc8 < j->kc ? kc8 : j->kc;
    for (int64_t jc = 0; jc < N; jc += ncb) {
        int64_t ncur = N - jc < ncb ? N - jc : ncb, npanels = (ncur + NR - 1) / NR;
        for (int64_t pc = 0; pc < K; pc += kcb) {
            int64_t kcur = K - pc < kcb ? K - pc : kcb;
            bool first = pc == 0, last = pc + kcur == K;
            /* a C that is only written and fits L1 gains nothing from the
             * prefetch, which costs 32^3 f32 4% (2048^2 x 256: it gains 5%) */
            const bool prefetch_c = !first || d->beta != 0.0f || M * N * es > (32 << 10);
            /* B panels: all of them packed, or only a last one that ends
             * inside a vector (one of whole vectors is read in place) */
            const bool packs_b = j->pack_b || ncur % NR % VL;
            const bool done = jc + ncur == N && last && j->batch_index == d->batch - 1; /* nothing is packed after */
            for (int64_t jr = npanels * tid / nth; packs_b && jr < npanels * (tid + 1) / nth; jr++) {
                int64_t nr;
                const int64_t j0 = jc + tsr_panel_cols(ncur, NV, VL, jr, &nr);
                if (j->pack_b || nr % VL) pack_b(j, pc, kcur, j0, nr, bp + jr * NR * kcur);
            }
            if (packs_b) tsr_team_barrier(nth);
            /* the block packed next: the next K block, else the next column block's first */
            const bool next_k = pc + kcur < K;
            const int64_t npc = next_k ? pc + kcur : 0, njc = next_k ? jc : jc + ncur;
            const int64_t nkc = next_k ? (K - npc < kcb ? K - npc : kcb) : (K < kcb ? K : kcb);
            const int64_t nncur = next_k ? ncur : (N - njc < ncb ? N - njc : ncb);
            const bool fetch = j->fetch_b && (next_k || njc < N);
            for (int64_t ic = 0; ic < M; ic += j->mc) {
                int64_t mcur = M - ic < j->mc ? M - ic : j->mc, mpanels = (mcur + MR - 1) / MR;
                if (j->pack_a) {
                    for (int64_t ir = tid; ir < mpanels; ir += nth) {
                        int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                        pack_a(j, ic + ir * MR, mr, pc, kcur, ap + ir * MR * kcur);
                    }
                    tsr_team_barrier(nth);
                }
                /* tiles in contiguous ranges per thread: with column panels
                 * outermost a thread reads its own B panels (each from L3
                 * once, into its own L2) where round-robin tiles had both
                 * read every panel; with row panels outermost, its own rows
                 * of A, and all of the B block from its L2 */
                const bool rows = j->rows_outer;
                const int64_t t_lo = tsr_tile_split(ncur, npanels, mpanels, NR, VL, rows, tid, nth),
                              t_hi = tsr_tile_split(ncur, npanels, mpanels, NR, VL, rows, tid + 1, nth);
                for (int64_t t = t_lo; t < t_hi; t++) {
                    const int64_t jr = rows ? t % npanels : t / mpanels, ir = rows ? t / npanels : t % mpanels;
                    int64_t nr, mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    const int64_t j0 = jc + tsr_panel_cols(ncur, NV, VL, jr, &nr);
                    if (prefetch_c)
                        tsr_prefetch_tile(j->cn + ((ic + ir * MR) * d->ldc + j0) * es, d->ldc * es, mr, nr * es);
                    const bool packed = j->pack_b || nr % VL;
                    const float *a = j->pack_a ? ap + ir * MR * kcur
                                               : (const float *)(j->a + ((ic + ir * MR) * d->lda + pc) * A_ELEM);
                    tile(j, kcur, a, j->pack_a ? A_WORD : d->lda, j->pack_a ? MR * A_WORD : A_WORD,
                         packed ? bp + jr * NR * kcur : (const float *)j->b + pc * d->ldb + j0,
                         packed ? NR : d->ldb, ic + ir * MR, mr, j0, nr, first, last);
                    if (fetch && ic + mcur == M && jr < (nncur + NR - 1) / NR)
                        fetch_b_part(j, npc, nkc, njc, nncur, jr, ir, mpanels);
                }
                /* the next ic block repacks the shared A buffer; after the
                 * last block of the last matrix the team's end waits */
                if (j->pack_a && !(ic + mcur == M && done)) tsr_team_barrier(nth);
            }
            /* A read in place: threads run on through the ic blocks and wait
             * once, before the B buffer is repacked (each owns its C tiles in
             * every K block: the same split) */
            if (!j->pack_a && packs_b && !done) tsr_team_barrier(nth);
        }
    }
}

/* The job for batch matrix bt. */
static job job_for(const job *base, int64_t bt) {
    const tsr_gemm_problem *g = base->g;
    const tsr_gemm_desc *d = &g->d;
    job j = *base;
    j.a = (const char *)g->a + (size_t)(bt * d->stride_a) * tsr_dtype_size(d->a_dtype);
    j.b = (const char *)g->b + (size_t)(bt * d->stride_b) * tsr_dtype_size(d->b_dtype);
    j.c = (float *)g->c + bt * d->stride_c;
    j.cn = (char *)g->c + (size_t)(bt * d->stride_c) * tsr_dtype_size(d->c_dtype);
    j.batch_index = bt;
    return j;
}

/* Whether gemm_one runs its Goto loops (packed, or f32 B read in place by
 * the micro-kernel), which a team can split by tsr_split_of. */
static bool goto_loops(const tsr_gemm_desc *d, bool pack_b) {
#ifdef GEMM_BF16_DOT
    return !bf16_dot_ok(d) && pack_b;
#else
    return pack_b || (!d->trans_b && d->m > STREAM_ROWS);
#endif
}

/* Columns (or rows) [lo, hi) of g as a problem of their own: B (A), C and
 * the epilogue's data moved to the share's first element. */
static tsr_gemm_problem share_of(const tsr_gemm_problem *g, bool cols, int64_t lo, int64_t hi) {
    const tsr_gemm_desc *d = &g->d;
    tsr_gemm_problem s = *g;
    const size_t ec = tsr_dtype_size(d->c_dtype);
    if (cols) {
        s.d.n = hi - lo;
        s.b = (const char *)g->b + (size_t)(d->trans_b ? lo * d->ldb : lo) * tsr_dtype_size(d->b_dtype);
        s.c = (char *)g->c + (size_t)lo * ec;
    } else {
        s.d.m = hi - lo;
        s.a = (const char *)g->a + (size_t)(d->trans_a ? lo : lo * d->lda) * tsr_dtype_size(d->a_dtype);
        s.c = (char *)g->c + (size_t)(lo * d->ldc) * ec;
    }
    for (int i = 0; i < s.d.epilogue.num_steps; i++) {
        tsr_epilogue_step *e = &s.d.epilogue.steps[i];
        const size_t ee = tsr_dtype_size(e->dtype);
        if (e->op == TSR_EPI_BIAS && e->data && cols != g->bias_along_m)
            e->data = (const char *)e->data + (size_t)lo * ee;
        else if (e->op == TSR_EPI_RESIDUAL && e->data)
            e->data = (const char *)e->data + (size_t)(cols ? lo : lo * e->ld) * ee;
    }
    return s;
}

/* Columns a team's shares come in: vectors where a narrow last panel
 * takes columns from the one before (tsr_panel_cols), so that 256 columns
 * split 128 + 128 rather than 144 + 112 (or all of B packed by each thread
 * of a split by rows); whole panels otherwise. */
#define COL_UNIT (NV >= 3 ? VL : NR)

static tsr_status blis_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    job base = {.g = g, .mc = s->v[KNOB_MC], .kc = s->v[KNOB_KC], .nc = s->v[KNOB_NC],
                .pack_a = s->v[KNOB_PACK_A] != 0, .pack_b = s->v[KNOB_PACK_B] != 0,
                .rows_outer = s->v[KNOB_ROWS_OUTER] != 0,
                .plain_epilogue = ukr_epilogue_is_plain(&d->epilogue)};
    if (!base.pack_a && !can_skip_pack_a(d)) base.pack_a = true;
    if (!base.pack_b && !can_skip_pack_b(d)) base.pack_b = true;
    /* B past the caches (the library's 16 MiB bound): its next block comes
     * from memory, which the packing alone waited on (bf16 128 x 4096 x 4096
     * NN: 32% of the time in pack_b). Zen 5, two threads, 3 alternated
     * rounds: bf16 NN 128 / 256 / 512 / 1024 x 4096 x 4096 624 -> 704,
     * 745 -> 820, 837 -> 873, 844 -> 915 GFLOP/s; bf16 x W^T 1-2%, f32 0-2%,
     * 4096^3 the same. */
    base.fetch_b = base.pack_b && (double)d->k * (double)d->n * (double)tsr_dtype_size(d->b_dtype) > (double)(16 << 20);
    if (!base.pack_b && d->k * d->ldb * (int64_t)sizeof(float) > ((int64_t)1 << 20))
        base.ahead = s->v[KNOB_AHEAD] ? &ukr_ahead_far : &ukr_ahead_near;
    if (d->c_dtype != TSR_F32 && d->k > base.kc) { /* a narrow C takes the sum once: one K block, */
        base.kc = d->k;                             /* B blocks of at most 8 Mi floats */
        const int64_t most = ((int64_t)8 << 20) / d->k / NR * NR;
        if (base.nc > most) base.nc = most > NR ? most : NR;
    }
    const int64_t kc = d->k < base.kc ? (d->k > 0 ? d->k : 1) : base.kc;
    const int64_t nc = ((d->n < base.nc ? d->n : base.nc) + NR - 1) / NR * NR;
    const int64_t mc = ((d->m < base.mc ? d->m : base.mc) + MR - 1) / MR * MR;
    const bool per_matrix = s->v[KNOB_BATCH_PAR] && d->batch > 1;
    int nt = tsr_threads_for(ctx, 2.0 * (double)d->m * (double)d->n * (double)d->k * (double)d->batch,
                             THREAD_MIN_FLOPS);
    const double b_bytes = (double)d->k * (double)d->n * (double)tsr_dtype_size(d->b_dtype) * (double)d->batch;
    const int nt_b = tsr_threads_for(ctx, b_bytes, B_BYTES_PER_THREAD);
    if (nt_b > nt) nt = nt_b;
    /* Up to 256^3 a team splits each matrix between its threads (two
     * threads, best of 5: f32 96^3 134 -> 160 GFLOP/s, 128^3 164 -> 191;
     * bf16 96^3 80 -> 120, 128^3 94-109 -> 283-303); from 192^3 to 2048^3
     * f32 measured the same either way within this VM's noise, and keeps
     * the shared buffers (one copy of A) there. */
    const bool small = (double)d->m * (double)d->n * (double)d->k <= 256.0 * 256.0 * 256.0;
    /* Row panels outermost (tall C) split the same way: a thread per share,
     * no barrier per B block, where a preempted vCPU stalled both at each
     * of them (4096^3 two threads, best of 6: 284 -> 307 GFLOP/s; 2048^3
     * the same; at 512^3-1024^3 and 512-1024 x 4096 x 4096 with column
     * panels outermost the split measured the same or 1-5% slower). */
    const int split = (small || base.rows_outer) && !per_matrix && goto_loops(d, base.pack_b)
                          ? tsr_split_of(d->m, d->n, MR, COL_UNIT, nt)
                          : TSR_SPLIT_NONE;
    /* the rows and columns one thread's buffers hold (whole B panels) */
    size_t abuf = (size_t)(tsr_split_share(d->m, mc, MR, MR, split == TSR_SPLIT_ROWS, nt) * kc),
           bbuf = (size_t)(tsr_split_share(d->n, nc, COL_UNIT, NR, split == TSR_SPLIT_COLUMNS, nt) * kc);
#ifdef GEMM_BF16_DOT
    if (!base.pack_b) { /* the stream path's region in place of the A panels, per team; widen_rows needs none */
        abuf = widens_one_row(d, false) ? 0 : (stream_region_bytes(d, per_matrix ? 1 : nt) + sizeof(float) - 1) / sizeof(float);
        bbuf = 0;
    }
#else
    if (!base.pack_b && d->trans_b && dot_widens_a(d) && abuf < (size_t)(d->m * d->k)) /* dot_widen_a */
        abuf = (size_t)(d->m * d->k);
    /* widen_rows' sums past one chunk: a team's threads share buf, a matrix's owner has its own */
    if (widens(d, base.pack_b) && d->n > widen_cols((int)d->m)) {
        const size_t sums = (size_t)WIDEN_SUPER * STREAM_ACC * (size_t)(per_matrix ? 1 : nt);
        if (abuf < sums) abuf = sums;
    }
#endif
    const int nbuf = per_matrix || split != TSR_SPLIT_NONE ? nt : 1;
    float *buf = tsr_scratch_get((abuf + bbuf) * sizeof(float) * (size_t)nbuf);
    if (!buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "%s: no memory for packing buffers", GEMM_NAME);
    if (nt == 1) { /* no parallel region: even a one-thread one costs a team */
        for (int64_t bt = 0; bt < d->batch; bt++) {
            job j = job_for(&base, bt);
            gemm_one(&j, buf, buf + abuf, 0, 1);
        }
        tsr_scratch_put(buf);
        return TSR_OK;
    }
#pragma omp parallel num_threads(nt)
    {
        int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        if (split != TSR_SPLIT_NONE && nth == nt) { /* each thread owns its share of every matrix */
            const bool cols = split == TSR_SPLIT_COLUMNS;
            int64_t lo, hi;
            tsr_split_range(cols ? d->n : d->m, cols ? COL_UNIT : MR, tid, nth, &lo, &hi);
            const tsr_gemm_problem gs = share_of(g, cols, lo, hi);
            job bs = base;
            bs.g = &gs;
            float *ap = buf + (size_t)tid * (abuf + bbuf), *bp = ap + abuf;
            for (int64_t bt = 0; bt < d->batch && hi > lo; bt++) {
                job j = job_for(&bs, bt);
                gemm_one(&j, ap, bp, 0, 1);
            }
        } else if (per_matrix) { /* each thread owns whole matrices */
            float *ap = buf + (size_t)tid * (abuf + bbuf), *bp = ap + abuf;
#pragma omp for schedule(dynamic, 1)
            for (int64_t bt = 0; bt < d->batch; bt++) {
                job j = job_for(&base, bt);
                gemm_one(&j, ap, bp, 0, 1);
            }
        } else { /* a smaller team than a split was sized for shares the buffers as one */
            float *bp = buf + (split != TSR_SPLIT_NONE ? (size_t)(mc * kc) : abuf);
            for (int64_t bt = 0; bt < d->batch; bt++) {
                job j = job_for(&base, bt);
                gemm_one(&j, buf, bp, tid, nth);
#ifdef GEMM_BF16_DOT
                /* the stream path: the next matrix's rows of A overwrite this one's */
                if (bt + 1 < d->batch && !base.pack_b) tsr_team_barrier(nth);
#endif
            }
        }
    }
    tsr_scratch_put(buf);
    return TSR_OK;
}

const tsr_kernel GEMM_SYMBOL = {
    .name = GEMM_NAME,
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = GEMM_ARCH,
    .supports = blis_supports,
    .cpu_features = GEMM_FEATURES,
    .num_knobs = (int)(sizeof gemm_knobs / sizeof gemm_knobs[0]),
    .knobs = gemm_knobs,
    .default_schedule = blis_default,
    .schedule_valid = blis_valid,
    .run = blis_run,
};
