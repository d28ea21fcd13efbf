/* oneDNN's dnnl_sgemm and dnnl_gemm_s8s8s32 (row-major), and bf16 x bf16
 * -> f32 through its matmul primitive (this oneDNN has no bf16 GEMM call):
 * one primitive per shape, created on first use, outside the timed calls. */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <string.h>

#include "impls.h"

static char error[160];

/* st as the value of a failed call named what: -1 */
static int failed(const char *what, dnnl_status_t st) {
    snprintf(error, sizeof error, "oneDNN %s: %s%s", what,
             st == dnnl_unimplemented ? "dnnl_unimplemented" : st == dnnl_out_of_memory ? "dnnl_out_of_memory"
             : st == dnnl_invalid_arguments ? "dnnl_invalid_arguments" : "failed",
             st == dnnl_unimplemented ? " (it has no implementation for this CPU's ISA)" : "");
    return -1;
}

static const char *last_error(void) { return error; }

static bool init(int threads, char *why, size_t n) {
    (void)why, (void)n;
    omp_set_num_threads(threads); /* Debian's oneDNN uses OpenMP */
    return true;
}

static int sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n,
                                        0.0f, c, n);
    return st == dnnl_success ? 0 : failed("dnnl_sgemm", st);
}

static int gemm_i8(int ta, int tb, int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *c) {
    const int32_t co = 0;
    const dnnl_status_t st = dnnl_gemm_s8s8s32(ta ? 'T' : 'N', tb ? 'T' : 'N', 'F', m, n, k, 1.0f, a, ta ? m : k, 0, b,
                                               tb ? k : n, 0, 0.0f, c, n, &co);
    return st == dnnl_success ? 0 : failed("dnnl_gemm_s8s8s32", st);
}

#define MATMUL_CACHE 128

typedef struct matmul {
    int ta, tb;
    int64_t m, n, k;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
} matmul;

static matmul cache[MATMUL_CACHE];
static int ncached;
static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_status_t md2(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int trans, dnnl_data_type_t t) {
    dnnl_dims_t dims = {rows, cols}, strides = {trans ? 1 : cols, trans ? rows : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides);
}

static matmul *matmul_for(int ta, int tb, int64_t m, int64_t n, int64_t k) {
    for (int i = 0; i < ncached; i++)
        if (cache[i].ta == ta && cache[i].tb == tb && cache[i].m == m && cache[i].n == n && cache[i].k == k)
            return &cache[i];
    if (ncached == MATMUL_CACHE) return failed("bf16 matmul cache", dnnl_out_of_memory), NULL;
    dnnl_status_t st;
    if (!engine && ((st = dnnl_engine_create(&engine, dnnl_cpu, 0)) != dnnl_success ||
                    (st = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags)) != dnnl_success))
        return failed("engine/stream", st), NULL;
    matmul *mm = &cache[ncached];
    memset(mm, 0, sizeof *mm);
    mm->ta = ta, mm->tb = tb, mm->m = m, mm->n = n, mm->k = k;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    if ((st = md2(&a_md, m, k, ta, dnnl_bf16)) || (st = md2(&b_md, k, n, tb, dnnl_bf16)) ||
        (st = md2(&c_md, m, n, 0, dnnl_f32)) || (st = dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md)) ||
        (st = dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL)))
        return failed("bf16 matmul", st), NULL;
    st = dnnl_primitive_create(&mm->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st || (st = dnnl_memory_create(&mm->a, &a_md, engine, DNNL_MEMORY_NONE)) ||
        (st = dnnl_memory_create(&mm->b, &b_md, engine, DNNL_MEMORY_NONE)) ||
        (st = dnnl_memory_create(&mm->c, &c_md, engine, DNNL_MEMORY_NONE)))
        return failed("bf16 matmul", st), NULL;
    ncached++;
    return mm;
}

static int gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, const uint16_t *a, const uint16_t *b, float *c) {
    matmul *mm = matmul_for(ta, tb, m, n, k);
    if (!mm) return -1;
    dnnl_status_t st;
    if ((st = dnnl_memory_set_data_handle(mm->a, (void *)a)) || (st = dnnl_memory_set_data_handle(mm->b, (void *)b)) ||
        (st = dnnl_memory_set_data_handle(mm->c, c)))
        return failed("bf16 matmul memory", st);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mm->a}, {DNNL_ARG_WEIGHTS, mm->b}, {DNNL_ARG_DST, mm->c}};
    if ((st = dnnl_primitive_execute(mm->prim, stream, 3, args)) || (st = dnnl_stream_wait(stream)))
        return failed("bf16 matmul", st);
    return 0;
}

const gemm_impl impl_onednn = {"onednn", init, sgemm, gemm_i8, gemm_bf16, last_error};
