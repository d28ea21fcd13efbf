/* The tuner, driven through fake kernels defined here: wrong candidates are
 * discarded (and never timed), invalid ones never run, failing ones are
 * reported, the budget and Ctrl-C stop the search, and the winner goes
 * through the table to a context. Plus a real-kernel smoke run. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../autotune/table.h"
#include "../autotune/tuner.h"
#include "internal.h"
#include "testutil.h"

/* ------------------------------------------------------------ fake kernels */

static const int tile_values[] = {1, 2, 3, 4};
static const int spin_values[] = {0, 1, 2};
static const tsr_knob fake_knobs[] = {{"tile", 4, tile_values}, {"spin", 3, spin_values}};
static int runs[5][3]; /* calls per (tile, spin) */

static void busy_wait_us(double us) {
    double end = tsr_now() + us * 1e-6;
    while (tsr_now() < end) {}
}

static const tsr_kernel *reference_gemm(void) {
    const tsr_kernel *k = tsr_registry_find("gemm.ref");
    ck_assert_ptr_nonnull(k);
    return k;
}

/* tile 3 is WRONG, and the fastest: without the check it would win.
 * tile 4 with spin 0 fails; tile 4 with spin 2 is invalid. The others are
 * right and cost (spin + 1) * 20 us extra. */
static tsr_status fake_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    int tile = s->v[0], spin = s->v[1];
    if (tile >= 1 && tile <= 4 && spin >= 0 && spin <= 2) runs[tile][spin]++;
    if (tile == 4 && spin == 0) return tsr_fail(TSR_ERR_INTERNAL, "fake: tile 4 without spin crashes");
    tsr_status st = reference_gemm()->run(ctx, p, s);
    if (st) return st;
    if (tile == 3) {
        float *c = p->u.gemm.c;
        c[p->u.gemm.d.m * p->u.gemm.d.ldc / 2] += 0.5f; /* one element off */
        return TSR_OK;
    }
    busy_wait_us(20.0 * (spin + 1));
    return TSR_OK;
}
static bool fake_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p, (void)ctx;
    return !(s->v[0] == 4 && s->v[1] == 2);
}
static void fake_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)p, (void)ctx;
    s->v[0] = 2, s->v[1] = 1;
}
static const tsr_kernel fake = {
    .name = "gemm.test_tuner_fake", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_CPU, .arch = "test",
    .supports = tsr_supports_any_cpu, .num_knobs = 2, .knobs = fake_knobs,
    .default_schedule = fake_default, .schedule_valid = fake_valid, .run = fake_run,
};

/* A big space (8^3) of correct, slow candidates: for budgets and sampling. */
static const int eight[] = {1, 2, 3, 4, 5, 6, 7, 8};
static const tsr_knob big_knobs[] = {{"a", 8, eight}, {"b", 8, eight}, {"c", 8, eight}};
static double big_sleep_us;
static int big_runs[9][9][9];
static tsr_status big_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    big_runs[s->v[0]][s->v[1]][s->v[2]]++;
    if (big_sleep_us > 0) {
        struct timespec ts = {0, (long)(big_sleep_us * 1000)};
        nanosleep(&ts, NULL);
    }
    return reference_gemm()->run(ctx, p, s);
}
static void big_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)p, (void)ctx;
    s->v[0] = s->v[1] = s->v[2] = 4;
}
static const tsr_kernel big = {
    .name = "gemm.test_tuner_big", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_CPU, .arch = "test",
    .supports = tsr_supports_any_cpu, .num_knobs = 3, .knobs = big_knobs,
    .default_schedule = big_default, .run = big_run,
};

/* ---------------------------------------------------------------- helpers */

typedef struct events {
    int candidates, wrong, failed, done;
    char last_wrong[400];
    int stop_after;
    volatile sig_atomic_t *stop;
} events;

