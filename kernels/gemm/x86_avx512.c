/* GEMM for AVX-512 F/BW/VL: 8 x 48 micro-tiles (24 zmm accumulators, A broadcast). */
#include "../../arch/x86_avx512/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 8
#define NV 3
#define GEMM_ARCH "x86_avx512"
#define GEMM_SYMBOL tsr_gemm_x86_avx512
#define GEMM_FEATURES (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_FMA)
#include "x86_blis.h"
