/* Per-thread scratch for CPU kernels: a small GEMM's packing buffer from
 * aligned_alloc and free cost ~150 ns, a fifth of a 32^3 f32 GEMM. Each
 * thread keeps one block of at most TSR_SCRATCH_KEEP bytes and lends it to
 * one caller at a time; a nested or larger request gets its own block. A
 * thread's block is freed when the thread exits (a framework's short-lived
 * threads must not leak it). */
#include <stdlib.h>
#include <threads.h>

#include "internal.h"

static _Thread_local void *kept;        /* the thread's block, or NULL */
static _Thread_local size_t kept_bytes; /* its size */
static _Thread_local bool lent;         /* a caller holds it */

static tss_t exit_key; /* its destructor frees the exiting thread's block */
static bool have_exit_key;
static once_flag key_once = ONCE_FLAG_INIT;

static void make_exit_key(void) { have_exit_key = tss_create(&exit_key, free) == thrd_success; }

void *tsr_scratch_get(size_t bytes) {
    bytes = bytes ? (bytes + 63) / 64 * 64 : 64; /* aligned_alloc wants a multiple of the alignment */
    if (lent || bytes > TSR_SCRATCH_KEEP) return aligned_alloc(64, bytes);
    if (bytes > kept_bytes) {
        call_once(&key_once, make_exit_key);
        if (!have_exit_key) return aligned_alloc(64, bytes); /* nothing kept that could leak */
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
    return kept;
}

void tsr_scratch_put(void *p) {
    if (p && p == kept) lent = false;
    else free(p);
}
