/* DLPack -> Tessera: tensor descriptors, GEMM descriptors and device checks
 * from DLTensors (include/tessera_dlpack.h). Pure bookkeeping: no memory is
 * touched, no backend is called. */
#include <stdio.h>
#include <string.h>

/* The library always compiles against the declarations in tessera_dlpack.h
 * (the DLTensor ABI is the same in every DLPack >= 0.6), whatever DLPack
 * header the build machine may have. */
#define TSR_DLPACK_OWN_DECLARATIONS 1
#include "internal.h"
#include "tessera_dlpack.h"

const char *tsr_dlpack_device_name(int32_t device_type) {
    switch (device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLVPI: return "vpi";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLExtDev: return "ext_dev";
    case kDLCUDAManaged: return "cuda_managed";
    case kDLOneAPI: return "oneapi";
    case kDLWebGPU: return "webgpu";
    case kDLHexagon: return "hexagon";
    }
    return "unknown";
}

/* "float64", "complex64", "int16x4" ... for messages. */
static const char *dl_dtype_str(DLDataType t, char *buf, size_t n) {
    const char *code;
    switch (t.code) {
    case kDLInt: code = "int"; break;
    case kDLUInt: code = "uint"; break;
    case kDLFloat: code = "float"; break;
    case kDLOpaqueHandle: code = "opaque"; break;
    case kDLBfloat: code = "bfloat"; break;
    case kDLComplex: code = "complex"; break;
    case kDLBool: code = "bool"; break;
    default: snprintf(buf, n, "type code %u, %u bits", (unsigned)t.code, (unsigned)t.bits); return buf;
    }
    if (t.lanes == 1) snprintf(buf, n, "%s%u", code, (unsigned)t.bits);
    else snprintf(buf, n, "%s%ux%u", code, (unsigned)t.bits, (unsigned)t.lanes);
    return buf;
}

static const char *dl_device_str(DLDevice d, char *buf, size_t n) {
    snprintf(buf, n, "%s:%d", tsr_dlpack_device_name((int32_t)d.device_type), (int)d.device_id);
    return buf;
}

static const char *dims_str(int32_t ndim, const int64_t *v, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "(");
    for (int32_t i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (used < n) snprintf(buf + used, n - used, ndim == 1 ? ",)" : ")");
    return buf;
}

static tsr_status map_dtype(const char *who, const char *name, DLDataType t, tsr_dtype *out) {
    if (t.lanes == 1) {
        if (t.code == kDLFloat && t.bits == 32) return *out = TSR_F32, TSR_OK;
        if (t.code == kDLFloat && t.bits == 16) return *out = TSR_F16, TSR_OK;
        if (t.code == kDLBfloat && t.bits == 16) return *out = TSR_BF16, TSR_OK;
        if (t.code == kDLInt && t.bits == 8) return *out = TSR_I8, TSR_OK;
        if (t.code == kDLInt && t.bits == 32) return *out = TSR_I32, TSR_OK;
    }
    char s[48];
    return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                    "%s: %s has dtype %s (code %u, bits %u, lanes %u), which Tessera does not take "
                    "(float32, float16, bfloat16, int8 or int32, lanes 1)",
                    who, name, dl_dtype_str(t, s, sizeof s), (unsigned)t.code, (unsigned)t.bits,
                    (unsigned)t.lanes);
}

/* A DLTensor checked for what every helper needs: ndim, shape, strides,
 * dtype, data; strides filled in (compact when NULL), extent-1 dims with a
 * non-negative stride. */
typedef struct dl_view {
    int32_t ndim;
    int64_t shape[TSR_MAX_DIMS];
    int64_t strides[TSR_MAX_DIMS];
    tsr_dtype dtype;
    int64_t elems;
    char *data; /* with byte_offset applied */
} dl_view;

