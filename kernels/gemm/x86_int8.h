/* What the x86 int8 GEMM kernels (x86_avx512_vnni.c, x86_avx2_s8.c) share:
 * the reference's int32 semantics for C, the dtype check and the schedule
 * space (Goto blocks and the path). Plain C, so either file's ISA flags
 * serve. */
#ifndef TSR_GEMM_X86_INT8_H
#define TSR_GEMM_X86_INT8_H

#include <math.h>

#include "internal.h"

/* The schedule knobs: mc, kc, nc blocks of the packed path, and the path:
 * packed Goto loops, dot products for B stored n x k with few rows, or B
 * streamed once for few rows against row-major B. */
enum { KNOB_MC, KNOB_KC, KNOB_NC, KNOB_PATH, KNOB_PACK_A /* VNNI only */ };
enum { PATH_PACKED, PATH_DOT, PATH_STREAM };

static const int tsr_i8_mc_values[] = {48, 96, 192, 384};
static const int tsr_i8_kc_values[] = {256, 512, 1024, 2048};
static const int tsr_i8_path_values[] = {PATH_PACKED, PATH_DOT, PATH_STREAM};

/* The knob table's entries, with nc_values three multiples of the kernel's NR. */
#define TSR_I8_KNOB_ENTRIES(nc_values)                                                                               \
    {"mc", 4, tsr_i8_mc_values}, {"kc", 4, tsr_i8_kc_values}, {"nc", 3, nc_values}, {"path", 3, tsr_i8_path_values}
#define TSR_I8_KNOBS(nc_values) {TSR_I8_KNOB_ENTRIES(nc_values)}

/* The path a run takes: the schedule's where it serves (the packed path
 * any shape, the others where dot_ok / stream_ok say), else packed. */
static inline int tsr_i8_path_of(int path, bool dot_ok, bool stream_ok) {
    return path == PATH_DOT && dot_ok ? PATH_DOT : path == PATH_STREAM && stream_ok ? PATH_STREAM : PATH_PACKED;
}

/* Whether a schedule's path serves as it is (the tuner skips the others). */
static inline bool tsr_i8_path_valid(int path, bool dot_ok, bool stream_ok) {
    return tsr_i8_path_of(path, dot_ok, stream_ok) == path;
}

/* i8 x i8 -> i32 only; the core checked the backend and the ISA. */
static inline bool tsr_i8_supports(const tsr_problem *p, const char *name, char *why, size_t n) {
    const tsr_gemm_desc *d = &p->u.gemm.d;
    if (d->a_dtype != TSR_I8 || d->b_dtype != TSR_I8 || d->c_dtype != TSR_I32)
        return tsr_why(why, n, TSR_ERR_NOT_SUPPORTED, "%s: i8 x i8 -> i32 only", name), false;
    return true;
}

/* alpha 1, beta 0 or 1: partial sums can be added in int32 as they come. */
static inline bool tsr_i8_wrapping_sum(const tsr_gemm_desc *d) {
    return d->alpha == 1.0f && (d->beta == 0.0f || d->beta == 1.0f);
}

/* alpha sum + beta c rounded to nearest and saturated, as the reference. */
static inline int32_t tsr_i8_scaled(const tsr_gemm_desc *d, int32_t sum, int32_t c) {
    double v = nearbyint((double)d->alpha * sum + (d->beta != 0.0f ? (double)d->beta * c : 0.0));
    return v > 2147483647.0 ? INT32_MAX : v < -2147483648.0 ? INT32_MIN : (int32_t)v;
}

/* One output of C from a K block's sum: the first block sets it (adding
 * C when beta is 1), later blocks add, wrapping; alpha/beta other than 1
 * and 0/1 (then one K block) round once. */
static inline int32_t tsr_i8_combine(const tsr_gemm_desc *d, int32_t sum, int32_t c, bool first) {
    if (!tsr_i8_wrapping_sum(d)) return tsr_i8_scaled(d, sum, c);
    return !first || d->beta == 1.0f ? (int32_t)((uint32_t)sum + (uint32_t)c) : sum;
}

/* beta * C (rounded as the reference) when there is no product (k == 0). */
static inline void tsr_i8_scale_only(const tsr_gemm_desc *d, int32_t *c) {
    for (int64_t i = 0; i < d->m; i++)
        for (int64_t n = 0; n < d->n; n++) {
            int32_t *cp = c + i * d->ldc + n;
            *cp = tsr_i8_wrapping_sum(d) ? (d->beta == 1.0f ? *cp : 0) : tsr_i8_scaled(d, 0, *cp);
        }
}

#endif
