/* Core: version, status strings, thread-local errors, contexts, memory,
 * f16/bf16 conversions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "internal.h"
#include "testutil.h"

START_TEST(version_and_status) {
    ck_assert_uint_eq(tsr_version(), TSR_VERSION);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", TSR_VERSION_MAJOR, TSR_VERSION_MINOR, TSR_VERSION_PATCH);
    ck_assert_str_eq(tsr_version_string(), v);
    for (int s = 0; s <= TSR_ERR_INTERNAL; s++) ck_assert_ptr_nonnull(strstr(tsr_status_string((tsr_status)s), "TSR_"));
    ck_assert_str_eq(tsr_status_string((tsr_status)99), "TSR_ERR_UNKNOWN_STATUS");
    ck_assert_str_eq(tsr_dtype_name(TSR_BF16), "bf16");
    ck_assert_uint_eq(tsr_dtype_size(TSR_I8), 1);
    ck_assert_uint_eq(tsr_dtype_size((tsr_dtype)42), 0);
    ck_assert_str_eq(tsr_backend_name(TSR_BACKEND_OPENCL), "opencl");
}
END_TEST

static int fail_in_thread(void *arg) {
    (void)arg;
    tsr_context_create(NULL, NULL); /* sets this thread's message */
    return strstr(tsr_last_error(), "context_create") ? 0 : 1;
}

START_TEST(errors_are_thread_local) {
    tsr_malloc(NULL, NULL, 1);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "malloc: ctx is NULL"));
    thrd_t t;
    int rc = -1;
    ck_assert_int_eq(thrd_create(&t, fail_in_thread, NULL), thrd_success);
    thrd_join(t, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "malloc: ctx is NULL"));
}
END_TEST

START_TEST(contexts) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_context_info info = {.size = sizeof info};
    ck_assert_int_eq(tsr_context_get_info(ctx, &info), TSR_OK);
    ck_assert(strcmp(info.arch, "generic") == 0 || strcmp(info.arch, "x86_avx2") == 0 ||
              strcmp(info.arch, "x86_avx512") == 0);
    if (strcmp(info.arch, "x86_avx512") == 0) ck_assert(info.cpu_features & TSR_CPU_AVX512F);
    if (strcmp(info.arch, "x86_avx2") == 0) ck_assert(info.cpu_features & TSR_CPU_AVX2);
    ck_assert(strlen(info.device_name) > 0 && info.num_threads >= 1 && info.compute_units >= 1);
    printf("core: cpu '%s', arch %s, %d threads\n", info.device_name, info.arch, info.num_threads);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
    tsr_context_get_info(ctx, &info);
    ck_assert_int_eq(info.num_threads, 1);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 0), TSR_OK);
    tsr_context_get_info(ctx, &info);
    ck_assert_int_eq(info.num_threads, info.compute_units);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, -1), TSR_ERR_INVALID_ARGUMENT);
    info.size = 4;
    ck_assert_int_eq(tsr_context_get_info(ctx, &info), TSR_ERR_INVALID_ARGUMENT);
    tsr_context_destroy(ctx);
    ck_assert_int_eq(tsr_context_destroy(NULL), TSR_OK);

    setenv("TESSERA_CPU_ARCH", "generic", 1);
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    unsetenv("TESSERA_CPU_ARCH");
    info.size = sizeof info;
    tsr_context_get_info(ctx, &info);
    ck_assert_str_eq(info.arch, "generic");
    ck_assert_uint_eq(info.cpu_features, 0);
    tsr_context_destroy(ctx);

    tsr_context_options o;
    const tsr_backend gpus[] = {TSR_BACKEND_CUDA, TSR_BACKEND_HIP, TSR_BACKEND_OPENCL};
    for (int i = 0; i < 3; i++) {
        tsr_context_options_init(&o);
        o.backend = gpus[i];
        tsr_status st = tsr_context_create(&ctx, &o);
        if (st == TSR_OK) {
            printf("core: backend %s present\n", tsr_backend_name(gpus[i]));
            tsr_context_destroy(ctx);
        } else {
            ck_assert_int_eq(st, TSR_ERR_NO_DEVICE);
            ck_assert_ptr_null(ctx);
            ck_assert_ptr_nonnull(strstr(tsr_last_error(), tsr_backend_name(gpus[i])));
            printf("core: backend %s absent: %s\n", tsr_backend_name(gpus[i]), tsr_last_error());
        }
    }
    tsr_context_options_init(&o);
    ck_assert_int_eq(tsr_context_create(NULL, &o), TSR_ERR_INVALID_ARGUMENT);
    o.backend = (tsr_backend)17;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "backend (17)"));
    tsr_context_options_init(&o), o.device = -1;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_ERR_INVALID_ARGUMENT);
    tsr_context_options_init(&o), o.num_threads = -3;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_ERR_INVALID_ARGUMENT);
    tsr_context_options_init(&o), o.size = 3;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "opts->size"));
    tsr_context_options_init(&o), o.device = 1;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_ERR_NO_DEVICE);
}
END_TEST

