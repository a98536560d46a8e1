/*
 * Check and time one flash_fwd_sm90_fp8 cubin on the GPU, outside tuner: load the cubin with the
 * driver, make the three TMA maps as kernels/problems/attention_tma_fp8.yaml describes them,
 * run each shape against the problem's own float64 reference kernel (attention_fp8_ref.cu,
 * compiled in), and time it as BENCH.md says (CUDA-graph replays of 20 launches, median of 30
 * samples, warm).
 *
 *   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a scripts/sm90_fp8_dev.cu -lcuda \
 *        -o sm90_fp8_dev
 *   sm90_fp8_dev [--time] [--sanitize] CUBIN BLOCK_N CONSUMERS SMEM_BYTES B,H,S,D [B,H,S,D ...]
 *
 * Inputs: N(0, 1) draws rounded to e4m3 (Q, K [B, H, S, D]; V^T [B, H, D, Sp], Sp = S rounded
 * up to 16, whose pad columns hold e4m3 NaN (0x7f): the kernel must never read them); O is
 * poisoned with NaN before the run. One line per shape: PASS or FAIL, rel_l2 and max_abs
 * against the reference (the problem's tolerances: rel_l2 < 5e-2, max_abs < 8e-2, no
 * non-finite element), and with --time the median µs and TFLOP/s. --sanitize reads the cubin's
 * tuner_san_log after the run (a TUNER_SANITIZE build) and fails on any violation. Exit status:
 * 0 all passed, 1 a check failed, 2 a CUDA error.
 */
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>

#include "../kernels/reference/attention_fp8_ref.cu"
#include "sm90_dev_common.h"

/* The problem's tolerances (kernels/problems/attention_tma_fp8.yaml). */
#define FP8_REL_L2  5.0e-2
#define FP8_MAX_ABS 8.0e-2

/* N(0, 1) draws from a hash of (seed, index), Box-Muller, rounded to e4m3. */
__global__ void fill_e4m3(__nv_fp8_storage_t *x, size_t n, unsigned seed)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((unsigned long long)seed << 32);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	float u1 = ((h & 0xffffffu) + 1) / 16777217.0f, u2 = ((h >> 24) & 0xffffffu) / 16777216.0f;
	x[i] = __nv_cvt_float_to_fp8(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2), __NV_SATFINITE,
	                             __NV_E4M3);
}

/* The pad columns S..Sp-1 of every V^T row: e4m3 NaN. */
__global__ void poison_pad(__nv_fp8_storage_t *vt, size_t rows, int S, int Sp)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= rows * (Sp - S))
		return;
	vt[i / (Sp - S) * Sp + S + i % (Sp - S)] = 0x7f;
}

