/* Unit tests for the config and sidecar loader, with a golden table of malformed configs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "tuner/config.h"
#include "tuner/space.h"

#define FIX "tests/fixtures/config/"

/* ------------------------------------------------------ error capture */

static char top[PATH_MAX];

static int setup(void **state)
{
	capture_start();
	return 0;
}

/* Back to the repository root even when a test failed after a chdir. */
static int teardown(void **state)
{
	capture_stop();
	return chdir(top);
}

static void load_ok(const char *path, struct config *cfg)
{
	if (config_load(path, cfg) < 0)
		fail_msg("config_load('%s') failed: %s", path, captured);
	assert_int_equal(nerrors, 0);
}

static void family_ok(const char *path, struct family *fam)
{
	if (family_load(path, fam) < 0)
		fail_msg("family_load('%s') failed: %s", path, captured);
	assert_int_equal(nerrors, 0);
}

/* "FILE.yaml:LINE:COL: m..." with LINE, COL >= 1 and a lowercase message or a quote. */
static int has_position(const char *msg)
{
	const char *p = strstr(msg, ".yaml:");
	int i;

	if (!p || strchr(msg, ' ') < p)
		return 0;
	p += 6;
	for (i = 0; i < 2; i++) {
		if (*p < '1' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p++ != ':')
			return 0;
	}
	return *p == ' ' && ((p[1] >= 'a' && p[1] <= 'z') || p[1] == '\'');
}

static long long eval(const struct expr *e, const struct expr_var *vars, size_t n)
{
	struct expr_scope scope = {vars, n, NULL};
	struct expr_err err;
	long long v = 0;

	memset(&err, 0, sizeof(err));
	if (expr_eval(e, &scope, &v, &err) < 0)
		fail_msg("cannot evaluate '%s': %s", expr_text(e), err.msg);
	return v;
}

static char *slurp(const char *path)
{
	char *text = NULL;

	assert_int_equal(read_file(path, &text, NULL), 0);
	return text;
}

/* ------------------------------------------------------- good configs */

static void test_full_config(void **state)
{
	struct config cfg;

	load_ok(FIX "good.yaml", &cfg);
	assert_int_equal(nerrors, 0);
	assert_string_equal(cfg.path, FIX "good.yaml");
	assert_string_equal(cfg.template_path, FIX "kernels/tiny.yaml");
	assert_string_equal(cfg.fam.name, "tiny_fwd");

	/* arch table values, two of them overridden */
	assert_string_equal(cfg.arch.name, "sm_89");
	assert_int_equal(cfg.arch.cc, 89);
	assert_int_equal(cfg.arch.smem_per_block, 40000);
	assert_int_equal(cfg.arch.smem_per_block_optin, 90000);
	assert_int_equal(cfg.arch.smem_per_sm, 102400);
	assert_int_equal(cfg.arch.sm_count, 0);
	assert_int_equal(cfg.arch.max_threads_per_block, 1024);

	assert_int_equal(cfg.nshapes, 2);
	assert_string_equal(cfg.shapes[0].name, "mission");
	assert_int_equal(cfg.shapes[0].dims[0], 1);
	assert_int_equal(cfg.shapes[0].dims[1], 8);
	assert_int_equal(cfg.shapes[0].dims[2], 512);
	assert_int_equal(cfg.shapes[0].dims[3], 64);
	assert_int_equal(cfg.shapes[0].line, 9);
	assert_string_equal(cfg.shapes[1].name, "d128");
	assert_int_equal(cfg.shapes[1].dims[0], 4);
	assert_int_equal(cfg.shapes[1].dims[1], 16);
	assert_int_equal(cfg.shapes[1].dims[2], 4096);
	assert_int_equal(cfg.shapes[1].dims[3], 128);
	assert_int_equal(cfg.shapes[1].line, 10);

	assert_true(cfg.rel_l2 == 5.0e-3);
	assert_true(cfg.max_abs == 1.0e-2);
	assert_int_equal(cfg.check_seeds, 3);
	assert_int_equal(cfg.generations, 7);
	assert_int_equal(cfg.population, 9);
	assert_int_equal(cfg.elite, 2);
	assert_true(cfg.margin == 0.05);
	assert_int_equal(cfg.warmup, 0);
	assert_int_equal(cfg.repeats, 11);
	assert_int_equal(cfg.launches, 5);
	assert_int_equal(cfg.l2, L2_HOT);
	assert_true(cfg.timeout_s == 2.5);
	assert_int_equal(cfg.jobs, 2);
	assert_int_equal(cfg.max_spill_bytes, 64);
	assert_int_equal(cfg.sanitize, SANITIZE_EVERY);
	assert_string_equal(cfg.strategy, "exhaustive");
	assert_true(cfg.seed == 18446744073709551615ULL);
	config_release(&cfg);
}

