/* Per-thread scratch for CPU kernels: a small GEMM's packing buffer from
 * aligned_alloc and free cost ~150 ns, a fifth of a 32^3 f32 GEMM. Each
 * thread keeps one block of at most TSR_SCRATCH_KEEP bytes and lends it to
 * one caller at a time; a nested or larger request gets its own block. A
 * thread's block is freed when the thread exits (a framework's short-lived
 * threads must not leak it). */
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "internal.h"

static _Thread_local void *kept;        /* the thread's block, or NULL */
static _Thread_local size_t kept_bytes; /* its size */
static _Thread_local bool lent;         /* a caller holds it */

static tss_t exit_key; /* its destructor frees the exiting thread's block */
static bool have_exit_key;
static once_flag key_once = ONCE_FLAG_INIT;

static void make_exit_key(void) { have_exit_key = tss_create(&exit_key, free) == thrd_success; }

/* TESSERA_SCRATCH_POISON (the test suites set it): every block lent is
 * filled with 0xff bytes (NaN as floats) first, so that a kernel reading
 * what it did not write this call fails its test instead of finding the
 * last call's values there (a thread that skipped packing part of a
 * filter read the previous call's copy, and passed). */
static bool poison;
static once_flag poison_once = ONCE_FLAG_INIT;

static void read_poison(void) { poison = getenv("TESSERA_SCRATCH_POISON") != NULL; }

static void *lend(void *p, size_t bytes) {
    call_once(&poison_once, read_poison);
    if (p && poison) memset(p, 0xff, bytes);
    return p;
}

void *tsr_scratch_get(size_t bytes) {
    bytes = bytes ? (bytes + 63) / 64 * 64 : 64; /* aligned_alloc wants a multiple of the alignment */
    if (lent || bytes > TSR_SCRATCH_KEEP) return lend(aligned_alloc(64, bytes), bytes);
    if (bytes > kept_bytes) {
        call_once(&key_once, make_exit_key);
        if (!have_exit_key) return lend(aligned_alloc(64, bytes), bytes); /* nothing kept that could leak */
        void *p = aligned_alloc(64, bytes);
        if (!p || tss_set(exit_key, p) != thrd_success) {
            free(p);
            return NULL;
        }
        free(kept);
        kept = p;
        kept_bytes = bytes;
    }
    lent = true;
    return lend(kept, bytes);
}

void tsr_scratch_put(void *p) {
    if (p && p == kept) lent = false;
    else free(p);
}
