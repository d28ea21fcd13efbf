/* tessera-bench --backend cuda --op conv: Tessera's CUDA conv2d against
 * cuDNN on a shape set (default: ResNet-50's 20 layers), NHWC activations,
 * OHWI (cuDNN: KRSC) filters, f16 with f32 accumulation, batch 32 (8 with
 * --quick), each layer with the fused epilogue the set names (bias + relu,
 * or bias + residual + relu) on both sides: cuDNN through
 * cudnnConvolutionBiasActivationForward with the algorithm
 * cudnnFindConvolutionForwardAlgorithmEx measured fastest on these buffers.
 * Outputs are cross-checked before anything is timed; a mismatch is
 * reported and makes the run fail.
 *
 * cuDNN is loaded with dlopen, never linked: $TESSERA_CUDNN_LIB, else
 * libcudnn.so.9 from the loader's path (scripts/gpu-check puts PyTorch's
 * nvidia-cudnn-cu13 wheel on LD_LIBRARY_PATH). Only its header is needed at
 * build time; without either, the cuDNN lines print SKIP by name and
 * Tessera is still timed. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_suite.h"
#include "fill.h"
#include "gbench_shim.h"
#include "shapes.h"
#include "tessera.h"

#if defined(__has_include)
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define HAVE_CUDNN_H 1
#endif
#endif

enum { MAX_CONV = 64, WS_BYTES = 256 << 20 };

typedef struct conv_case {
    char name[2][160];  /* tessera, cudnn */
    conv_shape s;
    int64_t n, p, q;
    void *x, *w, *bias, *res, *y[2];
    double flops;
    int calls[2];
    int failed[2];
    char why[2][320];
#ifdef HAVE_CUDNN_H
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    cudnnConvolutionFwdAlgo_t algo;
#endif
} conv_case;

static conv_case cases[MAX_CONV];
static int ncases;
static cudaStream_t stream;
static cudaEvent_t ev0, ev1;
static tsr_context *tctx;
static void *ws;

/* ------------------------------------------------------------- cuDNN */

