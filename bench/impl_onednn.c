/* oneDNN's dnnl_sgemm and dnnl_gemm_s8s8s32 (row-major). */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "impls.h"

static bool init(int threads, char *why, size_t n) {
    (void)why, (void)n;
    omp_set_num_threads(threads); /* Debian's oneDNN uses OpenMP */
    return true;
}

static int sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n) ==
                   dnnl_success ? 0 : -1;
}

static int gemm_i8(int ta, int tb, int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *c) {
    const int32_t co = 0;
    return dnnl_gemm_s8s8s32(ta ? 'T' : 'N', tb ? 'T' : 'N', 'F', m, n, k, 1.0f, a, ta ? m : k, 0, b, tb ? k : n, 0,
                             0.0f, c, n, &co) == dnnl_success ? 0 : -1;
}

const gemm_impl impl_onednn = {"onednn", init, sgemm, gemm_i8};
