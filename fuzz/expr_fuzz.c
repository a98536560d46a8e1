/* libFuzzer harness for the expression parser and evaluator: any input, no crash, sane errors. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ident_ctx {
	const char *src;
	size_t len;
	int n;
};

/* Every reported identifier must be spelled at its column in the source. */
static int check_ident(const char *name, int col, void *ctx)
{
	struct ident_ctx *ic = ctx;
	size_t nlen = strlen(name);

	if (col < 1 || (size_t)col - 1 + nlen > ic->len ||
	    memcmp(ic->src + col - 1, name, nlen) != 0) {
		fprintf(stderr, "identifier '%s' not at col %d\n", name, col);
		abort();
	}
	ic->n++;
	return 0;
}

static void check_err(const struct expr_err *err, size_t len, const char *what)
{
	size_t mlen = strnlen(err->msg, sizeof(err->msg));

	if (mlen == 0 || mlen == sizeof(err->msg)) {
		fprintf(stderr, "%s error without a terminated message\n", what);
		abort();
	}
	if (err->col < 0 || (size_t)err->col > len + 1) {
		fprintf(stderr, "%s error col %d outside 0..%zu: %s\n", what, err->col, len + 1,
		        err->msg);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Extreme and ordinary values, over two chained scopes, so overflow paths are reached. */
	static const struct expr_var outer_vars[] = {
	    {"S", 512}, {"D", 64}, {"B", 2}, {"H", 16}, {"BLOCK_M", -1},
	};
	static const struct expr_var inner_vars[] = {
	    {"BLOCK_M", 64},    {"NUM_WARPS", 4},   {"ZERO", 0}, {"NEG", -1},
	    {"MAX", LLONG_MAX}, {"MIN", LLONG_MIN}, {"x", 3},    {"y", -7},
	};
	const struct expr_scope outer = {outer_vars, ARRAY_SIZE(outer_vars), NULL};
	const struct expr_scope inner = {inner_vars, ARRAY_SIZE(inner_vars), &outer};
	struct expr_err err;
	struct ident_ctx ic;
	long long v1, v2;
	struct expr *e;
	char *src;
	int r1, r2;

	src = malloc(size + 1);
	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	ic.src = src;
	ic.len = strlen(src);
	ic.n = 0;

	e = expr_parse(src, &err);
	if (!e) {
		check_err(&err, ic.len, "parse");
		free(src);
		return 0;
	}
	if (strcmp(expr_text(e), src) != 0) {
		fprintf(stderr, "expr_text differs from the source\n");
		abort();
	}
	expr_foreach_ident(e, check_ident, &ic);

	/* Evaluation is deterministic, and errors carry a message. */
	r1 = expr_eval(e, &inner, &v1, &err);
	if (r1 < 0)
		check_err(&err, ic.len, "eval");
	r2 = expr_eval(e, &inner, &v2, &err);
	if (r1 != r2 || (r1 == 0 && v1 != v2)) {
		fprintf(stderr, "evaluation is not deterministic\n");
		abort();
	}
	/* Without any names, an expression that mentions none must give the same result. */
	r2 = expr_eval(e, NULL, &v2, &err);
	if (r2 < 0)
		check_err(&err, ic.len, "eval");
	else if (ic.n == 0 && (r1 != 0 || v1 != v2)) {
		fprintf(stderr, "result depends on an empty scope\n");
		abort();
	}
	expr_free(e);
	free(src);
	return 0;
}
