/* Fused elementwise chains on x86, one source for the AVX2, AVX-512 and
 * AVX-512 with BF16 builds (define CHAIN_ARCH, CHAIN_SYMBOL and
 * CHAIN_FEATURES after a simd.h, vmath.h and vdtype.h). One pass over
 * memory in tiles of TILE elements: a tile of x is read once, the steps
 * run over it one after another in L1 (each step one loop, its op and
 * constants fixed outside the loop, NV vectors an iteration so the
 * out-of-order core has independent exp chains to overlap), and y is
 * written once; the streamed inputs are prefetched PREFETCH_BYTES ahead.
 * With AVX-512 a standalone activation or a gated unit skips the tile
 * buffer (unary_direct).
 *
 * Layout: dims that are contiguous in y, x and every operand alike are
 * merged, so a dense or row-broadcast problem becomes few long rows; the
 * innermost dim must be unit-stride or broadcast (stride 0) in every
 * tensor and unit-stride in y, else the reference runs. Rows are cut into
 * blocks of BLOCK elements, spread over the threads.
 *
 * Values: identity, neg, abs, square, sqrt, rsqrt, reciprocal, relu, + - *
 * / and NaN-propagating max/min are the f32 operations the reference's
 * definitions round to (rsqrt and reciprocal within 1 ulp). exp, sigmoid
 * and silu are built on vexp.h's exps, tanh, erf and the GELUs on
 * verf.h's polynomials; over the whole float range (overflow to inf, the
 * denormal range, +-inf, NaN) they stay within these ulps of the
 * definitions computed in double and rounded once:
 *   exp 2, sigmoid 3, silu 3, tanh 1, erf 2, gelu_erf 6, gelu_tanh 4
 * (the most seen over every 13th float pattern of |x| <= 20, 169 million
 * values, and over tests/test_elementwise_x86.c's spread of the whole
 * range, which holds the kernels to them). gelu_erf as the last step
 * before a bf16 or f16 y takes, with AVX2, a 1e-5 form (|x| <= 3): within
 * 1 ulp of y's type of the definition rounded to it, 99.8% exactly so.
 * With AVX-512 every gelu_erf within |x| < 4 takes verf.h's pieces, at
 * about half the operations of the polynomial forms: degree 5 (2 ulp),
 * degree 4 (3.9e-7) before an f16 y and degree 3 (1.6e-5) before a bf16
 * y, whose results are that rounding for every bf16 x.
 * log and pow run lane by lane through the reference's own definitions
 * (tsr_unary_ref, tsr_binary_ref), still fused in the same pass. */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "../../arch/x86_avx2/prefetch.h"

#define BLOCK 4096
#define PREFETCH_BYTES 2048

#include "../../arch/x86_avx512/vact.h"

#if VL == 16
#define vf_sqrt(x) _mm512_sqrt_ps(x)
#else
#define vf_sqrt(x) _mm256_sqrt_ps(x)
#endif

/* op applied lane by lane with the reference's definition. */
static inline vf lanes_unary(tsr_unary_op op, vf x) {
    float t[VL];
    vf_store(t, x);
    for (int i = 0; i < VL; i++) t[i] = tsr_unary_ref(op, t[i]);
    return vf_load(t);
}

/* Vectors in flight through each step: independent exp chains enough to
 * fill the pipelines, and a step's switch and constants paid once per
 * NV * VL elements (AVX-512's 32 registers hold four; AVX2's 16, two). */
#if VL == 16
#define NV 4
#else
#define NV 2
#endif
#define EACH(expr) for (int u = 0; u < NV; u++) x[u] = (expr)

/* What a step's result is rounded to next, where gelu_erf then takes a
 * shorter form: nothing (f32 y), f16, or bf16 (8 bits, the shortest). */
enum narrow { WIDE, NARROW_F16, NARROW_BF16 };

/* The narrowness of y's type. */
static inline enum narrow narrow_of(tsr_dtype y) {
    return y == TSR_BF16 ? NARROW_BF16 : y == TSR_F16 ? NARROW_F16 : WIDE;
}

/* gelu_erf: the short forms for vectors whose every lane is in their
 * range, the narrow ones where the result is rounded to bf16 or f16 next:
 * with AVX-512 the pieces (within 4; degree 4 into f16, 3 into bf16: one
 * FMA and one vpermt2ps fewer, bf16 gelu_erf in L1 on Zen 4 12.5-13.0 ->
 * 11.3-11.9 TSC ticks per 16 values), with AVX2 the polynomials within 3
 * (the narrow one 1e-5). */
