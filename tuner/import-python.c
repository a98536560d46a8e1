/* The Python of other tuners' files (T1 restrictions and lists of values), for the importer. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/expr.h"
#include "tuner/import-python.h"
#include "tuner/import.h"

/* ------------------------------------------------ Python: lexer and parser */

/*
 * The restrictions (and T1's lists of values) are Python expressions. What
 * follows reads the part of Python they use into a tree; the emitter below
 * turns the tree into tuner's C-syntax expressions or says why it cannot.
 */
enum nkind {
	N_INT,
	N_FLOAT,
	N_STR,
	N_NAME,
	N_NEG,
	N_POS,
	N_NOT,
	N_BIN, /* op: + - * / // % ** */
	N_CMP, /* kids[0] ops[0] kids[1] ops[1] ... */
	N_AND,
	N_OR,
	N_CALL,   /* s: the function; kids: the arguments */
	N_IF,     /* kids: condition, then, else */
	N_LIST,   /* a list or tuple */
	N_COMP,   /* a comprehension: kids[0] the element, then its N_FOR and N_FILTER clauses */
	N_FOR,    /* s: the name bound; kids[0]: what it walks */
	N_FILTER, /* kids[0]: the condition */
};

struct node {
	enum nkind k;
	long long i;
	double f;
	char *s;
	char op[8];
	struct node **kids;
	char (*ops)[8]; /* N_CMP: the n - 1 comparison operators */
	size_t n, alloc;
	int height; /* of the subtree, 0 for a leaf */
};

enum tok { TK_END, TK_INT, TK_FLOAT, TK_STR, TK_NAME, TK_OP, TK_BAD };

struct parser {
	const char *src, *p;
	enum tok t;
	long long i;
	double f;
	struct strbuf text; /* TK_STR, TK_NAME: the text; TK_OP: the operator */
	int col;            /* 1-based column of the current token */
	int nest;           /* the parser's recursion */
	char err[200];
};

/*
 * What is parsed, translated and evaluated is walked by recursion: these
 * bound it, as expr.c bounds its own, so that no file reaches the end of the
 * stack. PY_MAX_NEST bounds the parser's recursion (brackets, signs, 'not',
 * '**', 'else'), PY_MAX_HEIGHT the tree's, which chains like 1+1+...+1 grow
 * without recursion. Either is far beyond what a restriction writes.
 */
#define PY_MAX_NEST   200
#define PY_MAX_HEIGHT 1000

static void node_free(struct node *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->n; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->ops);
	free(n->s);
	free(n);
}

static struct node *node_new(enum nkind k)
{
	struct node *n = xcalloc(1, sizeof(*n));

	n->k = k;
	return n;
}

static void node_add(struct node *n, struct node *kid)
{
	ALLOC_GROW(n->kids, n->n + 1, n->alloc);
	n->kids[n->n++] = kid;
	if (kid->height >= n->height)
		n->height = kid->height + 1;
}

static int perr(struct parser *ps, const char *fmt, ...) TUNER_PRINTF(2, 3);

static int perr(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (!*ps->err) {
		va_start(ap, fmt);
		vsnprintf(ps->err, sizeof(ps->err), fmt, ap);
		va_end(ap);
	}
	ps->t = TK_BAD;
	return -1;
}

static const char *const two_char_ops[] = {"**", "//", "<=", ">=", "==", "!=", "<<", ">>", "->"};

static int lex(struct parser *ps)
{
	const char *p = ps->p;
	size_t i;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	ps->col = (int)(p - ps->src) + 1;
	sb_reset(&ps->text);
	if (!*p) {
		ps->t = TK_END;
		ps->p = p;
		return 0;
	}
	if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
		struct strbuf num = STRBUF_INIT;
		int is_float = 0;
		char *end;

		sb_grow(&num, 0); /* never left empty: the first character is a digit or '.' */
		/* digits, underscores between them, a fraction, an exponent; 0x hex */
		if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
			sb_add(&num, p, 2);
			for (p += 2; isxdigit((unsigned char)*p) || *p == '_'; p++)
				if (*p != '_')
					sb_add(&num, p, 1);
		} else {
			for (; isdigit((unsigned char)*p) || *p == '_' || *p == '.' || *p == 'e' ||
			       *p == 'E' ||
			       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E'));
			     p++) {
				if (*p == '_')
					continue;
				if (*p == '.' || *p == 'e' || *p == 'E')
					is_float = 1;
				sb_add(&num, p, 1);
			}
		}
		errno = 0;
		if (is_float) {
			ps->f = strtod(num.buf, &end);
			ps->t = TK_FLOAT;
		} else {
			ps->i = strtoll(num.buf, &end, 0);
			ps->t = TK_INT;
		}
		if (*end || errno == ERANGE) {
			perr(ps, "column %d: bad number '%s'", ps->col, num.buf);
			sb_release(&num);
			return -1;
		}
		sb_release(&num);
		ps->p = p;
		return 0;
	}
	if (isalpha((unsigned char)*p) || *p == '_') {
		const char *s = p;

		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		sb_add(&ps->text, s, (size_t)(p - s));
		ps->t = TK_NAME;
		ps->p = p;
		return 0;
	}
	if (*p == '\'' || *p == '"') {
		char q = *p++;

		sb_adds(&ps->text, "");
		for (; *p && *p != q; p++) {
			if (*p == '\\' && p[1])
				p++;
			sb_add(&ps->text, p, 1);
		}
		if (*p != q)
			return perr(ps, "column %d: unterminated string", ps->col);
		ps->t = TK_STR;
		ps->p = p + 1;
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(two_char_ops); i++)
		if (!strncmp(p, two_char_ops[i], 2)) {
			sb_add(&ps->text, p, 2);
			ps->t = TK_OP;
			ps->p = p + 2;
			return 0;
		}
	if (strchr("+-*/%<>()[],&|^~.:=@{}", *p)) {
		sb_add(&ps->text, p, 1);
		ps->t = TK_OP;
		ps->p = p + 1;
		return 0;
	}
	return perr(ps, "column %d: unexpected character '%c'", ps->col, *p);
}

static int is_op(const struct parser *ps, const char *op)
{
	return ps->t == TK_OP && !strcmp(ps->text.buf, op);
}

static int is_kw(const struct parser *ps, const char *kw)
{
	return ps->t == TK_NAME && !strcmp(ps->text.buf, kw);
}

static int expect_op(struct parser *ps, const char *op)
{
	if (!is_op(ps, op))
		return perr(ps, "column %d: expected '%s'", ps->col, op);
	return lex(ps);
}

static struct node *parse_test(struct parser *ps);
static struct node *parse_or(struct parser *ps);

/* parse(ps) one level deeper, or the error that it is too deep. */
static struct node *nested(struct parser *ps, struct node *(*parse)(struct parser *))
{
	struct node *n;

	if (ps->nest == PY_MAX_NEST) {
		perr(ps, "column %d: nested more than %d deep", ps->col, PY_MAX_NEST);
		return NULL;
	}
	ps->nest++;
	n = parse(ps);
	ps->nest--;
	return n;
}

/* The clauses after a comprehension's element: for NAME in X [if C]... */
static struct node *parse_comp(struct parser *ps, struct node *elem)
{
	struct node *comp = node_new(N_COMP), *clause, *x;

	node_add(comp, elem);
	while (is_kw(ps, "for") || is_kw(ps, "if")) {
		int is_for = is_kw(ps, "for");

		if (lex(ps) < 0)
			goto fail;
		clause = node_new(is_for ? N_FOR : N_FILTER);
		node_add(comp, clause);
		if (is_for) {
			if (ps->t != TK_NAME) {
				perr(ps, "column %d: 'for' needs a name", ps->col);
				goto fail;
			}
			clause->s = xstrdup(ps->text.buf);
			if (lex(ps) < 0)
				goto fail;
			if (!is_kw(ps, "in")) {
				perr(ps, "column %d: expected 'in' (one name after 'for')",
				     ps->col);
				goto fail;
			}
			if (lex(ps) < 0)
				goto fail;
		}
		x = parse_or(ps);
		if (!x)
			goto fail;
		node_add(clause, x);
	}
	return comp;
fail:
	node_free(comp);
	return NULL;
}

