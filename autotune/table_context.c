/* Which table a context uses, loaded once per process.
 *
 * Search: TESSERA_TABLE_DIR alone when set; else the user's cache
 * ($XDG_CACHE_HOME/tessera, ~/.cache/tessera), then the system's
 * (<prefix>/share/tessera). The first valid table wins as a whole: a user
 * table replaces the system one rather than layering over it, so what a
 * context runs is what one file says.
 *
 * Loaded tables are cached for the life of the process, keyed by device
 * fingerprint, path and the file's identity (device, inode, size, mtime):
 * every context of a device shares one parse, and a table rewritten by
 * tessera-tune is picked up by contexts created afterwards. Rejections are
 * cached too, so each bad file is logged once. */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "table_impl.h"
#include "tsr_config.h"

#ifndef TSR_TABLE_SYSTEM_DIR
#define TSR_TABLE_SYSTEM_DIR "/usr/local/share/tessera"
#endif

bool tsr_table_disabled_by_env(void) {
    const char *v = getenv("TESSERA_TUNE");
    if (!v) return false;
    return strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0 || strcmp(v, "false") == 0;
}

static bool user_dir(char *out, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return snprintf(out, n, "%s/tessera", xdg) < (int)n;
    const char *home = getenv("HOME");
    if (home && home[0] == '/') return snprintf(out, n, "%s/.cache/tessera", home) < (int)n;
    return false;
}

int tsr_table_search_dirs(char dirs[][512], int max) {
    int n = 0;
    const char *env = getenv("TESSERA_TABLE_DIR");
    if (env && *env) {
        if (n < max && snprintf(dirs[n], 512, "%s", env) < 512) n++;
        return n;
    }
    if (n < max && user_dir(dirs[n], 512)) n++;
    if (n < max && snprintf(dirs[n], 512, "%s", TSR_TABLE_SYSTEM_DIR) < 512) n++;
    return n;
}

tsr_status tsr_table_default_dir(char *out, size_t n) {
    const char *env = getenv("TESSERA_TABLE_DIR");
    if (env && *env) {
        if (snprintf(out, n, "%s", env) >= (int)n)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: TESSERA_TABLE_DIR is too long");
        return TSR_OK;
    }
    if (!user_dir(out, n))
        return tsr_fail(TSR_ERR_IO, "table: neither XDG_CACHE_HOME nor HOME is set to an absolute path; "
                                    "give the table directory explicitly");
    return TSR_OK;
}

/* ------------------------------------------------------------------ cache */

typedef struct cache_entry {
    struct cache_entry *next;
    tsr_device_fp fp;
    char path[512];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    tsr_table *table;  /* NULL: rejected */
    char reason[400];
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache; /* lives until exit; reachable, so no leak reports */

static bool same_fp(const tsr_device_fp *a, const tsr_device_fp *b) {
    return strcmp(a->backend, b->backend) == 0 && strcmp(a->arch, b->arch) == 0 &&
           strcmp(a->name, b->name) == 0 && strcmp(a->driver, b->driver) == 0 &&
           a->compute_units == b->compute_units;
}

/* The cached result for path as it is now; loads it when new or changed.
 * Call with cache_lock held. */
static cache_entry *load_cached(const char *path, const struct stat *st, const tsr_device_fp *fp) {
    for (cache_entry *e = cache; e; e = e->next)
        if (same_fp(&e->fp, fp) && strcmp(e->path, path) == 0 && e->dev == st->st_dev && e->ino == st->st_ino &&
            e->size == st->st_size && e->mtime.tv_sec == st->st_mtim.tv_sec &&
            e->mtime.tv_nsec == st->st_mtim.tv_nsec)
            return e;
    cache_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->fp = *fp;
    snprintf(e->path, sizeof e->path, "%s", path);
    e->dev = st->st_dev, e->ino = st->st_ino, e->size = st->st_size, e->mtime = st->st_mtim;
    tsr_status s = tsr_table_read(path, fp, &e->table, e->reason, sizeof e->reason);
    if (s != TSR_OK) {
        e->table = NULL;
        tsr_log(TSR_LOG_INFO, "tuning table %s ignored: %s", path, e->reason);
    } else {
        tsr_log(TSR_LOG_INFO, "tuning table %s: %d records", path, tsr_table_count(e->table));
    }
    e->next = cache;
    cache = e;
    return e;
}

/* Appends "; " and the formatted text, truncating at n. */
static void append(char *dst, size_t n, const char *fmt, ...) TSR_PRINTF(3, 4);
static void append(char *dst, size_t n, const char *fmt, ...) {
    size_t len = strlen(dst);
    if (len + 3 >= n) return;
    if (len) memcpy(dst + len, "; ", 3), len += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, n - len, fmt, ap);
    va_end(ap);
}

