/* oneDNN's primitives for the row ops of tessera-bench --op rowwise
 * (row_onednn.c): softmax, layer normalization, swish then binary mul
 * for the SwiGLU chain, and the erf GELU. */
#ifndef TSR_BENCH_ROW_ONEDNN_H
#define TSR_BENCH_ROW_ONEDNN_H

#include <stdint.h>

#include "tessera.h"

enum { ROW_ONEDNN_SOFTMAX, ROW_ONEDNN_LAYERNORM, ROW_ONEDNN_RMSNORM, ROW_ONEDNN_SWIGLU, ROW_ONEDNN_GELU_ERF };

typedef struct row_prim row_prim;

/* The primitive for op on a rows x cols row-major tensor of dtype t (in and
 * out), created outside the timed calls; NULL with *why when oneDNN has none
 * (or was not found when tessera-bench was configured). */
row_prim *row_onednn_create(int op, tsr_dtype t, int64_t rows, int64_t cols, float epsilon, const char **why);
/* y = op(x) (g: SwiGLU's gate; gamma/beta: layer norm's f32 scale and
 * shift); 0 on success. */
int row_onednn_run(row_prim *p, const void *x, const void *g, const float *gamma, const float *beta, void *y);
void row_onednn_destroy(row_prim *p);

#endif
