/* The attention problem's GPU half and its float64 CPU reference. */
#ifndef TUNER_ATTENTION_GPU_H
#define TUNER_ATTENTION_GPU_H

#include <stdint.h>

#include "tuner/worker.h"

extern const struct worker_problem attention_gpu_problem;

/*
 * O = softmax(Q K^T / sqrt(D)) V in float64, non-causal, for fp16 inputs
 * [B, H, S, D] (dims = {B, H, S, D}); out holds B*H*S*D doubles. For the small
 * shapes that check the reference kernel: -1 with an error() past 2^32
 * multiply-adds.
 */
int attention_cpu_reference(const uint16_t *q, const uint16_t *k, const uint16_t *v, double *out,
                            const long long *dims);

#endif
