/* Unit tests for the export stage's pure parts: params, names, shapes, comments, header and JSON.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "capture.h"
#include "tuner/export.h"

/* ------------------------------------------------------ fixtures */

static int setup(void **state)
{
	capture_start();
	return 0;
}

static int teardown(void **state)
{
	capture_stop();
	return 0;
}

static struct export_shape shapes[] = {
    {(char *)"mission", (char *)"B=1,H=8,S=512,D=64"},
    {(char *)"fa-s2048", (char *)"B=2,H=8,S=2048,D=64"},
};

static struct export_timing timings[][2] = {
    {{1, 80, 79, 81, 12.5, 0.001, 1.25, NAN}, {1, 400, 395, 405, 30, 0.001, 1.5, NAN}},
    {{1, 90, 89, 91, 11.1, 0.001, 100.0 / 90, NAN}, {1, 500, 495, 505, 24, 0.001, 1.2, NAN}},
};

static struct export_timing base[] = {{1, 100, 99, 101, 10, 0.001, 1, NAN},
                                      {1, 600, 590, 610, 20, 0, 1, NAN}};

static struct export_entry entries[] = {
    {1, 1, 2, (char *)"b2c0ffee", (char *)"BLOCK_M=128,BLOCK_N=64,PAD=8", 1.3693, 1.3, 1.44,
     timings[0]},
    {2, 0, 3, (char *)"c3c3c3c3", (char *)"BLOCK_M=64,BLOCK_N=128,PAD=-1", 1.1547, NAN, NAN,
     timings[1]},
};

static struct export_best best[] = {
    {4, (char *)"d4d4", (char *)"BLOCK_M=32,BLOCK_N=64,PAD=8", {1, 70, 69, 71, 14.3, 0, 1.4, NAN}},
    {0, NULL, NULL, {0, NAN, NAN, NAN, NAN, NAN, NAN, NAN}},
};

/* A ranking as export_rank() leaves it, without a database. */
static void fake_ranking(struct ranking *r, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->run.id = 7;
	r->run.status = (char *)"done";
	r->run.command = (char *)"tuner run */ evil /* ?\?/";
	r->run.started_at = (char *)"2026-11-20T10:00:00.000Z";
	r->run.template_name = (char *)"flash_fwd";
	r->run.template_hash = (char *)"0f0f";
	r->run.arch = (char *)"sm_90";
	r->run.device = (char *)"NVIDIA H100 80GB HBM3";
	r->run.driver = (char *)"580.159.04";
	r->run.nvrtc = (char *)"13.0";
	r->run.gpu = 1;
	r->shapes = shapes;
	r->nshapes = 2;
	r->elite_generation = 3;
	r->baseline_id = 1;
	r->baseline_hash = (char *)"a1a1";
	r->baseline_params = (char *)"BLOCK_M=64,BLOCK_N=64,PAD=8";
	r->base = base;
	r->v = entries;
	r->n = n;
}

/* The body of the header's first block comment, or fail. */
static char *first_comment(const char *text)
{
	const char *a = strstr(text, "/*"), *b = a ? strstr(a + 2, "*/") : NULL;

	assert_non_null(a);
	assert_non_null(b);
	return strndup(a + 2, (size_t)(b - a - 2));
}

/* ------------------------------------------------------ params */

static void test_params_parse(void **state)
{
	struct export_params p;

	assert_int_equal(export_params_parse("BLOCK_M=64,NUM_WARPS=4,PAD=-8,_X1=0", &p), 0);
	assert_int_equal(p.n, 4);
	assert_string_equal(p.v[0].name, "BLOCK_M");
	assert_int_equal(p.v[0].value, 64);
	assert_string_equal(p.v[1].name, "NUM_WARPS");
	assert_int_equal(p.v[2].value, -8);
	assert_string_equal(p.v[3].name, "_X1");
	export_params_release(&p);

	assert_int_equal(export_params_parse("", &p), 0);
	assert_int_equal(p.n, 0);
	export_params_release(&p);

	/* an imported landscape's labels: the text as stored, not an integer */
	assert_int_equal(export_params_parse("bs=64,layout=col,frac=0.5,e=1e-05,m=-2.5", &p), 0);
	assert_int_equal(p.n, 5);
	assert_true(p.v[0].is_int);
	assert_int_equal(p.v[0].value, 64);
	assert_false(p.v[1].is_int);
	assert_string_equal(p.v[1].text, "col");
	assert_string_equal(p.v[2].text, "0.5");
	export_params_release(&p);
	assert_true(export_label_is_number("0.5"));
	assert_true(export_label_is_number("1e-05"));
	assert_true(export_label_is_number("-2.5"));
	assert_false(export_label_is_number("col"));
	assert_false(export_label_is_number("inf"));
	assert_false(export_label_is_number("nan"));
	assert_false(export_label_is_number("0x10"));
	assert_false(export_label_is_number("1e999"));
	assert_int_equal(nerrors, 0);
}