void tsr_context_attach_table(tsr_context *ctx) {
    if (!ctx) return;
    ctx->table = NULL;
    ctx->table_path[0] = ctx->table_status[0] = '\0';
    if (ctx->flags & TSR_CONTEXT_NO_TUNING_TABLE) {
        snprintf(ctx->table_status, sizeof ctx->table_status,
                 "no table: TSR_CONTEXT_NO_TUNING_TABLE; the kernels' heuristics are used");
        return;
    }
    if (tsr_table_disabled_by_env()) {
        snprintf(ctx->table_status, sizeof ctx->table_status,
                 "no table: TESSERA_TUNE=%s; the kernels' heuristics are used", getenv("TESSERA_TUNE"));
        return;
    }
    tsr_device_fp fp;
    tsr_device_fp_from_context(ctx, &fp);
    char name[300], dirs[TSR_TABLE_MAX_DIRS][512], notes[512] = "";
    tsr_table_file_name(&fp, name, sizeof name);
    int nd = tsr_table_search_dirs(dirs, TSR_TABLE_MAX_DIRS);
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < nd && !ctx->table; i++) {
        char path[512];
        if (snprintf(path, sizeof path, "%s/%s", dirs[i], name) >= (int)sizeof path) {
            append(notes, sizeof notes, "%s: path too long", dirs[i]);
            continue;
        }
        struct stat st;
        if (stat(path, &st) != 0) {
            append(notes, sizeof notes, "%s: %s", path, errno == ENOENT ? "none" : strerror(errno));
            continue;
        }
        cache_entry *e = load_cached(path, &st, &fp);
        if (!e) {
            append(notes, sizeof notes, "%s: %s", path, "out of memory");
        } else if (!e->table) {
            append(notes, sizeof notes, "%s ignored: %s", path, e->reason);
        } else {
            ctx->table = e->table;
            snprintf(ctx->table_path, sizeof ctx->table_path, "%s", path);
            char before[sizeof notes];
            memcpy(before, notes, sizeof notes);
            notes[0] = '\0';
            append(notes, sizeof notes, "loaded (%d records)", tsr_table_count(e->table));
            if (before[0]) append(notes, sizeof notes, "before it: %s", before);
        }
    }
    pthread_mutex_unlock(&cache_lock);
    if (!ctx->table)
        append(ctx->table_status, sizeof ctx->table_status, "no table, the kernels' heuristics are used (%s)",
               notes[0] ? notes : "no directory to search");
    else append(ctx->table_status, sizeof ctx->table_status, "%s", notes);
}

void tsr_context_detach_table(tsr_context *ctx) {
    /* The table belongs to the process cache: other contexts may share it. */
    if (ctx) ctx->table = NULL;
}

bool tsr_table_schedule(const tsr_context *ctx, const tsr_problem *p, const tsr_kernel *k, tsr_schedule *s) {
    if (!ctx->table || (ctx->flags & TSR_CONTEXT_NO_TUNING_TABLE) || k->num_knobs <= 0) return false;
    tsr_table_hit hit = tsr_table_lookup(ctx->table, p, ctx, k, s);
    if (hit != TSR_TABLE_MISS && tsr_log_level_get() >= TSR_LOG_DEBUG) {
        char knobs[256];
        tsr_table_knobs_format(k, s, knobs, sizeof knobs);
        tsr_log(TSR_LOG_DEBUG, "%s: %s schedule %s from the table", k->name,
                hit == TSR_TABLE_EXACT ? "tuned" : "nearest tuned", knobs);
    }
    return hit != TSR_TABLE_MISS;
}
