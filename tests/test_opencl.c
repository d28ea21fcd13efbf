/* The OpenCL backend on its own: device choice (TESSERA_OPENCL_DEVICE), the
 * on-disk binary cache (a second context compiles nothing; a corrupt,
 * stale or driver-rejected entry is rebuilt, never trusted), profiling
 * events, and every GEMM/conv kernel forced with each value of its knobs on
 * shapes that cross every tile, against the reference. The op suites
 * (test_gemm, test_conv, ...) run the OpenCL context through the public API
 * as well. Without an OpenCL device: "SKIP opencl: <reason>", and pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../arch/opencl/runtime.h"
#include "gemm_check.h"

static tsr_context *ocl_context(void) {
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_OPENCL;
    tsr_context *ctx = NULL;
    if (tsr_context_create(&ctx, &o) != TSR_OK) {
        static int said;
        if (!said++) printf("SKIP opencl: %s\n", tsr_last_error());
        return NULL;
    }
    return ctx;
}

START_TEST(device_choice_and_info) {
    tsr_context *ctx = ocl_context();
    if (!ctx) return;
    tsr_context_info info = {.size = sizeof info};
    ck_assert_int_eq(tsr_context_get_info(ctx, &info), TSR_OK);
    ck_assert_int_eq(info.backend, TSR_BACKEND_OPENCL);
    ck_assert_str_eq(info.arch, "opencl");
    ck_assert_msg(info.device_name[0] && info.driver[0], "device '%s' driver '%s'", info.device_name, info.driver);
    printf("opencl: %s, driver %s, %d compute units\n", info.device_name, info.driver, info.compute_units);
    const tsr_ocl_state *s = tsr_ocl(ctx);
    ck_assert_msg(strstr(info.device_name, s->platform_name) != NULL, "the platform is named: %s", info.device_name);
    tsr_context_destroy(ctx);
    /* by index, by platform:device, by a part of the name */
    const char *ok[] = {"0", "0:0"};
    for (int i = 0; i < 2; i++) {
        setenv("TESSERA_OPENCL_DEVICE", ok[i], 1);
        tsr_context *c = ocl_context();
        ck_assert_msg(c != NULL, "TESSERA_OPENCL_DEVICE=%s: %s", ok[i], tsr_last_error());
        tsr_context_destroy(c);
    }
    char part[6];
    snprintf(part, sizeof part, "%.5s", info.device_name);
    setenv("TESSERA_OPENCL_DEVICE", part, 1);
    tsr_context *c = ocl_context();
    ck_assert_msg(c != NULL, "TESSERA_OPENCL_DEVICE=%s: %s", part, tsr_last_error());
    tsr_context_destroy(c);
    setenv("TESSERA_OPENCL_DEVICE", "no-such-device-xyz", 1);
    tsr_context_options o;
    tsr_context_options_init(&o);
    o.backend = TSR_BACKEND_OPENCL;
    ck_assert_int_eq(tsr_context_create(&c, &o), TSR_ERR_NO_DEVICE);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "TESSERA_OPENCL_DEVICE=no-such-device-xyz"));
    unsetenv("TESSERA_OPENCL_DEVICE");
    o.device = 999;
    ck_assert_int_eq(tsr_context_create(&c, &o), TSR_ERR_NO_DEVICE);
    ck_assert_ptr_nonnull(strstr(tsr_last_error(), "device 999"));
}
END_TEST

/* One small GEMM on a fresh context; returns its program-cache counters. */
static tsr_ocl_stats gemm_once(void) {
    tsr_context *ctx = ocl_context(), *ref = tt_ref_context();
    ck_assert_ptr_nonnull(ctx);
    ccase x = {7, 13, 9, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1};
    tsr_schedule s;
    memset(&s, 0, sizeof s);
    const tsr_kernel *k = tt_kernel("gemm.opencl.generic");
    ck_assert_int_eq(tt_gemm_kernel_check(ctx, ref, k, &x, &s), 1);
    tsr_ocl_stats st = tsr_ocl(ctx)->stats;
    ck_assert_msg(tsr_ocl_last_kernel_seconds(ctx) >= 0, "profiling events give the kernel's time");
    tsr_context_destroy(ctx);
    tsr_context_destroy(ref);
    return st;
}

