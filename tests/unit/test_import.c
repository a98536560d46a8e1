/* Unit tests for the importer: restrictions translated from Python, T4 files and Kernel Tuner
 * caches. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/common.h"
#include "tuner/config.h"
#include "tuner/db.h"
#include "tuner/expr.h"
#include "tuner/import-python.h"
#include "tuner/import.h"

#include "unit/capture.h"

#define FIX "tests/fixtures/import/"

/* ------------------------------------------------------------- a space */

/* Three integer params (one with negative values) and two coded ones. */
static struct import_landscape toy;

static void param(struct import_param *p, const char *name, const long long *v, size_t n)
{
	p->name = xstrdup(name);
	p->n = n;
	p->values = xcalloc(n, sizeof(*p->values));
	memcpy(p->values, v, n * sizeof(*v));
}

static void coded(struct import_param *p, const char *name, const char *const *labels,
                  const double *num, size_t n)
{
	size_t i;

	p->name = xstrdup(name);
	p->n = n;
	p->coded = 1;
	p->values = xcalloc(n, sizeof(*p->values));
	p->labels = xcalloc(n, sizeof(*p->labels));
	p->num = xcalloc(n, sizeof(*p->num));
	for (i = 0; i < n; i++) {
		p->values[i] = (long long)i;
		p->labels[i] = xstrdup(labels[i]);
		p->num[i] = num[i];
	}
}

static int setup(void **state)
{
	static const long long a[] = {16, 32, 64}, b[] = {1, 2, 3, 4}, c[] = {-2, 0, 2};
	static const char *const layouts[] = {"row", "col", "tiled"};
	static const char *const fracs[] = {"0.5", "1", "1.5"};
	static const double nan3[] = {NAN, NAN, NAN}, fnum[] = {0.5, 1, 1.5};

	memset(&toy, 0, sizeof(toy));
	param(&toy.params[0], "a", a, 3);
	param(&toy.params[1], "b", b, 4);
	param(&toy.params[2], "c", c, 3);
	coded(&toy.params[3], "layout", layouts, nan3, 3);
	coded(&toy.params[4], "frac", fracs, fnum, 3);
	toy.nparams = 5;
	capture_start();
	return 0;
}

static int teardown(void **state)
{
	import_release(&toy);
	capture_stop();
	return 0;
}

/* Python in, tuner's expression out; NULL (with why) when it cannot be translated. */
static char *tr(const char *py, char *why)
{
	return import_translate(&toy, py, why, 300);
}

/* Evaluate a translation on (a, b, c, layout code, frac code). */
static long long eval(const char *text, long long a, long long b, long long c, long long layout,
                      long long frac)
{
	struct expr_var vars[] = {{"a", a}, {"b", b}, {"c", c}, {"layout", layout}, {"frac", frac}};
	struct expr_scope scope = {vars, 5, NULL};
	struct expr_err err;
	struct expr *e = expr_parse(text, &err);
	long long v = -99;

	assert_non_null(e);
	assert_int_equal(expr_eval(e, &scope, &v, &err), 0);
	expr_free(e);
	return v;
}

static void check(const char *py, const char *want)
{
	char why[300] = "", *got = tr(py, why);

	if (!got)
		fail_msg("'%s' not translated: %s", py, why);
	assert_string_equal(got, want);
	free(got);
}

static void refuse(const char *py, const char *reason)
{
	char why[300] = "", *got = tr(py, why);

	if (got)
		fail_msg("'%s' translated to '%s', expected a refusal", py, got);
	if (!strstr(why, reason))
		fail_msg("'%s' refused with '%s', expected '%s'", py, why, reason);
}

/* --------------------------------------------------------------- tests */

static void test_translate_operators(void **state)
{
	check("a*b<=64", "((a * b) <= 64)");
	check("a == 16 or b != 1", "((a == 16) || (b != 1))");
	check("not (a > 16 and b < 3)", "(!((a > 16) && (b < 3)))");
	check("a // 16 % 2 == 0", "(((a / 16) % 2) == 0)");
	check("b ** 2 <= a", "((b * b) <= a)");
	check("a if b > 2 else 0", "((b > 2) ? a : 0)");
	check("True", "1");
	check("max(a, b, 7) > min([a, 32])", "(max(max(a, b), 7) > min(a, 32))");
	check("abs(b - 3) <= 1", "(((b - 3) < 0 ? -(b - 3) : (b - 3)) <= 1)");
	check("1.0 * a >= 32.0", "((1 * a) >= 32)");
}

/* Chains split into links; in and not in become equalities; fractions bound integers. */
static void test_translate_semantics(void **state)
{
	char why[300], *t;

	t = tr("16 < a * b <= 64", why);
	assert_non_null(t);
	assert_int_equal(eval(t, 16, 2, 0, 0, 0), 1);
	assert_int_equal(eval(t, 16, 1, 0, 0, 0), 0);
	assert_int_equal(eval(t, 64, 2, 0, 0, 0), 0);
	free(t);
	t = tr("b in (1, 3) and a not in [16]", why);
	assert_non_null(t);
	assert_int_equal(eval(t, 32, 3, 0, 0, 0), 1);
	assert_int_equal(eval(t, 16, 3, 0, 0, 0), 0);
	assert_int_equal(eval(t, 32, 2, 0, 0, 0), 0);
	free(t);
	/* b < 2.5 holds for b = 1, 2 and not for 3: the integer comparison b < 3 */
	t = tr("b < 2.5", why);
	assert_non_null(t);
	assert_int_equal(eval(t, 16, 2, 0, 0, 0), 1);
	assert_int_equal(eval(t, 16, 3, 0, 0, 0), 0);
	free(t);
	check("b == 2.5", "0");
}

