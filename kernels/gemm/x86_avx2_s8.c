/* int8 GEMM on AVX2: C(i32) = op(A)(s8) op(B)(s8), exact with int32
 * wrap-around like the reference, for CPUs without AVX-512 VNNI.
 *
 * Bytes are sign-extended to int16 and vpmaddwd multiplies pairs of k and
 * adds each pair into an int32 lane: |a b| <= 2^14, so a pair's sum is
 * exact and nothing saturates (vpmaddubsw, the usual AVX2 int8 route,
 * saturates its int16 pair sums: oneDNN's dnnl_gemm_s8s8s32 gives wrong
 * sums on this ISA for full-range data, as its documentation warns).
 *
 * Two paths:
 *  - packed (Goto loops jc > pc > ic, 4 x 16 micro-tiles: 8 ymm
 *    accumulators; A and B panels hold a k pair per 32-bit word);
 *  - dot (M <= 16, A row-major, B stored n x k: the x W^T decode shapes):
 *    rows of A against rows of B read in place, 16 k a step, so B streams
 *    through once without being packed;
 *  - stream (M <= 16, row-major B): each row of B read once, contiguously,
 *    four k rows a pass made into k-pair words in registers, into int32
 *    sums of a chunk of columns that stay in L1.
 * alpha == 1 with beta 0 or 1 adds in wrapping int32 across K blocks; any
 * other alpha/beta needs the whole sum before rounding, so K is one block. */
#include <immintrin.h>
#include <omp.h>
#include <string.h>

#include "../../arch/x86_avx2/transpose.h"
#include "x86_int8.h"
#include "x86_tiles.h"
#include "internal.h"

#define MR 4
#define NR 16
#define NAME "gemm.x86_avx2.s8"
#define FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA)

static const int nc_values[] = {1024, 2048, 4096};
static const tsr_knob s8_knobs[] = TSR_I8_KNOBS(nc_values);

static bool s8_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    return tsr_i8_supports(p, NAME, why, n);
}

static bool dot_ok(const tsr_gemm_desc *d) { return d->trans_b == TSR_TRANS && d->trans_a == TSR_NO_TRANS && d->m <= 16; }

/* Rows of C the stream path takes, and its int32 sums kept in L1. */
enum { STREAM_ROWS = 16, STREAM_ACC = 4096 };

static bool stream_ok(const tsr_gemm_desc *d) { return d->trans_b == TSR_NO_TRANS && d->m <= STREAM_ROWS; }

static void s8_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)ctx;
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[KNOB_MC] = 96;
    s->v[KNOB_KC] = 512; /* a 4-row A panel of 512 k (4 KiB of k-pair words), a 16-column B panel (16 KiB) */
    s->v[KNOB_NC] = 2048;
    /* few rows against row-major B: packing B would write as many bytes
     * as the GEMM reads (Zen 3, two threads, x 4096 x 4096 packed ->
     * streamed: 1 row 10 -> 65 GOP/s, 16 rows 86 -> 108) */
    s->v[KNOB_PATH] = dot_ok(d) ? PATH_DOT : stream_ok(d) ? PATH_STREAM : PATH_PACKED;
}

static bool s8_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    if (s->v[KNOB_MC] % MR || s->v[KNOB_NC] % NR || s->v[KNOB_KC] % 2 || s->v[KNOB_KC] < 2) return false;
    return tsr_i8_path_valid(s->v[KNOB_PATH], dot_ok(&p->u.gemm.d), stream_ok(&p->u.gemm.d));
}

typedef struct job {
    const tsr_gemm_desc *d;
    const int8_t *a, *b;
    int32_t *c;
    int64_t mc, kc, nc; /* kc: even */
} job;

/* Two int8 as the int16 pair of a 32-bit word, lo in the low half. */
static inline uint32_t pair(int8_t lo, int8_t hi) { return (uint16_t)(int16_t)lo | (uint32_t)(uint16_t)(int16_t)hi << 16; }

/* Rows [i0, i0+mr) of op(A), k in [p0, p0+kc), as k pairs:
 * dst[q * MR + i]; rows past mr and the k past kc read as 0. */
