/* conv2d for AVX2 + FMA (+ F16C for f16 inputs): 6-pixel x 16-channel tiles
 * (12 ymm accumulators). */
#include "../../arch/x86_avx2/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 6
#define NV 2
#define CONV_ARCH "x86_avx2"
#define CONV_SYMBOL tsr_conv2d_x86_avx2
#define CONV_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C)
#include "x86_conv.h"
