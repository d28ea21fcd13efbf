/* What the x86 GEMMs (x86_blis.h, x86_avx512_vnni.c) share around their
 * micro-kernels: how a block's tiles are split among a team, the team's
 * barrier, the prefetch of a C tile, and the int8/bf16 stream paths' kernel
 * (rows of A broadcast against interleaved blocks of row-major B). */
#ifndef TSR_X86_TILES_H
#define TSR_X86_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../arch/x86_avx2/prefetch.h"

/* Column panel jr of a block of ncur columns cut into panels of nv vectors
 * of vl lanes: its first column (from the block's) and *width. A last panel
 * of one vector or less would run tiles of a single vector: MR chains, too
 * few to cover the multiply-add latency, and a broadcast per instruction
 * (bf16 8 x 16 tiles ran ~55% of the vdpbf16ps rate, 16 of 48 columns at N
 * = 256, 1024 and 4096). From three vectors on it takes columns of the
 * panel before it, two vectors then the rest (48 + 16 -> 32 + 32). */
static inline int64_t tsr_panel_cols(int64_t ncur, int64_t nv, int64_t vl, int64_t jr, int64_t *width) {
    const int64_t nr = nv * vl, npanels = (ncur + nr - 1) / nr, last = ncur - (npanels - 1) * nr;
    if (nv >= 3 && npanels >= 2 && last <= vl && jr >= npanels - 2) {
        *width = jr == npanels - 1 ? nr - 2 * vl + last : 2 * vl;
        return (npanels - 2) * nr + (jr == npanels - 1 ? 2 * vl : 0);
    }
    *width = ncur - jr * nr < nr ? ncur - jr * nr : nr;
    return jr * nr;
}

/* The vectors panel jr computes (tsr_panel_cols). */
static inline int64_t tsr_panel_vectors(int64_t ncur, int64_t nv, int64_t vl, int64_t jr) {
    int64_t w;
    tsr_panel_cols(ncur, nv, vl, jr, &w);
    return (w + vl - 1) / vl;
}

/* The fewest leading panels of a row (tsr_panel_cols) whose vectors reach want. */
static inline int64_t tsr_panels_reaching(int64_t ncur, int64_t npanels, int64_t nv, int64_t vl, int64_t want) {
    int64_t jr = 0;
    for (int64_t sum = 0; jr < npanels && sum < want; jr++) sum += tsr_panel_vectors(ncur, nv, vl, jr);
    return jr;
}

/* Where thread tid's contiguous range of the npanels x mpanels tiles
 * starts (panels of nr columns of vl lanes, tsr_panel_cols; column panels
 * outermost, or with rows_outer row panels), weighing each tile by the
 * vectors it computes: equal tile counts left one core idle for up to a
 * tenth of the call where the last panel is narrow (f32 256^3 on 2
 * threads: 195 -> 215 GFLOP/s). */
static inline int64_t tsr_tile_split(int64_t ncur, int64_t npanels, int64_t mpanels, int64_t nr, int64_t vl,
                                     bool rows_outer, int tid, int nth) {
    const int64_t tiles = npanels * mpanels, nv = nr / vl;
    if (tid >= nth) return tiles;
    const int64_t row = (npanels - 1) * nv + (ncur - (npanels - 1) * nr + vl - 1) / vl; /* vectors of a row panel */
    const int64_t target = row * mpanels * tid / nth;
    if (rows_outer) { /* every row panel weighs the same: whole ones, then tiles of the next */
        const int64_t r = target / row;
        return r * npanels + tsr_panels_reaching(ncur, npanels, nv, vl, target - r * row);
    }
    int64_t done = 0, jr = 0;
    for (; jr < npanels; jr++) {
        const int64_t w = tsr_panel_vectors(ncur, nv, vl, jr) * mpanels;
        if (done + w >= target) break;
        done += w;
    }
    if (jr == npanels) return tiles;
    const int64_t per = tsr_panel_vectors(ncur, nv, vl, jr);
    return jr * mpanels + (target - done + per - 1) / per;
}

