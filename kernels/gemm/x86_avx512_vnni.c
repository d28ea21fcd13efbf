/* int8 GEMM on AVX-512 VNNI: C(i32) = op(A)(s8) op(B)(s8), exact with
 * int32 wrap-around like the reference.
 *
 * vpdpbusd multiplies unsigned by signed bytes, four k at a time, into
 * int32 lanes. One operand is made unsigned by adding 128, and the
 * accumulators start at -128 times the other's sums: the packed and stream
 * paths take b + 128 and each row's sum of A over the K block, so
 * sum a (b + 128) - 128 sum a = sum a b; the dot path takes a + 128 and
 * B's column sums. All of it wraps modulo 2^32, so the result is exact
 * whenever the true sum fits in int32 and wraps as the reference does
 * otherwise.
 *
 * Three paths:
 *  - packed (Goto loops jc > pc > ic, 8 x 48 micro-tiles: 24 zmm
 *    accumulators, B panels interleaved by 4 k per column; row-major A
 *    with k % 4 == 0 read in place, its 4-byte groups broadcast from A
 *    itself, else A panels by 4 k per row; knob pack_a);
 *  - dot (M <= 16 with k-contiguous B, the x W^T decode shapes): rows of A
 *    against rows of B read in place, 64 k a step, so B streams through
 *    once without being packed; the column sums ride along as one more
 *    vpdpbusd per column;
 *  - stream (M <= 16 with row-major B): B read once in place, blocks of
 *    it interleaved by 4 k per column into an L1 buffer and made unsigned
 *    (b + 128), each vector then used by every row of A, broadcast from
 *    memory, with the rows' sums in registers (no packed copy of B).
 * alpha == 1 with beta 0 or 1 adds in wrapping int32 across K blocks; any
 * other alpha/beta needs the whole sum before rounding, so K is one block. */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx2/transpose.h"
#include "x86_int8.h"
#include "x86_tiles.h"
#include "internal.h"

#define MR 8
#define NV 3
#define NR (NV * 16)
/* columns a team's shares come in: vectors, as x86_blis.h's COL_UNIT */
#define COL_UNIT 16
#define FEATURES (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_AVX512VNNI)

static const int nc_values[] = {1008, 2016, 4032};
static const int onoff_values[] = {0, 1};
static const tsr_knob vnni_knobs[] = {TSR_I8_KNOB_ENTRIES(nc_values), {"pack_a", 2, onoff_values}};

static bool vnni_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    return tsr_i8_supports(p, "gemm.x86_avx512_vnni.s8", why, n);
}

static bool dot_ok(const tsr_gemm_desc *d) { return d->trans_b == TSR_TRANS && d->m <= 16; }

/* The stream path (M <= STREAM_ROWS, row-major B) interleaves blocks of
 * kb rows by w columns of B (STREAM_BLOCK bytes, in L1 or close) and keeps
 * M rows' int32 sums of w columns beside them. One or two rows are bound by
 * memory and want long runs of each row (w 2048); more rows are bound by
 * vpdpbusd and want each interleaved vector used over more k (kb 64).
 * One core, 4096 x 4096 B: 1 row 41 -> 46 GOP/s with w 2048, 16 rows 225
 * -> 277 with kb 64. */
enum { STREAM_ROWS = 16, STREAM_BLOCK = 32768, STREAM_SUMS = STREAM_ROWS * (512 + 16) * 4 };

static int64_t stream_width(int64_t m) { return m <= 2 ? 2048 : 512; }

static bool stream_ok(const tsr_gemm_desc *d) { return d->trans_b == TSR_NO_TRANS && d->m <= STREAM_ROWS; }

/* Whether the packed path can read A in place (pack_a 0): row-major, whole
 * groups of 4 k in every K block (blocks are multiples of 64). */
static bool can_skip_pack_a(const tsr_gemm_desc *d) { return !d->trans_a && d->k % 4 == 0; }

static void vnni_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)ctx;
    const tsr_gemm_desc *d = &p->u.gemm.d;
    s->v[KNOB_MC] = 192;
    /* Few rows: each packed B byte serves at most 16 of them, so the packed
     * block must stay in L2 between packing and use (16x4096x4096 NN 198 ->
     * 311 GOP/s, 4x4096x4096 62 -> 99). */
    const bool skinny = d->m <= 16;
    s->v[KNOB_KC] = skinny ? 512 : 2048;
    s->v[KNOB_NC] = skinny ? 1008 : 2016;
    /* few rows against row-major B: packing B would write as many bytes as
     * the GEMM reads, and its segments of each row are too short for the
     * hardware prefetcher (one core, 4096 x 4096 B, packed -> streamed:
     * 1 row 15 -> 45 GOP/s, 8 rows 87 -> 214, 16 rows 154 -> 268) */
    s->v[KNOB_PATH] = dot_ok(d) ? PATH_DOT : stream_ok(d) ? PATH_STREAM : PATH_PACKED;
    /* A read in place: each tile broadcasts its rows' 4-byte groups from A
     * itself, so no packing pass; the row sums for B's + 128 take one pass
     * of vpdpbusd. Zen 4, one thread, alternated: 256^3 406 -> 426 GOP/s,
     * 512^3 432 -> 440, 1024^3 439 -> 443; two threads moved within the
     * VM's noise. Rows 4096 bytes apart share one L1 set, a tile's 8 rows
     * all its ways: 4096^3 lost 0.4% on one thread, so it packs. */
    s->v[KNOB_PACK_A] = !can_skip_pack_a(d) || d->lda % 4096 == 0;
}

