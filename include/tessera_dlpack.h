/*
 * Tessera <-> DLPack: build op arguments from DLTensors.
 *
 * DLPack (https://github.com/dmlc/dlpack) is the tensor-exchange struct that
 * NumPy, PyTorch, JAX, CuPy and TVM speak. This header uses the real
 * <dlpack/dlpack.h> (DLPack >= 0.6, e.g. Debian's libdlpack-dev 0.6) when it
 * was included first or when the compiler can find it; otherwise, or when
 * TSR_DLPACK_OWN_DECLARATIONS is defined, it declares the same structs
 * itself, laid out exactly as in DLPack (DLDevice, DLDataType, DLTensor,
 * DLManagedTensor; the DLTensor ABI has not changed since v0.6) and defines
 * DLPACK_DLPACK_H_ so that a later #include <dlpack/dlpack.h> is skipped
 * rather than redefining the structs.
 *
 * DLPack 1.x: when the DLPack header in use predates 1.0 (no
 * DLPACK_MAJOR_VERSION, as Debian's 0.6), this header adds v1.0's
 * DLPackVersion, DLManagedTensorVersioned and DLPACK_FLAG_BITMASK_* with
 * v1.0's layout and defines DLPACK_MAJOR_VERSION 1 / DLPACK_MINOR_VERSION 0,
 * so code written for DLPack 1.0 compiles against either header. A real
 * DLPack >= 1.0 header is used as it is.
 *
 * Conventions of the helpers below:
 *  - They look only at the DLTensor (no context, no device memory access);
 *    check the device against a context with tsr_dlpack_device_matches().
 *  - Data pointers come back with byte_offset applied. On OpenCL the data
 *    field is a cl_mem handle to which no offset can be added, so a non-zero
 *    byte_offset is TSR_ERR_NOT_SUPPORTED there.
 *  - Strides are in elements as in DLPack; NULL strides mean compact
 *    row-major. The stride of a dimension of extent 1 is never used.
 *  - Errors return a status and set tsr_last_error() to a message that names
 *    the argument ("gemm_desc_from_dlpack: b: ...").
 */
#ifndef TESSERA_DLPACK_H
#define TESSERA_DLPACK_H

#include "tessera.h"

#if !defined(DLPACK_DLPACK_H_) && defined(__has_include)
#if __has_include(<dlpack/dlpack.h>) && !defined(TSR_DLPACK_OWN_DECLARATIONS)
#include <dlpack/dlpack.h>
#endif
#endif

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define TSR_DLPACK_DECLARED_HERE 1

#ifndef DLPACK_EXTERN_C
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#endif
#ifndef DLPACK_DLL
#define DLPACK_DLL
#endif

#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; NULL = compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */

/* DLPack 1.0's versioned managed tensor, for headers older than 1.0
 * (field for field as dlpack.h v1.0; the version and flags come first so
 * that a consumer can read them before anything else). */
#ifndef DLPACK_MAJOR_VERSION
#define TSR_DLPACK_VERSIONED_DECLARED_HERE 1
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* The data must not be written (a consumer refuses it as an output). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/* The producer copied the data to export it (writes would not reach the source). */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif
#endif /* DLPACK_MAJOR_VERSION */

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A DLTensor as a tsr_tensor_desc (for tsr_unary, tsr_binary and chains).
 * dtype: float32 -> f32, float16 -> f16, bfloat16 -> bf16, int8 -> i8,
 * int32 -> i32 (lanes 1); anything else is TSR_ERR_NOT_SUPPORTED. ndim is
 * 0..TSR_MAX_DIMS (more is TSR_ERR_NOT_SUPPORTED); shapes >= 0; strides >= 0
 * (a negative stride is TSR_ERR_NOT_SUPPORTED, except on an extent-1 dim,
 * where it is unused and written as 0). out->strides are always written
 * explicitly. tsr_tensor_desc reads all-zero strides as "contiguous", so a
 * view whose strides are all 0 (one element broadcast everywhere) gets
 * stride 1 on an extent-1 dim, or is TSR_ERR_NOT_SUPPORTED if it has none.
 * data_out (may be NULL) receives data + byte_offset.
 */
