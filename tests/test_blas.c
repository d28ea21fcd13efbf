/* libtessera_blas (bridges/blas): sgemm_, cblas_sgemm and
 * cblas_sgemm_batch_strided against a double-precision loop, for every
 * storage order and transpose on awkward shapes; BLAS's special cases
 * (quick returns, alpha == 0, beta == 0 over NaN); every illegal argument
 * with reference BLAS's parameter number; strided batches.
 *
 * Built twice (tests/meson.build):
 *  - test_blas: no other BLAS in the process, so errors are printed by the
 *    bridge's own xerbla/cblas_xerbla (checked on captured stderr); run as
 *    is (Tessera) and with TESSERA_BLAS_DISABLE=1 (the built-in loop).
 *  - test_blas_chain (-DBLAS_TEST_CHAIN): linked with the system BLAS after
 *    the bridge and defining its own xerbla_/cblas_xerbla, as BLAS allows
 *    and LAPACK's testers do; run with TESSERA_BLAS_DISABLE=1, so that
 *    every call goes down the chain to the system's sgemm_. */
#define _GNU_SOURCE 1 /* dladdr */
#include <check.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "entries.h"

enum { ROW = TSRB_CBLAS_ROW_MAJOR, COL = TSRB_CBLAS_COL_MAJOR };
enum { NT = TSRB_CBLAS_NO_TRANS, TR = TSRB_CBLAS_TRANS, CT = TSRB_CBLAS_CONJ_TRANS };

/* ------------------------------------------------------------- error capture */

/* What the last error report said: the routine's name and the parameter. */
static struct {
    int calls, info;
    char rout[64];
} reported;

static void reported_clear(void) { memset(&reported, 0, sizeof reported); }

#ifdef BLAS_TEST_CHAIN
/* The application's own handlers take precedence over the system BLAS's
 * and over the bridge's fallbacks. */
void xerbla_(const char *srname, const int *info, size_t len);
void xerbla_(const char *srname, const int *info, size_t len) {
    reported.calls++;
    reported.info = *info;
    snprintf(reported.rout, sizeof reported.rout, "%.*s", (int)(len < 6 ? len : 6), srname);
}
/* A routine only the system BLAS has: using it keeps that library in the
 * executable's DT_NEEDED (--as-needed would drop it), behind the bridge. */
float sdot_(const int *n, const float *x, const int *incx, const float *y, const int *incy);
START_TEST(system_blas_behind) {
    const float x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
    const int n = 3, inc = 1;
    ck_assert(sdot_(&n, x, &inc, y, &inc) == 32.0f);
    /* BLAS_TEST_EXPECT_LIB (the blas_chain_reference run): the BLAS behind
     * the bridge must be that library (netlib's reference BLAS), so that
     * every expectation of this file is checked against the reference
     * itself and not only against OpenBLAS. */
    const char *want = getenv("BLAS_TEST_EXPECT_LIB");
    if (want && *want) {
        Dl_info info;
        ck_assert(dladdr((void *)sdot_, &info) != 0 && info.dli_fname);
        ck_assert_msg(strstr(info.dli_fname, want) != NULL, "the BLAS behind the bridge is %s, not %s",
                      info.dli_fname, want);
        printf("system_blas_behind: the BLAS behind the bridge is %s\n", info.dli_fname);
    }
}
END_TEST
void cblas_xerbla(int info, const char *rout, const char *form, ...);
void cblas_xerbla(int info, const char *rout, const char *form, ...) {
    (void)form;
    reported.calls++;
    reported.info = info;
    snprintf(reported.rout, sizeof reported.rout, "%s", rout);
}
#endif

/* stderr into a temporary file while a call runs. */
static int saved_stderr = -1;
static FILE *captured;

static void capture_begin(void) {
    fflush(stderr);
    captured = tmpfile();
    ck_assert_ptr_nonnull(captured);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fileno(captured), STDERR_FILENO);
    reported_clear();
}

/* Returns what was written to stderr (static buffer). */
static const char *capture_end(void) {
    static char text[4096];
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    rewind(captured);
    size_t n = fread(text, 1, sizeof text - 1, captured);
    text[n] = '\0';
    fclose(captured);
    return text;
}

