/* Elementwise: unary/binary ops against the C math library, fused chains,
 * NumPy broadcasting, strided views, in-place, dtypes, empty shapes;
 * softmax/layernorm/rmsnorm against hand computations; every context against
 * the reference oracle; bad input.
 *
 * Tolerances (f32 outputs of the reference): a unary op is the libm double
 * result rounded to f32 and must match within 2 ulp (tanh is tanhf, sigmoid
 * and friends are rounded from double); + - * / max min pow must match f32
 * arithmetic and powf exactly. Other contexts are compared with the
 * reference within 4e-6 relative (fast kernels may use few-ulp
 * approximations of exp/erf/tanh), or one rounding of a 16-bit output. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define TC(dt, nd, ...) tsr_tensor_contiguous(dt, nd, SHAPE(__VA_ARGS__))
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static tsr_tensor_desc view(tsr_dtype t, int nd, const int64_t *shape, const int64_t *strides) {
    tsr_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = t;
    d.ndim = nd;
    for (int i = 0; i < nd; i++) d.shape[i] = shape[i], d.strides[i] = strides[i];
    return d;
}

/* got within rel * |want| (+ two denormal steps); NaN matches NaN, inf must be equal. */
static bool close_f32(float got, float want, double rel) {
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    return fabs((double)got - (double)want) <= rel * fabs((double)want) + 3e-45;
}

#define ULP2 (2.0 * FLT_EPSILON)

/* The definitions, written here independently of the library. */
static float want_unary(tsr_unary_op op, float xf) {
    const double x = xf;
    switch (op) {
    case TSR_UNARY_IDENTITY: return xf;
    case TSR_UNARY_NEG: return -xf;
    case TSR_UNARY_ABS: return fabsf(xf);
    case TSR_UNARY_SQUARE: return (float)(x * x);
    case TSR_UNARY_SQRT: return (float)sqrt(x);
    case TSR_UNARY_RSQRT: return (float)(1.0 / sqrt(x));
    case TSR_UNARY_RECIPROCAL: return (float)(1.0 / x);
    case TSR_UNARY_EXP: return (float)exp(x);
    case TSR_UNARY_LOG: return (float)log(x);
    case TSR_UNARY_ERF: return (float)erf(x);
    case TSR_UNARY_TANH: return (float)tanh(x);
    case TSR_UNARY_SIGMOID: return (float)(1.0 / (1.0 + exp(-x)));
    case TSR_UNARY_RELU: return isnan(xf) ? xf : xf > 0 ? xf : 0.0f;
    /* x Phi(x) with Phi in forms that do not cancel for x < 0 */
    case TSR_UNARY_GELU_ERF: return (float)(0.5 * x * erfc(-x / sqrt(2.0)));
    case TSR_UNARY_GELU_TANH:
        return (float)(x / (1.0 + exp(-2.0 * sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))));
    case TSR_UNARY_SILU: return (float)(x / (1.0 + exp(-x)));
    default: return NAN;
    }
}

static float want_binary(tsr_binary_op op, float a, float b) {
    switch (op) {
    case TSR_BINARY_ADD: return a + b;
    case TSR_BINARY_SUB: return a - b;
    case TSR_BINARY_MUL: return a * b;
    case TSR_BINARY_DIV: return a / b;
    case TSR_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : fmaxf(a, b); /* NumPy's maximum */
    case TSR_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : fminf(a, b);
    case TSR_BINARY_POW: return powf(a, b);
    default: return NAN;
    }
}

static const char *const unary_names[TSR_UNARY_COUNT] = {
    "identity", "neg", "abs", "square", "sqrt", "rsqrt", "reciprocal", "exp",
    "log", "erf", "tanh", "sigmoid", "relu", "gelu_erf", "gelu_tanh", "silu"};

/* 0, +-1, large, tiny (normal and denormal), +-inf, NaN and a few ordinary values. */
static const float samples[] = {0.0f,  -0.0f, 1.0f,     -1.0f,     0.5f,   -2.75f,    3.0f,      20.0f,
                                -20.0f, 88.5f, -100.0f, 1e30f,     -1e30f, 1e-30f,    -1e-30f,   1e-40f,
                                INFINITY, -INFINITY, NAN};

/* -------------------------------------------------------------- reference */

START_TEST(unary_vs_libm) {
    tsr_context *ctx = tt_ref_context();
    enum { N = NELEM(samples) };
    tsr_tensor_desc t = TC(TSR_F32, 1, N);
    float y[N];
    for (int op = 0; op < TSR_UNARY_COUNT; op++) {
        ck_assert_int_eq(tsr_unary(ctx, (tsr_unary_op)op, &t, samples, &t, y), TSR_OK);
        ck_assert_str_eq(tsr_last_kernel(), "chain.ref");
        ck_assert_str_eq(tsr_last_error(), "");
        for (int i = 0; i < N; i++) {
            float w = want_unary((tsr_unary_op)op, samples[i]);
            ck_assert_msg(close_f32(y[i], w, ULP2), "%s(%g) = %.9g, libm says %.9g", unary_names[op],
                          (double)samples[i], (double)y[i], (double)w);
        }
    }
    /* Spot values that do not depend on the formulas above. */
    tsr_tensor_desc t1 = TC(TSR_F32, 1, 4);
    const float xs[4] = {0.0f, -INFINITY, INFINITY, NAN};
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SIGMOID, &t1, xs, &t1, y), TSR_OK);
    ck_assert(y[0] == 0.5f && y[1] == 0.0f && y[2] == 1.0f && isnan(y[3]));
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_RSQRT, &t1, xs, &t1, y), TSR_OK);
    ck_assert(isinf(y[0]) && y[0] > 0 && isnan(y[1]) && y[2] == 0.0f && isnan(y[3]));
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_LOG, &t1, xs, &t1, y), TSR_OK);
    ck_assert(isinf(y[0]) && y[0] < 0 && isnan(y[1]) && isinf(y[2]) && isnan(y[3]));
    /* -inf * 0 in the formulas: NaN, as in PyTorch (tsr_unary's definition). */
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SILU, &t1, xs, &t1, y), TSR_OK);
    ck_assert(y[0] == 0.0f && isnan(y[1]) && y[2] == INFINITY && isnan(y[3]));
    tsr_context_destroy(ctx);
}
END_TEST

