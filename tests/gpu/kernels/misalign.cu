/*
 * Planted fault: the seeds' bug in miniature, a 16-byte cp.async into shared memory 2
 * bytes off 16-byte alignment. Plain build: CUDA_ERROR_MISALIGNED_ADDRESS. With
 * -DTUNER_SANITIZE the checked wrapper records it in tuner_san_log instead.
 * 128 threads, each copies 8 halves; dynamic shared memory 128 * 16 + 16 bytes.
 */
#include "common.cuh"
#include "tuner_device.cuh"

extern "C" __global__ void misalign(TEST_ARGS)
{
	extern __shared__ __align__(16) unsigned char smem[];
	const size_t n = test_elems(B, H, S);
	const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;

	if (i + 8 > n)
		return;
	tuner_cp_async_16(smem + 2 + threadIdx.x * 16, Q + i, 16);
	tuner_cp_async_commit();
	tuner_cp_async_wait<0>();
	__syncthreads();
	for (int k = 0; k < 8; k++)
		O[i + k] = Q[i + k];
}
