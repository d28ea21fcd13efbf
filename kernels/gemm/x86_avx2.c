/* GEMM for AVX2 + FMA: 6 x 16 micro-tiles (12 ymm accumulators). */
#include "../../arch/x86_avx2/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 6
#define NV 2
#define GEMM_ARCH "x86_avx2"
#define GEMM_SYMBOL tsr_gemm_x86_avx2
#define GEMM_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA)
#include "x86_blis.h"
