/* tessera-bench --backend cuda: Tessera's CUDA kernels side by side with
 * cuBLAS (cublasGemmEx / cublasSgemm) and cuBLASLt (the same bias + GELU
 * epilogue fused), and with the GPU's limits measured in the same run:
 * mma.sync and FMA peaks, device-to-device copy bandwidth.
 *
 * Device work is timed with CUDA events on one stream shared by every
 * implementation; each benchmark iteration is a batch of `calls` back-to-back
 * calls (calibrated to ~1 ms), so launch gaps count as they would in a model,
 * but host-side synchronisation does not. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_peak.h"
#include "cuda_suite.h"
#include "fill.h"
#include "gbench_shim.h"
#include "shapes.h"
#include "tessera.h"

enum { IMPL_TESSERA, IMPL_CUBLAS, IMPL_TESSERA_EPI, IMPL_CUBLASLT_EPI, NUM_IMPLS };
static const char *const impl_names[NUM_IMPLS] = {"tessera", "cublas", "tessera+bias_gelu", "cublaslt+bias_gelu"};

enum { MAX_GPU_CASES = 1024, LT_WORKSPACE = 32 << 20 };

typedef struct gpu_case {
    char name[192];
    int (*call)(struct gpu_case *c); /* enqueues one call on the stream; 0 = ok */
    double flops, bytes;             /* per call */
    int calls;                       /* per benchmark iteration */
    int failed;                      /* mismatch or error found while preparing */
    char why[256];
    /* gemm */
    gemm_shape s;
    tsr_dtype dt;
    int impl;
    void *a, *b, *c, *bias;
    cublasLtMatmulDesc_t lt_op;
    cublasLtMatrixLayout_t lt_a, lt_b, lt_c;
    cublasLtMatmulAlgo_t lt_algo;
    /* elementwise and peaks */
    int kind; /* KIND_GEMM, EW_*, PEAK_* */
    int64_t rows, cols;
    void *x, *y;
} gpu_case;

static gpu_case cases[MAX_GPU_CASES];
static int ncases;
static cudaStream_t stream;
static cudaEvent_t ev0, ev1;
static tsr_context *tctx;
static cublasHandle_t blas;
static cublasLtHandle_t lt;
static void *lt_ws;
static int sms;
static float *sink;

/* ------------------------------------------------------------- helpers */

static int cuda_ok(cudaError_t e, char *why, size_t n, const char *what) {
    if (e == cudaSuccess) return 1;
    snprintf(why, n, "%s: %s", what, cudaGetErrorString(e));
    return 0;
}

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "tessera-bench: cudaMalloc of %zu bytes failed\n", bytes);
        exit(2);
    }
    return p;
}

/* Values in [-0.5, 0.5) on a fixed pattern, in the dtype, uploaded. */
static void *dev_pattern(tsr_dtype dt, size_t n, unsigned seed) {
    void *h = bench_filled(dt, n, seed, -0.5f, 0.5f);
    if (!h) exit(2);
    void *d = dev_alloc(n * tsr_dtype_size(dt));
    cudaMemcpy(d, h, n * tsr_dtype_size(dt), cudaMemcpyHostToDevice);
    free(h);
    return d;
}

