/* The tuning table: parsing and validation, hostile files, merging writes
 * from concurrent processes, locations, the run-time lookup (exact,
 * nearest, stale) and what a context reports about its table. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../autotune/table.h"
#include "../autotune/tuner.h"
#include "internal.h"
#include "testutil.h"

/* ------------------------------------------------------------------ fixtures */

static const int tile_values[] = {8, 16, 32};
static const int unroll_values[] = {1, 2};
static const tsr_knob fake_knobs[] = {{"tile", 3, tile_values}, {"unroll", 2, unroll_values}};

/* tile 32 with unroll 2 is a schedule this kernel refuses. */
static bool fake_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)p, (void)ctx;
    return !(s->v[0] == 32 && s->v[1] == 2);
}
static tsr_status fake_run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)ctx, (void)p, (void)s;
    return TSR_OK;
}
static const tsr_kernel fake = {
    .name = "gemm.test_fake", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_CPU, .arch = "test",
    .supports = tsr_supports_any_cpu, .num_knobs = 2, .knobs = fake_knobs,
    .schedule_valid = fake_valid, .run = fake_run,
};
/* fake, refusing tile 16 where alpha is not 1: alpha is no part of the key. */
static bool alpha_valid(const tsr_problem *p, const tsr_context *ctx, const tsr_schedule *s) {
    (void)ctx;
    return !(s->v[0] == 16 && p->u.gemm.d.alpha != 1.0f);
}
static const tsr_kernel fake_alpha = {
    .name = "gemm.test_fake", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_CPU, .arch = "test",
    .supports = tsr_supports_any_cpu, .num_knobs = 2, .knobs = fake_knobs,
    .schedule_valid = alpha_valid, .run = fake_run,
};
/* The same kernel after a change of its knob space. */
static const tsr_knob renamed_knobs[] = {{"tile_m", 3, tile_values}, {"unroll", 2, unroll_values}};
static const tsr_kernel fake_renamed = {
    .name = "gemm.test_fake", .op = TSR_OP_GEMM, .backend = TSR_BACKEND_CPU, .arch = "test",
    .supports = tsr_supports_any_cpu, .num_knobs = 2, .knobs = renamed_knobs, .run = fake_run,
};

static const tsr_device_fp test_fp = {"cpu", "x86_test", "Test CPU 9000 (8-core)", "", 8};

static tsr_problem gemm_problem(int64_t m, int64_t n, int64_t k, bool ta, bool tb, tsr_dtype t, tsr_dtype c) {
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, m, n, k, 1, ta, tb, t, c), TSR_OK);
    return w.problem;
}

/* A record of fake for an f32 NN gemm whose schedule ran gain times its
 * heuristic's rate. */
static void rec_gain(char *out, size_t n, int64_t m, int64_t nn, int64_t k, int tile, int unroll, double us,
                     double gain, int64_t tuned) {
    tsr_problem p = gemm_problem(m, nn, k, false, false, TSR_F32, TSR_F32);
    tsr_pkey key;
    ck_assert_int_eq(tsr_problem_key(&p, &key), TSR_OK);
    tsr_schedule s = {{tile, unroll}};
    ck_assert_int_eq(tsr_table_format_record(&key, &fake, &s, us, us * gain, 1.0, tuned, out, n), TSR_OK);
}

/* The same, 1.5 times the heuristic. */
static void rec(char *out, size_t n, int64_t m, int64_t nn, int64_t k, int tile, int unroll, double us,
                int64_t tuned) {
    rec_gain(out, n, m, nn, k, tile, unroll, us, 1.5, tuned);
}

static char *header(const tsr_device_fp *fp) {
    static char h[1024];
    tsr_table_header(fp, h, sizeof h);
    return h;
}

/* Parses text against test_fp; returns the status, *t owned by the caller. */
static tsr_status parse(const char *text, tsr_table **t, char *why, size_t n) {
    return tsr_table_parse(text, strlen(text), &test_fp, t, why, n);
}

