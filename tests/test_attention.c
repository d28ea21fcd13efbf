/* Attention (SDPA forward): the reference against a direct
 * softmax(scale QK^T + mask) V written here in f64 and against
 * hand-computed cases; every context against the reference-only oracle
 * over dtypes, layouts, GQA, causal alignments, masks, lse, fully masked
 * rows, huge logits and decode shapes; empty shapes; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ------------------------------------------------------------ test cases */

enum layout { BHSD, BSHD, PADDED, READ_BCAST };
enum mask_mode { MASK_NONE, MASK_FULL, MASK_BCAST, MASK_HEAD, MASK_ROW, MASK_MODES };
static const char *const layout_name[] = {"BHSD", "BSHD", "padded", "read-bcast"};
static const char *const mask_name[] = {"none", "full", "bcast", "per-head", "one-row"};

typedef struct acase {
    int64_t b, hq, hkv, sq, skv, d;
    tsr_causal causal;
    tsr_dtype dt;
    enum layout layout;
    enum mask_mode mask;
    bool mask_in_dt; /* mask in the tensors' dtype instead of f32 */
    bool lse;
    float scale;     /* 0 = the default 1/sqrt(d) */
    float amp;       /* q and k uniform in [-amp, amp) */
} acase;

/* Tensor t (0 q, 1 k, 2 v, 3 o) of case a: strides for its layout and the
 * elements its [b][h][s][d] view spans. */
typedef struct tview {
    int64_t st[3], h, s, elems;
} tview;

static tview view_of(const acase *a, int t) {
    tview v;
    v.h = (t == 1 || t == 2) ? a->hkv : a->hq;
    v.s = (t == 1 || t == 2) ? a->skv : a->sq;
    const int64_t H = v.h, S = v.s, D = a->d, pad = 3 + t;
    enum layout l = a->layout;
    if (l == READ_BCAST && t == 3) l = BSHD; /* an output must not broadcast */
    switch (l) {
    case BHSD: v.st[0] = H * S * D, v.st[1] = S * D, v.st[2] = D; break;
    case BSHD: v.st[0] = S * H * D, v.st[1] = D, v.st[2] = H * D; break;
    case PADDED: v.st[2] = D + pad, v.st[1] = S * (D + pad) + pad, v.st[0] = H * v.st[1] + pad; break;
    case READ_BCAST: /* q shared across the batch, k and v across batch and heads */
        v.st[0] = 0, v.st[1] = t == 0 ? S * D : 0, v.st[2] = D;
        break;
    }
    v.elems = S == 0 ? 0 : (a->b - 1) * v.st[0] + (H - 1) * v.st[1] + (S - 1) * v.st[2] + D;
    return v;
}

static int64_t vidx(const tview *v, int64_t b, int64_t h, int64_t s) {
    return b * v->st[0] + h * v->st[1] + s * v->st[2];
}

/* Mask strides and stored elements for a mode; 0 strides broadcast. */
static int64_t mask_layout(const acase *a, int64_t ms[3]) {
    const int64_t ij = a->sq * a->skv;
    ms[0] = ms[1] = 0, ms[2] = a->skv;
    switch (a->mask) {
    case MASK_FULL: ms[0] = a->hq * ij, ms[1] = ij; return a->b * a->hq * ij;
    case MASK_BCAST: return ij;
    case MASK_HEAD: ms[1] = ij; return a->hq * ij;
    case MASK_ROW: ms[2] = 0; return a->skv;
    default: return 0;
    }
}

/* --------------------------------------------------- the direct formula */

/* softmax(scale q k^T + mask) v in f64 on dense [b][h][s][d] data; the kv
 * head of query head h is floor(h * hkv / hq). M is dense [b][hq][sq][skv]
 * or NULL. A row with no visible key gets O = 0 and L = -inf. */
static void naive(const acase *a, const double *Q, const double *K, const double *V, const double *M, double *O,
                  double *L) {
    const double scale = a->scale != 0 ? a->scale : (double)(float)(1.0 / sqrt((double)a->d));
    double *s = malloc(sizeof(double) * (size_t)(a->skv + 1));
    for (int64_t b = 0; b < a->b; b++)
        for (int64_t h = 0; h < a->hq; h++) {
            const int64_t kh = h * a->hkv / a->hq;
            const double *Kh = K + (b * a->hkv + kh) * a->skv * a->d, *Vh = V + (b * a->hkv + kh) * a->skv * a->d;
            for (int64_t i = 0; i < a->sq; i++) {
                const int64_t row = (b * a->hq + h) * a->sq + i;
                const double *q = Q + row * a->d;
                double *o = O + row * a->d, mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < a->skv; j++) {
                    bool visible = a->causal == TSR_CAUSAL_NONE ||
                                   (a->causal == TSR_CAUSAL_TOP_LEFT && j <= i) ||
                                   (a->causal == TSR_CAUSAL_BOTTOM_RIGHT && j - (a->skv - a->sq) <= i);
                    double dot = 0;
                    for (int64_t e = 0; e < a->d; e++) dot += q[e] * Kh[j * a->d + e];
                    s[j] = visible ? scale * dot + (M ? M[row * a->skv + j] : 0.0) : -INFINITY;
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t e = 0; e < a->d; e++) o[e] = 0;
                if (mx == -INFINITY) {
                    L[row] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < a->skv; j++) {
                    double p = exp(s[j] - mx);
                    sum += p;
                    for (int64_t e = 0; e < a->d; e++) o[e] += p * Vh[j * a->d + e];
                }
                for (int64_t e = 0; e < a->d; e++) o[e] /= sum;
                L[row] = mx + log(sum);
            }
        }
    free(s);
}

/* ----------------------------------------------------- running one case */

