/* One conv2d case against the reference, for the kernel-level suites
 * (test_conv_x86, test_conv_cuda). Each suite runs the kernel its own way
 * (on host memory, or on device copies it uploads and downloads), so the
 * check is split around that: tt_conv_setup builds the data, the reference
 * output and its error bound; the suite runs the kernel into y; then
 * tt_conv_compare asserts, and tt_conv_release frees. */
#ifndef TSR_TEST_CONV_CHECK_H
#define TSR_TEST_CONV_CHECK_H

#include "internal.h"
#include "testutil.h"

/* The fused epilogue a case asks for. EPI_RES_INPLACE: y += conv, y
 * holding the residual beforehand (the residual step's data is y). */
enum { EPI_NONE, EPI_BIAS, EPI_BIAS_ACT, EPI_RES, EPI_ALL, EPI_RES_INPLACE };

typedef struct conv_case {
    int64_t n, c, h, w, k, r, s, sh, sw, pt, pb, pl, pr, dh, dw, g;
    tsr_tensor_format fmt;
    tsr_filter_format ffmt;
    tsr_dtype dt, yt;
    int epi;
    tsr_activation act;
} conv_case;

/* Host data of one case. p is the problem as the op front hands it to a
 * kernel, on the host buffers: x, w, y (sentinel-filled, or the residual
 * for EPI_RES_INPLACE) and the epilogue's bias/res/y. A suite running on a
 * device swaps those pointers for device copies (sizes below). */
typedef struct conv_data {
    tsr_problem p;
    int64_t xn, wn, yn;  /* element counts of x, w, y (and res) */
    size_t es, ys;       /* element sizes of x/w and of y/res/bias */
    void *x, *w, *y, *res, *bias;
    void *want;          /* the reference's y */
    float *bound;        /* sum |x||w| per output: what f32 accumulation can lose */
} conv_data;

/* The descriptor of case c. */
void tt_conv_desc_of(const conv_case *c, tsr_conv2d_desc *d);
/* A problem holding only c's descriptor and output shape (no data): what
 * default_schedule and dispatch look at. */
void tt_conv_problem_of(const conv_case *c, tsr_problem *p);
/* The schedule k's heuristic picks for case c on ctx (zeros when k has none). */
void tt_conv_default_schedule(const tsr_kernel *k, tsr_context *ctx, const conv_case *c, tsr_schedule *s);

/* Fills t for case c, runs the reference on ref into t->want and the bound. */
void tt_conv_setup(tsr_context *ref, const conv_case *c, conv_data *t);
/* Asserts that t->y (the kernel's output, back on the host) matches the
 * reference within 1e-5 + 1e-4 * bound + the output dtype's rounding;
 * prints the first mismatches naming kernel, case and `knobs` (the
 * schedule as the suite names it). */
void tt_conv_compare(const conv_data *t, const conv_case *c, const char *kernel, const char *knobs);
void tt_conv_release(conv_data *t);

#endif