/* The report of one illegal call: sgemm_ through xerbla_ ("SGEMM "),
 * the CBLAS entries through cblas_xerbla (rout). */
static void expect_report(const char *text, const char *rout, int info, const char *what) {
#ifdef BLAS_TEST_CHAIN
    (void)text;
    ck_assert_msg(reported.calls == 1, "%s: %d reports", what, reported.calls);
    ck_assert_msg(reported.info == info, "%s: parameter %d reported, want %d", what, reported.info, info);
    const char *want = strcmp(rout, "SGEMM") == 0 ? "SGEMM " : rout;
    ck_assert_msg(strcmp(reported.rout, want) == 0, "%s: routine '%s', want '%s'", what, reported.rout, want);
#else
    char want[160];
    if (strcmp(rout, "SGEMM") == 0)
        snprintf(want, sizeof want, " ** On entry to SGEMM  parameter number %2d had an illegal value\n", info);
    else
        snprintf(want, sizeof want, "Parameter %d to routine %s was incorrect\n", info, rout);
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "%s: stderr was\n%s\nwant\n%s", what, text, want);
#endif
}

/* ----------------------------------------------------------------- data */

static uint64_t rng = 88172645463325252ull;
static float rnd(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}
static float *rnd_buf(size_t n) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) x[i] = rnd();
    return x;
}

/* Element (i, j) of a matrix stored in layout with leading dimension ld. */
static size_t at(int layout, int64_t i, int64_t j, int64_t ld) {
    return (size_t)(layout == ROW ? i * ld + j : i + j * ld);
}

/* Stored rows x cols of op(X) being r x c. */
static void stored(bool trans, int64_t r, int64_t c, int64_t *rows, int64_t *cols) {
    *rows = trans ? c : r, *cols = trans ? r : c;
}
static int64_t min_ld(int layout, int64_t rows, int64_t cols) {
    int64_t v = layout == ROW ? cols : rows;
    return v > 1 ? v : 1;
}

/* want = alpha op(A) op(B) + beta C0 in double, with a rounding bound per
 * element: (k + 4) eps (|alpha| sum |a||b| + |beta c|). C0 is read only
 * where beta != 0. */
static void reference(int layout, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                      const float *c0, int64_t ldc, double *want, double *bound) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t l = 0; l < k; l++) {
                double x = a[ta ? at(layout, l, i, lda) : at(layout, i, l, lda)];
                double y = b[tb ? at(layout, j, l, ldb) : at(layout, l, j, ldb)];
                s += x * y, sa += fabs(x * y);
            }
            double cv = beta != 0.0f ? c0[at(layout, i, j, ldc)] : 0.0;
            want[i * n + j] = (double)alpha * s + (double)beta * cv;
            bound[i * n + j] = (double)(k + 4) * FLT_EPSILON * (fabs(alpha) * sa + fabs(beta * cv)) + FLT_MIN;
        }
}

/* Checks C's m x n values against want and that every other element of
 * the buffer (ld padding) is bitwise what it was in c0. */
static void check_c(const char *what, int layout, int64_t m, int64_t n, const float *c,
                    const float *c0, int64_t ldc, size_t c_len, const double *want, const double *bound) {
    bool *inside = calloc(c_len ? c_len : 1, 1);
    ck_assert_ptr_nonnull(inside);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            size_t p = at(layout, i, j, ldc);
            inside[p] = true;
            double err = fabs((double)c[p] - want[i * n + j]);
            ck_assert_msg(err <= bound[i * n + j], "%s: C(%lld,%lld) = %.9g, want %.9g (bound %.3g)", what,
                          (long long)i, (long long)j, (double)c[p], want[i * n + j], bound[i * n + j]);
        }
    for (size_t p = 0; p < c_len; p++)
        if (!inside[p])
            ck_assert_msg(memcmp(&c[p], &c0[p], sizeof *c) == 0, "%s: C padding element %zu changed", what, p);
    free(inside);
}

/* ------------------------------------------------------------ the calls */

typedef enum entry { F77, CBLAS, BATCH1 } entry;

static int cblas_t(char t) { return t == 'N' || t == 'n' ? NT : t == 'T' || t == 't' ? TR : CT; }