static float host_value(const void *p, tsr_dtype dt, size_t i) {
    if (dt == TSR_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return dt == TSR_F16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

static cudaDataType cuda_type(tsr_dtype dt) {
    return dt == TSR_F16 ? CUDA_R_16F : dt == TSR_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* -------------------------------------------------------- gemm callers */

static int call_tessera(gpu_case *c) {
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = c->s.m, d.n = c->s.n, d.k = c->s.k;
    d.trans_a = c->s.trans_a ? TSR_TRANS : TSR_NO_TRANS, d.trans_b = c->s.trans_b ? TSR_TRANS : TSR_NO_TRANS;
    d.a_dtype = d.b_dtype = d.c_dtype = c->dt;
    if (c->impl == IMPL_TESSERA_EPI) {
        d.epilogue.num_steps = 2;
        d.epilogue.steps[0] = tsr_epilogue_bias(c->bias, c->dt);
        d.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_GELU_TANH);
    }
    return tsr_gemm(tctx, &d, c->a, c->b, c->c) == TSR_OK ? 0 : -1;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
static int call_cublas(gpu_case *c) {
    const gemm_shape *s = &c->s;
    cublasOperation_t ob = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = (int)(s->trans_b ? s->k : s->n), lda = (int)(s->trans_a ? s->m : s->k);
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st;
    if (c->dt == TSR_F32)
        st = cublasSgemm(blas, ob, oa, (int)s->n, (int)s->m, (int)s->k, &one, c->b, ldb, c->a, lda, &zero, c->c,
                         (int)s->n);
    else
        st = cublasGemmEx(blas, ob, oa, (int)s->n, (int)s->m, (int)s->k, &one, c->b, cuda_type(c->dt), ldb, c->a,
                          cuda_type(c->dt), lda, &zero, c->c, cuda_type(c->dt), (int)s->n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static int call_cublaslt(gpu_case *c) {
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(lt, c->lt_op, &one, c->b, c->lt_a, c->a, c->lt_b, &zero, c->c, c->lt_c, c->c, c->lt_c,
                          &c->lt_algo, lt_ws, LT_WORKSPACE, stream) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

/* The cuBLASLt plan: bias (per column of row-major C) then GELU (tanh form,
 * as TSR_ACT_GELU_TANH), the algorithm its heuristic ranks first. */
static int lt_prepare(gpu_case *c) {
    const gemm_shape *s = &c->s;
    cudaDataType t = cuda_type(c->dt);
    cublasOperation_t ob = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    size_t ws = LT_WORKSPACE;
    int ok = cublasLtMatmulDescCreate(&c->lt_op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(c->lt_op, CUBLASLT_MATMUL_DESC_TRANSA, &ob, sizeof ob) == 0 &&
             cublasLtMatmulDescSetAttribute(c->lt_op, CUBLASLT_MATMUL_DESC_TRANSB, &oa, sizeof oa) == 0 &&
             cublasLtMatmulDescSetAttribute(c->lt_op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == 0 &&
             cublasLtMatmulDescSetAttribute(c->lt_op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof c->bias) == 0 &&
             cublasLtMatrixLayoutCreate(&c->lt_a, t, s->trans_b ? s->k : s->n, s->trans_b ? s->n : s->k,
                                        s->trans_b ? s->k : s->n) == 0 &&
             cublasLtMatrixLayoutCreate(&c->lt_b, t, s->trans_a ? s->m : s->k, s->trans_a ? s->k : s->m,
                                        s->trans_a ? s->m : s->k) == 0 &&
             cublasLtMatrixLayoutCreate(&c->lt_c, t, s->n, s->m, s->n) == 0 &&
             cublasLtMatmulPreferenceCreate(&pref) == 0 &&
             cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) == 0 &&
             cublasLtMatmulAlgoGetHeuristic(lt, c->lt_op, c->lt_a, c->lt_b, c->lt_c, c->lt_c, pref, 1, &res,
                                            &found) == 0 &&
             found > 0;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ok) c->lt_algo = res.algo;
    return ok ? 0 : -1;
}

/* ------------------------------------------------- elementwise callers */

enum { KIND_GEMM, EW_COPY, EW_SOFTMAX, EW_LAYERNORM, EW_RMSNORM, EW_BIAS_GELU, PEAK_MMA, PEAK_FMA, PEAK_MMA_8W };

static int call_rowwise(gpu_case *c) {
    tsr_rowwise_desc d;
    tsr_rowwise_desc_init(&d);
    d.rows = c->rows, d.cols = c->cols, d.x_dtype = d.y_dtype = c->dt;
    tsr_status st = c->kind == EW_SOFTMAX     ? tsr_softmax(tctx, &d, c->x, c->y)
                    : c->kind == EW_LAYERNORM ? tsr_layernorm(tctx, &d, c->x, c->bias, (const float *)c->bias, c->y)
                                              : tsr_rmsnorm(tctx, &d, c->x, c->bias, c->y);
    return st == TSR_OK ? 0 : -1;
}

/* y = gelu(x + bias[col]): the transformer MLP's activation, one pass. */
static int call_bias_gelu(gpu_case *c) {
    int64_t shape[2] = {c->rows, c->cols}, bshape[2] = {1, c->cols};
    tsr_tensor_desc xd = tsr_tensor_contiguous(c->dt, 2, shape), bd = tsr_tensor_contiguous(c->dt, 2, bshape);
    tsr_chain_desc ch;
    tsr_chain_desc_init(&ch);
    tsr_chain_push_tensor(&ch, TSR_BINARY_ADD, &bd, 0);
    tsr_chain_push_unary(&ch, TSR_UNARY_GELU_TANH);
    const void *ops[1] = {c->bias};
    return tsr_elementwise_chain(tctx, &ch, &xd, c->x, ops, &xd, c->y) == TSR_OK ? 0 : -1;
}

static int call_copy(gpu_case *c) {
    return cudaMemcpyAsync(c->y, c->x, (size_t)c->bytes / 2, cudaMemcpyDeviceToDevice, stream) == cudaSuccess ? 0
                                                                                                            : -1;
}

static int call_peak(gpu_case *c) {
    return c->kind == PEAK_FMA ? cuda_peak_fma_launch(stream, sms, (int)c->rows, sink)
                               : cuda_peak_mma_launch(stream, sms, (int)c->rows, c->kind == PEAK_MMA_8W, sink);
}

/* ----------------------------------------------------- timing harness */

/* One timed batch; returns seconds, or -1 on an error. */
static double time_batch(gpu_case *c, int calls) {
    cudaEventRecord(ev0, stream);
    for (int i = 0; i < calls; i++)
        if (c->call(c)) return -1;
    cudaEventRecord(ev1, stream);
    if (cudaEventSynchronize(ev1) != cudaSuccess) return -1;
    float ms = 0;
    cudaEventElapsedTime(&ms, ev0, ev1);
    return ms * 1e-3;
}

/* Warm-up, then enough calls per batch for ~1 ms of device time. */
static void calibrate(gpu_case *c) {
    if (c->failed) return;
    double t = time_batch(c, 1);
    if (t >= 0) t = time_batch(c, 3) / 3;
    if (t < 0) {
        c->failed = 1;
        snprintf(c->why, sizeof c->why, "error: %s", c->impl == IMPL_TESSERA || c->impl == IMPL_TESSERA_EPI
                                                         ? tsr_last_error()
                                                         : cudaGetErrorString(cudaGetLastError()));
        return;
    }
    int calls = t > 0 ? (int)(1e-3 / t) : 1000;
    c->calls = calls < 1 ? 1 : calls > 1000 ? 1000 : calls;
}

static void bench_case(gb_state *st, void *arg) {
    gpu_case *c = arg;
    if (c->failed) {
        gb_skip_with_error(st, c->why);
        return;
    }
    while (gb_keep_running(st)) {
        double t = time_batch(c, c->calls);
        if (t < 0) {
            gb_skip_with_error(st, "a call failed while timing");
            break;
        }
        gb_set_iteration_time(st, t);
    }
}

/* --------------------------------------------------------- case setup */

static gpu_case *new_case(void) {
    if (ncases == MAX_GPU_CASES) {
        fprintf(stderr, "tessera-bench: more than %d cuda cases\n", MAX_GPU_CASES);
        exit(2);
    }
    gpu_case *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    return c;
}

static const char *layout_name(const gemm_shape *s) {
    static const char *const n[4] = {"NN", "NT", "TN", "TT"};
    return n[s->trans_a * 2 + s->trans_b];
}

/* Downloads two outputs and compares them relative to the largest value:
 * the implementations round differently, never by more than a few ulps of
 * the output dtype times the accumulated magnitude. */
static int outputs_agree(const gpu_case *x, const gpu_case *y, char *why, size_t n) {
    size_t cn = (size_t)(x->s.m * x->s.n), es = tsr_dtype_size(x->dt);
    void *hx = malloc(cn * es), *hy = malloc(cn * es);
    cudaMemcpy(hx, x->c, cn * es, cudaMemcpyDeviceToHost);
    cudaMemcpy(hy, y->c, cn * es, cudaMemcpyDeviceToHost);
    double maxref = 0, maxdiff = 0;
    size_t at = 0;
    int nan = 0;
    for (size_t i = 0; i < cn; i++) {
        double a = host_value(hx, x->dt, i), b = host_value(hy, y->dt, i);
        if (a != a || b != b) nan = 1;
        if (fabs(b) > maxref) maxref = fabs(b);
        if (fabs(a - b) > maxdiff) maxdiff = fabs(a - b), at = i;
    }
    double tol = x->dt == TSR_F32 ? 1e-5 : x->dt == TSR_F16 ? 4e-3 : 3e-2;
    int ok = !nan && maxdiff <= tol * (maxref > 0 ? maxref : 1);
    if (!ok)
        snprintf(why, n, "MISMATCH vs %s: max |diff| %.3g at %zu (max |ref| %.3g)%s", impl_names[y->impl], maxdiff,
                 at, maxref, nan ? ", NaN" : "");
    free(hx), free(hy);
    return ok;
}

static void add_gemm_shape(const gemm_shape *s, tsr_dtype dt, int with_epilogue) {
    size_t es = tsr_dtype_size(dt), an = (size_t)(s->m * s->k), bn = (size_t)(s->k * s->n), cn = (size_t)(s->m * s->n);
    void *a = dev_pattern(dt, an, 1), *b = dev_pattern(dt, bn, 2), *bias = dev_pattern(dt, (size_t)s->n, 3);
    gpu_case *group[NUM_IMPLS] = {0};
    for (int impl = 0; impl < NUM_IMPLS; impl++) {
        if (impl >= IMPL_TESSERA_EPI && (!with_epilogue || dt == TSR_F32)) continue;
        gpu_case *c = new_case();
        group[impl] = c;
        c->s = *s, c->dt = dt, c->impl = impl, c->a = a, c->b = b, c->bias = bias;
        c->c = dev_alloc(cn * es);
        c->flops = 2.0 * s->m * s->n * s->k;
        c->bytes = 0;
        c->call = impl == IMPL_CUBLAS ? call_cublas : impl == IMPL_CUBLASLT_EPI ? call_cublaslt : call_tessera;
        snprintf(c->name, sizeof c->name, "gemm/%s/%s/%lldx%lldx%lld/%s", tsr_dtype_name(dt), layout_name(s),
                 (long long)s->m, (long long)s->n, (long long)s->k, impl_names[impl]);
        if (impl == IMPL_CUBLASLT_EPI && lt_prepare(c)) {
            c->failed = 1;
            snprintf(c->why, sizeof c->why, "cuBLASLt has no algorithm for this case");
        }
        calibrate(c);
    }
    /* tessera against the vendor, each pair once */
    for (int k = 0; k + 1 < NUM_IMPLS; k += 2) {
        gpu_case *ours = group[k], *theirs = group[k + 1];
        if (!ours || !theirs || ours->failed || theirs->failed) continue;
        if (!outputs_agree(ours, theirs, ours->why, sizeof ours->why)) {
            ours->failed = 1;
            fprintf(stderr, "tessera-bench: %s: %s\n", ours->name, ours->why);
        }
    }
}

static void add_rowwise(int kind, const char *op, tsr_dtype dt, int64_t rows, int64_t cols) {
    gpu_case *c = new_case();
    size_t n = (size_t)(rows * cols), es = tsr_dtype_size(dt);
    c->kind = kind, c->dt = dt, c->rows = rows, c->cols = cols, c->impl = IMPL_TESSERA;
    c->x = dev_pattern(dt, n, 4), c->y = dev_alloc(n * es);
    /* norms read gamma/beta as f32; the bias-gelu chain reads a row of dt */
    c->bias = dev_pattern(kind == EW_BIAS_GELU ? dt : TSR_F32, (size_t)cols, 5);
    c->bytes = 2.0 * (double)n * (double)es;
    c->call = kind == EW_BIAS_GELU ? call_bias_gelu : call_rowwise;
    snprintf(c->name, sizeof c->name, "%s/%s/rows/%lldx%lld/tessera", op, tsr_dtype_name(dt), (long long)rows,
             (long long)cols);
    calibrate(c);
}

static void add_copy(size_t bytes) {
    gpu_case *c = new_case();
    c->kind = EW_COPY, c->x = dev_alloc(bytes), c->y = dev_alloc(bytes), c->bytes = 2.0 * (double)bytes;
    c->impl = IMPL_CUBLAS; /* a vendor line: the device's own copy */
    c->call = call_copy;
    cudaMemset(c->x, 0, bytes);
    snprintf(c->name, sizeof c->name, "copy/d2d/%zuMiB/cudaMemcpy", bytes >> 20);
    calibrate(c);
}

static void add_peak(int kind) {
    gpu_case *c = new_case();
    c->kind = kind, c->rows = 4096, c->impl = IMPL_CUBLAS, c->call = call_peak;
    c->flops = kind == PEAK_FMA ? cuda_peak_fma_flops(sms, 4096) : cuda_peak_mma_flops(sms, 4096, kind == PEAK_MMA_8W);
    snprintf(c->name, sizeof c->name, "%s",
             kind == PEAK_MMA   ? "peak/f16/mma_sync_m16n8k16/f32acc/registers"
             : kind == PEAK_FMA ? "peak/f32/fma/simt/registers"
                                : "peak/f16/mma_sync_m16n8k16/f32acc/registers_8_warps_per_sm");
    calibrate(c);
}

/* ----------------------------------------------------------- summary */

static const gb_result *find(const gb_result *r, int nr, const char *name) {
    for (int j = 0; j < nr; j++)
        if (!strcmp(r[j].name, name) || (!strncmp(r[j].name, name, strlen(name)) && r[j].name[strlen(name)] == '/'))
            return &r[j];
    return NULL;
}

static double rate(const gb_result *r, int nr, const char *name, int bytes) {
    const gb_result *x = find(r, nr, name);
    return !x || x->error ? 0 : bytes ? x->gbps : x->gflops;
}

static void summary(void) {
    const gb_result *r;
    int nr = gb_results(&r);
    double mma = rate(r, nr, cases[0].name, 0), fma = rate(r, nr, cases[1].name, 0), copy = 0;
    for (int i = 0; i < ncases; i++)
        if (cases[i].kind == EW_COPY) {
            double g = rate(r, nr, cases[i].name, 1);
            if (g > copy) copy = g;
        }
    printf("\nsummary (cuda): GFLOP/s; peaks measured in this run: mma.sync f16 %.0f (%.0f at 8 warps per SM), "
           "f32 FMA %.0f GFLOP/s; d2d copy %.0f GB/s\n", mma, rate(r, nr, cases[2].name, 0), fma, copy);
    printf("%-36s %12s %12s %8s %9s\n", "gemm shape", "tessera", "vendor", "ratio", "% peak");
    for (int i = 0; i < ncases; i++) {
        gpu_case *c = &cases[i];
        if (c->kind != KIND_GEMM || (c->impl != IMPL_TESSERA && c->impl != IMPL_TESSERA_EPI)) continue;
        gpu_case *v = i + 1 < ncases ? &cases[i + 1] : NULL;
        double ours = rate(r, nr, c->name, 0), theirs = v ? rate(r, nr, v->name, 0) : 0;
        char label[96];
        snprintf(label, sizeof label, "%s %s %s/%lldx%lldx%lld", tsr_dtype_name(c->dt),
                 c->impl == IMPL_TESSERA_EPI ? "+bias+gelu" : "", layout_name(&c->s), (long long)c->s.m,
                 (long long)c->s.n, (long long)c->s.k);
        double peak = c->dt == TSR_F32 ? fma : mma;
        if (c->failed) printf("%-36s %12s\n", label, strncmp(c->why, "MISMATCH", 8) ? "error" : "MISMATCH");
        else
            printf("%-36s %12.1f %12.1f %7.2fx %8.1f%%\n", label, ours, theirs, theirs > 0 ? ours / theirs : 0,
                   peak > 0 ? 100 * ours / peak : 0);
    }
    printf("%-36s %12s %12s\n", "memory-bound op", "GB/s", "% of copy");
    for (int i = 0; i < ncases; i++) {
        gpu_case *c = &cases[i];
        if (c->kind < EW_SOFTMAX || c->kind > EW_BIAS_GELU) continue;
        double g = rate(r, nr, c->name, 1);
        printf("%-36s %12.1f %11.1f%%\n", c->name, g, copy > 0 ? 100 * g / copy : 0);
    }
}

/* --------------------------------------------------------------- main */

static int open_device(char *why, size_t n) {
    int count = 0;
    if (!cuda_ok(cudaGetDeviceCount(&count), why, n, "cudaGetDeviceCount")) return 0;
    if (count < 1) return snprintf(why, n, "no CUDA device"), 0;
    struct cudaDeviceProp prop;
    if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), why, n, "cudaGetDeviceProperties")) return 0;
    sms = prop.multiProcessorCount;
    if (!cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), why, n, "stream")) return 0;
    cudaEventCreate(&ev0), cudaEventCreate(&ev1);
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_CUDA, o.stream = stream;
    if (tsr_context_create(&tctx, &o) != TSR_OK) return snprintf(why, n, "tessera: %s", tsr_last_error()), 0;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS ||
        cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS)
        return snprintf(why, n, "cuBLAS could not be initialised"), 0;
    lt_ws = dev_alloc(LT_WORKSPACE);
    sink = dev_alloc(256 * sizeof(float));
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv), cudaRuntimeGetVersion(&rt);
    int blas_ver = 0;
    cublasGetVersion(blas, &blas_ver);
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("tessera-bench %s (cuda): %s, sm_%d%d, %d SMs, %.0f GiB, driver %d.%d, runtime %d.%d, cuBLAS %d, %s\n",
           tsr_version_string(), prop.name, prop.major, prop.minor, sms,
           (double)prop.totalGlobalMem / (1 << 30), drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10,
           blas_ver, date);
    return 1;
}

