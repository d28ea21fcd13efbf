/* tessera-bench --op rowwise: softmax, layernorm and rmsnorm on the CPU,
 * a fused chain (SwiGLU's silu(x) * g, two inputs and one output) and the
 * erf GELU (a one-step chain),
 * against memcpy on the run's threads in the same run (bench_copy: an op
 * that reads its inputs once and writes its output once can at best move
 * bytes as fast as a copy) and
 * against oneDNN's softmax, layer normalization, swish + binary-mul and
 * gelu_erf primitives on the same buffers (oneDNN 2.6 has no RMS norm). Sizes from
 * 4 KiB rows x 1 to 256 MiB. Names: <op>/<dtype>/rows/<R>x<C>/<impl>. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rowwise.h"
#include "copy.h"
#include "fill.h"
#include "gbench_shim.h"
#include "row_onednn.h"
#include "cpu_context.h"
#include "tessera.h"

enum { OP_COPY, OP_SOFTMAX, OP_LAYERNORM, OP_RMSNORM, OP_SWIGLU, OP_GELU };
#define MAX_ROW_CASES 128

typedef struct row_case {
    int op;
    tsr_rowwise_desc d;
    void *x, *y, *g; /* g: the chain's second input */
    tsr_chain_desc chain;
    tsr_tensor_desc t;
    float *gamma, *beta;
    row_prim *prim; /* oneDNN's primitive: this case runs it on the buffers of the case before */
    const char *why; /* why oneDNN has none */
    size_t bytes;    /* read + written */
    char name[128];
} row_case;

static row_case cases[MAX_ROW_CASES];
static int ncases;
static int copy_threads; /* the run's threads, for the reference copy */
static tsr_context *ctx;

static tsr_status run_row(row_case *c) {
    switch (c->op) {
    case OP_COPY: bench_copy(c->y, c->x, c->bytes / 2, copy_threads); return TSR_OK;
    case OP_SOFTMAX: return tsr_softmax(ctx, &c->d, c->x, c->y);
    case OP_LAYERNORM: return tsr_layernorm(ctx, &c->d, c->x, c->gamma, c->beta, c->y);
    case OP_SWIGLU: {
        const void *ops[1] = {c->g};
        return tsr_elementwise_chain(ctx, &c->chain, &c->t, c->x, ops, &c->t, c->y);
    }
    case OP_GELU: return tsr_elementwise_chain(ctx, &c->chain, &c->t, c->x, NULL, &c->t, c->y);
    default: return tsr_rmsnorm(ctx, &c->d, c->x, c->gamma, c->y);
    }
}

static void bench_row(gb_state *st, void *arg) {
    row_case *c = arg;
    if (c->why) {
        gb_skip_with_error(st, c->why);
        return;
    }
    if (!c->x || !c->y || (c->op == OP_SWIGLU && !c->g)) {
        gb_skip_with_error(st, "out of memory");
        return;
    }
    if (c->prim) {
        int bad = row_onednn_run(c->prim, c->x, c->g, c->gamma, c->beta, c->y);
        while (!bad && gb_keep_running(st)) bad = row_onednn_run(c->prim, c->x, c->g, c->gamma, c->beta, c->y);
        if (bad) gb_skip_with_error(st, "onednn: the primitive failed to run");
        return;
    }
    /* one untimed call: pages the VM gave back are faulted in again here */
    tsr_status s = run_row(c);
    while (s == TSR_OK && gb_keep_running(st)) s = run_row(c);
    if (s != TSR_OK) gb_skip_with_error(st, tsr_last_error());
}

