/*
 * From dims to a launch: attention_select() (the exported header) picks the family and its
 * build, and attention_dispatch() runs that build's launcher with the family's arguments:
 * pointers and the split-KV scratch for flash_attn, four tensor maps encoded here for
 * flash_fwd_sm90. Plain C++ over the CUDA runtime (the driver's cuTensorMapEncodeTiled through
 * cudaGetDriverEntryPoint, no -lcuda): ext.cpp binds it to torch, test_host.cu links it alone.
 */
#ifndef DISPATCH_CUH
#define DISPATCH_CUH

#include <cuda.h> /* CUtensorMap and its enums; the function comes from the runtime */
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "build.cuh"
#include "builds_table.h" /* gen_builds.py: the launcher of each family build */

/* One forward call: fp16 [B, H, S, D] contiguous tensors, O = softmax(Q K^T * scale) V. */
struct attention_io {
	const void *q, *k, *v;
	void *o;
	float *scratch; /* attention_scratch_floats(c, ...) floats, 16-byte aligned; NULL if 0 */
	long long B, H, S, D, causal;
	float scale; /* the problem's rsqrt(D) */
};

#ifdef ATTENTION_FLASH_FWD_SM90
/* STREAMK: the rows of partials, two slots of 64 CONSUMERS rows per persistent block. */
static inline size_t dispatch_sk_rows(const struct flash_fwd_sm90_config *f)
{
	return 2 * (size_t)f->persistent * 64 * (size_t)f->consumers;
}
#endif

/*
 * Floats of scratch the chosen configuration needs: flash_attn's Opart and Lse when it splits;
 * flash_fwd_sm90's SkPart, SkLse and SkCount (its counters as ints in the last floats) with STREAMK.
 */
static inline size_t attention_scratch_floats(const struct attention_choice *c, long long B,
                                              long long H, long long S, long long D)
{
#ifdef ATTENTION_FLASH_ATTN
	if (c->family == ATTENTION_FLASH_ATTN && c->flash_attn.splits > 1)
		return (size_t)c->flash_attn.splits * B * H * S * (D + 1);
#endif
#ifdef ATTENTION_FLASH_FWD_SM90
	if (c->family == ATTENTION_FLASH_FWD_SM90 && c->flash_fwd_sm90.streamk)
		return dispatch_sk_rows(&c->flash_fwd_sm90) * (D + 1) +
		       (size_t)(c->flash_fwd_sm90.persistent * c->flash_fwd_sm90.consumers);
#endif
	(void)c;
	(void)B;
	(void)H;
	(void)S;
	(void)D;
	return 0;
}

/* cuTensorMapEncodeTiled, looked up once through the runtime. */
static inline PFN_cuTensorMapEncodeTiled_v12000 dispatch_encode_fn(void)
{
	static PFN_cuTensorMapEncodeTiled_v12000 fn;
	cudaDriverEntryPointQueryResult q;
	void *p = NULL;

	if (fn)
		return fn;
#if CUDART_VERSION >= 12050
	if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
	                                     &q) != cudaSuccess ||
	    q != cudaDriverEntryPointSuccess)
		return NULL;
#else
	if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q) !=
	        cudaSuccess ||
	    q != cudaDriverEntryPointSuccess)
		return NULL;
#endif
	fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
	return fn;
}

/*
 * The tensor map of one [B, H, S, D] fp16 tensor as kernels/problems/attention_tma.yaml
 * describes it: dims [D, S, B * H] (innermost first), boxes of 64 columns (the 128 bytes of
 * the 128-byte swizzle) by `rows` rows; rows past S of a head are out of bounds (TMA
 * zero-fills loads and drops stores there).
 */
