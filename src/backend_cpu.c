/* The CPU backend's runtime: host memory, threads, and the kernel arch the
 * CPU can run. TESSERA_CPU_ARCH=generic|x86_avx2|x86_avx512 caps the arch
 * (to test fallbacks on a machine that has more). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../arch/x86_avx512/cpuid.h"
#include "internal.h"

static tsr_status cpu_malloc(tsr_context *ctx, void **ptr, size_t bytes) {
    (void)ctx;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "malloc: %zu bytes is too large", bytes);
    *ptr = aligned_alloc(64, rounded);
    if (!*ptr) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "malloc: could not allocate %zu bytes", bytes);
    return TSR_OK;
}

static tsr_status cpu_free(tsr_context *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
    return TSR_OK;
}

static tsr_status cpu_memcpy(tsr_context *ctx, void *dst, const void *src, size_t bytes,
                             tsr_memcpy_kind kind) {
    (void)ctx;
    (void)kind; /* host and device are the same memory */
    memmove(dst, src, bytes);
    return TSR_OK;
}

static const tsr_backend_ops cpu_ops = {
    .malloc_fn = cpu_malloc,
    .free_fn = cpu_free,
    .memcpy_fn = cpu_memcpy,
    .synchronize_fn = NULL,
    .destroy_fn = NULL,
    .host_addressable = true,
};

#define AVX2_SET (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C)
#define AVX512_SET (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL)
#define AVX512_ALL (AVX512_SET | TSR_CPU_AVX512DQ | TSR_CPU_AVX512BF16 | TSR_CPU_AVX512VNNI)

static const char *arch_for(uint32_t f) {
    if ((f & AVX512_SET) == AVX512_SET && (f & AVX2_SET) == AVX2_SET) return "x86_avx512";
    if ((f & AVX2_SET) == AVX2_SET) return "x86_avx2";
    return "generic";
}

tsr_status tsr_cpu_backend_init(tsr_context *ctx, const tsr_context_options *opts) {
    if (opts->device != 0)
        return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: the cpu backend has one device (0), not %d",
                        opts->device);
    uint32_t f = tsr_x86_cpu_features();
    const char *cap = getenv("TESSERA_CPU_ARCH");
    if (cap && strcmp(cap, "generic") == 0) f = 0;
    else if (cap && strcmp(cap, "x86_avx2") == 0) f &= ~(uint32_t)AVX512_ALL;
    else if (cap && *cap && strcmp(cap, "x86_avx512") != 0)
        tsr_log(TSR_LOG_WARN, "TESSERA_CPU_ARCH=%s is not generic, x86_avx2 or x86_avx512; ignored", cap);
    ctx->cpu_features = f;
    ctx->cpu_amd = tsr_x86_cpu_is_amd();
    ctx->arch = arch_for(f);
    ctx->ops = &cpu_ops;
    ctx->compute_units = omp_get_num_procs();
    ctx->num_threads = opts->num_threads > 0 ? opts->num_threads : ctx->compute_units;
    tsr_x86_cpu_name(ctx->device_name, sizeof ctx->device_name);
    return TSR_OK;
}
