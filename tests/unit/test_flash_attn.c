/* Unit tests for the flash_attn family and its causal reference, compiled through NVRTC (no GPU).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"

#include "kernel_build.h"

/* One point of flash_attn's space, plus the specialised dims. */
struct acfg {
	int block_m, block_n, num_warps, stages, swizzle, q_regs, splits, combine, d, causal;
};

/*
 * The sidecar's smem_bytes: max((BLOCK_M + 2 * STAGES * BLOCK_N) * (D + 8 - 8 * SWIZZLE) * 2,
 * COMBINE * BLOCK_M * (D + 9) * 4).
 */
static long long sidecar_smem(const struct acfg *c)
{
	long long tiles =
	    (long long)(c->block_m + 2 * c->stages * c->block_n) * (c->d + 8 - 8 * c->swizzle) * 2;
	long long stage = (long long)c->combine * c->block_m * (c->d + 9) * 4;

	return tiles > stage ? tiles : stage;
}

/* The preamble the tuner generates, then the template; extra is more #defines. */
static struct kbuild compile_attn(const struct acfg *c, long long smem, const char *extra,
                                  const char *arch)
{
	char *tmpl = slurp("kernels/templates/flash_attn.cu");
	char *src = xasprintf(
	    "#define BLOCK_M %d\n#define BLOCK_N %d\n#define NUM_WARPS %d\n#define STAGES %d\n"
	    "#define SWIZZLE %d\n#define Q_REGS %d\n#define SPLITS %d\n#define COMBINE %d\n"
	    "#define SHAPE_D %d\n#define SHAPE_causal %d\n#define TUNER_SMEM_BYTES %lld\n%s"
	    "#line 1 \"flash_attn.cu\"\n%s",
	    c->block_m, c->block_n, c->num_warps, c->stages, c->swizzle, c->q_regs, c->splits,
	    c->combine, c->d, c->causal, smem, extra, tmpl);
	struct kbuild b = compile_src(src, "flash_attn.cu", arch);

	free(src);
	free(tmpl);
	return b;
}

static struct kbuild compile_clean(const struct acfg *c, const char *extra)
{
	struct kbuild b = compile_attn(c, sidecar_smem(c), extra, "sm_90");

	if (!b.ok)
		fail_msg(
		    "BM%d BN%d W%d ST%d SPLITS%d COMBINE%d D%d causal%d failed to compile:\n%s",
		    c->block_m, c->block_n, c->num_warps, c->stages, c->splits, c->combine, c->d,
		    c->causal, b.log);
	if (b.spill_stores != 0 || b.spill_loads != 0)
		fail_msg("BM%d BN%d W%d ST%d D%d causal%d spills:\n%s", c->block_m, c->block_n,
		         c->num_warps, c->stages, c->d, c->causal, b.log);
	return b;
}

/* The sidecar's baseline, with D and causal set by the test. */
static struct acfg baseline(int d, int causal)
{
	struct acfg c = {128, 64, 8, 2, 0, 0, 1, 0, d, causal};

	return c;
}