static void call(entry e, int layout, char ta, char tb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
    switch (e) {
    case F77: sgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc); break;
    case CBLAS:
        cblas_sgemm(layout, cblas_t(ta), cblas_t(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        break;
    case BATCH1:
        cblas_sgemm_batch_strided(layout, cblas_t(ta), cblas_t(tb), m, n, k, alpha, a, lda, 0, b,
                                  ldb, 0, beta, c, ldc, 0, 1);
        break;
    }
}

static bool is_trans(char t) { return t != 'N' && t != 'n'; }

/* One product through entry e, checked against the reference. */
static void check_one(entry e, int layout, char ta, char tb, int m, int n, int k, int pad,
                      float alpha, float beta) {
    int64_t ar, ac, br, bc;
    stored(is_trans(ta), m, k, &ar, &ac);
    stored(is_trans(tb), k, n, &br, &bc);
    int lda = (int)min_ld(layout, ar, ac) + pad, ldb = (int)min_ld(layout, br, bc) + 2 * pad;
    int ldc = (int)min_ld(layout, m, n) + pad;
    size_t alen = (size_t)(layout == ROW ? ar * lda : ac * lda), blen = (size_t)(layout == ROW ? br * ldb : bc * ldb);
    size_t clen = (size_t)(layout == ROW ? m * ldc : n * ldc);
    float *a = rnd_buf(alen), *b = rnd_buf(blen), *c = rnd_buf(clen), *c0 = malloc((clen ? clen : 1) * sizeof *c0);
    double *want = malloc((size_t)(m * n + 1) * sizeof *want), *bound = malloc((size_t)(m * n + 1) * sizeof *bound);
    if (beta == 0.0f) /* beta == 0 must not read C: poison it */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[at(layout, i, j, ldc)] = (i + j) % 2 ? NAN : INFINITY;
    memcpy(c0, c, clen * sizeof *c);
    reference(layout, is_trans(ta), is_trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc, want, bound);
    call(e, layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    char what[160];
    snprintf(what, sizeof what, "%s %s %c%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g",
             e == F77 ? "sgemm_" : e == CBLAS ? "cblas_sgemm" : "batch_strided", layout == ROW ? "row" : "col",
             ta, tb, m, n, k, lda, ldb, ldc, (double)alpha, (double)beta);
    check_c(what, layout, m, n, c, c0, ldc, clen, want, bound);
    free(a), free(b), free(c), free(c0), free(want), free(bound);
}

static const int shapes[][3] = {
    {1, 1, 1},   {1, 1, 7},   {1, 9, 5},   {9, 1, 5},    {5, 7, 1},    {2, 3, 4},   {7, 13, 17},
    {16, 16, 16}, {17, 31, 8}, {33, 7, 29}, {6, 48, 13}, {97, 61, 41}, {5, 130, 300}, {130, 3, 270},
};
static const float alphas[] = {1.0f, 0.75f, -2.0f}, betas[] = {0.0f, -1.5f, 1.0f};

START_TEST(fortran_all_transposes) {
    const char ts[] = "NTCntc";
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int x = 0; x < 6; x++)
            for (int y = 0; y < 6; y++) {
                int v = (int)(s + (size_t)x + (size_t)y);
                check_one(F77, COL, ts[x], ts[y], shapes[s][0], shapes[s][1], shapes[s][2], v % 2 ? 3 : 0,
                          alphas[v % 3], betas[(v / 3) % 3]);
            }
}
END_TEST

/* _i: the storage order; cblas_sgemm and the batch entry with batch 1. */
START_TEST(cblas_all_transposes) {
    const int layout = _i ? ROW : COL;
    const char ts[] = "NTC";
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++)
                for (entry e = CBLAS; e <= BATCH1; e++) {
                    int v = (int)(s + (size_t)x + (size_t)y + (size_t)e);
                    check_one(e, layout, ts[x], ts[y], shapes[s][0], shapes[s][1], shapes[s][2],
                              v % 2 ? 5 : 0, alphas[v % 3], betas[(v / 3) % 3]);
                }
}
END_TEST

/* ------------------------------------------------------- special values */

static bool same_bits(const float *x, const float *y, size_t n) { return memcmp(x, y, n * sizeof *x) == 0; }

