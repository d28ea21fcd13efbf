/* Reference elementwise kernels: the test oracle and the last-resort
 * fallback. Chains walk y's index space; softmax, layernorm and rmsnorm
 * reduce each row in double.
 *
 * A chain's value is f32 between steps (tessera.h): each step is computed
 * from f32 inputs and rounded to f32. Definitions:
 *  - unary ops use the C math library in double, then round; sigmoid, relu,
 *    gelu (erf and tanh forms), silu and tanh are tsr_activation_ref, so a
 *    chain agrees with the GEMM/conv epilogues. Edge values follow the
 *    formulas as PyTorch does: silu(-inf) and gelu(-inf) are NaN
 *    (-inf * 0); relu(NaN) is NaN; rsqrt(0) is +inf.
 *  - + - * / in double, then round (the same as f32 arithmetic).
 *  - max/min propagate NaN, as NumPy's maximum/minimum do (unlike fmaxf).
 *  - pow is powf.
 * Softmax: max-subtracted, sums in double. A row that is all -inf gives 0s
 * (tessera.h: a fully masked attention row); a row holding a NaN gives NaN
 * everywhere, as in PyTorch. Layernorm: two-pass mean and variance in double
 * (biased variance, as every framework's layernorm). RMSnorm: mean of squares
 * in double. */
#include <math.h>

#include "internal.h"

float tsr_unary_ref(tsr_unary_op op, float x) {
    const double d = x;
    switch (op) {
    case TSR_UNARY_IDENTITY: return x;
    case TSR_UNARY_NEG: return -x;
    case TSR_UNARY_ABS: return fabsf(x);
    case TSR_UNARY_SQUARE: return (float)(d * d);
    case TSR_UNARY_SQRT: return (float)sqrt(d);
    case TSR_UNARY_RSQRT: return (float)(1.0 / sqrt(d));
    case TSR_UNARY_RECIPROCAL: return (float)(1.0 / d);
    case TSR_UNARY_EXP: return (float)exp(d);
    case TSR_UNARY_LOG: return (float)log(d);
    case TSR_UNARY_ERF: return (float)erf(d);
    case TSR_UNARY_TANH: return tsr_activation_ref(TSR_ACT_TANH, x);
    case TSR_UNARY_SIGMOID: return tsr_activation_ref(TSR_ACT_SIGMOID, x);
    case TSR_UNARY_RELU: return tsr_activation_ref(TSR_ACT_RELU, x);
    case TSR_UNARY_GELU_ERF: return tsr_activation_ref(TSR_ACT_GELU_ERF, x);
    case TSR_UNARY_GELU_TANH: return tsr_activation_ref(TSR_ACT_GELU_TANH, x);
    case TSR_UNARY_SILU: return tsr_activation_ref(TSR_ACT_SILU, x);
    case TSR_UNARY_COUNT: break;
    }
    return NAN; /* unreachable: the front validated op */
}

float tsr_binary_ref(tsr_binary_op op, float a, float b) {
    const double x = a, y = b;
    switch (op) {
    case TSR_BINARY_ADD: return (float)(x + y);
    case TSR_BINARY_SUB: return (float)(x - y);
    case TSR_BINARY_MUL: return (float)(x * y);
    case TSR_BINARY_DIV: return (float)(x / y);
    case TSR_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case TSR_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    case TSR_BINARY_POW: return powf(a, b);
    case TSR_BINARY_COUNT: break;
    }
    return NAN;
}

/* One innermost run of y: every index but the last fixed by `outer`. */
static void chain_row(const tsr_chain_problem *c, int64_t outer) {
    const tsr_chain_desc *ch = &c->chain;
    const int nd = c->y.ndim, no = ch->num_operands;
    int64_t xo = 0, yo = 0, oo[TSR_MAX_CHAIN_OPERANDS] = {0};
    for (int i = nd - 2; i >= 0; i--) { /* decode the outer index, last dim fastest */
        const int64_t idx = outer % c->y.shape[i];
        outer /= c->y.shape[i];
        xo += idx * c->x.strides[i];
        yo += idx * c->y.strides[i];
        for (int k = 0; k < no; k++) oo[k] += idx * ch->operands[k].strides[i];
    }
    const int64_t n = nd ? c->y.shape[nd - 1] : 1;
    const int64_t xs = nd ? c->x.strides[nd - 1] : 0, ys = nd ? c->y.strides[nd - 1] : 0;
    int64_t os[TSR_MAX_CHAIN_OPERANDS] = {0};
    for (int k = 0; k < no; k++) os[k] = nd ? ch->operands[k].strides[nd - 1] : 0;
    for (int64_t j = 0; j < n; j++) {
        float v = tsr_load_f(c->xp, c->x.dtype, xo + j * xs);
        for (int s = 0; s < ch->num_steps; s++) {
            const tsr_chain_step *st = &ch->steps[s];
            float other = st->scalar;
            if (st->kind == TSR_STEP_TENSOR || st->kind == TSR_STEP_TENSOR_LEFT) {
                const int k = st->operand;
                other = tsr_load_f(c->operands[k], ch->operands[k].dtype, oo[k] + j * os[k]);
            }
            switch (st->kind) {
            case TSR_STEP_UNARY: v = tsr_unary_ref(st->unary, v); break;
            case TSR_STEP_SCALAR:
            case TSR_STEP_TENSOR: v = tsr_binary_ref(st->binary, v, other); break;
            case TSR_STEP_SCALAR_LEFT:
            case TSR_STEP_TENSOR_LEFT: v = tsr_binary_ref(st->binary, other, v); break;
            }
        }
        tsr_store_f(c->yp, c->y.dtype, yo + j * ys, v);
    }
}

