/* Unit tests for the expression parser and evaluator. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/expr.h"

/* Evaluate src in scope, failing the test on any error. */
static long long eval_ok(const char *src, const struct expr_scope *scope)
{
	struct expr_err err;
	struct expr *e = expr_parse(src, &err);
	long long v = 0;

	if (!e)
		fail_msg("cannot parse '%s': col %d: %s", src, err.col, err.msg);
	if (expr_eval(e, scope, &v, &err) < 0)
		fail_msg("cannot evaluate '%s': col %d: %s", src, err.col, err.msg);
	expr_free(e);
	return v;
}

/* Parse src, which must fail, and check the message and column. */
static void parse_fails(const char *src, const char *msg, int col)
{
	struct expr_err err;
	struct expr *e = expr_parse(src, &err);

	if (e)
		fail_msg("'%s' parsed, expected error '%s'", src, msg);
	if (!strstr(err.msg, msg))
		fail_msg("'%s': got error '%s', expected '%s'", src, err.msg, msg);
	if (err.col != col)
		fail_msg("'%s': error '%s' at col %d, expected col %d", src, err.msg, err.col, col);
}

/* Parse src, which must succeed, then evaluation must fail with msg at col. */
static void eval_fails(const char *src, const struct expr_scope *scope, const char *msg, int col)
{
	struct expr_err err;
	struct expr *e = expr_parse(src, &err);
	long long v = 12345;

	if (!e)
		fail_msg("cannot parse '%s': %s", src, err.msg);
	if (expr_eval(e, scope, &v, &err) == 0)
		fail_msg("'%s' evaluated to %lld, expected error '%s'", src, v, msg);
	expr_free(e);
	if (!strstr(err.msg, msg))
		fail_msg("'%s': got error '%s', expected '%s'", src, err.msg, msg);
	if (err.col != col)
		fail_msg("'%s': error '%s' at col %d, expected col %d", src, err.msg, err.col, col);
}

/* ------------------------------------------------ against C's own evaluation */

/*
 * Each row is a literal expression together with C's value of the same text,
 * so precedence and associativity are checked against the compiler itself.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wparentheses"
#pragma GCC diagnostic ignored "-Wint-in-bool-context"
#define C(x)                                                                                       \
	{                                                                                          \
#x, (long long)(x)                                                                 \
	}
static const struct {
	const char *src;
	long long want;
} c_table[] = {
    C(1 + 2 * 3),
    C((1 + 2) * 3),
    C(10 - 4 - 3),
    C(10 - (4 - 3)),
    C(100 / 10 / 5),
    C(100 / (10 / 5)),
    C(7 / 2 * 2),
    C(7 % 4 * 3),
    C(2 * 7 % 4),
    C(-7 / 2),
    C(-7 % 3),
    C(7 % -3),
    C(-7 % -3),
    C(7 / -2),
    C(-2 * -3),
    C(- -3),
    C(-(-3)),
    C(+5 - +3),
    C(!0),
    C(!7),
    C(!!7),
    C(!0 + 1),
    C(-3 + 5),
    C(1 - -1),
    C(1 + 2 < 4),
    C(1 < 2 == 1),
    C(3 > 2 > 1),
    C(1 == 1 != 0),
    C(2 <= 2),
    C(2 >= 3),
    C(5 != 5),
    C(1 || 0 && 0),
    C((1 || 0) && 0),
    C(0 && 0 || 1),
    C(2 && 3),
    C(0 || -4),
    C(1 ? 2 : 3),
    C(0 ? 2 : 3),
    C(1   ? 2
      : 3 ? 4
          : 5),
    C(0   ? 2
      : 0 ? 4
          : 5),
    C(0   ? 2
      : 1 ? 4
          : 5),
    C(1 ? 0 ? 6 : 7 : 8),
    C(1 + 1 ? 10 : 20),
    C(0 || 0 ? 10 : 20),
    C(2 * 3 == 6 && 4 % 3 == 1),
    C(0x10 + 010 + 10),
    C(0xfF * 2),
    C(0),
    C(9223372036854775807),
    C(-9223372036854775807 - 1),
    C(1 + 2 * 3 - 4 / 2 % 3 + (5 - 6) * -7),
    C(((((1)))) + ((2))),
    C(12 - 3 * 4 + 1 < 2 == !0),
    C(64 % (16 * 4) == 0),
};
#pragma GCC diagnostic pop

static void test_matches_c(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(c_table); i++) {
		long long v = eval_ok(c_table[i].src, NULL);

		if (v != c_table[i].want)
			fail_msg("'%s' = %lld, C says %lld", c_table[i].src, v, c_table[i].want);
	}
}

/* --------------------------------------------------------------- operators */

