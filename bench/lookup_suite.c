/* tessera-bench --op lookup: what the tuning table costs each op call.
 * Tables of 16 to 16384 GEMM records (log-uniform shapes, as tessera-tune
 * writes them for this machine's kernels) are looked up by exact hit, by
 * nearest shape (each call a shape not seen before, or one of 16 shapes
 * called again and again) and by a miss (a class with no record); then a tiny GEMM
 * runs through tsr_gemm on a context that loaded such a table from disk and
 * on one that ignores tables, so the whole dispatch cost is visible too.
 * Names: lookup/gemm/<records>rec/<kind>, call/gemm/f32/NN/
 * 4x4x4/<table|heuristic>. Links libtessera statically: the table is
 * internal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../autotune/table.h"
#include "../autotune/tuner.h"
#include "bench_lookup.h"
#include "gbench_shim.h"

#define MAX_SIZES 3
#define CALL_DIM 4
#define NKINDS 4
/* A model's few untuned shapes, called again and again: the nearest
 * answers stay in the thread's memo (autotune/table_lookup.c). */
#define REPEATED_SHAPES 16

static const char *const kinds[NKINDS] = {"exact", "nearest_new", "nearest_repeat", "miss"};

typedef struct lookup_case {
    const tsr_table *table;
    const tsr_context *ctx;
    tsr_problem *probs; /* looked up in turn, so hashes and probes vary */
    const tsr_kernel **kernels;
    int n;
    tsr_table_hit want;
    char name[96];
} lookup_case;

typedef struct call_case {
    tsr_context *ctx;
    tsr_gemm_desc d;
    float a[CALL_DIM * CALL_DIM], b[CALL_DIM * CALL_DIM], c[CALL_DIM * CALL_DIM];
} call_case;

static void bench_lookup(gb_state *st, void *arg) {
    lookup_case *c = arg;
    tsr_schedule s;
    int i = 0;
    while (gb_keep_running(st)) {
        tsr_table_lookup(c->table, &c->probs[i], c->ctx, c->kernels[i], &s);
        if (++i == c->n) i = 0;
    }
}

static void bench_call(gb_state *st, void *arg) {
    call_case *c = arg;
    tsr_status s = TSR_OK;
    while (s == TSR_OK && gb_keep_running(st)) s = tsr_gemm(c->ctx, &c->d, c->a, c->b, c->c);
    if (s != TSR_OK) gb_skip_with_error(st, tsr_last_error());
}

static uint64_t lcg(uint64_t *x) {
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* 1..8192, log-uniform. */
static int64_t dim(uint64_t *x) { return (int64_t)1 << (lcg(x) % 14) | (int64_t)(lcg(x) % 7); }

/* The problem a tuned record of (m, n, k) would describe, and its kernel. */
static bool gemm_problem(const tsr_context *ctx, int64_t m, int64_t n, int64_t k, bool trans_b, tsr_problem *p,
                         tsr_pkey *key, const tsr_kernel **kernel) {
    tsr_workload w;
    if (tsr_workload_gemm(&w, m, n, k, 1, false, trans_b, TSR_F32, TSR_F32) != TSR_OK) return false;
    *p = w.problem;
    *key = w.key;
    *kernel = tsr_dispatch_select(ctx, p, NULL, 0);
    return *kernel && (*kernel)->num_knobs > 0;
}

/* n record lines (the CALL_DIM cube first) for ctx's kernels; malloc'd. */
static char **make_records(const tsr_context *ctx, int n, uint64_t seed, int *made) {
    char **lines = calloc((size_t)n, sizeof *lines);
    *made = 0;
    for (int i = 0; lines && *made < n && i < 4 * n; i++) {
        int64_t m = i ? dim(&seed) : CALL_DIM, nn = i ? dim(&seed) : CALL_DIM, k = i ? dim(&seed) : CALL_DIM;
        tsr_problem p;
        tsr_pkey key;
        const tsr_kernel *kern;
        tsr_schedule s = {0};
        if (!gemm_problem(ctx, m, nn, k, false, &p, &key, &kern)) continue;
        kern->default_schedule(&p, ctx, &s);
        char line[TSR_TABLE_MAX_LINE];
        if (tsr_table_format_record(&key, kern, &s, 10.0, 15.0, 1.0, 1700000000 + i, line, sizeof line)) continue;
        if (!(lines[*made] = strdup(line))) break;
        (*made)++;
    }
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; lines && i < n; i++) free(lines[i]);
    free(lines);
}