static inline __attribute__((always_inline)) void apply_gelu_erf(vf *x, enum narrow narrow) {
#if VL == 16
    const bool in = gelu_erf_pieces_ok(x, NV);
    if (in && narrow == NARROW_BF16) EACH(gelu_erf_by_pieces(x[u], gelu_erf_pieces_bf16, 3));
    else if (in && narrow == NARROW_F16) EACH(gelu_erf_by_pieces(x[u], gelu_erf_pieces_narrow, 4));
    else if (in) EACH(gelu_erf_by_pieces(x[u], gelu_erf_pieces, 5));
    else EACH(gelu_erf_full(x[u]));
#else
    bool small = true;
    for (int u = 0; u < NV; u++) small = small && gelu_erf_small_ok(x[u]);
    if (small && narrow != WIDE) EACH(gelu_erf_narrow(x[u]));
    else if (small) EACH(gelu_erf_small(x[u]));
    else EACH(gelu_erf_full(x[u]));
#endif
}

/* op on NV vectors; narrow: what the result is rounded to next. */
static inline __attribute__((always_inline)) void apply_unary(tsr_unary_op op, vf *x, const enum narrow narrow) {
    const vf one = vf_set1(1.0f);
    switch (op) {
    case TSR_UNARY_IDENTITY: break;
    case TSR_UNARY_NEG: EACH(vf_mul(x[u], vf_set1(-1.0f))); break;
    case TSR_UNARY_ABS: EACH(vf_copysign(x[u], vf_zero())); break;
    case TSR_UNARY_SQUARE: EACH(vf_mul(x[u], x[u])); break;
    case TSR_UNARY_SQRT: EACH(vf_sqrt(x[u])); break;
    case TSR_UNARY_RSQRT: EACH(vf_div(one, vf_sqrt(x[u]))); break;
    case TSR_UNARY_RECIPROCAL: EACH(vf_div(one, x[u])); break;
    case TSR_UNARY_EXP: EACH(exp_full(x[u])); break;
    case TSR_UNARY_SIGMOID: EACH(sigmoid_full(x[u])); break;
    case TSR_UNARY_SILU: EACH(silu_full(x[u])); break;
    case TSR_UNARY_RELU: EACH(vf_relu(x[u])); break;
    case TSR_UNARY_TANH: EACH(tanh_full(x[u])); break;
    case TSR_UNARY_ERF: EACH(erf_full(x[u])); break;
    case TSR_UNARY_GELU_ERF: apply_gelu_erf(x, narrow); break;
    case TSR_UNARY_GELU_TANH: EACH(gelu_tanh_full(x[u])); break;
    default: EACH(lanes_unary(op, x[u])); break;
    }
}

/* x = x op o, or o op x when left. */
static inline __attribute__((always_inline)) void apply_binary(tsr_binary_op op, vf *x, const vf *o, bool left) {
    vf a[NV], b[NV];
    for (int u = 0; u < NV; u++) a[u] = left ? o[u] : x[u], b[u] = left ? x[u] : o[u];
    switch (op) {
    case TSR_BINARY_ADD: EACH(vf_add(a[u], b[u])); break;
    case TSR_BINARY_SUB: EACH(vf_sub(a[u], b[u])); break;
    case TSR_BINARY_MUL: EACH(vf_mul(a[u], b[u])); break;
    case TSR_BINARY_DIV: EACH(vf_div(a[u], b[u])); break;
    /* max/min return b when either is NaN: a NaN in a is put back */
    case TSR_BINARY_MAX: EACH(vf_select(vf_is(a[u], a[u], _CMP_UNORD_Q), vf_max(a[u], b[u]), a[u])); break;
    case TSR_BINARY_MIN: EACH(vf_select(vf_is(a[u], a[u], _CMP_UNORD_Q), vf_min(a[u], b[u]), a[u])); break;
    default:
        for (int u = 0; u < NV; u++) {
            float ta[VL], tb[VL];
            vf_store(ta, a[u]), vf_store(tb, b[u]);
            for (int i = 0; i < VL; i++) ta[i] = tsr_binary_ref(op, ta[i], tb[i]);
            x[u] = vf_load(ta);
        }
    }
}
#undef EACH