/* Every pair of samples through broadcasting: (N, 1) op (N) -> (N, N). */
START_TEST(binary_vs_libm) {
    tsr_context *ctx = tt_ref_context();
    enum { N = NELEM(samples) };
    tsr_tensor_desc ta = TC(TSR_F32, 2, N, 1), tb = TC(TSR_F32, 1, N), ty = TC(TSR_F32, 2, N, N);
    static const char *const names[] = {"add", "sub", "mul", "div", "max", "min", "pow"};
    float y[N * N];
    for (int op = 0; op < TSR_BINARY_COUNT; op++) {
        ck_assert_int_eq(tsr_binary(ctx, (tsr_binary_op)op, &ta, samples, &tb, samples, &ty, y), TSR_OK);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                float w = want_binary((tsr_binary_op)op, samples[i], samples[j]);
                ck_assert_msg(close_f32(y[i * N + j], w, 0.0), "%s(%g, %g) = %.9g, want %.9g", names[op],
                              (double)samples[i], (double)samples[j], (double)y[i * N + j], (double)w);
            }
    }
    /* NaN propagates through max/min on either side (fmaxf would drop it). */
    tsr_tensor_desc t2 = TC(TSR_F32, 1, 2);
    const float a[2] = {NAN, 1.0f}, b[2] = {1.0f, NAN};
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MAX, &t2, a, &t2, b, &t2, y), TSR_OK);
    ck_assert(isnan(y[0]) && isnan(y[1]));
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MIN, &t2, a, &t2, b, &t2, y), TSR_OK);
    ck_assert(isnan(y[0]) && isnan(y[1]));
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(chain_identities) {
    tsr_context *ctx = tt_ref_context();
    enum { N = NELEM(samples) };
    tsr_tensor_desc t = TC(TSR_F32, 1, N);
    float y[N], y2[N];
    /* sigmoid written as neg -> exp -> (+1) -> reciprocal is the sigmoid op
     * up to the roundings between steps (a few ulp). */
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    ck_assert_int_eq(tsr_chain_push_unary(&c, TSR_UNARY_NEG), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_unary(&c, TSR_UNARY_EXP), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_scalar(&c, TSR_BINARY_ADD, 1.0f, 0), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_unary(&c, TSR_UNARY_RECIPROCAL), TSR_OK);
    ck_assert_int_eq(c.num_steps, 4);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, samples, NULL, &t, y), TSR_OK);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SIGMOID, &t, samples, &t, y2), TSR_OK);
    for (int i = 0; i < N; i++)
        /* Below -88, exp(-x) overflows f32 between the steps: 1 / inf = 0,
         * where the fused op gives the denormal sigmoid. */
        if (!(samples[i] < -88.0f))
            ck_assert_msg(close_f32(y[i], y2[i], 4 * FLT_EPSILON), "sigmoid chain at %g: %.9g vs %.9g",
                      (double)samples[i], (double)y[i], (double)y2[i]);

    /* SCALAR_LEFT vs SCALAR: 1 - x is -(x - 1); 2 / x and x / 2 as in C. */
    tsr_chain_desc_init(&c);
    tsr_chain_push_scalar(&c, TSR_BINARY_SUB, 1.0f, 1);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, samples, NULL, &t, y), TSR_OK);
    tsr_chain_desc_init(&c);
    tsr_chain_push_scalar(&c, TSR_BINARY_SUB, 1.0f, 0);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, samples, NULL, &t, y2), TSR_OK);
    for (int i = 0; i < N; i++) {
        ck_assert(close_f32(y[i], 1.0f - samples[i], 0.0) && close_f32(y2[i], samples[i] - 1.0f, 0.0));
        ck_assert(close_f32(y[i], -y2[i], 0.0));
    }
    tsr_chain_desc_init(&c);
    tsr_chain_push_scalar(&c, TSR_BINARY_DIV, 2.0f, 1);
    tsr_chain_push_scalar(&c, TSR_BINARY_DIV, 2.0f, 0);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, samples, NULL, &t, y), TSR_OK);
    for (int i = 0; i < N; i++) ck_assert(close_f32(y[i], (2.0f / samples[i]) / 2.0f, 0.0));

    /* TENSOR_LEFT vs TENSOR with 4 operands of different shapes and dtypes:
     * y = max(o1 - (x * o0), o2) + o3. */
    enum { R = 3, C = 5 };
    float x[R * C], o0[C], o2[1];
    uint16_t o1[R], o3[R * C];
    tt_fill(x, TSR_F32, R * C, 1, -2, 2);
    tt_fill(o0, TSR_F32, C, 2, -2, 2);
    tt_fill(o1, TSR_F16, R, 3, -2, 2);
    o2[0] = 0.25f;
    tt_fill(o3, TSR_BF16, R * C, 4, -2, 2);
    tsr_tensor_desc tx = TC(TSR_F32, 2, R, C), d0 = TC(TSR_F32, 1, C), d1 = TC(TSR_F16, 2, R, 1),
                    d2 = tsr_tensor_contiguous(TSR_F32, 0, NULL), d3 = TC(TSR_BF16, 2, R, C);
    tsr_chain_desc_init(&c);
    ck_assert_int_eq(tsr_chain_push_tensor(&c, TSR_BINARY_MUL, &d0, 0), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_tensor(&c, TSR_BINARY_SUB, &d1, 1), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_tensor(&c, TSR_BINARY_MAX, &d2, 0), TSR_OK);
    ck_assert_int_eq(tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &d3, 1), TSR_OK);
    ck_assert(c.num_operands == 4 && c.steps[1].operand == 1 && c.steps[1].kind == TSR_STEP_TENSOR_LEFT);
    const void *ops[4] = {o0, o1, o2, o3};
    float out[R * C];
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &tx, x, ops, &tx, out), TSR_OK);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float v = x[i * C + j] * o0[j];
            v = tsr_f16_to_f32(o1[i]) - v;
            v = fmaxf(v, o2[0]);
            v = tsr_bf16_to_f32(o3[i * C + j]) + v;
            ck_assert_float_eq(out[i * C + j], v);
        }

    /* No steps: a copy (with a dtype conversion); 16 steps: all applied. */
    tsr_chain_desc_init(&c);
    uint16_t h[N];
    tsr_tensor_desc th = TC(TSR_F16, 1, N);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, samples, NULL, &th, h), TSR_OK);
    for (int i = 0; i < N; i++) ck_assert_uint_eq(h[i], tsr_f32_to_f16(samples[i]));
    for (int i = 0; i < TSR_MAX_CHAIN_STEPS; i++) ck_assert_int_eq(tsr_chain_push_scalar(&c, TSR_BINARY_ADD, 1, 0), TSR_OK);
    float z[2] = {0.5f, -3.0f};
    tsr_tensor_desc t2 = TC(TSR_F32, 1, 2);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t2, z, NULL, &t2, z), TSR_OK);
    ck_assert(z[0] == 16.5f && z[1] == 13.0f);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(broadcasting) {
    tsr_context *ctx = tt_ref_context();
    /* (3, 1, 5) * (4, 1) -> (3, 4, 5) */
    float a[15], b[4], y[60];
    tt_fill(a, TSR_F32, 15, 1, -1, 1);
    tt_fill(b, TSR_F32, 4, 2, -1, 1);
    tsr_tensor_desc ta = TC(TSR_F32, 3, 3, 1, 5), tb = TC(TSR_F32, 2, 4, 1), ty = TC(TSR_F32, 3, 3, 4, 5);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MUL, &ta, a, &tb, b, &ty, y), TSR_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) ck_assert_float_eq(y[(i * 4 + j) * 5 + k], a[i * 5 + k] * b[j]);
    /* The same with a on the right: b - a with b (4, 1) and a (3, 1, 5). */
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_SUB, &tb, b, &ta, a, &ty, y), TSR_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) ck_assert_float_eq(y[(i * 4 + j) * 5 + k], b[j] - a[i * 5 + k]);

    /* A row vector over a matrix, on either side; a column vector. */
    float m[20], row[5], col[4], out[20];
    tt_fill(m, TSR_F32, 20, 3, -1, 1);
    tt_fill(row, TSR_F32, 5, 4, -1, 1);
    tt_fill(col, TSR_F32, 4, 5, -1, 1);
    tsr_tensor_desc tm = TC(TSR_F32, 2, 4, 5), tr = TC(TSR_F32, 1, 5), tcol = TC(TSR_F32, 2, 4, 1);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_ADD, &tm, m, &tr, row, &tm, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], m[i] + row[i % 5]);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_DIV, &tr, row, &tm, m, &tm, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], row[i % 5] / m[i]);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MAX, &tcol, col, &tr, row, &tm, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], fmaxf(col[i / 5], row[i % 5]));

    /* Scalar tensors (ndim 0): as b, as x of a chain, and as y. */
    tsr_tensor_desc s0 = tsr_tensor_contiguous(TSR_F32, 0, NULL);
    float two = 2.0f, three = 3.0f, s = 0.0f;
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_POW, &tm, m, &s0, &two, &tm, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], powf(m[i], 2.0f));
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    tsr_chain_push_tensor(&c, TSR_BINARY_MUL, &tcol, 0);
    const void *ops[1] = {col};
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &s0, &three, ops, &tm, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], 3.0f * col[i / 5]);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_SUB, &s0, &three, &s0, &two, &s0, &s), TSR_OK);
    ck_assert_float_eq(s, 1.0f);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SQUARE, &s0, &three, &s0, &s), TSR_OK);
    ck_assert_float_eq(s, 9.0f);

    /* x with fewer dims than y, through a chain: (5) -> (2, 3, 5). */
    float big[30];
    tsr_tensor_desc t235 = TC(TSR_F32, 3, 2, 3, 5);
    tsr_chain_desc_init(&c);
    tsr_chain_push_unary(&c, TSR_UNARY_NEG);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &tr, row, NULL, &t235, big), TSR_OK);
    for (int i = 0; i < 30; i++) ck_assert_float_eq(big[i], -row[i % 5]);

    /* A zeroed desc with only a shape is contiguous; a size-1 dim's stride
     * is never used. */
    tsr_tensor_desc z;
    memset(&z, 0, sizeof z);
    z.dtype = TSR_F32, z.ndim = 2, z.shape[0] = 4, z.shape[1] = 5;
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_ABS, &z, m, &z, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], fabsf(m[i]));
    tsr_tensor_desc odd = view(TSR_F32, 3, SHAPE(4, 1, 5), SHAPE(5, 999, 1));
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_ADD, &odd, m, &tr, row, &odd, out), TSR_OK);
    for (int i = 0; i < 20; i++) ck_assert_float_eq(out[i], m[i] + row[i % 5]);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(views_and_in_place) {
    tsr_context *ctx = tt_ref_context();
    /* x a transposed view, y a strided slice (every other column); the
     * slice's gaps stay untouched. */
    float m[12], out[24];
    tt_fill(m, TSR_F32, 12, 3, -1, 1);
    tt_fill_sentinel(out, sizeof out);
    tsr_tensor_desc mt = view(TSR_F32, 2, SHAPE(4, 3), SHAPE(1, 4));
    tsr_tensor_desc os = view(TSR_F32, 2, SHAPE(4, 3), SHAPE(6, 2));
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SQUARE, &mt, m, &os, out), TSR_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) ck_assert_float_eq(out[i * 6 + j * 2], m[j * 4 + i] * m[j * 4 + i]);
    float probe[24]; /* the same sentinel bytes, to compare the odd (unwritten) slots with */
    tt_fill_sentinel(probe, sizeof probe);
    for (int i = 1; i < 24; i += 2) ck_assert(memcmp(&out[i], &probe[i], sizeof(float)) == 0);
    /* The other way round: x a strided slice, y a transposed (column-major) view. */
    float cm[12];
    tsr_tensor_desc ct = view(TSR_F32, 2, SHAPE(4, 3), SHAPE(1, 4));
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_NEG, &os, out, &ct, cm), TSR_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) ck_assert_float_eq(cm[j * 4 + i], -out[i * 6 + j * 2]);
    /* A 3-d permutation (2, 3, 4) seen as (4, 2, 3) for x and an operand. */
    float p[24], q[24], r[24];
    tt_fill(p, TSR_F32, 24, 8, -1, 1);
    tt_fill(q, TSR_F32, 24, 9, -1, 1);
    tsr_tensor_desc pv = view(TSR_F32, 3, SHAPE(4, 2, 3), SHAPE(1, 12, 4)), rv = TC(TSR_F32, 3, 4, 2, 3);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_MUL, &pv, p, &pv, q, &rv, r), TSR_OK);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                int src = i * 12 + j * 4 + k;
                ck_assert_float_eq(r[(k * 2 + i) * 3 + j], p[src] * q[src]);
            }

    /* In place: y == x (contiguous and as one transposed view), y == b. */
    float z[5] = {1, 2, 3, 4, 5}, w[5] = {2, 2, 2, 2, 2};
    tsr_tensor_desc t5 = TC(TSR_F32, 1, 5), s0 = tsr_tensor_contiguous(TSR_F32, 0, NULL);
    float two = 2;
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_POW, &t5, z, &s0, &two, &t5, z), TSR_OK);
    ck_assert(z[0] == 1 && z[1] == 4 && z[4] == 25);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_SUB, &t5, z, &t5, w, &t5, w), TSR_OK);
    ck_assert(w[0] == -1 && w[1] == 2 && w[4] == 23);
    float mm[12], want[12];
    tt_fill(mm, TSR_F32, 12, 10, -1, 1);
    for (int i = 0; i < 12; i++) want[i] = (float)exp((double)mm[i]);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &mt, mm, &mt, mm), TSR_OK);
    for (int i = 0; i < 12; i++) ck_assert_float_eq(mm[i], want[i]);
    uint16_t hh[5];
    for (int i = 0; i < 5; i++) hh[i] = tsr_f32_to_f16((float)i - 2);
    tsr_tensor_desc t5h = TC(TSR_F16, 1, 5);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_RELU, &t5h, hh, &t5h, hh), TSR_OK);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(tsr_f16_to_f32(hh[i]), i > 2 ? (float)i - 2 : 0.0f);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(dtypes) {
    tsr_context *ctx = tt_ref_context();
    enum { N = 64 };
    float xf[N], yf[N];
    uint16_t xh[N], xb[N], yh[N];
    tt_fill(xf, TSR_F32, N, 11, -4, 4);
    for (int i = 0; i < N; i++) xh[i] = tsr_f32_to_f16(xf[i]), xb[i] = tsr_f32_to_bf16(xf[i]);
    tsr_tensor_desc tf = TC(TSR_F32, 1, N), th = TC(TSR_F16, 1, N), tb = TC(TSR_BF16, 1, N);
    /* f16 -> f16, bf16 -> bf16: computed in f32, rounded once on the store. */
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &th, xh, &th, yh), TSR_OK);
    for (int i = 0; i < N; i++) ck_assert_uint_eq(yh[i], tsr_f32_to_f16(want_unary(TSR_UNARY_EXP, tsr_f16_to_f32(xh[i]))));
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_GELU_TANH, &tb, xb, &tb, yh), TSR_OK);
    for (int i = 0; i < N; i++) {
        float w = want_unary(TSR_UNARY_GELU_TANH, tsr_bf16_to_f32(xb[i]));
        ck_assert_uint_eq(yh[i], tsr_f32_to_bf16(w));
    }
    /* Mixed: f16 in, f32 out; f32 in, bf16 out; bf16 operand over an f16 x into f32. */
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_SQUARE, &th, xh, &tf, yf), TSR_OK);
    for (int i = 0; i < N; i++) {
        float v = tsr_f16_to_f32(xh[i]);
        ck_assert_float_eq(yf[i], v * v);
    }
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_IDENTITY, &tf, xf, &tb, yh), TSR_OK);
    for (int i = 0; i < N; i++) ck_assert_uint_eq(yh[i], xb[i]);
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_ADD, &th, xh, &tb, xb, &tf, yf), TSR_OK);
    for (int i = 0; i < N; i++) ck_assert_float_eq(yf[i], tsr_f16_to_f32(xh[i]) + tsr_bf16_to_f32(xb[i]));
    /* f16 overflow on the store is inf, as a conversion of the f32 value. */
    float big[2] = {70000.0f, -1e6f};
    tsr_tensor_desc t2f = TC(TSR_F32, 1, 2), t2h = TC(TSR_F16, 1, 2);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_IDENTITY, &t2f, big, &t2h, yh), TSR_OK);
    ck_assert(isinf(tsr_f16_to_f32(yh[0])) && tsr_f16_to_f32(yh[1]) == -INFINITY);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(empty_shapes) {
    tsr_context *ctx = tt_ref_context();
    float y[8];
    tt_fill_sentinel(y, sizeof y);
    tsr_tensor_desc e = TC(TSR_F32, 2, 0, 5), e2 = TC(TSR_F32, 2, 3, 0), col = TC(TSR_F32, 2, 3, 1);
    const float x[3] = {1, 2, 3};
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &e, x, &e, y), TSR_OK);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &e, NULL, &e, NULL), TSR_OK); /* nothing is read */
    ck_assert_int_eq(tsr_binary(ctx, TSR_BINARY_ADD, &col, x, &e2, x, &e2, y), TSR_OK); /* 1 broadcasts to 0 */
    tsr_chain_desc c;
    tsr_chain_desc_init(&c);
    tsr_chain_push_unary(&c, TSR_UNARY_LOG);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &col, x, NULL, &e2, y), TSR_OK);
    char why[256] = "x";
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &col, &e2, why, sizeof why), TSR_OK);
    ck_assert_str_eq(why, "");
    tsr_rowwise_desc d;
    tsr_rowwise_desc_init(&d);
    d.rows = 0, d.cols = 7;
    ck_assert_int_eq(tsr_softmax(ctx, &d, NULL, NULL), TSR_OK);
    ck_assert_int_eq(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_OK);
    d.rows = 4, d.cols = 0;
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_OK);
    ck_assert_int_eq(tsr_rowwise_supported(ctx, &d, why, sizeof why), TSR_OK);
    ck_assert(tt_unchanged(y, sizeof y));
    /* An empty x cannot grow to a non-empty y (0 is not 1). */
    tsr_tensor_desc e0 = TC(TSR_F32, 1, 0), one = TC(TSR_F32, 1, 1);
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &e0, x, &one, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &e0, x, NULL, &one, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "x.shape[0] (0) does not broadcast to y.shape[0] (1)"));
    ck_assert(tt_unchanged(y, sizeof y));
    tsr_context_destroy(ctx);
}
END_TEST

