/* Softmax, layernorm and rmsnorm rows on x86, one source for the AVX2,
 * AVX-512 and AVX-512 with BF16 builds: include a simd.h and define
 * ROW_ARCH, ROW_SOFTMAX, ROW_LAYERNORM, ROW_RMSNORM and ROW_FEATURES
 * first.
 *
 * A row is read from memory once: the later passes (softmax: max, exp and
 * sum, output; norms: sums, output) find it in L1/L2, so the kernels run
 * at the speed of one read and one write of the tensor if the compute of
 * the cached passes overlaps the memory traffic: a later pass prefetches
 * the next row, so the memory keeps streaming while the row in cache is
 * computed (a core otherwise sends no requests during those passes, and
 * bf16 rows, with half the bytes per element, spend more time there than
 * in the read).
 * Each pass keeps RV independent vector accumulators, so the adds and
 * maxes run at throughput rather than at the latency of one chain; a row's
 * last partial vector is loaded and stored under a mask (AVX-512) or
 * through a buffer (AVX2), so odd lengths stay vectorised. f16/bf16 are
 * converted in registers on load and rounded to nearest even on store.
 * Sums are f32 vector lanes (a tree of partial sums), the reference's are
 * double: the difference is a few f32 ulps times log(cols), well inside
 * the suites' tolerance.
 *
 * Edge values as the reference: a NaN or +inf anywhere in a softmax row
 * gives a NaN row (the reference's exp(inf - inf)); a row of -inf gives 0s;
 * -inf entries give exact 0s. The vector passes need not look for them:
 * a NaN entry makes its exp, hence the sum and every output, NaN (the
 * vector max may drop values from a NaN's lane: whatever the exps of the
 * rest become, the sum stays NaN); a +inf makes the max +inf and its own
 * exp(inf - inf) NaN, with the same effect. Only a max of -inf (a row of
 * -inf, maybe with NaNs) needs a scalar look. Norms let NaN and inf flow
 * through the arithmetic as the reference's does. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../../arch/x86_avx2/prefetch.h"

#include "../../arch/x86_avx512/vmath.h"
#include "../../arch/x86_avx512/vdtype.h"
#include "internal.h"
#include "../../arch/x86_avx512/vexp.h"

#define RV 4          /* vectors per step of a pass */
#define RSTEP (RV * VL)
_Static_assert(RV == 4, "max4 and add4 fold four accumulators");
#define ROW_STACK_COLS 8192 /* softmax rows up to this keep exp(x - max) on the stack */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The lines of [p, p + bytes) towards L1, for a pass that reads them later. */
ALWAYS_INLINE void prefetch_lines(const char *p, int64_t bytes) {
    for (int64_t l = 0; l < bytes; l += 64) tsr_prefetch_l1(p + l);
}

/* y stored past the caches (vf_streams); run_rows_scratch fences once a
 * thread's rows are done. */
ALWAYS_INLINE bool streams_y(const tsr_rowwise_problem *r, tsr_dtype yt) {
    return vf_streams(r->d.rows * r->d.y_row_stride * (int64_t)tsr_dtype_size(yt));
}

/* The row after this one, fetched by a middle pass a chunk at a time;
 * NULL after a thread's last row. */
typedef struct next_row {
    const char *p;
    int es; /* bytes per element */
} next_row;

ALWAYS_INLINE void prefetch_next(next_row nx, int64_t j, int64_t elems) {
    if (nx.p) prefetch_lines(nx.p + j * nx.es, elems * nx.es);
}

ALWAYS_INLINE int tail_of(int64_t left) { return left < VL ? (int)left : VL; }

ALWAYS_INLINE vf max4(const vf *v) { return vf_max(vf_max(v[0], v[1]), vf_max(v[2], v[3])); }
ALWAYS_INLINE vf add4(const vf *v) { return vf_add(vf_add(v[0], v[1]), vf_add(v[2], v[3])); }

/* A row whose max is -inf: NaN if it holds a NaN, else (all -inf) 0s. */
static void softmax_edge_row(const tsr_rowwise_problem *r, int64_t xo, int64_t yo) {
    bool nan = false;
    for (int64_t j = 0; j < r->d.cols && !nan; j++) nan = isnan(tsr_load_f(r->x, r->d.x_dtype, xo + j));
    for (int64_t j = 0; j < r->d.cols; j++) tsr_store_f(r->y, r->d.y_dtype, yo + j, nan ? NAN : 0.0f);
}