/* How a team of nt splits a packed GEMM of m x n (micro-tiles mr x nr):
 * column panels into contiguous shares, each thread packing its own B
 * panels and its own copy of A, so that no barrier is left inside a
 * matrix. The team's barriers cost 0.5-1.2 us each on this VM, and a vCPU
 * preempted at one stalls both (int8, two threads, 192^3: 485 GOP/s best,
 * 384 mean, against 390 on one). A is then packed once per thread, 1/(n/nt)
 * of the multiply-adds. Columns come in col_unit: whole panels, or
 * vectors where a narrow last panel shares the one before's columns
 * (tsr_panel_cols; 256 columns then split 128 + 128, where panels of 48
 * split 144 + 112 and the thread with 144 set the time: Zen 4, 256^3, f32
 * 0.89-0.91x oneDNN, bf16 0.81x, int8 0.85x). The shares must come out
 * even; failing that, row panels split the same way (each thread packing
 * all of B); failing both, the team shares its buffers. Rows also win
 * where their shares are evener by a twentieth. Zen 5, two threads, 256^3
 * split by rows -> by vectors of columns (medians of interleaved runs):
 * bf16 790 -> 828 GFLOP/s, int8 1392 -> 1515 GOP/s. */
enum { TSR_SPLIT_NONE, TSR_SPLIT_COLUMNS, TSR_SPLIT_ROWS };

/* Thread tid's share [*lo, *hi) of ext in units of unit, among nth. */
static inline void tsr_split_range(int64_t ext, int64_t unit, int tid, int nth, int64_t *lo, int64_t *hi) {
    const int64_t panels = (ext + unit - 1) / unit, end = panels * (tid + 1) / nth * unit;
    *lo = panels * tid / nth * unit;
    *hi = end < ext ? end : ext;
}

/* The largest of nt shares (tsr_split_range) of ext in panels of unit, times
 * nt / ext: 1 when even. */
static inline double tsr_split_worst(int64_t ext, int64_t unit, int nt) {
    if (ext <= 0) return 1.0;
    int64_t most = 0;
    for (int t = 0; t < nt; t++) {
        int64_t lo, hi;
        tsr_split_range(ext, unit, t, nt, &lo, &hi);
        if (hi - lo > most) most = hi - lo;
    }
    return (double)most * nt / (double)ext;
}

static inline int tsr_split_of(int64_t m, int64_t n, int64_t mr, int64_t col_unit, int nt) {
    if (nt == 1) return TSR_SPLIT_NONE;
    const double cols = tsr_split_worst(n, col_unit, nt), rows = tsr_split_worst(m, mr, nt);
    if (cols <= 1.2 && cols <= rows * 1.05) return TSR_SPLIT_COLUMNS;
    return rows <= 1.2 ? TSR_SPLIT_ROWS : TSR_SPLIT_NONE;
}

/* Of ext (rows or columns) split in units of unit: what one thread's
 * buffer holds at once (at most block, a multiple of panel), in whole
 * panels, split among nt or not. */
static inline int64_t tsr_split_share(int64_t ext, int64_t block, int64_t unit, int64_t panel, bool split, int nt) {
    const int64_t share = split ? (((ext + unit - 1) / unit + nt - 1) / nt * unit + panel - 1) / panel * panel : block;
    return share < block ? share : block;
}

/* rows rows of row_bytes bytes, ld_bytes apart from p (a C tile): its rows
 * are a stride the hardware prefetcher does not follow, so without this
 * every K block after the first waits on a miss per row from L3 or memory.
 * Issued before the micro-kernel, whose kc steps hide the latency. */
static inline void tsr_prefetch_tile_hint(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes, bool l2) {
    for (int64_t i = 0; i < rows; i++, p += ld_bytes) {
        for (int64_t off = 0; off < row_bytes; off += 64) {
            if (l2) tsr_prefetch_l2(p + off);
            else tsr_prefetch_l1(p + off);
        }
        if (l2) tsr_prefetch_l2(p + row_bytes - 1);
        else tsr_prefetch_l1(p + row_bytes - 1);
    }
}

static inline void tsr_prefetch_tile(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes) {
    tsr_prefetch_tile_hint(p, ld_bytes, rows, row_bytes, false);
}

/* the same into L2, for data a block ahead that L1 cannot hold beside the current one */
static inline void tsr_prefetch_tile_l2(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes) {
    tsr_prefetch_tile_hint(p, ld_bytes, rows, row_bytes, true);
}

/* body(n) for n = rows (1..16) a compile-time constant in each case: an
 * always_inline kernel over n rows then keeps its n accumulators in
 * registers (the stream paths' row counts). */
