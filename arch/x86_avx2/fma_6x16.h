/* The AVX2 6 x 16 f32 tile's k loop in inline assembly, for A rows a fixed
 * stride apart (row i at a + i * lda, consecutive k adjacent): three rows
 * share a base register and the scaled index reaches them, so the loop
 * holds five address registers and no stack slot. In C, GCC gave each of
 * the six rows its own pointer and, once an epilogue's pointers were live
 * around the loop, reloaded eight of them from the stack per four steps
 * (pointwise convolution tiles, cachegrind). */
#ifndef TSR_X86_AVX2_FMA_6X16_H
#define TSR_X86_AVX2_FMA_6X16_H

#include <immintrin.h>
#include <stdint.h>

/* One k step: B's 16 columns at BADDR (and 32 bytes on), A's six values D
 * bytes into the rows (r8: rows 0-2, r9: rows 3-5, lda apart); ymm13-15
 * hold B and the broadcast value. */
#define TSR_6X16_STEP(D, BADDR, BADDR32)                                                                      \
    "vmovups " BADDR ", %%ymm13\n\t"                                                                        \
    "vmovups " BADDR32 ", %%ymm14\n\t"                                                                      \
    "vbroadcastss " #D "(%%r8), %%ymm15\n\t"                                                                \
    "vfmadd231ps %%ymm13, %%ymm15, %[c00]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c01]\n\t"                                                              \
    "vbroadcastss " #D "(%%r8,%[lda],1), %%ymm15\n\t"                                                       \
    "vfmadd231ps %%ymm13, %%ymm15, %[c10]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c11]\n\t"                                                              \
    "vbroadcastss " #D "(%%r8,%[lda],2), %%ymm15\n\t"                                                       \
    "vfmadd231ps %%ymm13, %%ymm15, %[c20]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c21]\n\t"                                                              \
    "vbroadcastss " #D "(%%r9), %%ymm15\n\t"                                                                \
    "vfmadd231ps %%ymm13, %%ymm15, %[c30]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c31]\n\t"                                                              \
    "vbroadcastss " #D "(%%r9,%[lda],1), %%ymm15\n\t"                                                       \
    "vfmadd231ps %%ymm13, %%ymm15, %[c40]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c41]\n\t"                                                              \
    "vbroadcastss " #D "(%%r9,%[lda],2), %%ymm15\n\t"                                                       \
    "vfmadd231ps %%ymm13, %%ymm15, %[c50]\n\t"                                                              \
    "vfmadd231ps %%ymm14, %%ymm15, %[c51]\n\t"

/* r11 rounds of four steps from label 1 (r11 > 0): A's rows advance 16
 * bytes a round, B two ldb a pair of steps. */
#define TSR_6X16_ROUNDS                                                                                      \
    "1:\n\t" TSR_6X16_STEP(0, "(%%r10)", "32(%%r10)")                                                        \
    TSR_6X16_STEP(4, "(%%r10,%[ldb],1)", "32(%%r10,%[ldb],1)")                                               \
    "lea (%%r10,%[ldb],2), %%r10\n\t"                                                                        \
    TSR_6X16_STEP(8, "(%%r10)", "32(%%r10)")                                                                 \
    TSR_6X16_STEP(12, "(%%r10,%[ldb],1)", "32(%%r10,%[ldb],1)")                                              \
    "lea (%%r10,%[ldb],2), %%r10\n\t"                                                                        \
    "add $16, %%r8\n\t"                                                                                      \
    "add $16, %%r9\n\t"                                                                                      \
    "dec %%r11\n\t"                                                                                          \
    "jnz 1b\n\t"

/* acc[i][v] += sum over k < kc of a[i * lda + k] * b[k * ldb + 8 v]
 * (i < 6, v < 2): four steps a round in assembly, the rest in C. The
 * twelve accumulators take 24 of asm's 30 operands, so the addresses are
 * copied into named scratch registers (r8-r11) rather than updated in place. */
