/* The memory-bandwidth reference that the row ops and decode attention are
 * held to. */
#ifndef TSR_BENCH_COPY_H
#define TSR_BENCH_COPY_H

#include <stddef.h>

/* memcpy of bytes from src to dst on threads threads, one contiguous share
 * each (64-byte multiples), as the kernels set beside it use the same
 * threads; below 1 MiB one memcpy (a parallel region costs more than such
 * a copy). */
void bench_copy(void *dst, const void *src, size_t bytes, int threads);

#endif