/* The tensors of a chain after merging dims: y, x, then the operands. */
typedef struct chain_view {
    int ndim, ntensors;
    int64_t shape[TSR_MAX_DIMS];
    int64_t strides[2 + TSR_MAX_CHAIN_OPERANDS][TSR_MAX_DIMS];
    tsr_dtype dtype[2 + TSR_MAX_CHAIN_OPERANDS];
    int esize[2 + TSR_MAX_CHAIN_OPERANDS]; /* bytes per element (no call per vector to find it) */
    const char *base[2 + TSR_MAX_CHAIN_OPERANDS];
    bool stream_y; /* y stored past the caches (vf_streams) */
    bool pairs;    /* every unit-stride tensor is bf16: whole steps keep evens and odds apart (chain_run) */
    bool direct;   /* unary_direct_of */
    int gate;      /* gate_of */
} chain_view;

static void view_of(const tsr_chain_problem *c, chain_view *v) {
    const tsr_tensor_desc *t[2 + TSR_MAX_CHAIN_OPERANDS] = {&c->y, &c->x};
    v->ntensors = 2 + c->chain.num_operands;
    v->base[0] = c->yp, v->base[1] = c->xp;
    for (int k = 0; k < c->chain.num_operands; k++) t[2 + k] = &c->chain.operands[k], v->base[2 + k] = c->operands[k];
    v->ndim = 0;
    /* from the outermost dim in; size-1 dims dropped; a dim merged into the
     * previous one when every tensor steps across it contiguously */
    for (int i = 0; i < c->y.ndim; i++) {
        if (c->y.shape[i] == 1) continue;
        bool merge = v->ndim > 0;
        for (int k = 0; merge && k < v->ntensors; k++)
            merge = t[k]->strides[i] * c->y.shape[i] == v->strides[k][v->ndim - 1];
        if (merge) {
            v->shape[v->ndim - 1] *= c->y.shape[i];
            for (int k = 0; k < v->ntensors; k++) v->strides[k][v->ndim - 1] = t[k]->strides[i];
        } else {
            v->shape[v->ndim] = c->y.shape[i];
            for (int k = 0; k < v->ntensors; k++) v->strides[k][v->ndim] = t[k]->strides[i];
            v->ndim++;
        }
    }
    if (v->ndim == 0) { /* a scalar, or every dim of size 1 */
        v->ndim = 1, v->shape[0] = 1;
        for (int k = 0; k < v->ntensors; k++) v->strides[k][0] = 1;
    }
    for (int k = 0; k < v->ntensors; k++) v->dtype[k] = t[k]->dtype, v->esize[k] = (int)tsr_dtype_size(t[k]->dtype);
}

static bool chain_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
    chain_view v;
    view_of(&p->u.chain, &v);
    const int in = v.ndim - 1;
    bool ok = v.strides[0][in] == 1;
    for (int k = 1; ok && k < v.ntensors; k++) ok = v.strides[k][in] == 1 || v.strides[k][in] == 0;
    if (!ok)
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED,
                "chain.%s: the innermost dim must be unit-stride in y and unit-stride or broadcast in the inputs",
                CHAIN_ARCH);
    return ok;
}

/* cnt (1..NV * VL) elements of tensor k from element offset off on, with
 * stride s (1; or 0: one value broadcast), into x; vectors past cnt read
 * as 0. */
static inline __attribute__((always_inline)) void load_nv(const chain_view *v, int k, int64_t off, int64_t s, int cnt,
                                                         bool pairs, vf *x) {
    if (s == 0) {
        const vf b = vf_set1(tsr_load_f(v->base[k], v->dtype[k], off));
        for (int u = 0; u < NV; u++) x[u] = b;
        return;
    }
    if (pairs) {
        for (int u = 0; u < NV; u += 2) vf_load_bf16_evens_odds(v->base[k], off + u * VL, &x[u], &x[u + 1]);
        return;
    }
    for (int u = 0; u < NV; u++) {
        const int n = cnt - u * VL;
        x[u] = n >= VL ? vf_load_dtype(v->base[k], v->dtype[k], off + u * VL)
             : n > 0   ? vf_load_n_dtype(v->base[k], v->dtype[k], off + u * VL, n)
                       : vf_zero();
    }
}

