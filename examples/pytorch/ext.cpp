// The PyTorch binding of the tuned flash_fwd: forward(q, k, v) on fp16 [B, H, S, D] CUDA tensors,
// D 64 or 128, and config(B, H, S, D), the exported header's configuration and launch at those dims.
#include <cmath>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>

// The header alone, without the preamble: from C++ its functions and structs, no template macros.
#define FLASH_FWD_NO_PREAMBLE
#include "flash_fwd_config.h"

extern "C" int flash_fwd_ext_launch_d64(const void *q, const void *k, const void *v, void *o,
                                        int B, int H, int S, int D, float scale,
                                        cudaStream_t stream);
extern "C" int flash_fwd_ext_launch_d128(const void *q, const void *k, const void *v, void *o,
                                         int B, int H, int S, int D, float scale,
                                         cudaStream_t stream);

static void check_input(const torch::Tensor &t, const char *name, const torch::Tensor &q)
{
	TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
	TORCH_CHECK(t.scalar_type() == torch::kHalf, name, " must be float16");
	TORCH_CHECK(t.dim() == 4 && t.is_contiguous(), name, " must be a contiguous [B, H, S, D]");
	TORCH_CHECK(t.sizes() == q.sizes(), name, " must have q's shape");
}

torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v)
{
	check_input(q, "q", q);
	check_input(k, "k", q);
	check_input(v, "v", q);
	const int B = (int)q.size(0), H = (int)q.size(1), S = (int)q.size(2), D = (int)q.size(3);
	TORCH_CHECK(D == 64 || D == 128, "head dim ", D, ": the extension is built for 64 and 128");
	const c10::cuda::CUDAGuard guard(q.device());
	auto o = torch::empty_like(q);
	const float scale = 1.0f / std::sqrt((float)D);
	cudaStream_t stream = at::cuda::getCurrentCUDAStream();
	int rc = (D == 64 ? flash_fwd_ext_launch_d64 : flash_fwd_ext_launch_d128)(
	    q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), B, H, S, D, scale, stream);
	TORCH_CHECK(rc == 0, "flash_fwd launch failed: ", cudaGetErrorString((cudaError_t)rc));
	return o;
}

// What the header says for these dims: rank 1's params and its launch.
py::dict config(long long B, long long H, long long S, long long D)
{
	struct flash_fwd_config c = flash_fwd_rank(1, B, H, S, D);
	const struct flash_fwd_launch &l = c.launch[0];
	py::dict d;

	d["BLOCK_M"] = c.block_m;
	d["BLOCK_N"] = c.block_n;
	d["NUM_WARPS"] = c.num_warps;
	d["STAGES"] = c.stages;
	d["SWIZZLE"] = c.swizzle;
	d["PAD"] = c.pad;
	d["grid"] = py::make_tuple(l.grid[0], l.grid[1], l.grid[2]);
	d["block"] = py::make_tuple(l.block[0], l.block[1], l.block[2]);
	d["smem_bytes"] = l.smem_bytes;
	d["smem_optin"] = (bool)l.smem_optin;
	return d;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.doc() = "flash_fwd as tuned by tuner, built from the exported header and the template";
	m.def("forward", &forward, "attention forward, fp16 [B, H, S, D], non-causal");
	m.def("config", &config, "the exported configuration and launch at B, H, S, D");
}