/* A '(' or '[' group: a parenthesised expression, or a tuple or list of them. */
static struct node *parse_group(struct parser *ps, const char *close)
{
	struct node *list = node_new(N_LIST), *x;
	int tuple = !strcmp(close, "]");

	if (lex(ps) < 0)
		goto fail;
	while (!is_op(ps, close)) {
		x = nested(ps, parse_test);
		if (x && !list->n && is_kw(ps, "for")) {
			node_free(list);
			x = parse_comp(ps, x);
			if (x && expect_op(ps, close) < 0) {
				node_free(x);
				return NULL;
			}
			return x;
		}
		if (!x)
			goto fail;
		node_add(list, x);
		if (!is_op(ps, ","))
			break;
		tuple = 1;
		if (lex(ps) < 0)
			goto fail;
	}
	if (list->n == 0)
		tuple = 1;
	if (expect_op(ps, close) < 0)
		goto fail;
	if (tuple)
		return list;
	x = list->kids[0];
	list->n = 0;
	node_free(list);
	return x;
fail:
	node_free(list);
	return NULL;
}

static struct node *parse_atom(struct parser *ps)
{
	struct node *n;

	switch (ps->t) {
	case TK_INT:
		n = node_new(N_INT);
		n->i = ps->i;
		break;
	case TK_FLOAT:
		n = node_new(N_FLOAT);
		n->f = ps->f;
		break;
	case TK_STR:
		n = node_new(N_STR);
		n->s = xstrdup(ps->text.buf);
		break;
	case TK_NAME: {
		static const char *const keywords[] = {"and", "or",   "not",    "in",  "is",
		                                       "if",  "else", "lambda", "for", "None"};
		size_t i;

		for (i = 0; i < ARRAY_SIZE(keywords); i++)
			if (!strcmp(ps->text.buf, keywords[i])) {
				perr(ps, "column %d: '%s' is not supported here", ps->col,
				     keywords[i]);
				return NULL;
			}
		n = node_new(N_NAME);
		n->s = xstrdup(ps->text.buf);
		break;
	}
	case TK_OP:
		if (is_op(ps, "("))
			return parse_group(ps, ")");
		if (is_op(ps, "["))
			return parse_group(ps, "]");
		perr(ps, "column %d: unexpected '%s'", ps->col, ps->text.buf);
		return NULL;
	case TK_END:
		perr(ps, "column %d: unexpected end", ps->col);
		return NULL;
	default:
		return NULL;
	}
	if (lex(ps) < 0) {
		node_free(n);
		return NULL;
	}
	return n;
}

/* An atom and its calls: f(a, b). Subscripts and attributes are refused. */
static struct node *parse_primary(struct parser *ps)
{
	struct node *n = parse_atom(ps), *call, *arg;

	while (n && ps->t == TK_OP) {
		if (is_op(ps, "[") || is_op(ps, ".")) {
			perr(ps, "column %d: '%s' (subscripts and attributes) is not supported",
			     ps->col, ps->text.buf);
			node_free(n);
			return NULL;
		}
		if (!is_op(ps, "("))
			break;
		if (n->k != N_NAME) {
			perr(ps, "column %d: only named functions can be called", ps->col);
			node_free(n);
			return NULL;
		}
		call = node_new(N_CALL);
		call->s = n->s;
		n->s = NULL;
		node_free(n);
		n = call;
		if (lex(ps) < 0)
			goto fail;
		while (!is_op(ps, ")")) {
			arg = nested(ps, parse_test);
			if (arg && !call->n && is_kw(ps, "for"))
				arg = parse_comp(ps, arg);
			if (!arg)
				goto fail;
			node_add(call, arg);
			if (!is_op(ps, ","))
				break;
			if (lex(ps) < 0)
				goto fail;
		}
		if (expect_op(ps, ")") < 0)
			goto fail;
	}
	return n;
fail:
	node_free(n);
	return NULL;
}

static struct node *parse_unary(struct parser *ps);

static struct node *binary(struct parser *ps, const char *op, struct node *a, struct node *b)
{
	struct node *n = node_new(N_BIN);

	snprintf(n->op, sizeof(n->op), "%s", op);
	node_add(n, a);
	node_add(n, b);
	if (n->height > PY_MAX_HEIGHT) {
		perr(ps, "column %d: more than %d operations deep", ps->col, PY_MAX_HEIGHT);
		node_free(n);
		return NULL;
	}
	return n;
}

static struct node *parse_power(struct parser *ps)
{
	struct node *a = parse_primary(ps), *b;

	if (!a || !is_op(ps, "**"))
		return a;
	if (lex(ps) < 0 || !(b = nested(ps, parse_unary))) {
		node_free(a);
		return NULL;
	}
	return binary(ps, "**", a, b);
}

static struct node *parse_unary(struct parser *ps)
{
	struct node *n, *x;
	enum nkind k;

	if (is_op(ps, "~"))
		return perr(ps, "column %d: bitwise '~' is not supported", ps->col), NULL;
	if (!is_op(ps, "-") && !is_op(ps, "+"))
		return parse_power(ps);
	k = is_op(ps, "-") ? N_NEG : N_POS;
	if (lex(ps) < 0 || !(x = nested(ps, parse_unary)))
		return NULL;
	n = node_new(k);
	node_add(n, x);
	return n;
}

static struct node *parse_term(struct parser *ps)
{
	struct node *a = parse_unary(ps), *b;
	char op[8];

	while (a && (is_op(ps, "*") || is_op(ps, "/") || is_op(ps, "//") || is_op(ps, "%") ||
	             is_op(ps, "@"))) {
		snprintf(op, sizeof(op), "%s", ps->text.buf);
		if (lex(ps) < 0 || !(b = parse_unary(ps))) {
			node_free(a);
			return NULL;
		}
		a = binary(ps, op, a, b);
	}
	return a;
}

static struct node *parse_arith(struct parser *ps)
{
	struct node *a = parse_term(ps), *b;
	char op[8];

	while (a && (is_op(ps, "+") || is_op(ps, "-"))) {
		snprintf(op, sizeof(op), "%s", ps->text.buf);
		if (lex(ps) < 0 || !(b = parse_term(ps))) {
			node_free(a);
			return NULL;
		}
		a = binary(ps, op, a, b);
	}
	if (a && (is_op(ps, "&") || is_op(ps, "|") || is_op(ps, "^") || is_op(ps, "<<") ||
	          is_op(ps, ">>"))) {
		perr(ps, "column %d: bitwise '%s' is not supported", ps->col, ps->text.buf);
		node_free(a);
		return NULL;
	}
	return a;
}

/* The comparison operator at the current token ("not in" and "is not" take two), or 0. */
static int cmp_op(struct parser *ps, char op[8])
{
	static const char *const ops[] = {"<", ">", "==", ">=", "<=", "!="};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (is_op(ps, ops[i])) {
			snprintf(op, 8, "%s", ops[i]);
			return lex(ps) < 0 ? -1 : 1;
		}
	if (is_kw(ps, "in")) {
		snprintf(op, 8, "in");
		return lex(ps) < 0 ? -1 : 1;
	}
	if (is_kw(ps, "is")) {
		if (lex(ps) < 0)
			return -1;
		snprintf(op, 8, "is");
		if (is_kw(ps, "not")) {
			snprintf(op, 8, "is not");
			return lex(ps) < 0 ? -1 : 1;
		}
		return 1;
	}
	if (is_kw(ps, "not")) {
		const char *save = ps->p;

		if (lex(ps) < 0)
			return -1;
		if (!is_kw(ps, "in"))
			return perr(ps, "column %d: expected 'in' after 'not'", ps->col);
		(void)save;
		snprintf(op, 8, "not in");
		return lex(ps) < 0 ? -1 : 1;
	}
	return 0;
}

static struct node *parse_comparison(struct parser *ps)
{
	struct node *a = parse_arith(ps), *cmp = NULL, *b;
	size_t opalloc = 0;
	char op[8];
	int r;

	while (a && (r = cmp_op(ps, op)) != 0) {
		if (r < 0 || !(b = parse_arith(ps)))
			goto fail;
		if (!cmp) {
			cmp = node_new(N_CMP);
			node_add(cmp, a);
		}
		ALLOC_GROW(cmp->ops, cmp->n, opalloc);
		snprintf(cmp->ops[cmp->n - 1], 8, "%s", op);
		node_add(cmp, b);
	}
	return cmp ? cmp : a;
fail:
	node_free(cmp ? cmp : a);
	return NULL;
}

