/*
 * Reference row softmax, plain and obviously correct: Y[r, j] = exp(X[r, j] - max_r) / sum_r
 * over the last dim of a [rows, cols] fp16 tensor, fp32 out. One block of 256 threads per row,
 * three strided passes over the row (max; sum of exponentials in double; write), each
 * followed by a shared-memory tree reduction. exp in double: nothing approximate.
 * Launch: grid (rows), 256 threads. No vector accesses, no tensor cores.
 */
#include <cuda_fp16.h>

#define SOFTMAX_REF_THREADS 256

extern "C" __global__ void softmax_ref(const __half *X, float *Y, int rows, int cols)
{
	__shared__ float red_max[SOFTMAX_REF_THREADS];
	__shared__ double red_sum[SOFTMAX_REF_THREADS];
	const int row = blockIdx.x, tid = threadIdx.x;

	if (row >= rows)
		return;
	/* A launch with another block size would reduce the wrong number of partials. */
	if (blockDim.x != SOFTMAX_REF_THREADS) {
		for (int j = tid; j < cols; j += blockDim.x)
			Y[(size_t)row * cols + j] = __int_as_float(0x7fc00000);
		return;
	}

	const __half *x = X + (size_t)row * cols;
	float *y = Y + (size_t)row * cols;

	/* Pass 1: the row's largest element. */
	float mx = __int_as_float(0xff800000); /* -inf */
	for (int j = tid; j < cols; j += SOFTMAX_REF_THREADS)
		mx = fmaxf(mx, __half2float(x[j]));
	red_max[tid] = mx;
	__syncthreads();
	for (int n = SOFTMAX_REF_THREADS / 2; n > 0; n /= 2) {
		if (tid < n)
			red_max[tid] = fmaxf(red_max[tid], red_max[tid + n]);
		__syncthreads();
	}
	mx = red_max[0];

	/* Pass 2: the sum of exp(x - max). */
	double sum = 0.0;
	for (int j = tid; j < cols; j += SOFTMAX_REF_THREADS)
		sum += exp((double)__half2float(x[j]) - (double)mx);
	red_sum[tid] = sum;
	__syncthreads();
	for (int n = SOFTMAX_REF_THREADS / 2; n > 0; n /= 2) {
		if (tid < n)
			red_sum[tid] += red_sum[tid + n];
		__syncthreads();
	}
	sum = red_sum[0];

	/* Pass 3: the output. */
	for (int j = tid; j < cols; j += SOFTMAX_REF_THREADS)
		y[j] = (float)(exp((double)__half2float(x[j]) - (double)mx) / sum);
}
