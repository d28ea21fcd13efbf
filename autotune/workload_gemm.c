/* GEMM workloads: the shapes of the bench/shapes files as tsr_problems. */
#include <math.h>
#include <string.h>

#include "tuner.h"

enum { BUF_A, BUF_B, BUF_C };

static void bind_gemm(tsr_problem *p, void *const *bufs) {
    p->u.gemm.a = bufs[BUF_A];
    p->u.gemm.b = bufs[BUF_B];
    p->u.gemm.c = bufs[BUF_C];
}

static bool dtypes_ok(tsr_dtype ab, tsr_dtype c) {
    switch (ab) {
    case TSR_F32: return c == TSR_F32;
    case TSR_F16: return c == TSR_F32 || c == TSR_F16;
    case TSR_BF16: return c == TSR_F32 || c == TSR_BF16;
    case TSR_I8: return c == TSR_I32;
    default: return false;
    }
}

/* Bytes of count elements of t, false past 16 GiB (not a tuning shape). */
static bool bytes_of(int64_t a, int64_t b, int64_t batch, tsr_dtype t, size_t *out) {
    int64_t e, e2, bytes;
    if (!tsr_mul_i64(a, b, &e) || !tsr_mul_i64(e, batch, &e2) ||
        !tsr_mul_i64(e2, (int64_t)tsr_dtype_size(t), &bytes) || bytes > ((int64_t)1 << 34))
        return false;
    *out = (size_t)bytes;
    return true;
}

tsr_status tsr_workload_gemm(tsr_workload *w, int64_t m, int64_t n, int64_t k, int64_t batch, bool trans_a,
                             bool trans_b, tsr_dtype ab, tsr_dtype c) {
    memset(w, 0, sizeof *w);
    if (m < 1 || n < 1 || k < 1 || batch < 1)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm m (%lld), n (%lld), k (%lld), batch (%lld) must be >= 1",
                        (long long)m, (long long)n, (long long)k, (long long)batch);
    if (!tsr_dtype_valid(ab) || !tsr_dtype_valid(c) || !dtypes_ok(ab, c))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: gemm dtypes %s -> %s are not supported", tsr_dtype_name(ab),
                        tsr_dtype_name(c));
    w->num_bufs = 3;
    w->dtype[BUF_A] = w->dtype[BUF_B] = ab;
    w->dtype[BUF_C] = c;
    if (!bytes_of(m, k, batch, ab, &w->bytes[BUF_A]) || !bytes_of(k, n, batch, ab, &w->bytes[BUF_B]) ||
        !bytes_of(m, n, batch, c, &w->bytes[BUF_C]))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm %lldx%lldx%lld (batch %lld) is too large to tune",
                        (long long)m, (long long)n, (long long)k, (long long)batch);
    w->is_output[BUF_C] = true;
    w->check_buf = BUF_C;
    w->bind = bind_gemm;

    tsr_problem *p = &w->problem;
    p->op = TSR_OP_GEMM;
    tsr_gemm_desc *d = &p->u.gemm.d;
    tsr_gemm_desc_init(d);
    d->trans_a = trans_a ? TSR_TRANS : TSR_NO_TRANS;
    d->trans_b = trans_b ? TSR_TRANS : TSR_NO_TRANS;
    d->m = m, d->n = n, d->k = k, d->batch = batch;
    d->a_dtype = d->b_dtype = ab;
    d->c_dtype = c;
    d->lda = trans_a ? m : k;
    d->ldb = trans_b ? k : n;
    d->ldc = n;
    d->stride_a = m * k, d->stride_b = k * n, d->stride_c = m * n;
    tsr_problem_key(p, &w->key);

    w->flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
    w->bytes_moved = (double)w->bytes[BUF_A] + (double)w->bytes[BUF_B] + (double)w->bytes[BUF_C];
    /* The reference sums in double; a kernel sums k products in f32 in any
     * order: allow k ulps of the products' scale (inputs are in [-1, 1)),
     * plus the rounding of a narrow output. */
    if (c == TSR_I32) {
        w->atol = w->rtol = 0.0;
    } else {
        w->atol = (double)k * ldexp(1.0, -21);
        w->rtol = c == TSR_F16 ? ldexp(1.0, -9) : c == TSR_BF16 ? ldexp(1.0, -6) : 1e-5;
    }
    return TSR_OK;
}

static bool dtype_named(const char *s, size_t len, tsr_dtype *t) {
    for (int i = TSR_F32; i <= TSR_I32; i++) {
        const char *name = tsr_dtype_name((tsr_dtype)i);
        if (strlen(name) == len && memcmp(name, s, len) == 0) {
            *t = (tsr_dtype)i;
            return true;
        }
    }
    return false;
}

tsr_status tsr_workload_from_record(tsr_workload *w, const tsr_table_rec_view *v) {
    if (strcmp(v->op, "attention") == 0) return tsr_workload_attention_from_record(w, v);
    if (strcmp(v->op, "conv2d") == 0) return tsr_workload_conv_from_record(w, v);
    if (strcmp(v->op, "gemm") != 0)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: no workload for %s records yet", v->op);
    if (strcmp(v->variant, "epi=none") != 0)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: gemm records with an epilogue (%s) cannot be re-timed yet",
                        v->variant);
    tsr_dtype t[3];
    const char *s = v->dtypes;
    for (int i = 0; i < 3; i++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (!dtype_named(s, len, &t[i]) || (i < 2) != (end != NULL))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm record dtypes '%s' are not a,b,c", v->dtypes);
        s = end ? end + 1 : s + len;
    }
    if (t[0] != t[1]) return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: gemm record dtypes '%s' mix inputs", v->dtypes);
    const char *l = v->layout;
    if (strlen(l) != 2 || !strchr("NT", l[0]) || !strchr("NT", l[1]))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm record layout '%s' is not NN, NT, TN or TT", l);
    static const char *const names[] = {"m", "n", "k", "batch"};
    if (v->ndims != 4) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm record shape '%s'", v->shape);
    for (int i = 0; i < 4; i++)
        if (strcmp(v->dim_names[i], names[i]) != 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: gemm record shape '%s' is not m,n,k,batch", v->shape);
    return tsr_workload_gemm(w, v->dims[0], v->dims[1], v->dims[2], v->dims[3], l[0] == 'T', l[1] == 'T', t[0],
                             t[2]);
}
