/* The on-disk cache of built OpenCL program binaries. One file per program,
 * named by two 64-bit hashes of its key text (tessera version, platform,
 * device, driver, source hash, build options). The file repeats the whole
 * key text and carries the binary's length and checksum: an entry whose key,
 * length or checksum does not match is stale or corrupt, is never handed to
 * the driver, and is rebuilt and rewritten. Writes go to a temp file in the
 * same directory, renamed over the entry (atomic on POSIX): a reader sees
 * the old file or the new one, never half of one.
 * Location: TESSERA_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/tessera/opencl,
 * else ~/.cache/tessera/opencl; TESSERA_OPENCL_CACHE=0 turns it off. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

static const char MAGIC[8] = {'T', 'S', 'R', 'C', 'L', 'B', 'N', '1'};

void tsr_ocl_cache_dir(char *out, size_t n) {
    out[0] = 0;
    const char *off = getenv("TESSERA_OPENCL_CACHE");
    if (off && strcmp(off, "0") == 0) return;
    const char *dir = getenv("TESSERA_OPENCL_CACHE_DIR");
    if (dir && *dir) {
        snprintf(out, n, "%s", dir);
        return;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(out, n, "%s/tessera/opencl", xdg);
    else if (home && *home) snprintf(out, n, "%s/.cache/tessera/opencl", home);
}

/* mkdir -p */
static bool make_dirs(const char *path) {
    char tmp[512];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

bool tsr_ocl_cache_path(const tsr_ocl_state *s, const char *key_text, char *out, size_t n) {
    if (!s->cache_dir[0]) return false;
    size_t len = strlen(key_text);
    unsigned long long h1 = tsr_fnv1a(key_text, len, 0), h2 = tsr_fnv1a(key_text, len, 0x5bd1e995u);
    return snprintf(out, n, "%s/%016llx%016llx.clbin", s->cache_dir, h1, h2) < (int)n;
}

static bool read_u64(FILE *f, uint64_t *v) { return fread(v, sizeof *v, 1, f) == 1; }

unsigned char *tsr_ocl_cache_read(const char *path, const char *key_text, size_t *len, bool *rejected) {
    *rejected = false;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char magic[8];
    uint64_t klen = 0, blen = 0, sum = 0;
    unsigned char *bin = NULL;
    char *key = NULL;
    const size_t want_klen = strlen(key_text);
    bool ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, MAGIC, 8) == 0 && read_u64(f, &klen) &&
              klen == want_klen;
    if (ok) {
        key = malloc(klen + 1);
        ok = key && fread(key, 1, klen, f) == klen && memcmp(key, key_text, klen) == 0;
    }
    ok = ok && read_u64(f, &blen) && read_u64(f, &sum) && blen > 0 && blen < ((uint64_t)1 << 31);
    if (ok) {
        bin = malloc(blen);
        ok = bin && fread(bin, 1, blen, f) == blen && fgetc(f) == EOF && tsr_fnv1a(bin, blen, 7) == sum;
    }
    fclose(f);
    free(key);
    if (!ok) {
        free(bin);
        *rejected = true;
        tsr_log(TSR_LOG_INFO, "opencl: cache entry %s is stale or corrupt; rebuilding", path);
        return NULL;
    }
    *len = (size_t)blen;
    return bin;
}

void tsr_ocl_cache_write(const char *path, const char *key_text, const unsigned char *bin, size_t len) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (!make_dirs(dir)) {
        tsr_log(TSR_LOG_WARN, "opencl: cannot create the binary cache directory %s: %s", dir, strerror(errno));
        return;
    }
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tsr_log(TSR_LOG_WARN, "opencl: cannot write to the binary cache %s: %s", dir, strerror(errno));
        return;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return;
    }
    uint64_t klen = strlen(key_text), blen = len, sum = tsr_fnv1a(bin, len, 7);
    bool ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(&klen, sizeof klen, 1, f) == 1 &&
              fwrite(key_text, 1, klen, f) == klen && fwrite(&blen, sizeof blen, 1, f) == 1 &&
              fwrite(&sum, sizeof sum, 1, f) == 1 && fwrite(bin, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        tsr_log(TSR_LOG_WARN, "opencl: writing the binary cache entry %s failed", path);
        unlink(tmp);
    }
}
