/* Workload buffers: host contents, the reference output, and device input
 * sets rotated while timing so that memory-bound problems are measured from
 * memory rather than from a cache the previous call warmed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tuner.h"

double tsr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10;
    else if (*end == 'M' || *end == 'm') v <<= 20;
    else if (*end == 'G' || *end == 'g') v <<= 30;
    return (size_t)v;
}

size_t tsr_llc_bytes(void) {
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 10; i++) {
        char path[96], buf[32];
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fscanf(f, "%d", &level) != 1) level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f) && level >= best_level) {
            size_t sz = parse_size(buf);
            if (level > best_level || sz > best) best = sz, best_level = level;
        }
        fclose(f);
    }
    return best ? best : (size_t)32 << 20;
}

/* splitmix64: deterministic data, the same on every machine. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(void *x, tsr_dtype t, size_t count, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < count; i++) {
        uint64_t r = next_rand(&s);
        float f = (float)((double)(r >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
        switch (t) {
        case TSR_I8: ((int8_t *)x)[i] = (int8_t)((int)(r >> 60) - 8); break;
        case TSR_I32: ((int32_t *)x)[i] = (int32_t)((int)(r >> 56) - 128); break;
        default: tsr_store_f(x, t, (int64_t)i, f); break;
        }
    }
}

void tsr_workload_problem(const tsr_workload *w, int set, tsr_problem *p) {
    *p = w->problem;
    w->bind(p, w->dev + (size_t)set * (size_t)w->num_bufs);
}

void tsr_workload_release(tsr_workload *w) {
    if (w->dev) {
        for (int i = 0; i < w->num_sets * w->num_bufs; i++)
            if (w->dev[i]) tsr_free(w->ctx, w->dev[i]);
        free(w->dev);
    }
    for (int i = 0; i < w->num_bufs; i++) free(w->host[i]), w->host[i] = NULL;
    free(w->ref_out);
    free(w->got);
    w->dev = NULL, w->ref_out = w->got = NULL, w->num_sets = 0;
}

/* The reference kernels on the host copies, into w->ref_out. */
static tsr_status reference(tsr_workload *w) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.flags = TSR_CONTEXT_REFERENCE_ONLY | TSR_CONTEXT_NO_TUNING_TABLE;
    tsr_context *ref = NULL;
    tsr_status st = tsr_context_create(&ref, &o);
    if (st) return st;
    void *bufs[TSR_WL_MAX_BUFS] = {NULL};
    for (int i = 0; i < w->num_bufs && st == TSR_OK; i++) {
        if (!w->is_output[i]) {
            bufs[i] = w->host[i];
            continue;
        }
        bufs[i] = malloc(w->bytes[i] ? w->bytes[i] : 1);
        if (!bufs[i]) st = tsr_fail(TSR_ERR_OUT_OF_MEMORY, "tune: out of host memory for the reference");
        else memcpy(bufs[i], w->host[i], w->bytes[i]);
    }
    if (st == TSR_OK) {
        tsr_problem p = w->problem;
        w->bind(&p, bufs);
        st = tsr_dispatch(ref, &p);
    }
    if (st == TSR_OK) {
        w->ref_out = bufs[w->check_buf];
        bufs[w->check_buf] = NULL;
    }
    for (int i = 0; i < w->num_bufs; i++)
        if (w->is_output[i]) free(bufs[i]);
    tsr_context_destroy(ref);
    return st;
}

tsr_status tsr_workload_setup(tsr_workload *w, tsr_context *ctx, size_t llc_bytes, uint64_t seed) {
    if (!w || !ctx || w->num_bufs < 1 || w->num_bufs > TSR_WL_MAX_BUFS || !w->bind)
        return tsr_fail(TSR_ERR_INVALID_ARGUMENT, "tune: workload or context missing");
    w->ctx = ctx;
    w->dev = NULL, w->ref_out = w->got = NULL, w->num_sets = 0;
    memset(w->host, 0, sizeof w->host);
    size_t footprint = 0;
    for (int i = 0; i < w->num_bufs; i++) {
        size_t count = w->bytes[i] / (tsr_dtype_size(w->dtype[i]) ? tsr_dtype_size(w->dtype[i]) : 1);
        w->host[i] = malloc(w->bytes[i] ? w->bytes[i] : 1);
        if (!w->host[i]) {
            tsr_workload_release(w);
            return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "tune: out of host memory (%zu bytes)", w->bytes[i]);
        }
        /* Outputs start as all-ones bytes (NaN, or -1): an element a
         * candidate forgets to write cannot match the reference. */
        if (w->is_output[i]) memset(w->host[i], 0xff, w->bytes[i]);
        else fill(w->host[i], w->dtype[i], count, seed + 0x1000u * (uint64_t)i);
        footprint += w->bytes[i];
    }
    w->got = malloc(w->bytes[w->check_buf] ? w->bytes[w->check_buf] : 1);
    tsr_status st = w->got ? reference(w) : tsr_fail(TSR_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    if (st) {
        tsr_workload_release(w);
        return st;
    }

    /* A memory-bound problem (few flops per byte) is timed on fresh copies
     * until the copies together overflow the last-level cache twice. */
    if (!llc_bytes) llc_bytes = tsr_llc_bytes();
    int sets = 1;
    /* Under 8 flops per byte no CPU keeps its units busy from memory. */
    bool memory_bound = w->bytes_moved > 0 && w->flops / w->bytes_moved < 8.0;
    if (memory_bound && footprint > 0 && footprint < 2 * llc_bytes) {
        size_t want = (2 * llc_bytes + footprint - 1) / footprint;
        size_t cap = ((size_t)1 << 30) / footprint;
        sets = (int)(want < cap ? want : cap);
        if (sets > 64) sets = 64;
        if (sets < 1) sets = 1;
    }
    w->dev = calloc((size_t)sets * (size_t)w->num_bufs, sizeof *w->dev);
    if (!w->dev) {
        tsr_workload_release(w);
        return tsr_fail(TSR_ERR_OUT_OF_MEMORY, "tune: out of host memory");
    }
    w->num_sets = sets;
    for (int s = 0; s < sets && st == TSR_OK; s++)
        for (int i = 0; i < w->num_bufs && st == TSR_OK; i++) {
            void **d = &w->dev[s * w->num_bufs + i];
            st = tsr_malloc(ctx, d, w->bytes[i] ? w->bytes[i] : 1);
            if (st == TSR_OK) st = tsr_memcpy(ctx, *d, w->host[i], w->bytes[i], TSR_MEMCPY_HOST_TO_DEVICE);
        }
    if (st == TSR_OK) st = tsr_synchronize(ctx);
    if (st) tsr_workload_release(w);
    return st;
}
