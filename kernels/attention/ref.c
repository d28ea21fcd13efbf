/* Reference attention, the oracle of every attention kernel: one query row
 * at a time, logits in double, max-subtracted softmax, weighted sum of V.
 * A row that sees no key (causal, -inf mask, seq_kv == 0) gives o = 0 and
 * lse = -inf rather than 0/0. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/* Output row r = (b * heads_q + h) * seq_q + i, which is also its lse index.
 * scratch holds seq_kv logits, then q's row and the accumulator (head_dim each). */
static void attend_row(const tsr_attention_problem *a, int64_t r, double *scratch) {
    const tsr_attention_desc *d = &a->d;
    const int64_t D = d->head_dim, i = r % d->seq_q, h = (r / d->seq_q) % d->heads_q,
                  b = r / d->seq_q / d->heads_q, hk = h / (d->heads_q / d->heads_kv);
    double *logit = scratch, *qrow = scratch + d->seq_kv, *acc = qrow + D;
    const int64_t qo = b * d->q_strides[0] + h * d->q_strides[1] + i * d->q_strides[2];
    const int64_t oo = b * d->o_strides[0] + h * d->o_strides[1] + i * d->o_strides[2];
    const int64_t ko = b * d->k_strides[0] + hk * d->k_strides[1];
    const int64_t vo = b * d->v_strides[0] + hk * d->v_strides[1];
    const int64_t mo = b * d->mask_strides[0] + h * d->mask_strides[1] + i * d->mask_strides[2];
    const int64_t end = tsr_attention_visible_end(d, i);

    for (int64_t e = 0; e < D; e++) qrow[e] = tsr_load_f(a->q, d->dtype, qo + e);
    double mx = -INFINITY;
    for (int64_t j = 0; j < end; j++) {
        double dot = 0.0;
        for (int64_t e = 0; e < D; e++) dot += qrow[e] * tsr_load_f(a->k, d->dtype, ko + j * d->k_strides[2] + e);
        double l = (double)d->scale * dot;
        if (d->mask) l += tsr_load_f(d->mask, d->mask_dtype, mo + j);
        logit[j] = l;
        if (!(l <= mx)) mx = l; /* a NaN logit becomes the max, so NaN propagates */
    }
    double sum = 0.0;
    for (int64_t e = 0; e < D; e++) acc[e] = 0.0;
    if (mx != -INFINITY) {
        for (int64_t j = 0; j < end; j++) {
            if (logit[j] == -INFINITY) continue;
            double w = exp(logit[j] - mx);
            sum += w;
            for (int64_t e = 0; e < D; e++) acc[e] += w * tsr_load_f(a->v, d->dtype, vo + j * d->v_strides[2] + e);
        }
    }
    const bool empty = mx == -INFINITY; /* every key hidden: 0 and -inf, never 0/0 */
    for (int64_t e = 0; e < D; e++) tsr_store_f(a->o, d->dtype, oo + e, empty ? 0.0f : (float)(acc[e] / sum));
    if (d->lse) ((float *)d->lse)[r] = empty ? -INFINITY : (float)(mx + log(sum));
}

static tsr_status ref_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_attention_problem *a = &prob->u.attention;
    const tsr_attention_desc *d = &a->d;
    /* Fits: o holds this many disjoint rows, and the op front checked o's size. */
    const int64_t rows = d->batch * d->heads_q * d->seq_q;
    if (rows == 0) return TSR_OK;
    /* seq_kv is bounded only by k's extent, which a 0 seq stride keeps small. */
    const uint64_t cap = SIZE_MAX / sizeof(double);
    if ((uint64_t)d->head_dim > cap / 4 || (uint64_t)d->seq_kv > cap - 2 * (uint64_t)d->head_dim)
        return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "attention.ref: a row of %lld logits does not fit in memory",
                        (long long)d->seq_kv);
    const size_t scratch_bytes = sizeof(double) * ((size_t)d->seq_kv + 2 * (size_t)d->head_dim);
    int threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
    if (rows < threads) threads = (int)rows;
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        double *scratch = malloc(scratch_bytes);
        if (!scratch) {
#pragma omp atomic write
            failed = 1;
        }
        /* Every thread must take the same branch around the worksharing loop. */
#pragma omp barrier
        int any_failed;
#pragma omp atomic read
        any_failed = failed;
        if (!any_failed) {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; r++) attend_row(a, r, scratch);
        }
        free(scratch);
    }
    if (failed)
        return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "attention.ref: out of host memory for a scratch row of %zu bytes",
                        scratch_bytes);
    return TSR_OK;
}

const tsr_kernel tsr_attention_ref = {
    .name = "attention.ref",
    .op = TSR_OP_ATTENTION,
    .backend = TSR_BACKEND_CPU,
    .arch = "ref",
    .supports = tsr_supports_any_cpu,
    .num_knobs = 0,
    .knobs = NULL,
    .default_schedule = NULL,
    .schedule_valid = NULL,
    .run = ref_run,
};