static char *make_dir(void) {
    char *d = strdup("/tmp/tsr_table_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

static void remove_dir(char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[700];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

static void table_path(const char *dir, const tsr_device_fp *fp, char *out, size_t n) {
    char name[300];
    tsr_table_file_name(fp, name, sizeof name);
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static tsr_schedule sched(int tile, int unroll) { return (tsr_schedule){{tile, unroll}}; }

static void assert_lookup(const tsr_table *t, const tsr_problem *p, const tsr_kernel *k, tsr_table_hit want,
                          int tile, int unroll) {
    tsr_schedule s = sched(-1, -1);
    tsr_table_hit hit = tsr_table_lookup(t, p, NULL, k, &s);
    ck_assert_msg(hit == want, "lookup %lldx%lldx%lld: hit %d, want %d", (long long)p->u.gemm.d.m,
                  (long long)p->u.gemm.d.n, (long long)p->u.gemm.d.k, hit, want);
    if (want != TSR_TABLE_MISS) {
        ck_assert_int_eq(s.v[0], tile);
        ck_assert_int_eq(s.v[1], unroll);
    } else {
        ck_assert_int_eq(s.v[0], -1); /* a miss leaves the schedule alone */
    }
}

/* --------------------------------------------------------------- round trip */

START_TEST(round_trip) {
    char *dir = make_dir();
    char l1[512], l2[512], l3[512];
    rec(l1, sizeof l1, 64, 64, 64, 8, 1, 12.5, 1000);
    rec(l2, sizeof l2, 1024, 1024, 1024, 32, 1, 50123.25, 1001);
    rec(l3, sizeof l3, 16, 4096, 4096, 16, 2, 0.75, 1002);
    const char *lines[] = {l1, l2, l3};
    tsr_table_write_report rep;
    ck_assert_msg(tsr_table_write_merged(dir, &test_fp, lines, 3, &rep) == TSR_OK, "%s", tsr_last_error());
    ck_assert_int_eq(rep.added, 3);
    ck_assert_int_eq(rep.total, 3);
    char path[600];
    table_path(dir, &test_fp, path, sizeof path);
    ck_assert_str_eq(rep.path, path);
    /* The file name is the sanitised fingerprint. */
    ck_assert_ptr_nonnull(strstr(path, "cpu-x86_test-Test_CPU_9000_8-core-8cu.table"));

    tsr_table *t = NULL;
    char why[400];
    ck_assert_msg(tsr_table_read(path, &test_fp, &t, why, sizeof why) == TSR_OK, "%s", why);
    ck_assert_int_eq(tsr_table_count(t), 3);
    ck_assert_str_eq(tsr_table_device(t)->name, test_fp.name);
    int found = 0;
    for (int i = 0; i < 3; i++) {
        tsr_table_rec_view v;
        ck_assert(tsr_table_record(t, i, &v));
        ck_assert_str_eq(v.op, "gemm");
        ck_assert_str_eq(v.dtypes, "f32,f32,f32");
        ck_assert_str_eq(v.layout, "NN");
        ck_assert_str_eq(v.variant, "epi=none");
        ck_assert_str_eq(v.kernel, "gemm.test_fake");
        ck_assert_int_eq(v.ndims, 4);
        if (v.dims[0] == 1024) {
            found++;
            ck_assert_str_eq(v.shape, "m=1024,n=1024,k=1024,batch=1");
            ck_assert_str_eq(v.knobs, "tile=32,unroll=1");
            ck_assert_double_eq_tol(v.time_us, 50123.25, 1e-9);
            ck_assert_double_eq_tol(v.default_us, 75184.875, 1e-3);
            ck_assert_int_eq(v.tuned, 1001);
        }
        if (v.dims[0] == 16) {
            found++;
            ck_assert_double_eq_tol(v.time_us, 0.75, 1e-9);
        }
    }
    ck_assert_int_eq(found, 2);
    tsr_problem p = gemm_problem(16, 4096, 4096, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 16, 2);

    /* serialise -> parse gives the same records, in the same order. */
    size_t len;
    char *text = tsr_table_serialize(t, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_str_eq(text, read_text(path));
    tsr_table *t2 = NULL;
    ck_assert_int_eq(tsr_table_parse(text, len, &test_fp, &t2, why, sizeof why), TSR_OK);
    ck_assert_int_eq(tsr_table_count(t2), 3);
    for (int i = 0; i < 3; i++) ck_assert_str_eq(tsr_table_line(t, i), tsr_table_line(t2, i));
    free(text);
    tsr_table_free(t2);
    tsr_table_free(t);
    remove_dir(dir);
}
END_TEST

/* ------------------------------------------------------------- validators */

/* The header with validator `key` given `value` (NULL: line removed). */
static void header_with(char *out, size_t n, const char *key, const char *value) {
    char *h = header(&test_fp);
    out[0] = '\0';
    for (char *line = h; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = (size_t)(nl - line) + 1;
        char k[40];
        snprintf(k, sizeof k, "@%s", key);
        size_t kl = strlen(k);
        if (strncmp(line, k, kl) == 0 && (line[kl] == ' ' || line[kl] == '\n')) {
            if (value) snprintf(out + strlen(out), n - strlen(out), "@%s %s\n", key, value);
        } else {
            strncat(out, line, len);
        }
        line = nl + 1;
    }
}

START_TEST(validator_mismatch) {
    char r[512], text[4096], why[400];
    rec(r, sizeof r, 64, 64, 64, 8, 1, 10, 1);
    tsr_table *t = NULL;
    snprintf(text, sizeof text, "%s%s\n", header(&test_fp), r);
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    tsr_table_free(t);

    static const struct {
        const char *key, *value, *expect;
        tsr_status st;
    } cases[] = {
        {"format", "2", "format '2'", TSR_ERR_NOT_SUPPORTED},
        {"library", "0.0.9", "written by tessera 0.0.9", TSR_ERR_NOT_SUPPORTED},
        {"kernels", "0123456789abcdef", "other kernels", TSR_ERR_NOT_SUPPORTED},
        {"backend", "cuda", "backend 'cuda'", TSR_ERR_NOT_SUPPORTED},
        {"arch", "x86_avx512", "arch 'x86_avx512'", TSR_ERR_NOT_SUPPORTED},
        {"device", "Other CPU", "device 'Other CPU'", TSR_ERR_NOT_SUPPORTED},
        {"compute_units", "16", "16 compute units", TSR_ERR_NOT_SUPPORTED},
        {"compute_units", "many", "bad @compute_units", TSR_ERR_INVALID_ARGUMENT},
        {"driver", "535.1", "driver '535.1'", TSR_ERR_NOT_SUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char h[2048];
        header_with(h, sizeof h, cases[i].key, cases[i].value);
        snprintf(text, sizeof text, "%s%s\n", h, r);
        tsr_status st = parse(text, &t, why, sizeof why);
        ck_assert_msg(st == cases[i].st && t == NULL, "@%s %s: status %d (%s)", cases[i].key, cases[i].value, st, why);
        ck_assert_msg(strstr(why, cases[i].expect), "@%s: reason '%s' lacks '%s'", cases[i].key, why, cases[i].expect);
    }
    /* Every validator is required, once. */
    static const char *keys[] = {"format", "library", "kernels", "backend", "arch", "device", "compute_units", "driver"};
    for (int i = 0; i < 8; i++) {
        char h[2048];
        header_with(h, sizeof h, keys[i], NULL);
        snprintf(text, sizeof text, "%s%s\n", h, r);
        ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
        char want[40];
        snprintf(want, sizeof want, "no @%s line", keys[i]);
        ck_assert_msg(strstr(why, want), "%s: '%s'", keys[i], why);
    }
    snprintf(text, sizeof text, "%s@arch x86_test\n%s\n", header(&test_fp), r);
    ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "given twice"));
    /* Any device is accepted without an expectation, never another format. */
    tsr_device_fp other = test_fp;
    snprintf(other.name, sizeof other.name, "Other CPU");
    snprintf(text, sizeof text, "%s%s\n", header(&other), r);
    ck_assert_int_eq(tsr_table_parse(text, strlen(text), NULL, &t, why, sizeof why), TSR_OK);
    ck_assert_str_eq(tsr_table_device(t)->name, "Other CPU");
    tsr_table_free(t);
    /* Unknown @ lines and comments are fine. */
    snprintf(text, sizeof text, "# hello\n%s@tuned_by someone 2026\n   # indented comment\n\n%s\r\n", header(&test_fp), r);
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    ck_assert_int_eq(tsr_table_count(t), 1);
    tsr_table_free(t);
}
END_TEST

/* ------------------------------------------------------------ hostile files */

START_TEST(truncated_files) {
    char r1[512], r2[512], text[4096], why[400];
    rec(r1, sizeof r1, 64, 64, 64, 8, 1, 10, 1);
    rec(r2, sizeof r2, 128, 64, 64, 16, 1, 20, 1);
    snprintf(text, sizeof text, "%s%s\n%s\n", header(&test_fp), r1, r2);
    size_t full = strlen(text), hlen = strlen(header(&test_fp));
    for (size_t cut = 0; cut < full; cut++) {
        tsr_table *t = NULL;
        tsr_status st = tsr_table_parse(text, cut, &test_fp, &t, why, sizeof why);
        bool at_line_end = cut > 0 && text[cut - 1] == '\n';
        /* Accepted only when cut at a line end after the whole header. */
        if (st == TSR_OK) {
            ck_assert_msg(at_line_end && cut >= hlen, "cut %zu accepted", cut);
            ck_assert_int_eq(tsr_table_count(t), cut == full ? 2 : cut > hlen ? 1 : 0);
            tsr_table_free(t);
        } else {
            ck_assert_ptr_null(t);
            ck_assert_msg(why[0], "cut %zu: no reason", cut);
            ck_assert_msg(!(at_line_end && cut >= hlen), "cut %zu rejected: %s", cut, why);
            if (cut > 0 && !at_line_end) ck_assert_ptr_nonnull(strstr(why, "truncated"));
        }
    }
    tsr_table *t = NULL;
    ck_assert_int_eq(tsr_table_parse(text, 0, &test_fp, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "empty"));
}
END_TEST

START_TEST(random_bytes) {
    uint64_t s = 12345;
    char *buf = malloc(8192);
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s", header(&test_fp));
    size_t plen = strlen(prefix);
    for (int iter = 0; iter < 400; iter++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = 1 + (size_t)(s >> 33) % 4000;
        size_t start = 0;
        /* Half the time behind a valid header, to reach the record parser. */
        if (iter % 2) memcpy(buf, prefix, plen), start = plen;
        for (size_t i = start; i < start + len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            unsigned char c = (unsigned char)(s >> 56);
            /* Mostly printable with separators, so that fields form. */
            if (iter % 4 >= 2) c = (unsigned char)" \t\n,=.-0123456789abcdefgmnkNT_@#gemm"[c % 36];
            buf[i] = (char)c;
        }
        buf[start + len - 1] = '\n';
        tsr_table *t = NULL;
        char why[400];
        tsr_status st = tsr_table_parse(buf, start + len, &test_fp, &t, why, sizeof why);
        if (iter % 2 == 0) ck_assert_msg(st != TSR_OK, "random bytes accepted as a table");
        if (st == TSR_OK) {
            /* Whatever was accepted serialises and parses back the same. */
            size_t n;
            char *text = tsr_table_serialize(t, &n);
            tsr_table *t2 = NULL;
            ck_assert_int_eq(tsr_table_parse(text, n, &test_fp, &t2, why, sizeof why), TSR_OK);
            ck_assert_int_eq(tsr_table_count(t2), tsr_table_count(t));
            free(text);
            tsr_table_free(t2);
            tsr_table_free(t);
        } else {
            ck_assert_ptr_null(t);
        }
    }
    free(buf);
}
END_TEST

START_TEST(huge_line) {
    char *dir = make_dir(), path[600], why[400];
    table_path(dir, &test_fp, path, sizeof path);
    const char *h = header(&test_fp);
    size_t hl = strlen(h), big = (size_t)1 << 20;
    char *text = malloc(hl + big + 2);
    memcpy(text, h, hl);
    memcpy(text + hl, "gemm ", 5);
    memset(text + hl + 5, 'x', big - 5);
    text[hl + big] = '\n';
    write_text(path, text, hl + big + 1);
    tsr_table *t = NULL;
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(why, "line 9 is longer than"), "%s", why);
    /* A huge validator too. */
    memcpy(text, "@device ", 8);
    memset(text + 8, 'y', big);
    text[8 + big] = '\n';
    ck_assert_int_eq(tsr_table_parse(text, 9 + big, NULL, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "longer than"));
    free(text);
    /* Control characters and NULs are rejected, naming the line. */
    char bad[2048];
    snprintf(bad, sizeof bad, "%sgemm f32 NN x\001y\n", h);
    ck_assert_int_eq(parse(bad, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(why, "control character"));
    size_t l = strlen(h);
    memcpy(bad, h, l);
    memcpy(bad + l, "gemm\0x\n", 7);
    ck_assert_int_eq(tsr_table_parse(bad, l + 7, &test_fp, &t, why, sizeof why), TSR_ERR_INVALID_ARGUMENT);
    /* A directory or a missing file is an I/O failure, not a crash. */
    ck_assert_int_eq(tsr_table_read(dir, &test_fp, &t, why, sizeof why), TSR_ERR_IO);
    unlink(path);
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_ERR_IO);
    ck_assert_ptr_null(t);
    remove_dir(dir);
}
END_TEST

START_TEST(extra_and_missing_fields) {
    char r[512], text[8192], why[400];
    tsr_table *t = NULL;
    rec(r, sizeof r, 64, 64, 64, 8, 1, 10, 1);
    /* Extra fields (a newer writer's metrics) are kept verbatim. */
    char extra[700];
    snprintf(extra, sizeof extra, "%s gflops=51.2 note", r);
    snprintf(text, sizeof text, "%s%s\n", header(&test_fp), extra);
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    ck_assert_str_eq(tsr_table_line(t, 0), extra);
    tsr_problem p = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 8, 1);
    tsr_table_free(t);

    /* Missing fields or bad values reject the table, naming the line. */
    static const char *bad[] = {
        "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake tile=8,unroll=1 time_us=1.0",
        "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake time_us=1.0 default_us=2.0",
        "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake tile=8 time_us=-1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake tile=8 time_us=1e3 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake tile=8 time_us=nan default_us=2",
        "gemm f32,f33,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake tile=8 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64,n=-4,k=64,batch=1 gemm.test_fake tile=8 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=99999999999999999999 gemm.test_fake tile=8 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64,,k=64 gemm.test_fake tile=8 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64,m=64 gemm.test_fake tile=8 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64 gemm.test_fake tile=9999999999 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64 gemm.test_fake tile=8,tile=16 time_us=1 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64 gemm.test_fake tile=8 time_us=1 time_us=2 default_us=2",
        "gemm f32,f32,f32 NN epi=none m=64 gemm.test_fake tile=8 time_us=1 default_us=2 tuned=-5",
        "gemm f32,f32,f32 NN epi=none a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9 gemm.test_fake - time_us=1 default_us=2",
        "gemm",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s\n%s\n", header(&test_fp), r, bad[i]);
        ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_ERR_INVALID_ARGUMENT, "accepted: %s", bad[i]);
        ck_assert_msg(strstr(why, "line 10:"), "%s -> %s", bad[i], why);
    }
    /* Unknown ops and unknown kernels are kept, through a merging write. */
    char *dir = make_dir(), path[600];
    const char *keep[] = {"conv3d f32 NDHWC whatever we=do not=know", extra,
                          "gemm f32,f32,f32 NN epi=none m=8,n=8,k=8,batch=1 gemm.removed_kernel x=1 time_us=1 "
                          "default_us=2"};
    ck_assert_msg(tsr_table_write_merged(dir, &test_fp, keep, 3, NULL) == TSR_OK, "%s", tsr_last_error());
    char r2[512];
    rec(r2, sizeof r2, 128, 128, 128, 16, 2, 5, 7);
    const char *more[] = {r2};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, more, 1, NULL), TSR_OK);
    table_path(dir, &test_fp, path, sizeof path);
    const char *file = read_text(path);
    for (int i = 0; i < 3; i++) ck_assert_msg(strstr(file, keep[i]), "lost: %s\n%s", keep[i], file);
    ck_assert_ptr_nonnull(strstr(file, r2));
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_OK);
    ck_assert_int_eq(tsr_table_count(t), 4);
    tsr_table_free(t);
    /* A record line may not smuggle in a header or a line break. */
    const char *evil[] = {"@device Other"};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, evil, 1, NULL), TSR_ERR_INVALID_ARGUMENT);
    const char *evil2[] = {"gemm x\n@format 2"};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, evil2, 1, NULL), TSR_ERR_INVALID_ARGUMENT);
    const char *evil3[] = {bad[0]};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, evil3, 1, NULL), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "new records"));
    remove_dir(dir);
}
END_TEST

