/* Unit tests for the flash_fwd family and the reference kernel, compiled through NVRTC (no GPU). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"

#include "../../kernels/include/tuner_sanitize.h"
#include "kernel_build.h"

/* One point of the declared space, plus the head dim. */
struct kcfg {
	int block_m, block_n, num_warps, stages, swizzle, pad, d;
};

/* The sidecar's smem_bytes: (BLOCK_M + 2 * STAGES * BLOCK_N) * (D + PAD) * 2. */
static long long sidecar_smem(const struct kcfg *c)
{
	return (long long)(c->block_m + 2 * c->stages * c->block_n) * (c->d + c->pad) * 2;
}

/* The preamble the tuner generates, then the template; extra is more #defines. */
static struct kbuild compile_flash(const struct kcfg *c, long long smem, const char *extra,
                                   const char *arch)
{
	char *tmpl = slurp("kernels/templates/flash_fwd.cu");
	char *src = xasprintf("#define BLOCK_M %d\n#define BLOCK_N %d\n#define NUM_WARPS %d\n"
	                      "#define STAGES %d\n#define SWIZZLE %d\n#define PAD %d\n"
	                      "#define SHAPE_D %d\n#define TUNER_SMEM_BYTES %lld\n%s"
	                      "#line 1 \"flash_fwd.cu\"\n%s",
	                      c->block_m, c->block_n, c->num_warps, c->stages, c->swizzle, c->pad,
	                      c->d, smem, extra, tmpl);
	struct kbuild b = compile_src(src, "flash_fwd.cu", arch);

	free(src);
	free(tmpl);
	return b;
}

static void assert_compiles_clean(const struct kcfg *c, const char *arch)
{
	struct kbuild b = compile_flash(c, sidecar_smem(c), "", arch);

	if (!b.ok)
		fail_msg("BM%d BN%d W%d S%d D%d on %s failed to compile:\n%s", c->block_m,
		         c->block_n, c->num_warps, c->stages, c->d, arch, b.log);
	if (b.spill_stores != 0 || b.spill_loads != 0)
		fail_msg("BM%d BN%d W%d S%d D%d on %s spills:\n%s", c->block_m, c->block_n,
		         c->num_warps, c->stages, c->d, arch, b.log);
	assert_true(b.regs > 0 && b.regs <= 255);
	kbuild_release(&b);
}

static const struct kcfg baseline64 = {64, 64, 4, 1, 1, 8, 64};
static const struct kcfg baseline128 = {64, 64, 4, 1, 1, 8, 128};

/* The seeds' configuration compiles for every arch the tuner targets, both head dims, no spills. */
static void test_baseline_all_archs(void **state)
{
	static const char *const archs[] = {"sm_80", "sm_89", "sm_90"};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(archs); i++) {
		assert_compiles_clean(&baseline64, archs[i]);
		assert_compiles_clean(&baseline128, archs[i]);
	}
}

/* Corners of the space: smallest tiles unpadded and unswizzled, deepest pipelines, most warps. */
static void test_extreme_configs(void **state)
{
	static const struct kcfg corners[] = {
	    {32, 32, 2, 3, 0, 0, 64},   {32, 32, 2, 3, 0, 0, 128}, {128, 32, 8, 3, 1, 0, 64},
	    {128, 64, 8, 2, 1, 8, 128}, {64, 128, 4, 3, 1, 8, 64}, {128, 128, 8, 2, 0, 8, 64},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(corners); i++)
		assert_compiles_clean(&corners[i], "sm_90");
}