static tsr_status view_of(const char *who, const char *name, const DLTensor *t, int32_t min_ndim,
                          int32_t max_ndim, dl_view *v) {
    if (!t) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, name);
    if (t->ndim < min_ndim || t->ndim > max_ndim) {
        if (max_ndim == TSR_MAX_DIMS)
            return tsr_fail(t->ndim > max_ndim ? TSR_ERR_NOT_SUPPORTED : TSR_ERR_INVALID_ARGUMENT,
                            "%s: %s->ndim (%d) must be in 0..%d (TSR_MAX_DIMS)", who, name, (int)t->ndim,
                            TSR_MAX_DIMS);
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s->ndim (%d) must be %d or %d", who, name, (int)t->ndim,
                        (int)min_ndim, (int)max_ndim);
    }
    tsr_status st = map_dtype(who, name, t->dtype, &v->dtype);
    if (st) return st;
    if (t->ndim > 0 && !t->shape) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s->shape is NULL", who, name);
    v->ndim = t->ndim;
    v->elems = 1;
    bool empty = false;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s->shape[%d] (%lld) < 0", who, name, (int)i,
                            (long long)t->shape[i]);
        v->shape[i] = t->shape[i];
        if (t->shape[i] == 0) empty = true;
    }
    for (int32_t i = 0; i < t->ndim && !empty; i++)
        if (!tsr_mul_i64(v->elems, v->shape[i], &v->elems)) {
            char s[200];
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the element count of %s %s overflows int64", who, name,
                            dims_str(t->ndim, t->shape, s, sizeof s));
        }
    if (empty) v->elems = 0;
    if (t->strides) {
        for (int32_t i = 0; i < t->ndim; i++) {
            int64_t s = t->strides[i];
            if (s < 0 && v->shape[i] > 1 && !empty) {
                char sh[200], ss[200];
                return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                                "%s: %s->strides[%d] (%lld) is negative (shape %s, strides %s): Tessera takes "
                                "strides >= 0 only; pass a copy",
                                who, name, (int)i, (long long)s, dims_str(t->ndim, t->shape, sh, sizeof sh),
                                dims_str(t->ndim, t->strides, ss, sizeof ss));
            }
            v->strides[i] = s < 0 ? 0 : s; /* unused: extent 1, or the tensor is empty */
        }
    } else {
        int64_t s = 1;
        for (int32_t i = t->ndim - 1; i >= 0; i--) {
            v->strides[i] = s;
            if (!tsr_mul_i64(s, v->shape[i] > 0 ? v->shape[i] : 1, &s)) s = INT64_MAX; /* count checked above */
        }
    }
    /* byte extent: (sum (shape-1)*stride + 1) * size must fit int64 */
    if (!empty) {
        int64_t last = 0, x, bytes;
        for (int32_t i = 0; i < t->ndim; i++)
            if (!tsr_mul_i64(v->shape[i] - 1, v->strides[i], &x) || !tsr_add_i64(last, x, &last)) {
                last = -1;
                break;
            }
        if (last < 0 || !tsr_add_i64(last, 1, &x) || !tsr_mul_i64(x, (int64_t)tsr_dtype_size(v->dtype), &bytes)) {
            char sh[200], ss[200];
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: the byte extent of %s (shape %s, strides %s) overflows int64",
                            who, name, dims_str(v->ndim, v->shape, sh, sizeof sh),
                            dims_str(v->ndim, v->strides, ss, sizeof ss));
        }
    }
    if (!t->data && !empty)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s->data is NULL but it holds %lld elements", who, name,
                        (long long)v->elems);
    if (t->byte_offset && t->device.device_type == kDLOpenCL)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "%s: %s->byte_offset (%llu) is not 0 on an OpenCL device: data is a cl_mem handle, "
                        "to which Tessera cannot add an offset",
                        who, name, (unsigned long long)t->byte_offset);
    if (t->byte_offset > (uint64_t)INT64_MAX)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s->byte_offset (%llu) does not fit int64", who, name,
                        (unsigned long long)t->byte_offset);
    v->data = t->data ? (char *)t->data + t->byte_offset : NULL;
    return TSR_OK;
}

tsr_status tsr_tensor_desc_from_dlpack(const DLTensor *t, tsr_tensor_desc *out, void **data_out) {
    static const char who[] = "tensor_desc_from_dlpack";
    if (!out) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: out is NULL", who);
    dl_view v;
    tsr_status st = view_of(who, "tensor", t, 0, TSR_MAX_DIMS, &v);
    if (st) return st;
    /* tsr_tensor_desc reads all-zero strides as contiguous: give an extent-1
     * dim a (harmless) stride, or refuse when there is none. */
    bool all_zero = v.ndim > 0, has_unit_dim = false;
    for (int32_t i = 0; i < v.ndim; i++) {
        if (v.strides[i]) all_zero = false;
        if (v.shape[i] == 1) has_unit_dim = true;
    }
    if (all_zero && v.elems > 1) {
        if (!has_unit_dim) {
            char sh[200];
            return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                            "%s: every stride of tensor is 0 (one element broadcast to shape %s), which "
                            "tsr_tensor_desc reads as contiguous; pass the element as an extent-1 tensor and "
                            "let the op broadcast it",
                            who, dims_str(v.ndim, v.shape, sh, sizeof sh));
        }
        for (int32_t i = 0; i < v.ndim; i++)
            if (v.shape[i] == 1) {
                v.strides[i] = 1;
                break;
            }
    }
    memset(out, 0, sizeof *out);
    out->dtype = v.dtype;
    out->ndim = v.ndim;
    for (int32_t i = 0; i < v.ndim; i++) {
        out->shape[i] = v.shape[i];
        out->strides[i] = v.strides[i];
    }
    if (data_out) *data_out = v.data;
    tsr_clear_error();
    return TSR_OK;
}

