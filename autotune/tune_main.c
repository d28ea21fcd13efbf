/* tessera-tune: measures schedules on this machine and saves the fastest
 * correct ones in the tuning table libtessera reads at run time. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../bench/shapes.h"
#include "table.h"
#include "tuner.h"

#ifndef TSR_SHAPES_DIR
#define TSR_SHAPES_DIR "bench/shapes"
#endif
#ifndef TSR_SHAPES_INSTALL_DIR
#define TSR_SHAPES_INSTALL_DIR TSR_SHAPES_DIR
#endif

enum {
    EXIT_DONE = 0,
    EXIT_USAGE = 1,
    EXIT_SETUP = 2,
    EXIT_WRITE = 3,
    EXIT_INTERRUPTED = 4,
    EXIT_WRONG = 5,
    EXIT_VERIFY_LOST = 6,
};

static const char usage[] =
    "Usage: tessera-tune [options]\n"
    "Measures the schedules (tile sizes, ...) of the kernels this machine runs on a set\n"
    "of shapes, checks each one's results against the reference kernels, and saves the\n"
    "fastest correct one per shape in this device's tuning table.\n"
    "\n"
    "  --backend NAME      cpu (default), cuda, hip or opencl\n"
    "  --device N          device index within the backend (default 0)\n"
    "  --threads N         CPU worker threads (default: every core)\n"
    "  --op NAME           the operation to tune: gemm (default), conv or attention\n"
    "  --dtype T[:C]       input dtype, optionally the output's: f32 (default), f16, bf16,\n"
    "                      f16:f32, bf16:f32, i8 (output i32)\n"
    "  --shapes FILE       a shape file (gemm: lines `m n k [NN|NT|TN|TT]`; attention: lines\n"
    "                      `batch heads_q heads_kv seq_q seq_kv head_dim [none|top_left|bottom_right]`;\n"
    "                      conv: lines `name c h w k r s stride pad groups` at batch 1, or a set\n"
    "                      name (resnet50, mobilenetv2_dw);\n"
    "                      # comments), or a set\n"
    "                      name (square, llama, skinny, quick) from\n"
    "                      " TSR_SHAPES_INSTALL_DIR "\n"
    "                      Default: quick\n"
    "  --quick             a small built-in shape set and fewer candidates (about a minute)\n"
    "  --budget SECONDS    time for the whole run (default 1800; 50 with --quick);\n"
    "                      shapes not reached are left for the next run\n"
    "  --max-candidates N  schedules measured per shape and kernel (default 48; 24 with --quick)\n"
    "  --force             re-tune shapes the table already has\n"
    "  --out DIR           table directory (default: $TESSERA_TABLE_DIR, else\n"
    "                      $XDG_CACHE_HOME/tessera or ~/.cache/tessera; packagers:\n"
    "                      <prefix>/share/tessera)\n"
    "  --show              print this device's table and exit\n"
    "  --verify            re-time every stored winner against the kernel's heuristic\n"
    "                      schedule and report the ones that lost\n"
    "  --seed N            random sampling seed (default 1)\n"
    "  -h, --help          this text\n"
    "\n"
    "Ctrl-C stops after the current candidate; finished shapes are already saved.\n"
    "\n"
    "Exit status:\n"
    "  0  done\n"
    "  1  bad command line\n"
    "  2  cannot start: no such backend or device, bad shape file, op or dtype not tunable\n"
    "  3  the table could not be written\n"
    "  4  interrupted; the shapes finished before are saved\n"
    "  5  some candidates computed wrong results (kernel bugs, listed above); the saved\n"
    "     winners are all correct\n"
    "  6  --verify: some stored winners are slower than the heuristic, wrong, or stale\n";

typedef struct cli {
    tsr_backend backend;
    int device, threads;
    const char *op, *dtype, *shapes, *out;
    double budget;
    int max_candidates;
    bool quick, force, show, verify;
    uint64_t seed;
    tsr_dtype ab, c;
} cli;

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    (void)sig;
    interrupted = 1; /* SA_RESETHAND: a second Ctrl-C ends the process */
}

/* ------------------------------------------------------------- arguments */

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool dtype_of(const char *s, size_t len, tsr_dtype *t) {
    for (int i = TSR_F32; i <= TSR_I32; i++) {
        const char *n = tsr_dtype_name((tsr_dtype)i);
        if (strlen(n) == len && strncmp(n, s, len) == 0) {
            *t = (tsr_dtype)i;
            return true;
        }
    }
    return false;
}

