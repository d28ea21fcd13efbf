/* tessera-bench --op conv: Tessera's conv2d on the CPU side by side with
 * oneDNN's convolution primitive (its C API) on the same NHWC tensors with
 * the same fused post-ops (bias + relu; bias + residual sum + relu on the
 * layers marked `res`, the residual summed into y in place by both: oneDNN's
 * sum post-op reads dst, Tessera's residual step is given y itself, so both
 * move the same bytes). Two oneDNN entries:
 *  - onednn: weights in the fixed OHWI layout (`acdb`/`gohwi`), the same
 *    user tensor Tessera is given, so any reorder it needs is in its time as
 *    Tessera's per-call packing is in Tessera's;
 *  - onednn_any: weights in the format oneDNN picks (`any`), reordered once
 *    outside the timed loop: oneDNN's best case, prepacked.
 * Tessera runs twice: with the OHWI filter (packed into panels inside every
 * call, layout NHWC) and with the same filter packed once by
 * tsr_conv2d_pack_filter outside the timed loop (layout NHWC-PACKED), the
 * counterpart of onednn_any.
 * Names: conv/<dtype>/<layout>/<shape>_n<batch>/<impl>, gflops = 2*n*p*q*k*r*s*c/groups. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_conv.h"
#include "fill.h"
#include "gbench_shim.h"
#include "peak.h"
#include "shapes.h"
#include "cpu_context.h"
#include "tessera.h"
#ifndef TSR_BENCH_NO_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

enum { IMPL_TESSERA, IMPL_TESSERA_PACKED, IMPL_ONEDNN, IMPL_ONEDNN_ANY, NIMPL };
static const char *const impl_names[NIMPL] = {"tessera", "tessera", "onednn", "onednn_any"};
#define MAX_CONV_CASES 600

typedef struct conv_case {
    int impl;
    tsr_conv2d_desc d;
    int64_t p, q;
    void *x, *w, *y, *res;
    float *bias;
    char shape[64];
    char name[192];
    char error[512];
#ifndef TSR_BENCH_NO_ONEDNN
    dnnl_primitive_t prim;
    dnnl_memory_t mem[5]; /* src, weights, bias, dst, user weights */
    dnnl_exec_arg_t args[4];
#endif
} conv_case;

static conv_case cases[MAX_CONV_CASES];
static int ncases;
static tsr_context *ctx;
static long peak_iters = 2000000;
static int nthreads;
#ifndef TSR_BENCH_NO_ONEDNN
static dnnl_engine_t engine;
static dnnl_stream_t stream;
#endif

static double flops_of(const conv_case *c) {
    const tsr_conv2d_desc *d = &c->d;
    return 2.0 * (double)d->n * (double)c->p * (double)c->q * (double)d->k * (double)(d->r * d->s) *
           (double)(d->c / d->groups);
}

