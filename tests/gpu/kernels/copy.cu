/*
 * A kernel of known cost for the timing check: copies Q to O with 16-byte accesses,
 * grid-stride; moves 2 * 2 * B*H*S*D bytes (read and write).
 */
#include "common.cuh"

extern "C" __global__ void copy(TEST_ARGS)
{
	const size_t n16 = test_elems(B, H, S) / 8;
	const uint4 *src = reinterpret_cast<const uint4 *>(Q);
	uint4 *dst = reinterpret_cast<uint4 *>(O);

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src[i];
}
