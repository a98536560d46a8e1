/*
 * Reference attention, plain and obviously correct: O = softmax(Q K^T * scale + mask) V with
 * mask -inf where key > query when causal, [B, H, S, D] contiguous, fp16 or bf16 in, fp32
 * math, fp32 out. One thread per query row, two passes over the keys it may see (row max,
 * then the exponentials' sum and the weighted sum of V). Launch: grid (ceil_div(S, 128),
 * H, B), 128 threads. No tensor cores, no shared memory.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* Head dims up to this are supported; a larger D writes NaN rows so a comparison fails. */
#define ATTN_REF_MAX_D 256

static __device__ float ref_float(__half x)
{
	return __half2float(x);
}

static __device__ float ref_float(__nv_bfloat16 x)
{
	return __bfloat162float(x);
}

template <typename T>
static __device__ void attention_ref_row(const T *Q, const T *K, const T *V, float *O, int B, int H,
                                         int S, int D, float softmax_scale, int causal)
{
	const int row = blockIdx.x * blockDim.x + threadIdx.x;
	const int h = blockIdx.y, b = blockIdx.z;

	if (row >= S || h >= H || b >= B)
		return;

	const size_t head = ((size_t)b * H + h) * (size_t)S * D;
	const T *q = Q + head + (size_t)row * D;
	float *o = O + head + (size_t)row * D;
	/* The keys this row attends to: all of them, or up to itself when causal. */
	const int nkeys = causal ? row + 1 : S;

	if (D > ATTN_REF_MAX_D) {
		for (int d = 0; d < D; d++)
			o[d] = __int_as_float(0x7fc00000);
		return;
	}

	/* Pass 1: the largest score of the row. */
	float row_max = -3.402823466e38f;
	for (int key = 0; key < nkeys; key++) {
		const T *k = K + head + (size_t)key * D;
		float dot = 0.0f;

		for (int d = 0; d < D; d++)
			dot += ref_float(q[d]) * ref_float(k[d]);
		row_max = fmaxf(row_max, dot * softmax_scale);
	}

	/* Pass 2: sum of exp(score - max) and the weighted sum of V rows. */
	float acc[ATTN_REF_MAX_D];
	for (int d = 0; d < D; d++)
		acc[d] = 0.0f;
	float sum = 0.0f;
	for (int key = 0; key < nkeys; key++) {
		const T *k = K + head + (size_t)key * D;
		const T *v = V + head + (size_t)key * D;
		float dot = 0.0f;

		for (int d = 0; d < D; d++)
			dot += ref_float(q[d]) * ref_float(k[d]);
		const float p = expf(dot * softmax_scale - row_max);
		sum += p;
		for (int d = 0; d < D; d++)
			acc[d] += p * ref_float(v[d]);
	}

	for (int d = 0; d < D; d++)
		o[d] = acc[d] / sum;
}

extern "C" __global__ void attention_causal_ref(const __half *Q, const __half *K, const __half *V,
                                                float *O, int B, int H, int S, int D,
                                                float softmax_scale, int causal)
{
	attention_ref_row(Q, K, V, O, B, H, S, D, softmax_scale, causal);
}

extern "C" __global__ void attention_causal_ref_bf16(const __nv_bfloat16 *Q, const __nv_bfloat16 *K,
                                                     const __nv_bfloat16 *V, float *O, int B, int H,
                                                     int S, int D, float softmax_scale, int causal)
{
	attention_ref_row(Q, K, V, O, B, H, S, D, softmax_scale, causal);
}
