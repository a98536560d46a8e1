/*
 * Reference matrix product, plain and obviously correct: C = A B, A [M, K] and B [K, N]
 * fp16 row-major, fp32 math, C [M, N] written as fp32. One thread per element of C,
 * adding k = 0, 1, ..., K - 1 in order; 16 x 16 blocks share 16 x 16 tiles of A and B
 * through shared memory, elements past M, N or K load as zeros. No tensor cores.
 * 8192^3 is 5.5e11 multiply-adds: a fraction of a second at a few fp32 TFLOP/s (an
 * estimate; not yet timed on the H100).
 * Launch: grid (ceil_div(N, 16), ceil_div(M, 16), 1), block (16, 16, 1).
 */
#include <cuda_fp16.h>

#define GEMM_REF_TILE 16

extern "C" __global__ void gemm_ref(const __half *A, const __half *B, float *C, int M, int N, int K)
{
	__shared__ float As[GEMM_REF_TILE][GEMM_REF_TILE];
	__shared__ float Bs[GEMM_REF_TILE][GEMM_REF_TILE];

	const int tx = threadIdx.x, ty = threadIdx.y;
	const int row = blockIdx.y * GEMM_REF_TILE + ty;
	const int col = blockIdx.x * GEMM_REF_TILE + tx;
	float sum = 0.0f;

	for (int k0 = 0; k0 < K; k0 += GEMM_REF_TILE) {
		const int ka = k0 + tx, kb = k0 + ty;

		As[ty][tx] = row < M && ka < K ? __half2float(A[(size_t)row * K + ka]) : 0.0f;
		Bs[ty][tx] = kb < K && col < N ? __half2float(B[(size_t)kb * N + col]) : 0.0f;
		__syncthreads();
		for (int k = 0; k < GEMM_REF_TILE; k++)
			sum += As[ty][k] * Bs[k][tx];
		__syncthreads();
	}
	if (row < M && col < N)
		C[(size_t)row * N + col] = sum;
}
