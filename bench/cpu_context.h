/* The CPU context the op suites (attention, conv, rowwise) run Tessera on. */
#ifndef TSR_BENCH_CPU_CONTEXT_H
#define TSR_BENCH_CPU_CONTEXT_H

#include "tessera.h"

/* A CPU context on `threads` worker threads, with OpenMP's default set to
 * the same count (Debian's oneDNN runs on OpenMP, so both sides get the
 * same cores); info filled when not NULL. NULL, with the library's message
 * on stderr, when the context cannot be made. */
tsr_context *bench_cpu_context(int threads, tsr_context_info *info);

#endif
