/*
 * The record a sanitize build of a variant (-DTUNER_SANITIZE) leaves in device
 * memory instead of faulting: shared by the kernels (CUDA C++) and the worker (C).
 * A kernel built with TUNER_SANITIZE defines one __device__ variable of this
 * type named tuner_san_log; the worker zeroes it before a launch (cuModuleGetGlobal)
 * and reads it after.
 */
#ifndef TUNER_SANITIZE_H
#define TUNER_SANITIZE_H

#define TUNER_SAN_MAX_RECORDS 8

enum tuner_san_kind {
	TUNER_SAN_CP_ASYNC = 0,  /* cp.async destination (shared) or source (global) misaligned */
	TUNER_SAN_LDMATRIX = 1,  /* ldmatrix row address not 16-byte aligned */
	TUNER_SAN_VEC_LOAD = 2,  /* vector load misaligned for its width */
	TUNER_SAN_VEC_STORE = 3, /* vector store misaligned for its width */
	TUNER_SAN_BOUNDS = 4,    /* shared access outside the dynamic allocation */
	TUNER_SAN_KINDS = 5
};

enum tuner_san_space { TUNER_SAN_GLOBAL = 0, TUNER_SAN_SHARED = 1 };

struct tuner_san_record {
	unsigned int kind;      /* enum tuner_san_kind */
	unsigned int space;     /* enum tuner_san_space */
	unsigned int width;     /* access width in bytes */
	unsigned int is_write;
	unsigned int thread[3];
	unsigned int block[3];
	unsigned long long addr; /* shared: offset in the shared window; global: the address */
};

struct tuner_san_log {
	unsigned int count[TUNER_SAN_KINDS]; /* violations of each kind, all threads */
	unsigned int nrecords;               /* records claimed (may exceed TUNER_SAN_MAX_RECORDS) */
	struct tuner_san_record first[TUNER_SAN_MAX_RECORDS];
};

#endif