/* The single cache file in dir (the test's private cache holds one). */
static void only_entry(const char *dir, char *path, size_t n) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/*.clbin", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(path, (int)n, p));
    path[strcspn(path, "\n")] = 0;
    char extra[600];
    ck_assert_msg(fgets(extra, sizeof extra, p) == NULL, "one program, one entry");
    pclose(p);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    ck_assert_uint_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void spill(const char *path, const unsigned char *b, size_t len) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}

START_TEST(binary_cache) {
    tsr_context *probe = ocl_context();
    if (!probe) return;
    tsr_context_destroy(probe);
    char dir[] = "/tmp/tessera-oclcache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[256];
    snprintf(sub, sizeof sub, "%s/nested/dir", dir); /* created on demand */
    setenv("TESSERA_OPENCL_CACHE_DIR", sub, 1);
    tsr_ocl_stats a = gemm_once();
    ck_assert_msg(a.builds == 1 && a.disk_hits == 0, "cold: %d builds, %d hits", a.builds, a.disk_hits);
    tsr_ocl_stats b = gemm_once();
    ck_assert_msg(b.builds == 0 && b.disk_hits == 1, "warm: %d builds, %d hits", b.builds, b.disk_hits);
    char path[512];
    only_entry(sub, path, sizeof path);
    size_t len;
    unsigned char *good = slurp(path, &len);
    /* a flipped byte in the binary: the checksum rejects it */
    unsigned char *bad = malloc(len);
    memcpy(bad, good, len);
    bad[len - 10] ^= 0x5a;
    spill(path, bad, len);
    tsr_ocl_stats c = gemm_once();
    ck_assert_msg(c.rejected == 1 && c.builds == 1, "corrupt: %d rejected, %d builds", c.rejected, c.builds);
    /* rewritten: valid again */
    tsr_ocl_stats d = gemm_once();
    ck_assert_msg(d.disk_hits == 1 && d.builds == 0, "rewritten: %d hits, %d builds", d.disk_hits, d.builds);
    /* truncated */
    spill(path, good, len / 2);
    tsr_ocl_stats e = gemm_once();
    ck_assert_msg(e.rejected == 1 && e.builds == 1, "truncated: %d rejected", e.rejected);
    /* stale: another driver/version in the key text (same file name) */
    unsigned char *stale = malloc(len);
    memcpy(stale, good, len);
    size_t at = 16; /* the key text starts with "tessera <version>" */
    ck_assert_int_eq(memcmp(stale + at, "tessera ", 8), 0);
    stale[at + 8] = 'X';
    spill(path, stale, len);
    tsr_ocl_stats f = gemm_once();
    ck_assert_msg(f.rejected == 1 && f.builds == 1, "stale: %d rejected", f.rejected);
    /* framing and checksum intact, but not a binary the driver takes */
    uint64_t klen;
    memcpy(&klen, good + 8, 8);
    size_t off = 16 + (size_t)klen, blen = len - off - 16;
    unsigned char *junk = malloc(len);
    memcpy(junk, good, len);
    for (size_t i = 0; i < blen; i++) junk[off + 16 + i] = (unsigned char)(i * 37 + 11);
    uint64_t sum = tsr_fnv1a(junk + off + 16, blen, 7);
    memcpy(junk + off + 8, &sum, 8);
    spill(path, junk, len);
    tsr_ocl_stats g = gemm_once();
    ck_assert_msg(g.rejected == 1 && g.builds == 1, "driver-rejected: %d rejected, %d builds", g.rejected, g.builds);
    /* the cache off: compiles, writes nothing */
    setenv("TESSERA_OPENCL_CACHE", "0", 1);
    tsr_ocl_stats h = gemm_once();
    ck_assert_int_eq(h.disk_hits, 0);
    unsetenv("TESSERA_OPENCL_CACHE");
    unsetenv("TESSERA_OPENCL_CACHE_DIR");
    free(good), free(bad), free(stale), free(junk);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static const ccase gemm_cases[] = {
    {1, 1, 1, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1},
    {17, 33, 65, 0, 0, 1, TSR_F32, TSR_F32, 1, 0, 1},      /* one past every power of two */
    {70, 129, 31, 1, 0, 4, TSR_F32, TSR_F32, 0.5f, 1, 2},  /* batch, beta */
    {131, 67, 100, 0, 1, 2, TSR_F32, TSR_F32, 1, -1, 1},   /* B transposed */
    {29, 150, 47, 1, 1, 3, TSR_F16, TSR_F32, 1, 0, 1},
    {33, 19, 0, 0, 0, 5, TSR_F32, TSR_F32, 1, 0.5f, 1},    /* k == 0 */
    {5, 200, 130, 0, 0, 6, TSR_BF16, TSR_BF16, 1, 0, 3},
    {3, 700, 45, 1, 0, 1, TSR_F32, TSR_F32, 1, 0.5f, 2},   /* decode-like, past a 512 run */
    {67, 100, 45, 0, 0, 0, TSR_F32, TSR_F32, 1.5f, 0.5f, 2}, /* no epilogue: vector stores, and the edge */
    {40, 97, 33, 1, 1, 0, TSR_F32, TSR_F32, 1, 0, 1},
    {260, 300, 270, 0, 1, 2, TSR_F32, TSR_F32, 1, 0, 1},   /* the large-problem defaults' range */
};
enum { NG = sizeof gemm_cases / sizeof gemm_cases[0] };

