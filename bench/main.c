/* tessera-bench: Tessera's kernels side by side with the vendors' libraries
 * in one run, through Google Benchmark. Names: <op>/<dtype>/<layout>/<shape>/<impl>. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_attention.h"
#include "bench_conv.h"
#include "bench_lookup.h"
#include "bench_rowwise.h"
#include "fill.h"
#include "gbench_shim.h"
#include "impls.h"
#include "peak.h"
#include "shapes.h"
#include "tessera.h"
#ifdef TSR_BENCH_CUDA
#include "cuda_suite.h"
#endif
#ifdef TSR_BENCH_OPENCL
#include "opencl_suite.h"
#endif

#define MAX_IMPLS 3
#define MAX_CASES 512

enum { DT_F32, DT_BF16, DT_I8, NUM_DT };
static const char *const dt_names[NUM_DT] = {"f32", "bf16", "i8"};

typedef struct gemm_case {
    gemm_shape s;
    const gemm_impl *impl;
    int dt;
    void *a, *b, *c;
    int wrong, absent; /* wrong: it failed cross_check; absent: the library has no GEMM of this dtype */
    char why[160];     /* what cross_check found */
} gemm_case;

static gemm_case cases[MAX_CASES];
static int ncases;
static long peak_iters = 2000000;
static int threads;

static int run_case(const gemm_case *c, void *out) {
    const gemm_shape *s = &c->s;
    if (c->dt == DT_I8) return c->impl->gemm_i8(s->trans_a, s->trans_b, s->m, s->n, s->k, c->a, c->b, out);
    if (c->dt == DT_BF16) return c->impl->gemm_bf16(s->trans_a, s->trans_b, s->m, s->n, s->k, c->a, c->b, out);
    return c->impl->sgemm(s->trans_a, s->trans_b, s->m, s->n, s->k, c->a, c->b, out);
}

static void bench_gemm(gb_state *st, void *arg) {
    gemm_case *c = arg;
    if (c->wrong) {
        gb_skip_with_error(st, c->why);
        return;
    }
    /* one untimed call, as the other suites make: pages the VM gave back
     * since registration are faulted in again here, not in the timing of
     * whichever library runs first (f32 128x14336x4096 NT in a full run:
     * 41 GFLOP/s for Tessera, timed first, 226 alone) */
    if (run_case(c, c->c)) {
        gb_skip_with_error(st, c->impl->last_error());
        return;
    }
    while (gb_keep_running(st))
        if (run_case(c, c->c)) {
            gb_skip_with_error(st, c->impl->last_error());
            break;
        }
}

static void bench_peak(gb_state *st, void *arg) {
    (void)arg;
    while (gb_keep_running(st)) peak_run(peak_iters, threads);
}

/* rounds of the micro-kernel ceiling: as many flops as a peak_run */
#define UKR_ROUNDS (peak_iters / 250)

static void bench_peak_ukr(gb_state *st, void *arg) {
    (void)arg;
    while (gb_keep_running(st)) peak_ukr_run(UKR_ROUNDS, threads);
}

static void bench_peak_bf16(gb_state *st, void *arg) {
    (void)arg;
    while (gb_keep_running(st)) peak_bf16_run(peak_iters, threads);
}

static void bench_peak_i8(gb_state *st, void *arg) {
    (void)arg;
    while (gb_keep_running(st)) peak_i8_run(peak_iters, threads);
}

/* The peak cases; registered before and after the GEMMs, their fastest run
 * (peak_best) is the summary's limit. */
static void register_peaks(bool f32, bool bf16, bool i8) {
    char name[64];
    snprintf(name, sizeof name, "peak/f32/fma/%s/registers", peak_isa());
    gb_register(name, bench_peak, NULL, peak_flops_per_iter(peak_iters, threads), 0);
    if (f32 && peak_ukr_available())
        gb_register("peak/f32/ukernel_8x48/avx512/l1", bench_peak_ukr, NULL,
                    peak_ukr_flops_per_round(UKR_ROUNDS, threads), 0);
    if (bf16)
        gb_register("peak/bf16/vdpbf16ps/avx512_bf16/registers", bench_peak_bf16, NULL,
                    peak_bf16_flops_per_iter(peak_iters, threads), 0);
    if (i8) gb_register(peak_i8_name(), bench_peak_i8, NULL, peak_i8_ops_per_iter(peak_iters, threads), 0);
}

