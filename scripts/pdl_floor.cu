/*
 * How the period of back-to-back PDL calls follows the life of their blocks: a kernel with the
 * mission kernel's launch (GRID blocks of 384 threads, one per SM by its shared memory) that
 * triggers its dependents at entry, waits in griddepcontrol.wait for the grid before it, then
 * keeps one thread per block busy for N cycles (clock64) and exits. Timed as BENCH.md times
 * (CUDA-graph replays of 20 calls, median of 30), with and without programmatic stream
 * serialization, for each N. If the period is the blocks' life after the wait plus a fixed
 * hand-off, it grows by N cycles a call.
 *
 *   nvcc -O2 -std=c++17 -arch=sm_90a scripts/pdl_floor.cu -o pdl_floor && ./pdl_floor [GRID]
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define RT(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
			        cudaGetErrorString(e_));                                           \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

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
	cudaGraph_t g;
	cudaGraphExec_t ge;
	RT(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < 20; i++)
		RT(cudaLaunchKernelEx(&cfg, spin, n, sink));
	RT(cudaStreamEndCapture(st, &g));
	RT(cudaGraphInstantiate(&ge, g, 0));
	cudaEvent_t e0, e1;
	RT(cudaEventCreate(&e0));
	RT(cudaEventCreate(&e1));
	std::vector<float> v;
	for (int s = 0; s < 33; s++) {
		float ms;
		RT(cudaEventRecord(e0, st));
		RT(cudaGraphLaunch(ge, st));
		RT(cudaEventRecord(e1, st));
		RT(cudaEventSynchronize(e1));
		RT(cudaEventElapsedTime(&ms, e0, e1));
		if (s >= 3)
			v.push_back(ms * 1000.0f / 20);
	}
	std::sort(v.begin(), v.end());
	RT(cudaGraphExecDestroy(ge));
	RT(cudaGraphDestroy(g));
	return v[v.size() / 2];
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