/* RV vectors of x from element i on, widened to f32. any_order: in an
 * order only reductions and lane-wise steps may use, bf16 then coming out
 * evens then odds (vf_load_bf16_evens_odds). */
ALWAYS_INLINE void load_rv(const void *x, tsr_dtype xt, int64_t i, bool any_order, vf *v) {
    if (any_order && xt == TSR_BF16)
        for (int u = 0; u < RV; u += 2) vf_load_bf16_evens_odds(x, i + u * VL, &v[u], &v[u + 1]);
    else
        for (int u = 0; u < RV; u++) v[u] = vf_load_dtype(x, xt, i + u * VL);
}

/* exp(d), d = x - max: into a 16-bit y with AVX-512 by the degree-4
 * polynomial (its 2.8e-6, and the sum's, are far below y's rounding;
 * bf16 softmax +10% in cache, +6% past the caches on Zen 4). The cost:
 * 0.025% of bf16 results and 0.07% of f16 ones land on the neighbour of
 * the reference rounded, none further (test softmax_16bit_outputs). */
ALWAYS_INLINE vf softmax_exp(vf d, tsr_dtype yt) {
    return VL == 16 && yt != TSR_F32 ? exp_unchecked_narrow(d) : exp_unchecked(d); /* measured on AVX-512 alone */
}

/* e: f32 scratch of cols rounded up to VL, which keeps exp(x - max)
 * between the sum and the output pass, so each element pays one exp.
 * bf16 -> bf16 rows keep their evens and odds apart from load to store
 * (vf_load_bf16_evens_odds, vf_put_bf16_evens_odds), e included; a finite
 * sum means finite outputs (each exp <= 1), whose bf16 stores skip the NaN
 * test. */
ALWAYS_INLINE void softmax_row(const tsr_rowwise_problem *r, int64_t row, tsr_dtype xt, tsr_dtype yt, float *e,
                               next_row nx, bool stream) {
    const int64_t C = r->d.cols, CV = C / RSTEP * RSTEP;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    const bool pairs = xt == TSR_BF16 && yt == TSR_BF16;
    vf acc[RV];
    for (int u = 0; u < RV; u++) acc[u] = vf_set1(-INFINITY);
    for (int64_t j = 0; j < CV; j += RSTEP) {
        vf v[RV];
        load_rv(r->x, xt, xo + j, true, v);
        for (int u = 0; u < RV; u++) acc[u] = vf_max(acc[u], v[u]);
    }
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        acc[0] = vf_max(acc[0], vf_fill_past(vf_load_n_dtype(r->x, xt, xo + j, n), n, vf_set1(-INFINITY)));
    }
    const float m = vf_hmax(max4(acc));
    if (m == -INFINITY) {
        softmax_edge_row(r, xo, yo);
        return;
    }
    const vf mm = vf_set1(m);
    for (int u = 0; u < RV; u++) acc[u] = vf_zero();
    for (int64_t j = 0; j < CV; j += RSTEP) {
        prefetch_next(nx, j, RSTEP);
        vf v[RV];
        load_rv(r->x, xt, xo + j, pairs, v); /* e keeps x's order: pairs stores it back as it came */
        for (int u = 0; u < RV; u++) {
            const vf ev = softmax_exp(vf_sub(v[u], mm), yt);
            vf_store(e + j + u * VL, ev);
            acc[u] = vf_add(acc[u], ev);
        }
    }
    prefetch_next(nx, CV, C - CV);
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        const vf ev = vf_fill_past(softmax_exp(vf_sub(vf_load_n_dtype(r->x, xt, xo + j, n), mm), yt), n, vf_zero());
        vf_store(e + j, ev);
        acc[0] = vf_add(acc[0], ev);
    }
    /* x may be y: every element was read above */
    const float sum = vf_hsum(add4(acc));
    const vf inv = vf_set1(1.0f / sum);
    const bool maybe_nan = !isfinite(sum);
    if (pairs)
        for (int64_t j = 0; j < CV; j += 2 * VL)
            vf_put_bf16_evens_odds(r->y, yo + j, vf_mul(vf_load(e + j), inv), vf_mul(vf_load(e + j + VL), inv), stream,
                                   maybe_nan);
    else
        for (int64_t j = 0; j < CV; j += VL)
            vf_put_dtype_nan(r->y, yt, yo + j, vf_mul(vf_load(e + j), inv), stream, maybe_nan);
    for (int64_t j = CV; j < C; j += VL) vf_store_n_dtype(r->y, yt, yo + j, vf_mul(vf_load(e + j), inv), tail_of(C - j));
}