#ifdef HAVE_CUDNN_H
/* The legacy convolution API is marked deprecated in cuDNN 9; it is what
 * cudnnFind and the fused bias + activation call still are. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static struct {
    void *so;
    cudnnHandle_t h;
#define F(name) __typeof__(&name) name
    F(cudnnCreate); F(cudnnSetStream); F(cudnnGetErrorString);
    F(cudnnCreateTensorDescriptor); F(cudnnSetTensor4dDescriptor);
    F(cudnnCreateFilterDescriptor); F(cudnnSetFilter4dDescriptor);
    F(cudnnCreateConvolutionDescriptor); F(cudnnSetConvolution2dDescriptor);
    F(cudnnSetConvolutionGroupCount); F(cudnnSetConvolutionMathType);
    F(cudnnCreateActivationDescriptor); F(cudnnSetActivationDescriptor);
    F(cudnnFindConvolutionForwardAlgorithmEx); F(cudnnConvolutionBiasActivationForward);
#undef F
} dnn;

/* Loads cuDNN; 0 with why filled when it cannot. */
static int cudnn_open(char *why, size_t n) {
    const char *env = getenv("TESSERA_CUDNN_LIB");
    dnn.so = dlopen(env && *env ? env : "libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!dnn.so) return snprintf(why, n, "cannot load cuDNN (%s); set TESSERA_CUDNN_LIB or LD_LIBRARY_PATH", dlerror()), 0;
#define L(name)                                                                                   \
    {                                                                                             \
        void *sym = dlsym(dnn.so, #name);                                                         \
        if (!sym) return snprintf(why, n, "cuDNN has no %s", #name), 0;                           \
        memcpy(&dnn.name, &sym, sizeof sym);                                                      \
    }
    L(cudnnCreate) L(cudnnSetStream) L(cudnnGetErrorString) L(cudnnCreateTensorDescriptor)
    L(cudnnSetTensor4dDescriptor) L(cudnnCreateFilterDescriptor) L(cudnnSetFilter4dDescriptor)
    L(cudnnCreateConvolutionDescriptor) L(cudnnSetConvolution2dDescriptor) L(cudnnSetConvolutionGroupCount)
    L(cudnnSetConvolutionMathType) L(cudnnCreateActivationDescriptor) L(cudnnSetActivationDescriptor)
    L(cudnnFindConvolutionForwardAlgorithmEx) L(cudnnConvolutionBiasActivationForward)
#undef L
    if (dnn.cudnnCreate(&dnn.h) != CUDNN_STATUS_SUCCESS) return snprintf(why, n, "cudnnCreate failed"), 0;
    dnn.cudnnSetStream(dnn.h, stream);
    return 1;
}

/* y = relu(conv(x) + bias [+ res]) with the algorithm chosen by Find. */
static int cudnn_call(conv_case *c) {
    const float one = 1.0f, zero = 0.0f;
    const void *z = c->s.residual ? c->res : c->y[1];
    return dnn.cudnnConvolutionBiasActivationForward(dnn.h, &one, c->xd, c->x, c->wd, c->w, c->cd, c->algo, ws,
                                                     WS_BYTES, c->s.residual ? &one : &zero, c->yd, z, c->bd,
                                                     c->bias, c->ad, c->yd, c->y[1]) == CUDNN_STATUS_SUCCESS
               ? 0
               : -1;
}

static int cudnn_prepare(conv_case *c, char *why, size_t n) {
    const conv_shape *s = &c->s;
    cudnnStatus_t st;
#define CK(e)                                                                                  \
    if ((st = (e)) != CUDNN_STATUS_SUCCESS)                                                    \
        return snprintf(why, n, "%s: %s", #e, dnn.cudnnGetErrorString(st)), 0;
    CK(dnn.cudnnCreateTensorDescriptor(&c->xd))
    CK(dnn.cudnnCreateTensorDescriptor(&c->yd))
    CK(dnn.cudnnCreateTensorDescriptor(&c->bd))
    CK(dnn.cudnnCreateFilterDescriptor(&c->wd))
    CK(dnn.cudnnCreateConvolutionDescriptor(&c->cd))
    CK(dnn.cudnnCreateActivationDescriptor(&c->ad))
    CK(dnn.cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, (int)c->n, (int)s->c, (int)s->h, (int)s->w))
    CK(dnn.cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, (int)c->n, (int)s->k, (int)c->p, (int)c->q))
    CK(dnn.cudnnSetTensor4dDescriptor(c->bd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, (int)s->k, 1, 1))
    CK(dnn.cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, (int)s->k, (int)(s->c / s->groups),
                                      (int)s->r, (int)s->s))
    CK(dnn.cudnnSetConvolution2dDescriptor(c->cd, (int)s->pad, (int)s->pad, (int)s->stride, (int)s->stride, 1, 1,
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT))
    CK(dnn.cudnnSetConvolutionGroupCount(c->cd, (int)s->groups))
    CK(dnn.cudnnSetConvolutionMathType(c->cd, CUDNN_TENSOR_OP_MATH))
    CK(dnn.cudnnSetActivationDescriptor(c->ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0))
    cudnnConvolutionFwdAlgoPerf_t perf[16];
    int got = 0;
    CK(dnn.cudnnFindConvolutionForwardAlgorithmEx(dnn.h, c->xd, c->x, c->wd, c->w, c->cd, c->yd, c->y[1], 16, &got,
                                                  perf, ws, WS_BYTES))
#undef CK
    /* the fastest that ran, fits the workspace and takes the fused call */
    for (int i = 0; i < got; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > WS_BYTES) continue;
        c->algo = perf[i].algo;
        if (cudnn_call(c) == 0 && cudaStreamSynchronize(stream) == cudaSuccess) return 1;
    }
    return snprintf(why, n, "no cuDNN algorithm ran cudnnConvolutionBiasActivationForward"), 0;
}
#endif

/* ----------------------------------------------------------- Tessera */

static int tessera_call(conv_case *c) {
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.format = TSR_NHWC, d.filter_format = TSR_FILTER_OHWI;
    d.n = c->n, d.c = c->s.c, d.h = c->s.h, d.w = c->s.w, d.k = c->s.k, d.r = c->s.r, d.s = c->s.s;
    d.stride_h = d.stride_w = c->s.stride;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = c->s.pad;
    d.groups = c->s.groups;
    d.x_dtype = d.w_dtype = d.y_dtype = TSR_F16;
    d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_bias(c->bias, TSR_F16);
    if (c->s.residual) d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_residual(c->res, TSR_F16, 0, 1.0f);
    d.epilogue.steps[d.epilogue.num_steps++] = tsr_epilogue_activation(TSR_ACT_RELU);
    return tsr_conv2d(tctx, &d, c->x, c->w, c->y[0]) == TSR_OK ? 0 : -1;
}

static int call(conv_case *c, int impl) {
#ifdef HAVE_CUDNN_H
    if (impl) return cudnn_call(c);
#endif
    return impl ? -1 : tessera_call(c);
}

/* ------------------------------------------------------------ timing */

