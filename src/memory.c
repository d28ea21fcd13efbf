/* Memory helpers: each backend's runtime does the work. */
#include "internal.h"

static tsr_status need_ctx(const tsr_context *ctx, const char *who) {
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", who);
    return TSR_OK;
}

tsr_status tsr_malloc(tsr_context *ctx, void **ptr, size_t bytes) {
    tsr_status st = need_ctx(ctx, "malloc");
    if (st) return st;
    if (!ptr) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "malloc: ptr (the output) is NULL");
    *ptr = NULL;
    if (bytes == 0) return TSR_OK;
    return ctx->ops->malloc_fn(ctx, ptr, bytes);
}

tsr_status tsr_free(tsr_context *ctx, void *ptr) {
    tsr_status st = need_ctx(ctx, "free");
    if (st) return st;
    if (!ptr) return TSR_OK;
    return ctx->ops->free_fn(ctx, ptr);
}

tsr_status tsr_memcpy(tsr_context *ctx, void *dst, const void *src, size_t bytes,
                      tsr_memcpy_kind kind) {
    tsr_status st = need_ctx(ctx, "memcpy");
    if (st) return st;
    if ((unsigned)kind > (unsigned)TSR_MEMCPY_HOST_TO_HOST)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "memcpy: kind (%d) is not a tsr_memcpy_kind",
                        (int)kind);
    if (bytes == 0) return TSR_OK;
    if (!dst) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "memcpy: dst is NULL");
    if (!src) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "memcpy: src is NULL");
    return ctx->ops->memcpy_fn(ctx, dst, src, bytes, kind);
}

tsr_status tsr_synchronize(tsr_context *ctx) {
    tsr_status st = need_ctx(ctx, "synchronize");
    if (st) return st;
    return ctx->ops->synchronize_fn ? ctx->ops->synchronize_fn(ctx) : TSR_OK;
}