static int parse_args(int argc, char **argv, cli *c) {
    memset(c, 0, sizeof *c);
    c->backend = TSR_BACKEND_CPU;
    c->op = "gemm";
    c->dtype = "f32";
    c->budget = -1;
    c->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
#define NEED_VALUE()                                                                                       \
    do {                                                                                                   \
        if (!v) {                                                                                          \
            fprintf(stderr, "tessera-tune: %s needs a value (see --help)\n", a);                            \
            return EXIT_USAGE;                                                                             \
        }                                                                                                  \
        i++;                                                                                               \
    } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(EXIT_DONE);
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE();
            bool ok = false;
            for (int b = TSR_BACKEND_CPU; b <= TSR_BACKEND_OPENCL; b++)
                if (!strcmp(v, tsr_backend_name((tsr_backend)b))) c->backend = (tsr_backend)b, ok = true;
            if (!ok) {
                fprintf(stderr, "tessera-tune: --backend %s: want cpu, cuda, hip or opencl\n", v);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--device") || !strcmp(a, "--threads") || !strcmp(a, "--max-candidates")) {
            NEED_VALUE();
            if (!parse_long(v, a[2] == 'd' ? 0 : 1, 1 << 20, &n)) {
                fprintf(stderr, "tessera-tune: %s %s: want a%s integer\n", a, v, a[2] == 'd' ? " non-negative" : " positive");
                return EXIT_USAGE;
            }
            if (a[2] == 'd') c->device = (int)n;
            else if (a[2] == 't') c->threads = (int)n;
            else c->max_candidates = (int)n;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (!parse_long(v, 0, 0x7fffffffL, &n)) {
                fprintf(stderr, "tessera-tune: --seed %s: want a non-negative integer\n", v);
                return EXIT_USAGE;
            }
            c->seed = (uint64_t)n;
        } else if (!strcmp(a, "--budget")) {
            NEED_VALUE();
            char *end;
            c->budget = strtod(v, &end);
            if (end == v || *end || !(c->budget > 0) || c->budget > 1e7) {
                fprintf(stderr, "tessera-tune: --budget %s: want seconds > 0\n", v);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--op")) {
            NEED_VALUE();
            c->op = v;
        } else if (!strcmp(a, "--dtype")) {
            NEED_VALUE();
            c->dtype = v;
        } else if (!strcmp(a, "--shapes")) {
            NEED_VALUE();
            c->shapes = v;
        } else if (!strcmp(a, "--out")) {
            NEED_VALUE();
            c->out = v;
        } else if (!strcmp(a, "--quick")) c->quick = true;
        else if (!strcmp(a, "--force")) c->force = true;
        else if (!strcmp(a, "--show")) c->show = true;
        else if (!strcmp(a, "--verify")) c->verify = true;
        else {
            fprintf(stderr, "tessera-tune: unknown option '%s' (see --help)\n", a);
            return EXIT_USAGE;
        }
#undef NEED_VALUE
    }
    if (c->show && c->verify) {
        fprintf(stderr, "tessera-tune: --show and --verify are separate runs\n");
        return EXIT_USAGE;
    }
    if (strcmp(c->op, "gemm") != 0 && strcmp(c->op, "attention") != 0 && strcmp(c->op, "conv") != 0) {
        fprintf(stderr, "tessera-tune: --op %s: gemm, conv and attention have tuning workloads so far\n", c->op);
        return EXIT_SETUP;
    }
    const char *colon = strchr(c->dtype, ':');
    size_t len = colon ? (size_t)(colon - c->dtype) : strlen(c->dtype);
    if (!dtype_of(c->dtype, len, &c->ab) || (colon && !dtype_of(colon + 1, strlen(colon + 1), &c->c))) {
        fprintf(stderr, "tessera-tune: --dtype %s: want f32, f16, bf16, i8, or IN:OUT such as f16:f32\n", c->dtype);
        return EXIT_USAGE;
    }
    if (!colon) c->c = c->ab == TSR_I8 ? TSR_I32 : c->ab;
    if (c->budget < 0) c->budget = c->quick ? 50 : 1800;
    if (!c->max_candidates) c->max_candidates = c->quick ? 24 : 48;
    return -1;
}

