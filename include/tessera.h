/*
 * Tessera: hand-tuned operator kernels behind one C ABI.
 *
 * Conventions (see the README for a worked example):
 *  - Every call returns a tsr_status; TSR_OK is 0. On failure tsr_last_error()
 *    (thread-local) says in words what was wrong, naming the argument.
 *  - Memory belongs to the caller. Pointers are device pointers of the
 *    context's device (host pointers for the CPU backend, cl_mem for OpenCL).
 *  - Descriptors are plain structs whose first field is `size`; fill them with
 *    the matching tsr_*_desc_init() so that fields added later get defaults.
 *  - Sizes, leading dimensions and strides are int64 and counted in elements.
 *  - No call prints unless TESSERA_LOG is set; no call aborts.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_VERSION_MAJOR 0
#define TSR_VERSION_MINOR 1
#define TSR_VERSION_PATCH 0
/* major * 10000 + minor * 100 + patch */
#define TSR_VERSION (TSR_VERSION_MAJOR * 10000 + TSR_VERSION_MINOR * 100 + TSR_VERSION_PATCH)

#if defined(__GNUC__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

/* ------------------------------------------------------------------ status */

typedef enum tsr_status {
    TSR_OK = 0,
    TSR_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a bad size, stride or enum */
    TSR_ERR_NOT_SUPPORTED = 2,    /* legal, but no kernel handles it (dtype mix...) */
    TSR_ERR_NO_DEVICE = 3,        /* the backend or device is absent on this machine */
    TSR_ERR_OUT_OF_MEMORY = 4,
    TSR_ERR_DEVICE = 5,           /* the backend's runtime reported a failure */
    TSR_ERR_WRONG_CONTEXT = 6,    /* the object belongs to another backend/device */
    TSR_ERR_IO = 7,               /* a file could not be read or written */
    TSR_ERR_INTERNAL = 8          /* a bug in Tessera: please report it */
} tsr_status;

TSR_API const char *tsr_status_string(tsr_status status);
/* The message of the last failed call on this thread ("" when none). */
TSR_API const char *tsr_last_error(void);

TSR_API unsigned tsr_version(void);            /* same encoding as TSR_VERSION */
TSR_API const char *tsr_version_string(void);  /* "0.1.0" */

/* ------------------------------------------------------------------ dtypes */

typedef enum tsr_dtype {
    TSR_F32 = 0,
    TSR_F16 = 1,  /* IEEE binary16 */
    TSR_BF16 = 2, /* bfloat16 */
    TSR_I8 = 3,   /* signed 8-bit */
    TSR_I32 = 4
} tsr_dtype;

TSR_API size_t tsr_dtype_size(tsr_dtype dtype);       /* 0 for an unknown dtype */
TSR_API const char *tsr_dtype_name(tsr_dtype dtype);  /* "f32", ... or "unknown" */

/* Conversions with round-to-nearest-even; NaN stays NaN. */
TSR_API uint16_t tsr_f32_to_f16(float x);
TSR_API float tsr_f16_to_f32(uint16_t h);
TSR_API uint16_t tsr_f32_to_bf16(float x);
TSR_API float tsr_bf16_to_f32(uint16_t h);

/* ---------------------------------------------------------------- contexts */

typedef enum tsr_backend {
    TSR_BACKEND_CPU = 0,
    TSR_BACKEND_CUDA = 1,
    TSR_BACKEND_HIP = 2,
    TSR_BACKEND_OPENCL = 3
} tsr_backend;

TSR_API const char *tsr_backend_name(tsr_backend backend); /* "cpu", "cuda", ... */

/* CPU features, as reported in tsr_context_info.cpu_features. */
#define TSR_CPU_AVX2 (1u << 0)
#define TSR_CPU_FMA (1u << 1)
#define TSR_CPU_F16C (1u << 2)
#define TSR_CPU_AVX512F (1u << 3)
#define TSR_CPU_AVX512BW (1u << 4)
#define TSR_CPU_AVX512VL (1u << 5)
#define TSR_CPU_AVX512BF16 (1u << 6)
#define TSR_CPU_AVX512VNNI (1u << 7)
#define TSR_CPU_AVX512DQ (1u << 8)

