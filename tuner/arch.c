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
    /* the arch-specific targets: Hopper's wgmma, setmaxnreg; Blackwell's tcgen05 */
    {"sm_90a", 90, 49152, 232448, 233472, 65536, 255, 1024, 132},
    {"sm_100", 100, 49152, 232448, 233472, 65536, 255, 1024, 148},
    {"sm_100a", 100, 49152, 232448, 233472, 65536, 255, 1024, 148},
    {"sm_120", 120, 49152, 101376, 102400, 65536, 255, 1024, 0},
    {"sm_120a", 120, 49152, 101376, 102400, 65536, 255, 1024, 0},
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
	return "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120, sm_120a, none";
}

int arch_runs_on(const struct arch_limits *a, int cc)
{
	size_t n = strlen(a->name);

	if (n && a->name[n - 1] == 'a')
		return a->cc == cc; /* arch-specific code runs on that one architecture */
	/* machine code runs on the same major version at the same or a later minor */
	return a->cc / 10 == cc / 10 && a->cc % 10 <= cc % 10;
}
