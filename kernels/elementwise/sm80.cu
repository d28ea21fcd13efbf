/* CUDA elementwise kernels for sm80-class GPUs: fused chains, softmax,
 * layernorm and rmsnorm, the device-side counterparts of chain.ref,
 * softmax.ref, layernorm.ref and rmsnorm.ref. They take every problem the op
 * fronts accept (any rank, strides, broadcasting, dtype mix, in-place).
 *
 * Chains. The host drops size-1 dims and merges dims that are contiguous in
 * every tensor, then picks one of two kernels:
 *  - chain_fast: y is dense row-major and every input (x, the used operands)
 *    reads element ((i / q) % per) of its own memory for y's linear index i,
 *    which covers dense tensors, 0-stride scalars, row vectors (broadcast
 *    along leading dims) and column vectors (along trailing dims). Each
 *    thread takes V consecutive elements per grid-stride step (V = 4 when
 *    everything is f32, else 8) with 128-bit loads/stores where the
 *    pointer is 16-byte aligned; a scalar tail takes n % V.
 *  - chain_general: any strides; y's linear index is decomposed with int64
 *    arithmetic (32-bit when both operands fit) per element.
 * Steps are decoded on the host into ew_step and interpreted from the kernel
 * parameters (__grid_constant__, so indexing them dynamically reads the
 * constant bank instead of copying ~1 KB of parameters to local memory).
 * The step loop is outside the per-element loop: the switch costs one
 * warp-uniform branch per V elements.
 *
 * Arithmetic matches ref.c up to f32 rounding of the transcendentals:
 * + - * / sqrt and reciprocal are the IEEE round-to-nearest intrinsics (never
 * contracted into FMAs, so a chain rounds between steps as the reference
 * does); max/min propagate NaN; pow is powf; the activation-like ops are
 * tsr_dev_activation so a chain agrees with the GPU GEMM/conv epilogues, as
 * chain.ref agrees with the CPU ones.
 *
 * Row-wise ops accumulate in f32: one warp per row for cols <= 1024 (the row
 * lives in registers, 8 rows per block); rows of up to 8192 in 16-byte
 * vectors one block per row, held in registers (rows_vec); else one
 * 512-thread block per row (the row is cached in shared memory when it fits
 * in 48 KB, else re-read from global, which L1/L2 mostly serve). Reductions are xor butterflies, so
 * every lane holds the bit-identical result and branches on it are uniform.
 * Every thread reads back only the elements it loaded itself, so the cache
 * needs no barrier beyond the reductions', and in-place (x == y) is safe:
 * a row's writes start after the reduction barriers that end its reads. */
#include <math.h>
#include <string.h>

#include "../../arch/sm80/device.cuh"
#include "../../arch/sm80/runtime.h"

enum {
    EW_THREADS = 256,
    EW_INPUTS = 1 + TSR_MAX_CHAIN_OPERANDS, /* x, then the used operands */
    ROW_WARPS = 8,                          /* rows per block, warp kernel */
    ROW_THREADS = 512,                      /* block kernel */
    ROW_VEC_THREADS = 256,                  /* vector kernel; its grid: up to 8 blocks an SM */
    ROW_VEC_MAX_NV = 4,                     /* ... and up to 4 x 8 values a thread: 8192 columns */
    ROW_WARP_MAX_COLS = 1024,
    ROW_CACHE_BYTES = 48 * 1024 - 256,      /* leaves room for the static red[] */
};

/* ------------------------------------------------------------ chain steps */

enum { EW_UNARY = 0, EW_RIGHT = 1 /* v op other */, EW_LEFT = 2 /* other op v */ };

typedef struct ew_step {
    int kind;
    int op;       /* tsr_unary_op or tsr_binary_op */
    int src;      /* -1: scalar; else the input slot of the operand */
    float scalar;
} ew_step;

typedef struct ew_steps {
    int n;
    ew_step s[TSR_MAX_CHAIN_STEPS];
} ew_steps;

__device__ __forceinline__ float ew_nan() { return __int_as_float(0x7fc00000); }

__device__ __forceinline__ float ew_nanmax(float a, float b) {
    return (a != a || b != b) ? ew_nan() : fmaxf(a, b);
}

/* Applies op to each of v's V values; the switch sits outside the loop so a
 * step costs one uniform branch per V elements. */
#define EW_EACH(expr)                                                                              \
    do {                                                                                           \
        _Pragma("unroll") for (int j = 0; j < V; j++) {                                            \
            const float x = v[j];                                                                  \
            v[j] = (expr);                                                                         \
        }                                                                                          \
    } while (0)

template <int V> __device__ __forceinline__ void ew_unary(int op, float (&v)[V]) {
    switch (op) {
    case TSR_UNARY_NEG: EW_EACH(-x); break;
    case TSR_UNARY_ABS: EW_EACH(fabsf(x)); break;
    case TSR_UNARY_SQUARE: EW_EACH(__fmul_rn(x, x)); break;
    case TSR_UNARY_SQRT: EW_EACH(__fsqrt_rn(x)); break;
    case TSR_UNARY_RSQRT: EW_EACH(__frcp_rn(__fsqrt_rn(x))); break; /* rsqrtf is 2 ulp, no IEEE edges */
    case TSR_UNARY_RECIPROCAL: EW_EACH(__frcp_rn(x)); break;
    case TSR_UNARY_EXP: EW_EACH(expf(x)); break;
    case TSR_UNARY_LOG: EW_EACH(logf(x)); break;
    case TSR_UNARY_ERF: EW_EACH(erff(x)); break;
    case TSR_UNARY_TANH: EW_EACH(tsr_dev_activation(TSR_ACT_TANH, x)); break;
    case TSR_UNARY_SIGMOID: EW_EACH(tsr_dev_activation(TSR_ACT_SIGMOID, x)); break;
    case TSR_UNARY_RELU: EW_EACH(tsr_dev_activation(TSR_ACT_RELU, x)); break;
    case TSR_UNARY_GELU_ERF: EW_EACH(tsr_dev_activation(TSR_ACT_GELU_ERF, x)); break;
    case TSR_UNARY_GELU_TANH: EW_EACH(tsr_dev_activation(TSR_ACT_GELU_TANH, x)); break;
    case TSR_UNARY_SILU: EW_EACH(tsr_dev_activation(TSR_ACT_SILU, x)); break;
    default: break; /* identity */
    }
}