static void test_defaults(void **state)
{
	struct config cfg;

	load_ok(FIX "minimal.yaml", &cfg);
	assert_string_equal(cfg.arch.name, "sm_90");
	assert_int_equal(cfg.arch.smem_per_block, 49152);
	assert_int_equal(cfg.arch.smem_per_block_optin, 232448);
	assert_true(cfg.rel_l2 == 1e-2);
	assert_true(cfg.max_abs == 2e-2);
	assert_int_equal(cfg.check_seeds, 2);
	assert_int_equal(cfg.generations, 10);
	assert_int_equal(cfg.population, 16);
	assert_int_equal(cfg.elite, 3);
	assert_true(cfg.margin == 0.03);
	assert_int_equal(cfg.warmup, 10);
	assert_int_equal(cfg.repeats, 30);
	assert_int_equal(cfg.launches, 20);
	assert_int_equal(cfg.l2, L2_COLD);
	assert_true(cfg.timeout_s == 20);
	assert_int_equal(cfg.jobs, 0);
	assert_int_equal(cfg.max_spill_bytes, 0);
	assert_int_equal(cfg.sanitize, SANITIZE_ELITE);
	assert_string_equal(cfg.strategy, "evolve");
	assert_true(cfg.seed == 1);
	config_release(&cfg);
}

/* The raw text goes into the database with each run: it must be the file, byte for byte. */
static void test_raw_text_kept(void **state)
{
	struct config cfg;
	char *text;

	load_ok(FIX "good.yaml", &cfg);
	text = slurp(FIX "good.yaml");
	assert_non_null(cfg.text);
	assert_string_equal(cfg.text, text);
	free(text);
	config_release(&cfg);
}

/* ------------------------------------------------------------ sidecars */

