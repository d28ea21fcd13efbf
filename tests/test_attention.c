/* Attention: the reference against a direct softmax(QK^T)V computed here;
 * contexts vs reference; masked rows; large logits; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct acase {
    int64_t b, hq, hkv, sq, skv, d;
    tsr_causal causal;
    int bshd, mask, lse;
    float scale, amp;
    tsr_dtype dt;
} acase;

/* Direct softmax(scale QK^T + mask) V in double for BHSD/BSHD f32 data. */
static void naive(const acase *a, const float *q, const float *k, const float *v, const float *mask, float *o,
                  float *lse) {
    const int64_t g = a->hq / a->hkv;
    const double scale = a->scale ? a->scale : 1.0 / sqrt((double)a->d);
    double *s = malloc(sizeof(double) * (size_t)(a->skv + 1));
    for (int64_t b = 0; b < a->b; b++)
        for (int64_t h = 0; h < a->hq; h++)
            for (int64_t i = 0; i < a->sq; i++) {
#define IDX(H, S, hh, ii) (a->bshd ? ((b * (S) + (ii)) * (H) + (hh)) * a->d : ((b * (H) + (hh)) * (S) + (ii)) * a->d)
                const float *qi = q + IDX(a->hq, a->sq, h, i);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < a->skv; j++) {
                    bool vis = a->causal == TSR_CAUSAL_NONE ||
                               (a->causal == TSR_CAUSAL_TOP_LEFT ? j <= i : j <= i + a->skv - a->sq);
                    double dot = 0;
                    const float *kj = k + IDX(a->hkv, a->skv, h / g, j);
                    for (int64_t e = 0; e < a->d; e++) dot += (double)qi[e] * kj[e];
                    s[j] = vis ? scale * dot + (mask ? mask[i * a->skv + j] : 0) : -INFINITY;
                    mx = fmax(mx, s[j]);
                }
                float *oi = o + IDX(a->hq, a->sq, h, i);
                for (int64_t e = 0; e < a->d; e++) oi[e] = 0;
                if (mx == -INFINITY) {
                    lse[(b * a->hq + h) * a->sq + i] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < a->skv; j++) sum += exp(s[j] - mx);
                for (int64_t e = 0; e < a->d; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < a->skv; j++)
                        acc += exp(s[j] - mx) * v[IDX(a->hkv, a->skv, h / g, j) + e];
                    oi[e] = (float)(acc / sum);
                }
                lse[(b * a->hq + h) * a->sq + i] = (float)(mx + log(sum));
#undef IDX
            }
    free(s);
}

static tsr_attention_desc adesc(const acase *a) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.batch = a->b, d.heads_q = a->hq, d.heads_kv = a->hkv, d.seq_q = a->sq, d.seq_kv = a->skv, d.head_dim = a->d;
    d.causal = a->causal, d.scale = a->scale, d.dtype = a->dt;
    if (a->bshd) { /* [b][s][h][d] */
        int64_t *st[4] = {d.q_strides, d.k_strides, d.v_strides, d.o_strides};
        for (int t = 0; t < 4; t++) {
            int64_t H = (t == 1 || t == 2) ? a->hkv : a->hq, S = (t == 1 || t == 2) ? a->skv : a->sq;
            st[t][0] = S * H * a->d, st[t][1] = a->d, st[t][2] = H * a->d;
        }
    }
    return d;
}

static void run_ok(tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k, const void *v,
                   void *o) {
    tsr_status st = tsr_attention(ctx, d, q, k, v, o);
    ck_assert_msg(st == TSR_OK, "tsr_attention: %s", tsr_last_error());
}

