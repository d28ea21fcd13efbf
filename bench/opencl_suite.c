/* tessera-bench --backend opencl: Tessera's OpenCL kernels side by side with
 * CLBlast on the same device, queue and buffers, in one run:
 *  - clblast: CLBlast as shipped (its per-device database or defaults);
 *  - clblast_tuned: CLBlast with the best Xgemm parameters its own tuner
 *    (clblast_tuner_xgemm, clblast-utils) found on this device, applied with
 *    CLBlastOverrideParameters. The tuner runs once per device; its JSON is
 *    kept in $XDG_CACHE_HOME/tessera/clblast/ so later runs do not retune;
 *  - tessera_cpu: Tessera's native CPU GEMM on host memory, when the OpenCL
 *    device is the CPU (PoCL), so that the cost of the OpenCL path shows.
 * Convolutions (ResNet-50 layers) run against CLBlast's convgemm.
 * Each iteration is one call plus clFinish (host-timed, as a framework
 * would see it). --first-result times a fresh process from context creation
 * to the first GEMM's result, with a cold and then a warm binary cache. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fill.h"
#include "gbench_shim.h"
#include "opencl_suite.h"
#include "shapes.h"
#include "tessera.h"

enum { IMPL_TESSERA, IMPL_CLBLAST, IMPL_TUNED, IMPL_CPU, NUM_IMPLS };
static const char *const impl_names[NUM_IMPLS] = {"tessera", "clblast", "clblast_tuned", "tessera_cpu"};
enum { MAX_CASES = 512, MAX_PARAMS = 32 };

/* One convolution of the ResNet-50 set (bench/shapes/conv_resnet50.txt,
 * read by shapes_read_conv) at batch n, groups 1. */
typedef struct ocl_conv {
    int64_t n, c, h, w, k, r, s, stride, pad;
} ocl_conv;

typedef struct ocl_case {
    int impl, is_conv;
    gemm_shape s;
    ocl_conv cv;
    cl_mem a, b, c;        /* device buffers (x, w, y for conv) */
    float *ha, *hb, *hc;   /* host buffers (tessera_cpu) */
    double flops;
    int failed;
    char why[256];
} ocl_case;

static ocl_case cases[MAX_CASES];
static int ncases;
static cl_context clctx;
static cl_command_queue queue;
static cl_device_id device;
static tsr_context *tctx, *cpu_ctx;
static int tuned_state; /* 0 not applied yet, 1 applied, -1 unavailable */
static char tuned_why[256];
static char tuned_names[MAX_PARAMS][16];
static size_t tuned_values[MAX_PARAMS];
static int tuned_count;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static cl_mem buffer_from(const float *host, size_t n) {
    cl_int e;
    cl_mem m = clCreateBuffer(clctx, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), n * sizeof(float),
                              (void *)host, &e);
    if (e != CL_SUCCESS) {
        fprintf(stderr, "tessera-bench: clCreateBuffer of %zu floats: %d\n", n, e);
        exit(2);
    }
    return m;
}

/* ------------------------------------------------------------ the calls */

static int call_gemm(ocl_case *c) {
    const gemm_shape *s = &c->s;
    const size_t lda = (size_t)(s->trans_a ? s->m : s->k), ldb = (size_t)(s->trans_b ? s->k : s->n);
    if (c->impl == IMPL_TESSERA || c->impl == IMPL_CPU) {
        tsr_gemm_desc d;
        tsr_gemm_desc_init(&d);
        d.m = s->m, d.n = s->n, d.k = s->k;
        d.trans_a = s->trans_a ? TSR_TRANS : TSR_NO_TRANS, d.trans_b = s->trans_b ? TSR_TRANS : TSR_NO_TRANS;
        if (c->impl == IMPL_CPU) return tsr_gemm(cpu_ctx, &d, c->ha, c->hb, c->hc) == TSR_OK ? 0 : -1;
        return tsr_gemm(tctx, &d, c->a, c->b, c->c) == TSR_OK ? 0 : -1;
    }
    CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, s->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                                        s->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)s->m,
                                        (size_t)s->n, (size_t)s->k, 1.0f, c->a, 0, lda, c->b, 0, ldb, 0.0f, c->c, 0,
                                        (size_t)s->n, &queue, NULL);
    if (st != CLBlastSuccess) snprintf(c->why, sizeof c->why, "CLBlastSgemm: status %d", (int)st);
    return st == CLBlastSuccess ? 0 : -1;
}