static void on_event(const tsr_tune_event *ev, void *user) {
    events *e = user;
    switch (ev->kind) {
    case TSR_TUNE_EV_CANDIDATE: e->candidates++; break;
    case TSR_TUNE_EV_WRONG:
        e->wrong++;
        snprintf(e->last_wrong, sizeof e->last_wrong, "%s", ev->detail);
        ck_assert_int_eq(ev->schedule->v[0], 3);
        break;
    case TSR_TUNE_EV_FAILED: e->failed++; break;
    case TSR_TUNE_EV_KERNEL_DONE: e->done++; break;
    }
    if (e->stop && e->stop_after && e->candidates >= e->stop_after) *e->stop = 1;
}

static tsr_context *cpu(void) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    return ctx;
}

static void quick_options(tsr_tune_options *o, const tsr_kernel *const *ks, events *ev) {
    tsr_tune_options_init(o);
    o->kernels = ks;
    o->num_kernels = 1;
    o->candidate_s = 0.002;
    o->min_reps = 2;
    o->max_reps = 4;
    o->on_event = on_event;
    o->user = ev;
}

static char *make_dir(void) {
    char *d = strdup("/tmp/tsr_tuner_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

static void remove_dir(char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ tests */

START_TEST(wrong_candidate_is_discarded) {
    memset(runs, 0, sizeof runs);
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 24, 20, 16, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 7), TSR_OK);
    const tsr_kernel *ks[] = {&fake};
    events ev = {0};
    tsr_tune_options o;
    quick_options(&o, ks, &ev);
    tsr_tune_result r[2];
    int n = 0;
    ck_assert_msg(tsr_tune(&w, &o, r, 2, &n) == TSR_OK, "%s", tsr_last_error());
    ck_assert_int_eq(n, 1);
    /* 12 schedules: 1 invalid, 3 wrong, 1 failing, 7 correct. Exhaustive. */
    ck_assert_double_eq(r[0].space, 12.0);
    ck_assert_int_eq(r[0].invalid, 1);
    ck_assert_int_eq(r[0].tried, 11);
    ck_assert_int_eq(r[0].wrong, 3);
    ck_assert_int_eq(r[0].failed, 1);
    ck_assert_int_eq(ev.wrong, 3);
    ck_assert_int_eq(ev.failed, 1);
    ck_assert_int_eq(ev.candidates, 7);
    ck_assert_int_eq(ev.done, 1);
    ck_assert_msg(strstr(ev.last_wrong, "1 of 480 values differ"), "%s", ev.last_wrong);
    ck_assert(!r[0].out_of_time && !r[0].interrupted);
    /* The winner is correct, whatever the timings were. */
    ck_assert(r[0].found);
    ck_assert_int_ne(r[0].best.v[0], 3);
    ck_assert(!(r[0].best.v[0] == 4 && r[0].best.v[1] != 1));
    ck_assert(r[0].best_us > 0);
    ck_assert(r[0].default_ok);
    ck_assert_int_eq(r[0].def.v[0], 2);
    ck_assert_int_eq(r[0].def.v[1], 1);
    /* Wrong schedules ran once (the check) and were never timed; the
     * invalid one never ran; correct ones ran for the check and a warm-up,
     * then for samples unless the warm-up already showed them hopeless
     * against a faster one (timing: under a sanitizer or load it happens);
     * the heuristic's schedule is always sampled. */
    for (int s = 0; s < 3; s++) ck_assert_int_eq(runs[3][s], 1);
    ck_assert_int_eq(runs[4][0], 1);
    ck_assert_int_eq(runs[4][2], 0);
    ck_assert_int_ge(runs[1][0], 2);
    ck_assert_int_ge(runs[2][1], 3);

    /* The winner goes through the table and comes back for this problem. */
    char line[1024], *dir = make_dir();
    ck_assert_int_eq(tsr_tune_record(&w, &r[0], line, sizeof line), TSR_OK);
    ck_assert_ptr_nonnull(strstr(line, "gemm f32,f32,f32 NN epi=none m=24,n=20,k=16,batch=1 gemm.test_tuner_fake"));
    tsr_device_fp fp;
    tsr_device_fp_from_context(ctx, &fp);
    const char *ls[] = {line};
    ck_assert_int_eq(tsr_table_write_merged(dir, &fp, ls, 1, NULL), TSR_OK);
    setenv("TESSERA_TABLE_DIR", dir, 1);
    tsr_context *fresh = cpu();
    tsr_schedule s;
    ck_assert_msg(tsr_table_schedule(fresh, &w.problem, &fake, &s), "%s", fresh->table_status);
    ck_assert_int_eq(s.v[0], r[0].best.v[0]);
    ck_assert_int_eq(s.v[1], r[0].best.v[1]);
    tsr_table_rec_view v;
    ck_assert(tsr_table_record(fresh->table, 0, &v));
    ck_assert(v.default_us > 0 && v.time_us > 0 && v.tuned > 0);
    tsr_context_destroy(fresh);
    unsetenv("TESSERA_TABLE_DIR");
    remove_dir(dir);
    /* Only a result with a winner makes a record. */
    tsr_tune_result none = r[0];
    none.found = false;
    ck_assert_int_eq(tsr_tune_record(&w, &none, line, sizeof line), TSR_ERR_INVALID_ARGUMENT);
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

static void wrong_default(const tsr_problem *p, const tsr_context *ctx, tsr_schedule *s) {
    (void)p, (void)ctx;
    s->v[0] = 3, s->v[1] = 0;
}

START_TEST(wrong_default_is_reported) {
    memset(runs, 0, sizeof runs);
    tsr_kernel k = fake;
    k.default_schedule = wrong_default;
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 9, 7, 5, 2, true, true, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 8), TSR_OK);
    const tsr_kernel *ks[] = {&k};
    events ev = {0};
    tsr_tune_options o;
    quick_options(&o, ks, &ev);
    tsr_tune_result r;
    int n;
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_OK);
    ck_assert(!r.default_ok);
    ck_assert(r.found);
    ck_assert_int_ne(r.best.v[0], 3);
    ck_assert_int_eq(r.wrong, 3);
    char line[1024];
    ck_assert_int_eq(tsr_tune_record(&w, &r, line, sizeof line), TSR_OK);
    ck_assert_ptr_nonnull(strstr(line, "default_us=0.000"));
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(budget_is_respected) {
    memset(big_runs, 0, sizeof big_runs);
    big_sleep_us = 2000;
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 8, 8, 8, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 9), TSR_OK);
    const tsr_kernel *ks[] = {&big};
    events ev = {0};
    tsr_tune_options o;
    quick_options(&o, ks, &ev);
    o.max_candidates = 500;
    const double budget = 0.3;
    double start = tsr_now();
    o.deadline = start + budget;
    tsr_tune_result r;
    int n;
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_OK);
    double took = tsr_now() - start;
    ck_assert(r.out_of_time);
    ck_assert(!r.interrupted);
    ck_assert(r.found && r.default_ok);
    /* Each candidate costs at least 4 runs of 2 ms: far fewer than the plan. */
    ck_assert_int_lt(r.tried, 500);
    ck_assert_int_ge(r.tried, 1);
    /* Over by at most about one candidate (generous for loaded machines). */
    ck_assert_msg(took < budget + 5.0, "tuning took %.2f s with a %.2f s budget", took, budget);
    printf("tuner: budget %.2f s, took %.2f s, %d candidates\n", budget, took, r.tried);
    /* A deadline already past still measures nothing but stops cleanly. */
    o.deadline = tsr_now() - 1;
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_OK);
    ck_assert(r.out_of_time && !r.found && r.tried == 0);
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
    big_sleep_us = 0;
}
END_TEST