/* ------------------------------------------------------------------ merging */

START_TEST(merge_rule_and_bad_old_table) {
    char *dir = make_dir(), path[600], why[400];
    table_path(dir, &test_fp, path, sizeof path);
    char l[512];
    tsr_table_write_report rep;
    tsr_table *t;
    tsr_problem p = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32);
#define WRITE_AND_EXPECT(tile, us, tuned, want_tile, field)                                  \
    do {                                                                                       \
        rec(l, sizeof l, 64, 64, 64, tile, 1, us, tuned);                                      \
        const char *ls[] = {l};                                                                \
        ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, ls, 1, &rep), TSR_OK);          \
        ck_assert_int_eq(rep.field, 1);                                                        \
        ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_OK);         \
        ck_assert_int_eq(tsr_table_count(t), 1);                                               \
        assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, want_tile, 1);                            \
        tsr_table_free(t);                                                                     \
    } while (0)
    WRITE_AND_EXPECT(8, 5.0, 100, 8, added);
    WRITE_AND_EXPECT(16, 1.0, 50, 8, kept);      /* older loses, even if faster */
    WRITE_AND_EXPECT(32, 9.0, 200, 32, replaced); /* newer wins, even if slower */
    WRITE_AND_EXPECT(16, 8.0, 200, 16, replaced); /* same time stamp: faster wins */
    WRITE_AND_EXPECT(8, 8.0, 200, 16, kept);      /* a full tie keeps what is there */
