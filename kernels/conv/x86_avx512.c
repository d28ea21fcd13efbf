/* conv2d for AVX-512 F/BW/VL: 8-pixel x 32-channel tiles (16 zmm
 * accumulators; eight A-row pointers keep to the general registers), and
 * AVX512_BF16 dot products for bf16 inputs. */
#include "../../arch/x86_avx512/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 8
#define NV 2
#define CONV_ARCH "x86_avx512"
#define CONV_SYMBOL tsr_conv2d_x86_avx512
#define CONV_FEATURES (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_FMA | TSR_CPU_F16C)
/* bf16 x bf16 through vdpbf16ps where the CPU has AVX512_BF16 (checked per
 * call); this file is built with -mavx512bf16 for it */
#define CONV_BF16 1
#include "x86_conv.h"
