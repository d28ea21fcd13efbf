/* The CPU attention half of tessera-bench (cpu_attention.c). */
#ifndef TSR_BENCH_ATTENTION_H
#define TSR_BENCH_ATTENTION_H

/* Registers and runs the attention benchmarks; a table when want_summary.
 * Returns the exit status. */
int attention_suite_main(int threads, int quick, int want_summary);

#endif