#undef WRITE_AND_EXPECT
    /* Two records of one key in one file: the same rule. */
    char a[512], b[512], text[4096];
    rec(a, sizeof a, 64, 64, 64, 8, 1, 5.0, 300);
    rec(b, sizeof b, 64, 64, 64, 16, 1, 7.0, 200);
    snprintf(text, sizeof text, "%s%s\n%s\n", header(&test_fp), b, a);
    ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_OK);
    ck_assert_int_eq(tsr_table_count(t), 1);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 8, 1);
    tsr_table_free(t);

    /* An invalid old table is moved aside, not silently lost. */
    write_text(path, "garbage\n", 8);
    rec(l, sizeof l, 64, 64, 64, 8, 1, 5.0, 100);
    const char *ls[] = {l};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, ls, 1, &rep), TSR_OK);
    ck_assert_ptr_nonnull(strstr(rep.discarded, "moved to"));
    char aside[700];
    snprintf(aside, sizeof aside, "%s.rejected", path);
    ck_assert_str_eq(read_text(aside), "garbage\n");
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_OK);
    ck_assert_int_eq(tsr_table_count(t), 1);
    tsr_table_free(t);
    remove_dir(dir);
}
END_TEST

#define WRITERS 2
#define PER_WRITER 30

START_TEST(concurrent_writers) {
    char *dir = make_dir(), path[600], why[400];
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            /* One record per write: as many interleavings as possible. */
            for (int i = 0; i < PER_WRITER; i++) {
                char l[512];
                rec(l, sizeof l, 1 + i, 100 + w, 64, 8 << (i % 3), 1, 1.0 + i, 10);
                const char *ls[] = {l};
                if (tsr_table_write_merged(dir, &test_fp, ls, 1, NULL) != TSR_OK) _exit(1);
            }
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[w], &status, 0), pids[w]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
    }
    table_path(dir, &test_fp, path, sizeof path);
    tsr_table *t = NULL;
    ck_assert_msg(tsr_table_read(path, &test_fp, &t, why, sizeof why) == TSR_OK, "%s", why);
    ck_assert_int_eq(tsr_table_count(t), WRITERS * PER_WRITER);
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < PER_WRITER; i++) {
            tsr_problem p = gemm_problem(1 + i, 100 + w, 64, false, false, TSR_F32, TSR_F32);
            assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 8 << (i % 3), 1);
        }
    tsr_table_free(t);
    /* No temp files are left behind. */
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || strlen(e->d_name) > 2) {
            ck_assert_msg(e->d_name[0] != '.', "left over: %s", e->d_name);
            files++;
        }
    closedir(d);
    ck_assert_int_eq(files, 2); /* the table and its lock file */
    remove_dir(dir);
}
END_TEST

START_TEST(read_only_directory) {
    char *dir = make_dir(), path[600], why[400], l[512];
    rec(l, sizeof l, 64, 64, 64, 16, 2, 5.0, 100);
    const char *ls[] = {l};
    ck_assert_int_eq(tsr_table_write_merged(dir, &test_fp, ls, 1, NULL), TSR_OK);
    table_path(dir, &test_fp, path, sizeof path);
    ck_assert_int_eq(chmod(dir, 0555), 0);
    /* Root ignores directory permissions: then use a directory no one can write. */
    char probe[700];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    int fd = open(probe, O_CREAT | O_WRONLY, 0644);
    const char *ro = dir;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
        ro = "/sys/fs";
        printf("table: running as root; /sys/fs stands in for a read-only table directory\n");
    }
    tsr_table *t = NULL;
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_OK);
    tsr_clear_error();
    ck_assert_int_eq(tsr_table_write_merged(ro, &test_fp, ls, 1, NULL), TSR_ERR_IO);
    ck_assert_msg(strstr(tsr_last_error(), ro) && strstr(tsr_last_error(), "cannot"), "%s", tsr_last_error());
    /* The loaded table still answers, and the file is intact. */
    tsr_problem p = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 16, 2);
    tsr_table_free(t);
    ck_assert_int_eq(tsr_table_read(path, &test_fp, &t, why, sizeof why), TSR_OK);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 16, 2);
    tsr_table_free(t);
    /* A path through a regular file cannot become a directory either. */
    char under_file[700];
    snprintf(under_file, sizeof under_file, "%s/sub", path);
    ck_assert_int_eq(tsr_table_write_merged(under_file, &test_fp, ls, 1, NULL), TSR_ERR_IO);
    chmod(dir, 0755);
    remove_dir(dir);
}
END_TEST

/* ------------------------------------------------------------------- lookup */

