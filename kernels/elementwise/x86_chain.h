/* Fused elementwise chains on x86, one source for the AVX2 and AVX-512
 * builds (define CHAIN_ARCH, CHAIN_SYMBOL and CHAIN_FEATURES after a
 * simd.h, vmath.h and vdtype.h). One pass: VL elements of x are loaded,
 * every step runs on them in registers, y is stored once.
 *
 * Layout: dims that are contiguous in y, x and every operand alike are
 * merged, so a dense or row-broadcast problem becomes few long rows; the
 * innermost dim must be unit-stride or broadcast (stride 0) in every
 * tensor and unit-stride in y, else the reference runs. Rows are cut into
 * blocks of BLOCK elements, spread over the threads.
 *
 * Values: identity, neg, abs, square, sqrt, rsqrt, reciprocal, relu, + - *
 * / and NaN-propagating max/min are the f32 operations the reference's
 * definitions round to (rsqrt and reciprocal within 1 ulp); exp, sigmoid
 * and silu are built on exp_scaled below and stay within 2, 3 and 3 ulp of
 * the double-precision definitions over the whole float range (overflow
 * to inf, the denormal range, -inf, NaN), as tests/test_elementwise_x86.c
 * measures;
 * log, erf, tanh, the gelus and pow run lane by lane through the
 * reference's own definitions (tsr_unary_ref, tsr_binary_ref), still
 * fused in the same pass. */
#include <math.h>
#include <string.h>

#include "internal.h"

#define BLOCK 4096

#if VL == 16
typedef __mmask16 vmask;
#define vf_select(m, if_false, if_true) _mm512_mask_blend_ps(m, if_false, if_true)
#define vf_sqrt(x) _mm512_sqrt_ps(x)
#else
typedef __m256 vmask;
#define vf_select(m, if_false, if_true) _mm256_blendv_ps(if_false, if_true, m)
#define vf_sqrt(x) _mm256_sqrt_ps(x)
#endif

/* exp(x) * 2^k for every float x (k = 0: exp itself): vmath.h's reduction
 * and polynomial, and 2^(n + k) applied as two exact halves, so that n in [-150, 129] (denormal results, the edge of
 * overflow) rounds only once. k in [0, 64], for x <= 0 when k > 0. */
static inline vf exp_scaled(vf x, float k) {
    const float lo = -104.0f - 0.6931472f * k; /* below it the result rounds to 0 */
    vf n;
    vf y = vf_exp_reduced(vf_min(vf_max(x, vf_set1(lo)), vf_set1(89.0f)), &n);
    const vf n1 = vf_round(vf_mul(n, vf_set1(0.5f)));
    y = vf_mul(vf_mul(y, vf_pow2i(n1)), vf_pow2i(vf_add(vf_sub(n, n1), vf_set1(k))));
    y = vf_select(vf_is(x, vf_set1(88.72283935546875f), _CMP_GE_OQ), y, vf_set1(INFINITY));
    y = vf_select(vf_is(x, vf_set1(lo), _CMP_LT_OQ), y, vf_zero());
    return vf_select(vf_is(x, x, _CMP_UNORD_Q), y, x);
}

static inline vf exp_full(vf x) { return exp_scaled(x, 0.0f); }

/* 1 / (1 + exp(-x)) as (x < 0 ? e : 1) / (1 + e) with e = exp(-|x|):
 * one exp, one division, no overflow, and for x < -87 the denormal e is
 * the answer itself (1 + e == 1). */
static inline vf sigmoid_full(vf x) {
    const vf one = vf_set1(1.0f), e = exp_full(vf_mul(vf_copysign(x, vf_zero()), vf_set1(-1.0f)));
    return vf_div(vf_select(vf_is(x, vf_zero(), _CMP_LT_OQ), one, e), vf_add(one, e));
}

/* x / (1 + exp(-x)) as x (x < 0 ? e : 1) / (1 + e), e = exp(-|x|). Where
 * x < -87, e is denormal and x e would be rounded twice: those lanes form
 * x e at 2^64 scale, so the result is rounded once. -inf gives NaN
 * (-inf * 0), as the definition does. */
static inline vf silu_full(vf x) {
    const vf one = vf_set1(1.0f), e = exp_full(vf_mul(vf_copysign(x, vf_zero()), vf_set1(-1.0f)));
    const vf r = vf_div(vf_mul(x, vf_select(vf_is(x, vf_zero(), _CMP_LT_OQ), one, e)), vf_add(one, e));
    const vmask tail = vf_is(x, vf_set1(-87.0f), _CMP_LT_OQ);
    if (!vf_any(tail)) return r;
    const vf low = vf_mul(vf_mul(x, exp_scaled(x, 64.0f)), vf_set1(0x1p-64f)); /* 1 + e == 1 there */
    return vf_select(tail, r, low);
}

/* op applied lane by lane with the reference's definition. */
static inline vf lanes_unary(tsr_unary_op op, vf x) {
    float t[VL];
    vf_store(t, x);
    for (int i = 0; i < VL; i++) t[i] = tsr_unary_ref(op, t[i]);
    return vf_load(t);
}

