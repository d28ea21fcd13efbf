/* Overflow-safe size arithmetic and aliasing tests for the op fronts. */
#include "internal.h"

bool tsr_mul_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    return !__builtin_mul_overflow(a, b, out);
}

bool tsr_add_i64(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return false;
    return !__builtin_add_overflow(a, b, out);
}

bool tsr_ranges_overlap(const void *a, int64_t a_bytes, const void *b, int64_t b_bytes) {
    if (!a || !b || a_bytes <= 0 || b_bytes <= 0) return false;
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + (uintptr_t)b_bytes && b0 < a0 + (uintptr_t)a_bytes;
}

#include <stdio.h>

#include "validate.h"

bool tsr_matrix_span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                     int64_t *elems) {
    *elems = 0;
    if (rows == 0 || cols == 0 || batch == 0) return true;
    int64_t one, last;
    if (!tsr_mul_i64(rows - 1, ld, &one) || !tsr_add_i64(one, cols, &one)) return false;
    if (!tsr_mul_i64(batch - 1, stride, &last) || !tsr_add_i64(last, one, elems)) return false;
    return true;
}

bool tsr_span_bytes(int64_t elems, tsr_dtype t, int64_t *bytes) {
    return tsr_mul_i64(elems, (int64_t)tsr_dtype_size(t), bytes);
}

tsr_status tsr_check_desc(const tsr_context *ctx, const void *desc, size_t desc_size,
                          size_t needed, const char *who, const char *init_fn) {
    if (!ctx) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", who);
    if (!desc) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "%s: desc is NULL", who);
    if (desc_size < needed)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT,
                        "%s: desc->size (%zu) is smaller than this library's descriptor (%zu); "
                        "call %s first",
                        who, desc_size, needed, init_fn);
    return TSR_OK;
}

tsr_status tsr_report_why(tsr_status st, char *why, size_t why_len) {
    if (why && why_len) snprintf(why, why_len, "%s", st == TSR_OK ? "" : tsr_last_error());
    return st;
}

tsr_status tsr_supported_answer(const tsr_context *ctx, tsr_status st, const tsr_problem *p, char *why,
                                size_t why_len) {
    if (st) return tsr_report_why(st, why, why_len);
    if (!tsr_dispatch_select(ctx, p, why, why_len)) return TSR_ERR_NOT_SUPPORTED;
    return tsr_report_why(TSR_OK, why, why_len);
}