/* A param whose values are not integers is compared by its labels; its codes are what is stored. */
static void test_translate_coded(void **state)
{
	check("layout == 'col'", "(layout == 1)");
	check("'row' != layout", "(layout == 1 || layout == 2)");
	check("frac <= 1.0", "(frac == 0 || frac == 1)");
	check("frac > 2", "0");
	check("layout in ['row', 'tiled']", "((layout == 0) || (layout == 2))");
	check("0.75 < frac <= 1.5", "(frac == 1 || frac == 2)");
	check("layout == layout", "(layout == layout)");
}

static void test_translate_refusals(void **state)
{
	refuse("a / b", "used as a number");
	refuse("2 / c > 0", "'c', which can be negative");
	refuse("a & 1 == 0", "bitwise");
	refuse("~a", "bitwise");
	refuse("d > 1", "unknown name 'd'");
	refuse("len(a) > 1", "function 'len'");
	refuse("frac * 2 > 1", "takes values that are not integers");
	refuse("layout > frac", "can only be compared with constants");
	refuse("layout < 1", "compares 'layout' (a string) with a number");
	refuse("c // 2 == 0", "Python floors where tuner truncates");
	refuse("a ** b > 1", "constant exponent");
	refuse("a[0] > 1", "subscripts");
	refuse("a is None", "not supported");
	refuse("a > ", "unexpected end");
	refuse("(a > 1", "expected ')'");
	/* 2**63 is no long long: it was converted all the same (UBSan, found by fuzz-import) */
	refuse("a not in [2**i for i in range(70)]", "too large for tuner's integers");
	refuse("a < 1e16", "too large for tuner's integers");
	/* an operand of // or % or a divisor that is negative through a constant, a sign or a
	 * difference, not a param: 'b // -15' was C's b / -15 (found by fuzz-import) */
	refuse("b // -15 == -1", "an operand that can be negative (down to -15)");
	refuse("-a // 5 == -4", "can be negative");
	refuse("a % -5 == -4", "can be negative");
	refuse("a / -3 < -5", "can be negative");
	refuse("(a - 32) // 5 < 0", "can be negative (down to -16)");
	/* where none can be, the translation stands: a numerator may be negative */
	check("c / 2 > 0", "(c > 0)");
	check("(a - 16) // 5 < 2", "(((a - 16) / 5) < 2)");
	/* Python's 'and' and 'or' give an operand: && and || only where the value is tested
	 * ('(a and b) * 2 == 4' was ((a && b) * 2) == 4: fuzz-import's check against Python) */
	refuse("(a and b) * 2 == 4", "'and' gives one of its operands");
	refuse("(b or a) > 3", "'or' gives one of its operands");
	check("a and b", "(a && b)");
	check("(b if a and b else c) > 0", "(((a && b) ? b : c) > 0)");
	check("(a > 16 and b < 3) + 1 == 2", "((((a > 16) && (b < 3)) + 1) == 2)");
	/* a decimal is its own digits: 1e-8 was 0 / 10, as within 1e-6 of it (fuzz-import's check
	 * against Python, on a hand-written input) */
	check("a * 1e-8 > 0", "((a * 1) > 0)");
	check("b * 0.3 > 0.9", "(((b * 3) * 10) > (9 * 10))");
	refuse("a * 1e-10 > 0", "the fraction 1e-10 is not a short decimal");
}

/* What Python computes for the i-th expression of test_translate_truediv. */
static int python_truth(int i, double a, double b)
{
	switch (i) {
	case 0:
		return a / b > 10.5;
	case 1:
		return fmod(a, b / 2) == 0;
	case 2:
		return (a + b) / (b * 2) <= 5;
	case 3:
		return floor(a / (b / 2)) >= 20;
	case 4:
		return 1.5 * b <= 4;
	case 5:
		return fmax(a / 4, b) == 4;
	case 6:
		return trunc(a / 3) == 5;
	case 7:
		return (b > 2 ? a / b : a) < 20;
	case 8:
		return (a / b) * (a / b) > 200;
	default:
		return a - b / 4 >= 15.5 && 0.25 * a != b;
	}
}

/* True division and fractions: exact, as fractions multiplied out, on every point of the space. */
static void test_translate_truediv(void **state)
{
	static const char *const py[] = {
	    "a / b > 10.5",           "a % (b / 2) == 0",
	    "(a + b) / (b * 2) <= 5", "a // (b / 2) >= 20",
	    "1.5 * b <= 4",           "max(a / 4, b) == 4",
	    "int(a / 3) == 5",        "(a / b if b > 2 else a) < 20",
	    "(a / b) ** 2 > 200",     "a - b / 4 >= 15.5 and 0.25 * a != b"};
	static const long long as[] = {16, 32, 64};
	char why[300], *t;
	size_t i, j, k, held;

	/* the gemm benchmark's own restriction: a whole number of b / a-sized steps in a */
	check("a % ((b * 32) / a) == 0", "(((a * a) % (b * 32)) == 0)");
	check("b in range(1, 3)", "((b == 1) || (b == 2))");
	check("a not in [2**i for i in range(5)]", "!((a == 1) || (a == 2) || (a == 4) || "
	                                           "(a == 8) || (a == 16))");
	for (i = 0; i < ARRAY_SIZE(py); i++) {
		t = tr(py[i], why);
		if (!t)
			fail_msg("'%s' not translated: %s", py[i], why);
		for (held = 0, j = 0; j < ARRAY_SIZE(as); j++)
			for (k = 1; k <= 4; k++) {
				int want = python_truth((int)i, (double)as[j], (double)k);

				if (eval(t, as[j], (long long)k, 0, 0, 0) != want)
					fail_msg("'%s' as '%s' at a=%lld b=%zu: %d, Python %d",
					         py[i], t, as[j], k, !want, want);
				held += (size_t)want;
			}
		/* each expression holds somewhere and fails somewhere: the test can tell */
		if (held == 0 || held == 12)
			fail_msg("'%s' is %s everywhere", py[i], held ? "true" : "false");
		free(t);
	}
}

