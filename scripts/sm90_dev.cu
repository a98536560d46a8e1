/*
 * Check and time one flash_fwd_sm90 cubin on the GPU, outside tuner (which does not yet make
 * tensor maps): load the cubin with the driver, encode the four TMA maps as the problem file
 * kernels/problems/attention_tma.yaml describes them, run each shape against a plain fp32
 * reference kernel, and time it as BENCH.md says (CUDA-graph replays of 20 launches, median of
 * 30 samples, warm).
 *
 *   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a scripts/sm90_dev.cu -lcuda \
 *        -o sm90_dev
 *   sm90_dev [--time] [--sanitize] [--persistent N] [--splits N] [--streamk N] [--ksplit N]
 *            [--pdl] [--repeat N] [--profile] [--bf16] CUBIN BLOCK_N CONSUMERS SMEM_BYTES B,H,S,D ...
 *
 * One line per shape: PASS or FAIL, rel_l2 and max_abs against the reference (fp16 inputs drawn
 * from N(0, 1), output poisoned with NaN before the run), and with --time the median µs and
 * TFLOP/s. --sanitize reads the cubin's tuner_san_log after each run (a TUNER_SANITIZE build)
 * and fails on any violation. Exit status: 0 all passed, 1 a check failed, 2 a CUDA error (a
 * faulting kernel leaves the context unusable: the shapes after it are not run). --splits is
 * the SPLITS param (a grid of SPLITS blocks per unit, the O map's box 64 / SPLITS rows);
 * --ksplit is the KSPLIT param (blocks of 64 CONSUMERS / KSPLIT query rows);
 * --pdl launches with programmatic stream serialization (the PDL param: back-to-back calls
 * overlap the next one's start with this one's end);
 * --profile launches the kernel 5 times and checks nothing (for ncu --launch-skip 3).
 * --timeline PATH (with --time, a build patched by scripts/sm90_timeline.patch): the stamps of
 * the first calls of the timing (tuner_tl: per call, block and warpgroup, clock64 at numbered
 * points, globaltimer at entry, after griddepcontrol.wait and at exit) are written to
 * PATH.SHAPE.bin for scripts/sm90_timeline.py.
 * --streamk is the STREAMK param: the stream-K scratch (partial rows and log-sum-exps, poisoned
 * with NaN, and the arrival counters, zeroed) is sized for it, once per shape: the kernel must
 * leave the counters at zero itself. --repeat N (N > 1) then runs the kernel N - 1 more times
 * in a row, the output poisoned before each, and compares each result with the reference on
 * the GPU ("repeat N max_abs X nonfinite Y": a stale counter or slot shows as wrong output in a
 * later call; the line fails beyond max_abs 2e-2 or on any non-finite element).
 * --bf16: a build with SM90_BF16 (kernels/problems/attention_tma_bf16.yaml): bf16 tensors and
 * maps (CU_TENSOR_MAP_DATA_TYPE_BFLOAT16), the inputs the same N(0, 1) draws rounded to bf16, and
 * that problem's tolerances (rel_l2 2e-2, max_abs 6.25e-2, also for --repeat).
 */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sm90_dev_common.h" /* CK, RT, sm90_san_violations, sm90_median_us */

/* An element of the tensors (__half or __nv_bfloat16) and back, on the device and the host. */
__host__ __device__ static inline float to_f(__half x) { return __half2float(x); }
__host__ __device__ static inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ static inline void from_f(float f, __half *x) { *x = __float2half(f); }
__device__ static inline void from_f(float f, __nv_bfloat16 *x) { *x = __float2bfloat16(f); }

/* N(0, 1) elements from a hash of (seed, index), Box-Muller. */
template <typename T> __global__ void fill_normal(T *x, size_t n, unsigned seed)
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
	from_f(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2), x + i);
}