/* The baseline compiles without spills for both head dims, causal or not; one launch's entry. */
static void test_baseline_specs(void **state)
{
	int d, causal;

	(void)state;
	for (d = 64; d <= 128; d += 64)
		for (causal = 0; causal <= 1; causal++) {
			struct acfg c = baseline(d, causal);
			struct kbuild b = compile_clean(&c, "");

			assert_non_null(strstr(b.ptx, ".entry flash_attn("));
			assert_non_null(
			    strstr(b.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
			assert_non_null(strstr(b.ptx, "ex2.approx.ftz.f32"));
			assert_null(strstr(b.ptx, ".reqnctapercluster"));
			assert_null(strstr(b.ptx, ".local"));
			kbuild_release(&b);
		}
}

/* SPLITS > 1: COMBINE=0 merges in a second entry; COMBINE=1 is a cluster of SPLITS blocks. */
static void test_split_merges(void **state)
{
	struct acfg launch = {64, 64, 4, 1, 1, 1, 4, 0, 64, 1};
	struct acfg cluster = {64, 64, 4, 1, 1, 1, 4, 1, 64, 1};
	struct kbuild a = compile_clean(&launch, "");
	struct kbuild b = compile_clean(&cluster, "");

	(void)state;
	assert_non_null(strstr(a.ptx, ".entry flash_attn_combine("));
	assert_null(strstr(a.ptx, ".reqnctapercluster"));
	assert_null(strstr(a.ptx, "ld.shared::cluster"));
	assert_non_null(strstr(b.ptx, ".reqnctapercluster 4, 1, 1"));
	assert_non_null(strstr(b.ptx, "mapa.shared::cluster"));
	assert_non_null(strstr(b.ptx, "ld.shared::cluster.v4.f32"));
	assert_non_null(strstr(b.ptx, "barrier.cluster.wait.acquire"));
	kbuild_release(&a);
	kbuild_release(&b);
}

/* FLASH_BF16 (the bf16 sidecar's option) switches the tensor-core instruction, not only types. */
static void test_bf16(void **state)
{
	struct acfg c = baseline(128, 1);
	struct kbuild b = compile_clean(&c, "#define FLASH_BF16 1\n");

	(void)state;
	assert_non_null(strstr(b.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
	assert_null(strstr(b.ptx, ".f16.f16.f32"));
	kbuild_release(&b);
}

/* smem_bytes is exact, also where the cluster's f32 stage is larger than the tiles. */
static void test_smem_cross_check(void **state)
{
	static const struct acfg cs[] = {
	    {128, 64, 8, 2, 0, 0, 1, 0, 64, 0},  /* the tiles */
	    {128, 32, 8, 1, 0, 0, 2, 1, 128, 0}, /* the stage: 70144 bytes against 52224 */
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cs); i++) {
		struct kbuild ok = compile_attn(&cs[i], sidecar_smem(&cs[i]), "", "sm_90");
		struct kbuild small = compile_attn(&cs[i], sidecar_smem(&cs[i]) - 16, "", "sm_90");

		assert_true(ok.ok);
		assert_false(small.ok);
		assert_non_null(strstr(small.log, "TUNER_SMEM_BYTES"));
		kbuild_release(&ok);
		kbuild_release(&small);
	}
}

/* Clusters need sm_90: an older target refuses COMBINE=1 with a message, and builds COMBINE=0. */
static void test_cluster_needs_sm90(void **state)
{
	struct acfg c = {64, 64, 4, 2, 0, 0, 2, 1, 64, 0};
	struct kbuild b = compile_attn(&c, sidecar_smem(&c), "", "sm_80");
	struct kbuild plain;

	(void)state;
	assert_false(b.ok);
	assert_non_null(strstr(b.log, "clusters"));
	c.combine = 0;
	plain = compile_attn(&c, sidecar_smem(&c), "", "sm_80");
	assert_true(plain.ok);
	kbuild_release(&b);
	kbuild_release(&plain);
}

/* The reference compiles with both entries the problem files name, in plain fp32 math. */
static void test_reference(void **state)
{
	char *src = slurp("kernels/reference/attention_causal_ref.cu");
	struct kbuild b = compile_src(src, "attention_causal_ref.cu", "sm_90");

	(void)state;
	if (!b.ok)
		fail_msg("reference failed to compile:\n%s", b.log);
	assert_non_null(strstr(b.ptx, ".entry attention_causal_ref("));
	assert_non_null(strstr(b.ptx, ".entry attention_causal_ref_bf16("));
	assert_null(strstr(b.ptx, "mma."));
	kbuild_release(&b);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_baseline_specs),
	    cmocka_unit_test(test_split_merges),
	    cmocka_unit_test(test_bf16),
	    cmocka_unit_test(test_smem_cross_check),
	    cmocka_unit_test(test_cluster_needs_sm90),
	    cmocka_unit_test(test_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
