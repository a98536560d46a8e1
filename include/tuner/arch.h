/* Per-architecture device limits (sm_80 to sm_120a). */
#ifndef TUNER_ARCH_H
#define TUNER_ARCH_H

struct arch_limits {
	char name[16];            /* "sm_90" */
	int cc;                   /* compute capability x10: 90 */
	long long smem_per_block; /* default dynamic+static limit without opt-in: 49152 */
	long long
	    smem_per_block_optin; /* opt-in limit via cudaFuncAttributeMaxDynamicSharedMemorySize */
	long long smem_per_sm;
	long long regs_per_sm;     /* 65536 */
	int regs_per_thread;       /* 255 */
	int max_threads_per_block; /* 1024 */
	int sm_count;              /* typical part: 132 for H100 SXM, 58 for L4; 0 if unknown */
};

/* 0 and *out filled for a known arch name, -1 (no message) otherwise. */
int arch_lookup(const char *name, struct arch_limits *out);
/*
 * Whether cubins built for a run on a GPU of compute capability cc (x10):
 * same major and a minor at least the target's, or exactly cc for an
 * arch-specific target (sm_90a).
 */
int arch_runs_on(const struct arch_limits *a, int cc);
/* Comma-separated list of known names, for error messages. */
const char *arch_known_names(void);

#endif