/* v = l op r elementwise; l and r are already ordered for LEFT/RIGHT. */
template <int V> __device__ __forceinline__ void ew_binary(int op, float (&v)[V], const float (&l)[V],
                                                          const float (&r)[V]) {
#define EW_EACH2(expr)                                                                             \
    do {                                                                                           \
        _Pragma("unroll") for (int j = 0; j < V; j++) {                                            \
            const float a = l[j], b = r[j];                                                        \
            v[j] = (expr);                                                                         \
        }                                                                                          \
    } while (0)
    switch (op) {
    case TSR_BINARY_ADD: EW_EACH2(__fadd_rn(a, b)); break;
    case TSR_BINARY_SUB: EW_EACH2(__fsub_rn(a, b)); break;
    case TSR_BINARY_MUL: EW_EACH2(__fmul_rn(a, b)); break;
    case TSR_BINARY_DIV: EW_EACH2(__fdiv_rn(a, b)); break;
    /* NumPy's maximum/minimum: NaN on either side wins (fmaxf would drop it). */
    case TSR_BINARY_MAX: EW_EACH2((a != a || b != b) ? ew_nan() : (a > b ? a : b)); break;
    case TSR_BINARY_MIN: EW_EACH2((a != a || b != b) ? ew_nan() : (a < b ? a : b)); break;
    case TSR_BINARY_POW: EW_EACH2(powf(a, b)); break;
    default: break;
    }
#undef EW_EACH2
}

/* Runs the steps on val[0]; val[k] (k >= 1) are the operand inputs. */
template <int V> __device__ __forceinline__ void ew_run(const ew_steps &st, float (&val)[EW_INPUTS][V]) {
#pragma unroll 1
    for (int s = 0; s < st.n; s++) {
        const ew_step e = st.s[s];
        if (e.kind == EW_UNARY) {
            ew_unary<V>(e.op, val[0]);
            continue;
        }
        float o[V], l[V], r[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            o[j] = e.scalar;
            /* constant indices keep val in registers */
#pragma unroll
            for (int k = 1; k < EW_INPUTS; k++)
                if (e.src == k) o[j] = val[k][j];
            l[j] = e.kind == EW_RIGHT ? val[0][j] : o[j];
            r[j] = e.kind == EW_RIGHT ? o[j] : val[0][j];
        }
        ew_binary<V>(e.op, val[0], l, r);
    }
}

/* 64-bit division is a long software sequence; most indices fit 32 bits. */
__device__ __forceinline__ int64_t ew_div(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a / (uint32_t)b);
    return a / b;
}
__device__ __forceinline__ int64_t ew_mod(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a % (uint32_t)b);
    return a % b;
}

/* ------------------------------------------------------- chain: fast path */

enum {
    EW_M_VEC = 0,    /* q == 1, aligned: V values at (i % per) by 128-bit loads */
    EW_M_SCALAR = 1, /* per == 1: one value for every element */
    EW_M_SPLAT = 2,  /* q % V == 0: the V elements share one value */
    EW_M_GATHER = 3  /* anything else: element by element */
};

typedef struct ew_in {
    const void *p;
    tsr_dtype dtype;
    int mode;
    int64_t q, per; /* element i of y reads element ((i / q) % per) */
} ew_in;

typedef struct fast_args {
    int64_t n;
    void *y;
    tsr_dtype y_dtype;
    int y_vec; /* y 16-byte aligned: 128-bit stores */
    int nin;
    ew_in in[EW_INPUTS];
    ew_steps steps;
} fast_args;

__device__ __forceinline__ float ew_h2f(uint32_t u, tsr_dtype t) {
    /* bf16 -> f32 is exact: the high half of the f32 bits */
    return t == TSR_F16 ? __half2float(__ushort_as_half((unsigned short)u)) : __uint_as_float(u << 16);
}
__device__ __forceinline__ uint32_t ew_f2h(float v, tsr_dtype t) {
    return t == TSR_F16 ? (uint32_t)__half_as_ushort(__float2half_rn(v))
                        : (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(v));
}

/* V values at element off (a multiple of V; p 16-byte aligned). */
template <int V> __device__ __forceinline__ void ew_load_vec(const void *p, tsr_dtype t, int64_t off, float (&v)[V]) {
    if (t == TSR_F32) {
        const float4 *q = (const float4 *)((const float *)p + off);
#pragma unroll
        for (int k = 0; k < V / 4; k++) {
            const float4 f = q[k];
            v[4 * k] = f.x, v[4 * k + 1] = f.y, v[4 * k + 2] = f.z, v[4 * k + 3] = f.w;
        }
        return;
    }
    uint32_t w[V / 2];
    if constexpr (V == 8) {
        const uint4 r = *(const uint4 *)((const uint16_t *)p + off);
        w[0] = r.x, w[1] = r.y, w[2] = r.z, w[3] = r.w;
    } else {
        const uint2 r = *(const uint2 *)((const uint16_t *)p + off);
        w[0] = r.x, w[1] = r.y;
    }
#pragma unroll
    for (int k = 0; k < V / 2; k++) {
        v[2 * k] = ew_h2f(w[k] & 0xffffu, t);
        v[2 * k + 1] = ew_h2f(w[k] >> 16, t);
    }
}

