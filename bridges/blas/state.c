/* Process-wide state, set up once on the first call from any thread: the
 * CPU context every call shares (tsr_gemm only reads it, so concurrent
 * calls are safe) and the environment switches.
 *
 *   TESSERA_BLAS_VERBOSE=1  one line per call on stderr: what ran
 *   TESSERA_BLAS_DISABLE=1  never call Tessera: every call goes to the next
 *                           BLAS (or the built-in loop); for A/B comparisons
 *                           without changing LD_PRELOAD */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static tsr_context *ctx;
static bool verbose;

static bool env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static void init(void) {
    verbose = env_on("TESSERA_BLAS_VERBOSE");
    if (env_on("TESSERA_BLAS_DISABLE")) {
        if (verbose) tsrb_log("tessera_blas: TESSERA_BLAS_DISABLE is set: Tessera is not used");
        return;
    }
    tsr_context_options opts;
    tsr_context_options_init(&opts); /* CPU, num_threads 0 = every core */
    tsr_status st = tsr_context_create(&ctx, &opts);
    if (st != TSR_OK) {
        ctx = NULL;
        /* Said even without VERBOSE: every call will be slow from now on. */
        tsrb_log("tessera_blas: no Tessera CPU context (%s: %s); using the fallback",
                 tsr_status_string(st), tsr_last_error());
    }
    /* The context lives as long as the process: calls may come from
     * destructors of other libraries after ours would have run. */
}

tsr_context *tsrb_context(void) {
    pthread_once(&once, init);
    return ctx;
}

bool tsrb_verbose(void) {
    pthread_once(&once, init);
    return verbose;
}

void tsrb_log(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    if ((size_t)len > sizeof line - 2) len = (int)(sizeof line - 2);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)len);
    (void)w; /* nothing sensible to do when stderr is gone */
}

void tsrb_log_call(const tsrb_gemm *g, const char *path, const char *detail) {
    /* In the caller's terms: a row-major call was swapped into g. */
    bool row = g->layout == 'R';
    int64_t m = row ? g->n : g->m, n = row ? g->m : g->n;
    bool ta = row ? g->trans_b : g->trans_a, tb = row ? g->trans_a : g->trans_b;
    tsrb_log("tessera_blas: %s %s %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g batch=%lld -> %s%s%s",
             g->entry, row ? "row-major" : "col-major", ta ? 'T' : 'N', tb ? 'T' : 'N',
             (long long)m, (long long)n, (long long)g->k, (double)g->alpha, (double)g->beta,
             (long long)g->batch, path, detail ? " " : "", detail ? detail : "");
}