/* Kernel `name` with each schedule on every case of gemm_cases. */
static void sweep(const char *name, const tsr_schedule *list, int n, int at_least) {
    tsr_context *ctx = ocl_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = tt_kernel(name);
    int ran = 0;
    for (int i = 0; i < n; i++)
        for (size_t ci = 0; ci < NG; ci++) ran += tt_gemm_kernel_check(ctx, ref, k, &gemm_cases[ci], &list[i]);
    printf("opencl: %s: %d kernel runs checked\n", name, ran);
    ck_assert_int_ge(ran, at_least);
    tsr_context_destroy(ctx), tsr_context_destroy(ref);
}

START_TEST(gemm_blocked_knobs) {
    const tsr_kernel *k = tt_kernel("gemm.opencl.blocked");
    tsr_schedule list[64];
    int n = 0;
    for (int rm = 0; rm < k->knobs[0].num_values; rm++)
        for (int vw = 0; vw < k->knobs[1].num_values; vw++, n++) {
            memset(&list[n], 0, sizeof list[n]);
            list[n].v[0] = k->knobs[0].values[rm], list[n].v[1] = k->knobs[1].values[vw];
            list[n].v[2] = k->knobs[2].values[(rm + vw) % k->knobs[2].num_values];
            list[n].v[3] = (rm + vw) % 2;
            list[n].v[4] = rm % 2; /* B packed into panels, or read in place */
            list[n].v[5] = (rm + vw) % 2 ? 4 : 1;  /* work-group rows */
            list[n].v[6] = list[n].v[2] ? k->knobs[6].values[(rm + vw) % k->knobs[6].num_values] : 0; /* k chunks */
            list[n].v[7] = k->knobs[7].values[(rm + 2 * vw) % k->knobs[7].num_values]; /* vectors per row */
        }
    sweep(k->name, list, n, 60);
    /* and its heuristic's large-problem schedules: B packed, k in chunks
     * (B transposed, or k deep); B in place, work-groups down m */
    tsr_context *ctx = ocl_context();
    if (!ctx) return;
    tsr_context *ref = tt_ref_context();
    tsr_problem p;
    memset(&p, 0, sizeof p);
    p.op = TSR_OP_GEMM;
    tsr_gemm_desc_init(&p.u.gemm.d);
    p.u.gemm.d.m = 260, p.u.gemm.d.n = 300, p.u.gemm.d.k = 270, p.u.gemm.d.trans_b = TSR_TRANS;
    tsr_schedule def;
    memset(&def, 0, sizeof def);
    k->default_schedule(&p, ctx, &def);
    ck_assert_int_gt(def.v[6], 0); /* k chunks */
    ck_assert_int_eq(def.v[4], 1);
    ck_assert_int_eq(tt_gemm_kernel_check(ctx, ref, k, &gemm_cases[NG - 1], &def), 1);
    p.u.gemm.d.trans_b = TSR_NO_TRANS;
    k->default_schedule(&p, ctx, &def);
    ck_assert_int_eq(def.v[4], 0);
    ck_assert_int_eq(def.v[3], 1); /* down m */
    const ccase wide[] = {{260, 300, 270, 0, 0, 0, TSR_F32, TSR_F32, 1, 0.5f, 2},
                          {90, 20, 70, 1, 0, 2, TSR_F32, TSR_F32, 1, 0, 1}};
    for (size_t i = 0; i < 2; i++) {
        p.u.gemm.d.m = wide[i].m, p.u.gemm.d.n = wide[i].n, p.u.gemm.d.k = wide[i].k;
        p.u.gemm.d.trans_a = (tsr_transpose)wide[i].ta;
        k->default_schedule(&p, ctx, &def);
        ck_assert_int_eq(tt_gemm_kernel_check(ctx, ref, k, &wide[i], &def), 1);
    }
    p.u.gemm.d.trans_a = TSR_NO_TRANS;
    /* and its decode schedules (every row, columns side by side, B in place) */
    const ccase decode[] = {{1, 700, 45, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1},
                            {3, 1000, 77, 0, 0, 0, TSR_F32, TSR_F32, 2, 0.5f, 2},
                            {7, 130, 200, 1, 0, 3, TSR_F32, TSR_F32, 1, 0, 1},
                            {13, 300, 65, 0, 0, 0, TSR_F32, TSR_F32, 1, 0, 1}};
    for (size_t i = 0; i < sizeof decode / sizeof decode[0]; i++) {
        p.u.gemm.d.m = decode[i].m, p.u.gemm.d.n = decode[i].n, p.u.gemm.d.k = decode[i].k;
        p.u.gemm.d.trans_a = (tsr_transpose)decode[i].ta;
        k->default_schedule(&p, ctx, &def);
        ck_assert_int_eq(def.v[4], 0); /* B read in place */
        ck_assert_int_eq(tt_gemm_kernel_check(ctx, ref, k, &decode[i], &def), 1);
    }
    tsr_context_destroy(ctx), tsr_context_destroy(ref);
}
END_TEST