static bool vnni_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    if (s->v[KNOB_MC] % MR || s->v[KNOB_NC] % NR || s->v[KNOB_KC] % 64) return false;
    if (!s->v[KNOB_PACK_A] && !can_skip_pack_a(&p->u.gemm.d)) return false;
    return tsr_i8_path_valid(s->v[KNOB_PATH], dot_ok(&p->u.gemm.d), stream_ok(&p->u.gemm.d));
}

/* acc += x . y on four bytes a lane, x unsigned and y signed. In asm
 * because GCC 12 copies the accumulator around the intrinsic and spills the
 * tile to the stack. */
static inline __m512i dpbusd(__m512i acc, __m512i x_u8, __m512i y_s8) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x_u8), "v"(y_s8));
    return acc;
}

typedef struct job {
    const tsr_gemm_desc *d;
    const int8_t *a, *b;
    int32_t *c;
    int64_t mc, kc, nc; /* kc: a multiple of 4 */
    const int8_t *a_rows; /* dot path: op(A) row-major, a_ld apart */
    int64_t a_ld;
    bool packs_a; /* packed path: A packed, else read in place (can_skip_pack_a) */
    bool fetch_b; /* dot path, one row: B past the caches, each tile's rows fetched into L2 by the one before */
} job;

static inline int8_t a_at(const job *j, int64_t i, int64_t p) {
    return j->a[j->d->trans_a ? p * j->d->lda + i : i * j->d->lda + p];
}

/* -128 times the sums of rows [0, MR) of an A panel over its groups of 4
 * k (dst[(q * MR + i) * 4 + r]): the correction for B's + 128. */
static void panel_negsums(const int8_t *panel, int64_t groups, int32_t *negsum) {
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i sum = _mm512_setzero_si512(); /* lane 8h + i: row i's groups 2t + h */
    int64_t q = 0;
    for (; q + 2 <= groups; q += 2) sum = dpbusd(sum, ones, _mm512_loadu_si512(panel + q * MR * 4));
    if (q < groups) sum = dpbusd(sum, ones, _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(panel + q * MR * 4))));
    const __m256i rows = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
    _mm256_storeu_si256((__m256i *)negsum, _mm256_mullo_epi32(rows, _mm256_set1_epi32(-128)));
}

/* -128 times the sums of rows [i0, i0+mr) of A read in place (row-major),
 * k in [p0, p0+kc); rows from mr to MR get 0. */
static void inplace_negsums(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, int32_t *negsum) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t i = 0; i < MR; i++) {
        if (i >= mr) {
            negsum[i] = 0;
            continue;
        }
        const int8_t *row = j->a + (i0 + i) * j->d->lda + p0;
        __m512i sum = _mm512_setzero_si512();
        int64_t p = 0;
        for (; p + 64 <= kc; p += 64) sum = dpbusd(sum, ones, _mm512_loadu_si512(row + p));
        if (p < kc) sum = dpbusd(sum, ones, _mm512_maskz_loadu_epi8(((__mmask64)1 << (kc - p)) - 1, row + p));
        negsum[i] = (int32_t)((uint32_t)_mm512_reduce_add_epi32(sum) * (uint32_t)-128);
    }
}

/* Rows [i0, i0+mr) of A, k in [p0, p0+kc) (kc4 = kc rounded up to 4), in
 * groups of 4 k per row: dst[(q * MR + i) * 4 + r], zeros past mr and kc;
 * then their negsums (panel_negsums). */
static void pack_a(const job *j, int64_t i0, int64_t mr, int64_t p0, int64_t kc, int64_t kc4, int8_t *dst,
                   int32_t *negsum) {
    const tsr_gemm_desc *d = j->d;
    int64_t p32 = 0;
    if (!d->trans_a && d->lda % 4 == 0) { /* 8 rows x 32 k per 8x8 transpose of 4-byte groups */
        p32 = kc / 32 * 32;
        const int8_t *src = j->a + i0 * d->lda + p0;
        for (int64_t p = 0; p < p32; p += 32) tsr_transpose8x8(src + p, d->lda / 4, (int)mr, dst + p * MR, MR, MR);
    }
    for (int64_t i = 0; i < MR; i++)
        for (int64_t p = p32; p < kc4; p += 4) {
            int8_t *out = dst + ((p / 4) * MR + i) * 4;
            if (i < mr && !d->trans_a && p + 4 <= kc) {
                memcpy(out, j->a + (i0 + i) * d->lda + p0 + p, 4);
                continue;
            }
            for (int r = 0; r < 4; r++) out[r] = i < mr && p + r < kc ? a_at(j, i0 + i, p0 + p + r) : 0;
        }
    panel_negsums(dst, kc4 / 4, negsum);
}

/* The NR columns of 4 rows of B (row-major, ld apart, from r0) interleaved
 * to 4 k per column: NV vectors of 16 columns at out. Columns outside the
 * mask and rows from `rows` on read as zeros. The byte and word unpacks
 * work within 128-bit lanes (lane L of u[q] holds columns 16L + 4q .. + 3),
 * so the lanes are transposed 4 x 4 after: 4 loads and 14 shuffles for the
 * panel's 3 vectors, where one 128-bit unpack chain per vector took 45
 * (int8 256^3: pack_b had 8.6% of the call). */