/* v * g + b over one vector, each of g and b maybe NULL (1 and 0). */
ALWAYS_INLINE vf affine(vf v, const float *g, const float *b) {
    if (g && b) return vf_fma(v, vf_load(g), vf_load(b));
    if (g) return vf_mul(v, vf_load(g));
    if (b) return vf_add(v, vf_load(b));
    return v;
}

/* True when norm_row keeps bf16 in evens-and-odds order from load to store
 * on its finite rows, with gamma and beta split alike into a thread's
 * scratch of 2 x cols floats (split_params). */
static inline bool norm_splits(tsr_op op, tsr_dtype xt, tsr_dtype yt) {
    return op != TSR_OP_SOFTMAX && xt == TSR_BF16 && yt == TSR_BF16;
}

/* gamma, then beta, over the row's whole steps (cols rounded down to RSTEP)
 * into eo and eo + that length, evens and odds of each 2 VL apart. */
static void split_params(const tsr_rowwise_problem *r, tsr_op op, float *eo) {
    const int64_t CV = r->d.cols / RSTEP * RSTEP;
    const float *src[2] = {r->gamma, op == TSR_OP_LAYERNORM ? r->beta : NULL};
    for (int a = 0; a < 2; a++)
        for (int64_t j = 0; src[a] && j < CV; j += 2 * VL) {
            vf even, odd;
            vf_load_evens_odds(src[a] + j, &even, &odd);
            vf_store(eo + a * CV + j, even);
            vf_store(eo + a * CV + j + VL, odd);
        }
}

/* Layernorm (center) or rmsnorm: a pass over the row for its sums, one
 * more for the output. The layernorm sums are of d = x - x0 and d^2, with
 * x0 the mean of the row's first VL values: rows that sit far from 0
 * (1e4 +- 5) have x - x0 exact (the two lie within a factor 2), where x -
 * mean, with the mean rounded to an f32 near 1e4, would lose digits. The
 * variance mean(d^2) - m^2, m = mean(d), cancels only as far as m^2 is a
 * part of mean(d^2): past 3/4 (x0 further than 1.7 standard deviations
 * from the mean, when the first values are not like the rest) it could
 * lose more than 2 bits, and a second pass sums ((x - x0) - m)^2 instead.
 * Output: ((x - x0) - m) / sqrt(var + eps) * gamma + beta. */
ALWAYS_INLINE void norm_row(const tsr_rowwise_problem *r, int64_t row, bool center, tsr_dtype xt, tsr_dtype yt,
                            next_row nx, bool stream, bool params_finite, const float *eo) {
    const int64_t C = r->d.cols, CV = C / RSTEP * RSTEP;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    vf x0 = vf_zero();
    if (center) x0 = vf_set1(vf_hsum(vf_load_n_dtype(r->x, xt, xo, tail_of(C))) / (float)tail_of(C));
    vf s1[RV], s2[RV];
    for (int u = 0; u < RV; u++) s1[u] = s2[u] = vf_zero();
    for (int64_t j = 0; j < CV; j += RSTEP) {
        vf v[RV];
        load_rv(r->x, xt, xo + j, true, v);
        for (int u = 0; u < RV; u++) {
            const vf d = center ? vf_sub(v[u], x0) : v[u];
            if (center) s1[u] = vf_add(s1[u], d);
            s2[u] = vf_fma(d, d, s2[u]);
        }
    }
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        const vf v = vf_load_n_dtype(r->x, xt, xo + j, n);
        const vf d = center ? vf_fill_past(vf_sub(v, x0), n, vf_zero()) : v;
        if (center) s1[0] = vf_add(s1[0], d);
        s2[0] = vf_fma(d, d, s2[0]);
    }
    float sums[4];
    vf_hsum4(add4(s1), add4(s2), vf_zero(), vf_zero(), sums);
    const double m = center ? (double)sums[0] / (double)C : 0.0, ms = (double)sums[1] / (double)C;
    double var = ms - m * m;
    const vf mv = vf_set1((float)m);
