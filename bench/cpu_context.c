#include "cpu_context.h"

#include <omp.h>
#include <stdio.h>

tsr_context *bench_cpu_context(int threads, tsr_context_info *info) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.num_threads = threads;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        fprintf(stderr, "tessera-bench: %s\n", tsr_last_error());
        return NULL;
    }
    omp_set_num_threads(threads);
    if (info) {
        info->size = sizeof *info;
        tsr_context_get_info(ctx, info);
    }
    return ctx;
}
