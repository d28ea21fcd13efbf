/* Table text: parsing with validation, serialising, record formatting.
 * Everything here treats its input as hostile (the fuzz target drives it):
 * bounded lines, no locale-dependent number parsing, no recursion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_impl.h"

/* ------------------------------------------------------------ small helpers */

/* 8 bytes a step (multiply-xorshift): keys are ~100 bytes and hashed on
 * every dispatch that consults a table. */
uint64_t tsr_table_hash(const char *s, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8, n -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

uint64_t tsr_table_dims_sig(int ndims, const char *const *names) {
    uint64_t h = (uint64_t)ndims;
    for (int i = 0; i < ndims; i++) h = (h * 31) ^ tsr_table_hash(names[i], strlen(names[i]));
    return h;
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A decimal int64: optional '-', digits, nothing else. */
static bool parse_i64(const char *s, int64_t *out) {
    bool neg = *s == '-';
    if (neg) s++;
    if (!*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return false;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return true;
}

/* digits[.digits], non-negative; no exponent, no locale. */
static bool parse_fixed(const char *s, double *out) {
    double v = 0.0, scale = 1.0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (digits > 15) return false;
        v = v * 10.0 + (*s - '0');
    }
    if (!digits) return false;
    if (*s == '.') {
        s++;
        int frac = 0;
        for (; *s >= '0' && *s <= '9'; s++, frac++) {
            if (frac >= 9) continue; /* finer than a nanosecond: ignored */
            scale /= 10.0;
            v += (*s - '0') * scale;
        }
        if (!frac) return false;
    }
    if (*s) return false;
    *out = v;
    return true;
}

/* x with three decimals, locale-independent. */
static void format_fixed(double x, char *out, size_t n) {
    if (!(x >= 0.0)) x = 0.0;
    if (x > 1e15) x = 1e15;
    long long milli = llround(x * 1000.0);
    snprintf(out, n, "%lld.%03lld", milli / 1000, milli % 1000);
}

static bool dtype_known(const char *s) {
    for (int t = TSR_F32; t <= TSR_I32; t++)
        if (strcmp(s, tsr_dtype_name((tsr_dtype)t)) == 0) return true;
    return false;
}

static int op_index(const char *s) {
    for (int i = 0; i < TSR_OP_COUNT; i++)
        if (strcmp(s, tsr_op_name((tsr_op)i)) == 0) return i;
    return -1;
}

/* Control characters, newlines included, become spaces; ends trimmed. */
static void clean_copy(char *dst, size_t n, const char *src) {
    if (!n) return;
    size_t len = 0;
    for (; src && *src && len + 1 < n; src++) {
        unsigned char c = (unsigned char)*src;
        dst[len++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    dst[len] = '\0';
    while (len && dst[len - 1] == ' ') dst[--len] = '\0';
    size_t lead = 0;
    while (dst[lead] == ' ') lead++;
    if (lead) memmove(dst, dst + lead, len - lead + 1);
}

void tsr_device_fp_from_context(const tsr_context *ctx, tsr_device_fp *fp) {
    memset(fp, 0, sizeof *fp);
    clean_copy(fp->backend, sizeof fp->backend, tsr_backend_name(ctx->backend));
    clean_copy(fp->arch, sizeof fp->arch, ctx->arch ? ctx->arch : "");
    clean_copy(fp->name, sizeof fp->name, ctx->device_name);
    clean_copy(fp->driver, sizeof fp->driver, ctx->driver);
    fp->compute_units = ctx->compute_units;
}

void tsr_table_file_name(const tsr_device_fp *fp, char *out, size_t n) {
    char raw[300];
    snprintf(raw, sizeof raw, "%s-%s-%s-%dcu", fp->backend, fp->arch, fp->name, fp->compute_units);
    size_t len = 0;
    char prev = '_';
    for (const char *s = raw; *s && len + sizeof TSR_TABLE_SUFFIX + 1 < n && len < 200; s++) {
        char c = *s;
        if (!(is_name_char(c) || c == '-' || c == '.')) c = '_';
        /* One separator at a time: "9000 (8-core)-" gives "9000_8-core-". */
        if (c == '_' && (prev == '_' || prev == '-' || prev == '.')) continue;
        if ((c == '-' || c == '.') && prev == '_' && len) len--;
        out[len++] = prev = c;
    }
    while (len && out[len - 1] == '_') len--;
    if (n) snprintf(out + len, n - len, "%s", TSR_TABLE_SUFFIX);
}

size_t tsr_table_header(const tsr_device_fp *fp, char *out, size_t n) {
    /* "@driver" alone when there is none: no trailing blanks in the file. */
    int w = snprintf(out, n,
                     "@format %d\n@library %s\n@kernels %s\n@backend %s\n@arch %s\n@device %s\n"
                     "@compute_units %d\n@driver%s%s\n",
                     TSR_TABLE_FORMAT, tsr_version_string(), tsr_kernel_hash, fp->backend, fp->arch,
                     fp->name, fp->compute_units, fp->driver[0] ? " " : "", fp->driver);
    return w < 0 ? 0 : (size_t)w;
}

/* ---------------------------------------------------------------- records */

/* Splits s in place at whitespace; returns the token count (at most max). */
static int split(char *s, char **tok, int max, int *total) {
    int n = 0, all = 0;
    while (*s) {
        while (is_space(*s)) *s++ = '\0';
        if (!*s) break;
        if (n < max) tok[n++] = s;
        all++;
        while (*s && !is_space(*s)) s++;
    }
    *total = all;
    return n;
}

static bool why_line(char *why, size_t n, int line, const char *fmt, const char *arg) {
    char msg[200];
    snprintf(msg, sizeof msg, fmt, arg);
    snprintf(why, n, "line %d: %s", line, msg);
    return false;
}

/* name=int list into names (pointing into s, which is modified) and values. */
static bool parse_pairs(char *s, int max, const char **names, int64_t *values, int *count) {
    int n = 0;
    while (*s) {
        if (n == max) return false;
        char *name = s, *eq = strchr(s, '=');
        if (!eq || eq == s || eq - s > 23) return false;
        for (char *c = s; c < eq; c++)
            if (!is_name_char(*c)) return false;
        *eq = '\0';
        char *val = eq + 1, *comma = strchr(val, ',');
        if (comma) *comma = '\0';
        if (!parse_i64(val, &values[n])) return false;
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], name) == 0) return false;
        names[n++] = name;
        if (!comma) break;
        s = comma + 1;
        if (!*s) return false; /* trailing comma */
    }
    *count = n;
    return n > 0;
}

/* Parses one record line into r (allocating r->mem). false with why. */
static bool parse_record(const char *line, size_t len, int line_no, tsr_trec *r, char *why,
                         size_t why_len) {
    memset(r, 0, sizeof *r);
    /* mem: line | tokens | shape copy | knob copy | cls | key */
    size_t block = 6 * (len + 1) + 8;
    r->mem = malloc(block);
    if (!r->mem) return why_line(why, why_len, line_no, "%s", "out of memory");
    char *raw = r->mem, *tokbuf = raw + len + 1, *shape_copy = tokbuf + len + 1,
         *knob_copy = shape_copy + len + 1, *cls = knob_copy + len + 1, *key = cls + len + 2;
    memcpy(raw, line, len);
    raw[len] = '\0';
    memcpy(tokbuf, raw, len + 1);
    r->line = raw;
    char *tok[64];
    int total, n = split(tokbuf, tok, 64, &total);
    if (n == 0) return why_line(why, why_len, line_no, "%s", "empty record");
    int op = op_index(tok[0]);
    if (op < 0) return true; /* kept verbatim */
    tsr_table_rec_view *v = &r->v;
    if (n < 9)
        return why_line(why, why_len, line_no,
                        "a %s record needs op dtypes layout variant shape kernel knobs time_us= "
                        "default_us=; it has fewer fields",
                        tok[0]);
    v->op = tok[0], v->dtypes = tok[1], v->layout = tok[2], v->variant = tok[3];
    v->shape = tok[4], v->kernel = tok[5], v->knobs = tok[6];

    /* dtypes: known names, comma-separated */
    {
        char tmp[128];
        if (strlen(v->dtypes) >= sizeof tmp) return why_line(why, why_len, line_no, "dtypes '%s' too long", "");
        snprintf(tmp, sizeof tmp, "%s", v->dtypes);
        int count = 0;
        for (char *save = NULL, *d = strtok_r(tmp, ",", &save); d; d = strtok_r(NULL, ",", &save), count++)
            if (!dtype_known(d)) return why_line(why, why_len, line_no, "unknown dtype '%s'", d);
        if (count == 0 || count > 8 || v->dtypes[0] == ',' || v->dtypes[strlen(v->dtypes) - 1] == ',' ||
            strstr(v->dtypes, ",,"))
            return why_line(why, why_len, line_no, "bad dtype list '%s'", v->dtypes);
    }
    if (strlen(v->kernel) >= 64) return why_line(why, why_len, line_no, "%s", "kernel name longer than 63 characters");

    /* shape: name=int64 list, dims >= 0 */
    memcpy(shape_copy, v->shape, strlen(v->shape) + 1);
    if (!parse_pairs(shape_copy, TSR_PKEY_MAX_DIMS, v->dim_names, v->dims, &v->ndims))
        return why_line(why, why_len, line_no, "bad shape '%s' (want name=int,...; at most 8)", v->shape);
    for (int i = 0; i < v->ndims; i++) {
        if (v->dims[i] < 0) return why_line(why, why_len, line_no, "negative dimension in '%s'", v->shape);
        r->logd[i] = log(v->dims[i] > 1 ? (double)v->dims[i] : 1.0);
    }
    r->dims_sig = tsr_table_dims_sig(v->ndims, v->dim_names);

    /* knobs: "-" or name=int list within int range */
    if (strcmp(v->knobs, "-") != 0) {
        const char *names[TSR_MAX_KNOBS];
        int64_t vals[TSR_MAX_KNOBS];
        int count;
        memcpy(knob_copy, v->knobs, strlen(v->knobs) + 1);
        if (!parse_pairs(knob_copy, TSR_MAX_KNOBS, names, vals, &count))
            return why_line(why, why_len, line_no, "bad knobs '%s' (want name=int,... or -)", v->knobs);
        for (int i = 0; i < count; i++) {
            if (vals[i] < -2147483647 || vals[i] > 2147483647)
                return why_line(why, why_len, line_no, "knob value out of range in '%s'", v->knobs);
            r->knob_names[i] = names[i];
            r->knob_values[i] = (int)vals[i];
        }
        r->num_knobs = count;
    }

    /* metrics: name=value; unknown ones are kept verbatim in the line */
    bool have_time = false, have_default = false, have_spread = false, have_tuned = false;
    for (int i = 7; i < n; i++) {
        const char *t = tok[i];
        bool *seen = NULL;
        double *dst = NULL;
        if (strncmp(t, "time_us=", 8) == 0) seen = &have_time, dst = &v->time_us, t += 8;
        else if (strncmp(t, "default_us=", 11) == 0) seen = &have_default, dst = &v->default_us, t += 11;
        else if (strncmp(t, "spread=", 7) == 0) seen = &have_spread, dst = &v->spread, t += 7;
        else if (strncmp(t, "tuned=", 6) == 0) {
            if (have_tuned) return why_line(why, why_len, line_no, "%s", "tuned= given twice");
            have_tuned = true;
            if (!parse_i64(t + 6, &v->tuned) || v->tuned < 0)
                return why_line(why, why_len, line_no, "bad time stamp '%s'", t);
            continue;
        } else continue;
        if (*seen) return why_line(why, why_len, line_no, "metric '%s' given twice", tok[i]);
        *seen = true;
        if (!parse_fixed(t, dst)) return why_line(why, why_len, line_no, "bad number in '%s'", tok[i]);
    }
    if (!have_time || !have_default)
        return why_line(why, why_len, line_no, "%s", "a record needs time_us= and default_us=");

    snprintf(cls, len + 2, "%s %s %s %s %s", v->op, v->dtypes, v->layout, v->variant, v->kernel);
    size_t cls_len = strlen(cls);
    /* The key uses the canonical shape so "m=064" finds m=64. */
    memcpy(key, cls, cls_len);
    key[cls_len] = '|';
    size_t key_cap = block - (size_t)(key - r->mem); /* > cls_len + 1: cls is at most len bytes */
    tsr_pkey_format_dims(v->ndims, v->dim_names, v->dims, key + cls_len + 1, key_cap - cls_len - 1);
    r->cls = cls;
    r->key = key;
    r->cls_hash = tsr_table_hash(cls, cls_len);
    r->key_hash = tsr_table_hash(key, strlen(key));
    r->known = true;
    return true;
}

/* Does a beat b (same key)? Tuned later, then faster. */
static bool rec_better(const tsr_trec *a, const tsr_trec *b) {
    if (a->v.tuned != b->v.tuned) return a->v.tuned > b->v.tuned;
    return a->v.time_us < b->v.time_us;
}

/* ------------------------------------------------------------------ index */

static size_t pow2_at_least(size_t n) {
    size_t s = 16;
    while (s < n) s <<= 1;
    return s;
}

/* Finds key's slot: its record or the empty slot where it would go. */
static size_t slot_of(const tsr_table *t, const char *key, uint64_t h) {
    size_t mask = t->num_slots - 1, i = (size_t)h & mask;
    while (t->slots[i] >= 0) {
        const tsr_trec *r = &t->recs[t->slots[i]];
        if (r->key_hash == h && strcmp(r->key, key) == 0) return i;
        i = (i + 1) & mask;
    }
    return i;
}

static int cmp_cls(const void *a, const void *b) {
    const tsr_trec *x = *(const tsr_trec *const *)a, *y = *(const tsr_trec *const *)b;
    int c = strcmp(x->cls, y->cls);
    return c ? c : (x < y ? -1 : x > y);
}

static void rec_free(tsr_trec *r) {
    free(r->mem);
    r->mem = NULL;
}

/* Drops duplicate keys (the merge rule picks the survivor), then indexes
 * keys and classes. false when out of memory. */
static bool build_index(tsr_table *t) {
    free(t->slots);
    free(t->groups);
    free(t->members);
    t->groups = NULL, t->members = NULL;
    t->num_slots = pow2_at_least((size_t)t->n * 2 + 1);
    t->slots = malloc(t->num_slots * sizeof *t->slots);
    if (!t->slots) return false;
    for (size_t i = 0; i < t->num_slots; i++) t->slots[i] = -1;
    int kept = 0;
    for (int i = 0; i < t->n; i++) {
        tsr_trec *r = &t->recs[i];
        if (r->known) {
            size_t s = slot_of(t, r->key, r->key_hash);
            if (t->slots[s] >= 0) {
                tsr_trec *old = &t->recs[t->slots[s]];
                if (rec_better(r, old)) {
                    /* The newcomer takes the old record's place in file order. */
                    tsr_trec tmp = *old;
                    *old = *r;
                    rec_free(&tmp);
                } else {
                    rec_free(r);
                }
                continue;
            }
            t->slots[s] = kept;
        }
        t->recs[kept++] = *r;
    }
    t->n = kept;

    /* Classes: record indices sorted by class, runs indexed by class hash. */
    t->num_groups = pow2_at_least((size_t)t->n * 2 + 1);
    t->groups = calloc(t->num_groups, sizeof *t->groups);
    t->members = malloc(((size_t)t->n + 1) * sizeof *t->members);
    const tsr_trec **by_cls = malloc(((size_t)t->n + 1) * sizeof *by_cls);
    if (!t->groups || !t->members || !by_cls) {
        free(by_cls);
        return false;
    }
    int nk = 0;
    for (int i = 0; i < t->n; i++)
        if (t->recs[i].known) by_cls[nk++] = &t->recs[i];
    qsort(by_cls, (size_t)nk, sizeof *by_cls, cmp_cls);
    size_t mask = t->num_groups - 1;
    for (int i = 0; i < nk;) {
        int j = i;
        while (j < nk && strcmp(by_cls[j]->cls, by_cls[i]->cls) == 0) {
            t->members[j] = (int)(by_cls[j] - t->recs);
            j++;
        }
        size_t g = (size_t)by_cls[i]->cls_hash & mask;
        while (t->groups[g].count) g = (g + 1) & mask;
        t->groups[g] = (tsr_tgroup){by_cls[i]->cls_hash, i, j - i};
        i = j;
    }
    free(by_cls);
    return true;
}

/* ------------------------------------------------------------------ parse */

void tsr_table_free(tsr_table *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) rec_free(&t->recs[i]);
    for (int i = 0; i < t->num_extra_header; i++) free(t->extra_header[i]);
    free(t->extra_header);
    free(t->recs);
    free(t->slots);
    free(t->groups);
    free(t->members);
    free(t);
}

