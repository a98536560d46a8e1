/*
 * Reference FP8 attention, plain and obviously correct: O = softmax(Q K^T * scale) V,
 * non-causal, Q and K e4m3 [B, H, S, D], V e4m3 TRANSPOSED [B, H, D, Sp] (key `key` of column d
 * at d * Sp + key; columns past S are padding, never read), all arithmetic in double, O f32
 * [B, H, S, D]. One thread per query row, two passes over the keys (row max, then the
 * exponentials' sum and the weighted sum of V). Launch: grid (ceil_div(S, 128), H, B), 128
 * threads. No tensor cores, no shared memory.
 */
#include <cuda_fp16.h>
#include <cuda_fp8.h>

/* Head dims up to this are supported; a larger D writes NaN rows so a comparison fails. */
#define ATTN_FP8_REF_MAX_D 128

/* An e4m3 value, exactly, as a double. */
__device__ double e4m3_to_double(__nv_fp8_storage_t x)
{
	return (double)__half2float(__half(__nv_cvt_fp8_to_halfraw(x, __NV_E4M3)));
}

extern "C" __global__ void attention_fp8_ref(const __nv_fp8_storage_t *Q,
                                             const __nv_fp8_storage_t *K,
                                             const __nv_fp8_storage_t *Vt, float *O, int B, int H,
                                             int S, int D, int Sp, float softmax_scale)
{
	const int row = blockIdx.x * blockDim.x + threadIdx.x;
	const int h = blockIdx.y, b = blockIdx.z;

	if (row >= S || h >= H || b >= B)
		return;

	const size_t bh = (size_t)b * H + h;
	const __nv_fp8_storage_t *q = Q + (bh * S + row) * D;
	const __nv_fp8_storage_t *vt = Vt + bh * D * Sp;
	float *o = O + (bh * S + row) * D;
	const double scale = softmax_scale;

	if (D > ATTN_FP8_REF_MAX_D) {
		for (int d = 0; d < D; d++)
			o[d] = __int_as_float(0x7fc00000);
		return;
	}

	/* Pass 1: the largest score of the row. */
	double row_max = -1.0e300;
	for (int key = 0; key < S; key++) {
		const __nv_fp8_storage_t *k = K + (bh * S + key) * D;
		double dot = 0.0;

		for (int d = 0; d < D; d++)
			dot += e4m3_to_double(q[d]) * e4m3_to_double(k[d]);
		row_max = fmax(row_max, dot * scale);
	}

	/* Pass 2: sum of exp(score - max) and the weighted sum of V rows. */
	double acc[ATTN_FP8_REF_MAX_D];
	for (int d = 0; d < D; d++)
		acc[d] = 0.0;
	double sum = 0.0;
	for (int key = 0; key < S; key++) {
		const __nv_fp8_storage_t *k = K + (bh * S + key) * D;
		double dot = 0.0;

		for (int d = 0; d < D; d++)
			dot += e4m3_to_double(q[d]) * e4m3_to_double(k[d]);
		const double p = exp(dot * scale - row_max);
		sum += p;
		for (int d = 0; d < D; d++)
			acc[d] += p * e4m3_to_double(vt[(size_t)d * Sp + key]);
	}

	for (int d = 0; d < D; d++)
		o[d] = (float)(acc[d] / sum);
}
