/* A throwaway micro-benchmark (not built by meson): bf16 gelu_erf through
 * tsr_unary on one thread, n values in L1/L2, TSC ticks per 16 values, the
 * least of 200 runs of 50 calls. gcc -O2 -Iinclude gelu_l1.c -Lbuild -ltessera */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <x86intrin.h>
#include <tessera.h>
/* bf16 gelu_erf over n values in L1, TSC ticks per 16 values (min of runs) */
int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    uint16_t *x = aligned_alloc(64, n * 2), *y = aligned_alloc(64, n * 2);
    srand(1);
    for (int64_t i = 0; i < n; i++) { float f = ((rand() / (float)RAND_MAX) - 0.5f) * 6; x[i] = tsr_f32_to_bf16(f); }
    tsr_context *ctx; tsr_context_options o; tsr_context_options_init(&o); o.num_threads = 1;
    tsr_context_create(&ctx, &o);
    tsr_tensor_desc d = tsr_tensor_contiguous(TSR_BF16, 1, &n);
    double best = 1e30;
    for (int r = 0; r < 200; r++) {
        uint64_t t0 = __rdtsc();
        for (int k = 0; k < 50; k++) if (tsr_unary(ctx, TSR_UNARY_GELU_ERF, &d, x, &d, y)) { printf("err %s\n", tsr_last_error()); return 1; }
        uint64_t t1 = __rdtsc();
        double per = (double)(t1 - t0) / 50 / (n / 16.0);
        if (per < best) best = per;
    }
    printf("n=%lld ticks/16 = %.2f\n", (long long)n, best);
    return 0;
}