static void pack_a(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, uint32_t *dst) {
    const tsr_gemm_desc *d = j->d;
    const int64_t si = d->trans_a ? 1 : d->lda, sp = d->trans_a ? d->lda : 1; /* element (i, p) at i si + p sp */
    const int8_t *a = j->a + i0 * si + p0 * sp;
    for (int64_t q = 0; q * 2 < kc; q++) {
        const bool both = 2 * q + 1 < kc;
        for (int64_t i = 0; i < MR; i++)
            dst[q * MR + i] = i < mr ? pair(a[i * si + 2 * q * sp], both ? a[i * si + (2 * q + 1) * sp] : 0) : 0;
    }
}

/* 16 columns of two rows of B (r1 NULL: zeros) as k-pair words: columns
 * 0-7 in *lo, 8-15 in *hi. The word unpacks work within 128-bit lanes; a
 * lane swap puts the columns in order. */
static inline void pairs16(const int8_t *r0, const int8_t *r1, __m256i *lo, __m256i *hi) {
    const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)r0));
    const __m256i x1 = r1 ? _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)r1)) : _mm256_setzero_si256();
    const __m256i l = _mm256_unpacklo_epi16(x0, x1), h = _mm256_unpackhi_epi16(x0, x1);
    *lo = _mm256_permute2x128_si256(l, h, 0x20);
    *hi = _mm256_permute2x128_si256(l, h, 0x31);
}

/* pack_b of B stored n x k, 16 k at a time: a column's 16 k are 16
 * adjacent bytes, its 8 k-pair words once sign-extended to int16, and two
 * 8x8 transposes of those words make the panel's 8 rows (pair by pair in
 * scalars, x W^T with 128 rows ran at 91-123 GOP/s against 138-186 for
 * row-major B). Returns the k packed (a multiple of 16). */
static int64_t pack_b_stored_rows(const job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nr, uint32_t *dst) {
    const tsr_gemm_desc *d = j->d;
    const int64_t k16 = kc / 16 * 16;
    _Alignas(32) uint32_t words[NR * 8];
    for (int64_t k = 0; k < k16; k += 16) {
        for (int64_t c = 0; c < nr; c++)
            _mm256_store_si256((__m256i *)(words + c * 8),
                               _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(j->b + (j0 + c) * d->ldb + p0 + k))));
        uint32_t *out = dst + k / 2 * NR; /* missing columns: rows of zeros */
        tsr_transpose8x8(words, 8, nr < 8 ? (int)nr : 8, out, NR, 8);
        tsr_transpose8x8(words + 64, 8, nr > 8 ? (int)nr - 8 : 0, out + 8, NR, 8);
    }
    return k16;
}

/* Columns [j0, j0+nr) of op(B), k in [p0, p0+kc), as k pairs:
 * dst[q * NR + c]; columns past nr and the k past kc read as 0. Row-major
 * B's whole panels: two rows at a time by pairs16; B stored n x k: 16 k
 * at a time by pack_b_stored_rows. */
static void pack_b(const job *j, int64_t p0, int64_t kc, int64_t j0, int64_t nr, uint32_t *dst) {
    const tsr_gemm_desc *d = j->d;
    for (int64_t q = d->trans_b ? pack_b_stored_rows(j, p0, kc, j0, nr, dst) / 2 : 0; q * 2 < kc; q++) {
        const bool both = 2 * q + 1 < kc;
        uint32_t *row = dst + q * NR;
        if (!d->trans_b && nr == NR) {
            const int8_t *b0 = j->b + (p0 + 2 * q) * d->ldb + j0;
            __m256i lo, hi;
            pairs16(b0, both ? b0 + d->ldb : NULL, &lo, &hi);
            _mm256_storeu_si256((__m256i *)row, lo);
            _mm256_storeu_si256((__m256i *)(row + 8), hi);
            continue;
        }
        const int64_t sp = d->trans_b ? 1 : d->ldb, sc = d->trans_b ? d->ldb : 1; /* element (p, c) at p sp + c sc */
        const int8_t *b = j->b + (p0 + 2 * q) * sp + j0 * sc;
        for (int64_t c = 0; c < NR; c++) row[c] = c < nr ? pair(b[c * sc], both ? b[sp + c * sc] : 0) : 0;
    }
}

