/* The OpenCL backend's runtime: platform and device discovery through the
 * ICD loader (any vendor's driver), the in-order queue, cl_mem memory, the
 * program cache (memory, then the on-disk binary cache, then the compiler)
 * and kernel launches. TESSERA_OPENCL_DEVICE picks the device: an index
 * over every platform's devices ("1"), "platform:device" ("0:1"), or a
 * case-insensitive part of the platform or device name ("pocl", "gfx"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

const char *tsr_ocl_error_name(cl_int e) {
    switch (e) {
#define N(x) case x: return #x;
    N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_BUILD_PROGRAM_FAILURE) N(CL_INVALID_VALUE)
    N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT) N(CL_INVALID_COMMAND_QUEUE)
    N(CL_INVALID_MEM_OBJECT) N(CL_INVALID_BINARY) N(CL_INVALID_BUILD_OPTIONS)
    N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME)
    N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE) N(CL_INVALID_ARG_SIZE)
    N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_BUFFER_SIZE)
    N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_PLATFORM_NOT_FOUND_KHR)
#undef N
    default: return "CL error";
    }
}

tsr_status tsr_ocl_status(cl_int err, const char *who) {
    if (err == CL_SUCCESS) return TSR_OK;
    tsr_status st = TSR_ERR_DEVICE;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
        err == CL_OUT_OF_RESOURCES || err == CL_INVALID_BUFFER_SIZE)
        st = TSR_ERR_OUT_OF_MEMORY;
    else if (err == CL_INVALID_MEM_OBJECT)
        st = TSR_ERR_WRONG_CONTEXT;
    else if (err == CL_DEVICE_NOT_FOUND || err == CL_DEVICE_NOT_AVAILABLE)
        st = TSR_ERR_NO_DEVICE;
    return tsr_fail(st, "%s: %s (%d)%s", who, tsr_ocl_error_name(err), (int)err,
                    err == CL_INVALID_MEM_OBJECT ? ": a pointer is not a cl_mem of this context" : "");
}

/* ----------------------------------------------------------------- memory */

static tsr_status ocl_malloc(tsr_context *ctx, void **ptr, size_t bytes) {
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(tsr_ocl(ctx)->context, CL_MEM_READ_WRITE, bytes, NULL, &e);
    if (e != CL_SUCCESS || !m) {
        *ptr = NULL;
        if (e == CL_INVALID_BUFFER_SIZE || e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_HOST_MEMORY ||
            e == CL_OUT_OF_RESOURCES)
            return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "malloc: clCreateBuffer of %zu bytes: %s", bytes,
                            tsr_ocl_error_name(e));
        return tsr_ocl_status(e, "malloc: clCreateBuffer");
    }
    *ptr = (void *)m;
    return TSR_OK;
}

static tsr_status ocl_free(tsr_context *ctx, void *ptr) {
    (void)ctx;
    return tsr_ocl_status(clReleaseMemObject(tsr_ocl_mem(ptr)), "free: clReleaseMemObject");
}

static tsr_status ocl_memcpy(tsr_context *ctx, void *dst, const void *src, size_t bytes, tsr_memcpy_kind kind) {
    cl_command_queue q = tsr_ocl(ctx)->queue;
    switch (kind) {
    case TSR_MEMCPY_HOST_TO_DEVICE:
        return tsr_ocl_status(clEnqueueWriteBuffer(q, tsr_ocl_mem(dst), CL_TRUE, 0, bytes, src, 0, NULL, NULL),
                              "memcpy: clEnqueueWriteBuffer");
    case TSR_MEMCPY_DEVICE_TO_HOST:
        return tsr_ocl_status(clEnqueueReadBuffer(q, tsr_ocl_mem(src), CL_TRUE, 0, bytes, dst, 0, NULL, NULL),
                              "memcpy: clEnqueueReadBuffer");
    case TSR_MEMCPY_DEVICE_TO_DEVICE:
        return tsr_ocl_status(clEnqueueCopyBuffer(q, tsr_ocl_mem(src), tsr_ocl_mem(dst), 0, 0, bytes, 0, NULL, NULL),
                              "memcpy: clEnqueueCopyBuffer");
    case TSR_MEMCPY_HOST_TO_HOST: memmove(dst, src, bytes); return TSR_OK;
    }
    return TSR_ERR_INTERNAL;
}