/* The reference: one thread per query row, two passes over the keys, fp32 (attention_ref.cu). */
template <typename T>
__global__ void attention_ref(const T *Q, const T *K, const T *V, float *O, int S, int D,
                              float scale)
{
	int row = blockIdx.x * blockDim.x + threadIdx.x;
	if (row >= S)
		return;
	size_t head = (size_t)blockIdx.y * S * D;
	const T *q = Q + head + (size_t)row * D;
	float mx = -INFINITY, sum = 0.0f, acc[128];

	for (int key = 0; key < S; key++) {
		const T *k = K + head + (size_t)key * D;
		float dot = 0.0f;
		for (int d = 0; d < D; d++)
			dot += to_f(q[d]) * to_f(k[d]);
		mx = fmaxf(mx, dot * scale);
	}
	for (int d = 0; d < D; d++)
		acc[d] = 0.0f;
	for (int key = 0; key < S; key++) {
		const T *k = K + head + (size_t)key * D, *v = V + head + (size_t)key * D;
		float dot = 0.0f;
		for (int d = 0; d < D; d++)
			dot += to_f(q[d]) * to_f(k[d]);
		float p = expf(dot * scale - mx);
		sum += p;
		for (int d = 0; d < D; d++)
			acc[d] += p * to_f(v[d]);
	}
	for (int d = 0; d < D; d++)
		O[head + (size_t)row * D + d] = acc[d] / sum;
}

/* The largest |o - ref| (as the bits of a non-negative float) and the non-finite count. */
template <typename T>
__global__ void compare(const T *o, const float *ref, size_t n, unsigned *max_bits,
                        unsigned long long *nonfinite)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = to_f(o[i]);
	if (!isfinite(x)) {
		atomicAdd(nonfinite, 1ull);
		return;
	}
	atomicMax(max_bits, __float_as_uint(fabsf(x - ref[i])));
}