static double time_batch(conv_case *c, int impl, int calls) {
    cudaEventRecord(ev0, stream);
    for (int i = 0; i < calls; i++)
        if (call(c, impl)) return -1;
    cudaEventRecord(ev1, stream);
    if (cudaEventSynchronize(ev1) != cudaSuccess) return -1;
    float ms = 0;
    cudaEventElapsedTime(&ms, ev0, ev1);
    return ms * 1e-3;
}

typedef struct bench_arg {
    conv_case *c;
    int impl;
} bench_arg;
static bench_arg args[MAX_CONV][2];

static void bench_fn(gb_state *st, void *p) {
    bench_arg *a = p;
    conv_case *c = a->c;
    if (c->failed[a->impl]) {
        gb_skip_with_error(st, c->why[a->impl]);
        return;
    }
    while (gb_keep_running(st)) {
        double t = time_batch(c, a->impl, c->calls[a->impl]);
        if (t < 0) {
            gb_skip_with_error(st, "a call failed while timing");
            break;
        }
        gb_set_iteration_time(st, t);
    }
}

static void *dev_pattern(tsr_dtype dt, size_t n, unsigned seed) {
    void *h = bench_filled(dt, n, seed, -0.5f, 0.5f), *d = NULL;
    if (!h || cudaMalloc(&d, n * tsr_dtype_size(dt) + 16) != cudaSuccess) {
        fprintf(stderr, "tessera-bench: out of memory for a conv case\n");
        exit(2);
    }
    cudaMemcpy(d, h, n * tsr_dtype_size(dt), cudaMemcpyHostToDevice);
    free(h);
    return d;
}

/* Both outputs agree within f16 rounding of a sum of products? */
static int agree(conv_case *c, size_t ny, char *why, size_t n) {
    uint16_t *a = malloc(ny * 2), *b = malloc(ny * 2);
    cudaMemcpy(a, c->y[0], ny * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(b, c->y[1], ny * 2, cudaMemcpyDeviceToHost);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < ny; i++) {
        const float x = tsr_f16_to_f32(a[i]), y = tsr_f16_to_f32(b[i]);
        if (!(fabsf(x - y) <= 2e-2f + 1e-2f * fabsf(y)) && bad++ == 0) first = i;
    }
    if (bad) snprintf(why, n, "MISMATCH: %zu of %zu outputs differ, first y[%zu] tessera %g cudnn %g", bad, ny, first,
                      tsr_f16_to_f32(a[first]), tsr_f16_to_f32(b[first]));
    free(a), free(b);
    return bad == 0;
}

static void calibrate(conv_case *c, int impl) {
    if (c->failed[impl]) return;
    double t = time_batch(c, impl, 1);
    if (t >= 0) t = time_batch(c, impl, 3) / 3;
    if (t < 0) {
        c->failed[impl] = 1;
        snprintf(c->why[impl], sizeof c->why[impl], "error: %s", impl ? "cuDNN call failed" : tsr_last_error());
        return;
    }
    const int calls = t > 0 ? (int)(2e-3 / t) : 100;
    c->calls[impl] = calls < 1 ? 1 : calls > 200 ? 200 : calls;
}

static const gb_result *find(const gb_result *r, int nr, const char *name) {
    for (int j = 0; j < nr; j++)
        if (!strncmp(r[j].name, name, strlen(name))) return &r[j];
    return NULL;
}