typedef struct tsr_context tsr_context;

typedef struct tsr_context_options {
    size_t size;         /* sizeof(tsr_context_options) */
    tsr_backend backend;
    int device;          /* device index within the backend */
    int num_threads;     /* CPU: worker threads, 0 = all cores */
    void *stream;        /* CUDA/HIP stream or cl_command_queue; NULL = the library's own */
    uint32_t flags;      /* TSR_CONTEXT_* */
} tsr_context_options;

/* Ignore every tuning table: always use the kernels' heuristics. */
#define TSR_CONTEXT_NO_TUNING_TABLE (1u << 0)
/* Use the reference kernels only (debugging, oracles). */
#define TSR_CONTEXT_REFERENCE_ONLY (1u << 1)

TSR_API void tsr_context_options_init(tsr_context_options *opts); /* CPU, all cores */
/* opts may be NULL: a CPU context with all cores. */
TSR_API tsr_status tsr_context_create(tsr_context **ctx, const tsr_context_options *opts);
TSR_API tsr_status tsr_context_destroy(tsr_context *ctx); /* NULL is a no-op */
TSR_API tsr_status tsr_context_set_num_threads(tsr_context *ctx, int num_threads);

typedef struct tsr_context_info {
    size_t size;             /* set by the caller: sizeof(tsr_context_info) */
    tsr_backend backend;
    int device;
    int num_threads;
    uint32_t cpu_features;   /* TSR_CPU_* bits (CPU backend) */
    char arch[32];           /* kernels chosen: "x86_avx512", "x86_avx2", "generic", "sm80"... */
    char device_name[128];
    char driver[64];         /* runtime/driver version where there is one */
    int compute_units;       /* cores, SMs or CUs */
    char table_path[512];    /* tuning table in use, "" when none */
    char table_status[512];  /* why that table, or why others were ignored */
} tsr_context_info;

TSR_API tsr_status tsr_context_get_info(const tsr_context *ctx, tsr_context_info *info);

/* ------------------------------------------------------------------ memory */

typedef enum tsr_memcpy_kind {
    TSR_MEMCPY_HOST_TO_DEVICE = 0,
    TSR_MEMCPY_DEVICE_TO_HOST = 1,
    TSR_MEMCPY_DEVICE_TO_DEVICE = 2,
    TSR_MEMCPY_HOST_TO_HOST = 3
} tsr_memcpy_kind;

/* Device memory of the context's device, 64-byte aligned on the CPU. */
TSR_API tsr_status tsr_malloc(tsr_context *ctx, void **ptr, size_t bytes);
TSR_API tsr_status tsr_free(tsr_context *ctx, void *ptr); /* NULL is a no-op */
TSR_API tsr_status tsr_memcpy(tsr_context *ctx, void *dst, const void *src, size_t bytes,
                              tsr_memcpy_kind kind);
/* Waits until every call queued on the context's stream has finished. */
TSR_API tsr_status tsr_synchronize(tsr_context *ctx);

/* ----------------------------------------------------------- fused epilogue */

typedef enum tsr_activation {
    TSR_ACT_NONE = 0,
    TSR_ACT_RELU = 1,
    TSR_ACT_GELU_ERF = 2,  /* x * 0.5 * (1 + erf(x / sqrt(2))) */
    TSR_ACT_GELU_TANH = 3, /* x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */
    TSR_ACT_SILU = 4,      /* x * sigmoid(x) */
    TSR_ACT_SIGMOID = 5,
    TSR_ACT_TANH = 6
} tsr_activation;

typedef enum tsr_epilogue_op {
    TSR_EPI_BIAS = 1,       /* += bias[column] (GEMM) or bias[out channel] (conv) */
    TSR_EPI_ACTIVATION = 2, /* = act(value) */
    TSR_EPI_RESIDUAL = 3    /* += scale * residual[same position as the output] */
} tsr_epilogue_op;

