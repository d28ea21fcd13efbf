/* arch/x86_avx512/vexp.h's exp2_nonpos (attention's softmax weights) on
 * its own, against exp2 in double: the relative errors its comment states
 * (1.7e-7 wide, 2.9e-6 narrow; asserted 2e-7 and 3e-6) over t in
 * [-126, 0] (normal results), denormal results within one ulp of the
 * smallest denormal, an exact 1 at t = 0, an exact 0 for -inf and below
 * -150, NaN kept. Built twice: with AVX-512 (F/BW/VL/DQ, vreduceps) and
 * with AVX2 (the clamp); a build this CPU cannot run prints SKIP. */
#ifdef VEXP_AVX512
#include "../arch/x86_avx512/simd.h"
#define VEXP_BUILD "avx512"
#define VEXP_CPU (TSR_CPU_AVX512F | TSR_CPU_AVX512BW | TSR_CPU_AVX512VL | TSR_CPU_AVX512DQ)
#else
#include "../arch/x86_avx2/simd.h"
#define VEXP_BUILD "avx2"
#define VEXP_CPU (TSR_CPU_AVX2 | TSR_CPU_FMA | TSR_CPU_F16C)
#endif
#include "../arch/x86_avx512/vmath.h"
#include "../arch/x86_avx512/vdtype.h"
#include "../arch/x86_avx512/vexp.h"

#include <check.h>
#include <math.h>
#include <stdio.h>

#include "../arch/x86_avx512/cpuid.h"

/* Whether this CPU runs the build's ISA; prints the skip where not. */
static bool cpu_runs_build(void) {
    if ((tsr_x86_cpu_features() & VEXP_CPU) == VEXP_CPU) return true;
    printf("SKIP vexp_x86 %s: this CPU lacks the build's ISA\n", VEXP_BUILD);
    return false;
}

/* exp2_nonpos of VL values of t into y. */
static void eval(const float *t, float *y, bool narrow) {
    vf_store(y, exp2_nonpos(vf_load(t), narrow));
}

/* The largest relative error over n values of t from lo, step apart, all
 * giving normal results. */
static double max_rel(double lo, double step, int64_t n, bool narrow) {
    double worst = 0;
    float t[VL], y[VL];
    for (int64_t i = 0; i < n; i += VL) {
        for (int l = 0; l < VL; l++) t[l] = (float)(lo + step * (double)(i + l < n ? i + l : n - 1));
        eval(t, y, narrow);
        for (int l = 0; l < VL; l++) {
            const double want = exp2((double)t[l]), e = fabs((double)y[l] - want) / want;
            if (e > worst) worst = e;
        }
    }
    return worst;
}

START_TEST(relative_error) {
    if (!cpu_runs_build()) return;
    for (int narrow = 0; narrow <= 1; narrow++) {
        const double bound = narrow ? 3.0e-6 : 2.0e-7;
        /* every float in [-1, 0] is too many: a dense grid there, a coarser one to -126 */
        const double near = max_rel(-1.0, 1.0 / (1 << 22), (int64_t)1 << 22, narrow);
        const double far = max_rel(-126.0, 126.0 / 3e6, 3000000, narrow);
        printf("vexp_x86 %s exp2_nonpos %s: max relative error %.3g in [-1, 0], %.3g in [-126, 0]\n", VEXP_BUILD,
               narrow ? "narrow" : "wide", near, far);
        ck_assert_msg(near <= bound && far <= bound, "%s %s: %g / %g > %g", VEXP_BUILD, narrow ? "narrow" : "wide",
                      near, far, bound);
    }
}
END_TEST

/* Out of line, so that its arrays' frame is only entered once the CPU
 * check passed: under ASan, the frame's redzones are poisoned by the
 * build's vector stores on entry (AVX-512 ones killed the test with
 * SIGILL on a Zen 1 before its check ran). */
static __attribute__((noinline)) void check_special_values(void) {
    for (int narrow = 0; narrow <= 1; narrow++) {
        float t[VL], y[VL];
        for (int l = 0; l < VL; l++) t[l] = -INFINITY;
        t[0] = 0.0f, t[1] = -0.0f, t[2] = NAN, t[3] = -150.5f, t[4] = -1e30f, t[5] = -160.0f, t[6] = -140.25f;
        t[7] = -149.0f;
        eval(t, y, narrow != 0);
        ck_assert_msg(y[0] == 1.0f && y[1] == 1.0f, "exp2(0) = %g, exp2(-0) = %g", (double)y[0], (double)y[1]);
        ck_assert_msg(isnan(y[2]), "exp2(NaN) = %g", (double)y[2]);
        ck_assert_msg(y[3] == 0.0f && y[4] == 0.0f && y[5] == 0.0f, "below -150: %g %g %g", (double)y[3],
                      (double)y[4], (double)y[5]);
        for (int l = 8; l < VL; l++) ck_assert_msg(y[l] == 0.0f, "exp2(-inf) = %g", (double)y[l]);
        /* denormal results: within one ulp of the smallest denormal, 2^-149 */
        for (int l = 6; l <= 7; l++) {
            const double want = exp2((double)t[l]);
            ck_assert_msg(fabs((double)y[l] - want) <= 0x1p-149, "exp2(%g) = %a, want %a", (double)t[l], (double)y[l],
                          want);
        }
    }
}

START_TEST(special_values) {
    if (cpu_runs_build()) check_special_values();
}
END_TEST

int main(void) {
    Suite *s = suite_create("vexp_x86");
    TCase *tc = tcase_create("exp2_nonpos");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, relative_error);
    tcase_add_test(tc, special_values);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    const int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