/* One element read back as its 16 bits, as a float. */
static float host_f(unsigned short bits, int bf16)
{
	if (bf16) {
		unsigned u = (unsigned)bits << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	__half_raw r;
	r.x = bits;
	return __half2float(__half(r));
}

/* [D, S, B * H] fp16 or bf16, 128-byte swizzle, boxes of 64 columns by `rows` rows. */
static void make_map(CUtensorMap *m, void *p, int D, int S, int BH, int rows, int bf16)
{
	cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)S, (cuuint64_t)BH};
	cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)S * D * 2};
	cuuint32_t box[3] = {64, (cuuint32_t)rows, 1}, estr[3] = {1, 1, 1};

	CK(cuTensorMapEncodeTiled(m,
	                          bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
	                          3, p, dims, strides, box,
	                          estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
	                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

int main(int argc, char **argv)
{
	int a = 1, do_time = 0, sanitize = 0, failed = 0, persistent = 0, splits = 1, profile = 0;
	int streamk = 0, repeat = 1, ksplit = 1, pdl = 0, bf16 = 0;
	const char *timeline = nullptr;

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--time"))
			do_time = 1;
		else if (!strcmp(argv[a], "--sanitize"))
			sanitize = 1;
		else if (!strcmp(argv[a], "--persistent") && a + 1 < argc)
			persistent = atoi(argv[++a]); /* the PERSISTENT param: a flat grid */
		else if (!strcmp(argv[a], "--splits") && a + 1 < argc)
			splits = atoi(argv[++a]); /* the SPLITS param: clusters of splits */
		else if (!strcmp(argv[a], "--ksplit") && a + 1 < argc)
			ksplit = atoi(argv[++a]); /* the KSPLIT param: consumers per Q tile */
		else if (!strcmp(argv[a], "--streamk") && a + 1 < argc)
			streamk = atoi(argv[++a]); /* the STREAMK param: scratch for it */
		else if (!strcmp(argv[a], "--pdl"))
			pdl = 1; /* the PDL param: programmatic stream serialization */
		else if (!strcmp(argv[a], "--repeat") && a + 1 < argc)
			repeat = atoi(argv[++a]);
		else if (!strcmp(argv[a], "--profile"))
			profile = 1;
		else if (!strcmp(argv[a], "--timeline") && a + 1 < argc)
			timeline = argv[++a];
		else if (!strcmp(argv[a], "--bf16"))
			bf16 = 1; /* an SM90_BF16 build: bf16 tensors and maps */
	}
	if (argc - a < 5) {
		fprintf(stderr,
		        "usage: sm90_dev [--time] [--sanitize] [--persistent N] [--splits N] "
		        "[--streamk N] [--ksplit N] [--pdl] [--repeat N] [--profile] [--bf16] CUBIN BLOCK_N "
		        "CONSUMERS SMEM_BYTES B,H,S,D [B,H,S,D ...]\n");
		return 2;
	}
	const char *cubin = argv[a];
	int block_n = atoi(argv[a + 1]), consumers = atoi(argv[a + 2]), smem = atoi(argv[a + 3]);
	/* The problem's tolerances: attention_tma.yaml, or attention_tma_bf16.yaml. */
	const double tol_rel = bf16 ? 2e-2 : 1e-2, tol_abs = bf16 ? 6.25e-2 : 2e-2;

	RT(cudaSetDevice(0));
	RT(cudaFree(0)); /* the primary context, shared with the driver calls */
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr san = 0;
	size_t san_size = 0;
	CK(cuModuleLoad(&mod, cubin));
	CK(cuModuleGetFunction(&fn, mod, "flash_fwd_sm90"));
	CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
	if (do_time) {
		/*
		 * How many blocks (and, with splits, clusters) can be resident: a split grid
		 * whose clusters do not all fit runs a second wave.
		 */
		int per_sm = 0, clusters = 0, sms = 0;
		CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (consumers + 1) * 128,
		                                               smem));
		RT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
		if (splits > 1) {
			CUlaunchConfig cfg = {};
			cfg.gridDimX = splits * 64; /* any multiple of the cluster */
			cfg.gridDimY = cfg.gridDimZ = 1;
			cfg.blockDimX = (consumers + 1) * 128;
			cfg.blockDimY = cfg.blockDimZ = 1;
			cfg.sharedMemBytes = smem;
			CK(cuOccupancyMaxActiveClusters(&clusters, fn, &cfg));
		}
		printf("OCCUPANCY %s blocks_per_sm %d sms %d max_active_clusters %d (%d blocks)\n",
		       cubin, per_sm, sms, clusters, clusters * splits);
	}
	if (sanitize)
		CK(cuModuleGetGlobal(&san, &san_size, mod, "tuner_san_log"));
	cudaStream_t st;
	RT(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

	for (int i = a + 4; i < argc; i++) {
		int B, H, S, D;
		if (sscanf(argv[i], "%d,%d,%d,%d", &B, &H, &S, &D) != 4) {
			fprintf(stderr, "sm90_dev: bad shape '%s' (want B,H,S,D)\n", argv[i]);
			return 2;
		}
		size_t n = (size_t)B * H * S * D;
		void *q, *k, *v, *o; /* __half, or __nv_bfloat16 with --bf16 */
		float *ref;
		RT(cudaMalloc(&q, n * 2));
		RT(cudaMalloc(&k, n * 2));
		RT(cudaMalloc(&v, n * 2));
		RT(cudaMalloc(&o, n * 2));
		RT(cudaMalloc(&ref, n * 4));
		unsigned g = (unsigned)((n + 255) / 256);
		void *in[3] = {q, k, v};
		for (int t = 0; t < 3; t++)
			if (bf16)
				fill_normal<<<g, 256>>>((__nv_bfloat16 *)in[t], n, t + 1);
			else
				fill_normal<<<g, 256>>>((__half *)in[t], n, t + 1);
		float scale = 1.0f / sqrtf((float)D);
		dim3 rg((S + 127) / 128, B * H);
		/* A profile needs no reference (slow at large shapes). */
		if (!profile && bf16)
			attention_ref<<<rg, 128>>>((const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k,
			                           (const __nv_bfloat16 *)v, ref, S, D, scale);
		else if (!profile)
			attention_ref<<<rg, 128>>>((const __half *)q, (const __half *)k,
			                           (const __half *)v, ref, S, D, scale);
		RT(cudaMemset(o, 0xff, n * 2)); /* 0xffff: a NaN half (and bf16) */
		RT(cudaDeviceSynchronize());

		CUtensorMap maps[4];
		make_map(&maps[0], q, D, S, B * H, 64, bf16);
		make_map(&maps[1], k, D, S, B * H, block_n, bf16);
		make_map(&maps[2], v, D, S, B * H, block_n, bf16);
		make_map(&maps[3], o, D, S, B * H, 64 / splits, bf16);
		/* The problem's stream-K scratch (one element each without STREAMK). */
		size_t sk_rows = streamk ? 2 * (size_t)persistent * 64 * consumers : 1;
		float *sk_part, *sk_lse;
		int *sk_count;
		RT(cudaMalloc(&sk_part, sk_rows * (streamk ? D : 1) * 4));
		RT(cudaMalloc(&sk_lse, sk_rows * 4));
		RT(cudaMalloc(&sk_count, (streamk ? (size_t)persistent * consumers : 1) * 4));
		RT(cudaMemset(sk_part, 0xff, sk_rows * (streamk ? D : 1) * 4)); /* NaN */
		RT(cudaMemset(sk_lse, 0xff, sk_rows * 4));
		RT(cudaMemset(sk_count, 0, (streamk ? (size_t)persistent * consumers : 1) * 4));
		void *params[] = {&maps[0],  &maps[1], &maps[2], &maps[3], &sk_part, &sk_lse,
		                  &sk_count, &B,       &H,       &S,       &scale};
		/* The sidecar's launch: one block per unit, or at most `persistent` looping. */
		const int rows = 64 * consumers / ksplit; /* query rows per block */
		unsigned gx = (S + rows - 1) / rows * splits, gy = H, gz = B;
		if (persistent > 0) {
			gx = std::min((unsigned)persistent, gx * H * B);
			gy = gz = 1;
		}
		auto launch = [&]() {
			CUlaunchAttribute attr;
			CUlaunchConfig cfg;
			memset(&attr, 0, sizeof(attr));
			memset(&cfg, 0, sizeof(cfg));
			attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
			attr.value.programmaticStreamSerializationAllowed = 1;
			cfg.gridDimX = gx;
			cfg.gridDimY = gy;
			cfg.gridDimZ = gz;
			cfg.blockDimX = (consumers + 1) * 128;
			cfg.blockDimY = cfg.blockDimZ = 1;
			cfg.sharedMemBytes = smem;
			cfg.hStream = st;
			cfg.attrs = &attr;
			cfg.numAttrs = pdl ? 1 : 0;
			CK(cuLaunchKernelEx(&cfg, fn, params, nullptr));
		};
		/* This shape's buffers, after its profile or its checks. */
		auto release = [&]() {
			for (void *p : {(void *)q, (void *)k, (void *)v, (void *)o, (void *)ref,
			                (void *)sk_part, (void *)sk_lse, (void *)sk_count})
				RT(cudaFree(p));
		};

		if (profile) {
			for (int r = 0; r < 5; r++)
				launch();
			RT(cudaStreamSynchronize(st));
			printf("PROFILED %s B,H,S,D=%d,%d,%d,%d\n", cubin, B, H, S, D);
			release();
			continue;
		}
		if (sanitize)
			CK(cuMemsetD8(san, 0, san_size));
		launch();
		RT(cudaStreamSynchronize(st));

		std::vector<unsigned short> ho(n);
		std::vector<float> hr(n);
		RT(cudaMemcpy(ho.data(), o, n * 2, cudaMemcpyDeviceToHost));
		RT(cudaMemcpy(hr.data(), ref, n * 4, cudaMemcpyDeviceToHost));
		double err2 = 0, ref2 = 0, max_abs = 0;
		size_t bad = 0;
		for (size_t j = 0; j < n; j++) {
			double x = host_f(ho[j], bf16), e = x - hr[j];
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
			double x = host_f(ho[j], bf16);
			if (std::isfinite(x) && std::fabs(x - hr[j]) < tol_abs)
				continue;
			nw += snprintf(where + nw, sizeof(where) - nw,
			               " [bh %zu row %zu col %zu: %g not %g]", j / ((size_t)S * D),
			               j / D % S, j % D, x, hr[j]);
			shown++;
		}
		int ok = bad == 0 && rel < tol_rel && max_abs < tol_abs;
		char san_msg[160] = "";
		if (sanitize && sm90_san_message(san, san_msg, sizeof(san_msg)))
			ok = 0;
		/* Calls 2 .. repeat, each on a poisoned output, compared on the GPU. */
		char rep_msg[128] = "";
		if (repeat > 1) {
			unsigned *max_bits;
			unsigned long long *nonfinite, h_nonfinite;
			unsigned h_bits;
			RT(cudaMalloc(&max_bits, 4));
			RT(cudaMalloc(&nonfinite, 8));
			RT(cudaMemset(max_bits, 0, 4));
			RT(cudaMemset(nonfinite, 0, 8));
			for (int r = 1; r < repeat; r++) {
				RT(cudaMemsetAsync(o, 0xff, n * 2, st));
				launch();
				if (bf16)
					compare<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(
					    (const __nv_bfloat16 *)o, ref, n, max_bits, nonfinite);
				else
					compare<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(
					    (const __half *)o, ref, n, max_bits, nonfinite);
			}
			RT(cudaStreamSynchronize(st));
			RT(cudaMemcpy(&h_bits, max_bits, 4, cudaMemcpyDeviceToHost));
			RT(cudaMemcpy(&h_nonfinite, nonfinite, 8, cudaMemcpyDeviceToHost));
			float rep_max;
			memcpy(&rep_max, &h_bits, 4);
			snprintf(rep_msg, sizeof(rep_msg), " repeat %d max_abs %.3g nonfinite %llu",
			         repeat, rep_max, h_nonfinite);
			ok &= h_nonfinite == 0 && rep_max < tol_abs;
			RT(cudaFree(max_bits));
			RT(cudaFree(nonfinite));
			if (sanitize) {
				struct tuner_san_log log;
				const unsigned total = sm90_san_violations(san, &log);
				snprintf(rep_msg + strlen(rep_msg),
				         sizeof(rep_msg) - strlen(rep_msg),
				         " sanitize after repeats %u violations", total);
				ok &= total == 0;
			}
		}
		printf("%s %s B,H,S,D=%d,%d,%d,%d rel_l2 %.3g max_abs %.3g nonfinite %zu%s%s%s",
		       ok ? "PASS" : "FAIL", cubin, B, H, S, D, rel, max_abs, bad, san_msg, rep_msg,
		       ok ? "" : where);
		failed |= !ok;

		CUdeviceptr tl = 0;
		size_t tl_size = 0;
		if (timeline && do_time && ok) {
			CUdeviceptr tl_n;
			size_t tl_n_size;
			CK(cuModuleGetGlobal(&tl, &tl_size, mod, "tuner_tl"));
			CK(cuModuleGetGlobal(&tl_n, &tl_n_size, mod, "tuner_tl_n"));
			CK(cuMemsetD8(tl, 0, tl_size));
			CK(cuMemsetD8(tl_n, 0, tl_n_size)); /* the per-block call counters */
		}
		if (do_time && ok) {
			const double med = sm90_median_us(st, launch);
			printf(" median_us %.2f tflops %.1f", med,
			       4.0 * B * H * (double)S * S * D / (med * 1e6));
			if (tl) {
				std::vector<unsigned long long> h(tl_size / 8);
				char path[512];
				snprintf(path, sizeof(path), "%s.%d_%d_%d_%d.bin", timeline, B, H, S, D);
				CK(cuMemcpyDtoH(h.data(), tl, tl_size));
				FILE *f = fopen(path, "wb");
				const int hdr[4] = {(int)gx, (int)gy, (int)gz, (int)(tl_size / 8)};
				if (!f || fwrite(hdr, sizeof(hdr), 1, f) != 1 ||
				    fwrite(h.data(), 8, h.size(), f) != h.size() || fclose(f)) {
					fprintf(stderr, "sm90_dev: cannot write %s\n", path);
					return 2;
				}
			}
		}
		printf("\n");
		fflush(stdout);
		release();
	}
	return failed;
}
