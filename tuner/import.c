/* Import other tuners' recorded results (T4, Kernel Tuner caches) as landscapes for `run --replay`.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "tuner/db.h"
#include "tuner/expr.h"
#include "tuner/import.h"
#include "tuner/measure.h"
#include "tuner/space.h"
#include "tuner/template.h"

/* ----------------------------------------------------------------- files */

/* The whole file, gunzipped when it is gzip (zlib reads plain files as they are). */
static int read_maybe_gz(const char *path, char **out, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	struct strbuf sb = STRBUF_INIT;
	char buf[1 << 16];
	int n;

	if (!f)
		return error("cannot read '%s': %s", path, strerror(errno ? errno : ENOMEM));
	while ((n = gzread(f, buf, sizeof(buf))) > 0)
		sb_add(&sb, buf, (size_t)n);
	if (n < 0) {
		int zerr;
		const char *msg = gzerror(f, &zerr);

		error("cannot read '%s': %s", path, zerr == Z_ERRNO ? strerror(errno) : msg);
		gzclose(f);
		sb_release(&sb);
		return -1;
	}
	gzclose(f);
	sb_grow(&sb, 0);
	*len = sb.len;
	*out = sb_detach(&sb);
	return 0;
}

static json_t *load_json(const char *path)
{
	json_error_t jerr;
	json_t *root;
	char *text;
	size_t len;

	if (read_maybe_gz(path, &text, &len) < 0)
		return NULL;
	root = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!root)
		error("%s:%d:%d: invalid JSON: %s", path, jerr.line, jerr.column, jerr.text);
	return root;
}

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
	N_CALL, /* s: the function; kids: the arguments */
	N_IF,   /* kids: condition, then, else */
	N_LIST, /* a list or tuple */
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
};

enum tok { TK_END, TK_INT, TK_FLOAT, TK_STR, TK_NAME, TK_OP, TK_BAD };

struct parser {
	const char *src, *p;
	enum tok t;
	long long i;
	double f;
	struct strbuf text; /* TK_STR, TK_NAME: the text; TK_OP: the operator */
	int col;            /* 1-based column of the current token */
	char err[200];
};

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

/* A '(' or '[' group: a parenthesised expression, or a tuple or list of them. */
static struct node *parse_group(struct parser *ps, const char *close)
{
	struct node *list = node_new(N_LIST), *x;
	int tuple = !strcmp(close, "]");