/* acc = A panel x B panel over kq k pairs. */
static inline __attribute__((always_inline)) void micro_kernel(int64_t kq, const uint32_t *restrict ap,
                                                               const uint32_t *restrict bp, __m256i acc[MR][2]) {
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + q * NR)),
                      b1 = _mm256_loadu_si256((const __m256i *)(bp + q * NR + 8));
#pragma GCC unroll 4
        for (int i = 0; i < MR; i++) {
            const __m256i a = _mm256_set1_epi32((int)ap[q * MR + i]);
            acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(a, b0));
            acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(a, b1));
        }
    }
}

/* A whole tile of sums that wrap, into C from the registers: the first K
 * block sets C (adding it when beta is 1), later blocks add. False for
 * any other tile. */
static inline __attribute__((always_inline)) bool store_tile_regs(const job *j, __m256i acc[MR][2], int64_t i0,
                                                                  int64_t mr, int64_t j0, int64_t nr, bool first) {
    const tsr_gemm_desc *d = j->d;
    if (!tsr_i8_wrapping_sum(d) || mr != MR || nr != NR) return false;
    const bool add_c = !first || d->beta == 1.0f;
#pragma GCC unroll 4
    for (int i = 0; i < MR; i++) {
        int32_t *crow = j->c + (i0 + i) * d->ldc + j0;
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) {
            __m256i r = acc[i][v];
            if (add_c) r = _mm256_add_epi32(r, _mm256_loadu_si256((const __m256i *)(crow + v * 8)));
            _mm256_storeu_si256((__m256i *)(crow + v * 8), r);
        }
    }
    return true;
}

/* Any tile's sums into C, element by element. */
static __attribute__((noinline)) void store_tile(const job *j, const __m256i acc[MR][2], int64_t i0, int64_t mr,
                                                 int64_t j0, int64_t nr, bool first) {
    const tsr_gemm_desc *d = j->d;
    for (int64_t i = 0; i < mr; i++) {
        int32_t t[NR], *crow = j->c + (i0 + i) * d->ldc + j0;
        _mm256_storeu_si256((__m256i *)t, acc[i][0]);
        _mm256_storeu_si256((__m256i *)(t + 8), acc[i][1]);
        for (int64_t c = 0; c < nr; c++) crow[c] = tsr_i8_combine(d, t[c], crow[c], first);
    }
}

/* One tile: the micro-kernel, then the store (from the registers when it
 * can: through store_tile the accumulators live on the stack, stored at
 * every k pair). */
static inline __attribute__((always_inline)) void tile(const job *j, int64_t kq, const uint32_t *restrict ap,
                                                       const uint32_t *restrict bp, int64_t i0, int64_t mr,
                                                       int64_t j0, int64_t nr, bool first) {
    __m256i acc[MR][2];
    micro_kernel(kq, ap, bp, acc);
    if (store_tile_regs(j, acc, i0, mr, j0, nr, first)) return;
    __m256i spill[MR][2]; /* a copy: acc's own address would keep it in memory */
    memcpy(spill, acc, sizeof spill);
    store_tile(j, (const __m256i(*)[2])spill, i0, mr, j0, nr, first);
}

enum { DOT_MAX_ROWS = 4, DOT_MAX_COLS = 8 };

static int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Rows [i0, i0+mr) x columns [j0, j0+nr) of C for B stored n x k: an R x CC
 * tile (constants after inlining) of rows of A against rows of B, 16 k a
 * step sign-extended in registers, the k % 16 tail in scalars. */
static inline __attribute__((always_inline)) void dot_tile(const job *j, int64_t i0, int mr, int64_t j0, int nr,
                                                           const int R, const int CC) {
    const tsr_gemm_desc *d = j->d;
    const int64_t K = d->k, kfull = K / 16 * 16;
    const int8_t *brow[DOT_MAX_COLS], *arow[DOT_MAX_ROWS];
    for (int c = 0; c < CC; c++) brow[c] = j->b + (j0 + (c < nr ? c : 0)) * d->ldb;
    for (int r = 0; r < R; r++) arow[r] = j->a + (i0 + (r < mr ? r : 0)) * d->lda;
    __m256i acc[DOT_MAX_ROWS][DOT_MAX_COLS];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < CC; c++) acc[r][c] = _mm256_setzero_si256();
    for (int64_t p = 0; p < kfull; p += 16) {
        __m256i b[DOT_MAX_COLS];
        for (int c = 0; c < CC; c++) b[c] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(brow[c] + p)));
        for (int r = 0; r < R; r++) {
            const __m256i a = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(arow[r] + p)));
            for (int c = 0; c < CC; c++) acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(a, b[c]));
        }
    }
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) {
            uint32_t sum = (uint32_t)hsum(acc[r][c]);
            for (int64_t p = kfull; p < K; p++) sum += (uint32_t)(arow[r][p] * brow[c][p]);
            int32_t *cp = j->c + (i0 + r) * d->ldc + j0 + c;
            *cp = tsr_i8_combine(d, (int32_t)sum, *cp, true);
        }
}

