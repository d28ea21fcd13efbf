/* DLPack: the declared structs' layout (v0.8 ABI), DLTensor -> tsr_tensor_desc
 * (every dtype, shapes, strides, byte offsets), DLTensor -> tsr_gemm_desc
 * (row/column-major views, transposed views as trans flags, batches, folded
 * shared operands) checked end to end against a naive product, the device
 * check against each context present, and every error with its message. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSR_DLPACK_OWN_DECLARATIONS 1 /* test the declarations shipped in the header */
#include "tessera_dlpack.h"
#include "testutil.h"

/* The layout every DLPack producer uses (LP64): DLPack v0.8 == v1.x's DLTensor. */
_Static_assert(sizeof(DLDevice) == 8, "DLDevice");
_Static_assert(sizeof(DLDataType) == 4, "DLDataType");
_Static_assert(offsetof(DLTensor, data) == 0, "DLTensor.data");
_Static_assert(offsetof(DLTensor, device) == 8, "DLTensor.device");
_Static_assert(offsetof(DLTensor, ndim) == 16, "DLTensor.ndim");
_Static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype");
_Static_assert(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
_Static_assert(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
_Static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor");
_Static_assert(offsetof(DLManagedTensor, manager_ctx) == 48, "DLManagedTensor.manager_ctx");
_Static_assert(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor.deleter");
_Static_assert(sizeof(DLManagedTensor) == 64, "DLManagedTensor");
/* DLPack 1.0's versioned managed tensor (dlpack.h v1.0, LP64). */
_Static_assert(DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION == 0, "DLPack version declared");
_Static_assert(sizeof(DLPackVersion) == 8, "DLPackVersion");
_Static_assert(offsetof(DLManagedTensorVersioned, version) == 0, "DLManagedTensorVersioned.version");
_Static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "DLManagedTensorVersioned.manager_ctx");
_Static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "DLManagedTensorVersioned.deleter");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "DLManagedTensorVersioned.flags");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "DLManagedTensorVersioned.dl_tensor");
_Static_assert(sizeof(DLManagedTensorVersioned) == 80, "DLManagedTensorVersioned");
_Static_assert(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2, "DLPack flags");
_Static_assert(kDLCPU == 1 && kDLCUDA == 2 && kDLCUDAHost == 3 && kDLOpenCL == 4 && kDLROCM == 10 &&
                   kDLROCMHost == 11 && kDLCUDAManaged == 13,
               "DLDeviceType values");
_Static_assert(kDLInt == 0 && kDLUInt == 1 && kDLFloat == 2 && kDLBfloat == 4 && kDLComplex == 5 && kDLBool == 6,
               "DLDataTypeCode values");

static const DLDataType F32 = {kDLFloat, 32, 1}, F16 = {kDLFloat, 16, 1}, BF16 = {kDLBfloat, 16, 1},
                        I8 = {kDLInt, 8, 1}, I32 = {kDLInt, 32, 1};
static const DLDevice CPU = {kDLCPU, 0};

static DLTensor dl(void *data, int32_t ndim, DLDataType t, int64_t *shape, int64_t *strides) {
    DLTensor x;
    memset(&x, 0, sizeof x);
    x.data = data;
    x.device = CPU;
    x.ndim = ndim;
    x.dtype = t;
    x.shape = shape;
    x.strides = strides;
    return x;
}

/* The status is st and tsr_last_error() contains every fragment given. */
#define EXPECT_ERR(call, st, ...)                                                                    \
    do {                                                                                             \
        ck_assert_int_eq((call), (st));                                                              \
        const char *frags_[] = {__VA_ARGS__};                                                        \
        for (size_t i_ = 0; i_ < sizeof frags_ / sizeof frags_[0]; i_++)                             \
            ck_assert_msg(strstr(tsr_last_error(), frags_[i_]) != NULL, "message '%s' lacks '%s'", \
                          tsr_last_error(), frags_[i_]);                                             \
    } while (0)

/* ------------------------------------------------------------ tensor desc */