static tsr_rowwise_desc rw(int64_t rows, int64_t cols) {
    tsr_rowwise_desc d;
    tsr_rowwise_desc_init(&d);
    d.rows = rows, d.cols = cols;
    return d;
}

START_TEST(softmax_values) {
    tsr_context *ctx = tt_ref_context();
    /* By hand: softmax(1, 2, 3) = e^(i-3) / (e^-2 + e^-1 + 1). */
    const float x1[3] = {1, 2, 3};
    float y[16];
    tsr_rowwise_desc d = rw(1, 3);
    ck_assert_int_eq(tsr_softmax(ctx, &d, x1, y), TSR_OK);
    ck_assert_str_eq(tsr_last_kernel(), "softmax.ref");
    ck_assert_float_eq_tol(y[0], 0.0900305732f, 1e-8f);
    ck_assert_float_eq_tol(y[1], 0.2447284711f, 1e-8f);
    ck_assert_float_eq_tol(y[2], 0.6652409558f, 1e-8f);
    /* Large logits do not overflow; -inf entries give exactly 0; a row that
     * is all -inf gives 0s (tessera.h: a fully masked row, as attention does,
     * where PyTorch gives NaN); a NaN anywhere makes the row NaN. */
    const float x2[5 * 4] = {1e4f,      1e4f - 1,  0,         -1e4f,     /* */
                             -1e4f,     -1e4f,     -INFINITY, -INFINITY, /* */
                             -INFINITY, -INFINITY, -INFINITY, -INFINITY, /* */
                             1,         NAN,       2,         3,         /* */
                             NAN,       NAN,       NAN,       NAN};
    float y2[5 * 4];
    d = rw(5, 4);
    ck_assert_int_eq(tsr_softmax(ctx, &d, x2, y2), TSR_OK);
    memcpy(y, y2, sizeof y);
    const double e1 = exp(-1.0);
    ck_assert_float_eq_tol(y[0], 1 / (1 + e1), 1e-7f);
    ck_assert_float_eq_tol(y[1], e1 / (1 + e1), 1e-7f);
    ck_assert(y[2] == 0 && y[3] == 0);
    ck_assert(y[4] == 0.5f && y[5] == 0.5f && y[6] == 0 && y[7] == 0);
    for (int j = 8; j < 12; j++) ck_assert_float_eq(y[j], 0.0f);
    for (int j = 12; j < 20; j++) ck_assert(isnan(y2[j]));
    /* Random rows sum to 1; in place gives the same; f16 in, f32 out. */
    enum { R = 5, C = 37 };
    float xr[R * C], yr[R * C], ip[R * C];
    tt_fill(xr, TSR_F32, R * C, 12, -30, 30);
    memcpy(ip, xr, sizeof xr);
    d = rw(R, C);
    ck_assert_int_eq(tsr_softmax(ctx, &d, xr, yr), TSR_OK);
    ck_assert_int_eq(tsr_softmax(ctx, &d, ip, ip), TSR_OK);
    ck_assert(memcmp(ip, yr, sizeof yr) == 0);
    /* One row in place: the row strides do not matter. */
    memcpy(ip, xr, sizeof xr);
    d = rw(1, C);
    d.x_row_stride = 2 * C;
    ck_assert_int_eq(tsr_softmax(ctx, &d, ip, ip), TSR_OK);
    ck_assert(memcmp(ip, yr, C * sizeof(float)) == 0);
    d = rw(R, C);
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int j = 0; j < C; j++) s += yr[r * C + j], ck_assert(yr[r * C + j] >= 0);
        ck_assert_double_eq_tol(s, 1.0, 1e-6);
    }
    uint16_t xh[3];
    for (int i = 0; i < 3; i++) xh[i] = tsr_f32_to_f16(x1[i]);
    d = rw(1, 3);
    d.x_dtype = TSR_F16;
    ck_assert_int_eq(tsr_softmax(ctx, &d, xh, y), TSR_OK);
    ck_assert_float_eq_tol(y[2], 0.6652409558f, 1e-8f);
    /* epsilon means nothing to softmax. */
    d.epsilon = 0;
    ck_assert_int_eq(tsr_softmax(ctx, &d, xh, y), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(norm_values) {
    tsr_context *ctx = tt_ref_context();
    /* Without gamma/beta: each row has mean 0 and variance var / (var + eps). */
    enum { R = 4, C = 33 };
    float x[R * C], y[R * C], g[C], b[C];
    tt_fill(x, TSR_F32, R * C, 20, -3, 5);
    tt_fill(g, TSR_F32, C, 21, 0.5f, 2);
    tt_fill(b, TSR_F32, C, 22, -1, 1);
    tsr_rowwise_desc d = rw(R, C);
    ck_assert_int_eq(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_OK);
    ck_assert_str_eq(tsr_last_kernel(), "layernorm.ref");
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int j = 0; j < C; j++) m += y[r * C + j];
        m /= C;
        for (int j = 0; j < C; j++) v += (y[r * C + j] - m) * (y[r * C + j] - m);
        ck_assert_double_eq_tol(m, 0.0, 1e-6);
        ck_assert_double_eq_tol(v / C, 1.0, 1e-4);
    }
    /* By hand, with gamma and beta: (1, 2, 3, 4) has mean 2.5, variance 1.25. */
    const float h[4] = {1, 2, 3, 4}, hg[4] = {1, 2, 0.5f, -1}, hb[4] = {0, 1, -1, 0.5f};
    d = rw(1, 4);
    d.epsilon = 1e-3f;
    ck_assert_int_eq(tsr_layernorm(ctx, &d, h, hg, hb, y), TSR_OK);
    for (int j = 0; j < 4; j++)
        ck_assert_double_eq_tol(y[j], (h[j] - 2.5) / sqrt(1.25 + (double)1e-3f) * hg[j] + hb[j], 1e-6);
    ck_assert_int_eq(tsr_layernorm(ctx, &d, h, NULL, hb, y), TSR_OK); /* beta alone */
    ck_assert_double_eq_tol(y[0], (1 - 2.5) / sqrt(1.25 + (double)1e-3f), 1e-6);
    ck_assert_int_eq(tsr_layernorm(ctx, &d, h, hg, NULL, y), TSR_OK); /* gamma alone */
    ck_assert_double_eq_tol(y[1], (2 - 2.5) / sqrt(1.25 + (double)1e-3f) * 2, 1e-6);
    /* A constant row normalises to 0, then beta. */
    const float k[4] = {7, 7, 7, 7};
    ck_assert_int_eq(tsr_layernorm(ctx, &d, k, hg, hb, y), TSR_OK);
    for (int j = 0; j < 4; j++) ck_assert_float_eq(y[j], hb[j]);

    /* RMSnorm by hand: (3, 4) has mean square 12.5. */
    const float r2[2] = {3, 4}, rg[2] = {2, -1};
    d = rw(1, 2);
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, r2, rg, y), TSR_OK);
    ck_assert_str_eq(tsr_last_kernel(), "rmsnorm.ref");
    ck_assert_double_eq_tol(y[0], 3 / sqrt(12.5 + (double)1e-5f) * 2, 1e-6);
    ck_assert_double_eq_tol(y[1], -4 / sqrt(12.5 + (double)1e-5f), 1e-6);
    /* Without gamma each row's mean square is ms / (ms + eps); zeros stay 0. */
    d = rw(R, C);
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_OK);
    for (int r = 0; r < R; r++) {
        double ms = 0;
        for (int j = 0; j < C; j++) ms += (double)y[r * C + j] * y[r * C + j];
        ck_assert_double_eq_tol(ms / C, 1.0, 1e-4);
    }
    const float zero[3] = {0, 0, 0};
    d = rw(1, 3);
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, zero, NULL, y), TSR_OK);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0);
    tsr_context_destroy(ctx);
}
END_TEST

