/* Flash attention for AVX-512F/BW/VL/DQ: 16-lane logit and accumulator vectors. */
#include "../../arch/x86_avx512/simd.h"

#define ATTN_ARCH "x86_avx512"
#define ATTN_SYMBOL tsr_attention_x86_avx512
#define ATTN_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | \
                       TSR_CPU_AVX512VL | TSR_CPU_AVX512DQ)
#include "x86_flash.h"