#define TSR_FOR_ROWS_16(rows, body)                                                                      \
    switch (rows) {                                                                                      \
    case 1: body(1); break;                                                                              \
    case 2: body(2); break;                                                                              \
    case 3: body(3); break;                                                                              \
    case 4: body(4); break;                                                                              \
    case 5: body(5); break;                                                                              \
    case 6: body(6); break;                                                                              \
    case 7: body(7); break;                                                                              \
    case 8: body(8); break;                                                                              \
    case 9: body(9); break;                                                                              \
    case 10: body(10); break;                                                                            \
    case 11: body(11); break;                                                                            \
    case 12: body(12); break;                                                                            \
    case 13: body(13); break;                                                                            \
    case 14: body(14); break;                                                                            \
    case 15: body(15); break;                                                                            \
    case 16: body(16); break;                                                                            \
    }

/* The stream paths walk B (row-major, es bytes an element, ld elements a
 * row) in blocks of kb rows by sw columns, k inner, over columns [.., jhi):
 * the block after (p0, c0) fetched into L2 while this one is worked on
 * (each row's segment starts a new page, where the hardware prefetcher
 * stops). */
static inline void tsr_stream_prefetch_next(const char *b, int64_t ld, int64_t es, int64_t k, int64_t p0, int64_t kb,
                                            int64_t c0, int64_t sw, int64_t jhi) {
    const int64_t np = p0 + kb < k ? p0 + kb : 0, nc = np ? c0 : c0 + sw;
    if (nc < jhi)
        tsr_prefetch_tile_l2(b + (np * ld + nc) * es, ld * es, k - np < kb ? k - np : kb, (jhi - nc < sw ? jhi - nc : sw) * es);
}

#ifdef __AVX512F__
/* What a stream path's 32-bit lane of B holds against four bytes of A. */
typedef enum tsr_stream_kind {
    TSR_STREAM_I8,   /* four k of unsigned bytes (b + 128): vpdpbusd */
    TSR_STREAM_BF16  /* a k pair of bf16: vdpbf16ps */
} tsr_stream_kind;

/* The stream paths' kernel: vector v of an interleaved block of B (group
 * g's at blk + (g * nv + v) * 64) into R rows' sums (32-bit lanes, ls
 * apart), held in registers over the block's groups, row r's four bytes
 * of group g broadcast from memory at a + r * lda + 4 * g (no broadcast
 * register per row). */
static inline __attribute__((always_inline)) void tsr_stream_vector(const int R, const tsr_stream_kind kind, int groups,
                                                                    int nv, int v, const char *blk, const char *a,
                                                                    int64_t lda, bool first, int32_t *sums, int64_t ls) {
    __m512i acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) acc[r] = first ? _mm512_setzero_si512() : _mm512_load_si512(sums + r * ls + v * 16);
    for (int g = 0; g < groups; g++) {
        const __m512i bv = _mm512_load_si512(blk + ((int64_t)g * nv + v) * 64);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            const int32_t *a4 = (const int32_t *)(const void *)(a + r * lda + 4 * g);
            if (kind == TSR_STREAM_BF16) __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc[r]) : "v"(bv), "m"(*a4));
            else __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc[r]) : "v"(bv), "m"(*a4));
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) _mm512_store_si512(sums + r * ls + v * 16, acc[r]);
}

/* Every one of an interleaved block's nv vectors into R (1..16) rows' sums. */
static inline __attribute__((always_inline)) void tsr_stream_block(int R, const tsr_stream_kind kind, int groups, int nv,
                                                                   const char *blk, const char *a, int64_t lda,
                                                                   bool first, int32_t *sums, int64_t ls) {
#define TSR_STREAM_ROWS_OF(n)                                                                            \
    for (int v = 0; v < nv; v++) tsr_stream_vector(n, kind, groups, nv, v, blk, a, lda, first, sums, ls)
    TSR_FOR_ROWS_16(R, TSR_STREAM_ROWS_OF);
#undef TSR_STREAM_ROWS_OF
}
#endif

/* A barrier for a team of nth threads (none for one: no parallel region). */
static inline void tsr_team_barrier(int nth) {
    if (nth > 1) {
#pragma omp barrier
    }
}

#endif
