/* The tuning-table lookup half of tessera-bench (lookup_suite.c). */
#ifndef TSR_BENCH_LOOKUP_H
#define TSR_BENCH_LOOKUP_H

/* Registers and runs the lookup and per-call benchmarks on the CPU, prints
 * their table. Returns the exit status. */
int lookup_suite_main(int quick);

#endif