#define CENTRED(x) (center ? vf_sub(vf_sub(x, x0), mv) : (x))
    if (center && m * m > 0.75 * ms) {
        for (int u = 0; u < RV; u++) s2[u] = vf_zero();
        for (int64_t j = 0; j < C; j += VL) {
            const int n = tail_of(C - j);
            const vf d = vf_fill_past(CENTRED(vf_load_n_dtype(r->x, xt, xo + j, n)), n, vf_zero());
            s2[0] = vf_fma(d, d, s2[0]);
        }
        var = (double)vf_hsum(s2[0]) / (double)C;
    }
    if (var < 0) var = 0; /* ms - m^2 rounded below 0: a row of equal values */
    const vf iv = vf_set1((float)(1.0 / sqrt(var + (double)r->d.epsilon)));
    /* Finite sums mean a finite row, and var >= mean(d^2) / 4 bounds
     * |(x - x0 - m) * iv| by about 2 sqrt(C): with finite gamma and beta no
     * output lane is NaN (an overflow is inf), so bf16 stores skip their
     * NaN test. */
    const bool maybe_nan = !(params_finite && isfinite(sums[0]) && isfinite(sums[1]));
    const float *g = r->gamma, *b = center ? r->beta : NULL;
    if (xt == TSR_BF16 && yt == TSR_BF16 && !maybe_nan) {
        /* evens and odds (vf_load_bf16_evens_odds) through to the store,
         * with gamma and beta split alike once per thread (eo) */
        const float *ge = g ? eo : NULL, *be = b ? eo + CV : NULL;
        for (int64_t j = 0; j < CV; j += RSTEP) {
            prefetch_next(nx, j, RSTEP);
            for (int u = 0; u < RV; u += 2) {
                const int64_t k = j + u * VL;
                vf v[2];
                vf_load_bf16_evens_odds(r->x, xo + k, &v[0], &v[1]);
                for (int h = 0; h < 2; h++)
                    v[h] = affine(vf_mul(CENTRED(v[h]), iv), ge ? ge + k + h * VL : NULL, be ? be + k + h * VL : NULL);
                vf_put_bf16_evens_odds(r->y, yo + k, v[0], v[1], stream, false);
            }
        }
    } else {
        for (int64_t j = 0; j < CV; j += RSTEP) {
            prefetch_next(nx, j, RSTEP);
            for (int u = 0; u < RV; u++) {
                const int64_t k = j + u * VL;
                const vf v = vf_mul(CENTRED(vf_load_dtype(r->x, xt, xo + k)), iv);
                vf_put_dtype_nan(r->y, yt, yo + k, affine(v, g ? g + k : NULL, b ? b + k : NULL), stream, maybe_nan);
            }
        }
    }
    prefetch_next(nx, CV, C - CV);
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        vf v = vf_mul(CENTRED(vf_load_n_dtype(r->x, xt, xo + j, n)), iv);
        if (g && b) v = vf_fma(v, vf_load_n(g + j, n), vf_load_n(b + j, n));
        else if (g) v = vf_mul(v, vf_load_n(g + j, n));
        else if (b) v = vf_add(v, vf_load_n(b + j, n));
        vf_store_n_dtype(r->y, yt, yo + j, v, n);
    }
#undef CENTRED
}

/* Rows [r0, r1) of one thread, specialised per (x, y) dtype so the
 * converting loads and stores inline. */
ALWAYS_INLINE void rows_xy(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1, tsr_dtype xt,
                           tsr_dtype yt, float *e, bool params_finite) {
    const int es = (int)tsr_dtype_size(xt);
    const bool stream = streams_y(r, yt);
    /* one loop per op, so norm_row's center is a constant in each */
#define EACH_ROW(call)                                                                                     \
    for (int64_t row = r0; row < r1; row++) {                                                              \
        const next_row nx = {row + 1 < r1 ? (const char *)r->x + (row + 1) * r->d.x_row_stride * es : NULL, es}; \
        call;                                                                                              \
    }
    if (op == TSR_OP_SOFTMAX) EACH_ROW(softmax_row(r, row, xt, yt, e, nx, stream))
    else if (op == TSR_OP_LAYERNORM) EACH_ROW(norm_row(r, row, true, xt, yt, nx, stream, params_finite, e))
    else EACH_ROW(norm_row(r, row, false, xt, yt, nx, stream, params_finite, e))
#undef EACH_ROW
}

#define ROW_CASE(XT, YT)                                  \
    if (xt == XT && yt == YT) {                           \
        rows_xy(r, op, r0, r1, XT, YT, e, params_finite); \
        return;                                           \
    }

static void run_rows(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1, float *e, bool params_finite) {
    const tsr_dtype xt = r->d.x_dtype, yt = r->d.y_dtype;
    ROW_CASE(TSR_F32, TSR_F32);
    ROW_CASE(TSR_F32, TSR_F16);
    ROW_CASE(TSR_F32, TSR_BF16);
    ROW_CASE(TSR_F16, TSR_F32);
    ROW_CASE(TSR_F16, TSR_F16);
    ROW_CASE(TSR_F16, TSR_BF16);
    ROW_CASE(TSR_BF16, TSR_F32);
    ROW_CASE(TSR_BF16, TSR_F16);
    ROW_CASE(TSR_BF16, TSR_BF16);
}