/* Columns [jlo, jhi) of C by dot products: B streams through once; column
 * blocks outermost, so their few rows of B stay in L1 for every row of A. */
static void dot_columns(const job *j, int64_t jlo, int64_t jhi) {
    const int64_t M = j->d->m;
    if (M == 1) {
        for (int64_t j0 = jlo; j0 < jhi; j0 += 8) dot_tile(j, 0, 1, j0, (int)(jhi - j0 < 8 ? jhi - j0 : 8), 1, 8);
        return;
    }
    /* 4 x 2: 8 accumulators, 2 + 1 operands and the product in 16 ymm */
    for (int64_t j0 = jlo; j0 < jhi; j0 += 2)
        for (int64_t i0 = 0; i0 < M; i0 += 4)
            dot_tile(j, i0, (int)(M - i0 < 4 ? M - i0 : 4), j0, (int)(jhi - j0 < 2 ? jhi - j0 : 2), 4, 2);
}

/* acc[r][0, n16) += a[r][q] . (k-pair words of B's rows brow[2q], brow[2q
 * + 1]) over q < Q, for R rows; constants after inlining. */
static inline __attribute__((always_inline)) void stream_pass(int32_t *const acc[STREAM_ROWS],
                                                              const int8_t *const brow[4],
                                                              const __m256i a[STREAM_ROWS][2], int64_t n16,
                                                              const int R, const int Q) {
    for (int64_t c = 0; c < n16; c += 16) {
        __m256i lo[2], hi[2];
        for (int q = 0; q < Q; q++) pairs16(brow[2 * q] + c, brow[2 * q + 1] ? brow[2 * q + 1] + c : NULL, &lo[q], &hi[q]);
        for (int r = 0; r < R; r++) {
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(acc[r] + c)),
                    x1 = _mm256_loadu_si256((const __m256i *)(acc[r] + c + 8));
            for (int q = 0; q < Q; q++) {
                x0 = _mm256_add_epi32(x0, _mm256_madd_epi16(a[r][q], lo[q]));
                x1 = _mm256_add_epi32(x1, _mm256_madd_epi16(a[r][q], hi[q]));
            }
            _mm256_storeu_si256((__m256i *)(acc[r] + c), x0);
            _mm256_storeu_si256((__m256i *)(acc[r] + c + 8), x1);
        }
    }
}

/* stream_pass for the run-time row count mr, four rows a group. */
static inline __attribute__((always_inline)) void stream_pass_rows(int32_t *const acc[STREAM_ROWS],
                                                                   const int8_t *const brow[4],
                                                                   const __m256i a[STREAM_ROWS][2], int64_t n16,
                                                                   int mr, const int Q) {
    int r0 = 0;
    for (; r0 + 4 <= mr; r0 += 4) stream_pass(acc + r0, brow, a + r0, n16, 4, Q);
    switch (mr - r0) {
    case 1: stream_pass(acc + r0, brow, a + r0, n16, 1, Q); break;
    case 2: stream_pass(acc + r0, brow, a + r0, n16, 2, Q); break;
    case 3: stream_pass(acc + r0, brow, a + r0, n16, 3, Q); break;
    default: break;
    }
}

/* Columns [jlo, jhi) of C for M <= STREAM_ROWS with row-major B: each row
 * of B read once, contiguously (the hardware prefetcher follows), four k
 * rows a pass over the sums (STREAM_ACC of them, in L1); a column tail
 * short of 16 in scalars. The whole K is summed before C is touched. */