typedef struct tsr_epilogue_step {
    tsr_epilogue_op op;
    tsr_activation activation; /* TSR_EPI_ACTIVATION */
    const void *data;          /* bias vector or residual tensor (device pointer) */
    tsr_dtype dtype;           /* of data: f32, or the output's dtype */
    int64_t ld;                /* residual: leading dimension (GEMM); 0 = the output's */
    int64_t batch_stride;      /* residual: between batch matrices (GEMM); 0 = the output's */
    float scale;               /* residual: multiplier */
} tsr_epilogue_step;

#define TSR_MAX_EPILOGUE_STEPS 4

/* Steps run in order on each output value while it is still in registers,
 * after alpha/beta: out = step_n(...step_1(alpha * acc + beta * out)). */
typedef struct tsr_epilogue {
    int num_steps;
    tsr_epilogue_step steps[TSR_MAX_EPILOGUE_STEPS];
} tsr_epilogue;

/* Small builders; each returns the step to place in tsr_epilogue.steps. */
TSR_API tsr_epilogue_step tsr_epilogue_bias(const void *bias, tsr_dtype dtype);
TSR_API tsr_epilogue_step tsr_epilogue_activation(tsr_activation activation);
TSR_API tsr_epilogue_step tsr_epilogue_residual(const void *residual, tsr_dtype dtype,
                                                int64_t ld, float scale);

/* -------------------------------------------------------------------- GEMM */

typedef enum tsr_layout { TSR_ROW_MAJOR = 0, TSR_COL_MAJOR = 1 } tsr_layout;
typedef enum tsr_transpose { TSR_NO_TRANS = 0, TSR_TRANS = 1 } tsr_transpose;

/*
 * C[b] = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b]),  b in [0, batch)
 * op(A) is m x k, op(B) is k x n, C is m x n, all in `layout`.
 * Dtypes: (a, b) = (f32, f32) -> c f32; (f16, f16) or (bf16, bf16) -> c f32 or
 * the input dtype, accumulated in f32; (i8, i8) -> c i32, accumulated in i32
 * (alpha/beta applied in double and rounded; epilogue not available for i32).
 * beta == 0 never reads C (NaN in C does not propagate).
 */
typedef struct tsr_gemm_desc {
    size_t size;
    tsr_layout layout;
    tsr_transpose trans_a, trans_b;
    int64_t m, n, k;
    tsr_dtype a_dtype, b_dtype, c_dtype;
    int64_t lda, ldb, ldc;                 /* 0 = tight for the shape and layout */
    int64_t batch;                         /* >= 1 */
    int64_t stride_a, stride_b, stride_c;  /* elements between batch matrices; 0 = tight */
    float alpha, beta;
    tsr_epilogue epilogue;
} tsr_gemm_desc;

/* Row-major f32 m x n x k, no transposes, alpha 1, beta 0, batch 1. */
TSR_API void tsr_gemm_desc_init(tsr_gemm_desc *desc);
TSR_API tsr_status tsr_gemm(tsr_context *ctx, const tsr_gemm_desc *desc, const void *a,
                            const void *b, void *c);

/* ------------------------------------------------------------- convolution */

typedef enum tsr_tensor_format { TSR_NHWC = 0, TSR_NCHW = 1 } tsr_tensor_format;
typedef enum tsr_filter_format {
    TSR_FILTER_OHWI = 0, /* [K][R][S][C/groups], the NHWC companion */
    TSR_FILTER_OIHW = 1, /* [K][C/groups][R][S], the NCHW companion */
    TSR_FILTER_HWIO = 2, /* [R][S][C/groups][K] */
    TSR_FILTER_PACKED = 3 /* made by tsr_conv2d_pack_filter (below) */
} tsr_filter_format;
/* On x86 an f32 HWIO filter whose K/groups is a multiple of 32 (16 on AVX2-only
 * CPUs) is read in place; other filters are packed inside every call, unless
 * they were packed once by tsr_conv2d_pack_filter. */