static void test_family(void **state)
{
	struct family fam;
	char *src, hash[HASH_HEX_LEN];
	const struct expr_var vars[] = {{"BLOCK_M", 64}, {"NUM_WARPS", 4}, {"PAD", 8}, {"B", 2},
	                                {"H", 8},        {"S", 1000},      {"D", 64}};

	family_ok(FIX "kernels/tiny.yaml", &fam);
	src = slurp(FIX "kernels/tiny.cu");
	assert_string_equal(fam.path, FIX "kernels/tiny.yaml");
	assert_string_equal(fam.name, "tiny_fwd");
	assert_int_equal(fam.nlaunches, 1);
	assert_string_equal(fam.launches[0].kernel, "tiny_fwd");
	assert_int_equal(fam.launches[0].smem_family, 1);
	assert_string_equal(fam.source_path, FIX "kernels/tiny.cu");
	assert_string_equal(fam.source, src);
	hash_hex(src, strlen(src), hash);
	assert_string_equal(fam.source_hash, hash);
	assert_non_null(fam.problem);
	assert_int_equal(fam.problem->ndims, 4);
	assert_string_equal(fam.problem->dims[2], "S");
	assert_non_null(strstr(fam.problem->path, "kernels/problems/attention.yaml"));

	/* params keep the sidecar's order and their domain order */
	assert_int_equal(fam.nparams, 3);
	assert_string_equal(fam.params[0].name, "BLOCK_M");
	assert_string_equal(fam.params[1].name, "NUM_WARPS");
	assert_string_equal(fam.params[2].name, "PAD");
	assert_int_equal(fam.params[0].nvalues, 3);
	assert_int_equal(fam.params[0].values[0], 32);
	assert_int_equal(fam.params[0].values[2], 128);
	assert_int_equal(fam.params[2].nvalues, 2);
	assert_int_equal(fam.params[2].values[1], 8);
	assert_int_equal(fam.params[1].line, 9);
	assert_int_equal(fam.baseline[0], 64);
	assert_int_equal(fam.baseline[1], 4);
	assert_int_equal(fam.baseline[2], 8);

	assert_int_equal(fam.nspecialize, 1);
	assert_string_equal(fam.specialize[0], "D");

	assert_int_equal(fam.nconstraints, 2);
	assert_string_equal(expr_text(fam.constraints[0].e), "BLOCK_M % (16 * NUM_WARPS) == 0");
	assert_string_equal(expr_text(fam.constraints[1].e), "NUM_WARPS * 32 <= 1024");
	assert_int_equal(fam.constraints[0].line, 12);
	assert_int_equal(fam.constraints[1].line, 13);
	assert_int_equal(eval(fam.constraints[0].e, vars, ARRAY_SIZE(vars)), 1);

	assert_int_equal(eval(fam.smem_bytes, vars, ARRAY_SIZE(vars)), 3 * 64 * (64 + 8) * 2);

	assert_string_equal(fam.layout[0].name, "Q_smem");
	assert_string_equal(fam.layout[0].access, "cp.async 16B");
	assert_int_equal(fam.layout[0].align, 16);
	assert_int_equal(eval(fam.layout[0].offset, vars, ARRAY_SIZE(vars)), 0);
	assert_int_equal(eval(fam.layout[0].stride, vars, ARRAY_SIZE(vars)), 144);
	assert_string_equal(fam.layout[1].name, "K_smem");
	assert_string_equal(fam.layout[1].access, "ldmatrix");
	assert_int_equal(fam.layout[1].line, 17);
	assert_int_equal(eval(fam.layout[1].offset, vars, ARRAY_SIZE(vars)), 64 * 144);
	/* a comma inside a flow mapping's expression: max(BLOCK_M, 64) stays one value */
	assert_int_equal(fam.nlayout, 3);
	assert_string_equal(expr_text(fam.layout[2].offset), "max(BLOCK_M, 64) * (D + PAD) * 4");
	assert_int_equal(eval(fam.layout[2].offset, vars, ARRAY_SIZE(vars)), 64 * 72 * 4);
	assert_int_equal(eval(fam.layout[2].stride, vars, ARRAY_SIZE(vars)), 144);
	assert_int_equal(fam.layout[2].align, 16);

	/* grid from the shape, ceil_div(S, BLOCK_M) one expression despite the flow list's
	 * comma; block given one dimension, the others are 1 */
	assert_string_equal(expr_text(fam.launches[0].grid[0]), "ceil_div(S, BLOCK_M)");
	assert_int_equal(eval(fam.launches[0].grid[0], vars, ARRAY_SIZE(vars)), 16);
	assert_int_equal(eval(fam.launches[0].grid[1], vars, ARRAY_SIZE(vars)), 8);
	assert_int_equal(eval(fam.launches[0].grid[2], vars, ARRAY_SIZE(vars)), 2);
	assert_int_equal(eval(fam.launches[0].block[0], vars, ARRAY_SIZE(vars)), 128);
	assert_int_equal(eval(fam.launches[0].block[1], vars, ARRAY_SIZE(vars)), 1);
	assert_int_equal(eval(fam.launches[0].block[2], vars, ARRAY_SIZE(vars)), 1);

	assert_int_equal(fam.noptions, 2);
	assert_string_equal(fam.options[0], "--use_fast_math");
	assert_string_equal(fam.options[1], "-lineinfo");
	free(src);
	family_release(&fam);
	assert_null(fam.name);
	assert_int_equal(fam.nparams, 0);
}

