/* The tuner: for one problem (a workload: buffers plus a tsr_problem) and
 * the kernels that may run it, search each kernel's schedule space, check
 * every candidate against the reference before timing it, time the correct
 * ones, keep the fastest. Generic over ops and archs: it only sees knob
 * lists, schedule_valid() and run(); an op is tunable once it has a
 * workload builder (workload_<op>.c). */
#ifndef TSR_TUNER_H
#define TSR_TUNER_H

#include <signal.h>

#include "problem_key.h"
#include "table.h"

/* ---------------------------------------------------------------- workloads */

#define TSR_WL_MAX_BUFS 8

typedef struct tsr_workload {
    /* Filled by a builder (tsr_workload_gemm, ...): */
    tsr_problem problem;           /* pointers are bound by bind() */
    tsr_pkey key;
    int num_bufs;
    size_t bytes[TSR_WL_MAX_BUFS];
    tsr_dtype dtype[TSR_WL_MAX_BUFS];
    bool is_output[TSR_WL_MAX_BUFS]; /* filled with a sentinel, not data */
    int check_buf;                   /* the output compared with the reference */
    void (*bind)(tsr_problem *p, void *const *bufs);
    double flops, bytes_moved;       /* one call; bytes_moved decides rotation */
    double atol, rtol;               /* |got - ref| <= atol + rtol * |ref| */

    /* Filled by tsr_workload_setup: */
    tsr_context *ctx;
    void *host[TSR_WL_MAX_BUFS];     /* initial contents, host memory */
    void *ref_out;                   /* the reference's check_buf */
    void *got;                       /* scratch for a candidate's check_buf */
    int num_sets;                    /* input copies rotated while timing */
    void **dev;                      /* num_sets * num_bufs device buffers */
} tsr_workload;

/* C = op(A) op(B), row-major, tight, beta 0, no epilogue: what the shape
 * files describe. c may be the input dtype or f32/i32 as tsr_gemm allows. */
tsr_status tsr_workload_gemm(tsr_workload *w, int64_t m, int64_t n, int64_t k, int64_t batch, bool trans_a,
                             bool trans_b, tsr_dtype ab, tsr_dtype c);
/* Attention on contiguous BHSD tensors, no mask, no lse, the default scale. */
tsr_status tsr_workload_attention(tsr_workload *w, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seq_q,
                                  int64_t seq_kv, int64_t head_dim, tsr_causal causal, tsr_dtype t);
/* conv2d: NHWC x, OHWI filter, square stride and pads, no epilogue. */
tsr_status tsr_workload_conv(tsr_workload *w, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t k, int64_t r,
                             int64_t s, int64_t stride, int64_t pad, int64_t groups, tsr_dtype t);
/* The workload for a table record: GEMM without epilogue, or attention
 * without mask or lse. */
tsr_status tsr_workload_from_record(tsr_workload *w, const tsr_table_rec_view *v);
tsr_status tsr_workload_attention_from_record(tsr_workload *w, const tsr_table_rec_view *v);
tsr_status tsr_workload_conv_from_record(tsr_workload *w, const tsr_table_rec_view *v);

/* Allocates and fills the buffers on ctx and computes the reference output
 * on the host with the reference kernels. Memory-bound problems get enough
 * input copies to overflow llc_bytes twice (0: the CPU's last-level cache). */
tsr_status tsr_workload_setup(tsr_workload *w, tsr_context *ctx, size_t llc_bytes, uint64_t seed);
void tsr_workload_release(tsr_workload *w);
/* The bound problem for input set i. */
void tsr_workload_problem(const tsr_workload *w, int set, tsr_problem *p);

/* The last-level cache of the machine (sysfs), 32 MiB if unknown. */
size_t tsr_llc_bytes(void);
/* Monotonic seconds. */
double tsr_now(void);

/* ------------------------------------------------------------------ tuning */

typedef enum tsr_tune_event_kind {
    TSR_TUNE_EV_CANDIDATE = 0, /* a candidate was timed */
    TSR_TUNE_EV_WRONG,         /* a candidate's output differs from the reference */
    TSR_TUNE_EV_FAILED,        /* a candidate's run returned an error */
    TSR_TUNE_EV_KERNEL_DONE    /* one kernel's search finished */
} tsr_tune_event_kind;

typedef struct tsr_tune_event {
    tsr_tune_event_kind kind;
    const tsr_kernel *kernel;
    const tsr_schedule *schedule;
    int index, planned;      /* candidates so far, the plan for this kernel */
    double time_us, best_us; /* this candidate's median, the best so far */
    const char *detail;      /* what was wrong, or the error */
} tsr_tune_event;

typedef struct tsr_tune_options {
    double deadline;         /* tsr_now() seconds; 0 = none */
    double candidate_s;      /* time to spend timing one candidate (0.2) */
    int max_candidates;      /* per kernel (48); exhaustive when the space is smaller */
    int warmup;              /* runs before timing (1) */
    int min_reps, max_reps;  /* timed samples (3, 25) */
    uint64_t seed;           /* random sampling (1) */
    bool confirm;            /* re-time winner and heuristic head to head (true) */
    volatile sig_atomic_t *stop; /* set (by a signal handler) to stop between candidates */
    const tsr_kernel *const *kernels; /* NULL: the kernel dispatch picks for the problem */
    int num_kernels;
    void (*on_event)(const tsr_tune_event *ev, void *user);
    void *user;
} tsr_tune_options;

void tsr_tune_options_init(tsr_tune_options *o);

typedef struct tsr_tune_result {
    const tsr_kernel *kernel;
    bool found;              /* a correct, timed winner */
    tsr_schedule best;       /* the heuristic's when the winner did not beat it again */
    double best_us, spread;  /* median and interquartile spread (percent) */
    bool default_ok;         /* the heuristic's schedule was correct and timed */
    tsr_schedule def;
    double default_us;
    double space;            /* schedules in the knob space */
    int tried, invalid, wrong, failed;
    bool out_of_time, interrupted;
} tsr_tune_result;

/* Tunes w (set up) for each kernel; results[i] per kernel, *count of them.
 * Kernels without knobs are skipped. TSR_ERR_NOT_SUPPORTED when no kernel
 * can run the problem. */
tsr_status tsr_tune(tsr_workload *w, const tsr_tune_options *o, tsr_tune_result *results, int max,
                    int *count);

/* One schedule: is its output right? (false with why). */
bool tsr_tune_check(tsr_workload *w, const tsr_kernel *k, const tsr_schedule *s, char *why, size_t why_len);

typedef struct tsr_measurement {
    double median_us, spread; /* spread: (q3 - q1) / median, percent */
    int samples;
    bool abandoned;           /* stopped early: slower than give_up_us */
} tsr_measurement;

/* Times s (after warm-up), rotating input sets. give_up_us > 0 stops once
 * the first sample is that slow. */
tsr_status tsr_tune_time(tsr_workload *w, const tsr_kernel *k, const tsr_schedule *s, const tsr_tune_options *o,
                         double give_up_us, tsr_measurement *m);

/* The record line for a result. */
tsr_status tsr_tune_record(const tsr_workload *w, const tsr_tune_result *r, char *out, size_t n);

#endif
