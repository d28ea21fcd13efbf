/* tessera-bench --op attention: Tessera's fused attention on the CPU side by
 * side with the unfused path a framework falls back to (oneDNN sgemm for
 * S = scale Q K^T, the causal mask written into S, Tessera's softmax, oneDNN
 * sgemm for O = P V; S is seq_q x seq_kv per head; bf16: oneDNN's bf16
 * matmul primitive for both products, f32 S, softmax to bf16 P), and decode
 * against the memory bandwidth measured by memcpy on the run's threads in
 * the same run (bench_copy; it must
 * read K and V once). Names: attention/<dtype>/<variant>/<shape>/<impl>.
 * --rss instead runs each path once at seq 8192 in a child process and
 * reports its peak resident memory (fused: O(seq) extra; unfused: S). */
#define _DEFAULT_SOURCE /* wait4 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bench_attention.h"
#include "copy.h"
#include "fill.h"
#include "gbench_shim.h"
#include "impls.h"
#include "cpu_context.h"
#include "tessera.h"
#ifndef TSR_BENCH_NO_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

enum { IMPL_TESSERA, IMPL_UNFUSED, IMPL_COPY };
#define MAX_ATTN_CASES 128

typedef struct attn_case {
    int impl;
    tsr_attention_desc d;
    void *q, *k, *v, *o;
    float *s;     /* unfused: the seq_q x seq_kv logits of one head */
    void *p;      /* unfused bf16: the weights of one head, bf16 */
    size_t bytes; /* copy: bytes moved */
    char name[160];
    int failed;
} attn_case;

static attn_case cases[MAX_ATTN_CASES];
static int ncases;
static int copy_threads; /* the run's threads, for the reference copy */
static tsr_context *ctx;

static double visible_pairs(const tsr_attention_desc *d) {
    if (d->causal == TSR_CAUSAL_NONE) return (double)d->seq_q * (double)d->seq_kv;
    double n = 0;
    for (int64_t i = 0; i < d->seq_q; i++) {
        int64_t end = d->causal == TSR_CAUSAL_TOP_LEFT ? i + 1 : i + 1 + d->seq_kv - d->seq_q;
        n += (double)(end < 0 ? 0 : end > d->seq_kv ? d->seq_kv : end);
    }
    return n;
}

static double flops_of(const tsr_attention_desc *d) {
    return 4.0 * (double)d->batch * (double)d->heads_q * visible_pairs(d) * (double)d->head_dim;
}

static double kv_bytes(const tsr_attention_desc *d) {
    return 2.0 * (double)d->batch * (double)d->heads_kv * (double)d->seq_kv * (double)d->head_dim *
           (double)tsr_dtype_size(d->dtype);
}

/* -inf where the causal mask hides a key, as a framework writes it into S. */
static void mask_causal(const tsr_attention_desc *d, float *s) {
    const int64_t S = d->seq_q, T = d->seq_kv;
    if (d->causal == TSR_CAUSAL_NONE) return;
    for (int64_t i = 0; i < S; i++) {
        int64_t end = d->causal == TSR_CAUSAL_TOP_LEFT ? i + 1 : i + 1 + T - S;
        for (int64_t j = end < 0 ? 0 : end; j < T; j++) s[i * T + j] = -INFINITY;
    }
}

/* Why the unfused path last failed: the skip message names the library. */
static char unfused_error[200];

static int unfused_failed(const char *why) {
    snprintf(unfused_error, sizeof unfused_error, "unfused path: %s", why);
    return -1;
}