START_TEST(interrupt_keeps_what_finished) {
    big_sleep_us = 0;
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 8, 8, 8, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 9), TSR_OK);
    const tsr_kernel *ks[] = {&big, &fake};
    volatile sig_atomic_t stop = 0;
    events ev = {0};
    ev.stop = &stop;
    ev.stop_after = 3;
    tsr_tune_options o;
    quick_options(&o, ks, &ev);
    o.num_kernels = 2;
    o.stop = &stop;
    tsr_tune_result r[2];
    int n;
    ck_assert_int_eq(tsr_tune(&w, &o, r, 2, &n), TSR_OK);
    ck_assert_int_eq(n, 1); /* the second kernel was not started */
    ck_assert(r[0].interrupted);
    ck_assert_int_eq(r[0].tried, 3);
    ck_assert(r[0].found); /* what finished is kept */
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(sampling_and_climbing) {
    memset(big_runs, 0, sizeof big_runs);
    big_sleep_us = 0;
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 8, 8, 8, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 9), TSR_OK);
    const tsr_kernel *ks[] = {&big};
    events ev = {0};
    tsr_tune_options o;
    quick_options(&o, ks, &ev);
    o.max_candidates = 20;
    o.min_reps = o.max_reps = 1;
    o.warmup = 1;
    tsr_tune_result r;
    int n;
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_OK);
    ck_assert_double_eq(r.space, 512.0);
    ck_assert_int_eq(r.tried, 20);
    ck_assert_int_eq(ev.candidates, 20);
    ck_assert(!r.out_of_time && !r.interrupted && r.found);
    /* 20 distinct schedules were measured, the default among them. */
    int distinct = 0;
    for (int a = 1; a <= 8; a++)
        for (int b = 1; b <= 8; b++)
            for (int c = 1; c <= 8; c++) distinct += big_runs[a][b][c] > 0;
    ck_assert_int_eq(distinct, 20);
    ck_assert_int_gt(big_runs[4][4][4], 0);
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