START_TEST(tensor_dtypes) {
    const struct {
        DLDataType dl;
        tsr_dtype t;
    } map[] = {{F32, TSR_F32}, {F16, TSR_F16}, {BF16, TSR_BF16}, {I8, TSR_I8}, {I32, TSR_I32}};
    float buf[8];
    int64_t shape[] = {2, 4};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        DLTensor x = dl(buf, 2, map[i].dl, shape, NULL);
        tsr_tensor_desc d;
        void *p = NULL;
        ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
        ck_assert_int_eq(d.dtype, map[i].t);
        ck_assert_ptr_eq(p, buf);
        ck_assert_str_eq(tsr_last_error(), "");
    }
}
END_TEST

START_TEST(tensor_bad_dtypes) {
    float buf[4];
    int64_t shape[] = {4};
    tsr_tensor_desc d;
    const struct {
        DLDataType t;
        const char *name;
    } bad[] = {
        {{kDLFloat, 64, 1}, "float64"},   {{kDLComplex, 64, 1}, "complex64"}, {{kDLUInt, 8, 1}, "uint8"},
        {{kDLBool, 8, 1}, "bool8"},       {{kDLFloat, 32, 4}, "float32x4"},   {{kDLInt, 16, 1}, "int16"},
        {{kDLBfloat, 32, 1}, "bfloat32"}, {{kDLOpaqueHandle, 64, 1}, "opaque64"}, {{42, 8, 1}, "type code 42"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        DLTensor x = dl(buf, 1, bad[i].t, shape, NULL);
        EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "tensor_desc_from_dlpack: tensor",
                   bad[i].name, "float32, float16, bfloat16, int8 or int32");
    }
    DLTensor x = dl(buf, 1, (DLDataType){kDLFloat, 32, 2}, shape, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "lanes 2");
}
END_TEST

START_TEST(tensor_shapes_strides_offsets) {
    float buf[64];
    tsr_tensor_desc d;
    void *p;
    /* NULL strides: compact row-major */
    int64_t s3[] = {2, 3, 5};
    DLTensor x = dl(buf, 3, F32, s3, NULL);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert_int_eq(d.ndim, 3);
    ck_assert(d.shape[0] == 2 && d.shape[1] == 3 && d.shape[2] == 5);
    ck_assert(d.strides[0] == 15 && d.strides[1] == 5 && d.strides[2] == 1);
    /* explicit strides (a transposed view) are kept; byte_offset moves data */
    int64_t s2[] = {5, 3}, st2[] = {1, 5};
    x = dl(buf, 2, F16, s2, st2);
    x.byte_offset = 6;
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert(d.strides[0] == 1 && d.strides[1] == 5 && d.dtype == TSR_F16);
    ck_assert_ptr_eq(p, (char *)buf + 6);
    /* data_out may be NULL */
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_OK);
    /* 0-d: one element */
    x = dl(buf, 0, F32, NULL, NULL);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert_int_eq(d.ndim, 0);
    /* TSR_MAX_DIMS dims */
    int64_t s8[8] = {1, 2, 1, 2, 1, 2, 1, 3};
    x = dl(buf, 8, F32, s8, NULL);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert(d.ndim == 8 && d.strides[7] == 1 && d.strides[6] == 3 && d.strides[0] == 24);
    /* a broadcast dim (stride 0) stays 0; a negative stride on an extent-1 dim is unused */
    int64_t sb[] = {4, 1, 3}, stb[] = {0, -7, 1};
    x = dl(buf, 3, F32, sb, stb);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert(d.strides[0] == 0 && d.strides[1] == 0 && d.strides[2] == 1);
    /* all strides 0 with an extent-1 dim: that dim gets stride 1 so the view stays a broadcast */
    int64_t sz[] = {3, 1, 4}, stz[] = {0, 0, 0};
    x = dl(buf, 3, F32, sz, stz);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert(d.strides[0] == 0 && d.strides[1] == 1 && d.strides[2] == 0);
    /* empty tensors may have a NULL data pointer and any strides */
    int64_t se[] = {0, 3}, ste[] = {-3, 1};
    x = dl(NULL, 2, F32, se, ste);
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, &p), TSR_OK);
    ck_assert_ptr_null(p);
    ck_assert(d.shape[0] == 0 && d.shape[1] == 3);
}
END_TEST

