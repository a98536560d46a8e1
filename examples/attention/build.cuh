/*
 * What a family build and the dispatch share: the arguments of one call per family, the type
 * of a build's launcher, and the launch of one of the header's launches (dynamic shared memory
 * attribute once, a cluster when the launch asks for one). Plain C++ over the CUDA runtime: no
 * torch, so that the builds and dispatch.cuh compile and link with nvcc alone.
 */
#ifndef BUILD_CUH
#define BUILD_CUH

#include <cuda_runtime.h>

#include "attention.h" /* exported by tuner into gen/ */

/* flash_attn: [B, H, S, D] fp16 pointers, and the split-KV scratch when SPLITS > 1. */
struct flash_attn_args {
	const void *q, *k, *v;
	void *o;
	float *opart, *lse; /* SPLITS * B * H * S * D and SPLITS * B * H * S floats; else NULL */
	int B, H, S;
	float scale;
};

/* flash_fwd_sm90: Q, K, V and O as tensor maps (CUtensorMap: 128 bytes, 64-byte aligned). */
struct flash_fwd_sm90_args {
	const void *maps[4];
	float *sk_part, *sk_lse; /* STREAMK's scratch (attention_tma.yaml's SkPart, SkLse, SkCount) */
	int *sk_count;
	int B, H, S;
	float scale;
};

/* A build's launcher: the configuration's launches at its dims; a cudaError_t. */
typedef int (*flash_attn_build_fn)(const struct flash_attn_config *, const struct flash_attn_args *,
                                   cudaStream_t);
typedef int (*flash_fwd_sm90_build_fn)(const struct flash_fwd_sm90_config *,
                                       const struct flash_fwd_sm90_args *, cudaStream_t);

/*
 * One launch l of fn (either family's launch struct) with these kernel params. The dynamic
 * shared memory limit is raised when l needs more than *smem_set, so once per kernel and
 * outside a graph capture when the first call comes before it (cudaFuncSetAttribute is no
 * stream operation). A cluster when l names one (the kernels that declare theirs,
 * __cluster_dims__, launch plainly); programmatic stream serialization when l asks for it.
 */
template <class Launch>
static inline int build_launch(const void *fn, const Launch &l, void **params, unsigned *smem_set,
                               cudaStream_t stream)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute attr[2];
	cudaError_t e;

	if (l.smem_optin && l.smem_bytes > *smem_set) {
		e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
		                         (int)l.smem_bytes);
		if (e != cudaSuccess)
			return (int)e;
		*smem_set = l.smem_bytes;
	}
	cfg.gridDim = dim3(l.grid[0], l.grid[1], l.grid[2]);
	cfg.blockDim = dim3(l.block[0], l.block[1], l.block[2]);
	cfg.dynamicSmemBytes = l.smem_bytes;
	cfg.stream = stream;
	cfg.attrs = attr;
	if (l.cluster[0]) {
		attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
		attr[cfg.numAttrs].val.clusterDim.x = l.cluster[0];
		attr[cfg.numAttrs].val.clusterDim.y = l.cluster[1] ? l.cluster[1] : 1;
		attr[cfg.numAttrs].val.clusterDim.z = l.cluster[2] ? l.cluster[2] : 1;
		cfg.numAttrs++;
	}
	if (l.pdl) {
		attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
		cfg.numAttrs++;
	}
	return (int)cudaLaunchKernelExC(&cfg, fn, params);
}

#endif