static inline void interleave4_panel(const int8_t *r0, int64_t ld, __mmask64 m, int rows, uint8_t *out) {
    const __m512i z = _mm512_setzero_si512(), bias = _mm512_set1_epi8((char)0x80);
    const __m512i x0 = _mm512_maskz_loadu_epi8(m, r0), x1 = rows > 1 ? _mm512_maskz_loadu_epi8(m, r0 + ld) : z;
    const __m512i x2 = rows > 2 ? _mm512_maskz_loadu_epi8(m, r0 + 2 * ld) : z;
    const __m512i x3 = rows > 3 ? _mm512_maskz_loadu_epi8(m, r0 + 3 * ld) : z;
    const __m512i t0 = _mm512_unpacklo_epi8(x0, x1), t1 = _mm512_unpackhi_epi8(x0, x1);
    const __m512i t2 = _mm512_unpacklo_epi8(x2, x3), t3 = _mm512_unpackhi_epi8(x2, x3);
    const __m512i u0 = _mm512_unpacklo_epi16(t0, t2), u1 = _mm512_unpackhi_epi16(t0, t2);
    const __m512i u2 = _mm512_unpacklo_epi16(t1, t3), u3 = _mm512_unpackhi_epi16(t1, t3);
    /* lanes 0-1 of u0..u3 (a, b), then lanes 2 (c, d): vector v is lane v of each u */
    const __m512i a = _mm512_shuffle_i32x4(u0, u1, 0x44), b = _mm512_shuffle_i32x4(u2, u3, 0x44);
    const __m512i c = _mm512_shuffle_i32x4(u0, u1, 0xee), d = _mm512_shuffle_i32x4(u2, u3, 0xee);
    _Static_assert(NV == 3, "a panel is lanes 0-2 of the transpose");
    _mm512_storeu_si512(out, _mm512_xor_si512(_mm512_shuffle_i32x4(a, b, 0x88), bias));
    _mm512_storeu_si512(out + 64, _mm512_xor_si512(_mm512_shuffle_i32x4(a, b, 0xdd), bias));
    _mm512_storeu_si512(out + 128, _mm512_xor_si512(_mm512_shuffle_i32x4(c, d, 0x88), bias));
}

/* Columns [j0, j0+nr) of B, k in [p0, p0+kc), plus 128, in groups of 4 k
 * per column: dst[(q * NR + c) * 4 + r], 128 past kc and nr. */
static void pack_b(const job *j, int64_t p0, int64_t kc, int64_t kc4, int64_t j0, int64_t nr, uint8_t *dst) {
    const tsr_gemm_desc *d = j->d;
    int64_t p = 0;
    if (d->trans_b && d->ldb % 4 == 0) { /* B stored n x k: 8 columns x 32 k per 8x8 transpose of 4-byte groups */
        const int64_t k32 = kc / 32 * 32;
        for (int64_t c = 0; c < NR; c += 8) {
            const int rows = nr - c <= 0 ? 0 : nr - c < 8 ? (int)(nr - c) : 8; /* 0: padding columns of zeros */
            const int8_t *src = rows ? j->b + (j0 + c) * d->ldb + p0 : j->b;
            for (int64_t q = 0; q < k32; q += 32) tsr_transpose8x8(src + q, d->ldb / 4, rows, dst + (q / 4 * NR + c) * 4, NR, 8);
        }
        p = k32;
    }
    for (; p < kc4; p += 4) {
        uint8_t *out = dst + (p / 4) * NR * 4;
        const bool full_k = p + 4 <= kc;
        if (!d->trans_b) {
            const int8_t *src = j->b + (p0 + p) * d->ldb + j0;
            const int rows = full_k ? 4 : (int)(kc - p); /* the last group of an odd kc */
            interleave4_panel(src, d->ldb, ((__mmask64)1 << nr) - 1, rows, out);
            continue;
        }
        for (int64_t c = 0; c < NR; c++) {
            if (c < nr && d->trans_b && full_k) {
                memcpy(out + c * 4, j->b + (j0 + c) * d->ldb + p0 + p, 4);
                continue;
            }
            for (int r = 0; r < 4; r++) {
                int64_t k = p0 + p + r;
                out[c * 4 + r] = (uint8_t)(c < nr && p + r < kc ? j->b[(j0 + c) * d->ldb + k] : 0);
            }
        }
    }
    if (d->trans_b) { /* interleaved as they lie; row-major B's interleave adds 128 itself */
        const __m512i bias = _mm512_set1_epi8((char)0x80);
        for (int64_t b = 0; b < kc4 * NR; b += 64) _mm512_storeu_si512(dst + b, _mm512_xor_si512(_mm512_loadu_si512(dst + b), bias));
    }
}

/* acc = -128 rowsum(A) + A (B + 128) over `groups` groups of 4 k: A's row
 * i at a + i * a_rs, consecutive groups a_step apart (a packed panel 4 and
 * MR * 4, A in place lda and 4; rows past mr repeat the last), negsum its
 * rows' corrections. */
static inline __attribute__((always_inline)) void micro_kernel(const int nv, int64_t groups, const int8_t *restrict a,
                                                               int64_t a_rs, int64_t a_step, int64_t mr,
                                                               const int32_t *negsum, const uint8_t *restrict bp,
                                                               __m512i acc[MR][NV]) {
    const int8_t *rows[MR];
    __m512i c[MR][NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        rows[i] = a + (i < mr ? i : mr - 1) * a_rs;
        const __m512i s = _mm512_set1_epi32(negsum[i]);
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) c[i][v] = s;
    }
    for (int64_t q = 0; q < groups; q++) {
        __m512i b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) b[v] = _mm512_loadu_si512(bp + (q * NR + v * 16) * 4);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            int32_t group; /* A in place: at any byte */
            memcpy(&group, rows[i] + q * a_step, 4);
            const __m512i x = _mm512_set1_epi32(group);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) c[i][v] = dpbusd(c[i][v], b[v], x);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = c[i][v];
}

/* The tile's sums into C: the first K block sets (adding C when beta is
 * 1), later blocks add; alpha/beta other than 1 and 0/1 (one K block) are
 * applied per element. */
