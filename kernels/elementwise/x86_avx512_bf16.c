/* The AVX-512 chains, softmax and norm rows again for CPUs with
 * AVX512_BF16, whose bf16 stores round by vcvtne2ps2bf16 (vdtype.h: two
 * vectors in one operation and a word shuffle, against some eight integer
 * operations a vector; Zen 4, two threads, past the caches: bf16 SwiGLU
 * +9%, gelu_erf +11%). The same source as x86_avx512.c, built with
 * -mavx512bf16 (and -mavx512dq, which every CPU with AVX512_BF16 has, for
 * vfpclassps) and ahead of it in the registry. */
#include "../../arch/x86_avx512/simd.h"

#define TSR_BF16_STORES_NATIVE

#define ROW_ARCH "x86_avx512_bf16"
#define ROW_SOFTMAX tsr_softmax_x86_avx512_bf16
#define ROW_LAYERNORM tsr_layernorm_x86_avx512_bf16
#define ROW_RMSNORM tsr_rmsnorm_x86_avx512_bf16
#define ROW_FEATURES                                                                                           \
    (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C | TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL |       \
     TSR_CPU_AVX512DQ | TSR_CPU_AVX512BF16)
#include "x86_rowwise.h"

#define CHAIN_ARCH ROW_ARCH
#define CHAIN_SYMBOL tsr_chain_x86_avx512_bf16
#define CHAIN_FEATURES ROW_FEATURES
#include "x86_chain.h"