template <int V> __device__ __forceinline__ void ew_store_vec(void *p, tsr_dtype t, int64_t off, const float (&v)[V]) {
    if (t == TSR_F32) {
        float4 *q = (float4 *)((float *)p + off);
#pragma unroll
        for (int k = 0; k < V / 4; k++) q[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        return;
    }
    uint32_t w[V / 2];
#pragma unroll
    for (int k = 0; k < V / 2; k++) w[k] = ew_f2h(v[2 * k], t) | (ew_f2h(v[2 * k + 1], t) << 16);
    if constexpr (V == 8) *(uint4 *)((uint16_t *)p + off) = make_uint4(w[0], w[1], w[2], w[3]);
    else *(uint2 *)((uint16_t *)p + off) = make_uint2(w[0], w[1]);
}

/* Element i's offset in an input: ((i / q) % per). */
__device__ __forceinline__ int64_t ew_offset(const ew_in &in, int64_t i) {
    const int64_t b = in.q == 1 ? i : ew_div(i, in.q);
    return b < in.per ? b : ew_mod(b, in.per);
}

template <int V> __device__ __forceinline__ void ew_load_in(const ew_in &in, int64_t i0, float (&v)[V]) {
    switch (in.mode) {
    case EW_M_VEC: ew_load_vec<V>(in.p, in.dtype, i0 < in.per ? i0 : ew_mod(i0, in.per), v); break;
    case EW_M_SCALAR:
    case EW_M_SPLAT: {
        const float s = tsr_dev_load(in.p, in.dtype, in.mode == EW_M_SCALAR ? 0 : ew_offset(in, i0));
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = s;
        break;
    }
    default: {
        /* Walk (i / q, i % q) forward instead of dividing per element. */
        const int64_t b = in.q == 1 ? i0 : ew_div(i0, in.q);
        int64_t r = i0 - b * in.q, o = b < in.per ? b : ew_mod(b, in.per);
#pragma unroll
        for (int j = 0; j < V; j++) {
            v[j] = tsr_dev_load(in.p, in.dtype, o);
            if (++r == in.q) {
                r = 0;
                if (++o == in.per) o = 0;
            }
        }
        break;
    }
    }
}

template <int V> __global__ void __launch_bounds__(EW_THREADS) chain_fast(const __grid_constant__ fast_args a) {
    const int64_t nvec = a.n / V;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t vi = tid; vi < nvec; vi += stride) {
        const int64_t i0 = vi * V;
        float val[EW_INPUTS][V];
        /* Every input is read before y is written, by this thread and at
         * these indices: in-place (y == x or an operand) is safe. */
#pragma unroll
        for (int k = 0; k < EW_INPUTS; k++) {
            if (k < a.nin) ew_load_in<V>(a.in[k], i0, val[k]);
            else {
#pragma unroll
                for (int j = 0; j < V; j++) val[k][j] = 0.0f;
            }
        }
        ew_run<V>(a.steps, val);
        if (a.y_vec) ew_store_vec<V>(a.y, a.y_dtype, i0, val[0]);
        else {
#pragma unroll
            for (int j = 0; j < V; j++) tsr_dev_store(a.y, a.y_dtype, i0 + j, val[0][j]);
        }
    }
    /* The last n % V elements, one per thread of the first block. */
    const int64_t i = nvec * V + tid;
    if (i < a.n) {
        float val[EW_INPUTS][1];
#pragma unroll
        for (int k = 0; k < EW_INPUTS; k++)
            val[k][0] = k < a.nin ? tsr_dev_load(a.in[k].p, a.in[k].dtype, ew_offset(a.in[k], i)) : 0.0f;
        ew_run<1>(a.steps, val);
        tsr_dev_store(a.y, a.y_dtype, i, val[0][0]);
    }
}

/* ---------------------------------------------------- chain: general path */

typedef struct gen_args {
    int64_t n;
    int ndim, nin;
    int64_t shape[TSR_MAX_DIMS];
    void *y;
    tsr_dtype y_dtype;
    int64_t ys[TSR_MAX_DIMS];
    const void *in[EW_INPUTS];
    tsr_dtype in_dtype[EW_INPUTS];
    int64_t is[EW_INPUTS][TSR_MAX_DIMS];
    ew_steps steps;
} gen_args;

__global__ void __launch_bounds__(EW_THREADS) chain_general(const __grid_constant__ gen_args a) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        int64_t rem = i, yo = 0, off[EW_INPUTS];
#pragma unroll
        for (int k = 0; k < EW_INPUTS; k++) off[k] = 0;
        /* Last dim fastest, so consecutive threads walk y's innermost dim. */
#pragma unroll
        for (int d = TSR_MAX_DIMS - 1; d >= 0; d--) {
            if (d >= a.ndim) continue;
            int64_t idx = rem;
            if (d > 0) { /* the outermost index is what remains */
                const int64_t q = ew_div(rem, a.shape[d]);
                idx = rem - q * a.shape[d];
                rem = q;
            }
            yo += idx * a.ys[d];
#pragma unroll
            for (int k = 0; k < EW_INPUTS; k++)
                if (k < a.nin) off[k] += idx * a.is[k][d];
        }
        float val[EW_INPUTS][1];