/*
 * y = epilogue(conv2d(x, w)); cross-correlation as in every framework.
 * x: n x c x h x w in `format`; y: n x k x p x q in `format` where
 *   p = (h + pad_top + pad_bottom - dilation_h * (r - 1) - 1) / stride_h + 1, q likewise.
 * groups divides c and k; depthwise is groups == c. Bias is per output channel.
 * Dtypes: f32 everywhere, or f16/bf16 x and w with y f32 or the input dtype.
 */
typedef struct tsr_conv2d_desc {
    size_t size;
    tsr_tensor_format format;
    tsr_filter_format filter_format;
    int64_t n, c, h, w;   /* input */
    int64_t k, r, s;      /* output channels, filter height, filter width */
    int64_t stride_h, stride_w;
    int64_t pad_top, pad_bottom, pad_left, pad_right;
    int64_t dilation_h, dilation_w;
    int64_t groups;
    tsr_dtype x_dtype, w_dtype, y_dtype;
    tsr_epilogue epilogue;
} tsr_conv2d_desc;

/* NHWC/OHWI f32, stride 1, no padding, dilation 1, one group. */
TSR_API void tsr_conv2d_desc_init(tsr_conv2d_desc *desc);
TSR_API tsr_status tsr_conv2d_output_shape(const tsr_conv2d_desc *desc, int64_t *p, int64_t *q);
TSR_API tsr_status tsr_conv2d(tsr_context *ctx, const tsr_conv2d_desc *desc, const void *x,
                              const void *w, void *y);

/*
 * Weights packed once, for filters that serve many calls (inference): the
 * reorder the kernel would otherwise do inside every call (at batch 1 as
 * long as the convolution itself on ResNet-50's last layers) is done here.
 * tsr_conv2d_packed_filter_size gives the bytes tsr_conv2d_pack_filter
 * writes for desc; tsr_conv2d_pack_filter writes w (in desc->filter_format)
 * into packed, in the layout the kernel this context picks for desc reads.
 * A tsr_conv2d whose desc has the same shapes and dtypes with filter_format
 * TSR_FILTER_PACKED then takes packed as its w (any epilogue, either
 * activation format). The packed bytes record what they were made for: a
 * desc they do not match is refused with a message naming the difference,
 * and one that another kernel runs (a tuned schedule, another CPU) is still
 * computed correctly. CPU contexts only (the packed filter is host memory).
 */
TSR_API tsr_status tsr_conv2d_packed_filter_size(tsr_context *ctx, const tsr_conv2d_desc *desc, size_t *bytes);
TSR_API tsr_status tsr_conv2d_pack_filter(tsr_context *ctx, const tsr_conv2d_desc *desc, const void *w,
                                          void *packed, size_t bytes);

/* --------------------------------------------------------------- attention */

typedef enum tsr_causal {
    TSR_CAUSAL_NONE = 0,
    /* query i sees keys j <= i (PyTorch's is_causal) */
    TSR_CAUSAL_TOP_LEFT = 1,
    /* query i sees keys j <= i + seq_kv - seq_q (FlashAttention >= 2.1) */
    TSR_CAUSAL_BOTTOM_RIGHT = 2
} tsr_causal;

/*
 * o = softmax(scale * q k^T + mask, causal) v per (batch, head).
 * Query head h reads kv head h / (heads_q / heads_kv) (GQA/MQA).
 * Tensors are indexed [batch][head][seq][dim] through the strides below, in
 * elements, with the last dimension contiguous: BSHD and BHSD both work.
 * A row with every key masked gives o = 0 and lse = -inf.
 * Dtypes: f32, f16 or bf16 for q, k, v and o alike; mask f32 or the same dtype;
 * lse f32.
 */
typedef struct tsr_attention_desc {
    size_t size;
    int64_t batch, heads_q, heads_kv, seq_q, seq_kv, head_dim;
    tsr_dtype dtype;
    int64_t q_strides[3]; /* batch, head, seq; all 0 = contiguous BHSD */
    int64_t k_strides[3];
    int64_t v_strides[3];
    int64_t o_strides[3];
    float scale;          /* 0 = 1 / sqrt(head_dim) */
    tsr_causal causal;
    const void *mask;     /* optional additive mask, indexed [b][h][i][j] */
    tsr_dtype mask_dtype;
    int64_t mask_strides[3]; /* batch, head, query row; 0 broadcasts; keys contiguous */
    void *lse;            /* optional f32 output [batch][heads_q][seq_q], natural log */
} tsr_attention_desc;