/* Runs case a on ctx (and on the naive formula when f32) and compares. */
static void check_case(tsr_context *ref, const tt_context *tc, const acase *a) {
    size_t nq = (size_t)(a->b * a->hq * a->sq * a->d), nk = (size_t)(a->b * a->hkv * a->skv * a->d);
    size_t nl = (size_t)(a->b * a->hq * a->sq), es = tsr_dtype_size(a->dt);
    float *q = malloc(nq * 4), *k = malloc(nk * 4 + 4), *v = malloc(nk * 4 + 4), *o_naive = malloc(nq * 4);
    float *mask = malloc(sizeof(float) * (size_t)(a->sq * a->skv + 1)), *lse_naive = malloc(nl * 4);
    tt_fill(q, TSR_F32, (int64_t)nq, 31, -a->amp, a->amp);
    tt_fill(k, TSR_F32, (int64_t)nk, 32, -a->amp, a->amp);
    tt_fill(v, TSR_F32, (int64_t)nk, 33, -1, 1);
    tt_fill(mask, TSR_F32, a->sq * a->skv, 34, -2, 2);
    if (a->mask && a->sq > 1) /* one fully masked row, and a -inf entry */
        for (int64_t j = 0; j < a->skv; j++) mask[1 * a->skv + j] = -INFINITY;
    if (a->mask) mask[0] = -INFINITY;
    /* round inputs to the dtype so that the f64 naive sees the same values */
    void *qt = malloc(nq * es), *kt = malloc(nk * es + 4), *vt = malloc(nk * es + 4);
    float *bufs[3] = {q, k, v};
    void *typed[3] = {qt, kt, vt};
    size_t counts[3] = {nq, nk, nk};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < counts[t]; i++) {
            if (a->dt == TSR_F32) ((float *)typed[t])[i] = bufs[t][i];
            else {
                uint16_t h = a->dt == TSR_F16 ? tsr_f32_to_f16(bufs[t][i]) : tsr_f32_to_bf16(bufs[t][i]);
                ((uint16_t *)typed[t])[i] = h;
                bufs[t][i] = a->dt == TSR_F16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
            }
        }
    naive(a, q, k, v, a->mask ? mask : NULL, o_naive, lse_naive);
    tsr_attention_desc d = adesc(a);
    float *lse_ref = malloc(nl * 4 + 4), *lse_dev = malloc(nl * 4 + 4);
    void *o_ref = malloc(nq * es), *o_dev = malloc(nq * es);
    if (a->mask) d.mask = mask, d.mask_strides[2] = a->skv; /* broadcast over batch and heads */
    if (a->lse) d.lse = lse_ref;
    run_ok(ref, &d, qt, kt, vt, o_ref);
    char what[160];
    snprintf(what, sizeof what, "%s b%lld h%lld/%lld s%lld/%lld d%lld causal%d bshd%d mask%d %s", tc->label,
             (long long)a->b, (long long)a->hq, (long long)a->hkv, (long long)a->sq, (long long)a->skv, (long long)a->d,
             (int)a->causal, a->bshd, a->mask, tsr_dtype_name(a->dt));
    /* the reference vs the naive formula (outputs rounded to dt) */
    float *o_ref32 = malloc(nq * 4);
    for (size_t i = 0; i < nq; i++) o_ref32[i] = (float)tt_get(o_ref, a->dt, (int64_t)i);
    double tol = a->dt == TSR_F32 ? 1e-5 : (a->dt == TSR_F16 ? 2e-3 : 1.6e-2);
    ck_assert_msg(tt_compare(what, o_ref32, o_naive, TSR_F32, (int64_t)nq, tol, tol) == 0, "ref vs naive: %s", what);
    if (a->lse) ck_assert_msg(tt_compare(what, lse_ref, lse_naive, TSR_F32, (int64_t)nl, 1e-5, 1e-5) == 0, "lse %s", what);
    for (size_t i = 0; i < nq; i++) ck_assert_msg(!isnan(o_ref32[i]), "NaN in o: %s", what);
    /* the context vs the reference */
    void *dq = tt_upload(tc->ctx, qt, nq * es), *dk = tt_upload(tc->ctx, kt, nk * es + 4),
         *dv = tt_upload(tc->ctx, vt, nk * es + 4), *dout = tt_upload(tc->ctx, NULL, nq * es);
    void *dlse = a->lse ? tt_upload(tc->ctx, NULL, nl * 4 + 4) : NULL, *dmask = NULL;
    if (a->mask) d.mask = dmask = tt_upload(tc->ctx, mask, sizeof(float) * (size_t)(a->sq * a->skv + 1));
    d.lse = dlse;
    run_ok(tc->ctx, &d, dq, dk, dv, dout);
    tt_download(tc->ctx, o_dev, dout, nq * es);
    ck_assert_msg(tt_compare(what, o_dev, o_ref, a->dt, (int64_t)nq, tol, tol) == 0, "ctx vs ref: %s", what);
    if (a->lse) {
        tt_download(tc->ctx, lse_dev, dlse, nl * 4);
        ck_assert_msg(tt_compare(what, lse_dev, lse_ref, TSR_F32, (int64_t)nl, 1e-4, 1e-5) == 0, "lse: %s", what);
        tt_free(tc->ctx, dlse);
    }
    if (dmask) tt_free(tc->ctx, dmask);
    tt_free(tc->ctx, dq), tt_free(tc->ctx, dk), tt_free(tc->ctx, dv), tt_free(tc->ctx, dout);
    free(q), free(k), free(v), free(o_naive), free(mask), free(lse_naive), free(qt), free(kt), free(vt);
    free(lse_ref), free(lse_dev), free(o_ref), free(o_dev), free(o_ref32);
}