int cuda_suite_main(const char *const *sets, int nsets, int quick, int want_summary, const char *dtypes) {
    char why[256] = "";
    if (!open_device(why, sizeof why)) {
        printf("SKIP cuda: %s\n", why);
        return 0;
    }
    add_peak(PEAK_MMA);
    add_peak(PEAK_FMA);
    add_peak(PEAK_MMA_8W);
    static const tsr_dtype all[3] = {TSR_F16, TSR_BF16, TSR_F32};
    for (int si = 0; si < nsets; si++) {
        gemm_shape *shapes;
        int n = shapes_read_gemm(sets[si], BENCH_SHAPES_DIR, &shapes);
        if (n < 0) return 2;
        for (int t = 0; t < 3; t++) {
            if (!strstr(dtypes, tsr_dtype_name(all[t]))) continue;
            for (int i = 0; i < n; i++) {
                if (quick && shapes[i].m * shapes[i].n * shapes[i].k > 4096LL * 4096 * 4096) continue;
                /* the fused epilogue on square shapes only: it is the same tile code elsewhere */
                add_gemm_shape(&shapes[i], all[t], shapes[i].m == shapes[i].n && shapes[i].n == shapes[i].k);
            }
        }
        free(shapes);
    }
    int64_t rows = quick ? 8192 : 16384, cols = 4096;
    add_copy((size_t)rows * (size_t)cols * 2);
    add_copy((size_t)rows * (size_t)cols * 4);
    for (int t = 0; t < 3; t++) {
        if (!strstr(dtypes, tsr_dtype_name(all[t]))) continue;
        add_rowwise(EW_SOFTMAX, "softmax", all[t], rows, cols);
        add_rowwise(EW_LAYERNORM, "layernorm", all[t], rows, cols);
        add_rowwise(EW_RMSNORM, "rmsnorm", all[t], rows, cols);
        add_rowwise(EW_BIAS_GELU, "chain_bias_gelu", all[t], rows, cols);
    }
    /* the same bytes in rows of 1024 (a warp per row) and 8192 (the vector
     * kernel's widest), softmax and layernorm in f16 and f32 */
    for (int t = 0; t < 3; t++) {
        if (all[t] == TSR_BF16 || !strstr(dtypes, tsr_dtype_name(all[t]))) continue;
        add_rowwise(EW_SOFTMAX, "softmax", all[t], rows * 4, cols / 4);
        add_rowwise(EW_LAYERNORM, "layernorm", all[t], rows * 4, cols / 4);
        add_rowwise(EW_SOFTMAX, "softmax", all[t], rows / 2, cols * 2);
        add_rowwise(EW_LAYERNORM, "layernorm", all[t], rows / 2, cols * 2);
    }
    for (int i = 0; i < ncases; i++) {
        gpu_case *c = &cases[i];
        if (c->failed) printf("%s: %s\n", c->name, c->why);
        gb_register_manual(c->name, bench_case, c, c->flops * c->calls, c->bytes * c->calls, c->calls);
    }
    gb_run();
    if (want_summary) summary();
    int bad = 0;
    for (int i = 0; i < ncases; i++) bad += !strncmp(cases[i].why, "MISMATCH", 8);
    if (bad) fprintf(stderr, "tessera-bench: %d cuda results mismatched cuBLAS\n", bad);
    return bad ? 1 : 0;
}
