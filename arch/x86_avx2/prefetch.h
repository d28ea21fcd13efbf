/* Software prefetches that the compiler keeps. GCC 12 deletes a loop nest
 * whose only effects are _mm_prefetch / __builtin_prefetch calls (it
 * counts them as no side effect): a C tile's or the next block's
 * prefetch vanished or stayed depending on the caller's inlining (the
 * int8 stream path lost its L2 prefetch to a refactor: one core,
 * 16x4096x4096, 260 -> 200 GOP/s). As volatile asm they always stay. */
#ifndef TSR_X86_PREFETCH_H
#define TSR_X86_PREFETCH_H

/* the line holding p, towards L1 */
static inline __attribute__((always_inline)) void tsr_prefetch_l1(const void *p) {
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
}

/* the line holding p, towards L2 */
static inline __attribute__((always_inline)) void tsr_prefetch_l2(const void *p) {
    __asm__ volatile("prefetcht1 %0" : : "m"(*(const char *)p));
}

#endif