TSR_API void tsr_attention_desc_init(tsr_attention_desc *desc);
TSR_API tsr_status tsr_attention(tsr_context *ctx, const tsr_attention_desc *desc,
                                 const void *q, const void *k, const void *v, void *o);

/* ------------------------------------------------------------- elementwise */

#define TSR_MAX_DIMS 8

/* A strided tensor view; strides in elements, 0 = broadcast along that dim. */
typedef struct tsr_tensor_desc {
    tsr_dtype dtype;
    int32_t ndim;
    int64_t shape[TSR_MAX_DIMS];
    int64_t strides[TSR_MAX_DIMS]; /* all 0 = contiguous row-major for the shape */
} tsr_tensor_desc;

/* Contiguous row-major tensor of the given shape. */
TSR_API tsr_tensor_desc tsr_tensor_contiguous(tsr_dtype dtype, int32_t ndim,
                                              const int64_t *shape);

typedef enum tsr_unary_op {
    TSR_UNARY_IDENTITY = 0,
    TSR_UNARY_NEG, TSR_UNARY_ABS, TSR_UNARY_SQUARE, TSR_UNARY_SQRT, TSR_UNARY_RSQRT,
    TSR_UNARY_RECIPROCAL, TSR_UNARY_EXP, TSR_UNARY_LOG, TSR_UNARY_ERF, TSR_UNARY_TANH,
    TSR_UNARY_SIGMOID, TSR_UNARY_RELU, TSR_UNARY_GELU_ERF, TSR_UNARY_GELU_TANH,
    TSR_UNARY_SILU,
    TSR_UNARY_COUNT
} tsr_unary_op;

typedef enum tsr_binary_op {
    TSR_BINARY_ADD = 0, TSR_BINARY_SUB, TSR_BINARY_MUL, TSR_BINARY_DIV,
    TSR_BINARY_MAX, TSR_BINARY_MIN, TSR_BINARY_POW,
    TSR_BINARY_COUNT
} tsr_binary_op;

/* y = op(x). x and y have the same shape; dtypes f32, f16 or bf16 (may differ). */
TSR_API tsr_status tsr_unary(tsr_context *ctx, tsr_unary_op op, const tsr_tensor_desc *x_desc,
                             const void *x, const tsr_tensor_desc *y_desc, void *y);
/* y = a op b with NumPy broadcasting (shapes aligned from the right). */
TSR_API tsr_status tsr_binary(tsr_context *ctx, tsr_binary_op op, const tsr_tensor_desc *a_desc,
                              const void *a, const tsr_tensor_desc *b_desc, const void *b,
                              const tsr_tensor_desc *y_desc, void *y);

typedef enum tsr_chain_step_kind {
    TSR_STEP_UNARY = 0,         /* v = unary(v) */
    TSR_STEP_SCALAR = 1,        /* v = v op scalar */
    TSR_STEP_SCALAR_LEFT = 2,   /* v = scalar op v */
    TSR_STEP_TENSOR = 3,        /* v = v op operand[i] (broadcast to y's shape) */
    TSR_STEP_TENSOR_LEFT = 4    /* v = operand[i] op v */
} tsr_chain_step_kind;

typedef struct tsr_chain_step {
    tsr_chain_step_kind kind;
    tsr_unary_op unary;   /* TSR_STEP_UNARY */
    tsr_binary_op binary; /* the other kinds */
    float scalar;         /* TSR_STEP_SCALAR* */
    int operand;          /* TSR_STEP_TENSOR*: index into the operands */
} tsr_chain_step;

#define TSR_MAX_CHAIN_STEPS 16
#define TSR_MAX_CHAIN_OPERANDS 4

/* A chain runs in one pass over memory: v = x[i] (broadcast), then each step,
 * then y[i] = v, with the arithmetic in f32. Sigmoid as
 * neg -> exp -> (+ 1) -> reciprocal reads x once and writes y once. */