START_TEST(alpha_zero_and_k_zero) {
    enum { M = 7, N = 5, K = 3 };
    float a[M * K], b[K * N], c[M * N], c0[M * N];
    for (int i = 0; i < M * K; i++) a[i] = NAN; /* alpha == 0: A and B are not read */
    for (int i = 0; i < K * N; i++) b[i] = INFINITY;
    for (int i = 0; i < M * N; i++) c0[i] = (float)i - 3.25f;
    c0[4] = NAN;
    c0[9] = -INFINITY;
    for (entry e = F77; e <= BATCH1; e++) {
        /* alpha = 0, beta = 0: exact zeros, NaN and Inf in C ignored */
        memcpy(c, c0, sizeof c);
        call(e, COL, 'N', 'N', M, N, K, 0.0f, a, M, b, K, 0.0f, c, M);
        for (int i = 0; i < M * N; i++)
            ck_assert_msg(c[i] == 0.0f && !signbit(c[i]), "entry %d: alpha=beta=0: C[%d] = %g", e, i, (double)c[i]);
        /* alpha = 0, beta = 2: C = 2 C exactly, NaN stays NaN */
        memcpy(c, c0, sizeof c);
        call(e, COL, 'T', 'N', M, N, K, 0.0f, a, K, b, K, 2.0f, c, M);
        for (int i = 0; i < M * N; i++) {
            float w = 2.0f * c0[i];
            ck_assert_msg(isnan(w) ? isnan(c[i]) : c[i] == w, "entry %d: alpha=0 beta=2: C[%d] = %g", e, i, (double)c[i]);
        }
        /* k = 0, beta = 0: zeros; k = 0, beta = -1: C = -C */
        memcpy(c, c0, sizeof c);
        call(e, COL, 'N', 'T', M, N, 0, 1.5f, a, M, b, N, 0.0f, c, M);
        for (int i = 0; i < M * N; i++) ck_assert_msg(c[i] == 0.0f, "entry %d: k=0 beta=0: C[%d] = %g", e, i, (double)c[i]);
        memcpy(c, c0, sizeof c); /* (alpha = Inf: k = 0 means no product at all, not Inf * 0) */
        if (e == F77) call(e, COL, 'N', 'N', M, N, 0, INFINITY, a, M, b, 1, -1.0f, c, M);
        else call(e, ROW, 'N', 'N', M, N, 0, INFINITY, a, 1, b, N, -1.0f, c, N);
        for (int i = 0; i < M * N; i++) {
            float w = -c0[i];
            ck_assert_msg(isnan(w) ? isnan(c[i]) : c[i] == w, "entry %d: k=0 beta=-1: C[%d] = %g", e, i, (double)c[i]);
        }
    }
}
END_TEST

START_TEST(quick_returns_leave_c_untouched) {
    enum { M = 6, N = 4, K = 5 };
    float a[M * K], b[K * N], c[M * N], c0[M * N];
    for (int i = 0; i < M * K; i++) a[i] = rnd();
    for (int i = 0; i < K * N; i++) b[i] = rnd();
    for (int i = 0; i < M * N; i++) c0[i] = rnd();
    c0[0] = NAN, c0[5] = INFINITY, c0[7] = -0.0f;
    for (entry e = F77; e <= BATCH1; e++) {
        struct { int m, n, k; float alpha, beta; const char *why; } q[] = {
            {0, N, K, 1, 0, "m = 0"},          {M, 0, K, 1, 0, "n = 0"},
            {M, N, K, 0, 1, "alpha = 0, beta = 1"}, {M, N, 0, 2, 1, "k = 0, beta = 1"},
            {M, N, 0, NAN, 1, "k = 0, beta = 1, alpha NaN"},
        };
        for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
            memcpy(c, c0, sizeof c);
            /* m or n = 0 with lda, ldc = 1: legal, as max(1, 0) = 1 */
            int ld = q[i].m > 0 ? q[i].m : 1;
            call(e, COL, 'N', 'N', q[i].m, q[i].n, q[i].k, q[i].alpha, a, ld, b, q[i].k > 0 ? q[i].k : 1, q[i].beta, c, ld);
            ck_assert_msg(same_bits(c, c0, M * N), "entry %d: %s changed C", e, q[i].why);
        }
    }
    /* A batch of 0, and alpha = 0 / beta = 1 on a batch */
    memcpy(c, c0, sizeof c);
    cblas_sgemm_batch_strided(COL, NT, NT, 2, 2, 2, 1.0f, a, 2, 4, b, 2, 4, 0.0f, c, 2, 4, 0);
    ck_assert(same_bits(c, c0, M * N));
    cblas_sgemm_batch_strided(ROW, TR, NT, 2, 2, 2, 0.0f, a, 2, 4, b, 2, 4, 1.0f, c, 2, 4, 3);
    ck_assert(same_bits(c, c0, M * N));
}
END_TEST