static int64_t conv_out(int64_t in, int64_t f, int64_t stride, int64_t pad) { return (in + 2 * pad - f) / stride + 1; }

/* tessera: NHWC/OHWI (nhwc) or NCHW/OIHW, the layout CLBlast's convgemm uses */
static int tessera_conv(const ocl_conv *v, cl_mem x, cl_mem w, cl_mem y, int nhwc) {
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.format = nhwc ? TSR_NHWC : TSR_NCHW, d.filter_format = nhwc ? TSR_FILTER_OHWI : TSR_FILTER_OIHW;
    d.n = v->n, d.c = v->c, d.h = v->h, d.w = v->w, d.k = v->k, d.r = v->r, d.s = v->s;
    d.stride_h = d.stride_w = v->stride;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = v->pad;
    return tsr_conv2d(tctx, &d, x, w, y) == TSR_OK ? 0 : -1;
}

static int clblast_conv(const ocl_conv *v, cl_mem x, cl_mem w, cl_mem y) {
    CLBlastStatusCode st = CLBlastSconvgemm(CLBlastKernelModeCrossCorrelation, (size_t)v->c, (size_t)v->h,
                                            (size_t)v->w, (size_t)v->r, (size_t)v->s, (size_t)v->pad, (size_t)v->pad,
                                            (size_t)v->stride, (size_t)v->stride, 1, 1, (size_t)v->k, (size_t)v->n,
                                            x, 0, w, 0, y, 0, &queue, NULL);
    return st == CLBlastSuccess ? 0 : -1;
}

static int call(ocl_case *c) {
    if (!c->is_conv) return call_gemm(c);
    return c->impl == IMPL_TESSERA ? tessera_conv(&c->cv, c->a, c->b, c->c, 1) : clblast_conv(&c->cv, c->a, c->b, c->c);
}

/* ------------------------------------------------- CLBlast's own tuner */

static void cache_dir(char *out, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(out, n, "%s/tessera/clblast", xdg);
    else snprintf(out, n, "%s/.cache/tessera/clblast", home && *home ? home : "/tmp");
}

static void mkdirs(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') *p = 0, mkdir(tmp, 0755), *p = '/';
    mkdir(tmp, 0755);
}

/* "best_parameters": "GEMMK=0 KREG=1 ... PRECISION=32" and "best_time": "12.3" */
static int parse_tuner_json(const char *path, double *best_time) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *t = strstr(buf, "\"best_time\"");
    const char *p = strstr(buf, "\"best_parameters\"");
    if (!t || !p) return 0;
    t = strchr(t + 11, ':');
    *best_time = t ? strtod(t + 1 + strspn(t + 1, " \""), NULL) : 1e30;
    p = strchr(p + 17, '"');
    if (!p) return 0;
    p++;
    int n = 0;
    while (*p && *p != '"' && n < MAX_PARAMS) {
        char name[16];
        unsigned long v;
        int used = 0;
        if (sscanf(p, " %15[A-Z_0-9]=%lu%n", name, &v, &used) != 2) break;
        p += used;
        if (strcmp(name, "PRECISION") != 0) {
            snprintf(tuned_names[n], sizeof tuned_names[n], "%s", name);
            tuned_values[n++] = v;
        }
    }
    tuned_count = n;
    return n > 0;
}

static void device_indices(int *plat, int *dev) {
    cl_platform_id plats[16], want = NULL;
    cl_uint np = 0;
    clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof want, &want, NULL);
    clGetPlatformIDs(16, plats, &np);
    *plat = *dev = 0;
    for (cl_uint p = 0; p < np; p++) {
        if (plats[p] != want) continue;
        cl_device_id devs[64];
        cl_uint nd = 0;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd);
        for (cl_uint d = 0; d < nd; d++)
            if (devs[d] == device) *plat = (int)p, *dev = (int)d;
    }
}

