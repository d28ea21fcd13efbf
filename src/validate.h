/* Shared argument checks for the op fronts. */
#ifndef TSR_VALIDATE_H
#define TSR_VALIDATE_H

#include "internal.h"

/* Elements spanned by `batch` row-major matrices of rows x cols with leading
 * dimension ld, `stride` apart; false on int64 overflow. */
bool tsr_matrix_span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                     int64_t *elems);
/* Bytes of `elems` elements of dtype; false on overflow. */
bool tsr_span_bytes(int64_t elems, tsr_dtype t, int64_t *bytes);

/* The shared preamble of every op: ctx and desc present, desc->size big enough. */
tsr_status tsr_check_desc(const tsr_context *ctx, const void *desc, size_t desc_size,
                          size_t needed, const char *who, const char *init_fn);

/* For the tsr_*_supported queries: copy the last error into why, return st. */
tsr_status tsr_report_why(tsr_status st, char *why, size_t why_len);

/* The tail of every tsr_*_supported query: the validation status st of p,
 * then whether a kernel takes it; why gets the reason. */
tsr_status tsr_supported_answer(const tsr_context *ctx, tsr_status st, const tsr_problem *p, char *why,
                                size_t why_len);

#endif