static void store_tile(const job *j, __m512i acc[MR][NV], int64_t i0, int64_t mr, int64_t j0, int64_t nr,
                       bool first) {
    const tsr_gemm_desc *d = j->d;
    const bool add_c = !first || d->beta == 1.0f;
    for (int64_t i = 0; i < mr; i++) {
        int32_t *crow = j->c + (i0 + i) * d->ldc + j0;
        for (int v = 0; v < NV && v * 16 < nr; v++) {
            const int64_t left = nr - v * 16;
            const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            if (!tsr_i8_wrapping_sum(d)) {
                int32_t t[16];
                _mm512_storeu_si512(t, acc[i][v]);
                for (int64_t c = 0; c < (left < 16 ? left : 16); c++) crow[v * 16 + c] = tsr_i8_scaled(d, t[c], crow[v * 16 + c]);
                continue;
            }
            __m512i r = acc[i][v];
            if (add_c) r = _mm512_add_epi32(r, _mm512_maskz_loadu_epi32(m, crow + v * 16));
            _mm512_mask_storeu_epi32(crow + v * 16, m, r);
        }
    }
}

/* The common tile (all MR rows, nv whole vectors, sums that wrap) stored
 * from the registers: through store_tile the accumulators make a stack
 * round trip of 64-byte loads the store buffer cannot forward. */
static inline __attribute__((always_inline)) bool store_tile_regs(const job *j, __m512i acc[MR][NV], const int nv,
                                                                  int64_t i0, int64_t mr, int64_t j0, int64_t nr,
                                                                  bool first) {
    const tsr_gemm_desc *d = j->d;
    if (!tsr_i8_wrapping_sum(d) || mr != MR || nr != nv * 16) return false;
    const bool add_c = !first || d->beta == 1.0f;
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        int32_t *crow = j->c + (i0 + i) * d->ldc + j0;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            __m512i r = acc[i][v];
            if (add_c) r = _mm512_add_epi32(r, _mm512_loadu_si512(crow + v * 16));
            _mm512_storeu_si512(crow + v * 16, r);
        }
    }
    return true;
}

/* One tile: the micro-kernel on the vectors its nr columns need (a ragged
 * last panel would spend most of its vpdpbusd on padding), then the store. */
static inline __attribute__((always_inline)) void tile_nv(const int nv, const job *j, int64_t groups,
                                                          const int8_t *restrict a, int64_t a_rs, int64_t a_step,
                                                          const int32_t *negsum, const uint8_t *restrict bp,
                                                          int64_t i0, int64_t mr, int64_t j0, int64_t nr, bool first) {
    __m512i acc[MR][NV];
    micro_kernel(nv, groups, a, a_rs, a_step, mr, negsum, bp, acc);
    if (store_tile_regs(j, acc, nv, i0, mr, j0, nr, first)) return;
    __m512i spill[MR][NV]; /* a copy: acc's own address would keep it in memory in every tile */
    memcpy(spill, acc, sizeof spill);
    store_tile(j, spill, i0, mr, j0, nr, first);
}

static void tile(const job *j, int64_t groups, const int8_t *restrict a, int64_t a_rs, int64_t a_step,
                 const int32_t *negsum, const uint8_t *restrict bp, int64_t i0, int64_t mr, int64_t j0, int64_t nr,
                 bool first) {
    if (nr <= 16) tile_nv(1, j, groups, a, a_rs, a_step, negsum, bp, i0, mr, j0, nr, first);
    else if (nr <= 32) tile_nv(2, j, groups, a, a_rs, a_step, negsum, bp, i0, mr, j0, nr, first);
    else tile_nv(NV, j, groups, a, a_rs, a_step, negsum, bp, i0, mr, j0, nr, first);
}

static int32_t hsum(__m512i v) { return _mm512_reduce_add_epi32(v); }

enum { DOT_MAX_ROWS = 4, DOT_MAX_COLS = 8 };

/* A single row against B stored n x k (decode) reads B once, from memory
 * past the L3: each row of B is a stream of its own, a new page every
 * 4 KiB at K = 4096, and the hardware prefetchers start over on each. The
 * next tile's eight rows are fetched into L2 as the tile runs. Zen 5, two
 * threads, 4 rounds alternated against oneDNN: Llama's 11008 and 14336 x
 * 4096 layers (45-59 MB) 0.69-0.76x -> 0.88-0.98x (into L1, one run:
 * 0.92-1.04x; NTA, 4 rounds: 0.80-1.04x). Only past 16 MiB (vf_streams'
 * bound): 4096 x 4096 (16 MiB, in L3) read 0.90x -> 0.80x with the fetch
 * in one A/B, though it moved 0.97x -> 0.87x in another without it. */
enum { DOT_FETCH_BYTES = 16 << 20 };

/* Rows [i0, i0+mr) x columns [j0, j0+nr) of C for B stored n x k: an R x CC
 * tile (constants after inlining) of rows of op(A) (row-major in j->a_rows,
 * as a + 128) against rows of B, 64 k a step, masked tail. */
