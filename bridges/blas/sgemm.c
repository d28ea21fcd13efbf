/* The Fortran entry: reference BLAS SGEMM, column-major. */
#include "bridge.h"
#include "entries.h"

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b, const int *ldb,
            const float *beta, float *c, const int *ldc) {
    int info = tsrb_check_sgemm(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc);
    if (info) {
        if (tsrb_verbose()) tsrb_log("tessera_blas: sgemm_ -> illegal parameter %d", info);
        tsrb_xerbla("SGEMM ", info);
        return;
    }
    tsrb_gemm g = {
        .trans_a = tsrb_trans_letter(*transa) == 'T',
        .trans_b = tsrb_trans_letter(*transb) == 'T',
        .m = *m, .n = *n, .k = *k,
        .alpha = *alpha, .beta = *beta,
        .a = a, .b = b, .c = c,
        .lda = *lda, .ldb = *ldb, .ldc = *ldc,
        .batch = 1,
        .entry = "sgemm_",
        .layout = 'C',
    };
    tsrb_run(&g);
}
