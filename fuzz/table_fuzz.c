/* libFuzzer target for the tuning-table parser (autotune/table_parse.c)
 * and the lookup over whatever it accepts. Built and run by fuzz/run.sh.
 * Properties checked beyond "no crash, no sanitizer report":
 *   - an accepted table serialises to text that parses back to the same
 *     number of records, with identical record lines;
 *   - lookups on an accepted table never write outside the schedule. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

/* The library's build generates this from the kernel sources; the seeds in
 * fuzz/corpus/table/ carry this value in their @kernels line. */
const char tsr_kernel_hash[] = "fuzz000000000000";

static const tsr_device_fp fuzz_fp = {"cpu", "x86_avx2", "Fuzz CPU", "", 4};

static const int tile_values[] = {8, 16, 32};
static const int unroll_values[] = {1, 2};
static const tsr_knob knobs[] = {{"tile", 3, tile_values}, {"unroll", 2, unroll_values}};
static tsr_status run(tsr_context *ctx, const tsr_problem *p, const tsr_schedule *s) {
    (void)ctx, (void)p, (void)s;
    return TSR_OK;
}
static const tsr_kernel kernel = {.name = "gemm.fuzz", .op = TSR_OP_GEMM, .num_knobs = 2, .knobs = knobs,
                                  .run = run};

static void lookups(const tsr_table *t) {
    static const int64_t shapes[][3] = {{64, 64, 64}, {1, 4096, 4096}, {1000, 1000, 1000}, {3, 5, 7}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tsr_problem p;
        memset(&p, 0, sizeof p);
        p.op = TSR_OP_GEMM;
        p.u.gemm.d.batch = 1; /* zeroed: row-major f32, no epilogue */
        p.u.gemm.d.m = shapes[i][0], p.u.gemm.d.n = shapes[i][1], p.u.gemm.d.k = shapes[i][2];
        p.u.gemm.d.trans_b = (tsr_transpose)(i & 1);
        tsr_schedule s;
        memset(&s, 0, sizeof s);
        tsr_table_hit hit = tsr_table_lookup(t, &p, NULL, &kernel, &s);
        if (hit != TSR_TABLE_MISS && ((s.v[0] != 8 && s.v[0] != 16 && s.v[0] != 32) || (s.v[1] != 1 && s.v[1] != 2)))
            abort(); /* a schedule outside the knob space escaped the stale check */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char why[512];
    tsr_table *t = NULL;
    const tsr_device_fp *expect[2] = {&fuzz_fp, NULL};
    for (int e = 0; e < 2; e++) {
        if (tsr_table_parse((const char *)data, size, expect[e], &t, why, sizeof why) != TSR_OK) {
            if (t) abort(); /* a failed parse leaves no table */
            if (!why[0]) abort(); /* ...and always says why */
            continue;
        }
        lookups(t);
        size_t len;
        char *text = tsr_table_serialize(t, &len);
        if (!text) abort();
        tsr_table *again = NULL;
        if (tsr_table_parse(text, len, expect[e], &again, why, sizeof why) != TSR_OK) abort();
        if (tsr_table_count(again) != tsr_table_count(t)) abort();
        for (int i = 0; i < tsr_table_count(t); i++) {
            /* Serialising sorts the known records: compare as sets. */
            const char *line = tsr_table_line(t, i);
            int found = 0;
            for (int j = 0; j < tsr_table_count(again) && !found; j++) found = !strcmp(line, tsr_table_line(again, j));
            if (!found) abort();
        }
        free(text);
        tsr_table_free(again);
        tsr_table_free(t);
        t = NULL;
    }
    return 0;
}
