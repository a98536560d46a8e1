/* Load and validate tuning jobs and kernel-family sidecars with libyaml's document API. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "tuner/config.h"
#include "tuner/evolve.h"
#include "tuner/space.h"
#include "tuner/template.h"

/* ---------------------------------------------------------- YAML sources */

/* Characters between two byte offsets kept for a text that is not all ASCII. */
#define MARK_STEP 64

/* One YAML file being read: its text (for positions) and its document tree. */
struct ysrc {
	const char *path; /* as named in messages */
	const char *text;
	size_t len;
	size_t bom;      /* 3 after a UTF-8 byte order mark, else 0 */
	size_t *char_at; /* byte offset of every MARK_STEP-th character; NULL: all ASCII */
	size_t nchar_at;
	yaml_document_t doc;
	int loaded;
};

static void ysrc_release(struct ysrc *s)
{
	if (s->loaded)
		yaml_document_delete(&s->doc);
	s->loaded = 0;
	free(s->char_at);
	s->char_at = NULL;
}

static int vreport_at(const struct ysrc *s, int line, int col, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	return error("%s:%d:%d: %s", s->path, line, col, msg);
}

static int err_pos(const struct ysrc *s, int line, int col, const char *fmt, ...)
    TUNER_PRINTF(4, 5);
static int err_pos(const struct ysrc *s, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_at(s, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

/* Report at a libyaml mark. */
static int err_mark(const struct ysrc *s, const yaml_mark_t *m, const char *fmt, ...)
    TUNER_PRINTF(3, 4);
static int err_mark(const struct ysrc *s, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_at(s, (int)m->line + 1, (int)m->column + 1, fmt, ap);
	va_end(ap);
	return -1;
}

/* Report at the start of a node. */
static int err_node(const struct ysrc *s, const yaml_node_t *n, const char *fmt, ...)
    TUNER_PRINTF(3, 4);
static int err_node(const struct ysrc *s, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport_at(s, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1, fmt, ap);
	va_end(ap);
	return -1;
}

static size_t utf8_next(const struct ysrc *s, size_t off)
{
	off++;
	while (off < s->len && ((unsigned char)s->text[off] & 0xc0) == 0x80)
		off++;
	return off;
}

/*
 * Where marks are found: a mark's index counts characters from the start, a BOM left out, and
 * ASCII text needs no table. Each lookup walks at most MARK_STEP characters: walking the lines
 * from the start for each of the 31000 expressions rejoined in a 560 KB flow list, and moving the
 * rest of the list after each, took 13 s.
 */
static void ysrc_index(struct ysrc *s)
{
	size_t off, chars = 0;

	s->bom = s->len >= 3 && !memcmp(s->text, "\xef\xbb\xbf", 3) ? 3 : 0;
	for (off = s->bom; off < s->len && !((unsigned char)s->text[off] & 0x80); off++)
		;
	if (off == s->len)
		return;
	s->char_at = xcalloc(s->len / MARK_STEP + 1, sizeof(*s->char_at));
	s->nchar_at = 0;
	for (off = s->bom; off < s->len; off = utf8_next(s, off), chars++)
		if (chars % MARK_STEP == 0)
			s->char_at[s->nchar_at++] = off;
}

/* Byte offset of a libyaml mark. */
static size_t mark_offset(const struct ysrc *s, const yaml_mark_t *m)
{
	size_t k, i, off;

	if (!s->char_at || !s->nchar_at)
		return s->bom + m->index < s->len ? s->bom + m->index : s->len;
	k = m->index / MARK_STEP < s->nchar_at ? m->index / MARK_STEP : s->nchar_at - 1;
	off = s->char_at[k];
	for (i = k * MARK_STEP; i < m->index && off < s->len; i++)
		off = utf8_next(s, off);
	return off;
}

/* 1-based line and column (in characters) of a byte offset. */
static void offset_pos(const struct ysrc *s, size_t target, int *line, int *col)
{
	size_t off = 0;

	*line = 1;
	*col = 1;
	if (s->len >= 3 && !memcmp(s->text, "\xef\xbb\xbf", 3))
		off = 3;
	while (off < target && off < s->len) {
		if (s->text[off] == '\r' && off + 1 < s->len && s->text[off + 1] == '\n')
			off++;
		if (s->text[off] == '\n' || s->text[off] == '\r') {
			(*line)++;
			*col = 1;
			off++;
		} else {
			off = utf8_next(s, off);
			(*col)++;
		}
	}
}

/*
 * Position in the file of column ecol (1-based) of a scalar's value: where the
 * value appears verbatim in the text (plain scalars, quoted ones without escapes),
 * ecol maps into it; otherwise the scalar's own position.
 */
static void value_pos(const struct ysrc *s, const yaml_node_t *n, int ecol, int *line, int *col)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t vlen = n->data.scalar.length;
	size_t start = mark_offset(s, &n->start_mark), end = mark_offset(s, &n->end_mark);
	const char *hit;

	*line = (int)n->start_mark.line + 1;
	*col = (int)n->start_mark.column + 1;
	if (ecol <= 0 || (size_t)ecol > vlen + 1 || end > s->len || end < start + vlen || !vlen)
		return;
	hit = memmem(s->text + start, end - start, v, vlen);
	if (hit)
		offset_pos(s, (size_t)(hit - s->text) + (size_t)ecol - 1, line, col);
}

static int report_syntax(const struct ysrc *s, const yaml_parser_t *p)
{
	int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
	const char *problem = p->problem ? p->problem : "unknown error";

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return error("%s: out of memory parsing YAML", s->path);
	case YAML_READER_ERROR:
		offset_pos(s, p->problem_offset, &line, &col);
		return err_pos(s, line, col, "invalid YAML: %s", problem);
	default:
		break;
	}
	if (p->context)
		return err_pos(s, line, col, "invalid YAML: %s (%s at line %d)", problem,
		               p->context, (int)p->context_mark.line + 1);
	return err_pos(s, line, col, "invalid YAML: %s", problem);
}

/* ------------------------------------------------ commas in flow lists */

static yaml_node_t *ynode(struct ysrc *s, int id);

static int paren_balance(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	int d = 0;

	for (; *v; v++)
		d += (*v == '(') - (*v == ')');
	return d;
}