static void test_operators(void **state)
{
	static const struct {
		const char *src;
		long long want;
	} rows[] = {
	    {"3 + 4", 7},
	    {"3 - 4", -1},
	    {"3 * 4", 12},
	    {"13 / 4", 3},
	    {"-13 / 4", -3},
	    {"13 % 4", 1},
	    {"-13 % 4", -1},
	    {"-5", -5},
	    {"+5", 5},
	    {"!5", 0},
	    {"!0", 1},
	    {"1 < 2", 1},
	    {"2 < 2", 0},
	    {"2 <= 2", 1},
	    {"3 <= 2", 0},
	    {"3 > 2", 1},
	    {"2 > 2", 0},
	    {"2 >= 2", 1},
	    {"1 >= 2", 0},
	    {"4 == 4", 1},
	    {"4 == 5", 0},
	    {"4 != 5", 1},
	    {"4 != 4", 0},
	    {"5 && 7", 1},
	    {"5 && 0", 0},
	    {"0 || 0", 0},
	    {"0 || 9", 1},
	    {"1 ? 10 : 20", 10},
	    {"0 ? 10 : 20", 20},
	    {"min(3, 7)", 3},
	    {"min(-3, -7)", -7},
	    {"max(3, 7)", 7},
	    {"max(-3, -7)", -3},
	    {"max(min(1, 2), min(3, 4))", 3},
	    {"ceil_div(7, 2)", 4},
	    {"ceil_div(8, 2)", 4},
	    {"ceil_div(1, 64)", 1},
	    {"ceil_div(0, 3)", 0},
	    {"ceil_div(-7, 2)", -3},
	    {"ceil_div(9223372036854775807, 1)", LLONG_MAX},
	    {"ceil_div(9223372036854775807, 2)", LLONG_MAX / 2 + 1},
	    {"ceil_div(1000, 128) * 128", 1024},
	    {"  \t2\n*\n3  ", 6},
	    {"9223372036854775807 - 1 + 1", LLONG_MAX},
	    {"-9223372036854775807 - 1", LLONG_MIN},
	    {"(-9223372036854775807 - 1) % -1", 0},
	    {"(-9223372036854775807 - 1) / 1", LLONG_MIN},
	    {"3037000499 * 3037000499", 3037000499LL * 3037000499LL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		long long v = eval_ok(rows[i].src, NULL);

		if (v != rows[i].want)
			fail_msg("'%s' = %lld, want %lld", rows[i].src, v, rows[i].want);
	}
}

static void test_short_circuit(void **state)
{
	assert_int_equal(eval_ok("1 || 1/0", NULL), 1);
	assert_int_equal(eval_ok("0 && 1/0", NULL), 0);
	assert_int_equal(eval_ok("1 ? 2 : 1/0", NULL), 2);
	assert_int_equal(eval_ok("0 ? 1 % 0 : 3", NULL), 3);
	/* Names that are never reached need not be bound. */
	assert_int_equal(eval_ok("0 && UNBOUND", NULL), 0);
	assert_int_equal(eval_ok("1 || 9223372036854775807 + 1", NULL), 1);
	/* And the other side is evaluated when it matters. */
	eval_fails("0 || 1/0", NULL, "division by zero", 7);
	eval_fails("1 && 1/0", NULL, "division by zero", 7);
	eval_fails("0 ? 1 : 2 % 0", NULL, "modulo by zero", 11);
}

/* ------------------------------------------------------------------ errors */

static void test_parse_errors(void **state)
{
	parse_fails("(1 + 2", "expected ')'", 7);
	parse_fails("((BLOCK_M + 1) * 2", "expected ')'", 19);
	parse_fails("(1 + 2 3)", "expected ')'", 8);
	parse_fails("1 +", "unexpected end of expression", 4);
	parse_fails("-", "unexpected end of expression", 2);
	parse_fails("min(1,", "unexpected end of expression", 7);
	parse_fails("1 + * 2", "unexpected '*'", 5);
	parse_fails("1 2", "unexpected '2'", 3);
	parse_fails("(1))", "unexpected ')'", 4);
	parse_fails("()", "unexpected ')'", 2);
	parse_fails("", "empty expression", 1);
	parse_fails("   ", "empty expression", 1);
	parse_fails("foo(1)", "unknown function 'foo'", 1);
	parse_fails("2 * mn(1, 2)", "unknown function 'mn' (did you mean 'min'?)", 5);
	parse_fails("min(1)", "wrong number of arguments to 'min'", 1);
	parse_fails("1 + max(1, 2, 3)", "wrong number of arguments to 'max'", 5);
	parse_fails("min(1, 2, 3, 4)", "wrong number of arguments to 'min' (expected 2, got 4)", 1);
	parse_fails("ceil_div()", "wrong number of arguments to 'ceil_div'", 1);
	parse_fails("min(1 2)", "expected ',' or ')'", 7);
	parse_fails("1 ? 2", "expected ':'", 6);
	parse_fails("1 ? 2 , 3", "expected ':'", 7);
	parse_fails("a = 1", "unexpected character '=' (did you mean '=='?)", 3);
	parse_fails("a & b", "did you mean '&&'?", 3);
	parse_fails("a | b", "did you mean '||'?", 3);
	parse_fails("a @ b", "unexpected character '@'", 3);
	parse_fails("1 \x01", "unexpected character '\\x01'", 3);
	parse_fails("1 + 99999999999999999999",
	            "integer constant '99999999999999999999' is too large", 5);
	parse_fails("9223372036854775808", "is too large", 1);
	parse_fails("16u", "invalid suffix 'u' on integer constant", 3);
	parse_fails("2BLOCK", "invalid suffix 'BLOCK'", 2);
	parse_fails("08", "invalid digit '8' in octal constant", 2);
	parse_fails("0x", "invalid hexadecimal constant", 1);
	parse_fails(NULL, "no expression", 0);
}

static void test_eval_errors(void **state)
{
	const struct expr_var vars[] = {{"BLOCK_M", 64}, {"ZERO", 0}};
	const struct expr_scope scope = {vars, ARRAY_SIZE(vars), NULL};

	eval_fails("1 / 0", NULL, "division by zero", 3);
	eval_fails("BLOCK_M / ZERO", &scope, "division by zero", 9);
	eval_fails("BLOCK_M % (ZERO * 2)", &scope, "modulo by zero", 9);
	eval_fails("BLOK_M * 2", &scope, "unknown name 'BLOK_M'", 1);
	eval_fails("BLOCK_M + BLOCK_N", &scope, "unknown name 'BLOCK_N'", 11);
	eval_fails("BLOCK_M", NULL, "unknown name 'BLOCK_M'", 1);
	/* Errors deep inside propagate with their own column. */
	eval_fails("-(1 / 0)", NULL, "division by zero", 5);
	eval_fails("(2 % ZERO) ? 1 : 2", &scope, "modulo by zero", 4);
	eval_fails("max(1, min(2, X))", &scope, "unknown name 'X'", 15);
	eval_fails("ceil_div(5, 0)", NULL, "ceil_div divisor must be positive", 1);
	eval_fails("1 + ceil_div(5, -2)", NULL, "ceil_div divisor must be positive", 5);
}

static void test_overflow(void **state)
{
	eval_fails("9223372036854775807 + 1", NULL, "signed overflow", 21);
	eval_fails("-9223372036854775807 - 2", NULL, "signed overflow", 22);
	eval_fails("-1 - 9223372036854775807 - 2", NULL, "signed overflow", 26);
	eval_fails("4611686018427387904 * 2", NULL, "signed overflow", 21);
	eval_fails("3037000500 * 3037000500", NULL, "signed overflow", 12);
	eval_fails("-(-9223372036854775807 - 1)", NULL, "signed overflow", 1);
	eval_fails("(-9223372036854775807 - 1) / -1", NULL, "signed overflow", 28);
	eval_fails("max(1, 9223372036854775807 * 9223372036854775807)", NULL, "signed overflow",
	           28);
}

static void test_err_may_be_null(void **state)
{
	struct expr *e = expr_parse("1 / X", NULL);
	const struct expr_var vars[] = {{"X", 0}};
	const struct expr_scope scope = {vars, 1, NULL};
	long long v;

	assert_non_null(e);
	assert_int_equal(expr_eval(e, &scope, &v, NULL), -1);
	expr_free(e);
	assert_null(expr_parse("(", NULL));
	assert_int_equal(expr_eval(NULL, NULL, &v, NULL), -1);
	expr_free(NULL);
}

/* ----------------------------------------------------------------- nesting */

static char *repeat(const char *pre, int n, const char *mid, const char *post)
{
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; i < n; i++)
		sb_adds(&sb, pre);
	sb_adds(&sb, mid);
	for (int i = 0; i < n; i++)
		sb_adds(&sb, post);
	return sb_detach(&sb);
}

