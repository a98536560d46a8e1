/*
 * One build of the tuned flash_fwd: the exported header's preamble (rank 1 at the SHAPE_D the
 * including file defines), the template itself, and a launcher with the header's launch.
 * Included by flash_fwd_d64.cu and flash_fwd_d128.cu, which name the launcher (FLASH_FWD_EXT_LAUNCH)
 * and rename the template's extern "C" entry, so that both builds link into one extension.
 */
#include <cuda_runtime.h>

#include "flash_fwd_config.h" /* exported by `tuner export` into gen/ */
#include "flash_fwd.cu"       /* kernels/templates/flash_fwd.cu, unchanged */

#ifndef FLASH_FWD_EXT_LAUNCH
#error "define FLASH_FWD_EXT_LAUNCH, the launcher's name"
#endif

/*
 * O = softmax(Q K^T * scale) V for [B, H, S, SHAPE_D] fp16 tensors on stream: the launch of rank
 * 1 at these dims, from the header (grid, block, dynamic shared memory; the opt-in attribute
 * once, outside any graph capture). A CUDA error code; cudaErrorInvalidValue for another D.
 */
extern "C" int FLASH_FWD_EXT_LAUNCH(const void *q, const void *k, const void *v, void *o, int B,
                                    int H, int S, int D, float scale, cudaStream_t stream)
{
	static int optin_done;
	struct flash_fwd_config c = flash_fwd_rank(1, B, H, S, D);
	const struct flash_fwd_launch *l = &c.launch[0];

	if (D != SHAPE_D || c.rank != 1)
		return (int)cudaErrorInvalidValue;
	if (l->smem_optin && !optin_done) {
		cudaError_t e = FLASH_FWD_SMEM_ATTR(flash_fwd, l->smem_bytes);

		if (e != cudaSuccess)
			return (int)e;
		optin_done = 1;
	}
	flash_fwd<<<dim3(l->grid[0], l->grid[1], l->grid[2]),
	            dim3(l->block[0], l->block[1], l->block[2]), l->smem_bytes, stream>>>(
	    (const __half *)q, (const __half *)k, (const __half *)v, (__half *)o, B, H, S, scale);
	return (int)cudaGetLastError();
}