START_TEST(tensor_errors) {
    float buf[16];
    tsr_tensor_desc d;
    int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    DLTensor x = dl(buf, 9, F32, s9, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "tensor->ndim (9) must be in 0..8");
    x.ndim = -1;
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT, "tensor->ndim (-1)");
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(NULL, &d, NULL), TSR_ERR_INVALID_ARGUMENT,
               "tensor_desc_from_dlpack: tensor is NULL");
    int64_t s2[] = {2, 3};
    x = dl(buf, 2, F32, s2, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, NULL, NULL), TSR_ERR_INVALID_ARGUMENT, "out is NULL");
    x.shape = NULL;
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT, "tensor->shape is NULL");
    int64_t neg[] = {2, -3};
    x = dl(buf, 2, F32, neg, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT, "tensor->shape[1] (-3) < 0");
    int64_t st[] = {-3, 1};
    x = dl(buf + 3, 2, F32, s2, st);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "tensor->strides[0] (-3) is negative",
               "shape (2, 3), strides (-3, 1)");
    x = dl(NULL, 2, F32, s2, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT,
               "tensor->data is NULL but it holds 6 elements");
    int64_t zs[] = {0, 0};
    x = dl(buf, 2, F32, s2, zs);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "every stride of tensor is 0",
               "shape (2, 3)");
    x = dl(buf, 2, F32, s2, NULL);
    x.device = (DLDevice){kDLOpenCL, 0};
    x.byte_offset = 16;
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_NOT_SUPPORTED, "tensor->byte_offset (16)",
               "cl_mem");
    x.byte_offset = 0; /* an OpenCL handle without an offset is fine */
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_OK);
    int64_t huge[] = {INT64_MAX / 2, 4};
    x = dl(buf, 2, F32, huge, NULL);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT, "element count of tensor");
    int64_t big[] = {3, 2}, bigst[] = {INT64_MAX / 2, 1};
    x = dl(buf, 2, F32, big, bigst);
    EXPECT_ERR(tsr_tensor_desc_from_dlpack(&x, &d, NULL), TSR_ERR_INVALID_ARGUMENT, "byte extent of tensor");
}
END_TEST

/* A desc from DLPack runs: y = relu(x) over a transposed, offset view. */
START_TEST(tensor_desc_runs) {
    tsr_context *ctx;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[1 + 4 * 3], y[12];
    for (int i = 0; i < 13; i++) x[i] = (float)(i % 2 ? i : -i);
    int64_t shape[] = {3, 4}, strides[] = {1, 3}; /* x^T of a 4x3 row-major block at x + 1 */
    DLTensor xt = dl(x, 2, F32, shape, strides);
    xt.byte_offset = sizeof(float);
    tsr_tensor_desc xd, yd = tsr_tensor_contiguous(TSR_F32, 2, shape);
    void *xp;
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(&xt, &xd, &xp), TSR_OK);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_RELU, &xd, xp, &yd, y), TSR_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            float v = x[1 + j * 3 + i];
            ck_assert_float_eq(y[i * 4 + j], v > 0 ? v : 0.0f);
        }
    tsr_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------------------- GEMM */

/* A matrix view for the tests: logical rows x cols (batch of them) stored
 * with the given strides inside its own buffer. */
typedef struct tmat {
    int ndim;
    int64_t shape[3], strides[3];
    float *buf;
    size_t elems;
} tmat;

static tmat tm(int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr, int64_t sc, uint64_t seed) {
    tmat m;
    memset(&m, 0, sizeof m);
    m.ndim = batch ? 3 : 2;
    int o = batch ? 1 : 0;
    if (batch) m.shape[0] = batch, m.strides[0] = sb;
    m.shape[o] = rows, m.shape[o + 1] = cols;
    m.strides[o] = sr, m.strides[o + 1] = sc;
    int64_t last = 0;
    for (int i = 0; i < m.ndim; i++) last += (m.shape[i] - 1) * m.strides[i];
    m.elems = (size_t)last + 1;
    m.buf = malloc(m.elems * sizeof(float));
    tt_fill(m.buf, TSR_F32, (int64_t)m.elems, seed, -1.0f, 1.0f);
    return m;
}

