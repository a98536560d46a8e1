/*
 * attn_half's answer from a kernel that triggers its dependents at entry (griddepcontrol.
 * launch_dependents) and keeps its blocks alive ~50 us, counting the live blocks of every call
 * on a module variable. A block that finds more live blocks than its own grid has is running
 * beside the call before it: it spoils its first output element (NaN). In a plain launch, or
 * with PDL_WAIT (griddepcontrol.wait before counting in, as a kernel that reads what the call
 * before wrote must), that never happens; launched with programmatic stream serialization and
 * without the wait, back-to-back calls overlap, which only the worker's check of the timed
 * launches can see.
 */
#include "attn_rows.cuh"

__device__ int pdl_live; /* blocks alive now, over every call of this module */

extern "C" __global__ void PDL_KERNEL(TEST_ARGS)
{
	__shared__ int overlapped;
	const int blocks = (int)(gridDim.x * gridDim.y * gridDim.z);

	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
	if (PDL_WAIT)
		asm volatile("griddepcontrol.wait;\n" ::: "memory");
	if (threadIdx.x == 0)
		overlapped = atomicAdd(&pdl_live, 1) >= blocks;
	__syncthreads();
	attn_half_rows(Q, K, V, O, B, H, S, softmax_scale);
	if (threadIdx.x == 0) {
		const long long t0 = clock64();

		while (clock64() - t0 < 100000) /* ~50 us: the next call starts meanwhile */
			;
		if (overlapped) {
			const int row = blockIdx.x * blockDim.x;
			const size_t head = ((size_t)blockIdx.z * H + blockIdx.y) * (size_t)S * TEST_D;

			O[head + (size_t)row * TEST_D] = __float2half(NAN);
		}
		__threadfence();
		atomicSub(&pdl_live, 1);
	}
}