static inline __attribute__((always_inline)) void dot_tile(const job *j, int64_t i0, int mr, int64_t j0, int nr,
                                                           int64_t jhi, const int R, const int CC, const bool fetch) {
    const tsr_gemm_desc *d = j->d;
    const int64_t K = d->k;
    const __m512i bias = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(1);
    const int8_t *brow[DOT_MAX_COLS], *arow[DOT_MAX_ROWS];
    for (int c = 0; c < CC; c++) brow[c] = j->b + (j0 + (c < nr ? c : 0)) * d->ldb;
    const int8_t *bnext[DOT_MAX_COLS]; /* the next tile's rows, the last row past jhi's end */
    if (fetch)
        for (int c = 0; c < CC; c++) bnext[c] = j->b + (j0 + CC + c < jhi ? j0 + CC + c : jhi - 1) * d->ldb;
    for (int r = 0; r < R; r++) arow[r] = j->a_rows + (i0 + (r < mr ? r : 0)) * j->a_ld;
    __m512i acc[DOT_MAX_ROWS][DOT_MAX_COLS], sum[DOT_MAX_COLS];
    for (int c = 0; c < CC; c++) {
        sum[c] = _mm512_setzero_si512();
        for (int r = 0; r < R; r++) acc[r][c] = _mm512_setzero_si512();
    }
    for (int64_t p = 0; p < K; p += 64) {
        const __mmask64 m = K - p >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (K - p)) - 1);
        __m512i b[DOT_MAX_COLS];
        for (int c = 0; c < CC; c++) {
            b[c] = _mm512_maskz_loadu_epi8(m, brow[c] + p);
            sum[c] = dpbusd(sum[c], ones, b[c]);
            if (fetch) tsr_prefetch_l2(bnext[c] + p);
        }
        for (int r = 0; r < R; r++) {
            /* padding lanes: a + 128 over b = 0 adds nothing */
            const __m512i a = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, arow[r] + p), bias);
            for (int c = 0; c < CC; c++) acc[r][c] = dpbusd(acc[r][c], a, b[c]);
        }
    }
    /* reduced with constant indices, so the tile stays in registers */
    uint32_t tot[DOT_MAX_ROWS][DOT_MAX_COLS], neg[DOT_MAX_COLS];
    for (int c = 0; c < CC; c++) {
        neg[c] = (uint32_t)hsum(sum[c]) * (uint32_t)-128;
        for (int r = 0; r < R; r++) tot[r][c] = (uint32_t)hsum(acc[r][c]);
    }
    for (int c = 0; c < nr; c++) {
        for (int r = 0; r < mr; r++) {
            int32_t *cp = j->c + (i0 + r) * d->ldc + j0 + c;
            int32_t s = (int32_t)(tot[r][c] + neg[c]);
            *cp = tsr_i8_combine(d, s, *cp, true);
        }
    }
}

/* Columns [jlo, jhi) for M <= 16 with B stored n x k: 4 x 4 tiles, or for
 * a single row (decode) 1 x 8, so that no vpdpbusd works on a duplicated
 * row. B streams through once, unpacked; its column sums ride along as one
 * more vpdpbusd per column. */
static void dot_columns(const job *j, int64_t jlo, int64_t jhi) {
    const int64_t M = j->d->m;
    if (M == 1) {
        for (int64_t j0 = jlo; j0 < jhi; j0 += 8) {
            const int nr = (int)(jhi - j0 < 8 ? jhi - j0 : 8);
            if (j->fetch_b) dot_tile(j, 0, 1, j0, nr, jhi, 1, 8, true);
            else dot_tile(j, 0, 1, j0, nr, jhi, 1, 8, false);
        }
        return;
    }
    for (int64_t j0 = jlo; j0 < jhi; j0 += 4)
        for (int64_t i0 = 0; i0 < M; i0 += 4)
            dot_tile(j, i0, (int)(M - i0 < 4 ? M - i0 : 4), j0, (int)(jhi - j0 < 4 ? jhi - j0 : 4), jhi, 4, 4, false);
}

/* One matrix by a team: B panels of the (jc, pc) block and A panels (or
 * A's row sums, A read in place) of each ic block made cooperatively, then
 * the tiles in contiguous ranges per thread. ap holds mc rows of kc bytes,
 * then mc int32 negsums. */
static void gemm_one(const job *j, int8_t *ap, uint8_t *bp, int tid, int nth) {
    const tsr_gemm_desc *d = j->d;
    const int64_t M = d->m, N = d->n, K = d->k;
    const bool in_place = !j->packs_a;
    int32_t *const negsum = (int32_t *)(void *)(ap + j->mc * j->kc);
    const size_t bpanel = (size_t)(j->kc * NR);
    /* Equal blocks of at most nc columns and kc k (multiples of 64): no thin
     * last block repacking A or paying a whole pass over C. */
    const int64_t nblocks = (N + j->nc - 1) / j->nc, ncb = ((N + nblocks - 1) / nblocks + NR - 1) / NR * NR;
    const int64_t kblocks = (K + j->kc - 1) / j->kc, k64 = ((K + kblocks - 1) / kblocks + 63) / 64 * 64;
    const int64_t kcb = k64 < j->kc ? k64 : j->kc;
    for (int64_t jc = 0; jc < N; jc += ncb) {
        const int64_t ncur = N - jc < ncb ? N - jc : ncb, npanels = (ncur + NR - 1) / NR;
        for (int64_t pc = 0; pc < K; pc += kcb) {
            const int64_t kcur = K - pc < kcb ? K - pc : kcb, kc4 = (kcur + 3) / 4 * 4;
            for (int64_t jr = npanels * tid / nth; jr < npanels * (tid + 1) / nth; jr++) {
                int64_t nr;
                const int64_t j0 = jc + tsr_panel_cols(ncur, NV, 16, jr, &nr);
                pack_b(j, pc, kcur, kc4, j0, nr, bp + (size_t)jr * bpanel);
            }
            tsr_team_barrier(nth);
            for (int64_t ic = 0; ic < M; ic += j->mc) {
                const int64_t mcur = M - ic < j->mc ? M - ic : j->mc, mpanels = (mcur + MR - 1) / MR;
                for (int64_t ir = tid; ir < mpanels; ir += nth) {
                    int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    if (in_place) inplace_negsums(j, ic + ir * MR, mr, pc, kcur, negsum + ir * MR);
                    else pack_a(j, ic + ir * MR, mr, pc, kcur, kc4, ap + ir * MR * kc4, negsum + ir * MR);
                }
                tsr_team_barrier(nth);
                const int64_t t_lo = tsr_tile_split(ncur, npanels, mpanels, NR, 16, false, tid, nth),
                              t_hi = tsr_tile_split(ncur, npanels, mpanels, NR, 16, false, tid + 1, nth);
                for (int64_t t = t_lo; t < t_hi; t++) {
                    const int64_t jr = t / mpanels, ir = t % mpanels;
                    int64_t nr;
                    const int64_t j0 = jc + tsr_panel_cols(ncur, NV, 16, jr, &nr);
                    const int64_t mr = mcur - ir * MR < MR ? mcur - ir * MR : MR;
                    tsr_prefetch_tile((const char *)(j->c + (ic + ir * MR) * d->ldc + j0), d->ldc * 4, mr, nr * 4);
                    if (in_place)
                        tile(j, kc4 / 4, j->a + (ic + ir * MR) * d->lda + pc, d->lda, 4, negsum + ir * MR,
                             bp + (size_t)jr * bpanel, ic + ir * MR, mr, j0, nr, pc == 0);
                    else
                        tile(j, kc4 / 4, ap + ir * MR * kc4, 4, MR * 4, negsum + ir * MR, bp + (size_t)jr * bpanel,
                             ic + ir * MR, mr, j0, nr, pc == 0);
                }
                /* before the buffers are repacked; after the last block the
                 * caller's barrier (or the team's end) does it */
                if (ic + j->mc < M || pc + kcb < K || jc + ncb < N) tsr_team_barrier(nth);
            }
        }
    }
}

