/* Unit tests for the gates: constraints, shared memory, static alignment, and the build gates. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "compile_fixture.h"
#include "tuner/checks.h"

/* checks_static on "NAME=V,..." over the baseline. */
static enum outcome check(const struct config *cfg, const char *set, struct verdicts *vs)
{
	struct variant va;

	fx_variant(cfg, set, &va);
	return checks_static(cfg, &va, vs);
}

static void replace_expr(struct expr **slot, const char *src)
{
	expr_free(*slot);
	*slot = fx_expr(src);
}

static void test_gate_names(void **state)
{
	static const char *const names[] = {"constraint", "smem",     "align",   "compile",
	                                    "resources",  "sanitize", "correct", "race"};
	size_t i;

	assert_int_equal(ARRAY_SIZE(names), GATE_COUNT);
	for (i = 0; i < GATE_COUNT; i++)
		assert_string_equal(gate_name((enum gate)i), names[i]);
}

/* ---------------------------------------------------------- static gates */

static void test_baseline_passes_every_gate(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	size_t i;

	assert_int_equal(check(cfg, NULL, &vs), VARIANT_OK);
	assert_int_equal(vs.n, 3);
	assert_int_equal(vs.v[0].gate, GATE_CONSTRAINT);
	assert_int_equal(vs.v[1].gate, GATE_SMEM);
	assert_int_equal(vs.v[2].gate, GATE_ALIGN);
	for (i = 0; i < vs.n; i++) {
		assert_int_equal(vs.v[i].outcome, VARIANT_OK);
		assert_string_equal(vs.v[i].shape, "");
	}
	assert_string_equal(vs.v[0].reason, "1 constraint holds on 5 shapes");
	/* The largest need is at D=128: (64 + 2 * 64) * (128 + 8) * 2. */
	assert_non_null(strstr(vs.v[1].reason, "needs at most 52224 bytes"));
	assert_string_equal(vs.v[2].reason, "3 buffers aligned on 5 shapes");
	verdicts_release(&vs);
	assert_null(vs.v);
	assert_int_equal(vs.n, 0);
}

static void test_constraint_rejects(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	assert_int_equal(check(cfg, "BLOCK_M=64,NUM_WARPS=8", &vs), REJECT_CONSTRAINT);
	assert_int_equal(vs.n, 1);
	assert_int_equal(vs.v[0].gate, GATE_CONSTRAINT);
	assert_int_equal(vs.v[0].outcome, REJECT_CONSTRAINT);
	assert_string_equal(vs.v[0].shape, "mission");
	assert_string_equal(
	    vs.v[0].reason,
	    "constraint 'BLOCK_M % (16 * NUM_WARPS) == 0' is false for shape 'mission'");
	verdicts_release(&vs);
}

static void test_constraint_checked_on_every_shape(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	fx_constraint(&cfg->fam, "D <= 64 || BLOCK_M <= 64");
	assert_int_equal(check(cfg, "BLOCK_M=64", &vs), VARIANT_OK);
	assert_string_equal(vs.v[0].reason, "2 constraints hold on 5 shapes");
	verdicts_release(&vs);
	assert_int_equal(check(cfg, "BLOCK_M=128", &vs), REJECT_CONSTRAINT);
	assert_string_equal(vs.v[0].shape, "d128");
	assert_string_equal(vs.v[0].reason,
	                    "constraint 'D <= 64 || BLOCK_M <= 64' is false for shape 'd128'");
	verdicts_release(&vs);
}

static void test_smem_rejects(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	/* (128 + 2 * 3 * 128) * (128 + 8) * 2 = 243712 > 232448 at D=128; fits at D=64. */
	assert_int_equal(check(cfg, "BLOCK_M=128,BLOCK_N=128,STAGES=3", &vs), REJECT_SMEM);
	assert_int_equal(vs.n, 2);
	assert_int_equal(vs.v[0].outcome, VARIANT_OK);
	assert_int_equal(vs.v[1].gate, GATE_SMEM);
	assert_int_equal(vs.v[1].outcome, REJECT_SMEM);
	assert_string_equal(vs.v[1].shape, "d128");
	assert_string_equal(vs.v[1].reason, "needs 243712 bytes of shared memory for shape 'd128', "
	                                    "sm_90 allows 232448 per block (opt-in)");
	verdicts_release(&vs);

	/* The limit is the arch's: the seeds' L4 (sm_89, 99 KB opt-in) refuses far less. */
	assert_int_equal(arch_lookup("sm_89", &cfg->arch), 0);
	assert_int_equal(check(cfg, "BLOCK_M=128,BLOCK_N=64,STAGES=2", &vs), REJECT_SMEM);
	assert_non_null(strstr(vs.v[1].reason, "sm_89 allows 101376 per block (opt-in)"));
	verdicts_release(&vs);
	assert_int_equal(check(cfg, NULL, &vs), VARIANT_OK);
	verdicts_release(&vs);
}