static int is_plain(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Make plain scalar n the raw text from its start to end (both in the same flow collection). */
static void scalar_extend(const struct ysrc *s, yaml_node_t *n, const yaml_mark_t *end)
{
	size_t a = mark_offset(s, &n->start_mark), b = mark_offset(s, end);
	unsigned char *v;

	if (b <= a || b > s->len)
		return;
	/* libyaml frees scalar values with free() (yaml_free) */
	v = xmalloc(b - a + 1);
	memcpy(v, s->text + a, b - a);
	v[b - a] = '\0';
	free(n->data.scalar.value);
	n->data.scalar.value = v;
	n->data.scalar.length = b - a;
	n->end_mark = *end;
}

/*
 * YAML splits a flow list at every comma, so `grid: [ceil_div(N, TILE), M, 1]`
 * arrives as "ceil_div(N", "TILE)", "M", "1", and `{offset: max(A, B)}` as the
 * pairs offset: "max(A" and "B)": null. Rejoin such pieces from the raw text while
 * a plain scalar has more '(' than ')', so expressions read as written; up to
 * JOIN_MAX_PIECES pieces, as an expression of more is none anyone writes, and
 * looking further from each of 100000 '(' never closed (1 MB) took 41 s.
 */
#define JOIN_MAX_PIECES 32

/* How many of the items from i on make one expression (2 or more), or 0. */
static size_t join_seq_span(struct ysrc *s, const yaml_node_item_t *it, size_t i, size_t cnt)
{
	yaml_node_t *first = ynode(s, it[i]);
	size_t j;
	int d;

	if (!is_plain(first) || (d = paren_balance(first)) <= 0)
		return 0;
	for (j = i + 1; j < cnt && j - i < JOIN_MAX_PIECES && d > 0 && is_plain(ynode(s, it[j]));
	     j++)
		d += paren_balance(ynode(s, it[j]));
	return d == 0 ? j - i : 0;
}

static void join_flow_seq(struct ysrc *s, yaml_node_t *n)
{
	yaml_node_item_t *it = n->data.sequence.items.start;
	size_t cnt = (size_t)(n->data.sequence.items.top - it), i, kept = 0, span;

	for (i = 0; i < cnt; i += span ? span : 1) {
		span = join_seq_span(s, it, i, cnt);
		if (span)
			scalar_extend(s, ynode(s, it[i]), &ynode(s, it[i + span - 1])->end_mark);
		it[kept++] = it[i];
	}
	n->data.sequence.items.top = it + kept;
}

/* The pairs from i on whose value and following keys make one expression (2 or more), or 0. */
static size_t join_map_span(struct ysrc *s, const yaml_node_pair_t *p, size_t i, size_t cnt)
{
	yaml_node_t *v = ynode(s, p[i].value);
	size_t j;
	int d;

	if (!is_plain(v) || (d = paren_balance(v)) <= 0)
		return 0;
	for (j = i + 1;
	     j < cnt && j - i < JOIN_MAX_PIECES && d > 0 && is_plain(ynode(s, p[j].key)) &&
	     is_plain(ynode(s, p[j].value)) && !*ynode(s, p[j].value)->data.scalar.value;
	     j++)
		d += paren_balance(ynode(s, p[j].key));
	return d == 0 ? j - i : 0;
}

static void join_flow_map(struct ysrc *s, yaml_node_t *n)
{
	yaml_node_pair_t *p = n->data.mapping.pairs.start;
	size_t cnt = (size_t)(n->data.mapping.pairs.top - p), i, kept = 0, span;

	for (i = 0; i < cnt; i += span ? span : 1) {
		span = join_map_span(s, p, i, cnt);
		if (span)
			scalar_extend(s, ynode(s, p[i].value),
			              &ynode(s, p[i + span - 1].key)->end_mark);
		p[kept++] = p[i];
	}
	n->data.mapping.pairs.top = p + kept;
}

static void join_split_expressions(struct ysrc *s)
{
	yaml_node_t *n;

	for (n = s->doc.nodes.start; n < s->doc.nodes.top; n++) {
		if (n->type == YAML_SEQUENCE_NODE &&
		    n->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE)
			join_flow_seq(s, n);
		else if (n->type == YAML_MAPPING_NODE &&
		         n->data.mapping.style == YAML_FLOW_MAPPING_STYLE)
			join_flow_map(s, n);
	}
}

/*
 * One pass over the events before a document is built, for what libyaml does not bound. Nesting:
 * its scanner keeps a possible key per open flow collection and walks them all at every token,
 * so 100000 '[' took 16 s. Anchors: its loader compares each new anchor and each alias with every
 * anchor before it, so 60000 of each (1.2 MB) took 24 s. Aliases: each use repeats its anchor's
 * node, so 250000 aliases of a 2 KB constraint (1 MB) were 500 MB of expressions to parse and
 * check (81 s): what aliases repeat is bounded (the file's own size is, where it is read), and an
 * alias inside its own anchor (a node that contains itself, without end) is refused.
 */
struct yscan {
	const struct ysrc *s;
	int depth;
	size_t size;                           /* scalars' bytes and nodes, aliases expanded */
	size_t aliased;                        /* of which aliases repeated */
	size_t open[CONFIG_MAX_DEPTH + 1];     /* size where each open collection began */
	int open_anchor[CONFIG_MAX_DEPTH + 1]; /* its anchor's index, or -1 */
	struct {
		char *name;
		size_t size; /* of its node, once closed */
		int closed;
	} anchors[CONFIG_MAX_ANCHORS];
	size_t nanchors;
};

static int yscan_anchor(struct yscan *y, const yaml_event_t *ev, const yaml_char_t *name)
{
	if (y->nanchors == CONFIG_MAX_ANCHORS)
		return err_mark(y->s, &ev->start_mark, "more than %d anchors ('&%.80s')",
		                CONFIG_MAX_ANCHORS, name);
	y->anchors[y->nanchors].name = xstrdup((const char *)name);
	y->anchors[y->nanchors].size = 0;
	y->anchors[y->nanchors].closed = 0;
	return (int)y->nanchors++;
}

/* An alias adds its anchor's size again: the latest anchor of that name, as YAML resolves it. */
static int yscan_alias(struct yscan *y, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	size_t i;

	for (i = y->nanchors; i-- > 0;)
		if (!strcmp(y->anchors[i].name, name))
			break;
	if (i == (size_t)-1)
		return 0; /* undefined: the loader says so */
	if (!y->anchors[i].closed)
		return err_mark(
		    y->s, &ev->start_mark,
		    "alias '*%.80s' inside its own anchor: a node cannot contain itself", name);
	y->size += y->anchors[i].size;
	y->aliased += y->anchors[i].size;
	return 0;
}

static int yscan_open(struct yscan *y, const yaml_event_t *ev, const yaml_char_t *anchor)
{
	int a = -1;

	if (++y->depth > CONFIG_MAX_DEPTH)
		return err_mark(y->s, &ev->start_mark, "collections nested deeper than %d levels",
		                CONFIG_MAX_DEPTH);
	if (anchor && (a = yscan_anchor(y, ev, anchor)) < 0)
		return -1;
	y->open[y->depth] = y->size++;
	y->open_anchor[y->depth] = a;
	return 0;
}

static void yscan_close(struct yscan *y)
{
	int a = y->depth > 0 ? y->open_anchor[y->depth] : -1;

	if (a >= 0) {
		y->anchors[a].size = y->size - y->open[y->depth];
		y->anchors[a].closed = 1;
	}
	if (y->depth > 0)
		y->depth--;
}

static int yscan_scalar(struct yscan *y, const yaml_event_t *ev)
{
	int a;

	y->size += ev->data.scalar.length + 1;
	if (!ev->data.scalar.anchor)
		return 0;
	a = yscan_anchor(y, ev, ev->data.scalar.anchor);
	if (a < 0)
		return -1;
	y->anchors[a].size = ev->data.scalar.length + 1;
	y->anchors[a].closed = 1;
	return 0;
}

/* 0 to go on, 1 at the end of the stream, -1 after an error. */
static int yscan_event(struct yscan *y, const yaml_event_t *ev)
{
	int r = 0;

	switch (ev->type) {
	case YAML_SEQUENCE_START_EVENT:
		r = yscan_open(y, ev, ev->data.sequence_start.anchor);
		break;
	case YAML_MAPPING_START_EVENT:
		r = yscan_open(y, ev, ev->data.mapping_start.anchor);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		yscan_close(y);
		break;
	case YAML_SCALAR_EVENT:
		r = yscan_scalar(y, ev);
		break;
	case YAML_ALIAS_EVENT:
		r = yscan_alias(y, ev);
		break;
	case YAML_STREAM_END_EVENT:
		return 1;
	default:
		break;
	}
	if (r == 0 && y->aliased > CONFIG_MAX_ALIASED)
		return err_mark(y->s, &ev->start_mark,
		                "aliases repeat more than %u MiB of the document",
		                CONFIG_MAX_ALIASED >> 20);
	return r;
}

/* A syntax error stops the events: ysrc_load reports it as always. */
static int ysrc_scan(const struct ysrc *s)
{
	struct yscan *y = xcalloc(1, sizeof(*y));
	yaml_parser_t p;
	yaml_event_t ev;
	int r = 0;
	size_t i;

	y->s = s;
	if (!yaml_parser_initialize(&p)) {
		free(y);
		return error("%s: cannot initialise the YAML parser", s->path);
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)s->text, s->len);
	while (r == 0 && yaml_parser_parse(&p, &ev)) {
		r = yscan_event(y, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	for (i = 0; i < y->nanchors; i++)
		free(y->anchors[i].name);
	free(y);
	return r < 0 ? -1 : 0;
}

/* Parse the one document of s->text. */
static int ysrc_load(struct ysrc *s)
{
	yaml_parser_t p;
	yaml_document_t extra;
	yaml_node_t *root;
	int ret = 0;

	if (ysrc_scan(s) < 0)
		return -1;
	ysrc_index(s);
	if (!yaml_parser_initialize(&p))
		return error("%s: cannot initialise the YAML parser", s->path);
	yaml_parser_set_input_string(&p, (const unsigned char *)s->text, s->len);
	if (!yaml_parser_load(&p, &s->doc)) {
		report_syntax(s, &p);
		yaml_parser_delete(&p);
		return -1;
	}
	s->loaded = 1;
	join_split_expressions(s);
	if (!yaml_parser_load(&p, &extra)) {
		ret = report_syntax(s, &p);
	} else {
		root = yaml_document_get_root_node(&extra);
		if (root)
			ret = err_node(s, root, "only one YAML document is allowed");
		yaml_document_delete(&extra);
	}
	yaml_parser_delete(&p);
	return ret;
}

/* ------------------------------------------------------------ node access */

static yaml_node_t *ynode(struct ysrc *s, int id)
{
	return yaml_document_get_node(&s->doc, id);
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int is_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE;
}

/* An empty value, `~` or `null`, written plain. */
static int is_null(const yaml_node_t *n)
{
	const char *v;

	if (!is_scalar(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = sval(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

static const char *kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "mapping";
	case YAML_SEQUENCE_NODE:
		return "list";
	default:
		return is_null(n) ? "null" : "scalar";
	}
}

static size_t seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(struct ysrc *s, const yaml_node_t *n, size_t i)
{
	return ynode(s, n->data.sequence.items.start[i]);
}

static size_t map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

static yaml_node_t *map_key(struct ysrc *s, const yaml_node_t *n, size_t i)
{
	return ynode(s, n->data.mapping.pairs.start[i].key);
}

static yaml_node_t *map_val(struct ysrc *s, const yaml_node_t *n, size_t i)
{
	return ynode(s, n->data.mapping.pairs.start[i].value);
}

/*
 * The closest name within an edit distance of CLOSEST_MAX, or NULL. A name whose length differs
 * from the word's by more is not compared, as it cannot be that close, and neither are names of
 * more than CLOSEST_MAX_LEN characters: the distance costs the product of the lengths, and a shape
 * naming a dim of 1 MB with a key of 1 MB did not end in 100 s.
 */
#define CLOSEST_MAX     2
#define CLOSEST_MAX_LEN 64
static const char *closest(const char *word, const char *const *names, size_t n)
{
	size_t i, lw = strlen(word), ln;
	const char *best = NULL;
	int bestd = INT_MAX;

	if (lw > CLOSEST_MAX_LEN)
		return NULL;
	for (i = 0; i < n; i++) {
		int d;

		ln = strlen(names[i]);
		if (ln > lw + CLOSEST_MAX || lw > ln + CLOSEST_MAX)
			continue;
		d = edit_distance(word, names[i]);
		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	if (best && bestd <= CLOSEST_MAX && (size_t)bestd < lw)
		return best;
	return NULL;
}

/* " (did you mean 'X'?)" or " (known: a, b, c)". */
static void hint(char *out, size_t len, const char *word, const char *const *names, size_t n,
                 const char *known_label)
{
	const char *c = closest(word, names, n);
	size_t i, used;

	if (c) {
		snprintf(out, len, " (did you mean '%s'?)", c);
		return;
	}
	if (!n) {
		*out = '\0';
		return;
	}
	used = (size_t)snprintf(out, len, " (%s: ", known_label);
	for (i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
	if (used < len)
		snprintf(out + used, len - used, ")");
}

/* Section label for messages: "in 'budget'" or nothing at the top level. */
static void where_label(char *out, size_t len, const char *where)
{
	if (where && *where)
		snprintf(out, len, " in '%s'", where);
	else
		*out = '\0';
}

/* A key with its place in the file's order, to find repeats sorted. */
struct ranked {
	const char *name;
	size_t i;
};

static int ranked_name_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/*
 * Of n entries sorted by name, then place, the first in the file's order that repeats one
 * before it: its place, and in *first the place of the one it repeats; SIZE_MAX when none does.
 */
static size_t first_repeat(const struct ranked *r, size_t n, size_t *first)
{
	size_t i, g = 0, best = SIZE_MAX;

	for (i = 1; i < n; i++) {
		if (strcmp(r[i - 1].name, r[i].name)) {
			g = i; /* a group of equal entries begins, its first in the file's order */
		} else if (i == g + 1 && r[i].i < best) {
			best = r[i].i;
			*first = r[g].i;
		}
	}
	return best;
}

/*
 * The first key of mapping n that repeats one before it, and in *first the one it repeats; SIZE_MAX
 * when none does. Found sorted, not in pairs: 'params' with 70000 keys (1.1 MB) took 39 s. Keys
 * that are not scalars are left out: map_fields_noun refuses them.
 */
static size_t repeated_key(struct ysrc *s, const yaml_node_t *n, size_t *first)
{
	size_t i, m = 0, len = map_len(n), rep;
	struct ranked *r = xcalloc(len, sizeof(*r));

	for (i = 0; i < len; i++) {
		yaml_node_t *k = map_key(s, n, i);

		if (is_scalar(k)) {
			r[m].name = sval(k);
			r[m++].i = i;
		}
	}
	qsort(r, m, sizeof(*r), ranked_name_cmp);
	rep = first_repeat(r, m, first);
	free(r);
	return rep;
}

/*
 * Check that n is a mapping with scalar, unique keys. With names, every key must
 * be one of them and vals[i]/keys[i] receive the value/key node of names[i].
 */
static int map_fields_noun(struct ysrc *s, const yaml_node_t *n, const char *where,
                           const char *noun, const char *const *names, size_t nnames,
                           yaml_node_t **vals, yaml_node_t **keys)
{
	char in[96], h[512];
	size_t i, j, dup, first = 0;

	where_label(in, sizeof(in), where);
	if (n->type != YAML_MAPPING_NODE && (!where || !*where))
		return err_node(s, n, "expected a mapping of keys, got a %s", kind(n));
	if (n->type != YAML_MAPPING_NODE)
		return err_node(s, n, "'%s' must be a mapping, got a %s", where, kind(n));
	for (j = 0; j < nnames; j++) {
		vals[j] = NULL;
		if (keys)
			keys[j] = NULL;
	}
	dup = repeated_key(s, n, &first);
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i);

		if (!is_scalar(k))
			return err_node(s, k, "keys must be plain names, got a %s%s", kind(k), in);
		if (i == dup)
			return err_node(s, k, "duplicate key '%.80s'%s (first at line %d)", sval(k),
			                in, (int)map_key(s, n, first)->start_mark.line + 1);
		if (!names)
			continue;
		for (j = 0; j < nnames; j++)
			if (!strcmp(names[j], sval(k)))
				break;
		if (j == nnames) {
			hint(h, sizeof(h), sval(k), names, nnames, "known");
			return err_node(s, k, "unknown %s '%.80s'%s%s", noun, sval(k), in, h);
		}
		vals[j] = map_val(s, n, i);
		if (keys)
			keys[j] = k;
	}
	return 0;
}

static int map_fields(struct ysrc *s, const yaml_node_t *n, const char *where,
                      const char *const *names, size_t nnames, yaml_node_t **vals,
                      yaml_node_t **keys)
{
	return map_fields_noun(s, n, where, "key", names, nnames, vals, keys);
}

static int need(struct ysrc *s, const yaml_node_t *parent, const char *where, const char *key,
                const yaml_node_t *val)
{
	char in[96];

	if (val)
		return 0;
	where_label(in, sizeof(in), where);
	return err_node(s, parent, "missing key '%s'%s", key, in);
}

/* ------------------------------------------------------------- scalars */

/* 0, or -1 for not an integer, -2 for out of range. Decimal, optional sign. */
static int parse_ll(const char *v, long long *out)
{
	const char *p = v;
	char *end;

	if (*p == '+' || *p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*out = strtoll(v, &end, 10);
	if (*end)
		return -1;
	return errno == ERANGE ? -2 : 0;
}

static int get_string(struct ysrc *s, const yaml_node_t *n, const char *key, char **out)
{
	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a string, got a %s", key, kind(n));
	if (!*sval(n))
		return err_node(s, n, "'%s' must not be empty", key);
	*out = xstrdup(sval(n));
	return 0;
}

static int is_ident(const char *v)
{
	if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') || *v == '_'))
		return 0;
	for (v++; *v; v++)
		if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= '0' && *v <= '9') || *v == '_'))
			return 0;
	return 1;
}

static int get_ident(struct ysrc *s, const yaml_node_t *n, const char *key, char **out)
{
	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a name, got a %s", key, kind(n));
	if (!is_ident(sval(n)))
		return err_node(s, n, "'%s' must be a C identifier, got '%.80s'", key, sval(n));
	*out = xstrdup(sval(n));
	return 0;
}

static int get_ll(struct ysrc *s, const yaml_node_t *n, const char *key, long long min,
                  long long max, long long *out)
{
	int r;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be an integer, got a %s", key, kind(n));
	r = parse_ll(sval(n), out);
	if (r == -1)
		return err_node(s, n, "'%s' must be an integer, got '%.80s'", key, sval(n));
	if (r == -2)
		return err_node(s, n, "'%s' is out of range, got %.80s", key, sval(n));
	if (*out > max)
		return err_node(s, n, "'%s' must be at most %lld, got %lld", key, max, *out);
	if (*out < min) {
		if (min == 1)
			return err_node(s, n, "'%s' must be positive, got %lld", key, *out);
		if (min == 0)
			return err_node(s, n, "'%s' must not be negative, got %lld", key, *out);
		return err_node(s, n, "'%s' must be at least %lld, got %lld", key, min, *out);
	}
	return 0;
}

static int get_int(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int *out)
{
	long long v;

	if (get_ll(s, n, key, min, INT_MAX, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

static int get_int_max(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int max,
                       int *out)
{
	long long v;

	if (get_ll(s, n, key, min, max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

/* A finite number; above zero when positive, else at least zero. */
static int get_double(struct ysrc *s, const yaml_node_t *n, const char *key, int positive,
                      double *out)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a number, got a %s", key, kind(n));
	v = sval(n);
	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || (*v != '-' && *v != '+' && *v != '.' && (*v < '0' || *v > '9')) ||
	    !isfinite(*out) || errno == ERANGE)
		return err_node(s, n, "'%s' must be a number, got '%.80s'", key, v);
	if (positive && *out <= 0)
		return err_node(s, n, "'%s' must be positive, got %s", key, v);
	if (*out < 0)
		return err_node(s, n, "'%s' must not be negative, got %s", key, v);
	return 0;
}

/* Any finite number. */
static int get_double_signed(struct ysrc *s, const yaml_node_t *n, const char *key, double *out)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a number, got a %s", key, kind(n));
	v = sval(n);
	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || !isfinite(*out) || errno == ERANGE ||
	    (*v != '-' && *v != '+' && *v != '.' && (*v < '0' || *v > '9')))
		return err_node(s, n, "'%s' must be a number, got '%.80s'", key, v);
	return 0;
}

static int get_enum(struct ysrc *s, const yaml_node_t *n, const char *key, const char *const *names,
                    size_t nnames, int *out)
{
	char list[256], h[128];
	const char *c;
	size_t i, used = 0;

	list[0] = h[0] = '\0';
	for (i = 0; i < nnames; i++) {
		if (is_scalar(n) && !strcmp(names[i], sval(n))) {
			*out = (int)i;
			return 0;
		}
		if (used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
			                         i ? ", " : "", names[i]);
	}
	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be one of %s, got a %s", key, list, kind(n));
	c = closest(sval(n), names, nnames);
	if (c)
		snprintf(h, sizeof(h), " (did you mean '%s'?)", c);
	return err_node(s, n, "'%s' must be one of %s, got '%.80s'%s", key, list, sval(n), h);
}

/* A list, or nothing when the value is null. */
static int get_list(struct ysrc *s, const yaml_node_t *n, const char *key)
{
	if (n->type == YAML_SEQUENCE_NODE || is_null(n))
		return 0;
	return err_node(s, n, "'%s' must be a list, got a %s", key, kind(n));
}

static size_t list_len(const yaml_node_t *n)
{
	return n->type == YAML_SEQUENCE_NODE ? seq_len(n) : 0;
}

/* ----------------------------------------------------------- expressions */

/* Which names an expression may use. */
enum expr_names {
	NAMES_DIMS = 1,   /* the problem's dims */
	NAMES_PARAMS = 2, /* the family's params */
	NAMES_ALL = 3,
};

static int is_dim(const struct problem *pb, const char *name)
{
	return pb && problem_dim_index(pb, name) >= 0;
}

struct ident_check {
	struct ysrc *s;
	const yaml_node_t *n;
	const char *key;
	const struct family *fam;
	int names; /* enum expr_names */
	int bad;
};

static int check_ident(const char *name, int col, void *data)
{
	struct ident_check *ic = data;
	const struct problem *pb = ic->fam->problem;
	const char *names[TUNER_MAX_PARAMS + PROBLEM_MAX_DIMS];
	const char *c, *what;
	size_t i, n = 0;
	int line, pcol;

	if (((ic->names & NAMES_PARAMS) && family_param_index(ic->fam, name) >= 0) ||
	    ((ic->names & NAMES_DIMS) && is_dim(pb, name)))
		return 0;
	if (ic->names & NAMES_PARAMS)
		for (i = 0; i < ic->fam->nparams; i++)
			names[n++] = ic->fam->params[i].name;
	if (ic->names & NAMES_DIMS)
		for (i = 0; pb && i < pb->ndims; i++)
			names[n++] = pb->dims[i];
	what = ic->names == NAMES_DIMS     ? "not a dim of the problem"
	       : ic->names == NAMES_PARAMS ? "not a param"
	                                   : "not a param or a dim of the problem";
	if ((ic->names & NAMES_PARAMS) == 0 && family_param_index(ic->fam, name) >= 0)
		what = "a param, which this expression may not use: it describes the problem, "
		       "whatever the variant";
	ic->bad = 1;
	c = closest(name, names, n);
	value_pos(ic->s, ic->n, col, &line, &pcol);
	if (c)
		err_pos(ic->s, line, pcol, "unknown name '%s' in '%s': %s (did you mean '%s'?)",
		        name, ic->key, what, c);
	else
		err_pos(ic->s, line, pcol, "unknown name '%s' in '%s': %s", name, ic->key, what);
	return 1;
}

/* Parse an expression over the names the mask allows (params, dims). */
static int get_expr_in(struct ysrc *s, const yaml_node_t *n, const char *key,
                       const struct family *fam, int names, struct expr **out)
{
	struct ident_check ic = {s, n, key, fam, names, 0};
	struct expr_err ee;
	struct expr *e;
	int line, col;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be an expression, got a %s", key, kind(n));
	memset(&ee, 0, sizeof(ee));
	e = expr_parse(sval(n), &ee);
	if (!e) {
		value_pos(s, n, ee.col, &line, &col);
		return err_pos(s, line, col, "cannot parse '%s': %s in '%.200s'", key,
		               *ee.msg ? ee.msg : "invalid expression", sval(n));
	}
	if (expr_foreach_ident(e, check_ident, &ic) || ic.bad) {
		expr_free(e);
		return -1;
	}
	*out = e;
	return 0;
}

/* Parse an expression over the family's params and its problem's dims. */
static int get_expr(struct ysrc *s, const yaml_node_t *n, const char *key, const struct family *fam,
                    struct expr **out)
{
	return get_expr_in(s, n, key, fam, NAMES_ALL, out);
}

/* -------------------------------------------------------------- sidecars */

int family_param_index(const struct family *fam, const char *name)
{
	size_t i;

	for (i = 0; i < fam->nparams; i++)
		if (fam->params[i].name && !strcmp(fam->params[i].name, name))
			return (int)i;
	return -1;
}

void family_release(struct family *fam)
{
	size_t i;

	free(fam->path);
	free(fam->name);
	free(fam->source_path);
	free(fam->source);
	free(fam->text);
	for (i = 0; i < fam->nparams; i++) {
		free(fam->params[i].name);
		free(fam->params[i].values);
		free(fam->params[i].order);
	}
	for (i = 0; i < fam->nconstraints; i++)
		if (fam->constraints[i].e)
			expr_free(fam->constraints[i].e);
	free(fam->constraints);
	if (fam->smem_bytes)
		expr_free(fam->smem_bytes);
	for (i = 0; i < fam->nlayout; i++) {
		free(fam->layout[i].name);
		free(fam->layout[i].access);
		if (fam->layout[i].offset)
			expr_free(fam->layout[i].offset);
		if (fam->layout[i].stride)
			expr_free(fam->layout[i].stride);
	}
	free(fam->layout);
	for (i = 0; i < fam->nlaunches; i++)
		launch_spec_release(&fam->launches[i]);
	for (i = 0; i < fam->nspecialize; i++)
		free(fam->specialize[i]);
	for (i = 0; i < fam->noptions; i++)
		free(fam->options[i]);
	free(fam->options);
	if (fam->problem) {
		problem_release(fam->problem);
		free(fam->problem);
	}
	memset(fam, 0, sizeof(*fam));
}

enum {
	FK_NAME,
	FK_SOURCE,
	FK_KERNEL,
	FK_PROBLEM,
	FK_SPECIALIZE,
	FK_PARAMS,
	FK_CONSTRAINTS,
	FK_SMEM,
	FK_LAYOUT,
	FK_LAUNCH,
	FK_BASELINE,
	FK_OPTIONS,
	FK_LAUNCHES,
	FK_LANDSCAPE,
	FK_COUNT
};

static const char *const family_keys[FK_COUNT] = {
    "name",       "source", "kernel", "problem",  "specialize", "params",   "constraints",
    "smem_bytes", "layout", "launch", "baseline", "options",    "launches", "landscape",
};

static int load_source(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	char *rel, *dir;
	size_t len;

	if (get_string(s, n, "source", &rel) < 0)
		return -1;
	dir = path_dirname(s->path);
	fam->source_path = path_join(dir, rel);
	free(dir);
	if (read_file_limited(fam->source_path, CONFIG_MAX_FILE_BYTES, &fam->source, &len) < 0) {
		err_node(s, n, "cannot read source '%s': %s", rel, strerror(errno));
		free(rel);
		return -1;
	}
	free(rel);
	hash_hex(fam->source, len, fam->source_hash);
	return 0;
}

static void dims_list(const struct problem *pb, char *out, size_t len)
{
	size_t i, used = 0;

	*out = '\0';
	for (i = 0; i < pb->ndims && used < len; i++)
		used +=
		    (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", pb->dims[i]);
}

static int load_specialize(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	char dims[128];
	size_t i, j;

	if (get_list(s, n, "specialize") < 0)
		return -1;
	dims_list(fam->problem, dims, sizeof(dims));
	for (i = 0; i < list_len(n); i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (!is_scalar(it) || is_null(it))
			return err_node(s, it, "'specialize' entries must be dim names, got a %s",
			                kind(it));
		if (!is_dim(fam->problem, sval(it)))
			return err_node(s, it,
			                "'specialize': '%.80s' is not a dim of the problem (%s)",
			                sval(it), dims);
		for (j = 0; j < fam->nspecialize; j++)
			if (!strcmp(fam->specialize[j], sval(it)))
				return err_node(s, it, "'specialize': duplicate dim '%s'",
				                sval(it));
		fam->specialize[fam->nspecialize++] = xstrdup(sval(it));
	}
	return 0;
}

static int check_param_name(struct ysrc *s, const yaml_node_t *k, const struct family *fam)
{
	const char *name = sval(k);

	if (!is_ident(name))
		return err_node(s, k, "param name '%.80s' is not a C identifier", name);
	if (is_dim(fam->problem, name))
		return err_node(s, k, "param '%s' has the name of a dim of the problem", name);
	if (expr_is_function(name) || !strcmp(name, "smem_bytes"))
		return err_node(
		    s, k, "param '%s' has a reserved name (a function of the expressions)", name);
	if (!strncmp(name, "SHAPE_", 6) || !strncmp(name, "TUNER_", 6))
		return err_node(s, k, "param '%s' uses a reserved prefix (SHAPE_, TUNER_)", name);
	return 0;
}

/* A param's values: integers first, then none twice (a value that is no integer is named first). */
static int load_param(struct ysrc *s, const yaml_node_t *k, const yaml_node_t *v, struct param *p)
{
	size_t i, nv, dup;

	p->name = xstrdup(sval(k));
	p->line = (int)k->start_mark.line + 1;
	if (v->type != YAML_SEQUENCE_NODE)
		return err_node(s, v, "param '%s' must be a list of integers, got a %s", p->name,
		                kind(v));
	nv = seq_len(v);
	if (!nv)
		return err_node(s, v, "param '%s' has no values", p->name);
	p->values = xcalloc(nv, sizeof(*p->values));
	for (i = 0; i < nv; i++) {
		if (get_ll(s, seq_at(s, v, i), p->name, LLONG_MIN, LLONG_MAX, &p->values[i]) < 0)
			return -1;
		p->nvalues = i + 1;
	}
	dup = space_param_order(p);
	if (dup < nv)
		return err_node(s, seq_at(s, v, dup), "duplicate value %lld in param '%s'",
		                p->values[dup], p->name);
	return 0;
}

static int load_params(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	size_t i;

	if (map_fields(s, n, "params", NULL, 0, NULL, NULL) < 0)
		return -1;
	if (!map_len(n))
		return err_node(s, n, "'params' must declare at least one param");
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i);

		if (i == TUNER_MAX_PARAMS)
			return err_node(s, k, "more than %d params", TUNER_MAX_PARAMS);
		if (check_param_name(s, k, fam) < 0)
			return -1;
		fam->nparams = i + 1;
		if (load_param(s, k, map_val(s, n, i), &fam->params[i]) < 0)
			return -1;
	}
	return 0;
}

static int in_domain(const struct param *p, long long v)
{
	size_t i;

	for (i = 0; i < p->nvalues; i++)
		if (p->values[i] == v)
			return 1;
	return 0;
}

static void domain_list(const struct param *p, char *out, size_t len)
{
	size_t i, used = 0;

	*out = '\0';
	for (i = 0; i < p->nvalues && used < len; i++)
		used +=
		    (size_t)snprintf(out + used, len - used, "%s%lld", i ? ", " : "", p->values[i]);
}

static int load_baseline(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	const char *names[TUNER_MAX_PARAMS];
	int seen[TUNER_MAX_PARAMS] = {0};
	char h[512], dom[512];
	size_t i;

	if (map_fields(s, n, "baseline", NULL, 0, NULL, NULL) < 0)
		return -1;
	for (i = 0; i < fam->nparams; i++)
		names[i] = fam->params[i].name;
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i), *v = map_val(s, n, i);
		int idx = family_param_index(fam, sval(k));
		const struct param *p;

		if (idx < 0) {
			hint(h, sizeof(h), sval(k), names, fam->nparams, "params");
			return err_node(s, k, "unknown param '%.80s' in 'baseline'%s", sval(k), h);
		}
		p = &fam->params[idx];
		if (get_ll(s, v, p->name, LLONG_MIN, LLONG_MAX, &fam->baseline[idx]) < 0)
			return -1;
		if (!in_domain(p, fam->baseline[idx])) {
			domain_list(p, dom, sizeof(dom));
			return err_node(s, v, "baseline %s = %lld is not in its domain [%s]",
			                p->name, fam->baseline[idx], dom);
		}
		seen[idx] = 1;
	}
	for (i = 0; i < fam->nparams; i++)
		if (!seen[i])
			return err_node(s, n, "'baseline' is missing param '%s'",
			                fam->params[i].name);
	return 0;
}

static int load_constraints(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	size_t i, cnt;

	if (get_list(s, n, "constraints") < 0)
		return -1;
	cnt = list_len(n);
	fam->constraints = xcalloc(cnt, sizeof(*fam->constraints));
	for (i = 0; i < cnt; i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (get_expr(s, it, "constraints", fam, &fam->constraints[i].e) < 0)
			return -1;
		fam->constraints[i].line = (int)it->start_mark.line + 1;
		fam->nconstraints = i + 1;
	}
	return 0;
}

static int is_pow2(long long v)
{
	return v > 0 && !(v & (v - 1));
}

static const char *const layout_keys[] = {"name", "offset", "stride", "align", "access"};

static int load_layout_buf(struct ysrc *s, const yaml_node_t *n, struct family *fam, size_t idx)
{
	struct layout_buf *b = &fam->layout[idx];
	yaml_node_t *v[ARRAY_SIZE(layout_keys)];
	long long align;
	size_t i;

	if (map_fields(s, n, "layout", layout_keys, ARRAY_SIZE(layout_keys), v, NULL) < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(layout_keys); i++)
		if (need(s, n, "layout", layout_keys[i], v[i]) < 0)
			return -1;
	b->line = (int)n->start_mark.line + 1;
	if (get_ident(s, v[0], "name", &b->name) < 0)
		return -1;
	for (i = 0; i < idx; i++)
		if (!strcmp(fam->layout[i].name, b->name))
			return err_node(s, v[0],
			                "duplicate buffer '%s' in 'layout' (first at line %d)",
			                b->name, fam->layout[i].line);
	if (get_expr(s, v[1], "offset", fam, &b->offset) < 0 ||
	    get_expr(s, v[2], "stride", fam, &b->stride) < 0)
		return -1;
	if (get_ll(s, v[3], "align", 1, 4096, &align) < 0)
		return -1;
	if (!is_pow2(align))
		return err_node(s, v[3], "'align' must be a power of two, got %lld", align);
	b->align = (int)align;
	return get_string(s, v[4], "access", &b->access);
}

/* At most TUNER_MAX_LAYOUT buffers: each name is compared with those before it (60000 took 15 s).
 */
static int load_layout(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	size_t i, cnt;

	if (get_list(s, n, "layout") < 0)
		return -1;
	cnt = list_len(n);
	fam->layout =
	    xcalloc(cnt < TUNER_MAX_LAYOUT ? cnt : TUNER_MAX_LAYOUT, sizeof(*fam->layout));
	for (i = 0; i < cnt; i++) {
		if (i == TUNER_MAX_LAYOUT)
			return err_node(s, seq_at(s, n, i), "more than %d buffers in 'layout'",
			                TUNER_MAX_LAYOUT);
		fam->nlayout = i + 1;
		if (load_layout_buf(s, seq_at(s, n, i), fam, i) < 0)
			return -1;
	}
	return 0;
}

static const char *const launch_keys[] = {"grid", "block", "pdl"};

static int load_dims3(struct ysrc *s, const yaml_node_t *n, const char *key,
                      const struct family *fam, int names, struct expr **out)
{
	struct expr_err ee;
	size_t i, cnt;

	if (n->type != YAML_SEQUENCE_NODE)
		return err_node(s, n, "'%s' must be a list of 1 to 3 expressions, got a %s", key,
		                kind(n));
	cnt = seq_len(n);
	/* parse them all first: an unbalanced '(' splits one expression into several */
	for (i = 0; i < cnt; i++) {
		struct expr *e = NULL;

		if (get_expr_in(s, seq_at(s, n, i), key, fam, names, i < 3 ? &out[i] : &e) < 0)
			return -1;
		if (e)
			expr_free(e);
	}
	if (cnt < 1 || cnt > 3)
		return err_node(s, n, "'%s' must have 1 to 3 dimensions, got %zu", key, cnt);
	for (; i < 3; i++) {
		out[i] = expr_parse("1", &ee);
		if (!out[i])
			BUG("cannot parse the constant '1': %s", ee.msg);
	}
	return 0;
}

/* The single-launch form: 'kernel' and 'launch: {grid, block[, pdl]}', with smem_bytes. */
static int load_launch(struct ysrc *s, const yaml_node_t *kn, const yaml_node_t *n,
                       struct family *fam)
{
	struct launch_spec *l = &fam->launches[0];
	yaml_node_t *v[ARRAY_SIZE(launch_keys)];

	fam->nlaunches = 1;
	l->line = (int)n->start_mark.line + 1;
	l->smem_family = 1;
	if (get_ident(s, kn, "kernel", &l->kernel) < 0)
		return -1;
	if (map_fields(s, n, "launch", launch_keys, ARRAY_SIZE(launch_keys), v, NULL) < 0 ||
	    need(s, n, "launch", "grid", v[0]) < 0 || need(s, n, "launch", "block", v[1]) < 0)
		return -1;
	if (load_dims3(s, v[0], "grid", fam, NAMES_ALL, l->grid) < 0 ||
	    load_dims3(s, v[1], "block", fam, NAMES_ALL, l->block) < 0)
		return -1;
	return v[2] ? get_expr_in(s, v[2], "pdl", fam, NAMES_ALL, &l->pdl) : 0;
}

static int load_options(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	size_t i, cnt;

	if (get_list(s, n, "options") < 0)
		return -1;
	cnt = list_len(n);
	fam->options = xcalloc(cnt, sizeof(*fam->options));
	for (i = 0; i < cnt; i++) {
		yaml_node_t *it = seq_at(s, n, i);
		const char *v;

		if (!is_scalar(it) || is_null(it) || !*sval(it))
			return err_node(s, it,
			                "'options' entries must be compiler options, got a %s",
			                kind(it));
		v = sval(it);
		if (!strncmp(v, "-arch", 5) || !strncmp(v, "--gpu-architecture", 18))
			return err_node(s, it,
			                "'options' must not set the architecture ('%.80s'): the "
			                "config's 'arch' does",
			                v);
		fam->options[i] = xstrdup(v);
		fam->noptions = i + 1;
	}
	return 0;
}

/* ------------------------------------------------------------- problems */

/*
 * The problem a family solves, as data (docs/FAMILIES.md): its dims, the
 * shapes' validity rules, its buffers, the kernel's argument list, the
 * reference kernel, FLOPs and bytes. It is read in two steps, since the dims
 * must be known before the params (a param may not take a dim's name) and the
 * params before the buffers and arguments (a scratch count or an argument may
 * use them).
 */

static const char *const problem_keys[] = {"dims", "valid",     "ragged", "buffers",
                                           "args", "reference", "flops",  "bytes"};
enum {
	PK_DIMS,
	PK_VALID,
	PK_RAGGED,
	PK_BUFFERS,
	PK_ARGS,
	PK_REFERENCE,
	PK_FLOPS,
	PK_BYTES,
	PK_COUNT
};

static const char *const role_names[] = {"in", "out", "inout", "scratch"};
static const char *const buffer_keys[] = {"dtype", "count", "role", "fill", "init", "compare"};
static const char *const compare_keys[] = {"rel_l2", "max_abs", "cosine"};
static const char *const reference_keys[] = {"source", "kernel",  "grid",    "block",   "smem",
                                             "args",   "outputs", "options", "launches"};
static const char *const launch_entry_keys[] = {"kernel", "grid",    "block", "smem",
                                                "args",   "cluster", "when",  "pdl"};
static const char *const tensormap_keys[] = {"buffer", "dims", "strides", "box", "swizzle"};

/* Where a YAML node lives: the family's sidecar or its problem file. */
struct problem_src {
	struct ysrc own; /* the problem file, when the sidecar names one */
	struct ysrc *s;  /* own, or the sidecar's */
	yaml_node_t *root;
	yaml_node_t *v[PK_COUNT];
};

static int load_dims(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	struct problem *pb = fam->problem;
	size_t i, j;

	if (n->type != YAML_SEQUENCE_NODE || !seq_len(n))
		return err_node(s, n, "'dims' must be a list of dim names, got a %s",
		                n->type == YAML_SEQUENCE_NODE ? "empty list" : kind(n));
	if (seq_len(n) > PROBLEM_MAX_DIMS)
		return err_node(s, n, "more than %d dims", PROBLEM_MAX_DIMS);
	for (i = 0; i < seq_len(n); i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (!is_scalar(it) || is_null(it) || !is_ident(sval(it)))
			return err_node(s, it, "'dims' entries must be C identifiers, got '%.80s'",
			                is_scalar(it) ? sval(it) : kind(it));
		if (expr_is_function(sval(it)) || !strcmp(sval(it), "name") ||
		    !strcmp(sval(it), "smem_bytes"))
			return err_node(s, it, "dim '%s' has a reserved name", sval(it));
		for (j = 0; j < i; j++)
			if (!strcmp(pb->dims[j], sval(it)))
				return err_node(s, it, "duplicate dim '%s'", sval(it));
		pb->dims[i] = xstrdup(sval(it));
		pb->ndims = i + 1;
	}
	return 0;
}

static int load_valid(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	struct problem *pb = fam->problem;
	size_t i, cnt;

	if (get_list(s, n, "valid") < 0)
		return -1;
	cnt = list_len(n);
	pb->valid = xcalloc(cnt + 1, sizeof(*pb->valid));
	pb->valid_line = xcalloc(cnt + 1, sizeof(*pb->valid_line));
	for (i = 0; i < cnt; i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (get_expr_in(s, it, "valid", fam, NAMES_DIMS, &pb->valid[i]) < 0)
			return -1;
		pb->valid_line[i] = (int)it->start_mark.line + 1;
		pb->nvalid = i + 1;
	}
	return 0;
}

static int load_ragged(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	struct problem *pb = fam->problem;
	size_t i;
	int d;

	if (get_list(s, n, "ragged") < 0)
		return -1;
	for (i = 0; i < list_len(n); i++) {
		yaml_node_t *it = seq_at(s, n, i);

		d = is_scalar(it) ? problem_dim_index(pb, sval(it)) : -1;
		if (d < 0)
			return err_node(s, it, "'ragged': '%.80s' is not a dim of the problem",
			                is_scalar(it) ? sval(it) : kind(it));
		pb->ragged[d] = 1;
	}
	return 0;
}

/* fill: normal | uniform | iota | zeros | {normal: {mean, std}} | {uniform: {min, max}} |
 * {constant: V} */
static int load_fill(struct ysrc *s, const yaml_node_t *n, const char *key, int scratch,
                     struct fill *f)
{
	static const char *const inits[] = {"zeros", "poison", "zeros-once"};
	static const char *const fills[] = {"normal", "uniform", "iota", "constant", "zeros"};
	static const char *const normal_keys[] = {"mean", "std"};
	static const char *const uniform_keys[] = {"min", "max"};
	yaml_node_t *k, *v, *p[2];
	int e;

	if (scratch) {
		if (get_enum(s, n, key, inits, ARRAY_SIZE(inits), &e) < 0)
			return -1;
		f->kind = e == 2 ? FILL_ZEROS_ONCE : e ? FILL_POISON : FILL_ZEROS;
		return 0;
	}
	if (is_scalar(n)) {
		if (get_enum(s, n, key, fills, ARRAY_SIZE(fills), &e) < 0)
			return -1;
		if (e == 3)
			return err_node(s, n, "'constant' needs a value: {constant: 1.0}");
		f->kind = e == 0   ? FILL_NORMAL
		          : e == 1 ? FILL_UNIFORM
		          : e == 2 ? FILL_IOTA
		                   : FILL_ZEROS;
		f->a = e == 1 ? -1 : 0;
		f->b = 1;
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE || map_len(n) != 1)
		return err_node(
		    s, n,
		    "'%s' must be normal, uniform, iota, zeros, {normal: {mean: M, std: "
		    "S}}, {uniform: {min: A, max: B}} or {constant: V}",
		    key);
	k = map_key(s, n, 0);
	v = map_val(s, n, 0);
	if (get_enum(s, k, key, fills, ARRAY_SIZE(fills), &e) < 0)
		return -1;
	switch (e) {
	case 0:
	case 1:
		if (map_fields(s, v, sval(k), e ? uniform_keys : normal_keys, 2, p, NULL) < 0)
			return -1;
		f->kind = e ? FILL_UNIFORM : FILL_NORMAL;
		f->a = e ? -1 : 0;
		f->b = 1;
		if (p[0] && get_double_signed(s, p[0], e ? "min" : "mean", &f->a) < 0)
			return -1;
		if (p[1] && get_double_signed(s, p[1], e ? "max" : "std", &f->b) < 0)
			return -1;
		if (e == 0 && f->b < 0)
			return err_node(s, p[1], "'std' must not be negative");
		if (e == 1 && !(f->a < f->b))
			return err_node(s, p[1] ? p[1] : v, "'min' must be below 'max'");
		return 0;
	case 3:
		f->kind = FILL_CONSTANT;
		return get_double_signed(s, v, "constant", &f->a);
	default:
		return err_node(s, v, "'%s' takes no settings", sval(k));
	}
}

static int load_compare(struct ysrc *s, const yaml_node_t *n, struct problem_buffer *b)
{
	yaml_node_t *v[3];

	if (map_fields(s, n, "compare", compare_keys, 3, v, NULL) < 0)
		return -1;
	if ((v[0] && get_double(s, v[0], "rel_l2", 0, &b->rel_l2) < 0) ||
	    (v[1] && get_double(s, v[1], "max_abs", 0, &b->max_abs) < 0) ||
	    (v[2] && get_double(s, v[2], "cosine", 1, &b->cosine) < 0))
		return -1;
	if (v[2] && b->cosine > 1)
		return err_node(s, v[2], "'cosine' must be at most 1");
	return 0;
}

static int get_dtype(struct ysrc *s, const yaml_node_t *n, const char *key, enum dtype *out)
{
	const char *names[DT_COUNT];
	int i;

	for (i = 0; i < DT_COUNT; i++)
		names[i] = dtype_name((enum dtype)i);
	if (get_enum(s, n, key, names, DT_COUNT, &i) < 0)
		return -1;
	*out = (enum dtype)i;
	return 0;
}

static int load_buffer(struct ysrc *s, const yaml_node_t *k, const yaml_node_t *n,
                       struct family *fam, struct problem_buffer *b)
{
	yaml_node_t *v[ARRAY_SIZE(buffer_keys)];
	char where[64];
	int role;

	b->line = (int)k->start_mark.line + 1;
	b->rel_l2 = b->max_abs = b->cosine = NAN;
	snprintf(where, sizeof(where), "buffer %.40s", b->name);
	if (map_fields(s, n, where, buffer_keys, ARRAY_SIZE(buffer_keys), v, NULL) < 0 ||
	    need(s, n, where, "dtype", v[0]) < 0 || need(s, n, where, "count", v[1]) < 0 ||
	    need(s, n, where, "role", v[2]) < 0)
		return -1;
	if (get_dtype(s, v[0], "dtype", &b->dtype) < 0)
		return -1;
	b->ref_dtype = b->dtype;
	if (get_enum(s, v[2], "role", role_names, ARRAY_SIZE(role_names), &role) < 0)
		return -1;
	b->role = (enum buf_role)role;
	if (get_expr_in(s, v[1], "count", fam, b->role == ROLE_SCRATCH ? NAMES_ALL : NAMES_DIMS,
	                &b->count) < 0)
		return -1;
	b->fill.kind = b->role == ROLE_SCRATCH ? FILL_POISON : FILL_NORMAL;
	b->fill.a = 0;
	b->fill.b = 1;
	if (v[3] && (b->role == ROLE_OUT || b->role == ROLE_SCRATCH))
		return err_node(s, v[3], "'fill' is for inputs; %s buffers %s", role_names[b->role],
		                b->role == ROLE_OUT
		                    ? "are poisoned before every run"
		                    : "take 'init: zeros', 'zeros-once' or 'poison'");
	if (v[4] && b->role != ROLE_SCRATCH)
		return err_node(s, v[4], "'init' is for scratch buffers");
	if (v[5] && (b->role == ROLE_IN || b->role == ROLE_SCRATCH))
		return err_node(s, v[5], "'compare' is for outputs (role out or inout)");
	if (v[3] && load_fill(s, v[3], "fill", 0, &b->fill) < 0)
		return -1;
	if (v[4] && load_fill(s, v[4], "init", 1, &b->fill) < 0)
		return -1;
	if (v[5] && load_compare(s, v[5], b) < 0)
		return -1;
	return 0;
}

static int load_buffers(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	struct problem *pb = fam->problem;
	size_t i, j, outs = 0;

	if (n->type != YAML_MAPPING_NODE || !map_len(n))
		return err_node(s, n, "'buffers' must be a mapping of buffer names, got a %s",
		                n->type == YAML_MAPPING_NODE ? "empty mapping" : kind(n));
	if (map_fields(s, n, "buffers", NULL, 0, NULL, NULL) < 0)
		return -1;
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i);
		struct problem_buffer *b = &pb->bufs[i];

		if (i == PROBLEM_MAX_BUFFERS)
			return err_node(s, k, "more than %d buffers", PROBLEM_MAX_BUFFERS);
		if (!is_ident(sval(k)))
			return err_node(s, k, "buffer name '%.80s' is not a C identifier", sval(k));
		if (problem_dim_index(pb, sval(k)) >= 0 || family_param_index(fam, sval(k)) >= 0)
			return err_node(s, k, "buffer '%s' has the name of a %s", sval(k),
			                problem_dim_index(pb, sval(k)) >= 0 ? "dim" : "param");
		for (j = 0; j < i; j++)
			if (!strcmp(pb->bufs[j].name, sval(k)))
				return err_node(s, k, "duplicate buffer '%s'", sval(k));
		b->name = xstrdup(sval(k));
		pb->nbufs = i + 1;
		if (load_buffer(s, k, map_val(s, n, i), fam, b) < 0)
			return -1;
		outs += b->role == ROLE_OUT || b->role == ROLE_INOUT;
	}
	if (!outs)
		return err_node(s, n, "no buffer has role out or inout: nothing could be checked");
	return 0;
}

