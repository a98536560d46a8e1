/* Per-architecture device limits. */
#include <string.h>

#include "tuner/arch.h"

/*
 * Per-block shared memory: 48 KB without opt-in everywhere; the opt-in limit
 * is what cudaFuncSetAttribute(MaxDynamicSharedMemorySize) can raise it to
 * (CUDA C Programming Guide, "Technical Specifications per Compute Capability").
 */
static const struct arch_limits arch_table[] = {
    {"sm_80", 80, 49152, 166912, 167936, 65536, 255, 1024, 108},
    {"sm_86", 86, 49152, 101376, 102400, 65536, 255, 1024, 0},
    {"sm_89", 89, 49152, 101376, 102400, 65536, 255, 1024, 58},
    {"sm_90", 90, 49152, 232448, 233472, 65536, 255, 1024, 132},
    /* no GPU architecture: a recorded landscape (tuner import), never compiled or run */
    {"none", 0, 0, 0, 0, 0, 0, 0, 0},
};

int arch_lookup(const char *name, struct arch_limits *out)
{
	size_t i;

	for (i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++) {
		if (!strcmp(arch_table[i].name, name)) {
			*out = arch_table[i];
			return 0;
		}
	}
	return -1;
}

const char *arch_known_names(void)
{
	return "sm_80, sm_86, sm_89, sm_90, none";
}
