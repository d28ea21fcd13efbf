/* Run-time lookup: exact key by hash, else the nearest tuned shape of the
 * same class in log-space whose schedule clearly beat the heuristic there;
 * stale or invalid schedules are skipped. No
 * allocation, no locks: the table is immutable once loaded. On a miss the
 * caller's schedule is left untouched. Each thread remembers its last
 * answers per key (the memo below): the key's text, its hash, the probe and
 * the record's knobs cost an exact hit ~150 ns a call, and the nearest
 * search scans the class (microseconds for a thousand records). */
#include <math.h>
#include <stddef.h>
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

/* A thread's memo of answers: 64 sets of 4 ways, by key hash. An entry
 * names its table by serial (a freed table's address can be reused) and its
 * key by two independent 64-bit hashes of the key's fields (pkey_hashes),
 * and holds the answer: the hit and the schedule, already resolved against
 * the kernel's knobs. A remembered schedule is still checked by the
 * kernel's schedule_valid for the problem at hand, so even a collision
 * could only cost time, never give a schedule the kernel rejects. An exact
 * record that the kernel rejected for one problem is not remembered: another
 * problem of the same key may take it. */
#define MEMO_SETS 64
#define MEMO_WAYS 4
typedef struct lookup_memo {
    uint64_t serial, hash, hash2;
    const tsr_kernel *kernel;
    const tsr_context *ctx;
    tsr_table_hit hit;
    tsr_schedule s; /* hit != TSR_TABLE_MISS */
} lookup_memo;
static _Thread_local lookup_memo memo[MEMO_SETS][MEMO_WAYS];
static _Thread_local unsigned char memo_next[MEMO_SETS]; /* round-robin victim */

/* Two independent hashes of the key's fields, 8 bytes a step in two
 * chains side by side (FNV-1a byte by byte over the whole key took ~250
 * ns). Each string is taken to its terminator, rounded up to 8 bytes:
 * tsr_problem_key zeroes the key first, so the bytes past it are zeros or
 * the next field's, the same for the same key. The dim names are left out:
 * the op fixes them. */
static void pkey_hashes(const tsr_pkey *key, uint64_t *h, uint64_t *h2) {
    const char *base = (const char *)key;
    const struct {
        size_t off, len;
    } parts[] = {
        {0, offsetof(tsr_pkey, dtypes) + strnlen(key->dtypes, sizeof key->dtypes) + 1},
        {offsetof(tsr_pkey, layout), strnlen(key->layout, sizeof key->layout) + 1},
        {offsetof(tsr_pkey, variant), strnlen(key->variant, sizeof key->variant) + 1},
        {offsetof(tsr_pkey, dims), (size_t)key->ndims * sizeof key->dims[0]},
    };
    uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)key->ndims, b = 0x243f6a8885a308d3ull;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (size_t o = parts[i].off; o < parts[i].off + parts[i].len && o + 8 <= sizeof *key; o += 8) {
            uint64_t w;
            memcpy(&w, base + o, 8);
            a = (a ^ w) * 0xff51afd7ed558ccdull, a ^= a >> 32;
            b = (b ^ w) * 0xc4ceb9fe1a85ec53ull, b ^= b >> 29;
        }
    *h = a, *h2 = b;
}

static lookup_memo *memo_find(const tsr_table *t, uint64_t h, uint64_t h2, const tsr_kernel *k,
                              const tsr_context *ctx) {
    lookup_memo *set = memo[h % MEMO_SETS];
    for (int w = 0; w < MEMO_WAYS; w++)
        if (set[w].serial == t->serial && set[w].hash == h && set[w].hash2 == h2 && set[w].kernel == k &&
            set[w].ctx == ctx)
            return &set[w];
    return NULL;
}

/* Into m, the key's entry (a remembered schedule this problem rejected),
 * or when NULL the set's next victim. */
static void memo_store(lookup_memo *m, const tsr_table *t, uint64_t h, uint64_t h2, const tsr_kernel *k,
                       const tsr_context *ctx, tsr_table_hit hit, const tsr_schedule *s) {
    if (!m) {
        unsigned char *next = &memo_next[h % MEMO_SETS];
        m = &memo[h % MEMO_SETS][*next];
        *next = (unsigned char)((*next + 1) % MEMO_WAYS);
    }
    *m = (lookup_memo){t->serial, h, h2, k, ctx, hit, {{0}}};
    if (hit != TSR_TABLE_MISS) m->s = *s;
}

/* The nearest usable record of group g to key that clearly beat its
 * heuristic (TSR_TABLE_NEAREST_MIN_GAIN), by a scan; -1 when none. */
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
            if (!(r->v.default_us >= r->v.time_us * TSR_TABLE_NEAREST_MIN_GAIN)) continue;
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
    uint64_t h, h2;
    pkey_hashes(&key, &h, &h2);
    lookup_memo *m = memo_find(t, h, h2, k, ctx);
    if (m && m->hit == TSR_TABLE_MISS) return TSR_TABLE_MISS;
    if (m && (!ctx || !k->schedule_valid || k->schedule_valid(p, ctx, &m->s))) {
        *s = m->s;
        return m->hit;
    }

    char buf[TSR_TABLE_MAX_LINE];
    size_t cl = class_string(&key, k->name, buf, sizeof buf - 256);
    if (!cl) return TSR_TABLE_MISS;
    uint64_t cls_hash = tsr_table_hash(buf, cl);
    buf[cl] = '|';
    size_t kl = cl + 1 + tsr_pkey_shape(&key, buf + cl + 1, sizeof buf - cl - 1);
    uint64_t kh = tsr_table_hash(buf, kl);

    const tsr_trec *exact = NULL;
    size_t mask = t->num_slots - 1;
    for (size_t i = (size_t)kh & mask; t->slots[i] >= 0; i = (i + 1) & mask) {
        const tsr_trec *r = &t->recs[t->slots[i]];
        if (r->key_hash == kh && strcmp(r->key, buf) == 0) {
            exact = r;
            break;
        }
    }
    tsr_schedule cand;
    if (exact && usable(exact, p, ctx, k, &cand)) {
        memo_store(m, t, h, h2, k, ctx, TSR_TABLE_EXACT, &cand);
        *s = cand;
        return TSR_TABLE_EXACT;
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
    const tsr_table_hit hit = rec < 0 ? TSR_TABLE_MISS : TSR_TABLE_NEAREST;
    if (!exact) memo_store(m, t, h, h2, k, ctx, hit, &cand);
    if (hit == TSR_TABLE_MISS) return TSR_TABLE_MISS; /* s untouched */
    *s = cand;
    return TSR_TABLE_NEAREST;
}