static int load_dims_list(struct ysrc *s, const yaml_node_t *n, const char *key, size_t max,
                          const struct family *fam, int names, struct expr **out, size_t *cnt)
{
	size_t i;

	if (n->type != YAML_SEQUENCE_NODE || !seq_len(n) || seq_len(n) > max)
		return err_node(s, n, "'%s' must be a list of 1 to %zu expressions", key, max);
	for (i = 0; i < seq_len(n); i++)
		if (get_expr_in(s, seq_at(s, n, i), key, fam, names, &out[i]) < 0)
			return -1;
	*cnt = seq_len(n);
	return 0;
}

static int load_tensormap(struct ysrc *s, const yaml_node_t *n, struct family *fam, int names,
                          struct problem_arg *a)
{
	static const char *const swizzles[] = {"none", "32B", "64B", "128B"};
	struct tensormap_spec *t = xcalloc(1, sizeof(*t));
	yaml_node_t *v[ARRAY_SIZE(tensormap_keys)];
	size_t nd = 0, nb = 0, ns = 0;
	int sw = 0;

	a->tmap = t;
	if (map_fields(s, n, "tensormap", tensormap_keys, ARRAY_SIZE(tensormap_keys), v, NULL) <
	        0 ||
	    need(s, n, "tensormap", "buffer", v[0]) < 0 ||
	    need(s, n, "tensormap", "dims", v[1]) < 0 || need(s, n, "tensormap", "box", v[3]) < 0)
		return -1;
	t->buffer = is_scalar(v[0]) ? problem_buffer_index(fam->problem, sval(v[0])) : -1;
	if (t->buffer < 0)
		return err_node(s, v[0], "'buffer' must name a buffer of the problem");
	if (load_dims_list(s, v[1], "dims", 5, fam, names, t->dims, &nd) < 0 ||
	    load_dims_list(s, v[3], "box", 5, fam, names, t->box, &nb) < 0)
		return -1;
	if (nb != nd)
		return err_node(s, v[3], "'box' has %zu entries, 'dims' %zu", nb, nd);
	if (v[2] && load_dims_list(s, v[2], "strides", 4, fam, names, t->strides + 1, &ns) < 0)
		return -1;
	if (v[2] && ns != nd - 1)
		return err_node(s, v[2],
		                "'strides' gives the byte strides of dims 1 and up: %zu, got %zu",
		                nd - 1, ns);
	if (v[4] && get_enum(s, v[4], "swizzle", swizzles, ARRAY_SIZE(swizzles), &sw) < 0)
		return -1;
	t->rank = nd;
	t->swizzle = sw ? 16 << sw : 0;
	return 0;
}

