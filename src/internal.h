/* Tessera's internal contracts: errors, contexts, problems, kernels, dispatch.
 * Included by the core, the op fronts, the kernels and the tuner; never by users. */
#ifndef TSR_INTERNAL_H
#define TSR_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

#if defined(__GNUC__)
#define TSR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TSR_HIDDEN __attribute__((visibility("hidden")))
#else
#define TSR_PRINTF(f, a)
#define TSR_HIDDEN
#endif

/* ------------------------------------------------------------- errors, log */

/* Records the message for tsr_last_error() and returns status. */
tsr_status tsr_fail(tsr_status status, const char *fmt, ...) TSR_PRINTF(2, 3);
/* Writes the message into why (may be NULL) and returns status: for
 * supports() predicates and the tsr_*_supported queries. */
tsr_status tsr_why(char *why, size_t why_len, tsr_status status, const char *fmt, ...)
    TSR_PRINTF(4, 5);
void tsr_clear_error(void);
void tsr_set_last_kernel(const char *name);

typedef enum tsr_log_level {
    TSR_LOG_OFF = 0, TSR_LOG_ERROR, TSR_LOG_WARN, TSR_LOG_INFO, TSR_LOG_DEBUG
} tsr_log_level;
/* Level from TESSERA_LOG (error|warn|info|debug), read once. */
tsr_log_level tsr_log_level_get(void);
void tsr_log(tsr_log_level level, const char *fmt, ...) TSR_PRINTF(2, 3);

/* ------------------------------------------------------------ size checks */

/* a * b into *out; false on int64 overflow or a negative operand. */
bool tsr_mul_i64(int64_t a, int64_t b, int64_t *out);
bool tsr_add_i64(int64_t a, int64_t b, int64_t *out);
/* Do [a, a + a_bytes) and [b, b + b_bytes) overlap? */
bool tsr_ranges_overlap(const void *a, int64_t a_bytes, const void *b, int64_t b_bytes);

/* ---------------------------------------------------------------- context */

typedef struct tsr_backend_ops {
    tsr_status (*malloc_fn)(tsr_context *ctx, void **ptr, size_t bytes);
    tsr_status (*free_fn)(tsr_context *ctx, void *ptr);
    tsr_status (*memcpy_fn)(tsr_context *ctx, void *dst, const void *src, size_t bytes,
                            tsr_memcpy_kind kind);
    tsr_status (*synchronize_fn)(tsr_context *ctx);
    void (*destroy_fn)(tsr_context *ctx); /* frees backend_state */
    /* Host pointers can be compared for aliasing (CPU); device handles cannot. */
    bool host_addressable;
} tsr_backend_ops;

struct tsr_context {
    tsr_backend backend;
    int device;
    int num_threads;
    uint32_t flags;          /* TSR_CONTEXT_* */
    uint32_t cpu_features;   /* TSR_CPU_* */
    bool cpu_amd;            /* an AMD CPU: some schedule defaults differ by vendor */
    const char *arch;        /* best kernel arch for this device, e.g. "x86_avx2" */
    void *stream;
    void *backend_state;     /* owned by the backend's runtime */
    const tsr_backend_ops *ops;
    char device_name[128];
    char driver[64];
    int compute_units;
    /* tuning table (autotune/): what was loaded and why */
    const struct tsr_table *table;
    char table_path[512];
    char table_status[512];
};

/* Backend runtimes fill ctx (ops, names, state) or fail with a message. */
typedef tsr_status (*tsr_backend_init_fn)(tsr_context *ctx, const tsr_context_options *opts);
tsr_status tsr_cpu_backend_init(tsr_context *ctx, const tsr_context_options *opts);

/* ----------------------------------------------------------------- problems */

typedef enum tsr_op {
    TSR_OP_GEMM = 0,
    TSR_OP_CONV2D,
    TSR_OP_ATTENTION,
    TSR_OP_CHAIN,
    TSR_OP_SOFTMAX,
    TSR_OP_LAYERNORM,
    TSR_OP_RMSNORM,
    TSR_OP_COUNT
} tsr_op;

const char *tsr_op_name(tsr_op op); /* "gemm", "conv2d", ... */

/* A GEMM after validation, normalised to row-major:
 * C[b] (m x n, ldc) = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b]).
 * A column-major call is rewritten as C^T = op(B)^T op(A)^T, after which the
 * bias runs along m: bias_along_m says so. ld and strides are filled in. */
typedef struct tsr_gemm_problem {
    tsr_gemm_desc d;     /* d.layout == TSR_ROW_MAJOR, every ld/stride set */
    bool bias_along_m;
    const void *a, *b;
    void *c;
} tsr_gemm_problem;

/* FNV-1a over n bytes, its basis xor seed (0 for the plain hash): the
 * checksums and keys of packed filters, tables and the OpenCL cache. */
