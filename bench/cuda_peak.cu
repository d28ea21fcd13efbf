/* The GPU's measured limits for tessera-bench --backend cuda: the tensor-core
 * rate of mma.sync m16n8k16 (f16 in, f32 accumulate; the instruction the
 * sm80 kernels use, so "% of mma.sync peak" is what a kernel of that family
 * can reach on this GPU) and the f32 FMA rate of the SIMT cores. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_peak.h"

enum { PEAK_THREADS = 256, FMA_CHAINS = 8 };

/* Independent accumulator chains hide the mma latency; the operands stay in
 * registers, so nothing but the tensor cores is measured. */
template <int MMA_CHAINS> __global__ void __launch_bounds__(PEAK_THREADS) mma_peak(int iters, float *sink) {
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; i++) a[i] = 0x3c003c00u ^ (threadIdx.x * (i + 1)); /* ~1.0 halves */
    for (int i = 0; i < 2; i++) b[i] = 0x00013c00u ^ (threadIdx.x * (i + 3));
    float c[MMA_CHAINS][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < MMA_CHAINS; j++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                         "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    float s = 0;
    for (int j = 0; j < MMA_CHAINS; j++) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    if (s == 12345.0f) sink[threadIdx.x] = s; /* keeps the chains live */
}

__global__ void __launch_bounds__(PEAK_THREADS) fma_peak(int iters, float seed, float *sink) {
    float v[FMA_CHAINS];
    for (int j = 0; j < FMA_CHAINS; j++) v[j] = seed + threadIdx.x + j;
    for (int it = 0; it < iters; it++)
#pragma unroll
        for (int j = 0; j < FMA_CHAINS; j++) v[j] = fmaf(v[j], 0.999999f, 1e-7f);
    float s = 0;
    for (int j = 0; j < FMA_CHAINS; j++) s += v[j];
    if (s == 12345.0f) sink[threadIdx.x] = s;
}

/* Enough resident warps per SM (8 blocks of 8) to fill every sub-partition. */
static int peak_blocks(int sms) { return sms * 8; }

/* The full rate: 8 blocks of 8 warps per SM, 8 chains each. The GEMM
 * tile's rate: one block of 8 warps per SM (two warps per sub-partition, as
 * a 64x64 warp tile's 255 registers allow) with its 32 accumulators. */
static int mma_chains(int low) { return low ? 32 : 8; }
static int mma_blocks(int sms, int low) { return low ? sms : peak_blocks(sms); }

extern "C" double cuda_peak_mma_flops(int sms, int iters, int low) {
    /* one m16n8k16 = 16 * 8 * 16 multiply-adds, per warp */
    return 2.0 * 16 * 8 * 16 * mma_chains(low) * (double)iters * (PEAK_THREADS / 32) * mma_blocks(sms, low);
}

extern "C" double cuda_peak_fma_flops(int sms, int iters) {
    return 2.0 * FMA_CHAINS * (double)iters * PEAK_THREADS * peak_blocks(sms);
}

extern "C" int cuda_peak_mma_launch(cudaStream_t s, int sms, int iters, int low, float *sink) {
    if (low) mma_peak<32><<<mma_blocks(sms, 1), PEAK_THREADS, 0, s>>>(iters, sink);
    else mma_peak<8><<<mma_blocks(sms, 0), PEAK_THREADS, 0, s>>>(iters, sink);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int cuda_peak_fma_launch(cudaStream_t s, int sms, int iters, float *sink) {
    fma_peak<<<peak_blocks(sms), PEAK_THREADS, 0, s>>>(iters, 1.0f, sink);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