static float at(const tmat *m, int64_t b, int64_t i, int64_t j) {
    int o = m->ndim == 3;
    int64_t off = (o ? b * m->strides[0] : 0) + i * m->strides[o] + j * m->strides[o + 1];
    return m->buf[off];
}

static DLTensor dlm(tmat *m) { return dl(m->buf, m->ndim, F32, m->shape, m->strides); }

/* Builds the desc from the views, runs tsr_gemm with alpha 1.5 and beta 0.5
 * and checks every c element (and that what lies between them is untouched). */
static void gemm_case(const char *what, tmat a, tmat b, tmat c, tsr_layout want_layout, tsr_transpose want_ta,
                      tsr_transpose want_tb, int64_t want_batch) {
    tsr_context *ctx;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    DLTensor da = dlm(&a), db = dlm(&b), dc = dlm(&c);
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.alpha = 1.5f;
    d.beta = 0.5f;
    const void *ap, *bp;
    void *cp;
    tsr_status st = tsr_gemm_desc_from_dlpack(&da, &db, &dc, &d, &ap, &bp, &cp);
    ck_assert_msg(st == TSR_OK, "%s: %s", what, tsr_last_error());
    ck_assert_msg(d.layout == want_layout && d.trans_a == want_ta && d.trans_b == want_tb && d.batch == want_batch,
                  "%s: layout %d trans %d %d batch %lld", what, d.layout, d.trans_a, d.trans_b, (long long)d.batch);
    ck_assert(d.alpha == 1.5f && d.beta == 0.5f); /* left alone */
    float *c0 = malloc(c.elems * sizeof(float));
    memcpy(c0, c.buf, c.elems * sizeof(float));
    st = tsr_gemm(ctx, &d, ap, bp, cp);
    ck_assert_msg(st == TSR_OK, "%s: tsr_gemm: %s", what, tsr_last_error());
    int ob = c.ndim == 3;
    int64_t B = ob ? c.shape[0] : 1, M = c.shape[ob], N = c.shape[ob + 1], K = a.shape[a.ndim - 1];
    tmat c_old = c;
    c_old.buf = c0;
    char *written = calloc(c.elems, 1);
    for (int64_t bb = 0; bb < B; bb++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t p = 0; p < K; p++)
                    acc += (double)at(&a, a.ndim == 3 ? bb : 0, i, p) * at(&b, b.ndim == 3 ? bb : 0, p, j);
                double want = 1.5 * acc + 0.5 * at(&c_old, bb, i, j);
                float got = at(&c, bb, i, j);
                ck_assert_msg(fabs(got - want) <= 1e-4 * (1 + fabs(want)), "%s: c[%lld][%lld][%lld] = %g, want %g",
                              what, (long long)bb, (long long)i, (long long)j, (double)got, want);
                written[(ob ? bb * c.strides[0] : 0) + i * c.strides[ob] + j * c.strides[ob + 1]] = 1;
            }
    for (size_t e = 0; e < c.elems; e++)
        if (!written[e]) ck_assert_msg(c.buf[e] == c0[e], "%s: c's padding element %zu was written", what, e);
    free(written);
    free(c0);
    free(a.buf), free(b.buf), free(c.buf);
    tsr_context_destroy(ctx);
}