enum { H_FORMAT, H_LIBRARY, H_KERNELS, H_BACKEND, H_ARCH, H_DEVICE, H_CU, H_DRIVER, H_COUNT };
static const char *const header_keys[H_COUNT] = {"format", "library", "kernels", "backend",
                                                 "arch", "device", "compute_units", "driver"};

typedef struct parse_state {
    tsr_table *t;
    int cap;
    char hdr[H_COUNT][160];
    int hdr_line[H_COUNT];
    bool have[H_COUNT];
    char record_error[300]; /* the first bad record, reported after the format check */
} parse_state;

static tsr_status fail_why(char *why, size_t n, tsr_status st, const char *fmt, ...) TSR_PRINTF(4, 5);
static tsr_status fail_why(char *why, size_t n, tsr_status st, const char *fmt, ...) {
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return st;
}

static tsr_status header_line(parse_state *ps, const char *line, size_t len, int line_no, char *why,
                              size_t why_len) {
    size_t k = 1;
    while (k < len && !is_space(line[k])) k++;
    size_t name_len = k - 1, v = k;
    while (v < len && is_space(line[v])) v++;
    for (int i = 0; i < H_COUNT; i++) {
        if (strlen(header_keys[i]) != name_len || memcmp(line + 1, header_keys[i], name_len) != 0) continue;
        if (ps->have[i])
            return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "line %d: @%s given twice (first on line %d)",
                            line_no, header_keys[i], ps->hdr_line[i]);
        if (len - v >= sizeof ps->hdr[i])
            return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "line %d: @%s value too long", line_no,
                            header_keys[i]);
        memcpy(ps->hdr[i], line + v, len - v);
        ps->hdr[i][len - v] = '\0';
        ps->have[i] = true;
        ps->hdr_line[i] = line_no;
        return TSR_OK;
    }
    tsr_table *t = ps->t;
    char **grown = realloc(t->extra_header, sizeof *grown * (size_t)(t->num_extra_header + 1));
    if (!grown) return fail_why(why, why_len, TSR_ERR_OUT_OF_MEMORY, "out of memory");
    t->extra_header = grown;
    char *copy = malloc(len + 1);
    if (!copy) return fail_why(why, why_len, TSR_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(copy, line, len);
    copy[len] = '\0';
    t->extra_header[t->num_extra_header++] = copy;
    return TSR_OK;
}