static struct node *parse_not(struct parser *ps)
{
	struct node *n, *x;

	if (!is_kw(ps, "not"))
		return parse_comparison(ps);
	if (lex(ps) < 0 || !(x = nested(ps, parse_not)))
		return NULL;
	n = node_new(N_NOT);
	node_add(n, x);
	return n;
}

/* a and b and c (or with or): one node with every operand. */
static struct node *parse_bool(struct parser *ps, const char *kw, enum nkind k,
                               struct node *(*operand)(struct parser *))
{
	struct node *a = operand(ps), *n = NULL, *b;

	while (a && is_kw(ps, kw)) {
		if (lex(ps) < 0 || !(b = operand(ps))) {
			node_free(n ? n : a);
			return NULL;
		}
		if (!n) {
			n = node_new(k);
			node_add(n, a);
		}
		node_add(n, b);
	}
	return n ? n : a;
}

static struct node *parse_and(struct parser *ps)
{
	return parse_bool(ps, "and", N_AND, parse_not);
}

static struct node *parse_or(struct parser *ps)
{
	return parse_bool(ps, "or", N_OR, parse_and);
}

/* a if c else b */
static struct node *parse_test(struct parser *ps)
{
	struct node *a = parse_or(ps), *c, *b, *n;

	if (!a || !is_kw(ps, "if"))
		return a;
	if (lex(ps) < 0 || !(c = parse_or(ps))) {
		node_free(a);
		return NULL;
	}
	if (!is_kw(ps, "else")) {
		perr(ps, "column %d: expected 'else'", ps->col);
		node_free(a);
		node_free(c);
		return NULL;
	}
	if (lex(ps) < 0 || !(b = nested(ps, parse_test))) {
		node_free(a);
		node_free(c);
		return NULL;
	}
	n = node_new(N_IF);
	node_add(n, c);
	node_add(n, a);
	node_add(n, b);
	return n;
}

/* The whole of src as one expression; NULL with why filled. */
static struct node *py_parse(const char *src, char *why, size_t whylen)
{
	struct parser ps;
	struct node *n = NULL;

	memset(&ps, 0, sizeof(ps));
	ps.src = ps.p = src;
	if (lex(&ps) == 0)
		n = parse_test(&ps);
	if (n && ps.t != TK_END) {
		perr(&ps, "column %d: unexpected '%s' after the expression", ps.col,
		     ps.t == TK_OP || ps.t == TK_NAME ? ps.text.buf : "token");
		node_free(n);
		n = NULL;
	}
	if (!n)
		snprintf(why, whylen, "%s", *ps.err ? ps.err : "cannot parse");
	sb_release(&ps.text);
	return n;
}

/* ------------------------------------------- Python to tuner's expressions */

/* Where a translation or an evaluation says why it failed: the caller's buffer. */
struct evaluator {
	char *why;
	size_t whylen;
	size_t steps; /* values listed so far, in every list: the work done */
};

static int fail_why(struct evaluator *ev, const char *fmt, ...) TUNER_PRINTF(2, 3);

static int fail_why(struct evaluator *ev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ev->why, ev->whylen, fmt, ap);
	va_end(ap);
	return -1;
}

struct emitter {
	const struct import_landscape *ls;
	struct evaluator err;
	int truth; /* the next emit_int() is only tested for truth (a condition, not a number) */
};

static int as_literal(const struct node *n, struct import_lit *out)
{
	memset(out, 0, sizeof(*out));
	switch (n->k) {
	case N_INT:
		out->num = (double)n->i;
		return 1;
	case N_FLOAT:
		out->num = n->f;
		return 1;
	case N_STR:
		out->is_str = 1;
		out->s = n->s;
		return 1;
	case N_NAME:
		if (!strcmp(n->s, "True") || !strcmp(n->s, "False")) {
			out->num = !strcmp(n->s, "True");
			return 1;
		}
		return 0;
	case N_NEG:
	case N_POS:
		if (!as_literal(n->kids[0], out) || out->is_str)
			return 0;
		if (n->k == N_NEG)
			out->num = -out->num;
		return 1;
	default:
		return 0;
	}
}

/* The coded param that n names, or -1. */
static int coded_param(const struct emitter *e, const struct node *n)
{
	int i;

	if (n->k != N_NAME)
		return -1;
	i = import_param_index(e->ls, n->s);
	return i >= 0 && e->ls->params[i].coded ? i : -1;
}

/* Python's a OP b on two constants; -1 when Python would raise (ordering a string and a number). */
static int lit_compare(const struct import_lit *a, const char *op, const struct import_lit *b)
{
	int c;

	if (a->is_str != b->is_str) {
		if (!strcmp(op, "=="))
			return 0;
		if (!strcmp(op, "!="))
			return 1;
		return -1;
	}
	if (a->is_str)
		c = strcmp(a->s, b->s);
	else
		c = a->num < b->num ? -1 : a->num > b->num ? 1 : 0;
	if (!strcmp(op, "<"))
		return c < 0;
	if (!strcmp(op, "<="))
		return c <= 0;
	if (!strcmp(op, ">"))
		return c > 0;
	if (!strcmp(op, ">="))
		return c >= 0;
	if (!strcmp(op, "=="))
		return c == 0;
	return c != 0;
}

static const char *flip(const char *op)
{
	if (!strcmp(op, "<"))
		return ">";
	if (!strcmp(op, "<="))
		return ">=";
	if (!strcmp(op, ">"))
		return "<";
	if (!strcmp(op, ">="))
		return "<=";
	return op;
}

/* -------------------------------------------- Python constants: values */

/*
 * T1's "Values" may be any Python that makes a list: this evaluates the part
 * of it that such files use, on constants only (a comprehension's names are
 * the only variables), with Python's arithmetic: / is true division, // and %
 * floor, ints stay ints.
 */
#define VALUES_MAX 1000000 /* no space lists more values of one param */
/* the values of the lists that make them, in all: '[i for i in range(10**6) for j in
 * range(10**6) if 0]' lists none, in 10**12 steps */
#define EVAL_MAX_STEPS (10 * VALUES_MAX)

struct pyconst {
	struct import_lit lit;
	int is_int; /* a Python int (or bool), not a float */
};

struct binding {
	const char *name;
	struct pyconst val;
	const struct binding *up;
};

struct pylist {
	struct pyconst *v;
	size_t n, alloc;
};

static int list_add(struct evaluator *ev, struct pylist *l, const struct pyconst *c)
{
	if (l->n == VALUES_MAX)
		return fail_why(ev, "more than %d values", VALUES_MAX);
	/* every loop of a comprehension walks a list built here: this bounds them all */
	if (++ev->steps > EVAL_MAX_STEPS)
		return fail_why(ev, "more than %d steps to evaluate", EVAL_MAX_STEPS);
	ALLOC_GROW(l->v, l->n + 1, l->alloc);
	l->v[l->n++] = *c;
	return 0;
}

static int eval_const(struct evaluator *ev, const struct node *n, const struct binding *env,
                      struct pyconst *out);
static int eval_list(struct evaluator *ev, const struct node *n, const struct binding *env,
                     struct pylist *out);

static int truthy(const struct pyconst *c)
{
	return c->lit.is_str ? *c->lit.s != 0 : c->lit.num != 0;
}

static void set_num(struct pyconst *c, double v, int is_int)
{
	memset(c, 0, sizeof(*c));
	c->lit.num = v;
	c->is_int = is_int;
}

