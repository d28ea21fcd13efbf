/* Peak micro-benchmarks for the CUDA suite (cuda_peak.cu). */
#ifndef TSR_BENCH_CUDA_PEAK_H
#define TSR_BENCH_CUDA_PEAK_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flops of one launch; the launches return 0, or -1 on a launch error.
 * sink: a device buffer of at least 256 floats. low: the mma rate at the
 * GEMM tile's occupancy (8 warps per SM, 32 accumulators each), not the
 * device's. */
double cuda_peak_mma_flops(int sms, int iters, int low);
double cuda_peak_fma_flops(int sms, int iters);
int cuda_peak_mma_launch(cudaStream_t s, int sms, int iters, int low, float *sink);
int cuda_peak_fma_launch(cudaStream_t s, int sms, int iters, float *sink);

#ifdef __cplusplus
}
#endif

#endif