/* Tolerances of a kernel against the oracle: f32 accumulation, and for
 * f16/bf16 the probabilities may be rounded to the dtype before P V. */
static double ctx_tol(tsr_dtype t) { return t == TSR_F32 ? 2e-5 : t == TSR_F16 ? 3e-3 : 2e-2; }
/* The oracle against the f64 formula: only the output's rounding. */
static double naive_tol(tsr_dtype t) { return t == TSR_F32 ? 1e-5 : t == TSR_F16 ? 1e-3 : 8e-3; }

typedef struct hostcase {
    tview v[4];
    size_t es;
    void *buf[3];           /* q, k, v as stored (typed, strided) */
    void *mask;             /* stored mask or NULL */
    int64_t mask_elems, ms[3];
    double *Q, *K, *V, *M;  /* dense f64 copies for the formula */
    double *O, *L;          /* the formula's answer */
    int64_t rows;
} hostcase;

static double *densify(const acase *a, const tview *v, const void *buf) {
    double *x = malloc(sizeof(double) * (size_t)(a->b * v->h * v->s * a->d + 1));
    for (int64_t b = 0; b < a->b; b++)
        for (int64_t h = 0; h < v->h; h++)
            for (int64_t s = 0; s < v->s; s++)
                for (int64_t e = 0; e < a->d; e++)
                    x[((b * v->h + h) * v->s + s) * a->d + e] = tt_get(buf, a->dt, vidx(v, b, h, s) + e);
    return x;
}

static void hostcase_make(const acase *a, uint64_t seed, hostcase *hc) {
    memset(hc, 0, sizeof *hc);
    hc->es = tsr_dtype_size(a->dt);
    for (int t = 0; t < 4; t++) hc->v[t] = view_of(a, t);
    for (int t = 0; t < 3; t++) {
        hc->buf[t] = malloc((size_t)(hc->v[t].elems + 1) * hc->es);
        float amp = t == 2 ? 1.0f : a->amp;
        tt_fill(hc->buf[t], a->dt, hc->v[t].elems, seed * 8 + (uint64_t)t, -amp, amp);
    }
    hc->Q = densify(a, &hc->v[0], hc->buf[0]);
    hc->K = densify(a, &hc->v[1], hc->buf[1]);
    hc->V = densify(a, &hc->v[2], hc->buf[2]);
    hc->rows = a->b * a->hq * a->sq;
    if (a->mask != MASK_NONE) {
        tsr_dtype mt = a->mask_in_dt ? a->dt : TSR_F32;
        hc->mask_elems = mask_layout(a, hc->ms);
        float *m = malloc(sizeof(float) * (size_t)(hc->mask_elems + 1));
        tt_fill(m, TSR_F32, hc->mask_elems, seed * 8 + 5, -2, 2);
        for (int64_t i = 3; i < hc->mask_elems; i += 5) m[i] = -INFINITY;
        if (a->mask != MASK_ROW && a->sq > 1) /* stored row 1: every key hidden */
            for (int64_t j = 0; j < a->skv; j++) m[a->skv + j] = -INFINITY;
        hc->mask = malloc((size_t)(hc->mask_elems + 1) * tsr_dtype_size(mt));
        for (int64_t i = 0; i < hc->mask_elems; i++) {
            if (mt == TSR_F32) ((float *)hc->mask)[i] = m[i];
            else if (mt == TSR_F16) ((uint16_t *)hc->mask)[i] = tsr_f32_to_f16(m[i]);
            else ((uint16_t *)hc->mask)[i] = tsr_f32_to_bf16(m[i]);
        }
        free(m);
        hc->M = malloc(sizeof(double) * (size_t)(hc->rows * a->skv + 1));
        for (int64_t b = 0; b < a->b; b++)
            for (int64_t h = 0; h < a->hq; h++)
                for (int64_t i = 0; i < a->sq; i++)
                    for (int64_t j = 0; j < a->skv; j++)
                        hc->M[((b * a->hq + h) * a->sq + i) * a->skv + j] =
                            tt_get(hc->mask, mt, b * hc->ms[0] + h * hc->ms[1] + i * hc->ms[2] + j);
    }
    hc->O = malloc(sizeof(double) * (size_t)(hc->rows * a->d + 1));
    hc->L = malloc(sizeof(double) * (size_t)(hc->rows + 1));
    naive(a, hc->Q, hc->K, hc->V, hc->M, hc->O, hc->L);
}

static void hostcase_free(hostcase *hc) {
    for (int t = 0; t < 3; t++) free(hc->buf[t]);
    free(hc->mask), free(hc->Q), free(hc->K), free(hc->V), free(hc->M), free(hc->O), free(hc->L);
}

static tsr_attention_desc desc_of(const acase *a, const hostcase *hc) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.batch = a->b, d.heads_q = a->hq, d.heads_kv = a->hkv, d.seq_q = a->sq, d.seq_kv = a->skv, d.head_dim = a->d;
    d.dtype = a->dt, d.causal = a->causal, d.scale = a->scale;
    if (a->layout != BHSD) { /* BHSD goes through the all-zero default */
        int64_t *st[4] = {d.q_strides, d.k_strides, d.v_strides, d.o_strides};
        for (int t = 0; t < 4; t++) memcpy(st[t], hc->v[t].st, sizeof hc->v[t].st);
    }
    if (hc->mask) {
        d.mask_dtype = a->mask_in_dt ? a->dt : TSR_F32;
        memcpy(d.mask_strides, hc->ms, sizeof hc->ms);
    }
    return d;
}

