/* The CPU attention half of tessera-bench (cpu_attention.c). */
#ifndef TSR_BENCH_ATTENTION_H
#define TSR_BENCH_ATTENTION_H

/* Registers and runs the attention benchmarks; a table when want_summary.
 * Returns the exit status. */
int attention_suite_main(int threads, int quick, int want_summary);

/* --rss: peak resident memory of fused and unfused attention at seq 8192,
 * each in its own child process. */
int attention_rss_main(int threads);

#endif
