/* One attention case against the reference, for the kernel-level suites
 * (test_attention_x86, test_attention_cuda). Each suite runs the kernel its
 * own way (on host memory, or on device copies it uploads and downloads),
 * so the check is split around that: tt_attention_setup builds the data
 * and the reference's o and lse; the suite runs the kernel into o and lse;
 * then tt_attention_compare asserts, and tt_attention_release frees. */
#ifndef TSR_TEST_ATTENTION_CHECK_H
#define TSR_TEST_ATTENTION_CHECK_H

#include "internal.h"
#include "testutil.h"

typedef struct attn_case {
    int64_t b, hq, hkv, sq, skv, d;
    tsr_causal causal;
    tsr_dtype dt;
    int mask; /* 0 none, 1 per-row f32 with whole rows at -inf, 2 in the dtype, broadcast over heads */
    float amp; /* q and k in [-amp, amp): large values give huge logits */
} attn_case;

/* Host data of one case. p is the problem as the op front hands it to a
 * kernel (scale resolved, BHSD strides), on the host buffers q, k, v, mask
 * and the outputs o, lse, which start as NaN patterns so unwritten rows
 * show. A suite running on a device swaps those pointers for device copies
 * (sizes below). */
typedef struct attn_data {
    tsr_problem p;
    int64_t nq, nk, rows;      /* elements of q and o, of k and v; rows of lse */
    size_t es, mask_bytes;     /* element size of q/k/v/o; bytes of the mask (0: none) */
    void *q, *k, *v, *mask, *o;
    float *lse;
    void *want_o;              /* the reference's o and lse */
    float *want_lse;
} attn_data;

/* The descriptor of case c (no data, dense strides left to the front). */
void tt_attention_desc_of(const attn_case *c, tsr_attention_desc *d);

/* The schedule k's heuristic picks for case c on ctx. */
void tt_attention_default_schedule(const tsr_kernel *k, tsr_context *ctx, const attn_case *c, tsr_schedule *s);

/* Fills t for case c and runs the reference on ref into want_o/want_lse. */
void tt_attention_setup(tsr_context *ref, const attn_case *c, attn_data *t);
/* o's tolerance (absolute and relative) in dtype dt for a kernel that rounds
 * only where the reference does. */
double tt_attention_o_tol(tsr_dtype dt);

/* Asserts that t->o and t->lse (the kernel's, back on the host) match the
 * reference (o within o_atol + o_rtol |o|, lse within 1e-4 + 1e-5 |lse|),
 * naming kernel, case and `knobs` (the schedule as the suite names it). */
void tt_attention_compare(const attn_data *t, const attn_case *c, const char *kernel, const char *knobs,
                          double o_atol, double o_rtol);
void tt_attention_release(attn_data *t);

#endif