/* The table of those records as the library would parse it from disk. */
static tsr_table *parse_records(const tsr_device_fp *fp, char **lines, int n) {
    size_t cap = 4096, len;
    for (int i = 0; i < n; i++) cap += strlen(lines[i]) + 1;
    char *text = malloc(cap);
    if (!text) return NULL;
    len = tsr_table_header(fp, text, cap);
    for (int i = 0; i < n; i++) len += (size_t)sprintf(text + len, "%s\n", lines[i]);
    tsr_table *t = NULL;
    char why[256];
    if (tsr_table_parse(text, len, fp, &t, why, sizeof why) != TSR_OK)
        fprintf(stderr, "tessera-bench: the generated table does not parse: %s\n", why);
    free(text);
    return t;
}

/* Problems for one case: the tuned shapes themselves (exact), each shifted
 * by one in every dim (nearest), or transposed B, a class with no records
 * (miss). Read back from the table so duplicates resolved by the parser do
 * not matter; a problem kept only when its lookup lands as the case says
 * (a shifted shape can be another record's exact one). */
static bool fill_case(lookup_case *c, const tsr_context *ctx, const tsr_table *t, tsr_table_hit want) {
    int n = tsr_table_count(t);
    c->probs = malloc((size_t)n * sizeof *c->probs);
    c->kernels = malloc((size_t)n * sizeof *c->kernels);
    c->table = t, c->ctx = ctx, c->want = want, c->n = 0;
    if (!c->probs || !c->kernels) return false;
    for (int i = 0; i < n; i++) {
        tsr_table_rec_view v;
        if (!tsr_table_record(t, i, &v) || v.ndims < 3) continue;
        int64_t shift = want == TSR_TABLE_EXACT ? 0 : 1;
        tsr_pkey key;
        if (gemm_problem(ctx, v.dims[0] + shift, v.dims[1] + shift, v.dims[2] + shift, want == TSR_TABLE_MISS,
                         &c->probs[c->n], &key, &c->kernels[c->n])) {
            tsr_schedule s;
            c->n += tsr_table_lookup(t, &c->probs[c->n], ctx, c->kernels[c->n], &s) == want;
        }
    }
    return c->n > 0;
}

static bool write_table(const char *dir, const tsr_device_fp *fp, char **lines, int n) {
    tsr_table_write_report rep;
    if (tsr_table_write_merged(dir, fp, (const char *const *)lines, n, &rep) == TSR_OK) return true;
    fprintf(stderr, "tessera-bench: cannot write the lookup table in %s: %s\n", dir, tsr_last_error());
    return false;
}

static void remove_dir(const char *dir) {
    char cmd[600];
    if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd && system(cmd) != 0)
        fprintf(stderr, "tessera-bench: could not remove %s\n", dir);
}

static tsr_context *cpu_context(uint32_t flags) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.num_threads = 1;
    o.flags = flags;
    tsr_context *ctx = NULL;
    return tsr_context_create(&ctx, &o) == TSR_OK ? ctx : NULL;
}

static double find_ns(const gb_result *r, int nr, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < nr; i++) /* Google Benchmark appends "/real_time" */
        if (!strncmp(r[i].name, name, n) && (!r[i].name[n] || r[i].name[n] == '/') && !r[i].error)
            return r[i].seconds * 1e9;
    return -1;
}