static void test_align_seeds_bug(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	/* The seeds' layout: Q unpadded, K rows (D + PAD) halves under 16-byte cp.async. */
	replace_expr(&cfg->fam.layout[0].stride, "D * 2");
	replace_expr(&cfg->fam.layout[1].offset, "BLOCK_M * D * 2");
	replace_expr(&cfg->fam.layout[2].stride, "D * 2");
	replace_expr(&cfg->fam.layout[2].offset,
	             "BLOCK_M * D * 2 + STAGES * BLOCK_N * (D + PAD) * 2 + 14");
	assert_int_equal(check(cfg, "PAD=8", &vs), REJECT_ALIGN);
	verdicts_release(&vs);
	replace_expr(&cfg->fam.layout[2].offset, "0");
	assert_int_equal(check(cfg, "PAD=8", &vs), VARIANT_OK);
	verdicts_release(&vs);

	assert_int_equal(check(cfg, "PAD=1", &vs), REJECT_ALIGN);
	assert_int_equal(vs.n, 3);
	assert_int_equal(vs.v[0].outcome, VARIANT_OK);
	assert_int_equal(vs.v[1].outcome, VARIANT_OK);
	assert_int_equal(vs.v[2].gate, GATE_ALIGN);
	assert_int_equal(vs.v[2].outcome, REJECT_ALIGN);
	assert_string_equal(vs.v[2].shape, "mission");
	assert_string_equal(vs.v[2].reason,
	                    "buffer 'K_smem' row stride 130 bytes is not a multiple of "
	                    "16 (cp.async 16B) for shape 'mission'");
	verdicts_release(&vs);
}

static void test_align_sidecar_pad1(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	/* With the sidecar's layout every buffer has the padded stride: the first is named, the
	 * rest listed. */
	assert_int_equal(check(cfg, "PAD=1", &vs), REJECT_ALIGN);
	assert_string_equal(
	    vs.v[2].reason,
	    "buffer 'Q_smem' row stride 130 bytes is not a multiple of 16 (cp.async "
	    "16B) for shape 'mission'; also misaligned: 'K_smem', 'V_smem'");
	verdicts_release(&vs);

	/* PAD=0 aligns every row. */
	assert_int_equal(check(cfg, "PAD=0", &vs), VARIANT_OK);
	verdicts_release(&vs);
}

static void test_align_offset(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	replace_expr(&cfg->fam.layout[1].offset, "BLOCK_M * (D + PAD) * 2 + 4");
	cfg->fam.layout[1].align = 8;
	free(cfg->fam.layout[1].access);
	cfg->fam.layout[1].access = xstrdup("ldmatrix");
	assert_int_equal(check(cfg, NULL, &vs), REJECT_ALIGN);
	assert_string_equal(vs.v[2].reason,
	                    "buffer 'K_smem' offset 9220 bytes is not a multiple of 8 "
	                    "(ldmatrix) for shape 'mission'");
	verdicts_release(&vs);
}

static void test_constraint_gate_comes_first(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	/* Violates the constraint and alignment (and, at D=128, nothing else): constraint wins. */
	assert_int_equal(check(cfg, "BLOCK_M=64,NUM_WARPS=8,PAD=1", &vs), REJECT_CONSTRAINT);
	assert_int_equal(vs.n, 1);
	assert_int_equal(vs.v[0].gate, GATE_CONSTRAINT);
	verdicts_release(&vs);

	/* Over the smem budget (on sm_89) and misaligned: smem wins over alignment. */
	assert_int_equal(arch_lookup("sm_89", &cfg->arch), 0);
	assert_int_equal(check(cfg, "BLOCK_M=128,BLOCK_N=128,STAGES=3,PAD=1", &vs), REJECT_SMEM);
	assert_int_equal(vs.n, 2);
	verdicts_release(&vs);
}