START_TEST(nearest_shape) {
    char text[8192], why[400], l[4][512];
    rec(l[0], sizeof l[0], 64, 64, 64, 8, 1, 1, 1);
    rec(l[1], sizeof l[1], 1024, 1024, 1024, 32, 1, 1, 1);
    rec(l[2], sizeof l[2], 16, 4096, 4096, 16, 2, 1, 1);
    rec(l[3], sizeof l[3], 256, 256, 256, 16, 1, 1, 1);
    snprintf(text, sizeof text, "%s%s\n%s\n%s\n%s\n", header(&test_fp), l[0], l[1], l[2], l[3]);
    tsr_table *t = NULL;
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    struct {
        int64_t m, n, k;
        tsr_table_hit hit;
        int tile, unroll;
    } cases[] = {
        {1024, 1024, 1024, TSR_TABLE_EXACT, 32, 1},
        {60, 70, 64, TSR_TABLE_NEAREST, 8, 1},
        {1000, 1000, 1000, TSR_TABLE_NEAREST, 32, 1},
        {900, 1100, 1024, TSR_TABLE_NEAREST, 32, 1},
        {16, 4000, 4096, TSR_TABLE_NEAREST, 16, 2},
        {8, 4096, 4096, TSR_TABLE_NEAREST, 16, 2},
        {300, 200, 256, TSR_TABLE_NEAREST, 16, 1},
        {120, 120, 120, TSR_TABLE_NEAREST, 8, 1},   /* ln: 0.63 from 64, 0.76 from 256 */
        {140, 140, 140, TSR_TABLE_NEAREST, 16, 1},  /* 0.78 from 64, 0.60 from 256 */
        {4, 4, 4, TSR_TABLE_MISS, 0, 0},             /* 4.8 from 64^3: too far */
        {1, 1, 100000, TSR_TABLE_MISS, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsr_problem p = gemm_problem(cases[i].m, cases[i].n, cases[i].k, false, false, TSR_F32, TSR_F32);
        assert_lookup(t, &p, &fake, cases[i].hit, cases[i].tile, cases[i].unroll);
    }
    /* Another class (transposes, dtypes, epilogue, kernel) never matches. */
    tsr_problem p = gemm_problem(1024, 1024, 1024, false, true, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
    p = gemm_problem(1024, 1024, 1024, false, false, TSR_F16, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
    p = gemm_problem(1024, 1024, 1024, false, false, TSR_F32, TSR_F32);
    p.u.gemm.d.epilogue.num_steps = 1;
    p.u.gemm.d.epilogue.steps[0] = tsr_epilogue_activation(TSR_ACT_RELU);
    assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
    p = gemm_problem(1024, 1024, 1024, false, false, TSR_F32, TSR_F32);
    tsr_kernel other = fake;
    other.name = "gemm.test_other";
    assert_lookup(t, &p, &other, TSR_TABLE_MISS, 0, 0);
    p.u.gemm.d.batch = 4; /* batch is a dimension: near, not exact */
    assert_lookup(t, &p, &fake, TSR_TABLE_NEAREST, 32, 1);
    tsr_table_free(t);
    /* Lookups in no table, or with no kernel, miss. */
    assert_lookup(NULL, &p, &fake, TSR_TABLE_MISS, 0, 0);
}
END_TEST

/* A record that beat its heuristic by less than TSR_TABLE_NEAREST_MIN_GAIN
 * answers its own shape only; a neighbour takes the next record that did
 * beat it, or misses (the heuristic). */
START_TEST(nearest_needs_gain) {
    char text[8192], why[400], l[3][512];
    rec_gain(l[0], sizeof l[0], 512, 512, 512, 8, 1, 1, 1.03, 1);    /* a tie with the heuristic */
    rec_gain(l[1], sizeof l[1], 256, 256, 256, 16, 1, 1, 1.12, 1);   /* a clear win */
    rec_gain(l[2], sizeof l[2], 16, 4096, 4096, 32, 2, 1, 1.09, 1); /* just short of one */
    snprintf(text, sizeof text, "%s%s\n%s\n%s\n", header(&test_fp), l[0], l[1], l[2]);
    tsr_table *t = NULL;
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    tsr_problem p = gemm_problem(512, 512, 512, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 8, 1);
    p = gemm_problem(500, 520, 512, false, false, TSR_F32, TSR_F32); /* nearest 512^3, but from 256^3 */
    assert_lookup(t, &p, &fake, TSR_TABLE_NEAREST, 16, 1);
    p = gemm_problem(2048, 2048, 2048, false, false, TSR_F32, TSR_F32); /* 2.4 from 512^3, 3.6 from 256^3 */
    assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
    p = gemm_problem(16, 4096, 4096, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 32, 2);
    p = gemm_problem(8, 4096, 4096, false, false, TSR_F32, TSR_F32);
    assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
    tsr_table_free(t);
}
END_TEST

/* Nearest answers are remembered per thread: the same answers on repeats,
 * past the memo's capacity, and never from a freed table whose address a
 * new one may reuse. */
START_TEST(nearest_memo) {
    char text[8192], why[400], l[2][512];
    tsr_table *t = NULL;
    for (int round = 0; round < 2; round++) {
        int tile = round ? 16 : 8; /* the 64^3 record changes between tables */
        rec(l[0], sizeof l[0], 64, 64, 64, tile, 1, 1, 1);
        rec(l[1], sizeof l[1], 1024, 1024, 1024, 32, 1, 1, 1);
        snprintf(text, sizeof text, "%s%s\n%s\n", header(&test_fp), l[0], l[1]);
        ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
        for (int rep = 0; rep < 3; rep++) {
            tsr_problem p = gemm_problem(60, 70, 64, false, false, TSR_F32, TSR_F32);
            assert_lookup(t, &p, &fake, TSR_TABLE_NEAREST, tile, 1);
            p = gemm_problem(4, 4, 4, false, false, TSR_F32, TSR_F32);
            assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
        }
        for (int rep = 0; rep < 2; rep++) /* 300 shapes: more than the memo holds */
            for (int64_t m = 65; m < 365; m++) {
                tsr_problem p = gemm_problem(m, 64, 64, false, false, TSR_F32, TSR_F32);
                assert_lookup(t, &p, &fake, TSR_TABLE_NEAREST, tile, 1);
            }
        tsr_table_free(t);
    }
}
END_TEST

/* The lookup of p by k in ctx gives want, and then tile (unroll 1). */
static void assert_lookup_in(const tsr_table *t, const tsr_problem *p, const tsr_context *ctx, const tsr_kernel *k,
                             tsr_table_hit want, int tile) {
    tsr_schedule s = sched(-1, -1);
    const tsr_table_hit hit = tsr_table_lookup(t, p, ctx, k, &s);
    ck_assert_msg(hit == want, "lookup %lldx%lldx%lld alpha %g: hit %d, want %d", (long long)p->u.gemm.d.m,
                  (long long)p->u.gemm.d.n, (long long)p->u.gemm.d.k, (double)p->u.gemm.d.alpha, hit, want);
    ck_assert_int_eq(s.v[0], tile);
}

/* Exact answers are remembered per thread too: the same answers on
 * repeats, past the memo's capacity. A remembered schedule that a problem
 * of the same key rejects is not given to it, and the problems that take
 * it keep it. */
START_TEST(exact_memo) {
    enum { SHAPES = 300 };
    static char text[SHAPES * 200 + 2048];
    char why[400], l[2][512];
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    size_t len = (size_t)snprintf(text, sizeof text, "%s", header(&test_fp));
    for (int i = 0; i < SHAPES; i++) {
        rec(l[0], sizeof l[0], 64 + i, 64, 64, i % 2 ? 8 : 32, 1, 1, 1);
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", l[0]);
    }
    ck_assert_uint_lt(len, sizeof text);
    tsr_table *t = NULL;
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < SHAPES; i++) {
            tsr_problem p = gemm_problem(64 + i, 64, 64, false, false, TSR_F32, TSR_F32);
            assert_lookup_in(t, &p, ctx, &fake, TSR_TABLE_EXACT, i % 2 ? 8 : 32);
        }
    tsr_table_free(t);
    /* 64^3 tuned at tile 16, which alpha 2 refuses; 64x64x80 at 32 */
    rec(l[0], sizeof l[0], 64, 64, 64, 16, 1, 1, 1);
    rec(l[1], sizeof l[1], 64, 64, 80, 32, 1, 1, 1);
    snprintf(text, sizeof text, "%s%s\n%s\n", header(&test_fp), l[0], l[1]);
    ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
    tsr_problem one = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32), two = one;
    two.u.gemm.d.alpha = 2.0f;
    for (int rep = 0; rep < 4; rep++) {
        const bool first = rep % 2; /* either problem asks first */
        assert_lookup_in(t, first ? &one : &two, ctx, &fake_alpha, first ? TSR_TABLE_EXACT : TSR_TABLE_NEAREST,
                         first ? 16 : 32);
        assert_lookup_in(t, first ? &two : &one, ctx, &fake_alpha, first ? TSR_TABLE_NEAREST : TSR_TABLE_EXACT,
                         first ? 32 : 16);
    }
    tsr_table_free(t);
    tsr_context_destroy(ctx);
}
END_TEST

START_TEST(stale_knobs) {
    char text[8192], why[400];
    const char *h = header(&test_fp);
    const char *base = "gemm f32,f32,f32 NN epi=none m=64,n=64,k=64,batch=1 gemm.test_fake";
    /* Each of these no longer fits the kernel's knob space. */
    static const char *stale[] = {
        "tile=8,unroll=1,prefetch=2", /* a knob the kernel dropped */
        "tile=8",                     /* a knob the kernel added */
        "tile=12,unroll=1",           /* a value no longer offered */
        "tile_m=8,unroll=1",          /* a renamed knob */
        "-",
    };
    tsr_problem p = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32);
    tsr_table *t = NULL;
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        snprintf(text, sizeof text, "%s%s %s time_us=1 default_us=2\n", h, base, stale[i]);
        ck_assert_msg(parse(text, &t, why, sizeof why) == TSR_OK, "%s", why);
        assert_lookup(t, &p, &fake, TSR_TABLE_MISS, 0, 0);
        tsr_table_free(t);
    }
    /* Knob order does not matter; a stale exact record falls back to a
     * usable neighbour. */
    snprintf(text, sizeof text,
             "%s%s unroll=2,tile=16 time_us=1 default_us=2\n"
             "gemm f32,f32,f32 NN epi=none m=64,n=64,k=80,batch=1 gemm.test_fake tile=32,unroll=1 time_us=1 default_us=2\n",
             h, base);
    ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_OK);
    assert_lookup(t, &p, &fake, TSR_TABLE_EXACT, 16, 2);
    assert_lookup(t, &p, &fake_renamed, TSR_TABLE_MISS, 0, 0);
    tsr_table_free(t);
    snprintf(text, sizeof text,
             "%s%s tile=8,unroll=9 time_us=1 default_us=2\n"
             "gemm f32,f32,f32 NN epi=none m=64,n=64,k=80,batch=1 gemm.test_fake tile=32,unroll=1 time_us=1 default_us=2\n",
             h, base);
    ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_OK);
    assert_lookup(t, &p, &fake, TSR_TABLE_NEAREST, 32, 1);
    tsr_table_free(t);
    /* A schedule the kernel's schedule_valid() rejects is not used. */
    snprintf(text, sizeof text, "%s%s tile=32,unroll=2 time_us=1 default_us=2\n", h, base);
    ck_assert_int_eq(parse(text, &t, why, sizeof why), TSR_OK);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_schedule s = sched(-1, -1);
    ck_assert_int_eq(tsr_table_lookup(t, &p, ctx, &fake, &s), TSR_TABLE_MISS);
    ck_assert_int_eq(tsr_table_lookup(t, &p, NULL, &fake, &s), TSR_TABLE_EXACT);
    tsr_context_destroy(ctx);
    tsr_table_free(t);
}
END_TEST

