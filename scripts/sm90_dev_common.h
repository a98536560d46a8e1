/*
 * Host helpers shared by the Hopper dev harnesses (scripts/sm90_dev.cu, sm90_fp8_dev.cu): CUDA
 * error checks that exit with status 2, a sanitize build's log read back, and BENCH.md's timing
 * of one launch (CUDA-graph replays of 20 launches, median of 30 samples, warm).
 */
#ifndef SM90_DEV_COMMON_H
#define SM90_DEV_COMMON_H

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../kernels/include/tuner_sanitize.h"

#define CK(x) sm90_check_cu((x), #x, __FILE__, __LINE__)
#define RT(x) sm90_check_rt((x), #x, __FILE__, __LINE__)

static inline void sm90_check_cu(CUresult r, const char *what, const char *file, int line)
{
	if (r != CUDA_SUCCESS) {
		const char *s = "?";
		cuGetErrorString(r, &s);
		fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, s);
		exit(2);
	}
}

static inline void sm90_check_rt(cudaError_t r, const char *what, const char *file, int line)
{
	if (r != cudaSuccess) {
		fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cudaGetErrorString(r));
		exit(2);
	}
}

/* A sanitize build's log read back into *log: its violations of every kind. */
static inline unsigned sm90_san_violations(CUdeviceptr san, struct tuner_san_log *log)
{
	unsigned total = 0;

	CK(cuMemcpyDtoH(log, san, sizeof(*log)));
	for (int kind = 0; kind < TUNER_SAN_KINDS; kind++)
		total += log->count[kind];
	return total;
}

/* A sanitize build's verdict in msg (" sanitize N violations", with the first one's record): N. */
static inline unsigned sm90_san_message(CUdeviceptr san, char *msg, size_t len)
{
	struct tuner_san_log log;
	const unsigned total = sm90_san_violations(san, &log);

	snprintf(msg, len, " sanitize %u violations", total);
	if (total) {
		const struct tuner_san_record *r = &log.first[0];

		snprintf(msg, len,
		         " sanitize %u violations (first: kind %u width %u addr %llu thread %u block %u)",
		         total, r->kind, r->width, r->addr, r->thread[0], r->block[0]);
	}
	return total;
}

/* BENCH.md: a graph of 20 launches on st, warm; the median over 30 replays, µs per launch. */
template <typename F> static double sm90_median_us(cudaStream_t st, F launch)
{
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaEvent_t e0, e1;
	std::vector<float> us;

	for (int w = 0; w < 3; w++)
		launch();
	RT(cudaStreamSynchronize(st));
	RT(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	for (int r = 0; r < 20; r++)
		launch();
	RT(cudaStreamEndCapture(st, &graph));
	RT(cudaGraphInstantiate(&exec, graph, 0));
	RT(cudaGraphLaunch(exec, st));
	RT(cudaStreamSynchronize(st));
	RT(cudaEventCreate(&e0));
	RT(cudaEventCreate(&e1));
	for (int s = 0; s < 30; s++) {
		float ms;
		RT(cudaEventRecord(e0, st));
		RT(cudaGraphLaunch(exec, st));
		RT(cudaEventRecord(e1, st));
		RT(cudaEventSynchronize(e1));
		RT(cudaEventElapsedTime(&ms, e0, e1));
		us.push_back(ms * 1000.0f / 20);
	}
	std::sort(us.begin(), us.end());
	RT(cudaGraphExecDestroy(exec));
	RT(cudaGraphDestroy(graph));
	RT(cudaEventDestroy(e0));
	RT(cudaEventDestroy(e1));
	return us[us.size() / 2];
}

#endif /* SM90_DEV_COMMON_H */
