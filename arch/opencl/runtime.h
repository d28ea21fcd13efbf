/* The OpenCL backend's host-side glue, shared by arch/opencl and every
 * kernels/<op>/opencl.c: the context's device, queue and program cache,
 * error mapping and kernel launches. Includes the OpenCL headers: never
 * include it from an op front or the core. */
#ifndef TSR_OPENCL_RUNTIME_H
#define TSR_OPENCL_RUNTIME_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif
#include <pthread.h>

#include "internal.h"

/* A built program and one kernel of it, found by the hash of its sources,
 * options and kernel name. */
typedef struct tsr_ocl_entry {
    uint64_t key, program_key;
    cl_program program;
    cl_kernel kernel;
} tsr_ocl_entry;

typedef struct tsr_ocl_stats {
    int disk_hits;    /* programs created from the binary cache */
    int builds;       /* programs compiled from source */
    int rejected;     /* cache entries found stale or corrupt (then rebuilt) */
} tsr_ocl_stats;

typedef struct tsr_ocl_state {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;   /* in order, profiling enabled when ours */
    bool own_queue;
    bool fp16, fp64;          /* cl_khr_fp16, cl_khr_fp64 */
    bool is_cpu;              /* CL_DEVICE_TYPE_CPU (PoCL's pthread device) */
    size_t max_wg;            /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong local_mem;       /* CL_DEVICE_LOCAL_MEM_SIZE */
    char platform_name[128], platform_version[128];
    char device_version[128], driver_version[64];
    pthread_mutex_t lock;     /* the entries and argument setting + enqueue */
    tsr_ocl_entry *entries;
    int num_entries, cap_entries;
    char cache_dir[512];      /* "" = no disk cache */
    tsr_ocl_stats stats;
    cl_event last_event;      /* the last launch's event (profiling) */
    cl_mem workspace;         /* scratch (transposed filters...); grows */
    size_t workspace_bytes;
} tsr_ocl_state;

static inline tsr_ocl_state *tsr_ocl(const tsr_context *ctx) {
    return (tsr_ocl_state *)ctx->backend_state;
}
/* A tessera device pointer on an OpenCL context is a cl_mem. */
static inline cl_mem tsr_ocl_mem(const void *p) { return (cl_mem)(uintptr_t)p; }

/* TSR_OK for CL_SUCCESS; else a status with "<who>: <CL error name> (<code>)". */
tsr_status tsr_ocl_status(cl_int err, const char *who);
const char *tsr_ocl_error_name(cl_int err);

/* The kernel `name` of the program built from the concatenated sources with
 * `options` (the schedule's knobs as -D defines): from the context's memory,
 * else from the on-disk binary cache, else compiled (and cached). */
tsr_status tsr_ocl_kernel(tsr_context *ctx, const char *const *sources, int num_sources,
                          const char *options, const char *name, cl_kernel *out);

/* One kernel argument: its size and a pointer to its value (a cl_mem's
 * address for buffers; a NULL buffer is {sizeof(cl_mem), NULL-valued}). */
typedef struct tsr_ocl_arg {
    size_t size;
    const void *value;
} tsr_ocl_arg;
#define TSR_CL_ARG(x) ((tsr_ocl_arg){sizeof(x), &(x)})

/* Sets the arguments and enqueues k on the context's queue (no wait).
 * local may be NULL. global sizes are rounded up to multiples of local. */
tsr_status tsr_ocl_launch(tsr_context *ctx, cl_kernel k, int dims, const size_t *global,
                          const size_t *local, int num_args, const tsr_ocl_arg *args,
                          const char *who);

/* At least `bytes` of device scratch owned by ctx, valid until the next
 * call on ctx (the in-order queue keeps reuse ordered). */
tsr_status tsr_ocl_workspace(tsr_context *ctx, size_t bytes, cl_mem *out);

/* A kernel from `sources` launched in one go (tsr_ocl_kernel + tsr_ocl_launch). */
tsr_status tsr_ocl_run(tsr_context *ctx, const char *const *sources, int num_sources, const char *options,
                       const char *name, int dims, const size_t *global, const size_t *local, int num_args,
                       const tsr_ocl_arg *args, const char *who);

/* Device time of the last launch on ctx in seconds (profiling events), or
 * a negative value when the queue does not profile. Waits for it. */
double tsr_ocl_last_kernel_seconds(tsr_context *ctx);

/* The binary cache (cache.c). */
void tsr_ocl_cache_dir(char *out, size_t n);
/* Path of the cache file for a key text; false if no cache. */
bool tsr_ocl_cache_path(const tsr_ocl_state *s, const char *key_text, char *out, size_t n);
/* Reads a cache entry for key_text: malloc'ed binary, or NULL (absent or
 * rejected, with `rejected` set when a file was there but not trusted). */
unsigned char *tsr_ocl_cache_read(const char *path, const char *key_text, size_t *len, bool *rejected);
/* Writes it atomically (temp file + rename); failures are logged only. */
void tsr_ocl_cache_write(const char *path, const char *key_text, const unsigned char *bin, size_t len);

/* Sources embedded at build time (generated from the .cl files). */
extern const char tsr_cl_common[];
extern const char tsr_cl_gemm_tiled[];
extern const char tsr_cl_gemm[];
extern const char tsr_cl_conv[];
extern const char tsr_cl_attention[];
extern const char tsr_cl_elementwise[];

/* Appends " -D<name>=<value>" to buf (size n). */
void tsr_ocl_define(char *buf, size_t n, const char *name, long long value);
/* The epilogue's kernel arguments (EPI_PARAMS in common.cl: count, ops,
 * activations, dtypes, 4 buffers, scales, residual lds and batch strides):
 * fills args[0..TSR_OCL_EPI_ARGS) pointing into ev. */
enum { TSR_OCL_EPI_ARGS = 11 };
typedef struct tsr_ocl_epi {
    cl_int n;
    cl_int4 op, act, dt;
    cl_mem data[TSR_MAX_EPILOGUE_STEPS];
    cl_float4 scale;
    cl_long4 ld, batch_stride;
} tsr_ocl_epi;
void tsr_ocl_epilogue(const tsr_epilogue *e, tsr_ocl_epi *ev, tsr_ocl_arg *args);

#endif