/* A 3-D e4m3 map [dims], byte strides of dims 1 and 2, box {64, rows, 1}, 64-byte swizzle. */
static void make_map(CUtensorMap *m, void *p, cuuint64_t d0, cuuint64_t d1, cuuint64_t d2,
                     cuuint64_t s1, cuuint64_t s2, cuuint32_t rows)
{
	cuuint64_t dims[3] = {d0, d1, d2}, strides[2] = {s1, s2};
	cuuint32_t box[3] = {64, rows, 1}, estr[3] = {1, 1, 1};

	CK(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, p, dims, strides, box, estr,
	                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
	                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
	                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

int main(int argc, char **argv)
{
	int a = 1, do_time = 0, sanitize = 0, failed = 0;

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--time"))
			do_time = 1;
		else if (!strcmp(argv[a], "--sanitize"))
			sanitize = 1;
	}
	if (argc - a < 5) {
		fprintf(stderr, "usage: sm90_fp8_dev [--time] [--sanitize] CUBIN BLOCK_N CONSUMERS "
		                "SMEM_BYTES B,H,S,D [B,H,S,D ...]\n");
		return 2;
	}
	const char *cubin = argv[a];
	int block_n = atoi(argv[a + 1]), consumers = atoi(argv[a + 2]), smem = atoi(argv[a + 3]);

	RT(cudaSetDevice(0));
	RT(cudaFree(0)); /* the primary context, shared with the driver calls */
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr san = 0;
	size_t san_size = 0;
	CK(cuModuleLoad(&mod, cubin));
	CK(cuModuleGetFunction(&fn, mod, "flash_fwd_sm90_fp8"));
	CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
	if (sanitize)
		CK(cuModuleGetGlobal(&san, &san_size, mod, "tuner_san_log"));
	cudaStream_t st;
	RT(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

	for (int i = a + 4; i < argc; i++) {
		int B, H, S, D;
		if (sscanf(argv[i], "%d,%d,%d,%d", &B, &H, &S, &D) != 4) {
			fprintf(stderr, "sm90_fp8_dev: bad shape '%s' (want B,H,S,D)\n", argv[i]);
			return 2;
		}
		const int Sp = (S + 15) / 16 * 16, BH = B * H;
		const size_t n = (size_t)BH * S * D, nv = (size_t)BH * D * Sp;
		__nv_fp8_storage_t *q, *k, *vt;
		__half *o;
		float *ref;
		RT(cudaMalloc(&q, n));
		RT(cudaMalloc(&k, n));
		RT(cudaMalloc(&vt, nv));
		RT(cudaMalloc(&o, n * 2));
		RT(cudaMalloc(&ref, n * 4));
		fill_e4m3<<<(unsigned)((n + 255) / 256), 256>>>(q, n, 1);
		fill_e4m3<<<(unsigned)((n + 255) / 256), 256>>>(k, n, 2);
		fill_e4m3<<<(unsigned)((nv + 255) / 256), 256>>>(vt, nv, 3);
		if (Sp > S)
			poison_pad<<<(unsigned)(((size_t)BH * D * (Sp - S) + 255) / 256), 256>>>(
			    vt, (size_t)BH * D, S, Sp);
		float scale = 1.0f / sqrtf((float)D);
		attention_fp8_ref<<<dim3((S + 127) / 128, H, B), 128>>>(q, k, vt, ref, B, H, S, D, Sp,
		                                                        scale);
		RT(cudaMemset(o, 0xff, n * 2)); /* 0xffff: a NaN half */
		RT(cudaDeviceSynchronize());

		CUtensorMap maps[3];
		make_map(&maps[0], q, D, S, BH, D, (cuuint64_t)S * D, 64);
		make_map(&maps[1], k, D, S, BH, D, (cuuint64_t)S * D, block_n);
		make_map(&maps[2], vt, S, D, BH, Sp, (cuuint64_t)Sp * D, D);
		void *params[] = {&maps[0], &maps[1], &maps[2], &o, &B, &H, &S, &scale};
		const unsigned gx = (S + 64 * consumers - 1) / (64 * consumers);
		auto launch = [&]() {
			CK(cuLaunchKernel(fn, gx, H, B, (consumers + 1) * 128, 1, 1, smem, st, params,
			                  nullptr));
		};

		if (sanitize)
			CK(cuMemsetD8(san, 0, san_size));
		launch();
		RT(cudaStreamSynchronize(st));

		std::vector<__half> ho(n);
		std::vector<float> hr(n);
		RT(cudaMemcpy(ho.data(), o, n * 2, cudaMemcpyDeviceToHost));
		RT(cudaMemcpy(hr.data(), ref, n * 4, cudaMemcpyDeviceToHost));
		double err2 = 0, ref2 = 0, max_abs = 0;
		size_t bad = 0;
		for (size_t j = 0; j < n; j++) {
			double x = __half2float(ho[j]), e = x - hr[j];
			if (!std::isfinite(x)) {
				bad++;
				continue;
			}
			err2 += e * e;
			ref2 += (double)hr[j] * hr[j];
			max_abs = std::max(max_abs, std::fabs(e));
		}
		double rel = std::sqrt(err2 / ref2);
		/* The first elements off by more than max_abs: a layout bug's pattern. */
		char where[256] = "";
		int nw = 0;
		for (size_t j = 0, shown = 0; j < n && shown < 3; j++) {
			double x = __half2float(ho[j]);
			if (std::isfinite(x) && std::fabs(x - hr[j]) < FP8_MAX_ABS)
				continue;
			nw += snprintf(where + nw, sizeof(where) - nw,
			               " [bh %zu row %zu col %zu: %g not %g]", j / ((size_t)S * D),
			               j / D % S, j % D, x, hr[j]);
			shown++;
		}
		int ok = bad == 0 && rel < FP8_REL_L2 && max_abs < FP8_MAX_ABS;
		char san_msg[160] = "";
		if (sanitize && sm90_san_message(san, san_msg, sizeof(san_msg)))
			ok = 0;
		printf("%s %s B,H,S,D=%d,%d,%d,%d rel_l2 %.3g max_abs %.3g nonfinite %zu%s%s",
		       ok ? "PASS" : "FAIL", cubin, B, H, S, D, rel, max_abs, bad, san_msg,
		       ok ? "" : where);
		failed |= !ok;
		if (do_time && ok) {
			const double med = sm90_median_us(st, launch);
			printf(" median_us %.2f tflops %.1f", med,
			       4.0 * B * H * (double)S * S * D / (med * 1e6));
		}
		printf("\n");
		fflush(stdout);
		for (void *p : {(void *)q, (void *)k, (void *)vt, (void *)o, (void *)ref})
			RT(cudaFree(p));
	}
	return failed;
}