/* Elements a step runs over at a time: a tile of x (and of each operand)
 * stays in L1 while the steps pass over it one after another. */
#define TILE 256

/* dst = op(src) over a tile (n a multiple of NV * VL), op a constant after
 * inlining: one step's loop with its constants in registers. */
static inline __attribute__((always_inline)) void tile_unary_op(const tsr_unary_op op, const float *src, float *dst,
                                                               int n, const enum narrow narrow) {
    for (int i = 0; i < n; i += NV * VL) {
        vf x[NV];
        for (int u = 0; u < NV; u++) x[u] = vf_load(src + i + u * VL);
        apply_unary(op, x, narrow);
        for (int u = 0; u < NV; u++) vf_store(dst + i + u * VL, x[u]);
    }
}

/* F(op, narrow, args...) with op and narrow constants: one loop per op
 * (log, lane by lane, the default). narrow: what the result is rounded to
 * next (gelu_erf's form follows it; the other ops ignore it). */
#define UNARY_CASE(F, o, ...) \
    case o: F(o, WIDE, __VA_ARGS__); break
/* gelu_erf's case: one loop per narrowness, each with its form */
#define GELU_ERF_CASE(F, narrow, ...)                                                                        \
    case TSR_UNARY_GELU_ERF:                                                                                \
        if (narrow == NARROW_BF16) F(TSR_UNARY_GELU_ERF, NARROW_BF16, __VA_ARGS__);                         \
        else if (narrow == NARROW_F16) F(TSR_UNARY_GELU_ERF, NARROW_F16, __VA_ARGS__);                      \
        else F(TSR_UNARY_GELU_ERF, WIDE, __VA_ARGS__);                                                      \
        break
#define UNARY_DISPATCH(F, op, narrow, ...)                                                                       \
    switch (op) {                                                                                               \
        UNARY_CASE(F, TSR_UNARY_IDENTITY, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_NEG, __VA_ARGS__);            \
        UNARY_CASE(F, TSR_UNARY_ABS, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_SQUARE, __VA_ARGS__);              \
        UNARY_CASE(F, TSR_UNARY_SQRT, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_RSQRT, __VA_ARGS__);              \
        UNARY_CASE(F, TSR_UNARY_RECIPROCAL, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_EXP, __VA_ARGS__);          \
        UNARY_CASE(F, TSR_UNARY_ERF, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_TANH, __VA_ARGS__);                \
        UNARY_CASE(F, TSR_UNARY_SIGMOID, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_RELU, __VA_ARGS__);            \
        UNARY_CASE(F, TSR_UNARY_GELU_TANH, __VA_ARGS__); UNARY_CASE(F, TSR_UNARY_SILU, __VA_ARGS__);          \
        GELU_ERF_CASE(F, narrow, __VA_ARGS__);                                                                  \
    default: F(op, WIDE, __VA_ARGS__);                                                                          \
    }

#define TILE_UNARY_OP(op, narrow, src, dst, n) tile_unary_op(op, src, dst, n, narrow)
static void tile_unary(tsr_unary_op op, const float *src, float *dst, int n, enum narrow narrow) {
    UNARY_DISPATCH(TILE_UNARY_OP, op, narrow, src, dst, n)
}

/* dst = src op o (o op src when left) over a tile; o a tile, or NULL for
 * the value ob in every lane. */
static inline __attribute__((always_inline)) void tile_binary_op(const tsr_binary_op op, const bool left,
                                                                const float *src, const float *o, vf ob, float *dst,
                                                                int n) {
    for (int i = 0; i < n; i += NV * VL) {
        vf x[NV], w[NV];
        for (int u = 0; u < NV; u++) x[u] = vf_load(src + i + u * VL), w[u] = o ? vf_load(o + i + u * VL) : ob;
        apply_binary(op, x, w, left);
        for (int u = 0; u < NV; u++) vf_store(dst + i + u * VL, x[u]);
    }
}

#define BINARY_CASE(op) \
    case op: \
        if (left) tile_binary_op(op, true, src, o, ob, dst, n); \
        else tile_binary_op(op, false, src, o, ob, dst, n); \
        break