static void stream_columns(const job *j, int64_t jlo, int64_t jhi) {
    const tsr_gemm_desc *d = j->d;
    const int mr = (int)d->m;
    _Alignas(32) int32_t sums[STREAM_ACC];
    const int64_t cols = STREAM_ACC / mr / 16 * 16;
    int32_t *acc[STREAM_ROWS];
    for (int r = 0; r < mr; r++) acc[r] = sums + r * cols;
    for (int64_t c0 = jlo; c0 < jhi; c0 += cols) {
        const int64_t nc = jhi - c0 < cols ? jhi - c0 : cols, n16 = nc / 16 * 16;
        for (int r = 0; r < mr; r++) memset(acc[r], 0, sizeof(int32_t) * (size_t)nc);
        for (int64_t p = 0; p < d->k; p += 4) {
            const int kb = (int)(d->k - p < 4 ? d->k - p : 4);
            const int8_t *brow[4];
            for (int i = 0; i < 4; i++) brow[i] = i < kb ? j->b + (p + i) * d->ldb + c0 : NULL;
            __m256i a[STREAM_ROWS][2];
            int8_t as[STREAM_ROWS][4];
            for (int r = 0; r < mr; r++) {
                for (int i = 0; i < 4; i++)
                    as[r][i] = i < kb ? j->a[d->trans_a ? (p + i) * d->lda + r : r * d->lda + p + i] : 0;
                for (int q = 0; q < 2; q++) a[r][q] = _mm256_set1_epi32((int)pair(as[r][2 * q], as[r][2 * q + 1]));
            }
            if (kb > 2) stream_pass_rows(acc, brow, (const __m256i(*)[2])a, n16, mr, 2);
            else stream_pass_rows(acc, brow, (const __m256i(*)[2])a, n16, mr, 1);
            for (int r = 0; r < mr; r++)
                for (int64_t c = n16; c < nc; c++) {
                    uint32_t t = (uint32_t)acc[r][c];
                    for (int i = 0; i < kb; i++) t += (uint32_t)(as[r][i] * brow[i][c]);
                    acc[r][c] = (int32_t)t;
                }
        }
        for (int r = 0; r < mr; r++)
            for (int64_t c = 0; c < nc; c++) {
                int32_t *cp = j->c + r * d->ldc + c0 + c;
                *cp = tsr_i8_combine(d, acc[r][c], *cp, true);
            }
    }
}

/* One matrix by the Goto loops, a team of nth sharing the packed buffers
 * ap (mc x kc) and bp (kc x nc). */
static void gemm_one(const job *j, uint32_t *ap, uint32_t *bp, int tid, int nth) {
    const tsr_gemm_desc *d = j->d;
    const int64_t M = d->m, N = d->n, K = d->k;
    /* equal blocks of at most nc columns and kc k (even): no thin last
     * block repacking A or paying a whole pass over C */
    const int64_t nblocks = (N + j->nc - 1) / j->nc, ncb = ((N + nblocks - 1) / nblocks + NR - 1) / NR * NR;
    const int64_t kblocks = (K + j->kc - 1) / j->kc, k2 = ((K + kblocks - 1) / kblocks + 1) / 2 * 2;
    const int64_t kcb = k2 < j->kc ? k2 : j->kc;
    for (int64_t jc = 0; jc < N; jc += ncb) {
        const int64_t ncur = N - jc < ncb ? N - jc : ncb, npanels = (ncur + NR - 1) / NR;
        for (int64_t pc = 0; pc < K; pc += kcb) {
            const int64_t kcur = K - pc < kcb ? K - pc : kcb, kq = (kcur + 1) / 2;
            for (int64_t jr = npanels * tid / nth; jr < npanels * (tid + 1) / nth; jr++) {
                const int64_t nr = ncur - jr * NR < NR ? ncur - jr * NR : NR;
                pack_b(j, pc, kcur, jc + jr * NR, nr, bp + jr * NR * kq);
            }
            tsr_team_barrier(nth);
            for (int64_t ic = 0; ic < M; ic += j->mc) {
                const int64_t mcur = M - ic < j->mc ? M - ic : j->mc, mpanels = (mcur + MR - 1) / MR;
                for (int64_t ir = tid; ir < mpanels; ir += nth) {
                    const int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    pack_a(j, ic + ir * MR, mr, pc, kcur, ap + ir * MR * kq);
                }
                tsr_team_barrier(nth);
                const int64_t t_lo = tsr_tile_split(ncur, npanels, mpanels, NR, 8, false, tid, nth),
                              t_hi = tsr_tile_split(ncur, npanels, mpanels, NR, 8, false, tid + 1, nth);
                for (int64_t t = t_lo; t < t_hi; t++) {
                    const int64_t jr = t / mpanels, ir = t % mpanels;
                    const int64_t nr = ncur - jr * NR < NR ? ncur - jr * NR : NR;
                    const int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    tsr_prefetch_tile((const char *)(j->c + (ic + ir * MR) * d->ldc + jc + jr * NR), d->ldc * 4, mr, nr * 4);
                    tile(j, kq, ap + ir * MR * kq, bp + jr * NR * kq, ic + ir * MR, mr, jc + jr * NR, nr, pc == 0);
                }
                /* before the buffers are repacked; after the last block the
                 * caller's barrier (or the team's end) does it */
                if (ic + j->mc < M || pc + kcb < K || jc + ncb < N) tsr_team_barrier(nth);
            }
        }
    }
}

