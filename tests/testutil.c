#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cap_arch(const char *arch) {
    if (arch) setenv("TESSERA_CPU_ARCH", arch, 1);
    else unsetenv("TESSERA_CPU_ARCH");
}

/* Adds a CPU context capped at `cap` (NULL = the best arch) unless an
 * earlier one already runs the same arch. */
static void add_cpu(tt_context *out, int *n, int max, const char *cap) {
    if (*n >= max) return;
    const char *prev = getenv("TESSERA_CPU_ARCH");
    char saved[32] = "";
    if (prev) snprintf(saved, sizeof saved, "%s", prev);
    cap_arch(cap);
    tsr_context *ctx = NULL;
    tsr_status st = tsr_context_create(&ctx, NULL);
    cap_arch(prev ? saved : NULL);
    ck_assert_msg(st == TSR_OK, "cpu context: %s", tsr_last_error());
    tsr_context_info info = {.size = sizeof info};
    tsr_context_get_info(ctx, &info);
    char label[48];
    snprintf(label, sizeof label, "cpu/%s", info.arch);
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i].label, label) == 0) {
            tsr_context_destroy(ctx);
            return;
        }
    out[*n].ctx = ctx;
    memcpy(out[*n].label, label, sizeof label);
    (*n)++;
}

int tt_contexts_open(const char *suite, tt_context *out, int max) {
    int n = 0;
    /* If TESSERA_CPU_ARCH is set, test exactly that arch. */
    if (getenv("TESSERA_CPU_ARCH")) {
        add_cpu(out, &n, max, getenv("TESSERA_CPU_ARCH"));
    } else {
        add_cpu(out, &n, max, NULL);
        add_cpu(out, &n, max, "x86_avx2");
        add_cpu(out, &n, max, "generic");
    }
    static bool reported_avx512;
    if (n > 0 && strcmp(out[0].label, "cpu/x86_avx512") != 0 && !reported_avx512) {
        reported_avx512 = true;
        printf("SKIP %s: cpu arch x86_avx512: this CPU (or TESSERA_CPU_ARCH) has no AVX-512F/BW/VL\n",
               suite);
    }
    static const tsr_backend others[] = {TSR_BACKEND_CUDA, TSR_BACKEND_HIP, TSR_BACKEND_OPENCL};
    static bool reported[3];
    for (int i = 0; i < 3 && n < max; i++) {
        tsr_context_options o;
        tsr_context_options_init(&o);
        o.backend = others[i];
        tsr_context *ctx = NULL;
        if (tsr_context_create(&ctx, &o) == TSR_OK) {
            out[n].ctx = ctx;
            snprintf(out[n].label, sizeof out[n].label, "%s:0", tsr_backend_name(others[i]));
            n++;
        } else if (!reported[i]) {
            reported[i] = true;
            printf("SKIP %s: backend %s: %s\n", suite, tsr_backend_name(others[i]), tsr_last_error());
            fflush(stdout);
        }
    }
    return n;
}

void tt_contexts_close(tt_context *c, int n) {
    for (int i = 0; i < n; i++) tsr_context_destroy(c[i].ctx);
}

tsr_context *tt_cuda_context(const char *suite) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_CUDA;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        printf("SKIP %s: backend cuda: %s\n", suite, tsr_last_error());
        return NULL;
    }
    return ctx;
}

tsr_context *tt_ref_context(void) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.flags = TSR_CONTEXT_REFERENCE_ONLY;
    tsr_context *ctx = NULL;
    tsr_status st = tsr_context_create(&ctx, &o);
    ck_assert_msg(st == TSR_OK, "reference context: %s", tsr_last_error());
    return ctx;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tt_fill(void *x, tsr_dtype t, int64_t n, uint64_t seed, float lo, float hi) {
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(splitmix(&s) >> 11) / 9007199254740992.0;
        float v = (float)(lo + (hi - lo) * u);
        switch (t) {
        case TSR_F32: ((float *)x)[i] = v; break;
        case TSR_F16: ((uint16_t *)x)[i] = tsr_f32_to_f16(v); break;
        case TSR_BF16: ((uint16_t *)x)[i] = tsr_f32_to_bf16(v); break;
        case TSR_I8: ((int8_t *)x)[i] = (int8_t)lrintf(fminf(fmaxf(v, -128.f), 127.f)); break;
        case TSR_I32: ((int32_t *)x)[i] = (int32_t)lrintf(v); break;
        }
    }
}