/* Loads the cached best parameters, or runs clblast_tuner_xgemm (bounded by
 * timeout_s) in a scratch directory and caches its best result. */
static void prepare_tuned(int timeout_s, int quick) {
    char dir[1024], name[256], path[1400];
    cache_dir(dir, sizeof dir);
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    for (char *q = name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9'))) *q = '_';
    snprintf(path, sizeof path, "%s/%s-xgemm.json", dir, name);
    double t;
    if (parse_tuner_json(path, &t)) {
        printf("clblast_tuned: CLBlast's tuner result for this device from %s (%d parameters)\n", path, tuned_count);
        return;
    }
    int plat, dev;
    device_indices(&plat, &dev);
    char work[] = "/tmp/tessera-clblast-tune-XXXXXX";
    if (!mkdtemp(work)) {
        tuned_state = -1, snprintf(tuned_why, sizeof tuned_why, "no scratch directory for the tuner");
        return;
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && timeout %d clblast_tuner_xgemm -platform %d -device %d -precision 32 -runs 1 %s >tuner.log 2>&1",
             work, timeout_s, plat, dev, quick ? "-m 512 -n 512 -k 512" : "");
    printf("clblast_tuned: running CLBlast's tuner on this device (budget %d s; once: the result is cached in %s)\n",
           timeout_s, dir);
    fflush(stdout);
    double t0 = now();
    int rc = system(cmd);
    /* the best over the tuner's phases (xgemm_1, xgemm_2, xgemm_11, ...) */
    double best = 1e30;
    char best_file[1400] = "";
    const char *phases[] = {"1", "2", "11", "12"};
    for (int i = 0; i < 4; i++) {
        char f[1400];
        snprintf(f, sizeof f, "%s/clblast_xgemm_%s_32.json", work, phases[i]);
        double bt;
        if (parse_tuner_json(f, &bt) && bt < best) best = bt, snprintf(best_file, sizeof best_file, "%s", f);
    }
    printf("clblast_tuned: tuner finished in %.0f s (exit %d)%s\n", now() - t0, rc,
           best_file[0] ? "" : ": no result");
    if (!best_file[0] || !parse_tuner_json(best_file, &best)) {
        tuned_state = -1;
        snprintf(tuned_why, sizeof tuned_why, "clblast_tuner_xgemm gave no result within %d s (see %s/tuner.log)",
                 timeout_s, work);
        return;
    }
    mkdirs(dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.tmp' && mv '%s.tmp' '%s' && rm -rf '%s'", best_file, path, path, path, work);
    if (system(cmd) != 0) fprintf(stderr, "tessera-bench: could not cache the tuner's result in %s\n", path);
}

static int apply_tuned(void) {
    if (tuned_state) return tuned_state;
    const char *names[MAX_PARAMS];
    for (int i = 0; i < tuned_count; i++) names[i] = tuned_names[i];
    CLBlastStatusCode st = CLBlastOverrideParameters(device, "Xgemm", CLBlastPrecisionSingle, (size_t)tuned_count,
                                                     names, tuned_values);
    if (st != CLBlastSuccess) {
        snprintf(tuned_why, sizeof tuned_why, "CLBlastOverrideParameters(Xgemm): status %d", (int)st);
        return tuned_state = -1;
    }
    return tuned_state = 1;
}

/* ---------------------------------------------------------- benchmarks */

static int check_against(ocl_case *c, const ocl_case *ref);

static void bench_case(gb_state *st, void *arg) {
    ocl_case *c = arg;
    if (c->impl == IMPL_TUNED && apply_tuned() < 0) {
        gb_skip_with_error(st, tuned_why);
        return;
    }
    if (c->impl == IMPL_TUNED && !c->failed) check_against(c, c - IMPL_TUNED); /* same shape, tessera */
    if (c->failed) {
        gb_skip_with_error(st, c->why);
        return;
    }
    while (gb_keep_running(st)) {
        if (call(c)) {
            gb_skip_with_error(st, c->why[0] ? c->why : tsr_last_error());
            break;
        }
        if (c->impl != IMPL_CPU) clFinish(queue);
    }
}

static size_t out_elems(const ocl_case *c) {
    if (!c->is_conv) return (size_t)(c->s.m * c->s.n);
    const ocl_conv *v = &c->cv;
    return (size_t)(v->n * v->k * conv_out(v->h, v->r, v->stride, v->pad) * conv_out(v->w, v->s, v->stride, v->pad));
}

static void read_out(const ocl_case *c, float *host) {
    if (c->impl == IMPL_CPU) memcpy(host, c->hc, out_elems(c) * sizeof(float));
    else clEnqueueReadBuffer(queue, c->c, CL_TRUE, 0, out_elems(c) * sizeof(float), host, 0, NULL, NULL);
}

/* Runs c once and compares with ref's output (ref already run). */
static int check_against(ocl_case *c, const ocl_case *ref) {
    size_t n = out_elems(c);
    float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    if (call(c)) {
        c->failed = 1;
        if (!c->why[0]) snprintf(c->why, sizeof c->why, "%s", tsr_last_error());
    } else {
        clFinish(queue);
        read_out(ref, want);
        read_out(c, got);
        double tol = 1e-4 * sqrt(c->is_conv ? (double)(c->cv.c * c->cv.r * c->cv.s) : (double)c->s.k);
        for (size_t j = 0; j < n; j++)
            if (!(fabs(got[j] - want[j]) <= tol * (1 + fabs(want[j])))) {
                fprintf(stderr, "MISMATCH %s: %s[%zu] = %g, tessera = %g\n", c->is_conv ? "conv" : "gemm",
                        impl_names[c->impl], j, got[j], want[j]);
                c->failed = 2;
                snprintf(c->why, sizeof c->why, "MISMATCH: result differs from tessera's");
                break;
            }
    }
    free(want), free(got);
    return c->failed;
}

static void add_gemm(const gemm_shape *s, int with_cpu) {
    size_t an = (size_t)(s->m * s->k), bn = (size_t)(s->k * s->n), cn = (size_t)(s->m * s->n);
    float *a = bench_filled(TSR_F32, an, 1, -0.5f, 0.5f), *b = bench_filled(TSR_F32, bn, 2, -0.5f, 0.5f);
    cl_mem da = buffer_from(a, an), db = buffer_from(b, bn);
    ocl_case *group = &cases[ncases];
    for (int i = 0; i < NUM_IMPLS; i++) {
        ocl_case *c = &cases[ncases++];
        memset(c, 0, sizeof *c);
        c->impl = i, c->s = *s, c->flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
        c->a = da, c->b = db, c->c = buffer_from(NULL, cn);
        if (i == IMPL_CPU) {
            c->ha = a, c->hb = b, c->hc = malloc(cn * sizeof(float));
            if (!with_cpu) c->failed = 1, snprintf(c->why, sizeof c->why, "the OpenCL device is not the CPU");
        }
    }
    if (call(&group[0])) {
        for (int i = 0; i < NUM_IMPLS; i++)
            group[i].failed = 1, snprintf(group[i].why, sizeof group[i].why, "tessera: %s", tsr_last_error());
        return;
    }
    clFinish(queue);
    check_against(&group[IMPL_CLBLAST], &group[0]);
    if (with_cpu) check_against(&group[IMPL_CPU], &group[0]);
}

static void add_conv(const ocl_conv *v) {
    size_t xn = (size_t)(v->n * v->c * v->h * v->w), wn = (size_t)(v->k * v->c * v->r * v->s);
    float *x = bench_filled(TSR_F32, xn, 3, -0.5f, 0.5f), *w = bench_filled(TSR_F32, wn, 4, -0.5f, 0.5f);
    cl_mem dx = buffer_from(x, xn), dw = buffer_from(w, wn);
    free(x), free(w);
    ocl_case *group = &cases[ncases];
    for (int i = 0; i < 2; i++) {
        ocl_case *c = &cases[ncases++];
        memset(c, 0, sizeof *c);
        c->impl = i, c->is_conv = 1, c->cv = *v, c->a = dx, c->b = dw;
        c->c = buffer_from(NULL, out_elems(c));
        c->flops = 2.0 * (double)out_elems(c) * (double)(v->c * v->r * v->s);
    }
    /* CLBlast's convgemm is NCHW/KCRS: check it against tessera in that layout */
    ocl_case nchw = group[0];
    nchw.c = buffer_from(NULL, out_elems(&nchw));
    if (tessera_conv(v, dx, dw, nchw.c, 0) == 0) {
        clFinish(queue);
        check_against(&group[1], &nchw);
    }
    clReleaseMemObject(nchw.c);
    if (call(&group[0])) group[0].failed = 1, snprintf(group[0].why, sizeof group[0].why, "%s", tsr_last_error());
}

/* The ResNet-50 layers of the CPU conv bench's set at batch 1 (their fused
 * residuals are not part of CLBlast's convgemm, so none is added here). */
static int read_conv_shapes(ocl_conv *out, int max) {
    conv_shape *shapes;
    int n = shapes_read_conv("resnet50", BENCH_SHAPES_DIR, &shapes), m = 0;
    for (int i = 0; i < n && m < max; i++)
        if (shapes[i].groups == 1)
            out[m++] = (ocl_conv){1, shapes[i].c, shapes[i].h, shapes[i].w, shapes[i].k, shapes[i].r, shapes[i].s,
                                  shapes[i].stride, shapes[i].pad};
    if (n >= 0) free(shapes);
    return n < 0 ? -1 : m;
}

static void case_name(const ocl_case *c, char *out, size_t n) {
    if (c->is_conv) {
        const ocl_conv *v = &c->cv;
        snprintf(out, n, "conv2d/f32/NHWC/n%lldc%lldh%lldw%lldk%lldr%llds%lldu%lldp%lld/%s", (long long)v->n,
                 (long long)v->c, (long long)v->h, (long long)v->w, (long long)v->k, (long long)v->r, (long long)v->s,
                 (long long)v->stride, (long long)v->pad, impl_names[c->impl]);
        return;
    }
    static const char *lay[4] = {"NN", "NT", "TN", "TT"};
    snprintf(out, n, "gemm/f32/%s/%lldx%lldx%lld/%s", lay[c->s.trans_a * 2 + c->s.trans_b], (long long)c->s.m,
             (long long)c->s.n, (long long)c->s.k, impl_names[c->impl]);
}

static void summary(void) {
    const gb_result *r;
    int nr = gb_results(&r);
    printf("\nsummary: GFLOP/s on the OpenCL device (tessera_cpu: Tessera's CPU kernels on the host)\n");
    printf("%-44s %9s %9s %9s %9s  %8s %8s %8s\n", "gemm f32 shape", "tessera", "clblast", "cl_tuned", "cpu",
           "vs clbl", "vs tuned", "of cpu");
    double g[NUM_IMPLS];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) printf("\n%-44s %9s %9s  %8s\n", "conv2d f32 (ResNet-50, batch 1)", "tessera", "convgemm", "vs clbl");
        for (int i = 0; i < ncases;) {
            const ocl_case *c = &cases[i];
            int width = c->is_conv ? 2 : NUM_IMPLS;
            if (c->is_conv != pass) {
                i += width;
                continue;
            }
            char shape[192];
            for (int k = 0; k < width; k++) {
                char name[192];
                case_name(&cases[i + k], name, sizeof name);
                g[k] = 0;
                const size_t len = strlen(name);
                for (int j = 0; j < nr; j++) /* Google Benchmark appends /real_time */
                    if (!strncmp(r[j].name, name, len) && (r[j].name[len] == 0 || r[j].name[len] == '/') &&
                        !r[j].error)
                        g[k] = r[j].gflops;
            }
            case_name(c, shape, sizeof shape);
            *strrchr(shape, '/') = 0;
#define RATIO(a, b) ((b) > 0 && (a) > 0 ? (a) / (b) : 0)
            if (!pass)
                printf("%-44s %9.1f %9.1f %9.1f %9.1f  %7.2fx %7.2fx %7.0f%%\n", shape, g[0], g[1], g[2], g[3],
                       RATIO(g[0], g[1]), RATIO(g[0], g[2]), 100 * RATIO(g[0], g[3]));
            else
                printf("%-44s %9.1f %9.1f  %7.2fx\n", shape + 11, g[0], g[1], RATIO(g[0], g[1]));
            i += width;
        }
    }
}

