/* Planted fault: a store 2^41 bytes past the end of O, far outside any allocation. */
#include "common.cuh"

extern "C" __global__ void oob(TEST_ARGS)
{
	volatile __half *o = O;

	o[test_elems(B, H, S) + ((size_t)1 << 40) + threadIdx.x] = __float2half(1.0f);
}