static void usage(void) {
    puts("usage: tessera-bench [--op gemm|conv|attention|rowwise|lookup] [--backend cpu|cuda|opencl]\n"
         "                     [--shapes NAME|FILE]...\n"
         "                     [--impl tessera,onednn,openblas]\n"
         "                     [--threads N] [--dtypes LIST] [--summary] [--json FILE] [--quick]\n"
         "                     [Google Benchmark flags]\n"
         "  --op       gemm (default), or attention: fused attention vs the unfused sgemm + softmax +\n"
         "             sgemm path (bf16: oneDNN's bf16 matmul), decode vs memcpy bandwidth on the same threads (CPU); or rowwise: softmax and norms\n"
         "             vs memcpy of the same bytes on the same threads (CPU); or conv: conv2d NHWC with fused bias/residual/relu\n"
         "             vs oneDNN's convolution (fixed OHWI weights and prepacked `any`), f32 and bf16,\n"
         "             batch 1 and 32 (--quick: 1) on the sets resnet50 and mobilenetv2_dw (CPU); or\n"
         "             lookup: the tuning table's cost per lookup (exact, nearest, miss; 16..16384\n"
         "             records) and per tsr_gemm call\n"
         "  --backend  cpu (default): against oneDNN and OpenBLAS; cuda: against cuBLAS and cuBLASLt,\n"
         "             with the GPU's mma.sync/FMA peaks and copy bandwidth measured in the same run;\n"
         "             opencl: GEMM and ResNet-50 convolutions against CLBlast as shipped (clblast) and\n"
         "             with its own tuner's best parameters (clblast_tuned), plus Tessera's CPU GEMM\n"
         "             (tessera_cpu) when the device is the CPU; TESSERA_OPENCL_DEVICE picks the device\n"
         "  --rss      attention: peak RSS of fused vs unfused at seq 8192, each in a child process\n"
         "  --first-result  opencl: time a new process to its first GEMM result, cold and warm binary cache\n"
         "  --clblast-tune-timeout S  opencl: budget for clblast_tuner_xgemm when no result is cached\n"
         "             (default 2400 s, --quick 600 s)\n"
         "  --shapes   a set in bench/shapes (square, skinny, llama, deepbench, quick, gpu_square) or a file;\n"
         "             repeatable (default cpu: square, skinny, llama; cuda: gpu_square, llama;\n"
         "             opencl: opencl_square, opencl_skinny; --quick: quick)\n"
         "  --threads  threads for every CPU implementation (default: all cores)\n"
         "  --dtypes   cpu GEMM: f32,bf16,i8 (default; bf16 x bf16 -> f32 against oneDNN's matmul,\n"
         "             i8 x i8 -> i32 against its gemm_s8s8s32);\n"
         "             cuda: the GEMM/elementwise dtypes (default f16,bf16,f32)\n"
         "  --summary  print a table of GFLOP/s, ratios to each vendor, % of the measured FMA peak and\n"
         "             (f32, AVX-512) % of the 8x48 micro-kernel ceiling with its panels in L1\n"
         "  --json     write Google Benchmark JSON to FILE\n"
         "  --benchmark_repetitions=N, with --benchmark_enable_random_interleaving=true on a noisy\n"
         "             machine: each benchmark runs N times, shuffled among the others' runs, and\n"
         "             every summary takes the median of its N rates\n"
         "Every library's result is checked before timing, at sampled outputs, against dot\n"
         "products taken exactly; a wrong result is reported (WRONG, with the library's name)\n"
         "and not timed, and a wrong Tessera result makes the exit status 1.");
}

static const char *layout_of(const gemm_shape *s) {
    static const char *names[4] = {"NN", "NT", "TN", "TT"};
    return names[s->trans_a * 2 + s->trans_b];
}

/* Element (i, p) of op(A) or (p, j) of op(B), stored as the cases store
 * them (row-major, leading dimension the stored row's length), as a double. */