/* Optional sidecar keys: no constraints, layout, options; smem_bytes is 0. */
static void test_family_optional_keys(void **state)
{
	struct family fam;
	const struct expr_var vars[] = {{"BLOCK_M", 32}, {"S", 77}};

	family_ok(FIX "kernels/bare.yaml", &fam);
	assert_int_equal(fam.nspecialize, 0);
	assert_int_equal(fam.nconstraints, 0);
	assert_int_equal(fam.nlayout, 0);
	assert_int_equal(fam.noptions, 0);
	assert_non_null(fam.smem_bytes);
	assert_int_equal(eval(fam.smem_bytes, vars, ARRAY_SIZE(vars)), 0);
	assert_int_equal(eval(fam.launches[0].grid[0], vars, ARRAY_SIZE(vars)), 77);
	assert_int_equal(eval(fam.launches[0].grid[2], vars, ARRAY_SIZE(vars)), 1);
	assert_int_equal(fam.params[0].values[0], 64);
	assert_int_equal(fam.baseline[0], 32);
	family_release(&fam);
}

static void test_family_param_index(void **state)
{
	struct family fam;

	family_ok(FIX "kernels/tiny.yaml", &fam);
	assert_int_equal(family_param_index(&fam, "BLOCK_M"), 0);
	assert_int_equal(family_param_index(&fam, "PAD"), 2);
	assert_int_equal(family_param_index(&fam, "D"), -1);
	assert_int_equal(family_param_index(&fam, "block_m"), -1);
	assert_int_equal(family_param_index(&fam, ""), -1);
	family_release(&fam);
}

/* A landscape sidecar of two params: n, 10**6 multiples of 3 in a scrambled order, and bs. */
static void wide_sidecar(const char *path, const char *extra)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, n = 1000000;
	FILE *f;

	sb_adds(&sb, "name: wide\nlandscape: true\nparams:\n  n: [");
	for (i = 0; i < n; i++)
		sb_addf(&sb, "%s%zu", i ? ", " : "", (i * 999983) % n * 3);
	sb_addf(&sb, "%s]\n  bs: [32, 64]\nconstraints:\n  - \"n %% bs == 0\"\n", extra);
	sb_adds(&sb, "baseline: {n: 0, bs: 32}\n");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(sb.buf, f);
	fclose(f);
	sb_release(&sb);
}

/*
 * A landscape's param may have 10**6 values, as the importer writes them: its
 * sidecar (7 MB) loads, past the 4 MiB of a hand-written file; a value listed
 * twice is found by sorting, not by comparing every pair (hours: the alarm is
 * the failure); and a value's position by bisection.
 */
static void test_family_wide_param(void **state)
{
	char dir[] = "/tmp/tuner-wide-XXXXXX", path[256];
	const struct param *p;
	struct family fam;
	struct variant va;
	size_t i;
	int bad;

	alarm(30);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/wide.yaml", dir);
	wide_sidecar(path, "");
	family_ok(path, &fam);
	p = &fam.params[0];
	assert_int_equal(p->nvalues, 1000000);
	for (i = 0; i < p->nvalues; i += 997)
		assert_int_equal(space_value_index(p, p->values[i]), (long long)i);
	for (i = 0; p->values[i] != 2999997; i++)
		;
	assert_int_equal(space_value_index(p, 2999997), (long long)i);
	assert_int_equal(space_value_index(p, 1), -1);
	assert_int_equal(space_value_index(p, 3000000), -1);
	assert_int_equal(space_value_index(p, -3), -1);
	memset(&va, 0, sizeof(va));
	va.v[0] = 2999997;
	va.v[1] = 64;
	assert_true(space_in_domain(&fam, &va, &bad));
	assert_int_equal(bad, -1);
	va.v[1] = 48;
	assert_false(space_in_domain(&fam, &va, &bad));
	assert_int_equal(bad, 1);
	family_release(&fam);
	/* the first value again, at the end: named where it is repeated */
	wide_sidecar(path, ", 0");
	capture_start();
	assert_int_equal(family_load(path, &fam), -1);
	if (!strstr(captured, "wide.yaml:4:") ||
	    !strstr(captured, "duplicate value 0 in param 'n'"))
		fail_msg("%s", captured);
	unlink(path);
	rmdir(dir);
	alarm(0);
}