/* One argument: a buffer name, {i32: E}, {i64: E}, {f32: E}, {f64: E} or {tensormap: {...}}. */
static int load_arg(struct ysrc *s, const yaml_node_t *n, struct family *fam, int names,
                    struct problem_arg *a)
{
	static const char *const kinds[] = {"buffer", "i32", "i64", "f32", "f64", "tensormap"};
	yaml_node_t *k, *v;
	int e;

	a->line = (int)n->start_mark.line + 1;
	if (is_scalar(n) && !is_null(n)) {
		a->kind = ARG_BUFFER;
		a->buffer = problem_buffer_index(fam->problem, sval(n));
		if (a->buffer < 0)
			return err_node(
			    s, n,
			    "argument '%.80s' is not a buffer; a scalar is written {i32: "
			    "EXPR}, {i64: ...}, {f32: ...} or {f64: ...}",
			    sval(n));
		return 0;
	}
	if (n->type != YAML_MAPPING_NODE || map_len(n) != 1)
		return err_node(s, n, "an argument is a buffer name or {TYPE: EXPR}, got a %s",
		                kind(n));
	k = map_key(s, n, 0);
	v = map_val(s, n, 0);
	if (get_enum(s, k, "argument type", kinds + 1, ARRAY_SIZE(kinds) - 1, &e) < 0)
		return -1;
	a->kind = (enum arg_kind)(e + 1);
	if (a->kind == ARG_TENSORMAP)
		return load_tensormap(s, v, fam, names, a);
	return get_expr_in(s, v, sval(k), fam, names, &a->e);
}