static void tile_binary(tsr_binary_op op, bool left, const float *src, const float *o, vf ob, float *dst, int n) {
    switch (op) {
        BINARY_CASE(TSR_BINARY_ADD); BINARY_CASE(TSR_BINARY_SUB); BINARY_CASE(TSR_BINARY_MUL);
        BINARY_CASE(TSR_BINARY_DIV); BINARY_CASE(TSR_BINARY_MAX); BINARY_CASE(TSR_BINARY_MIN);
    default: tile_binary_op(op, left, src, o, ob, dst, n); /* pow: lane by lane */
    }
}
#undef BINARY_CASE

/* cnt elements of tensor k (unit-stride) from element offset off as f32
 * into a tile buffer, n (cnt rounded up to NV * VL) values, zeros past cnt;
 * bf16 whole chunks as evens and odds when pairs. */
static void tile_load(const chain_view *v, int k, int64_t off, int cnt, int n, bool pairs, float *dst) {
    for (int i = 0; i < n; i += NV * VL) {
        vf x[NV];
        const int c = cnt - i < NV * VL ? cnt - i : NV * VL;
        load_nv(v, k, off + i, 1, c, pairs && c == NV * VL, x);
        for (int u = 0; u < NV; u++) vf_store(dst + i + u * VL, x[u]);
    }
}

/* c (1..NV * VL) values of x into y from element off on (dtype,
 * streamed, bf16 pairs when c is whole, a partial last vector): load_nv's
 * inverse. */
static inline __attribute__((always_inline)) void store_nv(const chain_view *v, int64_t off, int c, const vf *x) {
    if (v->pairs && c == NV * VL) {
        for (int u = 0; u < NV; u += 2)
            vf_put_bf16_evens_odds((void *)v->base[0], off + u * VL, x[u], x[u + 1], v->stream_y, true);
        return;
    }
    for (int u = 0; u < NV && u * VL < c; u++) {
        const int m = c - u * VL;
        if (m >= VL) vf_put_dtype((void *)v->base[0], v->dtype[0], off + u * VL, x[u], v->stream_y);
        else vf_store_n_dtype((void *)v->base[0], v->dtype[0], off + u * VL, x[u], m);
    }
}

/* The tile's f32 values into y (dtype, streamed, bf16 pairs, a partial
 * last chunk): store_nv's steps in a loop of its own, since built on
 * store_nv SwiGLU (bf16, Zen 4) lost 5%. */
static void tile_store(const chain_view *v, int64_t off, int cnt, const float *src) {
    for (int i = 0; i < cnt; i += NV * VL) {
        const int c = cnt - i < NV * VL ? cnt - i : NV * VL;
        if (v->pairs && c == NV * VL) {
            for (int u = 0; u < NV; u += 2)
                vf_put_bf16_evens_odds((void *)v->base[0], off + i + u * VL, vf_load(src + i + u * VL),
                                       vf_load(src + i + (u + 1) * VL), v->stream_y, true);
            continue;
        }
        for (int u = 0; u < NV && u * VL < c; u++) {
            const int m = c - u * VL;
            const vf x = vf_load(src + i + u * VL);
            if (m >= VL) vf_put_dtype((void *)v->base[0], v->dtype[0], off + i + u * VL, x, v->stream_y);
            else vf_store_n_dtype((void *)v->base[0], v->dtype[0], off + i + u * VL, x, m);
        }
    }
}

/* A chain of one unary step on an x read along the row (a standalone
 * activation) but for f32 x and y in cache, or of a unary step times a
 * tensor read along the row (a gated unit: SwiGLU, GEGLU): cnt elements of
 * x from ox converted into registers as loaded, the op, the gate's
 * elements from og times them when gate (its tensor's index) is nonzero,
 * and y from oy converted as stored, with no tile buffer between (Zen 4,
 * two threads, gelu_erf past the caches: bf16 +7%, f32 with y streamed
 * +12%; bf16 SwiGLU in cache +23%, +46% with vdtype.h's AVX512_BF16
 * stores). */