static void describe(char *what, size_t n, const char *label, const acase *a) {
    snprintf(what, n, "%s %s b%lld hq%lld hkv%lld sq%lld skv%lld d%lld causal%d %s mask=%s%s%s scale%g amp%g",
             label, tsr_dtype_name(a->dt), (long long)a->b, (long long)a->hq, (long long)a->hkv, (long long)a->sq,
             (long long)a->skv, (long long)a->d, (int)a->causal, layout_name[a->layout], mask_name[a->mask],
             a->mask_in_dt ? "(dt)" : "", a->lse ? " lse" : "", (double)a->scale, (double)a->amp);
}

/* Checks an output o (stored, o's view) and lse against the formula's
 * masked rows: those are exactly 0 and -inf; every other value is finite. */
static void check_rows(const char *what, const acase *a, const hostcase *hc, const void *o, const float *lse) {
    const tview *v = &hc->v[3];
    for (int64_t r = 0; r < hc->rows; r++) {
        int64_t i = r % a->sq, h = (r / a->sq) % a->hq, b = r / a->sq / a->hq;
        bool empty = hc->L[r] == -INFINITY;
        for (int64_t e = 0; e < a->d; e++) {
            double x = tt_get(o, a->dt, vidx(v, b, h, i) + e);
            if (empty) ck_assert_msg(x == 0.0, "%s: fully masked row %lld gives o[%lld] = %g, not 0", what,
                                     (long long)r, (long long)e, x);
            else ck_assert_msg(isfinite(x), "%s: o row %lld [%lld] = %g is not finite", what, (long long)r,
                               (long long)e, x);
        }
        if (lse && empty)
            ck_assert_msg(lse[r] == -INFINITY, "%s: fully masked row %lld gives lse %g, not -inf", what,
                          (long long)r, (double)lse[r]);
        else if (lse)
            ck_assert_msg(isfinite(lse[r]), "%s: lse[%lld] = %g is not finite", what, (long long)r, (double)lse[r]);
    }
}

/* The oracle's output against the formula, and o's gaps left alone. */
static void check_oracle(const char *what, const acase *a, const hostcase *hc, const void *o, const void *o_before,
                         const float *lse) {
    const tview *v = &hc->v[3];
    const double tol = naive_tol(a->dt);
    int64_t bad = 0;
    char *is_row = calloc((size_t)v->elems + 1, 1);
    for (int64_t r = 0; r < hc->rows; r++) {
        int64_t i = r % a->sq, h = (r / a->sq) % a->hq, b = r / a->sq / a->hq;
        for (int64_t e = 0; e < a->d; e++) {
            int64_t at = vidx(v, b, h, i) + e;
            is_row[at] = 1;
            double got = tt_get(o, a->dt, at), want = hc->O[r * a->d + e];
            if (!(fabs(got - want) <= tol + tol * fabs(want))) {
                if (bad++ < 5)
                    printf("  %s: row %lld [%lld] got %.9g want %.9g\n", what, (long long)r, (long long)e, got, want);
            }
        }
        if (lse) {
            double want = hc->L[r];
            bool ok = isinf(want) ? lse[r] == want : fabs(lse[r] - want) <= 1e-6 + 1e-6 * fabs(want);
            if (!ok && bad++ < 5)
                printf("  %s: lse[%lld] got %.9g want %.9g\n", what, (long long)r, (double)lse[r], want);
        }
    }
    ck_assert_msg(bad == 0, "reference vs the direct formula: %lld values differ: %s", (long long)bad, what);
    for (int64_t x = 0; x < v->elems; x++)
        if (!is_row[x])
            ck_assert_msg(memcmp((const char *)o + x * (int64_t)hc->es, (const char *)o_before + x * (int64_t)hc->es,
                                 hc->es) == 0,
                          "%s: the gap element %lld of o was written", what, (long long)x);
    free(is_row);
    check_rows(what, a, hc, o, lse);
}

static tsr_context *g_ref; /* the oracle, shared by the cases of one test */

/* Runs case a on the oracle (checked against the formula), then on every
 * context (checked against the oracle). */