/* a OP b on two numbers, as Python computes it. */
static int eval_arith(struct evaluator *ev, const char *op, const struct pyconst *a,
                      const struct pyconst *b, struct pyconst *out)
{
	double x = a->lit.num, y = b->lit.num, q;
	int ints = a->is_int && b->is_int;

	if (a->lit.is_str || b->lit.is_str)
		return fail_why(ev, "'%s' on a string", op);
	if (!strcmp(op, "+"))
		set_num(out, x + y, ints);
	else if (!strcmp(op, "-"))
		set_num(out, x - y, ints);
	else if (!strcmp(op, "*"))
		set_num(out, x * y, ints);
	else if (!strcmp(op, "**"))
		set_num(out, pow(x, y), ints && y >= 0);
	else if (!strcmp(op, "/") || !strcmp(op, "//") || !strcmp(op, "%")) {
		if (y == 0)
			return fail_why(ev, "division by zero");
		q = floor(x / y);
		if (!strcmp(op, "/"))
			set_num(out, x / y, 0);
		else if (!strcmp(op, "//"))
			set_num(out, q, ints);
		else
			set_num(out, ints ? x - y * q : x - y * floor(x / y), ints);
	} else
		return fail_why(ev, "'%s' is not supported", op);
	return 0;
}

static int eval_call(struct evaluator *ev, const struct node *n, const struct binding *env,
                     struct pyconst *out)
{
	struct pyconst a;
	struct pylist l = {0};
	size_t i;

	if ((!strcmp(n->s, "min") || !strcmp(n->s, "max")) && n->n >= 1) {
		/* min(list) or min(a, b, ...) */
		int r = n->n == 1 ? eval_list(ev, n->kids[0], env, &l) : 0;

		for (i = 0; !r && n->n > 1 && i < n->n; i++)
			r = eval_const(ev, n->kids[i], env, &a) < 0 ? -1 : list_add(ev, &l, &a);
		if (!r && !l.n) {
			fail_why(ev, "'%s' of nothing", n->s);
			r = -1;
		}
		if (r) {
			free(l.v);
			return -1;
		}
		*out = l.v[0];
		for (i = 1; i < l.n; i++) {
			int c = lit_compare(&l.v[i].lit, "<", &out->lit);

			if (c < 0) {
				free(l.v);
				return fail_why(ev, "'%s' of strings and numbers", n->s);
			}
			if (!strcmp(n->s, "min") ? c : lit_compare(&l.v[i].lit, ">", &out->lit))
				*out = l.v[i];
		}
		free(l.v);
		return 0;
	}
	if (n->n != 1)
		return fail_why(ev, "the function '%s' is not supported here", n->s);
	if (eval_const(ev, n->kids[0], env, &a) < 0)
		return -1;
	if (a.lit.is_str)
		return fail_why(ev, "'%s' of a string", n->s);
	if (!strcmp(n->s, "int"))
		set_num(out, trunc(a.lit.num), 1);
	else if (!strcmp(n->s, "float"))
		set_num(out, a.lit.num, 0);
	else if (!strcmp(n->s, "abs"))
		set_num(out, fabs(a.lit.num), a.is_int);
	else if (!strcmp(n->s, "round"))
		set_num(out, nearbyint(a.lit.num), 1); /* halves to even, as Python */
	else
		return fail_why(ev, "the function '%s' is not supported here", n->s);
	return 0;
}

static int eval_const(struct evaluator *ev, const struct node *n, const struct binding *env,
                      struct pyconst *out)
{
	struct pyconst a, b;
	const struct binding *bd;
	size_t i;

	memset(out, 0, sizeof(*out));
	switch (n->k) {
	case N_INT:
		set_num(out, (double)n->i, 1);
		return 0;
	case N_FLOAT:
		set_num(out, n->f, 0);
		return 0;
	case N_STR:
		out->lit.is_str = 1;
		out->lit.s = n->s;
		return 0;
	case N_NAME:
		for (bd = env; bd; bd = bd->up)
			if (!strcmp(bd->name, n->s)) {
				*out = bd->val;
				return 0;
			}
		if (!strcmp(n->s, "True") || !strcmp(n->s, "False")) {
			set_num(out, !strcmp(n->s, "True"), 1);
			return 0;
		}
		return fail_why(ev, "unknown name '%s'", n->s);
	case N_NEG:
	case N_POS:
		if (eval_const(ev, n->kids[0], env, &a) < 0)
			return -1;
		if (a.lit.is_str)
			return fail_why(ev, "a sign on a string");
		set_num(out, n->k == N_NEG ? -a.lit.num : a.lit.num, a.is_int);
		return 0;
	case N_NOT:
		if (eval_const(ev, n->kids[0], env, &a) < 0)
			return -1;
		set_num(out, !truthy(&a), 1);
		return 0;
	case N_BIN:
		if (eval_const(ev, n->kids[0], env, &a) < 0 ||
		    eval_const(ev, n->kids[1], env, &b) < 0)
			return -1;
		return eval_arith(ev, n->op, &a, &b, out);
	case N_CMP:
		set_num(out, 1, 1);
		for (i = 0; i + 1 < n->n; i++) {
			int r;

			if (eval_const(ev, n->kids[i], env, &a) < 0 ||
			    eval_const(ev, n->kids[i + 1], env, &b) < 0)
				return -1;
			r = lit_compare(&a.lit, n->ops[i], &b.lit);
			if (r < 0 || strchr(n->ops[i], 'i'))
				return fail_why(ev, "'%s' is not supported here", n->ops[i]);
			if (!r) {
				out->lit.num = 0;
				break;
			}
		}
		return 0;
	case N_AND:
	case N_OR:
		/* Python gives the deciding operand */
		for (i = 0; i < n->n; i++) {
			if (eval_const(ev, n->kids[i], env, out) < 0)
				return -1;
			if (truthy(out) != (n->k == N_AND))
				break;
		}
		return 0;
	case N_IF:
		if (eval_const(ev, n->kids[0], env, &a) < 0)
			return -1;
		return eval_const(ev, n->kids[truthy(&a) ? 1 : 2], env, out);
	case N_CALL:
		return eval_call(ev, n, env, out);
	default:
		return fail_why(ev, "a list where a single value belongs");
	}
}

/* range(stop), range(start, stop[, step]): its ints. */
static int eval_range(struct evaluator *ev, const struct node *n, const struct binding *env,
                      struct pylist *out)
{
	struct pyconst a[3], c;
	double start = 0, stop, step = 1, x;
	size_t i;

	if (n->n < 1 || n->n > 3)
		return fail_why(ev, "range() takes 1 to 3 arguments");
	for (i = 0; i < n->n; i++) {
		if (eval_const(ev, n->kids[i], env, &a[i]) < 0)
			return -1;
		if (!a[i].is_int || a[i].lit.is_str)
			return fail_why(ev, "range() of something that is not an int");
	}
	stop = a[n->n == 1 ? 0 : 1].lit.num;
	if (n->n > 1)
		start = a[0].lit.num;
	if (n->n == 3)
		step = a[2].lit.num;
	if (step == 0)
		return fail_why(ev, "range() with a step of 0");
	for (x = start; step > 0 ? x < stop : x > stop; x += step) {
		set_num(&c, x, 1);
		if (list_add(ev, out, &c) < 0)
			return -1;
	}
	return 0;
}

/* A comprehension's clauses from clause k on, binding names in env; elements into out. */
static int eval_comp(struct evaluator *ev, const struct node *n, size_t k,
                     const struct binding *env, struct pylist *out)
{
	const struct node *cl;
	struct pylist it = {0};
	struct pyconst c;
	struct binding bd;
	size_t i;
	int r = 0;

	if (k == n->n) {
		if (eval_const(ev, n->kids[0], env, &c) < 0)
			return -1;
		return list_add(ev, out, &c);
	}
	cl = n->kids[k];
	if (cl->k == N_FILTER) {
		if (eval_const(ev, cl->kids[0], env, &c) < 0)
			return -1;
		return truthy(&c) ? eval_comp(ev, n, k + 1, env, out) : 0;
	}
	if (eval_list(ev, cl->kids[0], env, &it) < 0) {
		free(it.v);
		return -1;
	}
	bd.name = cl->s;
	bd.up = env;
	for (i = 0; !r && i < it.n; i++) {
		bd.val = it.v[i];
		r = eval_comp(ev, n, k + 1, &bd, out);
	}
	free(it.v);
	return r;
}

static int eval_list(struct evaluator *ev, const struct node *n, const struct binding *env,
                     struct pylist *out)
{
	struct pyconst c;
	size_t i;