START_TEST(beta_zero_ignores_nan_in_c) {
    enum { M = 19, N = 23, K = 11 };
    for (entry e = F77; e <= BATCH1; e++)
        for (int layout = 0; layout < 2; layout++) {
            int lay = layout ? ROW : COL;
            check_one(e, e == F77 ? COL : lay, 'N', 'T', M, N, K, 1, 1.0f, 0.0f);
            check_one(e, e == F77 ? COL : lay, 'T', 'N', M, N, K, 0, -3.0f, 0.0f);
        }
}
END_TEST

/* ---------------------------------------------------------- illegal args */

typedef struct bad_f77 {
    char ta, tb;
    int m, n, k, lda, ldb, ldc, info;
} bad_f77;

START_TEST(illegal_sgemm) {
    static const bad_f77 cases[] = {
        {'X', 'N', 2, 2, 2, 2, 2, 2, 1},  {'N', '?', 2, 2, 2, 2, 2, 2, 2},
        {'N', 'N', -1, 2, 2, 2, 2, 2, 3}, {'N', 'N', 2, -1, 2, 2, 2, 2, 4},
        {'N', 'N', 2, 2, -1, 2, 2, 2, 5}, {'N', 'N', 5, 2, 2, 4, 2, 5, 8},
        {'T', 'N', 2, 2, 5, 4, 5, 2, 8},  {'N', 'N', 0, 2, 2, 0, 2, 1, 8},
        {'N', 'N', 2, 2, 3, 2, 2, 2, 10}, {'n', 't', 2, 4, 2, 2, 3, 2, 10},
        {'N', 'N', 3, 2, 2, 3, 2, 2, 13}, {'N', 'N', 0, 2, 2, 1, 2, 0, 13},
        {'N', 'N', -1, -1, 2, 0, 0, 0, 3}, /* the first failing check wins */
        {'x', 'N', -1, 2, 2, 2, 2, 2, 1},
    };
    float a[64], b[64], c[64], c0[64];
    for (int i = 0; i < 64; i++) a[i] = b[i] = c0[i] = rnd();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_f77 *t = &cases[i];
        float alpha = 1.0f, beta = 0.0f;
        memcpy(c, c0, sizeof c);
        capture_begin();
        sgemm_(&t->ta, &t->tb, &t->m, &t->n, &t->k, &alpha, a, &t->lda, b, &t->ldb, &beta, c, &t->ldc);
        const char *text = capture_end();
        char what[64];
        snprintf(what, sizeof what, "sgemm_ case %zu", i);
        expect_report(text, "SGEMM", t->info, what);
        ck_assert_msg(same_bits(c, c0, 64), "%s: C changed", what);
    }
}
END_TEST

typedef struct bad_c {
    int layout, ta, tb, m, n, k, lda, ldb, ldc, info;
} bad_c;

/* Parameter numbers as netlib CBLAS reports them: the position in the
 * caller's argument list, found by the column-major checks on the swapped
 * call for row-major (so N is checked before M, and ldb before lda). */
static const bad_c cblas_cases[] = {
    {100, NT, NT, 2, 2, 2, 2, 2, 2, 1}, {COL, 110, NT, 2, 2, 2, 2, 2, 2, 2},
    {ROW, NT, 114, 2, 2, 2, 2, 2, 2, 3}, {COL, NT, NT, -1, 2, 2, 2, 2, 2, 4},
    {COL, NT, NT, 2, -1, 2, 2, 2, 2, 5}, {COL, NT, NT, 2, 2, -1, 2, 2, 2, 6},
    {COL, NT, NT, 5, 2, 2, 4, 2, 5, 9},  {COL, NT, TR, 2, 5, 2, 2, 4, 2, 11},
    {COL, NT, NT, 5, 2, 2, 5, 2, 4, 14}, {ROW, NT, NT, -1, 2, 2, 2, 2, 2, 4},
    {ROW, NT, NT, 2, -1, 2, 2, 2, 2, 5}, {ROW, NT, NT, -1, -1, 2, 2, 2, 2, 5},
    {ROW, NT, NT, 2, 2, -1, 2, 2, 2, 6}, {ROW, NT, NT, 2, 2, 5, 4, 2, 2, 9},
    {ROW, TR, NT, 5, 2, 2, 4, 2, 2, 9},  {ROW, NT, NT, 2, 5, 2, 5, 4, 5, 11},
    {ROW, NT, NT, 2, 5, 2, 2, 5, 4, 14}, {ROW, NT, NT, 2, 2, 2, 1, 1, 2, 11},
};