static void test_eval_errors_reject_at_their_gate(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};

	fx_constraint(&cfg->fam, "BLOCK_M / (PAD - 8) != 0");
	assert_int_equal(check(cfg, NULL, &vs), REJECT_CONSTRAINT);
	assert_non_null(strstr(vs.v[0].reason, "constraint 'BLOCK_M / (PAD - 8) != 0'"));
	assert_non_null(strstr(vs.v[0].reason, "division by zero"));
	assert_non_null(strstr(vs.v[0].reason, "mission"));
	verdicts_release(&vs);
	/* Where it evaluates, it holds. */
	assert_int_equal(check(cfg, "PAD=0", &vs), VARIANT_OK);
	verdicts_release(&vs);

	expr_free(cfg->fam.constraints[1].e);
	cfg->fam.nconstraints = 1;
	replace_expr(&cfg->fam.smem_bytes, "BLOCK_M * D / (PAD - 8)");
	assert_int_equal(check(cfg, NULL, &vs), REJECT_SMEM);
	assert_int_equal(vs.v[1].gate, GATE_SMEM);
	assert_non_null(strstr(vs.v[1].reason, "division by zero"));
	verdicts_release(&vs);

	replace_expr(&cfg->fam.smem_bytes, "1024");
	replace_expr(&cfg->fam.layout[2].stride, "D * 2 / (PAD - 8)");
	assert_int_equal(check(cfg, NULL, &vs), REJECT_ALIGN);
	assert_non_null(strstr(vs.v[2].reason, "buffer 'V_smem' row stride 'D * 2 / (PAD - 8)'"));
	assert_non_null(strstr(vs.v[2].reason, "division by zero"));
	verdicts_release(&vs);

	/* An unknown name (a typo in the sidecar) is an evaluation error too. */
	replace_expr(&cfg->fam.constraints[0].e, "BLOK_M > 0");
	assert_int_equal(check(cfg, NULL, &vs), REJECT_CONSTRAINT);
	assert_non_null(strstr(vs.v[0].reason, "BLOK_M"));
	verdicts_release(&vs);
}

/* ------------------------------------------------------------ build gates */

/* A build as NVRTC gives it: the numbers, and ptxas's report of them in the log. */
static void fake_build(struct build *b, int regs, int static_smem, int stores, int loads)
{
	static char log[512];

	memset(b, 0, sizeof(*b));
	b->outcome = VARIANT_OK;
	b->regs = regs;
	b->static_smem = static_smem;
	b->spill_stores = stores;
	b->spill_loads = loads;
	snprintf(log, sizeof(log),
	         "ptxas info    : Compiling entry function 'flash_fwd' for 'sm_90'\n"
	         "ptxas info    : Function properties for flash_fwd\n"
	         "    0 bytes stack frame, %d bytes spill stores, %d bytes spill loads\n"
	         "ptxas info    : Used %d registers, %d bytes smem\n",
	         stores, loads, regs, static_smem);
	b->log = log;
}

static enum outcome build_check(const struct config *cfg, const char *set, size_t spec,
                                const struct build *b, struct verdicts *vs)
{
	struct spec specs[TUNER_MAX_SHAPES];
	struct variant va;

	space_specs(cfg, specs, NULL);
	fx_variant(cfg, set, &va);
	return checks_build(cfg, &va, &specs[spec], b, vs);
}

static void test_build_ok(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	fake_build(&b, 128, 0, 0, 0);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), VARIANT_OK);
	assert_int_equal(vs.n, 3);
	assert_int_equal(vs.v[0].gate, GATE_COMPILE);
	assert_int_equal(vs.v[1].gate, GATE_SMEM);
	assert_int_equal(vs.v[2].gate, GATE_RESOURCES);
	assert_int_equal(vs.v[0].outcome, VARIANT_OK);
	assert_int_equal(vs.v[1].outcome, VARIANT_OK);
	assert_int_equal(vs.v[2].outcome, VARIANT_OK);
	assert_non_null(strstr(vs.v[0].reason, "D=64"));
	verdicts_release(&vs);
}

static void test_build_compile_error(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	memset(&b, 0, sizeof(b));
	b.outcome = REJECT_COMPILE;
	b.log = xstrdup("flash_fwd.cu(10): warning #177-D: variable \"x\" was declared but never "
	                "referenced\n"
	                "flash_fwd.cu(12): error: expected a \";\"\n"
	                "flash_fwd.cu(20): error: identifier \"y\" is undefined\n"
	                "\n2 errors detected in the compilation of \"flash_fwd.cu\".\n");
	assert_int_equal(build_check(cfg, NULL, 1, &b, &vs), REJECT_COMPILE);
	assert_int_equal(vs.n, 1);
	assert_int_equal(vs.v[0].gate, GATE_COMPILE);
	assert_string_equal(vs.v[0].reason, "D=128: flash_fwd.cu(12): error: expected a \";\"");
	verdicts_release(&vs);
	free(b.log);

	b.log = NULL;
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_COMPILE);
	assert_non_null(strstr(vs.v[0].reason, "D=64"));
	verdicts_release(&vs);
}

/* No ptxas report (an NVRTC that answered from its own cache): rejected, never passed as 0 spills.
 */
static void test_build_without_report(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	fake_build(&b, 128, 0, 0, 0);
	b.log = "";
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_RESOURCES);
	assert_int_equal(vs.n, 1);
	assert_int_equal(vs.v[0].gate, GATE_RESOURCES);
	assert_non_null(strstr(vs.v[0].reason, "no ptxas report for 'flash_fwd'"));
	verdicts_release(&vs);
}