static tsr_status chain_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_chain_problem *c = &prob->u.chain;
    int64_t outer = 1;
    for (int i = 0; i < c->y.ndim - 1; i++) outer *= c->y.shape[i]; /* the front checked the count */
#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
    for (int64_t o = 0; o < outer; o++) chain_row(c, o);
    return TSR_OK;
}

static void softmax_row(const tsr_rowwise_problem *r, int64_t row) {
    const tsr_rowwise_desc *d = &r->d;
    const int64_t C = d->cols, xo = row * d->x_row_stride, yo = row * d->y_row_stride;
    double mx = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < C; j++) {
        const double v = tsr_load_f(r->x, d->x_dtype, xo + j);
        if (isnan(v)) nan = true;
        else if (v > mx) mx = v;
    }
    if (nan || mx == -INFINITY) {
        for (int64_t j = 0; j < C; j++) tsr_store_f(r->y, d->y_dtype, yo + j, nan ? NAN : 0.0f);
        return;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < C; j++) sum += exp((double)tsr_load_f(r->x, d->x_dtype, xo + j) - mx);
    /* x may be y (in place): element j is read before it is written. */
    for (int64_t j = 0; j < C; j++)
        tsr_store_f(r->y, d->y_dtype, yo + j, (float)(exp((double)tsr_load_f(r->x, d->x_dtype, xo + j) - mx) / sum));
}

static void norm_row(const tsr_rowwise_problem *r, bool center, int64_t row) {
    const tsr_rowwise_desc *d = &r->d;
    const int64_t C = d->cols, xo = row * d->x_row_stride, yo = row * d->y_row_stride;
    double mean = 0.0, var = 0.0;
    if (center) {
        for (int64_t j = 0; j < C; j++) mean += tsr_load_f(r->x, d->x_dtype, xo + j);
        mean /= (double)C;
    }
    for (int64_t j = 0; j < C; j++) {
        const double v = tsr_load_f(r->x, d->x_dtype, xo + j) - mean;
        var += v * v;
    }
    const double inv = 1.0 / sqrt(var / (double)C + (double)d->epsilon);
    for (int64_t j = 0; j < C; j++) {
        double v = ((double)tsr_load_f(r->x, d->x_dtype, xo + j) - mean) * inv;
        if (r->gamma) v *= r->gamma[j];
        if (r->beta) v += r->beta[j];
        tsr_store_f(r->y, d->y_dtype, yo + j, (float)v);
    }
}

static tsr_status rowwise_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_rowwise_problem *r = &prob->u.rowwise;
    const tsr_op op = prob->op;
#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
    for (int64_t row = 0; row < r->d.rows; row++) {
        if (op == TSR_OP_SOFTMAX) softmax_row(r, row);
        else norm_row(r, op == TSR_OP_LAYERNORM, row);
    }
    return TSR_OK;
}

#define REF_KERNEL(sym, kname, kop, fn) \
    const tsr_kernel sym = {.name = kname, .op = kop, .backend = TSR_BACKEND_CPU, .arch = "ref", \
                            .supports = tsr_supports_any_cpu, .run = fn}

REF_KERNEL(tsr_chain_ref, "chain.ref", TSR_OP_CHAIN, chain_run);
REF_KERNEL(tsr_softmax_ref, "softmax.ref", TSR_OP_SOFTMAX, rowwise_run);
REF_KERNEL(tsr_layernorm_ref, "layernorm.ref", TSR_OP_LAYERNORM, rowwise_run);
REF_KERNEL(tsr_rmsnorm_ref, "rmsnorm.ref", TSR_OP_RMSNORM, rowwise_run);