START_TEST(illegal_cblas) {
    float a[64], b[64], c[64], c0[64];
    for (int i = 0; i < 64; i++) a[i] = b[i] = c0[i] = rnd();
    for (size_t i = 0; i < sizeof cblas_cases / sizeof cblas_cases[0]; i++) {
        const bad_c *t = &cblas_cases[i];
        memcpy(c, c0, sizeof c);
        capture_begin();
        cblas_sgemm(t->layout, t->ta, t->tb, t->m, t->n, t->k, 1.0f, a, t->lda, b, t->ldb, 0.0f, c, t->ldc);
        const char *text = capture_end();
        char what[64];
        snprintf(what, sizeof what, "cblas_sgemm case %zu", i);
        expect_report(text, "cblas_sgemm", t->info, what);
        ck_assert_msg(same_bits(c, c0, 64), "%s: C changed", what);
        /* The batch entry: the same checks, with ldb and ldc one further. */
        int info = t->info == 11 ? 12 : t->info == 14 ? 15 : t->info;
        memcpy(c, c0, sizeof c);
        capture_begin();
        cblas_sgemm_batch_strided(t->layout, t->ta, t->tb, t->m, t->n, t->k, 1.0f, a, t->lda, 0, b,
                                  t->ldb, 0, 0.0f, c, t->ldc, 0, 1);
        text = capture_end();
        snprintf(what, sizeof what, "batch case %zu", i);
        expect_report(text, "cblas_sgemm_batch_strided", info, what);
        ck_assert_msg(same_bits(c, c0, 64), "%s: C changed", what);
    }
}
END_TEST

START_TEST(illegal_batch_strides) {
    struct { int layout, stridea, strideb, stridec, batch, info; } cases[] = {
        {COL, -1, 9, 9, 2, 10}, {ROW, 9, -3, 9, 2, 13}, {COL, 9, 9, 8, 2, 16},
        {ROW, 9, 9, 5, 3, 16},  {COL, 9, 9, 9, -1, 18}, {COL, 0, 0, 9, -1, 18},
    };
    float a[64], b[64], c[64], c0[64];
    for (int i = 0; i < 64; i++) a[i] = b[i] = c0[i] = rnd();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(c, c0, sizeof c);
        capture_begin();
        /* 3 x 3 matrices, ld 3: one C needs 9 elements */
        cblas_sgemm_batch_strided(cases[i].layout, NT, NT, 3, 3, 3, 1.0f, a, 3, cases[i].stridea, b, 3,
                                  cases[i].strideb, 0.0f, c, 3, cases[i].stridec, cases[i].batch);
        const char *text = capture_end();
        char what[64];
        snprintf(what, sizeof what, "batch stride case %zu", i);
        expect_report(text, "cblas_sgemm_batch_strided", cases[i].info, what);
        ck_assert_msg(same_bits(c, c0, 64), "%s: C changed", what);
    }
}
END_TEST

/* ----------------------------------------------------------------- batch */