	switch (n->k) {
	case N_LIST:
		for (i = 0; i < n->n; i++)
			if (eval_const(ev, n->kids[i], env, &c) < 0 || list_add(ev, out, &c) < 0)
				return -1;
		return 0;
	case N_COMP:
		return eval_comp(ev, n, 1, env, out);
	case N_BIN:
		if (!strcmp(n->op, "+"))
			return eval_list(ev, n->kids[0], env, out) < 0
			           ? -1
			           : eval_list(ev, n->kids[1], env, out);
		break;
	case N_CALL:
		if (!strcmp(n->s, "range"))
			return eval_range(ev, n, env, out);
		if ((!strcmp(n->s, "list") || !strcmp(n->s, "tuple")) && n->n <= 1)
			return n->n ? eval_list(ev, n->kids[0], env, out) : 0;
		break;
	case N_NAME:
		if (eval_const(ev, n, env, &c) < 0)
			return -1; /* an unknown name */
		break;
	default:
		break;
	}
	return fail_why(ev, "not a list, range() or comprehension of constants");
}

/* n as a list of constants; 0, or -1 with why (nothing kept). */
static int values_of(const struct node *n, struct import_values *out, char *why, size_t whylen)
{
	struct evaluator ev = {why, whylen, 0};
	struct pylist l = {0};
	size_t i;

	if (eval_list(&ev, n, NULL, &l) < 0) {
		free(l.v);
		return -1;
	}
	out->v = xcalloc(l.n + 1, sizeof(*out->v));
	out->pool = xcalloc(l.n + 1, sizeof(*out->pool));
	for (i = 0; i < l.n; i++) {
		out->v[i] = l.v[i].lit;
		if (out->v[i].is_str)
			out->v[i].s = out->pool[out->npool++] = xstrdup(out->v[i].s);
	}
	out->n = l.n;
	free(l.v);
	return 0;
}

int import_python_values(const char *python, struct import_values *out, char *why, size_t whylen)
{
	struct node *n = py_parse(python, why, whylen);
	int r;

	memset(out, 0, sizeof(*out));
	if (!n)
		return -1;
	r = values_of(n, out, why, whylen);
	node_free(n);
	return r;
}

void import_values_free(struct import_values *vals)
{
	size_t i;

	for (i = 0; i < vals->npool; i++)
		free(vals->pool[i]);
	free(vals->pool);
	free(vals->v);
	memset(vals, 0, sizeof(*vals));
}

static int emit_int(struct emitter *e, const struct node *n, struct strbuf *out);

/*
 * A translation repeats what '**', abs() and fractions multiplied out take
 * (x ** 3 is x * x * x), so that its length can grow as a power of the
 * input's: ((((x ** 8) ** 8) ** 8) ** 8) is 4096 x's. Checked after every
 * node, this bounds the work; a restriction's translation is far shorter.
 */
#define TRANSLATION_MAX (1 << 16)

static int check_length(struct emitter *e, size_t len)
{
	if (len > TRANSLATION_MAX)
		return fail_why(&e->err, "the translation is longer than %d bytes",
		                TRANSLATION_MAX);
	return 0;
}

/* A coded param against a constant: the codes whose label satisfies it. */
static int emit_coded_cmp(struct emitter *e, int pi, const char *op, const struct import_lit *c,
                          struct strbuf *out)
{
	const struct import_param *p = &e->ls->params[pi];
	size_t i, hits = 0;
	struct strbuf sb = STRBUF_INIT;

	for (i = 0; i < p->n; i++) {
		struct import_lit l = {isnan(p->num[i]), p->num[i], p->labels[i]};
		int r = lit_compare(&l, op, c);

		if (r < 0)
			return fail_why(&e->err, "'%s' compares '%s' (a string) with a number", op,
			                p->name);
		if (r)
			sb_addf(&sb, "%s%s == %lld", hits++ ? " || " : "", p->name, p->values[i]);
	}
	if (!hits)
		sb_adds(out, "0");
	else if (hits == p->n)
		sb_adds(out, "1");
	else
		sb_addf(out, "(%s)", sb.buf);
	sb_release(&sb);
	return 0;
}

/*
 * The values that n takes over the params' domains: lo to hi, infinite where
 * unknown. Enough to tell whether an operand can be negative, which is all it
 * is asked: where none of // and % can be, C's truncation is Python's floor,
 * and where no divisor can be, a comparison of fractions multiplies out.
 */
static void value_range(const struct emitter *e, const struct node *n, double *lo, double *hi);

static void range_mul(double alo, double ahi, double blo, double bhi, double *lo, double *hi)
{
	double p[4] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
	size_t i;

	/* fmin and fmax pass over the NaN of 0 * inf; all four NaN stays NaN: unknown */
	*lo = *hi = p[0];
	for (i = 1; i < 4; i++) {
		*lo = fmin(*lo, p[i]);
		*hi = fmax(*hi, p[i]);
	}
}

static void range_of_bin(const struct emitter *e, const struct node *n, double *lo, double *hi)
{
	double alo, ahi, blo, bhi;
	long long k;

	value_range(e, n->kids[0], &alo, &ahi);
	value_range(e, n->kids[1], &blo, &bhi);
	if (!strcmp(n->op, "+")) {
		*lo = alo + blo;
		*hi = ahi + bhi;
	} else if (!strcmp(n->op, "-")) {
		*lo = alo - bhi;
		*hi = ahi - blo;
	} else if (!strcmp(n->op, "*")) {
		range_mul(alo, ahi, blo, bhi, lo, hi);
	} else if (!strcmp(n->op, "**") && n->kids[1]->k == N_INT && n->kids[1]->i >= 0 &&
	           n->kids[1]->i <= 8) {
		*lo = *hi = 1;
		for (k = 0; k < n->kids[1]->i; k++)
			range_mul(*lo, *hi, alo, ahi, lo, hi);
	} else if (alo >= 0 && blo >= 0 &&
	           (!strcmp(n->op, "/") || !strcmp(n->op, "//") || !strcmp(n->op, "%"))) {
		*lo = 0;
		*hi = !strcmp(n->op, "%") ? bhi : INFINITY;
	}
}

static void value_range(const struct emitter *e, const struct node *n, double *lo, double *hi)
{
	double klo, khi;
	size_t i, nargs = n->n;
	const struct node *const *args = (const struct node *const *)n->kids;
	int pi;

	*lo = -INFINITY;
	*hi = INFINITY;
	switch (n->k) {
	case N_INT:
		*lo = *hi = (double)n->i;
		break;
	case N_FLOAT:
		*lo = *hi = n->f;
		break;
	case N_NAME:
		if (!strcmp(n->s, "True") || !strcmp(n->s, "False")) {
			*lo = *hi = !strcmp(n->s, "True");
			break;
		}
		pi = import_param_index(e->ls, n->s);
		if (pi < 0 || e->ls->params[pi].coded)
			break;
		*lo = *hi = (double)e->ls->params[pi].values[0];
		for (i = 1; i < e->ls->params[pi].n; i++) {
			*lo = fmin(*lo, (double)e->ls->params[pi].values[i]);
			*hi = fmax(*hi, (double)e->ls->params[pi].values[i]);
		}
		break;
	case N_NEG:
		value_range(e, n->kids[0], &klo, &khi);
		*lo = -khi;
		*hi = -klo;
		break;
	case N_POS:
		value_range(e, n->kids[0], lo, hi);
		break;
	case N_NOT:
	case N_CMP:
		*lo = 0;
		*hi = 1;
		break;
	case N_AND:
	case N_OR:
	case N_IF:
		/* one of the operands (the branches), or a truth value */
		*lo = n->k == N_IF ? INFINITY : 0;
		*hi = n->k == N_IF ? -INFINITY : 1;
		for (i = n->k == N_IF; i < n->n; i++) {
			value_range(e, n->kids[i], &klo, &khi);
			*lo = fmin(*lo, klo);
			*hi = fmax(*hi, khi);
		}
		break;
	case N_BIN:
		range_of_bin(e, n, lo, hi);
		break;
	case N_CALL:
		if (nargs == 1 && args[0]->k == N_LIST) {
			nargs = args[0]->n;
			args = (const struct node *const *)args[0]->kids;
		}
		if (nargs && (!strcmp(n->s, "min") || !strcmp(n->s, "max"))) {
			int is_min = !strcmp(n->s, "min");

			value_range(e, args[0], lo, hi);
			for (i = 1; i < nargs; i++) {
				value_range(e, args[i], &klo, &khi);
				*lo = is_min ? fmin(*lo, klo) : fmax(*lo, klo);
				*hi = is_min ? fmin(*hi, khi) : fmax(*hi, khi);
			}
		} else if (n->n == 1 && !strcmp(n->s, "abs")) {
			value_range(e, n->kids[0], &klo, &khi);
			*lo = klo >= 0 ? klo : khi <= 0 ? -khi : 0;
			*hi = fmax(fabs(klo), fabs(khi));
		} else if (n->n == 1 && !strcmp(n->s, "int")) {
			value_range(e, n->kids[0], &klo, &khi);
			*lo = floor(klo);
			*hi = ceil(khi);
		}
		break;
	default:
		break;
	}
	if (isnan(*lo))
		*lo = -INFINITY;
	if (isnan(*hi))
		*hi = INFINITY;
}