#pragma unroll
        for (int k = 0; k < EW_INPUTS; k++) val[k][0] = k < a.nin ? tsr_dev_load(a.in[k], a.in_dtype[k], off[k]) : 0.0f;
        ew_run<1>(a.steps, val);
        tsr_dev_store(a.y, a.y_dtype, yo, val[0][0]);
    }
}

/* ------------------------------------------------------------ chain: host */

static int ew_grid(const tsr_context *ctx, int64_t work) {
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    /* Enough blocks to fill every SM; the grid-stride loops take the rest. */
    int64_t blocks = (work + EW_THREADS - 1) / EW_THREADS, cap = (int64_t)sms * 8;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : (int)blocks;
}

static bool ew_aligned(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Reads t (strides over the collapsed dims) as element ((i / q) % per) of
 * y's dense linear index i: trailing 0-stride dims, then dims dense in t's
 * own memory, then leading 0-stride dims. False when t is not of that form. */
static bool ew_classify(int nd, const int64_t *shape, const int64_t *st, int64_t *q, int64_t *per) {
    int d = nd - 1;
    *q = 1, *per = 1;
    for (; d >= 0 && st[d] == 0; d--) *q *= shape[d];
    for (; d >= 0 && st[d] == *per; d--) *per *= shape[d];
    for (; d >= 0; d--)
        if (st[d] != 0) return false;
    return true;
}

static tsr_status chain_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *sch) {
    (void)sch;
    const tsr_chain_problem *c = &p->u.chain;
    const tsr_chain_desc *ch = &c->chain;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;

    int64_t n = 1;
    for (int d = 0; d < c->y.ndim; d++) n *= c->y.shape[d]; /* the front checked the count */
    if (n <= 0) return TSR_OK;

    /* Inputs: x in slot 0, then the operands some step uses (an unused one
     * may be NULL and is never read). */
    const tsr_tensor_desc *views[EW_INPUTS];
    const void *ptrs[EW_INPUTS];
    int slot[TSR_MAX_CHAIN_OPERANDS], nin = 1;
    views[0] = &c->x, ptrs[0] = c->xp;
    bool used[TSR_MAX_CHAIN_OPERANDS] = {false};
    for (int s = 0; s < ch->num_steps; s++)
        if (ch->steps[s].kind == TSR_STEP_TENSOR || ch->steps[s].kind == TSR_STEP_TENSOR_LEFT)
            used[ch->steps[s].operand] = true;
    for (int k = 0; k < ch->num_operands && k < TSR_MAX_CHAIN_OPERANDS; k++) {
        slot[k] = -1;
        if (!used[k]) continue;
        slot[k] = nin;
        views[nin] = &ch->operands[k], ptrs[nin] = c->operands[k];
        nin++;
    }

    ew_steps steps;
    memset(&steps, 0, sizeof steps);
    steps.n = ch->num_steps;
    for (int s = 0; s < ch->num_steps; s++) {
        const tsr_chain_step *cs = &ch->steps[s];
        ew_step *e = &steps.s[s];
        e->src = -1;
        e->scalar = cs->scalar;
        switch (cs->kind) {
        case TSR_STEP_UNARY: e->kind = EW_UNARY, e->op = (int)cs->unary; break;
        case TSR_STEP_SCALAR: e->kind = EW_RIGHT, e->op = (int)cs->binary; break;
        case TSR_STEP_SCALAR_LEFT: e->kind = EW_LEFT, e->op = (int)cs->binary; break;
        case TSR_STEP_TENSOR: e->kind = EW_RIGHT, e->op = (int)cs->binary, e->src = slot[cs->operand]; break;
        case TSR_STEP_TENSOR_LEFT: e->kind = EW_LEFT, e->op = (int)cs->binary, e->src = slot[cs->operand]; break;
        }
    }

    /* Collapse: drop size-1 dims, merge an outer dim into the inner one when
     * every tensor steps over the inner one exactly (broadcast 0s included). */
    int nd = 0;
    int64_t shape[TSR_MAX_DIMS], ys[TSR_MAX_DIMS], is[EW_INPUTS][TSR_MAX_DIMS];
    for (int d = 0; d < c->y.ndim; d++) {
        const int64_t ext = c->y.shape[d];
        if (ext == 1) continue;
        bool merge = nd > 0 && ys[nd - 1] == c->y.strides[d] * ext;
        for (int k = 0; merge && k < nin; k++) merge = is[k][nd - 1] == views[k]->strides[d] * ext;
        if (merge) {
            shape[nd - 1] *= ext;
            ys[nd - 1] = c->y.strides[d];
            for (int k = 0; k < nin; k++) is[k][nd - 1] = views[k]->strides[d];
        } else {
            shape[nd] = ext;
            ys[nd] = c->y.strides[d];
            for (int k = 0; k < nin; k++) is[k][nd] = views[k]->strides[d];
            nd++;
        }
    }

    /* Fast path: y dense and every input of the ((i / q) % per) form. */
    bool fast = true, all_f32 = c->y.dtype == TSR_F32;
    int64_t q[EW_INPUTS], per[EW_INPUTS], yq, yper;
    if (!ew_classify(nd, shape, ys, &yq, &yper) || yq != 1 || yper != n) fast = false;
    for (int k = 0; fast && k < nin; k++) {
        fast = ew_classify(nd, shape, is[k], &q[k], &per[k]);
        if (views[k]->dtype != TSR_F32) all_f32 = false;
    }
    const cudaStream_t stream = tsr_cuda_stream(ctx);

    if (fast) {
        const int V = all_f32 ? 4 : 8;
        fast_args a;
        memset(&a, 0, sizeof a);
        a.n = n;
        a.y = c->yp;
        a.y_dtype = c->y.dtype;
        a.y_vec = ew_aligned(c->yp);
        a.nin = nin;
        for (int k = 0; k < nin; k++) {
            ew_in *in = &a.in[k];
            in->p = ptrs[k], in->dtype = views[k]->dtype, in->q = q[k], in->per = per[k];
            if (per[k] == 1) in->mode = EW_M_SCALAR;
            else if (q[k] == 1 && (per[k] % V == 0 || per[k] == n) && ew_aligned(ptrs[k])) in->mode = EW_M_VEC;
            else if (q[k] % V == 0) in->mode = EW_M_SPLAT;
            else in->mode = EW_M_GATHER;
        }
        a.steps = steps;
        const int grid = ew_grid(ctx, n / V > 0 ? n / V : 1);
        if (V == 4) chain_fast<4><<<grid, EW_THREADS, 0, stream>>>(a);
        else chain_fast<8><<<grid, EW_THREADS, 0, stream>>>(a);
        return tsr_cuda_after_launch("chain.sm80");
    }

    gen_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    a.ndim = nd;
    a.nin = nin;
    a.y = c->yp;
    a.y_dtype = c->y.dtype;
    for (int d = 0; d < nd; d++) {
        a.shape[d] = shape[d];
        a.ys[d] = ys[d];
        for (int k = 0; k < nin; k++) a.is[k][d] = is[k][d];
    }
    for (int k = 0; k < nin; k++) a.in[k] = ptrs[k], a.in_dtype[k] = views[k]->dtype;
    a.steps = steps;
    chain_general<<<ew_grid(ctx, n), EW_THREADS, 0, stream>>>(a);
    return tsr_cuda_after_launch("chain.sm80");
}

