/* Unit tests for the command table and the shared option parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "tuner/cache.h"
#include "tuner/cmd.h"
#include "tuner/common.h"

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

/* One entry per name; each has its own help, starting with its own usage line. */
static void test_table(void **state)
{
	unsigned i, j;
	char want[64];

	assert_true(cmd_count >= 8);
	for (i = 0; i < cmd_count; i++) {
		const struct cmd *c = cmd_table[i];

		assert_non_null(c->name);
		assert_non_null(c->fn);
		assert_non_null(c->usage);
		snprintf(want, sizeof(want), "usage: tuner %s ", c->name);
		if (strncmp(c->usage, want, strlen(want)))
			fail_msg("'%s' has another command's usage: %.40s", c->name, c->usage);
		assert_true(c->summary || c->name[0] == '_');
		assert_true(strchr(c->usage, '\n') != NULL);
		assert_ptr_equal(cmd_find(c->name), c);
		for (j = i + 1; j < cmd_count; j++)
			if (!strcmp(c->name, cmd_table[j]->name))
				fail_msg("two entries named '%s'", c->name);
		/* A command that writes the database does not also claim to only read it. */
		assert_false((c->flags & NEED_DB) && (c->flags & READ_DB));
	}
	assert_null(cmd_find("nope"));
}

static void test_parse_range(void **state)
{
	long long v = 0;
	unsigned long long u = 0;

	assert_int_equal(cmd_parse_range("--k", "7", 1, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(cmd_parse_range("--k", "-3", -5, 10, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(nerrors, 0);
	static const char *const bad[] = {"",
	                                  " 7",
	                                  "7 ",
	                                  "+7",
	                                  "0x7",
	                                  "7e1",
	                                  "12abc",
	                                  "-",
	                                  "11",
	                                  "0",
	                                  "9223372036854775808",
	                                  "4294967297"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		capture_start();
		v = 99;
		if (cmd_parse_range("--k", bad[i], 1, 10, &v) != -1)
			fail_msg("'%s' was taken as %lld", bad[i], v);
		assert_int_equal(v, 99);
		assert_non_null(strstr(captured, "--k"));
		assert_non_null(strstr(captured, "1 to 10"));
	}
	capture_start();
	assert_int_equal(cmd_parse_u64("--seed", "18446744073709551615", &u), 0);
	assert_true(u == 18446744073709551615ull);
	assert_int_equal(cmd_parse_u64("--seed", "18446744073709551616", &u), -1);
	assert_int_equal(cmd_parse_u64("--seed", "-1", &u), -1);
	assert_int_equal(cmd_parse_u64("--seed", " 1", &u), -1);
	assert_true(cmd_jobs_max() >= 4 && cmd_jobs_max() <= 1024);
}

/* run's and submit's budget: one parser, durations back as a user writes them. */
static void test_budget(void **state)
{
	static const struct {
		const char *in;
		double secs;
		const char *shown;
	} good[] = {{"90", 90, "90s"},     {"90s", 90, "90s"}, {"10m", 600, "10m"},
	            {"1.5h", 5400, "90m"}, {"2h", 7200, "2h"}, {"0.5", 0.5, "0.5s"},
	            {"7d", 0, NULL}};
	static const char *const bad[] = {"", "0", "-5m", "2w", "9d", "10x", "m", "1e9", "nan"};
	char shown[32];
	double t;
	long long n;

	for (size_t i = 0; good[i].shown; i++) {
		t = 0;
		assert_int_equal(cmd_parse_time(good[i].in, &t), 0);
		assert_true(t == good[i].secs);
		format_duration(shown, sizeof(shown), t);
		assert_string_equal(shown, good[i].shown);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		capture_start();
		t = -1;
		if (cmd_parse_time(bad[i], &t) != -1)
			fail_msg("--time '%s' was taken as %g s", bad[i], t);
		assert_true(t == -1);
		assert_non_null(strstr(captured, "--time"));
	}
	capture_start();
	assert_int_equal(cmd_parse_time("168h", &t), 0);
	assert_int_equal(cmd_parse_time("168.1h", &t), -1);
	capture_start();
	assert_int_equal(cmd_parse_evals("1000000000", &n), 0);
	assert_int_equal(cmd_parse_evals("1000000001", &n), -1);
	assert_int_equal(cmd_parse_evals("0", &n), -1);
	assert_non_null(strstr(captured, "--evals"));
}

static void test_cache_sizes(void **state)
{
	long long v = -1;
	char buf[32];

	assert_int_equal(cache_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cache_parse_size("1024", &v), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(cache_parse_size("512K", &v), 0);
	assert_int_equal(v, 512 << 10);
	assert_int_equal(cache_parse_size("2G", &v), 0);
	assert_true(v == 2LL << 30);
	assert_int_equal(cache_parse_size("3MiB", &v), 0);
	assert_int_equal(v, 3 << 20);
	assert_int_equal(cache_parse_size("1t", &v), 0);
	assert_true(v == 1LL << 40);
	assert_int_equal(nerrors, 0);
	assert_int_equal(cache_parse_size("lots", &v), -1);
	assert_int_equal(cache_parse_size("-1", &v), -1);
	assert_int_equal(cache_parse_size("12Q", &v), -1);
	assert_int_equal(cache_parse_size("9999999999999T", &v), -1);
	cache_format_size(buf, sizeof(buf), 512);
	assert_string_equal(buf, "512 B");
	cache_format_size(buf, sizeof(buf), 3 << 20);
	assert_string_equal(buf, "3.0 MiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parse_range, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cache_sizes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