START_TEST(gemm_tiled_knobs) {
    /* mwg nwg kwg mdimc ndimc vw: a spread of legal configurations */
    const int cfgs[][6] = {{16, 16, 8, 4, 4, 1},   {32, 64, 16, 8, 8, 2}, {64, 32, 32, 8, 4, 4},
                           {64, 64, 16, 16, 8, 8}, {128, 16, 8, 16, 4, 1}, {16, 128, 32, 4, 16, 2}};
    tsr_schedule list[6];
    for (int c = 0; c < 6; c++) memset(&list[c], 0, sizeof list[c]), memcpy(list[c].v, cfgs[c], sizeof cfgs[c]);
    sweep("gemm.opencl.tiled", list, 6, 36);
}
END_TEST

START_TEST(gemm_direct_and_generic) {
    tsr_context *ctx = ocl_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = tt_kernel("gemm.opencl.direct"), *gen = tt_kernel("gemm.opencl.generic");
    const int64_t ms[] = {1, 2, 3, 5, 9, 16};
    const int64_t nks[][2] = {{1, 8}, {37, 203}, {130, 1029}};
    int ran = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t ni = 0; ni < 3; ni++)
            for (int kv = 0; kv < k->knobs[1].num_values; kv++) {
                const tsr_dtype in = mi % 3 == 2 ? TSR_F16 : TSR_F32;
                ccase c = {ms[mi], nks[ni][0], nks[ni][1], (int)(mi % 2), (int)((mi + ni) % 3 != 0),
                           (int)(mi + ni) % 7, in, TSR_F32, 1, mi == 2 ? 0.5f : 0, 1 + (int64_t)(ni == 1)};
                tsr_schedule s;
                memset(&s, 0, sizeof s);
                s.v[0] = k->knobs[0].values[(int)(mi + ni) % k->knobs[0].num_values];
                s.v[1] = k->knobs[1].values[kv];
                s.v[2] = k->knobs[2].values[(int)(mi + kv) % k->knobs[2].num_values]; /* columns */
                s.v[3] = k->knobs[3].values[(int)(ni + kv) % k->knobs[3].num_values]; /* rows a pass */
                ran += tt_gemm_kernel_check(ctx, ref, k, &c, &s);
            }
    /* every dtype pair on the last resort, int8 exactly */
    const ccase any[] = {
        {13, 7, 33, 0, 1, 0, TSR_I8, TSR_I32, 1, 0, 1},  {9, 11, 5, 1, 1, 0, TSR_I8, TSR_I32, 1, 1, 2},
        {4, 3, 6, 0, 0, 0, TSR_I8, TSR_I32, 0.75f, 0.5f, 1}, {3, 5, 7, 1, 0, 1, TSR_F16, TSR_F16, 1, 0, 1},
        {6, 2, 9, 0, 0, 3, TSR_BF16, TSR_F32, 1, 0.5f, 1}, {40, 33, 65, 1, 1, 2, TSR_F32, TSR_F32, 1, 0, 3},
    };
    tsr_schedule s0;
    memset(&s0, 0, sizeof s0);
    for (size_t ci = 0; ci < sizeof any / sizeof any[0]; ci++) ran += tt_gemm_kernel_check(ctx, ref, gen, &any[ci], &s0);
    printf("opencl: gemm.opencl.direct + generic: %d kernel runs checked\n", ran);
    ck_assert_int_ge(ran, 60);
    tsr_context_destroy(ctx), tsr_context_destroy(ref);
}
END_TEST

