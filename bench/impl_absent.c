/* Stand-ins for the vendor libraries this build did not find (a GPU image
 * without oneDNN or OpenBLAS): each reports itself skipped, by name. */
#include <stdio.h>

#include "impls.h"
#include "row_onednn.h"

#if defined(TSR_BENCH_NO_ONEDNN) || defined(TSR_BENCH_NO_OPENBLAS)
static bool absent(int threads, char *why, size_t n) {
    (void)threads;
    snprintf(why, n, "not built: the library was not found when tessera-bench was configured");
    return false;
}
#endif

#ifdef TSR_BENCH_NO_ONEDNN
const gemm_impl impl_onednn = {"onednn", absent, NULL, NULL, NULL, NULL};

row_prim *row_onednn_create(int op, tsr_dtype t, int64_t rows, int64_t cols, float epsilon, const char **why) {
    (void)op, (void)t, (void)rows, (void)cols, (void)epsilon;
    *why = "oneDNN was not found when tessera-bench was configured";
    return NULL;
}
int row_onednn_run(row_prim *p, const void *x, const void *g, const float *gamma, const float *beta, void *y) {
    (void)p, (void)x, (void)g, (void)gamma, (void)beta, (void)y;
    return -1;
}
void row_onednn_destroy(row_prim *p) { (void)p; }
#endif
#ifdef TSR_BENCH_NO_OPENBLAS
const gemm_impl impl_openblas = {"openblas", absent, NULL, NULL, NULL, NULL};
void openblas_fair_coretype(char **argv) { (void)argv; }
#endif
