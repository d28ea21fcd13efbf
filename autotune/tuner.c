/* The search: the heuristic's schedule first (the baseline every record
 * stores), then every schedule when the space is small, else rounds of a
 * random sample followed by a hill-climb (each knob one step up or down)
 * from the best so far. Each candidate is checked against the reference
 * before it is timed; a wrong one is reported and never kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table_impl.h"
#include "tuner.h"

void tsr_tune_options_init(tsr_tune_options *o) {
    memset(o, 0, sizeof *o);
    o->candidate_s = 0.2;
    o->max_candidates = 48;
    o->warmup = 1;
    o->min_reps = 3;
    o->max_reps = 25;
    o->seed = 1;
    o->confirm = true;
}

/* ------------------------------------------------------------------ check */

enum { CHECK_OK, CHECK_WRONG, CHECK_FAILED };

static int check(tsr_workload *w, const tsr_kernel *k, const tsr_schedule *s, char *why, size_t n) {
    tsr_context *ctx = w->ctx;
    tsr_problem p;
    tsr_workload_problem(w, 0, &p);
    tsr_status st = TSR_OK;
    for (int i = 0; i < w->num_bufs && st == TSR_OK; i++)
        if (w->is_output[i]) st = tsr_memcpy(ctx, w->dev[i], w->host[i], w->bytes[i], TSR_MEMCPY_HOST_TO_DEVICE);
    if (st == TSR_OK) st = k->run(ctx, &p, s);
    if (st == TSR_OK) st = tsr_synchronize(ctx);
    if (st != TSR_OK) {
        snprintf(why, n, "%s: %s", tsr_status_string(st), tsr_last_error());
        return CHECK_FAILED;
    }
    size_t bytes = w->bytes[w->check_buf];
    st = tsr_memcpy(ctx, w->got, w->dev[w->check_buf], bytes, TSR_MEMCPY_DEVICE_TO_HOST);
    if (st != TSR_OK) {
        snprintf(why, n, "reading the output back: %s", tsr_last_error());
        return CHECK_FAILED;
    }
    tsr_dtype t = w->dtype[w->check_buf];
    int64_t count = (int64_t)(bytes / tsr_dtype_size(t)), bad = 0, first = -1;
    double worst = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double got, want;
        if (t == TSR_I32) got = ((const int32_t *)w->got)[i], want = ((const int32_t *)w->ref_out)[i];
        else if (t == TSR_I8) got = ((const int8_t *)w->got)[i], want = ((const int8_t *)w->ref_out)[i];
        else got = tsr_load_f(w->got, t, i), want = tsr_load_f(w->ref_out, t, i);
        if (isnan(want) && isnan(got)) continue;
        double err = fabs(got - want);
        if (err <= w->atol + w->rtol * fabs(want)) continue; /* false for NaN: counted */
        if (!bad) first = i;
        bad++;
        if (!(err <= worst)) worst = err;
    }
    if (!bad) return CHECK_OK;
    snprintf(why, n, "%lld of %lld values differ from the reference (first at %lld: got %g, want %g; max |err| %g)",
             (long long)bad, (long long)count, (long long)first,
             t == TSR_I32 ? (double)((const int32_t *)w->got)[first] : tsr_load_f(w->got, t, first),
             t == TSR_I32 ? (double)((const int32_t *)w->ref_out)[first] : tsr_load_f(w->ref_out, t, first), worst);
    return CHECK_WRONG;
}

bool tsr_tune_check(tsr_workload *w, const tsr_kernel *k, const tsr_schedule *s, char *why, size_t why_len) {
    char local[8];
    if (!why || !why_len) why = local, why_len = sizeof local;
    why[0] = '\0';
    return check(w, k, s, why, why_len) == CHECK_OK;
}

/* ----------------------------------------------------------------- timing */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q) {
    double pos = q * (n - 1);
    int i = (int)pos;
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + (pos - i) * (sorted[i + 1] - sorted[i]);
}

#define MAX_SAMPLES 64

