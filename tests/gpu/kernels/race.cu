/*
 * Planted fault: a missing __syncthreads(). Warp 0 of each 64-thread block stores a
 * marker, sleeps a time taken from the global timer, then stores the real value; warp 1
 * sleeps a fixed time and reads the shared slot without a barrier. Which value it sees
 * changes from run to run. Grid: one block per 32 outputs.
 */
#include "common.cuh"

extern "C" __global__ void race(TEST_ARGS)
{
	__shared__ float slot[32];
	volatile float *vs = slot;
	const size_t n = test_elems(B, H, S), i = (size_t)blockIdx.x * 32 + (threadIdx.x & 31);
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	if (i >= n)
		return;
	if (threadIdx.x < 32) {
		vs[threadIdx.x] = -1.0f;
		__nanosleep((unsigned)((t >> 5) ^ (blockIdx.x * 2654435761u)) & 4095u);
		vs[threadIdx.x] = __half2float(Q[i]);
	} else {
		__nanosleep(2048);
		O[i] = __float2half(vs[threadIdx.x & 31]); /* no barrier before this read */
	}
}
