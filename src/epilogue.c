/* Epilogue builders, validation and the reference activations. */
#include <math.h>
#include <string.h>

#include "internal.h"

tsr_epilogue_step tsr_epilogue_bias(const void *bias, tsr_dtype dtype) {
    tsr_epilogue_step s;
    memset(&s, 0, sizeof s);
    s.op = TSR_EPI_BIAS;
    s.data = bias;
    s.dtype = dtype;
    return s;
}

tsr_epilogue_step tsr_epilogue_activation(tsr_activation activation) {
    tsr_epilogue_step s;
    memset(&s, 0, sizeof s);
    s.op = TSR_EPI_ACTIVATION;
    s.activation = activation;
    return s;
}

tsr_epilogue_step tsr_epilogue_residual(const void *residual, tsr_dtype dtype, int64_t ld,
                                        float scale) {
    tsr_epilogue_step s;
    memset(&s, 0, sizeof s);
    s.op = TSR_EPI_RESIDUAL;
    s.data = residual;
    s.dtype = dtype;
    s.ld = ld;
    s.scale = scale;
    return s;
}

bool tsr_activation_valid(tsr_activation act) {
    return (unsigned)act <= (unsigned)TSR_ACT_TANH;
}

float tsr_activation_ref(tsr_activation act, float x) {
    switch (act) {
    case TSR_ACT_NONE: return x;
    case TSR_ACT_RELU: return x > 0.0f || x != x ? x : 0.0f; /* NaN propagates */
    /* The GELUs as x Phi(x) with Phi in a form that does not cancel for
     * x < 0, where 1 + erf or 1 + tanh near -1 would lose Phi's digits
     * even in double (from x = -6 on, all of them): 0.5 erfc(-x/sqrt 2),
     * and 0.5 (1 + tanh(z/2)) = 1 / (1 + exp(-z)). */
    case TSR_ACT_GELU_ERF: return (float)(0.5 * x * erfc(-(double)x * 0.70710678118654752440));
    case TSR_ACT_GELU_TANH: {
        double xd = x;
        return (float)(xd / (1.0 + exp(-2.0 * 0.79788456080286535588 * (xd + 0.044715 * xd * xd * xd))));
    }
    case TSR_ACT_SILU: return (float)(x / (1.0 + exp(-(double)x)));
    case TSR_ACT_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)x)));
    case TSR_ACT_TANH: return tanhf(x);
    }
    return x;
}

tsr_status tsr_epilogue_check(const tsr_epilogue *e, const char *who, tsr_dtype out_dtype) {
    if (e->num_steps < 0 || e->num_steps > TSR_MAX_EPILOGUE_STEPS)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: epilogue.num_steps (%d) must be in 0..%d",
                        who, e->num_steps, TSR_MAX_EPILOGUE_STEPS);
    if (e->num_steps > 0 && !tsr_is_float_dtype(out_dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                        "%s: an epilogue needs a float output, not %s", who,
                        tsr_dtype_name(out_dtype));
    for (int i = 0; i < e->num_steps; i++) {
        const tsr_epilogue_step *s = &e->steps[i];
        switch (s->op) {
        case TSR_EPI_ACTIVATION:
            if (!tsr_activation_valid(s->activation))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                                "%s: epilogue.steps[%d].activation (%d) is not a tsr_activation",
                                who, i, (int)s->activation);
            break;
        case TSR_EPI_BIAS:
        case TSR_EPI_RESIDUAL:
            if (!s->data)
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: epilogue.steps[%d].data is NULL",
                                who, i);
            if (s->dtype != TSR_F32 && s->dtype != out_dtype)
                return tsr_fail(TSR_ERR_NOT_SUPPORTED,
                                "%s: epilogue.steps[%d].dtype must be f32 or the output's %s, not %s",
                                who, i, tsr_dtype_name(out_dtype), tsr_dtype_name(s->dtype));
            if (s->op == TSR_EPI_RESIDUAL && (s->ld < 0 || s->batch_stride < 0))
                return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                                "%s: epilogue.steps[%d] residual ld/batch_stride must be >= 0",
                                who, i);
            break;
        default:
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                            "%s: epilogue.steps[%d].op (%d) is not a tsr_epilogue_op", who, i,
                            (int)s->op);
        }
    }
    return TSR_OK;
}

float tsr_epilogue_apply_ref(const tsr_epilogue *e, float v, int64_t bias_idx, int64_t b,
                             int64_t row, int64_t col) {
    for (int i = 0; i < e->num_steps; i++) {
        const tsr_epilogue_step *s = &e->steps[i];
        switch (s->op) {
        case TSR_EPI_BIAS: v += tsr_load_f(s->data, s->dtype, bias_idx); break;
        case TSR_EPI_ACTIVATION: v = tsr_activation_ref(s->activation, v); break;
        case TSR_EPI_RESIDUAL:
            v += s->scale * tsr_load_f(s->data, s->dtype, b * s->batch_stride + row * s->ld + col);
            break;
        }
    }
    return v;
}
