/* Unit tests for the search space: scopes, enumeration, domains, --set and specialisations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "compile_fixture.h"

/* ----------------------------------------------------------------- scopes */

static void test_scope_params_then_dims(void **state)
{
	struct config *cfg = *state;
	struct space_scope sc;
	struct variant va;
	struct expr_err err;
	struct expr *e = fx_expr("BLOCK_M * 1000 + D * 10 + PAD");
	long long v;

	fx_variant(cfg, "BLOCK_M=128,PAD=1", &va);
	space_scope_init(&sc, cfg, &va, &cfg->shapes[4]);
	assert_int_equal(sc.scope.n, 6 + 4);
	assert_string_equal(sc.vars[0].name, "BLOCK_M");
	assert_string_equal(sc.vars[5].name, "PAD");
	assert_string_equal(sc.vars[6].name, "B");
	assert_string_equal(sc.vars[9].name, "D");
	assert_int_equal(expr_eval(e, &sc.scope, &v, &err), 0);
	assert_int_equal(v, 128 * 1000 + 128 * 10 + 1);

	/* Without a shape only the params are bound. */
	space_scope_init(&sc, cfg, &va, NULL);
	assert_int_equal(sc.scope.n, 6);
	assert_int_equal(expr_eval(e, &sc.scope, &v, &err), -1);
	assert_non_null(strstr(err.msg, "D"));
	expr_free(e);
}

/* ------------------------------------------------------------ enumeration */

