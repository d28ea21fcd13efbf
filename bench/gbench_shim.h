/* The C face of Google Benchmark: register, run, read back the results.
 * Implemented in gbench_shim.cc, the only C++ file of tessera-bench. */
#ifndef TSR_GBENCH_SHIM_H
#define TSR_GBENCH_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gb_state gb_state; /* a benchmark::State */
typedef void (*gb_fn)(gb_state *st, void *arg);

/* flops / bytes per iteration become the gflops / gbps rate counters (0 = none). */
void gb_register(const char *name, gb_fn fn, void *arg, double flops, double bytes);
/* For work of nanoseconds to microseconds: no rates, times shown in ns. */
void gb_register_ns(const char *name, gb_fn fn, void *arg);
/* As gb_register, but the benchmark reports the times it sets with
 * gb_set_iteration_time (device work timed by events, not the host clock);
 * an iteration is a batch of `calls` calls, kept as the `calls` counter. */
void gb_register_manual(const char *name, gb_fn fn, void *arg, double flops, double bytes, int calls);
void gb_set_iteration_time(gb_state *st, double seconds);
int gb_keep_running(gb_state *st);
void gb_skip_with_error(gb_state *st, const char *msg);
/* Passes Google Benchmark's own flags through (--benchmark_filter, ...). */
void gb_initialize(int *argc, char **argv);
void gb_run(void);

typedef struct gb_result {
    char name[192];
    double gflops, gbps;
    double seconds; /* real time per iteration */
    int error;
} gb_result;
/* Results of the last gb_run, one per benchmark in the order each first
 * ran: with --benchmark_repetitions, the medians of its repetitions. */
int gb_results(const gb_result **out);

#ifdef __cplusplus
}
#endif

#endif