void tt_fill_sentinel(void *x, size_t bytes) {
    unsigned char *p = x;
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(0xA5 ^ (i * 7));
}

bool tt_unchanged(const void *x, size_t bytes) {
    const unsigned char *p = x;
    for (size_t i = 0; i < bytes; i++)
        if (p[i] != (unsigned char)(0xA5 ^ (i * 7))) return false;
    return true;
}

void *tt_upload(tsr_context *ctx, const void *host, size_t bytes) {
    void *dev = NULL;
    tsr_status st = tsr_malloc(ctx, &dev, bytes ? bytes : 1);
    ck_assert_msg(st == TSR_OK, "tsr_malloc(%zu): %s", bytes, tsr_last_error());
    if (host && bytes) {
        st = tsr_memcpy(ctx, dev, host, bytes, TSR_MEMCPY_HOST_TO_DEVICE);
        ck_assert_msg(st == TSR_OK, "tsr_memcpy: %s", tsr_last_error());
    } else if (bytes) {
        void *zero = calloc(1, bytes);
        tsr_memcpy(ctx, dev, zero, bytes, TSR_MEMCPY_HOST_TO_DEVICE);
        free(zero);
    }
    return dev;
}

void tt_download(tsr_context *ctx, void *host, const void *dev, size_t bytes) {
    if (!bytes) return;
    tsr_status st = tsr_memcpy(ctx, host, dev, bytes, TSR_MEMCPY_DEVICE_TO_HOST);
    ck_assert_msg(st == TSR_OK, "tsr_memcpy: %s", tsr_last_error());
}

void tt_free(tsr_context *ctx, void *dev) { tsr_free(ctx, dev); }

bool tt_handles(tsr_context *ctx) {
    tsr_context_info info = {.size = sizeof info};
    return tsr_context_get_info(ctx, &info) == TSR_OK && info.backend == TSR_BACKEND_OPENCL;
}

double tt_get(const void *x, tsr_dtype t, int64_t i) {
    switch (t) {
    case TSR_F32: return ((const float *)x)[i];
    case TSR_F16: return tsr_f16_to_f32(((const uint16_t *)x)[i]);
    case TSR_BF16: return tsr_bf16_to_f32(((const uint16_t *)x)[i]);
    case TSR_I8: return ((const int8_t *)x)[i];
    case TSR_I32: return ((const int32_t *)x)[i];
    }
    return NAN;
}

int64_t tt_compare(const char *what, const void *got, const void *want, tsr_dtype t, int64_t n,
                   double atol, double rtol) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = tt_get(got, t, i), w = tt_get(want, t, i);
        bool ok;
        if (isnan(w)) ok = isnan(g);
        else if (isinf(w)) ok = g == w;
        else ok = fabs(g - w) <= atol + rtol * fabs(w);
        if (!ok) {
            if (bad < 5) printf("  %s: [%lld] got %.9g want %.9g\n", what, (long long)i, g, w);
            bad++;
        }
    }
    if (bad) printf("  %s: %lld of %lld values differ\n", what, (long long)bad, (long long)n);
    return bad;
}

int64_t tt_ulps(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    if (isinf(a) || isinf(b)) return a == b ? 0 : INT64_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

double tt_rtol(tsr_dtype out, int64_t k) {
    double kk = k > 1 ? (double)k : 1.0;
    switch (out) {
    case TSR_F32: return 2e-6 * sqrt(kk) + 1e-6;
    case TSR_F16: return 2e-3;
    case TSR_BF16: return 1.6e-2;
    default: return 0.0;
    }
}

int tt_run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
