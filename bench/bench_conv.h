/* The CPU convolution half of tessera-bench (cpu_conv.c). */
#ifndef TSR_BENCH_CONV_H
#define TSR_BENCH_CONV_H

/* Registers and runs the conv benchmarks on the shape sets (names in
 * bench/shapes/conv_<name>.txt or files; none: resnet50 and mobilenetv2_dw)
 * for the dtypes named in `dtypes` (f32, bf16); a table when want_summary.
 * Returns the exit status. */
int conv_suite_main(const char *const *sets, int nsets, int threads, int quick, int want_summary, const char *dtypes);

#endif
