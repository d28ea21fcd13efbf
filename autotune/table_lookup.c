/* Run-time lookup: exact key by hash, else the nearest tuned shape of the
 * same class in log-space; stale or invalid schedules are skipped. No
 * allocation, no locks: the table is immutable once loaded. On a miss the
 * caller's schedule is left untouched. The nearest search scans the class
 * (microseconds for a thousand records), so each thread remembers its last
 * answers per untuned shape. */
#include <math.h>
#include <string.h>

#include "table_impl.h"

bool tsr_table_knobs_resolve(const char *knobs, const tsr_kernel *k, tsr_schedule *s) {
    memset(s, 0, sizeof *s);
    if (k->num_knobs <= 0 || k->num_knobs > TSR_MAX_KNOBS) return strcmp(knobs, "-") == 0 && k->num_knobs == 0;
    bool seen[TSR_MAX_KNOBS] = {false};
    int found = 0;
    const char *p = knobs;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq) return false;
        size_t name_len = (size_t)(eq - p);
        int idx = -1;
        for (int i = 0; i < k->num_knobs; i++)
            if (strlen(k->knobs[i].name) == name_len && memcmp(k->knobs[i].name, p, name_len) == 0) idx = i;
        if (idx < 0 || seen[idx]) return false; /* a knob this kernel no longer has */
        /* The parser has checked the syntax: an optional '-' and digits. */
        const char *v = eq + 1;
        bool neg = *v == '-';
        long long val = 0;
        if (neg) v++;
        for (; *v >= '0' && *v <= '9'; v++)
            if ((val = val * 10 + (*v - '0')) > 2147483647LL) return false;
        if (neg) val = -val;
        bool legal = false;
        for (int j = 0; j < k->knobs[idx].num_values; j++)
            if (k->knobs[idx].values[j] == val) legal = true;
        if (!legal) return false; /* a value this kernel no longer offers */
        s->v[idx] = (int)val;
        seen[idx] = true;
        found++;
        if (*v == ',') v++;
        else if (*v) return false;
        p = v;
    }
    return found == k->num_knobs;
}

/* "op dtypes layout variant kernel" into out; its length, or 0 if too long. */
static size_t class_string(const tsr_pkey *key, const char *kernel, char *out, size_t n) {
    const char *parts[5] = {tsr_op_name(key->op), key->dtypes, key->layout, key->variant, kernel};
    size_t pos = 0;
    for (int i = 0; i < 5; i++) {
        size_t l = strlen(parts[i]);
        if (pos + l + 2 >= n) return 0;
        if (i) out[pos++] = ' ';
        memcpy(out + pos, parts[i], l);
        pos += l;
    }
    out[pos] = '\0';
    return pos;
}

/* The record's parsed knobs as a schedule of k: exactly k's knob names
 * (any order) with values k still offers. */
static bool resolve(const tsr_trec *r, const tsr_kernel *k, tsr_schedule *s) {
    if (r->num_knobs != k->num_knobs || k->num_knobs > TSR_MAX_KNOBS) return false;
    memset(s, 0, sizeof *s);
    for (int i = 0; i < k->num_knobs; i++) {
        const tsr_knob *kn = &k->knobs[i];
        int j = i; /* usually in the kernel's order */
        if (strcmp(r->knob_names[j], kn->name) != 0)
            for (j = 0; j < r->num_knobs && strcmp(r->knob_names[j], kn->name) != 0; j++) {}
        if (j == r->num_knobs) return false;
        int v = r->knob_values[j];
        bool legal = false;
        for (int q = 0; q < kn->num_values && !legal; q++) legal = kn->values[q] == v;
        if (!legal) return false;
        s->v[i] = v;
    }
    return true;
}

static bool usable(const tsr_trec *r, const tsr_problem *p, const tsr_context *ctx, const tsr_kernel *k,
                   tsr_schedule *s) {
    if (!resolve(r, k, s)) {
        tsr_log(TSR_LOG_DEBUG, "table: stale record for %s ignored (knobs %s)", k->name, r->v.knobs);
        return false;
    }
    if (ctx && k->schedule_valid && !k->schedule_valid(p, ctx, s)) {
        tsr_log(TSR_LOG_DEBUG, "table: %s rejects the schedule %s for this problem", k->name, r->v.knobs);
        return false;
    }
    return true;
}

#define NEAREST_TRIES 8

/* A thread's memo of nearest answers: 64 sets of 4 ways, by key hash. An
 * entry names its table by serial (a freed table's address can be reused)
 * and its shape by two independent 64-bit hashes of the key; a remembered
 * record is still checked by usable(), so even a collision could only
 * cost time, never give a schedule the kernel rejects. */
#define MEMO_SETS 64
#define MEMO_WAYS 4
typedef struct nearest_memo {
    uint64_t serial, hash, hash2;
    const tsr_kernel *kernel;
    const tsr_context *ctx;
    int rec; /* -1: no usable record */
} nearest_memo;
static _Thread_local nearest_memo memo[MEMO_SETS][MEMO_WAYS];
static _Thread_local unsigned char memo_next[MEMO_SETS]; /* round-robin victim */

/* FNV-1a: independent of tsr_table_hash. */
static uint64_t hash2_of(const char *s, size_t n) { return tsr_fnv1a(s, n, 0); }

