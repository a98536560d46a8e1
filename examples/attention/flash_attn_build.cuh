/*
 * One build of flash_attn (mma.sync, pointers, causal or not; sm_90): the header's preamble of
 * build FLASH_ATTN_CONFIG, the template unchanged with its extern "C" entries renamed
 * (flash_attn_<i>, flash_attn_combine_<i>) so that every build links into one module, and
 * flash_attn_build_<i>(), which runs the configuration's launch sequence.
 */
#ifndef FLASH_ATTN_CONFIG
#error "define FLASH_ATTN_CONFIG, the build (gen_builds.py writes the files that do)"
#endif

#include <string.h>

#include "build.cuh" /* and attention.h, with this build's preamble */

#define BUILD_CAT_(a, b) a##b
#define BUILD_CAT(a, b)  BUILD_CAT_(a, b)
/* After the header, whose choice struct has a member named flash_attn. */
#define flash_attn         BUILD_CAT(flash_attn_, FLASH_ATTN_CONFIG)
#define flash_attn_combine BUILD_CAT(flash_attn_combine_, FLASH_ATTN_CONFIG)
#include "flash_attn.cu" /* kernels/templates/flash_attn.cu, unchanged */

#undef flash_attn
#undef flash_attn_combine

/*
 * The launches of c (this build's configuration at a.B, a.H, a.S) in order, those enabled:
 * flash_attn, then flash_attn_combine when the splits merge through the scratch. Each launch
 * names its kernel ("flash_attn", ...): the problem's args for it are these.
 */
extern "C" int BUILD_CAT(flash_attn_build_, FLASH_ATTN_CONFIG)(const struct flash_attn_config *c,
                                                               const struct flash_attn_args *a,
                                                               cudaStream_t stream)
{
	static unsigned smem_set[2];
	void *main_args[] = {(void *)&a->q,     (void *)&a->k,    (void *)&a->v, (void *)&a->o,
	                     (void *)&a->opart, (void *)&a->lse,  (void *)&a->B, (void *)&a->H,
	                     (void *)&a->S,     (void *)&a->scale};
	void *combine_args[] = {(void *)&a->opart, (void *)&a->lse, (void *)&a->o,
	                        (void *)&a->B,     (void *)&a->H,   (void *)&a->S};
	int i, rc;

	if (c->config != FLASH_ATTN_CONFIG)
		return (int)cudaErrorInvalidValue;
	if (c->splits > 1 && (!a->opart || !a->lse))
		return (int)cudaErrorInvalidValue;
	for (i = 0; i < FLASH_ATTN_NLAUNCHES; i++) {
		const struct flash_attn_launch &l = c->launch[i];

		if (!l.enabled)
			continue;
		if (!strcmp(l.kernel, "flash_attn"))
			rc = build_launch((const void *)BUILD_CAT(flash_attn_, FLASH_ATTN_CONFIG),
			                  l, main_args, &smem_set[0], stream);
		else if (!strcmp(l.kernel, "flash_attn_combine"))
			rc = build_launch(
			    (const void *)BUILD_CAT(flash_attn_combine_, FLASH_ATTN_CONFIG), l,
			    combine_args, &smem_set[1], stream);
		else
			rc = (int)cudaErrorInvalidDeviceFunction;
		if (rc != cudaSuccess)
			return rc;
	}
	return (int)cudaSuccess;
}