/* kb rows of B from p0 (row-major, columns [c0, c0+w)) interleaved to four k per
 * column and made unsigned (b + 128): vector v of group g at
 * blk + (g * nv + v) * 64. The byte and word unpacks work within 128-bit
 * lanes, so dword 4L + e of vector 4h + q holds column 64h + 16L + 4q + e.
 * Rows past K read as zero (their A bytes are zero too); columns past w
 * are never stored. */
static void stream_interleave(const job *j, int64_t p0, int kb, int64_t c0, int64_t w, int nv, char *blk) {
    const int64_t ldb = j->d->ldb;
    const __m512i z = _mm512_setzero_si512(), bias = _mm512_set1_epi8((char)0x80);
    for (int g = 0; g * 4 < kb; g++) {
        const int8_t *b0 = j->b + (p0 + 4 * g) * ldb + c0;
        const int rows = kb - 4 * g < 4 ? kb - 4 * g : 4;
        for (int64_t h = 0; h * 64 < w; h++) {
            const __mmask64 m = w - h * 64 >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (w - h * 64)) - 1);
            const int8_t *src = b0 + h * 64;
            const __m512i r0 = _mm512_maskz_loadu_epi8(m, src);
            const __m512i r1 = rows > 1 ? _mm512_maskz_loadu_epi8(m, src + ldb) : z;
            const __m512i r2 = rows > 2 ? _mm512_maskz_loadu_epi8(m, src + 2 * ldb) : z;
            const __m512i r3 = rows > 3 ? _mm512_maskz_loadu_epi8(m, src + 3 * ldb) : z;
            const __m512i lo01 = _mm512_unpacklo_epi8(r0, r1), hi01 = _mm512_unpackhi_epi8(r0, r1);
            const __m512i lo23 = _mm512_unpacklo_epi8(r2, r3), hi23 = _mm512_unpackhi_epi8(r2, r3);
            char *out = blk + ((int64_t)g * nv + h * 4) * 64;
            _mm512_store_si512(out, _mm512_xor_si512(_mm512_unpacklo_epi16(lo01, lo23), bias));
            _mm512_store_si512(out + 64, _mm512_xor_si512(_mm512_unpackhi_epi16(lo01, lo23), bias));
            _mm512_store_si512(out + 128, _mm512_xor_si512(_mm512_unpacklo_epi16(hi01, hi23), bias));
            _mm512_store_si512(out + 192, _mm512_xor_si512(_mm512_unpackhi_epi16(hi01, hi23), bias));
        }
    }
}

/* Columns [jlo, jhi) of C for M <= STREAM_ROWS with row-major B, A given
 * row-major as signed bytes with K padded to a multiple of 4 by zeros
 * (a_rows, a_ld) and -128 times each row's sum (negsum); area: this
 * thread's STREAM_BLOCK + STREAM_SUMS bytes. B is read once, in place:
 * each block of kb rows by w columns is interleaved (the next one fetched
 * into L2 meanwhile: each row's segment starts a new page, where the
 * hardware prefetcher stops), then each vector of it adds into the M rows'
 * sums, held in registers over the block's k; sums of (b + 128) a -
 * 128 sum a = sum a b, wrapping. */