static void test_build_smem_cross_check(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	/* 27648 dynamic bytes at D=64 (the baseline) plus ptxas's static amount. */
	fake_build(&b, 128, 232448 - 27648, 0, 0);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), VARIANT_OK);
	verdicts_release(&vs);
	fake_build(&b, 128, 232448 - 27648 + 1, 0, 0);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_SMEM);
	assert_int_equal(vs.n, 2);
	assert_int_equal(vs.v[1].gate, GATE_SMEM);
	assert_non_null(
	    strstr(vs.v[1].reason, "ptxas reports 204801 bytes of static shared memory for D=64"));
	assert_non_null(strstr(vs.v[1].reason, "232449"));
	verdicts_release(&vs);
}

static void test_build_spills(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	fake_build(&b, 255, 0, 8, 4);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_RESOURCES);
	assert_int_equal(vs.v[vs.n - 1].gate, GATE_RESOURCES);
	assert_non_null(strstr(vs.v[vs.n - 1].reason, "spills 12 bytes"));
	assert_non_null(strstr(vs.v[vs.n - 1].reason, "the limit is 0"));
	verdicts_release(&vs);

	cfg->max_spill_bytes = 12;
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), VARIANT_OK);
	verdicts_release(&vs);
}

static void test_build_registers_per_block(void **state)
{
	struct config *cfg = *state;
	struct verdicts vs = {0};
	struct build b;

	/* 8 warps x 255 registers = 65280 fits in 65536. */
	fake_build(&b, 255, 0, 0, 0);
	assert_int_equal(build_check(cfg, "NUM_WARPS=8,BLOCK_M=128", 0, &b, &vs), VARIANT_OK);
	verdicts_release(&vs);

	replace_expr(&cfg->fam.launches[0].block[0], "NUM_WARPS * 128");
	fake_build(&b, 200, 0, 0, 0);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_RESOURCES);
	assert_string_equal(vs.v[vs.n - 1].reason,
	                    "cannot launch 'flash_fwd': 512 threads x 200 registers = 102400 "
	                    "registers per block, sm_90 has 65536 per SM");
	verdicts_release(&vs);

	replace_expr(&cfg->fam.launches[0].block[0], "NUM_WARPS * 512");
	fake_build(&b, 16, 0, 0, 0);
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_RESOURCES);
	assert_non_null(strstr(vs.v[vs.n - 1].reason, "cannot launch"));
	assert_non_null(strstr(vs.v[vs.n - 1].reason, "2048"));
	verdicts_release(&vs);

	replace_expr(&cfg->fam.launches[0].block[0], "NUM_WARPS * 32");
	replace_expr(&cfg->fam.launches[0].block[1], "32 / (PAD - 8)");
	assert_int_equal(build_check(cfg, NULL, 0, &b, &vs), REJECT_RESOURCES);
	assert_non_null(strstr(vs.v[vs.n - 1].reason, "division by zero"));
	verdicts_release(&vs);
}

/* ------------------------------------------------- the shipped sidecar */

static void test_loaded_sidecar(void **state)
{
	struct config cfg;
	struct verdicts vs = {0};
	struct variant va;

	fx_capture_start();
	if (config_load("tests/fixtures/compile/h100.yaml", &cfg) < 0)
		fail_msg("config_load: %s", fx_errors);
	space_baseline(&cfg.fam, &va);
	assert_int_equal(checks_static(&cfg, &va, &vs), VARIANT_OK);
	verdicts_release(&vs);

	/* The seeds' bug through the real layout: PAD=1 at D=64. */
	assert_int_equal(space_parse_set(&cfg.fam, "PAD=1", &va), 0);
	assert_int_equal(checks_static(&cfg, &va, &vs), REJECT_ALIGN);
	assert_string_equal(vs.v[vs.n - 1].shape, "mission");
	assert_non_null(
	    strstr(vs.v[vs.n - 1].reason, "row stride 130 bytes is not a multiple of 16"));
	verdicts_release(&vs);
	config_release(&cfg);
	set_error_routine(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gate_names),
	    cmocka_unit_test_setup_teardown(test_baseline_passes_every_gate, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_constraint_rejects, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_constraint_checked_on_every_shape, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_smem_rejects, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_align_seeds_bug, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_align_sidecar_pad1, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_align_offset, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_constraint_gate_comes_first, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_eval_errors_reject_at_their_gate, fx_setup,
	                                    fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_ok, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_compile_error, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_without_report, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_smem_cross_check, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_spills, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_build_registers_per_block, fx_setup, fx_teardown),
	    cmocka_unit_test(test_loaded_sidecar),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