/* ---------------------------------------------------------------- rowwise */

typedef struct row_args {
    const void *x;
    void *y;
    const float *gamma, *beta; /* may be NULL: 1 and 0 */
    int64_t rows, cols, xs, ys;
    float eps;
    int op;    /* TSR_OP_SOFTMAX, TSR_OP_LAYERNORM or TSR_OP_RMSNORM */
    int cache; /* block kernel: keep the row in shared memory */
} row_args;

/* Butterfly: every lane ends with the same bits (a + b == b + a). */
template <bool MAX> __device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? ew_nanmax(v, w) : v + w;
    }
    return v;
}

/* Every warp reduces the per-warp partials itself, so all threads get the
 * same value without a second broadcast; the closing barrier lets red be
 * reused by the next reduction. */
template <bool MAX> __device__ __forceinline__ float block_reduce(float v, float *red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_reduce<MAX>(v);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : (MAX ? -INFINITY : 0.0f);
    v = warp_reduce<MAX>(v);
    __syncthreads();
    return v;
}

/* Norm output for one element: (v - mean) * inv * gamma + beta. */
__device__ __forceinline__ float row_norm_out(const row_args &a, float v, float mean, float inv, int64_t j) {
    float o = (v - mean) * inv;
    if (a.gamma) o *= a.gamma[j];
    if (a.beta) o += a.beta[j];
    return o;
}

/* cols <= 32 * NPL: lane l holds columns l, l + 32, ... (coalesced). */
template <typename TX, typename TY, int NPL>
__global__ void __launch_bounds__(ROW_WARPS * 32) rows_warp(const row_args a) {
    const int lane = threadIdx.x & 31;
    const int cols = (int)a.cols;
    const int64_t wstride = (int64_t)gridDim.x * ROW_WARPS;
    for (int64_t row = (int64_t)blockIdx.x * ROW_WARPS + (threadIdx.x >> 5); row < a.rows; row += wstride) {
        const TX *x = (const TX *)a.x + row * a.xs;
        TY *y = (TY *)a.y + row * a.ys;
        float v[NPL];
#pragma unroll
        for (int s = 0; s < NPL; s++) {
            const int j = s * 32 + lane;
            v[s] = j < cols ? tsr_to_f32<TX>(x[j]) : 0.0f;
        }
        if (a.op == TSR_OP_SOFTMAX) {
            float mx = -INFINITY;
#pragma unroll
            for (int s = 0; s < NPL; s++)
                if (s * 32 + lane < cols) mx = ew_nanmax(mx, v[s]);
            mx = warp_reduce<true>(mx);
            if (mx != mx || mx == -INFINITY) {
                /* a NaN anywhere: all NaN; all -inf (fully masked): 0s */
                const float f = mx != mx ? mx : 0.0f;
#pragma unroll
                for (int s = 0; s < NPL; s++)
                    if (s * 32 + lane < cols) y[s * 32 + lane] = tsr_from_f32<TY>(f);
                continue;
            }
            float sum = 0.0f;
#pragma unroll
            for (int s = 0; s < NPL; s++)
                if (s * 32 + lane < cols) {
                    v[s] = expf(v[s] - mx);
                    sum += v[s];
                }
            sum = warp_reduce<false>(sum);
#pragma unroll
            for (int s = 0; s < NPL; s++)
                if (s * 32 + lane < cols) y[s * 32 + lane] = tsr_from_f32<TY>(__fdiv_rn(v[s], sum));
        } else {
            float mean = 0.0f;
            if (a.op == TSR_OP_LAYERNORM) {
                float sum = 0.0f; /* out-of-range slots hold 0 */
#pragma unroll
                for (int s = 0; s < NPL; s++) sum += v[s];
                mean = warp_reduce<false>(sum) / (float)cols;
            }
            /* two-pass: the variance of the centred values, as ref.c */
            float sq = 0.0f;
#pragma unroll
            for (int s = 0; s < NPL; s++)
                if (s * 32 + lane < cols) {
                    const float dv = v[s] - mean;
                    sq += dv * dv;
                }
            sq = warp_reduce<false>(sq);
            const float inv = __frcp_rn(__fsqrt_rn(sq / (float)cols + a.eps));
#pragma unroll
            for (int s = 0; s < NPL; s++) {
                const int j = s * 32 + lane;
                if (j < cols) y[j] = tsr_from_f32<TY>(row_norm_out(a, v[s], mean, inv, j));
            }
        }
    }
}