/* T1's values written as Python: ranges, comprehensions, lists joined. */
static void values(const char *py, size_t n, double first, double last)
{
	struct import_values v;
	char why[200] = "";

	if (import_python_values(py, &v, why, sizeof(why)) < 0)
		fail_msg("'%s': %s", py, why);
	if (v.n != n || v.v[0].num != first || v.v[n - 1].num != last)
		fail_msg("'%s': %zu values %g..%g, expected %zu %g..%g", py, v.n, v.v[0].num,
		         v.v[v.n - 1].num, n, first, last);
	import_values_free(&v);
}

static void no_values(const char *py, const char *reason)
{
	struct import_values v;
	char why[200] = "";

	if (import_python_values(py, &v, why, sizeof(why)) == 0)
		fail_msg("'%s' gave %zu values, expected a refusal", py, v.n);
	if (!strstr(why, reason))
		fail_msg("'%s' refused with '%s', expected '%s'", py, why, reason);
	import_values_free(&v);
}

static void test_python_values(void **state)
{
	struct import_values v;
	char why[200];

	values("[1, 2, 4, 8, 16] + list(range(32, 1024+1, 32))", 37, 1, 1024);
	values("[2**i for i in range(0, 6)]", 6, 1, 32);
	values("[i for i in range(1, 11)]", 10, 1, 10);
	values("[i for i in range(1, 11) if i % 3 == 0]", 3, 3, 9);
	values("range(5)", 5, 0, 4);
	values("range(10, 0, -3)", 4, 10, 1);
	values("(4, 2.5, -1)", 3, 4, -1);
	values("tuple(x / 2 for x in [1, 3])", 2, 0.5, 1.5);
	values("[i * j for i in range(1, 3) for j in [1, 10]]", 4, 1, 20);
	values("[min(i, 3) * 2 if i > 0 else -1 for i in range(3)]", 3, -1, 4);
	values("[7 // 2, -7 // 2, -7 % 3, 2 ** -1]", 4, 3, 0.5);
	assert_int_equal(import_python_values("['row', \"col\"] + ['x']", &v, why, sizeof(why)), 0);
	assert_int_equal(v.n, 3);
	assert_true(v.v[1].is_str);
	assert_string_equal(v.v[1].s, "col");
	import_values_free(&v);
	no_values("np.arange(4)", "attributes");
	no_values("[x for x in y]", "unknown name 'y'");
	no_values("range(0, 10, 0)", "step of 0");
	no_values("range(0.5)", "not an int");
	no_values("[[1], [2]]", "a list where a single value belongs");
	no_values("7", "not a list");
	no_values("[1 / 0]", "division by zero");
	/* a failure part way through a list: what was gathered is freed (ASan's leak check) */
	no_values("[min([1, 2, 1 / 0])]", "division by zero");
	no_values("[x for x in [1, 2 // 0]]", "division by zero");
	no_values("[max(1, 2 % 0)]", "division by zero");
}

/* Input that would take the translator past the stack, or its memory or time, is an error
 * (found by hand with the fuzz-import harness: 20000 '-' overflowed the stack under ASan, 8000 '('
 * too). */
static void test_translate_limits(void **state)
{
	static char src[40000];
	size_t i;

	memset(src, '-', 20000);
	strcpy(src + 20000, "a > 0");
	refuse(src, "nested more than 200 deep");
	memset(src, '(', 8000);
	strcpy(src + 8000, "a");
	memset(src + 8001, ')', 8000);
	src[16001] = '\0';
	refuse(src, "nested more than 200 deep");
	for (i = 0; i < 3000; i++)
		memcpy(src + 2 * i, "a+", 2);
	strcpy(src + 6000, "a > 0");
	refuse(src, "more than 1000 operations deep");
	no_values(src, "more than 1000 operations deep");
	/* work that grows as a power of the input: a comprehension that lists nothing took
	 * 10**10 steps; a translation repeats what '**' and abs() take, and 16 abs() ran out of
	 * memory (found by hand with the fuzz-import harness) */
	no_values("[i for i in range(100000) for j in range(100000) if 0]",
	          "more than 10000000 steps");
	refuse("((((((a ** 8) ** 8) ** 8) ** 8) ** 8) ** 8) > 0", "longer than 65536 bytes");
	refuse("abs(abs(abs(abs(abs(abs(abs(abs(abs(abs(abs(abs(b)))))))))))) > 0",
	       "longer than 65536 bytes");
	refuse("a in range(1000000)", "longer than 65536 bytes");
	/* what real files write is far within them */
	memset(src, '(', 150);
	strcpy(src + 150, "a");
	memset(src + 151, ')', 150);
	strcpy(src + 301, " > 0");
	check(src, "(a > 0)");
}