static void run_case(const tt_context *cs, int nc, const acase *a, uint64_t seed) {
    hostcase hc;
    hostcase_make(a, seed, &hc);
    tsr_attention_desc d = desc_of(a, &hc);
    const tview *ov = &hc.v[3];
    const size_t ob = (size_t)(ov->elems + 1) * hc.es, lb = sizeof(float) * (size_t)(hc.rows + 1);
    const size_t mb = (size_t)(hc.mask_elems + 1) * tsr_dtype_size(d.mask_dtype);
    /* unaligned tensors: the padded layout starts one element into its buffers */
    const int64_t off = a->layout == PADDED ? 1 : 0;
    char what[256];
    describe(what, sizeof what, "oracle", a);

    void *in[3];
    for (int t = 0; t < 3; t++) {
        in[t] = malloc((size_t)(hc.v[t].elems + off + 1) * hc.es);
        memcpy((char *)in[t] + off * (int64_t)hc.es, hc.buf[t], (size_t)hc.v[t].elems * hc.es);
    }
    /* o starts as a sentinel everywhere, so that writes outside its rows show */
    const size_t ob_off = ob + (size_t)off * hc.es;
    void *o_init = malloc(ob_off), *o_ref = malloc(ob_off);
    tt_fill_sentinel(o_init, ob_off);
    memcpy(o_ref, o_init, ob_off);
    const void *o_before = (char *)o_init + off * (int64_t)hc.es;
    float *lse_ref = malloc(lb);
    tt_fill_sentinel(lse_ref, lb);
    d.mask = hc.mask;
    d.lse = a->lse ? lse_ref : NULL;
    tsr_status st = tsr_attention(g_ref, &d, (char *)in[0] + off * (int64_t)hc.es, (char *)in[1] + off * (int64_t)hc.es,
                                  (char *)in[2] + off * (int64_t)hc.es, (char *)o_ref + off * (int64_t)hc.es);
    ck_assert_msg(st == TSR_OK, "%s: %s", what, tsr_last_error());
    ck_assert_str_eq(tsr_last_kernel(), "attention.ref");
    const void *o_oracle = (char *)o_ref + off * (int64_t)hc.es;
    check_oracle(what, a, &hc, o_oracle, o_before, a->lse ? lse_ref : NULL);

    void *o_dev = malloc(ob);
    float *lse_dev = malloc(lb);
    for (int c = 0; c < nc; c++) {
        describe(what, sizeof what, cs[c].label, a);
        tsr_context *ctx = cs[c].ctx;
        tsr_context_info info = {.size = sizeof info};
        tsr_context_get_info(ctx, &info);
        /* cl_mem handles cannot be offset; other backends' pointers can */
        const int64_t doff = info.backend == TSR_BACKEND_OPENCL ? 0 : off;
        void *din[3], *dout, *dlse = NULL, *dmask = NULL;
        for (int t = 0; t < 3; t++)
            din[t] = tt_upload(ctx, (char *)in[t] + (off - doff) * (int64_t)hc.es,
                               (size_t)(hc.v[t].elems + doff + 1) * hc.es);
        dout = tt_upload(ctx, (char *)o_init + (off - doff) * (int64_t)hc.es, ob + (size_t)doff * hc.es);
        if (a->lse) {
            float *s = malloc(lb);
            tt_fill_sentinel(s, lb);
            dlse = tt_upload(ctx, s, lb);
            free(s);
        }
        if (hc.mask) dmask = tt_upload(ctx, hc.mask, mb);
        d.mask = dmask, d.lse = dlse;
        st = tsr_attention(ctx, &d, (char *)din[0] + doff * (int64_t)hc.es, (char *)din[1] + doff * (int64_t)hc.es,
                           (char *)din[2] + doff * (int64_t)hc.es, (char *)dout + doff * (int64_t)hc.es);
        ck_assert_msg(st == TSR_OK, "%s: %s", what, tsr_last_error());
        tt_download(ctx, o_dev, (char *)dout + doff * (int64_t)hc.es, ob);
        const double tol = ctx_tol(a->dt);
        /* the whole span, gaps included: they must still hold the sentinel */
        ck_assert_msg(tt_compare(what, o_dev, o_oracle, a->dt, ov->elems, tol, tol) == 0, "o vs the oracle: %s (%s)",
                      what, tsr_last_kernel());
        if (a->lse) {
            tt_download(ctx, lse_dev, dlse, lb);
            ck_assert_msg(tt_compare(what, lse_dev, lse_ref, TSR_F32, hc.rows, 1e-4, 1e-5) == 0,
                          "lse vs the oracle: %s (%s)", what, tsr_last_kernel());
        }
        check_rows(what, a, &hc, o_dev, a->lse ? lse_dev : NULL);
        for (int t = 0; t < 3; t++) tt_free(ctx, din[t]);
        tt_free(ctx, dout), tt_free(ctx, dlse), tt_free(ctx, dmask);
    }
    for (int t = 0; t < 3; t++) free(in[t]);
    free(o_init), free(o_ref), free(lse_ref), free(o_dev), free(lse_dev);
    hostcase_free(&hc);
}

static void run_cases(const char *suite, const acase *cases, int n) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open(suite, cs, TT_MAX_CONTEXTS);
    ck_assert_int_gt(nc, 0);
    g_ref = tt_ref_context();
    for (int i = 0; i < n; i++) run_case(cs, nc, &cases[i], (uint64_t)i + 1);
    tsr_context_destroy(g_ref);
    tt_contexts_close(cs, nc);
}

/* ----------------------------------------------------- hand-computed cases */

static void run_host(tsr_context *ctx, const tsr_attention_desc *d, const float *q, const float *k, const float *v,
                     float *o) {
    tsr_status st = tsr_attention(ctx, d, q, k, v, o);
    ck_assert_msg(st == TSR_OK, "tsr_attention: %s", tsr_last_error());
}

static tsr_attention_desc tiny(int64_t sq, int64_t skv, float scale, tsr_causal causal, float *lse) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.seq_q = sq, d.seq_kv = skv, d.head_dim = 2, d.scale = scale, d.causal = causal, d.lse = lse;
    return d;
}

#define NEAR(x, y) ck_assert_double_eq_tol((double)(x), (double)(y), 1e-6)

/* q = [[1 0] [0 1]], k = identity, v = [[1 2] [3 4]]: with scale 1 query 0's
 * logits are (1, 0), so its weights are (e, 1) / (e + 1); query 1 mirrors it. */