static void test_family_missing_file(void **state)
{
	struct family fam;

	assert_int_equal(family_load(FIX "kernels/nope.yaml", &fam), -1);
	assert_int_equal(nerrors, 1);
	assert_non_null(strstr(captured, "cannot read sidecar '" FIX "kernels/nope.yaml'"));
	assert_non_null(strstr(captured, "No such file or directory"));
	assert_null(fam.name);
	family_release(&fam);
}

/* ------------------------------------------------------ relative paths */

/* The template resolves against the config's directory, the source against the sidecar's. */
static void test_paths_from_other_cwd(void **state)
{
	struct config cfg;
	char *abs;

	assert_int_equal(chdir("tests/fixtures"), 0);
	load_ok("config/good.yaml", &cfg);
	assert_string_equal(cfg.template_path, "config/kernels/tiny.yaml");
	assert_string_equal(cfg.fam.source_path, "config/kernels/tiny.cu");
	config_release(&cfg);
	assert_int_equal(chdir("/"), 0);
	abs = xasprintf("%s/" FIX "good.yaml", top);
	load_ok(abs, &cfg);
	assert_int_equal(strncmp(cfg.fam.source_path, top, strlen(top)), 0);
	config_release(&cfg);
	free(abs);
}

/* ------------------------------------------------------ default configs */

static void check_seed_shapes(const struct config *cfg)
{
	static const struct {
		const char *name;
		long long d[4];
	} want[] = {
	    {"mission", {1, 8, 512, 64}}, {"small", {2, 8, 512, 64}},   {"long", {2, 8, 2048, 64}},
	    {"wide", {8, 16, 2048, 64}},  {"d128", {4, 16, 4096, 128}},
	};
	size_t i, j;

	for (i = 0; i < cfg->nshapes && i < ARRAY_SIZE(want); i++) {
		assert_string_equal(cfg->shapes[i].name, want[i].name);
		for (j = 0; j < 4; j++)
			assert_int_equal(cfg->shapes[i].dims[j], want[i].d[j]);
	}
}

static void test_default_configs(void **state)
{
	struct config cfg;

	if (access("kernels/templates/flash_fwd.yaml", R_OK) < 0)
		skip();
	load_ok("configs/default.yaml", &cfg);
	assert_string_equal(cfg.arch.name, "sm_90");
	assert_int_equal(cfg.arch.smem_per_block_optin, 232448);
	assert_string_equal(cfg.template_path, "configs/../kernels/templates/flash_fwd.yaml");
	assert_string_equal(cfg.fam.name, "flash_fwd");
	assert_int_equal(cfg.nshapes, 5);
	check_seed_shapes(&cfg);
	config_release(&cfg);

	load_ok("configs/l4.yaml", &cfg);
	assert_string_equal(cfg.arch.name, "sm_89");
	assert_int_equal(cfg.arch.smem_per_block, 48 * 1024);
	assert_int_equal(cfg.arch.smem_per_block_optin, 99 * 1024);
	assert_int_equal(cfg.nshapes, 3);
	check_seed_shapes(&cfg);
	config_release(&cfg);
}

/* -------------------------------------------------------------- errors */

static void test_missing_config(void **state)
{
	struct config cfg;

	assert_int_equal(config_load(FIX "nope.yaml", &cfg), -1);
	assert_int_equal(nerrors, 1);
	assert_non_null(strstr(captured, "cannot read config '" FIX "nope.yaml'"));
	assert_null(cfg.path);
	assert_null(cfg.text);
	config_release(&cfg);
	config_release(&cfg);
}

