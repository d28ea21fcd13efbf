/* Device-side helpers every sm80 kernel shares: dtype loads and stores,
 * the activations and the fused epilogue, as the reference defines them. */
#ifndef TSR_SM80_DEVICE_CUH
#define TSR_SM80_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "tessera.h"

__device__ __forceinline__ float tsr_dev_load(const void *p, tsr_dtype t, int64_t i) {
    switch (t) {
    case TSR_F16: return __half2float(((const __half *)p)[i]);
    case TSR_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case TSR_I8: return (float)((const int8_t *)p)[i];
    case TSR_I32: return (float)((const int32_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

/* Round-to-nearest-even conversions, as tsr_f32_to_f16/bf16 do. */
__device__ __forceinline__ void tsr_dev_store(void *p, tsr_dtype t, int64_t i, float v) {
    switch (t) {
    case TSR_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case TSR_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

template <typename T> __device__ __forceinline__ float tsr_to_f32(T v);
template <> __device__ __forceinline__ float tsr_to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float tsr_to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float tsr_to_f32<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T tsr_from_f32(float v);
template <> __device__ __forceinline__ float tsr_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half tsr_from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 tsr_from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float tsr_dev_activation(tsr_activation act, float x) {
    switch (act) {
    case TSR_ACT_RELU: return x > 0.0f || x != x ? x : 0.0f;
    /* the GELUs in tsr_activation_ref's forms, which do not cancel for x < 0 */
    case TSR_ACT_GELU_ERF: return 0.5f * x * erfcf(-x * 0.70710678118654752440f);
    case TSR_ACT_GELU_TANH: return x / (1.0f + expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
    case TSR_ACT_SILU: return x / (1.0f + expf(-x));
    case TSR_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case TSR_ACT_TANH: return tanhf(x);
    default: return x;
    }
}

/* v[i] += scale * p[off + step * col[i]], all NV loads in flight together
 * (one dtype branch for all: f32, f16 or bf16, the dtypes C and
 * tsr_epilogue_check allow). col[0] < n; a value whose column is not
 * below n reads col[0]'s element instead, so that no load waits behind a
 * branch, and is never stored. */
template <typename T, int NV>
__device__ __forceinline__ void tsr_dev_add_typed_n(float (&v)[NV], const T *p, float scale, int64_t off, int64_t step,
                                                    const int64_t (&col)[NV], int64_t n) {
    T raw[NV]; /* loaded first: v may live in local memory, whose stores generic loads cannot pass */
#pragma unroll
    for (int i = 0; i < NV; i++) raw[i] = p[off + step * (col[i] < n ? col[i] : col[0])];
#pragma unroll
    for (int i = 0; i < NV; i++) v[i] += scale * tsr_to_f32(raw[i]);
}
template <int NV>
__device__ __forceinline__ void tsr_dev_add_n(float (&v)[NV], const void *p, tsr_dtype t, float scale, int64_t off,
                                              int64_t step, const int64_t (&col)[NV], int64_t n) {
    switch (t) {
    case TSR_F16: tsr_dev_add_typed_n(v, (const __half *)p, scale, off, step, col, n); break;
    case TSR_BF16: tsr_dev_add_typed_n(v, (const __nv_bfloat16 *)p, scale, off, step, col, n); break;
    default: tsr_dev_add_typed_n(v, (const float *)p, scale, off, step, col, n); break;
    }
}

/* p[off + col[i]] = v[i] for the values whose column is below n. */
template <typename T, int NV>
__device__ __forceinline__ void tsr_dev_store_typed_n(T *p, int64_t off, const float (&v)[NV], const int64_t (&col)[NV],
                                                      int64_t n) {
#pragma unroll
    for (int i = 0; i < NV; i++)
        if (col[i] < n) p[off + col[i]] = tsr_from_f32<T>(v[i]);
}
template <int NV>
__device__ __forceinline__ void tsr_dev_store_n(void *p, tsr_dtype t, int64_t off, const float (&v)[NV],
                                                const int64_t (&col)[NV], int64_t n) {
    switch (t) {
    case TSR_F16: tsr_dev_store_typed_n((__half *)p, off, v, col, n); break;
    case TSR_BF16: tsr_dev_store_typed_n((__nv_bfloat16 *)p, off, v, col, n); break;
    default: tsr_dev_store_typed_n((float *)p, off, v, col, n); break;
    }
}

/* The epilogue's steps on NV values of one output row (b, row), value i at
 * column col[i], col[0] < n; values at columns >= n are not to be stored.
 * The bias of value i is bias[bias_off + bias_step * col[i]] (the column;
 * the row when a column-major call made the bias run along m; a conv's
 * channel). Residual ld and batch_stride are resolved by the op front.
 * Step by step over all NV values, so that a step's loads (bias, residual)
 * are independent and in flight together: one value at a time waits out a
 * global load's latency per value. The activations run in a loop, not
 * unrolled: inlined NV times each, they made the function 84 KB in every
 * kernel that calls it. */
template <int NV>
__device__ __forceinline__ void tsr_dev_epilogue_n(const tsr_epilogue &e, float (&v)[NV], const int64_t (&col)[NV],
                                                   int64_t n, int64_t bias_off, int64_t bias_step, int64_t b,
                                                   int64_t row) {
#pragma unroll 1
    for (int k = 0; k < TSR_MAX_EPILOGUE_STEPS; k++) {
        if (k >= e.num_steps) break;
        const tsr_epilogue_step &s = e.steps[k];
        if (s.op == TSR_EPI_ACTIVATION) {
#pragma unroll 1
            for (int i = 0; i < NV; i++) v[i] = tsr_dev_activation(s.activation, v[i]);
        } else if (s.op == TSR_EPI_BIAS) {
            tsr_dev_add_n(v, s.data, s.dtype, 1.0f, bias_off, bias_step, col, n);
        } else {
            tsr_dev_add_n(v, s.data, s.dtype, s.scale, b * s.batch_stride + row * s.ld, 1, col, n);
        }
    }
}

/* The epilogue on one value of output (b, row, col), its bias at bias_idx. */
__device__ __forceinline__ float tsr_dev_epilogue(const tsr_epilogue &e, float v, int64_t bias_idx,
                                                  int64_t b, int64_t row, int64_t col) {
    float one[1] = {v};
    const int64_t at[1] = {col};
    tsr_dev_epilogue_n(e, one, at, col + 1, bias_idx, 0, b, row);
    return one[0];
}

#endif