/* ---------------------------------------------------------------- output */

static void fmt_time(double us, char *out, size_t n) {
    if (us < 1000) snprintf(out, n, "%.1f us", us);
    else if (us < 1e6) snprintf(out, n, "%.2f ms", us / 1e3);
    else snprintf(out, n, "%.3f s", us / 1e6);
}

typedef struct progress {
    bool tty;
    int shape, shapes;
    char label[96];
    double deadline;
} progress;

static void bar(const progress *p, int cand, int planned, double best_us) {
    if (!p->tty) return;
    int width = 24, done = p->shapes ? (p->shape * width) / p->shapes : 0;
    char b[32], best[32] = "-";
    for (int i = 0; i < width; i++) b[i] = i < done ? '=' : (i == done ? '>' : ' ');
    b[width] = '\0';
    if (best_us > 0) fmt_time(best_us, best, sizeof best);
    double left = p->deadline - tsr_now();
    if (left < 0) left = 0;
    fprintf(stderr, "\r\033[K[%s] %d/%d %s  candidate %d/%d  best %s  budget left %d:%02d", b, p->shape + 1,
            p->shapes, p->label, cand, planned, best, (int)left / 60, (int)left % 60);
    fflush(stderr);
}

static void clear_bar(const progress *p) {
    if (p->tty) fprintf(stderr, "\r\033[K");
}

static void on_event(const tsr_tune_event *ev, void *user) {
    progress *p = user;
    if (ev->kind == TSR_TUNE_EV_WRONG || ev->kind == TSR_TUNE_EV_FAILED) {
        char knobs[256];
        tsr_table_knobs_format(ev->kernel, ev->schedule, knobs, sizeof knobs);
        clear_bar(p);
        fprintf(stderr, "%s: %s %s %s: %s\n", ev->kind == TSR_TUNE_EV_WRONG ? "WRONG" : "FAILED", p->label,
                ev->kernel->name, knobs, ev->detail ? ev->detail : "");
    }
    bar(p, ev->index, ev->planned, ev->best_us);
}

/* --------------------------------------------------------------- shapes */

static const gemm_shape quick_shapes[] = {
    {64, 64, 64, 0, 0},    {128, 128, 128, 0, 0},  {256, 256, 256, 0, 0},  {512, 512, 512, 0, 0},
    {1, 1024, 1024, 0, 1}, {16, 1024, 1024, 0, 1}, {128, 512, 512, 0, 1},
};

/* Attention shapes: decode (GQA, long caches) and prefill, causal and not. */
static const attn_shape quick_attention[] = {
    {1, 4, 4, 512, 512, 64, TSR_CAUSAL_NONE},   {1, 4, 4, 512, 512, 128, TSR_CAUSAL_TOP_LEFT},
    {1, 32, 8, 1, 4096, 128, TSR_CAUSAL_NONE},  {1, 32, 8, 8, 2048, 128, TSR_CAUSAL_BOTTOM_RIGHT},
};

/* Conv shapes (batch 1): a 3x3, a 1x1, a stride-2 stem and a depthwise layer. */
static const conv_shape quick_conv[] = {
    {"res3_3x3", 128, 28, 28, 128, 3, 3, 1, 1, 1, 0}, {"res4_1x1", 1024, 14, 14, 256, 1, 1, 1, 0, 1, 0},
    {"stem", 3, 224, 224, 64, 7, 7, 2, 3, 1, 0},       {"dw", 144, 56, 56, 144, 3, 3, 1, 1, 144, 0},
};

/* The shapes of one run, of the op being tuned. */
typedef struct shape_set {
    int n;
    gemm_shape *gemm;
    attn_shape *attention;
    conv_shape *conv;
} shape_set;

static int load_shapes(const cli *c, gemm_shape **out);

