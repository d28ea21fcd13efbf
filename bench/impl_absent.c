/* Stand-ins for the vendor libraries this build did not find (a GPU image
 * without oneDNN or OpenBLAS): each reports itself skipped, by name. */
#include <stdio.h>

#include "impls.h"

#if defined(TSR_BENCH_NO_ONEDNN) || defined(TSR_BENCH_NO_OPENBLAS)
static bool absent(int threads, char *why, size_t n) {
    (void)threads;
    snprintf(why, n, "not built: the library was not found when tessera-bench was configured");
    return false;
}
#endif

#ifdef TSR_BENCH_NO_ONEDNN
const gemm_impl impl_onednn = {"onednn", absent, NULL, NULL, NULL};
#endif
#ifdef TSR_BENCH_NO_OPENBLAS
const gemm_impl impl_openblas = {"openblas", absent, NULL, NULL, NULL};
#endif