tsr_status tsr_tune_time(tsr_workload *w, const tsr_kernel *k, const tsr_schedule *s, const tsr_tune_options *o,
                         double give_up_us, tsr_measurement *m) {
    memset(m, 0, sizeof *m);
    int sets = w->num_sets > 0 ? w->num_sets : 1;
    tsr_problem *probs = malloc(sizeof *probs * (size_t)sets);
    if (!probs) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    for (int i = 0; i < sets; i++) tsr_workload_problem(w, i, &probs[i]);
    tsr_context *ctx = w->ctx;
    tsr_status st = TSR_OK;
    int turn = 0;
    /* Warm-up: caches, page faults, lazily built state. The last one tells
     * how many calls one sample needs to be well above the clock's grain. */
    double warm = 0.0;
    int warmups = o->warmup > 0 ? o->warmup : 1;
    for (int i = 0; i < warmups && st == TSR_OK; i++) {
        double t0 = tsr_now();
        st = k->run(ctx, &probs[turn++ % sets], s);
        if (st == TSR_OK) st = tsr_synchronize(ctx);
        warm = tsr_now() - t0;
    }
    int inner = 1;
    if (warm < 100e-6) inner = (int)ceil(100e-6 / (warm > 1e-7 ? warm : 1e-7));
    if (inner > 1000) inner = 1000;
    if (st == TSR_OK && give_up_us > 0 && warm * 1e6 > 2.0 * give_up_us) m->abandoned = true;

    double samples[MAX_SAMPLES];
    int max_reps = o->max_reps > 0 ? (o->max_reps < MAX_SAMPLES ? o->max_reps : MAX_SAMPLES) : 25;
    int min_reps = o->min_reps > 0 ? (o->min_reps < max_reps ? o->min_reps : max_reps) : 1;
    double start = tsr_now();
    int n = 0;
    while (st == TSR_OK && !m->abandoned && n < max_reps) {
        double t0 = tsr_now();
        for (int j = 0; j < inner && st == TSR_OK; j++) st = k->run(ctx, &probs[turn++ % sets], s);
        if (st == TSR_OK) st = tsr_synchronize(ctx);
        double t = (tsr_now() - t0) / inner;
        samples[n++] = t * 1e6;
        if (n == 1 && give_up_us > 0 && samples[0] > give_up_us) m->abandoned = true;
        double now = tsr_now();
        if (n >= min_reps && now - start >= o->candidate_s) break;
        if (o->deadline > 0 && now >= o->deadline) break; /* keep what we have */
        if (o->stop && *o->stop) break;
    }
    free(probs);
    if (st != TSR_OK) return st;
    if (n == 0) { /* abandoned after the warm-up */
        m->median_us = warm * 1e6;
        return TSR_OK;
    }
    qsort(samples, (size_t)n, sizeof samples[0], cmp_double);
    m->samples = n;
    m->median_us = quantile(samples, n, 0.5);
    m->spread = m->median_us > 0 ? 100.0 * (quantile(samples, n, 0.75) - quantile(samples, n, 0.25)) / m->median_us
                                 : 0.0;
    return TSR_OK;
}

/* ----------------------------------------------------------------- search */

typedef struct search {
    tsr_workload *w;
    const tsr_tune_options *o;
    const tsr_kernel *k;
    tsr_tune_result *r;
    int nk;                  /* knobs */
    tsr_schedule *seen;      /* every schedule considered, valid or not */
    int num_seen, cap_seen;
    int best_idx[TSR_MAX_KNOBS];
    int planned;
    uint64_t rng;
    bool halt;
} search;

