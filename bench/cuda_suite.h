/* The CUDA half of tessera-bench (cuda_suite.c), built when CUDA is. */
#ifndef TSR_BENCH_CUDA_SUITE_H
#define TSR_BENCH_CUDA_SUITE_H

/* Registers and runs the CUDA benchmarks for the shape sets and dtypes (a
 * list such as "f16,bf16,f32"); prints a table when want_summary. Returns the
 * exit status: 0, 1 on a mismatch with cuBLAS, 2 on bad input. A machine
 * without a GPU prints "SKIP cuda: ..." and returns 0. */
int cuda_suite_main(const char *const *sets, int nsets, int quick, int want_summary, const char *dtypes);

/* --op conv: Tessera's conv2d against cuDNN (dlopen'ed) on conv shape sets
 * (default resnet50), NHWC f16 with the fused epilogue; same conventions. */
int cuda_conv_main(const char *const *sets, int nsets, int quick, int want_summary);

#endif
