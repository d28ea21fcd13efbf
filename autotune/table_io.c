/* Table files: reading, and merging writes that never lose a record.
 *
 * A writer takes an exclusive flock on <table>.lock, re-reads the table
 * (another process may have written since we last looked), merges its new
 * records by key, writes a temp file in the same directory, fsyncs it and
 * renames it over the table, then fsyncs the directory. Readers take no
 * lock: rename is atomic, so they see the old file or the new one. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "table_impl.h"

/* snprintf that may truncate (messages). */
static void say(char *dst, size_t n, const char *fmt, ...) TSR_PRINTF(3, 4);
static void say(char *dst, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

/* Reads a regular file of at most TSR_TABLE_MAX_BYTES (one more is read to
 * tell a bigger one). *err is errno on failure. */
static bool read_file(const char *path, char **out, size_t *len, int *err, char *why, size_t why_len) {
    *out = NULL;
    *len = 0;
    *err = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        snprintf(why, why_len, "cannot open: %s", strerror(*err));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *err = EINVAL;
        snprintf(why, why_len, "not a regular file");
        close(fd);
        return false;
    }
    size_t cap = st.st_size > 0 && (uint64_t)st.st_size <= TSR_TABLE_MAX_BYTES ? (size_t)st.st_size + 1 : 4096;
    char *buf = malloc(cap);
    size_t n = 0;
    while (buf) {
        if (n == cap) {
            if (cap > TSR_TABLE_MAX_BYTES) break;
            size_t ncap = cap * 2 > (size_t)TSR_TABLE_MAX_BYTES + 1 ? (size_t)TSR_TABLE_MAX_BYTES + 1 : cap * 2;
            char *grown = realloc(buf, ncap);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown, cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            *err = errno;
            snprintf(why, why_len, "read failed: %s", strerror(*err));
            free(buf);
            close(fd);
            return false;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) {
        *err = ENOMEM;
        snprintf(why, why_len, "out of memory");
        return false;
    }
    *out = buf;
    *len = n;
    return true;
}

tsr_status tsr_table_read(const char *path, const tsr_device_fp *expect, tsr_table **out, char *why,
                          size_t why_len) {
    char local[8];
    if (!why || !why_len) why = local, why_len = sizeof local;
    why[0] = '\0';
    if (!out) return TSR_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!path) {
        snprintf(why, why_len, "path is NULL");
        return TSR_ERR_INVALID_ARGUMENT;
    }
    char *buf;
    size_t len;
    int err;
    if (!read_file(path, &buf, &len, &err, why, why_len)) return TSR_ERR_IO;
    tsr_status st = tsr_table_parse(buf, len, expect, out, why, why_len);
    free(buf);
    return st;
}

/* ---------------------------------------------------------------- writing */

static tsr_status io_fail(const char *what, const char *path, int err) {
    return tsr_fail(TSR_ERR_IO, "table: cannot %s %s: %s", what, path, strerror(err));
}

static tsr_status mkdir_p(const char *dir) {
    char path[512];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return tsr_fail(TSR_ERR_IO, "table: directory name too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return io_fail("create directory", path, errno);
        *p = saved;
        if (!saved) break;
    }
    struct stat st;
    if (stat(dir, &st) != 0) return io_fail("stat", dir, errno);
    if (!S_ISDIR(st.st_mode)) return tsr_fail(TSR_ERR_IO, "table: %s is not a directory", dir);
    return TSR_OK;
}

static bool write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Writes text to a temp file beside path and renames it over path. */
static tsr_status write_atomic(const char *dir, const char *name, const char *path, const char *text,
                               size_t len) {
    char tmp[640];
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name);
    int fd = mkstemp(tmp);
    if (fd < 0) return io_fail("create a temp file in", dir, errno);
    int err = 0;
    if (!write_all(fd, text, len)) err = errno ? errno : EIO;
    if (!err && fsync(fd) != 0) err = errno;
    if (!err && fchmod(fd, 0644) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return io_fail("write", path, err);
    }
    /* The rename is durable once the directory is. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return TSR_OK;
}

/* header + extra lines + a's lines + b's lines, for the parser to merge. */
static char *join(const tsr_device_fp *fp, const tsr_table *old, const char *const *lines, int n,
                  size_t *len) {
    char header[1024];
    size_t hl = tsr_table_header(fp, header, sizeof header), cap = hl + 1;
    if (old) {
        for (int i = 0; i < old->num_extra_header; i++) cap += strlen(old->extra_header[i]) + 1;
        for (int i = 0; i < old->n; i++) cap += strlen(old->recs[i].line) + 1;
    }
    for (int i = 0; i < n; i++) cap += strlen(lines[i]) + 1;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t pos = 0;
    memcpy(buf, header, hl);
    pos = hl;
#define LINE(s)                                                                                            \
    do {                                                                                                   \
        size_t l_ = strlen(s);                                                                             \
        memcpy(buf + pos, (s), l_);                                                                        \
        pos += l_;                                                                                         \
        buf[pos++] = '\n';                                                                                 \
    } while (0)
    if (old) {
        for (int i = 0; i < old->num_extra_header; i++) LINE(old->extra_header[i]);
        for (int i = 0; i < old->n; i++) LINE(old->recs[i].line);
    }
    for (int i = 0; i < n; i++) LINE(lines[i]);
#undef LINE
    buf[pos] = '\0';
    *len = pos;
    return buf;
}

