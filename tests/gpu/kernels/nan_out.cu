/* Planted fault: writes NaN (a pattern other than the worker's poison) to every output. */
#include "common.cuh"

extern "C" __global__ void nan_out(TEST_ARGS)
{
	const size_t n = test_elems(B, H, S);

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		O[i] = __ushort_as_half((unsigned short)0x7fff);
}