static tsr_status ocl_synchronize(tsr_context *ctx) {
    return tsr_ocl_status(clFinish(tsr_ocl(ctx)->queue), "synchronize: clFinish");
}

static void ocl_destroy(tsr_context *ctx) {
    tsr_ocl_state *s = tsr_ocl(ctx);
    if (!s) return;
    if (s->queue) clFinish(s->queue);
    if (s->last_event) clReleaseEvent(s->last_event);
    if (s->workspace) clReleaseMemObject(s->workspace);
    for (int i = 0; i < s->num_entries; i++) {
        clReleaseKernel(s->entries[i].kernel);
        clReleaseProgram(s->entries[i].program);
    }
    free(s->entries);
    if (s->queue && s->own_queue) clReleaseCommandQueue(s->queue);
    if (s->context) clReleaseContext(s->context);
    pthread_mutex_destroy(&s->lock);
    free(s);
    ctx->backend_state = NULL;
}

static const tsr_backend_ops ocl_ops = {
    .malloc_fn = ocl_malloc,
    .free_fn = ocl_free,
    .memcpy_fn = ocl_memcpy,
    .synchronize_fn = ocl_synchronize,
    .destroy_fn = ocl_destroy,
    .host_addressable = false,
};

/* -------------------------------------------------------------- discovery */

enum { MAX_PLATFORMS = 16, MAX_DEVICES = 64 };

typedef struct found_device {
    cl_platform_id platform;
    cl_device_id device;
    int platform_index, device_index;
} found_device;

static int list_devices(found_device *out, int max, cl_int *err) {
    cl_platform_id plats[MAX_PLATFORMS];
    cl_uint np = 0;
    *err = clGetPlatformIDs(MAX_PLATFORMS, plats, &np);
    if (*err != CL_SUCCESS) return 0;
    int n = 0;
    for (cl_uint p = 0; p < np && p < MAX_PLATFORMS; p++) {
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && d < MAX_DEVICES && n < max; d++)
            out[n++] = (found_device){plats[p], devs[d], (int)p, (int)d};
    }
    return n;
}