static inline uint64_t tsr_fnv1a(const void *data, size_t n, uint64_t seed) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 14695981039346656037ull ^ seed;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The header of a packed conv2d filter (tsr_conv2d_pack_filter) at the
 * start of the caller's buffer; the payload follows at
 * TSR_PACKED_FILTER_HEADER bytes. */
#define TSR_PACKED_FILTER_MAGIC "TSRPKF1"
#define TSR_PACKED_FILTER_HEADER 128
typedef enum tsr_packed_layout {
    TSR_PACKED_COPY = 0,       /* the filter in `format`, of w_dtype: any kernel reads it */
    TSR_PACKED_PANELS = 1,     /* f32 [group][k / nr][r][s][c][nr], zero past k/groups */
    TSR_PACKED_PAIR_PANELS = 2 /* bf16 [group][k / nr][(r, s, c) / 2][nr][2] (vdpbf16ps pairs) */
} tsr_packed_layout;
typedef struct tsr_packed_filter {
    char magic[8];
    char producer[40];   /* the kernel whose layout it is */
    int32_t layout;      /* tsr_packed_layout */
    int32_t nr;          /* panel width */
    int32_t format;      /* TSR_PACKED_COPY: its tsr_filter_format */
    int32_t w_dtype;     /* the desc's w_dtype it was made for */
    int64_t k, c, r, s, groups;
    int64_t payload_bytes;
    uint64_t check;      /* FNV-1a of every byte above */
} tsr_packed_filter;

/* A conv2d after validation: p, q computed; epilogue residual is dense in
 * the output's format. */
typedef struct tsr_conv2d_problem {
    tsr_conv2d_desc d;
    int64_t p, q;
    const void *x, *w; /* w: a packed filter's payload when packed */
    void *y;
    const tsr_packed_filter *packed; /* filter_format TSR_FILTER_PACKED, NULL before w is known */
} tsr_conv2d_problem;

/* Attention after validation: strides filled, scale resolved. */
typedef struct tsr_attention_problem {
    tsr_attention_desc d;
    const void *q, *k, *v;
    void *o;
} tsr_attention_problem;

/* An elementwise chain after validation and broadcasting: x, y and every
 * operand have y's ndim and shape, with 0 strides where broadcast. */
typedef struct tsr_chain_problem {
    tsr_chain_desc chain;
    tsr_tensor_desc x, y;
    const void *xp;
    const void *operands[TSR_MAX_CHAIN_OPERANDS];
    void *yp;
} tsr_chain_problem;

/* Softmax, layernorm, rmsnorm after validation: row strides filled. */
typedef struct tsr_rowwise_problem {
    tsr_rowwise_desc d;
    const void *x;
    const float *gamma, *beta;
    void *y;
} tsr_rowwise_problem;

typedef struct tsr_problem {
    tsr_op op;
    union {
        tsr_gemm_problem gemm;
        tsr_conv2d_problem conv;
        tsr_attention_problem attention;
        tsr_chain_problem chain;
        tsr_rowwise_problem rowwise; /* softmax, layernorm, rmsnorm */
    } u;
} tsr_problem;

/* ------------------------------------------------------ kernels, schedules */

#define TSR_MAX_KNOBS 8

/* One tunable knob: a name and its legal values. */
typedef struct tsr_knob {
    const char *name;
    int num_values;
    const int *values;
} tsr_knob;

/* Values for a kernel's knobs, in the order of its knob list. */
typedef struct tsr_schedule {
    int v[TSR_MAX_KNOBS];
} tsr_schedule;

typedef struct tsr_kernel {
    const char *name;     /* "gemm.x86_avx2.f32" */
    tsr_op op;
    tsr_backend backend;
    const char *arch;     /* "ref", "x86_avx2", "x86_avx512", "sm80", ... */
    /* true when this kernel handles p on ctx; else why says why not. */
    bool (*supports)(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len);
    int num_knobs;
    const tsr_knob *knobs;
    /* The heuristic schedule; may be NULL when there are no knobs. */
    void (*default_schedule)(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s);
    /* May reject a schedule the heuristic would never pick (the tuner skips it). */
    bool (*schedule_valid)(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s);
    tsr_status (*run)(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s);
    /* conv2d, optional: the layout this kernel wants a filter packed in for
     * p (hdr's layout, nr, format and payload_bytes), and with payload
     * non-NULL the packing itself. Without it filters are packed as a copy. */
    void (*pack_filter)(tsr_context *ctx, const tsr_problem *p, tsr_packed_filter *hdr, void *payload);
    /* CPU kernels: the ISA features (TSR_CPU_* bits of ctx->cpu_features)
     * its file is compiled for. Nothing of it may run on a CPU without them,
     * supports() included (a compiler may use the ISA anywhere in the file,
     * as AddressSanitizer's stack poisoning did), so tsr_kernel_supports
     * checks them first. */
    uint32_t cpu_features;
} tsr_kernel;