/* --------------------------------------------------------- whole files */

/* Write text to path: the files the tests read. */
static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_read_t4(void **state)
{
	struct import_landscape ls;
	long long counts[OUTCOME_COUNT] = {0};
	size_t i;

	assert_int_equal(import_read(FIX "toy_gpu_T4.json", FIX "toy_T1.json", NULL, NULL, &ls), 0);
	assert_string_equal(ls.name, "toy_kernel");
	assert_string_equal(ls.device, "toy_gpu"); /* from the file name */
	assert_string_equal(ls.objective, "time");
	assert_false(ls.maximize);
	assert_int_equal(ls.nparams, 4);
	assert_false(ls.params[0].coded);
	assert_true(ls.params[2].coded); /* layout: strings */
	assert_string_equal(ls.params[2].labels[1], "col");
	assert_true(ls.params[3].coded); /* frac: floats */
	assert_true(ls.params[3].num[2] == 1.5);
	assert_int_equal(ls.nrestrictions, 3);
	assert_string_equal(ls.translated[1], "((layout == 0) || (tile > 1))");
	for (i = 0; i < ls.nentries; i++)
		counts[ls.entries[i].outcome]++;
	assert_int_equal(ls.nentries, 54);
	assert_int_equal(counts[VARIANT_OK], 41);
	assert_int_equal(counts[REJECT_CONSTRAINT], 10);
	assert_int_equal(counts[REJECT_COMPILE], 1);
	assert_int_equal(counts[REJECT_RUNTIME_FAULT], 1);
	assert_int_equal(counts[REJECT_WRONG], 1);
	for (i = 0; i < ls.nentries; i++)
		if (ls.entries[i].outcome == VARIANT_OK) {
			/* milliseconds in the file, microseconds here; the samples too */
			assert_true(ls.entries[i].cost >= 1000);
			assert_int_equal(ls.entries[i].nsamples, 4);
		}
	assert_int_equal(import_set_baseline(&ls, NULL), 0);
	assert_string_equal(ls.baseline_why, "the declared default");
	assert_int_equal(ls.baseline[0], 32);
	assert_int_equal(ls.baseline[3], 1); /* frac = 1.0: code 1 */
	assert_int_equal(import_set_baseline(&ls, "bs=64,tile=2,layout=col,frac=1.5"), 0);
	assert_int_equal(ls.baseline[0], 64);
	assert_int_equal(ls.baseline[2], 1);
	assert_int_equal(ls.baseline[3], 2);
	capture_start();
	assert_int_equal(import_set_baseline(&ls, "bs=128,tile=4"), -1); /* breaks a restriction */
	assert_non_null(strstr(captured, "was not timed"));
	assert_int_equal(import_set_baseline(&ls, "median"), 0);
	import_release(&ls);
}

/*
 * The forms of the benchmark hub's own T1 files: values as Python (a range
 * joined to a list, a comprehension), a default written as a list of one, a
 * default that is not among the values, and restrictions with true division
 * and fractions (checked against every recorded verdict as any restriction).
 */
static char warned[1024]; /* the warnings since set_error_routine(keep_warning) */

static void keep_warning(const char *prefix, const char *msg)
{
	if (!strcmp(prefix, "warning: "))
		snprintf(warned + strlen(warned), sizeof(warned) - strlen(warned), "%s\n", msg);
}

static void test_read_hub(void **state)
{
	struct import_landscape ls;
	long long counts[OUTCOME_COUNT] = {0};
	size_t i;

	warned[0] = '\0';
	set_error_routine(keep_warning);
	assert_int_equal(import_read(FIX "hub_gpu_T4.json", FIX "hub_T1.json", NULL, NULL, &ls), 0);
	capture_start();
	if (!strstr(warned, "hub_T1.json: the default of 'm' (1) is not one of its values"))
		fail_msg("warned: %s", warned);
	assert_int_equal(ls.nparams, 4);
	assert_int_equal(ls.params[0].n, 4);
	assert_int_equal(ls.params[0].values[2], 64);
	assert_int_equal(ls.params[0].values[3], 128);
	assert_int_equal(ls.params[1].n, 3);
	assert_int_equal(ls.params[1].values[2], 4);
	assert_true(ls.params[2].has_default); /* [0] */
	assert_int_equal(ls.params[2].deflt, 0);
	assert_true(ls.params[0].has_default);
	assert_false(ls.params[3].has_default);
	assert_string_equal(ls.translated[0], "(((bx * 3) % (ty * 48)) == 0)");
	for (i = 0; i < ls.nentries; i++)
		counts[ls.entries[i].outcome]++;
	assert_int_equal(counts[VARIANT_OK], 9);
	assert_int_equal(counts[REJECT_CONSTRAINT], 3);
	/* no default for every param: the median configuration, as for a cache without T1 */
	assert_int_equal(import_set_baseline(&ls, NULL), 0);
	assert_string_equal(ls.baseline_why, "the configuration of median cost");
	import_release(&ls);
}