/* The checker: the reference passes for every dtype pair; a kernel that
 * leaves outputs unwritten fails. */
static tsr_status write_nothing(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)ctx, (void)p, (void)s;
    return TSR_OK;
}

START_TEST(checker) {
    tsr_context *ctx = cpu();
    static const tsr_dtype pairs[][2] = {{TSR_F32, TSR_F32}, {TSR_F16, TSR_F32}, {TSR_F16, TSR_F16},
                                         {TSR_BF16, TSR_F32}, {TSR_BF16, TSR_BF16}, {TSR_I8, TSR_I32}};
    tsr_kernel lazy = fake;
    lazy.run = write_nothing;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        tsr_workload w;
        ck_assert_int_eq(tsr_workload_gemm(&w, 13, 11, 300, 2, i % 2, i % 3 == 0, pairs[i][0], pairs[i][1]), TSR_OK);
        ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 10 + i), TSR_OK);
        char why[400];
        tsr_schedule s = {{0}};
        ck_assert_msg(tsr_tune_check(&w, reference_gemm(), &s, why, sizeof why), "%s", why);
        ck_assert(!tsr_tune_check(&w, &lazy, &s, why, sizeof why));
        /* (an i32 output may equal the -1 sentinel by chance) */
        ck_assert_msg(strstr(why, "of 286 values differ"), "%s", why);
        /* Every kernel dispatch would pick is right on it, too. */
        const tsr_kernel *k = tsr_dispatch_select(ctx, &w.problem, NULL, 0);
        ck_assert_ptr_nonnull(k);
        if (k->default_schedule) k->default_schedule(&w.problem, ctx, &s);
        ck_assert_msg(tsr_tune_check(&w, k, &s, why, sizeof why), "%s: %s", k->name, why);
        tsr_workload_release(&w);
    }
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(rotation_for_memory_bound) {
    tsr_context *ctx = cpu();
    tsr_workload w;
    /* 1 x 512 x 1024: 2 MiB of B, 0.5 flop per byte. */
    ck_assert_int_eq(tsr_workload_gemm(&w, 1, 512, 1024, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, (size_t)8 << 20, 1), TSR_OK);
    ck_assert_int_eq(w.num_sets, 8); /* 16 MiB / 2.006 MiB, rounded up */
    tsr_problem p0, p1;
    tsr_workload_problem(&w, 0, &p0);
    tsr_workload_problem(&w, 1, &p1);
    ck_assert_ptr_ne(p0.u.gemm.b, p1.u.gemm.b);
    tsr_tune_options o;
    tsr_tune_options_init(&o);
    o.candidate_s = 0.01;
    tsr_measurement m;
    tsr_schedule s = {{0}};
    ck_assert_int_eq(tsr_tune_time(&w, reference_gemm(), &s, &o, 0, &m), TSR_OK);
    ck_assert(m.median_us > 0 && m.samples >= o.min_reps && m.spread >= 0);
    tsr_workload_release(&w);
    /* Compute-bound: one set. */
    ck_assert_int_eq(tsr_workload_gemm(&w, 64, 64, 64, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, (size_t)8 << 20, 1), TSR_OK);
    ck_assert_int_eq(w.num_sets, 1);
    tsr_workload_release(&w);
    ck_assert_uint_gt(tsr_llc_bytes(), 0);
    tsr_context_destroy(ctx);
}
END_TEST

