/* GEMM for bf16 inputs on AVX-512 BF16: 8 x 48 micro-tiles, vdpbf16ps on
 * bf16 pairs of k (f32 accumulators; products exact, sums rounded to f32;
 * the instruction flushes bf16 denormals to zero, as oneDNN's bf16 GEMM). */
#include "../../arch/x86_avx512/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 8
#define NV 3
#define GEMM_ARCH "x86_avx512"
#define GEMM_NAME "gemm.x86_avx512_bf16.bf16"
#define GEMM_SYMBOL tsr_gemm_x86_avx512_bf16
#define GEMM_FEATURES (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_FMA | TSR_CPU_AVX512BF16)
#define GEMM_BF16_DOT 1
#include "x86_blis.h"
