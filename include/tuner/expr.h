/* C-syntax integer expressions over params and shape dims (constraints, smem, launch, layout). */
#ifndef TUNER_EXPR_H
#define TUNER_EXPR_H

#include <stddef.h>

struct strbuf;

/*
 * Grammar (C precedence and associativity): integer literals, floating
 * literals (1.5, 2e-3, .5), identifiers, ( ), unary - + !, * / %, + -,
 * < <= > >=, == !=, &&, ||, ?: , and the calls min(a, b), max(a, b),
 * ceil_div(a, b), abs(a), sqrt(a), rsqrt(a), exp(a), log(a), log2(a),
 * pow(a, b), float(a), floor(a), ceil(a). Values are 64-bit signed integers
 * unless a floating literal, a floating variable or a floating function makes
 * them doubles; an operation with one floating operand is floating, integer /
 * truncates as in C, % needs integers, floor and ceil give integers.
 * && || ?: short-circuit. Division or modulo by zero, signed overflow and
 * a NaN or infinite result are evaluation errors, never crashes.
 */
struct expr;

struct expr_err {
	int col;       /* 1-based column in the source text; 0 when not positional */
	char msg[200]; /* lowercase, no full stop, e.g. "division by zero" */
};

struct expr_var {
	const char *name;
	long long value;
};

/* A chain of variable tables; lookup goes through vars[] then next. */
struct expr_scope {
	const struct expr_var *vars;
	size_t n;
	const struct expr_scope *next;
};

/* Parse src; NULL on error with err filled ("expected ')'", col of the offending token). */
struct expr *expr_parse(const char *src, struct expr_err *err);
/*
 * Evaluate to an integer; 0 on success, -1 with err filled (unknown identifier
 * 'X', division by zero, overflow, a floating result).
 */
int expr_eval(const struct expr *e, const struct expr_scope *scope, long long *out,
              struct expr_err *err);
/*
 * Evaluate to a number, integer or floating: *out as a double, *is_float and
 * *iout (the exact integer when !*is_float) where not NULL. NaN and infinities
 * are errors.
 */
int expr_eval_number(const struct expr *e, const struct expr_scope *scope, double *out,
                     int *is_float, long long *iout, struct expr_err *err);
/* 1 if name is one of the functions the grammar knows (min, max, ceil_div, sqrt, ...). */
int expr_is_function(const char *name);
void expr_free(struct expr *e);
/* The source text the expression was parsed from. */
const char *expr_text(const struct expr *e);
/* Call fn for every identifier the expression mentions (in source order); stops at a non-zero
 * return. */
int expr_foreach_ident(const struct expr *e, int (*fn)(const char *name, int col, void *ctx),
                       void *ctx);

/* ------------------------------------------------------------- as C code */

/* The helpers a translation calls, one bit each in expr_to_c()'s *used. */
enum expr_c_helper {
	EXPR_C_MIN_I = 1 << 0,
	EXPR_C_MAX_I = 1 << 1,
	EXPR_C_MIN_F = 1 << 2,
	EXPR_C_MAX_F = 1 << 3,
	EXPR_C_ABS_I = 1 << 4,
	EXPR_C_ABS_F = 1 << 5,
	EXPR_C_CEIL_DIV = 1 << 6,
	EXPR_C_MATH = 1 << 7, /* <math.h>: sqrt, exp, log, log2, pow, floor, ceil */
};

/*
 * e as a C (and C++) expression of the same value, fully parenthesised:
 * integers are long long (literals get LL), floating values double, as the
 * evaluator types them (a variable is an integer). ident writes the C text of
 * a variable (0, or -1 when it has none); min, max, abs and ceil_div become
 * calls of static inline helpers named <fn_prefix>min_i and so on, which
 * expr_c_helpers() defines, and *used collects which (enum expr_c_helper).
 * What C does not check is not checked: overflow, division by zero. One
 * difference: `c ? 1 : 2.5` is a double in C whichever branch is taken.
 * 0, or error() (an unknown variable, % or a shift or ceil_div of a
 * floating value).
 */
int expr_to_c(const struct expr *e, struct strbuf *out, const char *fn_prefix,
              int (*ident)(const char *name, struct strbuf *out, void *ctx), void *ctx,
              unsigned *used);
/* 1 when e's value is floating by the evaluator's typing (see expr_to_c()). */
int expr_is_floating(const struct expr *e);
/* The static inline helpers of *used, named <fn_prefix>..., and #include <math.h> if asked. */
void expr_c_helpers(struct strbuf *out, const char *fn_prefix, unsigned used);

#endif