/* A failed load leaves nothing behind: every pointer is NULL and release is harmless. */
static void test_failed_load_is_empty(void **state)
{
	struct config cfg;

	assert_int_equal(config_load(FIX "errors/shape-invalid.yaml", &cfg), -1);
	assert_null(cfg.path);
	assert_null(cfg.text);
	assert_null(cfg.template_path);
	assert_null(cfg.fam.name);
	assert_null(cfg.fam.source);
	assert_int_equal(cfg.fam.nparams, 0);
	assert_int_equal(cfg.nshapes, 0);
	assert_null(cfg.strategy);
	config_release(&cfg);
}

/* The "# expect: ..." lines at the top of a fixture; returns how many. */
static size_t read_expects(const char *path, char expects[][512], size_t max)
{
	char *text = slurp(path), *line = text, *nl;
	size_t n = 0;

	while (n < max && !strncmp(line, "# expect: ", 10)) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		snprintf(expects[n++], 512, "%.*s", (int)(nl - line - 10), line + 10);
		if (!*nl)
			break;
		line = nl + 1;
	}
	free(text);
	return n;
}

/*
 * jq.test style: every YAML file in errors/ must fail with exactly one error that starts
 * with FILE:LINE:COLUMN and contains each "# expect:" substring.
 */
static void test_error_table(void **state)
{
	char expects[4][512];
	glob_t g;
	size_t i, j, n;
	int failures = 0;

	assert_int_equal(glob(FIX "errors/*.yaml", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 60);
	for (i = 0; i < g.gl_pathc; i++) {
		struct config cfg;
		int ret;

		n = read_expects(g.gl_pathv[i], expects, ARRAY_SIZE(expects));
		if (!n) {
			print_error("%s: no '# expect:' line\n", g.gl_pathv[i]);
			failures++;
			continue;
		}
		capture_start();
		ret = config_load(g.gl_pathv[i], &cfg);
		if (ret != -1 || nerrors != 1) {
			print_error("%s: returned %d with %d errors (want -1 and 1): %s\n",
			            g.gl_pathv[i], ret, nerrors, captured);
			failures++;
		}
		if (!has_position(captured)) {
			print_error("%s: message lacks FILE:LINE:COL: %s\n", g.gl_pathv[i],
			            captured);
			failures++;
		}
		for (j = 0; j < n; j++) {
			if (!strstr(captured, expects[j])) {
				print_error("%s:\n  expected: %s\n  got:      %s\n", g.gl_pathv[i],
				            expects[j], captured);
				failures++;
			}
		}
		if (cfg.path || cfg.text || cfg.fam.name || cfg.nshapes) {
			print_error("%s: the failed load left data behind\n", g.gl_pathv[i]);
			failures++;
		}
		config_release(&cfg);
	}
	globfree(&g);
	assert_int_equal(failures, 0);
}

/* The template path in the message is the one the config wrote, not the resolved one. */
static void test_error_names_config_value(void **state)
{
	struct config cfg;

	assert_int_equal(config_load(FIX "errors/missing-template-file.yaml", &cfg), -1);
	assert_int_equal(strncmp(captured, FIX "errors/missing-template-file.yaml:2:11: ",
	                         strlen(FIX "errors/missing-template-file.yaml:2:11: ")),
	                 0);
	assert_null(strstr(captured, "errors/nope.yaml"));
	config_release(&cfg);
}

int main(void)
{
	const char *root = getenv("TOP");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_full_config, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_raw_text_kept, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_family, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_family_optional_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_family_param_index, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_family_wide_param, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_family_missing_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_paths_from_other_cwd, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_default_configs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_config, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_load_is_empty, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_error_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_error_names_config_value, setup, teardown),
	};

	if ((root && chdir(root) < 0) || !getcwd(top, sizeof(top))) {
		perror(root ? root : "getcwd");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
