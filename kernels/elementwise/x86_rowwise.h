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
#include "internal.h"

/* VL values of dtype t at p (+ index) as f32. */
static inline __attribute__((always_inline)) vf row_load(const void *p, tsr_dtype t, int64_t i) {
    if (t == TSR_F32) return vf_load((const float *)p + i);
    const uint16_t *h = (const uint16_t *)p + i;
#if VL == 16
    __m256i raw = _mm256_loadu_si256((const __m256i *)h);
    return t == TSR_F16 ? _mm512_cvtph_ps(raw) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
#else
    __m128i raw = _mm_loadu_si128((const __m128i *)h);
    return t == TSR_F16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
#endif
}

/* Eight f32 as bf16, rounded to nearest even, NaN kept quiet (tsr_f32_to_bf16). */
static inline __m128i bf16_from_8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, q, nan);
    __m256i packed = _mm256_packus_epi32(r, r); /* per 128-bit lane: 4 values twice */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

static inline __attribute__((always_inline)) void row_store(void *p, tsr_dtype t, int64_t i, vf v) {
    if (t == TSR_F32) {
        vf_store((float *)p + i, v);
        return;
    }
    uint16_t *h = (uint16_t *)p + i;
#if VL == 16
    __m256 lo = _mm512_castps512_ps256(v), hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
#else
    __m256 lo = v;
#endif
    if (t == TSR_F16) _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    else _mm_storeu_si128((__m128i *)h, bf16_from_8(lo));
#if VL == 16
    if (t == TSR_F16) _mm_storeu_si128((__m128i *)(h + 8), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
    else _mm_storeu_si128((__m128i *)(h + 8), bf16_from_8(hi));
#endif
}

static inline float lanes_sum(vf v) {
    float t[VL], s = 0.0f;
    vf_store(t, v);
    for (int i = 0; i < VL; i++) s += t[i];
    return s;
}

static inline float lanes_max(vf v) {
    float t[VL], m = -INFINITY;
    vf_store(t, v);
    for (int i = 0; i < VL; i++) m = t[i] > m ? t[i] : m;
    return m;
}

static inline bool any_nan_or_posinf(vf v) {
#if VL == 16
    return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) || _mm512_cmp_ps_mask(v, vf_set1(INFINITY), _CMP_EQ_OQ);
#else
    return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),
                                           _mm256_cmp_ps(v, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ))) != 0;
#endif
}

/* exp(x - m), exactly 0 where x is -inf (vf_exp clamps its argument). */
static inline vf exp_shifted(vf x, vf m) {
    vf e = vf_exp(vf_sub(x, m));
#if VL == 16
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, vf_set1(-INFINITY), _CMP_EQ_OQ), e, vf_zero());
#else
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ), e);
#endif
}

/* One row: whole vectors through row_load/row_store, the tail in scalars
 * with the same arithmetic. */
/* tmp: a per-thread row of f32 that keeps exp(x - max) between the sum and
 * the output pass, so each element pays one exp; NULL recomputes it. */
static inline __attribute__((always_inline)) void softmax_row(const tsr_rowwise_problem *r, int64_t row,
                                                               tsr_dtype xt, tsr_dtype yt, float *tmp) {
    const int64_t C = r->d.cols, C0 = C / VL * VL;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    vf mv = vf_set1(-INFINITY);
    bool bad = false;
    for (int64_t j = 0; j < C0; j += VL) {
        vf x = row_load(r->x, xt, xo + j);
        bad |= any_nan_or_posinf(x);
        mv = vf_max(mv, x);
    }
    float m = lanes_max(mv);
    for (int64_t j = C0; j < C; j++) {
        float x = tsr_load_f(r->x, xt, xo + j);
        if (x != x || x == INFINITY) bad = true;
        else if (x > m) m = x;
    }
    if (bad || m == -INFINITY) {
        const float f = bad ? NAN : 0.0f;
        for (int64_t j = 0; j < C0; j += VL) row_store(r->y, yt, yo + j, vf_set1(f));
        for (int64_t j = C0; j < C; j++) tsr_store_f(r->y, yt, yo + j, f);
        return;
    }
    const vf mm = vf_set1(m);
    vf sv = vf_zero();
    for (int64_t j = 0; j < C0; j += VL) {
        vf e = exp_shifted(row_load(r->x, xt, xo + j), mm);
        if (tmp) vf_store(tmp + j, e);
        sv = vf_add(sv, e);
    }
    float s = lanes_sum(sv);
    for (int64_t j = C0; j < C; j++) {
        float x = tsr_load_f(r->x, xt, xo + j);
        s += x == -INFINITY ? 0.0f : expf(x - m);
    }
    /* x may be y: each element is read before it is written */
    const vf inv = vf_set1(1.0f / s);
    if (tmp)
        for (int64_t j = 0; j < C0; j += VL) row_store(r->y, yt, yo + j, vf_mul(vf_load(tmp + j), inv));
    else
        for (int64_t j = 0; j < C0; j += VL)
            row_store(r->y, yt, yo + j, vf_mul(exp_shifted(row_load(r->x, xt, xo + j), mm), inv));
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
        for (int64_t j = 0; j < C0; j += VL) sv = vf_add(sv, row_load(r->x, xt, xo + j));
        float s = lanes_sum(sv);
        for (int64_t j = C0; j < C; j++) s += tsr_load_f(r->x, xt, xo + j);
        mean = s / (float)C;
    }
    const vf mv = vf_set1(mean);
    vf qv = vf_zero();
    for (int64_t j = 0; j < C0; j += VL) {
        vf d = vf_sub(row_load(r->x, xt, xo + j), mv);
        qv = vf_fma(d, d, qv);
    }
    float q = lanes_sum(qv);
    for (int64_t j = C0; j < C; j++) {
        float d = tsr_load_f(r->x, xt, xo + j) - mean;
        q += d * d;
    }
    const float inv = (float)(1.0 / sqrt((double)q / (double)C + (double)r->d.epsilon));
    const vf iv = vf_set1(inv);
    const float *g = r->gamma, *b = center ? r->beta : NULL;
    for (int64_t j = 0; j < C0; j += VL) {
        vf v = vf_mul(vf_sub(row_load(r->x, xt, xo + j), mv), iv);
        if (g) v = vf_mul(v, vf_load(g + j));
        if (b) v = vf_add(v, vf_load(b + j));
        row_store(r->y, yt, yo + j, v);
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
        _Pragma("omp parallel num_threads(threads)") {                                                  \
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
    int threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
    /* a row is ~C elements of work: no thread for less than ~64K elements */
    int64_t want = r->d.rows * r->d.cols / 65536 + 1;
    if (want < threads) threads = (int)want;
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
