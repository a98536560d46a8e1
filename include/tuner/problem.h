/* Problem modules: the shape of a workload (dims, FLOPs, bytes, reference kernel). */
#ifndef TUNER_PROBLEM_H
#define TUNER_PROBLEM_H

#include <stddef.h>

/*
 * The CPU-side description of a problem. The GPU side (inputs, launch, compare)
 * lives with the worker in tuner/problems/NAME.c and is reached through the same
 * name (see worker.h).
 */
struct problem {
	const char *name;        /* "attention" */
	const char *const *dims; /* dimension names in order, e.g. B H S D */
	size_t ndims;
	const char *reference; /* reference kernel source, relative to kernels/:
	                          "reference/attention_ref.cu" */
	double (*flops)(const long long *dims);
	double (*bytes)(const long long *dims); /* fewest bytes one call must move */
	/* -1 with a message when a shape is outside what the problem supports (e.g. D not 64/128).
	 */
	int (*validate_shape)(const long long *dims, char *msg, size_t msglen);
};

const struct problem *problem_find(const char *name);
/* Comma-separated names, for error messages. */
const char *problem_known_names(void);

#endif