#ifndef TSR_BENCH_NO_ONEDNN
#define DNN(call)                                                                                                     \
    do {                                                                                                              \
        dnnl_status_t s_ = (call);                                                                                    \
        if (s_ != dnnl_success) {                                                                                     \
            snprintf(c->error, sizeof c->error, "oneDNN: %s failed (status %d)", #call, (int)s_);                    \
            return -1;                                                                                                \
        }                                                                                                             \
    } while (0)

static dnnl_data_type_t dnn_type(tsr_dtype t) { return t == TSR_BF16 ? dnnl_bf16 : t == TSR_F16 ? dnnl_f16 : dnnl_f32; }

/* The primitive, its memories (Tessera's buffers where the layout is the same). */
static int onednn_setup(conv_case *c, int any) {
    const tsr_conv2d_desc *d = &c->d;
    const int64_t G = d->groups;
    dnnl_memory_desc_t src, wei, wuser, bias, dst;
    dnnl_dims_t sd = {d->n, d->c, d->h, d->w}, dd = {d->n, d->k, c->p, c->q}, bd = {d->k};
    DNN(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnn_type(d->x_dtype), dnnl_nhwc));
    DNN(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnn_type(d->y_dtype), dnnl_nhwc));
    DNN(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_x));
    if (G == 1) {
        dnnl_dims_t wd = {d->k, d->c, d->r, d->s};
        DNN(dnnl_memory_desc_init_by_tag(&wuser, 4, wd, dnn_type(d->w_dtype), dnnl_ohwi));
        DNN(dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnn_type(d->w_dtype), any ? dnnl_format_tag_any : dnnl_ohwi));
    } else {
        dnnl_dims_t wd = {G, d->k / G, d->c / G, d->r, d->s};
        DNN(dnnl_memory_desc_init_by_tag(&wuser, 5, wd, dnn_type(d->w_dtype), dnnl_gohwi));
        DNN(dnnl_memory_desc_init_by_tag(&wei, 5, wd, dnn_type(d->w_dtype), any ? dnnl_format_tag_any : dnnl_gohwi));
    }
    dnnl_dims_t strides = {d->stride_h, d->stride_w}, dil = {d->dilation_h - 1, d->dilation_w - 1};
    dnnl_dims_t pl = {d->pad_top, d->pad_left}, pr = {d->pad_bottom, d->pad_right};
    dnnl_convolution_desc_t cd;
    DNN(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei,
                                                   &bias, &dst, strides, dil, pl, pr));
    dnnl_post_ops_t po;
    dnnl_primitive_attr_t attr;
    DNN(dnnl_post_ops_create(&po));
    if (c->res) DNN(dnnl_post_ops_append_sum(po, 1.0f));
    DNN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
    DNN(dnnl_primitive_attr_create(&attr));
    DNN(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_primitive_desc_t pd;
    DNN(dnnl_primitive_desc_create(&pd, &cd, attr, engine, NULL));
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DNN(dnnl_memory_create(&c->mem[0], &src, engine, c->x));
    DNN(dnnl_memory_create(&c->mem[4], &wuser, engine, c->w));
    if (any) {
        DNN(dnnl_memory_create(&c->mem[1], wmd, engine, DNNL_MEMORY_ALLOCATE));
        dnnl_primitive_desc_t rpd;
        dnnl_primitive_t reorder;
        DNN(dnnl_reorder_primitive_desc_create(&rpd, &wuser, engine, wmd, engine, NULL));
        DNN(dnnl_primitive_create(&reorder, rpd));
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, c->mem[4]}, {DNNL_ARG_TO, c->mem[1]}};
        DNN(dnnl_primitive_execute(reorder, stream, 2, ra));
        DNN(dnnl_stream_wait(stream));
        dnnl_primitive_destroy(reorder);
        dnnl_primitive_desc_destroy(rpd);
    } else {
        DNN(dnnl_memory_create(&c->mem[1], &wuser, engine, c->w));
    }
    DNN(dnnl_memory_create(&c->mem[2], &bias, engine, c->bias));
    DNN(dnnl_memory_create(&c->mem[3], &dst, engine, c->y));
    DNN(dnnl_primitive_create(&c->prim, pd));
    const char *info = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info);
    if (info) printf("%s: oneDNN implementation %s\n", c->name, info);
    dnnl_primitive_desc_destroy(pd);
    c->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, c->mem[0]};
    c->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, c->mem[1]};
    c->args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->mem[2]};
    c->args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, c->mem[3]};
    return 0;
}
#endif

static int run_case(conv_case *c) {
    if (c->impl <= IMPL_TESSERA_PACKED) return tsr_conv2d(ctx, &c->d, c->x, c->w, c->y) == TSR_OK ? 0 : -1;
#ifndef TSR_BENCH_NO_ONEDNN
    if (!c->prim) return -1;
    if (dnnl_primitive_execute(c->prim, stream, 4, c->args) != dnnl_success) return -1;
    return dnnl_stream_wait(stream) == dnnl_success ? 0 : -1;
#else
    return -1;
#endif
}

static void bench_one(gb_state *st, void *arg) {
    conv_case *c = arg;
    if (run_case(c)) { /* one untimed call first: faults the pages in */
        gb_skip_with_error(st, c->impl <= IMPL_TESSERA_PACKED ? tsr_last_error() : c->error);
        return;
    }
    while (gb_keep_running(st))
        if (run_case(c)) {
            gb_skip_with_error(st, "call failed");
            break;
        }
}