static int load_set(const cli *c, shape_set *set) {
    memset(set, 0, sizeof *set);
    if (strcmp(c->op, "conv") == 0) {
        if (c->shapes) {
            struct stat st;
            const char *dir = stat(TSR_SHAPES_INSTALL_DIR, &st) == 0 ? TSR_SHAPES_INSTALL_DIR : TSR_SHAPES_DIR;
            return set->n = shapes_read_conv(c->shapes, dir, &set->conv);
        }
        set->conv = malloc(sizeof quick_conv);
        if (!set->conv) return set->n = -1;
        memcpy(set->conv, quick_conv, sizeof quick_conv);
        return set->n = (int)(sizeof quick_conv / sizeof quick_conv[0]);
    }
    if (strcmp(c->op, "attention") != 0) return set->n = load_shapes(c, &set->gemm);
    if (c->shapes) return set->n = shapes_read_attention(c->shapes, &set->attention);
    set->attention = malloc(sizeof quick_attention);
    if (!set->attention) return set->n = -1;
    memcpy(set->attention, quick_attention, sizeof quick_attention);
    return set->n = (int)(sizeof quick_attention / sizeof quick_attention[0]);
}

static void free_set(shape_set *set) { free(set->gemm), free(set->attention), free(set->conv); }

static int load_shapes(const cli *c, gemm_shape **out) {
    if (c->quick && !c->shapes) {
        *out = malloc(sizeof quick_shapes);
        if (!*out) return -1;
        memcpy(*out, quick_shapes, sizeof quick_shapes);
        return (int)(sizeof quick_shapes / sizeof quick_shapes[0]);
    }
    /* The installed shape sets, else the source tree's (an uninstalled build). */
    struct stat st;
    const char *dir = stat(TSR_SHAPES_INSTALL_DIR, &st) == 0 ? TSR_SHAPES_INSTALL_DIR : TSR_SHAPES_DIR;
    return shapes_read_gemm(c->shapes ? c->shapes : "quick", dir, out);
}

static void shape_label(const shape_set *set, int i, const cli *c, char *out, size_t n) {
    static const char *const causal[] = {"none", "top_left", "bottom_right"};
    if (set->conv) {
        const conv_shape *v = &set->conv[i];
        snprintf(out, n, "conv %s %s c%lld %lldx%lld k%lld %lldx%lld s%lld p%lld g%lld", c->dtype, v->name,
                 (long long)v->c, (long long)v->h, (long long)v->w, (long long)v->k, (long long)v->r, (long long)v->s,
                 (long long)v->stride, (long long)v->pad, (long long)v->groups);
        return;
    }
    if (set->attention) {
        const attn_shape *a = &set->attention[i];
        snprintf(out, n, "attention %s b%lld h%lld/%lld sq%lld skv%lld d%lld %s", c->dtype, (long long)a->b,
                 (long long)a->hq, (long long)a->hkv, (long long)a->sq, (long long)a->skv, (long long)a->d,
                 causal[a->causal]);
        return;
    }
    const gemm_shape *s = &set->gemm[i];
    snprintf(out, n, "gemm %s %c%c %lldx%lldx%lld", c->dtype, s->trans_a ? 'T' : 'N', s->trans_b ? 'T' : 'N',
             (long long)s->m, (long long)s->n, (long long)s->k);
}

static tsr_status shape_workload(const shape_set *set, int i, const cli *c, tsr_workload *w) {
    if (set->conv) { /* batch 1, as the shape files carry no batch */
        const conv_shape *v = &set->conv[i];
        return tsr_workload_conv(w, 1, v->c, v->h, v->w, v->k, v->r, v->s, v->stride, v->pad, v->groups, c->ab);
    }
    if (set->attention) {
        const attn_shape *a = &set->attention[i];
        return tsr_workload_attention(w, a->b, a->hq, a->hkv, a->sq, a->skv, a->d, (tsr_causal)a->causal, c->ab);
    }
    const gemm_shape *s = &set->gemm[i];
    return tsr_workload_gemm(w, s->m, s->n, s->k, 1, s->trans_a, s->trans_b, c->ab, c->c);
}

/* ------------------------------------------------------------ --show */

static const char *table_for(tsr_context *ctx, const cli *c, char *path, size_t n, tsr_table **t) {
    tsr_device_fp fp;
    tsr_device_fp_from_context(ctx, &fp);
    static char why[512];
    *t = NULL;
    if (c->out) {
        char name[300];
        tsr_table_file_name(&fp, name, sizeof name);
        snprintf(path, n, "%s/%s", c->out, name);
    } else if (ctx->table_path[0]) {
        snprintf(path, n, "%s", ctx->table_path);
    } else {
        snprintf(why, sizeof why, "%s", ctx->table_status);
        return why;
    }
    char reason[400];
    if (tsr_table_read(path, &fp, t, reason, sizeof reason) != TSR_OK) {
        snprintf(why, sizeof why, "%.100s: %.300s", path, reason);
        return why;
    }
    return NULL;
}

