/* x86 feature detection (cpuid + xgetbv): what the OS lets us run. */
#ifndef TSR_X86_CPUID_H
#define TSR_X86_CPUID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TSR_CPU_* bits, each set only when the CPU has it and the OS saves its state. */
uint32_t tsr_x86_cpu_features(void);
/* AMD's ("AuthenticAMD"): schedules that differ by vendor default from it. */
bool tsr_x86_cpu_is_amd(void);
/* The CPU's brand string, trimmed. */
void tsr_x86_cpu_name(char *buf, size_t len);

#endif