/* The operands of n (a // b, a % b: both; a / b: b) must not be negative. */
static int check_signs(struct emitter *e, const struct node *n)
{
	double lo, hi;
	size_t i;

	for (i = strcmp(n->op, "/") ? 0 : 1; i < 2; i++) {
		const struct node *x = n->kids[i];
		char what[80];

		value_range(e, x, &lo, &hi);
		if (lo >= 0)
			continue;
		if (x->k == N_NAME)
			snprintf(what, sizeof(what), "'%.60s', which", x->s);
		else
			snprintf(what, sizeof(what), "an operand that");
		return fail_why(&e->err,
		                "'%s' with %s can be negative (down to %g): Python floors where "
		                "tuner truncates, and a negative divisor would turn a comparison "
		                "of fractions round",
		                n->op, what, lo);
	}
	return 0;
}

/*
 * True division. tuner's expressions are integer ones, so a subexpression
 * with '/' (or a fraction like 0.5) is carried as a fraction, numerator over denominator, exactly,
 * and a comparison of two fractions multiplies out (a/b < c/d as a*d < c*b): the denominators are
 * products of the divisors, positive where no divisor can be negative (check_signs()).
 */
static int needs_frac(const struct node *n)
{
	size_t i;

	switch (n->k) {
	case N_FLOAT:
		return n->f != floor(n->f);
	case N_BIN:
		if (!strcmp(n->op, "/"))
			return 1;
		/* fall through */
	case N_NEG:
	case N_POS:
	case N_CALL:
		for (i = 0; i < n->n; i++)
			if (needs_frac(n->kids[i]))
				return 1;
		return 0;
	case N_IF:
		return needs_frac(n->kids[1]) || needs_frac(n->kids[2]);
	default:
		return 0;
	}
}

/* x * y where an empty text is 1 (and 0 times anything 0). */
static void frac_mul(struct strbuf *out, const char *x, const char *y)
{
	if (!strcmp(x, "0") || !strcmp(y, "0"))
		sb_adds(out, "0");
	else if (!*x || !*y)
		sb_adds(out, *x ? x : y);
	else
		sb_addf(out, "(%s * %s)", x, y);
}

struct frac {
	struct strbuf num, den; /* den empty: 1 */
};

static void frac_init(struct frac *f)
{
	static const struct strbuf empty = STRBUF_INIT;

	f->num = empty;
	f->den = empty;
	sb_adds(&f->num, ""); /* buffers from the start: an empty den is read as 1 */
	sb_adds(&f->den, "");
}

static void frac_release(struct frac *f)
{
	sb_release(&f->num);
	sb_release(&f->den);
}

static int emit_frac(struct emitter *e, const struct node *n, struct frac *out);

/* Both operands of n as fractions: the work of the cases below. */
static int frac_pair(struct emitter *e, const struct node *x, const struct node *y, struct frac *a,
                     struct frac *b)
{
	frac_init(a);
	frac_init(b);
	if (emit_frac(e, x, a) < 0 || emit_frac(e, y, b) < 0) {
		frac_release(a);
		frac_release(b);
		return -1;
	}
	return 0;
}

/* The numerators of a and b over their common denominator ad bd: an bd and bn ad. */
static void frac_common(const struct frac *a, const struct frac *b, struct strbuf *x,
                        struct strbuf *y)
{
	frac_mul(x, a->num.buf, b->den.buf);
	frac_mul(y, b->num.buf, a->den.buf);
}

/* a OP b over the common denominator: (an bd OP bn ad) / (ad bd). */
static void frac_cross(const struct frac *a, const char *op, const struct frac *b,
                       struct strbuf *out)
{
	struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

	frac_common(a, b, &x, &y);
	sb_addf(out, "(%s %s %s)", x.buf, op, y.buf);
	sb_release(&x);
	sb_release(&y);
}

static int emit_frac_bin(struct emitter *e, const struct node *n, struct frac *out)
{
	const char *op = n->op;
	struct frac a, b;
	long long k;

	if (!strcmp(op, "**")) {
		if (n->kids[1]->k != N_INT || n->kids[1]->i < 0 || n->kids[1]->i > 8)
			return fail_why(&e->err, "'**' needs a constant exponent from 0 to 8");
		frac_init(&a);
		if (emit_frac(e, n->kids[0], &a) < 0) {
			frac_release(&a);
			return -1;
		}
		sb_adds(&out->num, n->kids[1]->i ? "(" : "1");
		sb_adds(&out->den, n->kids[1]->i && *a.den.buf ? "(" : "");
		for (k = 0; k < n->kids[1]->i; k++) {
			sb_addf(&out->num, "%s%s", k ? " * " : "", a.num.buf);
			if (*a.den.buf)
				sb_addf(&out->den, "%s%s", k ? " * " : "", a.den.buf);
		}
		sb_adds(&out->num, n->kids[1]->i ? ")" : "");
		sb_adds(&out->den, n->kids[1]->i && *a.den.buf ? ")" : "");
		frac_release(&a);
		return 0;
	}
	if (strcmp(op, "+") && strcmp(op, "-") && strcmp(op, "*") && strcmp(op, "/") &&
	    strcmp(op, "//") && strcmp(op, "%"))
		return fail_why(&e->err, "'%s' is not supported", op);
	if (frac_pair(e, n->kids[0], n->kids[1], &a, &b) < 0)
		return -1;
	if ((!strcmp(op, "/") || !strcmp(op, "//") || !strcmp(op, "%")) && check_signs(e, n) < 0) {
		frac_release(&a);
		frac_release(&b);
		return -1;
	}
	if (!strcmp(op, "+") || !strcmp(op, "-")) {
		frac_cross(&a, op, &b, &out->num);
		frac_mul(&out->den, a.den.buf, b.den.buf);
	} else if (!strcmp(op, "*")) {
		sb_addf(&out->num, "(%s * %s)", a.num.buf, b.num.buf);
		frac_mul(&out->den, a.den.buf, b.den.buf);
	} else {
		/* a / b = (an bd) / (ad bn); a // b its floor; a % b = (an bd mod bn ad) / (ad bd)
		 */
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

		frac_common(&a, &b, &x, &y);
		if (!strcmp(op, "/")) {
			sb_adds(&out->num, x.buf);
			sb_adds(&out->den, y.buf);
		} else {
			sb_addf(&out->num, "(%s %s %s)", x.buf, !strcmp(op, "//") ? "/" : "%",
			        y.buf);
			if (!strcmp(op, "%"))
				frac_mul(&out->den, a.den.buf, b.den.buf);
		}
		sb_release(&x);
		sb_release(&y);
	}
	frac_release(&a);
	frac_release(&b);
	return 0;
}