static int find_key(const tsr_table *t, const char *key, uint64_t h) {
    if (!t || !t->num_slots) return -1;
    size_t mask = t->num_slots - 1;
    for (size_t i = (size_t)h & mask; t->slots[i] >= 0; i = (i + 1) & mask) {
        const tsr_trec *r = &t->recs[t->slots[i]];
        if (r->key_hash == h && strcmp(r->key, key) == 0) return t->slots[i];
    }
    return -1;
}

/* Counts what the merge will do, with the parser's rule (later tuned, then
 * faster; on a full tie the record already there stays). */
static void count_merge(const tsr_table *old, const tsr_table *fresh, tsr_table_write_report *rep) {
    for (int i = 0; i < fresh->n; i++) {
        const tsr_trec *r = &fresh->recs[i];
        if (!r->known) {
            rep->added++;
            continue;
        }
        int j = find_key(old, r->key, r->key_hash);
        if (j < 0) rep->added++;
        else {
            const tsr_trec *o = &old->recs[j];
            bool wins = r->v.tuned != o->v.tuned ? r->v.tuned > o->v.tuned : r->v.time_us < o->v.time_us;
            if (wins) rep->replaced++;
            else rep->kept++;
        }
    }
}

static tsr_status merge_locked(const char *dir, const char *name, const char *path, const tsr_device_fp *fp,
                               const char *const *lines, int n, const tsr_table *fresh,
                               tsr_table_write_report *rep) {
    tsr_table *old = NULL;
    char why[400];
    char *buf;
    size_t len;
    int err;
    if (read_file(path, &buf, &len, &err, why, sizeof why)) {
        tsr_status st = tsr_table_parse(buf, len, fp, &old, why, sizeof why);
        free(buf);
        if (st == TSR_ERR_OUT_OF_MEMORY) return tsr_fail(st, "table: out of memory reading %s", path);
        if (st != TSR_OK) {
            /* Useless to the library as it stands; keep it for a human. */
            char aside[660];
            snprintf(aside, sizeof aside, "%s.rejected", path);
            if (rename(path, aside) != 0) return io_fail("move aside the invalid table", path, errno);
            say(rep->discarded, sizeof rep->discarded, "%s (%s); moved to %s", path, why, aside);
            tsr_log(TSR_LOG_INFO, "table: replacing %s", rep->discarded);
        }
    } else if (err != ENOENT) {
        return tsr_fail(TSR_ERR_IO, "table: cannot read %s: %s", path, why);
    }
    count_merge(old, fresh, rep);
    char *text = join(fp, old, lines, n, &len);
    tsr_table_free(old);
    if (!text) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "table: out of memory merging %s", path);
    tsr_table *merged = NULL;
    tsr_status st = tsr_table_parse(text, len, fp, &merged, why, sizeof why);
    free(text);
    if (st != TSR_OK) return tsr_fail(st == TSR_ERR_OUT_OF_MEMORY ? st : TSR_ERR_INTERNAL, "table: merge: %s", why);
    char *out = tsr_table_serialize(merged, &len);
    rep->total = merged->n;
    tsr_table_free(merged);
    if (!out) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "table: out of memory writing %s", path);
    st = write_atomic(dir, name, path, out, len);
    free(out);
    return st;
}

tsr_status tsr_table_write_merged(const char *dir, const tsr_device_fp *fp, const char *const *lines, int n,
                                  tsr_table_write_report *report) {
    tsr_table_write_report local;
    tsr_table_write_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    if (!dir || !*dir) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: dir is NULL or empty");
    if (!fp) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: fp is NULL");
    if (n < 0 || (n > 0 && !lines)) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: %d lines at %p", n, (void *)lines);
    for (int i = 0; i < n; i++) {
        if (!lines[i]) return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: lines[%d] is NULL", i);
        if (strpbrk(lines[i], "\r\n"))
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: lines[%d] contains a line break", i);
        const char *s = lines[i];
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '@' || *s == '#' || !*s)
            return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "table: lines[%d] is not a record: '%.40s'", i, lines[i]);
    }
    /* Validate the new records before touching the disk. */
    size_t len;
    char *text = join(fp, NULL, lines, n, &len);
    if (!text) return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "table: out of memory");
    tsr_table *fresh = NULL;
    char why[400];
    tsr_status st = tsr_table_parse(text, len, fp, &fresh, why, sizeof why);
    free(text);
    if (st != TSR_OK) return tsr_fail(st == TSR_ERR_OUT_OF_MEMORY ? st : TSR_ERR_INVALID_ARGUMENT,
                                      "table: new records: %s", why);

    char name[300];
    tsr_table_file_name(fp, name, sizeof name);
    snprintf(rep->path, sizeof rep->path, "%s/%s", dir, name);
    if ((st = mkdir_p(dir)) != TSR_OK) {
        tsr_table_free(fresh);
        return st;
    }
    char lock[700];
    snprintf(lock, sizeof lock, "%s.lock", rep->path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = io_fail("create the lock file", lock, errno);
        tsr_table_free(fresh);
        return st;
    }
    int r;
    while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {}
    if (r != 0) st = io_fail("lock", lock, errno);
    else st = merge_locked(dir, name, rep->path, fp, lines, n, fresh, rep);
    close(fd); /* releases the lock */
    tsr_table_free(fresh);
    return st;
}