static void info_str(cl_device_id d, cl_device_info what, char *out, size_t n) {
    out[0] = 0;
    if (clGetDeviceInfo(d, what, n, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[n - 1] = 0;
}

static void plat_str(cl_platform_id p, cl_platform_info what, char *out, size_t n) {
    out[0] = 0;
    if (clGetPlatformInfo(p, what, n, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[n - 1] = 0;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == nl) return true;
    }
    return false;
}

/* Index into devs of the device TESSERA_OPENCL_DEVICE (or `index`) names; -1 if none. */
static int choose(const found_device *devs, int n, int index, const char *sel) {
    if (!sel || !*sel) return index < n ? index : -1;
    char *end;
    long a = strtol(sel, &end, 10);
    if (end != sel && *end == 0) return a >= 0 && a < n ? (int)a : -1;
    if (end != sel && *end == ':') {
        long b = strtol(end + 1, &end, 10);
        for (int i = 0; i < n; i++)
            if (devs[i].platform_index == a && devs[i].device_index == b) return i;
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char dn[256], pn[256];
        info_str(devs[i].device, CL_DEVICE_NAME, dn, sizeof dn);
        plat_str(devs[i].platform, CL_PLATFORM_NAME, pn, sizeof pn);
        if (contains_ci(dn, sel) || contains_ci(pn, sel)) return i;
    }
    return -1;
}

tsr_status tsr_opencl_backend_init(tsr_context *ctx, const tsr_context_options *opts) {
    found_device devs[MAX_DEVICES];
    cl_int err;
    int n = list_devices(devs, MAX_DEVICES, &err);
    if (n == 0)
        return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: opencl: no OpenCL device (%s)",
                        err != CL_SUCCESS ? "the ICD loader found no platform" : "no platform lists a device");
    const char *sel = getenv("TESSERA_OPENCL_DEVICE");
    int pick = -1;
    cl_command_queue user_q = (cl_command_queue)opts->stream;
    cl_context user_ctx = NULL;
    if (user_q) { /* the caller's queue decides: its device and context */
        cl_device_id qd = NULL;
        if (clGetCommandQueueInfo(user_q, CL_QUEUE_DEVICE, sizeof qd, &qd, NULL) != CL_SUCCESS ||
            clGetCommandQueueInfo(user_q, CL_QUEUE_CONTEXT, sizeof user_ctx, &user_ctx, NULL) != CL_SUCCESS)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "context_create: opencl: opts->stream is not a cl_command_queue");
        for (int i = 0; i < n && pick < 0; i++)
            if (devs[i].device == qd) pick = i;
        if (pick < 0)
            return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: opencl: the queue's device is not among the %d found", n);
        sel = NULL;
    } else {
        pick = choose(devs, n, opts->device, sel);
    }
    if (pick < 0) {
        if (sel && *sel)
            return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: opencl: TESSERA_OPENCL_DEVICE=%s matches none of the %d devices",
                            sel, n);
        return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: opencl: device %d does not exist (%d present)",
                        opts->device, n);
    }
    tsr_ocl_state *s = calloc(1, sizeof *s);
    if (!s) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "context_create: out of host memory");
    pthread_mutex_init(&s->lock, NULL);
    s->platform = devs[pick].platform;
    s->device = devs[pick].device;
    ctx->backend_state = s;
    ctx->ops = &ocl_ops;
    cl_int e = CL_SUCCESS;
    if (user_ctx) {
        e = clRetainContext(user_ctx);
        s->context = e == CL_SUCCESS ? user_ctx : NULL;
    } else {
        s->context = clCreateContext(NULL, 1, &s->device, NULL, NULL, &e);
    }
    if (e != CL_SUCCESS) {
        ocl_destroy(ctx);
        return tsr_ocl_status(e, "context_create: clCreateContext");
    }
    if (user_q) {
        s->queue = user_q;
    } else {
        s->queue = clCreateCommandQueue(s->context, s->device, CL_QUEUE_PROFILING_ENABLE, &e);
        if (e != CL_SUCCESS) {
            ocl_destroy(ctx);
            return tsr_ocl_status(e, "context_create: clCreateCommandQueue");
        }
        s->own_queue = true;
    }
    char ext[4096], name[128];
    info_str(s->device, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    s->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    s->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
    cl_device_type type = 0;
    cl_uint cus = 1;
    clGetDeviceInfo(s->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof s->max_wg, &s->max_wg, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof s->local_mem, &s->local_mem, NULL);
    s->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    info_str(s->device, CL_DEVICE_NAME, name, sizeof name);
    info_str(s->device, CL_DEVICE_VERSION, s->device_version, sizeof s->device_version);
    info_str(s->device, CL_DRIVER_VERSION, s->driver_version, sizeof s->driver_version);
    plat_str(s->platform, CL_PLATFORM_NAME, s->platform_name, sizeof s->platform_name);
    plat_str(s->platform, CL_PLATFORM_VERSION, s->platform_version, sizeof s->platform_version);
    tsr_ocl_cache_dir(s->cache_dir, sizeof s->cache_dir);
    ctx->arch = "opencl";
    ctx->device = pick;
    ctx->compute_units = (int)cus;
    ctx->num_threads = 1;
    snprintf(ctx->device_name, sizeof ctx->device_name, "%.80s (%.40s)", name, s->platform_name);
    snprintf(ctx->driver, sizeof ctx->driver, "%.30s, %.30s", s->driver_version, s->device_version);
    return TSR_OK;
}

/* ------------------------------------------------------------- programs */

void tsr_ocl_define(char *buf, size_t n, const char *name, long long value) {
    size_t used = strlen(buf);
    if (used < n) snprintf(buf + used, n - used, " -D%s=%lld", name, value);
}

static char *build_log(tsr_ocl_state *s, cl_program p) {
    size_t len = 0;
    clGetProgramBuildInfo(p, s->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = calloc(1, len + 1);
    if (log) clGetProgramBuildInfo(p, s->device, CL_PROGRAM_BUILD_LOG, len, log, NULL);
    return log;
}

/* The key text names everything a binary depends on. malloc'ed. */
static char *key_text(const tsr_ocl_state *s, uint64_t src_hash, const char *options) {
    size_t n = strlen(options) + 1024;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "tessera %s\nplatform %s | %s\ndevice %s\ndriver %s\nsource %016llx\noptions %s\n",
                 tsr_version_string(), s->platform_name, s->platform_version, s->device_version,
                 s->driver_version, (unsigned long long)src_hash, options);
    return k;
}

static cl_int build(tsr_ocl_state *s, cl_program p, const char *options) {
    return clBuildProgram(p, 1, &s->device, options, NULL, NULL);
}

