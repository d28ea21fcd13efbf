/* Reference attention: per query row, logits in double, max-subtracted
 * softmax, weighted sum of V. A row that sees no key gives 0 and lse -inf. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

/* Last key index query i may see (exclusive bound), per causal mode. */
static int64_t visible_end(const tsr_attention_desc *d, int64_t i) {
    int64_t end = d->seq_kv;
    if (d->causal == TSR_CAUSAL_TOP_LEFT) end = i + 1;
    else if (d->causal == TSR_CAUSAL_BOTTOM_RIGHT) end = i + 1 + d->seq_kv - d->seq_q;
    return end < 0 ? 0 : (end > d->seq_kv ? d->seq_kv : end);
}

static tsr_status ref_run(tsr_context *ctx, const tsr_problem *prob, const tsr_schedule *sch) {
    (void)sch;
    const tsr_attention_problem *a = &prob->u.attention;
    const tsr_attention_desc *d = &a->d;
    const int64_t group = d->heads_q / d->heads_kv, D = d->head_dim;
    tsr_status status = TSR_OK;
#pragma omp parallel num_threads(ctx->num_threads)
    {
        double *w = malloc(sizeof(double) * (size_t)(d->seq_kv + 1));
        double *acc = malloc(sizeof(double) * (size_t)D);
        if (!w || !acc) {
#pragma omp atomic write
            status = TSR_ERR_OUT_OF_MEMORY;
        } else {
#pragma omp for collapse(3) schedule(static)
            for (int64_t b = 0; b < d->batch; b++)
                for (int64_t h = 0; h < d->heads_q; h++)
                    for (int64_t i = 0; i < d->seq_q; i++) {
                        int64_t hk = h / group;
                        int64_t qo = b * d->q_strides[0] + h * d->q_strides[1] + i * d->q_strides[2];
                        int64_t end = visible_end(d, i);
                        double mx = -INFINITY;
                        for (int64_t j = 0; j < d->seq_kv; j++) {
                            w[j] = -INFINITY;
                            if (j >= end) continue;
                            int64_t ko = b * d->k_strides[0] + hk * d->k_strides[1] + j * d->k_strides[2];
                            double dot = 0.0;
                            for (int64_t e = 0; e < D; e++)
                                dot += (double)tsr_load_f(a->q, d->dtype, qo + e) * tsr_load_f(a->k, d->dtype, ko + e);
                            double l = d->scale * dot;
                            if (d->mask)
                                l += tsr_load_f(d->mask, d->mask_dtype,
                                                b * d->mask_strides[0] + h * d->mask_strides[1] +
                                                    i * d->mask_strides[2] + j);
                            w[j] = l;
                            if (l > mx) mx = l;
                        }
                        for (int64_t e = 0; e < D; e++) acc[e] = 0.0;
                        double sum = 0.0;
                        if (mx > -INFINITY) {
                            for (int64_t j = 0; j < d->seq_kv; j++) {
                                if (w[j] == -INFINITY) continue;
                                double pj = exp(w[j] - mx);
                                sum += pj;
                                int64_t vo = b * d->v_strides[0] + hk * d->v_strides[1] + j * d->v_strides[2];
                                for (int64_t e = 0; e < D; e++) acc[e] += pj * tsr_load_f(a->v, d->dtype, vo + e);
                            }
                        }
                        int64_t oo = b * d->o_strides[0] + h * d->o_strides[1] + i * d->o_strides[2];
                        for (int64_t e = 0; e < D; e++)
                            tsr_store_f(a->o, d->dtype, oo + e, sum > 0 ? (float)(acc[e] / sum) : 0.0f);
                        if (d->lse)
                            ((float *)d->lse)[(b * d->heads_q + h) * d->seq_q + i] =
                                sum > 0 ? (float)(mx + log(sum)) : -INFINITY;
                    }
        }
        free(w);
        free(acc);
    }
    if (status) return tsr_fail(status, "attention.ref: out of host memory for a row of %lld logits", (long long)d->seq_kv);
    return TSR_OK;
}

const tsr_kernel tsr_attention_ref = {
    .name = "attention.ref",
    .op = TSR_OP_ATTENTION,
    .backend = TSR_BACKEND_CPU,
    .arch = "ref",
    .supports = tsr_supports_any_cpu,
    .run = ref_run,
};
