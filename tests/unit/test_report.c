/* Unit tests for the report stage's pure parts: the random-search expectation, base64, PNG,
 * imports. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "tuner/report.h"

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

/* ------------------------------------------- expected best of random search */

static void test_expected_best_small(void **state)
{
	/* Baseline 1, then draws from {2, rejected, 3}. */
	const double pool[] = {2, NAN, 3};
	double out[4];

	report_expected_best(1, pool, 3, out, 4);
	assert_float_equal(out[0], 1, 1e-12); /* the baseline alone */
	assert_float_equal(out[1], (2 + 1 + 3) / 3.0,
	                   1e-12); /* one draw: the rejected one keeps 1 */
	assert_float_equal(out[2], (2 + 3 + 3) / 3.0, 1e-12); /* pairs {2,-}, {2,3}, {-,3} */
	assert_float_equal(out[3], 3, 1e-12);                 /* the whole pool */
}

/* The mean over every k-subset of pool of max(base, the subset's best), by enumeration. */
static double brute_force(double base, const double *pool, unsigned n, unsigned k)
{
	double sum = 0;
	unsigned mask, count = 0, i;

	for (mask = 0; mask < 1u << n; mask++) {
		double best = base;

		if ((unsigned)__builtin_popcount(mask) != k)
			continue;
		for (i = 0; i < n; i++)
			if (mask & 1u << i && isfinite(pool[i]) && pool[i] > best)
				best = pool[i];
		sum += best;
		count++;
	}
	return sum / count;
}

static void test_expected_best_matches_enumeration(void **state)
{
	/* Ties, rejected points and points below the baseline, as on a real landscape. */
	const double pool[] = {0.6, 2.4, NAN, 1.7, 2.4, 0.9, NAN, 2.33, 1.2, 1.7, 0.5};
	const unsigned n = sizeof(pool) / sizeof(pool[0]);
	double out[sizeof(pool) / sizeof(pool[0]) + 1];
	unsigned k;

	report_expected_best(1.0, pool, n, out, n + 1);
	for (k = 0; k <= n; k++)
		assert_float_equal(out[k], brute_force(1.0, pool, n, k), 1e-12);
	/* More evaluations never lower the expected best. */
	for (k = 1; k <= n; k++)
		assert_true(out[k] >= out[k - 1]);
}

static void test_expected_best_empty_pool(void **state)
{
	double out[1];

	report_expected_best(1.5, NULL, 0, out, 1);
	assert_float_equal(out[0], 1.5, 0);
}

/* ----------------------------------------------------------------- base64 */

static void test_base64(void **state)
{
	/* RFC 4648, section 10, and bytes with the high bits set. */
	static const struct {
		const char *in, *out;
	} v[] = {
	    {"", ""},
	    {"f", "Zg=="},
	    {"fo", "Zm8="},
	    {"foo", "Zm9v"},
	    {"foob", "Zm9vYg=="},
	    {"fooba", "Zm9vYmE="},
	    {"foobar", "Zm9vYmFy"},
	    {"\xff\xfe", "//4="},
	    {"\xfb\xff\xbf", "+/+/"},
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct strbuf sb = STRBUF_INIT;

		report_base64(&sb, (const unsigned char *)v[i].in, strlen(v[i].in));
		assert_string_equal(sb.buf ? sb.buf : "", v[i].out);
		sb_release(&sb);
	}
}

/* -------------------------------------------------------------------- PNG */

static void test_png_valid(void **state)
{
	/* A 1x1 RGBA PNG: signature, IHDR, IDAT, IEND. */
	static const unsigned char png[] = {
	    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
	    0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
	    0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78,
	    0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00,
	    0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
	};
	unsigned char bad[sizeof(png)];

	assert_true(report_png_valid(png, sizeof(png)));
	/* Cut short (a gnuplot that died while writing), or not a PNG at all. */
	assert_false(report_png_valid(png, sizeof(png) - 1));
	assert_false(report_png_valid(png, 20));
	memcpy(bad, png, sizeof(png));
	bad[1] = 'J';
	assert_false(report_png_valid(bad, sizeof(bad)));
}

/* ------------------------------------------------------- library timings */