static void summarize(const int *sizes, int nsizes, const char *table_path) {
    const gb_result *r;
    int nr = gb_results(&r);
    printf("\nsummary: ns per lookup (1 thread; target: an exact hit < 1000 ns)\n%-10s", "records");
    for (int k = 0; k < NKINDS; k++) printf(" %15s", kinds[k]);
    printf("\n");
    for (int i = 0; i < nsizes; i++) {
        printf("%-10d", sizes[i]);
        for (int k = 0; k < NKINDS; k++) {
            char name[96];
            snprintf(name, sizeof name, "lookup/gemm/%drec/%s", sizes[i], kinds[k]);
            double ns = find_ns(r, nr, name);
            if (ns < 0) printf(" %15s", "error");
            else printf(" %15.0f", ns);
        }
        printf("\n");
    }
    double with = find_ns(r, nr, "call/gemm/f32/NN/4x4x4/table"),
           without = find_ns(r, nr, "call/gemm/f32/NN/4x4x4/heuristic");
    if (with >= 0 && without >= 0)
        printf("tsr_gemm 4x4x4: %.0f ns with the table (%s), %.0f ns without: the table costs %+.0f ns a call\n",
               with, table_path, without, with - without);
}

int lookup_suite_main(int quick) {
    static const int all_sizes[MAX_SIZES] = {16, 1024, 16384};
    const int nsizes = quick ? 2 : MAX_SIZES;
    char dir[] = "/tmp/tessera-bench-lookup-XXXXXX";
    if (!mkdtemp(dir)) return perror("tessera-bench: mkdtemp"), 2;
    /* the contexts below must find only the table written here */
    setenv("TESSERA_TABLE_DIR", dir, 1);
    unsetenv("TESSERA_TUNE");
    int rc = 2;
    tsr_context *plain = cpu_context(TSR_CONTEXT_NO_TUNING_TABLE), *tabled = NULL;
    static lookup_case cases[NKINDS * MAX_SIZES];
    tsr_table *tables[MAX_SIZES] = {0};
    static call_case calls[2];
    int ncases = 0;
    if (!plain) goto out;
    tsr_device_fp fp;
    tsr_device_fp_from_context(plain, &fp);
    printf("tessera-bench lookup: %s, kernels for %s, 1 thread\n", plain->device_name, plain->arch);
    for (int i = 0; i < nsizes; i++) {
        int made;
        char **lines = make_records(plain, all_sizes[i], 12345u + (unsigned)i, &made);
        bool ok = made == all_sizes[i] && (tables[i] = parse_records(&fp, lines, made));
        if (ok && all_sizes[i] == 1024) ok = write_table(dir, &fp, lines, made);
        free_lines(lines, made);
        if (!ok) goto out;
        static const tsr_table_hit hits[NKINDS] = {TSR_TABLE_EXACT, TSR_TABLE_NEAREST, TSR_TABLE_NEAREST,
                                                   TSR_TABLE_MISS};
        for (int h = 0; h < NKINDS; h++) {
            lookup_case *c = &cases[ncases++];
            snprintf(c->name, sizeof c->name, "lookup/gemm/%drec/%s", all_sizes[i], kinds[h]);
            if (!fill_case(c, plain, tables[i], hits[h])) goto out;
            if (h == 2 && c->n > REPEATED_SHAPES) c->n = REPEATED_SHAPES;
            gb_register_ns(c->name, bench_lookup, c);
        }
    }
    /* created after the table was written: it loads it like any user's */
    if (!(tabled = cpu_context(0))) goto out;
    if (!tabled->table) {
        fprintf(stderr, "tessera-bench: the context did not load the lookup table: %s\n", tabled->table_status);
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        call_case *c = &calls[i];
        c->ctx = i ? plain : tabled;
        tsr_gemm_desc_init(&c->d);
        c->d.m = c->d.n = c->d.k = c->d.lda = c->d.ldb = c->d.ldc = CALL_DIM;
        for (int j = 0; j < CALL_DIM * CALL_DIM; j++) c->a[j] = c->b[j] = (float)(j % 5) - 2.0f;
        gb_register_ns(i ? "call/gemm/f32/NN/4x4x4/heuristic" : "call/gemm/f32/NN/4x4x4/table", bench_call, c);
    }
    gb_run();
    summarize(all_sizes, nsizes, tabled->table_path);
    const gb_result *r;
    int nr = gb_results(&r);
    rc = 0;
    for (int i = 0; i < nr; i++) rc |= r[i].error;
out:
    for (int i = 0; i < ncases; i++) free(cases[i].probs), free(cases[i].kernels);
    for (int i = 0; i < nsizes; i++) tsr_table_free(tables[i]);
    tsr_context_destroy(tabled);
    tsr_context_destroy(plain);
    remove_dir(dir);
    return rc;
}