START_TEST(hand_computed) {
    tsr_context *ctx = tt_ref_context();
    const float q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
    const double e = exp(1.0);
    float o[4], lse[2];

    tsr_attention_desc d = tiny(2, 2, 1.0f, TSR_CAUSAL_NONE, lse);
    run_host(ctx, &d, q, k, v, o);
    NEAR(o[0], (e + 3) / (e + 1)); NEAR(o[1], (2 * e + 4) / (e + 1));
    NEAR(o[2], (1 + 3 * e) / (e + 1)); NEAR(o[3], (2 + 4 * e) / (e + 1));
    NEAR(lse[0], log(e + 1)); NEAR(lse[1], log(e + 1));

    /* causal, both alignments agree when seq_q == seq_kv: query 0 sees key 0 */
    for (int c = TSR_CAUSAL_TOP_LEFT; c <= TSR_CAUSAL_BOTTOM_RIGHT; c++) {
        d = tiny(2, 2, 1.0f, (tsr_causal)c, lse);
        run_host(ctx, &d, q, k, v, o);
        NEAR(o[0], 1); NEAR(o[1], 2); NEAR(lse[0], 1.0);
        NEAR(o[2], (1 + 3 * e) / (e + 1)); NEAR(o[3], (2 + 4 * e) / (e + 1)); NEAR(lse[1], log(e + 1));
    }
    /* one query [0 1] against two keys: top-left sees key 0 (logit 0),
     * bottom-right sees both */
    d = tiny(1, 2, 1.0f, TSR_CAUSAL_TOP_LEFT, lse);
    run_host(ctx, &d, q + 2, k, v, o);
    NEAR(o[0], 1); NEAR(o[1], 2); NEAR(lse[0], 0.0);
    d.causal = TSR_CAUSAL_BOTTOM_RIGHT;
    run_host(ctx, &d, q + 2, k, v, o);
    NEAR(o[0], (1 + 3 * e) / (e + 1)); NEAR(o[1], (2 + 4 * e) / (e + 1)); NEAR(lse[0], log(e + 1));

    /* default scale 1/sqrt(2): query 0's logits are (s, 0) */
    d = tiny(2, 2, 0.0f, TSR_CAUSAL_NONE, lse);
    run_host(ctx, &d, q, k, v, o);
    const double es = exp(1 / sqrt(2.0));
    NEAR(o[0], (es + 3) / (es + 1)); NEAR(lse[0], log(es + 1));

    /* additive mask [[0 -inf] [ln 3, 0]]: query 0 sees key 0 only; query 1's
     * logits become (ln 3, 1), weights (3, e) / (3 + e) */
    const float mask[4] = {0, -INFINITY, (float)log(3.0), 0};
    d = tiny(2, 2, 1.0f, TSR_CAUSAL_NONE, lse);
    d.mask = mask, d.mask_strides[1] = 4, d.mask_strides[2] = 2;
    run_host(ctx, &d, q, k, v, o);
    NEAR(o[0], 1); NEAR(o[1], 2); NEAR(lse[0], 1.0);
    NEAR(o[2], (3 + 3 * e) / (3 + e)); NEAR(o[3], (6 + 4 * e) / (3 + e)); NEAR(lse[1], log(3 + e));

    /* a mask row of -inf: o = 0 and lse = -inf, not NaN */
    const float hide[4] = {-INFINITY, -INFINITY, 0, 0};
    d.mask = hide;
    run_host(ctx, &d, q, k, v, o);
    ck_assert(o[0] == 0 && o[1] == 0 && lse[0] == -INFINITY);
    NEAR(o[2], (1 + 3 * e) / (e + 1)); NEAR(lse[1], log(e + 1));

    /* GQA: two query heads share one kv head; head 1 repeats head 0's query */
    const float q2[8] = {1, 0, 0, 1, 1, 0, 0, 1};
    float o2[8], lse2[4];
    d = tiny(2, 2, 1.0f, TSR_CAUSAL_NONE, lse2);
    d.heads_q = 2, d.heads_kv = 1;
    run_host(ctx, &d, q2, k, v, o2);
    for (int i = 0; i < 4; i++) NEAR(o2[i + 4], o2[i]);
    NEAR(o2[0], (e + 3) / (e + 1)); NEAR(lse2[3], log(e + 1));

    /* f16 and bf16 store the same answer rounded */
    for (int t = TSR_F16; t <= TSR_BF16; t++) {
        uint16_t qh[4], kh[4], vh[4], oh[4];
        for (int i = 0; i < 4; i++) {
            qh[i] = t == TSR_F16 ? tsr_f32_to_f16(q[i]) : tsr_f32_to_bf16(q[i]);
            kh[i] = t == TSR_F16 ? tsr_f32_to_f16(k[i]) : tsr_f32_to_bf16(k[i]);
            vh[i] = t == TSR_F16 ? tsr_f32_to_f16(v[i]) : tsr_f32_to_bf16(v[i]);
        }
        d = tiny(2, 2, 1.0f, TSR_CAUSAL_NONE, lse);
        d.dtype = (tsr_dtype)t;
        ck_assert_int_eq(tsr_attention(ctx, &d, qh, kh, vh, oh), TSR_OK);
        double tol = t == TSR_F16 ? 2e-3 : 1.6e-2, want = (e + 3) / (e + 1);
        ck_assert_double_eq_tol(tt_get(oh, (tsr_dtype)t, 0), want, tol * want);
        NEAR(lse[0], log(e + 1));
    }
    tsr_context_destroy(ctx);
}
END_TEST

/* The reference splits rows across threads; each row is computed alone, so
 * any thread count gives the same bits. */
START_TEST(threads_agree) {
    tsr_context *ctx = tt_ref_context();
    acase a = {2, 8, 2, 33, 47, 24, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F32, BSHD, MASK_HEAD, false, true, 0, 1};
    hostcase hc;
    hostcase_make(&a, 77, &hc);
    tsr_attention_desc d = desc_of(&a, &hc);
    d.mask = hc.mask;
    size_t ob = (size_t)hc.v[3].elems * hc.es, lb = sizeof(float) * (size_t)hc.rows;
    float *o1 = malloc(ob), *o3 = malloc(ob), *l1 = malloc(lb), *l3 = malloc(lb);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 1), TSR_OK);
    d.lse = l1;
    run_host(ctx, &d, hc.buf[0], hc.buf[1], hc.buf[2], o1);
    ck_assert_int_eq(tsr_context_set_num_threads(ctx, 3), TSR_OK);
    d.lse = l3;
    run_host(ctx, &d, hc.buf[0], hc.buf[1], hc.buf[2], o3);
    ck_assert(memcmp(o1, o3, ob) == 0 && memcmp(l1, l3, lb) == 0);
    free(o1), free(o3), free(l1), free(l3);
    hostcase_free(&hc);
    tsr_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------- dispatch sweeps */

