/* conv2d for AVX-512 F/BW/VL: 8-pixel x 32-channel tiles (16 zmm
 * accumulators; eight A-row pointers keep to the general registers). */
#include "../../arch/x86_avx512/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 8
#define NV 2
#define CONV_ARCH "x86_avx512"
#define CONV_SYMBOL tsr_conv2d_x86_avx512
#define CONV_FEATURES (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_FMA | TSR_CPU_F16C)
#include "x86_conv.h"