/* -------------------------------------------------------- the context's table */

static void info_of(tsr_context *ctx, tsr_context_info *info) {
    memset(info, 0, sizeof *info);
    info->size = sizeof *info;
    ck_assert_int_eq(tsr_context_get_info(ctx, info), TSR_OK);
}

/* Writes a table for the default CPU context's device into dir. */
static void write_for_cpu(const char *dir, tsr_device_fp *fp) {
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_device_fp_from_context(ctx, fp);
    tsr_context_destroy(ctx);
    char l[512];
    rec(l, sizeof l, 64, 64, 64, 16, 2, 5.0, 100);
    const char *ls[] = {l};
    ck_assert_msg(tsr_table_write_merged(dir, fp, ls, 1, NULL) == TSR_OK, "%s", tsr_last_error());
}

START_TEST(context_table_locations) {
    char *dir = make_dir(), *cache = make_dir(), path[600];
    tsr_device_fp fp;
    write_for_cpu(dir, &fp);
    table_path(dir, &fp, path, sizeof path);
    tsr_context_info info;
    tsr_context *ctx = NULL;

    setenv("TESSERA_TABLE_DIR", dir, 1);
    unsetenv("TESSERA_TUNE");
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    info_of(ctx, &info);
    ck_assert_str_eq(info.table_path, path);
    ck_assert_msg(strstr(info.table_status, "loaded (1 records)"), "%s", info.table_status);
    ck_assert_ptr_nonnull(ctx->table);
    tsr_problem p = gemm_problem(64, 64, 64, false, false, TSR_F32, TSR_F32);
    tsr_schedule s = sched(0, 0);
    ck_assert(tsr_table_schedule(ctx, &p, &fake, &s));
    ck_assert_int_eq(s.v[0], 16);
    /* A second context shares the parsed table. */
    tsr_context *ctx2 = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx2, NULL), TSR_OK);
    ck_assert_ptr_eq(ctx2->table, ctx->table);
    tsr_context_destroy(ctx2);
    tsr_context_destroy(ctx);

    /* The flag and TESSERA_TUNE=off ignore it, and say so. */
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.flags = TSR_CONTEXT_NO_TUNING_TABLE;
    ck_assert_int_eq(tsr_context_create(&ctx, &o), TSR_OK);
    info_of(ctx, &info);
    ck_assert_str_eq(info.table_path, "");
    ck_assert_ptr_nonnull(strstr(info.table_status, "TSR_CONTEXT_NO_TUNING_TABLE"));
    ck_assert(!tsr_table_schedule(ctx, &p, &fake, &s));
    tsr_context_destroy(ctx);
    setenv("TESSERA_TUNE", "off", 1);
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    info_of(ctx, &info);
    ck_assert_str_eq(info.table_path, "");
    ck_assert_ptr_nonnull(strstr(info.table_status, "TESSERA_TUNE=off"));
    ck_assert_ptr_null(ctx->table);
    tsr_context_destroy(ctx);
    unsetenv("TESSERA_TUNE");

    /* The user cache, when TESSERA_TABLE_DIR is unset. */
    unsetenv("TESSERA_TABLE_DIR");
    setenv("XDG_CACHE_HOME", cache, 1);
    char user[600];
    snprintf(user, sizeof user, "%s/tessera", cache);
    char dirs[TSR_TABLE_MAX_DIRS][512];
    int nd = tsr_table_search_dirs(dirs, TSR_TABLE_MAX_DIRS);
    ck_assert_int_eq(nd, 2);
    ck_assert_str_eq(dirs[0], user);
    ck_assert_ptr_nonnull(strstr(dirs[1], "share/tessera"));
    char def[512];
    ck_assert_int_eq(tsr_table_default_dir(def, sizeof def), TSR_OK);
    ck_assert_str_eq(def, user);
    write_for_cpu(user, &fp);
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    info_of(ctx, &info);
    ck_assert_ptr_nonnull(strstr(info.table_path, user));
    tsr_context_destroy(ctx);
    /* A rewritten table is picked up by the next context. */
    char l[512];
    rec(l, sizeof l, 128, 128, 128, 8, 1, 5.0, 100);
    const char *ls[] = {l};
    ck_assert_int_eq(tsr_table_write_merged(user, &fp, ls, 1, NULL), TSR_OK);
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    info_of(ctx, &info);
    ck_assert_msg(strstr(info.table_status, "loaded (2 records)"), "%s", info.table_status);
    tsr_context_destroy(ctx);
    /* HOME is the fallback. */
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    nd = tsr_table_search_dirs(dirs, TSR_TABLE_MAX_DIRS);
    ck_assert_str_eq(dirs[0], "/home/someone/.cache/tessera");
    remove_dir(strdup(user));
    remove_dir(cache);
    remove_dir(dir);
}
END_TEST

