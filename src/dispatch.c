/* Dispatch: the first kernel (in priority order) that supports the problem
 * runs it with its schedule. The reference kernel is last in every list, so
 * every legal call on a backend that has one gets a correct answer. */
#include <string.h>

#include "../autotune/table.h"
#include "internal.h"

bool tsr_kernel_supports(const tsr_kernel *k, const tsr_problem *p, const tsr_context *ctx, char *why,
                         size_t why_len) {
    if (k->cpu_features && (ctx->backend != TSR_BACKEND_CPU || (ctx->cpu_features & k->cpu_features) != k->cpu_features))
        return tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "%s needs a CPU with its ISA", k->name), false;
    return k->supports(p, ctx, why, why_len);
}

const tsr_kernel *tsr_dispatch_select(const tsr_context *ctx, const tsr_problem *p, char *why,
                                      size_t why_len) {
    int n;
    const tsr_kernel *const *ks = tsr_registry_list(p->op, ctx->backend, &n);
    bool ref_only = (ctx->flags & TSR_CONTEXT_REFERENCE_ONLY) != 0;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "no %s kernel for the %s backend",
            tsr_op_name(p->op), tsr_backend_name(ctx->backend));
    for (int i = 0; i < n; i++) {
        if (ref_only && strcmp(ks[i]->arch, "ref") != 0) continue;
        if (tsr_kernel_supports(ks[i], p, ctx, why, why_len)) return ks[i];
    }
    return NULL; /* why holds the last kernel's reason: the reference's */
}

tsr_status tsr_dispatch(tsr_context *ctx, const tsr_problem *p) {
    /* Declining kernels format their reasons only when nothing runs: three
     * snprintf calls were most of a tiny GEMM's cost. */
    const tsr_kernel *k = tsr_dispatch_select(ctx, p, NULL, 0);
    if (!k) {
        char why[256];
        tsr_dispatch_select(ctx, p, why, sizeof why);
        return tsr_fail(TSR_ERR_NOT_SUPPORTED, "%s: %s", tsr_op_name(p->op), why);
    }
    tsr_schedule s;
    memset(&s, 0, sizeof s);
    /* A tuned schedule when the context's table has one (none when tables
     * are off), else the kernel's heuristic. */
    if (!tsr_table_schedule(ctx, p, k, &s) && k->default_schedule) k->default_schedule(p, ctx, &s);
    tsr_set_last_kernel(k->name);
    tsr_log(TSR_LOG_DEBUG, "%s: running %s", tsr_op_name(p->op), k->name);
    return k->run(ctx, p, &s);
}

bool tsr_supports_any_cpu(const tsr_problem *p, const tsr_context *ctx, char *why, size_t why_len) {
    (void)p;
    if (ctx->backend == TSR_BACKEND_CPU) return true;
    tsr_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "the reference kernels run on the cpu backend only");
    return false;
}