static void test_deep_nesting(void **state)
{
	struct expr_err err;
	char *s;

	/* Reasonable nesting works. */
	s = repeat("(", 50, "7", ")");
	assert_int_equal(eval_ok(s, NULL), 7);
	free(s);
	s = repeat("-", 50, "7", "");
	assert_int_equal(eval_ok(s, NULL), 7);
	free(s);
	s = repeat("1 + ", 500, "1", "");
	assert_int_equal(eval_ok(s, NULL), 501);
	free(s);

	/* Pathological nesting is an error, not a stack overflow. */
	s = repeat("(", 200000, "1", ")");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	assert_true(err.col > 0);
	free(s);
	s = repeat("(", 200000, "", "");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	free(s);
	s = repeat("-!", 100000, "1", "");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	free(s);
	s = repeat("min(1, ", 100000, "1", ")");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	free(s);
	s = repeat("1 ? 1 : ", 100000, "1", "");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	free(s);
	/* A long left-associative chain builds a deep tree without deep parsing. */
	s = repeat("1 + ", 200000, "1", "");
	assert_null(expr_parse(s, &err));
	assert_non_null(strstr(err.msg, "too deeply nested"));
	free(s);
}

/* ------------------------------------------------------------------ scopes */

static void test_scopes(void **state)
{
	const struct expr_var shape[] = {{"S", 512}, {"D", 64}, {"BLOCK_M", 1}};
	const struct expr_var params[] = {{"BLOCK_M", 64}, {"NUM_WARPS", 4}};
	const struct expr_scope outer = {shape, ARRAY_SIZE(shape), NULL};
	const struct expr_scope inner = {params, ARRAY_SIZE(params), &outer};
	const struct expr_scope empty = {NULL, 0, &inner};

	/* Inner tables shadow outer ones, and lookup falls through to outer ones. */
	assert_int_equal(eval_ok("BLOCK_M", &inner), 64);
	assert_int_equal(eval_ok("BLOCK_M", &outer), 1);
	assert_int_equal(eval_ok("ceil_div(S, BLOCK_M) * NUM_WARPS", &inner), 32);
	assert_int_equal(eval_ok("D + BLOCK_M", &empty), 128);
	eval_fails("NUM_WARPS", &outer, "unknown name 'NUM_WARPS'", 1);
	/* A name must match entirely, not as a prefix. */
	eval_fails("BLOCK", &inner, "unknown name 'BLOCK'", 1);
	eval_fails("BLOCK_MM", &inner, "unknown name 'BLOCK_MM'", 1);
}