static void test_params_malformed(void **state)
{
	static const char *const bad[] = {
	    "A",     "A=",      "=1",      "1A=2",  "A=1,",  "A=1,,B=2", "A=x y",
	    "A='x'", "A= 1",    "A=1 ",    "A=1/2", "A-B=1", "A=1,A=2",  "A=99999999999999999999",
	    ",A=1",  "A=1;B=2", "A=\"x\"",
	};
	struct export_params p;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nerrors = 0;
		if (export_params_parse(bad[i], &p) != -1)
			fail_msg("'%s' parsed", bad[i]);
		assert_int_equal(p.n, 0);
		assert_null(p.v);
		assert_int_equal(nerrors, 1);
		assert_non_null(strstr(captured, "malformed params"));
	}
}

/* ------------------------------------------------------ names */

static void test_ident_and_prefix(void **state)
{
	static const char *const cases[][3] = {
	    {"flash_fwd", "FLASH_FWD", "FLASH_FWD_"},
	    {"fa-s512", "FA_S512", "FA_S512_"},
	    {"d128", "D128", "D128_"},
	    {"2d.conv", "2D_CONV", "TUNER_2D_CONV_"},
	    {"_x", "_X", "TUNER__X_"},
	    {"a b\xc3\xa9", "A_B__", "A_B___"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *id = export_ident(cases[i][0]), *prefix = export_prefix(cases[i][0]);

		assert_string_equal(id, cases[i][1]);
		assert_string_equal(prefix, cases[i][2]);
		free(id);
		free(prefix);
	}
}

/* ------------------------------------------------------ shapes */

static void test_shapes_parse(void **state)
{
	struct export_shape *s;
	size_t n;

	assert_int_equal(
	    export_shapes_parse("[{\"name\": \"mission\", \"B\": 1, \"H\": 8, \"S\": 512,"
	                        " \"D\": 64}, {\"D\": 128, \"name\": \"d128\", \"B\": 4,"
	                        " \"H\": 16, \"S\": 4096}]",
	                        &s, &n),
	    0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "mission");
	assert_string_equal(s[0].dims, "B=1,H=8,S=512,D=64");
	/* The dims in the order written, "name" wherever it is. */
	assert_string_equal(s[1].name, "d128");
	assert_string_equal(s[1].dims, "D=128,B=4,H=16,S=4096");
	export_shapes_free(s, n);

	assert_int_equal(
	    export_shapes_parse("[{\"name\": \"x\", \"dims\": {\"B\": 2, \"S\": 8}}]", &s, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].dims, "B=2,S=8");
	export_shapes_free(s, n);

	assert_int_equal(export_shapes_parse("[]", &s, &n), 0);
	assert_int_equal(n, 0);
	export_shapes_free(s, n);
	assert_int_equal(nerrors, 0);
}

static void test_shapes_malformed(void **state)
{
	static const char *const bad[] = {
	    "",
	    "{}",
	    "[1]",
	    "[{\"B\": 1}]",
	    "[{\"name\": 3}]",
	    "[{\"name\": \"x\", \"B\": 1.5}]",
	    "[{\"name\": \"x\", \"B\": \"1\"}]",
	    "[{\"name\": \"x\"}",
	};
	struct export_shape *s;
	size_t i, n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nerrors = 0;
		if (export_shapes_parse(bad[i], &s, &n) != -1)
			fail_msg("'%s' parsed", bad[i]);
		assert_null(s);
		assert_int_equal(n, 0);
		assert_int_equal(nerrors, 1);
		assert_non_null(strstr(captured, "malformed shape suite"));
	}
}

