/* A small recursive-descent parser and checked evaluator for C-syntax expressions: integers, and
 * floating values where a literal or a function makes them. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/expr.h"

/*
 * Nesting limits keep both the parser and the evaluator off the end of the
 * stack: EXPR_MAX_NEST bounds parser recursion (parentheses, unary chains,
 * call arguments, ?:), EXPR_MAX_DEPTH bounds the height of the tree, which
 * left-associative chains such as 1+1+...+1 grow without parser recursion.
 */
#define EXPR_MAX_NEST  200
#define EXPR_MAX_DEPTH 1000

/* ------------------------------------------------------------------ tokens */

enum tok_kind {
	T_EOF,
	T_NUM,
	T_IDENT,
	T_LPAREN,
	T_RPAREN,
	T_COMMA,
	T_QUEST,
	T_COLON,
	T_PLUS,
	T_MINUS,
	T_STAR,
	T_SLASH,
	T_PERCENT,
	T_NOT,
	T_SHL,
	T_SHR,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_EQ,
	T_NE,
	T_AND,
	T_OR,
};

struct token {
	enum tok_kind kind;
	size_t off; /* byte offset into the source */
	size_t len;
	long long value; /* T_NUM */
	double fvalue;   /* T_NUM with is_float */
	int is_float;
};

/* ------------------------------------------------------------------- tree */

enum node_kind { N_NUM, N_VAR, N_UNARY, N_BINARY, N_COND, N_CALL };

enum func {
	F_MIN,
	F_MAX,
	F_CEIL_DIV,
	F_ABS,
	F_SQRT,
	F_RSQRT,
	F_EXP,
	F_LOG,
	F_LOG2,
	F_POW,
	F_FLOAT,
	F_FLOOR,
	F_CEIL,
};

static const struct {
	const char *name;
	enum func fn;
	int nargs;
} funcs[] = {
    {"min", F_MIN, 2},   {"max", F_MAX, 2},     {"ceil_div", F_CEIL_DIV, 2}, {"abs", F_ABS, 1},
    {"sqrt", F_SQRT, 1}, {"rsqrt", F_RSQRT, 1}, {"exp", F_EXP, 1},           {"log", F_LOG, 1},
    {"log2", F_LOG2, 1}, {"pow", F_POW, 2},     {"float", F_FLOAT, 1},       {"floor", F_FLOOR, 1},
    {"ceil", F_CEIL, 1},
};

int expr_is_function(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++)
		if (!strcmp(funcs[i].name, name))
			return 1;
	return 0;
}

/* A value: an integer, or (is_float) a double. */
struct val {
	int is_float;
	long long i;
	double f;
};

struct node {
	enum node_kind kind;
	enum tok_kind op; /* N_UNARY, N_BINARY */
	enum func fn;     /* N_CALL */
	int col;          /* 1-based column of the token that names the node */
	int depth;        /* height of the subtree, 1 for a leaf */
	struct val value; /* N_NUM */
	char *name;       /* N_VAR, N_CALL */
	struct node *kid[3];
};

struct expr {
	char *text;
	struct node *root;
};

static void set_err(struct expr_err *err, int col, const char *fmt, ...) TUNER_PRINTF(3, 4);

static void set_err(struct expr_err *err, int col, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	err->col = col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(n->kid); i++)
		node_free(n->kid[i]);
	free(n->name);
	free(n);
}

/* ------------------------------------------------------------------ lexer */

struct lexer {
	const char *src;
	struct token *toks;
	size_t nr, alloc;
};

static int is_ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static int is_ident_char(int c)
{
	return isalnum(c) || c == '_';
}

/* Describe the character at s for a message: printable ones as themselves, others as \xNN. */
static const char *char_desc(unsigned char c, char buf[8])
{
	if (isprint(c))
		snprintf(buf, 8, "%c", c);
	else
		snprintf(buf, 8, "\\x%02x", c);
	return buf;
}

/* A decimal floating constant at src[start]: digits with a '.' or an exponent. 1 if one is there.
 */
static int lex_float(const char *src, size_t start, size_t *end, double *out, struct expr_err *err)
{
	size_t i = start;
	int dot = 0, expo = 0;
	char *stop;

	while (isdigit((unsigned char)src[i]))
		i++;
	if (src[i] == '.') {
		dot = 1;
		i++;
		while (isdigit((unsigned char)src[i]))
			i++;
	}
	if ((src[i] == 'e' || src[i] == 'E') &&
	    (isdigit((unsigned char)src[i + 1]) ||
	     ((src[i + 1] == '+' || src[i + 1] == '-') && isdigit((unsigned char)src[i + 2]))))
		expo = 1;
	if (!dot && !expo)
		return 0;
	if (src[start] == '0' && (src[start + 1] == 'x' || src[start + 1] == 'X'))
		return 0;
	*out = strtod(src + start, &stop);
	i = (size_t)(stop - src);
	if (is_ident_char((unsigned char)src[i])) {
		size_t e = i;

		while (is_ident_char((unsigned char)src[e]))
			e++;
		set_err(err, (int)i + 1, "invalid suffix '%.*s' on floating constant",
		        (int)(e - i > 20 ? 20 : e - i), src + i);
		return -1;
	}
	if (!isfinite(*out)) {
		set_err(err, (int)start + 1, "floating constant '%.*s' is out of range",
		        (int)(i - start > 40 ? 40 : i - start), src + start);
		return -1;
	}
	*end = i;
	return 1;
}

