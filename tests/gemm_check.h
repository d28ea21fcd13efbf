/* One GEMM kernel, forced with one schedule, on device copies of random
 * data, against the reference: shared by the kernel-level suites
 * (test_gemm_cuda, test_opencl). */
#ifndef TSR_TEST_GEMM_CHECK_H
#define TSR_TEST_GEMM_CHECK_H

#include "internal.h"
#include "testutil.h"

typedef struct ccase {
    int64_t m, n, k;
    int ta, tb, epi;
    tsr_dtype in, out;
    float alpha, beta;
    int64_t batch;
} ccase;

/* Runs kernel k with schedule s (leading dimensions padded, strided batch,
 * the epilogue bias + residual + activation when epi); returns 1 when it
 * ran and matched, 0 when the kernel or the schedule does not take the case. */
int tt_gemm_kernel_check(tsr_context *ctx, tsr_context *ref, const tsr_kernel *k, const ccase *x,
                         const tsr_schedule *s);
/* The registered kernel of that name (fails the test when absent). */
const tsr_kernel *tt_kernel(const char *name);

#endif