static tsr_status record_line(parse_state *ps, const char *line, size_t len, int line_no) {
    tsr_table *t = ps->t;
    if (t->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 64;
        tsr_trec *grown = realloc(t->recs, sizeof *grown * (size_t)cap);
        if (!grown) return TSR_ERR_OUT_OF_MEMORY;
        t->recs = grown;
        ps->cap = cap;
    }
    tsr_trec *r = &t->recs[t->n];
    char why[300];
    if (!parse_record(line, len, line_no, r, why, sizeof why)) {
        rec_free(r);
        if (!ps->record_error[0]) snprintf(ps->record_error, sizeof ps->record_error, "%s", why);
        return TSR_OK; /* reported once the header has been checked */
    }
    t->n++;
    return TSR_OK;
}

/* Each validator that differs; the first one names the reason. */
static tsr_status check_validators(parse_state *ps, const tsr_device_fp *expect, char *why, size_t n) {
    for (int i = 0; i < H_COUNT; i++)
        if (!ps->have[i])
            return fail_why(why, n, TSR_ERR_INVALID_ARGUMENT, "no @%s line (truncated, or not a tessera table)",
                            header_keys[i]);
    if (strcmp(ps->hdr[H_LIBRARY], tsr_version_string()) != 0)
        return fail_why(why, n, TSR_ERR_NOT_SUPPORTED, "written by tessera %s, this is %s", ps->hdr[H_LIBRARY],
                        tsr_version_string());
    if (strcmp(ps->hdr[H_KERNELS], tsr_kernel_hash) != 0)
        return fail_why(why, n, TSR_ERR_NOT_SUPPORTED,
                        "measured with other kernels (hash %s, this library's %s): re-run tessera-tune",
                        ps->hdr[H_KERNELS], tsr_kernel_hash);
    int64_t cu;
    if (!parse_i64(ps->hdr[H_CU], &cu) || cu < 0 || cu > 1 << 30)
        return fail_why(why, n, TSR_ERR_INVALID_ARGUMENT, "line %d: bad @compute_units '%s'", ps->hdr_line[H_CU],
                        ps->hdr[H_CU]);
    tsr_device_fp *fp = &ps->t->fp;
    static const int fields[4] = {H_BACKEND, H_ARCH, H_DEVICE, H_DRIVER};
    char *dst[4] = {fp->backend, fp->arch, fp->name, fp->driver};
    size_t cap[4] = {sizeof fp->backend, sizeof fp->arch, sizeof fp->name, sizeof fp->driver};
    for (int i = 0; i < 4; i++) {
        size_t l = strlen(ps->hdr[fields[i]]);
        if (l >= cap[i])
            return fail_why(why, n, TSR_ERR_INVALID_ARGUMENT, "line %d: @%s is longer than %zu bytes",
                            ps->hdr_line[fields[i]], header_keys[fields[i]], cap[i] - 1);
        memcpy(dst[i], ps->hdr[fields[i]], l + 1);
    }
    fp->compute_units = (int)cu;
    if (!expect) return TSR_OK;
    static const char *what[] = {"backend", "arch", "device", "driver"};
    const char *mine[] = {expect->backend, expect->arch, expect->name, expect->driver};
    const char *theirs[] = {fp->backend, fp->arch, fp->name, fp->driver};
    for (int i = 0; i < 4; i++)
        if (strcmp(mine[i], theirs[i]) != 0)
            return fail_why(why, n, TSR_ERR_NOT_SUPPORTED, "measured on another device: %s '%s', this one is '%s'",
                            what[i], theirs[i], mine[i]);
    if (fp->compute_units != expect->compute_units)
        return fail_why(why, n, TSR_ERR_NOT_SUPPORTED,
                        "measured on another device: %d compute units, this one has %d", fp->compute_units,
                        expect->compute_units);
    return TSR_OK;
}

