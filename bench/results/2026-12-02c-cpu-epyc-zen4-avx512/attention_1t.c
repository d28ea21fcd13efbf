/* A throwaway micro-benchmark (not built by meson): bf16 non-causal attention
 * through tsr_attention, H heads (MHA), seq S, head dim D, the best of N calls;
 * TH threads (default 1). gcc -O2 -Iinclude attention_1t.c -Lbuild -ltessera */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <tessera.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc, char **argv) {
    int64_t H = atoll(argv[1]), S = atoll(argv[2]), D = atoll(argv[3]); int reps = argc > 4 ? atoi(argv[4]) : 10;
    int causal = argc > 5 ? atoi(argv[5]) : 0;
    size_t n = (size_t)(H * S * D);
    uint16_t *q = malloc(n * 2), *k = malloc(n * 2), *v = malloc(n * 2), *o = malloc(n * 2);
    srand(1);
    for (size_t i = 0; i < n; i++) { q[i] = tsr_f32_to_bf16(rand() / (float)RAND_MAX - 0.5f); k[i] = tsr_f32_to_bf16(rand() / (float)RAND_MAX - 0.5f); v[i] = tsr_f32_to_bf16(rand() / (float)RAND_MAX - 0.5f); }
    tsr_context *ctx; tsr_context_options op; tsr_context_options_init(&op); op.num_threads = getenv("TH") ? atoi(getenv("TH")) : 1;
    tsr_context_create(&ctx, &op);
    tsr_attention_desc d; tsr_attention_desc_init(&d);
    d.batch = 1; d.heads_q = d.heads_kv = H; d.seq_q = d.seq_kv = S; d.head_dim = D; d.dtype = TSR_BF16;
    if (causal) d.causal = causal;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (tsr_attention(ctx, &d, q, k, v, o)) { printf("err %s\n", tsr_last_error()); return 1; }
        double t = now() - t0; if (t < best) best = t;
    }
    double fl = 4.0 * H * S * S * D;
    printf("H%lld S%lld D%lld: %.3f ms %.1f GFLOP/s\n", (long long)H, (long long)S, (long long)D, best * 1e3, fl / best / 1e9);
    return 0;
}