/* cols > 1024: one block per row, grid-stride over rows. */
template <typename TX, typename TY> __global__ void __launch_bounds__(ROW_THREADS) rows_block(const row_args a) {
    extern __shared__ float cache[];
    __shared__ float red[32];
    const int64_t C = a.cols, nt = blockDim.x;
    const bool cached = a.cache != 0;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const TX *x = (const TX *)a.x + row * a.xs;
        TY *y = (TY *)a.y + row * a.ys;
        if (a.op == TSR_OP_SOFTMAX) {
            float mx = -INFINITY;
            for (int64_t j = threadIdx.x; j < C; j += nt) {
                const float v = tsr_to_f32<TX>(x[j]);
                if (cached) cache[j] = v;
                mx = ew_nanmax(mx, v);
            }
            mx = block_reduce<true>(mx, red);
            if (mx != mx || mx == -INFINITY) {
                const float f = mx != mx ? mx : 0.0f;
                for (int64_t j = threadIdx.x; j < C; j += nt) y[j] = tsr_from_f32<TY>(f);
                continue;
            }
            float sum = 0.0f;
            for (int64_t j = threadIdx.x; j < C; j += nt) {
                const float e = expf((cached ? cache[j] : tsr_to_f32<TX>(x[j])) - mx);
                if (cached) cache[j] = e;
                sum += e;
            }
            sum = block_reduce<false>(sum, red);
            for (int64_t j = threadIdx.x; j < C; j += nt) {
                const float e = cached ? cache[j] : expf(tsr_to_f32<TX>(x[j]) - mx);
                y[j] = tsr_from_f32<TY>(__fdiv_rn(e, sum));
            }
        } else {
            const bool center = a.op == TSR_OP_LAYERNORM;
            /* pass 1: the sum (layernorm) or the sum of squares (rmsnorm) */
            float acc = 0.0f;
            for (int64_t j = threadIdx.x; j < C; j += nt) {
                const float v = tsr_to_f32<TX>(x[j]);
                if (cached) cache[j] = v;
                acc += center ? v : v * v;
            }
            acc = block_reduce<false>(acc, red);
            float mean = 0.0f, var;
            if (center) {
                mean = acc / (float)C;
                float sq = 0.0f;
                for (int64_t j = threadIdx.x; j < C; j += nt) {
                    const float dv = (cached ? cache[j] : tsr_to_f32<TX>(x[j])) - mean;
                    sq += dv * dv;
                }
                var = block_reduce<false>(sq, red) / (float)C;
            } else {
                var = acc / (float)C;
            }
            const float inv = __frcp_rn(__fsqrt_rn(var + a.eps));
            for (int64_t j = threadIdx.x; j < C; j += nt) {
                const float v = cached ? cache[j] : tsr_to_f32<TX>(x[j]);
                y[j] = tsr_from_f32<TY>(row_norm_out(a, v, mean, inv, j));
            }
        }
    }
}

/* 1024 < cols <= 8192, cols a multiple of 8, x and y (every row) 16-byte
 * aligned: one block per row holds the row in registers, each thread NV
 * groups of 8 values a block's width apart, loaded (and stored) as 16-byte
 * vectors all issued before the first reduction. The block kernel's scalar
 * loads, one per loop step with the shared-memory cache write between,
 * kept few bytes in flight: on an H200 (16384 x 4096) f16 went from 26-31%
 * of copy bandwidth to 57-65%, f32 from 49-57% to 76-82%. There, at 60
 * registers (NV = 2), 4 blocks an SM were resident and Nsight Compute found
 * no eligible warp in 43% of cycles: so a kernel per op (OP), and gamma and
 * beta (16-byte aligned, else rows_block) read four at a time. ptxas (sm_90,
 * NV = 2): softmax 32 registers, the norms 39, i.e. 8 and 6 blocks an SM;
 * not yet timed on a GPU. Softmax scales by the reciprocal of the sum
 * (within 1.5 ulp of the division). */