static uint64_t rnd(search *S) {
    uint64_t z = (S->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void from_idx(const search *S, const int *idx, tsr_schedule *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < S->nk; i++) s->v[i] = S->k->knobs[i].values[idx[i]];
}

/* The index of each knob's value (the nearest legal one when the heuristic
 * picked a value outside the list). */
static void to_idx(const search *S, const tsr_schedule *s, int *idx) {
    for (int i = 0; i < S->nk; i++) {
        const tsr_knob *kn = &S->k->knobs[i];
        int best = 0;
        for (int j = 1; j < kn->num_values; j++)
            if (fabs((double)kn->values[j] - s->v[i]) < fabs((double)kn->values[best] - s->v[i])) best = j;
        idx[i] = best;
    }
}

static bool already_seen(search *S, const tsr_schedule *s) {
    for (int i = 0; i < S->num_seen; i++)
        if (memcmp(S->seen[i].v, s->v, sizeof(int) * (size_t)S->nk) == 0) return true;
    if (S->num_seen == S->cap_seen) {
        int cap = S->cap_seen ? S->cap_seen * 2 : 64;
        tsr_schedule *grown = realloc(S->seen, sizeof *grown * (size_t)cap);
        if (!grown) return true; /* out of memory: treat as seen, the search winds down */
        S->seen = grown, S->cap_seen = cap;
    }
    S->seen[S->num_seen++] = *s;
    return false;
}

static void emit(search *S, tsr_tune_event_kind kind, const tsr_schedule *s, double t, const char *detail) {
    if (!S->o->on_event) return;
    tsr_tune_event ev = {kind, S->k, s, S->r->tried, S->planned, t, S->r->found ? S->r->best_us : 0.0, detail};
    S->o->on_event(&ev, S->o->user);
}

static bool should_halt(search *S) {
    if (S->halt) return true;
    if (S->o->stop && *S->o->stop) S->r->interrupted = S->halt = true;
    else if (S->o->deadline > 0 && tsr_now() >= S->o->deadline) S->r->out_of_time = S->halt = true;
    else if (S->r->tried >= S->planned) S->halt = true;
    return S->halt;
}

/* Checks, then times one schedule. false once the search must stop. */
static bool evaluate(search *S, const tsr_schedule *s, bool is_default) {
    if (should_halt(S)) return false;
    if (already_seen(S, s)) return true;
    tsr_tune_result *r = S->r;
    tsr_problem p;
    tsr_workload_problem(S->w, 0, &p);
    /* The heuristic's own schedule is what dispatch runs today: measured
     * even if schedule_valid() would not offer it. */
    if (!is_default && S->k->schedule_valid && !S->k->schedule_valid(&p, S->w->ctx, s)) {
        r->invalid++;
        return true;
    }
    r->tried++;
    char why[400];
    int c = check(S->w, S->k, s, why, sizeof why);
    if (c != CHECK_OK) {
        if (c == CHECK_WRONG) r->wrong++;
        else r->failed++;
        tsr_log(TSR_LOG_WARN, "tune: %s %s schedule is %s: %s", S->k->name, is_default ? "default" : "candidate",
                c == CHECK_WRONG ? "WRONG" : "failing", why);
        emit(S, c == CHECK_WRONG ? TSR_TUNE_EV_WRONG : TSR_TUNE_EV_FAILED, s, 0.0, why);
        return true;
    }
    tsr_measurement m;
    /* A candidate three times slower than the best is not worth its reps. */
    tsr_status st = tsr_tune_time(S->w, S->k, s, S->o, r->found ? 3.0 * r->best_us : 0.0, &m);
    if (st != TSR_OK) {
        r->failed++;
        snprintf(why, sizeof why, "%s: %s", tsr_status_string(st), tsr_last_error());
        emit(S, TSR_TUNE_EV_FAILED, s, 0.0, why);
        return true;
    }
    if (is_default) {
        r->default_ok = true;
        r->def = *s;
        r->default_us = m.median_us;
    }
    if (!m.abandoned && (!r->found || m.median_us < r->best_us)) {
        r->found = true;
        r->best = *s;
        r->best_us = m.median_us;
        r->spread = m.spread;
        to_idx(S, s, S->best_idx);
    }
    emit(S, TSR_TUNE_EV_CANDIDATE, s, m.median_us, NULL);
    return true;
}

static void exhaustive(search *S) {
    int idx[TSR_MAX_KNOBS] = {0};
    for (;;) {
        tsr_schedule s;
        from_idx(S, idx, &s);
        if (!evaluate(S, &s, false)) return;
        int i = 0;
        while (i < S->nk && ++idx[i] == S->k->knobs[i].num_values) idx[i++] = 0;
        if (i == S->nk) return;
    }
}

/* Up to want new schedules drawn at random; false when none could be found. */
static bool sample(search *S, int want) {
    int before = S->r->tried + S->r->invalid, attempts = 0;
    while (S->r->tried + S->r->invalid - before < want && attempts++ < 20 * want + 20) {
        int idx[TSR_MAX_KNOBS];
        for (int i = 0; i < S->nk; i++) idx[i] = (int)(rnd(S) % (uint64_t)S->k->knobs[i].num_values);
        tsr_schedule s;
        from_idx(S, idx, &s);
        if (!evaluate(S, &s, false)) break;
    }
    return S->r->tried + S->r->invalid > before;
}

/* Hill-climb: try every one-step neighbour of the best; move while it improves. */
static void climb(search *S) {
    for (;;) {
        if (!S->r->found) return;
        double before = S->r->best_us;
        int center[TSR_MAX_KNOBS];
        memcpy(center, S->best_idx, sizeof center);
        int order[2 * TSR_MAX_KNOBS], n = 0;
        for (int i = 0; i < 2 * S->nk; i++) order[n++] = i;
        for (int i = n - 1; i > 0; i--) { /* random order: no knob is favoured */
            int j = (int)(rnd(S) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int q = 0; q < n; q++) {
            int knob = order[q] / 2, step = order[q] % 2 ? 1 : -1;
            int idx[TSR_MAX_KNOBS];
            memcpy(idx, center, sizeof idx);
            idx[knob] += step;
            if (idx[knob] < 0 || idx[knob] >= S->k->knobs[knob].num_values) continue;
            tsr_schedule s;
            from_idx(S, idx, &s);
            if (!evaluate(S, &s, false)) return;
        }
        if (!(S->r->best_us < before)) return;
    }
}

/* The minimum of many noisy medians flatters the winner. Re-time it and
 * the heuristic's schedule head to head, alternating; the heuristic stays
 * unless the winner still beats it. */
static void confirm(search *S) {
    tsr_tune_result *r = S->r;
    if (!r->found || !r->default_ok || !S->o->confirm) return;
    if (memcmp(r->best.v, r->def.v, sizeof(int) * (size_t)S->nk) == 0) {
        r->default_us = r->best_us;
        return;
    }
    tsr_tune_options o = *S->o;
    /* Worth a little overtime: one round when the budget is spent, else two. */
    int rounds = o.deadline > 0 && tsr_now() >= o.deadline ? 1 : 2;
    o.deadline = 0;
    double best = 0, def = 0, spread = 0;
    for (int round = 0; round < rounds; round++) {
        tsr_measurement mb, md;
        if (tsr_tune_time(S->w, S->k, &r->best, &o, 0, &mb) != TSR_OK ||
            tsr_tune_time(S->w, S->k, &r->def, &o, 0, &md) != TSR_OK)
            return; /* keep the search's numbers */
        if (round == 0 || mb.median_us < best) best = mb.median_us, spread = mb.spread;
        if (round == 0 || md.median_us < def) def = md.median_us;
    }
    r->default_us = def;
    if (best < def) {
        r->best_us = best;
        r->spread = spread;
    } else {
        r->best = r->def;
        r->best_us = def;
    }
}

static void tune_kernel(tsr_workload *w, const tsr_tune_options *o, const tsr_kernel *k, tsr_tune_result *r) {
    memset(r, 0, sizeof *r);
    r->kernel = k;
    search S;
    memset(&S, 0, sizeof S);
    S.w = w, S.o = o, S.k = k, S.r = r;
    S.nk = k->num_knobs < TSR_MAX_KNOBS ? k->num_knobs : TSR_MAX_KNOBS;
    S.rng = o->seed ^ tsr_table_hash(k->name, strlen(k->name));
    r->space = 1.0;
    for (int i = 0; i < S.nk; i++) r->space *= k->knobs[i].num_values > 0 ? k->knobs[i].num_values : 0;
    int max = o->max_candidates > 0 ? o->max_candidates : 48;
    bool all = r->space <= max;
    S.planned = all ? (int)r->space + 1 : max;
    if (r->space < 1) return; /* a knob without values: nothing to choose */

    tsr_problem p;
    tsr_workload_problem(w, 0, &p);
    tsr_schedule def;
    memset(&def, 0, sizeof def);
    if (k->default_schedule) k->default_schedule(&p, w->ctx, &def);
    evaluate(&S, &def, true);
    if (all) {
        exhaustive(&S);
    } else {
        int round = max / 4 > 4 ? max / 4 : 4;
        while (!should_halt(&S)) {
            bool fresh = sample(&S, round);
            climb(&S);
            if (!fresh) break; /* the sampler finds nothing new: the space is used up */
        }
    }
    if (!r->interrupted) confirm(&S);
    free(S.seen);
    emit(&S, TSR_TUNE_EV_KERNEL_DONE, r->found ? &r->best : NULL, r->best_us, NULL);
}

tsr_status tsr_tune(tsr_workload *w, const tsr_tune_options *o, tsr_tune_result *results, int max, int *count) {
    if (count) *count = 0;
    if (!w || !w->ctx || !o || !results || max < 1 || !count)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: workload (set up), options and results are required");
    tsr_problem p;
    tsr_workload_problem(w, 0, &p);
    const tsr_kernel *picked[1];
    const tsr_kernel *const *ks = o->kernels;
    int nk = o->num_kernels;
    char why[256] = "";
    if (!ks) {
        /* Only the kernel dispatch would run is worth tuning. */
        picked[0] = tsr_dispatch_select(w->ctx, &p, why, sizeof why);
        if (!picked[0]) return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: %s", why);
        ks = picked, nk = 1;
    }
    int supported = 0;
    for (int i = 0; i < nk && *count < max; i++) {
        const tsr_kernel *k = ks[i];
        if (!k || !tsr_kernel_supports(k, &p, w->ctx, why, sizeof why)) continue;
        supported++;
        if (k->num_knobs <= 0) continue; /* nothing to tune */
        tune_kernel(w, o, k, &results[(*count)++]);
        if (results[*count - 1].interrupted) break;
    }
    if (!supported) return tsr_fail(TSR_ERR_NOT_SUPPORTED, "tune: no given kernel supports the problem (%s)", why);
    return TSR_OK;
}

tsr_status tsr_tune_record(const tsr_workload *w, const tsr_tune_result *r, char *out, size_t n) {
    if (!r->found) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: %s has no correct winner to record", r->kernel->name);
    return tsr_table_format_record(&w->key, r->kernel, &r->best, r->best_us, r->default_ok ? r->default_us : 0.0,
                                   r->spread, (int64_t)time(NULL), out, n);
}
