/* The attention problem's float64 CPU reference, for the tests (tests/gpu and tests/unit). */
#ifndef TUNER_TEST_ATTENTION_CPU_H
#define TUNER_TEST_ATTENTION_CPU_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tuner/common.h"
#include "tuner/cuda.h"

/*
 * O = softmax(Q K^T / sqrt(D)) V in float64, non-causal, for fp16 inputs
 * [B, H, S, D] (dims = {B, H, S, D}); out holds B*H*S*D doubles. For the small
 * shapes that check the reference kernel: -1 with an error() past 2^32
 * multiply-adds.
 */
static inline int attention_cpu_reference(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                          double *out, const long long *dims)
{
	long long B = dims[0], H = dims[1], S = dims[2], D = dims[3], bh, i, j, e;
	double scale, *qd, *kd, *vd, *p;
	size_t n;

	if (B <= 0 || H <= 0 || S <= 0 || D <= 0)
		return error("attention reference: dims must be positive (%lld %lld %lld %lld)", B,
		             H, S, D);
	if ((double)B * (double)H * (double)S * (double)S * (double)D > 4294967296.0)
		return error(
		    "attention reference: shape %lld x %lld x %lld x %lld is too large for "
		    "the CPU",
		    B, H, S, D);
	n = (size_t)(B * H * S * D);
	scale = 1.0 / sqrt((double)D);
	qd = xmalloc(3 * n * sizeof(double));
	kd = qd + n;
	vd = kd + n;
	p = xmalloc((size_t)S * sizeof(double));
	for (i = 0; i < (long long)n; i++) {
		qd[i] = cuda_half_to_float(q[i]);
		kd[i] = cuda_half_to_float(k[i]);
		vd[i] = cuda_half_to_float(v[i]);
	}
	for (bh = 0; bh < B * H; bh++) {
		const double *qh = qd + bh * S * D, *kh = kd + bh * S * D, *vh = vd + bh * S * D;
		double *oh = out + bh * S * D;

		for (i = 0; i < S; i++) {
			double max = -INFINITY, sum = 0;

			for (j = 0; j < S; j++) {
				double dot = 0;

				for (e = 0; e < D; e++)
					dot += qh[i * D + e] * kh[j * D + e];
				p[j] = dot * scale;
				if (p[j] > max)
					max = p[j];
			}
			for (j = 0; j < S; j++) {
				p[j] = exp(p[j] - max);
				sum += p[j];
			}
			for (e = 0; e < D; e++) {
				double acc = 0;

				for (j = 0; j < S; j++)
					acc += p[j] * vh[j * D + e];
				oh[i * D + e] = acc / sum;
			}
		}
	}
	free(p);
	free(qd);
	return 0;
}

#endif
