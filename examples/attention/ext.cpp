// The PyTorch binding of the combined attention header: forward(q, k, v, causal) on fp16
// [B, H, S, D] CUDA tensors through attention_select() and dispatch.cuh, and choice(B, H, S, D,
// causal), what the header picked for those dims. The launchers are in dispatch.cuh and the
// family builds (no torch there); this file only checks tensors and binds.
#include <cmath>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

// The header bare (no family's preamble), the launch structs and the builds' table.
#include "dispatch.cuh"

static void check_input(const torch::Tensor &t, const char *name, const torch::Tensor &q)
{
	TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
	TORCH_CHECK(t.scalar_type() == torch::kHalf, name, " must be float16");
	TORCH_CHECK(t.dim() == 4 && t.is_contiguous(), name, " must be a contiguous [B, H, S, D]");
	TORCH_CHECK(t.sizes() == q.sizes(), name, " must have q's shape");
	TORCH_CHECK(t.device() == q.device(), name, " must be on q's device");
}

torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal)
{
	check_input(q, "q", q);
	check_input(k, "k", q);
	check_input(v, "v", q);
	const long long B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3);
	const struct attention_choice c = attention_select(B, H, S, D, causal);
	TORCH_CHECK(c.family >= 0, "attention: no tuned family serves B=", B, ", H=", H, ", S=", S,
	            ", D=", D, ", causal=", causal);
	const c10::cuda::CUDAGuard guard(q.device());
	auto o = torch::empty_like(q);
	const size_t nscratch = attention_scratch_floats(&c, B, H, S, D);
	torch::Tensor scratch;
	if (nscratch)
		scratch = torch::empty({(int64_t)nscratch}, q.options().dtype(torch::kFloat));
	struct attention_io io;
	io.q = q.data_ptr();
	io.k = k.data_ptr();
	io.v = v.data_ptr();
	io.o = o.data_ptr();
	io.scratch = nscratch ? scratch.data_ptr<float>() : nullptr;
	io.B = B;
	io.H = H;
	io.S = S;
	io.D = D;
	io.causal = causal;
	io.scale = 1.0f / std::sqrt((float)D);
	int rc = attention_dispatch(&c, &io, at::cuda::getCurrentCUDAStream());
	TORCH_CHECK(rc == 0, c.family_name, " build ", c.config,
	            " failed: ", cudaGetErrorString((cudaError_t)rc));
	return o;
}

// What the header picked: the family, its build, the tuned shape, exact or nearest, and the
// first launch (grid, block, dynamic shared memory).
py::dict choice(long long B, long long H, long long S, long long D, bool causal)
{
	const struct attention_choice c = attention_select(B, H, S, D, causal);
	py::dict d;

	d["family"] = c.family;
	d["family_name"] = std::string(c.family_name);
	d["config"] = c.config;
	d["shape"] = std::string(c.shape_name);
	d["exact"] = (bool)c.exact;
	d["scratch_floats"] = attention_scratch_floats(&c, B, H, S, D);
	if (c.family == ATTENTION_FLASH_ATTN) {
		const struct flash_attn_config &f = c.flash_attn;
		const struct flash_attn_launch &l = f.launch[0];
		d["params"] =
		    py::dict(py::arg("BLOCK_M") = f.block_m, py::arg("BLOCK_N") = f.block_n,
		             py::arg("NUM_WARPS") = f.num_warps, py::arg("STAGES") = f.stages,
		             py::arg("SWIZZLE") = f.swizzle, py::arg("Q_REGS") = f.q_regs,
		             py::arg("SPLITS") = f.splits, py::arg("COMBINE") = f.combine);
		d["grid"] = py::make_tuple(l.grid[0], l.grid[1], l.grid[2]);
		d["block"] = py::make_tuple(l.block[0], l.block[1], l.block[2]);
		d["smem_bytes"] = l.smem_bytes;
		int n = 0;
		for (int i = 0; i < FLASH_ATTN_NLAUNCHES; i++)
			n += f.launch[i].enabled;
		d["launches"] = n;
	} else if (c.family == ATTENTION_FLASH_FWD_SM90) {
		const struct flash_fwd_sm90_config &f = c.flash_fwd_sm90;
		const struct flash_fwd_sm90_launch &l = f.launch[0];
		d["params"] =
		    py::dict(py::arg("BLOCK_N") = f.block_n, py::arg("CONSUMERS") = f.consumers,
		             py::arg("STAGES") = f.stages, py::arg("PINGPONG") = f.pingpong,
		             py::arg("OVERLAP") = f.overlap, py::arg("RESCALE") = f.rescale,
		             py::arg("PERSISTENT") = f.persistent,
		             py::arg("OCCUPANCY") = f.occupancy, py::arg("SPLITS") = f.splits);
		d["grid"] = py::make_tuple(l.grid[0], l.grid[1], l.grid[2]);
		d["block"] = py::make_tuple(l.block[0], l.block[1], l.block[2]);
		d["smem_bytes"] = l.smem_bytes;
		d["launches"] = 1;
	}
	return d;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.doc() = "attention through the tuned families of one exported header (tuner export "
		  "--per-shape --run A --run B --prefix attention)";
	m.def("forward", &forward, "attention forward, fp16 [B, H, S, D]", py::arg("q"),
	      py::arg("k"), py::arg("v"), py::arg("causal") = false);
	m.def("choice", &choice, "the family, build and launch the header picks at these dims",
	      py::arg("B"), py::arg("H"), py::arg("S"), py::arg("D"), py::arg("causal") = false);
}