/* From the disk cache: a program, or NULL. */
static cl_program from_cache(tsr_ocl_state *s, const char *path, const char *key, const char *options) {
    size_t len = 0;
    bool rejected = false;
    unsigned char *bin = tsr_ocl_cache_read(path, key, &len, &rejected);
    if (rejected) s->stats.rejected++;
    if (!bin) return NULL;
    cl_int e, bs;
    const unsigned char *bp = bin;
    cl_program p = clCreateProgramWithBinary(s->context, 1, &s->device, &len, &bp, &bs, &e);
    free(bin);
    if (e == CL_SUCCESS && bs == CL_SUCCESS && build(s, p, options) == CL_SUCCESS) {
        s->stats.disk_hits++;
        return p;
    }
    if (p) clReleaseProgram(p);
    s->stats.rejected++;
    tsr_log(TSR_LOG_WARN, "opencl: cached binary %s was not accepted by the driver; rebuilding", path);
    return NULL;
}

static tsr_status from_source(tsr_ocl_state *s, const char *const *sources, int n, const char *options,
                              const char *path, const char *key, cl_program *out) {
    cl_int e;
    cl_program p = clCreateProgramWithSource(s->context, (cl_uint)n, (const char **)sources, NULL, &e);
    if (e != CL_SUCCESS) return tsr_ocl_status(e, "opencl: clCreateProgramWithSource");
    e = build(s, p, options);
    if (e != CL_SUCCESS) {
        char *log = build_log(s, p);
        tsr_status st = tsr_fail(TSR_ERR_DEVICE, "opencl: program build failed (%s) with '%s': %.1500s",
                                 tsr_ocl_error_name(e), options, log ? log : "");
        free(log);
        clReleaseProgram(p);
        return st;
    }
    s->stats.builds++;
    size_t len = 0;
    if (path && clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) == CL_SUCCESS && len) {
        unsigned char *bin = malloc(len);
        if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
            tsr_ocl_cache_write(path, key, bin, len);
        free(bin);
    }
    *out = p;
    return TSR_OK;
}