static inline __attribute__((always_inline)) void unary_direct_op(const tsr_unary_op op, const enum narrow narrow,
                                                                 const chain_view *v, int64_t ox, int64_t oy,
                                                                 int gate, int64_t og, int cnt) {
    int i = 0;
    if (v->pairs) {
        /* whole bf16 chunks, the view's fields in locals: a vector store
         * may alias anything, so the general loop reloads them after each
         * one, and keeps x on the stack (bf16 gelu_erf 64x4096, one
         * thread, with the pieces' reform: 10.0 -> 10.9 GB/s) */
        const void *xs = v->base[1], *gs = v->base[gate];
        void *ys = (void *)v->base[0];
        const bool stream = v->stream_y;
        for (; i + NV * VL <= cnt; i += NV * VL) {
            vf x[NV];
            for (int u = 0; u < NV; u += 2) vf_load_bf16_evens_odds(xs, ox + i + u * VL, &x[u], &x[u + 1]);
            apply_unary(op, x, narrow);
            if (gate) {
                vf w[NV];
                for (int u = 0; u < NV; u += 2) vf_load_bf16_evens_odds(gs, og + i + u * VL, &w[u], &w[u + 1]);
                for (int u = 0; u < NV; u++) x[u] = vf_mul(x[u], w[u]);
            }
            for (int u = 0; u < NV; u += 2) vf_put_bf16_evens_odds(ys, oy + i + u * VL, x[u], x[u + 1], stream, true);
        }
    }
    for (; i < cnt; i += NV * VL) {
        const int c = cnt - i < NV * VL ? cnt - i : NV * VL;
        const bool pairs = v->pairs && c == NV * VL;
        vf x[NV];
        load_nv(v, 1, ox + i, 1, c, pairs, x);
        apply_unary(op, x, narrow);
        if (gate) {
            vf w[NV];
            load_nv(v, gate, og + i, 1, c, pairs, w);
            for (int u = 0; u < NV; u++) x[u] = vf_mul(x[u], w[u]);
        }
        store_nv(v, oy + i, c, x);
    }
}

/* A standalone activation: gate 0 is a constant in each loop (a loop that
 * tested it ran f32 gelu_erf past the caches 8% slower). */
static void unary_direct(tsr_unary_op op, enum narrow narrow, const chain_view *v, int64_t ox, int64_t oy, int cnt) {
    UNARY_DISPATCH(unary_direct_op, op, narrow, v, ox, oy, 0, 0, cnt)
}

/* The unary ops of the gated units taken in registers: SwiGLU, GEGLU (both
 * GELUs), the sigmoid GLU and ReGLU; other gates keep the tile loops. */
static bool gated_direct_op(tsr_unary_op op) {
    return op == TSR_UNARY_SILU || op == TSR_UNARY_GELU_ERF || op == TSR_UNARY_GELU_TANH ||
           op == TSR_UNARY_SIGMOID || op == TSR_UNARY_RELU;
}

static void gated_direct(tsr_unary_op op, enum narrow narrow, const chain_view *v, int64_t ox, int64_t oy, int gate,
                         int64_t og, int cnt) {
    switch (op) {
        UNARY_CASE(unary_direct_op, TSR_UNARY_SILU, v, ox, oy, gate, og, cnt);
        /* its product with the gate rounded to y: within 1 ulp of a 16-bit y */
        GELU_ERF_CASE(unary_direct_op, narrow, v, ox, oy, gate, og, cnt);
        UNARY_CASE(unary_direct_op, TSR_UNARY_GELU_TANH, v, ox, oy, gate, og, cnt);
        UNARY_CASE(unary_direct_op, TSR_UNARY_SIGMOID, v, ox, oy, gate, og, cnt);
        UNARY_CASE(unary_direct_op, TSR_UNARY_RELU, v, ox, oy, gate, og, cnt);
    default: break; /* gate_of admits no other */
    }
}

/* The inputs' lines of the cnt elements from column j, PREFETCH_BYTES
 * ahead: the steps' arithmetic otherwise holds the core's window and the
 * memory idles meanwhile (bf16 SwiGLU out of cache: 1.3 -> 0.8 ns per
 * element). */
static inline __attribute__((always_inline)) void prefetch_inputs(const chain_view *v, const int64_t *off, int64_t j,
                                                                 int cnt) {
    const int in = v->ndim - 1;
    for (int k = 1; k < v->ntensors; k++) {
        if (v->strides[k][in] != 1) continue;
        const int es = v->esize[k];
        /* an address, maybe past the tensor's end (a prefetch never faults) */
        const uintptr_t p = (uintptr_t)(v->base[k] + (off[k] + j) * es) + PREFETCH_BYTES;
        for (int l = 0; l < cnt * es; l += 64) tsr_prefetch_l1((const char *)(p + (uintptr_t)l));
    }
}