/* Attention: a workload the flash kernel is tuned on, checked against the
 * reference, its record written and read back into the same workload. */
START_TEST(attention_tunes_and_round_trips) {
    tsr_context *ctx = cpu();
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_attention(&w, 1, 4, 2, 3, 67, 24, TSR_CAUSAL_BOTTOM_RIGHT, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 5), TSR_OK);
    tsr_tune_options o;
    tsr_tune_options_init(&o);
    o.candidate_s = 0.005, o.max_candidates = 6;
    tsr_tune_result r;
    int n = 0;
    ck_assert_msg(tsr_tune(&w, &o, &r, 1, &n) == TSR_OK, "%s", tsr_last_error());
    ck_assert_int_eq(n, 1);
    ck_assert_msg(r.found && r.wrong == 0, "%s: found %d wrong %d", r.kernel->name, r.found, r.wrong);
    char line[TSR_TABLE_MAX_LINE], text[TSR_TABLE_MAX_LINE + 1100], h[1024], why[400];
    ck_assert_int_eq(tsr_tune_record(&w, &r, line, sizeof line), TSR_OK);
    ck_assert_msg(strstr(line, "attention") && strstr(line, "causal=bottom_right"), "%s", line);
    tsr_device_fp fp = {"cpu", "x", "y", "", 1};
    tsr_table_header(&fp, h, sizeof h);
    snprintf(text, sizeof text, "%s%s\n", h, line);
    tsr_table *t = NULL;
    ck_assert_msg(tsr_table_parse(text, strlen(text), &fp, &t, why, sizeof why) == TSR_OK, "%s", why);
    tsr_table_rec_view v;
    ck_assert(tsr_table_record(t, 0, &v));
    tsr_workload back;
    ck_assert_msg(tsr_workload_from_record(&back, &v) == TSR_OK, "%s", tsr_last_error());
    const tsr_attention_desc *a = &w.problem.u.attention.d, *b = &back.problem.u.attention.d;
    ck_assert(a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
              a->seq_q == b->seq_q && a->seq_kv == b->seq_kv && a->head_dim == b->head_dim &&
              a->causal == b->causal && a->dtype == b->dtype && a->scale == b->scale);
    ck_assert_str_eq(back.key.variant, w.key.variant);
    /* a record with a mask cannot be rebuilt: said, not guessed */
    v.variant = "d=24,causal=none,mask";
    ck_assert_int_eq(tsr_workload_from_record(&back, &v), TSR_ERR_NOT_SUPPORTED);
    ck_assert_int_eq(tsr_workload_attention(&back, 1, 3, 2, 1, 1, 8, TSR_CAUSAL_NONE, TSR_F32), TSR_ERR_INVALID_ARGUMENT);
    tsr_table_free(t);
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(workload_from_record) {
    char text[2048], why[400];
    tsr_device_fp fp = {"cpu", "x", "y", "", 1};
    char h[1024];
    tsr_table_header(&fp, h, sizeof h);
    snprintf(text, sizeof text,
             "%sgemm f16,f16,f32 TN epi=none m=3,n=4,k=5,batch=2 k.x a=1 time_us=1 default_us=1\n"
             "gemm f32,f32,f32 NN epi=relu m=3,n=4,k=5,batch=1 k.x a=1 time_us=1 default_us=1\n"
             "gemm f32 NN epi=none m=3,n=4,k=5,batch=1 k.x a=1 time_us=1 default_us=1\n"
             "conv2d f32,f32,f32 NHWC.OHWI rs=3x3 n=1 k.x a=1 time_us=1 default_us=1\n",
             h);
    tsr_table *t = NULL;
    ck_assert_msg(tsr_table_parse(text, strlen(text), &fp, &t, why, sizeof why) == TSR_OK, "%s", why);
    tsr_table_rec_view v;
    tsr_workload w;
    ck_assert(tsr_table_record(t, 0, &v));
    ck_assert_int_eq(tsr_workload_from_record(&w, &v), TSR_OK);
    ck_assert_int_eq(w.problem.u.gemm.d.a_dtype, TSR_F16);
    ck_assert_int_eq(w.problem.u.gemm.d.trans_a, TSR_TRANS);
    ck_assert_int_eq(w.problem.u.gemm.d.batch, 2);
    ck_assert_int_eq(w.problem.u.gemm.d.lda, 3); /* A^T stored k x m */
    ck_assert(tsr_table_record(t, 1, &v));
    ck_assert_int_eq(tsr_workload_from_record(&w, &v), TSR_ERR_NOT_SUPPORTED);
    ck_assert(tsr_table_record(t, 2, &v));
    ck_assert_int_eq(tsr_workload_from_record(&w, &v), TSR_ERR_INVALID_ARGUMENT);
    ck_assert(tsr_table_record(t, 3, &v)); /* a conv2d shape without its dims */
    ck_assert_int_eq(tsr_workload_from_record(&w, &v), TSR_ERR_INVALID_ARGUMENT);
    tsr_table_free(t);

    /* a conv2d record as tessera-tune writes it comes back as the same problem */
    tsr_workload cw, back;
    ck_assert_int_eq(tsr_workload_conv(&cw, 2, 6, 9, 11, 8, 3, 3, 2, 1, 2, TSR_BF16), TSR_OK);
    char shape[256];
    tsr_pkey_shape(&cw.key, shape, sizeof shape);
    snprintf(text, sizeof text, "%sconv2d %s %s %s %s k.x a=1 time_us=1 default_us=1\n", h, cw.key.dtypes,
             cw.key.layout, cw.key.variant, shape);
    ck_assert_msg(tsr_table_parse(text, strlen(text), &fp, &t, why, sizeof why) == TSR_OK, "%s", why);
    ck_assert(tsr_table_record(t, 0, &v));
    ck_assert_msg(tsr_workload_from_record(&back, &v) == TSR_OK, "%s", tsr_last_error());
    const tsr_conv2d_desc *a = &cw.problem.u.conv.d, *b = &back.problem.u.conv.d;
    ck_assert(a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k && a->r == b->r &&
              a->s == b->s && a->stride_h == b->stride_h && a->pad_left == b->pad_left && a->groups == b->groups &&
              a->x_dtype == b->x_dtype);
    ck_assert_str_eq(back.key.variant, cw.key.variant);
    /* dilation (which the tuner never writes) is said, not guessed */
    char variant[256];
    snprintf(variant, sizeof variant, "%s", v.variant);
    char *dil = strstr(variant, "dil=1x1");
    ck_assert_ptr_nonnull(dil);
    dil[4] = '2';
    v.variant = variant;
    ck_assert_int_eq(tsr_workload_from_record(&back, &v), TSR_ERR_NOT_SUPPORTED);
    tsr_table_free(t);
}
END_TEST