/* k->supports(p, ctx, ...) when ctx's CPU has k's ISA (always on other
 * backends); else false, why naming the kernel. Every caller outside a
 * kernel's own file asks through this. */
bool tsr_kernel_supports(const tsr_kernel *k, const tsr_problem *p, const tsr_context *ctx, char *why,
                         size_t why_len);

/* supports() of kernels that take every valid problem on the CPU backend
 * (the references). */
bool tsr_supports_any_cpu(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len);

/* Kernels for op on backend, in priority order (best first, reference last):
 * *n of them from the returned pointer. */
const tsr_kernel *const *tsr_registry_list(tsr_op op, tsr_backend backend, int *n);
const tsr_kernel *tsr_registry_find(const char *name);

/* Picks the first kernel that supports p, takes its schedule (tuning table,
 * else heuristic) and runs it. The op fronts call this after validating. */
tsr_status tsr_dispatch(tsr_context *ctx, const tsr_problem *p);
/* The kernel dispatch would pick, or NULL with why filled. */
const tsr_kernel *tsr_dispatch_select(const tsr_context *ctx, const tsr_problem *p, char *why,
                                      size_t why_len);

/* --------------------------------------------------------------- helpers */

/* Scalar load/store of any float dtype as f32 (f32, f16, bf16). */
static inline float tsr_load_f(const void *p, tsr_dtype t, int64_t i) {
    switch (t) {
    case TSR_F16: return tsr_f16_to_f32(((const uint16_t *)p)[i]);
    case TSR_BF16: return tsr_bf16_to_f32(((const uint16_t *)p)[i]);
    case TSR_I8: return (float)((const int8_t *)p)[i];
    case TSR_I32: return (float)((const int32_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}
static inline void tsr_store_f(void *p, tsr_dtype t, int64_t i, float v) {
    switch (t) {
    case TSR_F16: ((uint16_t *)p)[i] = tsr_f32_to_f16(v); break;
    case TSR_BF16: ((uint16_t *)p)[i] = tsr_f32_to_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}
static inline bool tsr_is_float_dtype(tsr_dtype t) {
    return t == TSR_F32 || t == TSR_F16 || t == TSR_BF16;
}
static inline bool tsr_dtype_valid(tsr_dtype t) {
    return (unsigned)t <= (unsigned)TSR_I32;
}

/* 64-byte aligned scratch for a CPU kernel's call (NULL when out of
 * memory), handed back with tsr_scratch_put. Blocks up to TSR_SCRATCH_KEEP
 * bytes are kept per thread between calls, so small calls do not allocate. */
#define TSR_SCRATCH_KEEP ((size_t)256 << 10)
void *tsr_scratch_get(size_t bytes);
void tsr_scratch_put(void *p);

/* Threads for `work` units on ctx: waking a thread costs microseconds (far
 * more when its core is busy), so each woken one gets >= per_thread units. */
static inline int tsr_threads_for(const tsr_context *ctx, double work, double per_thread) {
    const int all = ctx->num_threads > 0 ? ctx->num_threads : 1;
    const double want = work / per_thread;
    return want >= all ? all : want < 2 ? 1 : (int)want;
}

/* Keys [0, end) are visible to attention query i (every CPU kernel and the
 * reference agree on it). BOTTOM_RIGHT aligns the last query with the last
 * key; (i + 1) + (seq_kv - seq_q) cannot overflow. */
static inline int64_t tsr_attention_visible_end(const tsr_attention_desc *d, int64_t i) {
    int64_t end = d->seq_kv;
    if (d->causal == TSR_CAUSAL_TOP_LEFT) end = i + 1;
    else if (d->causal == TSR_CAUSAL_BOTTOM_RIGHT) end = (i + 1) + (d->seq_kv - d->seq_q);
    return end < 0 ? 0 : (end > d->seq_kv ? d->seq_kv : end);
}

/* Scalar activations in f32 (the reference definitions). */
float tsr_activation_ref(tsr_activation act, float x);
/* The reference's elementwise definitions (kernels/elementwise/ref.c), for
 * fast kernels that run an op lane by lane. */
float tsr_unary_ref(tsr_unary_op op, float x);
float tsr_binary_ref(tsr_binary_op op, float a, float b);
bool tsr_activation_valid(tsr_activation act);

/* Validates an epilogue's steps for an output of out_dtype (pointers, enums,
 * dtypes); `who` prefixes messages ("gemm"). Extents are the op front's. */
tsr_status tsr_epilogue_check(const tsr_epilogue *e, const char *who, tsr_dtype out_dtype);

/* Applies e's steps to v in f32, as the reference defines them: bias[bias_idx];
 * a residual step reads element b * batch_stride + row * ld + col of its data. */
float tsr_epilogue_apply_ref(const tsr_epilogue *e, float v, int64_t bias_idx, int64_t b,
                             int64_t row, int64_t col);

#endif /* TSR_INTERNAL_H */