static void test_read_cache(void **state)
{
	struct import_landscape ls;
	long long counts[OUTCOME_COUNT] = {0};
	size_t i;

	assert_int_equal(import_read(FIX "toy_cache.json", FIX "toy_T1.json", NULL, NULL, &ls), 0);
	assert_string_equal(ls.device, "Toy GPU");
	assert_true(strstr(ls.format, "Kernel Tuner cache") != NULL);
	for (i = 0; i < ls.nentries; i++)
		counts[ls.entries[i].outcome]++;
	assert_int_equal(counts[REJECT_CONSTRAINT], 10); /* InvalidConfig */
	assert_int_equal(counts[REJECT_COMPILE], 1);     /* CompilationFailedConfig */
	assert_int_equal(counts[REJECT_RUNTIME_FAULT], 1);
	import_release(&ls);
	/* no T1: the cache's own params, no restrictions, no defaults (the median is the baseline)
	 */
	assert_int_equal(import_read(FIX "toy_cache.json", NULL, NULL, NULL, &ls), 0);
	assert_int_equal(ls.nparams, 4);
	assert_int_equal(ls.nrestrictions, 0);
	assert_int_equal(import_set_baseline(&ls, NULL), 0);
	assert_string_equal(ls.baseline_why, "the configuration of median cost");
	import_release(&ls);
}

/* An older cache, with no objective named and a failure cached as a time of 1e20. */
static void test_read_old_cache(void **state)
{
	struct import_landscape ls;
	char path[] = "/tmp/tuner-old-cache-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	put(path, "{\"device_name\": \"Old GPU\", \"kernel_name\": \"old\", "
	          "\"tune_params_keys\": [\"bs\"], \"tune_params\": {\"bs\": [32, 64, 128]}, "
	          "\"cache\": {\"32\": {\"bs\": 32, \"time\": 1.5}, \"64\": {\"bs\": 64, "
	          "\"time\": 1e20}, \"128\": {\"bs\": 128, \"time\": 0.75}}}");
	assert_int_equal(import_read(path, NULL, NULL, NULL, &ls), 0);
	assert_int_equal(ls.nentries, 3);
	assert_int_equal(ls.entries[0].outcome, VARIANT_OK);
	assert_int_equal(ls.entries[1].outcome, REJECT_RUNTIME_FAULT);
	assert_int_equal(ls.entries[2].outcome, VARIANT_OK);
	assert_true(ls.entries[2].cost == 750); /* ms in the file, µs here */
	import_release(&ls);
	unlink(path);
}

/*
 * A name that does not say its direction is read as a cost; --direction turns
 * it, and back, without losing a value; a time cannot be better higher.
 */
static void test_direction(void **state)
{
	static const char *const kt =
	    "{\"device_name\": \"GPU\", \"kernel_name\": \"dir\", \"objective\": \"score\", "
	    "\"tune_params_keys\": [\"bs\"], \"tune_params\": {\"bs\": [32, 64, 128]}, "
	    "\"cache\": {\"32\": {\"bs\": 32, \"score\": 2}, \"64\": {\"bs\": 64, \"score\": 8}, "
	    "\"128\": {\"bs\": 128, \"score\": 4}}}";
	struct import_landscape ls;
	char path[] = "/tmp/tuner-direction-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	put(path, kt);
	assert_int_equal(import_read(path, NULL, NULL, NULL, &ls), 0);
	assert_false(ls.maximize);
	assert_true(ls.entries[1].cost == 8);
	assert_int_equal(import_set_direction(&ls, "higher"), 0);
	assert_true(ls.maximize);
	assert_string_equal(ls.unit, "1e6/value");
	/* the highest score is now the lowest cost */
	assert_true(ls.entries[1].cost < ls.entries[2].cost);
	assert_true(ls.entries[2].cost < ls.entries[0].cost);
	assert_int_equal(import_set_direction(&ls, "lower"), 0);
	assert_true(ls.entries[0].cost == 2 && ls.entries[1].cost == 8 && ls.entries[2].cost == 4);
	assert_string_equal(ls.unit, "value");
	capture_start();
	assert_int_equal(import_set_direction(&ls, "up"), -1);
	assert_non_null(strstr(captured, "'higher' or 'lower', not 'up'"));
	import_release(&ls);
	/* a time stays a cost */
	put(path, "{\"device_name\": \"GPU\", \"kernel_name\": \"dir\", "
	          "\"tune_params_keys\": [\"bs\"], \"tune_params\": {\"bs\": [32]}, "
	          "\"cache\": {\"32\": {\"bs\": 32, \"time\": 1.5}}}");
	assert_int_equal(import_read(path, NULL, NULL, NULL, &ls), 0);
	assert_int_equal(import_set_direction(&ls, "lower"), 0);
	capture_start();
	assert_int_equal(import_set_direction(&ls, "higher"), -1);
	assert_non_null(strstr(captured, "a time is better lower"));
	assert_true(ls.entries[0].cost == 1500);
	import_release(&ls);
	unlink(path);
}

/*
 * A result recorded as correct without a positive time (zero, negative, null,
 * or no measurement at all) is kept as unmeasured, with one warning that
 * counts them, in a T4 file as in a cache; the file is not refused.
 */