START_TEST(context_rejects_other_device) {
    char *dir = make_dir(), path[600];
    tsr_device_fp fp, other;
    write_for_cpu(dir, &fp);
    table_path(dir, &fp, path, sizeof path);
    /* A table measured on another CPU, under this CPU's file name. */
    other = fp;
    snprintf(other.name, sizeof other.name, "Some Other CPU");
    char text[4096], l[512];
    rec(l, sizeof l, 64, 64, 64, 16, 2, 5.0, 100);
    snprintf(text, sizeof text, "%s%s\n", header(&other), l);
    write_text(path, text, strlen(text));
    setenv("TESSERA_TABLE_DIR", dir, 1);
    tsr_context *ctx = NULL;
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    tsr_context_info info;
    info_of(ctx, &info);
    ck_assert_str_eq(info.table_path, "");
    ck_assert_msg(strstr(info.table_status, "another device") && strstr(info.table_status, "Some Other CPU"), "%s",
                  info.table_status);
    ck_assert_ptr_null(ctx->table);
    tsr_context_destroy(ctx);
    /* Garbage: ignored with a reason, never a crash. */
    write_text(path, "\x7f" "ELF\x02\x01\x01\n", 8);
    ck_assert_int_eq(tsr_context_create(&ctx, NULL), TSR_OK);
    info_of(ctx, &info);
    ck_assert_msg(strstr(info.table_status, "ignored: line 1: control character"), "%s", info.table_status);
    tsr_context_destroy(ctx);
    unsetenv("TESSERA_TABLE_DIR");
    remove_dir(dir);
}
END_TEST

static void *create_in_thread(void *arg) {
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, NULL) != TSR_OK) return NULL;
    const void *t = ctx->table;
    tsr_context_destroy(ctx);
    *(const void **)arg = t;
    return NULL;
}

START_TEST(threads_share_one_load) {
    char *dir = make_dir();
    tsr_device_fp fp;
    write_for_cpu(dir, &fp);
    setenv("TESSERA_TABLE_DIR", dir, 1);
    pthread_t th[6];
    const void *seen[6] = {NULL};
    for (int i = 0; i < 6; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, create_in_thread, &seen[i]), 0);
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 6; i++) {
        ck_assert_ptr_nonnull(seen[i]);
        ck_assert_ptr_eq(seen[i], seen[0]);
    }
    unsetenv("TESSERA_TABLE_DIR");
    remove_dir(dir);
}
END_TEST

/* The dispatch hook: a stored schedule for the kernel dispatch picks is what
 * tsr_table_schedule returns, and tsr_gemm still computes the right thing. */