int cuda_conv_main(const char *const *sets, int nsets, int quick, int want_summary) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        printf("SKIP cuda: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 0;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaEventCreate(&ev0), cudaEventCreate(&ev1);
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_CUDA, o.stream = stream;
    if (tsr_context_create(&tctx, &o) != TSR_OK) {
        printf("SKIP cuda: %s\n", tsr_last_error());
        return 0;
    }
    if (cudaMalloc(&ws, WS_BYTES) != cudaSuccess) return fprintf(stderr, "tessera-bench: no workspace\n"), 2;
    char dnn_why[256] = "tessera-bench was built without cudnn.h";
#ifdef HAVE_CUDNN_H
    const int have_dnn = cudnn_open(dnn_why, sizeof dnn_why);
#else
    const int have_dnn = 0;
#endif
    if (!have_dnn) printf("SKIP cudnn: %s\n", dnn_why);
    printf("conv2d on %s (%d SMs): NHWC f16, f32 accumulation, batch %d\n", prop.name, prop.multiProcessorCount,
           quick ? 8 : 32);

    const char *def = "resnet50";
    if (nsets == 0) sets = &def, nsets = 1;
    for (int si = 0; si < nsets; si++) {
        conv_shape *shapes;
        const int ns = shapes_read_conv(sets[si], BENCH_SHAPES_DIR, &shapes);
        if (ns < 0) return 2;
        for (int i = 0; i < ns && ncases < MAX_CONV; i++) {
            conv_case *c = &cases[ncases++];
            memset(c, 0, sizeof *c);
            c->s = shapes[i];
            c->n = quick ? 8 : 32;
            c->p = (c->s.h + 2 * c->s.pad - c->s.r) / c->s.stride + 1;
            c->q = (c->s.w + 2 * c->s.pad - c->s.s) / c->s.stride + 1;
            const size_t nx = (size_t)(c->n * c->s.c * c->s.h * c->s.w), ny = (size_t)(c->n * c->s.k * c->p * c->q);
            const size_t nw = (size_t)(c->s.k * (c->s.c / c->s.groups) * c->s.r * c->s.s);
            c->flops = 2.0 * (double)ny * (double)(c->s.c / c->s.groups) * (double)(c->s.r * c->s.s);
            c->x = dev_pattern(TSR_F16, nx, 1), c->w = dev_pattern(TSR_F16, nw, 2);
            c->bias = dev_pattern(TSR_F16, (size_t)c->s.k, 3);
            c->res = c->s.residual ? dev_pattern(TSR_F16, ny, 4) : NULL;
            c->y[0] = dev_pattern(TSR_F16, ny, 5), c->y[1] = dev_pattern(TSR_F16, ny, 6);
            const conv_shape sh = c->s; /* a copy: snprintf's source must not overlap its target */
            for (int impl = 0; impl < 2; impl++)
                snprintf(c->name[impl], sizeof c->name[impl], "conv/f16/NHWC/%s_n%lld%s/%s", sh.name,
                         (long long)c->n, sh.residual ? "+res" : "", impl ? "cudnn" : "tessera_cuda");
            if (tessera_call(c) || cudaStreamSynchronize(stream) != cudaSuccess)
                c->failed[0] = 1, snprintf(c->why[0], sizeof c->why[0], "error: %s", tsr_last_error());
            if (!have_dnn) {
                c->failed[1] = 1, snprintf(c->why[1], sizeof c->why[1], "SKIP: %s", dnn_why);
            }
#ifdef HAVE_CUDNN_H
            else if (!cudnn_prepare(c, c->why[1], sizeof c->why[1])) {
                c->failed[1] = 1;
            } else if (!c->failed[0] && !agree(c, ny, c->why[0], sizeof c->why[0])) {
                c->failed[0] = 1;
            }
#endif
            calibrate(c, 0), calibrate(c, 1);
            for (int impl = 0; impl < 2; impl++) {
                if (c->failed[impl]) printf("%s: %s\n", c->name[impl], c->why[impl]);
                args[ncases - 1][impl].c = c, args[ncases - 1][impl].impl = impl;
                gb_register_manual(c->name[impl], bench_fn, &args[ncases - 1][impl], c->flops * c->calls[impl], 0,
                                   c->calls[impl] ? c->calls[impl] : 1);
            }
        }
        free(shapes);
    }
    gb_run();
    int bad = 0;
    for (int i = 0; i < ncases; i++) bad += !strncmp(cases[i].why[0], "MISMATCH", 8);
    if (want_summary) {
        const gb_result *r;
        const int nr = gb_results(&r);
        double logsum = 0;
        int nratio = 0;
        printf("\nsummary (cuda conv, NHWC f16 + fused epilogue): TFLOP/s\n%-28s %10s %10s %8s  %s\n", "layer",
               "tessera", "cudnn", "ratio", "note");
        for (int i = 0; i < ncases; i++) {
            const gb_result *a = find(r, nr, cases[i].name[0]), *b = find(r, nr, cases[i].name[1]);
            const double ta = a && !a->error ? a->gflops / 1e3 : 0, tb = b && !b->error ? b->gflops / 1e3 : 0;
            if (ta > 0 && tb > 0) logsum += log(ta / tb), nratio++;
            printf("%-28s %10.1f %10.1f %7.2fx  %s\n", cases[i].s.name, ta, tb, tb > 0 ? ta / tb : 0,
                   cases[i].failed[0] ? cases[i].why[0] : cases[i].failed[1] ? cases[i].why[1] : "");
        }
        if (nratio) printf("%-28s %10s %10s %7.2fx  (%d layers)\n", "geomean", "", "", exp(logsum / nratio), nratio);
    }
    if (bad) fprintf(stderr, "tessera-bench: %d conv results mismatched cuDNN\n", bad);
    return bad ? 1 : 0;
}