static int load_args(struct ysrc *s, const yaml_node_t *n, struct family *fam, int names,
                     struct problem_arg **out, size_t *nout)
{
	size_t i;

	if (n->type != YAML_SEQUENCE_NODE)
		return err_node(s, n, "'args' must be a list, got a %s", kind(n));
	if (seq_len(n) > PROBLEM_MAX_ARGS)
		return err_node(s, n, "more than %d arguments", PROBLEM_MAX_ARGS);
	*out = xcalloc(seq_len(n) + 1, sizeof(**out));
	for (i = 0; i < seq_len(n); i++) {
		*nout = i + 1;
		if (load_arg(s, seq_at(s, n, i), fam, names, &(*out)[i]) < 0)
			return -1;
	}
	return 0;
}

/* One launch: {kernel, grid, block, smem, args, cluster, when, pdl}; v holds their values. */
static int load_launch_fields(struct ysrc *s, const yaml_node_t *n, yaml_node_t *const *v,
                              struct family *fam, int names, struct launch_spec *l)
{
	l->line = (int)n->start_mark.line + 1;
	if (need(s, n, "launch", "kernel", v[0]) < 0 || need(s, n, "launch", "grid", v[1]) < 0 ||
	    need(s, n, "launch", "block", v[2]) < 0)
		return -1;
	if (get_ident(s, v[0], "kernel", &l->kernel) < 0 ||
	    load_dims3(s, v[1], "grid", fam, names, l->grid) < 0 ||
	    load_dims3(s, v[2], "block", fam, names, l->block) < 0)
		return -1;
	if (v[3]) {
		if (names != NAMES_DIMS && is_scalar(v[3]) && !strcmp(sval(v[3]), "smem_bytes"))
			l->smem_family = 1;
		else if (get_expr_in(s, v[3], "smem", fam, names, &l->smem) < 0)
			return -1;
	}
	if (v[4]) {
		struct problem_arg *args = NULL;

		if (load_args(s, v[4], fam, names, &args, &l->nargs) < 0) {
			l->args = args;
			return -1;
		}
		l->args = args;
	}
	if (v[5] && load_dims3(s, v[5], "cluster", fam, names, l->cluster) < 0)
		return -1;
	if (v[6] && get_expr_in(s, v[6], "when", fam, names, &l->when) < 0)
		return -1;
	if (v[7] && get_expr_in(s, v[7], "pdl", fam, names, &l->pdl) < 0)
		return -1;
	return 0;
}