/* The unfused path, one (batch, head) at a time on contiguous BHSD data. */
static int run_unfused(attn_case *c) {
#ifdef TSR_BENCH_NO_ONEDNN
    (void)c;
    return unfused_failed("tessera-bench was built without oneDNN");
#else
    const tsr_attention_desc *d = &c->d;
    const int64_t S = d->seq_q, T = d->seq_kv, D = d->head_dim, G = d->heads_q / d->heads_kv;
    const float scale = 1.0f / sqrtf((float)D);
    tsr_rowwise_desc rd;
    tsr_rowwise_desc_init(&rd);
    rd.rows = S, rd.cols = T;
    if (d->dtype == TSR_BF16) { /* q holds scale * Q already (the primitive has no alpha) */
        rd.y_dtype = TSR_BF16;
        for (int64_t b = 0; b < d->batch; b++)
            for (int64_t h = 0; h < d->heads_q; h++) {
                const uint16_t *q = (const uint16_t *)c->q + (b * d->heads_q + h) * S * D;
                const uint16_t *k = (const uint16_t *)c->k + (b * d->heads_kv + h / G) * T * D;
                const uint16_t *v = (const uint16_t *)c->v + (b * d->heads_kv + h / G) * T * D;
                float *o = (float *)c->o + (b * d->heads_q + h) * S * D;
                if (impl_onednn.gemm_bf16(0, 1, S, T, D, q, k, c->s)) return unfused_failed(impl_onednn.last_error());
                mask_causal(d, c->s);
                if (tsr_softmax(ctx, &rd, c->s, c->p) != TSR_OK) return unfused_failed(tsr_last_error());
                if (impl_onednn.gemm_bf16(0, 0, S, D, T, c->p, v, o)) return unfused_failed(impl_onednn.last_error());
            }
        return 0;
    }
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t h = 0; h < d->heads_q; h++) {
            const float *q = (const float *)c->q + (b * d->heads_q + h) * S * D;
            const float *k = (const float *)c->k + (b * d->heads_kv + h / G) * T * D;
            const float *v = (const float *)c->v + (b * d->heads_kv + h / G) * T * D;
            float *o = (float *)c->o + (b * d->heads_q + h) * S * D;
            if (dnnl_sgemm('N', 'T', S, T, D, scale, q, D, k, D, 0.0f, c->s, T) != dnnl_success)
                return unfused_failed("oneDNN dnnl_sgemm failed");
            mask_causal(d, c->s);
            if (tsr_softmax(ctx, &rd, c->s, c->s) != TSR_OK) return unfused_failed(tsr_last_error());
            if (dnnl_sgemm('N', 'N', S, D, T, 1.0f, c->s, T, v, D, 0.0f, o, D) != dnnl_success)
                return unfused_failed("oneDNN dnnl_sgemm failed");
        }
    return 0;
#endif
}

static int run_case(attn_case *c) {
    if (c->impl == IMPL_COPY) {
        bench_copy(c->o, c->q, c->bytes, copy_threads);
        return 0;
    }
    if (c->impl == IMPL_UNFUSED) return run_unfused(c);
    return tsr_attention(ctx, &c->d, c->q, c->k, c->v, c->o) == TSR_OK ? 0 : -1;
}

static void bench_one(gb_state *st, void *arg) {
    attn_case *c = arg;
    if (c->failed) {
        gb_skip_with_error(st, "could not allocate or set up the case");
        return;
    }
    const char *why = c->impl == IMPL_UNFUSED ? unfused_error : tsr_last_error();
    /* one untimed call: pages the VM gave back are faulted in again here */
    if (run_case(c)) {
        gb_skip_with_error(st, why);
        return;
    }
    while (gb_keep_running(st))
        if (run_case(c)) {
            gb_skip_with_error(st, why);
            break;
        }
}

static attn_case *add(int impl, const tsr_attention_desc *d, const char *variant) {
    if (ncases == MAX_ATTN_CASES) return NULL;
    attn_case *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    c->impl = impl, c->d = *d;
    size_t nq = (size_t)(d->batch * d->heads_q * d->seq_q * d->head_dim);
    size_t nk = (size_t)(d->batch * d->heads_kv * d->seq_kv * d->head_dim);
    const tsr_dtype t = d->dtype, ot = impl == IMPL_UNFUSED ? TSR_F32 : t; /* the primitive writes f32 */
    const bool bf16_unfused = impl == IMPL_UNFUSED && t == TSR_BF16;
    const float qs = bf16_unfused ? 0.5f / sqrtf((float)d->head_dim) : 0.5f; /* scale folded into q */
    c->q = bench_filled(t, nq, 1, -qs, qs);
    c->k = bench_filled(t, nk, 2, -0.5f, 0.5f);
    c->v = bench_filled(t, nk, 3, -0.5f, 0.5f);
    c->o = bench_alloc(nq * tsr_dtype_size(ot));
    const size_t ss = (size_t)(d->seq_q * d->seq_kv);
    if (impl == IMPL_UNFUSED) c->s = malloc(sizeof(float) * ss);
    if (bf16_unfused) c->p = malloc(2 * ss);
    c->failed = !c->q || !c->k || !c->v || !c->o || (impl == IMPL_UNFUSED && !c->s) || (bf16_unfused && !c->p);
    snprintf(c->name, sizeof c->name, "attention/%s/%s/b%lld_h%lld-%lld_sq%lld_skv%lld_d%lld/%s",
             tsr_dtype_name(d->dtype), variant, (long long)d->batch, (long long)d->heads_q, (long long)d->heads_kv,
             (long long)d->seq_q, (long long)d->seq_kv, (long long)d->head_dim,
             impl == IMPL_TESSERA ? "tessera" : "unfused");
    return c;
}