/* ------------------------------------------------------------------ GEMM */

/* One matrix of the product: rows x cols with strides sr, sc (elements),
 * batch matrices sb apart. */
typedef struct mat {
    const char *name;
    int64_t batch, rows, cols, sb, sr, sc;
    bool shared; /* one matrix for every batch entry (2-D, batch 1 or stride 0) */
} mat;

static void mat_of(const dl_view *v, const char *name, mat *m) {
    m->name = name;
    int off = v->ndim == 3;
    m->batch = off ? v->shape[0] : 1;
    m->sb = off ? v->strides[0] : 0;
    m->rows = v->shape[off];
    m->cols = v->shape[off + 1];
    m->sr = v->strides[off];
    m->sc = v->strides[off + 1];
    m->shared = m->batch == 1 || m->sb == 0;
}

/* Folds the batch into the rows (into_rows) or the columns of m: possible
 * when one batch step is exactly `rows` (or `cols`) steps of that dim. */
static bool fold(mat *m, bool into_rows) {
    if (m->batch <= 1) return true;
    if (into_rows) {
        if (m->rows > 1 && m->sb != m->rows * m->sr) return false;
        if (m->rows <= 1) m->sr = m->sb; /* the row stride was free: the batch's becomes it */
        m->rows *= m->batch;
    } else {
        if (m->cols > 1 && m->sb != m->cols * m->sc) return false;
        if (m->cols <= 1) m->sc = m->sb;
        m->cols *= m->batch;
    }
    m->batch = 1;
    m->sb = 0;
    return true;
}

/* Row-major (unit stride along a row) or column-major reading of m; ld is the
 * other stride, at least the extent it steps over. Extent-1 dims take any stride. */
static bool row_major_ld(const mat *m, int64_t *ld) {
    int64_t c = m->cols > 1 ? m->cols : 1;
    if (m->cols > 1 && m->sc != 1) return false;
    if (m->rows > 1 && m->sr < c) return false;
    *ld = m->rows > 1 ? m->sr : c;
    return true;
}
static bool col_major_ld(const mat *m, int64_t *ld) {
    int64_t r = m->rows > 1 ? m->rows : 1;
    if (m->rows > 1 && m->sr != 1) return false;
    if (m->cols > 1 && m->sc < r) return false;
    *ld = m->cols > 1 ? m->sc : r;
    return true;
}

static tsr_status no_layout(const char *who, const mat *m) {
    if ((m->cols > 1 && m->sc == 1) || (m->rows > 1 && m->sr == 1)) {
        bool rowwise = m->cols > 1 && m->sc == 1;
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "%s: %s (%lld x %lld, strides %lld, %lld) is %s but its %s stride (%lld) is below the "
                        "%lld elements of a %s: %ss would overlap, which gemm cannot express",
                        who, m->name, (long long)m->rows, (long long)m->cols, (long long)m->sr, (long long)m->sc,
                        rowwise ? "row-major" : "column-major", rowwise ? "row" : "column",
                        (long long)(rowwise ? m->sr : m->sc), (long long)(rowwise ? m->cols : m->rows),
                        rowwise ? "row" : "column", rowwise ? "row" : "column");
    }
    return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                    "%s: %s (%lld x %lld, strides %lld, %lld) has no unit stride: gemm needs each matrix "
                    "contiguous along its rows or its columns (pass a copy)",
                    who, m->name, (long long)m->rows, (long long)m->cols, (long long)m->sr, (long long)m->sc);
}

