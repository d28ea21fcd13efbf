/* The Tessera path: one tsr_gemm on the shared CPU context, column-major,
 * with BLAS's leading dimensions and the batch strides as they are. */
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

/* Elements spanned by batch column-major matrices of rows x cols. */
static int64_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
    if (rows == 0 || cols == 0) return 0;
    return (cols - 1) * ld + rows + (batch - 1) * stride;
}

static bool overlap(const float *x, int64_t nx, const float *y, int64_t ny) {
    uintptr_t x0 = (uintptr_t)x, y0 = (uintptr_t)y;
    return nx > 0 && ny > 0 && x0 < y0 + (uintptr_t)ny * sizeof(float) &&
           y0 < x0 + (uintptr_t)nx * sizeof(float);
}

/* A tight copy of batch rows x cols matrices (ld apart, stride apart), so
 * that the copy's ld is rows and its stride rows * cols. */
static float *pack(const float *x, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                   int64_t stride) {
    float *p = malloc((size_t)(rows * cols * batch) * sizeof(float));
    if (!p) return NULL;
    for (int64_t bt = 0; bt < batch; bt++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(p + (bt * cols + j) * rows, x + bt * stride + j * ld, (size_t)rows * sizeof(float));
    return p;
}

bool tsrb_tessera(const tsrb_gemm *g, const char **detail) {
    tsr_context *ctx = tsrb_context();
    *detail = "(no Tessera context)";
    if (!ctx) return false;
    /* tsr_gemm reads a stride of 0 as "tight", not "the same matrix again":
     * tsrb_run splits such batches before they get here. */
    *detail = "(a zero batch stride)";
    if (g->batch > 1 && (g->stride_a == 0 || g->stride_b == 0)) return false;

    int64_t ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
    int64_t br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.layout = TSR_COL_MAJOR;
    d.trans_a = g->trans_a ? TSR_TRANS : TSR_NO_TRANS;
    d.trans_b = g->trans_b ? TSR_TRANS : TSR_NO_TRANS;
    d.m = g->m, d.n = g->n, d.k = g->k;
    d.lda = g->lda, d.ldb = g->ldb, d.ldc = g->ldc;
    d.batch = g->batch;
    if (g->batch > 1) d.stride_a = g->stride_a, d.stride_b = g->stride_b, d.stride_c = g->stride_c;
    d.alpha = g->alpha, d.beta = g->beta;

    /* tsr_gemm refuses a C whose byte range meets A's or B's, but BLAS
     * callers pass disjoint blocks of one array all the time (LAPACK's
     * blocked updates: A, B and C inside the same matrix). Copy such an
     * input aside; the copy costs O(mk + kn), the product O(mnk). */
    const float *a = g->a, *b = g->b;
    float *a_copy = NULL, *b_copy = NULL;
    int64_t c_span = span(g->m, g->n, g->ldc, g->batch, g->stride_c);
    const char *why = NULL;
    if (overlap(g->c, c_span, a, span(ar, ac, g->lda, g->batch, g->stride_a))) {
        a = a_copy = pack(a, ar, ac, g->lda, g->batch, g->stride_a);
        d.lda = ar, d.stride_a = g->batch > 1 ? ar * ac : 0;
        if (!a_copy) why = "no memory to copy A (it overlaps C)";
    }
    if (!why && overlap(g->c, c_span, b, span(br, bc, g->ldb, g->batch, g->stride_b))) {
        b = b_copy = pack(b, br, bc, g->ldb, g->batch, g->stride_b);
        d.ldb = br, d.stride_b = g->batch > 1 ? br * bc : 0;
        if (!b_copy) why = "no memory to copy B (it overlaps C)";
    }
    if (!why && tsr_gemm(ctx, &d, a, b, g->c) != TSR_OK) why = tsr_last_error();
    /* why points into Tessera's thread-local message: valid until the next
     * Tessera call on this thread, which is after the caller logs it. */
    *detail = why ? why : tsr_last_kernel();
    free(a_copy);
    free(b_copy);
    return why == NULL;
}
