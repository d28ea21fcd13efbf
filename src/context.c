/* Contexts: one backend + device, its stream, threads and tuning table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../autotune/table.h"
#include "backends.h"
#include "internal.h"

void tsr_context_options_init(tsr_context_options *opts) {
    if (!opts) return;
    memset(opts, 0, sizeof *opts);
    opts->size = sizeof *opts;
    opts->backend = TSR_BACKEND_CPU;
}

tsr_status tsr_context_create(tsr_context **out, const tsr_context_options *opts) {
    if (!out) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_create: ctx (the output) is NULL");
    *out = NULL;
    tsr_context_options defaults;
    tsr_context_options_init(&defaults);
    if (!opts) opts = &defaults;
    if (opts->size < offsetof(tsr_context_options, flags) + sizeof opts->flags)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "context_create: opts->size (%zu) is smaller than this library's "
                        "tsr_context_options (%zu); call tsr_context_options_init",
                        opts->size, sizeof(tsr_context_options));
    if (opts->device < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_create: device (%d) < 0", opts->device);
    if (opts->num_threads < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_create: num_threads (%d) < 0",
                        opts->num_threads);
    tsr_backend_init_fn init = tsr_backend_init_for(opts->backend);
    if (!init)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_create: backend (%d) is not a tsr_backend",
                        (int)opts->backend);

    tsr_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "context_create: out of host memory");
    ctx->backend = opts->backend;
    ctx->device = opts->device;
    ctx->flags = opts->flags;
    ctx->stream = opts->stream;
    tsr_status st = init(ctx, opts);
    if (st != TSR_OK) {
        free(ctx);
        return st; /* the backend wrote the message */
    }
    tsr_context_attach_table(ctx); /* never fails: table_status says why not */
    *out = ctx;
    tsr_log(TSR_LOG_INFO, "context: %s device %d (%s), arch %s, %d threads",
            tsr_backend_name(ctx->backend), ctx->device, ctx->device_name, ctx->arch,
            ctx->num_threads);
    return TSR_OK;
}

tsr_status tsr_context_destroy(tsr_context *ctx) {
    if (!ctx) return TSR_OK;
    tsr_context_detach_table(ctx);
    if (ctx->ops && ctx->ops->destroy_fn) ctx->ops->destroy_fn(ctx);
    free(ctx);
    return TSR_OK;
}

tsr_status tsr_context_set_num_threads(tsr_context *ctx, int num_threads) {
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_set_num_threads: ctx is NULL");
    if (num_threads < 0)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_set_num_threads: num_threads (%d) < 0",
                        num_threads);
    ctx->num_threads = num_threads == 0 ? ctx->compute_units : num_threads;
    if (ctx->num_threads < 1) ctx->num_threads = 1;
    return TSR_OK;
}

static void copy_str(char *dst, size_t n, const char *src) {
    if (n) snprintf(dst, n, "%s", src ? src : "");
}

tsr_status tsr_context_get_info(const tsr_context *ctx, tsr_context_info *info) {
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_get_info: ctx is NULL");
    if (!info) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_get_info: info is NULL");
    if (info->size < sizeof(tsr_context_info))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "context_get_info: info->size (%zu) must be sizeof(tsr_context_info) (%zu)",
                        info->size, sizeof(tsr_context_info));
    size_t size = info->size;
    memset(info, 0, sizeof *info);
    info->size = size;
    info->backend = ctx->backend;
    info->device = ctx->device;
    info->num_threads = ctx->num_threads;
    info->cpu_features = ctx->cpu_features;
    info->compute_units = ctx->compute_units;
    copy_str(info->arch, sizeof info->arch, ctx->arch);
    copy_str(info->device_name, sizeof info->device_name, ctx->device_name);
    copy_str(info->driver, sizeof info->driver, ctx->driver);
    copy_str(info->table_path, sizeof info->table_path, ctx->table_path);
    copy_str(info->table_status, sizeof info->table_status, ctx->table_status);
    return TSR_OK;
}