template <int NV, int OP>
__global__ void __launch_bounds__(ROW_VEC_THREADS) rows_vec(const row_args a, tsr_dtype xt, tsr_dtype yt) {
    __shared__ float red[32];
    const int nv = (int)(a.cols >> 3);
    const float cols = (float)a.cols;
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t xo = row * a.xs, yo = row * a.ys;
        float v[NV][8];
#pragma unroll
        for (int s = 0; s < NV; s++) {
            const int i = s * ROW_VEC_THREADS + (int)threadIdx.x;
            if (i < nv) ew_load_vec<8>(a.x, xt, xo + 8 * (int64_t)i, v[s]);
            else {
#pragma unroll
                for (int k = 0; k < 8; k++) v[s][k] = 0.0f;
            }
        }
        if constexpr (OP == TSR_OP_SOFTMAX) {
            float mx = -INFINITY;
#pragma unroll
            for (int s = 0; s < NV; s++)
                if (s * ROW_VEC_THREADS + (int)threadIdx.x < nv)
#pragma unroll
                    for (int k = 0; k < 8; k++) mx = ew_nanmax(mx, v[s][k]);
            mx = block_reduce<true>(mx, red);
            if (mx != mx || mx == -INFINITY) {
                /* a NaN anywhere: all NaN; all -inf (fully masked): 0s */
                const float f = mx != mx ? mx : 0.0f;
#pragma unroll
                for (int s = 0; s < NV; s++)
#pragma unroll
                    for (int k = 0; k < 8; k++) v[s][k] = f;
            } else {
                float sum = 0.0f;
#pragma unroll
                for (int s = 0; s < NV; s++)
                    if (s * ROW_VEC_THREADS + (int)threadIdx.x < nv)
#pragma unroll
                        for (int k = 0; k < 8; k++) {
                            v[s][k] = expf(v[s][k] - mx);
                            sum += v[s][k];
                        }
                const float inv = __frcp_rn(block_reduce<false>(sum, red));
#pragma unroll
                for (int s = 0; s < NV; s++)
#pragma unroll
                    for (int k = 0; k < 8; k++) v[s][k] *= inv;
            }
        } else {
            float mean = 0.0f;
            if constexpr (OP == TSR_OP_LAYERNORM) {
                float sum = 0.0f; /* out-of-range slots hold 0 */
#pragma unroll
                for (int s = 0; s < NV; s++)
#pragma unroll
                    for (int k = 0; k < 8; k++) sum += v[s][k];
                mean = block_reduce<false>(sum, red) / cols;
            }
            /* two-pass: the variance of the centred values, as ref.c */
            float sq = 0.0f;
#pragma unroll
            for (int s = 0; s < NV; s++)
                if (s * ROW_VEC_THREADS + (int)threadIdx.x < nv)
#pragma unroll
                    for (int k = 0; k < 8; k++) {
                        const float dv = v[s][k] - mean;
                        sq += dv * dv;
                    }
            const float inv = __frcp_rn(__fsqrt_rn(block_reduce<false>(sq, red) / cols + a.eps));
#pragma unroll
            for (int s = 0; s < NV; s++) {
                const int i = s * ROW_VEC_THREADS + (int)threadIdx.x;
                if (i >= nv) continue;
#pragma unroll
                for (int h = 0; h < 8; h += 4) {
                    /* gamma and beta four at a time: eight more live values, not sixteen */
                    const int64_t e = 8 * (int64_t)i + h;
                    float g[4], b[4];
                    if (a.gamma) ew_load_vec<4>(a.gamma, TSR_F32, e, g);
                    if (a.beta) ew_load_vec<4>(a.beta, TSR_F32, e, b);
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        float o = (v[s][h + k] - mean) * inv;
                        if (a.gamma) o *= g[k];
                        if (a.beta) o += b[k];
                        v[s][h + k] = o;
                    }
                }
            }
        }
#pragma unroll
        for (int s = 0; s < NV; s++) {
            const int i = s * ROW_VEC_THREADS + (int)threadIdx.x;
            if (i < nv) ew_store_vec<8>(a.y, yt, yo + 8 * (int64_t)i, v[s]);
        }
    }
}

/* Whether rows_vec takes the problem (see there); its NV, else 0. */
static int rows_vec_nv(const row_args &a, tsr_dtype xt, tsr_dtype yt) {
    const int64_t ex = (int64_t)tsr_dtype_size(xt), ey = (int64_t)tsr_dtype_size(yt);
    if (a.cols <= ROW_WARP_MAX_COLS || a.cols % 8 || a.cols > 8 * ROW_VEC_THREADS * ROW_VEC_MAX_NV) return 0;
    if (((uintptr_t)a.x & 15) || ((uintptr_t)a.y & 15) || (a.xs * ex) % 16 || (a.ys * ey) % 16) return 0;
    if (((uintptr_t)a.gamma & 15) || ((uintptr_t)a.beta & 15)) return 0;
    const int64_t per_thread = (a.cols / 8 + ROW_VEC_THREADS - 1) / ROW_VEC_THREADS;
    return per_thread <= 1 ? 1 : per_thread <= 2 ? 2 : 4;
}

template <int OP>
static void rows_vec_launch(const row_args &a, tsr_dtype xt, tsr_dtype yt, int nv, int sms, cudaStream_t stream) {
    int64_t blocks = a.rows, cap = (int64_t)sms * (2048 / ROW_VEC_THREADS);
    if (blocks > cap) blocks = cap;
    const dim3 g((unsigned)blocks), b(ROW_VEC_THREADS);
    if (nv == 1) rows_vec<1, OP><<<g, b, 0, stream>>>(a, xt, yt);
    else if (nv == 2) rows_vec<2, OP><<<g, b, 0, stream>>>(a, xt, yt);
    else rows_vec<4, OP><<<g, b, 0, stream>>>(a, xt, yt);
}