/* _i: storage order. Strides with gaps, and 0 (one A or B for all). */
START_TEST(batch_strided) {
    const int layout = _i ? ROW : COL;
    const int dims[][4] = {{5, 7, 3, 4}, {17, 9, 33, 6}, {1, 13, 8, 3}, {24, 1, 5, 7}};
    const char ts[] = "NTC";
    for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++)
                for (int share = 0; share < 3; share++) { /* 0: none, 1: A shared, 2: B shared */
                    int m = dims[s][0], n = dims[s][1], k = dims[s][2], batch = dims[s][3];
                    bool ta = x > 0, tb = y > 0;
                    int64_t ar, ac, br, bc;
                    stored(ta, m, k, &ar, &ac);
                    stored(tb, k, n, &br, &bc);
                    int lda = (int)min_ld(layout, ar, ac) + 1, ldb = (int)min_ld(layout, br, bc);
                    int ldc = (int)min_ld(layout, m, n) + 2;
                    int a_one = (int)(layout == ROW ? ar * lda : ac * lda), b_one = (int)(layout == ROW ? br * ldb : bc * ldb);
                    int c_one = layout == ROW ? m * ldc : n * ldc;
                    int sa = share == 1 ? 0 : a_one + 3, sb = share == 2 ? 0 : b_one, sc = c_one + 5;
                    float alpha = share == 1 ? -0.5f : 1.25f, beta = (s + (size_t)x) % 2 ? 0.5f : 0.0f;
                    float *a = rnd_buf((size_t)(sa * batch + a_one)), *b = rnd_buf((size_t)(sb * batch + b_one));
                    size_t clen = (size_t)(sc * batch);
                    float *c = rnd_buf(clen), *c0 = malloc(clen * sizeof *c0);
                    memcpy(c0, c, clen * sizeof *c);
                    cblas_sgemm_batch_strided(layout, x == 0 ? NT : x == 1 ? TR : CT, y == 0 ? NT : y == 1 ? TR : CT,
                                              m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
                    double *want = malloc((size_t)(m * n) * sizeof *want), *bound = malloc((size_t)(m * n) * sizeof *bound);
                    for (int bt = 0; bt < batch; bt++) {
                        reference(layout, ta, tb, m, n, k, alpha, a + bt * sa, lda, b + bt * sb, ldb, beta,
                                  c0 + bt * sc, ldc, want, bound);
                        char what[128];
                        snprintf(what, sizeof what, "batch %s %c%c %dx%dx%d share=%d item %d",
                                 layout == ROW ? "row" : "col", ts[x], ts[y], m, n, k, share, bt);
                        check_c(what, layout, m, n, c + bt * sc, c0 + bt * sc, ldc, (size_t)sc, want, bound);
                    }
                    free(a), free(b), free(c), free(c0), free(want), free(bound);
                }
}
END_TEST

/* ------------------------------------------------ LAPACK-style, threads */

/* A, B and C as disjoint blocks of one column-major array, as LAPACK's
 * blocked factorisations pass them: their address ranges interleave. */
START_TEST(disjoint_blocks_of_one_array) {
    enum { LD = 64 };
    float *big = rnd_buf(LD * LD), *big0 = malloc(LD * LD * sizeof *big0);
    memcpy(big0, big, LD * LD * sizeof *big);
    const int m = 20, n = 15, k = 10;
    const float *a = big + 0 + 0 * LD;  /* rows 0..19,  cols 0..9   */
    const float *b = big + 20 + 10 * LD; /* rows 20..29, cols 10..24 */
    float *c = big + 30 + 30 * LD;       /* rows 30..49, cols 30..44 */
    double want[20 * 15], bound[20 * 15];
    reference(COL, false, false, m, n, k, -1.0f, a, LD, b, LD, 1.0f, c, LD, want, bound);
    const char t = 'N';
    const float alpha = -1.0f, beta = 1.0f;
    const int ld = LD;
    sgemm_(&t, &t, &m, &n, &k, &alpha, a, &ld, b, &ld, &beta, c, &ld);
    for (int j = 0; j < LD; j++)
        for (int i = 0; i < LD; i++) {
            bool in_c = i >= 30 && i < 30 + m && j >= 30 && j < 30 + n;
            float got = big[i + j * LD];
            if (!in_c) {
                ck_assert_msg(memcmp(&got, &big0[i + j * LD], sizeof got) == 0, "(%d,%d) outside C changed", i, j);
                continue;
            }
            double w = want[(i - 30) * n + (j - 30)], bd = bound[(i - 30) * n + (j - 30)];
            ck_assert_msg(fabs(got - w) <= bd, "C(%d,%d) = %g, want %g", i - 30, j - 30, (double)got, w);
        }
    free(big), free(big0);
}
END_TEST