static void bench_peak(gb_state *st, void *arg) {
    (void)arg;
    while (gb_keep_running(st)) peak_run(peak_iters, nthreads);
}

/* The cases of one shape: tessera, then the oneDNN entries on their own
 * output buffers (same inputs). */
static void add_shape(const conv_shape *s, int64_t batch, tsr_dtype t, int want_onednn) {
    if (ncases + NIMPL > MAX_CONV_CASES) return;
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.n = batch, d.c = s->c, d.h = s->h, d.w = s->w, d.k = s->k, d.r = s->r, d.s = s->s;
    d.stride_h = d.stride_w = s->stride;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = s->pad;
    d.groups = s->groups;
    d.x_dtype = d.w_dtype = d.y_dtype = t;
    int64_t p, q;
    if (tsr_conv2d_output_shape(&d, &p, &q) != TSR_OK) return;
    const size_t xn = (size_t)(d.n * d.c * d.h * d.w), wn = (size_t)(d.k * (d.c / d.groups) * d.r * d.s);
    const size_t yn = (size_t)(d.n * d.k * p * q);
    void *x = bench_filled(t, xn, 1, -1.0f, 1.0f), *w = bench_filled(t, wn, 2, -0.1f, 0.1f);
    float *bias = bench_filled(TSR_F32, (size_t)d.k, 3, -0.5f, 0.5f);
    void *res = s->residual ? bench_filled(t, yn, 4, -1.0f, 1.0f) : NULL;
    d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_bias(bias, TSR_F32);
    if (res) d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_residual(res, t, 0, 1.0f);
    d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_activation(TSR_ACT_RELU);
    /* the same filter packed once, outside the timing */
    size_t pbytes = 0;
    void *wpacked = NULL;
    if (tsr_conv2d_packed_filter_size(ctx, &d, &pbytes) == TSR_OK && (wpacked = bench_alloc(pbytes)) &&
        tsr_conv2d_pack_filter(ctx, &d, w, wpacked, pbytes) != TSR_OK)
        fprintf(stderr, "tessera-bench: packing %s: %s\n", s->name, tsr_last_error()), free(wpacked), wpacked = NULL;
    for (int impl = 0; impl < NIMPL; impl++) {
        if (impl >= IMPL_ONEDNN && !want_onednn) continue;
        /* oneDNN 2.6 runs fixed OHWI weights through a slow generic path: at
         * batch 1 only (it would take tens of seconds per call at 32) */
        if (impl == IMPL_ONEDNN && batch > 1) continue;
        conv_case *c = &cases[ncases++];
        memset(c, 0, sizeof *c);
        c->impl = impl, c->d = d, c->p = p, c->q = q, c->x = x, c->w = w, c->bias = bias, c->res = res;
        if (impl == IMPL_TESSERA_PACKED) c->w = wpacked, c->d.filter_format = TSR_FILTER_PACKED;
        c->y = bench_alloc(yn * tsr_dtype_size(t));
        if (c->y && res) memcpy(c->y, res, yn * tsr_dtype_size(t)); /* y holds the residual */
        if (impl <= IMPL_TESSERA_PACKED)
            for (int i = 0; i < c->d.epilogue.num_steps; i++)
                if (c->d.epilogue.steps[i].op == TSR_EPI_RESIDUAL) c->d.epilogue.steps[i].data = c->y;
        char shape[64];
        snprintf(shape, sizeof shape, "%s_n%lld", s->name, (long long)batch);
        memcpy(c->shape, shape, sizeof shape);
        snprintf(c->name, sizeof c->name, "conv/%s/%s/%s/%s", tsr_dtype_name(t),
                 impl == IMPL_TESSERA_PACKED ? "NHWC-PACKED" : "NHWC", shape, impl_names[impl]);
#ifndef TSR_BENCH_NO_ONEDNN
        if (impl >= IMPL_ONEDNN && onednn_setup(c, impl == IMPL_ONEDNN_ANY)) c->prim = NULL;
#endif
    }
}