static int load_launch_list(struct ysrc *s, const yaml_node_t *n, struct family *fam, int names,
                            struct launch_spec *out, size_t *nout)
{
	size_t i;

	if (n->type != YAML_SEQUENCE_NODE || !seq_len(n))
		return err_node(s, n, "'launches' must be a list of launches");
	if (seq_len(n) > PROBLEM_MAX_LAUNCHES)
		return err_node(s, n, "more than %d launches", PROBLEM_MAX_LAUNCHES);
	for (i = 0; i < seq_len(n); i++) {
		yaml_node_t *it = seq_at(s, n, i), *v[ARRAY_SIZE(launch_entry_keys)];

		*nout = i + 1;
		if (map_fields(s, it, "launches", launch_entry_keys, ARRAY_SIZE(launch_entry_keys),
		               v, NULL) < 0 ||
		    load_launch_fields(s, it, v, fam, names, &out[i]) < 0)
			return -1;
	}
	return 0;
}

static int load_reference(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	struct problem_reference *r = &fam->problem->ref;
	yaml_node_t *v[ARRAY_SIZE(reference_keys)], *lv[ARRAY_SIZE(launch_entry_keys)];
	char *rel, *dir;
	size_t i, len;

	if (map_fields(s, n, "reference", reference_keys, ARRAY_SIZE(reference_keys), v, NULL) <
	        0 ||
	    need(s, n, "reference", "source", v[0]) < 0)
		return -1;
	if (get_string(s, v[0], "source", &rel) < 0)
		return -1;
	dir = path_dirname(s->path);
	r->source_path = path_join(dir, rel);
	free(dir);
	if (read_file_limited(r->source_path, CONFIG_MAX_FILE_BYTES, &r->source, &len) < 0) {
		err_node(s, v[0], "cannot read the reference '%s': %s", rel, strerror(errno));
		free(rel);
		return -1;
	}
	free(rel);
	if (v[8]) {
		for (i = 1; i < 6; i++)
			if (v[i])
				return err_node(s, v[i], "'%s' goes into each of 'launches'",
				                reference_keys[i]);
		if (load_launch_list(s, v[8], fam, NAMES_DIMS, r->launches, &r->nlaunches) < 0)
			return -1;
	} else {
		/* kernel grid block smem args, as in a launches entry */
		for (i = 0; i < 5; i++)
			lv[i] = v[1 + i];
		lv[5] = lv[6] = lv[7] = NULL;
		r->nlaunches = 1;
		if (load_launch_fields(s, n, lv, fam, NAMES_DIMS, &r->launches[0]) < 0)
			return -1;
	}
	if (v[6]) {
		if (map_fields(s, v[6], "outputs", NULL, 0, NULL, NULL) < 0)
			return -1;
		for (i = 0; i < map_len(v[6]); i++) {
			yaml_node_t *k = map_key(s, v[6], i);
			int b = problem_buffer_index(fam->problem, sval(k));

			if (b < 0 || (fam->problem->bufs[b].role != ROLE_OUT &&
			              fam->problem->bufs[b].role != ROLE_INOUT))
				return err_node(s, k, "'outputs': '%.80s' is not an output buffer",
				                sval(k));
			if (get_dtype(s, map_val(s, v[6], i), "outputs",
			              &fam->problem->bufs[b].ref_dtype) < 0)
				return -1;
		}
	}
	if (v[7]) {
		if (get_list(s, v[7], "options") < 0)
			return -1;
		r->options = xcalloc(list_len(v[7]) + 1, sizeof(*r->options));
		for (i = 0; i < list_len(v[7]); i++) {
			yaml_node_t *it = seq_at(s, v[7], i);

			if (!is_scalar(it) || !*sval(it))
				return err_node(s, it,
				                "'options' entries must be compiler options");
			r->options[i] = xstrdup(sval(it));
			r->noptions = i + 1;
		}
	}
	return 0;
}

/*
 * Step one: the problem's text and its dims. n is the sidecar's 'problem'
 * value: a mapping, or the path of a YAML file holding one.
 */
static int problem_begin(struct ysrc *s, const yaml_node_t *n, struct family *fam,
                         struct problem_src *ps)
{
	struct problem *pb = xcalloc(1, sizeof(*pb));
	char *dir;
	size_t len;

	fam->problem = pb;
	memset(ps, 0, sizeof(*ps));
	ps->s = s;
	if (is_scalar(n) && !is_null(n)) {
		if (!strchr(sval(n), '.') && !strchr(sval(n), '/'))
			return err_node(
			    s, n,
			    "'problem' is a description now, not a name: a mapping, or the "
			    "path of a YAML file holding one (for '%.80s', see "
			    "kernels/problems/ and docs/FAMILIES.md)",
			    sval(n));
		char *joined;

		dir = path_dirname(s->path);
		joined = path_join(dir, sval(n));
		free(dir);
		pb->path = path_tidy(joined);
		free(joined);
		if (read_file_limited(pb->path, CONFIG_MAX_FILE_BYTES, &pb->text, &len) < 0)
			return err_node(s, n, "cannot read the problem '%.200s': %s", sval(n),
			                strerror(errno));
		ps->own.path = pb->path;
		ps->own.text = pb->text;
		ps->own.len = len;
		if (ysrc_load(&ps->own) < 0)
			return -1;
		ps->s = &ps->own;
		ps->root = yaml_document_get_root_node(&ps->own.doc);
		if (!ps->root)
			return err_pos(&ps->own, 1, 1,
			               "empty problem (expected 'dims', 'buffers', "
			               "'args' and 'reference')");
	} else if (n->type == YAML_MAPPING_NODE) {
		pb->path = xstrdup(s->path);
		pb->text = xstrndup(s->text, s->len);
		ps->root = (yaml_node_t *)n;
	} else {
		return err_node(s, n, "'problem' must be a mapping or a file's path, got a %s",
		                kind(n));
	}
	if (map_fields(ps->s, ps->root, "problem", problem_keys, PK_COUNT, ps->v, NULL) < 0 ||
	    need(ps->s, ps->root, "problem", "dims", ps->v[PK_DIMS]) < 0 ||
	    need(ps->s, ps->root, "problem", "buffers", ps->v[PK_BUFFERS]) < 0 ||
	    need(ps->s, ps->root, "problem", "args", ps->v[PK_ARGS]) < 0 ||
	    need(ps->s, ps->root, "problem", "reference", ps->v[PK_REFERENCE]) < 0)
		return -1;
	return load_dims(ps->s, ps->v[PK_DIMS], fam);
}

/* Step two, once the params are known: everything else. */
static int problem_finish(struct problem_src *ps, struct family *fam)
{
	struct problem *pb = fam->problem;
	struct ysrc *s = ps->s;
	struct problem_arg *args = NULL;
	size_t nargs = 0;
	int r;

	if ((ps->v[PK_VALID] && load_valid(s, ps->v[PK_VALID], fam) < 0) ||
	    (ps->v[PK_RAGGED] && load_ragged(s, ps->v[PK_RAGGED], fam) < 0) ||
	    load_buffers(s, ps->v[PK_BUFFERS], fam) < 0)
		return -1;
	r = load_args(s, ps->v[PK_ARGS], fam, NAMES_ALL, &args, &nargs);
	if (nargs) /* args is NULL where 'args' was refused before any was read */
		memcpy(pb->args, args, nargs * sizeof(*args));
	pb->nargs = nargs;
	free(args);
	if (r < 0 || load_reference(s, ps->v[PK_REFERENCE], fam) < 0)
		return -1;
	if (ps->v[PK_FLOPS] &&
	    get_expr_in(s, ps->v[PK_FLOPS], "flops", fam, NAMES_DIMS, &pb->flops) < 0)
		return -1;
	if (ps->v[PK_BYTES] &&
	    get_expr_in(s, ps->v[PK_BYTES], "bytes", fam, NAMES_DIMS, &pb->bytes) < 0)
		return -1;
	return 0;
}

static void problem_src_release(struct problem_src *ps)
{
	ysrc_release(&ps->own);
}

/* The sidecar in s, loaded into fam (zeroed by the caller). */
/*
 * ---- landscapes (issue 16): `landscape: true` declares a family that exists
 * only as recorded measurements (`tuner import` writes such sidecars): params,
 * constraints and a baseline, no source, kernel, launch or problem; it is
 * never compiled, only replayed. Its problem has no dims, and its template
 * hash is the hash of its name, which is what its recording is filed under.
 */

/* 1 when the sidecar says `landscape: true`, 0 when false or absent, -1 after an error. */
static int landscape_parse(struct ysrc *s, yaml_node_t **v)
{
	static const int forbidden[] = {FK_SOURCE, FK_KERNEL, FK_PROBLEM, FK_SPECIALIZE, FK_SMEM,
	                                FK_LAYOUT, FK_LAUNCH, FK_OPTIONS, FK_LAUNCHES};
	static const char *const bools[] = {"false", "true"};
	size_t i;
	int yes;

	if (!v[FK_LANDSCAPE])
		return 0;
	if (get_enum(s, v[FK_LANDSCAPE], "landscape", bools, 2, &yes) < 0)
		return -1;
	for (i = 0; yes && i < ARRAY_SIZE(forbidden); i++)
		if (v[forbidden[i]])
			return err_node(s, v[forbidden[i]],
			                "'%s' has no place in a landscape (recorded measurements "
			                "only: nothing is compiled or run)",
			                family_keys[forbidden[i]]);
	return yes;
}

static int landscape_load(struct ysrc *s, yaml_node_t **v, struct family *fam)
{
	struct expr_err ee;
	struct hasher *h;

	if (get_ident(s, v[FK_NAME], "name", &fam->name) < 0)
		return -1;
	fam->problem = xcalloc(1, sizeof(*fam->problem));
	fam->problem->path = xstrdup(s->path);
	h = hasher_new();
	hasher_adds(h, "tuner landscape 1");
	hasher_adds(h, fam->name);
	hasher_final_hex(h, fam->source_hash);
	memcpy(fam->deps_hash, fam->source_hash, sizeof(fam->deps_hash));
	if (load_params(s, v[FK_PARAMS], fam) < 0 || load_baseline(s, v[FK_BASELINE], fam) < 0)
		return -1;
	if (v[FK_CONSTRAINTS] && load_constraints(s, v[FK_CONSTRAINTS], fam) < 0)
		return -1;
	fam->smem_bytes = expr_parse("0", &ee);
	if (!fam->smem_bytes)
		BUG("cannot parse the constant '0': %s", ee.msg);
	return 0;
}
/* ---- end of landscapes */

