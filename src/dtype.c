/* dtype names and sizes; f16/bf16 conversions with round-to-nearest-even. */
#include <string.h>

#include "internal.h"

size_t tsr_dtype_size(tsr_dtype dtype) {
    switch (dtype) {
    case TSR_F32: return 4;
    case TSR_F16: return 2;
    case TSR_BF16: return 2;
    case TSR_I8: return 1;
    case TSR_I32: return 4;
    }
    return 0;
}

const char *tsr_dtype_name(tsr_dtype dtype) {
    switch (dtype) {
    case TSR_F32: return "f32";
    case TSR_F16: return "f16";
    case TSR_BF16: return "bf16";
    case TSR_I8: return "i8";
    case TSR_I32: return "i32";
    }
    return "unknown";
}

static inline uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t tsr_f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tsr_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t tsr_f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (absu < 0x38800000u) {
        /* subnormal or zero in f16: scale so that the f16 subnormal unit is 1,
         * and let the FPU's round-to-nearest-even do the rounding. */
        float f = bits_f32(absu) * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)__builtin_nearbyintf(f);
        return (uint16_t)(sign | m);
    }
    uint32_t exp = (absu >> 23) - 127 + 15;
    uint32_t mant = absu & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* carry may bump exponent */
    return (uint16_t)(sign | h);
}

float tsr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        float f = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

const char *tsr_backend_name(tsr_backend backend) {
    switch (backend) {
    case TSR_BACKEND_CPU: return "cpu";
    case TSR_BACKEND_CUDA: return "cuda";
    case TSR_BACKEND_HIP: return "hip";
    case TSR_BACKEND_OPENCL: return "opencl";
    }
    return "unknown";
}

const char *tsr_op_name(tsr_op op) {
    static const char *names[TSR_OP_COUNT] = {"gemm",    "conv2d",  "attention", "chain",
                                              "softmax", "layernorm", "rmsnorm"};
    return (unsigned)op < TSR_OP_COUNT ? names[op] : "unknown";
}

tsr_tensor_desc tsr_tensor_contiguous(tsr_dtype dtype, int32_t ndim, const int64_t *shape) {
    tsr_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.ndim = ndim;
    if (ndim < 0 || ndim > TSR_MAX_DIMS || (ndim > 0 && !shape)) {
        t.ndim = -1; /* rejected by every op with a message */
        return t;
    }
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.strides[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
    }
    return t;
}
