/* The attention problem, CPU side: dims B H S D, FLOPs, bytes, supported head dims. */
#include <stdio.h>
#include <string.h>

#include "tuner/problem.h"

static const char *const attention_dims[] = {"B", "H", "S", "D"};

/* Two matrix products of S x S x D per (batch, head): QK^T and PV. */
static double attention_flops(const long long *d)
{
	return 4.0 * (double)d[0] * (double)d[1] * (double)d[2] * (double)d[2] * (double)d[3];
}

/* Q, K, V read once and O written once, fp16. */
static double attention_bytes(const long long *d)
{
	return 4.0 * 2.0 * (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3];
}

static int attention_validate(const long long *d, char *msg, size_t len)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (d[i] <= 0) {
			snprintf(msg, len, "%s must be positive (got %lld)", attention_dims[i],
			         d[i]);
			return -1;
		}
	}
	if (d[3] != 64 && d[3] != 128) {
		snprintf(msg, len, "head dim D must be 64 or 128 (got %lld)", d[3]);
		return -1;
	}
	return 0;
}

const struct problem problem_attention = {
    .name = "attention",
    .dims = attention_dims,
    .ndims = 4,
    .reference = "reference/attention_ref.cu",
    .flops = attention_flops,
    .bytes = attention_bytes,
    .validate_shape = attention_validate,
};