template <typename TX, typename TY> static void rows_launch(const row_args &a, int sms, cudaStream_t stream) {
    if (a.cols <= ROW_WARP_MAX_COLS) {
        int64_t blocks = (a.rows + ROW_WARPS - 1) / ROW_WARPS, cap = (int64_t)sms * 32;
        if (blocks > cap) blocks = cap;
        const dim3 g((unsigned)blocks), b(ROW_WARPS * 32);
        if (a.cols <= 32) rows_warp<TX, TY, 1><<<g, b, 0, stream>>>(a);
        else if (a.cols <= 64) rows_warp<TX, TY, 2><<<g, b, 0, stream>>>(a);
        else if (a.cols <= 128) rows_warp<TX, TY, 4><<<g, b, 0, stream>>>(a);
        else if (a.cols <= 256) rows_warp<TX, TY, 8><<<g, b, 0, stream>>>(a);
        else if (a.cols <= 512) rows_warp<TX, TY, 16><<<g, b, 0, stream>>>(a);
        else rows_warp<TX, TY, 32><<<g, b, 0, stream>>>(a);
        return;
    }
    int64_t blocks = a.rows, cap = (int64_t)sms * 16;
    if (blocks > cap) blocks = cap;
    const size_t smem = a.cache ? (size_t)a.cols * sizeof(float) : 0;
    rows_block<TX, TY><<<(unsigned)blocks, ROW_THREADS, smem, stream>>>(a);
}

template <typename TX> static void rows_pick_y(const row_args &a, tsr_dtype yt, int sms, cudaStream_t stream) {
    switch (yt) {
    case TSR_F16: rows_launch<TX, __half>(a, sms, stream); break;
    case TSR_BF16: rows_launch<TX, __nv_bfloat16>(a, sms, stream); break;
    default: rows_launch<TX, float>(a, sms, stream); break;
    }
}

static tsr_status rowwise_run(tsr_context *ctx, const tsr_problem *p, const char *who) {
    const tsr_rowwise_problem *r = &p->u.rowwise;
    const tsr_rowwise_desc *d = &r->d;
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    if (d->rows <= 0 || d->cols <= 0) return TSR_OK;
    row_args a;
    memset(&a, 0, sizeof a);
    a.x = r->x, a.y = r->y, a.gamma = r->gamma, a.beta = p->op == TSR_OP_LAYERNORM ? r->beta : NULL;
    a.rows = d->rows, a.cols = d->cols, a.xs = d->x_row_stride, a.ys = d->y_row_stride;
    a.eps = d->epsilon;
    a.op = (int)p->op;
    if (a.op == TSR_OP_SOFTMAX) a.gamma = NULL;
    a.cache = a.cols > ROW_WARP_MAX_COLS && a.cols * (int64_t)sizeof(float) <= ROW_CACHE_BYTES;
    const int sms = tsr_cuda(ctx)->sm_count > 0 ? tsr_cuda(ctx)->sm_count : 1;
    const cudaStream_t stream = tsr_cuda_stream(ctx);
    const int vec = rows_vec_nv(a, d->x_dtype, d->y_dtype);
    if (vec) {
        if (a.op == TSR_OP_SOFTMAX) rows_vec_launch<TSR_OP_SOFTMAX>(a, d->x_dtype, d->y_dtype, vec, sms, stream);
        else if (a.op == TSR_OP_LAYERNORM) rows_vec_launch<TSR_OP_LAYERNORM>(a, d->x_dtype, d->y_dtype, vec, sms, stream);
        else rows_vec_launch<TSR_OP_RMSNORM>(a, d->x_dtype, d->y_dtype, vec, sms, stream);
        return tsr_cuda_after_launch(who);
    }
    switch (d->x_dtype) {
    case TSR_F16: rows_pick_y<__half>(a, d->y_dtype, sms, stream); break;
    case TSR_BF16: rows_pick_y<__nv_bfloat16>(a, d->y_dtype, sms, stream); break;
    default: rows_pick_y<float>(a, d->y_dtype, sms, stream); break;
    }
    return tsr_cuda_after_launch(who);
}

static tsr_status softmax_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    return rowwise_run(ctx, p, "softmax.sm80");
}
static tsr_status layernorm_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    return rowwise_run(ctx, p, "layernorm.sm80");
}
static tsr_status rmsnorm_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    return rowwise_run(ctx, p, "rmsnorm.sm80");
}

/* ------------------------------------------------------------ descriptors */

/* Every problem the fronts accept runs here: these are the only CUDA kernels
 * for the four ops. */
static bool ew_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    if (ctx->backend == TSR_BACKEND_CUDA) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s.sm80 runs on cuda", tsr_op_name(p->op));
    return false;
}

extern "C" const tsr_kernel tsr_chain_sm80 = {
    "chain.sm80", TSR_OP_CHAIN, TSR_BACKEND_CUDA, "sm80", ew_supports, 0, NULL, NULL, NULL, chain_run,
};
extern "C" const tsr_kernel tsr_softmax_sm80 = {
    "softmax.sm80", TSR_OP_SOFTMAX, TSR_BACKEND_CUDA, "sm80", ew_supports, 0, NULL, NULL, NULL, softmax_run,
};
extern "C" const tsr_kernel tsr_layernorm_sm80 = {
    "layernorm.sm80", TSR_OP_LAYERNORM, TSR_BACKEND_CUDA, "sm80", ew_supports, 0, NULL, NULL, NULL, layernorm_run,
};
extern "C" const tsr_kernel tsr_rmsnorm_sm80 = {
    "rmsnorm.sm80", TSR_OP_RMSNORM, TSR_BACKEND_CUDA, "sm80", ew_supports, 0, NULL, NULL, NULL, rmsnorm_run,
};
