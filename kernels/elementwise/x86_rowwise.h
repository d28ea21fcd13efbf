/* Softmax, layernorm and rmsnorm rows on x86, one source for the AVX2 and
 * AVX-512 builds: include a simd.h and define ROW_ARCH, ROW_SOFTMAX,
 * ROW_LAYERNORM, ROW_RMSNORM and ROW_FEATURES first.
 *
 * A row is read from memory once: the later passes (softmax: max, sums,
 * output; layernorm: mean, centred variance, output; rmsnorm: mean square,
 * output) find it in L1/L2, so the kernels run at the speed of one read and
 * one write of the tensor. f16/bf16 are converted in registers on load and
 * rounded to nearest even on store. Sums are f32 vector lanes (a tree of
 * VL-wide partial sums), the reference's are double: the difference is a
 * few f32 ulps times log(cols), well inside the suites' tolerance.
 *
 * Edge values as the reference: a NaN or +inf anywhere in a softmax row
 * gives a NaN row (the reference's exp(inf - inf)); a row of -inf gives 0s;
 * -inf entries give exact 0s. Norms let NaN and inf flow through the
 * arithmetic as the reference's does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../arch/x86_avx512/vmath.h"
#include "../../arch/x86_avx512/vdtype.h"
#include "internal.h"

/* One row: whole vectors through the converting loads and stores, the tail
 * in scalars with the same arithmetic. tmp: a per-thread row of f32 that keeps exp(x - max) between the sum and
 * the output pass, so each element pays one exp; NULL recomputes it. */
static inline __attribute__((always_inline)) void softmax_row(const tsr_rowwise_problem *r, int64_t row,
                                                               tsr_dtype xt, tsr_dtype yt, float *tmp) {
    const int64_t C = r->d.cols, C0 = C / VL * VL;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    vf mv = vf_set1(-INFINITY);
    bool bad = false;
    for (int64_t j = 0; j < C0; j += VL) {
        vf x = vf_load_dtype(r->x, xt, xo + j);
        bad |= vf_any_nan_or_posinf(x);
        mv = vf_max(mv, x);
    }
    float m = vf_hmax(mv);
    for (int64_t j = C0; j < C; j++) {
        float x = tsr_load_f(r->x, xt, xo + j);
        if (x != x || x == INFINITY) bad = true;
        else if (x > m) m = x;
    }
    if (bad || m == -INFINITY) {
        const float f = bad ? NAN : 0.0f;
        for (int64_t j = 0; j < C0; j += VL) vf_store_dtype(r->y, yt, yo + j, vf_set1(f));
        for (int64_t j = C0; j < C; j++) tsr_store_f(r->y, yt, yo + j, f);
        return;
    }
    const vf mm = vf_set1(m);
    vf sv = vf_zero();
    for (int64_t j = 0; j < C0; j += VL) {
        vf e = vf_exp_shifted(vf_load_dtype(r->x, xt, xo + j), mm);
        if (tmp) vf_store(tmp + j, e);
        sv = vf_add(sv, e);
    }
    float s = vf_hsum(sv);
    for (int64_t j = C0; j < C; j++) {
        float x = tsr_load_f(r->x, xt, xo + j);
        s += x == -INFINITY ? 0.0f : expf(x - m);
    }
    /* x may be y: each element is read before it is written */
    const vf inv = vf_set1(1.0f / s);
    if (tmp)
        for (int64_t j = 0; j < C0; j += VL) vf_store_dtype(r->y, yt, yo + j, vf_mul(vf_load(tmp + j), inv));
    else
        for (int64_t j = 0; j < C0; j += VL)
            vf_store_dtype(r->y, yt, yo + j, vf_mul(vf_exp_shifted(vf_load_dtype(r->x, xt, xo + j), mm), inv));
    for (int64_t j = C0; j < C; j++) {
        float x = tsr_load_f(r->x, xt, xo + j);
        tsr_store_f(r->y, yt, yo + j, (x == -INFINITY ? 0.0f : expf(x - m)) * (1.0f / s));
    }
}