static void stream_columns(const job *j, const int32_t *negsum, int64_t jlo, int64_t jhi, char *area) {
    const tsr_gemm_desc *d = j->d;
    const int M = (int)d->m;
    const int64_t K = d->k, ldb = d->ldb, sw = stream_width(M), skb = STREAM_BLOCK / sw;
    const int64_t ls = sw + 16; /* the sums' rows an odd number of lines apart */
    char *blk = area;
    int32_t *sums = (int32_t *)(void *)(area + STREAM_BLOCK);
    const uint8_t *A = (const uint8_t *)j->a_rows;
    for (int64_t c0 = jlo; c0 < jhi; c0 += sw) {
        const int64_t w = jhi - c0 < sw ? jhi - c0 : sw;
        const int nv = (int)((w + 63) / 64 * 4);
        for (int64_t p0 = 0; p0 < K; p0 += skb) {
            const int kb = (int)(K - p0 < skb ? K - p0 : skb);
            tsr_stream_prefetch_next((const char *)j->b, ldb, 1, K, p0, skb, c0, sw, jhi);
            stream_interleave(j, p0, kb, c0, w, nv, blk);
            tsr_stream_block(M, TSR_STREAM_I8, (kb + 3) / 4, nv, blk, (const char *)A + p0, j->a_ld, p0 == 0, sums, ls);
        }
        for (int r = 0; r < M; r++) {
            int32_t *crow = j->c + r * d->ldc + c0;
            const __m512i neg = _mm512_set1_epi32(negsum[r]);
            for (int64_t h = 0; h * 64 < w; h++) { /* back to column order: a 4 x 4 transpose of 128-bit blocks */
                const int32_t *s = sums + r * ls + h * 64;
                const __m512i v0 = _mm512_load_si512(s), v1 = _mm512_load_si512(s + 16);
                const __m512i v2 = _mm512_load_si512(s + 32), v3 = _mm512_load_si512(s + 48);
                const __m512i t0 = _mm512_shuffle_i32x4(v0, v1, 0x44), t1 = _mm512_shuffle_i32x4(v0, v1, 0xEE);
                const __m512i t2 = _mm512_shuffle_i32x4(v2, v3, 0x44), t3 = _mm512_shuffle_i32x4(v2, v3, 0xEE);
                const __m512i o[4] = {_mm512_shuffle_i32x4(t0, t2, 0x88), _mm512_shuffle_i32x4(t0, t2, 0xDD),
                                      _mm512_shuffle_i32x4(t1, t3, 0x88), _mm512_shuffle_i32x4(t1, t3, 0xDD)};
                for (int q = 0; q < 4 && h * 64 + q * 16 < w; q++) {
                    const int64_t left = w - h * 64 - q * 16;
                    const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
                    int32_t *cp = crow + h * 64 + q * 16;
                    __m512i x = _mm512_add_epi32(o[q], neg);
                    if (!tsr_i8_wrapping_sum(d)) {
                        int32_t t[16];
                        _mm512_storeu_si512(t, x);
                        for (int e = 0; e < (left < 16 ? left : 16); e++) cp[e] = tsr_i8_scaled(d, t[e], cp[e]);
                        continue;
                    }
                    if (d->beta == 1.0f) x = _mm512_add_epi32(x, _mm512_maskz_loadu_epi32(m, cp));
                    _mm512_mask_storeu_epi32(cp, m, x);
                }
            }
        }
    }
}

/* The stream path's rows of A are an odd number of cache lines apart: at
 * 4 KiB apart its 16 rows' broadcasts would share one L1 set. */
static int64_t stream_a_ld(int64_t k) { return ((k + 3) / 4 * 4 + 63) / 64 * 64 + 64; }

/* The stream path's buffer: -128 times the rows' sums (64 bytes), the rows
 * of A, then each thread's block and sums. */
static size_t stream_area_offset(const tsr_gemm_desc *d) {
    return 64 + ((size_t)(d->m * stream_a_ld(d->k)) + 63) / 64 * 64;
}

/* Row i of op(A) for the stream path: signed bytes with K padded by zeros
 * to k4 (dst, ld apart), and -128 times its sum. */
static void stream_row_of_a(const job *j, int64_t i, int64_t k4, int64_t ld, int8_t *dst, int32_t *negsum) {
    const tsr_gemm_desc *d = j->d;
    int8_t *row = dst + i * ld;
    if (!d->trans_a) memcpy(row, j->a + i * d->lda, (size_t)d->k);
    else
        for (int64_t p = 0; p < d->k; p++) row[p] = j->a[p * d->lda + i];
    memset(row + d->k, 0, (size_t)(k4 - d->k));
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i sum = _mm512_setzero_si512();
    for (int64_t p = 0; p < k4; p += 64) {
        const __mmask64 m = k4 - p >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k4 - p)) - 1);
        sum = dpbusd(sum, ones, _mm512_maskz_loadu_epi8(m, row + p));
    }
    negsum[i] = (int32_t)((uint32_t)hsum(sum) * (uint32_t)-128);
}

/* Every matrix of the batch, by thread tid of a team of nth, with the
 * shared buffer buf (abuf bytes of A panels, then B's); split (a team of
 * the nth it was sized for): each thread's own part of it, abuf + bbuf
 * bytes. */
