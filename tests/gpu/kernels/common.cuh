/*
 * Shared by the GPU test kernels: every one takes the attention problem's arguments
 * (Q, K, V, O, B, H, S, softmax_scale), with the head dim fixed at compile time.
 */
#ifndef TEST_COMMON_CUH
#define TEST_COMMON_CUH

#include <cuda_fp16.h>

#ifndef TEST_D
#define TEST_D 64
#endif

#define TEST_ARGS                                                                                  \
	const __half *__restrict__ Q, const __half *__restrict__ K, const __half *__restrict__ V,  \
		__half *__restrict__ O, int B, int H, int S, float softmax_scale

static __device__ __forceinline__ size_t test_elems(int B, int H, int S)
{
	return (size_t)B * H * S * TEST_D;
}

#endif
