/*
 * attn_half's answer, and every block counting itself in on an arrival counter (scratch, an
 * int, after the attention arguments), as a stream-K or split-K kernel does: with
 * COUNTER_RESET the last block to arrive sets it back to 0, as such a kernel must for a
 * scratch declared 'init: zeros-once'; without, the count is left behind, which only the
 * worker's check after timing can see (the output is right either way).
 */
#include "attn_rows.cuh"

extern "C" __global__ void COUNTER_KERNEL(TEST_ARGS, int *count)
{
	attn_half_rows(Q, K, V, O, B, H, S, softmax_scale);
	__syncthreads();
	if (threadIdx.x == 0) {
		const int blocks = (int)(gridDim.x * gridDim.y * gridDim.z);
		const int before = atomicAdd(count, 1);

		if (COUNTER_RESET && before == blocks - 1)
			atomicExch(count, 0);
	}
}