TSR_API tsr_status tsr_tensor_desc_from_dlpack(const DLTensor *tensor, tsr_tensor_desc *out,
                                               void **data_out);

/*
 * The DLTensor of a DLPack 1.x managed tensor, checked the way the DLPack
 * 1.0 protocol asks a consumer to: a NULL tensor or a major version other
 * than DLPACK_MAJOR_VERSION (1) is refused (TSR_ERR_NOT_SUPPORTED, naming
 * both versions: the layout after the version may differ), and when
 * `writable` is non-zero (the tensor is an op's output) a tensor flagged
 * DLPACK_FLAG_BITMASK_READ_ONLY is TSR_ERR_INVALID_ARGUMENT. `name` (may be
 * NULL) names the argument in the message. Minor versions are accepted
 * (they only add fields and flags). *tensor_out receives &m->dl_tensor; pass
 * it to the functions below. The deleter is not called: the caller owns m.
 */
TSR_API tsr_status tsr_dlpack_versioned_tensor(const DLManagedTensorVersioned *m, int writable, const char *name,
                                               const DLTensor **tensor_out);

/*
 * Fills the shape fields of d for C = op(A) op(B) from DLTensors given as
 * the product reads them: a is m x k, b is k x n, c is m x n, or with a
 * leading batch dimension (3-D). Each matrix may be row-major (unit stride on
 * its last dimension) or column-major (unit stride on its first matrix
 * dimension); c's order picks d->layout and a and b become trans flags and
 * leading dimensions in that order, so a transposed view costs nothing.
 *
 * Written: layout, trans_a, trans_b, m, n, k, a_dtype, b_dtype, c_dtype,
 * lda, ldb, ldc, batch, stride_a, stride_b, stride_c. Left as they are:
 * alpha, beta, the epilogue (initialise d with tsr_gemm_desc_init first).
 *
 * Batch: c is 2-D or 3-D (batch, m, n); a and b have c's batch, or are
 * shared by every batch entry (2-D, batch 1, or batch stride 0). A shared b
 * is expressed by folding the batch into the rows of a and c (possible when
 * their batch stride is m times their row stride: the nn.Linear case, a
 * contiguous activation times a weight), a shared a by folding it into the
 * columns of b and c (batch stride n times their column stride); d->batch is
 * then 1. When no fold applies the call is TSR_ERR_NOT_SUPPORTED, since a
 * batch stride of 0 reads as "tight" in tsr_gemm_desc. Also
 * TSR_ERR_NOT_SUPPORTED: a matrix with no unit stride, rows (columns) that
 * overlap, negative strides. a, b and c must be on the same device.
 *
 * a_data, b_data, c_data (each may be NULL) receive data + byte_offset.
 */
TSR_API tsr_status tsr_gemm_desc_from_dlpack(const DLTensor *a, const DLTensor *b, const DLTensor *c,
                                             tsr_gemm_desc *d, const void **a_data, const void **b_data,
                                             void **c_data);

/*
 * TSR_OK when memory on `device` is what ctx's kernels take:
 *   CPU backend:    kDLCPU, or host-pinned kDLCUDAHost / kDLROCMHost;
 *   CUDA backend:   kDLCUDA (or kDLCUDAManaged) with device_id == the
 *                   context's device;
 *   HIP backend:    kDLROCM with the same device_id;
 *   OpenCL backend: kDLOpenCL with the same device_id.
 * Otherwise TSR_ERR_WRONG_CONTEXT with a message naming both devices
 * (TSR_ERR_INVALID_ARGUMENT for a NULL ctx).
 */
TSR_API tsr_status tsr_dlpack_device_matches(const tsr_context *ctx, DLDevice device);

/* "cpu", "cuda", "cuda_host", "opencl", ... or "unknown". */
TSR_API const char *tsr_dlpack_device_name(int32_t device_type);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_DLPACK_H */