static inline int dispatch_tensor_map(CUtensorMap *m, const void *base, long long B, long long H,
                                      long long S, long long D, unsigned rows)
{
	PFN_cuTensorMapEncodeTiled_v12000 encode = dispatch_encode_fn();
	const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)S, (cuuint64_t)(B * H)};
	const cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)(S * D) * 2};
	const cuuint32_t box[3] = {64, rows, 1}, estr[3] = {1, 1, 1};

	if (!encode)
		return (int)cudaErrorNotSupported;
	if (encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, (void *)base, dims, strides, box, estr,
	           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	           CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
	           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
		return (int)cudaErrorInvalidValue;
	return (int)cudaSuccess;
}

/*
 * Run c (attention_select() at io's dims) on stream: its family's build c->config. A
 * cudaError_t; cudaErrorInvalidValue when no family serves the dims, the build is not in the
 * table, or a pointer is misaligned for the family's loads.
 */
static inline int attention_dispatch(const struct attention_choice *c,
                                     const struct attention_io *io, cudaStream_t stream)
{
	const uintptr_t align =
	    (uintptr_t)io->q | (uintptr_t)io->k | (uintptr_t)io->v | (uintptr_t)io->o;

#ifdef ATTENTION_FLASH_ATTN
	if (c->family == ATTENTION_FLASH_ATTN && c->config >= 0 &&
	    c->config < FLASH_ATTN_NCONFIGS && align % 16 == 0) {
		const struct flash_attn_config *f = &c->flash_attn;
		const size_t R = (size_t)f->splits * io->B * io->H * io->S;
		struct flash_attn_args a;

		a.q = io->q;
		a.k = io->k;
		a.v = io->v;
		a.o = io->o;
		a.opart = f->splits > 1 ? io->scratch : NULL;
		a.lse = f->splits > 1 && io->scratch ? io->scratch + R * io->D : NULL;
		a.B = (int)io->B;
		a.H = (int)io->H;
		a.S = (int)io->S;
		a.scale = io->scale;
		return flash_attn_builds[c->config](f, &a, stream);
	}
#endif
#ifdef ATTENTION_FLASH_FWD_SM90
	if (c->family == ATTENTION_FLASH_FWD_SM90 && c->config >= 0 &&
	    c->config < FLASH_FWD_SM90_NCONFIGS && align % 16 == 0) {
		const struct flash_fwd_sm90_config *f = &c->flash_fwd_sm90;
		/* Box rows: 64 of Q, BLOCK_N of K and V, 64 / SPLITS of O (attention_tma.yaml). */
		const unsigned rows[4] = {64, (unsigned)f->block_n, (unsigned)f->block_n,
		                          (unsigned)(64 / f->splits)};
		const void *base[4] = {io->q, io->k, io->v, io->o};
		CUtensorMap maps[4];
		struct flash_fwd_sm90_args a;
		int i, rc;

		for (i = 0; i < 4; i++) {
			rc = dispatch_tensor_map(&maps[i], base[i], io->B, io->H, io->S, io->D,
			                         rows[i]);
			if (rc != cudaSuccess)
				return rc;
			a.maps[i] = &maps[i];
		}
		/* STREAMK's scratch; its counters start at zero (the kernel leaves them there). */
		a.sk_part = f->streamk ? io->scratch : NULL;
		a.sk_lse = f->streamk ? io->scratch + dispatch_sk_rows(f) * io->D : NULL;
		a.sk_count = f->streamk ? (int *)(a.sk_lse + dispatch_sk_rows(f)) : NULL;
		if (f->streamk && !io->scratch)
			return (int)cudaErrorInvalidValue;
		if (f->streamk &&
		    (rc = cudaMemsetAsync(a.sk_count, 0, sizeof(int) * f->persistent * f->consumers,
		                          stream)) != cudaSuccess)
			return rc;
		a.B = (int)io->B;
		a.H = (int)io->H;
		a.S = (int)io->S;
		a.scale = io->scale;
		return flash_fwd_sm90_builds[c->config](f, &a, stream);
	}
#endif
	return (int)cudaErrorInvalidValue;
}

#endif