static double element(int dt, const void *x, int trans, int64_t rows, int64_t cols, int64_t r, int64_t c) {
    const int64_t at = trans ? c * rows + r : r * cols + c;
    if (dt == DT_I8) return ((const int8_t *)x)[at];
    if (dt == DT_F32) return ((const float *)x)[at];
    const uint32_t bits = (uint32_t)((const uint16_t *)x)[at] << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Runs every implementation once on the case's data and checks sampled
 * outputs (the corners and a spread of others) against dot products taken
 * exactly here (int8: in integers; f32/bf16: in double), so that a wrong
 * result is laid at the door of the library that gave it: f32 within a
 * tolerance, int8 exactly. */
static void cross_check(gemm_case *group, int n) {
    const gemm_shape *s = &group[0].s;
    const int dt = group[0].dt;
    const int64_t cn = s->m * s->n, nsamples = cn < 97 ? cn : 97;
    for (int i = 0; i < n; i++) {
        gemm_case *c = &group[i];
        if (c->absent) continue;
        if (run_case(c, c->c)) continue; /* bench_gemm reports it, with the library's message */
        for (int64_t q = 0; q < nsamples; q++) {
            const int64_t at = q == nsamples - 1 ? cn - 1 : q * (cn / nsamples) + q % 7 * (cn > 7 * nsamples);
            const int64_t r = at / s->n, col = at % s->n;
            double want = 0, mag = 0;
            for (int64_t p = 0; p < s->k; p++) {
                const double t = element(dt, c->a, s->trans_a, s->m, s->k, r, p) *
                                 element(dt, c->b, s->trans_b, s->k, s->n, p, col);
                want += t, mag += fabs(t);
            }
            const double got = dt == DT_I8 ? ((int32_t *)c->c)[at] : ((float *)c->c)[at];
            /* f32 sums of K products: a few rounding errors of the terms' magnitude */
            const double tol = dt == DT_I8 ? 0 : 1e-6 * sqrt((double)s->k) * (mag + 1e-30) + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                snprintf(c->why, sizeof c->why, "WRONG: C[%lld][%lld] = %.9g, exactly %.9g", (long long)r,
                         (long long)col, got, want);
                fprintf(stderr, "WRONG gemm %s %s %lldx%lldx%lld: %s C[%lld][%lld] = %.9g, exactly %.9g\n",
                        dt_names[dt], layout_of(s), (long long)s->m, (long long)s->n, (long long)s->k, c->impl->name,
                        (long long)r, (long long)col, got, want);
                c->wrong = 1;
                break;
            }
        }
    }
}

/* A and B of a case: small values, the same for every implementation
 * (bf16: the top half of the f32 value, exact for these fractions of 16). */
static void *operand(int dt, size_t count, unsigned mul, unsigned mod) {
    void *x = bench_alloc(count * (dt == DT_I8 ? 1 : dt == DT_BF16 ? 2 : 4));
    for (size_t j = 0; x && j < count; j++) {
        float f = (float)((j * mul) % mod) / (float)mod - 0.5f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (dt == DT_I8) ((int8_t *)x)[j] = (int8_t)((j * mul) % 251 - 125);
        else if (dt == DT_BF16) ((uint16_t *)x)[j] = (uint16_t)(bits >> 16);
        else ((float *)x)[j] = f;
    }
    return x;
}

static bool offers(const gemm_impl *impl, int dt) {
    return dt == DT_F32 ? impl->sgemm != NULL : dt == DT_I8 ? impl->gemm_i8 != NULL : impl->gemm_bf16 != NULL;
}

