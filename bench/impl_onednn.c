/* oneDNN's dnnl_sgemm and dnnl_gemm_s8s8s32 (row-major), and bf16 x bf16
 * -> f32 through its matmul primitive (this oneDNN has no bf16 GEMM call):
 * one primitive per shape, created on first use, outside the timed calls. */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <string.h>

#include "impls.h"

static bool init(int threads, char *why, size_t n) {
    (void)why, (void)n;
    omp_set_num_threads(threads); /* Debian's oneDNN uses OpenMP */
    return true;
}

static int sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n) ==
                   dnnl_success ? 0 : -1;
}

static int gemm_i8(int ta, int tb, int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *c) {
    const int32_t co = 0;
    return dnnl_gemm_s8s8s32(ta ? 'T' : 'N', tb ? 'T' : 'N', 'F', m, n, k, 1.0f, a, ta ? m : k, 0, b, tb ? k : n, 0,
                             0.0f, c, n, &co) == dnnl_success ? 0 : -1;
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
    if (ncached == MATMUL_CACHE) return NULL;
    if (!engine && (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
                    dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success))
        return NULL;
    matmul *mm = &cache[ncached];
    memset(mm, 0, sizeof *mm);
    mm->ta = ta, mm->tb = tb, mm->m = m, mm->n = n, mm->k = k;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    if (md2(&a_md, m, k, ta, dnnl_bf16) || md2(&b_md, k, n, tb, dnnl_bf16) || md2(&c_md, m, n, 0, dnnl_f32) ||
        dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md) ||
        dnnl_primitive_desc_create(&pd, &desc, NULL, engine, NULL))
        return NULL;
    dnnl_status_t st = dnnl_primitive_create(&mm->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st || dnnl_memory_create(&mm->a, &a_md, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&mm->b, &b_md, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&mm->c, &c_md, engine, DNNL_MEMORY_NONE))
        return NULL;
    ncached++;
    return mm;
}

static int gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, const uint16_t *a, const uint16_t *b, float *c) {
    matmul *mm = matmul_for(ta, tb, m, n, k);
    if (!mm || dnnl_memory_set_data_handle(mm->a, (void *)a) || dnnl_memory_set_data_handle(mm->b, (void *)b) ||
        dnnl_memory_set_data_handle(mm->c, c))
        return -1;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, mm->a}, {DNNL_ARG_WEIGHTS, mm->b}, {DNNL_ARG_DST, mm->c}};
    return dnnl_primitive_execute(mm->prim, stream, 3, args) || dnnl_stream_wait(stream) ? -1 : 0;
}

const gemm_impl impl_onednn = {"onednn", init, sgemm, gemm_i8, gemm_bf16};