/* n as a fraction; a subtree without '/' is its integer expression over 1. */
static int emit_frac_node(struct emitter *e, const struct node *n, struct frac *out)
{
	struct frac a, b;
	size_t i;
	double p;
	int r = 0;

	if (n->k == N_FLOAT && n->f != floor(n->f)) {
		/*
		 * an exact decimal: 0.75 is 75 / 100. The digits are those that read back
		 * as the same double, not those within some distance of it: 1e-8 * 10 is
		 * within 1e-6 of 0, and 1e-8 is not 0 / 10.
		 */
		for (i = 1, p = 10; i <= 9; i++, p *= 10)
			if (nearbyint(n->f * p) / p == n->f) {
				sb_addf(&out->num, "%.0f", nearbyint(n->f * p));
				sb_addf(&out->den, "%.0f", p);
				return 0;
			}
		return fail_why(&e->err, "the fraction %g is not a short decimal", n->f);
	}
	if (!needs_frac(n))
		return emit_int(e, n, &out->num);
	switch (n->k) {
	case N_BIN:
		return emit_frac_bin(e, n, out);
	case N_NEG:
	case N_POS:
		frac_init(&a);
		r = emit_frac(e, n->kids[0], &a);
		if (!r) {
			sb_addf(&out->num, n->k == N_NEG ? "(-%s)" : "%s", a.num.buf);
			sb_adds(&out->den, a.den.buf);
		}
		frac_release(&a);
		return r;
	case N_IF:
		if (frac_pair(e, n->kids[1], n->kids[2], &a, &b) < 0)
			return -1;
		sb_adds(&out->num, "(");
		e->truth = 1;
		r = emit_int(e, n->kids[0], &out->num);
		sb_adds(&out->num, " ? ");
		frac_mul(&out->num, a.num.buf, b.den.buf);
		sb_adds(&out->num, " : ");
		frac_mul(&out->num, b.num.buf, a.den.buf);
		sb_adds(&out->num, ")");
		frac_mul(&out->den, a.den.buf, b.den.buf);
		frac_release(&a);
		frac_release(&b);
		return r;
	case N_CALL:
		if (!strcmp(n->s, "int") && n->n == 1) {
			frac_init(&a);
			r = emit_frac(e, n->kids[0], &a);
			if (!r)
				sb_addf(&out->num, *a.den.buf ? "(%s / %s)" : "%s", a.num.buf,
				        a.den.buf);
			frac_release(&a);
			return r;
		}
		if ((!strcmp(n->s, "min") || !strcmp(n->s, "max")) && n->n == 2) {
			struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

			if (frac_pair(e, n->kids[0], n->kids[1], &a, &b) < 0)
				return -1;
			frac_common(&a, &b, &x, &y);
			sb_addf(&out->num, "%s(%s, %s)", n->s, x.buf, y.buf);
			frac_mul(&out->den, a.den.buf, b.den.buf);
			sb_release(&x);
			sb_release(&y);
			frac_release(&a);
			frac_release(&b);
			return 0;
		}
		return fail_why(
		    &e->err,
		    "'%s' of a true division is not supported (int, and min or max of two)", n->s);
	default:
		return fail_why(&e->err, "unsupported expression");
	}
}

static int emit_compare(struct emitter *e, const struct node *a, const char *op,
                        const struct node *b, struct strbuf *out);

/* a in range(...) or a comprehension: the same as 'in' the list of its values. */
static int emit_in_values(struct emitter *e, const struct node *a, const char *op,
                          const struct node *b, struct strbuf *out)
{
	struct import_values vals = {0};
	struct node *list;
	size_t i;
	int r;

	if (values_of(b, &vals, e->err.why, e->err.whylen) < 0) {
		import_values_free(&vals);
		return fail_why(
		    &e->err,
		    "'%s' needs a list, tuple, range() or comprehension of constants on "
		    "its right",
		    op);
	}
	list = node_new(N_LIST);
	for (i = 0; i < vals.n; i++) {
		const struct import_lit *l = &vals.v[i];
		struct node *k =
		    node_new(l->is_str                                        ? N_STR
		             : l->num == floor(l->num) && fabs(l->num) < 9e15 ? N_INT
		                                                              : N_FLOAT);

		if (k->k == N_STR)
			k->s = xstrdup(l->s);
		else if (k->k == N_INT)
			k->i = (long long)l->num; /* 2**70 does not fit: it stays a float */
		k->f = l->num;
		node_add(list, k);
	}
	r = emit_compare(e, a, op, list, out);
	node_free(list);
	import_values_free(&vals);
	return r;
}

/* a OP b for one link of a comparison chain. */
static int emit_compare(struct emitter *e, const struct node *a, const char *op,
                        const struct node *b, struct strbuf *out)
{
	struct import_lit la, lb;
	int pa = coded_param(e, a), pb = coded_param(e, b), ka, kb;
	size_t i;

	if (!strcmp(op, "is") || !strcmp(op, "is not"))
		return fail_why(&e->err, "'%s' is not supported", op);
	if (!strcmp(op, "in") || !strcmp(op, "not in")) {
		if (b->k != N_LIST)
			return emit_in_values(e, a, op, b, out);
		sb_adds(out, strcmp(op, "in") ? "!(" : "(");
		if (!b->n)
			sb_adds(out, "0");
		for (i = 0; i < b->n; i++) {
			if (i)
				sb_adds(out, " || ");
			if (emit_compare(e, a, "==", b->kids[i], out) < 0)
				return -1;
		}
		sb_adds(out, ")");
		return 0;
	}
	ka = as_literal(a, &la);
	kb = as_literal(b, &lb);
	if (pa >= 0 && kb)
		return emit_coded_cmp(e, pa, op, &lb, out);
	if (pb >= 0 && ka)
		return emit_coded_cmp(e, pb, flip(op), &la, out);
	if (pa >= 0 && pa == pb && (!strcmp(op, "==") || !strcmp(op, "!="))) {
		sb_addf(out, "(%s %s %s)", a->s, op, b->s);
		return 0;
	}
	if (pa >= 0 || pb >= 0)
		return fail_why(&e->err,
		                "'%s' takes values that are not integers: it can only be compared "
		                "with constants",
		                e->ls->params[pa >= 0 ? pa : pb].name);
	if (ka && kb) {
		int r = lit_compare(&la, op, &lb);

		if (r < 0)
			return fail_why(&e->err, "'%s' compares a string with a number", op);
		sb_adds(out, r ? "1" : "0");
		return 0;
	}
	/* an integer against a fraction: the integer comparison that means the same */
	if (((ka && !la.is_str && la.num != floor(la.num)) ||
	     (kb && !lb.is_str && lb.num != floor(lb.num))) &&
	    !needs_frac(kb ? a : b)) {
		const struct node *x = kb ? a : b;
		double f = kb ? lb.num : la.num;

		if (!kb)
			op = flip(op);
		if (!strcmp(op, "==") || !strcmp(op, "!=")) {
			sb_adds(out, !strcmp(op, "==") ? "0" : "1");
			return 0;
		}
		sb_adds(out, "(");
		if (emit_int(e, x, out) < 0)
			return -1;
		sb_addf(out, " %s %.0f)", op,
		        !strcmp(op, "<") || !strcmp(op, ">=") ? ceil(f) : floor(f));
		return 0;
	}
	if ((ka && la.is_str) || (kb && lb.is_str))
		return fail_why(&e->err, "a string is compared with a number");
	if (needs_frac(a) || needs_frac(b)) {
		struct frac fa, fb;

		if (frac_pair(e, a, b, &fa, &fb) < 0)
			return -1;
		frac_cross(&fa, op, &fb, out);
		frac_release(&fa);
		frac_release(&fb);
		return 0;
	}
	sb_adds(out, "(");
	if (emit_int(e, a, out) < 0)
		return -1;
	sb_addf(out, " %s ", op);
	if (emit_int(e, b, out) < 0)
		return -1;
	sb_adds(out, ")");
	return 0;
}

/* min(a, b, c) or max([a, b]) as nested two-argument calls. */
static int emit_minmax(struct emitter *e, const struct node *n, struct strbuf *out)
{
	const struct node *const *args = (const struct node *const *)n->kids;
	size_t nargs = n->n, i;

	if (nargs == 1 && args[0]->k == N_LIST) {
		nargs = args[0]->n;
		args = (const struct node *const *)args[0]->kids;
	}
	if (!nargs)
		return fail_why(&e->err, "'%s' of nothing", n->s);
	for (i = 0; i + 1 < nargs; i++)
		sb_addf(out, "%s(", n->s);
	for (i = 0; i < nargs; i++) {
		if (emit_int(e, args[i], out) < 0)
			return -1;
		sb_adds(out, i ? ")" : "");
		if (i + 1 < nargs)
			sb_adds(out, ", ");
	}
	return 0;
}