static void *thread_body(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int r = 0; r < 6; r++) {
        int m = 3 + id * 7 + r, n = 40 - id - r, k = 9 + r * 5;
        int lda = m, ldb = k, ldc = m;
        float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * n) * sizeof *b);
        float *c = malloc((size_t)(m * n) * sizeof *c);
        for (int i = 0; i < m * k; i++) a[i] = (float)((i * 7 + id) % 11) - 5.0f;
        for (int i = 0; i < k * n; i++) b[i] = (float)((i * 3 + r) % 7) - 3.0f;
        cblas_sgemm(COL, NT, NT, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        /* Small integers: the products and sums are exact in float. */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                float s = 0;
                for (int l = 0; l < k; l++) s += a[i + l * lda] * b[l + j * ldb];
                if (c[i + j * ldc] != s) return (void *)1;
            }
        free(a), free(b), free(c);
    }
    return NULL;
}

/* The first calls race to create the shared context (pthread_once). */
START_TEST(concurrent_first_calls) {
    pthread_t th[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        ck_assert_msg(ret == NULL, "thread %d got a wrong product", i);
    }
}
END_TEST

/* ------------------------------------------------------------- verbose */

/* With TESSERA_BLAS_VERBOSE set (its own test registration), one line per
 * call naming the path taken; without it, a legal call prints nothing. */
START_TEST(verbose_lines) {
    const char *v = getenv("TESSERA_BLAS_VERBOSE");
    bool verbose = v && *v && strcmp(v, "0") != 0;
    const char *d = getenv("TESSERA_BLAS_DISABLE");
    bool disabled = d && *d && strcmp(d, "0") != 0;
    float a[12], b[12], c[9];
    for (int i = 0; i < 12; i++) a[i] = b[i] = rnd();
    /* A first call outside the capture: setting up may log a line of its own. */
    cblas_sgemm(ROW, NT, TR, 3, 3, 4, 1.0f, a, 4, b, 4, 0.0f, c, 3);
    capture_begin();
    cblas_sgemm(ROW, NT, TR, 3, 3, 4, 1.0f, a, 4, b, 4, 0.0f, c, 3);
    const char *text = capture_end();
    if (!verbose) {
        ck_assert_msg(text[0] == '\0', "printed without TESSERA_BLAS_VERBOSE: %s", text);
        return;
    }
#ifdef BLAS_TEST_CHAIN
    (void)disabled;
    const char *path = "-> next-blas";
#else
    const char *path = disabled ? "-> builtin" : "-> tessera gemm.";
#endif
    ck_assert_msg(strstr(text, "tessera_blas: cblas_sgemm row-major NT m=3 n=3 k=4") != NULL, "line: %s", text);
    ck_assert_msg(strstr(text, path) != NULL, "want '%s' in: %s", path, text);
    ck_assert_msg(strchr(text, '\n') == text + strlen(text) - 1, "more than one line: %s", text);
    capture_begin();
    cblas_sgemm(COL, NT, NT, 0, 3, 4, 1.0f, a, 1, b, 4, 0.0f, c, 1);
    text = capture_end();
    ck_assert_msg(strstr(text, "-> quick-return") != NULL, "line: %s", text);
}
END_TEST

int main(void) {
    Suite *s = suite_create("blas");
    TCase *tc = tcase_create("products");
    tcase_add_test(tc, fortran_all_transposes);
    tcase_add_loop_test(tc, cblas_all_transposes, 0, 2);
    tcase_add_loop_test(tc, batch_strided, 0, 2);
    tcase_add_test(tc, disjoint_blocks_of_one_array);
    tcase_add_test(tc, concurrent_first_calls);
    suite_add_tcase(s, tc);
    tc = tcase_create("special");
    tcase_add_test(tc, alpha_zero_and_k_zero);
    tcase_add_test(tc, quick_returns_leave_c_untouched);
    tcase_add_test(tc, beta_zero_ignores_nan_in_c);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, illegal_sgemm);
    tcase_add_test(tc, illegal_cblas);
    tcase_add_test(tc, illegal_batch_strides);
    suite_add_tcase(s, tc);
    tc = tcase_create("verbose");
    tcase_add_test(tc, verbose_lines);
#ifdef BLAS_TEST_CHAIN
    tcase_add_test(tc, system_blas_behind);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