static void test_read_untimed(void **state)
{
	static const char *const t4 =
	    "{\"metadata\": {\"timeunit\": \"ms\"}, \"results\": ["
	    "{\"configuration\": {\"bs\": 32}, \"invalidity\": \"correct\", "
	    "\"measurements\": [{\"name\": \"time\", \"value\": 1.5, \"unit\": \"ms\"}], "
	    "\"objectives\": [\"time\"]},"
	    "{\"configuration\": {\"bs\": 64}, \"invalidity\": \"correct\", "
	    "\"measurements\": [{\"name\": \"time\", \"value\": 0, \"unit\": \"ms\"}], "
	    "\"objectives\": [\"time\"]},"
	    "{\"configuration\": {\"bs\": 128}, \"invalidity\": \"correct\", "
	    "\"measurements\": [], \"objectives\": [\"time\"]},"
	    "{\"configuration\": {\"bs\": 256}, \"invalidity\": \"correct\", "
	    "\"measurements\": [{\"name\": \"time\", \"value\": null, \"unit\": \"ms\"}], "
	    "\"objectives\": [\"time\"]}]}";
	static const char *const kt =
	    "{\"device_name\": \"Old GPU\", \"kernel_name\": \"old\", "
	    "\"tune_params_keys\": [\"bs\"], \"tune_params\": {\"bs\": [32, 64, 128, 256]}, "
	    "\"cache\": {\"32\": {\"bs\": 32, \"time\": 1.5}, \"64\": {\"bs\": 64, \"time\": -1}, "
	    "\"128\": {\"bs\": 128}, \"256\": {\"bs\": 256, \"time\": 0.5}}}";
	static const char *const t1 =
	    "{\"General\": {\"BenchmarkName\": \"untimed\"}, \"ConfigurationSpace\": {"
	    "\"TuningParameters\": [{\"Name\": \"bs\", \"Values\": \"[32, 64, 128, 256]\"}]}}";
	const char *const files[] = {t4, kt};
	const int want_ok[] = {1, 2}, want_untimed[] = {3, 2};
	char dir[] = "/tmp/tuner-untimed-XXXXXX", res[256], spc[256];
	struct import_landscape ls;
	size_t k, i, n, u;

	assert_non_null(mkdtemp(dir));
	snprintf(spc, sizeof(spc), "%s/untimed_T1.json", dir);
	put(spc, t1);
	for (k = 0; k < 2; k++) {
		snprintf(res, sizeof(res), "%s/untimed_gpu_%s.json", dir, k ? "cache" : "T4");
		put(res, files[k]);
		warned[0] = '\0';
		set_error_routine(keep_warning);
		assert_int_equal(import_read(res, k ? NULL : spc, "gpu", NULL, &ls), 0);
		capture_start();
		if (!strstr(warned, "recorded as correct have no positive time"))
			fail_msg("warned: %s", warned);
		for (i = n = u = 0; i < ls.nentries; i++) {
			n += ls.entries[i].outcome == VARIANT_OK;
			if (ls.entries[i].outcome == REJECT_UNMEASURED) {
				u++;
				assert_non_null(
				    strstr(ls.entries[i].reason, "without a positive time"));
			}
		}
		assert_int_equal(n, want_ok[k]);
		assert_int_equal(u, want_untimed[k]);
		assert_int_equal(ls.entries[0].outcome, VARIANT_OK);
		assert_true(ls.entries[0].cost == 1500);
		assert_int_equal(ls.entries[1].outcome, REJECT_UNMEASURED);
		import_release(&ls);
		unlink(res);
	}
	/* nothing timed at all: refused */
	snprintf(res, sizeof(res), "%s/untimed_gpu_T4.json", dir);
	put(res, "{\"metadata\": {\"timeunit\": \"ms\"}, \"results\": ["
	         "{\"configuration\": {\"bs\": 64}, \"invalidity\": \"correct\", "
	         "\"measurements\": [], \"objectives\": [\"time\"]}]}");
	capture_start();
	assert_int_equal(import_read(res, spc, "gpu", NULL, &ls), -1);
	assert_non_null(strstr(captured, "no configuration was timed"));
	import_release(&ls);
	unlink(res);
	unlink(spc);
	rmdir(dir);
}

/*
 * Large spaces import in time: a T1 may list 10**6 values of a param, which were compared in
 * pairs (300000 took minutes), and a cache of 20 params of 10 values declares 10**20 points,
 * whose count wrapped and was walked without end (found by hand with the fuzz-import harness).
 */
static void test_read_large(void **state)
{
	static const char *const one =
	    "{\"kernel_name\": \"big\", \"tune_params_keys\": [\"a\"], "
	    "\"tune_params\": {\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}}}";
	char dir[] = "/tmp/tuner-large-XXXXXX", res[256], spc[256];
	struct import_landscape ls;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	assert_non_null(mkdtemp(dir));
	snprintf(res, sizeof(res), "%s/big_cache.json", dir);
	snprintf(spc, sizeof(spc), "%s/big_T1.json", dir);
	put(res, one);
	put(spc, "{\"ConfigurationSpace\": {\"TuningParameters\": ["
	         "{\"Name\": \"a\", \"Values\": \"range(300000)\"}]}}");
	warned[0] = '\0';
	set_error_routine(keep_warning);
	assert_int_equal(import_read(res, spc, "gpu", NULL, &ls), 0);
	capture_start();
	assert_int_equal(ls.params[0].n, 300000);
	assert_non_null(strstr(warned, "299999 of the 300000 configurations"));
	import_release(&ls);
	/* a value listed twice is still found */
	put(spc, "{\"ConfigurationSpace\": {\"TuningParameters\": ["
	         "{\"Name\": \"a\", \"Values\": \"list(range(300000)) + [1.0]\"}]}}");
	assert_int_equal(import_read(res, spc, "gpu", NULL, &ls), -1);
	assert_non_null(strstr(captured, "param 'a' lists a value twice"));
	import_release(&ls);
	/* 10**20 points: not counted, and said */
	sb_adds(&sb, "{\"kernel_name\": \"big\", \"tune_params_keys\": [");
	for (i = 0; i < 20; i++)
		sb_addf(&sb, "%s\"p%zu\"", i ? ", " : "", i);
	sb_adds(&sb, "], \"tune_params\": {");
	for (i = 0; i < 20; i++)
		sb_addf(&sb, "%s\"p%zu\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", i ? ", " : "", i);
	sb_adds(&sb, "}, \"cache\": {\"x\": {");
	for (i = 0; i < 20; i++)
		sb_addf(&sb, "\"p%zu\": 1, ", i);
	sb_adds(&sb, "\"time\": 1.0}}}");
	put(res, sb.buf);
	sb_release(&sb);
	warned[0] = '\0';
	set_error_routine(keep_warning);
	assert_int_equal(import_read(res, NULL, "gpu", NULL, &ls), 0);
	capture_start();
	assert_non_null(strstr(warned, "the space has more than 10000000 configurations"));
	import_release(&ls);
	unlink(res);
	unlink(spc);
	rmdir(dir);
}

