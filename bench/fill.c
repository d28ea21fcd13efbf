#include "fill.h"

#include <stdint.h>
#include <stdlib.h>

void bench_fill(void *dst, tsr_dtype t, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        float v = lo + (hi - lo) * (float)((i * 2654435761u + seed * 40503u) % 2003u) / 2003.0f;
        if (t == TSR_F32) ((float *)dst)[i] = v;
        else ((uint16_t *)dst)[i] = t == TSR_F16 ? tsr_f32_to_f16(v) : tsr_f32_to_bf16(v);
    }
}

void *bench_alloc(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); }

void *bench_filled(tsr_dtype t, size_t n, unsigned seed, float lo, float hi) {
    void *p = bench_alloc(n * tsr_dtype_size(t));
    if (p) bench_fill(p, t, n, seed, lo, hi);
    return p;
}
