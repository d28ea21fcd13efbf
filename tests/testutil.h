/* Shared helpers for the Check suites: the contexts every suite runs on
 * (each CPU arch this machine can run, plus every other backend present,
 * with absent ones reported as skipped by name), random data, device
 * transfers and tolerant comparisons. */
#ifndef TSR_TESTUTIL_H
#define TSR_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "tessera.h"

#define TT_MAX_CONTEXTS 8

typedef struct tt_context {
    tsr_context *ctx;
    char label[48]; /* "cpu/x86_avx2", "cuda:0", ... */
} tt_context;

/* Creates a context for every backend and CPU arch this machine can run
 * (never the reference-only one). Absent backends are printed once per
 * process as "SKIP <suite>: backend <name>: <reason>". Returns the count. */
int tt_contexts_open(const char *suite, tt_context *out, int max);
void tt_contexts_close(tt_context *c, int n);

/* A context on the CUDA backend, or NULL after printing "SKIP <suite>:
 * backend cuda: <reason>" (no GPU): the sm80 suites then pass having
 * checked nothing else. */
tsr_context *tt_cuda_context(const char *suite);

/* A CPU context that runs the reference kernels only: the oracle. */
tsr_context *tt_ref_context(void);

/* Deterministic uniform values in [lo, hi) written as dtype (ints rounded). */
void tt_fill(void *x, tsr_dtype t, int64_t n, uint64_t seed, float lo, float hi);
/* Fills bytes with a pattern, then tt_unchanged() says whether they survive. */
void tt_fill_sentinel(void *x, size_t bytes);
bool tt_unchanged(const void *x, size_t bytes);

/* Host <-> context memory. tt_upload allocates on ctx and copies; NULL host
 * gives a zeroed buffer. tt_free releases it. */
void *tt_upload(tsr_context *ctx, const void *host, size_t bytes);
void tt_download(tsr_context *ctx, void *host, const void *dev, size_t bytes);
void tt_free(tsr_context *ctx, void *dev);

/* true when ctx's memory is handles (cl_mem on OpenCL), not addresses: a
 * suite must then go through tt_upload/tt_download for every buffer and
 * cannot form views by pointer arithmetic (a cl_mem has no offset; shapes,
 * leading dimensions and strides express views instead). */
bool tt_handles(tsr_context *ctx);

/* Compares n values of dtype t: |got - want| <= atol + rtol * |want|, NaN
 * matching NaN. Prints the first few mismatches with `what`; returns the
 * number of mismatches. */
int64_t tt_compare(const char *what, const void *got, const void *want, tsr_dtype t, int64_t n,
                   double atol, double rtol);

/* Relative tolerance for a dot product of length k accumulated in f32 (or
 * exact for ints), with outputs rounded to dtype. */
double tt_rtol(tsr_dtype out, int64_t k);
/* Distance in representable floats; 0 for NaN vs NaN, huge for a NaN or
 * infinity mismatch. */
int64_t tt_ulps(float a, float b);

/* Reads a value of any dtype as double. */
double tt_get(const void *x, tsr_dtype t, int64_t i);

/* Runs a Check suite verbosely and returns the process exit code. */
int tt_run_suite(Suite *s);

#endif