static void test_reuse(void **state)
{
	struct expr_var v = {"X", 0};
	const struct expr_scope scope = {&v, 1, NULL};
	struct expr_err err;
	struct expr *e = expr_parse("X * X - 1", &err);
	long long out;

	assert_non_null(e);
	for (v.value = -3; v.value <= 3; v.value++) {
		assert_int_equal(expr_eval(e, &scope, &out, &err), 0);
		assert_int_equal(out, v.value * v.value - 1);
	}
	expr_free(e);
}

/* ---------------------------------------------------------- text and names */

static void test_text(void **state)
{
	const char *src = "  BLOCK_M % (16 * NUM_WARPS) == 0 ";
	char *copy = xstrdup(src);
	struct expr_err err;
	struct expr *e = expr_parse(copy, &err);

	assert_non_null(e);
	/* The text is the expression's own copy: the caller's buffer may go away. */
	memset(copy, 'x', strlen(copy));
	free(copy);
	assert_string_equal(expr_text(e), src);
	expr_free(e);
}

struct seen {
	char names[8][32];
	int cols[8];
	int n;
	int stop_at;
};

static int collect(const char *name, int col, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		s->cols[s->n] = col;
	}
	s->n++;
	return s->n == s->stop_at ? 42 : 0;
}

static void test_foreach_ident(void **state)
{
	struct expr_err err;
	struct expr *e = expr_parse("max(BLOCK_M, 64) * (D + PAD) > S ? -D : !BLOCK_M", &err);
	struct seen s = {.stop_at = -1};
	static const char *want[] = {"BLOCK_M", "D", "PAD", "S", "D", "BLOCK_M"};
	static const int want_col[] = {5, 21, 25, 32, 37, 42};

	assert_non_null(e);
	/* Every mention in source order, function names excluded. */
	assert_int_equal(expr_foreach_ident(e, collect, &s), 0);
	assert_int_equal(s.n, 6);
	for (int i = 0; i < 6; i++) {
		assert_string_equal(s.names[i], want[i]);
		assert_int_equal(s.cols[i], want_col[i]);
	}
	/* A non-zero return stops the walk and is passed back. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(expr_foreach_ident(e, collect, &s), 42);
	assert_int_equal(s.n, 2);
	expr_free(e);

	e = expr_parse("1 + min(2, 3)", &err);
	assert_non_null(e);
	memset(&s, 0, sizeof(s));
	assert_int_equal(expr_foreach_ident(e, collect, &s), 0);
	assert_int_equal(s.n, 0);
	expr_free(e);
}

/* Evaluate src as a number, failing the test on any error. */
static double num_ok(const char *src, int *is_float)
{
	struct expr_err err;
	struct expr *e = expr_parse(src, &err);
	double v = 0;

	if (!e)
		fail_msg("cannot parse '%s': col %d: %s", src, err.col, err.msg);
	if (expr_eval_number(e, NULL, &v, is_float, NULL, &err) < 0)
		fail_msg("cannot evaluate '%s': col %d: %s", src, err.col, err.msg);
	expr_free(e);
	return v;
}

/* The floating side: literals, promotion, functions, and the integer contexts refusing it. */
static void test_floats(void **state)
{
	const struct expr_var vars[] = {{"D", 64}};
	const struct expr_scope sc = {vars, 1, NULL};
	struct expr_err err;
	struct expr *e;
	int fl = 0;
	double v;

	(void)state;
	assert_true(num_ok("1.5 + 1", &fl) == 2.5);
	assert_int_equal(fl, 1);
	assert_true(num_ok("7 / 2", &fl) == 3.0); /* integer division stays C's */
	assert_int_equal(fl, 0);
	assert_true(num_ok("7 / 2.0", &fl) == 3.5);
	assert_true(num_ok("2e-3 * 1000", &fl) == 2.0);
	assert_true(num_ok(".5 + .25", &fl) == 0.75);
	assert_true(num_ok("rsqrt(64)", &fl) == 0.125);
	assert_true(num_ok("sqrt(2.25)", &fl) == 1.5);
	assert_true(num_ok("pow(2, 10)", &fl) == 1024.0);
	assert_true(num_ok("floor(2.7) + ceil(2.1)", &fl) == 5.0);
	assert_int_equal(fl, 0);
	assert_true(num_ok("abs(-3)", &fl) == 3.0);
	assert_true(num_ok("1.5 < 2 && !0.0", &fl) == 1.0);
	assert_int_equal(fl, 0);
	assert_true(num_ok("log2(8.0) == 3", &fl) == 1.0);
	e = expr_parse("rsqrt(D) * 8 + 0.25", &err);
	assert_non_null(e);
	assert_int_equal(expr_eval_number(e, &sc, &v, &fl, NULL, &err), 0);
	assert_true(v == 1.25);
	/* an integer context refuses a floating value with a clear message */
	assert_int_equal(expr_eval(e, &sc, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "floating-point value"));
	expr_free(e);
	eval_fails("1.5 % 2", NULL, "'%' needs integers", 5);
	assert_true(num_ok("1 << 31", &fl) == 2147483648.0);
	assert_true(num_ok("1 + 2 << 3", &fl) == 24.0); /* C: + binds tighter than << */
	assert_true(num_ok("1024 >> 3 < 200", &fl) == 1.0);
	eval_fails("1 << 63", NULL, "needs a value >= 0 and a shift of 0 to 62", 3);
	eval_fails("4611686018427387904 << 1", NULL, "signed overflow", 21);
	eval_fails("1.0 << 2", NULL, "'<<' needs integers", 5);
	eval_fails("rsqrt(0)", NULL, "needs a positive number", 1);
	eval_fails("sqrt(-1.0)", NULL, "sqrt of a negative number", 1);
	eval_fails("1.0 / 0", NULL, "division by zero", 5);
	eval_fails("exp(1000.0)", NULL, "gives an infinity", 1);
	eval_fails("ceil_div(3.0, 2)", NULL, "'ceil_div' needs integers", 1);
	parse_fails("1.5x", "invalid suffix 'x' on floating constant", 4);
	parse_fails("1e999", "out of range", 1);
	assert_int_equal(expr_is_function("rsqrt"), 1);
	assert_int_equal(expr_is_function("BLOCK_M"), 0);
}

/* Variables as C for test_to_c: "p_X" for every name but "nope". */
static int c_ident(const char *name, struct strbuf *out, void *ctx)
{
	(void)ctx;
	if (!strcmp(name, "nope"))
		return -1;
	sb_addf(out, "p_%s", name);
	return 0;
}

/* The translation as C: its text, or NULL on error; *used gets the helpers. */
static char *to_c(const char *src, unsigned *used)
{
	struct expr *e = expr_parse(src, NULL);
	struct strbuf sb = STRBUF_INIT;
	int rc;

	assert_non_null(e);
	*used = 0;
	sb_grow(&sb, 0);
	rc = expr_to_c(e, &sb, "f_", c_ident, NULL, used);
	expr_free(e);
	if (rc < 0) {
		sb_release(&sb);
		return NULL;
	}
	return sb_detach(&sb);
}

static void test_to_c(void **state)
{
	static const struct {
		const char *src, *c;
		unsigned used;
	} cases[] = {
	    /* integers are long long: 1 << 40 does not overflow an int */
	    {"1 << 40", "(1LL << 40LL)", 0},
	    {"ceil_div(S, BLOCK_M) * 2", "(f_ceil_div(p_S, p_BLOCK_M) * 2LL)", EXPR_C_CEIL_DIV},
	    {"max(a, b + 1)", "f_max_i(p_a, (p_b + 1LL))", EXPR_C_MAX_I},
	    {"min(a, 0.5)", "f_min_f(p_a, 0.5)", EXPR_C_MIN_F},
	    {"-a % 3 == 0 && !b || c ? x : y",
	     "((((((-p_a) % 3LL) == 0LL) && (!p_b)) || p_c) ? p_x : p_y)", 0},
	    {"abs(a - b)", "f_abs_i((p_a - p_b))", EXPR_C_ABS_I},
	    {"rsqrt(D)", "(1.0 / sqrt((double)(p_D)))", EXPR_C_MATH},
	    {"floor(2.5 * a)", "((long long)floor((double)((2.5 * p_a))))", EXPR_C_MATH},
	    {"ceil(a)", "p_a", 0}, /* of an integer: the integer */
	    {"float(a) / 2", "(((double)p_a) / 2LL)", 0},
	    {"1e3", "1000.0", 0},
	};
	unsigned used;
	size_t i;
	char *c;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		c = to_c(cases[i].src, &used);
		assert_non_null(c);
		assert_string_equal(c, cases[i].c);
		assert_int_equal(used, cases[i].used);
		free(c);
	}
	/* What C cannot say the evaluator's way is an error, never other code. */
	assert_null(to_c("1.5 % 2", &used));
	assert_null(to_c("ceil_div(a, 2.0)", &used));
	assert_null(to_c("nope + 1", &used));
	for (i = 0; i < 2; i++) {
		struct expr *e = expr_parse(i ? "sqrt(4)" : "min(1, 2)", NULL);

		assert_int_equal(expr_is_floating(e), (int)i);
		expr_free(e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_matches_c),
	    cmocka_unit_test(test_operators),
	    cmocka_unit_test(test_short_circuit),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_eval_errors),
	    cmocka_unit_test(test_overflow),
	    cmocka_unit_test(test_err_may_be_null),
	    cmocka_unit_test(test_deep_nesting),
	    cmocka_unit_test(test_scopes),
	    cmocka_unit_test(test_reuse),
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_foreach_ident),
	    cmocka_unit_test(test_floats),
	    cmocka_unit_test(test_to_c),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
