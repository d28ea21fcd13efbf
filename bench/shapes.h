/* Shape sets: text files, one shape a line, '#' comments. GEMM lines are
 * `m n k [NN|NT|TN|TT]` (row-major, C = op(A) op(B)). Shared with the tuner. */
#ifndef TSR_BENCH_SHAPES_H
#define TSR_BENCH_SHAPES_H

#include <stdint.h>

typedef struct gemm_shape {
    int64_t m, n, k;
    int trans_a, trans_b;
} gemm_shape;

/* Reads `name` (a path, or a set name looked up as <dir>/gemm_<name>.txt).
 * Returns the count (>= 0) into a malloc'd *out, or -1 with a message on stderr. */
int shapes_read_gemm(const char *name, const char *dir, gemm_shape **out);

/* Attention lines: `batch heads_q heads_kv seq_q seq_kv head_dim
 * [none|top_left|bottom_right]`, causal as tsr_causal (0, 1, 2). */
typedef struct attn_shape {
    int64_t b, hq, hkv, sq, skv, d;
    int causal;
} attn_shape;

/* Reads the attention shape file at path. Returns the count (>= 0) into a
 * malloc'd *out, or -1 with a message on stderr. */
int shapes_read_attention(const char *path, attn_shape **out);

/* Conv lines: `name c h w k r s stride pad groups [res]` (square filters,
 * equal pads, NHWC; `res` adds a residual to the fused epilogue; the batch
 * sizes come from the command line). */
typedef struct conv_shape {
    char name[32];
    int64_t c, h, w, k, r, s, stride, pad, groups;
    int residual;
} conv_shape;

/* Reads `name` (a path, or <dir>/conv_<name>.txt). Returns the count (>= 0)
 * into a malloc'd *out, or -1 with a message on stderr. */
int shapes_read_conv(const char *name, const char *dir, conv_shape **out);

#endif
