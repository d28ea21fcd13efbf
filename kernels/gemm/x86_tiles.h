/* What the x86 GEMMs (x86_blis.h, x86_avx512_vnni.c) share around their
 * micro-kernels: how a block's tiles are split among a team, the team's
 * barrier, and the prefetch of a C tile. */
#ifndef TSR_X86_TILES_H
#define TSR_X86_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

/* Where thread tid's contiguous range of the npanels x mpanels tiles
 * (column panels outermost, nr columns of vl lanes each) starts, weighing
 * each tile by the vectors it computes: the last panel of ncur columns may
 * be narrow (16 of 48 at N = 256), and equal tile counts left one core idle
 * for up to a tenth of the call (f32 256^3 on 2 threads: 195 -> 215
 * GFLOP/s). Contiguous ranges keep each core on its own B panels. */
static inline int64_t tsr_tile_split(int64_t ncur, int64_t npanels, int64_t mpanels, int64_t nr, int64_t vl, int tid,
                                     int nth) {
    const int64_t tiles = npanels * mpanels, nv = nr / vl;
    if (tid >= nth) return tiles;
    const int64_t last_nv = (ncur - (npanels - 1) * nr + vl - 1) / vl; /* 1..nv */
    const int64_t full = (npanels - 1) * mpanels, total = full * nv + mpanels * last_nv;
    const int64_t target = total * tid / nth;
    return target <= full * nv ? (target + nv - 1) / nv : full + (target - full * nv + last_nv - 1) / last_nv;
}

/* rows rows of row_bytes bytes, ld_bytes apart from p (a C tile): its rows
 * are a stride the hardware prefetcher does not follow, so without this
 * every K block after the first waits on a miss per row from L3 or memory.
 * Issued before the micro-kernel, whose kc steps hide the latency. */
static inline void tsr_prefetch_tile_hint(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes, bool l2) {
    for (int64_t i = 0; i < rows; i++, p += ld_bytes) {
        for (int64_t off = 0; off < row_bytes; off += 64) {
            if (l2) _mm_prefetch(p + off, _MM_HINT_T1);
            else _mm_prefetch(p + off, _MM_HINT_T0);
        }
        if (l2) _mm_prefetch(p + row_bytes - 1, _MM_HINT_T1);
        else _mm_prefetch(p + row_bytes - 1, _MM_HINT_T0);
    }
}

static inline void tsr_prefetch_tile(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes) {
    tsr_prefetch_tile_hint(p, ld_bytes, rows, row_bytes, false);
}

/* the same into L2, for data a block ahead that L1 cannot hold beside the current one */
static inline void tsr_prefetch_tile_l2(const char *p, int64_t ld_bytes, int64_t rows, int64_t row_bytes) {
    tsr_prefetch_tile_hint(p, ld_bytes, rows, row_bytes, true);
}

/* A barrier for a team of nth threads (none for one: no parallel region). */
static inline void tsr_team_barrier(int nth) {
    if (nth > 1) {
#pragma omp barrier
    }
}

#endif