/* The whole path with the kernel dispatch picks on each context. */
START_TEST(real_kernel_smoke) {
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("tuner", cs, TT_MAX_CONTEXTS);
    for (int c = 0; c < nc; c++) {
        tsr_workload w;
        ck_assert_int_eq(tsr_workload_gemm(&w, 40, 36, 50, 1, false, true, TSR_F32, TSR_F32), TSR_OK);
        ck_assert_int_eq(tsr_workload_setup(&w, cs[c].ctx, 0, 3), TSR_OK);
        tsr_tune_options o;
        tsr_tune_options_init(&o);
        o.max_candidates = 6;
        o.candidate_s = 0.005;
        tsr_tune_result r;
        int n = 0;
        ck_assert_msg(tsr_tune(&w, &o, &r, 1, &n) == TSR_OK, "%s", tsr_last_error());
        if (n == 0) {
            printf("tuner: %s: the kernel it runs has no knobs\n", cs[c].label);
        } else {
            ck_assert(r.found && r.wrong == 0 && r.failed == 0 && r.default_ok);
            ck_assert_int_le(r.tried, 6);
            char line[1024];
            ck_assert_int_eq(tsr_tune_record(&w, &r, line, sizeof line), TSR_OK);
            printf("tuner: %s: %s\n", cs[c].label, line);
        }
        tsr_workload_release(&w);
    }
    tt_contexts_close(cs, nc);
}
END_TEST