static int family_parse(struct ysrc *s, struct family *fam)
{
	static const int required[] = {FK_NAME, FK_SOURCE, FK_PROBLEM, FK_PARAMS, FK_BASELINE};
	yaml_node_t *v[FK_COUNT], *root;
	struct problem_src ps;
	struct expr_err ee;
	size_t i;
	int ret = -1, landscape;

	memset(&ps, 0, sizeof(ps));
	if (ysrc_load(s) < 0)
		return -1;
	root = yaml_document_get_root_node(&s->doc);
	if (!root)
		return err_pos(s, 1, 1,
		               "empty sidecar (expected 'name', 'source', 'kernel', "
		               "'problem', 'params', 'launch' and 'baseline')");
	if (map_fields(s, root, "", family_keys, FK_COUNT, v, NULL) < 0)
		return -1;
	landscape = landscape_parse(s, v);
	if (landscape < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(required); i++)
		if ((!landscape || required[i] == FK_NAME || required[i] == FK_PARAMS ||
		     required[i] == FK_BASELINE) &&
		    need(s, root, "", family_keys[required[i]], v[required[i]]) < 0)
			return -1;
	if (landscape) {
		fam->path = xstrdup(s->path);
		fam->text = xstrndup(s->text, s->len);
		return landscape_load(s, v, fam);
	}
	if (v[FK_LAUNCHES] && (v[FK_KERNEL] || v[FK_LAUNCH]))
		return err_node(s, v[FK_KERNEL] ? v[FK_KERNEL] : v[FK_LAUNCH],
		                "'%s' and 'launches' exclude each other: one launch is 'kernel' "
		                "with 'launch', several are 'launches'",
		                v[FK_KERNEL] ? "kernel" : "launch");
	if (!v[FK_LAUNCHES] && (need(s, root, "", "kernel", v[FK_KERNEL]) < 0 ||
	                        need(s, root, "", "launch", v[FK_LAUNCH]) < 0))
		return -1;
	fam->path = xstrdup(s->path);
	fam->text = xstrndup(s->text, s->len);
	if (get_ident(s, v[FK_NAME], "name", &fam->name) < 0 ||
	    load_source(s, v[FK_SOURCE], fam) < 0 || problem_begin(s, v[FK_PROBLEM], fam, &ps) < 0)
		goto out;
	if (v[FK_SPECIALIZE] && load_specialize(s, v[FK_SPECIALIZE], fam) < 0)
		goto out;
	if (load_params(s, v[FK_PARAMS], fam) < 0 || load_baseline(s, v[FK_BASELINE], fam) < 0)
		goto out;
	if (problem_finish(&ps, fam) < 0)
		goto out;
	if (v[FK_CONSTRAINTS] && load_constraints(s, v[FK_CONSTRAINTS], fam) < 0)
		goto out;
	if (v[FK_SMEM]) {
		if (get_expr(s, v[FK_SMEM], "smem_bytes", fam, &fam->smem_bytes) < 0)
			goto out;
		fam->smem_bytes_line = (int)v[FK_SMEM]->start_mark.line + 1;
	} else {
		fam->smem_bytes = expr_parse("0", &ee);
		if (!fam->smem_bytes)
			BUG("cannot parse the constant '0': %s", ee.msg);
	}
	if (v[FK_LAYOUT] && load_layout(s, v[FK_LAYOUT], fam) < 0)
		goto out;
	if (v[FK_LAUNCHES]) {
		if (load_launch_list(s, v[FK_LAUNCHES], fam, NAMES_ALL, fam->launches,
		                     &fam->nlaunches) < 0)
			goto out;
	} else if (load_launch(s, v[FK_KERNEL], v[FK_LAUNCH], fam) < 0) {
		goto out;
	}
	if (v[FK_OPTIONS] && load_options(s, v[FK_OPTIONS], fam) < 0)
		goto out;
	template_deps_hash(fam, fam->deps_hash);
	ret = 0;
out:
	problem_src_release(&ps);
	return ret;
}

/* Parse text as the sidecar at path; fam is zeroed first and released on error. */
static int family_load_text(const char *path, const char *text, size_t len, struct family *fam)
{
	struct ysrc s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.path = path;
	s.text = text;
	s.len = len;
	memset(fam, 0, sizeof(*fam));
	ret = family_parse(&s, fam);
	ysrc_release(&s);
	if (ret < 0)
		family_release(fam);
	return ret;
}

int family_load(const char *path, struct family *fam)
{
	char *text;
	size_t len;
	int ret;

	memset(fam, 0, sizeof(*fam));
	if (read_file_limited(path, CONFIG_MAX_SIDECAR_BYTES, &text, &len) < 0) {
		if (errno == EFBIG)
			return error("cannot read sidecar '%s': larger than %u MiB", path,
			             CONFIG_MAX_SIDECAR_BYTES >> 20);
		return error("cannot read sidecar '%s': %s", path, strerror(errno));
	}
	ret = family_load_text(path, text, len, fam);
	free(text);
	return ret;
}

/* ---------------------------------------------------------- tuning jobs */

enum {
	CK_TEMPLATE,
	CK_ARCH,
	CK_LIMITS,
	CK_SHAPES,
	CK_CORRECTNESS,
	CK_BUDGET,
	CK_TIMING,
	CK_COMPILE,
	CK_SANITIZE,
	CK_STRATEGY,
	CK_SEED,
	CK_TOOLS,
	CK_COUNT
};

static const char *const config_keys[CK_COUNT] = {
    "template", "arch",    "limits",   "shapes",   "correctness", "budget",
    "timing",   "compile", "sanitize", "strategy", "seed",        "compute_sanitizer",
};

static const char *const limit_keys[] = {
    "smem_per_block",  "smem_per_block_optin",  "smem_per_sm", "regs_per_sm",
    "regs_per_thread", "max_threads_per_block", "sm_count"};

static int load_limits(struct ysrc *s, const yaml_node_t *n, struct arch_limits *a)
{
	yaml_node_t *v[ARRAY_SIZE(limit_keys)], *k[ARRAY_SIZE(limit_keys)];
	long long *ll[] = {&a->smem_per_block, &a->smem_per_block_optin, &a->smem_per_sm,
	                   &a->regs_per_sm};
	int *ii[] = {&a->regs_per_thread, &a->max_threads_per_block, &a->sm_count};
	size_t i;

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "limits", limit_keys, ARRAY_SIZE(limit_keys), v, k) < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(ll); i++)
		if (v[i] && get_ll(s, v[i], limit_keys[i], 1, LLONG_MAX, ll[i]) < 0)
			return -1;
	for (i = 0; i < ARRAY_SIZE(ii); i++) {
		size_t j = ARRAY_SIZE(ll) + i;

		/* sm_count 0 means unknown */
		if (v[j] && get_int(s, v[j], limit_keys[j], j == 6 ? 0 : 1, ii[i]) < 0)
			return -1;
	}
	if (a->smem_per_block_optin < a->smem_per_block)
		return err_node(s, v[1] ? v[1] : v[0],
		                "'smem_per_block_optin' (%lld) must not be below 'smem_per_block' "
		                "(%lld)",
		                a->smem_per_block_optin, a->smem_per_block);
	return 0;
}

static const char *const correctness_keys[] = {"rel_l2", "max_abs", "seeds", "ragged"};
static const char *const budget_keys[] = {"generations", "population", "elite", "margin"};
static const char *const timing_keys[] = {"warmup",  "repeats",     "launches", "l2",
                                          "timeout", "min_repeats", "rel_ci"};
static const char *const compile_keys[] = {"jobs", "max_spill_bytes", "timeout"};
static const char *const l2_names[] = {"cold", "hot"};
static const char *const sanitize_names[] = {"never", "elite", "every"};

static int load_correctness(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	static const char *const bools[] = {"false", "true"};
	yaml_node_t *v[4];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "correctness", correctness_keys, 4, v, NULL) < 0)
		return -1;
	if ((v[0] && get_double(s, v[0], "rel_l2", 0, &cfg->rel_l2) < 0) ||
	    (v[1] && get_double(s, v[1], "max_abs", 0, &cfg->max_abs) < 0) ||
	    (v[2] && get_int_max(s, v[2], "seeds", 1, 1000, &cfg->check_seeds) < 0) ||
	    (v[3] && get_enum(s, v[3], "ragged", bools, 2, &cfg->ragged) < 0))
		return -1;
	cfg->rel_l2_set = v[0] != NULL;
	cfg->max_abs_set = v[1] != NULL;
	return 0;
}

static int load_budget(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[4];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "budget", budget_keys, 4, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "generations", 1, 1000000, &cfg->generations) < 0) ||
	    (v[1] && get_int_max(s, v[1], "population", 1, 100000, &cfg->population) < 0) ||
	    (v[2] && get_int_max(s, v[2], "elite", 1, 1000, &cfg->elite) < 0) ||
	    (v[3] && get_double(s, v[3], "margin", 0, &cfg->margin) < 0))
		return -1;
	return 0;
}

static int load_timing(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[7];
	int l2;

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "timing", timing_keys, 7, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "warmup", 0, 100000, &cfg->warmup) < 0) ||
	    (v[1] && get_int_max(s, v[1], "repeats", 1, 100000, &cfg->repeats) < 0) ||
	    (v[2] && get_int_max(s, v[2], "launches", 1, 100000, &cfg->launches) < 0) ||
	    (v[4] && get_double(s, v[4], "timeout", 1, &cfg->timeout_s) < 0) ||
	    (v[5] && get_int_max(s, v[5], "min_repeats", 1, 100000, &cfg->min_repeats) < 0) ||
	    (v[6] && get_double(s, v[6], "rel_ci", 0, &cfg->rel_ci) < 0))
		return -1;
	if (v[4] && cfg->timeout_s > 86400)
		return err_node(s, v[4], "'timeout' must be at most 86400 seconds, got %g",
		                cfg->timeout_s);
	if (v[6] && cfg->rel_ci >= 1)
		return err_node(s, v[6], "'rel_ci' is a fraction of the median, below 1, got %g",
		                cfg->rel_ci);
	if (v[3]) {
		if (get_enum(s, v[3], "l2", l2_names, ARRAY_SIZE(l2_names), &l2) < 0)
			return -1;
		cfg->l2 = l2 ? L2_HOT : L2_COLD;
	}
	return 0;
}

static int load_compile(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[3];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "compile", compile_keys, 3, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "jobs", 0, 1024, &cfg->jobs) < 0) ||
	    (v[1] && get_ll(s, v[1], "max_spill_bytes", 0, LLONG_MAX, &cfg->max_spill_bytes) < 0) ||
	    (v[2] && get_double(s, v[2], "timeout", 1, &cfg->compile_timeout_s) < 0))
		return -1;
	if (v[2] && cfg->compile_timeout_s > 86400)
		return err_node(s, v[2], "'timeout' must be at most 86400 seconds, got %g",
		                cfg->compile_timeout_s);
	return 0;
}

static int load_seed(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'seed' must be an integer, got a %s", kind(n));
	v = sval(n);
	if (*v == '-' && v[1] >= '0' && v[1] <= '9')
		return err_node(s, n, "'seed' must not be negative, got %.80s", v);
	if (*v < '0' || *v > '9')
		return err_node(s, n, "'seed' must be an integer, got '%.80s'", v);
	errno = 0;
	cfg->seed = strtoull(v, &end, 10);
	if (*end)
		return err_node(s, n, "'seed' must be an integer, got '%.80s'", v);
	if (errno == ERANGE)
		return err_node(s, n, "'seed' is too large, got %.80s", v);
	return 0;
}

static int is_shape_name(const char *v)
{
	if (!*v || strlen(v) > 31)
		return 0;
	for (; *v; v++)
		if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= '0' && *v <= '9') || *v == '_' || *v == '-' || *v == '.'))
			return 0;
	return 1;
}

/* A launch's geometry on one shape against what the hardware takes. */
static int check_launch_limits(struct ysrc *s, const yaml_node_t *n, const struct config *cfg,
                               const struct shape *sh, const struct expr_scope *sc,
                               const struct launch_spec *l, const char *whose)
{
	static const long long grid_max[3] = {2147483647LL, 65535, 65535};
	long long v, threads = 1;
	struct expr_err err;
	size_t d;

	for (d = 0; d < 6; d++) {
		const struct expr *e = d < 3 ? l->grid[d] : l->block[d - 3];
		const char *what = d < 3 ? "grid" : "block";

		if (expr_eval(e, sc, &v, &err) < 0)
			return err_node(s, n, "shape '%s': %s launch '%s' %s[%zu] '%s': %s",
			                sh->name, whose, l->kernel, what, d % 3, expr_text(e),
			                err.msg);
		if (v < 1 || (d < 3 && v > grid_max[d]))
			return err_node(
			    s, n,
			    "shape '%s': %s launch '%s' has %s[%zu] = %lld (%s must be 1 "
			    "to %lld)",
			    sh->name, whose, l->kernel, what, d % 3, v, what,
			    d < 3 ? grid_max[d] : (long long)cfg->arch.max_threads_per_block);
		if (d >= 3)
			threads = threads * (v > 1024 ? 1025 : v);
	}
	if (threads > cfg->arch.max_threads_per_block)
		return err_node(s, n,
		                "shape '%s': %s launch '%s' has %lld threads per block, more "
		                "than %s's %d",
		                sh->name, whose, l->kernel, threads, cfg->arch.name,
		                cfg->arch.max_threads_per_block);
	return 0;
}