tsr_status tsr_table_parse(const char *text, size_t len, const tsr_device_fp *expect, tsr_table **out,
                           char *why, size_t why_len) {
    if (why && why_len) why[0] = '\0';
    if (!out) return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!text && len) return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "text is NULL");
    if (len == 0) return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "empty file");
    if (len > TSR_TABLE_MAX_BYTES)
        return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "larger than %u bytes", TSR_TABLE_MAX_BYTES);
    if (text[len - 1] != '\n')
        return fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "does not end with a newline (truncated?)");

    parse_state ps;
    memset(&ps, 0, sizeof ps);
    ps.t = calloc(1, sizeof *ps.t);
    if (!ps.t) return fail_why(why, why_len, TSR_ERR_OUT_OF_MEMORY, "out of memory");
    static _Atomic uint64_t serials;
    ps.t->serial = ++serials;
    tsr_status st = TSR_OK;
    int line_no = 0;
    for (size_t pos = 0; pos < len && st == TSR_OK;) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = (size_t)(nl - line); /* the file ends in '\n': nl is found */
        pos += n + 1;
        line_no++;
        if (n > TSR_TABLE_MAX_LINE) {
            st = fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "line %d is longer than %d bytes", line_no,
                          TSR_TABLE_MAX_LINE);
            break;
        }
        if (n && line[n - 1] == '\r') n--;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)line[i];
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                st = fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "line %d: control character 0x%02x",
                              line_no, c);
                break;
            }
        }
        if (st) break;
        while (n && is_space(line[n - 1])) n--;
        size_t lead = 0;
        while (lead < n && is_space(line[lead])) lead++;
        line += lead, n -= lead;
        if (n == 0 || line[0] == '#') continue;
        if (line[0] == '@') st = header_line(&ps, line, n, line_no, why, why_len);
        else if ((st = record_line(&ps, line, n, line_no)) == TSR_ERR_OUT_OF_MEMORY)
            fail_why(why, why_len, st, "out of memory");
    }
    if (st == TSR_OK && ps.have[H_FORMAT] && strcmp(ps.hdr[H_FORMAT], "1") != 0)
        st = fail_why(why, why_len, TSR_ERR_NOT_SUPPORTED, "format '%s', this library reads format %d",
                      ps.hdr[H_FORMAT], TSR_TABLE_FORMAT);
    if (st == TSR_OK && ps.record_error[0])
        st = fail_why(why, why_len, TSR_ERR_INVALID_ARGUMENT, "%s", ps.record_error);
    if (st == TSR_OK) st = check_validators(&ps, expect, why, why_len);
    if (st == TSR_OK && !build_index(ps.t)) st = fail_why(why, why_len, TSR_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != TSR_OK) {
        tsr_table_free(ps.t);
        return st;
    }
    *out = ps.t;
    return TSR_OK;
}