static int show(tsr_context *ctx, const cli *c) {
    char path[600];
    tsr_table *t;
    const char *why = table_for(ctx, c, path, sizeof path, &t);
    tsr_context_info info = {.size = sizeof info};
    tsr_context_get_info(ctx, &info);
    printf("device: %s %s '%s', %d compute units%s%s\n", tsr_backend_name(info.backend), info.arch,
           info.device_name, info.compute_units, info.driver[0] ? ", driver " : "", info.driver);
    if (why) {
        printf("no table: %s\n", why);
        return EXIT_DONE;
    }
    printf("table: %s (%d records)\n", path, tsr_table_count(t));
    printf("%-6s %-16s %-6s %-10s %-26s %-24s %12s %12s %7s\n", "op", "dtypes", "layout", "variant", "shape",
           "kernel", "time", "default", "speedup");
    int unknown = 0;
    for (int i = 0; i < tsr_table_count(t); i++) {
        tsr_table_rec_view v;
        if (!tsr_table_record(t, i, &v)) {
            unknown++;
            continue;
        }
        char tt[32], dt[32], sp[16] = "-";
        fmt_time(v.time_us, tt, sizeof tt);
        fmt_time(v.default_us, dt, sizeof dt);
        if (v.time_us > 0 && v.default_us > 0) snprintf(sp, sizeof sp, "%.2fx", v.default_us / v.time_us);
        printf("%-6s %-16s %-6s %-10s %-26s %-24s %12s %12s %7s\n       knobs %s\n", v.op, v.dtypes, v.layout,
               v.variant, v.shape, v.kernel, tt, dt, sp, v.knobs);
    }
    if (unknown) printf("(%d records of ops this version does not know, kept as they are)\n", unknown);
    tsr_table_free(t);
    return EXIT_DONE;
}

/* ----------------------------------------------------------- --verify */

static int verify(tsr_context *ctx, const cli *c) {
    char path[600];
    tsr_table *t;
    const char *why = table_for(ctx, c, path, sizeof path, &t);
    if (why) {
        printf("nothing to verify: %s\n", why);
        return EXIT_DONE;
    }
    printf("verifying %s (%d records)\n", path, tsr_table_count(t));
    tsr_tune_options o;
    tsr_tune_options_init(&o);
    o.candidate_s = 0.3;
    o.stop = &interrupted;
    int lost = 0, checked = 0;
    for (int i = 0; i < tsr_table_count(t) && !interrupted; i++) {
        tsr_table_rec_view v;
        if (!tsr_table_record(t, i, &v)) continue;
        char label[300];
        snprintf(label, sizeof label, "%s %s %s %s %s", v.op, v.dtypes, v.layout, v.shape, v.kernel);
        tsr_workload w;
        const tsr_kernel *k = tsr_registry_find(v.kernel);
        if (!k) {
            printf("skip   %s: no such kernel in this library\n", label);
            continue;
        }
        if (tsr_workload_from_record(&w, &v) != TSR_OK) {
            printf("skip   %s: %s\n", label, tsr_last_error());
            continue;
        }
        tsr_schedule stored, def;
        memset(&def, 0, sizeof def);
        if (!tsr_table_knobs_resolve(v.knobs, k, &stored)) {
            printf("STALE  %s: knobs %s are not the kernel's knob space any more\n", label, v.knobs);
            lost++;
            continue;
        }
        if (tsr_workload_setup(&w, ctx, 0, c->seed) != TSR_OK) {
            printf("skip   %s: %s\n", label, tsr_last_error());
            continue;
        }
        if (k->default_schedule) k->default_schedule(&w.problem, ctx, &def);
        char err[400];
        checked++;
        if (!tsr_tune_check(&w, k, &stored, err, sizeof err)) {
            printf("WRONG  %s %s: %s\n", label, v.knobs, err);
            lost++;
            tsr_workload_release(&w);
            continue;
        }
        /* Alternate the two, twice, and keep each one's best median. */
        double ts = 0, td = 0;
        tsr_status st = TSR_OK;
        for (int round = 0; round < 2 && st == TSR_OK; round++) {
            tsr_measurement ms, md;
            st = tsr_tune_time(&w, k, &stored, &o, 0, &ms);
            if (st == TSR_OK) st = tsr_tune_time(&w, k, &def, &o, 0, &md);
            if (st == TSR_OK) {
                ts = round == 0 || ms.median_us < ts ? ms.median_us : ts;
                td = round == 0 || md.median_us < td ? md.median_us : td;
            }
        }
        if (st != TSR_OK) {
            printf("FAILED %s: %s\n", label, tsr_last_error());
            lost++;
        } else {
            char a[32], b[32];
            fmt_time(ts, a, sizeof a);
            fmt_time(td, b, sizeof b);
            /* 3%: below that, two schedules are within the noise. */
            bool lost_it = ts > td * 1.03;
            lost += lost_it;
            printf("%-6s %s: stored %s, heuristic %s (%.2fx)\n", lost_it ? "LOST" : "ok", label, a, b, td / ts);
        }
        tsr_workload_release(&w);
    }
    tsr_table_free(t);
    printf("%d records re-timed, %d lost to the heuristic, were wrong or stale\n", checked, lost);
    if (interrupted) return EXIT_INTERRUPTED;
    return lost ? EXIT_VERIFY_LOST : EXIT_DONE;
}