START_TEST(gemm_layouts) {
    const int64_t M = 7, N = 5, K = 3;
    /* all row-major, padded leading dimensions */
    gemm_case("row", tm(0, M, K, 0, K + 2, 1, 1), tm(0, K, N, 0, N, 1, 2), tm(0, M, N, 0, N + 1, 1, 3),
              TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
    /* a is the transposed view of a k x m row-major array: trans_a, no copy */
    gemm_case("a^T", tm(0, M, K, 0, 1, M, 4), tm(0, K, N, 0, N, 1, 5), tm(0, M, N, 0, N, 1, 6), TSR_ROW_MAJOR,
              TSR_TRANS, TSR_NO_TRANS, 1);
    /* b transposed (nn.Linear's weight) */
    gemm_case("b^T", tm(0, M, K, 0, K, 1, 7), tm(0, K, N, 0, 1, K + 1, 8), tm(0, M, N, 0, N, 1, 9), TSR_ROW_MAJOR,
              TSR_NO_TRANS, TSR_TRANS, 1);
    /* everything column-major: layout col, no transposes */
    gemm_case("col", tm(0, M, K, 0, 1, M + 3, 10), tm(0, K, N, 0, 1, K, 11), tm(0, M, N, 0, 1, M, 12),
              TSR_COL_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
    /* column-major c with row-major a and b: both transposed in column terms */
    gemm_case("col c, row a b", tm(0, M, K, 0, K, 1, 13), tm(0, K, N, 0, N, 1, 14), tm(0, M, N, 0, 1, M + 2, 15),
              TSR_COL_MAJOR, TSR_TRANS, TSR_TRANS, 1);
    /* extent-1 dims take any stride: a 1 x k row, an m x 1 column, k = 1 */
    gemm_case("vector rows", tm(0, 1, K, 0, 999, 1, 16), tm(0, K, N, 0, N, 1, 17), tm(0, 1, N, 0, 12345, 1, 18),
              TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
    gemm_case("k = 1", tm(0, M, 1, 0, 1, 77, 19), tm(0, 1, N, 0, 3, 1, 20), tm(0, M, N, 0, N, 1, 21), TSR_ROW_MAJOR,
              TSR_NO_TRANS, TSR_NO_TRANS, 1);
    gemm_case("n = 1 col c", tm(0, M, K, 0, K, 1, 22), tm(0, K, 1, 0, 1, 5, 23), tm(0, M, 1, 0, 1, 0, 24),
              TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
}
END_TEST

START_TEST(gemm_batches) {
    const int64_t B = 3, M = 5, N = 4, K = 6;
    /* strided batch, row-major, with gaps between the matrices */
    gemm_case("batch", tm(B, M, K, M * K + 3, K, 1, 1), tm(B, K, N, K * N, N, 1, 2), tm(B, M, N, M * N + 1, N, 1, 3),
              TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, B);
    /* batch of transposed a */
    gemm_case("batch a^T", tm(B, M, K, M * K, 1, M, 4), tm(B, K, N, K * N, N, 1, 5), tm(B, M, N, M * N, N, 1, 6),
              TSR_ROW_MAJOR, TSR_TRANS, TSR_NO_TRANS, B);
    /* b 2-D shared by a 3-D a and c: folded into one (B*M) x K product */
    gemm_case("shared b 2-D", tm(B, M, K, M * K, K, 1, 7), tm(0, K, N, 0, 1, K, 8), tm(B, M, N, M * N, N, 1, 9),
              TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_TRANS, 1);
    /* b with batch stride 0 (an expanded view), likewise */
    gemm_case("shared b stride 0", tm(B, M, K, M * K, K, 1, 10), tm(B, K, N, 0, N, 1, 11),
              tm(B, M, N, M * N, N, 1, 12), TSR_ROW_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
    /* a shared, column-major b and c whose batch folds into their columns */
    gemm_case("shared a col", tm(0, M, K, 0, 1, M, 13), tm(B, K, N, K * N, 1, K, 14), tm(B, M, N, M * N, 1, M, 15),
              TSR_COL_MAJOR, TSR_NO_TRANS, TSR_NO_TRANS, 1);
    /* batch 1 with arbitrary batch strides */
    gemm_case("batch 1", tm(1, M, K, 5, K, 1, 16), tm(1, K, N, 0, N, 1, 17), tm(1, M, N, -4, N, 1, 18), TSR_ROW_MAJOR,
              TSR_NO_TRANS, TSR_NO_TRANS, 1);
}
END_TEST

START_TEST(gemm_dtypes) {
    uint16_t a[6], b[6];
    float c[4];
    int64_t sa[] = {2, 3}, sb[] = {3, 2}, sc[] = {2, 2};
    const struct {
        DLDataType in, out;
        tsr_dtype t, tc;
    } map[] = {{F16, F32, TSR_F16, TSR_F32}, {BF16, BF16, TSR_BF16, TSR_BF16}, {I8, I32, TSR_I8, TSR_I32}};
    for (int i = 0; i < 3; i++) {
        DLTensor da = dl(a, 2, map[i].in, sa, NULL), db = dl(b, 2, map[i].in, sb, NULL),
                 dc = dl(c, 2, map[i].out, sc, NULL);
        tsr_gemm_desc d;
        tsr_gemm_desc_init(&d);
        ck_assert_int_eq(tsr_gemm_desc_from_dlpack(&da, &db, &dc, &d, NULL, NULL, NULL), TSR_OK);
        ck_assert(d.a_dtype == map[i].t && d.b_dtype == map[i].t && d.c_dtype == map[i].tc);
        ck_assert(d.m == 2 && d.n == 2 && d.k == 3 && d.lda == 3 && d.ldb == 2 && d.ldc == 2);
    }
}
END_TEST

START_TEST(gemm_errors) {
    float buf[256];
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    int64_t s23[] = {2, 3}, s32[] = {3, 2}, s22[] = {2, 2}, s42[] = {4, 2}, s24[] = {2, 4};
    DLTensor a = dl(buf, 2, F32, s23, NULL), b = dl(buf + 64, 2, F32, s32, NULL), c = dl(buf + 128, 2, F32, s22, NULL);
    ck_assert_int_eq(tsr_gemm_desc_from_dlpack(&a, &b, &c, &d, NULL, NULL, NULL), TSR_OK);

    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &c, NULL, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "gemm_desc_from_dlpack: d is NULL");
    tsr_gemm_desc small = d;
    small.size = 8;
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &c, &small, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "d->size (8)", "tsr_gemm_desc_init");
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, NULL, &c, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT, "b is NULL");
    /* shapes */
    DLTensor bad = dl(buf + 64, 2, F32, s42, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &bad, &c, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "b has 4 rows but a has 3 columns");
    bad = dl(buf + 128, 2, F32, s42, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c has 4 rows but a has 2");
    bad = dl(buf + 128, 2, F32, s24, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c has 4 columns but b has 2");
    int64_t s4[] = {1, 2, 3, 4};
    bad = dl(buf, 4, F32, s4, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&bad, &b, &c, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "a->ndim (4) must be 2 or 3");
    bad = dl(buf, 1, F32, s4, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c->ndim (1) must be 2 or 3");
    /* dtype */
    bad = b;
    bad.dtype = (DLDataType){kDLFloat, 64, 1};
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &bad, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "gemm_desc_from_dlpack: b has dtype float64");
    /* layouts it cannot express */
    int64_t no_unit[] = {6, 2};
    bad = dl(buf, 2, F32, s23, no_unit);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&bad, &b, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "a (2 x 3, strides 6, 2) has no unit stride");
    int64_t overlap[] = {2, 1};
    bad = dl(buf, 2, F32, s23, overlap);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&bad, &b, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "a (2 x 3, strides 2, 1) is row-major but its row stride (2) is below the 3 elements");
    int64_t overlap_c[] = {1, 1};
    bad = dl(buf + 128, 2, F32, s22, overlap_c);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED, "c (2 x 2");
    int64_t negative[] = {-3, 1};
    bad = dl(buf + 3, 2, F32, s23, negative);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&bad, &b, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "a->strides[0] (-3) is negative");
    /* devices */
    bad = b;
    bad.device = (DLDevice){kDLCUDA, 1};
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &bad, &c, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "b is on cuda:1 but a is on cpu:0");
    bad = c;
    bad.device = (DLDevice){kDLCPU, 0};
    a.device = (DLDevice){kDLCUDA, 0};
    b.device = a.device;
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c is on cpu:0 but a is on cuda:0");
    a.device = b.device = CPU;
    /* null data */
    bad = c;
    bad.data = NULL;
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c->data is NULL but it holds 4 elements");
}
END_TEST