/*
 * A T1 may declare 10**6 values of a param (the most it may): every result's
 * value is found by bisection of the sorted domain, not by a walk through it
 * (50,000 results at the end of the domain took a minute so, a second now:
 * the alarm is the failure). Coded values (floats) the same way. An error
 * lists the first values of the domain only. A space too big to count the
 * points without a result still has its results recorded as breaking the
 * restrictions checked against them.
 */
static void test_read_wide(void **state)
{
	char dir[] = "/tmp/tuner-wide-XXXXXX", res[256], spc[256];
	struct import_landscape ls;
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	alarm(30);
	assert_non_null(mkdtemp(dir));
	snprintf(res, sizeof(res), "%s/wide_cache.json", dir);
	snprintf(spc, sizeof(spc), "%s/wide_T1.json", dir);
	put(spc,
	    "{\"General\": {\"BenchmarkName\": \"wide\"}, \"ConfigurationSpace\": {"
	    "\"TuningParameters\": [{\"Name\": \"n\", \"Values\": \"list(range(1, 1000001))\"},"
	    "{\"Name\": \"bs\", \"Values\": \"[32, 64]\"},"
	    "{\"Name\": \"f\", \"Values\": \"[i / 4 for i in range(1, 100001)]\"}],"
	    "\"Conditions\": [\"n % bs == 0 or bs == 32\"]}}");
	sb_adds(&sb, "{\"tune_params_keys\": [\"n\", \"bs\", \"f\"], \"tune_params\": "
	             "{\"n\": [1], \"bs\": [32], \"f\": [1]}, \"cache\": {");
	for (i = 0; i < 50000; i++)
		sb_addf(&sb, "%s\"%zu\": {\"n\": %zu, \"bs\": 32, \"f\": %.2f, \"time\": %zu.5}",
		        i ? ", " : "", i, 1000000 - i, (double)(100000 - i % 1000) / 4, 1 + i % 7);
	/* recorded as breaking the restrictions, which admit it: said however big the space */
	sb_adds(&sb, ", \"x\": {\"n\": 5, \"bs\": 32, \"f\": 0.25, \"time\": \"InvalidConfig\"}}}");
	put(res, sb.buf);
	warned[0] = '\0';
	set_error_routine(keep_warning);
	assert_int_equal(import_read(res, spc, "gpu", NULL, &ls), 0);
	capture_start();
	if (!strstr(warned, "the space has more than 10000000 configurations") ||
	    !strstr(warned, "1 results are recorded as breaking the restrictions"))
		fail_msg("warned: %s", warned);
	assert_int_equal(ls.params[0].n, 1000000);
	assert_true(ls.params[2].coded);
	assert_int_equal(ls.nentries, 50001);
	for (i = 0; i < 50000; i++) {
		assert_int_equal(ls.entries[i].v[0], 1000000 - (long long)i);
		assert_int_equal(ls.entries[i].v[1], 32);
		/* f = k / 4 is code k - 1 */
		assert_int_equal(ls.entries[i].v[2], 100000 - (long long)(i % 1000) - 1);
	}
	import_release(&ls);
	/* a value outside: the first 32 values of the domain, and how many */
	sb_reset(&sb);
	sb_adds(&sb, "{\"tune_params_keys\": [\"n\", \"bs\", \"f\"], \"tune_params\": "
	             "{\"n\": [1], \"bs\": [32], \"f\": [1]}, \"cache\": {"
	             "\"x\": {\"n\": 1000001, \"bs\": 32, \"f\": 0.25, \"time\": 1.0}}}");
	put(res, sb.buf);
	capture_start();
	assert_int_equal(import_read(res, spc, "gpu", NULL, &ls), -1);
	if (!strstr(captured, "n = 1000001 is not in its declared domain [1, 2, 3,") ||
	    !strstr(captured, "31, 32, ... (1000000 values)]"))
		fail_msg("%s", captured);
	import_release(&ls);
	sb_release(&sb);
	unlink(res);
	unlink(spc);
	rmdir(dir);
	alarm(0);
}