	if (lex(ps) < 0)
		goto fail;
	while (!is_op(ps, close)) {
		x = parse_test(ps);
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
			arg = parse_test(ps);
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

static struct node *binary(const char *op, struct node *a, struct node *b)
{
	struct node *n = node_new(N_BIN);

	snprintf(n->op, sizeof(n->op), "%s", op);
	node_add(n, a);
	node_add(n, b);
	return n;
}

static struct node *parse_power(struct parser *ps)
{
	struct node *a = parse_primary(ps), *b;

	if (!a || !is_op(ps, "**"))
		return a;
	if (lex(ps) < 0 || !(b = parse_unary(ps))) {
		node_free(a);
		return NULL;
	}
	return binary("**", a, b);
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
	if (lex(ps) < 0 || !(x = parse_unary(ps)))
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
		a = binary(op, a, b);
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
		a = binary(op, a, b);
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
	if (lex(ps) < 0 || !(x = parse_not(ps)))
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
	if (lex(ps) < 0 || !(b = parse_test(ps))) {
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

struct emitter {
	const struct import_landscape *ls;
	char *why;
	size_t whylen;
	int floor_ops;       /* // or % used */
	unsigned long names; /* params mentioned, one bit each */
};

static int eerr(struct emitter *e, const char *fmt, ...) TUNER_PRINTF(2, 3);

static int eerr(struct emitter *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->why, e->whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static int param_index(const struct import_landscape *ls, const char *name)
{
	size_t i;

	for (i = 0; i < ls->nparams; i++)
		if (!strcmp(ls->params[i].name, name))
			return (int)i;
	return -1;
}

/* A constant: a number (bools count as 1 and 0) or a string, possibly negated. */
struct lit {
	int is_str;
	double num;
	const char *s;
};

static int as_literal(const struct node *n, struct lit *out)
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
	i = param_index(e->ls, n->s);
	return i >= 0 && e->ls->params[i].coded ? i : -1;
}

/* Python's a OP b on two constants; -1 when Python would raise (ordering a string and a number). */
static int lit_compare(const struct lit *a, const char *op, const struct lit *b)
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

static int emit_int(struct emitter *e, const struct node *n, struct strbuf *out);

/* A coded param against a constant: the codes whose label satisfies it. */
static int emit_coded_cmp(struct emitter *e, int pi, const char *op, const struct lit *c,
                          struct strbuf *out)
{
	const struct import_param *p = &e->ls->params[pi];
	size_t i, hits = 0;
	struct strbuf sb = STRBUF_INIT;

	for (i = 0; i < p->n; i++) {
		struct lit l = {isnan(p->num[i]), p->num[i], p->labels[i]};
		int r = lit_compare(&l, op, c);

		if (r < 0)
			return eerr(e, "'%s' compares '%s' (a string) with a number", op, p->name);
		if (r)
			sb_addf(&sb, "%s%s == %lld", hits++ ? " || " : "", p->name, p->values[i]);
	}
	e->names |= 1UL << pi;
	if (!hits)
		sb_adds(out, "0");
	else if (hits == p->n)
		sb_adds(out, "1");
	else
		sb_addf(out, "(%s)", sb.buf);
	sb_release(&sb);
	return 0;
}

/* a OP b for one link of a comparison chain. */
static int emit_compare(struct emitter *e, const struct node *a, const char *op,
                        const struct node *b, struct strbuf *out)
{
	struct lit la, lb;
	int pa = coded_param(e, a), pb = coded_param(e, b), ka, kb;
	size_t i;

	if (!strcmp(op, "is") || !strcmp(op, "is not"))
		return eerr(e, "'%s' is not supported", op);
	if (!strcmp(op, "in") || !strcmp(op, "not in")) {
		if (b->k != N_LIST)
			return eerr(e, "'%s' needs a list or tuple of values on its right", op);
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
		return eerr(e,
		            "'%s' takes values that are not integers: it can only be compared "
		            "with constants",
		            e->ls->params[pa >= 0 ? pa : pb].name);
	if (ka && kb) {
		int r = lit_compare(&la, op, &lb);

		if (r < 0)
			return eerr(e, "'%s' compares a string with a number", op);
		sb_adds(out, r ? "1" : "0");
		return 0;
	}
	/* an integer against a fraction: the integer comparison that means the same */
	if ((ka && !la.is_str && la.num != floor(la.num)) ||
	    (kb && !lb.is_str && lb.num != floor(lb.num))) {
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
		return eerr(e, "a string is compared with a number");
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
		return eerr(e, "'%s' of nothing", n->s);
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
	return eerr(e, "the function '%s' is not supported (min, max, abs)", n->s);
}

static int emit_bin(struct emitter *e, const struct node *n, struct strbuf *out)
{
	const char *op = n->op;
	long long k;

	if (!strcmp(op, "/"))
		return eerr(e, "true division '/' gives fractions, which tuner's integer "
		               "expressions do not have (write '//' where it divides exactly)");
	if (!strcmp(op, "@"))
		return eerr(e, "'@' is not supported");
	if (!strcmp(op, "**")) {
		if (n->kids[1]->k != N_INT || n->kids[1]->i < 0 || n->kids[1]->i > 8)
			return eerr(e, "'**' needs a constant exponent from 0 to 8");
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
	if (!strcmp(op, "//") || !strcmp(op, "%"))
		e->floor_ops = 1;
	sb_adds(out, "(");
	if (emit_int(e, n->kids[0], out) < 0)
		return -1;
	sb_addf(out, " %s ", !strcmp(op, "//") ? "/" : op);
	if (emit_int(e, n->kids[1], out) < 0)
		return -1;
	sb_adds(out, ")");
	return 0;
}

/* n as an integer-valued expression of tuner's language (truth values are 1 and 0). */
static int emit_int(struct emitter *e, const struct node *n, struct strbuf *out)
{
	size_t i;
	int pi;

	switch (n->k) {
	case N_INT:
		sb_addf(out, "%lld", n->i);
		return 0;
	case N_FLOAT:
		if (n->f != floor(n->f) || fabs(n->f) > 9e15)
			return eerr(e, "the fraction %g has no place in an integer expression",
			            n->f);
		sb_addf(out, "%.0f", n->f);
		return 0;
	case N_STR:
		return eerr(e, "the string '%s' can only be compared with a param", n->s);
	case N_NAME:
		if (!strcmp(n->s, "True") || !strcmp(n->s, "False")) {
			sb_adds(out, !strcmp(n->s, "True") ? "1" : "0");
			return 0;
		}
		pi = param_index(e->ls, n->s);
		if (pi < 0)
			return eerr(e, "unknown name '%s': not a param", n->s);
		if (e->ls->params[pi].coded)
			return eerr(e,
			            "'%s' takes values that are not integers: it can only be "
			            "compared with constants",
			            n->s);
		e->names |= 1UL << pi;
		sb_adds(out, n->s);
		return 0;
	case N_NEG:
	case N_POS:
	case N_NOT:
		sb_adds(out, n->k == N_NEG ? "(-" : n->k == N_NOT ? "(!" : "(");
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
		sb_adds(out, "(");
		for (i = 0; i < n->n; i++) {
			if (i)
				sb_adds(out, n->k == N_AND ? " && " : " || ");
			if (emit_int(e, n->kids[i], out) < 0)
				return -1;
		}
		sb_adds(out, ")");
		return 0;
	case N_CALL:
		return emit_call(e, n, out);
	case N_IF:
		sb_adds(out, "(");
		if (emit_int(e, n->kids[0], out) < 0)
			return -1;
		sb_adds(out, " ? ");
		if (emit_int(e, n->kids[1], out) < 0)
			return -1;
		sb_adds(out, " : ");
		if (emit_int(e, n->kids[2], out) < 0)
			return -1;
		sb_adds(out, ")");
		return 0;
	case N_LIST:
		return eerr(e, "a list or tuple can only follow 'in'");
	}
	return eerr(e, "unsupported expression");
}

char *import_translate(const struct import_landscape *ls, const char *python, char *why,
                       size_t whylen)
{
	struct emitter e = {ls, why, whylen, 0, 0};
	struct strbuf out = STRBUF_INIT;
	struct expr_err ee;
	struct expr *check;
	struct node *n = py_parse(python, why, whylen);
	size_t i, j;

	if (!n)
		return NULL;
	if (emit_int(&e, n, &out) < 0) {
		node_free(n);
		sb_release(&out);
		return NULL;
	}
	node_free(n);
	/* C truncates where Python floors: the same only when no operand is negative */
	for (i = 0; e.floor_ops && i < ls->nparams; i++)
		for (j = 0; (e.names >> i & 1) && j < ls->params[i].n; j++)
			if (ls->params[i].values[j] < 0) {
				snprintf(why, whylen,
				         "'//' or '%%' with '%s', which can be negative: Python "
				         "floors where tuner truncates",
				         ls->params[i].name);
				sb_release(&out);
				return NULL;
			}
	check = expr_parse(out.buf, &ee);
	if (!check) {
		snprintf(why, whylen, "the translation '%s' does not parse: %s", out.buf, ee.msg);
		sb_release(&out);
		return NULL;
	}
	expr_free(check);
	return sb_detach(&out);
}

/* ------------------------------------------------------------ parameters */

/* The shortest decimal that reads back as v. */
static char *num_text(double v)
{
	char buf[40];
	int prec;

	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	return xstrdup(buf);
}

/* A JSON scalar as a constant; 0 for anything else. */
static int json_literal(json_t *v, struct lit *out)
{
	memset(out, 0, sizeof(*out));
	if (json_is_integer(v))
		out->num = (double)json_integer_value(v);
	else if (json_is_real(v))
		out->num = json_real_value(v);
	else if (json_is_boolean(v))
		out->num = json_is_true(v);
	else if (json_is_string(v)) {
		out->is_str = 1;
		out->s = json_string_value(v);
	} else
		return 0;
	return 1;
}

static int lit_is_int(const struct lit *l)
{
	return !l->is_str && l->num == floor(l->num) && fabs(l->num) < 9e15;
}

static int lit_same(const struct lit *a, const struct lit *b)
{
	return a->is_str == b->is_str && (a->is_str ? !strcmp(a->s, b->s) : a->num == b->num);
}

/* The domain from its values: integers as they are, anything else as codes of labels. */
static int param_init(struct import_param *p, const char *name, const struct lit *vals, size_t n,
                      const char *where)
{
	size_t i, j;

	p->name = xstrdup(name);
	if (!n)
		return error("%s: param '%s' has no values", where, name);
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (lit_same(&vals[i], &vals[j]))
				return error("%s: param '%s' lists a value twice", where, name);
	p->n = n;
	p->values = xcalloc(n, sizeof(*p->values));
	for (i = 0; i < n && lit_is_int(&vals[i]); i++)
		;
	p->coded = i < n;
	if (p->coded) {
		p->labels = xcalloc(n, sizeof(*p->labels));
		p->num = xcalloc(n, sizeof(*p->num));
	}
	for (i = 0; i < n; i++) {
		if (!p->coded) {
			p->values[i] = (long long)vals[i].num;
			continue;
		}
		p->values[i] = (long long)i;
		p->labels[i] = vals[i].is_str ? xstrdup(vals[i].s) : num_text(vals[i].num);
		p->num[i] = vals[i].is_str ? NAN : vals[i].num;
	}
	return 0;
}

/* The value of the domain that the constant l names: 1 found, 0 not. */
static int param_lookup(const struct import_param *p, const struct lit *l, long long *out)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		struct lit d = {0, 0, NULL};

		if (p->coded) {
			d.is_str = isnan(p->num[i]);
			d.num = p->num[i];
			d.s = p->labels[i];
		} else {
			d.num = (double)p->values[i];
		}
		if (lit_same(&d, l)) {
			*out = p->values[i];
			return 1;
		}
	}
	return 0;
}

/* "16", "0.5" or "'row'": a value of p as the file writes it. */
static void value_text(const struct import_param *p, long long v, struct strbuf *sb)
{
	if (!p->coded || v < 0 || (size_t)v >= p->n)
		sb_addf(sb, "%lld", v);
	else if (isnan(p->num[v]))
		sb_addf(sb, "'%s'", p->labels[v]);
	else
		sb_adds(sb, p->labels[v]);
}

static void config_text(const struct import_landscape *ls, const long long *v, struct strbuf *sb)
{
	size_t i;

	for (i = 0; i < ls->nparams; i++) {
		sb_addf(sb, "%s%s=", i ? "," : "", ls->params[i].name);
		value_text(&ls->params[i], v[i], sb);
	}
}

static int check_param_name(const char *where, const char *name)
{
	static const char *const reserved[] = {"min", "max", "ceil_div"};
	const char *c;
	size_t i;

	if (!*name || isdigit((unsigned char)*name))
		return error("%s: param '%s' is not a C identifier", where, name);
	for (c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return error("%s: param '%s' is not a C identifier", where, name);
	for (i = 0; i < ARRAY_SIZE(reserved); i++)
		if (!strcmp(name, reserved[i]))
			return error("%s: param '%s' has the name of an expression function", where,
			             name);
	if (!strncmp(name, "SHAPE_", 6) || !strncmp(name, "TUNER_", 6))
		return error("%s: param '%s' uses a reserved prefix (SHAPE_, TUNER_)", where, name);
	return 0;
}

static struct import_param *param_add(struct import_landscape *ls, const char *where,
                                      const char *name)
{
	if (check_param_name(where, name) < 0)
		return NULL;
	if (param_index(ls, name) >= 0) {
		error("%s: param '%s' is declared twice", where, name);
		return NULL;
	}
	if (ls->nparams == TUNER_MAX_PARAMS) {
		error("%s: more than %d params", where, TUNER_MAX_PARAMS);
		return NULL;
	}
	return &ls->params[ls->nparams++];
}

/* ------------------------------------------------------------------- T1 */

/* T1's "Values": a JSON array, or a string holding a Python list or tuple of constants. */
static int t1_values(const char *where, const char *pname, json_t *v, struct import_param *p)
{
	struct lit *vals = NULL;
	struct node *n = NULL;
	size_t i, cnt = 0;
	char why[200];
	int r = -1;

	if (json_is_array(v)) {
		cnt = json_array_size(v);
		vals = xcalloc(cnt + 1, sizeof(*vals));
		for (i = 0; i < cnt; i++)
			if (!json_literal(json_array_get(v, i), &vals[i])) {
				error("%s: param '%s': value %zu is not a number or a string",
				      where, pname, i + 1);
				goto out;
			}
	} else if (json_is_string(v)) {
		n = py_parse(json_string_value(v), why, sizeof(why));
		if (!n) {
			error("%s: param '%s': cannot read its values '%s': %s", where, pname,
			      json_string_value(v), why);
			goto out;
		}
		if (n->k != N_LIST) {
			error("%s: param '%s': its values '%s' are not a list of constants", where,
			      pname, json_string_value(v));
			goto out;
		}
		cnt = n->n;
		vals = xcalloc(cnt + 1, sizeof(*vals));
		for (i = 0; i < cnt; i++)
			if (!as_literal(n->kids[i], &vals[i])) {
				error("%s: param '%s': value %zu of '%s' is not a constant", where,
				      pname, i + 1, json_string_value(v));
				goto out;
			}
	} else {
		error("%s: param '%s' has no list of 'Values'", where, pname);
		goto out;
	}
	r = param_init(p, pname, vals, cnt, where);
out:
	free(vals);
	node_free(n);
	return r;
}

static int t1_default(const char *where, struct import_param *p, json_t *d)
{
	struct lit l;

	if (!d || json_is_null(d))
		return 0;
	if (!json_literal(d, &l) || !param_lookup(p, &l, &p->deflt))
		return error("%s: the default of '%s' is not one of its values", where, p->name);
	p->has_default = 1;
	return 0;
}

static int read_t1(const char *path, struct import_landscape *ls)
{
	json_t *root = load_json(path), *space, *params, *conds, *it;
	const char *name;
	size_t i;
	int r = -1;

	if (!root)
		return -1;
	name =
	    json_string_value(json_object_get(json_object_get(root, "General"), "BenchmarkName"));
	if (name && !ls->name)
		ls->name = xstrdup(name);
	space = json_object_get(root, "ConfigurationSpace");
	params = json_object_get(space, "TuningParameters");
	if (!json_is_array(params) || !json_array_size(params)) {
		error("%s: no 'ConfigurationSpace' with 'TuningParameters' (not a T1 file?)", path);
		goto out;
	}
	json_array_foreach(params, i, it)
	{
		const char *pname = json_string_value(json_object_get(it, "Name"));
		struct import_param *p;

		if (!pname) {
			error("%s: tuning parameter %zu has no 'Name'", path, i + 1);
			goto out;
		}
		p = param_add(ls, path, pname);
		if (!p || t1_values(path, pname, json_object_get(it, "Values"), p) < 0 ||
		    t1_default(path, p, json_object_get(it, "Default")) < 0)
			goto out;
	}
	conds = json_object_get(space, "Conditions");
	ls->restrictions = xcalloc(json_array_size(conds) + 1, sizeof(*ls->restrictions));
	json_array_foreach(conds, i, it)
	{
		const char *e = json_is_string(it)
		                    ? json_string_value(it)
		                    : json_string_value(json_object_get(it, "Expression"));

		if (!e) {
			error("%s: condition %zu has no 'Expression'", path, i + 1);
			goto out;
		}
		ls->restrictions[ls->nrestrictions++] = xstrdup(e);
	}
	r = 0;
out:
	json_decref(root);
	return r;
}

/* Translate every restriction; the first that cannot be is the error. */
static int translate_all(struct import_landscape *ls)
{
	char why[300];
	size_t i;

	ls->translated = xcalloc(ls->nrestrictions + 1, sizeof(*ls->translated));
	for (i = 0; i < ls->nrestrictions; i++) {
		ls->translated[i] = import_translate(ls, ls->restrictions[i], why, sizeof(why));
		if (!ls->translated[i])
			return error("%s: cannot translate restriction %zu '%s': %s", ls->space,
			             i + 1, ls->restrictions[i], why);
	}
	return 0;
}

/* --------------------------------------------------------------- entries */

static struct import_entry *entry_add(struct import_landscape *ls)
{
	struct import_entry *e;

	ALLOC_GROW(ls->entries, ls->nentries + 1, ls->alloc);
	e = &ls->entries[ls->nentries++];
	memset(e, 0, sizeof(*e));
	e->cost = NAN;
	return e;
}

/* The configuration of an entry: the value of every param, looked up in cfg by name. */
static int entry_config(const struct import_landscape *ls, json_t *cfg, const char *where,
                        size_t idx, struct import_entry *e)
{
	size_t i;

	for (i = 0; i < ls->nparams; i++) {
		const struct import_param *p = &ls->params[i];
		json_t *v = json_object_get(cfg, p->name);
		struct lit l;

		if (!v)
			return error("%s: result %zu has no value for '%s'", where, idx + 1,
			             p->name);
		if (!json_literal(v, &l) || !param_lookup(p, &l, &e->v[i])) {
			struct strbuf sb = STRBUF_INIT;
			char *text = json_dumps(v, JSON_ENCODE_ANY);

			for (size_t k = 0; k < p->n; k++) {
				sb_adds(&sb, k ? ", " : "");
				value_text(p, p->values[k], &sb);
			}
			error("%s: result %zu: %s = %s is not in its declared domain [%s]", where,
			      idx + 1, p->name, text ? text : "?", sb.buf);
			free(text);
			sb_release(&sb);
			return -1;
		}
	}
	return 0;
}

/* Higher is better for a rate: GFLOP/s, GB/s, throughput, bandwidth. */
static int objective_maximized(const char *name)
{
	static const char *const rates[] = {"/s", "flops", "throughput", "bandwidth"};
	size_t i, j, len = strlen(name);
	char lower[128];

	for (i = 0; i < len && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)name[i]);
	lower[i] = '\0';
	for (j = 0; j < ARRAY_SIZE(rates); j++)
		if (strstr(lower, rates[j]))
			return 1;
	return 0;
}

/* Microseconds per unit of a time ("ms", "miliseconds", "s", "us"), 0 when unknown. */
static double time_scale(const char *unit)
{
	if (!unit || !*unit || !strcmp(unit, "ms") || !strncmp(unit, "mili", 4) ||
	    !strncmp(unit, "milli", 5))
		return 1e3;
	if (!strcmp(unit, "us") || !strncmp(unit, "micro", 5))
		return 1;
	if (!strcmp(unit, "ns") || !strncmp(unit, "nano", 4))
		return 1e-3;
	if (!strcmp(unit, "s") || !strncmp(unit, "sec", 3))
		return 1e6;
	return 0;
}

/* The objective's value as a cost (lower is better) in the landscape's unit. */
static double to_cost(const struct import_landscape *ls, double v, double scale)
{
	return ls->maximize ? 1e6 / v : v * scale;
}

static int set_objective(struct import_landscape *ls, const char *name, const char *where)
{
	if (ls->objective) {
		if (strcmp(ls->objective, name))
			return error("%s: objective '%s' after '%s': one objective per file", where,
			             name, ls->objective);
		return 0;
	}
	ls->objective = xstrdup(name);
	ls->maximize = objective_maximized(name);
	ls->unit = xstrdup(ls->maximize ? "1e6/value" : !strcmp(name, "time") ? "us" : "value");
	return 0;
}

static void take_samples(const struct import_landscape *ls, struct import_entry *e, json_t *arr,
                         double scale)
{
	size_t i, n = json_array_size(arr);
	json_t *x;

	if (!n)
		return;
	e->samples = xcalloc(n, sizeof(*e->samples));
	json_array_foreach(arr, i, x)
	{
		if (!json_is_number(x) || !(json_number_value(x) > 0))
			continue;
		e->samples[e->nsamples++] = to_cost(ls, json_number_value(x), scale);
	}
}

static const struct {
	const char *name;
	enum outcome outcome;
	const char *reason;
} t4_invalidity[] = {
    {"correct", VARIANT_OK, ""},
    {"constraints", REJECT_CONSTRAINT, "breaks the restrictions (recorded)"},
    {"compile", REJECT_COMPILE, "failed to compile (recorded)"},
    {"runtime", REJECT_RUNTIME_FAULT, "failed at run time (recorded)"},
    {"timeout", REJECT_TIMEOUT, "timed out (recorded)"},
    {"correctness", REJECT_WRONG, "wrong output (recorded)"},
};

static int read_t4_entry(struct import_landscape *ls, json_t *r, const char *where, size_t idx,
                         double tscale)
{
	struct import_entry *e = entry_add(ls);
	const char *inv = json_string_value(json_object_get(r, "invalidity"));
	json_t *objs = json_object_get(r, "objectives"), *m;
	const char *obj = json_string_value(json_array_get(objs, 0));
	size_t i;

	if (entry_config(ls, json_object_get(r, "configuration"), where, idx, e) < 0)
		return -1;
	if (!inv)
		return error("%s: result %zu has no 'invalidity'", where, idx + 1);
	for (i = 0; i < ARRAY_SIZE(t4_invalidity) && strcmp(inv, t4_invalidity[i].name); i++)
		;
	if (i == ARRAY_SIZE(t4_invalidity))
		return error("%s: result %zu: unknown invalidity '%s'", where, idx + 1, inv);
	e->outcome = t4_invalidity[i].outcome;
	e->reason = xstrdup(t4_invalidity[i].reason);
	if (e->outcome != VARIANT_OK)
		return 0;
	if (set_objective(ls, obj ? obj : "time", where) < 0)
		return -1;
	json_array_foreach(json_object_get(r, "measurements"), i, m)
	{
		const char *mname = json_string_value(json_object_get(m, "name"));
		const char *unit = json_string_value(json_object_get(m, "unit"));
		json_t *val = json_object_get(m, "value");
		double scale = tscale;

		if (!mname || strcmp(mname, ls->objective))
			continue;
		if (!json_is_number(val) || !(json_number_value(val) > 0))
			return error(
			    "%s: result %zu is correct but its %s is not a positive number", where,
			    idx + 1, ls->objective);
		if (!strcmp(ls->objective, "time") && unit && *unit) {
			scale = time_scale(unit);
			if (!scale)
				return error("%s: result %zu: unknown time unit '%s'", where,
				             idx + 1, unit);
		}
		if (strcmp(ls->objective, "time"))
			scale = 1;
		e->cost = to_cost(ls, json_number_value(val), scale);
		if (!strcmp(ls->objective, "time"))
			take_samples(
			    ls, e, json_object_get(json_object_get(r, "times"), "runtimes"), scale);
		return 0;
	}
	return error("%s: result %zu is correct but has no '%s' measurement", where, idx + 1,
	             ls->objective);
}

static int read_t4(const char *path, json_t *root, struct import_landscape *ls)
{
	json_t *results = json_object_get(root, "results"), *r;
	const char *unit =
	    json_string_value(json_object_get(json_object_get(root, "metadata"), "timeunit"));
	const char *ver = json_string_value(json_object_get(root, "schema_version"));
	double tscale = time_scale(unit);
	size_t i;

	if (!ls->space)
		return error("%s: a T4 file needs its T1 search-space description (--t1)", path);
	if (!tscale)
		return error("%s: unknown time unit '%s'", path, unit);
	ls->format = xasprintf("T4 %s", ver ? ver : "(no version)");
	json_array_foreach(results, i, r)
	{
		if (read_t4_entry(ls, r, path, i, tscale) < 0)
			return -1;
	}
	return 0;
}

static const struct {
	const char *name;
	enum outcome outcome;
	const char *reason;
} kt_errors[] = {
    {"InvalidConfig", REJECT_CONSTRAINT, "invalid configuration (recorded)"},
    {"CompilationFailedConfig", REJECT_COMPILE, "failed to compile (recorded)"},
    {"RuntimeFailedConfig", REJECT_RUNTIME_FAULT, "failed at run time (recorded)"},
};

/* A Kernel Tuner cache: its params (unless T1 declared them), then every cached result. */
static int read_kt(const char *path, json_t *root, struct import_landscape *ls)
{
	json_t *keys = json_object_get(root, "tune_params_keys");
	json_t *tp = json_object_get(root, "tune_params"), *cache = json_object_get(root, "cache");
	const char *objective = json_string_value(json_object_get(root, "objective"));
	const char *ver = json_string_value(json_object_get(root, "schema_version"));
	const char *key, *kname = json_string_value(json_object_get(root, "kernel_name"));
	const char *dev = json_string_value(json_object_get(root, "device_name"));
	json_t *rec, *k;
	size_t i = 0, j;

	ls->format = xasprintf("Kernel Tuner cache %s", ver ? ver : "(no version)");
	if (!ls->name && kname)
		ls->name = xstrdup(kname);
	if (!ls->device && dev)
		ls->device = xstrdup(dev);
	if (!json_is_object(tp) || !json_is_object(cache))
		return error("%s: no 'tune_params' and 'cache' (not a Kernel Tuner cache?)", path);
	if (ls->nparams) {
		/* the T1 file declared the space: the cache must tune the same params */
		if (json_object_size(tp) != ls->nparams)
			return error("%s tunes %zu params, %s declares %zu", path,
			             json_object_size(tp), ls->space, ls->nparams);
		json_object_foreach(tp, key, k)
		{
			if (param_index(ls, key) < 0)
				return error("%s tunes '%s', which %s does not declare", path, key,
				             ls->space);
		}
	} else {
		json_array_foreach(keys, j, k)
		{
			json_t *vals = json_object_get(tp, json_string_value(k));
			struct import_param *p;
			struct lit *l;

			if (!json_is_string(k) || !json_is_array(vals))
				return error("%s: 'tune_params_keys' and 'tune_params' disagree",
				             path);
			p = param_add(ls, path, json_string_value(k));
			if (!p)
				return -1;
			l = xcalloc(json_array_size(vals) + 1, sizeof(*l));
			for (i = 0; i < json_array_size(vals); i++)
				if (!json_literal(json_array_get(vals, i), &l[i])) {
					free(l);
					return error(
					    "%s: a value of '%s' is not a number or a string", path,
					    p->name);
				}
			i = (size_t)param_init(p, json_string_value(k), l, json_array_size(vals),
			                       path);
			free(l);
			if ((int)i < 0)
				return -1;
		}
		if (!ls->nparams)
			return error("%s: no 'tune_params_keys'", path);
	}
	if (set_objective(ls, objective ? objective : "time", path) < 0)
		return -1;
	i = 0;
	json_object_foreach(cache, key, rec)
	{
		struct import_entry *e = entry_add(ls);
		json_t *val = json_object_get(rec, ls->objective);

		if (entry_config(ls, rec, path, i, e) < 0)
			return -1;
		if (json_is_string(val)) {
			for (j = 0; j < ARRAY_SIZE(kt_errors); j++)
				if (!strcmp(json_string_value(val), kt_errors[j].name))
					break;
			if (j == ARRAY_SIZE(kt_errors))
				return error("%s: result '%s': unknown error '%s'", path, key,
				             json_string_value(val));
			e->outcome = kt_errors[j].outcome;
			e->reason = xstrdup(kt_errors[j].reason);
		} else if (json_is_number(val) && json_number_value(val) > 0) {
			double scale = strcmp(ls->objective, "time") ? 1 : 1e3; /* ms */

			e->outcome = VARIANT_OK;
			e->reason = xstrdup("");
			e->cost = to_cost(ls, json_number_value(val), scale);
			if (!strcmp(ls->objective, "time"))
				take_samples(ls, e, json_object_get(rec, "times"), scale);
		} else {
			return error("%s: result '%s' has no %s", path, key, ls->objective);
		}
		i++;
	}
	return 0;
}

/* ---------------------------------------------------------------- checks */

/* Entries by configuration: an open-addressing table of entry indices + 1. */
struct entry_index {
	size_t *slot;
	size_t cap;
	size_t nparams;
};

static unsigned long long config_hash(const long long *v, size_t n)
{
	unsigned long long h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned long long)v[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

/* The entry holding v, or the empty slot where it would go. */
static size_t index_slot(const struct entry_index *ix, const struct import_entry *entries,
                         const long long *v)
{
	size_t i = (size_t)config_hash(v, ix->nparams) & (ix->cap - 1);

	while (ix->slot[i] && memcmp(entries[ix->slot[i] - 1].v, v, ix->nparams * sizeof(*v)))
		i = (i + 1) & (ix->cap - 1);
	return i;
}

static void index_build(struct entry_index *ix, const struct import_landscape *ls, size_t *dups)
{
	size_t i, s;

	ix->nparams = ls->nparams;
	for (ix->cap = 64; ix->cap < 2 * ls->nentries + 2; ix->cap *= 2)
		;
	ix->slot = xcalloc(ix->cap, sizeof(*ix->slot));
	*dups = 0;
	for (i = 0; i < ls->nentries; i++) {
		s = index_slot(ix, ls->entries, ls->entries[i].v);
		if (ix->slot[s])
			(*dups)++; /* the first result of a configuration stands */
		else
			ix->slot[s] = i + 1;
	}
}

static const struct import_entry *index_find(const struct entry_index *ix,
                                             const struct import_landscape *ls, const long long *v)
{
	size_t s = index_slot(ix, ls->entries, v);

	return ix->slot[s] ? &ls->entries[ix->slot[s] - 1] : NULL;
}

/* Whether v passes every translated restriction: 1, 0, or -1 when one cannot be evaluated. */
static int passes(const struct import_landscape *ls, struct expr *const *exprs, const long long *v,
                  size_t *which)
{
	struct expr_var vars[TUNER_MAX_PARAMS];
	struct expr_scope scope = {vars, ls->nparams, NULL};
	struct expr_err err;
	long long r;
	size_t i;

	for (i = 0; i < ls->nparams; i++) {
		vars[i].name = ls->params[i].name;
		vars[i].value = v[i];
	}
	for (i = 0; i < ls->nrestrictions; i++) {
		*which = i;
		if (expr_eval(exprs[i], &scope, &r, &err) < 0)
			return -1;
		if (!r)
			return 0;
	}
	return 1;
}

/*
 * The translation must agree with the file: no measured configuration may
 * break a translated restriction, and the declared points within them that
 * the file never recorded are counted (a replay reports them unmeasured).
 */
static int check_entries(struct import_landscape *ls, const char *path)
{
	struct expr **exprs = xcalloc(ls->nrestrictions + 1, sizeof(*exprs));
	struct entry_index ix = {NULL, 0, 0};
	struct expr_err ee;
	size_t i, which = 0, dups, admitted = 0, missing = 0;
	unsigned long long size = 1, idx;
	int r = -1, ok;

	for (i = 0; i < ls->nrestrictions; i++)
		exprs[i] = expr_parse(ls->translated[i], &ee);
	for (i = 0; i < ls->nentries; i++) {
		struct import_entry *e = &ls->entries[i];
		struct strbuf sb = STRBUF_INIT;

		ok = passes(ls, exprs, e->v, &which);
		if (ok == 1 || (ok == 0 && e->outcome == REJECT_CONSTRAINT))
			continue;
		config_text(ls, e->v, &sb);
		if (ok < 0)
			error("%s: restriction '%s' cannot be evaluated on %s (translated: %s)",
			      ls->space, ls->restrictions[which], sb.buf, ls->translated[which]);
		else
			error("%s: %s was measured (%s) but its translated restriction '%s' (%s) "
			      "rejects it: the translation disagrees with the file",
			      path, sb.buf, outcome_name(e->outcome), ls->translated[which],
			      ls->restrictions[which]);
		sb_release(&sb);
		goto out;
	}
	index_build(&ix, ls, &dups);
	ok = 0; /* from here: results recorded as breaking the restrictions that pass them */
	if (dups)
		warning("%s: %zu configurations are recorded more than once: the first result "
		        "of each stands",
		        path, dups);
	for (i = 0; i < ls->nparams; i++)
		size *= ls->params[i].n;
	for (idx = 0; idx < size; idx++) {
		long long v[TUNER_MAX_PARAMS];
		unsigned long long rest = idx;
		const struct import_entry *e;

		for (i = ls->nparams; i-- > 0;) {
			v[i] = ls->params[i].values[rest % ls->params[i].n];
			rest /= ls->params[i].n;
		}
		if (passes(ls, exprs, v, &which) != 1)
			continue;
		admitted++;
		e = index_find(&ix, ls, v);
		if (!e)
			missing++;
		else if (e->outcome == REJECT_CONSTRAINT)
			ok++;
	}
	if (ok)
		warning("%s: %d results are recorded as breaking the restrictions, which the "
		        "translated restrictions admit: a replay rejects them as recorded",
		        path, ok);
	if (missing)
		warning("%s: %zu of the %zu configurations within the restrictions have no "
		        "result: a replay reports them as unmeasured",
		        path, missing, admitted);
	r = 0;
out:
	for (i = 0; i < ls->nrestrictions; i++)
		if (exprs[i])
			expr_free(exprs[i]);
	free(exprs);
	free(ix.slot);
	return r;
}

/* ------------------------------------------------------------------ read */

/* "A4000" from ".../convolution_milo_A4000_T4.json.gz" when the name is "convolution_milo". */
static char *device_from_path(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	char *s, *end;
	size_t nlen = name ? strlen(name) : 0;

	s = xstrdup(base ? base + 1 : path);
	for (;;) {
		end = s + strlen(s);
		if (end - s > 3 && !strcmp(end - 3, ".gz"))
			end[-3] = '\0';
		else if (end - s > 5 && !strcmp(end - 5, ".json"))
			end[-5] = '\0';
		else if (end - s > 3 && !strcmp(end - 3, "_T4"))
			end[-3] = '\0';
		else
			break;
	}
	if (nlen && !strncmp(s, name, nlen) && s[nlen] == '_')
		memmove(s, s + nlen + 1, strlen(s + nlen + 1) + 1);
	if (!*s || (nlen && !strcmp(s, name))) {
		free(s);
		return NULL;
	}
	return s;
}

int import_read(const char *results, const char *space, const char *device, const char *name,
                struct import_landscape *ls)
{
	json_t *root;
	int r;

	memset(ls, 0, sizeof(*ls));
	ls->source = xstrdup(results);
	ls->space = space ? xstrdup(space) : NULL;
	ls->name = name ? xstrdup(name) : NULL;
	ls->device = device ? xstrdup(device) : NULL;
	if (space && read_t1(space, ls) < 0)
		return -1;
	root = load_json(results);
	if (!root)
		return -1;
	if (json_is_array(json_object_get(root, "results")))
		r = read_t4(results, root, ls);
	else if (json_is_object(json_object_get(root, "cache")))
		r = read_kt(results, root, ls);
	else
		r = error("%s: neither T4 results ('results') nor a Kernel Tuner cache ('cache')",
		          results);
	json_decref(root);
	if (r < 0)
		return -1;
	if (!ls->name)
		return error("%s: no benchmark or kernel name in the files: give one (--name)",
		             results);
	if (check_param_name(results, ls->name) < 0)
		return error("the landscape's name '%s' must be a C identifier: give one (--name)",
		             ls->name);
	if (!ls->device && !(ls->device = device_from_path(results, ls->name)))
		return error("%s names no device: give one (--device)", results);
	if (!ls->objective)
		return error("%s: no configuration was timed: nothing to search", results);
	if (!ls->nrestrictions && !ls->restrictions)
		ls->restrictions = xcalloc(1, sizeof(*ls->restrictions));
	if (translate_all(ls) < 0)
		return -1;
	return check_entries(ls, results);
}

void import_release(struct import_landscape *ls)
{
	size_t i, j;

	free(ls->name);
	free(ls->device);
	free(ls->source);
	free(ls->space);
	free(ls->format);
	free(ls->objective);
	free(ls->unit);
	free(ls->baseline_why);
	for (i = 0; i < ls->nparams; i++) {
		struct import_param *p = &ls->params[i];

		free(p->name);
		free(p->values);
		for (j = 0; p->labels && j < p->n; j++)
			free(p->labels[j]);
		free(p->labels);
		free(p->num);
	}
	for (i = 0; i < ls->nrestrictions; i++) {
		free(ls->restrictions[i]);
		if (ls->translated)
			free(ls->translated[i]);
	}
	free(ls->restrictions);
	free(ls->translated);
	for (i = 0; i < ls->nentries; i++) {
		free(ls->entries[i].reason);
		free(ls->entries[i].samples);
	}
	free(ls->entries);
	memset(ls, 0, sizeof(*ls));
}

/* -------------------------------------------------------------- baseline */

static const struct import_entry *find_entry(const struct import_landscape *ls, const long long *v)
{
	size_t i;

	for (i = 0; i < ls->nentries; i++)
		if (!memcmp(ls->entries[i].v, v, ls->nparams * sizeof(*v)))
			return &ls->entries[i];
	return NULL;
}

static int cost_cmp(const void *a, const void *b)
{
	const struct import_entry *const *x = a, *const *y = b;

	if ((*x)->cost != (*y)->cost)
		return (*x)->cost < (*y)->cost ? -1 : 1;
	return *x < *y ? -1 : *x > *y; /* file order */
}

/* The timed configuration of median cost (the lower of the two middle ones). */
static const struct import_entry *median_entry(const struct import_landscape *ls)
{
	const struct import_entry **ok = xcalloc(ls->nentries + 1, sizeof(*ok)), *m;
	size_t i, n = 0;

	for (i = 0; i < ls->nentries; i++)
		if (ls->entries[i].outcome == VARIANT_OK)
			ok[n++] = &ls->entries[i];
	qsort(ok, n, sizeof(*ok), cost_cmp);
	m = n ? ok[(n - 1) / 2] : NULL;
	free(ok);
	return m;
}

/* "NAME=V,...": values as the file writes them, the rest from the defaults. */
static int parse_baseline(const struct import_landscape *ls, const char *spec, long long *v)
{
	char *copy = xstrdup(spec), *item, *save = NULL, *eq;
	int r = 0, pi;

	for (item = strtok_r(copy, ",", &save); item && !r; item = strtok_r(NULL, ",", &save)) {
		struct lit l = {0, 0, NULL};
		char *end;

		eq = strchr(item, '=');
		if (!eq) {
			r = error("--baseline: expected NAME=VALUE, got '%s'", item);
			break;
		}
		*eq++ = '\0';
		pi = param_index(ls, item);
		if (pi < 0) {
			r = error("--baseline: unknown param '%s'", item);
			break;
		}
		l.num = strtod(eq, &end);
		if (!*eq || *end) {
			l.is_str = 1;
			l.s = eq;
			if ((*eq == '\'' || *eq == '"') && strlen(eq) >= 2) {
				eq[strlen(eq) - 1] = '\0';
				l.s = eq + 1;
			}
		}
		if (!param_lookup(&ls->params[pi], &l, &v[pi]))
			r = error("--baseline: '%s' is not a value of '%s'", eq, item);
	}
	free(copy);
	return r;
}

int import_set_baseline(struct import_landscape *ls, const char *how)
{
	long long v[TUNER_MAX_PARAMS] = {0};
	const struct import_entry *e = NULL;
	int have_defaults = 1;
	size_t i;

	for (i = 0; i < ls->nparams; i++) {
		v[i] = ls->params[i].has_default ? ls->params[i].deflt : ls->params[i].values[0];
		have_defaults &= ls->params[i].has_default;
	}
	free(ls->baseline_why);
	ls->baseline_why = NULL;
	if (how && !strcmp(how, "median")) {
		e = median_entry(ls);
		ls->baseline_why = xstrdup("the configuration of median cost");
	} else if (how && strcmp(how, "default")) {
		if (parse_baseline(ls, how, v) < 0)
			return -1;
		e = find_entry(ls, v);
		ls->baseline_why = xstrdup("set on the command line");
	} else if (have_defaults) {
		e = find_entry(ls, v);
		ls->baseline_why = xstrdup("the declared default");
		if ((!e || e->outcome != VARIANT_OK) && !how) {
			warning("%s: the declared default has no timing: the baseline is the "
			        "configuration of median cost",
			        ls->source);
			return import_set_baseline(ls, "median");
		}
	} else if (how) {
		return error("%s declares no default for every param: choose a baseline "
		             "(--baseline median or NAME=V,...)",
		             ls->space ? ls->space : ls->source);
	} else {
		return import_set_baseline(ls, "median");
	}
	if (!e || e->outcome != VARIANT_OK) {
		struct strbuf sb = STRBUF_INIT;

		config_text(ls, v, &sb);
		error("the baseline %s (%s) was not timed in %s", sb.buf, ls->baseline_why,
		      ls->source);
		sb_release(&sb);
		return -1;
	}
	memcpy(ls->baseline, e->v, sizeof(ls->baseline));
	return 0;
}

/* ----------------------------------------------------------------- write */

/* CONFIG.family.yaml beside CONFIG.yaml. */
static char *sidecar_path(const char *config_path)
{
	size_t len = strlen(config_path);

	if (len > 5 && !strcmp(config_path + len - 5, ".yaml"))
		len -= 5;
	else if (len > 4 && !strcmp(config_path + len - 4, ".yml"))
		len -= 4;
	return xasprintf("%.*s.family.yaml", (int)len, config_path);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A YAML comment's text: one line. */
static void add_comment_text(struct strbuf *sb, const char *s)
{
	for (; *s; s++)
		sb_add(sb, *s == '\n' || *s == '\r' ? " " : s, 1);
}

static char *sidecar_text(const struct import_landscape *ls)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, j;

	sb_addf(&sb, "# The search space of %s, measured on %s: a recorded landscape, written by\n",
	        ls->name, ls->device);
	sb_adds(&sb, "# `tuner import` from ");
	add_comment_text(&sb, base_name(ls->source));
	sb_addf(&sb, " (%s)", ls->format);
	if (ls->space) {
		sb_adds(&sb, " and ");
		add_comment_text(&sb, base_name(ls->space));
	}
	sb_addf(&sb, ".\n# Objective: %s, %s is better", ls->objective,
	        ls->maximize ? "higher" : "lower");
	if (ls->maximize)
		sb_adds(&sb, " (recorded as 1e6 / value, so that fitness is value over the "
		             "baseline's)");
	else if (!strcmp(ls->unit, "us"))
		sb_adds(&sb, " (recorded in microseconds)");
	sb_adds(&sb, ". Nothing is compiled or run: it is only replayed.\n");
	sb_addf(&sb, "name: %s\nlandscape: true\nparams:\n", ls->name);
	for (i = 0; i < ls->nparams; i++) {
		const struct import_param *p = &ls->params[i];

		sb_addf(&sb, "  %s: [", p->name);
		for (j = 0; j < p->n; j++)
			sb_addf(&sb, "%s%lld", j ? ", " : "", p->values[j]);
		sb_adds(&sb, "]");
		if (p->coded) {
			sb_adds(&sb, "   # codes of ");
			for (j = 0; j < p->n; j++) {
				struct strbuf v = STRBUF_INIT;

				value_text(p, p->values[j], &v);
				sb_addf(&sb, "%s%zu = ", j ? ", " : "", j);
				add_comment_text(&sb, v.buf);
				sb_release(&v);
			}
		}
		sb_adds(&sb, "\n");
	}
	if (ls->nrestrictions)
		sb_adds(&sb,
		        "constraints:                 # translated from the Python above each\n");
	for (i = 0; i < ls->nrestrictions; i++) {
		sb_adds(&sb, "  # ");
		add_comment_text(&sb, ls->restrictions[i]);
		sb_addf(&sb, "\n  - \"%s\"\n", ls->translated[i]);
	}
	sb_adds(&sb, "baseline: {");
	for (i = 0; i < ls->nparams; i++)
		sb_addf(&sb, "%s%s: %lld", i ? ", " : "", ls->params[i].name, ls->baseline[i]);
	sb_addf(&sb, "}   # %s\n", ls->baseline_why ? ls->baseline_why : "");
	return sb_detach(&sb);
}

static char *config_yaml(const struct import_landscape *ls, const char *config_path,
                         const char *db_path)
{
	struct strbuf sb = STRBUF_INIT;
	char *side = sidecar_path(config_path);

	sb_addf(&sb, "# A recorded landscape: %s on %s, imported by `tuner import`.\n", ls->name,
	        ls->device);
	sb_adds(&sb, "# Nothing runs on a GPU: search it with\n#   tuner --config ");
	add_comment_text(&sb, config_path);
	sb_adds(&sb, " run --replay ");
	add_comment_text(&sb, db_path);
	sb_addf(&sb, "\ntemplate: %s\n", base_name(side));
	sb_adds(&sb, "arch: none                 # no GPU architecture: never compiled\n"
	             "shapes:\n  - {name: recorded}       # the one problem the file measured\n");
	free(side);
	return sb_detach(&sb);
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The recorded cost and its 95% interval: the interval of the samples' median
 * (order statistics, n / 2 -+ 0.98 sqrt(n)) scaled to the cost, or none.
 */
static void cost_interval(const struct import_entry *e, double *lo, double *hi)
{
	double *x, med, r;
	size_t n = e->nsamples, j, k;

	*lo = *hi = e->cost;
	if (n < 2)
		return;
	x = xcalloc(n, sizeof(*x));
	memcpy(x, e->samples, n * sizeof(*x));
	med = measure_median(x, n);
	qsort(x, n, sizeof(*x), double_cmp);
	r = 0.98 * sqrt((double)n);
	j = n / 2.0 - r > 0 ? (size_t)floor(n / 2.0 - r) : 0;
	k = (size_t)ceil(n / 2.0 + r);
	if (k > n - 1)
		k = n - 1;
	if (med > 0) {
		*lo = e->cost * fmin(1, x[j] / med);
		*hi = e->cost * fmax(1, x[k] / med);
	}
	free(x);
}

static char *shapes_json_of(const struct config *cfg)
{
	json_t *arr = json_array();
	size_t i;
	char *s;

	for (i = 0; i < cfg->nshapes; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(cfg->shapes[i].name));
		json_array_append_new(arr, o);
	}
	s = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return s;
}

struct writer {
	struct db *db;
	const struct config *cfg;
	long long run;
	const char *device;
	double base, base_lo, base_hi; /* the baseline's cost and interval */
};

/* One recorded result: its variant, its verdict (a gate row or a measurement) and its eval. */
static int write_entry(const struct writer *w, const struct import_entry *e)
{
	const struct config *cfg = w->cfg;
	struct db_measurement m;
	struct variant va;
	char hash[HASH_HEX_LEN], *params;
	double lo, hi;
	long long vid;
	int created, r;
	size_t i;

	memset(&va, 0, sizeof(va));
	for (i = 0; i < cfg->fam.nparams; i++)
		va.v[i] = e->v[i];
	template_variant_hash(cfg, &va, hash);
	params = space_format(&cfg->fam, &va);
	r = db_variant_upsert(w->db, hash, cfg->fam.name, cfg->fam.source_hash, cfg->arch.name,
	                      params, "", &vid, &created);
	free(params);
	if (r < 0)
		return -1;
	if (!created)
		return 0; /* recorded twice: the first result stands */
	if (db_eval_record(w->db, w->run, vid, 0, e->outcome, e->reason) < 0)
		return -1;
	/* what no replay can run again is a gate row; what the GPU said is a measurement */
	if (e->outcome == REJECT_CONSTRAINT || e->outcome == REJECT_COMPILE)
		return db_gate_record(w->db, w->run, vid,
		                      e->outcome == REJECT_COMPILE ? "compile" : "constraint", NULL,
		                      e->outcome, e->reason);
	memset(&m, 0, sizeof(m));
	m.device = w->device;
	m.shape = cfg->shapes[0].name;
	m.shape_dims = "";
	m.outcome = e->outcome;
	m.reason = e->reason;
	m.rel_l2 = m.max_abs = m.tflops = NAN;
	m.median_us = m.ci_lo_us = m.ci_hi_us = NAN;
	if (e->outcome == VARIANT_OK) {
		cost_interval(e, &lo, &hi);
		m.median_us = e->cost;
		m.ci_lo_us = lo;
		m.ci_hi_us = hi;
		m.samples = e->samples;
		m.nsamples = e->nsamples;
	} else if (db_gate_record(w->db, w->run, vid, "correct", NULL, e->outcome, e->reason) < 0) {
		return -1;
	}
	if (db_measure_record(w->db, w->run, vid, &m, NULL) < 0)
		return -1;
	if (e->outcome != VARIANT_OK)
		return 0;
	/* fitness as a replay computes it: the baseline's cost over this one's */
	return db_eval_set_fitness(w->db, w->run, vid, w->base / e->cost, w->base_lo / hi,
	                           w->base_hi / lo);
}

static int write_db(const struct import_landscape *ls, const struct config *cfg,
                    const char *db_path, const char *command)
{
	const struct import_entry *base = find_entry(ls, ls->baseline);
	struct run_info ri;
	struct writer w;
	char *shapes = shapes_json_of(cfg);
	size_t i;
	int r = -1;

	memset(&w, 0, sizeof(w));
	memset(&ri, 0, sizeof(ri));
	if (!base)
		BUG("the baseline of '%s' is not recorded", ls->name);
	if (db_open(db_path, &w.db) < 0)
		goto out;
	ri.config_path = cfg->path;
	ri.config_text = cfg->text;
	ri.template_name = cfg->fam.name;
	ri.template_hash = cfg->fam.source_hash;
	ri.arch = cfg->arch.name;
	ri.device = ls->device;
	ri.driver = "none";
	ri.nvrtc = "none";
	ri.strategy = "exhaustive";
	ri.shapes = shapes;
	ri.command = command;
	ri.generations = 1;
	ri.population = (int)ls->nentries;
	ri.gpu = 1; /* measured on a GPU, if not by tuner */
	w.cfg = cfg;
	w.device = ls->device;
	w.base = base->cost;
	cost_interval(base, &w.base_lo, &w.base_hi);
	if (db_begin(w.db) < 0)
		goto out;
	if (db_run_create(w.db, &ri, &w.run) < 0)
		goto fail;
	/* the baseline first, as a run evaluates it */
	if (write_entry(&w, base) < 0)
		goto fail;
	for (i = 0; i < ls->nentries; i++)
		if (&ls->entries[i] != base && write_entry(&w, &ls->entries[i]) < 0)
			goto fail;
	if (db_run_set_status(w.db, w.run, "done") < 0 || db_commit(w.db) < 0)
		goto fail;
	r = 0;
	goto out;
fail:
	db_rollback(w.db);
out:
	if (w.db)
		db_close(w.db);
	free(shapes);
	return r;
}

int import_write(const struct import_landscape *ls, const char *config_path, const char *db_path,
                 const char *command)
{
	char *side = sidecar_path(config_path), *text;
	struct config cfg;
	int r;

	if (!access(db_path, F_OK)) {
		free(side);
		return error("'%s' exists: a landscape is imported into a new database", db_path);
	}
	text = sidecar_text(ls);
	r = write_file_atomic(side, text, strlen(text));
	free(text);
	if (r < 0) {
		free(side);
		return -1;
	}
	text = config_yaml(ls, config_path, db_path);
	r = write_file_atomic(config_path, text, strlen(text));
	free(text);
	free(side);
	if (r < 0)
		return -1;
	/* read back as `run` will read it: what was written must load */
	if (config_load(config_path, &cfg) < 0)
		return error("the config written to '%s' does not load", config_path);
	if (cfg.fam.nparams != ls->nparams)
		BUG("'%s' has %zu params, the landscape %zu", config_path, cfg.fam.nparams,
		    ls->nparams);
	r = write_db(ls, &cfg, db_path, command);
	config_release(&cfg);
	return r;
}
