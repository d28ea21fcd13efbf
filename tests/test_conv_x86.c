/* The x86 conv2d kernels on their own, against the reference: C and K not
 * multiples of the tile widths, primes, H/W of 1, pads larger than half the
 * filter, dilation, stride 2, the 7x7 stride-2 stem, groups (incl. more
 * output channels per group than one panel), depthwise with and without a
 * multiplier, NCHW and every filter format, f16/bf16 inputs and outputs,
 * each epilogue step (and a residual that is y itself), every algorithm and
 * several blockings, 1 and 2 threads (depthwise also 3). Tolerances scale with sum |x||w| per
 * output (what f32 accumulation can lose) plus the output dtype's rounding.
 * Kernels this CPU cannot run print SKIP. */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_check.h"

static const char *kernels[] = {"conv2d.x86_avx512.f32", "conv2d.x86_avx2.f32"};

/* Runs kernel k with schedule s on the case's host buffers; returns 1 when
 * the schedule applied. */
/* y moved to a 64-byte boundary (malloc's 16 never lines up a vector with
 * a cache line: the streamed stores would not be reached). */
static void align_y(conv_data *t) {
    const size_t bytes = (size_t)t->yn * t->ys;
    void *y = aligned_alloc(64, (bytes + 63) / 64 * 64);
    ck_assert_ptr_nonnull(y);
    memcpy(y, t->y, bytes);
    tsr_epilogue *e = &t->p.u.conv.d.epilogue;
    for (int i = 0; i < e->num_steps; i++)
        if (e->steps[i].data == t->y) e->steps[i].data = y;
    free(t->y);
    t->y = t->p.u.conv.y = y;
}

static int check_at(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const conv_case *c, const tsr_schedule *s,
                    bool aligned) {
    conv_data t;
    tt_conv_setup(ref, c, &t);
    if (aligned) align_y(&t);
    int ran = 0;
    char why[160];
    if (!k->schedule_valid || k->schedule_valid(&t.p, ctx, s)) {
        ck_assert_msg(tsr_kernel_supports(k, &t.p, ctx, why, sizeof why), "%s", why);
        ck_assert_msg(k->run(ctx, &t.p, s) == TSR_OK, "%s", tsr_last_error());
        char knobs[64];
        snprintf(knobs, sizeof knobs, "algo%d ocb%d pxb%d ord%d", s->v[0], s->v[1], s->v[2], s->v[3]);
        tt_conv_compare(&t, c, k->name, knobs);
        ran = 1;
    }
    tt_conv_release(&t);
    return ran;
}

static int check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const conv_case *c, const tsr_schedule *s) {
    return check_at(ctx, ref, k, c, s, false);
}

/* The kernel named, or NULL after a SKIP line when this CPU cannot run it. */
static const tsr_kernel *kernel_here(tsr_context *ctx, const char *name, const char *test) {
    const tsr_kernel *k = tsr_registry_find(name);
    ck_assert_ptr_nonnull(k);
    tsr_problem probe;
    memset(&probe, 0, sizeof probe);
    probe.op = TSR_OP_CONV2D;
    tsr_conv2d_desc_init(&probe.u.conv.d);
    char why[128];
    if (tsr_kernel_supports(k, &probe, ctx, why, sizeof why)) return k;
    printf("SKIP conv_x86: %s: %s: %s\n", test, name, why);
    return NULL;
}