static void test_size_and_points(void **state)
{
	struct config *cfg = *state;
	const struct family *fam = &cfg->fam;
	unsigned long long n = space_size(fam), i;
	struct variant va;
	char *s;

	assert_int_equal(n, 3 * 3 * 4 * 3 * 2 * 3);

	space_point(fam, 0, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=32,BLOCK_N=32,NUM_WARPS=1,STAGES=1,SWIZZLE=0,PAD=0");
	free(s);
	/* The last param moves fastest. */
	space_point(fam, 1, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=32,BLOCK_N=32,NUM_WARPS=1,STAGES=1,SWIZZLE=0,PAD=1");
	free(s);
	space_point(fam, 3, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=32,BLOCK_N=32,NUM_WARPS=1,STAGES=1,SWIZZLE=1,PAD=0");
	free(s);
	space_point(fam, n - 1, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=128,BLOCK_N=128,NUM_WARPS=8,STAGES=3,SWIZZLE=1,PAD=8");
	free(s);

	/* Every index is a distinct point of the domain: decode and re-encode. */
	for (i = 0; i < n; i++) {
		unsigned long long back = 0;
		size_t p, k;
		int bad;

		space_point(fam, i, &va);
		assert_true(space_in_domain(fam, &va, &bad));
		assert_int_equal(bad, -1);
		for (p = 0; p < fam->nparams; p++) {
			for (k = 0; fam->params[p].values[k] != va.v[p]; k++)
				;
			back = back * fam->params[p].nvalues + k;
		}
		assert_int_equal(back, i);
	}
}

static void test_domain_and_baseline(void **state)
{
	struct config *cfg = *state;
	const struct family *fam = &cfg->fam;
	struct variant va, vb;
	int bad = 99;
	char *s;

	space_baseline(fam, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=1,PAD=8");
	free(s);
	assert_true(space_in_domain(fam, &va, &bad));

	va.v[3] = 4; /* STAGES=4 is not declared */
	va.v[5] = 2;
	assert_false(space_in_domain(fam, &va, &bad));
	assert_int_equal(bad, 3);

	/* Equality looks at the family's params only. */
	space_baseline(fam, &va);
	space_baseline(fam, &vb);
	vb.v[TUNER_MAX_PARAMS - 1] = 12345;
	assert_true(space_equal(fam, &va, &vb));
	vb.v[5] = 0;
	assert_false(space_equal(fam, &va, &vb));
}

/* ------------------------------------------------------------------- --set */

static void test_parse_set(void **state)
{
	struct config *cfg = *state;
	const struct family *fam = &cfg->fam;
	struct variant va, back;
	char *s;

	space_baseline(fam, &va);
	assert_int_equal(space_parse_set(fam, "BLOCK_M=128, PAD=1", &va), 0);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=128,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=1,PAD=1");
	/* Values outside the domain parse (check warns about them); the format round-trips. */
	assert_int_equal(space_parse_set(fam, "STAGES=-3", &va), 0);
	assert_int_equal(va.v[3], -3);
	free(s);
	s = space_format(fam, &va);
	space_baseline(fam, &back);
	assert_int_equal(space_parse_set(fam, s, &back), 0);
	assert_true(space_equal(fam, &va, &back));
	free(s);
	assert_int_equal(fx_nerrors, 0);
}

static void expect_set_error(const struct family *fam, const char *spec, const char *needle)
{
	struct variant va, before;

	space_baseline(fam, &va);
	before = va;
	fx_capture_start();
	assert_int_equal(space_parse_set(fam, spec, &va), -1);
	if (!strstr(fx_errors, needle))
		fail_msg("--set '%s': expected '%s' in the error, got '%s'", spec, needle,
		         fx_errors);
	/* A bad spec changes nothing, not even the assignments before the bad one. */
	assert_true(space_equal(fam, &va, &before));
}

static void test_parse_set_errors(void **state)
{
	struct config *cfg = *state;
	const struct family *fam = &cfg->fam;

	expect_set_error(fam, "BLOCK_M=128,BLOK_N=64",
	                 "unknown param 'BLOK_N' (did you mean 'BLOCK_N'?)");
	expect_set_error(fam, "block_m=64", "did you mean 'BLOCK_M'");
	expect_set_error(fam, "XYZZY=1",
	                 "params: BLOCK_M, BLOCK_N, NUM_WARPS, STAGES, SWIZZLE, PAD");
	expect_set_error(fam, "BLOCK_M=sixty", "value 'sixty' of 'BLOCK_M' is not an integer");
	expect_set_error(fam, "BLOCK_M=64x", "not an integer");
	expect_set_error(fam, "BLOCK_M=", "value '' of 'BLOCK_M' is not an integer");
	expect_set_error(fam, "PAD=99999999999999999999", "out of range");
	expect_set_error(fam, "BLOCK_M", "expected NAME=VALUE");
	expect_set_error(fam, "PAD=1,,BLOCK_M=64", "expected NAME=VALUE");
	expect_set_error(fam, "=4", "missing param name");
	expect_set_error(fam, "PAD=1,PAD=8", "'PAD' is set twice");
}

/* A param with labels (an imported landscape's codes of strings or floats) is stored and set by
 * them. */
static void test_labels(void **state)
{
	struct config *cfg = *state;
	struct family *fam = &cfg->fam;
	struct param *sw = &fam->params[4];
	struct variant va, back;
	long long v;
	char *s;

	assert_string_equal(sw->name, "SWIZZLE");
	sw->labels = xcalloc(2, sizeof(*sw->labels));
	sw->labels[0] = xstrdup("none");
	sw->labels[1] = xstrdup("xor.8");
	space_baseline(fam, &va);
	s = space_format(fam, &va);
	assert_string_equal(s, "BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=xor.8,PAD=8");
	space_baseline(fam, &back);
	assert_int_equal(space_parse_set(fam, "SWIZZLE=none", &back), 0);
	assert_int_equal(back.v[4], 0);
	assert_int_equal(space_parse_set(fam, s, &back), 0);
	assert_true(space_equal(fam, &va, &back));
	free(s);
	assert_string_equal(space_label(sw, 0), "none");
	assert_null(space_label(sw, 7));
	assert_null(space_label(&fam->params[0], 64));
	assert_int_equal(space_value_of(sw, "xor.8", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(space_value_of(sw, "1", &v), -1);
	assert_int_equal(space_value_of(&fam->params[0], "128", &v), 0);
	assert_int_equal(v, 128);
	assert_int_equal(fx_nerrors, 0);
	/* the code is not a label: the error lists the labels */
	expect_set_error(fam, "SWIZZLE=1",
	                 "value '1' of 'SWIZZLE' is not one of its labels (none, xor.8)");
	free(sw->labels[0]);
	free(sw->labels[1]);
	free(sw->labels);
	sw->labels = NULL;
}

/* ------------------------------------------------------- specialisations */

static void test_specs_default_suite(void **state)
{
	struct config *cfg = *state;
	struct spec specs[TUNER_MAX_SHAPES];
	size_t map[TUNER_MAX_SHAPES];

	assert_int_equal(space_specs(cfg, specs, map), 2);
	assert_string_equal(specs[0].key, "D=64");
	assert_int_equal(specs[0].vals[0], 64);
	assert_string_equal(specs[1].key, "D=128");
	assert_int_equal(specs[1].vals[0], 128);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[3], 0);
	assert_int_equal(map[4], 1);
	/* The shape a spec's compile-time constants come from: its first. */
	assert_ptr_equal(space_spec_shape(cfg, &specs[0]), &cfg->shapes[0]);
	assert_ptr_equal(space_spec_shape(cfg, &specs[1]), &cfg->shapes[4]);
}

static void test_specs_two_dims_first_seen(void **state)
{
	struct config *cfg = *state;
	struct spec specs[TUNER_MAX_SHAPES], other;
	size_t map[TUNER_MAX_SHAPES];

	/* Specialise S too: (64,512) (64,512) (64,2048) (64,2048) (128,4096), order kept. */
	cfg->fam.specialize[1] = xstrdup("S");
	cfg->fam.nspecialize = 2;
	assert_int_equal(space_specs(cfg, specs, map), 3);
	assert_string_equal(specs[0].key, "D=64,S=512");
	assert_string_equal(specs[1].key, "D=64,S=2048");
	assert_string_equal(specs[2].key, "D=128,S=4096");
	assert_int_equal(specs[1].vals[1], 2048);
	assert_int_equal(map[1], 0);
	assert_int_equal(map[2], 1);
	assert_int_equal(map[3], 1);
	assert_int_equal(map[4], 2);
	assert_ptr_equal(space_spec_shape(cfg, &specs[1]), &cfg->shapes[2]);
	other = specs[2];
	other.vals[1] = 1;
	assert_null(space_spec_shape(cfg, &other));
}

static void test_specs_none(void **state)
{
	struct config *cfg = *state;
	struct spec specs[TUNER_MAX_SHAPES];
	size_t map[TUNER_MAX_SHAPES], i;

	free(cfg->fam.specialize[0]);
	cfg->fam.nspecialize = 0;
	assert_int_equal(space_specs(cfg, specs, map), 1);
	assert_string_equal(specs[0].key, "");
	for (i = 0; i < cfg->nshapes; i++)
		assert_int_equal(map[i], 0);
	assert_ptr_equal(space_spec_shape(cfg, &specs[0]), &cfg->shapes[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_scope_params_then_dims, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_size_and_points, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_domain_and_baseline, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_parse_set, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_parse_set_errors, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_labels, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_specs_default_suite, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_specs_two_dims_first_seen, fx_setup, fx_teardown),
	    cmocka_unit_test_setup_teardown(test_specs_none, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