START_TEST(bad_arguments) {
    tsr_tune_options o;
    tsr_tune_options_init(&o);
    tsr_tune_result r;
    int n = 5;
    ck_assert_int_eq(tsr_tune(NULL, &o, &r, 1, &n), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(n, 0);
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, 4, 4, 4, 1, false, false, TSR_F32, TSR_F32), TSR_OK);
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_ERR_INVALID_ARGUMENT); /* not set up */
    ck_assert_int_eq(tsr_workload_setup(&w, NULL, 0, 1), TSR_ERR_INVALID_ARGUMENT);
    /* A kernel that does not support the problem is not tuned. */
    tsr_context *ctx = cpu();
    ck_assert_int_eq(tsr_workload_setup(&w, ctx, 0, 1), TSR_OK);
    const tsr_kernel *ks[] = {reference_gemm()};
    o.kernels = ks;
    o.num_kernels = 1;
    ck_assert_int_eq(tsr_tune(&w, &o, &r, 1, &n), TSR_OK);
    ck_assert_int_eq(n, 0); /* the reference has no knobs: nothing to tune */
    tsr_workload_release(&w);
    tsr_context_destroy(ctx);
}
END_TEST

static Suite *tuner_suite(void) {
    Suite *s = suite_create("tuner");
    TCase *tc = tcase_create("tuner");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, wrong_candidate_is_discarded);
    tcase_add_test(tc, wrong_default_is_reported);
    tcase_add_test(tc, budget_is_respected);
    tcase_add_test(tc, interrupt_keeps_what_finished);
    tcase_add_test(tc, sampling_and_climbing);
    tcase_add_test(tc, checker);
    tcase_add_test(tc, rotation_for_memory_bound);
    tcase_add_test(tc, workload_from_record);
    tcase_add_test(tc, attention_tunes_and_round_trips);
    tcase_add_test(tc, real_kernel_smoke);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    /* Never read or write the user's real tables. */
    unsetenv("TESSERA_TUNE");
    unsetenv("TESSERA_TABLE_DIR");
    char dir[] = "/tmp/tsr_tuner_home_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_CACHE_HOME", dir, 1);
    int rc = tt_run_suite(tuner_suite());
    rmdir(dir);
    return rc;
}