/* Every dtype x causal mode x sequence pair, with head_dim, GQA ratio,
 * layout, mask mode, mask dtype, lse and scale rotated across the runs so
 * that each value meets several of the others. */
START_TEST(sweep_matches_reference) {
    static const int64_t dims[] = {8, 32, 64, 80, 128, 12, 3};
    static const int64_t heads[][2] = {{3, 3}, {8, 2}, {8, 1}}; /* GQA ratios 1, 4, 8 */
    static const int64_t seqs[][2] = {{5, 17}, {17, 5}, {1, 300}, {9, 9}};
    static const tsr_dtype dts[] = {TSR_F32, TSR_F16, TSR_BF16};
    acase cases[3 * 3 * 4];
    int n = 0;
    for (int t = 0; t < 3; t++)
        for (int c = 0; c < 3; c++)
            for (int s = 0; s < 4; s++, n++) {
                acase *a = &cases[n];
                memset(a, 0, sizeof *a);
                a->dt = dts[t], a->causal = (tsr_causal)c, a->sq = seqs[s][0], a->skv = seqs[s][1];
                a->d = dims[n % 7];
                a->hq = heads[(n / 3) % 3][0], a->hkv = heads[(n / 3) % 3][1];
                a->layout = (enum layout)(n % 3);
                a->b = 1 + n % 2;
                a->mask = (enum mask_mode)((n + n / 5) % MASK_MODES);
                a->mask_in_dt = (n / 2) % 2;
                a->lse = n % 4 != 1;
                a->scale = n % 5 == 2 ? 0.3f : 0.0f;
                a->amp = 1;
            }
    run_cases("attention", cases, n);
}
END_TEST

/* Decode, huge logits, empty key sets, broadcast reads, odd corners. */
START_TEST(special_shapes_match_reference) {
    const acase cases[] = {
        /* decode: one query against a long cache, MQA and GQA */
        {1, 8, 1, 1, 1000, 128, TSR_CAUSAL_NONE, TSR_F32, BSHD, MASK_NONE, false, true, 0, 1},
        {2, 32, 8, 1, 1000, 64, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F16, BHSD, MASK_ROW, true, true, 0, 1},
        {1, 4, 4, 1, 1000, 80, TSR_CAUSAL_TOP_LEFT, TSR_BF16, PADDED, MASK_NONE, false, true, 0, 1},
        /* a prefill-sized block */
        {2, 4, 2, 64, 64, 64, TSR_CAUSAL_TOP_LEFT, TSR_F32, BSHD, MASK_NONE, false, true, 0, 1},
        /* huge logits: q, k ~ 1e3, or scale 100; max subtraction keeps them finite */
        {1, 2, 1, 9, 13, 64, TSR_CAUSAL_NONE, TSR_F32, BHSD, MASK_NONE, false, true, 0, 1000},
        {1, 2, 2, 9, 13, 32, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F32, BSHD, MASK_FULL, false, true, 100, 1},
        {1, 4, 1, 7, 7, 16, TSR_CAUSAL_TOP_LEFT, TSR_F16, BHSD, MASK_NONE, false, true, 0, 1000},
        {2, 2, 1, 5, 11, 8, TSR_CAUSAL_NONE, TSR_BF16, BSHD, MASK_BCAST, true, true, 100, 1000},
        /* no keys at all: every row fully masked */
        {2, 4, 2, 3, 0, 8, TSR_CAUSAL_NONE, TSR_F32, BHSD, MASK_NONE, false, true, 0, 1},
        {1, 2, 1, 3, 0, 16, TSR_CAUSAL_BOTTOM_RIGHT, TSR_BF16, BSHD, MASK_FULL, false, true, 0, 1},
        /* bottom-right with far more queries than keys */
        {1, 2, 2, 40, 3, 12, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F16, PADDED, MASK_NONE, false, true, 0, 1},
        /* reads that broadcast: q shared by the batch, k and v by every head */
        {3, 4, 2, 6, 10, 20, TSR_CAUSAL_NONE, TSR_F32, READ_BCAST, MASK_HEAD, false, true, 0, 1},
        {2, 8, 8, 5, 9, 8, TSR_CAUSAL_TOP_LEFT, TSR_BF16, READ_BCAST, MASK_NONE, false, false, 0, 1},
        /* the smallest problem, and head_dim 1 */
        {1, 1, 1, 1, 1, 1, TSR_CAUSAL_NONE, TSR_F32, BHSD, MASK_NONE, false, true, 0, 1},
        {3, 2, 1, 4, 6, 1, TSR_CAUSAL_TOP_LEFT, TSR_F16, PADDED, MASK_FULL, true, true, 0, 1},
    };
    run_cases("attention", cases, (int)(sizeof cases / sizeof cases[0]));
}
END_TEST

/* -------------------------------------------------------------- empty */

START_TEST(empty_shapes) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[8], lse[2];
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.head_dim = 4, d.seq_q = 0, d.seq_kv = 5, d.lse = lse;
    /* no query rows: OK, nothing touched, q and o may be NULL */
    tt_fill_sentinel(o, sizeof o), tt_fill_sentinel(lse, sizeof lse);
    float k[20] = {0}, v[20] = {0};
    ck_assert_int_eq(tsr_attention(ctx, &d, NULL, k, v, NULL), TSR_OK);
    ck_assert_int_eq(tsr_attention(ctx, &d, q, k, v, o), TSR_OK);
    ck_assert(tt_unchanged(o, sizeof o) && tt_unchanged(lse, sizeof lse));
    ck_assert_str_eq(tsr_last_error(), "");
    /* no keys: k and v may be NULL; every row gives 0 and -inf */
    d.seq_q = 2, d.seq_kv = 0, d.causal = TSR_CAUSAL_BOTTOM_RIGHT;
    ck_assert_int_eq(tsr_attention(ctx, &d, q, NULL, NULL, o), TSR_OK);
    for (int i = 0; i < 8; i++) ck_assert(o[i] == 0);
    ck_assert(lse[0] == -INFINITY && lse[1] == -INFINITY);
    ck_assert_int_eq(tsr_attention_supported(ctx, &d, NULL, 0), TSR_OK);
    tsr_context_destroy(ctx);
}
END_TEST