static void add_prefill(int64_t heads, int64_t seq, int64_t dim, tsr_causal causal, tsr_dtype t, int unfused) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.batch = 1, d.heads_q = d.heads_kv = heads, d.seq_q = d.seq_kv = seq, d.head_dim = dim, d.dtype = t;
    d.causal = causal;
    const char *variant = causal == TSR_CAUSAL_NONE ? "prefill" : "prefill_causal";
    add(IMPL_TESSERA, &d, variant);
    if (unfused) add(IMPL_UNFUSED, &d, variant);
}

static void add_decode(int64_t seq_kv, tsr_dtype t) {
    tsr_attention_desc d; /* Llama-3.1-8B: 32 query heads over 8 kv heads, head_dim 128 */
    tsr_attention_desc_init(&d);
    d.batch = 1, d.heads_q = 32, d.heads_kv = 8, d.seq_q = 1, d.seq_kv = seq_kv, d.head_dim = 128, d.dtype = t;
    add(IMPL_TESSERA, &d, "decode_gqa");
}

static double rate_of(const gb_result *r, int nr, const char *name, int bytes) {
    for (int i = 0; i < nr; i++)
        if (!strncmp(r[i].name, name, strlen(name)) && !r[i].error) return bytes ? r[i].gbps : r[i].gflops;
    return 0;
}

/* Whether the case ran at all (a --benchmark_filter may leave it out). */
static bool ran(const gb_result *r, int nr, const char *name) {
    for (int i = 0; i < nr; i++)
        if (!strncmp(r[i].name, name, strlen(name))) return true;
    return false;
}

int attention_suite_main(int threads, int quick, int want_summary) {
    copy_threads = threads;
    tsr_context_info info;
    if (!(ctx = bench_cpu_context(threads, &info))) return 2;
    printf("tessera-bench attention: %s, tessera arch %s, %d threads\n", info.device_name, info.arch, threads);
#ifdef TSR_BENCH_NO_ONEDNN
    printf("skip unfused: oneDNN was not found when tessera-bench was configured\n");
    const int unfused = 0;
#else
    const int unfused = 1;
#endif
    /* the memory limit the decode cases are held to: 256 MiB memcpy */
    attn_case *copy = &cases[ncases++];
    memset(copy, 0, sizeof *copy);
    copy->impl = IMPL_COPY, copy->bytes = (size_t)256 << 20;
    copy->q = bench_alloc(copy->bytes), copy->o = bench_alloc(copy->bytes);
    copy->failed = !copy->q || !copy->o;
    if (!copy->failed) memset(copy->q, 1, copy->bytes), memset(copy->o, 0, copy->bytes);
    snprintf(copy->name, sizeof copy->name, "copy/memcpy/256MiB/libc");

    const int64_t seqs[] = {512, 1024, 2048, 4096}, dims[] = {64, 128};
    for (int di = 0; di < 2; di++)
        for (int si = 0; si < (quick ? 2 : 4); si++)
            for (int causal = 0; causal <= 1; causal++) {
                int64_t heads = seqs[si] >= 2048 ? 2 : 4;
                add_prefill(heads, seqs[si], dims[di], causal ? TSR_CAUSAL_TOP_LEFT : TSR_CAUSAL_NONE, TSR_F32, unfused);
                if (!quick) add_prefill(heads, seqs[si], dims[di], causal ? TSR_CAUSAL_TOP_LEFT : TSR_CAUSAL_NONE,
                                        TSR_BF16, unfused);
            }
    const int64_t kvs[] = {4096, 8192, 16384, 32768};
    for (int i = 0; i < (quick ? 2 : 4); i++) add_decode(kvs[i], TSR_BF16), add_decode(kvs[i], TSR_F32);

    for (int i = 0; i < ncases; i++) {
        attn_case *c = &cases[i];
        double flops = c->impl == IMPL_COPY ? 0 : flops_of(&c->d);
        double bytes = c->impl == IMPL_COPY ? 2.0 * (double)c->bytes : c->d.seq_q == 1 ? kv_bytes(&c->d) : 0;
        gb_register(c->name, bench_one, c, flops, bytes);
    }
    gb_run();
    if (want_summary) {
        const gb_result *r;
        int nr = gb_results(&r);
        double bw = rate_of(r, nr, copy->name, 1);
        printf("\nsummary (attention, %d threads): GFLOP/s; decode in GB/s of K+V read vs memcpy on as many threads ", threads);
        if (bw > 0) printf("%.1f GB/s (read + write)\n", bw);
        else printf("(not measured: its run filtered out)\n");
        printf("%-58s %10s %10s %8s\n", "case", "tessera", "unfused", "ratio");
        for (int i = 1; i < ncases; i++) {
            attn_case *c = &cases[i];
            if (c->impl != IMPL_TESSERA || !ran(r, nr, c->name)) continue;
            int decode = c->d.seq_q == 1;
            double ours = rate_of(r, nr, c->name, decode);
            char base[160];
            snprintf(base, sizeof base, "%.*s", (int)(strrchr(c->name, '/') - c->name), c->name);
            if (decode) {
                printf("%-58s %8.1f GB/s %6.1f%% of memcpy\n", base + 10, ours, bw > 0 ? 100 * ours / bw : 0);
                continue;
            }
            double theirs = 0;
            if (i + 1 < ncases && cases[i + 1].impl == IMPL_UNFUSED) theirs = rate_of(r, nr, cases[i + 1].name, 0);
            if (theirs > 0) printf("%-58s %10.1f %10.1f %7.2fx\n", base + 10, ours, theirs, ours / theirs);
            else printf("%-58s %10.1f %10s\n", base + 10, ours, "-");
        }
    }
    tsr_context_destroy(ctx);
    return 0;
}