typedef struct tsr_chain_desc {
    size_t size;
    int num_steps;
    tsr_chain_step steps[TSR_MAX_CHAIN_STEPS];
    int num_operands;
    tsr_tensor_desc operands[TSR_MAX_CHAIN_OPERANDS];
} tsr_chain_desc;

TSR_API void tsr_chain_desc_init(tsr_chain_desc *desc);
TSR_API tsr_status tsr_chain_push_unary(tsr_chain_desc *desc, tsr_unary_op op);
TSR_API tsr_status tsr_chain_push_scalar(tsr_chain_desc *desc, tsr_binary_op op, float scalar,
                                         int scalar_on_left);
/* Adds an operand tensor and a step that uses it; operands are numbered in the
 * order they are pushed, which is the order of tsr_elementwise_chain's array. */
TSR_API tsr_status tsr_chain_push_tensor(tsr_chain_desc *desc, tsr_binary_op op,
                                         const tsr_tensor_desc *operand, int tensor_on_left);
TSR_API tsr_status tsr_elementwise_chain(tsr_context *ctx, const tsr_chain_desc *chain,
                                         const tsr_tensor_desc *x_desc, const void *x,
                                         const void *const *operands,
                                         const tsr_tensor_desc *y_desc, void *y);

/* Row-wise ops over a rows x cols matrix whose rows are `*_row_stride` apart. */
typedef struct tsr_rowwise_desc {
    size_t size;
    int64_t rows, cols;
    int64_t x_row_stride, y_row_stride; /* 0 = cols */
    tsr_dtype x_dtype, y_dtype;         /* f32, f16 or bf16 */
    float epsilon;                      /* norms; default 1e-5 */
} tsr_rowwise_desc;

TSR_API void tsr_rowwise_desc_init(tsr_rowwise_desc *desc);
/* y = softmax(x) along each row (max-subtracted); a row that is all -inf
 * gives 0s, as a fully masked attention row does. */
TSR_API tsr_status tsr_softmax(tsr_context *ctx, const tsr_rowwise_desc *desc, const void *x,
                               void *y);
/* y = (x - mean) / sqrt(var + eps) * gamma + beta; gamma and beta are f32
 * vectors of length cols, each may be NULL (1 and 0). */
TSR_API tsr_status tsr_layernorm(tsr_context *ctx, const tsr_rowwise_desc *desc, const void *x,
                                 const float *gamma, const float *beta, void *y);
/* y = x / sqrt(mean(x^2) + eps) * gamma; gamma may be NULL. */
TSR_API tsr_status tsr_rmsnorm(tsr_context *ctx, const tsr_rowwise_desc *desc, const void *x,
                               const float *gamma, void *y);

/* ------------------------------------------------------------ support queries */

/* TSR_OK when the call would run on this context; otherwise the status the
 * call would return, with the reason written to why (may be NULL). */
TSR_API tsr_status tsr_gemm_supported(const tsr_context *ctx, const tsr_gemm_desc *desc,
                                      char *why, size_t why_len);
TSR_API tsr_status tsr_conv2d_supported(const tsr_context *ctx, const tsr_conv2d_desc *desc,
                                        char *why, size_t why_len);
TSR_API tsr_status tsr_attention_supported(const tsr_context *ctx,
                                           const tsr_attention_desc *desc, char *why,
                                           size_t why_len);
TSR_API tsr_status tsr_elementwise_chain_supported(const tsr_context *ctx,
                                                   const tsr_chain_desc *chain,
                                                   const tsr_tensor_desc *x_desc,
                                                   const tsr_tensor_desc *y_desc, char *why,
                                                   size_t why_len);
TSR_API tsr_status tsr_rowwise_supported(const tsr_context *ctx, const tsr_rowwise_desc *desc,
                                         char *why, size_t why_len);

/* Name of the kernel and schedule the last op call on this thread ran
 * ("gemm.ref.f32", ...); for tests, logs and benchmarks. */
TSR_API const char *tsr_last_kernel(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_H */
