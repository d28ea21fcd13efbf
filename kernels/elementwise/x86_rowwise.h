/* Softmax, layernorm and rmsnorm rows on x86, one source for the AVX2 and
 * AVX-512 builds: include a simd.h and define ROW_ARCH, ROW_SOFTMAX,
 * ROW_LAYERNORM, ROW_RMSNORM and ROW_FEATURES first.
 *
 * A row is read from memory once: the later passes (softmax: max, exp and
 * sum, output; layernorm: mean, centred variance, output; rmsnorm: mean
 * square, output) find it in L1/L2, so the kernels run at the speed of one
 * read and one write of the tensor if the compute of the cached passes
 * overlaps the memory traffic: the middle pass prefetches the next row, so
 * the memory keeps streaming while the row in cache is computed (a core
 * otherwise sends no requests during those passes, and bf16 rows, with
 * half the bytes per element, spend more time there than in the read).
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

/* e: f32 scratch of cols rounded up to VL, which keeps exp(x - max)
 * between the sum and the output pass, so each element pays one exp. */
ALWAYS_INLINE void softmax_row(const tsr_rowwise_problem *r, int64_t row, tsr_dtype xt, tsr_dtype yt, float *e,
                               next_row nx, bool stream) {
    const int64_t C = r->d.cols, CV = C / RSTEP * RSTEP;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    vf acc[RV];
    for (int u = 0; u < RV; u++) acc[u] = vf_set1(-INFINITY);
    for (int64_t j = 0; j < CV; j += RSTEP)
        for (int u = 0; u < RV; u++) acc[u] = vf_max(acc[u], vf_load_dtype(r->x, xt, xo + j + u * VL));
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
        for (int u = 0; u < RV; u++) {
            const vf ev = exp_nonpos(vf_sub(vf_load_dtype(r->x, xt, xo + j + u * VL), mm));
            vf_store(e + j + u * VL, ev);
            acc[u] = vf_add(acc[u], ev);
        }
    }
    prefetch_next(nx, CV, C - CV);
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        const vf ev = vf_fill_past(exp_nonpos(vf_sub(vf_load_n_dtype(r->x, xt, xo + j, n), mm)), n, vf_zero());
        vf_store(e + j, ev);
        acc[0] = vf_add(acc[0], ev);
    }
    /* x may be y: every element was read above */
    const vf inv = vf_set1(1.0f / vf_hsum(add4(acc)));
    for (int64_t j = 0; j < CV; j += RSTEP)
        for (int u = 0; u < RV; u++) vf_put_dtype(r->y, yt, yo + j + u * VL, vf_mul(vf_load(e + j + u * VL), inv), stream);
    for (int64_t j = CV; j < C; j += VL) vf_store_n_dtype(r->y, yt, yo + j, vf_mul(vf_load(e + j), inv), tail_of(C - j));
}

/* Layernorm (center) or rmsnorm. The centred values are (x - x0) - m,
 * with x0 the row's first value and m = mean - x0 = sum(x - x0) / C: x - x0
 * is exact for values near each other and m is small, so rows that sit
 * far from 0 (1e4 +- 5) keep the digits that x - mean, with the mean
 * rounded to an f32 near 1e4, would lose. */
ALWAYS_INLINE void norm_row(const tsr_rowwise_problem *r, int64_t row, bool center, tsr_dtype xt, tsr_dtype yt,
                            next_row nx, bool stream) {
    const int64_t C = r->d.cols, CV = C / RSTEP * RSTEP;
    const int64_t xo = row * r->d.x_row_stride, yo = row * r->d.y_row_stride;
    vf acc[RV];
    const vf x0 = vf_set1(center ? tsr_load_f(r->x, xt, xo) : 0.0f);
    float m = 0.0f;
    if (center) {
        for (int u = 0; u < RV; u++) acc[u] = vf_zero();
        for (int64_t j = 0; j < CV; j += RSTEP)
            for (int u = 0; u < RV; u++) acc[u] = vf_add(acc[u], vf_sub(vf_load_dtype(r->x, xt, xo + j + u * VL), x0));
        for (int64_t j = CV; j < C; j += VL) {
            const int n = tail_of(C - j);
            acc[0] = vf_add(acc[0], vf_fill_past(vf_sub(vf_load_n_dtype(r->x, xt, xo + j, n), x0), n, vf_zero()));
        }
        m = vf_hsum(add4(acc)) / (float)C;
    }
    const vf mv = vf_set1(m);
#define CENTRED(x) (center ? vf_sub(vf_sub(x, x0), mv) : (x))
    for (int u = 0; u < RV; u++) acc[u] = vf_zero();
    for (int64_t j = 0; j < CV; j += RSTEP) {
        prefetch_next(nx, j, RSTEP);
        for (int u = 0; u < RV; u++) {
            const vf d = CENTRED(vf_load_dtype(r->x, xt, xo + j + u * VL));
            acc[u] = vf_fma(d, d, acc[u]);
        }
    }
    prefetch_next(nx, CV, C - CV);
    for (int64_t j = CV; j < C; j += VL) {
        const int n = tail_of(C - j);
        const vf d = vf_fill_past(CENTRED(vf_load_n_dtype(r->x, xt, xo + j, n)), n, vf_zero());
        acc[0] = vf_fma(d, d, acc[0]);
    }
    const float q = vf_hsum(add4(acc));
    const vf iv = vf_set1((float)(1.0 / sqrt((double)q / (double)C + (double)r->d.epsilon)));
    const float *g = r->gamma, *b = center ? r->beta : NULL;
    for (int64_t j = 0; j < C; j += VL) {
        const int n = tail_of(C - j);
        vf v = vf_mul(CENTRED(n == VL ? vf_load_dtype(r->x, xt, xo + j) : vf_load_n_dtype(r->x, xt, xo + j, n)), iv);
        if (g) v = vf_mul(v, vf_load_n(g + j, n));
        if (b) v = vf_add(v, vf_load_n(b + j, n));
        if (n == VL) vf_put_dtype(r->y, yt, yo + j, v, stream);
        else vf_store_n_dtype(r->y, yt, yo + j, v, n);
    }
#undef CENTRED
}