/* Runs two implementations once each on fresh outputs and compares them. */
static int cross_check(conv_case *ours, conv_case *theirs) {
    if (!ours->y || !theirs->y) return 0;
    const tsr_conv2d_desc *d = &ours->d;
    const size_t yn = (size_t)(d->n * d->k * ours->p * ours->q), es = tsr_dtype_size(d->y_dtype);
    if (ours->res) memcpy(ours->y, ours->res, yn * es), memcpy(theirs->y, ours->res, yn * es);
    if (run_case(ours) || run_case(theirs)) return 0;
    const double tol = d->y_dtype == TSR_F32 ? 1e-3 : 5e-2;
    for (size_t i = 0; i < yn; i++) {
        double a = d->y_dtype == TSR_F32 ? ((float *)ours->y)[i] : tsr_bf16_to_f32(((uint16_t *)ours->y)[i]);
        double b = d->y_dtype == TSR_F32 ? ((float *)theirs->y)[i] : tsr_bf16_to_f32(((uint16_t *)theirs->y)[i]);
        if (!(fabs(a - b) <= tol * (1 + fabs(b)))) {
            fprintf(stderr, "MISMATCH %s: y[%zu] = %g, %s %g\n", ours->name, i, a, theirs->name, b);
            return 1;
        }
    }
    return 0;
}

static double rate_of(const gb_result *r, int nr, const char *name) {
    for (int i = 0; i < nr; i++)
        if (!strcmp(r[i].name, name) && !r[i].error) return r[i].gflops;
    /* Google Benchmark appends /real_time */
    char full[256];
    snprintf(full, sizeof full, "%s/real_time", name);
    for (int i = 0; i < nr; i++)
        if (!strcmp(r[i].name, full) && !r[i].error) return r[i].gflops;
    return 0;
}

int conv_suite_main(const char *const *sets, int nsets, int threads, int quick, int want_summary, const char *dtypes) {
    nthreads = threads;
    tsr_context_info info;
    if (!(ctx = bench_cpu_context(threads, &info))) return 2;
    printf("tessera-bench conv: %s, tessera arch %s, %d threads, peak ISA %s\n", info.device_name, info.arch, threads,
           peak_isa());
    int want_onednn = 1;
#ifdef TSR_BENCH_NO_ONEDNN
    printf("skip onednn: oneDNN was not found when tessera-bench was configured\n");
    want_onednn = 0;
#else
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        printf("skip onednn: no CPU engine\n");
        want_onednn = 0;
    }