/* ----------------------------------------------------------- bad input */

#define ARENA 160
static float arena[ARENA];
/* q, k, v, o (16 floats each: 1 x 2 x 2 x 4), lse (4) and mask (4) */
#define Q (arena)
#define K (arena + 16)
#define V (arena + 32)
#define O (arena + 48)
#define LSE (arena + 64)
#define MASK (arena + 68)

static tsr_attention_desc good(void) {
    tsr_attention_desc d;
    tsr_attention_desc_init(&d);
    d.heads_q = d.heads_kv = 2, d.seq_q = d.seq_kv = 2, d.head_dim = 4;
    d.lse = LSE, d.mask = MASK, d.mask_strides[2] = 2;
    return d;
}

/* The call fails with want and a message holding needle, and writes no
 * byte of the arena (outputs and inputs alike). The support query, asked
 * unless the failure is about a pointer, answers the same. */
static void expect_bad(tsr_context *ctx, const tsr_attention_desc *d, const void *q, const void *k, const void *v,
                       void *o, tsr_status want, const char *needle, bool ask_supported) {
    tt_fill_sentinel(arena, sizeof arena);
    tsr_status st = tsr_attention(ctx, d, q, k, v, o);
    ck_assert_msg(st == want, "[%s] want %s, got %s (%s)", needle, tsr_status_string(want), tsr_status_string(st),
                  tsr_last_error());
    ck_assert_msg(strstr(tsr_last_error(), needle), "message '%s' lacks '%s'", tsr_last_error(), needle);
    ck_assert_msg(strstr(tsr_last_error(), "attention"), "message '%s' does not name the op", tsr_last_error());
    ck_assert_msg(tt_unchanged(arena, sizeof arena), "memory written on bad input [%s]", needle);
    if (ask_supported) {
        char why[512] = "x";
        ck_assert_int_eq(tsr_attention_supported(ctx, d, why, sizeof why), want);
        ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
    }
}

#define BAD(desc, want, needle) expect_bad(ctx, &(desc), Q, K, V, O, want, needle, true)