tsr_status tsr_gemm_desc_from_dlpack(const DLTensor *a, const DLTensor *b, const DLTensor *c, tsr_gemm_desc *d,
                                     const void **a_data, const void **b_data, void **c_data) {
    static const char who[] = "gemm_desc_from_dlpack";
    if (!d) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: d is NULL", who);
    if (d->size < sizeof *d)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "%s: d->size (%zu) is smaller than this library's tsr_gemm_desc (%zu); call "
                        "tsr_gemm_desc_init first",
                        who, d->size, sizeof *d);
    dl_view va, vb, vc;
    tsr_status st;
    if ((st = view_of(who, "a", a, 2, 3, &va)) || (st = view_of(who, "b", b, 2, 3, &vb)) ||
        (st = view_of(who, "c", c, 2, 3, &vc)))
        return st;
    char d0[40], d1[40];
    if (b->device.device_type != a->device.device_type || b->device.device_id != a->device.device_id)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: b is on %s but a is on %s", who,
                        dl_device_str(b->device, d0, sizeof d0), dl_device_str(a->device, d1, sizeof d1));
    if (c->device.device_type != a->device.device_type || c->device.device_id != a->device.device_id)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: c is on %s but a is on %s", who,
                        dl_device_str(c->device, d0, sizeof d0), dl_device_str(a->device, d1, sizeof d1));

    mat A, B, C;
    mat_of(&va, "a", &A);
    mat_of(&vb, "b", &B);
    mat_of(&vc, "c", &C);
    if (B.rows != A.cols)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: b has %lld rows but a has %lld columns (k must agree)", who,
                        (long long)B.rows, (long long)A.cols);
    if (C.rows != A.rows)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: c has %lld rows but a has %lld (m must agree)", who,
                        (long long)C.rows, (long long)A.rows);
    if (C.cols != B.cols)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: c has %lld columns but b has %lld (n must agree)", who,
                        (long long)C.cols, (long long)B.cols);

    /* The batch: c carries it; a and b have it too or are shared. */
    int64_t batch = C.batch;
    if (A.batch != 1 && A.batch != batch)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: a has a batch of %lld but c has %lld", who,
                        (long long)A.batch, (long long)batch);
    if (B.batch != 1 && B.batch != batch)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: b has a batch of %lld but c has %lld", who,
                        (long long)B.batch, (long long)batch);
    if (batch > 1 && C.sb == 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "%s: c's batch stride is 0 with a batch of %lld: the outputs would overlap", who,
                        (long long)batch);
    if (batch > 1) {
        /* A shared operand is written with batch = c's and a 0 stride, so
         * that the folds below see one batch step as "stay here". */
        if (A.batch == 1) A.sb = 0;
        if (B.batch == 1) B.sb = 0;
        A.batch = B.batch = batch;
        A.shared = A.sb == 0;
        B.shared = B.sb == 0;
        if (A.shared && B.shared)
            return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                            "%s: a and b are both shared across c's batch of %lld (every c[i] is the same "
                            "product); compute one and copy it",
                            who, (long long)batch);
        if (B.shared) {
            mat A2 = A, C2 = C;
            if (!fold(&A2, true) || !fold(&C2, true))
                return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                                "%s: b is shared across the batch of %lld, which needs a batch stride of 0 that "
                                "tsr_gemm_desc reads as tight, and a (batch stride %lld) and c (batch stride %lld) "
                                "do not fold the batch into their rows (batch stride = %lld x row stride); pass b "
                                "with a batch dimension",
                                who, (long long)batch, (long long)A.sb, (long long)C.sb, (long long)A.rows);
            A = A2, C = C2;
            B.batch = 1, B.sb = 0;
        } else if (A.shared) {
            mat B2 = B, C2 = C;
            if (!fold(&B2, false) || !fold(&C2, false))
                return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                                "%s: a is shared across the batch of %lld, which needs a batch stride of 0 that "
                                "tsr_gemm_desc reads as tight, and b (batch stride %lld) and c (batch stride %lld) "
                                "do not fold the batch into their columns (batch stride = %lld x column stride); "
                                "pass a with a batch dimension",
                                who, (long long)batch, (long long)B.sb, (long long)C.sb, (long long)B.cols);
            B = B2, C = C2;
            A.batch = 1, A.sb = 0;
        }
    } else {
        A.batch = B.batch = C.batch = 1;
        A.sb = B.sb = C.sb = 0;
    }

    /* c's order is the layout; a and b are read in it, transposed if stored the other way. */
    int64_t ldc, lda, ldb;
    bool row = row_major_ld(&C, &ldc);
    if (!row && !col_major_ld(&C, &ldc)) return no_layout(who, &C);
    bool a_row, b_row;
    int64_t ld_r, ld_c;
    bool ar = row_major_ld(&A, &ld_r), ac = col_major_ld(&A, &ld_c);
    if (!ar && !ac) return no_layout(who, &A);
    a_row = row ? ar : !ac;
    lda = a_row ? ld_r : ld_c;
    bool br = row_major_ld(&B, &ld_r), bc = col_major_ld(&B, &ld_c);
    if (!br && !bc) return no_layout(who, &B);
    b_row = row ? br : !bc;
    ldb = b_row ? ld_r : ld_c;

    d->layout = row ? TSR_ROW_MAJOR : TSR_COL_MAJOR;
    d->trans_a = a_row == row ? TSR_NO_TRANS : TSR_TRANS;
    d->trans_b = b_row == row ? TSR_NO_TRANS : TSR_TRANS;
    d->m = C.rows;
    d->n = C.cols;
    d->k = A.cols;
    d->a_dtype = va.dtype;
    d->b_dtype = vb.dtype;
    d->c_dtype = vc.dtype;
    d->lda = lda;
    d->ldb = ldb;
    d->ldc = ldc;
    d->batch = C.batch;
    /* A batch stride of 0 means tight to tsr_gemm; with batch 1 it is never used. */
    d->stride_a = C.batch > 1 ? A.sb : 0;
    d->stride_b = C.batch > 1 ? B.sb : 0;
    d->stride_c = C.batch > 1 ? C.sb : 0;
    if (a_data) *a_data = va.data;
    if (b_data) *b_data = vb.data;
    if (c_data) *c_data = vc.data;
    tsr_clear_error();
    return TSR_OK;
}