/* Strided rows read and write only their cols; bf16/f16 rows; in place. */
START_TEST(rowwise_strides_dtypes) {
    tsr_context *ctx = tt_ref_context();
    enum { R = 3, C = 9, XS = 12, YS = 14 };
    float x[R * XS], xd[R * C], y[R * YS], yd[R * C], g[C], b[C];
    tt_fill(x, TSR_F32, R * XS, 30, -2, 2);
    tt_fill(g, TSR_F32, C, 31, -2, 2);
    tt_fill(b, TSR_F32, C, 32, -2, 2);
    for (int r = 0; r < R; r++) memcpy(xd + r * C, x + r * XS, C * sizeof(float));
    for (int op = 0; op < 3; op++) {
        tsr_rowwise_desc d = rw(R, C), dd = rw(R, C);
        d.x_row_stride = XS, d.y_row_stride = YS;
        tt_fill_sentinel(y, sizeof y);
        tsr_status s1 = op == 0 ? tsr_softmax(ctx, &d, x, y)
                      : op == 1 ? tsr_layernorm(ctx, &d, x, g, b, y)
                                : tsr_rmsnorm(ctx, &d, x, g, y);
        tsr_status s2 = op == 0 ? tsr_softmax(ctx, &dd, xd, yd)
                      : op == 1 ? tsr_layernorm(ctx, &dd, xd, g, b, yd)
                                : tsr_rmsnorm(ctx, &dd, xd, g, yd);
        ck_assert(s1 == TSR_OK && s2 == TSR_OK);
        for (int r = 0; r < R; r++) ck_assert(memcmp(y + r * YS, yd + r * C, C * sizeof(float)) == 0);
        /* The gaps between rows keep their bytes. */
        float probe[R * YS];
        tt_fill_sentinel(probe, sizeof probe);
        for (int r = 0; r < R; r++)
            for (int j = C; j < YS; j++) ck_assert(memcmp(&y[r * YS + j], &probe[r * YS + j], 4) == 0);
        /* In place over the strided x gives the same values. */
        float ip[R * XS];
        memcpy(ip, x, sizeof x);
        tsr_rowwise_desc di = rw(R, C);
        di.x_row_stride = di.y_row_stride = XS;
        s1 = op == 0 ? tsr_softmax(ctx, &di, ip, ip)
           : op == 1 ? tsr_layernorm(ctx, &di, ip, g, b, ip)
                     : tsr_rmsnorm(ctx, &di, ip, g, ip);
        ck_assert_int_eq(s1, TSR_OK);
        for (int r = 0; r < R; r++) ck_assert(memcmp(ip + r * XS, yd + r * C, C * sizeof(float)) == 0);
        /* bf16 in, f16 out: the f32 computation of the rounded input, rounded once. */
        uint16_t xb[R * C], yh[R * C];
        float xbf[R * C], want[R * C];
        for (int i = 0; i < R * C; i++) xb[i] = tsr_f32_to_bf16(xd[i]), xbf[i] = tsr_bf16_to_f32(xb[i]);
        tsr_rowwise_desc dh = rw(R, C);
        dh.x_dtype = TSR_BF16, dh.y_dtype = TSR_F16;
        s1 = op == 0 ? tsr_softmax(ctx, &dh, xb, yh)
           : op == 1 ? tsr_layernorm(ctx, &dh, xb, g, b, yh)
                     : tsr_rmsnorm(ctx, &dh, xb, g, yh);
        s2 = op == 0 ? tsr_softmax(ctx, &dd, xbf, want)
           : op == 1 ? tsr_layernorm(ctx, &dd, xbf, g, b, want)
                     : tsr_rmsnorm(ctx, &dd, xbf, g, want);
        ck_assert(s1 == TSR_OK && s2 == TSR_OK);
        for (int i = 0; i < R * C; i++) ck_assert_uint_eq(yh[i], tsr_f32_to_f16(want[i]));
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* --------------------------------------------------------------- dispatch */

typedef struct dt_pair {
    tsr_dtype x, y;
} dt_pair;

static const dt_pair pairs[] = {{TSR_F32, TSR_F32}, {TSR_F16, TSR_F32}, {TSR_BF16, TSR_BF16}, {TSR_F32, TSR_F16}};

/* Tolerance of one context's chain result against the reference's. */
static double chain_rtol(tsr_dtype y) { return y == TSR_F32 ? 4e-6 : tt_rtol(y, 1); }

/* Runs the chain on the reference (host buffers) and on ctx (device copies
 * of the same buffers, y starting from the same bytes) and compares all of
 * y's buffer, gaps included. */
static void chain_vs_ref(tsr_context *ref, const tt_context *tc, const char *what, const tsr_chain_desc *ch,
                         const tsr_tensor_desc *tx, const void *x, size_t x_bytes, const void *const *ops,
                         const size_t *op_bytes, const tsr_tensor_desc *ty, int64_t y_elems) {
    size_t yb = (size_t)y_elems * tsr_dtype_size(ty->dtype);
    void *y1 = malloc(yb), *y2 = malloc(yb);
    tt_fill(y1, ty->dtype, y_elems, 99, -9, 9);
    void *dx = tt_upload(tc->ctx, x, x_bytes), *dy = tt_upload(tc->ctx, y1, yb);
    void *dop[TSR_MAX_CHAIN_OPERANDS] = {NULL};
    for (int i = 0; i < ch->num_operands; i++) dop[i] = tt_upload(tc->ctx, ops[i], op_bytes[i]);
    ck_assert_msg(tsr_elementwise_chain(ref, ch, tx, x, ops, ty, y1) == TSR_OK, "%s: %s", what, tsr_last_error());
    ck_assert_msg(tsr_elementwise_chain(tc->ctx, ch, tx, dx, (const void *const *)dop, ty, dy) == TSR_OK, "%s %s: %s",
                  tc->label, what, tsr_last_error());
    tt_download(tc->ctx, y2, dy, yb);
    char label[160];
    snprintf(label, sizeof label, "%s %s %s->%s", tc->label, what, tsr_dtype_name(tx->dtype),
             tsr_dtype_name(ty->dtype));
    double rtol = chain_rtol(ty->dtype);
    ck_assert_msg(tt_compare(label, y2, y1, ty->dtype, y_elems, 1e-6, rtol) == 0, "%s", label);
    for (int i = 0; i < ch->num_operands; i++) tt_free(tc->ctx, dop[i]);
    tt_free(tc->ctx, dx), tt_free(tc->ctx, dy);
    free(y1), free(y2);
}

START_TEST(every_context_chains) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("elementwise", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const int64_t cols[] = {1, 7, 31, 1000, 4097}, rows[] = {1, 13};
    for (int c = 0; c < nc; c++)
        for (int ri = 0; ri < 2; ri++)
            for (int ci = 0; ci < 5; ci++)
                for (int t = 0; t < NELEM(pairs); t++) {
                    const int64_t R = rows[ri], C = cols[ci], n = R * C, XS = C + 3;
                    const tsr_dtype xt = pairs[t].x, yt = pairs[t].y;
                    const size_t ex = tsr_dtype_size(xt);
                    void *x = malloc((size_t)(R * XS) * ex), *colv = malloc((size_t)R * ex);
                    float *bias = malloc(sizeof(float) * (size_t)C);
                    tt_fill(x, xt, R * XS, 40 + (uint64_t)ci, -4, 4);
                    tt_fill(colv, xt, R, 45 + (uint64_t)ci, -2, 2);
                    tt_fill(bias, TSR_F32, C, 50 + (uint64_t)ci, -1, 1);
                    char what[64];
                    /* silu(x * 0.5 + bias[col]): a row vector broadcast over dense rows. */
                    tsr_tensor_desc tx = TC(xt, 2, R, C), ty = TC(yt, 2, R, C), tb = TC(TSR_F32, 1, C);
                    tsr_chain_desc ch;
                    tsr_chain_desc_init(&ch);
                    tsr_chain_push_scalar(&ch, TSR_BINARY_MUL, 0.5f, 0);
                    tsr_chain_push_tensor(&ch, TSR_BINARY_ADD, &tb, 0);
                    tsr_chain_push_unary(&ch, TSR_UNARY_SILU);
                    const void *ops1[1] = {bias};
                    const size_t ob1[1] = {sizeof(float) * (size_t)C};
                    snprintf(what, sizeof what, "silu-chain %lldx%lld", (long long)R, (long long)C);
                    chain_vs_ref(ref, &cs[c], what, &ch, &tx, x, (size_t)n * ex, ops1, ob1, &ty, n);
                    /* max(col[r] - x, 0) * x^2 + 1, x strided rows, y column-major,
                     * the column vector on the left. */
                    tsr_tensor_desc txs = view(xt, 2, SHAPE(R, C), SHAPE(XS, 1));
                    tsr_tensor_desc tyc = view(yt, 2, SHAPE(R, C), SHAPE(1, R));
                    tsr_tensor_desc tcv = TC(xt, 2, R, 1);
                    tsr_chain_desc_init(&ch);
                    tsr_chain_push_tensor(&ch, TSR_BINARY_SUB, &tcv, 1);
                    tsr_chain_push_scalar(&ch, TSR_BINARY_MAX, 0.0f, 0);
                    tsr_chain_push_tensor(&ch, TSR_BINARY_MUL, &txs, 0);
                    tsr_chain_push_tensor(&ch, TSR_BINARY_MUL, &txs, 0);
                    tsr_chain_push_scalar(&ch, TSR_BINARY_ADD, 1.0f, 1);
                    /* each push adds an operand: x is operands 1 and 2 */
                    const void *ops2[3] = {colv, x, x};
                    const size_t ob2[3] = {(size_t)R * ex, (size_t)(R * XS) * ex, (size_t)(R * XS) * ex};
                    snprintf(what, sizeof what, "strided-chain %lldx%lld", (long long)R, (long long)C);
                    chain_vs_ref(ref, &cs[c], what, &ch, &txs, x, (size_t)(R * XS) * ex, ops2, ob2, &tyc, n);
                    free(x), free(colv), free(bias);
                }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

/* Every unary and binary op, special values included, on every context;
 * in place on the context's memory too. */
START_TEST(every_context_all_ops) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("elementwise", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    enum { R = 3, C = 131, N = R * C };
    for (int c = 0; c < nc; c++)
        for (int t = 0; t < NELEM(pairs); t++) {
            const tsr_dtype xt = pairs[t].x, yt = pairs[t].y;
            const size_t ex = tsr_dtype_size(xt);
            float xf[N], of[N];
            tt_fill(xf, TSR_F32, N, 60, -6, 6);
            tt_fill(of, TSR_F32, N, 61, -3, 3);
            for (int i = 0; i < NELEM(samples); i++) xf[i * 7] = samples[i], of[i * 5 + 1] = samples[i];
            void *x = malloc(N * ex), *o = malloc(N * ex);
            for (int i = 0; i < N; i++) {
                if (xt == TSR_F32) ((float *)x)[i] = xf[i], ((float *)o)[i] = of[i];
                else if (xt == TSR_F16) ((uint16_t *)x)[i] = tsr_f32_to_f16(xf[i]), ((uint16_t *)o)[i] = tsr_f32_to_f16(of[i]);
                else ((uint16_t *)x)[i] = tsr_f32_to_bf16(xf[i]), ((uint16_t *)o)[i] = tsr_f32_to_bf16(of[i]);
            }
            tsr_tensor_desc tx = TC(xt, 2, R, C), ty = TC(yt, 2, R, C), to = TC(xt, 2, R, C);
            char what[64];
            for (int op = 0; op < TSR_UNARY_COUNT; op++) {
                tsr_chain_desc ch;
                tsr_chain_desc_init(&ch);
                tsr_chain_push_unary(&ch, (tsr_unary_op)op);
                snprintf(what, sizeof what, "unary %s", unary_names[op]);
                chain_vs_ref(ref, &cs[c], what, &ch, &tx, x, N * ex, NULL, NULL, &ty, N);
            }
            for (int op = 0; op < TSR_BINARY_COUNT; op++)
                for (int left = 0; left < 2; left++) {
                    tsr_chain_desc ch;
                    tsr_chain_desc_init(&ch);
                    tsr_chain_push_tensor(&ch, (tsr_binary_op)op, &to, left);
                    tsr_chain_push_scalar(&ch, (tsr_binary_op)op, 1.5f, !left);
                    const void *ops[1] = {o};
                    const size_t ob[1] = {N * ex};
                    snprintf(what, sizeof what, "binary %d%s", op, left ? " left" : "");
                    chain_vs_ref(ref, &cs[c], what, &ch, &tx, x, N * ex, ops, ob, &ty, N);
                }
            if (xt == yt) { /* in place: y == x on the context */
                void *h1 = malloc(N * ex), *h2 = malloc(N * ex);
                memcpy(h1, x, N * ex);
                void *dx = tt_upload(cs[c].ctx, x, N * ex);
                ck_assert_int_eq(tsr_unary(ref, TSR_UNARY_GELU_ERF, &tx, h1, &tx, h1), TSR_OK);
                ck_assert_int_eq(tsr_unary(cs[c].ctx, TSR_UNARY_GELU_ERF, &tx, dx, &tx, dx), TSR_OK);
                tt_download(cs[c].ctx, h2, dx, N * ex);
                snprintf(what, sizeof what, "%s in-place gelu %s", cs[c].label, tsr_dtype_name(xt));
                ck_assert_msg(tt_compare(what, h2, h1, xt, N, 1e-6, chain_rtol(xt)) == 0, "%s", what);
                tt_free(cs[c].ctx, dx);
                free(h1), free(h2);
            }
            free(x), free(o);
        }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

START_TEST(every_context_rowwise) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("elementwise", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    /* 1032 and 4096: CUDA's vector kernel (rows of 8-multiples in 16-byte
     * vectors; 1032 leaves most threads one group short), 4097 its scalar
     * fallback. Layouts: dense; rows 3 and 5 elements apart past cols
     * (misaligned); 8 and 16 apart with gamma and beta one float in (rows
     * aligned, gamma read per element; not on OpenCL, whose buffers take no
     * offset), also run in place where the dtypes match. */
    const int64_t cols[] = {1, 7, 31, 1000, 1032, 4096, 4097}, rows[] = {1, 13};
    for (int c = 0; c < nc; c++)
        for (int ri = 0; ri < 2; ri++)
            for (int ci = 0; ci < 7; ci++)
                for (int t = 0; t < NELEM(pairs); t++)
                    for (int strided = 0; strided < 3; strided++) {
                        const int64_t R = rows[ri], C = cols[ci];
                        const int64_t XS = C + (strided == 1 ? 3 : strided == 2 ? 8 : 0);
                        const int64_t YS = C + (strided == 1 ? 5 : strided == 2 ? 16 : 0);
                        const int go = strided == 2 && !tt_handles(cs[c].ctx); /* gamma and beta offset */
                        const tsr_dtype xt = pairs[t].x, yt = pairs[t].y;
                        const size_t ex = tsr_dtype_size(xt), ey = tsr_dtype_size(yt);
                        const int64_t nx = R * XS, ny = R * YS;
                        void *x = malloc((size_t)nx * ex), *y1 = malloc((size_t)ny * ey), *y2 = malloc((size_t)ny * ey);
                        float *g = malloc(sizeof(float) * (size_t)(C + 1)), *b = malloc(sizeof(float) * (size_t)(C + 1));
                        tt_fill(x, xt, nx, 70 + (uint64_t)ci, -5, 5);
                        tt_fill(g, TSR_F32, C + 1, 71, 0.5f, 1.5f);
                        tt_fill(b, TSR_F32, C + 1, 72, -1, 1);
                        /* softmax reads a copy with masked (-inf) entries in every other row,
                         * a NaN in row 3, a +inf in row 5 and a row of -inf (row 7) */
                        void *xm = malloc((size_t)nx * ex);
                        memcpy(xm, x, (size_t)nx * ex);
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t j = 0; j < C; j++) {
                                float v;
                                if (r == 3 && j == C / 2) v = NAN;
                                else if (r == 5 && j == C - 1) v = INFINITY;
                                else if (r == 7 || (r % 2 == 0 && j % 3 == 1)) v = -INFINITY;
                                else continue;
                                const size_t at = (size_t)(r * XS + j) * ex;
                                const uint16_t h = xt == TSR_F16 ? tsr_f32_to_f16(v) : tsr_f32_to_bf16(v);
                                if (xt == TSR_F32) memcpy((char *)xm + at, &v, sizeof v);
                                else memcpy((char *)xm + at, &h, sizeof h);
                            }
                        void *dx = tt_upload(cs[c].ctx, x, (size_t)nx * ex), *dxm = tt_upload(cs[c].ctx, xm, (size_t)nx * ex);
                        void *dg = tt_upload(cs[c].ctx, g, sizeof(float) * (size_t)(C + 1));
                        void *db = tt_upload(cs[c].ctx, b, sizeof(float) * (size_t)(C + 1));
                        const float *hg = g + go, *hb = b + go, *dgo = (const float *)dg + go, *dbo = (const float *)db + go;
                        tsr_rowwise_desc d = rw(R, C);
                        d.x_dtype = xt, d.y_dtype = yt;
                        d.x_row_stride = strided ? XS : 0, d.y_row_stride = strided ? YS : 0;
                        for (int op = 0; op < 3; op++) {
                            tt_fill(y1, yt, ny, 73, -9, 9);
                            void *dy = tt_upload(cs[c].ctx, y1, (size_t)ny * ey);
                            tsr_status s1 = op == 0 ? tsr_softmax(ref, &d, xm, y1)
                                          : op == 1 ? tsr_layernorm(ref, &d, x, hg, hb, y1)
                                                    : tsr_rmsnorm(ref, &d, x, hg, y1);
                            tsr_status s2 = op == 0 ? tsr_softmax(cs[c].ctx, &d, dxm, dy)
                                          : op == 1 ? tsr_layernorm(cs[c].ctx, &d, dx, dgo, dbo, dy)
                                                    : tsr_rmsnorm(cs[c].ctx, &d, dx, dgo, dy);
                            ck_assert_msg(s1 == TSR_OK && s2 == TSR_OK, "%s", tsr_last_error());
                            tt_download(cs[c].ctx, y2, dy, (size_t)ny * ey);
                            char what[160];
                            snprintf(what, sizeof what, "%s %s %lldx%lld%s %s->%s", cs[c].label,
                                     op == 0 ? "softmax" : op == 1 ? "layernorm" : "rmsnorm", (long long)R,
                                     (long long)C, strided == 1 ? " strided" : strided ? " strided 16" : "",
                                     tsr_dtype_name(xt), tsr_dtype_name(yt));
                            double rtol = tt_rtol(yt, C), atol = op == 0 ? 1e-7 : rtol;
                            ck_assert_msg(tt_compare(what, y2, y1, yt, ny, atol, rtol) == 0, "%s", what);
                            if (strided == 2 && xt == yt) { /* in place over x's rows */
                                tsr_rowwise_desc di = d;
                                di.y_row_stride = XS;
                                void *ip = tt_upload(cs[c].ctx, op == 0 ? xm : x, (size_t)nx * ex);
                                void *want = malloc((size_t)nx * ex), *got = malloc((size_t)nx * ex);
                                memcpy(want, op == 0 ? xm : x, (size_t)nx * ex);
                                s1 = op == 0 ? tsr_softmax(ref, &di, want, want)
                                   : op == 1 ? tsr_layernorm(ref, &di, want, hg, hb, want)
                                             : tsr_rmsnorm(ref, &di, want, hg, want);
                                s2 = op == 0 ? tsr_softmax(cs[c].ctx, &di, ip, ip)
                                   : op == 1 ? tsr_layernorm(cs[c].ctx, &di, ip, dgo, dbo, ip)
                                             : tsr_rmsnorm(cs[c].ctx, &di, ip, dgo, ip);
                                ck_assert_msg(s1 == TSR_OK && s2 == TSR_OK, "%s", tsr_last_error());
                                tt_download(cs[c].ctx, got, ip, (size_t)nx * ex);
                                strcat(what, " in place");
                                ck_assert_msg(tt_compare(what, got, want, xt, nx, atol, rtol) == 0, "%s", what);
                                tt_free(cs[c].ctx, ip), free(want), free(got);
                            }
                            tt_free(cs[c].ctx, dy);
                        }
                        tt_free(cs[c].ctx, dx), tt_free(cs[c].ctx, dxm), tt_free(cs[c].ctx, dg), tt_free(cs[c].ctx, db);
                        free(x), free(xm), free(y1), free(y2), free(g), free(b);
                    }
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

/* -------------------------------------------------------------- bad input */

/* The call fails with `want`, its message holds `needle`, y's bytes survive. */
#define EXPECT(call, want, needle)                                                                           \
    do {                                                                                                     \
        tsr_status st_ = (call);                                                                             \
        ck_assert_msg(st_ == (want), "%s: want %s got %s (%s)", #call, tsr_status_string(want),             \
                      tsr_status_string(st_), tsr_last_error());                                             \
        ck_assert_msg(strstr(tsr_last_error(), (needle)) != NULL, "message '%s' lacks '%s'", tsr_last_error(), \
                      (needle));                                                                             \
        ck_assert_msg(tt_unchanged(y, sizeof y), "y written on bad input (%s)", (needle));                   \
    } while (0)

START_TEST(bad_chain_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[64] = {0}, y[64];
    tt_fill_sentinel(y, sizeof y);
    tsr_tensor_desc t = TC(TSR_F32, 2, 4, 4), t3 = TC(TSR_F32, 1, 3), bad;
    tsr_chain_desc c;
    const void *ops[2] = {x, x};

    /* NULL pointers */
    EXPECT(tsr_unary(NULL, TSR_UNARY_EXP, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary: ctx is NULL");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, NULL, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary: x_desc is NULL");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, NULL, y), TSR_ERR_INVALID_ARGUMENT, "unary: y_desc is NULL");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary: x is NULL");
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &t, NULL), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(tsr_last_error(), "unary: y is NULL");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, NULL, x, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: a_desc is NULL");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, NULL, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: b_desc is NULL");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, &t, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: b is NULL");
    EXPECT(tsr_binary(NULL, TSR_BINARY_ADD, &t, x, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: ctx is NULL");
    EXPECT(tsr_elementwise_chain(ctx, NULL, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    tsr_chain_desc_init(&c);
    tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0);
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "operands is NULL");
    const void *nullop[1] = {NULL};
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, nullop, &t, y), TSR_ERR_INVALID_ARGUMENT, "operands[0] is NULL");
    c.num_steps = 0; /* an operand no step uses is never read: NULL is fine */
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, x, nullop, &t, x), TSR_OK);
    ck_assert_int_eq(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, x), TSR_OK);
    tsr_chain_desc_init(&c);
    c.size = 3;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "desc->size (3)");

    /* ndim, shape, strides */
    tsr_chain_desc_init(&c);
    bad = t, bad.ndim = 9;
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "x.ndim (9) must be in 0..8");
    bad = tsr_tensor_contiguous(TSR_F32, 12, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &bad, y), TSR_ERR_INVALID_ARGUMENT, "y.ndim (-1)");
    bad = t, bad.shape[0] = -2;
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "y.shape[0] (-2) < 0");
    bad = t, bad.strides[1] = -1;
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "x.strides[1] (-1) < 0");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "b.strides[1] (-1) < 0");

    /* shapes that do not broadcast, named by dim */
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, &t3, x, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "b.shape[0] (3) does not broadcast to y.shape[1] (4)");
    tsr_tensor_desc t34 = TC(TSR_F32, 2, 3, 4);
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t34, x, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "a.shape[0] (3) does not broadcast to y.shape[0] (4)");
    tsr_chain_desc_init(&c);
    tsr_chain_push_scalar(&c, TSR_BINARY_ADD, 1, 0);
    tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0);
    tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t34, 0);
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, ops, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "operands[1].shape[0] (3) does not broadcast to y.shape[0] (4)");
    tsr_tensor_desc t144 = TC(TSR_F32, 3, 1, 4, 4);
    tsr_chain_desc_init(&c);
    EXPECT(tsr_elementwise_chain(ctx, &c, &t144, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "has 3 dims, more than y");
    tsr_tensor_desc t43 = TC(TSR_F32, 2, 4, 3);
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &t43, y), TSR_ERR_INVALID_ARGUMENT,
           "x.shape (4, 4) differs from y.shape (4, 3)");
    tsr_tensor_desc row = TC(TSR_F32, 2, 1, 4);
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &row, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "x.shape (1, 4) differs");

    /* y: a 0 stride, overlapping elements, overlap with x or an operand */
    bad = view(TSR_F32, 2, SHAPE(4, 4), SHAPE(0, 1));
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &bad, y), TSR_ERR_INVALID_ARGUMENT,
           "y.strides[0] is 0 but y.shape[0] is 4");
    bad = view(TSR_F32, 2, SHAPE(4, 4), SHAPE(2, 1));
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &bad, y), TSR_ERR_INVALID_ARGUMENT,
           "y.strides[0] (2) < 4, the span of y's inner dims");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, y + 1, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary: y overlaps x");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, y + 15, &t, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    bad = view(TSR_F32, 2, SHAPE(4, 4), SHAPE(1, 4)); /* same pointer, transposed */
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, y, &t, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    tsr_tensor_desc th = TC(TSR_F16, 2, 4, 4); /* same pointer, another dtype */
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &th, y, &t, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    tsr_chain_desc_init(&c); /* same pointer, x broadcast */
    EXPECT(tsr_elementwise_chain(ctx, &c, &row, y, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "chain: y overlaps x");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, x, &t, y + 4, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: y overlaps b");
    EXPECT(tsr_binary(ctx, TSR_BINARY_ADD, &t, y + 4, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "binary: y overlaps a");
    tsr_chain_desc_init(&c);
    tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0);
    tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &row, 0);
    const void *ops_alias[2] = {x, y};
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, ops_alias, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "y overlaps operands[1]");

    /* steps: operand index, counts, enums */
    tsr_chain_desc_init(&c);
    c.num_steps = 1, c.steps[0].kind = TSR_STEP_TENSOR, c.steps[0].operand = 2;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, ops, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "steps[0].operand (2) is out of range: num_operands is 0");
    c.num_operands = 1, c.operands[0] = t, c.steps[0].operand = -1;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, ops, &t, y), TSR_ERR_INVALID_ARGUMENT, "steps[0].operand (-1)");
    tsr_chain_desc_init(&c);
    c.num_steps = TSR_MAX_CHAIN_STEPS + 1;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "num_steps (17) must be in 0..16");
    c.num_steps = -1;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "num_steps (-1)");
    c.num_steps = 0, c.num_operands = 5;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "num_operands (5) must be in 0..4");
    tsr_chain_desc_init(&c);
    for (int i = 0; i < TSR_MAX_CHAIN_STEPS; i++) ck_assert_int_eq(tsr_chain_push_unary(&c, TSR_UNARY_ABS), TSR_OK);
    EXPECT(tsr_chain_push_unary(&c, TSR_UNARY_ABS), TSR_ERR_INVALID_ARGUMENT, "already has 16 steps");
    EXPECT(tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0), TSR_ERR_INVALID_ARGUMENT, "already has 16 steps");
    ck_assert_int_eq(c.num_steps, 16);
    ck_assert_int_eq(c.num_operands, 0); /* a failed push adds nothing */
    tsr_chain_desc_init(&c);
    for (int i = 0; i < TSR_MAX_CHAIN_OPERANDS; i++)
        ck_assert_int_eq(tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0), TSR_OK);
    EXPECT(tsr_chain_push_tensor(&c, TSR_BINARY_ADD, &t, 0), TSR_ERR_INVALID_ARGUMENT, "already has 4 operands");
    ck_assert_int_eq(c.num_steps, 4);
    EXPECT(tsr_chain_push_unary(NULL, TSR_UNARY_ABS), TSR_ERR_INVALID_ARGUMENT, "chain: desc is NULL");
    EXPECT(tsr_chain_push_tensor(&c, TSR_BINARY_ADD, NULL, 0), TSR_ERR_INVALID_ARGUMENT, "operand is NULL");
    tsr_chain_desc_init(&c);
    EXPECT(tsr_chain_push_unary(&c, (tsr_unary_op)TSR_UNARY_COUNT), TSR_ERR_INVALID_ARGUMENT, "op (16) is not a tsr_unary_op");
    EXPECT(tsr_chain_push_scalar(&c, (tsr_binary_op)-1, 1, 0), TSR_ERR_INVALID_ARGUMENT, "op (-1) is not a tsr_binary_op");
    ck_assert_int_eq(c.num_steps, 0);
    EXPECT(tsr_unary(ctx, (tsr_unary_op)99, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "unary: op (99) is not a tsr_unary_op");
    EXPECT(tsr_binary(ctx, (tsr_binary_op)7, &t, x, &t, x, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "binary: op (7) is not a tsr_binary_op");
    c.num_steps = 2, c.steps[1].kind = (tsr_chain_step_kind)5;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT,
           "steps[1].kind (5) is not a tsr_chain_step_kind");
    c.steps[1].kind = TSR_STEP_UNARY, c.steps[1].unary = (tsr_unary_op)-3;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "steps[1].unary (-3)");
    c.steps[1].kind = TSR_STEP_SCALAR_LEFT, c.steps[1].binary = TSR_BINARY_COUNT;
    EXPECT(tsr_elementwise_chain(ctx, &c, &t, x, NULL, &t, y), TSR_ERR_INVALID_ARGUMENT, "steps[1].binary (7)");

    /* dtypes: valid but unsupported, and not a dtype at all */
    bad = t, bad.dtype = TSR_I8;
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_NOT_SUPPORTED, "x.dtype i8 is not supported");
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &bad, y), TSR_ERR_NOT_SUPPORTED, "y.dtype i8 is not supported");
    bad.dtype = TSR_I32;
    EXPECT(tsr_binary(ctx, TSR_BINARY_MUL, &t, x, &bad, x, &t, y), TSR_ERR_NOT_SUPPORTED, "b.dtype i32 is not supported");
    bad.dtype = (tsr_dtype)42;
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "x.dtype (42) is not a tsr_dtype");

    /* sizes that overflow: the element count, the byte extent */
    bad = view(TSR_F32, 2, SHAPE((int64_t)1 << 40, (int64_t)1 << 40), SHAPE(0, 0));
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "element count of x");
    bad = view(TSR_F32, 2, SHAPE(4, 4), SHAPE((int64_t)1 << 62, 1));
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &t, y), TSR_ERR_INVALID_ARGUMENT, "byte extent of x");
    bad = TC(TSR_F32, 1, (int64_t)1 << 62); /* 2^62 elements fit; 2^64 bytes do not */
    EXPECT(tsr_unary(ctx, TSR_UNARY_EXP, &bad, x, &bad, y), TSR_ERR_INVALID_ARGUMENT, "byte extent of y");

    /* the query says the same, without touching anything */
    char why[256];
    tsr_chain_desc_init(&c);
    bad = t, bad.ndim = 9;
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &bad, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "x.ndim (9)"));
    bad = t, bad.dtype = TSR_I8;
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &t, &bad, why, sizeof why), TSR_ERR_NOT_SUPPORTED);
    ck_assert_ptr_nonnull(strstr(why, "y.dtype i8"));
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, NULL, &t, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &t, &t, NULL, 0), TSR_OK);
    ck_assert_int_eq(tsr_elementwise_chain_supported(ctx, &c, &t, &t, why, sizeof why), TSR_OK);
    ck_assert_str_eq(why, "");
    /* a success after a failure clears the message */
    ck_assert_int_eq(tsr_unary(ctx, TSR_UNARY_EXP, &t, x, &t, x), TSR_OK);
    ck_assert_str_eq(tsr_last_error(), "");
    ck_assert(tt_unchanged(y, sizeof y));
    tsr_chain_desc_init(NULL); /* no-ops */
    tsr_rowwise_desc_init(NULL);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(bad_rowwise_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float x[64] = {0}, y[64], g[8] = {0};
    tt_fill_sentinel(y, sizeof y);
    tsr_rowwise_desc d = rw(2, 4);
    EXPECT(tsr_softmax(NULL, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "softmax: ctx is NULL");
    EXPECT(tsr_softmax(ctx, NULL, x, y), TSR_ERR_INVALID_ARGUMENT, "softmax: desc is NULL");
    EXPECT(tsr_layernorm(ctx, &d, NULL, NULL, NULL, y), TSR_ERR_INVALID_ARGUMENT, "layernorm: x is NULL");
    ck_assert_int_eq(tsr_rmsnorm(ctx, &d, x, NULL, NULL), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(tsr_last_error(), "rmsnorm: y is NULL");
    d.size = 3;
    EXPECT(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_ERR_INVALID_ARGUMENT, "desc->size (3)");
    d = rw(-1, 4);
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "rows (-1) < 0");
    d = rw(2, -4);
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "cols (-4) < 0");
    d = rw(2, 4), d.x_row_stride = 3;
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "x_row_stride (3) < cols (4)");
    d = rw(2, 4), d.y_row_stride = 2;
    EXPECT(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_ERR_INVALID_ARGUMENT, "y_row_stride (2) < cols (4)");
    d = rw(2, 4), d.x_row_stride = -8;
    EXPECT(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_ERR_INVALID_ARGUMENT, "x_row_stride (-8) < 0");
    const float bad_eps[] = {0.0f, -1e-5f, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        d = rw(2, 4), d.epsilon = bad_eps[i];
        EXPECT(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_ERR_INVALID_ARGUMENT, "must be finite and > 0");
        EXPECT(tsr_rmsnorm(ctx, &d, x, NULL, y), TSR_ERR_INVALID_ARGUMENT, "rmsnorm: epsilon (");
    }
    d = rw(2, 4), d.epsilon = 0;
    EXPECT(tsr_layernorm(ctx, &d, x, NULL, NULL, y), TSR_ERR_INVALID_ARGUMENT, "epsilon (0)");
    d = rw(2, 4), d.x_dtype = TSR_I8;
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_NOT_SUPPORTED, "x_dtype i8 is not supported");
    d = rw(2, 4), d.y_dtype = TSR_I32;
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_NOT_SUPPORTED, "y_dtype i32 is not supported");
    d = rw(2, 4), d.y_dtype = (tsr_dtype)-1;
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "y_dtype (-1) is not a tsr_dtype");
    d = rw((int64_t)1 << 61, 4);
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    d = rw(2, 4), d.y_row_stride = INT64_MAX / 2;
    EXPECT(tsr_softmax(ctx, &d, x, y), TSR_ERR_INVALID_ARGUMENT, "byte size of y");
    /* overlaps: shifted, same pointer with another stride or dtype, gamma/beta */
    d = rw(2, 4);
    EXPECT(tsr_softmax(ctx, &d, y + 1, y), TSR_ERR_INVALID_ARGUMENT, "softmax: y overlaps x");
    d.x_row_stride = 5;
    EXPECT(tsr_softmax(ctx, &d, y, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    d = rw(2, 4), d.x_dtype = TSR_F16;
    EXPECT(tsr_softmax(ctx, &d, y, y), TSR_ERR_INVALID_ARGUMENT, "y overlaps x");
    d = rw(2, 4);
    EXPECT(tsr_layernorm(ctx, &d, x, y + 4, g, y), TSR_ERR_INVALID_ARGUMENT, "layernorm: y overlaps gamma");
    EXPECT(tsr_layernorm(ctx, &d, x, g, y, y), TSR_ERR_INVALID_ARGUMENT, "layernorm: y overlaps beta");
    EXPECT(tsr_rmsnorm(ctx, &d, x, y + 7, y), TSR_ERR_INVALID_ARGUMENT, "rmsnorm: y overlaps gamma");
    /* the query */
    char why[256];
    d = rw(2, 4), d.epsilon = 0;
    ck_assert_int_eq(tsr_rowwise_supported(ctx, &d, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "rowwise: epsilon (0)"));
    d = rw(2, 4), d.x_dtype = TSR_I8;
    ck_assert_int_eq(tsr_rowwise_supported(ctx, &d, why, sizeof why), TSR_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(tsr_rowwise_supported(NULL, &d, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "ctx is NULL"));
    d = rw(2, 4), d.x_row_stride = 6, d.y_dtype = TSR_BF16;
    ck_assert_int_eq(tsr_rowwise_supported(ctx, &d, why, sizeof why), TSR_OK);
    ck_assert_str_eq(why, "");
    ck_assert(tt_unchanged(y, sizeof y));
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("elementwise");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, unary_vs_libm);
    tcase_add_test(ref, binary_vs_libm);
    tcase_add_test(ref, chain_identities);
    tcase_add_test(ref, broadcasting);
    tcase_add_test(ref, views_and_in_place);
    tcase_add_test(ref, dtypes);
    tcase_add_test(ref, empty_shapes);
    tcase_add_test(ref, softmax_values);
    tcase_add_test(ref, norm_values);
    tcase_add_test(ref, rowwise_strides_dtypes);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, every_context_chains);
    tcase_add_test(dispatch, every_context_all_ops);
    tcase_add_test(dispatch, every_context_rowwise);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_chain_input);
    tcase_add_test(bad, bad_rowwise_input);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