static inline __attribute__((always_inline)) void tsr_fma_6x16(int64_t kc, const float *a, int64_t lda,
                                                               const float *b, int64_t ldb, __m256 acc[6][2]) {
    const int64_t rounds = kc >> 2;
    if (rounds)
        __asm__ volatile("mov %[a0], %%r8\n\t"
                         "mov %[a3], %%r9\n\t"
                         "mov %[bp], %%r10\n\t"
                         "mov %[n], %%r11\n\t"
                         TSR_6X16_ROUNDS
                         : [c00] "+x"(acc[0][0]), [c01] "+x"(acc[0][1]), [c10] "+x"(acc[1][0]),
                           [c11] "+x"(acc[1][1]), [c20] "+x"(acc[2][0]), [c21] "+x"(acc[2][1]),
                           [c30] "+x"(acc[3][0]), [c31] "+x"(acc[3][1]), [c40] "+x"(acc[4][0]),
                           [c41] "+x"(acc[4][1]), [c50] "+x"(acc[5][0]), [c51] "+x"(acc[5][1])
                         : [a0] "r"(a), [a3] "r"(a + 3 * lda), [bp] "r"(b), [n] "r"(rounds), [lda] "r"(lda * 4),
                           [ldb] "r"(ldb * 4)
                         : "r8", "r9", "r10", "r11", "xmm13", "xmm14", "xmm15", "cc", "memory");
    const float *ar = a + 4 * rounds, *br = b + 4 * rounds * ldb;
    for (int64_t p = 0; p < (kc & 3); p++) {
        const __m256 v0 = _mm256_loadu_ps(br + p * ldb), v1 = _mm256_loadu_ps(br + p * ldb + 8);
#pragma GCC unroll 6
        for (int i = 0; i < 6; i++) {
            const __m256 x = _mm256_broadcast_ss(ar + i * lda + p);
            acc[i][0] = _mm256_fmadd_ps(x, v0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(x, v1, acc[i][1]);
        }
    }
}

/* acc[i][v] += sum over r < nr, k < kc of a[r * pitch + i * lda + k] *
 * b[(r * kc + k) * ldb + 8 v]: a direct convolution's tile of six pixels
 * in one output row, each filter row a run of kc values per pixel, the
 * next filter row pitch on, and B's rows one after another. Filter rows,
 * rounds and the steps left all in assembly: at the 3-channel 7x7 stem
 * (kc 21) the C remainder and the call per filter row were 50 of the 495
 * instructions of a filter row (cachegrind). */
static inline __attribute__((always_inline)) void tsr_fma_6x16_rows(int64_t nr, int64_t kc, const float *a,
                                                                    int64_t lda, int64_t pitch, const float *b,
                                                                    int64_t ldb, __m256 acc[6][2]) {
    if (nr <= 0 || kc <= 0) return;
    /* the counts from memory: 24 accumulator operands leave asm six */
    const int64_t ctl[4] = {nr, kc >> 2, kc & 3, (pitch - kc) * 4};
    __asm__ volatile("mov %[a0], %%r8\n\t"
                     "lea (%[a0],%[lda],2), %%r9\n\t"
                     "add %[lda], %%r9\n\t"
                     "mov %[bp], %%r10\n\t"
                     "mov (%[ctl]), %%r12\n\t"
                     "2:\n\t"
                     "mov 8(%[ctl]), %%r11\n\t"
                     "test %%r11, %%r11\n\t"
                     "jz 4f\n\t"
                     TSR_6X16_ROUNDS
                     "4:\n\t"
                     "mov 16(%[ctl]), %%r11\n\t"
                     "test %%r11, %%r11\n\t"
                     "jz 5f\n\t"
                     "3:\n\t" TSR_6X16_STEP(0, "(%%r10)", "32(%%r10)")
                     "add %[ldb], %%r10\n\t"
                     "add $4, %%r8\n\t"
                     "add $4, %%r9\n\t"
                     "dec %%r11\n\t"
                     "jnz 3b\n\t"
                     "5:\n\t"
                     "add 24(%[ctl]), %%r8\n\t"
                     "add 24(%[ctl]), %%r9\n\t"
                     "dec %%r12\n\t"
                     "jnz 2b\n\t"
                     : [c00] "+x"(acc[0][0]), [c01] "+x"(acc[0][1]), [c10] "+x"(acc[1][0]), [c11] "+x"(acc[1][1]),
                       [c20] "+x"(acc[2][0]), [c21] "+x"(acc[2][1]), [c30] "+x"(acc[3][0]), [c31] "+x"(acc[3][1]),
                       [c40] "+x"(acc[4][0]), [c41] "+x"(acc[4][1]), [c50] "+x"(acc[5][0]), [c51] "+x"(acc[5][1])
                     : [a0] "r"(a), [bp] "r"(b), [ctl] "r"(ctl), [lda] "r"(lda * 4), [ldb] "r"(ldb * 4)
                     : "r8", "r9", "r10", "r11", "r12", "xmm13", "xmm14", "xmm15", "cc", "memory");
}

#undef TSR_6X16_ROUNDS
#undef TSR_6X16_STEP
#endif