static void run_matrices(const tsr_gemm_desc *d, const tsr_gemm_problem *g, int path, bool packs_a, int64_t mc,
                         int64_t kc, int64_t nc, char *buf, size_t abuf, size_t bbuf, int split, int tid, int nth) {
    for (int64_t bt = 0; bt < d->batch; bt++) {
        job j = {d, (const int8_t *)g->a + bt * d->stride_a, (const int8_t *)g->b + bt * d->stride_b,
                 (int32_t *)g->c + bt * d->stride_c, mc, kc, nc, NULL, d->lda, packs_a,
                 d->m == 1 && d->n * d->ldb > DOT_FETCH_BYTES};
        j.a_rows = j.a;
        if (d->k == 0) {
            if (tid == 0) tsr_i8_scale_only(d, j.c);
        } else if (path == PATH_DOT) {
            if (d->trans_a) {
                for (int64_t i = tid; i < d->m; i += nth)
                    for (int64_t p = 0; p < d->k; p++) buf[i * d->k + p] = (char)a_at(&j, i, p);
                tsr_team_barrier(nth);
                j.a_rows = (const int8_t *)buf, j.a_ld = d->k;
            }
            const int64_t lo = d->n * tid / nth, hi = d->n * (tid + 1) / nth;
            dot_columns(&j, lo, hi);
        } else if (path == PATH_STREAM) { /* contiguous ranges of whole 64-column groups per thread */
            const int64_t k4 = (d->k + 3) / 4 * 4, ld = stream_a_ld(d->k);
            int32_t *negsum = (int32_t *)(void *)buf;
            for (int64_t i = tid; i < d->m; i += nth) stream_row_of_a(&j, i, k4, ld, (int8_t *)buf + 64, negsum);
            tsr_team_barrier(nth);
            j.a_rows = (const int8_t *)buf + 64, j.a_ld = ld;
            const int64_t groups = (d->n + 63) / 64, lo = groups * tid / nth * 64, hi = groups * (tid + 1) / nth * 64;
            char *area = buf + stream_area_offset(d) + (size_t)tid * (STREAM_BLOCK + STREAM_SUMS);
            stream_columns(&j, negsum, lo, hi < d->n ? hi : d->n, area);
        } else if (split != TSR_SPLIT_NONE) { /* columns or rows [lo, hi) as a matrix of their own */
            const bool cols = split == TSR_SPLIT_COLUMNS;
            int64_t lo, hi;
            tsr_split_range(cols ? d->n : d->m, cols ? COL_UNIT : MR, tid, nth, &lo, &hi);
            tsr_gemm_desc share = *d;
            job js = j;
            js.d = &share;
            if (cols) share.n = hi - lo, js.b = j.b + (d->trans_b ? lo * d->ldb : lo), js.c = j.c + lo;
            else share.m = hi - lo, js.a = js.a_rows = j.a + (d->trans_a ? lo : lo * d->lda), js.c = j.c + lo * d->ldc;
            char *own = buf + (size_t)tid * (abuf + bbuf);
            if (hi > lo) gemm_one(&js, (int8_t *)own, (uint8_t *)(own + abuf), 0, 1);
            continue; /* nothing shared: no barrier before the next matrix */
        } else {
            gemm_one(&j, (int8_t *)buf, (uint8_t *)(buf + abuf), tid, nth);
        }
        if (bt + 1 < d->batch) tsr_team_barrier(nth); /* the last one: the team's end */
    }
}

static tsr_status vnni_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    const tsr_gemm_problem *g = &p->u.gemm;
    const tsr_gemm_desc *d = &g->d;
    const int path = tsr_i8_path_of(s->v[KNOB_PATH], dot_ok(d), stream_ok(d));
    const bool packs_a = s->v[KNOB_PACK_A] || !can_skip_pack_a(d);
    int64_t kc = s->v[KNOB_KC];
    if (!tsr_i8_wrapping_sum(d) || d->k < kc) kc = d->k; /* one K block */
    kc = (kc + 3) / 4 * 4;
    if (kc == 0) kc = 4;
    const int64_t nc = ((d->n < s->v[KNOB_NC] ? d->n : s->v[KNOB_NC]) + NR - 1) / NR * NR;
    const int64_t mc = ((d->m < s->v[KNOB_MC] ? d->m : s->v[KNOB_MC]) + MR - 1) / MR * MR;
    const int nt = tsr_threads_for(ctx, 2.0 * (double)d->m * (double)d->n * (double)d->k * (double)d->batch, 1e6);
    const int split = path == PATH_PACKED ? tsr_split_of(d->m, d->n, MR, COL_UNIT, nt) : TSR_SPLIT_NONE;
    /* the rows and columns (whole panels) one buffer holds */
    const int64_t mcb = tsr_split_share(d->m, mc, MR, MR, split == TSR_SPLIT_ROWS, nt),
                  ncb = tsr_split_share(d->n, nc, COL_UNIT, NR, split == TSR_SPLIT_COLUMNS, nt);
    /* A: mc rows of kc bytes and their negsums (gemm_one); B: panels of kc x NR */
    const size_t abuf = (size_t)(mcb * kc + mcb * 4), bbuf = (size_t)(ncb / NR) * (size_t)(kc * NR);
    /* dot path: op(A) stored k x m is copied row-major once per matrix */
    const size_t bytes = path == PATH_DOT ? (d->trans_a ? (size_t)(d->m * d->k) : 0)
                         : path == PATH_STREAM ? stream_area_offset(d) + (size_t)nt * (STREAM_BLOCK + STREAM_SUMS)
                         : split != TSR_SPLIT_NONE ? (size_t)nt * (abuf + bbuf)
                                               : abuf + bbuf;
    char *buf = bytes ? tsr_scratch_get(bytes) : NULL;
    if (bytes && !buf) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "gemm.x86_avx512_vnni.s8: no memory for packing buffers");
    const size_t shared_abuf = (size_t)(mc * kc + mc * 4); /* unsplit: one A buffer of mc rows */
    if (nt == 1) { /* no parallel region: even a one-thread one costs a team */
        run_matrices(d, g, path, packs_a, mc, kc, nc, buf, shared_abuf, bbuf, TSR_SPLIT_NONE, 0, 1);
    } else {
#pragma omp parallel num_threads(nt)
        { /* a smaller team than planned (OMP_THREAD_LIMIT, nesting) shares the buffers as one */
            const int nth = omp_get_num_threads();
            if (split != TSR_SPLIT_NONE && nth == nt)
                run_matrices(d, g, path, packs_a, mcb, kc, ncb, buf, abuf, bbuf, split, omp_get_thread_num(), nth);
            else
                run_matrices(d, g, path, packs_a, mc, kc, nc, buf, shared_abuf, bbuf, TSR_SPLIT_NONE, omp_get_thread_num(),
                             nth);
        }
    }
    tsr_scratch_put(buf);
    return TSR_OK;
}

const tsr_kernel tsr_gemm_x86_avx512_vnni = {
    .name = "gemm.x86_avx512_vnni.s8",
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = "x86_avx512",
    .supports = vnni_supports,
    .cpu_features = FEATURES,
    .num_knobs = (int)(sizeof vnni_knobs / sizeof vnni_knobs[0]),
    .knobs = vnni_knobs,
    .default_schedule = vnni_default,
    .schedule_valid = vnni_valid,
    .run = vnni_run,
};
