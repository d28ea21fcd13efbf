/* The CUDA backend's runtime: device discovery, the stream, memory, and a
 * clean TSR_ERR_NO_DEVICE when there is no driver or no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

tsr_status tsr_cuda_status(cudaError_t err, const char *who) {
    if (err == cudaSuccess) return TSR_OK;
    tsr_status st = TSR_ERR_DEVICE;
    if (err == cudaErrorMemoryAllocation) st = TSR_ERR_OUT_OF_MEMORY;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
             err == cudaErrorInvalidDevice || err == cudaErrorDevicesUnavailable ||
             err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorSystemDriverMismatch ||
             err == cudaErrorNoKernelImageForDevice)
        st = TSR_ERR_NO_DEVICE;
    return tsr_fail(st, "%s: %s: %s", who, cudaGetErrorName(err), cudaGetErrorString(err));
}

tsr_status tsr_cuda_after_launch(const char *who) {
    return tsr_cuda_status(cudaGetLastError(), who);
}

tsr_status tsr_cuda_enter(const tsr_context *ctx) {
    return tsr_cuda_status(cudaSetDevice(ctx->device), "cuda: cudaSetDevice");
}

tsr_status tsr_cuda_workspace(tsr_context *ctx, size_t bytes, void **out) {
    tsr_cuda_state *s = tsr_cuda(ctx);
    if (bytes > s->workspace_bytes) {
        /* The old block may still be read by queued work: free after it. */
        if (s->workspace) {
            cudaStreamSynchronize(s->stream);
            cudaFree(s->workspace);
            s->workspace = NULL;
            s->workspace_bytes = 0;
        }
        size_t want = bytes < ((size_t)1 << 20) ? ((size_t)1 << 20) : bytes;
        tsr_status st = tsr_cuda_status(cudaMalloc(&s->workspace, want), "cuda workspace");
        if (st) return st;
        s->workspace_bytes = want;
    }
    *out = s->workspace;
    return TSR_OK;
}

static tsr_status cuda_malloc(tsr_context *ctx, void **ptr, size_t bytes) {
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e != cudaSuccess) {
        *ptr = NULL;
        cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "malloc: cudaMalloc of %zu bytes: out of device memory",
                            bytes);
        return tsr_cuda_status(e, "malloc: cudaMalloc");
    }
    return TSR_OK;
}

static tsr_status cuda_free(tsr_context *ctx, void *ptr) {
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    return tsr_cuda_status(cudaFree(ptr), "free: cudaFree");
}

static tsr_status cuda_memcpy(tsr_context *ctx, void *dst, const void *src, size_t bytes,
                              tsr_memcpy_kind kind) {
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                           cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    cudaStream_t s = tsr_cuda_stream(ctx);
    st = tsr_cuda_status(cudaMemcpyAsync(dst, src, bytes, kinds[kind], s), "memcpy: cudaMemcpyAsync");
    if (st) return st;
    /* Copies that touch host memory return when the host side is done, as
     * cudaMemcpy does; device-to-device stays ordered on the stream. */
    if (kind != TSR_MEMCPY_DEVICE_TO_DEVICE)
        return tsr_cuda_status(cudaStreamSynchronize(s), "memcpy: cudaStreamSynchronize");
    return TSR_OK;
}

static tsr_status cuda_synchronize(tsr_context *ctx) {
    tsr_status st = tsr_cuda_enter(ctx);
    if (st) return st;
    return tsr_cuda_status(cudaStreamSynchronize(tsr_cuda_stream(ctx)), "synchronize");
}

static void cuda_destroy(tsr_context *ctx) {
    tsr_cuda_state *s = tsr_cuda(ctx);
    if (!s) return;
    cudaSetDevice(ctx->device);
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (s->workspace) cudaFree(s->workspace);
    if (s->own_stream) cudaStreamDestroy(s->stream);
    free(s);
    ctx->backend_state = NULL;
}

static const tsr_backend_ops cuda_ops = {
    cuda_malloc, cuda_free, cuda_memcpy, cuda_synchronize, cuda_destroy,
    /* host_addressable */ false,
};

extern "C" tsr_status tsr_cuda_backend_init(tsr_context *ctx, const tsr_context_options *opts) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: cuda: no usable GPU (%s: %s)",
                        cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (opts->device >= count)
        return tsr_fail(TSR_ERR_NO_DEVICE, "context_create: cuda: device %d does not exist (%d present)",
                        opts->device, count);
    cudaDeviceProp prop;
    tsr_status st = tsr_cuda_status(cudaGetDeviceProperties(&prop, opts->device),
                                    "context_create: cudaGetDeviceProperties");
    if (st) return st;
    if (prop.major < 8)
        return tsr_fail(TSR_ERR_NO_DEVICE,
                        "context_create: cuda: %s is compute capability %d.%d; tessera's CUDA "
                        "kernels need 8.0 (Ampere) or newer", prop.name, prop.major, prop.minor);
    st = tsr_cuda_status(cudaSetDevice(opts->device), "context_create: cudaSetDevice");
    if (st) return st;
    tsr_cuda_state *s = (tsr_cuda_state *)calloc(1, sizeof *s);
    if (!s) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "context_create: out of host memory");
    s->sm_count = prop.multiProcessorCount;
    s->cc_major = prop.major;
    s->cc_minor = prop.minor;
    s->smem_optin = prop.sharedMemPerBlockOptin;
    s->l2_bytes = (size_t)prop.l2CacheSize;
    if (opts->stream) {
        s->stream = (cudaStream_t)opts->stream;
    } else {
        st = tsr_cuda_status(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                             "context_create: cudaStreamCreate");
        if (st) {
            free(s);
            return st;
        }
        s->own_stream = true;
    }
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    ctx->backend_state = s;
    ctx->ops = &cuda_ops;
    ctx->arch = "sm80";
    ctx->compute_units = prop.multiProcessorCount;
    ctx->num_threads = 1;
    snprintf(ctx->device_name, sizeof ctx->device_name, "%.100s (sm_%d%d)", prop.name, prop.major,
             prop.minor);
    snprintf(ctx->driver, sizeof ctx->driver, "driver %d.%d, runtime %d.%d", drv / 1000,
             (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
    return TSR_OK;
}