#define F32 TSR_F32, TSR_F32
static const conv_case cases[] = {
    /* n  c   h   w   k   r  s sh sw pt pb pl pr dh dw  g  fmt  ffmt */
    {2, 13, 5, 7, 19, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 17, 9, 11, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {1, 3, 23, 23, 20, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {3, 16, 1, 1, 35, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_NONE, 0},
    {2, 5, 1, 1, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
    {1, 6, 5, 4, 9, 3, 3, 1, 1, 3, 2, 4, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_NONE, 0},
    {1, 8, 12, 10, 17, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_GELU_ERF},
    {2, 9, 10, 9, 33, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_SILU},
    {1, 24, 8, 8, 40, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 12, 7, 7, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {2, 14, 6, 5, 80, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 2, TSR_NHWC, TSR_FILTER_OIHW, F32, EPI_ALL, TSR_ACT_TANH},
    {2, 37, 9, 8, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 37, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 32, 10, 10, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 32, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 19, 11, 13, 19, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 19, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_ALL, TSR_ACT_SIGMOID},
    {1, 5, 6, 6, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {1, 7, 13, 11, 5, 2, 3, 1, 1, 0, 1, 2, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_NONE, 0},
    {2, 11, 6, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, F32, EPI_ALL, TSR_ACT_GELU_TANH},
    {1, 9, 5, 5, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NCHW, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 10, 6, 6, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS, 0},
    {1, 21, 7, 6, 29, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    {2, 16, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_F16, TSR_F32, EPI_BIAS, 0},
    {1, 13, 8, 7, 21, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 20, 5, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20, TSR_NHWC, TSR_FILTER_OHWI, TSR_F16, TSR_F16, EPI_ALL, TSR_ACT_RELU},
    /* depthwise reading bf16 x as it loads it: a whole channel block and a ragged one, stride 2 */
    {2, 40, 7, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 40, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* depthwise f16/bf16 y rounded from the registers: ragged channel blocks on both ISAs (21, 13;
     * with no epilogue the ragged one too) */
    {1, 21, 9, 11, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 21, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 13, 8, 10, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 13, TSR_NHWC, TSR_FILTER_HWIO, TSR_F16, TSR_F16, EPI_NONE, 0},
    {1, 12, 6, 6, 18, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, TSR_BF16, TSR_F32, EPI_BIAS_ACT, TSR_ACT_SILU},
    {3, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 3, 1, 9, 4, 1, 3, 1, 1, 0, 0, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_NONE, 0},
    /* bf16 with even channels per group: the AVX512_BF16 dot-product path where the CPU has it */
    {2, 16, 9, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_F32, EPI_ALL, TSR_ACT_RELU},
    {1, 12, 7, 9, 18, 3, 3, 2, 1, 2, 0, 1, 1, 2, 1, 3, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 6, 11, 10, 33, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, TSR_BF16, TSR_BF16, EPI_RES_INPLACE, 0},
    /* depthwise row tiles: 16 + 8 + 7 wide, a channel vector short of a pair
     * block, ragged channels, W of 1..3, stride 2 with pads past half the
     * filter, batch 2; bf16 through the row-pair dot products (pair tiles
     * of 8 and the rest, rows and columns in the padding, a 16-channel
     * remainder on the f32 path) with bf16 and f32 y; f16 and dilation on
     * the per-tap loop; an epilogue that calls out (gelu) */
    {2, 48, 5, 31, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 48, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 21, 4, 3, 21, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 21, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
    {3, 16, 2, 1, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, TSR_NHWC, TSR_FILTER_OIHW, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 37, 6, 2, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 37, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_ALL, TSR_ACT_SILU},
    {2, 80, 9, 19, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 80, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 96, 6, 20, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 96, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_F32, EPI_ALL, TSR_ACT_RELU},
    {2, 64, 3, 2, 64, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 64, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_RES_INPLACE, 0},
    {1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, TSR_NCHW, TSR_FILTER_OIHW, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_GELU_ERF},
    {1, 32, 9, 11, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 32, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 24, 8, 9, 24, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 24, TSR_NHWC, TSR_FILTER_OHWI, TSR_F16, TSR_F16, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* depthwise rows in tiles of equal widths (40 = 14 + 13 + 13, 23 = 12 +
     * 11, 17 = 9 + 8, stride 2 to 14), channels in several L1 chunks with a
     * ragged last vector, pads of 3 (past the column walk's edges: the
     * per-tap loop), an epilogue stored from memory (residual) */
    {1, 200, 9, 40, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 200, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 48, 6, 28, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 48, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
    {1, 33, 5, 23, 33, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1, 33, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {3, 64, 4, 23, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 160, 5, 17, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 160, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* the column walk's filter rows cut by the padding once per output row:
     * dilation_h 2 (rows stepped by two image rows) with pads past it at
     * the top and bottom, stride_h 2, an input of two rows; tiles inside
     * the row (no column tests) between edge tiles, bias without relu */
    {2, 24, 9, 29, 24, 3, 3, 2, 1, 3, 2, 1, 1, 2, 1, 24, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 16, 2, 19, 16, 3, 3, 1, 2, 2, 2, 1, 1, 2, 1, 16, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS, 0},
    /* batch 1 with a filter packed per call and 16+ vectors, 5 output
     * rows: channel groups a row (2 on two threads, 3 on three), each
     * thread packing the channels it touches (17 vectors, the last ragged;
     * bf16 pairs in groups of whole pairs) */
    {1, 260, 5, 9, 260, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 260, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* 7 output rows, work enough for 2 and 3 threads: rows split, a
     * thread's first or last one in part (2 channel groups), each
     * thread packing every channel it touches (scratch lent as NaN) */
    {1, 576, 14, 14, 576, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 576, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 288, 4, 7, 288, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 288, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    /* bf16 pair walks from pairs packed once per thread straight from
     * each filter format: MobileNet-v2's 14x14x576 stride 2 (its first
     * column padding, its last in the image); 13 columns at stride 2 (both
     * end columns padding) with a 16-channel f32 remainder; rows of 3, 15,
     * 8 and 1 output; no column in the padding at stride 1 and 2 (f32 y:
     * the epilogue per output through dw_store_tile), padding on the
     * right only and on the left only */
    {1, 576, 14, 14, 576, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 576, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 144, 5, 13, 144, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 144, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 64, 3, 3, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 96, 4, 15, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 96, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {2, 32, 3, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_NONE, 0},
    {1, 32, 2, 1, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 64, 5, 9, 64, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 64, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 32, 5, 9, 32, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 32, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {2, 96, 4, 10, 96, 3, 3, 1, 1, 1, 1, 0, 1, 1, 1, 96, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 64, 4, 6, 64, 3, 3, 1, 1, 1, 1, 1, 0, 1, 1, 64, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_NONE, 0},
    /* HWIO whose groups fill whole panels: read in place */
    {2, 10, 6, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 8, 5, 5, 64, 3, 3, 2, 1, 2, 1, 0, 2, 1, 2, 2, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS, 0},
    {1, 6, 4, 4, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, TSR_NCHW, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    {1, 33, 3, 5, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES_INPLACE, 0},
    /* 7x7 at batch 1 (tiles of 8 across rows), 16-wide rows */
    {1, 40, 7, 7, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 32, 7, 7, 40, 3, 3, 1, 1, 2, 1, 1, 2, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {2, 9, 4, 16, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, F32, EPI_RES_INPLACE, 0},
    /* rows wide enough for tiles whose every tap is in the image (one run
     * per filter row, no per-row checks): dilated rows, bf16 5x3, a stride-2
     * HWIO filter read in place */
    {1, 16, 11, 30, 40, 3, 3, 1, 1, 2, 2, 1, 1, 2, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 18, 6, 33, 20, 5, 3, 1, 1, 2, 2, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 7, 9, 40, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    /* padded rows of 7 outputs past batch 1: tiles of 7 (AVX-512), one
     * output row each (stride 2 from 14 columns; bf16) */
    {2, 16, 14, 13, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    {3, 24, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* taps of 32+ channels whose pixels in the padding are a tile's first or
     * last (tap_fma leaves them out): 7-wide rows of a 5-wide input padded
     * by 2 (the middle tap drops both ends of each tile, the outer taps
     * two pixels at one end: the zeros instead); 16-wide rows in tiles of
     * 8, one end each; bf16 pairs */
    {2, 40, 5, 5, 24, 3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 34, 5, 5, 40, 3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 32, 6, 16, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    {2, 48, 4, 16, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_F32, EPI_BIAS, 0},
    /* more than one panel, images smaller than a tile row, channels past 64 */
    {2, 80, 7, 5, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 36, 6, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 66, 5, 4, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS_ACT, TSR_ACT_SILU},
    /* bf16 1x1 on the pointwise tiles, stored from registers with a bf16
     * residual (35 pixels, 45 channels: ragged tiles and panels) */
    {2, 18, 5, 7, 45, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 34, 3, 3, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_RES_INPLACE, 0},
    /* more bf16 pointwise tiles: 143 pixels by three panels, 20 pixels by
     * two under an epilogue stored from memory (GELU), 3 and 7 pixels (one
     * tile, rows repeated) with a ragged third panel */
    {1, 30, 11, 13, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 40, 4, 5, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_F32, EPI_BIAS_ACT, TSR_ACT_GELU_ERF},
    {3, 16, 1, 1, 70, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_BF16, EPI_RES, 0},
    {1, 22, 1, 7, 69, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    /* bf16 with odd channels in one group, each filter row one run of S x
     * C values per pixel, its last value alone (x86_stem_bf16.h): a
     * 3-channel 7x7 stride-2 stem (tiles inside, at the edges, across rows
     * and images), an OIHW 5x3, a 1x1, one channel with dilation_h 2 and
     * pads past it, a run of 63 (the most: 32 pairs) over 3 panels; a zero
     * channel padded in for the pairs where the runs do not fit: 65 values,
     * 13 filter rows, dilation_w 2 */
    {2, 3, 23, 21, 36, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 7, 9, 8, 17, 5, 3, 1, 2, 2, 1, 0, 2, 1, 1, 1, TSR_NCHW, TSR_FILTER_OIHW, TSR_BF16, TSR_F32, EPI_BIAS, 0},
    {1, 5, 4, 5, 37, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_RES_INPLACE, 0},
    {2, 1, 11, 19, 20, 5, 5, 1, 1, 4, 4, 3, 3, 2, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 9, 12, 26, 70, 3, 7, 1, 2, 1, 1, 3, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 13, 6, 9, 24, 3, 5, 1, 1, 1, 1, 2, 2, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 3, 15, 6, 16, 13, 1, 1, 1, 6, 6, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
    {1, 5, 8, 12, 16, 3, 3, 1, 1, 2, 2, 2, 2, 1, 2, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_F32, EPI_RES, 0},
    /* f32 1x1 on whole panels (pointwise_fast_tile; on AVX2 its k loop in
     * assembly four channels a round): channels a round and a remainder
     * (37, 130), a remainder alone (3), whole rounds (64, 8); tiles of 6
     * and 5 pixels (70, 49); each epilogue it specialises (bias, scaled
     * residual and relu; a residual of scale 1 in place and apart; bias and
     * relu; bias; none), and a filter read in place (the C k loop) */
    {2, 37, 5, 7, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 64, 6, 6, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 3, 4, 9, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OIHW, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 130, 7, 7, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {2, 8, 3, 6, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_NONE, 0},
    {1, 21, 6, 7, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
    {1, 20, 6, 6, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_ALL, TSR_ACT_RELU},
    /* strided 1x1s on the same tiles where a tile stays in one output row
     * (rows stride_w * C apart), on direct tiles where it crosses one: 9
     * outputs a row (a tile in each, one across), stride 2 and 3 by 2, odd
     * input sizes, batch 2 */
    {2, 13, 9, 17, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 40, 8, 23, 16, 1, 1, 3, 2, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    {1, 64, 14, 14, 48, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    /* row tiles (all filter rows in one loop: assembly on AVX2, C on AVX-512
     * where the input has under 16 channels): a 3-channel 7x7 stride-2
     * stem whose 7-wide rows put tiles across output rows and images (each
     * pixel's patch copied), edge windows; dilation_h 2 with pads past it;
     * windows too large for the copy (11-wide stride 4, the general tile)
     * and patches too large (9 channels 7x7 across rows); a 3x3 of 40
     * channels. Whole panels (K a multiple of 16) store as the pointwise
     * tiles do: bias and relu, bias alone, a residual of scale 1 in place,
     * and (above) a scaled one with relu and one of scale 1 apart */
    {2, 3, 13, 13, 32, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 5, 13, 20, 32, 3, 3, 1, 1, 3, 3, 1, 1, 2, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
    {1, 15, 12, 60, 20, 5, 11, 1, 4, 2, 2, 5, 5, 1, 1, 1, TSR_NHWC, TSR_FILTER_OIHW, F32, EPI_RES, 0},
    {1, 9, 9, 9, 17, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 40, 9, 10, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
    {1, 12, 8, 11, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES_INPLACE, 0},
    /* work enough for two threads (4+ MFLOP; the cases above mostly run on
     * one) on 7x7 outputs at batch 1, as ResNet-50's last stage, the filter
     * packed inside the call: a 3x3 of ragged panels (f32; bf16 pairs), a
     * strided 1x1, a pointwise 1x1 from an OIHW filter */
    {1, 96, 7, 7, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
    {1, 96, 7, 7, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_ALL, TSR_ACT_RELU},
    {1, 192, 14, 14, 250, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
    {1, 256, 7, 7, 200, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OIHW, TSR_BF16, TSR_F32, EPI_BIAS, 0},
};

START_TEST(shapes_schedules_threads) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = kernel_here(ctx, kernels[ki], "shapes_schedules_threads");
        if (!k) continue;
        /* algo, ocb, pxb, order: blockings that split and reorder the work
         * (pxb 3 and ocb 2: blocks of unequal sizes) */
        const tsr_schedule scheds[] = {{{0, 1, 1, 1}}, {{0, 4, 2, 0}}, {{0, 16, 32, 1}}, {{1, 1, 1, 0}}, {{2, 1, 1, 0}},
                                       {{0, 2, 3, 0}}};
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            /* depthwise splits rows (and channel groups) evenly over the
             * threads: 3 as well, whose shares of 2 or 14 rows are ragged */
            for (int threads = 1; threads <= (cases[ci].g == cases[ci].c ? 3 : 2); threads++) {
                tsr_context_set_num_threads(ctx, threads);
                tsr_schedule s;
                tt_conv_default_schedule(k, ctx, &cases[ci], &s);
                ran += check(ctx, ref, k, &cases[ci], &s);
                for (size_t si = 0; si < sizeof scheds / sizeof scheds[0]; si++)
                    ran += check(ctx, ref, k, &cases[ci], &scheds[si]);
            }
    }
    printf("conv_x86: %d kernel runs checked\n", ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Called from inside the caller's OpenMP parallel region, each of its
 * threads on its own problem, with the context's 1 or 2 threads: the call's
 * loops must not bind to the caller's team (a one-thread call ran outside
 * any region of its own, and its loops were shared out among the caller's
 * threads, each computing part of its own output). Direct 3x3, pointwise
 * 1x1 and depthwise with the filter packed per call and read in place. */
START_TEST(inside_callers_parallel_region) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    static const conv_case cs[] = {
        {1, 17, 9, 11, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS, 0},
        {2, 13, 5, 7, 19, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
        {2, 37, 9, 8, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 37, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
        {1, 48, 5, 31, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 48, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES, 0},
    };
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = kernel_here(ctx, kernels[ki], "inside_callers_parallel_region");
        if (!k) continue;
        for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
            for (int threads = 1; threads <= 2; threads++) {
                tsr_context_set_num_threads(ctx, threads);
                conv_data t[2];
                tsr_status st[2];
                for (int i = 0; i < 2; i++) tt_conv_setup(ref, &cs[ci], &t[i]);
                tsr_schedule s;
                tt_conv_default_schedule(k, ctx, &cs[ci], &s);
#pragma omp parallel num_threads(2)
                for (int i = omp_get_thread_num(); i < 2; i += omp_get_num_threads()) st[i] = k->run(ctx, &t[i].p, &s);
                for (int i = 0; i < 2; i++) {
                    ck_assert_msg(st[i] == TSR_OK, "%s", tsr_last_error());
                    tt_conv_compare(&t[i], &cs[ci], k->name, "inside a parallel region");
                    tt_conv_release(&t[i]);
                    ran++;
                }
            }
    }
    printf("conv_x86: %d calls from inside a parallel region checked\n", ran);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Through the public API: dispatch picks the x86 kernel, an empty batch
 * writes nothing, groups that do not divide c or k are an error that says so. */
START_TEST(front_and_errors) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.n = 0, d.c = 8, d.h = d.w = 5, d.k = 4, d.r = d.s = 3;
    float y[16];
    tt_fill_sentinel(y, sizeof y);
    ck_assert_int_eq(tsr_conv2d(ctx, &d, NULL, NULL, y), TSR_OK);
    ck_assert(tt_unchanged(y, sizeof y));
    d.n = 1, d.groups = 3;
    float x[200] = {0}, w[288] = {0};
    ck_assert_int_eq(tsr_conv2d(ctx, &d, x, w, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "groups (3) does not divide c (8)"), "%s", tsr_last_error());
    d.c = 6, d.groups = 3;
    ck_assert_int_eq(tsr_conv2d(ctx, &d, x, w, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "groups (3) does not divide k (4)"), "%s", tsr_last_error());
    tsr_context_destroy(ctx);
}
END_TEST

/* The bf16 stem takes each pixel's run of S x C values from x itself and
 * its last value alone (x86_stem_bf16.h): the value after the run, the
 * next pixel's first channel, must not enter the sum, not even as inf or
 * NaN times a zero weight. A 7x7 stride-2 3-channel stem whose x holds
 * an inf and a NaN in the first channel of pixels just past some outputs'
 * runs; every output is the reference's (non-finite exactly where the
 * reference's is, those of equal sign where inf). Through dispatch: the
 * stem tiles where the CPU has AVX512_BF16, else whatever runs. */
START_TEST(stem_run_ends) {
    enum { H = 16, W = 16, C = 3, K = 32, P = 8, Q = 8 };
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.n = 1, d.c = C, d.h = H, d.w = W, d.k = K, d.r = d.s = 7, d.stride_h = d.stride_w = 2;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 3;
    d.x_dtype = d.w_dtype = TSR_BF16;
    uint16_t x[H * W * C], w[K * 7 * 7 * C];
    float y[P * Q * K], want[P * Q * K];
    tt_fill(x, TSR_BF16, H * W * C, 71, -1, 1);
    tt_fill(w, TSR_BF16, K * 7 * 7 * C, 72, -1, 1);
    /* output column q's runs span input columns 2q - 3 .. 2q + 3: column
     * 10 follows q = 3's, column 4 q = 0's */
    x[(5 * W + 10) * C] = tsr_f32_to_bf16(INFINITY);
    x[(11 * W + 4) * C] = tsr_f32_to_bf16(NAN);
    ck_assert_int_eq(tsr_conv2d(ctx, &d, x, w, y), TSR_OK);
    printf("conv_x86: stem_run_ends ran %s\n", tsr_last_kernel());
    ck_assert_int_eq(tsr_conv2d(ref, &d, x, w, want), TSR_OK);
    int finite = 0;
    for (int i = 0; i < P * Q * K; i++) {
        const float g = y[i], e = want[i];
        if (isfinite(e)) {
            finite++;
            ck_assert_msg(fabsf(g - e) <= 1e-3f * (fabsf(e) + 1.0f), "y[%d] = %g, want %g", i, (double)g, (double)e);
        } else {
            ck_assert_msg(!isfinite(g) && (isnan(e) ? isnan(g) : g == e), "y[%d] = %g, want %g", i, (double)g,
                          (double)e);
        }
    }
    /* q = 3 beside the inf and q = 0 beside the NaN among the finite ones */
    ck_assert(isfinite(want[(2 * Q + 3) * K]) && isfinite(want[(5 * Q + 0) * K]) && finite < P * Q * K);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* supports() follows the context's ISA bits: without AVX-512 only the AVX2
 * kernel takes a problem; without AVX512_BF16 the AVX-512 kernel takes bf16
 * through f32 conversion, and still matches the reference. */
START_TEST(isa_gating) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_kernel *k512 = tsr_registry_find("conv2d.x86_avx512.f32"), *k2 = tsr_registry_find("conv2d.x86_avx2.f32");
    ck_assert_ptr_nonnull(k512);
    ck_assert_ptr_nonnull(k2);
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_CONV2D;
    tsr_conv2d_desc_init(&p.u.conv.d);
    const uint32_t had = ctx->cpu_features;
    char why[160] = "";
    ctx->cpu_features = TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C;
    ck_assert(!tsr_kernel_supports(k512, &p, ctx, why, sizeof why));
    ck_assert_msg(strstr(why, "needs a CPU with its ISA"), "%s", why);
    ck_assert(tsr_kernel_supports(k2, &p, ctx, why, sizeof why) == ((had & ctx->cpu_features) == ctx->cpu_features));
    ctx->cpu_features = had & ~TSR_CPU_AVX512BF16;
    if (tsr_kernel_supports(k512, &p, ctx, why, sizeof why)) {
        const conv_case c = {2, 16, 9, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16,
                         EPI_ALL, TSR_ACT_RELU};
        tsr_schedule s;
        tt_conv_default_schedule(k512, ctx, &c, &s);
        ck_assert_int_eq(check(ctx, ref, k512, &c, &s), 1);
    } else {
        printf("SKIP conv_x86: isa_gating: this CPU has no AVX-512\n");
    }
    ctx->cpu_features = had;
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Past the caches: x over 4 MiB (input ahead prefetched: depthwise rows,
 * pointwise tiles' pixels, f32 and bf16, the last tiles' past the end of x),
 * depthwise and direct (pointwise and 3x3, a ragged last panel) with y over
 * 16 MiB (stored past the caches) or, depthwise on AVX-512, x and y over
 * it together, f32 and bf16, stride 1 and 2, on the default schedule only
 * (the reference is slow). */
START_TEST(out_of_cache) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const conv_case big[] = {
        {2, 160, 130, 128, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 160, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_BIAS_ACT, TSR_ACT_RELU},
        {2, 320, 132, 128, 320, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 320, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
        {1, 96, 220, 200, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 96, TSR_NHWC, TSR_FILTER_HWIO, F32, EPI_RES_INPLACE, 0},
        {2, 24, 130, 128, 136, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_ALL, TSR_ACT_RELU},
        {1, 4, 130, 130, 520, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
        {2, 64, 130, 127, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_OHWI, F32, EPI_RES, 0},
        {1, 64, 181, 190, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_BIAS, 0},
        /* bf16 depthwise with y under 16 MiB, streamed for x and y together
         * past it; 144 and 48 channels: every other pixel's 32-channel
         * blocks start half a line into one (stored as two halves), the
         * 16 channels past them by the column walk */
        {1, 144, 180, 170, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 144, TSR_NHWC, TSR_FILTER_HWIO, TSR_BF16, TSR_BF16, EPI_BIAS_ACT, TSR_ACT_RELU},
        {1, 48, 430, 420, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 48, TSR_NHWC, TSR_FILTER_OHWI, TSR_BF16, TSR_BF16, EPI_RES, 0},
    };
    int ran = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const tsr_kernel *k = kernel_here(ctx, kernels[ki], "out_of_cache");
        if (!k) continue;
        for (size_t ci = 0; ci < sizeof big / sizeof big[0]; ci++) {
            tsr_schedule s;
            tt_conv_default_schedule(k, ctx, &big[ci], &s);
            ran += check_at(ctx, ref, k, &big[ci], &s, true);
        }
    }
    ck_assert_int_gt(ran, 0);
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* Runs case c through the public API with its filter packed once on pctx
 * (in the layout pctx's kernel picks) and the call made on rctx. */
static void packed_run(tsr_context *pctx, tsr_context *rctx, tsr_context *ref, const conv_case *c, const char *what) {
    conv_data t;
    tt_conv_setup(ref, c, &t);
    tsr_conv2d_desc d = t.p.u.conv.d;
    size_t bytes = 0;
    ck_assert_msg(tsr_conv2d_packed_filter_size(pctx, &d, &bytes) == TSR_OK, "%s", tsr_last_error());
    void *packed = malloc(bytes);
    ck_assert_msg(tsr_conv2d_pack_filter(pctx, &d, t.w, packed, bytes) == TSR_OK, "%s", tsr_last_error());
    d.filter_format = TSR_FILTER_PACKED;
    ck_assert_msg(tsr_conv2d(rctx, &d, t.x, packed, t.p.u.conv.y) == TSR_OK, "%s", tsr_last_error());
    tt_conv_compare(&t, c, tsr_last_kernel(), what);
    free(packed);
    tt_conv_release(&t);
}

/* Filters packed once: every case of this suite through tsr_conv2d with the
 * packed filter, on 1 and 2 threads, and the same bytes read by the
 * reference kernel (a packed filter stays correct whichever kernel runs). */
START_TEST(packed_filters) {
    tsr_context *ctx = NULL, *ref = tt_ref_context();
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int threads = 1; threads <= 2; threads++) {
            tsr_context_set_num_threads(ctx, threads);
            packed_run(ctx, ctx, ref, &cases[ci], "packed");
            packed_run(ctx, ref, ref, &cases[ci], "packed, run by the reference");
        }
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
}
END_TEST

/* A packed filter records its shapes, dtype and layout: every mismatch is
 * an error naming it, never a wrong answer; a kernel of another width
 * declines it. */
START_TEST(packed_filter_errors) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_conv2d_desc d;
    tsr_conv2d_desc_init(&d);
    d.c = 24, d.h = d.w = 6, d.k = 40, d.r = d.s = 3, d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
    static float x[24 * 36], w[40 * 24 * 9], y[40 * 36];
    size_t bytes = 0;
    ck_assert_int_eq(tsr_conv2d_packed_filter_size(ctx, &d, NULL), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_conv2d_packed_filter_size(ctx, &d, &bytes), TSR_OK);
    ck_assert_uint_gt(bytes, sizeof w);
    char *packed = malloc(bytes + 8);
    ck_assert_int_eq(tsr_conv2d_pack_filter(ctx, &d, w, packed, bytes - 1), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "the packed filter needs"), "%s", tsr_last_error());
    ck_assert_int_eq(tsr_conv2d_pack_filter(ctx, &d, NULL, packed, bytes), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_conv2d_pack_filter(ctx, &d, w, packed + 4, bytes), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "8-byte aligned"), "%s", tsr_last_error());
    ck_assert_int_eq(tsr_conv2d_pack_filter(ctx, &d, w, packed, bytes), TSR_OK);
    tsr_conv2d_desc pd = d;
    pd.filter_format = TSR_FILTER_PACKED;
    ck_assert_int_eq(tsr_conv2d_pack_filter(ctx, &pd, w, packed, bytes), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "names the format w is in"), "%s", tsr_last_error());
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, packed, y), TSR_OK);
    pd.k = 39;
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, packed, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "was made for k=40 c=24 r=3 s=3 groups=1, not for this desc's k=39"), "%s",
                  tsr_last_error());
    pd.k = 40, pd.x_dtype = pd.w_dtype = TSR_BF16;
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, packed, y), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "made for w_dtype f32, not bf16"), "%s", tsr_last_error());
    pd.x_dtype = pd.w_dtype = TSR_F32;
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, w, y), TSR_ERR_INVALID_ARGUMENT); /* not packed at all */
    ck_assert_msg(strstr(tsr_last_error(), "make w with tsr_conv2d_pack_filter"), "%s", tsr_last_error());
    packed[60] ^= 1; /* a header changed after packing */
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, packed, y), TSR_ERR_INVALID_ARGUMENT);
    packed[60] ^= 1;
    { /* a header whose checksum holds but whose layout this library does not read: a
       * panel width one more than this CPU's (16 or 32) disagrees with the payload's
       * size for k = 40 (a fixed 48 would read as three 16-wide panels on AVX2) */
        tsr_packed_filter forged;
        memcpy(&forged, packed, sizeof forged);
        forged.nr += 1;
        forged.check = tsr_fnv1a(&forged, offsetof(tsr_packed_filter, check), 0); /* what the op front checks */
        char *fp = malloc(bytes);
        memcpy(fp, packed, bytes);
        memcpy(fp, &forged, sizeof forged);
        ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, fp, y), TSR_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(tsr_last_error(), "does not read; pack it again"), "%s", tsr_last_error());
        free(fp);
    }
    ck_assert_int_eq(tsr_conv2d(ctx, &pd, x, packed, (float *)(void *)(packed + 256)), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(tsr_last_error(), "y overlaps w"), "%s", tsr_last_error());
    /* the AVX2 kernel (16-wide panels) declines a filter packed for 32-wide ones */
    const tsr_kernel *k2 = tsr_registry_find("conv2d.x86_avx2.f32");
    const tsr_packed_filter *h = (const tsr_packed_filter *)(const void *)packed;
    if (strcmp(h->producer, "conv2d.x86_avx512.f32") == 0) {
        tsr_problem p;
        memset(&p, 0, sizeof p);
        p.op = TSR_OP_CONV2D;
        p.u.conv.d = pd, p.u.conv.packed = h;
        char why[160] = "";
        ck_assert(!tsr_kernel_supports(k2, &p, ctx, why, sizeof why));
        ck_assert_msg(strstr(why, "packed for conv2d.x86_avx512.f32"), "%s", why);
    } else {
        printf("SKIP conv_x86: packed_filter_errors: the filter was packed by %s, not the AVX-512 kernel\n", h->producer);
    }
    free(packed);
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conv_x86");
    TCase *tc = tcase_create("x86");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, shapes_schedules_threads);
    tcase_add_test(tc, inside_callers_parallel_region);
    tcase_add_test(tc, front_and_errors);
    tcase_add_test(tc, stem_run_ends);
    tcase_add_test(tc, isa_gating);
    tcase_add_test(tc, packed_filters);
    tcase_add_test(tc, out_of_cache);
    tcase_add_test(tc, packed_filter_errors);
    suite_add_tcase(s, tc);
    return tt_run_suite(s);
}