/* conv2d.opencl.igemm forced with each knob value against the reference. */
START_TEST(conv_igemm_knobs) {
    tsr_context *ctx = ocl_context(), *ref = tt_ref_context();
    if (!ctx) return tsr_context_destroy(ref), (void)0;
    const tsr_kernel *k = tt_kernel("conv2d.opencl.igemm");
    /* n c h w k r s stride pad dilation filter-format */
    const int64_t shapes[][11] = {{1, 3, 11, 9, 7, 3, 3, 2, 1, 1, TSR_FILTER_OHWI},
                                  {2, 5, 6, 7, 13, 1, 1, 1, 0, 1, TSR_FILTER_HWIO},
                                  {1, 8, 9, 9, 17, 3, 2, 1, 2, 2, TSR_FILTER_OIHW},
                                  {3, 16, 5, 5, 33, 3, 3, 1, 1, 1, TSR_FILTER_OHWI}};
    int ran = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int rm = 0; rm < k->knobs[0].num_values; rm++)
            for (int vw = 0; vw < k->knobs[1].num_values; vw++) {
                const int64_t *v = shapes[si];
                tsr_conv2d_desc d;
                tsr_conv2d_desc_init(&d);
                d.n = v[0], d.c = v[1], d.h = v[2], d.w = v[3], d.k = v[4], d.r = v[5], d.s = v[6];
                d.stride_h = d.stride_w = v[7], d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = v[8];
                d.dilation_h = d.dilation_w = v[9], d.filter_format = (tsr_filter_format)v[10];
                int64_t P, Q;
                ck_assert_int_eq(tsr_conv2d_output_shape(&d, &P, &Q), TSR_OK);
                size_t nx = (size_t)(d.n * d.c * d.h * d.w), nw = (size_t)(d.k * d.c * d.r * d.s),
                       ny = (size_t)(d.n * d.k * P * Q);
                float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc((size_t)d.k * 4), *y1 = malloc(ny * 4),
                      *y2 = malloc(ny * 4);
                tt_fill(x, TSR_F32, (int64_t)nx, 1, -1, 1), tt_fill(w, TSR_F32, (int64_t)nw, 2, -1, 1);
                tt_fill(bias, TSR_F32, d.k, 3, -1, 1);
                void *dx = tt_upload(ctx, x, nx * 4), *dw = tt_upload(ctx, w, nw * 4), *dy = tt_upload(ctx, NULL, ny * 4);
                void *db = tt_upload(ctx, bias, (size_t)d.k * 4);
                tsr_conv2d_desc dd = d;
                d.epilogue.num_steps = dd.epilogue.num_steps = 2;
                d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
                dd.epilogue.steps[0] = tsr_epilogue_bias(db, TSR_F32);
                d.epilogue.steps[1] = dd.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_SILU);
                ck_assert_int_eq(tsr_conv2d(ref, &d, x, w, y1), TSR_OK);
                tsr_problem p;
                memset(&p, 0, sizeof p);
                p.op = TSR_OP_CONV2D;
                p.u.conv.d = dd, p.u.conv.p = P, p.u.conv.q = Q, p.u.conv.x = dx, p.u.conv.w = dw, p.u.conv.y = dy;
                tsr_schedule s;
                memset(&s, 0, sizeof s);
                s.v[0] = k->knobs[0].values[rm], s.v[1] = k->knobs[1].values[vw];
                ck_assert(tsr_kernel_supports(k, &p, ctx, NULL, 0));
                ck_assert_msg(k->run(ctx, &p, &s) == TSR_OK, "%s", tsr_last_error());
                tt_download(ctx, y2, dy, ny * 4);
                char what[96];
                snprintf(what, sizeof what, "igemm shape %zu rm %d vw %d", si, s.v[0], s.v[1]);
                ck_assert_msg(tt_compare(what, y2, y1, TSR_F32, (int64_t)ny, 1e-5, 1e-5) == 0, "%s", what);
                ran++;
                tt_free(ctx, dx), tt_free(ctx, dw), tt_free(ctx, dy), tt_free(ctx, db);
                free(x), free(w), free(bias), free(y1), free(y2);
            }
    printf("opencl: conv2d.opencl.igemm: %d kernel runs checked\n", ran);
    tsr_context_destroy(ctx), tsr_context_destroy(ref);
}
END_TEST

int main(void) {
    Suite *s = suite_create("opencl");
    TCase *rt = tcase_create("runtime");
    tcase_set_timeout(rt, 600);
    tcase_add_test(rt, device_choice_and_info);
    tcase_add_test(rt, binary_cache);
    suite_add_tcase(s, rt);
    TCase *kn = tcase_create("knobs");
    tcase_set_timeout(kn, 600);
    tcase_add_test(kn, gemm_blocked_knobs);
    tcase_add_test(kn, gemm_tiled_knobs);
    tcase_add_test(kn, gemm_direct_and_generic);
    tcase_add_test(kn, conv_igemm_knobs);
    suite_add_tcase(s, kn);
    return tt_run_suite(s);
}