int main(int argc, char **argv) {
    openblas_fair_coretype(argv);
    const char *sets[16];
    int nsets = 0, summary = 0, quick = 0, rss = 0, first_result = 0, tune_timeout = 0;
    if (argc == 3 && !strcmp(argv[1], "--first-result-child")) {
#ifdef TSR_BENCH_OPENCL
        return opencl_first_result_child(argv[2]);
#else
        return 2;
#endif
    }
    char impl_list[128] = "tessera,onednn,openblas", json_arg[1100] = "", backend[16] = "cpu", op[16] = "gemm", dtypes[64] = "";
    threads = omp_get_num_procs();
    /* our flags out, Google Benchmark's through */
    char **gb_argv = calloc((size_t)argc + 3, sizeof *gb_argv);
    int gb_argc = 0;
    gb_argv[gb_argc++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(), 0;
        else if (!strcmp(argv[i], "--summary")) summary = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--rss")) rss = 1;
        else if (!strcmp(argv[i], "--first-result")) first_result = 1;
        else if (!strcmp(argv[i], "--clblast-tune-timeout") && i + 1 < argc) tune_timeout = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc && nsets < 16) sets[nsets++] = argv[++i];
        else if (!strcmp(argv[i], "--impl") && i + 1 < argc) snprintf(impl_list, sizeof impl_list, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) snprintf(op, sizeof op, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) snprintf(backend, sizeof backend, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--dtypes") && i + 1 < argc) snprintf(dtypes, sizeof dtypes, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            snprintf(json_arg, sizeof json_arg, "--benchmark_out=%s", argv[++i]);
            gb_argv[gb_argc++] = json_arg;
            gb_argv[gb_argc++] = "--benchmark_out_format=json";
        } else gb_argv[gb_argc++] = argv[i];
    }
    if (threads < 1) return fprintf(stderr, "tessera-bench: --threads must be >= 1\n"), 2;
    int cuda = !strcmp(backend, "cuda"), opencl = !strcmp(backend, "opencl");
    if (!cuda && !opencl && strcmp(backend, "cpu"))
        return fprintf(stderr, "tessera-bench: --backend must be cpu, cuda or opencl, not '%s'\n", backend), 2;
    if (nsets == 0 && strcmp(op, "conv")) {
        if (quick) sets[nsets++] = "quick";
        else if (opencl) sets[nsets++] = "opencl_square", sets[nsets++] = "opencl_skinny";
        else if (cuda) sets[nsets++] = "gpu_square", sets[nsets++] = "llama";
        else sets[nsets++] = "square", sets[nsets++] = "skinny", sets[nsets++] = "llama";
    }
    gb_initialize(&gb_argc, gb_argv);
    if (opencl) {
        if (strcmp(op, "gemm"))
            return fprintf(stderr, "tessera-bench: --backend opencl runs --op gemm (with convolutions)\n"), 2;
#ifdef TSR_BENCH_OPENCL
        opencl_bench_options oo = {sets, nsets, quick, summary, threads, first_result,
                                   tune_timeout > 0 ? tune_timeout : quick ? 600 : 2400, argv[0]};
        return opencl_suite_main(&oo);
#else
        printf("SKIP opencl: tessera-bench was built without OpenCL or CLBlast\n");
        return 0;
#endif
    }
    if (!strcmp(op, "attention")) {
        if (cuda) return fprintf(stderr, "tessera-bench: --op attention runs on the CPU backend only so far\n"), 2;
        return rss ? attention_rss_main(threads) : attention_suite_main(threads, quick, summary);
    }
    if (!strcmp(op, "conv")) {
        if (cuda) {
#ifdef TSR_BENCH_CUDA
            return cuda_conv_main(sets, nsets, quick, summary);
#else
            printf("SKIP cuda: tessera-bench was built without CUDA (nvcc or cuBLAS not found)\n");
            return 0;
#endif
        }
        return conv_suite_main(sets, nsets, threads, quick, summary, dtypes[0] ? dtypes : "f32,bf16");
    }
    if (!strcmp(op, "rowwise")) {
        if (cuda) return fprintf(stderr, "tessera-bench: --op rowwise runs on the CPU backend only so far\n"), 2;
        return rowwise_suite_main(threads, quick, summary);
    }
    if (!strcmp(op, "lookup")) {
        if (cuda) return fprintf(stderr, "tessera-bench: --op lookup measures the CPU tables only\n"), 2;
        return lookup_suite_main(quick);
    }
    if (strcmp(op, "gemm"))
        return fprintf(stderr, "tessera-bench: --op must be gemm, conv, attention, rowwise or lookup, not '%s'\n", op), 2;
    if (cuda) {
#ifdef TSR_BENCH_CUDA
        return cuda_suite_main(sets, nsets, quick, summary, dtypes[0] ? dtypes : "f16,bf16,f32");
#else
        printf("SKIP cuda: tessera-bench was built without CUDA (nvcc or cuBLAS not found)\n");
        return 0;
#endif
    }

    const gemm_impl *all[MAX_IMPLS] = {&impl_tessera, &impl_onednn, &impl_openblas}, *impls[MAX_IMPLS];
    int nimpl = 0;
    for (int i = 0; i < MAX_IMPLS; i++) {
        if (!strstr(impl_list, all[i]->name)) continue;
        char why[256] = "";
        if (all[i]->init(threads, why, sizeof why)) impls[nimpl++] = all[i];
        else printf("skip %s: %s\n", all[i]->name, why);
    }
    tsr_context *ctx;
    tsr_context_create(&ctx, NULL);
    tsr_context_info info = {.size = sizeof info};
    tsr_context_get_info(ctx, &info);
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("tessera-bench %s: %s, tessera arch %s, %d threads, peak ISA %s, %s\n", tsr_version_string(),
           info.device_name, info.arch, threads, peak_isa(), date);
    tsr_context_destroy(ctx);

    int want_dt[NUM_DT], any = 0;
    for (int dt = 0; dt < NUM_DT; dt++) any |= want_dt[dt] = !dtypes[0] || strstr(dtypes, dt_names[dt]) != NULL;
    /* by default, int8 only where Tessera has a kernel for it (AVX-512
     * VNNI or AVX2; else the reference would run for minutes); asked for,
     * it runs anyway */
    if (!dtypes[0] && strncmp(info.arch, "x86_", 4)) {
        want_dt[DT_I8] = 0;
        printf("skip i8: Tessera has no int8 GEMM for CPU arch %s, only the reference (--dtypes i8 runs it)\n",
               info.arch);
    }
    if (!any) return fprintf(stderr, "tessera-bench: --dtypes for the cpu GEMM: f32, bf16, i8, not '%s'\n", dtypes), 2;
    char name[192];
    const bool peak_i8 = want_dt[DT_I8] && peak_i8_available(),
               peak_bf16 = want_dt[DT_BF16] && peak_bf16_available();
    register_peaks(want_dt[DT_F32], peak_bf16, peak_i8);
    for (int si = 0; si < nsets; si++) {
        gemm_shape *shapes;
        int n = shapes_read_gemm(sets[si], BENCH_SHAPES_DIR, &shapes);
        if (n < 0) return 2;
        for (int dt = 0; dt < NUM_DT; dt++)
            for (int i = 0; want_dt[dt] && i < n && ncases + nimpl <= MAX_CASES; i++) {
                gemm_shape *s = &shapes[i];
                if (quick && s->m * s->n * s->k > 2048LL * 2048 * 2048) continue;
                size_t an = (size_t)(s->m * s->k), bn = (size_t)(s->k * s->n), cn = (size_t)(s->m * s->n);
                void *a = operand(dt, an, 7, 13), *b = operand(dt, bn, 5, 11);
                gemm_case *group = &cases[ncases];
                for (int k = 0; k < nimpl; k++) {
                    gemm_case *c = &cases[ncases++];
                    *c = (gemm_case){*s, impls[k], dt, a, b, bench_alloc(cn * 4), 0, !offers(impls[k], dt), ""};
                }
                cross_check(group, nimpl);
            }
        free(shapes);
    }
    /* Shape by shape, each library's case next to ours, so that a machine
     * whose speed drifts over minutes (a VM) times both in the same minute;
     * OpenBLAS after all of them, since its idle worker threads spin after
     * each call and would compete with whatever ran next. Then the peaks
     * again. */
    for (int late = 0; late < 2; late++)
        for (int i = 0; i < ncases; i++) {
            const gemm_shape *s = &cases[i].s;
            if (cases[i].absent || (cases[i].impl == &impl_openblas) != late) continue;
            snprintf(name, sizeof name, "gemm/%s/%s/%lldx%lldx%lld/%s", dt_names[cases[i].dt], layout_of(s),
                     (long long)s->m, (long long)s->n, (long long)s->k, cases[i].impl->name);
            gb_register(name, bench_gemm, &cases[i], 2.0 * s->m * s->n * s->k, 0);
        }
    register_peaks(want_dt[DT_F32], peak_bf16, peak_i8);
    gb_run();

    const gb_result *r;
    int nr = gb_results(&r), ours_wrong = 0, theirs_wrong = 0;
    for (int i = 0; i < ncases; i++) {
        ours_wrong += cases[i].wrong && cases[i].impl == &impl_tessera;
        theirs_wrong += cases[i].wrong && cases[i].impl != &impl_tessera;
    }
    if (summary) {
        const double peak[NUM_DT] = {[DT_F32] = peak_best(), [DT_BF16] = peak_bf16_best(), [DT_I8] = peak_i8_best()};
        printf("\nsummary: GFLOP/s (i8: GOP/s), %d threads; ", threads);
        if (peak[DT_F32] > 0) printf("peak = %.1f GFLOP/s (fastest measured FMA run)", peak[DT_F32]);
        else printf("peak not measured (its runs filtered out)");
        if (peak[DT_BF16] > 0) printf(", bf16 %.1f GFLOP/s (fastest measured vdpbf16ps run)", peak[DT_BF16]);
        if (peak[DT_I8] > 0) printf(", i8 %.1f GOP/s (fastest measured %s run)", peak[DT_I8], peak_i8_name());
        const double ukr = peak_ukr_best();
        if (ukr > 0) printf(";\nf32 micro-kernel ceiling = %.1f GFLOP/s (8x48 tile, panels in L1: %% ukr)", ukr);
        printf("\n%-32s", "gemm shape");
        for (int k = 0; k < nimpl; k++) printf(" %10s", impls[k]->name);
        for (int k = 1; k < nimpl; k++) printf("  vs %-8s", impls[k]->name);
        printf("  %% peak  %% ukr\n");
        for (int i = 0; i < ncases; i += nimpl) {
            const gemm_shape *s = &cases[i].s;
            char shape[96];
            snprintf(shape, sizeof shape, "%s/%s/%lldx%lldx%lld", dt_names[cases[i].dt], layout_of(s), (long long)s->m,
                     (long long)s->n, (long long)s->k);
            double g[MAX_IMPLS] = {0};
            int err[MAX_IMPLS] = {0}; /* -1: not run (filtered out) */
            for (int k = 0; k < nimpl; k++) {
                snprintf(name, sizeof name, "gemm/%s/%s", shape, impls[k]->name);
                err[k] = -1;
                for (int j = 0; j < nr; j++)
                    if (!strncmp(r[j].name, name, strlen(name)) && r[j].name[strlen(name)] != '_')
                        g[k] = r[j].gflops, err[k] = r[j].error;
            }
            printf("%-32s", shape);
            for (int k = 0; k < nimpl; k++)
                if (err[k]) printf(" %10s", cases[i + k].wrong ? "WRONG" : err[k] < 0 ? "-" : "error");
                else printf(" %10.1f", g[k]);
            for (int k = 1; k < nimpl; k++)
                if (err[k] || err[0] || g[k] <= 0) printf("  %10s ", "-");
                else printf("  %9.2fx ", g[0] / g[k]);
            const double lim = peak[cases[i].dt];
            if (lim > 0 && !err[0]) printf("  %5.1f%%", 100 * g[0] / lim);
            else printf("  %6s", "-");
            if (cases[i].dt == DT_F32 && ukr > 0 && !err[0]) printf("  %5.1f%%\n", 100 * g[0] / ukr);
            else printf("  %6s\n", "-");
        }
    }
    if (theirs_wrong)
        fprintf(stderr, "tessera-bench: %d vendor results were wrong (WRONG lines above; not timed)\n", theirs_wrong);
    if (ours_wrong) fprintf(stderr, "tessera-bench: %d Tessera results were wrong\n", ours_wrong);
    return ours_wrong ? 1 : 0;
}