START_TEST(gemm_batch_errors) {
    float buf[512];
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    int64_t sa[] = {3, 2, 4}, sb[] = {3, 4, 5}, sc[] = {3, 2, 5}, sb2[] = {2, 4, 5}, sc1[] = {1, 2, 5};
    DLTensor a = dl(buf, 3, F32, sa, NULL), b = dl(buf + 100, 3, F32, sb, NULL), c = dl(buf + 200, 3, F32, sc, NULL);
    ck_assert_int_eq(tsr_gemm_desc_from_dlpack(&a, &b, &c, &d, NULL, NULL, NULL), TSR_OK);
    ck_assert(d.batch == 3 && d.stride_a == 8 && d.stride_b == 20 && d.stride_c == 10);
    DLTensor bad = dl(buf + 100, 3, F32, sb2, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &bad, &c, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "b has a batch of 2 but c has 3");
    bad = dl(buf + 200, 3, F32, sc1, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "a has a batch of 3 but c has 1");
    int64_t c_bcast[] = {0, 5, 1};
    bad = dl(buf + 200, 3, F32, sc, c_bcast);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a, &b, &bad, &d, NULL, NULL, NULL), TSR_ERR_INVALID_ARGUMENT,
               "c's batch stride is 0 with a batch of 3");
    /* shared b, but a's batch does not fold into its rows (a gap between the matrices) */
    int64_t sb_2d[] = {4, 5}, a_gap[] = {9, 4, 1};
    DLTensor b2 = dl(buf + 100, 2, F32, sb_2d, NULL);
    bad = dl(buf, 3, F32, sa, a_gap);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&bad, &b2, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "b is shared across the batch of 3", "pass b with a batch dimension");
    /* shared a with row-major b and c: the batch does not fold into their columns */
    int64_t sa_2d[] = {2, 4};
    DLTensor a2 = dl(buf, 2, F32, sa_2d, NULL);
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a2, &b, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "a is shared across the batch of 3", "pass a with a batch dimension");
    EXPECT_ERR(tsr_gemm_desc_from_dlpack(&a2, &b2, &c, &d, NULL, NULL, NULL), TSR_ERR_NOT_SUPPORTED,
               "a and b are both shared across c's batch of 3");
}
END_TEST