START_TEST(hand_computed) {
    /* q = [1 0], k = [[1 0], [0 1]], v = [[1 2], [3 4]], scale 1: weights e/(e+1), 1/(e+1) */
    tsr_context *ctx = tt_ref_context();
    const float q[2] = {1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
    float o[2], lse;
    acase a = {1, 1, 1, 1, 2, 2, TSR_CAUSAL_NONE, 0, 0, 1, 1.0f, 1, TSR_F32};
    tsr_attention_desc d = adesc(&a);
    d.lse = &lse;
    run_ok(ctx, &d, q, k, v, o);
    double e = exp(1.0), w0 = e / (e + 1), w1 = 1 / (e + 1);
    ck_assert_double_eq_tol(o[0], w0 * 1 + w1 * 3, 1e-6);
    ck_assert_double_eq_tol(o[1], w0 * 2 + w1 * 4, 1e-6);
    ck_assert_double_eq_tol(lse, log(e + 1), 1e-6);
    /* top-left causal with one query sees only key 0 */
    d.causal = TSR_CAUSAL_TOP_LEFT;
    run_ok(ctx, &d, q, k, v, o);
    ck_assert(o[0] == 1 && o[1] == 2);
    /* bottom-right with one query sees both keys */
    d.causal = TSR_CAUSAL_BOTTOM_RIGHT;
    run_ok(ctx, &d, q, k, v, o);
    ck_assert_double_eq_tol(o[0], w0 * 1 + w1 * 3, 1e-6);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(every_context_matches_reference) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("attention", cs, TT_MAX_CONTEXTS);
    tsr_context *ref = tt_ref_context();
    const acase cases[] = {
        {2, 4, 4, 9, 9, 8, TSR_CAUSAL_NONE, 0, 0, 1, 0, 1, TSR_F32},
        {1, 8, 2, 5, 17, 32, TSR_CAUSAL_TOP_LEFT, 1, 0, 1, 0, 1, TSR_F32},       /* GQA 4, BSHD */
        {1, 8, 1, 17, 5, 12, TSR_CAUSAL_BOTTOM_RIGHT, 0, 1, 1, 0, 1, TSR_F32},   /* GQA 8, masked rows */
        {2, 2, 2, 17, 5, 3, TSR_CAUSAL_TOP_LEFT, 1, 1, 1, 0.7f, 1, TSR_F32},
        {1, 2, 1, 1, 300, 64, TSR_CAUSAL_BOTTOM_RIGHT, 0, 0, 1, 0, 1, TSR_F32},  /* decode */
        {1, 1, 1, 6, 6, 80, TSR_CAUSAL_NONE, 0, 0, 1, 100.0f, 30, TSR_F32},     /* huge logits */
        {1, 4, 2, 7, 7, 128, TSR_CAUSAL_BOTTOM_RIGHT, 1, 0, 1, 0, 1, TSR_F16},
        {1, 2, 2, 7, 11, 64, TSR_CAUSAL_TOP_LEFT, 0, 1, 1, 0, 1, TSR_BF16},
        {1, 2, 1, 3, 0, 8, TSR_CAUSAL_NONE, 0, 0, 1, 0, 1, TSR_F32},             /* no keys */
    };
    for (int c = 0; c < nc; c++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ref, &cs[c], &cases[i]);
    tsr_context_destroy(ref);
    tt_contexts_close(cs, nc);
}
END_TEST

static void expect_bad(tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k, const void *v,
                       void *o, tsr_status want, const char *needle) {
    tt_fill_sentinel(o, 256);
    tsr_status st = tsr_attention(ctx, d, q, k, v, o);
    ck_assert_msg(st == want, "want %s got %s (%s)", tsr_status_string(want), tsr_status_string(st), tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    ck_assert_msg(tt_unchanged(o, 256), "o written on bad input (%s)", needle);
    if (!strstr(needle, "NULL") && !strstr(needle, "overlaps")) {
        char why[256];
        ck_assert_int_eq(tsr_attention_supported(ctx, d, why, sizeof why), want);
        ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
    }
}

START_TEST(bad_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float q[64] = {0}, k[64] = {0}, v[64] = {0}, o[64];
    acase a = {1, 2, 2, 2, 2, 4, TSR_CAUSAL_NONE, 0, 0, 0, 0, 1, TSR_F32};
    tsr_attention_desc d = adesc(&a), e;
    expect_bad(ctx, &d, NULL, k, v, o, TSR_ERR_INVALID_ARGUMENT, "q is NULL");
    expect_bad(ctx, &d, q, k, NULL, o, TSR_ERR_INVALID_ARGUMENT, "v is NULL");
    e = d, e.size = 1;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "desc->size");
    e = d, e.head_dim = 0;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "head_dim (0)");
    e = d, e.heads_kv = 3, e.heads_q = 4;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "heads_q (4) is not a multiple of heads_kv (3)");
    e = d, e.q_strides[1] = -4;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "q_strides");
    e = d, e.o_strides[0] = 8, e.o_strides[1] = 2, e.o_strides[2] = 4;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "output rows overlap");
    expect_bad(ctx, &d, o, k, v, o, TSR_ERR_INVALID_ARGUMENT, "o overlaps q");
    e = d, e.dtype = TSR_I8;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_NOT_SUPPORTED, "dtype i8");
    e = d, e.causal = (tsr_causal)5;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "causal (5)");
    e = d, e.scale = -1;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "scale (-1)");
    e = d, e.scale = NAN;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "scale (nan)");
    e = d, e.seq_q = e.seq_kv = e.head_dim = (int64_t)1 << 31;
    expect_bad(ctx, &e, q, k, v, o, TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    char why[64];
    ck_assert_int_eq(tsr_attention_supported(ctx, &d, why, sizeof why), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, hand_computed);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, every_context_matches_reference);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_input);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
