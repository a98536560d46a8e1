/*
 * One build of flash_fwd_sm90 (TMA tensor maps, wgmma, non-causal; sm_90a): the header's
 * preamble of build FLASH_FWD_SM90_CONFIG, the template unchanged with its extern "C" entry
 * renamed (flash_fwd_sm90_<i>) so that every build links into one module, and
 * flash_fwd_sm90_build_<i>(), which launches it with the four tensor maps as
 * __grid_constant__ params (dispatch.cuh encodes them).
 */
#ifndef FLASH_FWD_SM90_CONFIG
#error "define FLASH_FWD_SM90_CONFIG, the build (gen_builds.py writes the files that do)"
#endif

#include <string.h>

#include "build.cuh" /* and attention.h, with this build's preamble */

#define BUILD_CAT_(a, b) a##b
#define BUILD_CAT(a, b)  BUILD_CAT_(a, b)
/* After the header, whose choice struct has a member named flash_fwd_sm90. */
#define flash_fwd_sm90 BUILD_CAT(flash_fwd_sm90_, FLASH_FWD_SM90_CONFIG)
#include "flash_fwd_sm90.cu" /* kernels/templates/flash_fwd_sm90.cu, unchanged */

#undef flash_fwd_sm90

/* The launch of c (this build's configuration at a.B, a.H, a.S): Q, K, V, O maps, the stream-K
 * scratch, B, H, S, scale. */
extern "C" int BUILD_CAT(flash_fwd_sm90_build_,
                         FLASH_FWD_SM90_CONFIG)(const struct flash_fwd_sm90_config *c,
                                                const struct flash_fwd_sm90_args *a,
                                                cudaStream_t stream)
{
	static unsigned smem_set;
	void *params[] = {(void *)a->maps[0],   (void *)a->maps[1], (void *)a->maps[2],
	                  (void *)a->maps[3],   (void *)&a->sk_part, (void *)&a->sk_lse,
	                  (void *)&a->sk_count, (void *)&a->B,       (void *)&a->H,
	                  (void *)&a->S,        (void *)&a->scale};
	int i, rc;

	if (c->config != FLASH_FWD_SM90_CONFIG)
		return (int)cudaErrorInvalidValue;
	for (i = 0; i < FLASH_FWD_SM90_NLAUNCHES; i++) {
		const struct flash_fwd_sm90_launch &l = c->launch[i];

		if (!l.enabled)
			continue;
		if (strcmp(l.kernel, "flash_fwd_sm90"))
			return (int)cudaErrorInvalidDeviceFunction;
		rc = build_launch((const void *)BUILD_CAT(flash_fwd_sm90_, FLASH_FWD_SM90_CONFIG),
		                  l, params, &smem_set, stream);
		if (rc != cudaSuccess)
			return rc;
	}
	return (int)cudaSuccess;
}
