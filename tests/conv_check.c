#include "conv_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tt_conv_desc_of(const conv_case *c, tsr_conv2d_desc *d) {
    tsr_conv2d_desc_init(d);
    d->format = c->fmt, d->filter_format = c->ffmt;
    d->n = c->n, d->c = c->c, d->h = c->h, d->w = c->w, d->k = c->k, d->r = c->r, d->s = c->s;
    d->stride_h = c->sh, d->stride_w = c->sw, d->pad_top = c->pt, d->pad_bottom = c->pb;
    d->pad_left = c->pl, d->pad_right = c->pr, d->dilation_h = c->dh, d->dilation_w = c->dw, d->groups = c->g;
    d->x_dtype = d->w_dtype = c->dt, d->y_dtype = c->yt;
}

void tt_conv_problem_of(const conv_case *c, tsr_problem *p) {
    memset(p, 0, sizeof *p);
    p->op = TSR_OP_CONV2D;
    tt_conv_desc_of(c, &p->u.conv.d);
    tsr_conv2d_output_shape(&p->u.conv.d, &p->u.conv.p, &p->u.conv.q);
}

void tt_conv_default_schedule(const tsr_kernel *k, tsr_context *ctx, const conv_case *c, tsr_schedule *s) {
    tsr_problem p;
    tt_conv_problem_of(c, &p);
    memset(s, 0, sizeof *s);
    if (k->default_schedule) k->default_schedule(&p, ctx, s);
}

void tt_conv_setup(tsr_context *ref, const conv_case *c, conv_data *t) {
    memset(t, 0, sizeof *t);
    tsr_conv2d_desc d;
    tt_conv_desc_of(c, &d);
    int64_t P, Q;
    ck_assert_msg(tsr_conv2d_output_shape(&d, &P, &Q) == TSR_OK, "%s", tsr_last_error());
    const int64_t xn = c->n * c->c * c->h * c->w, wn = c->k * (c->c / c->g) * c->r * c->s, yn = c->n * c->k * P * Q;
    const size_t es = tsr_dtype_size(c->dt), ys = tsr_dtype_size(c->yt);
    t->xn = xn, t->wn = wn, t->yn = yn, t->es = es, t->ys = ys;
    void *x = t->x = malloc((size_t)xn * es + 1), *w = t->w = malloc((size_t)wn * es + 1);
    void *y1 = t->want = malloc((size_t)yn * ys + 1), *y2 = t->y = malloc((size_t)yn * ys + 1);
    void *res = t->res = malloc((size_t)yn * ys + 1), *bias = t->bias = malloc((size_t)c->k * ys + 1);
    tt_fill(x, c->dt, xn, 11 + (uint64_t)c->c, -1, 1);
    tt_fill(w, c->dt, wn, 12 + (uint64_t)c->k, -1, 1);
    tt_fill(bias, c->yt, c->k, 13, -1, 1);
    tt_fill(res, c->yt, yn, 14, -1, 1);
    tt_fill_sentinel(y2, (size_t)yn * ys);

    /* sum |x||w| per output: the reference on absolute values */
    float *ax = malloc(sizeof(float) * (size_t)(xn + 1)), *aw = malloc(sizeof(float) * (size_t)(wn + 1));
    t->bound = malloc(sizeof(float) * (size_t)(yn + 1));
    for (int64_t i = 0; i < xn; i++) ax[i] = fabsf(tsr_load_f(x, c->dt, i));
    for (int64_t i = 0; i < wn; i++) aw[i] = fabsf(tsr_load_f(w, c->dt, i));
    tsr_conv2d_desc da = d;
    da.x_dtype = da.w_dtype = da.y_dtype = TSR_F32;
    ck_assert_msg(tsr_conv2d(ref, &da, ax, aw, t->bound) == TSR_OK, "%s", tsr_last_error());
    free(ax), free(aw);

    tsr_epilogue *e = &d.epilogue;
    if (c->epi == EPI_BIAS || c->epi == EPI_BIAS_ACT || c->epi == EPI_ALL)
        e->steps[e->num_steps++] = tsr_epilogue_bias(bias, c->epi == EPI_ALL ? TSR_F32 : c->yt);
    if (c->epi == EPI_ALL && c->yt != TSR_F32) e->steps[0].dtype = c->yt; /* an f32 bias only with f32 data */
    if (c->epi == EPI_BIAS_ACT) e->steps[e->num_steps++] = tsr_epilogue_activation(c->act);
    if (c->epi == EPI_RES || c->epi == EPI_ALL)
        e->steps[e->num_steps++] = tsr_epilogue_residual(res, c->yt, 0, c->epi == EPI_ALL ? 0.5f : 1.0f);
    if (c->epi == EPI_ALL) e->steps[e->num_steps++] = tsr_epilogue_activation(c->act);
    ck_assert_msg(tsr_conv2d(ref, &d, x, w, y1) == TSR_OK, "%s", tsr_last_error());
    if (c->epi == EPI_RES_INPLACE) { /* y += conv: y starts as the residual */
        memcpy(y1, res, (size_t)yn * ys);
        e->steps[e->num_steps++] = tsr_epilogue_residual(y1, c->yt, 0, 1.0f);
        ck_assert_msg(tsr_conv2d(ref, &d, x, w, y1) == TSR_OK, "%s", tsr_last_error());
        memcpy(y2, res, (size_t)yn * ys);
        e->steps[0].data = y2;
    }

    tsr_problem *p = &t->p;
    p->op = TSR_OP_CONV2D;
    p->u.conv.d = d, p->u.conv.p = P, p->u.conv.q = Q;
    p->u.conv.x = x, p->u.conv.w = w, p->u.conv.y = y2;
}

void tt_conv_compare(const conv_data *t, const conv_case *c, const char *kernel, const char *knobs) {
    const double out_eps = c->yt == TSR_F32 ? 1e-6 : c->yt == TSR_F16 ? 1.0 / 1024 : 1.0 / 128;
    int64_t bad = 0;
    for (int64_t i = 0; i < t->yn; i++) {
        const double want = tsr_load_f(t->want, c->yt, i), got = tsr_load_f(t->y, c->yt, i);
        const double tol = 1e-5 + 1e-4 * t->bound[i] + out_eps * (fabs(want) + 1e-3);
        if (!(fabs(got - want) <= tol) && bad++ < 3)
            printf("  %s n%lld c%lld %lldx%lld k%lld %lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld d%lld,%lld g%lld "
                   "fmt%d ffmt%d %s->%s epi%d act%d %s: y[%lld] = %g, want %g (tol %g)\n",
                   kernel, (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k,
                   (long long)c->r, (long long)c->s, (long long)c->sh, (long long)c->sw, (long long)c->pt,
                   (long long)c->pb, (long long)c->pl, (long long)c->pr, (long long)c->dh, (long long)c->dw,
                   (long long)c->g, (int)c->fmt, (int)c->ffmt, tsr_dtype_name(c->dt), tsr_dtype_name(c->yt),
                   c->epi, (int)c->act, knobs, (long long)i, got, want, tol);
    }
    fflush(stdout);
    ck_assert_msg(bad == 0, "%s: %lld outputs differ from the reference", kernel, (long long)bad);
}

void tt_conv_release(conv_data *t) {
    free(t->x), free(t->w), free(t->y), free(t->res), free(t->bias), free(t->want), free(t->bound);
    memset(t, 0, sizeof *t);
}