/* ----------------------------------------------------------------- devices */

START_TEST(device_matches) {
    tt_context cs[TT_MAX_CONTEXTS];
    int n = tt_contexts_open("dlpack", cs, TT_MAX_CONTEXTS);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        tsr_context_info info = {.size = sizeof info};
        ck_assert_int_eq(tsr_context_get_info(cs[i].ctx, &info), TSR_OK);
        int dev = info.device;
        const struct {
            DLDevice d;
            bool ok;
        } cases[] = {
            {{kDLCPU, 0}, info.backend == TSR_BACKEND_CPU},
            {{kDLCUDAHost, 0}, info.backend == TSR_BACKEND_CPU},
            {{kDLROCMHost, 0}, info.backend == TSR_BACKEND_CPU},
            {{kDLCUDA, dev}, info.backend == TSR_BACKEND_CUDA},
            {{kDLCUDA, dev + 1}, false},
            {{kDLCUDAManaged, dev}, info.backend == TSR_BACKEND_CUDA},
            {{kDLROCM, dev}, info.backend == TSR_BACKEND_HIP},
            {{kDLOpenCL, dev}, info.backend == TSR_BACKEND_OPENCL},
            {{kDLOpenCL, dev + 1}, false},
            {{kDLVulkan, 0}, false},
        };
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++) {
            tsr_status st = tsr_dlpack_device_matches(cs[i].ctx, cases[j].d);
            ck_assert_msg((st == TSR_OK) == cases[j].ok, "%s: device type %d id %d: %s", cs[i].label,
                          (int)cases[j].d.device_type, (int)cases[j].d.device_id, tsr_last_error());
            if (!cases[j].ok) {
                ck_assert_int_eq(st, TSR_ERR_WRONG_CONTEXT);
                char want[64];
                snprintf(want, sizeof want, "the tensor is on %s:%d but the context is %s device %d",
                         tsr_dlpack_device_name((int32_t)cases[j].d.device_type), (int)cases[j].d.device_id,
                         tsr_backend_name(info.backend), dev);
                ck_assert_msg(strstr(tsr_last_error(), want), "'%s' lacks '%s'", tsr_last_error(), want);
            }
        }
    }
    tt_contexts_close(cs, n);
    DLDevice cpu = {kDLCPU, 0};
    EXPECT_ERR(tsr_dlpack_device_matches(NULL, cpu), TSR_ERR_INVALID_ARGUMENT, "dlpack_device_matches: ctx is NULL");
    ck_assert_str_eq(tsr_dlpack_device_name(kDLCUDAManaged), "cuda_managed");
    ck_assert_str_eq(tsr_dlpack_device_name(99), "unknown");
}
END_TEST