static void test_library_parse(void **state)
{
	struct report_libraries l = {NULL, 0, 0};

	assert_int_equal(
	    report_library_parse("a.json",
	                         "[{\"shape\": \"mission\", \"library\": \"sdpa-cudnn\","
	                         " \"median_us\": 9.31, \"dims\": \"B=1,H=8,S=512,D=64\","
	                         " \"device\": \"H100\", \"method\": \"graph\"},"
	                         " {\"shape\": \"long\", \"library\": \"cublas\","
	                         " \"median_us\": 40}]",
	                         &l),
	    0);
	assert_int_equal(nerrors, 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[0].shape, "mission");
	assert_string_equal(l.v[0].library, "sdpa-cudnn");
	assert_float_equal(l.v[0].median_us, 9.31, 0);
	assert_string_equal(l.v[0].dims, "B=1,H=8,S=512,D=64");
	assert_string_equal(l.v[0].device, "H100");
	assert_string_equal(l.v[0].method, "graph");
	assert_string_equal(l.v[0].source, "a.json");
	assert_null(l.v[1].dims);
	assert_null(l.v[1].method);
	assert_float_equal(l.v[1].median_us, 40, 0); /* an integer is a number too */

	/* A second file appends; an empty array adds nothing. */
	assert_int_equal(report_library_parse("b.json", "[]", &l), 0);
	assert_int_equal(
	    report_library_parse("c.json",
	                         "[{\"shape\":\"small\",\"library\":\"x\",\"median_us\":1}]", &l),
	    0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[2].source, "c.json");
	report_libraries_release(&l);
	assert_int_equal(l.n, 0);
}

static void test_library_refuses(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
	    {"{\"shape\": \"mission\"}", "bad.json: not a JSON array"},
	    {"[{\"shape\": \"mission\",", "bad.json:1:"},
	    {"[3]", "bad.json: entry 1 is not an object"},
	    {"[{\"shape\": \"m\", \"library\": \"x\", \"median\": 9}]",
	     "bad.json: entry 1: unknown key 'median'"},
	    {"[{\"library\": \"x\", \"median_us\": 9}]", "bad.json: entry 1: 'shape'"},
	    {"[{\"shape\": \"m\", \"median_us\": 9}]", "bad.json: entry 1: 'library'"},
	    {"[{\"shape\": \"m\", \"library\": \"a\\nb\", \"median_us\": 9}]",
	     "bad.json: entry 1: 'library'"},
	    {"[{\"shape\": \"m\", \"library\": \"x\", \"median_us\": 0}]",
	     "bad.json: entry 1: 'median_us' must be a positive number"},
	    {"[{\"shape\": \"m\", \"library\": \"x\", \"median_us\": \"9\"}]",
	     "bad.json: entry 1: 'median_us'"},
	    {"[{\"shape\": \"m\", \"library\": \"x\", \"median_us\": 9, \"dims\": 3}]",
	     "bad.json: entry 1: 'dims', 'device' and 'method' must be strings"},
	    {"[{\"shape\": \"m\", \"library\": \"x\", \"median_us\": 9, \"shape\": \"n\"}]",
	     "bad.json:1:"},
	};
	struct report_libraries l = {NULL, 0, 0};
	size_t i;

	assert_int_equal(
	    report_library_parse("ok.json", "[{\"shape\":\"m\",\"library\":\"x\",\"median_us\":2}]",
	                         &l),
	    0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		capture_start();
		assert_int_equal(report_library_parse("bad.json", bad[i].text, &l), -1);
		assert_int_equal(nerrors, 1);
		if (!strstr(captured, bad[i].msg))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].text, captured, bad[i].msg);
		/* The good file's entry stays; nothing of the bad one is kept. */
		assert_int_equal(l.n, 1);
	}
	/* A good entry before a bad one in the same file is dropped too. */
	assert_int_equal(
	    report_library_parse("bad.json",
	                         "[{\"shape\":\"n\",\"library\":\"y\",\"median_us\":3},"
	                         " {\"shape\":\"n\"}]",
	                         &l),
	    -1);
	assert_int_equal(l.n, 1);
	report_libraries_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_expected_best_small, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_expected_best_matches_enumeration, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_expected_best_empty_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_base64, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_png_valid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_library_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_library_refuses, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