/* ------------------------------------------------------ first result */

int opencl_first_result_child(const char *impl) {
    const int64_t n = 256;
    double t0 = now();
    float *h = bench_filled(TSR_F32, (size_t)(n * n), 1, -0.5f, 0.5f), *out = malloc(sizeof(float) * (size_t)(n * n));
    if (!strcmp(impl, "tessera")) {
        tsr_context_options o;
        tsr_context_options_init(&o);
        o.backend = TSR_BACKEND_OPENCL;
        tsr_context *c;
        if (tsr_context_create(&c, &o)) return fprintf(stderr, "%s\n", tsr_last_error()), 1;
        void *a, *b, *y;
        size_t bytes = sizeof(float) * (size_t)(n * n);
        tsr_malloc(c, &a, bytes), tsr_malloc(c, &b, bytes), tsr_malloc(c, &y, bytes);
        tsr_memcpy(c, a, h, bytes, TSR_MEMCPY_HOST_TO_DEVICE), tsr_memcpy(c, b, h, bytes, TSR_MEMCPY_HOST_TO_DEVICE);
        tsr_gemm_desc d;
        tsr_gemm_desc_init(&d);
        d.m = d.n = d.k = n;
        if (tsr_gemm(c, &d, a, b, y)) return fprintf(stderr, "%s\n", tsr_last_error()), 1;
        tsr_memcpy(c, out, y, bytes, TSR_MEMCPY_DEVICE_TO_HOST);
    } else {
        cl_platform_id p;
        cl_device_id dv;
        cl_int e;
        clGetPlatformIDs(1, &p, NULL);
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dv, NULL);
        cl_context cx = clCreateContext(NULL, 1, &dv, NULL, NULL, &e);
        cl_command_queue q = clCreateCommandQueue(cx, dv, 0, &e);
        size_t bytes = sizeof(float) * (size_t)(n * n);
        cl_mem a = clCreateBuffer(cx, CL_MEM_COPY_HOST_PTR, bytes, h, &e), y = clCreateBuffer(cx, 0, bytes, NULL, &e);
        if (CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)n, (size_t)n, (size_t)n,
                         1.0f, a, 0, (size_t)n, a, 0, (size_t)n, 0.0f, y, 0, (size_t)n, &q, NULL) != CLBlastSuccess)
            return 1;
        clEnqueueReadBuffer(q, y, CL_TRUE, 0, bytes, out, 0, NULL, NULL);
    }
    printf("%.6f\n", now() - t0);
    return 0;
}