/* unary_direct serves AVX-512 alone, the ISA it was measured on; a
 * constant, so that AVX2's build drops its code. */
#define UNARY_DIRECT_ISA (VL == 16)

/* The gate's tensor index of a chain that unary_direct serves as a gated
 * unit (a unary step, then times a tensor read along the row), else 0. */
static int gate_of(const tsr_chain_desc *ch, const chain_view *v) {
    if (ch->num_steps != 2 || ch->steps[0].kind != TSR_STEP_UNARY || ch->steps[1].binary != TSR_BINARY_MUL ||
        (ch->steps[1].kind != TSR_STEP_TENSOR && ch->steps[1].kind != TSR_STEP_TENSOR_LEFT))
        return 0;
    const int k = 2 + ch->steps[1].operand;
    return v->strides[k][v->ndim - 1] == 1 && gated_direct_op(ch->steps[0].unary) ? k : 0;
}

/* Whether the chain takes unary_direct: one unary step or a gated unit
 * (v->gate, gate_of), x read along the row, but not f32 x (and gate) and
 * y in cache: run_tile's loops over those in place (a standalone
 * activation 16% faster, SwiGLU 3%). */
static bool unary_direct_of(const tsr_chain_desc *ch, const chain_view *v) {
    if (!UNARY_DIRECT_ISA || v->strides[1][v->ndim - 1] != 1) return false;
    if (!v->gate && !(ch->num_steps == 1 && ch->steps[0].kind == TSR_STEP_UNARY)) return false;
    const bool f32 = v->dtype[0] == TSR_F32 && v->dtype[1] == TSR_F32 && (!v->gate || v->dtype[v->gate] == TSR_F32);
    return !(f32 && !v->stream_y);
}

static void run_tile_direct(const tsr_chain_desc *ch, const chain_view *v, const int64_t *off, int64_t j, int cnt) {
    prefetch_inputs(v, off, j, cnt);
    if (v->gate)
        gated_direct(ch->steps[0].unary, narrow_of(v->dtype[0]), v, off[1] + j, off[0] + j, v->gate, off[v->gate] + j,
                     cnt);
    else
        unary_direct(ch->steps[0].unary, narrow_of(v->dtype[0]), v, off[1] + j, off[0] + j, cnt);
}

/* The whole chain on cnt (1..TILE) elements from column j on, step after
 * step over the tile: each step is one tight loop (no dispatch per vector,
 * its constants held in registers; exp 1.0 -> 0.55 ns an element, SwiGLU
 * 1.7 -> 0.66 on one Zen 3 core, against the vector-at-a-time walk through
 * every step). f32 x and y of whole tiles are read and written in place,
 * the others converted through the tile buffer. */
static void run_tile(const tsr_chain_desc *ch, const chain_view *v, const int64_t *off, int64_t j, int cnt) {
    const int in = v->ndim - 1, n = (cnt + NV * VL - 1) / (NV * VL) * (NV * VL);
    _Alignas(64) float buf[TILE], obuf[TILE];
    prefetch_inputs(v, off, j, cnt);
    const float *src;
    if (v->strides[1][in] == 0) { /* x broadcast along the row */
        const vf b = vf_set1(tsr_load_f(v->base[1], v->dtype[1], off[1]));
        for (int i = 0; i < n; i += VL) vf_store(buf + i, b);
        src = buf;
    } else if (v->dtype[1] == TSR_F32 && cnt == n) {
        src = (const float *)v->base[1] + off[1] + j;
    } else {
        tile_load(v, 1, off[1] + j, cnt, n, v->pairs, buf);
        src = buf;
    }
    float *const yt = (float *)v->base[0] + off[0] + j; /* y itself, where f32 and written in place */
    const bool y_direct = v->dtype[0] == TSR_F32 && !v->stream_y && cnt == n;
    const enum narrow narrow_y = narrow_of(v->dtype[0]);
    for (int s = 0; s < ch->num_steps; s++) {
        const tsr_chain_step *st = &ch->steps[s];
        float *dst = s == ch->num_steps - 1 && y_direct ? yt : buf;
        if (st->kind == TSR_STEP_UNARY) {
            tile_unary(st->unary, src, dst, n, s == ch->num_steps - 1 ? narrow_y : WIDE);
        } else if (st->kind == TSR_STEP_TENSOR || st->kind == TSR_STEP_TENSOR_LEFT) {
            const int k = 2 + st->operand;
            const bool left = st->kind == TSR_STEP_TENSOR_LEFT;
            const int64_t ok = off[k] + j * v->strides[k][in];
            if (v->strides[k][in] == 0) {
                tile_binary(st->binary, left, src, NULL, vf_set1(tsr_load_f(v->base[k], v->dtype[k], ok)), dst, n);
            } else if (v->dtype[k] == TSR_F32 && cnt == n) {
                tile_binary(st->binary, left, src, (const float *)v->base[k] + ok, vf_zero(), dst, n);
            } else {
                tile_load(v, k, ok, cnt, n, v->pairs, obuf);
                tile_binary(st->binary, left, src, obuf, vf_zero(), dst, n);
            }
        } else {
            tile_binary(st->binary, st->kind == TSR_STEP_SCALAR_LEFT, src, NULL, vf_set1(st->scalar), dst, n);
        }
        src = dst;
    }
    if (src != yt) tile_store(v, off[0] + j, cnt, src);
}