/* ----------------------------------------------------------- DLPack 1.x */

static int deleted;
static void count_delete(DLManagedTensorVersioned *self) {
    (void)self;
    deleted++;
}

START_TEST(versioned) {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    DLManagedTensorVersioned m;
    memset(&m, 0, sizeof m);
    m.version.major = 1;
    m.version.minor = 3; /* a later minor version only adds: accepted */
    m.deleter = count_delete;
    m.dl_tensor = dl(buf, 2, F32, shape, NULL);
    m.dl_tensor.byte_offset = sizeof(float);
    deleted = 0;

    const DLTensor *t = NULL;
    ck_assert_int_eq(tsr_dlpack_versioned_tensor(&m, 1, "y", &t), TSR_OK);
    ck_assert_ptr_eq(t, &m.dl_tensor);
    tsr_tensor_desc d;
    void *data = NULL;
    ck_assert_int_eq(tsr_tensor_desc_from_dlpack(t, &d, &data), TSR_OK);
    ck_assert_ptr_eq(data, &buf[1]);
    ck_assert_int_eq(d.dtype, TSR_F32);
    ck_assert_int_eq(d.shape[1], 3);

    /* read-only: fine as an input, refused as an output, by name */
    m.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED;
    ck_assert_int_eq(tsr_dlpack_versioned_tensor(&m, 0, "x", &t), TSR_OK);
    ck_assert_ptr_eq(t, &m.dl_tensor);
    EXPECT_ERR(tsr_dlpack_versioned_tensor(&m, 1, "y", &t), TSR_ERR_INVALID_ARGUMENT,
               "dlpack_versioned_tensor: y is flagged read-only", "cannot be an output");
    ck_assert_ptr_null(t);
    m.flags = DLPACK_FLAG_BITMASK_IS_COPIED; /* a copy may still be written */
    ck_assert_int_eq(tsr_dlpack_versioned_tensor(&m, 1, "y", &t), TSR_OK);

    /* another major version: its layout past the version is unknown */
    m.version.major = 2;
    m.version.minor = 0;
    EXPECT_ERR(tsr_dlpack_versioned_tensor(&m, 0, "a", &t), TSR_ERR_NOT_SUPPORTED,
               "a is a DLPack 2.0 tensor; this library reads DLPack 1.x", "max_version=(1, 0)");
    ck_assert_ptr_null(t);
    m.version.major = 0;
    EXPECT_ERR(tsr_dlpack_versioned_tensor(&m, 0, NULL, &t), TSR_ERR_NOT_SUPPORTED, "tensor is a DLPack 0.0 tensor");

    EXPECT_ERR(tsr_dlpack_versioned_tensor(NULL, 0, "b", &t), TSR_ERR_INVALID_ARGUMENT,
               "dlpack_versioned_tensor: b is NULL");
    EXPECT_ERR(tsr_dlpack_versioned_tensor(&m, 0, "b", NULL), TSR_ERR_INVALID_ARGUMENT, "tensor_out is NULL");
    ck_assert_int_eq(deleted, 0); /* the caller owns the tensor: never deleted here */
}
END_TEST

int main(void) {
    Suite *s = suite_create("dlpack");
    TCase *t = tcase_create("tensor");
    tcase_add_test(t, tensor_dtypes);
    tcase_add_test(t, tensor_bad_dtypes);
    tcase_add_test(t, tensor_shapes_strides_offsets);
    tcase_add_test(t, tensor_errors);
    tcase_add_test(t, tensor_desc_runs);
    suite_add_tcase(s, t);
    TCase *g = tcase_create("gemm");
    tcase_add_test(g, gemm_layouts);
    tcase_add_test(g, gemm_batches);
    tcase_add_test(g, gemm_dtypes);
    tcase_add_test(g, gemm_errors);
    tcase_add_test(g, gemm_batch_errors);
    suite_add_tcase(s, g);
    TCase *v = tcase_create("versioned");
    tcase_add_test(v, versioned);
    suite_add_tcase(s, v);
    TCase *dv = tcase_create("devices");
    tcase_add_test(dv, device_matches);
    suite_add_tcase(s, dv);
    return tt_run_suite(s);
}