/* -------------------------------------------------------------- accessors */

const tsr_device_fp *tsr_table_device(const tsr_table *t) { return &t->fp; }
int tsr_table_count(const tsr_table *t) { return t ? t->n : 0; }
const char *tsr_table_line(const tsr_table *t, int i) {
    return t && i >= 0 && i < t->n ? t->recs[i].line : NULL;
}
bool tsr_table_record(const tsr_table *t, int i, tsr_table_rec_view *v) {
    if (!t || i < 0 || i >= t->n || !t->recs[i].known) return false;
    *v = t->recs[i].v;
    return true;
}

/* ---------------------------------------------------------------- writing */

static int cmp_rec(const void *a, const void *b) {
    const tsr_trec *x = *(const tsr_trec *const *)a, *y = *(const tsr_trec *const *)b;
    if (x->known != y->known) return x->known ? -1 : 1;
    if (!x->known) return x < y ? -1 : x > y; /* file order */
    int c = strcmp(x->cls, y->cls);
    if (c) return c;
    for (int i = 0; i < x->v.ndims && i < y->v.ndims; i++)
        if (x->v.dims[i] != y->v.dims[i]) return x->v.dims[i] < y->v.dims[i] ? -1 : 1;
    if (x->v.ndims != y->v.ndims) return x->v.ndims < y->v.ndims ? -1 : 1;
    return strcmp(x->key, y->key);
}

