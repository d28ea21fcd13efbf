/* The CPU softmax/norm half of tessera-bench (cpu_rowwise.c). */
#ifndef TSR_BENCH_ROWWISE_H
#define TSR_BENCH_ROWWISE_H

/* Registers and runs the row-op benchmarks against memcpy; a table when
 * want_summary. Returns the exit status. */
int rowwise_suite_main(int threads, int quick, int want_summary);

#endif