#endif
    static const char *const default_sets[] = {"resnet50", "mobilenetv2_dw"};
    if (nsets == 0) sets = default_sets, nsets = 2;
    const int64_t batches[] = {1, 32};
    for (int si = 0; si < nsets; si++) {
        conv_shape *shapes;
        int n = shapes_read_conv(sets[si], BENCH_SHAPES_DIR, &shapes);
        if (n < 0) return 2;
        for (int bi = 0; bi < (quick ? 1 : 2); bi++)
            for (int ti = 0; ti < 2; ti++) {
                tsr_dtype t = ti ? TSR_BF16 : TSR_F32;
                if (!strstr(dtypes, tsr_dtype_name(t))) continue;
                for (int i = 0; i < n; i++) add_shape(&shapes[i], batches[bi], t, want_onednn);
            }
        free(shapes);
    }
    int mismatches = 0;
    for (int i = 0; i < ncases; i++)
        if (cases[i].impl == IMPL_TESSERA)
            for (int k = i + 1; k < ncases && cases[k].impl != IMPL_TESSERA; k++)
                if (cases[k].impl != IMPL_ONEDNN) mismatches += cross_check(&cases[k], &cases[i]);
    char name[192];
    snprintf(name, sizeof name, "peak/f32/fma/%s/registers", peak_isa());
    gb_register(name, bench_peak, NULL, peak_flops_per_iter(peak_iters, threads), 0);
    for (int i = 0; i < ncases; i++) gb_register(cases[i].name, bench_one, &cases[i], flops_of(&cases[i]), 0);
    gb_register(name, bench_peak, NULL, peak_flops_per_iter(peak_iters, threads), 0); /* again: see peak_best */
    gb_run();
    if (want_summary) {
        const gb_result *r;
        int nr = gb_results(&r);
        const double peak = peak_best();
        printf("\nsummary (conv, %d threads): GFLOP/s. tessera: OHWI filter packed inside every call; "
               "tessera_packed: the filter packed once (tsr_conv2d_pack_filter); onednn: fixed OHWI weights; onednn_any: weights "
               "prepacked in oneDNN's format outside the timing. ", threads);
        if (peak > 0) printf("peak = %.1f GFLOP/s (fastest f32 FMA run)\n", peak);
        else printf("peak not measured (its runs filtered out)\n");
        printf("%-26s %9s %14s %9s %10s %9s %9s %11s %7s\n", "case", "tessera", "tessera_packed", "onednn",
               "onednn_any", "ohwi/fix", "ohwi/any", "packed/any", "% peak");
        enum { NR_ = 3 };
        double lsum[NR_] = {0}, lmin[NR_] = {1e9, 1e9, 1e9};
        int cnt[NR_] = {0};
        char group[64] = "";
        for (int i = 0; i <= ncases; i++) {
            const conv_case *c = i < ncases ? &cases[i] : NULL;
            char g[64] = "";
            if (c)
                snprintf(g, sizeof g, "%s %s%s", tsr_dtype_name(c->d.x_dtype), strrchr(c->shape, '_') + 1,
                         c->d.groups > 1 && c->d.groups == c->d.c ? " depthwise" : "");
            if ((!c || strcmp(g, group)) && (cnt[0] || cnt[1] || cnt[2])) {
                printf("%-26s %45s", group, "geomean:");
                for (int k = 0; k < NR_; k++) /* "-": no ratio of that kind ran */
                    if (cnt[k]) printf(" %8.2fx", exp(lsum[k] / cnt[k]));
                    else printf(" %9s", "-");
                printf("\n%-26s %45s", "", "min:");
                for (int k = 0; k < NR_; k++)
                    if (cnt[k]) printf(" %8.2fx", lmin[k]);
                    else printf(" %9s", "-");
                printf("\n");
                for (int k = 0; k < NR_; k++) lsum[k] = 0, lmin[k] = 1e9, cnt[k] = 0;
            }
            if (!c) break;
            snprintf(group, sizeof group, "%s", g);
            if (c->impl != IMPL_TESSERA) continue;
            double v[NIMPL] = {0};
            v[0] = rate_of(r, nr, c->name);
            for (int k = i + 1; k < ncases && cases[k].impl != IMPL_TESSERA; k++) v[cases[k].impl] = rate_of(r, nr, cases[k].name);
            const double ratio[NR_] = {v[2] > 0 ? v[0] / v[2] : 0, v[3] > 0 ? v[0] / v[3] : 0, v[3] > 0 ? v[1] / v[3] : 0};
            char label[80];
            snprintf(label, sizeof label, "%s %s", tsr_dtype_name(c->d.x_dtype), c->shape);
            printf("%-26s", label);
            const int width[NIMPL] = {9, 14, 9, 10};
            for (int k = 0; k < NIMPL; k++) /* "-": not run, or failed (its error is in the log above) */
                if (v[k] > 0) printf(" %*.1f", width[k], v[k]);
                else printf(" %*s", width[k], "-");
            for (int k = 0; k < NR_; k++)
                if (ratio[k] > 0) printf(" %8.2fx", ratio[k]);
                else printf(" %9s", "-");
            const double best = v[0] > v[1] ? v[0] : v[1];
            if (peak > 0) printf(" %6.1f%%\n", 100 * best / peak);
            else printf(" %7s\n", "-");
            for (int k = 0; k < NR_; k++)
                if (ratio[k] > 0) {
                    lsum[k] += log(ratio[k]), cnt[k]++;
                    lmin[k] = ratio[k] < lmin[k] ? ratio[k] : lmin[k];
                }
        }
    }
    if (mismatches) fprintf(stderr, "tessera-bench: %d conv results mismatched\n", mismatches);
    tsr_context_destroy(ctx);
    return mismatches ? 1 : 0;
}
