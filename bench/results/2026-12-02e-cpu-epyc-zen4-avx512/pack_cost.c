#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include "tessera.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
typedef struct { const char *name; int64_t c, h, k, r, st, pad; } L;
int main(void) {
    L ls[] = {{"res5a_br2b", 512, 7, 512, 3, 1, 1}, {"res5a_br2c", 512, 7, 2048, 1, 1, 0},
              {"res4a_br2a", 512, 28, 256, 1, 2, 0}, {"res5a_br2a", 1024, 14, 512, 1, 2, 0}, {"res4a_br2c", 256, 14, 1024, 1, 1, 0}};
    tsr_context *ctx; tsr_context_create(&ctx, NULL);
    for (size_t li = 0; li < sizeof ls / sizeof ls[0]; li++) {
        L l = ls[li];
        tsr_conv2d_desc d; tsr_conv2d_desc_init(&d);
        d.n = 1, d.c = l.c, d.h = d.w = l.h, d.k = l.k, d.r = d.s = l.r, d.stride_h = d.stride_w = l.st;
        d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = l.pad;
        d.x_dtype = d.w_dtype = d.y_dtype = TSR_BF16;
        size_t wn = (size_t)(l.k * l.r * l.r * l.c), xn = (size_t)(l.c * l.h * l.h);
        uint16_t *w = malloc(wn * 2), *x = malloc(xn * 2), *y = malloc((size_t)l.k * l.h * l.h * 2), *w2 = malloc(wn * 2);
        for (size_t i = 0; i < wn; i++) w[i] = 0x3c00 + (i % 64);
        for (size_t i = 0; i < xn; i++) x[i] = 0x3c00 + (i % 32);
        size_t bytes; tsr_conv2d_packed_filter_size(ctx, &d, &bytes);
        void *pk = aligned_alloc(64, (bytes + 63) / 64 * 64);
        double bp = 1e9, bc = 1e9, bk = 1e9, bm = 1e9;
        for (int it = 0; it < 200; it++) {
            double t0 = now(); if (tsr_conv2d_pack_filter(ctx, &d, w, pk, bytes)) { printf("%s\n", tsr_last_error()); return 1; }
            double t1 = now(); tsr_conv2d(ctx, &d, x, w, y);
            double t2 = now();
            tsr_conv2d_desc dp = d; dp.filter_format = TSR_FILTER_PACKED; tsr_conv2d(ctx, &dp, x, pk, y);
            double t3 = now(); memcpy(w2, w, wn * 2); double t4 = now();
            if (t1 - t0 < bp) bp = t1 - t0; if (t2 - t1 < bc) bc = t2 - t1; if (t3 - t2 < bk) bk = t3 - t2; if (t4 - t3 < bm) bm = t4 - t3;
        }
        printf("%-11s filter %.2f MiB  pack %.1f us  call %.1f us  packed call %.1f us  diff %.1f us  memcpy(1t) %.1f us\n", l.name,
               wn * 2 / 1048576.0, bp * 1e6, bc * 1e6, bk * 1e6, (bc - bk) * 1e6, bm * 1e6);
    }
    return 0;
}