/* ------------------------------------------------------ comments */

static void test_comment_text(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	export_comment_text(&sb, "a */ b /* c ?\?/ d ?\?= e\tf\ng\x01h \xc3\xa9 **/ //*");
	assert_null(strstr(sb.buf, "*/"));
	assert_null(strstr(sb.buf, "/*"));
	assert_null(strstr(sb.buf, "?\?"));
	assert_null(strchr(sb.buf, '\n'));
	assert_null(strchr(sb.buf, '\t'));
	assert_non_null(strstr(sb.buf, "a * / b / * c ? ?/ d ? ?= e f g h"));
	sb_release(&sb);
}

/* ------------------------------------------------------ header */

static void test_header(void **state)
{
	struct export_header_opts o = {NULL, 0, 86400 * 365, NULL};
	struct strbuf sb = STRBUF_INIT;
	struct ranking r;
	char *c;

	fake_ranking(&r, 2);
	assert_int_equal(export_header(&r, &o, &sb), 0);
	assert_int_equal(nerrors, 0);
	assert_non_null(strstr(sb.buf, "#ifndef FLASH_FWD_CONFIG_H\n#define FLASH_FWD_CONFIG_H\n"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_BLOCK_M 128\n"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_BLOCK_N 64\n"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_R2_BLOCK_M 64\n"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_R2_PAD (-1)\n"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_RANKS 2\n"));
	assert_non_null(strstr(sb.buf, "#endif /* FLASH_FWD_CONFIG_H */\n"));
	assert_null(strstr(sb.buf, "FLASH_FWD_MISSION_"));

	/* The provenance is in one comment that nothing from the database can close early. */
	c = first_comment(sb.buf);
	assert_null(strstr(c, "/*"));
	assert_non_null(strstr(c, "1971-01-01T00:00:00Z"));
	assert_non_null(strstr(c, "tuner " TUNER_VERSION));
	assert_non_null(strstr(c, "NVIDIA H100 80GB HBM3, driver 580.159.04"));
	assert_non_null(strstr(c, "sm_90, NVRTC 13.0"));
	assert_non_null(strstr(c, "flash_fwd, hash 0f0f"));
	assert_non_null(strstr(c, "fa-s2048  B=2,H=8,S=2048,D=64"));
	assert_non_null(strstr(c, "fitness 1.369 [1.300, 1.440]"));
	assert_non_null(strstr(c, "fitness 1.155 [-, -]"));
	assert_non_null(strstr(c, "mission   median 80.000 us, speedup 1.250"));
	assert_non_null(strstr(c, "FLASH_FWD_R<r>_NAME"));
	assert_null(strstr(c, "?\?"));
	free(c);
	sb_release(&sb);

	/* An imported landscape's labels: a number as written, a name as a string literal. */
	{
		struct export_entry *e0 = &r.v[0];
		char *saved = e0->params;

		e0->params = (char *)"BLOCK_M=64,layout=col,frac=-0.5,scale=1e-05";
		sb_release(&sb);
		assert_int_equal(export_header(&r, &o, &sb), 0);
		assert_non_null(strstr(sb.buf, "#define FLASH_FWD_BLOCK_M 64\n"));
		assert_non_null(strstr(sb.buf, "#define FLASH_FWD_layout \"col\"\n"));
		assert_non_null(strstr(sb.buf, "#define FLASH_FWD_frac (-0.5)\n"));
		assert_non_null(strstr(sb.buf, "#define FLASH_FWD_scale 1e-05\n"));
		e0->params = saved;
		sb_release(&sb);
	}

	/* The guard from the file's name. */
	o.output = "include/tuned/2-h100.config.h";
	assert_int_equal(export_header(&r, &o, &sb), 0);
	assert_non_null(strstr(sb.buf, "#ifndef TUNER_2_H100_CONFIG_H\n"));
	sb_release(&sb);
}

static void test_header_per_shape(void **state)
{
	struct export_header_opts o = {NULL, 1, 0, NULL};
	struct strbuf sb = STRBUF_INIT;
	struct ranking r;

	fake_ranking(&r, 1);
	r.best = best;
	assert_int_equal(export_header(&r, &o, &sb), 0);
	assert_non_null(strstr(sb.buf, "#ifndef FLASH_FWD_PER_SHAPE_CONFIG_H"));
	assert_non_null(strstr(sb.buf, "#define FLASH_FWD_BLOCK_M 128\n"));
	assert_non_null(
	    strstr(sb.buf, "/* shape mission (B=1,H=8,S=512,D=64): variant 4, median "
	                   "70.000 us, speedup 1.400 */\n#define FLASH_FWD_MISSION_BLOCK_M 32\n"));
	/* A shape without a correct timed variant defines nothing. */
	assert_non_null(strstr(sb.buf, "shape fa-s2048 (B=2,H=8,S=2048,D=64): no correct timed"));
	assert_null(strstr(sb.buf, "FLASH_FWD_FA_S2048_"));
	sb_release(&sb);
}

static void test_header_refuses(void **state)
{
	struct export_header_opts o = {NULL, 0, 0, NULL};
	struct strbuf sb = STRBUF_INIT;
	struct export_entry e[2];
	struct ranking r;

	/* Nothing ranked. */
	fake_ranking(&r, 0);
	r.run.gpu = 0;
	assert_int_equal(export_header(&r, &o, &sb), -1);
	assert_non_null(strstr(captured, "run 7 timed nothing (no GPU): nothing to export"));
	assert_int_equal(sb.len, 0);

	/* Two macros of one name: rank 2's R2_X against rank 1's param named R2_X. */
	memcpy(e, entries, sizeof(e));
	e[0].params = (char *)"R2_X=1,X=2";
	e[1].params = (char *)"X=3";
	fake_ranking(&r, 2);
	r.v = e;
	nerrors = 0;
	assert_int_equal(export_header(&r, &o, &sb), -1);
	assert_non_null(strstr(captured, "two identifiers would be named 'FLASH_FWD_R2_X'"));

	/* A param that is the guard or the rank count. */
	e[0].params = (char *)"CONFIG_H=1";
	fake_ranking(&r, 1);
	r.v = e;
	nerrors = 0;
	assert_int_equal(export_header(&r, &o, &sb), -1);
	assert_non_null(strstr(captured, "'FLASH_FWD_CONFIG_H'"));
	e[0].params = (char *)"RANKS=1";
	nerrors = 0;
	assert_int_equal(export_header(&r, &o, &sb), -1);
	assert_non_null(strstr(captured, "'FLASH_FWD_RANKS'"));

	/* Malformed stored params. */
	e[0].params = (char *)"BLOCK_M=b g";
	nerrors = 0;
	assert_int_equal(export_header(&r, &o, &sb), -1);
	assert_non_null(strstr(captured, "malformed params 'BLOCK_M=b g'"));
	assert_int_equal(sb.len, 0);
	sb_release(&sb);
}

/* ------------------------------------------------------ JSON */

static void test_json(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct ranking r;
	json_t *doc, *res, *s;

	fake_ranking(&r, 2);
	assert_int_equal(export_json(&r, &sb), 0);
	doc = json_loads(sb.buf, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "run")), 7);
	assert_string_equal(json_string_value(json_object_get(doc, "template")), "flash_fwd");
	assert_int_equal(
	    json_integer_value(json_object_get(
		json_object_get(json_object_get(doc, "baseline"), "params"), "BLOCK_M")),
	    64);
	res = json_object_get(doc, "results");
	assert_int_equal(json_array_size(res), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 0), "rank")), 1);
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(json_array_get(res, 1), "params"), "PAD")),
	                 -1);
	/* NAN is null. */
	assert_true(json_is_null(json_object_get(json_array_get(res, 1), "fitness_lo")));
	s = json_array_get(json_object_get(json_object_get(doc, "baseline"), "shapes"), 1);
	assert_true(json_real_value(json_object_get(s, "median_us")) == 600);
	s = json_array_get(json_object_get(json_array_get(res, 0), "shapes"), 1);
	assert_string_equal(json_string_value(json_object_get(s, "name")), "fa-s2048");
	assert_string_equal(json_string_value(json_object_get(s, "dims")), "B=2,H=8,S=2048,D=64");
	assert_true(json_real_value(json_object_get(s, "speedup")) == 1.5);
	json_decref(doc);
	sb_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_params_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_params_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ident_and_prefix, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shapes_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shapes_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_comment_text, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_header, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_header_per_shape, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_header_refuses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