static nearest_memo *memo_find(const tsr_table *t, uint64_t h, uint64_t h2, const tsr_kernel *k,
                               const tsr_context *ctx) {
    nearest_memo *set = memo[h % MEMO_SETS];
    for (int w = 0; w < MEMO_WAYS; w++)
        if (set[w].serial == t->serial && set[w].hash == h && set[w].hash2 == h2 && set[w].kernel == k &&
            set[w].ctx == ctx)
            return &set[w];
    return NULL;
}

static void memo_store(const tsr_table *t, uint64_t h, uint64_t h2, const tsr_kernel *k, const tsr_context *ctx,
                       int rec) {
    unsigned char *next = &memo_next[h % MEMO_SETS];
    memo[h % MEMO_SETS][*next] = (nearest_memo){t->serial, h, h2, k, ctx, rec};
    *next = (unsigned char)((*next + 1) % MEMO_WAYS);
}

/* The nearest usable record of group g to key, by a scan; -1 when none. */
static int nearest_scan(const tsr_table *t, const tsr_tgroup *g, const tsr_trec *exact, const tsr_pkey *key,
                        const tsr_problem *p, const tsr_context *ctx, const tsr_kernel *k, tsr_schedule *s) {
    double logd[TSR_PKEY_MAX_DIMS];
    for (int d = 0; d < key->ndims; d++) logd[d] = log(key->dims[d] > 1 ? (double)key->dims[d] : 1.0);
    uint64_t sig = tsr_table_dims_sig(key->ndims, key->dim_names);
    /* The nearest shape; when its schedule is stale or invalid here, the
     * next nearest, a few times. Ties go to the record listed first. */
    const tsr_trec *rejected[NEAREST_TRIES];
    for (int tries = 0; tries < NEAREST_TRIES; tries++) {
        double best = TSR_TABLE_NEAREST_MAX * TSR_TABLE_NEAREST_MAX;
        const tsr_trec *pick = NULL;
        for (int m = 0; m < g->count; m++) {
            const tsr_trec *r = &t->recs[t->members[g->first + m]];
            if (r == exact || r->dims_sig != sig || r->v.ndims != key->ndims) continue;
            double dist = 0.0;
            for (int d = 0; d < key->ndims; d++) dist += (r->logd[d] - logd[d]) * (r->logd[d] - logd[d]);
            if (dist > best || (pick && dist == best)) continue;
            bool seen = false;
            for (int q = 0; q < tries && !seen; q++) seen = rejected[q] == r;
            if (seen) continue;
            best = dist;
            pick = r;
        }
        if (!pick) return -1;
        if (usable(pick, p, ctx, k, s)) return (int)(pick - t->recs);
        rejected[tries] = pick;
    }
    return -1;
}

tsr_table_hit tsr_table_lookup(const tsr_table *t, const tsr_problem *p, const tsr_context *ctx,
                               const tsr_kernel *k, tsr_schedule *s) {
    if (!t || !p || !k || !s || t->n == 0) return TSR_TABLE_MISS;
    tsr_pkey key;
    if (tsr_problem_key(p, &key) != TSR_OK) return TSR_TABLE_MISS;
    char buf[TSR_TABLE_MAX_LINE];
    size_t cl = class_string(&key, k->name, buf, sizeof buf - 256);
    if (!cl) return TSR_TABLE_MISS;
    uint64_t cls_hash = tsr_table_hash(buf, cl);
    buf[cl] = '|';
    size_t kl = cl + 1 + tsr_pkey_shape(&key, buf + cl + 1, sizeof buf - cl - 1);
    uint64_t h = tsr_table_hash(buf, kl);

    const tsr_trec *exact = NULL;
    size_t mask = t->num_slots - 1;
    for (size_t i = (size_t)h & mask; t->slots[i] >= 0; i = (i + 1) & mask) {
        const tsr_trec *r = &t->recs[t->slots[i]];
        if (r->key_hash == h && strcmp(r->key, buf) == 0) {
            exact = r;
            break;
        }
    }
    tsr_schedule cand;
    if (exact && usable(exact, p, ctx, k, &cand)) {
        *s = cand;
        return TSR_TABLE_EXACT;
    }

    const uint64_t h2 = hash2_of(buf, kl);
    nearest_memo *m = memo_find(t, h, h2, k, ctx);
    if (m && (m->rec < 0 || usable(&t->recs[m->rec], p, ctx, k, &cand))) {
        if (m->rec < 0) return TSR_TABLE_MISS;
        *s = cand;
        return TSR_TABLE_NEAREST;
    }

    buf[cl] = '\0';
    const tsr_tgroup *g = NULL;
    mask = t->num_groups - 1;
    for (size_t i = (size_t)cls_hash & mask; t->groups[i].count; i = (i + 1) & mask)
        if (t->groups[i].hash == cls_hash && strcmp(t->recs[t->members[t->groups[i].first]].cls, buf) == 0) {
            g = &t->groups[i];
            break;
        }
    int rec = g ? nearest_scan(t, g, exact, &key, p, ctx, k, &cand) : -1;
    memo_store(t, h, h2, k, ctx, rec);
    if (rec < 0) return TSR_TABLE_MISS; /* s untouched */
    *s = cand;
    return TSR_TABLE_NEAREST;
}
