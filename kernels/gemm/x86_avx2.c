/* GEMM for AVX2 + FMA: 6 x 16 micro-tiles (12 ymm accumulators). */
#include <omp.h>

#include "../../arch/x86_avx2/simd.h"
#include "../../arch/x86_avx512/vmath.h"

#define MR 6
#define NV 2
#define GEMM_ARCH "x86_avx2"
#define GEMM_FEATURES (TSR_CPU_AVX2 | TSR_CPU_FMA)
#include "x86_blis.h"

const tsr_kernel tsr_gemm_x86_avx2 = {
    .name = "gemm.x86_avx2.f32",
    .op = TSR_OP_GEMM,
    .backend = TSR_BACKEND_CPU,
    .arch = "x86_avx2",
    .supports = blis_supports,
    .num_knobs = 5,
    .knobs = gemm_knobs,
    .default_schedule = blis_default,
    .schedule_valid = blis_valid,
    .run = blis_run,
};
