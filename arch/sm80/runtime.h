/* The CUDA backend's host-side glue, shared by every sm80 kernel file:
 * the context's stream and device facts, error mapping, scratch memory.
 * Included by .cu files only (it pulls in the CUDA runtime). */
#ifndef TSR_SM80_RUNTIME_H
#define TSR_SM80_RUNTIME_H

#include <cuda_runtime.h>

extern "C" {
#include "internal.h"
}

typedef struct tsr_cuda_state {
    cudaStream_t stream;   /* the caller's, or own_stream */
    bool own_stream;
    int sm_count;
    int cc_major, cc_minor;
    size_t smem_optin;     /* dynamic shared memory a block may opt into */
    size_t l2_bytes;
    void *workspace;       /* split-k partials and the like; grows, never shrinks */
    size_t workspace_bytes;
} tsr_cuda_state;

static inline tsr_cuda_state *tsr_cuda(const tsr_context *ctx) {
    return (tsr_cuda_state *)ctx->backend_state;
}
static inline cudaStream_t tsr_cuda_stream(const tsr_context *ctx) {
    return tsr_cuda(ctx)->stream;
}

/* TSR_OK for cudaSuccess; else a status (OUT_OF_MEMORY, NO_DEVICE or DEVICE)
 * with "<who>: <CUDA's name>: <CUDA's text>" recorded. */
tsr_status tsr_cuda_status(cudaError_t err, const char *who);
/* Checks the launch just queued (bad configuration, missing image...). */
tsr_status tsr_cuda_after_launch(const char *who);
/* Makes ctx's device current on this thread. */
tsr_status tsr_cuda_enter(const tsr_context *ctx);
/* At least `bytes` of device scratch owned by ctx, valid until the next call
 * on ctx; work queued on ctx's stream keeps its order with reuse. */
tsr_status tsr_cuda_workspace(tsr_context *ctx, size_t bytes, void **out);

#endif
