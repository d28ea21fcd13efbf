/* The CBLAS entries. As netlib CBLAS does, a row-major call becomes the
 * column-major call on the transposed problem, C^T = op(B)^T op(A)^T:
 * sgemm(TB, TA, N, M, K, B, ldb, A, lda, C, ldc). The Fortran routine's
 * checks then run in that order, and their INFO is mapped back to the
 * caller's parameter number, which is what netlib's cblas_xerbla prints
 * (its RowMajorStrg swap of M/N and lda/ldb). */
#include "bridge.h"
#include "entries.h"

/* Where lda, ldb and ldc sit in the entry's argument list. */
typedef struct positions {
    const char *rout;
    int lda, ldb, ldc;
} positions;

static const positions sgemm_pos = {"cblas_sgemm", 9, 11, 14};
static const positions batch_pos = {"cblas_sgemm_batch_strided", 9, 12, 15};

static char cblas_trans(int t) {
    switch (t) {
    case TSRB_CBLAS_NO_TRANS: return 'N';
    case TSRB_CBLAS_TRANS: return 'T';
    case TSRB_CBLAS_CONJ_TRANS: return 'C';
    default: return 0;
    }
}

/* Checks the arguments shared by both entries and fills g (column-major).
 * False when one is illegal, after cblas_xerbla was told. */
static bool prepare(const positions *pos, int layout, int transa, int transb, int m, int n, int k,
                    float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                    float *c, int ldc, tsrb_gemm *g) {
    bool row = layout == TSRB_CBLAS_ROW_MAJOR;
    char ta = cblas_trans(transa), tb = cblas_trans(transb);
    int param = 0;
    if (!row && layout != TSRB_CBLAS_COL_MAJOR) {
        tsrb_cblas_xerbla(1, pos->rout, "Illegal layout setting, %d\n", layout);
        param = 1;
    } else if (!ta) {
        tsrb_cblas_xerbla(2, pos->rout, "Illegal TransA setting, %d\n", transa);
        param = 2;
    } else if (!tb) {
        tsrb_cblas_xerbla(3, pos->rout, "Illegal TransB setting, %d\n", transb);
        param = 3;
    } else {
        int info = row ? tsrb_check_sgemm(tb, ta, n, m, k, ldb, lda, ldc)
                       : tsrb_check_sgemm(ta, tb, m, n, k, lda, ldb, ldc);
        switch (info) {
        case 3: param = row ? 5 : 4; break; /* the Fortran M: the caller's N when row-major */
        case 4: param = row ? 4 : 5; break;
        case 5: param = 6; break;
        case 8: param = row ? pos->ldb : pos->lda; break;
        case 10: param = row ? pos->lda : pos->ldb; break;
        case 13: param = pos->ldc; break;
        default: break; /* 0; 1 and 2 cannot happen: ta and tb are valid */
        }
        if (param) tsrb_cblas_xerbla(param, pos->rout, "%s", "");
    }
    if (param) {
        if (tsrb_verbose()) tsrb_log("tessera_blas: %s -> illegal parameter %d", pos->rout, param);
        return false;
    }
    *g = (tsrb_gemm){
        .trans_a = (row ? tb : ta) != 'N',
        .trans_b = (row ? ta : tb) != 'N',
        .m = row ? n : m, .n = row ? m : n, .k = k,
        .alpha = alpha, .beta = beta,
        .a = row ? b : a, .b = row ? a : b, .c = c,
        .lda = row ? ldb : lda, .ldb = row ? lda : ldb, .ldc = ldc,
        .batch = 1,
        .entry = pos->rout,
        .layout = row ? 'R' : 'C',
    };
    return true;
}

void cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
    tsrb_gemm g;
    if (prepare(&sgemm_pos, layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &g))
        tsrb_run(&g);
}

/* MKL's rules: strides of A and B at least 0 (0 = one matrix for the whole
 * batch), C's at least one matrix (ldc * n column-major, ldc * m row-major)
 * so that outputs do not overlap, batch_size at least 0. */
void cblas_sgemm_batch_strided(int layout, int transa, int transb, int m, int n, int k,
                               float alpha, const float *a, int lda, int stridea, const float *b,
                               int ldb, int strideb, float beta, float *c, int ldc, int stridec,
                               int batch_size) {
    tsrb_gemm g;
    if (!prepare(&batch_pos, layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &g))
        return;
    int64_t c_extent = (int64_t)ldc * (layout == TSRB_CBLAS_ROW_MAJOR ? m : n);
    int param = stridea < 0                                     ? 10
                : strideb < 0                                   ? 13
                : batch_size > 1 && (int64_t)stridec < c_extent ? 16
                : batch_size < 0                                ? 18
                                                                : 0;
    if (param) {
        tsrb_cblas_xerbla(param, batch_pos.rout, "%s", "");
        if (tsrb_verbose()) tsrb_log("tessera_blas: %s -> illegal parameter %d", batch_pos.rout, param);
        return;
    }
    bool row = layout == TSRB_CBLAS_ROW_MAJOR;
    g.stride_a = row ? strideb : stridea;
    g.stride_b = row ? stridea : strideb;
    g.stride_c = stridec;
    g.batch = batch_size;
    tsrb_run(&g);
}