static void run_matrices(const tsr_gemm_desc *d, const tsr_gemm_problem *g, int path, int64_t mc, int64_t kc,
                         int64_t nc, uint32_t *buf, int tid, int nth) {
    for (int64_t bt = 0; bt < d->batch; bt++) {
        const job j = {d, (const int8_t *)g->a + bt * d->stride_a, (const int8_t *)g->b + bt * d->stride_b,
                       (int32_t *)g->c + bt * d->stride_c, mc, kc, nc};
        if (d->k == 0) {
            if (tid == 0) tsr_i8_scale_only(d, j.c);
        } else if (path == PATH_DOT) {
            dot_columns(&j, d->n * tid / nth, d->n * (tid + 1) / nth);
        } else if (path == PATH_STREAM) { /* contiguous ranges of whole 16-column groups per thread */
            const int64_t groups = (d->n + 15) / 16, lo = groups * tid / nth * 16, hi = groups * (tid + 1) / nth * 16;
            stream_columns(&j, lo, hi < d->n ? hi : d->n);
        } else {
            gemm_one(&j, buf, buf + mc * ((kc + 1) / 2), tid, nth);
        }
        if (bt + 1 < d->batch) tsr_team_barrier(nth); /* the last one: the team's end */
    }
}

static tsr_status s8_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    const int path = tsr_i8_path_of(s->v[KNOB_PATH], dot_ok(d), stream_ok(d));
    int64_t kc = s->v[KNOB_KC];
    if (!tsr_i8_wrapping_sum(d) || d->k < kc) kc = d->k; /* one K block */
    kc = kc < 2 ? 2 : (kc + 1) / 2 * 2;
    const int64_t nc = ((d->n < s->v[KNOB_NC] ? d->n : s->v[KNOB_NC]) + NR - 1) / NR * NR;
    const int64_t mc = ((d->m < s->v[KNOB_MC] ? d->m : s->v[KNOB_MC]) + MR - 1) / MR * MR;
    const int nt = tsr_threads_for(ctx, 2.0 * (double)d->m * (double)d->n * (double)d->k * (double)d->batch, 1e6);
    const size_t words = path != PATH_PACKED ? 0 : (size_t)((mc + nc) * (kc / 2));
    uint32_t *buf = words ? tsr_scratch_get(words * sizeof(uint32_t)) : NULL;
    if (words && !buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, NAME ": no memory for packing buffers");
    if (nt == 1) { /* no parallel region: even a one-thread one costs a team */
        run_matrices(d, g, path, mc, kc, nc, buf, 0, 1);
    } else {
#pragma omp parallel num_threads(nt)
        run_matrices(d, g, path, mc, kc, nc, buf, omp_get_thread_num(), omp_get_num_threads());
    }
    tsr_scratch_put(buf);
    return TSR_OK;
}

const tsr_kernel tsr_gemm_x86_avx2_s8 = {
    .name = NAME,
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = "x86_avx2",
    .supports = s8_supports,
    .cpu_features = FEATURES,
    .num_knobs = (int)(sizeof s8_knobs / sizeof s8_knobs[0]),
    .knobs = s8_knobs,
    .default_schedule = s8_default,
    .schedule_valid = s8_valid,
    .run = s8_run,
};
