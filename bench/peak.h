#ifndef TSR_BENCH_PEAK_H
#define TSR_BENCH_PEAK_H

const char *peak_isa(void);                          /* "avx512", "avx2" */
double peak_flops_per_iter(long iters, int threads); /* flops of one peak_run */
float peak_run(long iters, int threads);
/* int8 (AVX-512 VNNI vpdpbusd, else AVX2 vpmaddwd on int16): ops = 2 per
 * multiply-add */
int peak_i8_available(void);
const char *peak_i8_name(void);
double peak_i8_ops_per_iter(long iters, int threads);
float peak_i8_run(long iters, int threads);
/* f32 (AVX-512 only): the GEMM's 8 x 48 micro-kernel on panels in L1,
 * rounds of 128 k each */
int peak_ukr_available(void);
double peak_ukr_flops_per_round(long rounds, int threads);
float peak_ukr_run(long rounds, int threads);
double peak_ukr_best(void);
/* bf16 (AVX512_BF16 vdpbf16ps): flops = 2 per product */
int peak_bf16_available(void);
double peak_bf16_flops_per_iter(long iters, int threads);
float peak_bf16_run(long iters, int threads);
double peak_bf16_best(void);
/* the fastest single peak_run / peak_i8_run so far (0 before any) */
double peak_best(void);
double peak_i8_best(void);

#endif
