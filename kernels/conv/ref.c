/* Reference conv2d: direct cross-correlation accumulated in double, for any
 * format, filter format, groups, stride, padding and dilation. It is the
 * test oracle and the last-resort kernel, so it indexes every element
 * through layout.h's offset helpers instead of being clever (packed
 * filters included, whichever kernel's layout they are in). */
#include "layout.h"

/* y[n][k][oh][ow] before the epilogue: the taps of k's group that land
 * inside the input (padding contributes zeros). */
static double conv_point(const tsr_conv2d_problem *cp, int64_t n, int64_t k, int64_t oh, int64_t ow) {
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t Cg = d->c / d->groups, Kg = d->k / d->groups, c0 = (k / Kg) * Cg;
    const tsr_dtype wt = cp->packed ? tsr_packed_filter_dtype(cp->packed) : d->w_dtype;
    double acc = 0.0;
    for (int64_t r = 0; r < d->r; r++) {
        const int64_t ih = oh * d->stride_h - d->pad_top + r * d->dilation_h;
        if (ih < 0 || ih >= d->h) continue;
        for (int64_t s = 0; s < d->s; s++) {
            const int64_t iw = ow * d->stride_w - d->pad_left + s * d->dilation_w;
            if (iw < 0 || iw >= d->w) continue;
            for (int64_t c = 0; c < Cg; c++) {
                int64_t xi = tsr_act_offset(d->format, n, c0 + c, ih, iw, d->c, d->h, d->w);
                int64_t wi = cp->packed ? tsr_packed_filter_offset(cp->packed, k, c, r, s)
                                        : tsr_filter_offset(d->filter_format, k, c, r, s, d->k, Cg, d->r, d->s);
                acc += (double)tsr_load_f(cp->x, d->x_dtype, xi) * (double)tsr_load_f(cp->w, wt, wi);
            }
        }
    }
    return acc;
}

static tsr_status ref_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_conv2d_problem *cp = &prob->u.conv;
    const tsr_conv2d_desc *d = &cp->d;
    const int64_t P = cp->p, Q = cp->q;
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctx->num_threads)
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t oh = 0; oh < P; oh++)
            for (int64_t ow = 0; ow < Q; ow++)
                for (int64_t k = 0; k < d->k; k++) {
                    const int64_t yi = tsr_act_offset(d->format, n, k, oh, ow, d->k, P, Q);
                    /* The residual is dense in y's format: with batch and row 0 the
                     * shared epilogue reads it at column yi, whatever its ld. */
                    float v = tsr_epilogue_apply_ref(&d->epilogue, (float)conv_point(cp, n, k, oh, ow), k, 0, 0, yi);
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
    .num_knobs = 0,
    .knobs = NULL,
    .default_schedule = NULL,
    .schedule_valid = NULL,
    .run = ref_run,
};