/* The instructions the family is built from are really there, and nothing goes to the stack. */
static void test_instructions(void **state)
{
	struct kbuild b = compile_flash(&baseline64, sidecar_smem(&baseline64), "", "sm_90");

	(void)state;
	assert_true(b.ok);
	assert_non_null(strstr(b.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
	assert_non_null(strstr(b.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
	assert_non_null(strstr(b.ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
	assert_non_null(strstr(b.ptx, "cp.async.cg.shared.global"));
	assert_non_null(strstr(b.ptx, "cp.async.wait_group 0"));
	assert_non_null(strstr(b.ptx, ".entry flash_fwd("));
	assert_null(strstr(b.ptx, "tuner_san_log"));
	assert_null(strstr(b.ptx, ".local"));
	kbuild_release(&b);
}

/* The kernel's own layout must fit TUNER_SMEM_BYTES: the sidecar's expression is exact. */
static void test_smem_cross_check(void **state)
{
	static const struct kcfg cs[] = {{64, 64, 4, 1, 1, 8, 64}, {128, 32, 4, 3, 0, 0, 128}};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cs); i++) {
		struct kbuild ok = compile_flash(&cs[i], sidecar_smem(&cs[i]), "", "sm_90");
		struct kbuild small = compile_flash(&cs[i], sidecar_smem(&cs[i]) - 16, "", "sm_90");

		assert_true(ok.ok);
		assert_false(small.ok);
		assert_non_null(strstr(small.log, "TUNER_SMEM_BYTES"));
		kbuild_release(&ok);
		kbuild_release(&small);
	}
}

/* A template compiled without the preamble says what is missing instead of guessing defaults. */
static void test_needs_preamble(void **state)
{
	char *tmpl = slurp("kernels/templates/flash_fwd.cu");
	struct kbuild b = compile_src(tmpl, "flash_fwd.cu", "sm_90");

	(void)state;
	assert_false(b.ok);
	assert_non_null(strstr(b.log, "preamble"));
	kbuild_release(&b);
	free(tmpl);
}

/* The sanitize build defines the log the worker reads, unmangled, with the C layout's size. */
static void test_sanitize_log_symbol(void **state)
{
	struct kbuild b = compile_flash(&baseline128, sidecar_smem(&baseline128),
	                                "#define TUNER_SANITIZE 1\n", "sm_90");
	char want[80];

	(void)state;
	if (!b.ok)
		fail_msg("sanitize build failed:\n%s", b.log);
	snprintf(want, sizeof(want), ".global .align 8 .b8 tuner_san_log[%zu];",
	         sizeof(struct tuner_san_log));
	assert_non_null(strstr(b.ptx, want));
	/* The checks vote across the warp before a collective ldmatrix. */
	assert_non_null(strstr(b.ptx, "vote.sync.all"));
	assert_non_null(strstr(b.ptx, "%dynamic_smem_size"));
	kbuild_release(&b);
}

/* The planted misalignment builds in both modes (it must fail at run time, not compile time). */
static void test_plant_builds(void **state)
{
	struct kbuild plain = compile_flash(&baseline64, sidecar_smem(&baseline64),
	                                    "#define TUNER_PLANT_MISALIGN 1\n", "sm_90");
	struct kbuild san =
	    compile_flash(&baseline64, sidecar_smem(&baseline64),
	                  "#define TUNER_PLANT_MISALIGN 1\n#define TUNER_SANITIZE 1\n", "sm_90");
	struct kbuild good = compile_flash(&baseline64, sidecar_smem(&baseline64), "", "sm_90");

	(void)state;
	assert_true(plain.ok);
	assert_true(san.ok);
	assert_true(good.ok);
	/* The plant changes the code (the K row stride), not only a comment. */
	assert_string_not_equal(plain.ptx, good.ptx);
	kbuild_release(&plain);
	kbuild_release(&san);
	kbuild_release(&good);
}

/* The reference kernel compiles with the entry point the problem module names. */
static void test_reference(void **state)
{
	char *src = slurp("kernels/reference/attention_ref.cu");
	struct kbuild b = compile_src(src, "attention_ref.cu", "sm_90");

	(void)state;
	if (!b.ok)
		fail_msg("reference failed to compile:\n%s", b.log);
	assert_non_null(strstr(b.ptx, ".entry attention_ref("));
	/* Plain fp32 math: no tensor-core instruction. */
	assert_null(strstr(b.ptx, "mma."));
	kbuild_release(&b);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_baseline_all_archs), cmocka_unit_test(test_extreme_configs),
	    cmocka_unit_test(test_instructions),       cmocka_unit_test(test_smem_cross_check),
	    cmocka_unit_test(test_needs_preamble),     cmocka_unit_test(test_sanitize_log_symbol),
	    cmocka_unit_test(test_plant_builds),       cmocka_unit_test(test_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
