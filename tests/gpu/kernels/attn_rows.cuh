/*
 * The body of attn_half (a correct, simple attention: one thread per query row, online softmax,
 * fp16 output), for the test kernels that must compute the right answer and do something more.
 * Grid (ceil(S/128), H, B), 128 threads.
 */
#ifndef TEST_ATTN_ROWS_CUH
#define TEST_ATTN_ROWS_CUH

#include "common.cuh"

static __device__ __forceinline__ void attn_half_rows(TEST_ARGS)
{
	const int row = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;

	if (row >= S)
		return;
	const size_t head = ((size_t)b * H + h) * (size_t)S * TEST_D;
	const __half *q = Q + head + (size_t)row * TEST_D;
	float qf[TEST_D], acc[TEST_D], m = -INFINITY, l = 0.0f;

#pragma unroll
	for (int d = 0; d < TEST_D; d++) {
		qf[d] = __half2float(q[d]) * softmax_scale;
		acc[d] = 0.0f;
	}
	for (int key = 0; key < S; key++) {
		const __half *k = K + head + (size_t)key * TEST_D;
		const __half *v = V + head + (size_t)key * TEST_D;
		float s = 0.0f;

#pragma unroll
		for (int d = 0; d < TEST_D; d++)
			s += qf[d] * __half2float(k[d]);
		const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);

		l = l * corr + p;
#pragma unroll
		for (int d = 0; d < TEST_D; d++)
			acc[d] = acc[d] * corr + p * __half2float(v[d]);
		m = mn;
	}
	__half *o = O + head + (size_t)row * TEST_D;
#pragma unroll
	for (int d = 0; d < TEST_D; d++)
		o[d] = __float2half(acc[d] / l);
}

#endif
