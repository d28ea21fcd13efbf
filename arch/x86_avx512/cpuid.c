#include "cpuid.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

uint32_t tsr_x86_cpu_features(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave) return 0;
    uint64_t xcr0 = xgetbv0();
    bool ymm_ok = (xcr0 & 0x6) == 0x6;      /* SSE + AVX state */
    bool zmm_ok = (xcr0 & 0xe6) == 0xe6;    /* + opmask, ZMM_Hi256, Hi16_ZMM */
    uint32_t f = 0;
    if (ymm_ok && fma) f |= TSR_CPU_FMA;
    if (ymm_ok && f16c) f |= TSR_CPU_F16C;
    unsigned max_leaf = (unsigned)__get_cpuid_max(0, NULL);
    if (max_leaf < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    if (ymm_ok && ((b >> 5) & 1)) f |= TSR_CPU_AVX2;
    if (zmm_ok) {
        if ((b >> 16) & 1) f |= TSR_CPU_AVX512F;
        if ((b >> 17) & 1) f |= TSR_CPU_AVX512DQ;
        if ((b >> 30) & 1) f |= TSR_CPU_AVX512BW;
        if ((b >> 31) & 1) f |= TSR_CPU_AVX512VL;
        if ((c >> 11) & 1) f |= TSR_CPU_AVX512VNNI;
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        if ((a1 >> 5) & 1) f |= TSR_CPU_AVX512BF16;
    }
    return f;
}

bool tsr_x86_cpu_is_amd(void) {
    unsigned a, r[3];
    if (!__get_cpuid(0, &a, &r[0], &r[2], &r[1])) return false; /* ebx, edx, ecx spell the vendor */
    return memcmp(r, "AuthenticAMD", 12) == 0;
}

void tsr_x86_cpu_name(char *buf, size_t len) {
    if (!len) return;
    unsigned r[12];
    char s[49] = {0};
    if ((unsigned)__get_cpuid_max(0x80000000, NULL) >= 0x80000004u) { /* clang declares it int */
        for (unsigned i = 0; i < 3; i++)
            __cpuid(0x80000002 + i, r[i * 4], r[i * 4 + 1], r[i * 4 + 2], r[i * 4 + 3]);
        memcpy(s, r, 48);
    }
    const char *p = s;
    while (*p == ' ') p++;
    size_t n = strlen(p);
    while (n && p[n - 1] == ' ') n--;
    if (n >= len) n = len - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (!n) snprintf(buf, len, "x86 CPU");
}
#else
uint32_t tsr_x86_cpu_features(void) { return 0; }
bool tsr_x86_cpu_is_amd(void) { return false; }
void tsr_x86_cpu_name(char *buf, size_t len) { snprintf(buf, len, "CPU"); }
#endif
