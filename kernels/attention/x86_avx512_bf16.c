/* Flash attention for bf16 q/k/v on AVX-512 BF16: Q K^T and P V on
 * vdpbf16ps (f32 accumulation, P rounded to bf16), chosen by cpuid ahead of
 * the f32-arithmetic AVX-512 build, which keeps every other dtype. */
#include "../../arch/x86_avx512/simd.h"

#define ATTN_ARCH "x86_avx512"
#define ATTN_NAME "attention.x86_avx512_bf16.flash"
#define ATTN_SYMBOL tsr_attention_x86_avx512_bf16
#define ATTN_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | \
                       TSR_CPU_AVX512VL | TSR_CPU_AVX512DQ | TSR_CPU_AVX512BF16)
#define ATTN_BF16_DOT 1
#include "x86_flash.h"
