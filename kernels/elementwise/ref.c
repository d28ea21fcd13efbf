/* Reference elementwise kernels: chains over an N-d index space, and the
 * row-wise softmax/layernorm/rmsnorm, all in double. */
#include <math.h>

#include "internal.h"

static double unary_ref(tsr_unary_op op, double x) {
    switch (op) {
    case TSR_UNARY_IDENTITY: return x;
    case TSR_UNARY_NEG: return -x;
    case TSR_UNARY_ABS: return fabs(x);
    case TSR_UNARY_SQUARE: return x * x;
    case TSR_UNARY_SQRT: return sqrt(x);
    case TSR_UNARY_RSQRT: return 1.0 / sqrt(x);
    case TSR_UNARY_RECIPROCAL: return 1.0 / x;
    case TSR_UNARY_EXP: return exp(x);
    case TSR_UNARY_LOG: return log(x);
    case TSR_UNARY_ERF: return erf(x);
    case TSR_UNARY_TANH: return tanh(x);
    case TSR_UNARY_SIGMOID: return tsr_activation_ref(TSR_ACT_SIGMOID, (float)x);
    case TSR_UNARY_RELU: return tsr_activation_ref(TSR_ACT_RELU, (float)x);
    case TSR_UNARY_GELU_ERF: return tsr_activation_ref(TSR_ACT_GELU_ERF, (float)x);
    case TSR_UNARY_GELU_TANH: return tsr_activation_ref(TSR_ACT_GELU_TANH, (float)x);
    case TSR_UNARY_SILU: return tsr_activation_ref(TSR_ACT_SILU, (float)x);
    default: return NAN;
    }
}

/* max/min propagate NaN, as NumPy's maximum/minimum do. */
static double binary_ref(tsr_binary_op op, double a, double b) {
    switch (op) {
    case TSR_BINARY_ADD: return a + b;
    case TSR_BINARY_SUB: return a - b;
    case TSR_BINARY_MUL: return a * b;
    case TSR_BINARY_DIV: return a / b;
    case TSR_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case TSR_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    case TSR_BINARY_POW: return pow(a, b);
    default: return NAN;
    }
}

static int64_t offset_of(const tsr_tensor_desc *t, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < t->ndim; i++) o += idx[i] * t->strides[i];
    return o;
}

static tsr_status chain_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_chain_problem *c = &prob->u.chain;
    const tsr_tensor_desc *y = &c->y;
    int64_t total = 1;
    for (int i = 0; i < y->ndim; i++) total *= y->shape[i];
#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
    for (int64_t lin = 0; lin < total; lin++) {
        int64_t idx[TSR_MAX_DIMS], rest = lin;
        for (int i = y->ndim - 1; i >= 0; i--) {
            idx[i] = rest % y->shape[i];
            rest /= y->shape[i];
        }
        /* Each step rounds to f32: the chain's arithmetic is f32 (tessera.h). */
        float v = tsr_load_f(c->xp, c->x.dtype, offset_of(&c->x, idx));
        for (int s = 0; s < c->chain.num_steps; s++) {
            const tsr_chain_step *st = &c->chain.steps[s];
            double other = st->scalar;
            if (st->kind == TSR_STEP_TENSOR || st->kind == TSR_STEP_TENSOR_LEFT) {
                const tsr_tensor_desc *od = &c->chain.operands[st->operand];
                other = tsr_load_f(c->operands[st->operand], od->dtype, offset_of(od, idx));
            }
            switch (st->kind) {
            case TSR_STEP_UNARY: v = (float)unary_ref(st->unary, v); break;
            case TSR_STEP_SCALAR:
            case TSR_STEP_TENSOR: v = (float)binary_ref(st->binary, v, other); break;
            default: v = (float)binary_ref(st->binary, other, v); break;
            }
        }
        tsr_store_f(c->yp, y->dtype, offset_of(y, idx), v);
    }
    return TSR_OK;
}

static tsr_status rowwise_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_rowwise_problem *r = &prob->u.rowwise;
    const tsr_rowwise_desc *d = &r->d;
    const int64_t C = d->cols;
#pragma omp parallel for schedule(static) num_threads(ctx->num_threads)
    for (int64_t row = 0; row < d->rows; row++) {
        int64_t xo = row * d->x_row_stride, yo = row * d->y_row_stride;
#define X(j) ((double)tsr_load_f(r->x, d->x_dtype, xo + (j)))
        if (prob->op == TSR_OP_SOFTMAX) {
            double mx = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < C; j++) mx = fmax(mx, X(j));
            if (mx == -INFINITY) { /* fully masked row: 0s, as in attention */
                for (int64_t j = 0; j < C; j++) tsr_store_f(r->y, d->y_dtype, yo + j, 0.0f);
                continue;
            }
            for (int64_t j = 0; j < C; j++) sum += exp(X(j) - mx);
            for (int64_t j = 0; j < C; j++) tsr_store_f(r->y, d->y_dtype, yo + j, (float)(exp(X(j) - mx) / sum));
            continue;
        }
        double mean = 0.0, var = 0.0;
        if (prob->op == TSR_OP_LAYERNORM) {
            for (int64_t j = 0; j < C; j++) mean += X(j);
            mean /= (double)C;
        }
        for (int64_t j = 0; j < C; j++) var += (X(j) - mean) * (X(j) - mean);
        double inv = 1.0 / sqrt(var / (double)C + d->epsilon);
        for (int64_t j = 0; j < C; j++) {
            double v = (X(j) - mean) * inv;
            if (r->gamma) v *= r->gamma[j];
            if (r->beta) v += r->beta[j];
            tsr_store_f(r->y, d->y_dtype, yo + j, (float)v);
        }
#undef X
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