static int emit_call(struct emitter *e, const struct node *n, struct strbuf *out)
{
	if (!strcmp(n->s, "min") || !strcmp(n->s, "max"))
		return emit_minmax(e, n, out);
	if (!strcmp(n->s, "abs") && n->n == 1) {
		struct strbuf x = STRBUF_INIT;
		int r = emit_int(e, n->kids[0], &x);

		if (!r)
			sb_addf(out, "(%s < 0 ? -%s : %s)", x.buf, x.buf, x.buf);
		sb_release(&x);
		return r;
	}
	if (!strcmp(n->s, "int") && n->n == 1)
		return emit_int(e, n->kids[0], out); /* of an integer: itself */
	return fail_why(&e->err, "the function '%s' is not supported (min, max, abs)", n->s);
}

static int emit_bin(struct emitter *e, const struct node *n, struct strbuf *out)
{
	const char *op = n->op;
	long long k;

	if (!strcmp(op, "@"))
		return fail_why(&e->err, "'@' is not supported");
	if (!strcmp(op, "**")) {
		if (n->kids[1]->k != N_INT || n->kids[1]->i < 0 || n->kids[1]->i > 8)
			return fail_why(&e->err, "'**' needs a constant exponent from 0 to 8");
		if (!n->kids[1]->i)
			return sb_adds(out, "1"), 0;
		sb_adds(out, "(");
		for (k = 0; k < n->kids[1]->i; k++) {
			if (k)
				sb_adds(out, " * ");
			if (emit_int(e, n->kids[0], out) < 0)
				return -1;
		}
		sb_adds(out, ")");
		return 0;
	}
	sb_adds(out, "(");
	if (emit_int(e, n->kids[0], out) < 0)
		return -1;
	sb_addf(out, " %s ", !strcmp(op, "//") ? "/" : op);
	if (emit_int(e, n->kids[1], out) < 0)
		return -1;
	sb_adds(out, ")");
	/* C truncates where Python floors: the same only when no operand is negative */
	if ((!strcmp(op, "//") || !strcmp(op, "%")) && check_signs(e, n) < 0)
		return -1;
	return 0;
}

/* Whether n is True or False, whatever its operands: a comparison, a 'not', ... */
static int is_truth_value(const struct node *n)
{
	size_t i;

	switch (n->k) {
	case N_CMP:
	case N_NOT:
		return 1;
	case N_INT:
		return n->i == 0 || n->i == 1;
	case N_NAME:
		return !strcmp(n->s, "True") || !strcmp(n->s, "False");
	case N_AND:
	case N_OR:
		for (i = 0; i < n->n; i++)
			if (!is_truth_value(n->kids[i]))
				return 0;
		return 1;
	case N_IF:
		return is_truth_value(n->kids[1]) && is_truth_value(n->kids[2]);
	default:
		return 0;
	}
}

/* n as an integer-valued expression of tuner's language (truth values are 1 and 0). */
static int emit_int_node(struct emitter *e, const struct node *n, struct strbuf *out)
{
	int truth = e->truth, pi;
	size_t i;

	e->truth = 0;
	if (n->k != N_FLOAT && needs_frac(n)) {
		struct frac f;
		int r;

		frac_init(&f);
		r = emit_frac(e, n, &f);
		if (!r && *f.den.buf)
			r = fail_why(
			    &e->err,
			    "a true division or a fraction whose value is used as a number, "
			    "not compared");
		if (!r)
			sb_adds(out, f.num.buf);
		frac_release(&f);
		return r;
	}

	switch (n->k) {
	case N_INT:
		sb_addf(out, "%lld", n->i);
		return 0;
	case N_FLOAT:
		if (n->f != floor(n->f))
			return fail_why(
			    &e->err, "the fraction %g has no place in an integer expression", n->f);
		if (fabs(n->f) > 9e15)
			return fail_why(&e->err, "the number %g is too large for tuner's integers",
			                n->f);
		sb_addf(out, "%.0f", n->f);
		return 0;
	case N_STR:
		return fail_why(&e->err, "the string '%s' can only be compared with a param", n->s);
	case N_NAME:
		if (!strcmp(n->s, "True") || !strcmp(n->s, "False")) {
			sb_adds(out, !strcmp(n->s, "True") ? "1" : "0");
			return 0;
		}
		pi = import_param_index(e->ls, n->s);
		if (pi < 0)
			return fail_why(&e->err, "unknown name '%s': not a param", n->s);
		if (e->ls->params[pi].coded)
			return fail_why(&e->err,
			                "'%s' takes values that are not integers: it can only be "
			                "compared with constants",
			                n->s);
		sb_adds(out, n->s);
		return 0;
	case N_NEG:
	case N_POS:
	case N_NOT:
		sb_adds(out, n->k == N_NEG ? "(-" : n->k == N_NOT ? "(!" : "(");
		e->truth = n->k == N_NOT;
		if (emit_int(e, n->kids[0], out) < 0)
			return -1;
		sb_adds(out, ")");
		return 0;
	case N_BIN:
		return emit_bin(e, n, out);
	case N_CMP: {
		/* a < b < c: a < b && b < c, leaving out links that always hold */
		struct strbuf all = STRBUF_INIT, link = STRBUF_INIT;
		size_t kept = 0;

		for (i = 0; i + 1 < n->n; i++) {
			sb_reset(&link);
			if (emit_compare(e, n->kids[i], n->ops[i], n->kids[i + 1], &link) < 0) {
				sb_release(&all);
				sb_release(&link);
				return -1;
			}
			if (!strcmp(link.buf, "1"))
				continue;
			sb_addf(&all, "%s%s", kept++ ? " && " : "", link.buf);
		}
		if (!kept)
			sb_adds(out, "1");
		else
			sb_addf(out, kept > 1 ? "(%s)" : "%s", all.buf);
		sb_release(&all);
		sb_release(&link);
		return 0;
	}
	case N_AND:
	case N_OR:
		/* Python's 'a and b' is a or b, not a truth value: the same as && where it is
		 * tested */
		if (!truth && !is_truth_value(n))
			return fail_why(
			    &e->err,
			    "'%s' gives one of its operands in Python, not a truth value: "
			    "its value can only be tested, not used as a number",
			    n->k == N_AND ? "and" : "or");
		sb_adds(out, "(");
		for (i = 0; i < n->n; i++) {
			if (i)
				sb_adds(out, n->k == N_AND ? " && " : " || ");
			e->truth = 1;
			if (emit_int(e, n->kids[i], out) < 0)
				return -1;
		}
		sb_adds(out, ")");
		return 0;
	case N_CALL:
		return emit_call(e, n, out);
	case N_IF:
		sb_adds(out, "(");
		e->truth = 1;
		if (emit_int(e, n->kids[0], out) < 0)
			return -1;
		sb_adds(out, " ? ");
		e->truth = truth;
		if (emit_int(e, n->kids[1], out) < 0)
			return -1;
		sb_adds(out, " : ");
		e->truth = truth;
		if (emit_int(e, n->kids[2], out) < 0)
			return -1;
		sb_adds(out, ")");
		return 0;
	case N_LIST:
	case N_COMP:
	case N_FOR:
	case N_FILTER:
		return fail_why(&e->err, "a list, tuple or comprehension can only follow 'in'");
	}
	return fail_why(&e->err, "unsupported expression");
}

static int emit_int(struct emitter *e, const struct node *n, struct strbuf *out)
{
	return emit_int_node(e, n, out) < 0 ? -1 : check_length(e, out->len);
}

static int emit_frac(struct emitter *e, const struct node *n, struct frac *out)
{
	return emit_frac_node(e, n, out) < 0 ? -1 : check_length(e, out->num.len + out->den.len);
}

char *import_translate(const struct import_landscape *ls, const char *python, char *why,
                       size_t whylen)
{
	struct emitter e = {ls, {why, whylen, 0}, 1};
	struct strbuf out = STRBUF_INIT;
	struct expr_err ee;
	struct expr *check;
	struct node *n = py_parse(python, why, whylen);

	if (!n)
		return NULL;
	if (emit_int(&e, n, &out) < 0) {
		node_free(n);
		sb_release(&out);
		return NULL;
	}
	node_free(n);
	check = expr_parse(out.buf, &ee);
	if (!check) {
		snprintf(why, whylen, "the translation '%s' does not parse: %s", out.buf, ee.msg);
		sb_release(&out);
		return NULL;
	}
	expr_free(check);
	return sb_detach(&out);
}