START_TEST(dispatch_uses_table) {
    char *dir = make_dir();
    setenv("TESSERA_TABLE_DIR", dir, 1);
    tt_context cs[TT_MAX_CONTEXTS];
    int nc = tt_contexts_open("table", cs, TT_MAX_CONTEXTS);
    const int64_t M = 37, N = 29, K = 41;
    for (int c = 0; c < nc; c++) {
        tsr_context *ctx = cs[c].ctx;
        tsr_problem p = gemm_problem(M, N, K, false, true, TSR_F32, TSR_F32);
        const tsr_kernel *k = tsr_dispatch_select(ctx, &p, NULL, 0);
        ck_assert_ptr_nonnull(k);
        if (k->num_knobs == 0) {
            printf("table: %s runs %s, which has no knobs\n", cs[c].label, k->name);
            continue;
        }
        /* A legal schedule that is not the heuristic's: the last value of every knob. */
        tsr_schedule s, def;
        memset(&s, 0, sizeof s);
        memset(&def, 0, sizeof def);
        for (int i = 0; i < k->num_knobs; i++) s.v[i] = k->knobs[i].values[k->knobs[i].num_values - 1];
        if (k->schedule_valid && !k->schedule_valid(&p, ctx, &s))
            for (int i = 0; i < k->num_knobs; i++) s.v[i] = k->knobs[i].values[0];
        if (k->schedule_valid && !k->schedule_valid(&p, ctx, &s)) continue;
        tsr_device_fp fp;
        tsr_device_fp_from_context(ctx, &fp);
        tsr_pkey key;
        tsr_problem_key(&p, &key);
        char l[1024];
        ck_assert_int_eq(tsr_table_format_record(&key, k, &s, 1.0, 2.0, 0.5, 1, l, sizeof l), TSR_OK);
        const char *ls[] = {l};
        ck_assert_int_eq(tsr_table_write_merged(dir, &fp, ls, 1, NULL), TSR_OK);
        /* A fresh context of the same backend and device loads it. */
        tsr_context *fresh = NULL;
        tsr_context_options o;
        tsr_context_options_init(&o);
        o.backend = ctx->backend, o.device = ctx->device;
        if (ctx->backend == TSR_BACKEND_CPU) setenv("TESSERA_CPU_ARCH", ctx->arch, 1);
        ck_assert_int_eq(tsr_context_create(&fresh, &o), TSR_OK);
        unsetenv("TESSERA_CPU_ARCH");
        tsr_schedule got;
        ck_assert_msg(tsr_table_schedule(fresh, &p, k, &got), "%s: %s", cs[c].label, fresh->table_status);
        ck_assert_mem_eq(got.v, s.v, sizeof(int) * (size_t)k->num_knobs);

        float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K);
        float *want = malloc(sizeof(float) * M * N), *c_host = malloc(sizeof(float) * M * N);
        tt_fill(a, TSR_F32, M * K, 1, -1, 1);
        tt_fill(b, TSR_F32, N * K, 2, -1, 1);
        tsr_gemm_desc d;
        tsr_gemm_desc_init(&d);
        d.m = M, d.n = N, d.k = K, d.trans_b = TSR_TRANS;
        tsr_context *ref = tt_ref_context();
        ck_assert_int_eq(tsr_gemm(ref, &d, a, b, want), TSR_OK);
        tsr_context_destroy(ref);
        void *da = tt_upload(fresh, a, sizeof(float) * M * K), *db = tt_upload(fresh, b, sizeof(float) * N * K);
        void *dc = tt_upload(fresh, NULL, sizeof(float) * M * N);
        ck_assert_int_eq(tsr_gemm(fresh, &d, da, db, dc), TSR_OK);
        ck_assert_str_eq(tsr_last_kernel(), k->name);
        tt_download(fresh, c_host, dc, sizeof(float) * M * N);
        ck_assert_int_eq(tt_compare(cs[c].label, c_host, want, TSR_F32, M * N, 1e-5, tt_rtol(TSR_F32, K)), 0);
        tt_free(fresh, da), tt_free(fresh, db), tt_free(fresh, dc);
        free(a), free(b), free(want), free(c_host);
        tsr_context_destroy(fresh);
    }
    tt_contexts_close(cs, nc);
    unsetenv("TESSERA_TABLE_DIR");
    remove_dir(dir);
}
END_TEST

START_TEST(problem_keys) {
    tsr_pkey k;
    tsr_problem p = gemm_problem(5, 6, 7, true, false, TSR_BF16, TSR_F32);
    ck_assert_int_eq(tsr_problem_key(&p, &k), TSR_OK);
    ck_assert_str_eq(k.dtypes, "bf16,bf16,f32");
    ck_assert_str_eq(k.layout, "TN");
    ck_assert_str_eq(k.variant, "epi=none");
    char shape[128];
    tsr_pkey_shape(&k, shape, sizeof shape);
    ck_assert_str_eq(shape, "m=5,n=6,k=7,batch=1");
    p.u.gemm.d.epilogue.num_steps = 3;
    p.u.gemm.d.epilogue.steps[0] = tsr_epilogue_bias(&k, TSR_BF16);
    p.u.gemm.d.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_GELU_TANH);
    p.u.gemm.d.epilogue.steps[2] = tsr_epilogue_residual(&k, TSR_F32, 0, 1.0f);
    p.u.gemm.bias_along_m = true;
    ck_assert_int_eq(tsr_problem_key(&p, &k), TSR_OK);
    ck_assert_str_eq(k.variant, "epi=bias_m:bf16+gelu_tanh+residual");
    /* Every op has a key with a class and dims. */
    for (int op = 0; op < TSR_OP_COUNT; op++) {
        tsr_problem q;
        memset(&q, 0, sizeof q);
        q.op = (tsr_op)op;
        ck_assert_int_eq(tsr_problem_key(&q, &k), TSR_OK);
        ck_assert_int_gt(k.ndims, 0);
        ck_assert_int_gt((int)strlen(k.dtypes), 0);
    }
    tsr_problem bad;
    memset(&bad, 0, sizeof bad);
    bad.op = TSR_OP_COUNT;
    ck_assert_int_eq(tsr_problem_key(&bad, &k), TSR_ERR_INVALID_ARGUMENT);
    /* Shapes too big to tune are refused with a message. */
    tsr_workload w;
    ck_assert_int_eq(tsr_workload_gemm(&w, INT64_MAX / 2, 4, 4, 1, false, false, TSR_F32, TSR_F32),
                     TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_workload_gemm(&w, 0, 4, 4, 1, false, false, TSR_F32, TSR_F32), TSR_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(tsr_workload_gemm(&w, 4, 4, 4, 1, false, false, TSR_F32, TSR_F16), TSR_ERR_NOT_SUPPORTED);
}
END_TEST

static Suite *table_suite(void) {
    Suite *s = suite_create("table");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, validator_mismatch);
    tcase_add_test(tc, truncated_files);
    tcase_add_test(tc, random_bytes);
    tcase_add_test(tc, huge_line);
    tcase_add_test(tc, extra_and_missing_fields);
    tcase_add_test(tc, merge_rule_and_bad_old_table);
    tcase_add_test(tc, concurrent_writers);
    tcase_add_test(tc, read_only_directory);
    tcase_add_test(tc, nearest_shape);
    tcase_add_test(tc, nearest_needs_gain);
    tcase_add_test(tc, nearest_memo);
    tcase_add_test(tc, exact_memo);
    tcase_add_test(tc, stale_knobs);
    tcase_add_test(tc, context_table_locations);
    tcase_add_test(tc, context_rejects_other_device);
    tcase_add_test(tc, threads_share_one_load);
    tcase_add_test(tc, dispatch_uses_table);
    tcase_add_test(tc, problem_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    /* No test may read or write the user's real tables. */
    unsetenv("TESSERA_TUNE");
    char dir[] = "/tmp/tsr_table_home_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_CACHE_HOME", dir, 1);
    int rc = tt_run_suite(table_suite());
    rmdir(dir);
    return rc;
}