/*
 * A shape must satisfy the problem's validity rules, its buffers must have a
 * size a GPU can hold, and the reference and the baseline must be launchable
 * on it: a job that cannot run is refused before anything is written.
 */
static int check_shape(struct ysrc *s, const yaml_node_t *n, const struct config *cfg,
                       const struct shape *sh)
{
	const struct family *fam = &cfg->fam;
	const struct problem *pb = fam->problem;
	struct space_scope base;
	struct variant va;
	struct expr_var vars[PROBLEM_MAX_DIMS];
	struct expr_scope sc = {vars, pb->ndims, NULL};
	struct expr_err err;
	long long v;
	double f;
	size_t i;

	for (i = 0; i < pb->ndims; i++) {
		vars[i].name = pb->dims[i];
		vars[i].value = sh->dims[i];
	}
	for (i = 0; i < pb->nvalid; i++) {
		if (expr_eval(pb->valid[i], &sc, &v, &err) < 0)
			return err_node(
			    s, n, "shape '%s': cannot evaluate the problem's rule '%s' (%s:%d): %s",
			    sh->name, expr_text(pb->valid[i]), pb->path, pb->valid_line[i],
			    err.msg);
		if (!v)
			return err_node(s, n, "shape '%s' breaks the problem's rule '%s' (%s:%d)",
			                sh->name, expr_text(pb->valid[i]), pb->path,
			                pb->valid_line[i]);
	}
	for (i = 0; i < pb->nbufs; i++) {
		const struct problem_buffer *b = &pb->bufs[i];

		if (b->role == ROLE_SCRATCH)
			continue;
		if (expr_eval(b->count, &sc, &v, &err) < 0)
			return err_node(s, n, "shape '%s': buffer '%s' count '%s': %s", sh->name,
			                b->name, expr_text(b->count), err.msg);
		if (v < 1 || (unsigned long long)v > CONFIG_MAX_BUFFER_BYTES / dtype_size(b->dtype))
			return err_node(
			    s, n,
			    "shape '%s': buffer '%s' would hold %lld elements (1 to %llu "
			    "bytes' worth allowed)",
			    sh->name, b->name, v, CONFIG_MAX_BUFFER_BYTES);
	}
	for (i = 0; i < pb->ref.nlaunches; i++)
		if (check_launch_limits(s, n, cfg, sh, &sc, &pb->ref.launches[i],
		                        "the reference's") < 0)
			return -1;
	if (pb->flops && expr_eval_number(pb->flops, &sc, &f, NULL, NULL, &err) < 0)
		return err_node(s, n, "shape '%s': flops '%s': %s", sh->name, expr_text(pb->flops),
		                err.msg);
	if (pb->bytes && expr_eval_number(pb->bytes, &sc, &f, NULL, NULL, &err) < 0)
		return err_node(s, n, "shape '%s': bytes '%s': %s", sh->name, expr_text(pb->bytes),
		                err.msg);
	space_baseline(fam, &va);
	space_scope_init(&base, cfg, &va, sh);
	for (i = 0; i < fam->nlaunches; i++)
		if (check_launch_limits(s, n, cfg, sh, &base.scope, &fam->launches[i],
		                        "the baseline's") < 0)
			return -1;
	return 0;
}

static int load_shape(struct ysrc *s, const yaml_node_t *n, struct config *cfg, struct shape *sh)
{
	const struct problem *pb = cfg->fam.problem;
	const char *names[1 + TUNER_MAX_DIMS];
	yaml_node_t *v[1 + TUNER_MAX_DIMS], *k[1 + TUNER_MAX_DIMS];
	size_t i;

	names[0] = "name";
	for (i = 0; i < pb->ndims; i++)
		names[1 + i] = pb->dims[i];
	sh->line = (int)n->start_mark.line + 1;
	if (n->type != YAML_MAPPING_NODE) {
		char like[64] = "{name: N}"; /* a landscape's problem has no dims */

		if (pb->ndims)
			snprintf(like, sizeof(like), "{name: N, %.32s: ...}", pb->dims[0]);
		return err_node(s, n, "each of 'shapes' must be a mapping like %s, got a %s", like,
		                kind(n));
	}
	if (map_fields_noun(s, n, "shapes", "dim", names, 1 + pb->ndims, v, k) < 0)
		return -1;
	if (need(s, n, "shapes", "name", v[0]) < 0)
		return -1;
	if (!is_scalar(v[0]) || is_null(v[0]) || !is_shape_name(sval(v[0])))
		return err_node(
		    s, v[0],
		    "shape 'name' must be 1 to 31 letters, digits, '_', '-' or '.', got "
		    "'%.80s'",
		    is_scalar(v[0]) ? sval(v[0]) : kind(v[0]));
	sh->name = xstrdup(sval(v[0]));
	for (i = 0; i < (size_t)(sh - cfg->shapes); i++)
		if (!strcmp(cfg->shapes[i].name, sh->name))
			return err_node(s, v[0], "duplicate shape '%s' (first at line %d)",
			                sh->name, cfg->shapes[i].line);
	for (i = 0; i < pb->ndims; i++) {
		if (!v[1 + i])
			return err_node(s, n, "shape '%s' is missing dim '%s'", sh->name,
			                pb->dims[i]);
		if (get_ll(s, v[1 + i], pb->dims[i], 0, LLONG_MAX, &sh->dims[i]) < 0)
			return -1;
	}
	return check_shape(s, n, cfg, sh);
}

static int load_shapes(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	size_t i, cnt;

	if (n->type != YAML_SEQUENCE_NODE)
		return err_node(s, n, "'shapes' must be a list of shapes, got a %s", kind(n));
	cnt = seq_len(n);
	if (!cnt)
		return err_node(s, n, "'shapes' must name at least one shape");
	for (i = 0; i < cnt; i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (i == TUNER_MAX_SHAPES)
			return err_node(s, it, "more than %d shapes", TUNER_MAX_SHAPES);
		cfg->nshapes = i + 1;
		if (load_shape(s, it, cfg, &cfg->shapes[i]) < 0)
			return -1;
	}
	return 0;
}

static int load_template(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	char *rel, *dir, *text;
	size_t len;
	int ret;

	if (get_string(s, n, "template", &rel) < 0)
		return -1;
	dir = path_dirname(s->path);
	cfg->template_path = path_join(dir, rel);
	free(dir);
	if (read_file_limited(cfg->template_path, CONFIG_MAX_SIDECAR_BYTES, &text, &len) < 0) {
		if (errno == EFBIG)
			err_node(s, n, "cannot read template '%s': larger than %u MiB", rel,
			         CONFIG_MAX_SIDECAR_BYTES >> 20);
		else
			err_node(s, n, "cannot read template '%s': %s", rel, strerror(errno));
		free(rel);
		return -1;
	}
	free(rel);
	ret = family_load_text(cfg->template_path, text, len, &cfg->fam);
	free(text);
	return ret;
}

static void config_defaults(struct config *cfg)
{
	cfg->rel_l2 = 1e-2;
	cfg->max_abs = 2e-2;
	cfg->check_seeds = 2;
	cfg->ragged = 1;
	cfg->generations = 10;
	cfg->population = 16;
	cfg->elite = 3;
	cfg->margin = 0.03;
	cfg->warmup = 10;
	cfg->repeats = 30;
	cfg->launches = 20;
	cfg->l2 = L2_COLD;
	cfg->timeout_s = 20;
	cfg->jobs = 0;
	cfg->max_spill_bytes = 0;
	cfg->sanitize = SANITIZE_ELITE;
	cfg->tools = TOOLS_FINAL;
	cfg->seed = 1;
}

/*
 * The settings come first, then the sidecar, then the shapes (whose dims the
 * sidecar's problem names), so a typo in the job is reported before anything
 * is read from the template.
 */
static int config_parse(struct ysrc *s, struct config *cfg)
{
	yaml_node_t *v[CK_COUNT], *root;
	const char *const *strategies;
	size_t nstrategies;
	int e;

	if (ysrc_load(s) < 0)
		return -1;
	root = yaml_document_get_root_node(&s->doc);
	if (!root)
		return err_pos(s, 1, 1, "empty config (expected 'template', 'arch' and 'shapes')");
	if (map_fields(s, root, "", config_keys, CK_COUNT, v, NULL) < 0 ||
	    need(s, root, "", "template", v[CK_TEMPLATE]) < 0 ||
	    need(s, root, "", "arch", v[CK_ARCH]) < 0 ||
	    need(s, root, "", "shapes", v[CK_SHAPES]) < 0)
		return -1;
	if (!is_scalar(v[CK_ARCH]) || is_null(v[CK_ARCH]))
		return err_node(s, v[CK_ARCH], "'arch' must be a name, got a %s", kind(v[CK_ARCH]));
	if (arch_lookup(sval(v[CK_ARCH]), &cfg->arch) < 0)
		return err_node(s, v[CK_ARCH], "unknown arch '%.80s' (known: %s)", sval(v[CK_ARCH]),
		                arch_known_names());
	if (v[CK_LIMITS] && load_limits(s, v[CK_LIMITS], &cfg->arch) < 0)
		return -1;
	if ((v[CK_CORRECTNESS] && load_correctness(s, v[CK_CORRECTNESS], cfg) < 0) ||
	    (v[CK_BUDGET] && load_budget(s, v[CK_BUDGET], cfg) < 0) ||
	    (v[CK_TIMING] && load_timing(s, v[CK_TIMING], cfg) < 0) ||
	    (v[CK_COMPILE] && load_compile(s, v[CK_COMPILE], cfg) < 0))
		return -1;
	if (v[CK_SANITIZE]) {
		if (get_enum(s, v[CK_SANITIZE], "sanitize", sanitize_names,
		             ARRAY_SIZE(sanitize_names), &e) < 0)
			return -1;
		cfg->sanitize = e == 0 ? SANITIZE_NEVER : e == 1 ? SANITIZE_ELITE : SANITIZE_EVERY;
	}
	e = 0;
	strategies = search_strategy_names(&nstrategies);
	if (v[CK_STRATEGY] &&
	    get_enum(s, v[CK_STRATEGY], "strategy", strategies, nstrategies, &e) < 0)
		return -1;
	cfg->strategy = xstrdup(strategies[e]);
	if (v[CK_SEED] && load_seed(s, v[CK_SEED], cfg) < 0)
		return -1;
	if (v[CK_TOOLS]) {
		static const char *const tools_names[] = {"never", "elite", "final", "every"};

		if (get_enum(s, v[CK_TOOLS], "compute_sanitizer", tools_names,
		             ARRAY_SIZE(tools_names), &e) < 0)
			return -1;
		cfg->tools = (enum tools_when)e;
	}
	if (load_template(s, v[CK_TEMPLATE], cfg) < 0)
		return -1;
	return load_shapes(s, v[CK_SHAPES], cfg);
}

int config_load(const char *path, struct config *cfg)
{
	struct ysrc s;
	size_t len;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	config_defaults(cfg);
	if (read_file_limited(path, CONFIG_MAX_FILE_BYTES, &cfg->text, &len) < 0) {
		if (errno == EFBIG)
			error("cannot read config '%s': larger than %u MiB", path,
			      CONFIG_MAX_FILE_BYTES >> 20);
		else
			error("cannot read config '%s': %s", path, strerror(errno));
		config_release(cfg);
		return -1;
	}
	cfg->path = xstrdup(path);
	memset(&s, 0, sizeof(s));
	s.path = cfg->path;
	s.text = cfg->text;
	s.len = len;
	ret = config_parse(&s, cfg);
	ysrc_release(&s);
	if (ret < 0)
		config_release(cfg);
	return ret;
}

void config_release(struct config *cfg)
{
	size_t i;

	free(cfg->path);
	free(cfg->text);
	free(cfg->template_path);
	family_release(&cfg->fam);
	for (i = 0; i < cfg->nshapes; i++)
		free(cfg->shapes[i].name);
	free(cfg->strategy);
	memset(cfg, 0, sizeof(*cfg));
}