char *tsr_table_serialize(const tsr_table *t, size_t *len) {
    static const char intro[] =
        "# Tessera tuning table (format 1; see autotune/table.h). Written by tessera-tune:\n"
        "# edits are kept, but a changed validator (@ line) makes the library ignore the file.\n";
    static const char columns[] = "# op dtypes layout variant shape kernel knobs metrics...\n";
    char header[1024];
    size_t hl = tsr_table_header(&t->fp, header, sizeof header);
    size_t cap = sizeof intro + hl + sizeof columns + 2;
    for (int i = 0; i < t->num_extra_header; i++) cap += strlen(t->extra_header[i]) + 1;
    for (int i = 0; i < t->n; i++) cap += strlen(t->recs[i].line) + 1;
    const tsr_trec **order = malloc(sizeof *order * ((size_t)t->n + 1));
    char *buf = malloc(cap);
    if (!order || !buf) {
        free(order);
        free(buf);
        return NULL;
    }
    for (int i = 0; i < t->n; i++) order[i] = &t->recs[i];
    qsort(order, (size_t)t->n, sizeof *order, cmp_rec);
    size_t pos = 0;
#define APPEND(s, l) (memcpy(buf + pos, (s), (l)), pos += (l))
    APPEND(intro, sizeof intro - 1);
    APPEND(header, hl);
    for (int i = 0; i < t->num_extra_header; i++) {
        APPEND(t->extra_header[i], strlen(t->extra_header[i]));
        buf[pos++] = '\n';
    }
    APPEND(columns, sizeof columns - 1);
    for (int i = 0; i < t->n; i++) {
        APPEND(order[i]->line, strlen(order[i]->line));
        buf[pos++] = '\n';
    }
#undef APPEND
    buf[pos] = '\0';
    free(order);
    if (len) *len = pos;
    return buf;
}

