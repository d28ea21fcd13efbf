/* The OpenCL half of tessera-bench (opencl_suite.c), built when OpenCL and
 * CLBlast are found. */
#ifndef TSR_BENCH_OPENCL_SUITE_H
#define TSR_BENCH_OPENCL_SUITE_H

typedef struct opencl_bench_options {
    const char *const *sets; /* GEMM shape sets */
    int nsets;
    int quick, summary, threads;
    int first_result;        /* measure time-to-first-result instead */
    int tune_timeout_s;      /* budget for clblast_tuner_xgemm when it must run */
    const char *argv0;       /* this program, for the first-result children */
} opencl_bench_options;

/* Registers and runs the OpenCL benchmarks: Tessera's OpenCL kernels, CLBlast
 * as shipped (clblast), CLBlast with its own tuner's best parameters
 * (clblast_tuned), and Tessera's CPU kernels when the device is the CPU
 * (tessera_cpu). Returns the exit status (0; 1 on a mismatch; 2 on bad
 * input). Without an OpenCL device: "SKIP opencl: ..." and 0. */
int opencl_suite_main(const opencl_bench_options *o);
/* The child process of --first-result: one GEMM from a cold start. */
int opencl_first_result_child(const char *impl);

#endif