static inline vf apply_unary(tsr_unary_op op, vf x) {
    const vf one = vf_set1(1.0f);
    switch (op) {
    case TSR_UNARY_IDENTITY: return x;
    case TSR_UNARY_NEG: return vf_mul(x, vf_set1(-1.0f));
    case TSR_UNARY_ABS: return vf_copysign(x, vf_zero());
    case TSR_UNARY_SQUARE: return vf_mul(x, x);
    case TSR_UNARY_SQRT: return vf_sqrt(x);
    case TSR_UNARY_RSQRT: return vf_div(one, vf_sqrt(x));
    case TSR_UNARY_RECIPROCAL: return vf_div(one, x);
    case TSR_UNARY_EXP: return exp_full(x);
    case TSR_UNARY_SIGMOID: return sigmoid_full(x);
    case TSR_UNARY_SILU: return silu_full(x);
    case TSR_UNARY_RELU: return vf_relu(x);
    default: return lanes_unary(op, x);
    }
}

static inline vf apply_binary(tsr_binary_op op, vf a, vf b) {
    switch (op) {
    case TSR_BINARY_ADD: return vf_add(a, b);
    case TSR_BINARY_SUB: return vf_sub(a, b);
    case TSR_BINARY_MUL: return vf_mul(a, b);
    case TSR_BINARY_DIV: return vf_div(a, b);
    /* max/min return b when either is NaN: a NaN in a is put back */
    case TSR_BINARY_MAX: return vf_select(vf_is(a, a, _CMP_UNORD_Q), vf_max(a, b), a);
    case TSR_BINARY_MIN: return vf_select(vf_is(a, a, _CMP_UNORD_Q), vf_min(a, b), a);
    default: {
        float ta[VL], tb[VL];
        vf_store(ta, a), vf_store(tb, b);
        for (int i = 0; i < VL; i++) ta[i] = tsr_binary_ref(op, ta[i], tb[i]);
        return vf_load(ta);
    }
    }
}

/* The tensors of a chain after merging dims: y, x, then the operands. */
typedef struct chain_view {
    int ndim, ntensors;
    int64_t shape[TSR_MAX_DIMS];
    int64_t strides[2 + TSR_MAX_CHAIN_OPERANDS][TSR_MAX_DIMS];
    tsr_dtype dtype[2 + TSR_MAX_CHAIN_OPERANDS];
    const char *base[2 + TSR_MAX_CHAIN_OPERANDS];
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
    for (int k = 0; k < v->ntensors; k++) v->dtype[k] = t[k]->dtype;
}

static bool chain_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    if (ctx->backend != TSR_BACKEND_CPU || (ctx->cpu_features & CHAIN_FEATURES) != CHAIN_FEATURES) {
        tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "chain.%s needs a CPU with its ISA", CHAIN_ARCH);
        return false;
    }
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

/* n <= VL elements of tensor k at element offset off (stride s: 1 or 0). */
static inline vf load_k(const chain_view *v, int k, int64_t off, int64_t s, int n) {
    if (s == 0) return vf_set1(tsr_load_f(v->base[k], v->dtype[k], off));
    return vf_load_n_dtype(v->base[k], v->dtype[k], off, n);
}

static void run_block(const tsr_chain_desc *ch, const chain_view *v, int64_t row, int64_t j0, int64_t j1) {
    int64_t off[2 + TSR_MAX_CHAIN_OPERANDS] = {0};
    const int in = v->ndim - 1;
    for (int i = in - 1; i >= 0; i--) { /* the row index over the outer dims, last fastest */
        const int64_t idx = row % v->shape[i];
        row /= v->shape[i];
        for (int k = 0; k < v->ntensors; k++) off[k] += idx * v->strides[k][i];
    }
    for (int64_t j = j0; j < j1; j += VL) {
        const int n = (int)(j1 - j < VL ? j1 - j : VL);
        vf x = load_k(v, 1, off[1] + j * v->strides[1][in], v->strides[1][in], n);
        for (int s = 0; s < ch->num_steps; s++) {
            const tsr_chain_step *st = &ch->steps[s];
            if (st->kind == TSR_STEP_UNARY) {
                x = apply_unary(st->unary, x);
                continue;
            }
            vf o = vf_set1(st->scalar);
            if (st->kind == TSR_STEP_TENSOR || st->kind == TSR_STEP_TENSOR_LEFT) {
                const int k = 2 + st->operand;
                o = load_k(v, k, off[k] + j * v->strides[k][in], v->strides[k][in], n);
            }
            const bool left = st->kind == TSR_STEP_SCALAR_LEFT || st->kind == TSR_STEP_TENSOR_LEFT;
            x = left ? apply_binary(st->binary, o, x) : apply_binary(st->binary, x, o);
        }
        vf_store_n_dtype((void *)v->base[0], v->dtype[0], off[0] + j, x, n);
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
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t t = 0; t < rows * blocks; t++) {
        const int64_t j0 = (t % blocks) * BLOCK;
        run_block(&c->chain, &v, t / blocks, j0, j0 + BLOCK < n ? j0 + BLOCK : n);
    }
    return TSR_OK;
}

const tsr_kernel CHAIN_SYMBOL = {
    .name = "chain." CHAIN_ARCH,
    .op = TSR_OP_CHAIN,
    .backend = TSR_BACKEND_CPU,
    .arch = CHAIN_ARCH,
    .supports = chain_supports,
    .run = chain_run,
};