static void run_block(const tsr_chain_desc *ch, const chain_view *v, int64_t row, int64_t j0, int64_t j1) {
    int64_t off[2 + TSR_MAX_CHAIN_OPERANDS] = {0};
    for (int i = v->ndim - 2; i >= 0; i--) { /* the row index over the outer dims, last fastest */
        const int64_t idx = row % v->shape[i];
        row /= v->shape[i];
        for (int k = 0; k < v->ntensors; k++) off[k] += idx * v->strides[k][i];
    }
    if (UNARY_DIRECT_ISA && v->direct)
        for (int64_t j = j0; j < j1; j += TILE) run_tile_direct(ch, v, off, j, j1 - j < TILE ? (int)(j1 - j) : TILE);
    else
        for (int64_t j = j0; j < j1; j += TILE) run_tile(ch, v, off, j, j1 - j < TILE ? (int)(j1 - j) : TILE);
}

static void run_blocks(const tsr_chain_desc *ch, const chain_view *v, int64_t t0, int64_t t1, int64_t blocks,
                       int64_t n) {
    for (int64_t t = t0; t < t1; t++) {
        const int64_t j0 = (t % blocks) * BLOCK;
        run_block(ch, v, t / blocks, j0, j0 + BLOCK < n ? j0 + BLOCK : n);
    }
}

static tsr_status chain_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_chain_problem *c = &p->u.chain;
    chain_view v;
    view_of(c, &v);
    const int64_t n = v.shape[v.ndim - 1], blocks = (n + BLOCK - 1) / BLOCK;
    int64_t rows = 1;
    for (int i = 0; i < v.ndim - 1; i++) rows *= v.shape[i];
    const int nt = tsr_threads_for(ctx, (double)rows * (double)n, 32768.0);
    v.stream_y = vf_streams(rows * n * (int64_t)tsr_dtype_size(v.dtype[0]));
    v.gate = gate_of(&c->chain, &v);
    v.direct = unary_direct_of(&c->chain, &v);
    /* bf16 widened by one shift or mask per 2 VL values and rounded back
     * without a pack: every step acts lane by lane, so any order common to
     * all the tensors serves (a broadcast value is the same in each lane) */
    v.pairs = true;
    for (int k = 0; k < v.ntensors; k++)
        if (v.strides[k][v.ndim - 1] != 0 && v.dtype[k] != TSR_BF16) v.pairs = false;
    /* one thread: no parallel region at all (libgomp's costs a futex call
     * even when it runs alone, a microsecond on small tensors) */
    if (nt <= 1) {
        run_blocks(&c->chain, &v, 0, rows * blocks, blocks, n);
        if (v.stream_y) _mm_sfence();
        return TSR_OK;
    }
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static) nowait
        for (int64_t t = 0; t < rows * blocks; t++) run_blocks(&c->chain, &v, t, t + 1, blocks, n);
        if (v.stream_y) _mm_sfence(); /* the streamed stores, before the region's barrier */
    }
    return TSR_OK;
}

const tsr_kernel CHAIN_SYMBOL = {
    .name = "chain." CHAIN_ARCH,
    .op = TSR_OP_CHAIN,
    .backend = TSR_BACKEND_CPU,
    .arch = CHAIN_ARCH,
    .supports = chain_supports,
    .cpu_features = CHAIN_FEATURES,
    .run = chain_run,
};