/* Rows [r0, r1) of one thread, specialised per (x, y) dtype so the
 * converting loads and stores inline. */
ALWAYS_INLINE void rows_xy(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1, tsr_dtype xt,
                           tsr_dtype yt, float *e) {
    const int es = (int)tsr_dtype_size(xt);
    const bool stream = streams_y(r, yt);
    /* one loop per op, so norm_row's center is a constant in each */
#define EACH_ROW(call)                                                                                     \
    for (int64_t row = r0; row < r1; row++) {                                                              \
        const next_row nx = {row + 1 < r1 ? (const char *)r->x + (row + 1) * r->d.x_row_stride * es : NULL, es}; \
        call;                                                                                              \
    }
    if (op == TSR_OP_SOFTMAX) EACH_ROW(softmax_row(r, row, xt, yt, e, nx, stream))
    else if (op == TSR_OP_LAYERNORM) EACH_ROW(norm_row(r, row, true, xt, yt, nx, stream))
    else EACH_ROW(norm_row(r, row, false, xt, yt, nx, stream))
#undef EACH_ROW
}

#define ROW_CASE(XT, YT)                             \
    if (xt == XT && yt == YT) {                      \
        rows_xy(r, op, r0, r1, XT, YT, e);           \
        return;                                      \
    }

static void run_rows(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1, float *e) {
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

/* Rows [r0, r1) with softmax's scratch on the stack when it fits (no
 * allocation on small calls), else on the heap. */
static tsr_status run_rows_scratch(const tsr_rowwise_problem *r, tsr_op op, int64_t r0, int64_t r1) {
    const int64_t cols = (r->d.cols + VL - 1) / VL * VL;
    if (op != TSR_OP_SOFTMAX) {
        run_rows(r, op, r0, r1, NULL);
    } else if (cols <= ROW_STACK_COLS) {
        float e[ROW_STACK_COLS] __attribute__((aligned(64)));
        run_rows(r, op, r0, r1, e);
    } else {
        float *e = aligned_alloc(64, ((size_t)cols * sizeof(float) + 63) / 64 * 64); /* a multiple of the alignment */
        if (!e) return TSR_ERR_OUT_OF_MEMORY;
        run_rows(r, op, r0, r1, e);
        free(e);
    }
    if (streams_y(r, r->d.y_dtype)) _mm_sfence(); /* the streamed stores, before anyone reads y */
    return TSR_OK;
}

static tsr_status row_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)s;
    const tsr_rowwise_problem *r = &p->u.rowwise;
    const tsr_op op = p->op;
    if (!tsr_is_float_dtype(r->d.x_dtype) || !tsr_is_float_dtype(r->d.y_dtype))
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s.%s: dtypes", tsr_op_name(op), ROW_ARCH);
    const int threads = tsr_threads_for(ctx, (double)r->d.rows * (double)r->d.cols, 65536);
    /* one thread: no parallel region (libgomp's costs a futex call even
     * when it runs alone, a microsecond on small rows) */
    tsr_status st = TSR_OK;
    if (threads <= 1) st = run_rows_scratch(r, op, 0, r->d.rows);
    else {
#pragma omp parallel num_threads(threads)
        {
            /* contiguous rows per thread, so each prefetches its own next row */
            const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num(), R = r->d.rows;
            const tsr_status ts = run_rows_scratch(r, op, R * t / nt, R * (t + 1) / nt);
            if (ts != TSR_OK) {
#pragma omp atomic write
                st = ts;
            }
        }
    }
    return st == TSR_OK ? TSR_OK : tsr_fail(st, "%s.%s: out of memory for a row of scratch", tsr_op_name(op), ROW_ARCH);
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