/* Scan a C integer constant (decimal, 0x hex, 0 octal) starting at src[*pos]. */
static int lex_number(const char *src, size_t *pos, long long *out, struct expr_err *err)
{
	size_t start = *pos, i = *pos;
	unsigned base = 10;
	unsigned long long v = 0;
	int digits = 0, too_big = 0;

	if (src[i] == '0' && (src[i + 1] == 'x' || src[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (src[i] == '0') {
		base = 8;
	}
	for (;; i++) {
		int c = (unsigned char)src[i];
		unsigned d;

		if (isdigit(c))
			d = (unsigned)(c - '0');
		else if (base == 16 && isxdigit(c))
			d = (unsigned)(tolower(c) - 'a' + 10);
		else
			break;
		if (d >= base) {
			set_err(err, (int)i + 1, "invalid digit '%c' in octal constant", c);
			return -1;
		}
		digits++;
		if (v > ((unsigned long long)LLONG_MAX - d) / base)
			too_big = 1;
		else
			v = v * base + d;
	}
	if (base == 16 && !digits) {
		set_err(err, (int)start + 1, "invalid hexadecimal constant");
		return -1;
	}
	if (is_ident_char((unsigned char)src[i])) {
		size_t e = i;

		while (is_ident_char((unsigned char)src[e]))
			e++;
		set_err(err, (int)i + 1, "invalid suffix '%.*s' on integer constant",
		        (int)(e - i > 20 ? 20 : e - i), src + i);
		return -1;
	}
	if (too_big) {
		set_err(err, (int)start + 1, "integer constant '%.*s' is too large",
		        (int)(i - start > 40 ? 40 : i - start), src + start);
		return -1;
	}
	*pos = i;
	*out = (long long)v;
	return 0;
}

static struct token *push(struct lexer *lx, enum tok_kind kind, size_t off, size_t len,
                          long long value)
{
	struct token *t;

	ALLOC_GROW(lx->toks, lx->nr + 1, lx->alloc);
	t = &lx->toks[lx->nr++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->off = off;
	t->len = len;
	t->value = value;
	return t;
}

/* Split the source into tokens, ending with T_EOF; -1 with err on a lexical error. */
static int lex(struct lexer *lx, struct expr_err *err)
{
	const char *s = lx->src;
	size_t i = 0;

	for (;;) {
		unsigned char c = (unsigned char)s[i];
		enum tok_kind k;
		size_t len = 1;
		char buf[8];

		if (c && isspace(c)) {
			i++;
			continue;
		}
		if (!c) {
			push(lx, T_EOF, i, 0, 0);
			return 0;
		}
		if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
			size_t start = i, end = i;
			long long v;
			double f;
			int r = lex_float(s, start, &end, &f, err);

			if (r < 0)
				return -1;
			if (r) {
				struct token *t = push(lx, T_NUM, start, end - start, 0);

				t->is_float = 1;
				t->fvalue = f;
				i = end;
				continue;
			}
			if (lex_number(s, &i, &v, err) < 0)
				return -1;
			push(lx, T_NUM, start, i - start, v);
			continue;
		}
		if (is_ident_start(c)) {
			size_t start = i;

			while (is_ident_char((unsigned char)s[i]))
				i++;
			push(lx, T_IDENT, start, i - start, 0);
			continue;
		}
		switch (c) {
		case '(':
			k = T_LPAREN;
			break;
		case ')':
			k = T_RPAREN;
			break;
		case ',':
			k = T_COMMA;
			break;
		case '?':
			k = T_QUEST;
			break;
		case ':':
			k = T_COLON;
			break;
		case '+':
			k = T_PLUS;
			break;
		case '-':
			k = T_MINUS;
			break;
		case '*':
			k = T_STAR;
			break;
		case '/':
			k = T_SLASH;
			break;
		case '%':
			k = T_PERCENT;
			break;
		case '!':
			k = s[i + 1] == '=' ? T_NE : T_NOT;
			break;
		case '<':
			k = s[i + 1] == '=' ? T_LE : s[i + 1] == '<' ? T_SHL : T_LT;
			break;
		case '>':
			k = s[i + 1] == '=' ? T_GE : s[i + 1] == '>' ? T_SHR : T_GT;
			break;
		case '=':
			if (s[i + 1] != '=') {
				set_err(err, (int)i + 1,
				        "unexpected character '=' (did you mean '=='?)");
				return -1;
			}
			k = T_EQ;
			break;
		case '&':
			if (s[i + 1] != '&') {
				set_err(err, (int)i + 1,
				        "unexpected character '&' (did you mean '&&'?)");
				return -1;
			}
			k = T_AND;
			break;
		case '|':
			if (s[i + 1] != '|') {
				set_err(err, (int)i + 1,
				        "unexpected character '|' (did you mean '||'?)");
				return -1;
			}
			k = T_OR;
			break;
		default:
			set_err(err, (int)i + 1, "unexpected character '%s'", char_desc(c, buf));
			return -1;
		}
		if (k == T_NE || k == T_LE || k == T_GE || k == T_EQ || k == T_AND || k == T_OR ||
		    k == T_SHL || k == T_SHR)
			len = 2;
		push(lx, k, i, len, 0);
		i += len;
	}
}

/* ----------------------------------------------------------------- parser */

struct parser {
	const char *src;
	const struct token *toks;
	size_t pos;
	int nest;
	struct expr_err *err;
};

static const struct token *peek(const struct parser *p)
{
	return &p->toks[p->pos];
}

static int tok_col(const struct token *t)
{
	return (int)t->off + 1;
}

/* Report that the current token was not what the grammar wanted. */
static struct node *unexpected(struct parser *p)
{
	const struct token *t = peek(p);

	if (t->kind == T_EOF)
		set_err(p->err, tok_col(t), "unexpected end of expression");
	else
		set_err(p->err, tok_col(t), "unexpected '%.*s'", (int)(t->len > 40 ? 40 : t->len),
		        p->src + t->off);
	return NULL;
}

static int expect(struct parser *p, enum tok_kind kind, const char *what)
{
	if (peek(p)->kind == kind) {
		p->pos++;
		return 0;
	}
	set_err(p->err, tok_col(peek(p)), "expected '%s'", what);
	return -1;
}

static struct node *new_node(struct parser *p, enum node_kind kind, int col, struct node *a,
                             struct node *b, struct node *c)
{
	struct node *n = xcalloc(1, sizeof(*n));
	int depth = 0;

	n->kind = kind;
	n->col = col;
	n->kid[0] = a;
	n->kid[1] = b;
	n->kid[2] = c;
	for (size_t i = 0; i < ARRAY_SIZE(n->kid); i++)
		if (n->kid[i] && n->kid[i]->depth > depth)
			depth = n->kid[i]->depth;
	n->depth = depth + 1;
	if (n->depth > EXPR_MAX_DEPTH) {
		set_err(p->err, col, "expression too deeply nested (more than %d levels)",
		        EXPR_MAX_DEPTH);
		node_free(n);
		return NULL;
	}
	return n;
}

static int enter(struct parser *p)
{
	if (++p->nest > EXPR_MAX_NEST) {
		set_err(p->err, tok_col(peek(p)),
		        "expression too deeply nested (more than %d levels)", EXPR_MAX_NEST);
		return -1;
	}
	return 0;
}

static struct node *parse_cond(struct parser *p);

static int binary_prec(enum tok_kind k)
{
	switch (k) {
	case T_OR:
		return 1;
	case T_AND:
		return 2;
	case T_EQ:
	case T_NE:
		return 3;
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
		return 4;
	case T_SHL:
	case T_SHR:
		return 5;
	case T_PLUS:
	case T_MINUS:
		return 6;
	case T_STAR:
	case T_SLASH:
	case T_PERCENT:
		return 7;
	default:
		return 0;
	}
}

/* name '(' args ')' with the name already consumed. */
static struct node *parse_call(struct parser *p, const struct token *name)
{
	struct node *args[3] = {NULL, NULL, NULL};
	size_t fi, nargs = 0;
	struct node *n;

	for (fi = 0; fi < ARRAY_SIZE(funcs); fi++)
		if (strlen(funcs[fi].name) == name->len &&
		    !memcmp(funcs[fi].name, p->src + name->off, name->len))
			break;
	if (fi == ARRAY_SIZE(funcs)) {
		char *s = xstrndup(p->src + name->off, name->len);
		const char *best = NULL;
		int bestd = 3;

		for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
			int d = edit_distance(s, funcs[i].name);

			if (d < bestd) {
				bestd = d;
				best = funcs[i].name;
			}
		}
		if (best)
			set_err(p->err, tok_col(name),
			        "unknown function '%.60s' (did you mean '%s'?)", s, best);
		else
			set_err(p->err, tok_col(name), "unknown function '%.60s'", s);
		free(s);
		return NULL;
	}
	p->pos++; /* '(' */
	if (peek(p)->kind != T_RPAREN) {
		for (;;) {
			struct node *a = parse_cond(p);

			if (!a)
				goto fail;
			if (nargs < ARRAY_SIZE(args))
				args[nargs] = a;
			else
				node_free(a);
			nargs++;
			if (peek(p)->kind != T_COMMA)
				break;
			p->pos++;
		}
	}
	if (peek(p)->kind != T_RPAREN) {
		set_err(p->err, tok_col(peek(p)), "expected ',' or ')' in call to '%s'",
		        funcs[fi].name);
		goto fail;
	}
	p->pos++;
	if (nargs != (size_t)funcs[fi].nargs) {
		set_err(p->err, tok_col(name),
		        "wrong number of arguments to '%s' (expected %d, got %zu)", funcs[fi].name,
		        funcs[fi].nargs, nargs);
		goto fail;
	}
	n = new_node(p, N_CALL, tok_col(name), args[0], args[1], args[2]);
	if (!n)
		return NULL;
	n->fn = funcs[fi].fn;
	n->name = xstrdup(funcs[fi].name);
	return n;
fail:
	for (size_t i = 0; i < ARRAY_SIZE(args); i++)
		node_free(args[i]);
	return NULL;
}

static struct node *parse_primary(struct parser *p)
{
	const struct token *t = peek(p);
	struct node *n;

	switch (t->kind) {
	case T_NUM:
		p->pos++;
		n = new_node(p, N_NUM, tok_col(t), NULL, NULL, NULL);
		n->value.is_float = t->is_float;
		n->value.i = t->value;
		n->value.f = t->fvalue;
		return n;
	case T_IDENT:
		p->pos++;
		if (peek(p)->kind == T_LPAREN)
			return parse_call(p, t);
		n = new_node(p, N_VAR, tok_col(t), NULL, NULL, NULL);
		n->name = xstrndup(p->src + t->off, t->len);
		return n;
	case T_LPAREN:
		p->pos++;
		n = parse_cond(p);
		if (!n)
			return NULL;
		if (expect(p, T_RPAREN, ")") < 0) {
			node_free(n);
			return NULL;
		}
		return n;
	default:
		return unexpected(p);
	}
}

static struct node *parse_unary(struct parser *p)
{
	const struct token *t = peek(p);
	struct node *a, *n;

	if (t->kind != T_MINUS && t->kind != T_PLUS && t->kind != T_NOT)
		return parse_primary(p);
	if (enter(p) < 0)
		return NULL;
	p->pos++;
	a = parse_unary(p);
	p->nest--;
	if (!a)
		return NULL;
	n = new_node(p, N_UNARY, tok_col(t), a, NULL, NULL);
	if (n)
		n->op = t->kind;
	return n;
}

/* Precedence climbing over the binary operators, all left-associative. */
static struct node *parse_binary(struct parser *p, int min_prec)
{
	struct node *left = parse_unary(p);

	while (left) {
		const struct token *op = peek(p);
		int prec = binary_prec(op->kind);
		struct node *right;

		if (!prec || prec < min_prec)
			break;
		p->pos++;
		right = parse_binary(p, prec + 1);
		if (!right) {
			node_free(left);
			return NULL;
		}
		left = new_node(p, N_BINARY, tok_col(op), left, right, NULL);
		if (left)
			left->op = op->kind;
	}
	return left;
}

/* cond ? expr : expr, right-associative, the lowest precedence in the grammar. */
static struct node *parse_cond(struct parser *p)
{
	struct node *c, *a = NULL, *b = NULL, *n = NULL;
	const struct token *q;

	if (enter(p) < 0)
		return NULL;
	c = parse_binary(p, 1);
	if (!c || peek(p)->kind != T_QUEST) {
		p->nest--;
		return c;
	}
	q = peek(p);
	p->pos++;
	a = parse_cond(p);
	if (!a)
		goto out;
	if (expect(p, T_COLON, ":") < 0)
		goto out;
	b = parse_cond(p);
	if (!b)
		goto out;
	n = new_node(p, N_COND, tok_col(q), c, a, b);
	p->nest--;
	return n;
out:
	p->nest--;
	node_free(c);
	node_free(a);
	node_free(b);
	return NULL;
}

struct expr *expr_parse(const char *src, struct expr_err *err)
{
	struct lexer lx = {src, NULL, 0, 0};
	struct parser p;
	struct node *root = NULL;
	struct expr *e;

	if (err) {
		err->col = 0;
		err->msg[0] = '\0';
	}
	if (!src) {
		set_err(err, 0, "no expression");
		return NULL;
	}
	if (lex(&lx, err) < 0)
		goto fail;
	if (lx.toks[0].kind == T_EOF) {
		set_err(err, 1, "empty expression");
		goto fail;
	}
	p.src = src;
	p.toks = lx.toks;
	p.pos = 0;
	p.nest = 0;
	p.err = err;
	root = parse_cond(&p);
	if (!root)
		goto fail;
	if (peek(&p)->kind != T_EOF) {
		unexpected(&p);
		goto fail;
	}
	free(lx.toks);
	e = xmalloc(sizeof(*e));
	e->text = xstrdup(src);
	e->root = root;
	return e;
fail:
	node_free(root);
	free(lx.toks);
	return NULL;
}

void expr_free(struct expr *e)
{
	if (!e)
		return;
	node_free(e->root);
	free(e->text);
	free(e);
}

const char *expr_text(const struct expr *e)
{
	return e ? e->text : NULL;
}

/* -------------------------------------------------------------- evaluator */

/* The operators that can overflow. */
static const char *op_text(enum tok_kind k)
{
	return k == T_PLUS    ? "+"
	       : k == T_MINUS ? "-"
	       : k == T_STAR  ? "*"
	       : k == T_SHL   ? "<<"
	       : k == T_SHR   ? ">>"
	                      : "/";
}

static void set_int(struct val *v, long long i);

/* The first variable of that name; the first letters are compared before the names (a hot loop). */
static int lookup(const struct expr_scope *scope, const char *name, struct val *out)
{
	for (; scope; scope = scope->next)
		for (size_t i = 0; i < scope->n; i++)
			if (scope->vars[i].name && scope->vars[i].name[0] == name[0] &&
			    !strcmp(scope->vars[i].name, name)) {
				set_int(out, scope->vars[i].value);
				return 0;
			}
	return -1;
}

static int overflow(struct expr_err *err, const struct node *n, long long a, long long b)
{
	set_err(err, n->col, "signed overflow in %lld %s %lld", a, op_text(n->op), b);
	return -1;
}

static double as_double(const struct val *v)
{
	return v->is_float ? v->f : (double)v->i;
}

static int truth(const struct val *v)
{
	return v->is_float ? v->f != 0 : v->i != 0;
}

static void set_int(struct val *v, long long i)
{
	v->is_float = 0;
	v->i = i;
	v->f = 0;
}

/* A floating result: NaN and infinity are errors, never values. */
static int set_float(struct val *v, double f, const struct node *n, struct expr_err *err)
{
	if (!isfinite(f)) {
		set_err(err, n->col, "'%s' gives %s", n->kind == N_CALL ? n->name : op_text(n->op),
		        isnan(f) ? "NaN" : "an infinity");
		return -1;
	}
	v->is_float = 1;
	v->f = f;
	v->i = 0;
	return 0;
}

static int eval(const struct node *n, const struct expr_scope *scope, struct val *out,
                struct expr_err *err);

static int compare(enum tok_kind op, double a, double b)
{
	switch (op) {
	case T_LT:
		return a < b;
	case T_LE:
		return a <= b;
	case T_GT:
		return a > b;
	case T_GE:
		return a >= b;
	case T_EQ:
		return a == b;
	default:
		return a != b;
	}
}

static int eval_float_binary(const struct node *n, double a, double b, struct val *out,
                             struct expr_err *err)
{
	switch (n->op) {
	case T_PLUS:
		return set_float(out, a + b, n, err);
	case T_MINUS:
		return set_float(out, a - b, n, err);
	case T_STAR:
		return set_float(out, a * b, n, err);
	case T_SLASH:
		if (b == 0) {
			set_err(err, n->col, "division by zero");
			return -1;
		}
		return set_float(out, a / b, n, err);
	case T_PERCENT:
	case T_SHL:
	case T_SHR:
		set_err(err, n->col, "'%s' needs integers",
		        n->op == T_PERCENT ? "%" : op_text(n->op));
		return -1;
	default:
		set_int(out, compare(n->op, a, b));
		return 0;
	}
}

static int eval_binary(const struct node *n, const struct expr_scope *scope, struct val *out,
                       struct expr_err *err)
{
	struct val va, vb;
	long long a, b;

	if (eval(n->kid[0], scope, &va, err) < 0)
		return -1;
	if (n->op == T_AND || n->op == T_OR) {
		if ((n->op == T_AND && !truth(&va)) || (n->op == T_OR && truth(&va))) {
			set_int(out, n->op == T_OR);
			return 0;
		}
		if (eval(n->kid[1], scope, &vb, err) < 0)
			return -1;
		set_int(out, truth(&vb));
		return 0;
	}
	if (eval(n->kid[1], scope, &vb, err) < 0)
		return -1;
	if (va.is_float || vb.is_float)
		return eval_float_binary(n, as_double(&va), as_double(&vb), out, err);
	a = va.i;
	b = vb.i;
	out->is_float = 0;
	out->f = 0;
	switch (n->op) {
	case T_PLUS:
		if (__builtin_add_overflow(a, b, &out->i))
			return overflow(err, n, a, b);
		return 0;
	case T_MINUS:
		if (__builtin_sub_overflow(a, b, &out->i))
			return overflow(err, n, a, b);
		return 0;
	case T_STAR:
		if (__builtin_mul_overflow(a, b, &out->i))
			return overflow(err, n, a, b);
		return 0;
	case T_SLASH:
	case T_PERCENT:
		if (!b) {
			set_err(err, n->col, "%s by zero",
			        n->op == T_SLASH ? "division" : "modulo");
			return -1;
		}
		/*
		 * LLONG_MIN / -1 does not fit; the remainder is 0 mathematically,
		 * though C leaves both undefined (and x86 traps on them).
		 */
		if (a == LLONG_MIN && b == -1) {
			if (n->op == T_SLASH)
				return overflow(err, n, a, b);
			out->i = 0;
			return 0;
		}
		out->i = n->op == T_SLASH ? a / b : a % b;
		return 0;
	case T_SHL:
	case T_SHR:
		/* defined in C only for a non-negative value and a shift below the width */
		if (a < 0 || b < 0 || b > 62) {
			set_err(err, n->col,
			        "shift %lld %s %lld: needs a value >= 0 and a shift of 0 to 62", a,
			        op_text(n->op), b);
			return -1;
		}
		if (n->op == T_SHR) {
			out->i = a >> b;
			return 0;
		}
		if (a > (LLONG_MAX >> b))
			return overflow(err, n, a, b);
		out->i = a << b;
		return 0;
	case T_LT:
	case T_LE:
	case T_GT:
	case T_GE:
	case T_EQ:
	case T_NE:
		out->i = n->op == T_LT   ? a < b
		         : n->op == T_LE ? a <= b
		         : n->op == T_GT ? a > b
		         : n->op == T_GE ? a >= b
		         : n->op == T_EQ ? a == b
		                         : a != b;
		return 0;
	default:
		BUG("unknown binary operator %d", (int)n->op);
	}
}

/* floor() and ceil(): an integer again, if it fits. */
static int to_int(const struct node *n, double f, struct val *out, struct expr_err *err)
{
	if (!(f >= -9.2233720368547758e18 && f < 9.2233720368547758e18)) {
		set_err(err, n->col, "'%s' of %g does not fit a 64-bit integer", n->name, f);
		return -1;
	}
	set_int(out, (long long)f);
	return 0;
}

static int eval_call(const struct node *n, const struct expr_scope *scope, struct val *out,
                     struct expr_err *err)
{
	struct val a, b;
	double x;

	if (eval(n->kid[0], scope, &a, err) < 0)
		return -1;
	/* b is read by the functions of two arguments alone, and the parser gave them both */
	set_int(&b, 0);
	if (n->kid[1] && eval(n->kid[1], scope, &b, err) < 0)
		return -1;
	x = as_double(&a);
	switch (n->fn) {
	case F_MIN:
	case F_MAX:
		if (a.is_float || b.is_float) {
			double y = as_double(&b);

			return set_float(out, (n->fn == F_MIN) == (x < y) ? x : y, n, err);
		}
		set_int(out, (n->fn == F_MIN) == (a.i < b.i) ? a.i : b.i);
		return 0;
	case F_CEIL_DIV:
		if (a.is_float || b.is_float) {
			set_err(err, n->col, "'ceil_div' needs integers");
			return -1;
		}
		if (b.i <= 0) {
			set_err(err, n->col, "ceil_div divisor must be positive, got %lld", b.i);
			return -1;
		}
		/* C division truncates toward zero, which is already the ceiling for a < 0. */
		set_int(out, a.i / b.i + (a.i % b.i > 0));
		return 0;
	case F_ABS:
		if (a.is_float)
			return set_float(out, fabs(a.f), n, err);
		if (a.i == LLONG_MIN) {
			set_err(err, n->col, "signed overflow in abs(%lld)", a.i);
			return -1;
		}
		set_int(out, a.i < 0 ? -a.i : a.i);
		return 0;
	case F_SQRT:
		if (x < 0) {
			set_err(err, n->col, "sqrt of a negative number (%g)", x);
			return -1;
		}
		return set_float(out, sqrt(x), n, err);
	case F_RSQRT:
		if (x <= 0) {
			set_err(err, n->col, "rsqrt of %g: needs a positive number", x);
			return -1;
		}
		return set_float(out, 1.0 / sqrt(x), n, err);
	case F_EXP:
		return set_float(out, exp(x), n, err);
	case F_LOG:
	case F_LOG2:
		if (x <= 0) {
			set_err(err, n->col, "%s of %g: needs a positive number", n->name, x);
			return -1;
		}
		return set_float(out, n->fn == F_LOG ? log(x) : log2(x), n, err);
	case F_POW:
		return set_float(out, pow(x, as_double(&b)), n, err);
	case F_FLOAT:
		return set_float(out, x, n, err);
	case F_FLOOR:
		return a.is_float ? to_int(n, floor(a.f), out, err) : (*out = a, 0);
	case F_CEIL:
		return a.is_float ? to_int(n, ceil(a.f), out, err) : (*out = a, 0);
	}
	BUG("unknown function %d", (int)n->fn);
}

static int eval(const struct node *n, const struct expr_scope *scope, struct val *out,
                struct expr_err *err)
{
	struct val a;

	switch (n->kind) {
	case N_NUM:
		*out = n->value;
		return 0;
	case N_VAR:
		if (lookup(scope, n->name, out) < 0) {
			set_err(err, n->col, "unknown name '%.100s'", n->name);
			return -1;
		}
		return 0;
	case N_UNARY:
		if (eval(n->kid[0], scope, &a, err) < 0)
			return -1;
		if (n->op == T_NOT) {
			set_int(out, !truth(&a));
		} else if (n->op == T_PLUS) {
			*out = a;
		} else if (a.is_float) {
			return set_float(out, -a.f, n, err);
		} else {
			if (a.i == LLONG_MIN) {
				set_err(err, n->col, "signed overflow in -(%lld)", a.i);
				return -1;
			}
			set_int(out, -a.i);
		}
		return 0;
	case N_BINARY:
		return eval_binary(n, scope, out, err);
	case N_COND:
		if (eval(n->kid[0], scope, &a, err) < 0)
			return -1;
		return eval(n->kid[truth(&a) ? 1 : 2], scope, out, err);
	case N_CALL:
		return eval_call(n, scope, out, err);
	}
	BUG("unknown expression node %d", (int)n->kind);
}

static int eval_root(const struct expr *e, const struct expr_scope *scope, struct val *v,
                     struct expr_err *err)
{
	if (err) {
		err->col = 0;
		err->msg[0] = '\0';
	}
	if (!e) {
		set_err(err, 0, "no expression");
		return -1;
	}
	return eval(e->root, scope, v, err);
}

int expr_eval(const struct expr *e, const struct expr_scope *scope, long long *out,
              struct expr_err *err)
{
	struct val v;

	if (eval_root(e, scope, &v, err) < 0)
		return -1;
	if (v.is_float) {
		set_err(err, 1, "a floating-point value (%g) where an integer is needed", v.f);
		return -1;
	}
	if (out)
		*out = v.i;
	return 0;
}

int expr_eval_number(const struct expr *e, const struct expr_scope *scope, double *out,
                     int *is_float, long long *iout, struct expr_err *err)
{
	struct val v;

	if (eval_root(e, scope, &v, err) < 0)
		return -1;
	if (out)
		*out = as_double(&v);
	if (is_float)
		*is_float = v.is_float;
	if (iout)
		*iout = v.i;
	return 0;
}

/* ------------------------------------------------------------ identifiers */

static int foreach_ident(const struct node *n, int (*fn)(const char *name, int col, void *ctx),
                         void *ctx)
{
	int ret;

	if (!n)
		return 0;
	if (n->kind == N_VAR)
		return fn(n->name, n->col, ctx);
	/* Children are stored in source order, so a pre-order walk visits names left to right. */
	for (size_t i = 0; i < ARRAY_SIZE(n->kid); i++) {
		ret = foreach_ident(n->kid[i], fn, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int expr_foreach_ident(const struct expr *e, int (*fn)(const char *name, int col, void *ctx),
                       void *ctx)
{
	if (!e || !fn)
		return 0;
	return foreach_ident(e->root, fn, ctx);
}

/* ---------------------------------------------------------------- as C code */

struct to_c {
	struct strbuf *out;
	const char *fn;
	int (*ident)(const char *name, struct strbuf *out, void *ctx);
	void *ctx;
	unsigned used;
};

/* The evaluator's typing, decided from the tree alone: variables are integers. */
static int node_floating(const struct node *n)
{
	switch (n->kind) {
	case N_NUM:
		return n->value.is_float;
	case N_VAR:
		return 0;
	case N_UNARY:
		return n->op != T_NOT && node_floating(n->kid[0]);
	case N_BINARY:
		if (n->op == T_AND || n->op == T_OR || n->op == T_LT || n->op == T_LE ||
		    n->op == T_GT || n->op == T_GE || n->op == T_EQ || n->op == T_NE)
			return 0;
		return node_floating(n->kid[0]) || node_floating(n->kid[1]);
	case N_COND:
		return node_floating(n->kid[1]) || node_floating(n->kid[2]);
	case N_CALL:
		switch (n->fn) {
		case F_MIN:
		case F_MAX:
			return node_floating(n->kid[0]) || node_floating(n->kid[1]);
		case F_ABS:
			return node_floating(n->kid[0]);
		case F_CEIL_DIV:
		case F_FLOOR:
		case F_CEIL:
			return 0;
		default:
			return 1;
		}
	}
	BUG("unknown expression node %d", (int)n->kind);
}

int expr_is_floating(const struct expr *e)
{
	return e && node_floating(e->root);
}

static int to_c(struct to_c *c, const struct node *n);

/* "<fn>name(a, b)" with the helper's bit recorded. */
static int to_c_helper(struct to_c *c, const struct node *n, const char *name, unsigned bit)
{
	c->used |= bit;
	sb_addf(c->out, "%s%s(", c->fn, name);
	if (to_c(c, n->kid[0]) < 0)
		return -1;
	if (n->kid[1]) {
		sb_adds(c->out, ", ");
		if (to_c(c, n->kid[1]) < 0)
			return -1;
	}
	sb_adds(c->out, ")");
	return 0;
}

/* A libm call on doubles: "(outer(double)(a)[, (double)(b)]inner)". */
static int to_c_math(struct to_c *c, const struct node *n, const char *outer, const char *inner)
{
	c->used |= EXPR_C_MATH;
	sb_addf(c->out, "(%s(double)(", outer);
	if (to_c(c, n->kid[0]) < 0)
		return -1;
	if (n->kid[1]) {
		sb_adds(c->out, "), (double)(");
		if (to_c(c, n->kid[1]) < 0)
			return -1;
	}
	sb_addf(c->out, ")%s)", inner);
	return 0;
}

static int to_c_call(struct to_c *c, const struct node *n)
{
	int fl = node_floating(n->kid[0]) || (n->kid[1] && node_floating(n->kid[1]));

	switch (n->fn) {
	case F_MIN:
		return to_c_helper(c, n, fl ? "min_f" : "min_i", fl ? EXPR_C_MIN_F : EXPR_C_MIN_I);
	case F_MAX:
		return to_c_helper(c, n, fl ? "max_f" : "max_i", fl ? EXPR_C_MAX_F : EXPR_C_MAX_I);
	case F_ABS:
		return to_c_helper(c, n, fl ? "abs_f" : "abs_i", fl ? EXPR_C_ABS_F : EXPR_C_ABS_I);
	case F_CEIL_DIV:
		if (fl)
			return error("'%s': ceil_div needs integers", n->name);
		return to_c_helper(c, n, "ceil_div", EXPR_C_CEIL_DIV);
	case F_SQRT:
		return to_c_math(c, n, "sqrt(", ")");
	case F_RSQRT:
		return to_c_math(c, n, "1.0 / sqrt(", ")");
	case F_EXP:
		return to_c_math(c, n, "exp(", ")");
	case F_LOG:
		return to_c_math(c, n, "log(", ")");
	case F_LOG2:
		return to_c_math(c, n, "log2(", ")");
	case F_POW:
		return to_c_math(c, n, "pow(", ")");
	case F_FLOAT:
		sb_adds(c->out, "((double)");
		if (to_c(c, n->kid[0]) < 0)
			return -1;
		sb_adds(c->out, ")");
		return 0;
	case F_FLOOR:
	case F_CEIL:
		if (!fl)
			return to_c(c, n->kid[0]);
		return to_c_math(c, n, n->fn == F_FLOOR ? "(long long)floor(" : "(long long)ceil(",
		                 ")");
	}
	BUG("unknown function %d", (int)n->fn);
}

static const char *c_op(enum tok_kind k)
{
	switch (k) {
	case T_PLUS:
		return "+";
	case T_MINUS:
		return "-";
	case T_STAR:
		return "*";
	case T_SLASH:
		return "/";
	case T_PERCENT:
		return "%";
	case T_NOT:
		return "!";
	case T_SHL:
		return "<<";
	case T_SHR:
		return ">>";
	case T_LT:
		return "<";
	case T_LE:
		return "<=";
	case T_GT:
		return ">";
	case T_GE:
		return ">=";
	case T_EQ:
		return "==";
	case T_NE:
		return "!=";
	case T_AND:
		return "&&";
	case T_OR:
		return "||";
	default:
		BUG("operator %d has no C text", (int)k);
	}
}

static int to_c(struct to_c *c, const struct node *n)
{
	char num[64];

	switch (n->kind) {
	case N_NUM:
		if (!n->value.is_float) {
			sb_addf(c->out, "%lldLL", n->value.i);
			return 0;
		}
		snprintf(num, sizeof(num), "%.17g", n->value.f);
		sb_adds(c->out, num);
		if (!strpbrk(num, ".e"))
			sb_adds(c->out, ".0");
		return 0;
	case N_VAR:
		if (c->ident(n->name, c->out, c->ctx) < 0)
			return error("unknown name '%.100s'", n->name);
		return 0;
	case N_UNARY:
		sb_addf(c->out, "(%s", c_op(n->op));
		if (to_c(c, n->kid[0]) < 0)
			return -1;
		sb_adds(c->out, ")");
		return 0;
	case N_BINARY:
		if ((n->op == T_PERCENT || n->op == T_SHL || n->op == T_SHR) &&
		    (node_floating(n->kid[0]) || node_floating(n->kid[1])))
			return error("'%s' needs integers", c_op(n->op));
		sb_adds(c->out, "(");
		if (to_c(c, n->kid[0]) < 0)
			return -1;
		sb_addf(c->out, " %s ", c_op(n->op));
		if (to_c(c, n->kid[1]) < 0)
			return -1;
		sb_adds(c->out, ")");
		return 0;
	case N_COND:
		sb_adds(c->out, "(");
		if (to_c(c, n->kid[0]) < 0)
			return -1;
		sb_adds(c->out, " ? ");
		if (to_c(c, n->kid[1]) < 0)
			return -1;
		sb_adds(c->out, " : ");
		if (to_c(c, n->kid[2]) < 0)
			return -1;
		sb_adds(c->out, ")");
		return 0;
	case N_CALL:
		return to_c_call(c, n);
	}
	BUG("unknown expression node %d", (int)n->kind);
}

int expr_to_c(const struct expr *e, struct strbuf *out, const char *fn_prefix,
              int (*ident)(const char *name, struct strbuf *out, void *ctx), void *ctx,
              unsigned *used)
{
	struct to_c c = {out, fn_prefix, ident, ctx, 0};
	int rc;

	if (!e)
		return error("no expression");
	rc = to_c(&c, e->root);
	if (rc < 0)
		return error("cannot write '%s' as C", e->text);
	if (used)
		*used |= c.used;
	return 0;
}

void expr_c_helpers(struct strbuf *out, const char *p, unsigned used)
{
	if (used & EXPR_C_MATH)
		sb_adds(out, "#include <math.h>\n");
	if (used & EXPR_C_MIN_I)
		sb_addf(out,
		        "static inline long long %smin_i(long long a, long long b) "
		        "{ return a < b ? a : b; }\n",
		        p);
	if (used & EXPR_C_MAX_I)
		sb_addf(out,
		        "static inline long long %smax_i(long long a, long long b) "
		        "{ return a > b ? a : b; }\n",
		        p);
	if (used & EXPR_C_MIN_F)
		sb_addf(out,
		        "static inline double %smin_f(double a, double b) "
		        "{ return a < b ? a : b; }\n",
		        p);
	if (used & EXPR_C_MAX_F)
		sb_addf(out,
		        "static inline double %smax_f(double a, double b) "
		        "{ return a > b ? a : b; }\n",
		        p);
	if (used & EXPR_C_ABS_I)
		sb_addf(out,
		        "static inline long long %sabs_i(long long a) "
		        "{ return a < 0 ? -a : a; }\n",
		        p);
	if (used & EXPR_C_ABS_F)
		sb_addf(out,
		        "static inline double %sabs_f(double a) "
		        "{ return a < 0 ? -a : a; }\n",
		        p);
	if (used & EXPR_C_CEIL_DIV)
		/* The evaluator's ceil_div: C's truncation is already the ceiling below zero. */
		sb_addf(out,
		        "static inline long long %sceil_div(long long a, long long b) "
		        "{ return a / b + (a %% b > 0); }\n",
		        p);
}