START_TEST(bad_input) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    const tsr_attention_desc d = good();
    tsr_attention_desc e;

    /* the baseline is legal */
    for (int i = 0; i < ARENA; i++) arena[i] = 0.25f;
    ck_assert_msg(tsr_attention(ctx, &d, Q, K, V, O) == TSR_OK, "%s", tsr_last_error());

    /* pointers */
    expect_bad(NULL, &d, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "ctx is NULL", true);
    expect_bad(ctx, NULL, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "desc is NULL", true);
    expect_bad(ctx, &d, NULL, K, V, O, TSR_ERR_INVALID_ARGUMENT, "q is NULL", false);
    expect_bad(ctx, &d, Q, NULL, V, O, TSR_ERR_INVALID_ARGUMENT, "k is NULL", false);
    expect_bad(ctx, &d, Q, K, NULL, O, TSR_ERR_INVALID_ARGUMENT, "v is NULL", false);
    expect_bad(ctx, &d, Q, K, V, NULL, TSR_ERR_INVALID_ARGUMENT, "o is NULL", false);

    /* the descriptor's size */
    e = d, e.size = sizeof e - 1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "desc->size");
    e = d, e.size = 0;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "tsr_attention_desc_init");

    /* sizes */
    e = d, e.batch = 0;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "batch (0) must be >= 1");
    e = d, e.heads_q = 0;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "heads_q (0) must be >= 1");
    e = d, e.heads_kv = -2;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "heads_kv (-2) must be >= 1");
    e = d, e.head_dim = 0;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "head_dim (0) must be >= 1");
    e = d, e.seq_q = -1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "seq_q (-1) must be >= 0");
    e = d, e.seq_kv = -3;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "seq_kv (-3) must be >= 0");
    e = d, e.heads_q = 6, e.heads_kv = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "heads_q (6) is not a multiple of heads_kv (4)");
    e = d, e.heads_q = 2, e.heads_kv = 4; /* more kv heads than query heads */
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "heads_q (2) is not a multiple of heads_kv (4)");

    /* strides */
    e = d, e.q_strides[0] = 16, e.q_strides[1] = -8, e.q_strides[2] = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "q_strides (16, -8, 4) must be >= 0");
    e = d, e.k_strides[2] = -4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "k_strides (0, 0, -4) must be >= 0");
    e = d, e.v_strides[0] = -1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "v_strides (-1, 0, 0)");
    e = d, e.o_strides[0] = 16, e.o_strides[1] = 8, e.o_strides[2] = -4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "o_strides (16, 8, -4) must be >= 0");
    e = d, e.mask_strides[1] = -2;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "mask_strides (0, -2, 2) must be >= 0");
    /* o rows that alias: seq stride below head_dim, a 0 head stride, a
     * batch step landing inside the next batch's rows */
    e = d, e.o_strides[0] = 16, e.o_strides[1] = 8, e.o_strides[2] = 2;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the seq stride (2)");
    e = d, e.o_strides[0] = 16, e.o_strides[1] = 0, e.o_strides[2] = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the head stride (0)");
    e = d, e.batch = 2, e.heads_q = e.heads_kv = 1, e.o_strides[0] = 6, e.o_strides[1] = 16, e.o_strides[2] = 8;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "make distinct output rows overlap");
    e = d, e.batch = 2, e.heads_q = e.heads_kv = 1, e.o_strides[0] = 0, e.o_strides[1] = 16, e.o_strides[2] = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the batch stride (0)");
    /* ... while interleaved rows that never touch are fine, and q, k, v may
     * read overlapping rows */
    e = d, e.o_strides[0] = 64, e.o_strides[1] = 4, e.o_strides[2] = 8;
    e.k_strides[0] = 0, e.k_strides[1] = 0, e.k_strides[2] = 1;
    ck_assert_msg(tsr_attention_supported(ctx, &e, NULL, 0) == TSR_OK, "%s", tsr_last_error());

    /* outputs overlapping inputs or each other */
    expect_bad(ctx, &d, Q, K, V, Q + 4, TSR_ERR_INVALID_ARGUMENT, "o overlaps q", false);
    expect_bad(ctx, &d, Q, K, V, K, TSR_ERR_INVALID_ARGUMENT, "o overlaps k", false);
    expect_bad(ctx, &d, Q, K, V, V + 15, TSR_ERR_INVALID_ARGUMENT, "o overlaps v", false);
    e = d, e.mask = O + 3;
    expect_bad(ctx, &e, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "o overlaps the mask", false);
    e = d, e.lse = O + 12;
    expect_bad(ctx, &e, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "o overlaps lse", false);
    e = d, e.lse = Q + 14;
    expect_bad(ctx, &e, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "lse overlaps q", false);
    e = d, e.lse = K + 2;
    expect_bad(ctx, &e, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "lse overlaps k", false);
    e = d, e.lse = V;
    expect_bad(ctx, &e, Q, K, V, O, TSR_ERR_INVALID_ARGUMENT, "lse overlaps v", false);
    /* a strided o whose last row (not its first) reaches q */
    e = d, e.o_strides[0] = 32, e.o_strides[1] = 16, e.o_strides[2] = 4;
    expect_bad(ctx, &e, arena + 22, arena + 100, arena + 120, arena, TSR_ERR_INVALID_ARGUMENT, "o overlaps q", false);

    /* dtypes and enums */
    e = d, e.dtype = TSR_I8;
    BAD(e, TSR_ERR_NOT_SUPPORTED, "dtype i8 is not supported");
    e = d, e.dtype = TSR_I32;
    BAD(e, TSR_ERR_NOT_SUPPORTED, "dtype i32");
    e = d, e.dtype = (tsr_dtype)42;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "dtype (42)");
    e = d, e.mask_dtype = TSR_F16; /* tensors are f32 */
    BAD(e, TSR_ERR_NOT_SUPPORTED, "mask_dtype f16");
    e = d, e.dtype = TSR_BF16, e.mask_dtype = TSR_F16;
    BAD(e, TSR_ERR_NOT_SUPPORTED, "mask_dtype f16 is not supported (f32 or dtype bf16)");
    e = d, e.mask_dtype = (tsr_dtype)-1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "mask_dtype (-1)");
    e = d, e.causal = (tsr_causal)3;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "causal (3)");
    e = d, e.causal = (tsr_causal)-1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "causal (-1)");
    e = d, e.scale = -1.0f;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "scale (-1)");
    e = d, e.scale = NAN;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "nan) must be finite");
    e = d, e.scale = INFINITY;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "scale (inf)");

    /* sizes whose byte extents overflow int64 */
    e = d, e.seq_q = e.seq_kv = 4, e.head_dim = (int64_t)1 << 61;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "overflows int64");
    e = d, e.seq_kv = INT64_MAX;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the size of k");
    e = d, e.batch = 3, e.q_strides[0] = INT64_MAX / 2, e.q_strides[1] = 8, e.q_strides[2] = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the extent of q");
    e = d, e.v_strides[0] = 16, e.v_strides[1] = 8, e.v_strides[2] = INT64_MAX / 4 + 1;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the extent of v");
    e = d, e.batch = 3, e.mask_strides[0] = INT64_MAX / 3;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the extent of the mask");
    e = d, e.o_strides[0] = 16, e.o_strides[1] = (int64_t)1 << 61, e.o_strides[2] = 4;
    BAD(e, TSR_ERR_INVALID_ARGUMENT, "the extent of o");

    /* without a mask, its fields are not looked at */
    e = d, e.mask = NULL, e.mask_dtype = (tsr_dtype)99, e.mask_strides[0] = -5;
    ck_assert_int_eq(tsr_attention_supported(ctx, &e, NULL, 0), TSR_OK);
    /* the support query says OK, with an empty why, to every dtype */
    for (int t = TSR_F32; t <= TSR_BF16; t++) {
        char why[64] = "x";
        e = d, e.dtype = (tsr_dtype)t;
        ck_assert_int_eq(tsr_attention_supported(ctx, &e, why, sizeof why), TSR_OK);
        ck_assert_str_eq(why, "");
    }
    tsr_context_destroy(ctx);
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention");
    TCase *ref = tcase_create("reference");
    tcase_add_test(ref, hand_computed);
    tcase_add_test(ref, threads_agree);
    tcase_add_test(ref, empty_shapes);
    suite_add_tcase(s, ref);
    TCase *dispatch = tcase_create("dispatch");
    tcase_set_timeout(dispatch, 600);
    tcase_add_test(dispatch, sweep_matches_reference);
    tcase_add_test(dispatch, special_shapes_match_reference);
    suite_add_tcase(s, dispatch);
    TCase *bad = tcase_create("bad_input");
    tcase_add_test(bad, bad_input);
    suite_add_tcase(s, bad);
    return tt_run_suite(s);
}
