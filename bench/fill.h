/* Benchmark inputs: a fixed, cheap pattern in any float dtype. */
#ifndef TSR_BENCH_FILL_H
#define TSR_BENCH_FILL_H

#include <stddef.h>

#include "tessera.h"

/* n values of dtype t (f32, f16, bf16) in [lo, hi) into dst; seed varies them. */
void bench_fill(void *dst, tsr_dtype t, size_t n, unsigned seed, float lo, float hi);
/* The same into a new bench_alloc buffer; NULL when out of memory. */
/* bytes on a 64-byte boundary, as frameworks allocate tensors (malloc's 16
 * cost f32 kernels on both sides up to 30% in L1); free() releases it. */
void *bench_alloc(size_t bytes);
void *bench_filled(tsr_dtype t, size_t n, unsigned seed, float lo, float hi);

#endif
