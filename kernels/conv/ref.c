/* Reference direct convolution (cross-correlation), double accumulation. */
#include "layout.h"

static tsr_status ref_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_conv2d_problem *cp = &prob->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t P = cp->p, Q = cp->q, G = d->groups, Cg = d->c / G, Kg = d->k / G;
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctx->num_threads)
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t op = 0; op < P; op++)
            for (int64_t oq = 0; oq < Q; oq++)
                for (int64_t k = 0; k < d->k; k++) {
                    int64_t g = k / Kg;
                    double acc = 0.0;
                    for (int64_t r = 0; r < d->r; r++) {
                        int64_t ih = op * d->stride_h - d->pad_top + r * d->dilation_h;
                        if (ih < 0 || ih >= d->h) continue;
                        for (int64_t s = 0; s < d->s; s++) {
                            int64_t iw = oq * d->stride_w - d->pad_left + s * d->dilation_w;
                            if (iw < 0 || iw >= d->w) continue;
                            for (int64_t c = 0; c < Cg; c++) {
                                int64_t xi = tsr_act_offset(d->format, n, g * Cg + c, ih, iw, d->c, d->h, d->w);
                                int64_t wi = tsr_filter_offset(d->filter_format, k, c, r, s, d->k, Cg, d->r, d->s);
                                acc += (double)tsr_load_f(cp->x, d->x_dtype, xi) *
                                       (double)tsr_load_f(cp->w, d->w_dtype, wi);
                            }
                        }
                    }
                    int64_t yi = tsr_act_offset(d->format, n, k, op, oq, d->k, P, Q);
                    float v = tsr_epilogue_apply_ref(&d->epilogue, (float)acc, k, 0, 0, yi);
                    tsr_store_f(cp->y, d->y_dtype, yi, v);
                }
    return TSR_OK;
}

const tsr_kernel tsr_conv2d_ref = {
    .name = "conv2d.ref",
    .op = TSR_OP_CONV2D,
    .backend = TSR_BACKEND_CPU,
    .arch = "ref",
    .supports = tsr_supports_any_cpu,
    .run = ref_run,
};