START_TEST(memory) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    void *p = NULL, *q = NULL;
    ck_assert_int_eq(tsr_malloc(ctx, &p, 100), TSR_OK);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ck_assert_int_eq(tsr_malloc(ctx, &q, 0), TSR_OK);
    ck_assert_ptr_null(q);
    ck_assert_int_eq(tsr_malloc(ctx, NULL, 8), TSR_ERR_INVALID_ARGUMENT);
    char src[100];
    for (int i = 0; i < 100; i++) src[i] = (char)i;
    ck_assert_int_eq(tsr_memcpy(ctx, p, src, 100, TSR_MEMCPY_HOST_TO_DEVICE), TSR_OK);
    ck_assert_int_eq(memcmp(p, src, 100), 0);
    ck_assert_int_eq(tsr_memcpy(ctx, p, NULL, 4, TSR_MEMCPY_HOST_TO_DEVICE), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_memcpy(ctx, p, src, 4, (tsr_memcpy_kind)9), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_synchronize(ctx), TSR_OK);
    ck_assert_int_eq(tsr_free(ctx, p), TSR_OK);
    ck_assert_int_eq(tsr_free(ctx, NULL), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

/* Independent references: the nearest of the two neighbouring 16-bit
 * values, ties to the even one, found by search over the decoded values. */
static uint16_t nearest16(float x, float (*dec)(uint16_t)) {
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint32_t h = 0; h < 65536; h++) {
        float v = dec((uint16_t)h);
        if (isnan(v) || signbit(v) != signbit(x)) continue;
        double dd = fabs((double)v - x);
        if (dd < bd || (dd == bd && !(h & 1))) bd = dd, best = (uint16_t)h;
    }
    return best;
}

START_TEST(half_conversions) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tsr_f16_to_f32((uint16_t)h), g = tsr_bf16_to_f32((uint16_t)h);
        if (isnan(f)) ck_assert(isnan(tsr_f16_to_f32(tsr_f32_to_f16(f))));
        else ck_assert_uint_eq(tsr_f32_to_f16(f), h);
        if (isnan(g)) ck_assert(isnan(tsr_bf16_to_f32(tsr_f32_to_bf16(g))));
        else ck_assert_uint_eq(tsr_f32_to_bf16(g), h);
    }
    ck_assert_float_eq(tsr_f16_to_f32(0x3c00), 1.0f);
    ck_assert_float_eq(tsr_f16_to_f32(0x7bff), 65504.0f);
    ck_assert_uint_eq(tsr_f32_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(tsr_f32_to_f16(65520.0f), 0x7c00); /* the rounding boundary goes to inf */
    ck_assert_uint_eq(tsr_f32_to_f16(1e-8f), 0);
    ck_assert_uint_eq(tsr_f32_to_f16(5.96046448e-8f), 1); /* smallest subnormal */
    float samples[400];
    tt_fill(samples, TSR_F32, 200, 9, -70000, 70000);
    tt_fill(samples + 200, TSR_F32, 200, 10, -1e-4f, 1e-4f);
    for (int i = 0; i < 400; i++) {
        float x = samples[i];
        if (fabsf(x) < 65504) ck_assert_uint_eq(tsr_f32_to_f16(x), nearest16(x, tsr_f16_to_f32));
        float y = x * 1e30f;
        ck_assert_uint_eq(tsr_f32_to_bf16(y), nearest16(y, tsr_bf16_to_f32));
        ck_assert_uint_eq(tsr_f32_to_bf16(x), nearest16(x, tsr_bf16_to_f32));
    }
}
END_TEST