/* ------------------------------------------------------- DLPack 1.x */

tsr_status tsr_dlpack_versioned_tensor(const DLManagedTensorVersioned *m, int writable, const char *name,
                                       const DLTensor **tensor_out) {
    static const char who[] = "dlpack_versioned_tensor";
    const char *nm = name ? name : "tensor";
    if (!tensor_out) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: tensor_out is NULL", who);
    *tensor_out = NULL;
    if (!m) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, nm);
    /* Only the version is known to sit where we read it in a foreign major
     * version; nothing after it may be touched. */
    if (m->version.major != DLPACK_MAJOR_VERSION)
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "%s: %s is a DLPack %u.%u tensor; this library reads DLPack %d.x (ask the producer for "
                        "max_version=(%d, %d))",
                        who, nm, (unsigned)m->version.major, (unsigned)m->version.minor, DLPACK_MAJOR_VERSION,
                        DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
    if (writable && (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "%s: %s is flagged read-only by its producer (DLPACK_FLAG_BITMASK_READ_ONLY) and cannot "
                        "be an output",
                        who, nm);
    *tensor_out = &m->dl_tensor;
    tsr_clear_error();
    return TSR_OK;
}

/* ---------------------------------------------------------------- devices */

tsr_status tsr_dlpack_device_matches(const tsr_context *ctx, DLDevice device) {
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "dlpack_device_matches: ctx is NULL");
    bool ok = false;
    const int32_t t = (int32_t)device.device_type;
    switch (ctx->backend) {
    case TSR_BACKEND_CPU: ok = t == kDLCPU || t == kDLCUDAHost || t == kDLROCMHost; break;
    case TSR_BACKEND_CUDA: ok = (t == kDLCUDA || t == kDLCUDAManaged) && device.device_id == ctx->device; break;
    case TSR_BACKEND_HIP: ok = t == kDLROCM && device.device_id == ctx->device; break;
    case TSR_BACKEND_OPENCL: ok = t == kDLOpenCL && device.device_id == ctx->device; break;
    }
    if (ok) return TSR_OK;
    char s[40];
    return tsr_fail(TSR_ERR_WRONG_CONTEXT,
                    "dlpack_device_matches: the tensor is on %s but the context is %s device %d, which takes %s",
                    dl_device_str(device, s, sizeof s), tsr_backend_name(ctx->backend), ctx->device,
                    ctx->backend == TSR_BACKEND_CPU      ? "cpu (or cuda_host/rocm_host pinned) memory"
                    : ctx->backend == TSR_BACKEND_CUDA   ? "cuda (or cuda_managed) memory of the same device"
                    : ctx->backend == TSR_BACKEND_HIP    ? "rocm memory of the same device"
                                                         : "opencl memory of the same device");
}