static double run_child(const char *argv0, const char *impl, const char *cache) {
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        setenv("TESSERA_OPENCL_CACHE_DIR", cache, 1);
        setenv("POCL_KERNEL_CACHE", "0", 1); /* PoCL's own cache off: only ours counts */
        execl(argv0, argv0, "--first-result-child", impl, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[64] = "";
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
    buf[got] = 0;
    return atof(buf);
}

static int first_result(const char *argv0) {
    char cache[] = "/tmp/tessera-first-result-XXXXXX";
    if (!mkdtemp(cache)) return 2;
    printf("time to first result: a new process, context creation to a 256^3 f32 GEMM's result on the host\n"
           "(PoCL's own kernel cache off: POCL_KERNEL_CACHE=0)\n");
    double cold = run_child(argv0, "tessera", cache), warm = run_child(argv0, "tessera", cache);
    double warm2 = run_child(argv0, "tessera", cache);
    double cb1 = run_child(argv0, "clblast", cache), cb2 = run_child(argv0, "clblast", cache);
    printf("  tessera, cold binary cache (compiles):  %8.3f s\n", cold);
    printf("  tessera, warm binary cache (2nd run):   %8.3f s\n", warm);
    printf("  tessera, warm binary cache (3rd run):   %8.3f s\n", warm2);
    printf("  clblast, 1st process (compiles):        %8.3f s\n", cb1);
    printf("  clblast, 2nd process (no disk cache):   %8.3f s\n", cb2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    if (system(cmd) != 0) fprintf(stderr, "tessera-bench: could not remove %s\n", cache);
    return cold < 0 || warm < 0 ? 1 : 0;
}

/* ---------------------------------------------------------------- main */

int opencl_suite_main(const opencl_bench_options *o) {
    tsr_context_options opts;
    tsr_context_options_init(&opts);
    opts.backend = TSR_BACKEND_OPENCL;
    tsr_context *probe = NULL;
    if (tsr_context_create(&probe, &opts) != TSR_OK) {
        printf("SKIP opencl: %s\n", tsr_last_error());
        return 0;
    }
    if (o->first_result) {
        tsr_context_destroy(probe);
        return first_result(o->argv0);
    }
    tsr_context_info info = {.size = sizeof info};
    tsr_context_get_info(probe, &info);
    tsr_context_destroy(probe);
    /* the same device, one queue shared by tessera and CLBlast */
    cl_platform_id plats[16];
    cl_uint np = 0;
    clGetPlatformIDs(16, plats, &np);
    int idx = 0;
    for (cl_uint p = 0; p < np && !device; p++) {
        cl_device_id devs[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && !device; d++, idx++)
            if (idx == info.device) device = devs[d];
    }
    cl_int e;
    clctx = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    queue = clCreateCommandQueue(clctx, device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (e != CL_SUCCESS) return fprintf(stderr, "tessera-bench: no OpenCL queue (%d)\n", e), 2;
    opts.stream = queue;
    if (tsr_context_create(&tctx, &opts) != TSR_OK) return fprintf(stderr, "tessera-bench: %s\n", tsr_last_error()), 2;
    tsr_context_options co;
    tsr_context_options_init(&co);
    co.num_threads = o->threads;
    tsr_context_create(&cpu_ctx, &co);
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    const int is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
    printf("tessera-bench %s --backend opencl: %s, driver %s, %d compute units; tessera_cpu %d threads; %s\n",
           tsr_version_string(), info.device_name, info.driver, info.compute_units, o->threads, date);
    prepare_tuned(o->tune_timeout_s, o->quick);

    for (int si = 0; si < o->nsets; si++) {
        gemm_shape *shapes;
        int n = shapes_read_gemm(o->sets[si], BENCH_SHAPES_DIR, &shapes);
        if (n < 0) return 2;
        for (int i = 0; i < n && ncases + NUM_IMPLS <= MAX_CASES; i++) add_gemm(&shapes[i], is_cpu);
        free(shapes);
    }
    ocl_conv cv[64];
    int ncv = read_conv_shapes(cv, 64);
    for (int i = 0; i < ncv && ncases + 2 <= MAX_CASES; i++)
        if (!o->quick || i % 4 == 1) add_conv(&cv[i]);
    /* CLBlast as shipped before any override: implementation-major order */
    char name[192];
    const int order[NUM_IMPLS] = {IMPL_TESSERA, IMPL_CLBLAST, IMPL_CPU, IMPL_TUNED};
    for (int k = 0; k < NUM_IMPLS; k++)
        for (int i = 0; i < ncases; i++) {
            if (cases[i].impl != order[k]) continue;
            case_name(&cases[i], name, sizeof name);
            gb_register(name, bench_case, &cases[i], cases[i].flops, 0);
        }
    gb_run();
    int mismatches = 0;
    for (int i = 0; i < ncases; i++) mismatches += cases[i].failed == 2;
    if (o->summary) summary();
    if (mismatches) fprintf(stderr, "tessera-bench: %d results mismatched\n", mismatches);
    return mismatches ? 1 : 0;
}