static void add(int op, tsr_dtype t, int64_t rows, int64_t cols) {
    if (ncases == MAX_ROW_CASES) return;
    static const char *const names[] = {"copy", "softmax", "layernorm", "rmsnorm", "swiglu", "gelu_erf"};
    row_case *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    tsr_rowwise_desc_init(&c->d);
    c->op = op, c->d.rows = rows, c->d.cols = cols, c->d.x_dtype = c->d.y_dtype = t;
    size_t n = (size_t)(rows * cols), es = tsr_dtype_size(t);
    c->bytes = (op == OP_SWIGLU ? 3 : 2) * n * es;
    c->x = bench_alloc(n * es), c->y = bench_alloc(n * es);
    if (op == OP_SWIGLU || op == OP_GELU) {
        const int64_t shape[2] = {rows, cols};
        c->t = tsr_tensor_contiguous(t, 2, shape);
        tsr_chain_desc_init(&c->chain);
        tsr_chain_push_unary(&c->chain, op == OP_SWIGLU ? TSR_UNARY_SILU : TSR_UNARY_GELU_ERF);
    }
    if (op == OP_SWIGLU) {
        tsr_chain_push_tensor(&c->chain, TSR_BINARY_MUL, &c->t, 0);
        if ((c->g = bench_alloc(n * es))) bench_fill(c->g, t, n, 2, -1.0f, 1.0f);
    }
    c->gamma = malloc(sizeof(float) * (size_t)cols), c->beta = malloc(sizeof(float) * (size_t)cols);
    if (c->x && c->y && c->gamma && c->beta) {
        bench_fill(c->x, t, n, 1, -2.5f, 2.5f);
        memset(c->y, 0, n * es);
        for (int64_t j = 0; j < cols; j++) c->gamma[j] = 1.0f + (float)(j % 7) / 16, c->beta[j] = (float)(j % 5) / 8;
    }
    snprintf(c->name, sizeof c->name, "%s/%s/rows/%lldx%lld/%s", names[op], tsr_dtype_name(t), (long long)rows,
             (long long)cols, op == OP_COPY ? "memcpy" : "tessera");
    if (op == OP_COPY || ncases == MAX_ROW_CASES) return;
    /* oneDNN's primitive on the same buffers, the next case */
    static const int prim_op[] = {0, ROW_ONEDNN_SOFTMAX, ROW_ONEDNN_LAYERNORM, ROW_ONEDNN_RMSNORM, ROW_ONEDNN_SWIGLU,
                                 ROW_ONEDNN_GELU_ERF};
    row_case *o = &cases[ncases++];
    *o = *c;
    o->prim = row_onednn_create(prim_op[op], t, rows, cols, c->d.epsilon, &o->why);
    snprintf(o->name, sizeof o->name, "%s/%s/rows/%lldx%lld/onednn", names[op], tsr_dtype_name(t), (long long)rows,
             (long long)cols);
}

static double gbps_of(const gb_result *r, int nr, const char *name, int *found) {
    for (int k = 0; k < nr; k++)
        if (!strncmp(r[k].name, name, strlen(name)) && !r[k].error) return *found = 1, r[k].gbps;
    return *found = 0, 0.0;
}

int rowwise_suite_main(int threads, int quick, int want_summary) {
    copy_threads = threads;
    tsr_context_info info;
    if (!(ctx = bench_cpu_context(threads, &info))) return 2;
    printf("tessera-bench rowwise: %s, tessera arch %s, %d threads\n", info.device_name, info.arch, threads);
    /* 4 KiB, 1 MiB (cache), 64 MiB and 256 MiB (memory) of f32 input */
    const int64_t shapes[][2] = {{1, 1024}, {64, 4096}, {4096, 4096}, {16384, 4096}};
    const int nshapes = quick ? 3 : 4;
    static const tsr_dtype dts[] = {TSR_F32, TSR_BF16};
    for (int si = 0; si < nshapes; si++)
        for (int t = 0; t < 2; t++)
            for (int op = OP_COPY; op <= OP_GELU; op++) add(op, dts[t], shapes[si][0], shapes[si][1]);
    for (int i = 0; i < ncases; i++) gb_register(cases[i].name, bench_row, &cases[i], 0, (double)cases[i].bytes);
    gb_run();
    if (want_summary) {
        const gb_result *r;
        int nr = gb_results(&r);
        printf("\nsummary (rowwise, %d threads): GB/s read + written, as %% of memcpy of the same bytes on as many threads, "
               "and against oneDNN's primitive\n", threads);
        printf("%-36s %9s %8s %9s %9s %7s\n", "case", "tessera", "memcpy", "% memcpy", "onednn", "ratio");
        double copy = 0;
        for (int i = 0; i < ncases; i++) {
            int found = 0, ofound = 0;
            const double g = gbps_of(r, nr, cases[i].name, &found);
            if (cases[i].op == OP_COPY) {
                copy = g;
                continue;
            }
            if (cases[i].prim || cases[i].why || !found) continue; /* oneDNN's own, filtered out, or failed */
            const double od = i + 1 < ncases ? gbps_of(r, nr, cases[i + 1].name, &ofound) : 0;
            char base[128];
            snprintf(base, sizeof base, "%.*s", (int)(strrchr(cases[i].name, '/') - cases[i].name), cases[i].name);
            if (ofound && od > 0)
                printf("%-36s %9.1f %8.1f %8.1f%% %9.1f %6.2fx\n", base, g, copy, copy > 0 ? 100 * g / copy : 0, od,
                       g / od);
            else
                printf("%-36s %9.1f %8.1f %8.1f%% %9s %7s\n", base, g, copy, copy > 0 ? 100 * g / copy : 0, "-", "-");
        }
    }
    for (int i = 0; i < ncases; i++) {
        if (cases[i].prim || cases[i].why) { /* oneDNN's: the buffers belong to the case before */
            row_onednn_destroy(cases[i].prim);
            continue;
        }
        free(cases[i].x), free(cases[i].y), free(cases[i].g), free(cases[i].gamma), free(cases[i].beta);
    }
    tsr_context_destroy(ctx);
    return 0;
}