tsr_status tsr_ocl_kernel(tsr_context *ctx, const char *const *sources, int num_sources, const char *options,
                          const char *name, cl_kernel *out) {
    tsr_ocl_state *s = tsr_ocl(ctx);
    uint64_t src_hash = 0;
    for (int i = 0; i < num_sources; i++) src_hash = tsr_fnv1a(sources[i], strlen(sources[i]), src_hash);
    const uint64_t pkey = tsr_fnv1a(options, strlen(options), src_hash);
    const uint64_t key = tsr_fnv1a(name, strlen(name), pkey);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->num_entries; i++)
        if (s->entries[i].key == key) {
            *out = s->entries[i].kernel;
            pthread_mutex_unlock(&s->lock);
            return TSR_OK;
        }
    tsr_status st = TSR_OK;
    cl_program p = NULL;
    for (int i = 0; i < s->num_entries && !p; i++) /* another kernel of a program we have */
        if (s->entries[i].program_key == pkey && clRetainProgram(s->entries[i].program) == CL_SUCCESS)
            p = s->entries[i].program;
    if (!p) {
        char *ktext = key_text(s, src_hash, options);
        char path[1024];
        bool cached = ktext && tsr_ocl_cache_path(s, ktext, path, sizeof path);
        p = cached ? from_cache(s, path, ktext, options) : NULL;
        if (!p) st = from_source(s, sources, num_sources, options, cached ? path : NULL, ktext ? ktext : "", &p);
        free(ktext);
    }
    cl_kernel k = NULL;
    if (!st) {
        cl_int e;
        k = clCreateKernel(p, name, &e);
        st = tsr_ocl_status(e, "opencl: clCreateKernel");
    }
    if (!st && s->num_entries == s->cap_entries) {
        int cap = s->cap_entries ? 2 * s->cap_entries : 32;
        tsr_ocl_entry *grown = realloc(s->entries, sizeof *grown * (size_t)cap);
        if (!grown) st = tsr_fail(TSR_ERR_OUT_OF_MEMORY, "opencl: out of host memory for the program cache");
        else s->entries = grown, s->cap_entries = cap;
    }
    if (st) {
        if (k) clReleaseKernel(k);
        if (p) clReleaseProgram(p);
    } else {
        s->entries[s->num_entries++] = (tsr_ocl_entry){key, pkey, p, k};
        *out = k;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

tsr_status tsr_ocl_launch(tsr_context *ctx, cl_kernel k, int dims, const size_t *global, const size_t *local,
                          int num_args, const tsr_ocl_arg *args, const char *who) {
    tsr_ocl_state *s = tsr_ocl(ctx);
    size_t g[3];
    for (int d = 0; d < dims; d++) {
        g[d] = global[d];
        if (local && local[d]) g[d] = (g[d] + local[d] - 1) / local[d] * local[d];
        if (g[d] == 0) return TSR_OK; /* nothing to do */
    }
    pthread_mutex_lock(&s->lock);
    cl_int e = CL_SUCCESS;
    for (int i = 0; i < num_args && e == CL_SUCCESS; i++) e = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
    if (e != CL_SUCCESS) {
        pthread_mutex_unlock(&s->lock);
        char w[160];
        snprintf(w, sizeof w, "%s: clSetKernelArg", who);
        return tsr_ocl_status(e, w);
    }
    cl_event ev = NULL;
    e = clEnqueueNDRangeKernel(s->queue, k, (cl_uint)dims, NULL, g, local, 0, NULL, &ev);
    if (e == CL_SUCCESS) {
        if (s->last_event) clReleaseEvent(s->last_event);
        s->last_event = ev;
    }
    pthread_mutex_unlock(&s->lock);
    if (e != CL_SUCCESS) {
        char w[160];
        snprintf(w, sizeof w, "%s: clEnqueueNDRangeKernel", who);
        return tsr_ocl_status(e, w);
    }
    return TSR_OK;
}

tsr_status tsr_ocl_run(tsr_context *ctx, const char *const *sources, int num_sources, const char *options,
                       const char *name, int dims, const size_t *global, const size_t *local, int num_args,
                       const tsr_ocl_arg *args, const char *who) {
    cl_kernel k;
    tsr_status st = tsr_ocl_kernel(ctx, sources, num_sources, options, name, &k);
    return st ? st : tsr_ocl_launch(ctx, k, dims, global, local, num_args, args, who);
}

tsr_status tsr_ocl_workspace(tsr_context *ctx, size_t bytes, cl_mem *out) {
    tsr_ocl_state *s = tsr_ocl(ctx);
    if (bytes > s->workspace_bytes) {
        /* OpenCL frees a released buffer after the commands that use it */
        if (s->workspace) clReleaseMemObject(s->workspace);
        s->workspace = NULL;
        s->workspace_bytes = 0;
        size_t want = bytes < ((size_t)1 << 20) ? ((size_t)1 << 20) : bytes;
        void *m = NULL;
        tsr_status st = ocl_malloc(ctx, &m, want);
        if (st) return st;
        s->workspace = tsr_ocl_mem(m);
        s->workspace_bytes = want;
    }
    *out = s->workspace;
    return TSR_OK;
}

double tsr_ocl_last_kernel_seconds(tsr_context *ctx) {
    tsr_ocl_state *s = tsr_ocl(ctx);
    if (!s->last_event || clWaitForEvents(1, &s->last_event) != CL_SUCCESS) return -1;
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(s->last_event, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(s->last_event, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return -1;
    return 1e-9 * (double)(t1 - t0);
}

/* --------------------------------------------------------------- epilogue */

void tsr_ocl_epilogue(const tsr_epilogue *e, tsr_ocl_epi *ev, tsr_ocl_arg *args) {
    memset(ev, 0, sizeof *ev);
    ev->n = e->num_steps;
    for (int i = 0; i < e->num_steps; i++) {
        const tsr_epilogue_step *st = &e->steps[i];
        ev->op.s[i] = (cl_int)st->op;
        ev->act.s[i] = (cl_int)st->activation;
        ev->dt.s[i] = (cl_int)st->dtype;
        ev->data[i] = tsr_ocl_mem(st->data);
        ev->scale.s[i] = st->scale;
        ev->ld.s[i] = st->ld;
        ev->batch_stride.s[i] = st->batch_stride;
    }
    args[0] = TSR_CL_ARG(ev->n);
    args[1] = TSR_CL_ARG(ev->op);
    args[2] = TSR_CL_ARG(ev->act);
    args[3] = TSR_CL_ARG(ev->dt);
    for (int i = 0; i < TSR_MAX_EPILOGUE_STEPS; i++) args[4 + i] = TSR_CL_ARG(ev->data[i]);
    args[8] = TSR_CL_ARG(ev->scale);
    args[9] = TSR_CL_ARG(ev->ld);
    args[10] = TSR_CL_ARG(ev->batch_stride);
}
