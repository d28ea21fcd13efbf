/* The backend table. A backend whose runtime is not built in answers
 * TSR_ERR_NO_DEVICE with the reason, so callers can probe for it safely. */
#include "backends.h"

#include "tsr_config.h"

static tsr_status not_built(tsr_context *ctx, const tsr_context_options *opts) {
    (void)opts;
    return tsr_fail(TSR_ERR_NO_DEVICE,
                    "context_create: the %s backend is not built into this tessera "
                    "(its runtime is not available in this build)",
                    tsr_backend_name(ctx->backend));
}

#if !TSR_HAVE_CUDA
#define tsr_cuda_backend_init not_built
#else
tsr_status tsr_cuda_backend_init(tsr_context *ctx, const tsr_context_options *opts);
#endif
#if !TSR_HAVE_HIP
#define tsr_hip_backend_init not_built
#else
tsr_status tsr_hip_backend_init(tsr_context *ctx, const tsr_context_options *opts);
#endif
#if !TSR_HAVE_OPENCL
#define tsr_opencl_backend_init not_built
#else
tsr_status tsr_opencl_backend_init(tsr_context *ctx, const tsr_context_options *opts);
#endif

tsr_backend_init_fn tsr_backend_init_for(tsr_backend backend) {
    switch (backend) {
    case TSR_BACKEND_CPU: return tsr_cpu_backend_init;
    case TSR_BACKEND_CUDA: return tsr_cuda_backend_init;
    case TSR_BACKEND_HIP: return tsr_hip_backend_init;
    case TSR_BACKEND_OPENCL: return tsr_opencl_backend_init;
    }
    return NULL;
}