START_TEST(last_kernel_and_builders) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d);
    d.m = d.n = d.k = 2;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
    ck_assert_int_eq(tsr_gemm(ctx, &d, a, b, c), TSR_OK);
    ck_assert_ptr_nonnull(strstr(tsr_last_kernel(), "gemm."));
    tsr_epilogue_step s = tsr_epilogue_residual(a, TSR_F32, 7, 0.5f);
    ck_assert(s.op == TSR_EPI_RESIDUAL && s.ld == 7 && s.scale == 0.5f && s.data == a);
    int64_t shape[3] = {2, 3, 4};
    tsr_tensor_desc t = tsr_tensor_contiguous(TSR_F16, 3, shape);
    ck_assert(t.strides[0] == 12 && t.strides[1] == 4 && t.strides[2] == 1);
    ck_assert_int_eq(tsr_tensor_contiguous(TSR_F32, 9, shape).ndim, -1);
    tsr_context_destroy(ctx);
}
END_TEST

static int scratch_in_thread(void *arg) {
    (void)arg;
    char *p = tsr_scratch_get(4096); /* kept: the thread's exit must free it (LeakSanitizer checks) */
    if (!p) return 1;
    memset(p, 1, 4096);
    tsr_scratch_put(p);
    return 0;
}

START_TEST(scratch_blocks) {
    char *p = tsr_scratch_get(1000);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    memset(p, 1, 1024); /* rounded up to whole 64-byte lines */
    char *q = tsr_scratch_get(1000); /* nested: its own block */
    ck_assert(q && q != p && (uintptr_t)q % 64 == 0);
    memset(q, 2, 1000);
    ck_assert_int_eq(p[999], 1);
    tsr_scratch_put(q);
    tsr_scratch_put(p);
    ck_assert_ptr_eq(tsr_scratch_get(500), p); /* the kept block again */
    char *big = tsr_scratch_get(TSR_SCRATCH_KEEP + 1);
    ck_assert(big && big != p);
    memset(big, 3, TSR_SCRATCH_KEEP + 1);
    tsr_scratch_put(big);
    tsr_scratch_put(p);
    thrd_t t;
    int rc = -1;
    ck_assert_int_eq(thrd_create(&t, scratch_in_thread, NULL), thrd_success);
    ck_assert_int_eq(thrd_join(t, &rc), thrd_success);
    ck_assert_int_eq(rc, 0);
}
END_TEST

START_TEST(registry_lists) {
    int n = -1;
    const tsr_kernel *const *ks = tsr_registry_list(TSR_OP_GEMM, TSR_BACKEND_CPU, &n);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) ck_assert(ks[i]->op == TSR_OP_GEMM && ks[i]->backend == TSR_BACKEND_CPU);
    ck_assert_str_eq(ks[n - 1]->arch, "ref"); /* the reference last */
    tsr_registry_list(TSR_OP_COUNT, TSR_BACKEND_CPU, &n);
    ck_assert_int_eq(n, 0);
    tsr_registry_list(TSR_OP_GEMM, (tsr_backend)99, &n);
    ck_assert_int_eq(n, 0);
}
END_TEST

/* Every x86 kernel names the ISA its file is compiled for, and the core
 * asks for it before calling into the file: on a CPU (here: a context)
 * without it, tsr_kernel_supports declines by name, whatever the problem. */
START_TEST(isa_checked_before_kernel_code) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const uint32_t had = ctx->cpu_features;
    ctx->cpu_features = 0;
    int x86 = 0;
    for (int op = 0; op < TSR_OP_COUNT; op++) {
        int n = 0;
        const tsr_kernel *const *ks = tsr_registry_list((tsr_op)op, TSR_BACKEND_CPU, &n);
        for (int i = 0; i < n; i++) {
            if (strncmp(ks[i]->arch, "x86", 3)) continue;
            x86++;
            ck_assert_msg(ks[i]->cpu_features != 0, "%s names no ISA", ks[i]->name);
            tsr_problem p;
            memset(&p, 0, sizeof p);
            p.op = (tsr_op)op;
            char why[160] = "";
            ck_assert(!tsr_kernel_supports(ks[i], &p, ctx, why, sizeof why));
            ck_assert_msg(strstr(why, ks[i]->name) && strstr(why, "needs a CPU with its ISA"), "%s", why);
        }
    }
    ck_assert_int_ge(x86, 8); /* GEMM, conv, attention, chains and rows, AVX2 and AVX-512 */
    ctx->cpu_features = had;
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, version_and_status);
    tcase_add_test(tc, errors_are_thread_local);
    tcase_add_test(tc, contexts);
    tcase_add_test(tc, memory);
    tcase_add_test(tc, half_conversions);
    tcase_add_test(tc, last_kernel_and_builders);
    tcase_add_test(tc, scratch_blocks);
    tcase_add_test(tc, registry_lists);
    tcase_add_test(tc, isa_checked_before_kernel_code);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