static bool plain_token(const char *s, size_t max) {
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || s[n] == 0x7f || s[n] == '|') return false;
    return n > 0 && n < max;
}

size_t tsr_table_knobs_format(const tsr_kernel *k, const tsr_schedule *s, char *out, size_t n) {
    if (!n) return 0;
    if (k->num_knobs <= 0) return (size_t)snprintf(out, n, "-");
    size_t pos = 0;
    out[0] = '\0';
    for (int i = 0; i < k->num_knobs && i < TSR_MAX_KNOBS && pos < n; i++) {
        int w = snprintf(out + pos, n - pos, "%s%s=%d", i ? "," : "", k->knobs[i].name, s->v[i]);
        if (w < 0) break;
        pos += (size_t)w;
    }
    return pos < n ? pos : n - 1;
}

tsr_status tsr_table_format_record(const tsr_pkey *key, const tsr_kernel *k, const tsr_schedule *s,
                                   double time_us, double default_us, double spread, int64_t tuned,
                                   char *out, size_t n) {
    char shape[256], knobs[512], t[32], d[32], sp[32];
    tsr_pkey_shape(key, shape, sizeof shape);
    tsr_table_knobs_format(k, s, knobs, sizeof knobs);
    for (int i = 0; i < k->num_knobs; i++)
        if (!k->knobs[i].name || !plain_token(k->knobs[i].name, 24))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: kernel %s has a knob name that cannot be stored",
                            k->name);
    if (!plain_token(key->dtypes, 128) || !plain_token(key->layout, 128) || !plain_token(key->variant, 256) ||
        !plain_token(k->name, 64))
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: the key of %s contains spaces or is too long", k->name);
    format_fixed(time_us, t, sizeof t);
    format_fixed(default_us, d, sizeof d);
    format_fixed(spread, sp, sizeof sp);
    int w = snprintf(out, n, "%s %s %s %s %s %s %s time_us=%s default_us=%s spread=%s tuned=%lld",
                     tsr_op_name(key->op), key->dtypes, key->layout, key->variant, shape, k->name, knobs, t, d,
                     sp, (long long)(tuned < 0 ? 0 : tuned));
    if (w < 0 || (size_t)w >= n || (size_t)w > TSR_TABLE_MAX_LINE)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: the record for %s is too long", k->name);
    return TSR_OK;
}
