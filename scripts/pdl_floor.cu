/*
 * How the period of back-to-back PDL calls follows the life of their blocks: a kernel with the
 * mission kernel's launch (GRID blocks of 384 threads, one per SM by its shared memory) that
 * triggers its dependents at entry, waits in griddepcontrol.wait for the grid before it, then
 * keeps one thread per block busy for N cycles (clock64) and exits. Timed as BENCH.md times
 * (CUDA-graph replays of 20 calls, median of 30), with and without programmatic stream
 * serialization, for each N. If the period is the blocks' life after the wait plus a fixed
 * hand-off, it grows by N cycles a call.
 *
 *   nvcc -O2 -std=c++17 -arch=sm_90a scripts/pdl_floor.cu -lcuda -o pdl_floor && ./pdl_floor [GRID]
 */
#include <cstdio>
#include <cstdlib>

#include "sm90_dev_common.h" /* RT, sm90_median_us */

__global__ void __launch_bounds__(384, 1) spin(long long n, int *sink)
{
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
	__syncthreads();
	asm volatile("griddepcontrol.wait;" ::: "memory");
	if (threadIdx.x == 0) {
		const long long t0 = clock64();
		long long t = t0;

		while (t - t0 < n)
			t = clock64();
		if (t == 0)
			*sink = 1; /* never: keeps the loop */
	}
}

/* The median µs a call of graphs of 20 back-to-back calls (sm90_median_us, BENCH.md). */
static double per_call_us(cudaStream_t st, int grid, int smem, long long n, int pdl, int *sink)
{
	cudaLaunchAttribute attr = {};
	attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	attr.val.programmaticStreamSerializationAllowed = 1;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(grid);
	cfg.blockDim = dim3(384);
	cfg.dynamicSmemBytes = smem;
	cfg.stream = st;
	cfg.attrs = &attr;
	cfg.numAttrs = pdl;
	return sm90_median_us(st, [&]() { RT(cudaLaunchKernelEx(&cfg, spin, n, sink)); });
}

int main(int argc, char **argv)
{
	const int grid = argc > 1 ? atoi(argv[1]) : 64, smem = 120 * 1024;
	int *sink, clock_khz;
	cudaStream_t st;

	RT(cudaSetDevice(0));
	RT(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	RT(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	RT(cudaMalloc(&sink, 4));
	RT(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	printf("grid %d x 384 threads, %d KB shared memory a block; device clock %d MHz\n", grid,
	       smem / 1024, clock_khz / 1000);
	printf("%8s %14s %14s %14s\n", "N cycles", "PDL us/call", "plain us/call", "N at the clock");
	for (long long n : {0LL, 1000LL, 2000LL, 4000LL, 6000LL, 8000LL, 10000LL})
		printf("%8lld %14.2f %14.2f %14.2f\n", n, per_call_us(st, grid, smem, n, 1, sink),
		       per_call_us(st, grid, smem, n, 0, sink), n / (clock_khz / 1000.0));
	return 0;
}