static inline __attribute__((always_inline)) void norm_row(const tsr_rowwise_problem *r, int64_t row, bool center,
                                                            tsr_dtype xt, tsr_dtype yt) {
    const int64_t C = r->d.cols, C0 = C / VL * VL;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    float mean = 0.0f;
    if (center) {
        vf sv = vf_zero();
        for (int64_t j = 0; j < C0; j += VL) sv = vf_add(sv, vf_load_dtype(r->x, xt, xo + j));
        float s = vf_hsum(sv);
        for (int64_t j = C0; j < C; j++) s += tsr_load_f(r->x, xt, xo + j);
        mean = s / (float)C;
    }
    const vf mv = vf_set1(mean);
    vf qv = vf_zero();
    for (int64_t j = 0; j < C0; j += VL) {
        vf d = vf_sub(vf_load_dtype(r->x, xt, xo + j), mv);
        qv = vf_fma(d, d, qv);
    }
    float q = vf_hsum(qv);
    for (int64_t j = C0; j < C; j++) {
        float d = tsr_load_f(r->x, xt, xo + j) - mean;
        q += d * d;
    }
    const float inv = (float)(1.0 / sqrt((double)q / (double)C + (double)r->d.epsilon));
    const vf iv = vf_set1(inv);
    const float *g = r->gamma, *b = center ? r->beta : NULL;
    for (int64_t j = 0; j < C0; j += VL) {
        vf v = vf_mul(vf_sub(vf_load_dtype(r->x, xt, xo + j), mv), iv);
        if (g) v = vf_mul(v, vf_load(g + j));
        if (b) v = vf_add(v, vf_load(b + j));
        vf_store_dtype(r->y, yt, yo + j, v);
    }
    for (int64_t j = C0; j < C; j++) {
        float v = (tsr_load_f(r->x, xt, xo + j) - mean) * inv;
        if (g) v *= g[j];
        if (b) v += b[j];
        tsr_store_f(r->y, yt, yo + j, v);
    }
}

/* Specialised per (x, y) dtype so the converting loads and stores inline. */
#define ROW_CASE(XT, YT)                                                                              \
    if (xt == XT && yt == YT) {                                                                         \
        _Pragma("omp parallel num_threads(threads) if (threads > 1)") {                                 \
            float *tmp = op == TSR_OP_SOFTMAX ? aligned_alloc(64, tmp_bytes) : NULL;                     \
            _Pragma("omp for schedule(static)") for (int64_t row = 0; row < r->d.rows; row++) {          \
                if (op == TSR_OP_SOFTMAX) softmax_row(r, row, XT, YT, tmp);                             \
                else norm_row(r, row, op == TSR_OP_LAYERNORM, XT, YT);                                  \
            }                                                                                           \
            free(tmp);                                                                                  \
        }                                                                                               \
        return TSR_OK;                                                                                  \
    }

static tsr_status row_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_rowwise_problem *r = &p->u.rowwise;
    const tsr_op op = p->op;
    const tsr_dtype xt = r->d.x_dtype, yt = r->d.y_dtype;
    const int threads = tsr_threads_for(ctx, (double)r->d.rows * (double)r->d.cols, 65536);
    const size_t tmp_bytes = (size_t)((r->d.cols * (int64_t)sizeof(float) + 63) / 64 * 64);
    ROW_CASE(TSR_F32, TSR_F32)
    ROW_CASE(TSR_F32, TSR_F16)
    ROW_CASE(TSR_F32, TSR_BF16)
    ROW_CASE(TSR_F16, TSR_F32)
    ROW_CASE(TSR_F16, TSR_F16)
    ROW_CASE(TSR_F16, TSR_BF16)
    ROW_CASE(TSR_BF16, TSR_F32)
    ROW_CASE(TSR_BF16, TSR_F16)
    ROW_CASE(TSR_BF16, TSR_BF16)
    return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s.%s: dtypes", tsr_op_name(op), ROW_ARCH);
}

static bool row_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    if (ctx->backend != TSR_BACKEND_CPU || (ctx->cpu_features & ROW_FEATURES) != ROW_FEATURES)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s.%s needs a CPU with its ISA", tsr_op_name(p->op), ROW_ARCH),
               false;
    const tsr_rowwise_desc *d = &p->u.rowwise.d;
    if (!tsr_is_float_dtype(d->x_dtype) || !tsr_is_float_dtype(d->y_dtype))
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s.%s: f32/f16/bf16 only", tsr_op_name(p->op), ROW_ARCH), false;
    /* in place with a wider y: a vector store would land on x not yet read */
    if (p->u.rowwise.x == p->u.rowwise.y && tsr_dtype_size(d->y_dtype) > tsr_dtype_size(d->x_dtype))
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s.%s: in place into a wider dtype", tsr_op_name(p->op),
                       ROW_ARCH), false;
    return true;
}

#define ROW_KERNEL(sym, kname, kop) \
    const tsr_kernel sym = {.name = kname, .op = kop, .backend = TSR_BACKEND_CPU, .arch = ROW_ARCH, \
                            .supports = row_supports, .run = row_run}

ROW_KERNEL(ROW_SOFTMAX, "softmax." ROW_ARCH, TSR_OP_SOFTMAX);
ROW_KERNEL(ROW_LAYERNORM, "layernorm." ROW_ARCH, TSR_OP_LAYERNORM);
ROW_KERNEL(ROW_RMSNORM, "rmsnorm." ROW_ARCH, TSR_OP_RMSNORM);