/* Rows [r0, r1) with their scratch (softmax's exps, or the split gamma
 * and beta of norm_splits) on the stack when it fits (no allocation on
 * small calls), else on the heap. */
static tsr_status run_rows_scratch(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1,
                                   bool params_finite) {
    const bool split = norm_splits(op, r->d.x_dtype, r->d.y_dtype) && params_finite;
    const int64_t need = op == TSR_OP_SOFTMAX ? (r->d.cols + VL - 1) / VL * VL : split ? 2 * r->d.cols : 0;
    if (need == 0) {
        run_rows(r, op, r0, r1, NULL, params_finite);
    } else if (need <= ROW_STACK_COLS) {
        float e[ROW_STACK_COLS] __attribute__((aligned(64)));
        if (split) split_params(r, op, e);
        run_rows(r, op, r0, r1, e, params_finite);
    } else {
        float *e = aligned_alloc(64, ((size_t)need * sizeof(float) + 63) / 64 * 64); /* a multiple of the alignment */
        if (!e) return TSR_ERR_OUT_OF_MEMORY;
        if (split) split_params(r, op, e);
        run_rows(r, op, r0, r1, e, params_finite);
        free(e);
    }
    if (streams_y(r, r->d.y_dtype)) _mm_sfence(); /* the streamed stores, before anyone reads y */
    return TSR_OK;
}

/* No NaN or inf in v[0..n) (v NULL: none). */
static bool all_finite(const float *v, int64_t n) {
    if (!v) return true;
    int64_t j = 0;
    for (; j + VL <= n; j += VL) /* |v| not <= FLT_MAX: inf, or NaN (unordered) */
        if (vf_any(vf_is(vf_copysign(vf_load(v + j), vf_zero()), vf_set1(FLT_MAX), _CMP_NLE_UQ))) return false;
    for (; j < n; j++)
        if (!isfinite(v[j])) return false;
    return true;
}

static tsr_status row_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_rowwise_problem *r = &p->u.rowwise;
    const tsr_op op = p->op;
    if (!tsr_is_float_dtype(r->d.x_dtype) || !tsr_is_float_dtype(r->d.y_dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s.%s: dtypes", tsr_op_name(op), ROW_ARCH);
    const int threads = tsr_threads_for(ctx, (double)r->d.rows * (double)r->d.cols, 65536);
    /* the norms' bf16 stores skip the NaN test on finite rows if these are finite */
    const bool params_finite = op != TSR_OP_SOFTMAX && r->d.y_dtype == TSR_BF16 && all_finite(r->gamma, r->d.cols) &&
                               all_finite(op == TSR_OP_LAYERNORM ? r->beta : NULL, r->d.cols);
    /* one thread: no parallel region (libgomp's costs a futex call even
     * when it runs alone, a microsecond on small rows) */
    tsr_status st = TSR_OK;
    if (threads <= 1) st = run_rows_scratch(r, op, 0, r->d.rows, params_finite);
    else {
#pragma omp parallel num_threads(threads)
        {
            /* contiguous rows per thread, so each prefetches its own next row */
            const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num(), R = r->d.rows;
            const tsr_status ts = run_rows_scratch(r, op, R * t / nt, R * (t + 1) / nt, params_finite);
            if (ts != TSR_OK) {
#pragma omp atomic write
                st = ts;
            }
        }
    }
    return st == TSR_OK ? TSR_OK : tsr_fail(st, "%s.%s: out of memory for a row of scratch", tsr_op_name(op), ROW_ARCH);
}

static bool row_supports(const tsr_problem *p, const tsr_context *ctx, char *why, size_t n) {
    (void)ctx; /* its backend and ISA: checked by the core first (tsr_kernel_supports) */
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
                            .supports = row_supports, .run = row_run, .cpu_features = ROW_FEATURES}

ROW_KERNEL(ROW_SOFTMAX, "softmax." ROW_ARCH, TSR_OP_SOFTMAX);
ROW_KERNEL(ROW_LAYERNORM, "layernorm." ROW_ARCH, TSR_OP_LAYERNORM);
ROW_KERNEL(ROW_RMSNORM, "rmsnorm." ROW_ARCH, TSR_OP_RMSNORM);