/* ------------------------------------------------------------- tuning */

static int tune(tsr_context *ctx, const cli *c, const char *dir) {
    shape_set shapes;
    int n = load_set(c, &shapes);
    if (n < 0) return EXIT_SETUP;
    if (n == 0) {
        fprintf(stderr, "tessera-tune: the shape set is empty\n");
        free_set(&shapes);
        return EXIT_SETUP;
    }
    tsr_device_fp fp;
    tsr_device_fp_from_context(ctx, &fp);
    /* Fail now, not after the first shape, if the table cannot be written. */
    tsr_table_write_report rep;
    if (tsr_table_write_merged(dir, &fp, NULL, 0, &rep) != TSR_OK) {
        fprintf(stderr, "tessera-tune: %s\n", tsr_last_error());
        free_set(&shapes);
        return EXIT_WRITE;
    }
    if (rep.discarded[0]) fprintf(stderr, "tessera-tune: the old table was invalid: %s\n", rep.discarded);
    tsr_table *existing = NULL;
    char why[400];
    tsr_table_read(rep.path, &fp, &existing, why, sizeof why);
    printf("tuning %d shapes on %s %s '%s' (%d threads), budget %.0f s; table %s\n", n, fp.backend, fp.arch,
           fp.name, ctx->num_threads, c->budget, rep.path);

    progress pg = {isatty(STDERR_FILENO) != 0, 0, n, "", tsr_now() + c->budget};
    int saved = 0, skipped = 0, wrong = 0, unreached = 0, rc = EXIT_DONE;
    for (int i = 0; i < n; i++) {
        pg.shape = i;
        shape_label(&shapes, i, c, pg.label, sizeof pg.label);
        if (interrupted) break;
        double now = tsr_now();
        if (now >= pg.deadline) {
            unreached = n - i;
            break;
        }
        tsr_workload w;
        if (shape_workload(&shapes, i, c, &w) != TSR_OK) {
            clear_bar(&pg);
            fprintf(stderr, "tessera-tune: %s: %s\n", pg.label, tsr_last_error());
            rc = EXIT_SETUP;
            break;
        }
        /* Already tuned for the kernel that would run it? */
        const tsr_kernel *k = tsr_dispatch_select(ctx, &w.problem, why, sizeof why);
        if (!k) {
            clear_bar(&pg);
            fprintf(stderr, "tessera-tune: %s: %s\n", pg.label, why);
            rc = EXIT_SETUP;
            break;
        }
        tsr_schedule have;
        if (k->num_knobs == 0) {
            clear_bar(&pg);
            printf("[%d/%d] %s: %s has no knobs, nothing to tune\n", i + 1, n, pg.label, k->name);
            continue;
        }
        if (!c->force && existing && tsr_table_lookup(existing, &w.problem, ctx, k, &have) == TSR_TABLE_EXACT) {
            skipped++;
            continue;
        }
        bar(&pg, 0, c->max_candidates, 0);
        if (tsr_workload_setup(&w, ctx, 0, c->seed) != TSR_OK) {
            clear_bar(&pg);
            fprintf(stderr, "tessera-tune: %s: %s\n", pg.label, tsr_last_error());
            rc = EXIT_SETUP;
            break;
        }
        /* This shape's share of what is left; time it does not use passes on. */
        tsr_tune_options o;
        tsr_tune_options_init(&o);
        o.max_candidates = c->max_candidates;
        o.seed = c->seed;
        o.stop = &interrupted;
        o.on_event = on_event;
        o.user = &pg;
        o.deadline = now + (pg.deadline - now) / (n - i);
        if (c->quick) o.candidate_s = 0.05;
        tsr_tune_result r;
        int got = 0;
        tsr_status st = tsr_tune(&w, &o, &r, 1, &got);
        clear_bar(&pg);
        if (st != TSR_OK) {
            fprintf(stderr, "tessera-tune: %s: %s\n", pg.label, tsr_last_error());
            tsr_workload_release(&w);
            continue;
        }
        if (got == 0) {
            tsr_workload_release(&w);
            continue;
        }
        wrong += r.wrong;
        if (r.interrupted) {
            printf("[%d/%d] %s: interrupted, not saved\n", i + 1, n, pg.label);
            tsr_workload_release(&w);
            break;
        }
        if (!r.found) {
            printf("[%d/%d] %s: %s: no correct schedule measured%s\n", i + 1, n, pg.label, k->name,
                   r.out_of_time ? " (out of time)" : "");
            tsr_workload_release(&w);
            continue;
        }
        char line[TSR_TABLE_MAX_LINE], knobs[256], best[32], def[32] = "-";
        tsr_table_knobs_format(r.kernel, &r.best, knobs, sizeof knobs);
        fmt_time(r.best_us, best, sizeof best);
        if (r.default_ok) fmt_time(r.default_us, def, sizeof def);
        printf("[%d/%d] %s: %s %s %s (heuristic %s, %.2fx; %d measured%s%s)\n", i + 1, n, pg.label, r.kernel->name,
               knobs, best, def, r.default_ok ? r.default_us / r.best_us : 0.0, r.tried,
               r.wrong ? ", some WRONG" : "", r.out_of_time ? ", out of time" : "");
        fflush(stdout);
        if (tsr_tune_record(&w, &r, line, sizeof line) == TSR_OK) {
            const char *lines[] = {line};
            /* Saved at once: an interrupt or a crash later loses nothing. */
            if (tsr_table_write_merged(dir, &fp, lines, 1, &rep) != TSR_OK) {
                fprintf(stderr, "tessera-tune: %s\n", tsr_last_error());
                rc = EXIT_WRITE;
                tsr_workload_release(&w);
                break;
            }
            saved++;
        }
        tsr_workload_release(&w);
    }
    clear_bar(&pg);
    tsr_table_free(existing);
    free_set(&shapes);
    printf("%d shapes saved to %s", saved, rep.path);
    if (skipped) printf(", %d already in the table (--force re-tunes them)", skipped);
    if (unreached) printf(", %d not reached within the budget (run again to continue)", unreached);
    printf("\n");
    if (rc != EXIT_DONE) return rc;
    if (interrupted) {
        printf("interrupted: the shapes finished before are saved\n");
        return EXIT_INTERRUPTED;
    }
    if (wrong) {
        fprintf(stderr, "tessera-tune: %d candidate schedules computed wrong results (see WRONG above)\n", wrong);
        return EXIT_WRONG;
    }
    return EXIT_DONE;
}

int main(int argc, char **argv) {
    cli c;
    int rc = parse_args(argc, argv, &c);
    if (rc >= 0) return rc;

    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = c.backend;
    o.device = c.device;
    o.num_threads = c.threads;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        fprintf(stderr, "tessera-tune: %s\n", tsr_last_error());
        return EXIT_SETUP;
    }
    char dir[512];
    if (c.out) snprintf(dir, sizeof dir, "%s", c.out);
    else if (tsr_table_default_dir(dir, sizeof dir) != TSR_OK && !c.show && !c.verify) {
        fprintf(stderr, "tessera-tune: %s\n", tsr_last_error());
        tsr_context_destroy(ctx);
        return EXIT_WRITE;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    if (c.show) rc = show(ctx, &c);
    else if (c.verify) rc = verify(ctx, &c);
    else rc = tune(ctx, &c, dir);
    tsr_context_destroy(ctx);
    return rc;
}
