/* Thin wrappers over the Ampere instructions the tensor-core kernels use:
 * cp.async (global -> shared without registers), ldmatrix, mma.sync. */
#ifndef TSR_SM80_MMA_CUH
#define TSR_SM80_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t tsr_smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared; bytes beyond src_bytes (0..16) are zero-filled,
 * so tile edges need no branches around the copy. */
__device__ __forceinline__ void tsr_cp_async16(void *smem, const void *gmem, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(tsr_smem_addr(smem)),
                 "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void tsr_cp_async16_s(uint32_t smem, const void *gmem, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(src_bytes));
}
/* 16 bytes global -> shared, all of them in bounds: no src-size operand to
 * compute per chunk */
__device__ __forceinline__ void tsr_cp_async16_full_s(uint32_t smem, const void *gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem));
}
__device__ __forceinline__ void tsr_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void tsr_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void tsr_ldmatrix_x4(uint32_t (&r)[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(tsr_smem_addr(smem)));
}
__device__ __forceinline__ void tsr_ldmatrix_x4_trans(uint32_t (&r)[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(tsr_smem_addr(smem)));
}

/* The same, from a shared-space address (tsr_smem_addr): kernels that
 * step a swizzled address by XOR with constants keep one register per
 * operand stream instead of one per unrolled load. */
__device__ __forceinline__ void tsr_ldmatrix_x4_s(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void tsr_ldmatrix_x4_trans_s(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 2^x on the special-function unit, results below 2^-126 flushed to zero:
 * exp2f's own ex2.approx.f32 adds instructions per call to keep them.
 * For softmax weights, which are summed against a largest weight of 1. */
__device__ __forceinline__ float tsr_ex2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* D = A (16x16, row) * B (16x8, col) + D, f32 accumulators; for int8,
 * A (16x32) * B (32x8), s32 accumulators that wrap as int32 adds do. The
 * operand registers hold the same bytes either way (16 bytes of k per
 * row), so one tile loader serves both. */
template <typename T> struct tsr_mma_op;
template <> struct tsr_mma_op<__half> {
    typedef float acc;
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct tsr_mma_op<__nv_bfloat16> {
    typedef float acc;
    static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <> struct tsr_mma_op<int8_t> {
    typedef int acc;
    static __device__ __forceinline__ void run(int (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

#endif