/* What the file and the translation disagree on, and what cannot be read, is an error. */
static void test_read_errors(void **state)
{
	struct import_landscape ls;
	char dir[] = "/tmp/tuner-import-XXXXXX", path[256];

	assert_int_equal(import_read(FIX "toy_gpu_T4.json", NULL, NULL, NULL, &ls), -1);
	assert_non_null(strstr(captured, "needs its T1"));
	import_release(&ls);
	assert_non_null(mkdtemp(dir));
	/* a restriction that the measured results break */
	snprintf(path, sizeof(path), "%s/bad_T1.json", dir);
	put(path, "{\"General\": {\"BenchmarkName\": \"toy_kernel\"}, \"ConfigurationSpace\": {"
	          "\"TuningParameters\": [{\"Name\": \"bs\", \"Values\": \"[16, 32, 64, 128]\"},"
	          "{\"Name\": \"tile\", \"Values\": \"[1, 2, 4]\"},"
	          "{\"Name\": \"layout\", \"Values\": \"['row', 'col']\"},"
	          "{\"Name\": \"frac\", \"Values\": [0.5, 1.0, 1.5]}],"
	          "\"Conditions\": [{\"Expression\": \"bs < 64\"}]}}");
	capture_start();
	assert_int_equal(import_read(FIX "toy_gpu_T4.json", path, "g", NULL, &ls), -1);
	if (!strstr(captured, "the translation disagrees with the file"))
		fail_msg("%s", captured);
	import_release(&ls);
	/* a restriction that cannot be translated: the file and the restriction are named */
	put(path, "{\"General\": {\"BenchmarkName\": \"toy_kernel\"}, \"ConfigurationSpace\": {"
	          "\"TuningParameters\": [{\"Name\": \"bs\", \"Values\": \"[16, 32, 64, 128]\"}],"
	          "\"Conditions\": [{\"Expression\": \"bs & 3 > 1\"}]}}");
	capture_start();
	assert_int_equal(import_read(FIX "toy_gpu_T4.json", path, "g", NULL, &ls), -1);
	assert_non_null(
	    strstr(captured, "bad_T1.json: cannot translate restriction 1 'bs & 3 > 1'"));
	import_release(&ls);
	unlink(path);
	rmdir(dir);
}

/* Written: a config that loads, and a recording that keeps every verdict. */
static void test_write(void **state)
{
	struct import_landscape ls;
	char dir[] = "/tmp/tuner-import-XXXXXX", conf[256], db[256];
	struct config cfg;
	struct db *h;
	struct db_recorded_key key;
	struct db_measured m;
	struct db_gate_found g;
	long long run;
	char device[64];

	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/toy.yaml", dir);
	snprintf(db, sizeof(db), "%s/toy.db", dir);
	assert_int_equal(import_read(FIX "toy_gpu_T4.json", FIX "toy_T1.json", "Toy", NULL, &ls),
	                 0);
	assert_int_equal(import_set_baseline(&ls, NULL), 0);
	assert_int_equal(import_write(&ls, conf, db, "tuner import"), 0);
	assert_int_equal(config_load(conf, &cfg), 0);
	assert_string_equal(cfg.arch.name, "none");
	assert_int_equal(cfg.fam.nparams, 4);
	assert_int_equal(cfg.fam.nconstraints, 3);
	assert_null(cfg.fam.source);
	/* the codes' labels: what the recording and every run store and show */
	assert_null(cfg.fam.params[0].labels);
	assert_non_null(cfg.fam.params[2].labels);
	assert_string_equal(cfg.fam.params[2].labels[1], "col");
	assert_string_equal(cfg.fam.params[3].labels[2], "1.5");
	assert_int_equal(db_open_readonly(db, &h), 0);
	assert_int_equal(db_recording_find(h, cfg.fam.source_hash, "none",
	                                   "[{\"name\":\"recorded\"}]", &run, device,
	                                   sizeof(device)),
	                 1);
	assert_string_equal(device, "Toy");
	key.template_hash = cfg.fam.source_hash;
	key.arch = "none";
	key.params = "bs=32,tile=1,layout=row,frac=1.0";
	assert_int_equal(db_measure_lookup_params(h, &key, "Toy", "", &m), 1);
	assert_int_equal(m.outcome, VARIANT_OK);
	assert_true(fabs(m.median_us - 2000) < 1e-6); /* 2 ms */
	assert_true(m.ci_lo_us <= m.median_us && m.median_us <= m.ci_hi_us);
	db_measured_release(&m);
	key.params = "bs=128,tile=2,layout=row,frac=1.0";
	assert_int_equal(db_gate_rejection_params(h, &key, &g), 1);
	assert_string_equal(g.gate, "compile");
	assert_int_equal(g.outcome, REJECT_COMPILE);
	db_gate_found_release(&g);
	key.params = "bs=16,tile=4,layout=col,frac=1.5";
	assert_int_equal(db_gate_rejection_params(h, &key, &g), 0);
	assert_int_equal(db_measure_lookup_params(h, &key, "Toy", "", &m), 1);
	assert_int_equal(m.outcome, REJECT_RUNTIME_FAULT);
	db_measured_release(&m);
	key.params = "bs=128,tile=4,layout=row,frac=0.5";
	assert_int_equal(db_gate_rejection_params(h, &key, &g), 1);
	assert_string_equal(g.gate, "constraint");
	db_gate_found_release(&g);
	db_close(h);
	/* a landscape goes into a new database only */
	capture_start();
	assert_int_equal(import_write(&ls, conf, db, "tuner import"), -1);
	assert_non_null(strstr(captured, "exists"));
	config_release(&cfg);
	import_release(&ls);
	snprintf(conf, sizeof(conf), "rm -rf '%s'", dir);
	assert_int_equal(system(conf), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_translate_operators, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_semantics, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_coded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_truediv, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_python_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_t4, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_hub, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_untimed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_direction, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_old_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_large, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_wide, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