/* --rss: one path at seq 8192 (b1, 2 heads, d 128) in a child process; the
 * parent reads the child's peak RSS from wait4. A child that only sets up
 * the inputs gives the baseline, so "extra" is what the path itself holds. */
static long rss_child_kib(int threads, int impl, tsr_dtype t, int run) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!(ctx = bench_cpu_context(threads, NULL))) _exit(2);
        tsr_attention_desc d;
        tsr_attention_desc_init(&d);
        d.batch = 1, d.heads_q = d.heads_kv = 2, d.seq_q = d.seq_kv = 8192, d.head_dim = 128, d.dtype = t;
        attn_case *c = add(impl, &d, "rss");
        if (!c || c->failed) _exit(3);
        if (run && run_case(c)) { /* the parent prints "failed" after this line */
            fprintf(stderr, "  %s: %s\n", c->name, impl == IMPL_UNFUSED ? unfused_error : tsr_last_error());
            _exit(3);
        }
        _exit(0);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
    return ru.ru_maxrss; /* KiB on Linux */
}

int attention_rss_main(int threads) {
    printf("tessera-bench attention --rss: peak RSS of one call at b1 h2 seq 8192 d128, %d threads "
           "(MiB; extra = over a child that only sets up q, k, v, o)\n", threads);
#ifdef TSR_BENCH_NO_ONEDNN
    const int impls = 1;
    printf("skip unfused: oneDNN was not found when tessera-bench was configured\n");
#else
    const int impls = 2;
#endif
    const tsr_dtype dts[] = {TSR_F32, TSR_BF16};
    printf("%-8s %-10s %10s %10s\n", "dtype", "path", "peak", "extra");
    for (int di = 0; di < 2; di++) {
        const long base = rss_child_kib(threads, IMPL_TESSERA, dts[di], 0);
        for (int i = 0; i < impls; i++) {
            const int impl = i == 0 ? IMPL_TESSERA : IMPL_UNFUSED;
            const long kib = rss_child_kib(threads, impl, dts[di], 1);
            if (kib < 0 || base < 0) {
                printf("%-8s %-10s %10s\n", tsr_dtype_name(dts[di]), i ? "unfused" : "fused", "failed");
                continue;
            }
            printf("%-8s %-10s %10.1f %10.1f\n", tsr_dtype_name(dts[di]), i ? "unfused" : "fused", kib / 1024.0,
                   (kib - base) / 1024.0);
        }
    }
    return 0;
}
