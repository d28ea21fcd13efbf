/* Flash attention for AVX2 + FMA (+ F16C for f16 K/V). */
#include "../../arch/x86_avx2/simd.h"

#define ATTN_ARCH "x86_avx2"
#define ATTN_SYMBOL tsr_attention_x86_avx2
#define ATTN_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C)
#include "x86_flash.h"
