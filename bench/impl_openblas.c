/* OpenBLAS cblas_sgemm. */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "impls.h"

static bool init(int threads, char *why, size_t n) {
    (void)why, (void)n;
    openblas_set_num_threads(threads);
    /* its run-time core choice (DYNAMIC_ARCH builds; OPENBLAS_CORETYPE overrides) */
    static bool said;
    if (!said) printf("openblas: %s kernels (%s)\n", openblas_get_corename(), openblas_get_config()), said = true;
    return true;
}

void openblas_fair_coretype(char **argv) {
    if (getenv("OPENBLAS_CORETYPE")) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512cd"))
        return;
    if (setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) != 0) return;
    fflush(stdout);
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* no re-exec: OpenBLAS keeps its own choice, which init() prints */
}

static int sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0f, a, (blasint)(ta ? m : k), b, (blasint)(tb ? k : n), 0.0f, c, (blasint)n);
    return 0;
}

static const char *last_error(void) { return "cblas_sgemm reports no errors"; }

/* OpenBLAS has no int8 GEMM; Debian's build does not export cblas_sbgemm. */
const gemm_impl impl_openblas = {"openblas", init, sgemm, NULL, NULL, last_error};
