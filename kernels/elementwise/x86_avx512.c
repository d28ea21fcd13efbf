/* Fused chains, softmax, layernorm and rmsnorm rows for AVX-512F/BW/VL (16 lanes). */
#include "../../arch/x86_avx512/simd.h"

#define ROW_ARCH "x86_avx512"
#define ROW_SOFTMAX tsr_softmax_x86_avx512
#define ROW_LAYERNORM tsr_layernorm_x86_avx512
#define ROW_RMSNORM tsr_rmsnorm_x86_avx512
#define ROW_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL)
#include "x86_rowwise.h"

#define CHAIN_ARCH ROW_ARCH
#define CHAIN_SYMBOL tsr_chain_x86_avx512
#define CHAIN_FEATURES ROW_FEATURES
#include "x86_chain.h"
