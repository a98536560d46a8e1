/* The loaders' YAML layer: a file's document, messages at FILE:LINE:COL, node access, getters. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/yaml-src.h"

/* ---------------------------------------------------------- YAML sources */

/* Characters between two byte offsets kept for a text that is not all ASCII. */
#define MARK_STEP 64

void ysrc_release(struct ysrc *s)
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

int err_pos(const struct ysrc *s, int line, int col, const char *fmt, ...)
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
int err_node(const struct ysrc *s, const yaml_node_t *n, const char *fmt, ...)
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
void value_pos(const struct ysrc *s, const yaml_node_t *n, int ecol, int *line, int *col)
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
int ysrc_load(struct ysrc *s)
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

const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

int is_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE;
}

/* An empty value, `~` or `null`, written plain. */
int is_null(const yaml_node_t *n)
{
	const char *v;

	if (!is_scalar(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = sval(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

const char *ykind(const yaml_node_t *n)
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

size_t seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *seq_at(struct ysrc *s, const yaml_node_t *n, size_t i)
{
	return ynode(s, n->data.sequence.items.start[i]);
}

size_t map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

yaml_node_t *map_key(struct ysrc *s, const yaml_node_t *n, size_t i)
{
	return ynode(s, n->data.mapping.pairs.start[i].key);
}

yaml_node_t *map_val(struct ysrc *s, const yaml_node_t *n, size_t i)
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
const char *yclosest(const char *word, const char *const *names, size_t n)
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
void yhint(char *out, size_t len, const char *word, const char *const *names, size_t n,
           const char *known_label)
{
	const char *c = yclosest(word, names, n);
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
int map_fields_noun(struct ysrc *s, const yaml_node_t *n, const char *where, const char *noun,
                    const char *const *names, size_t nnames, yaml_node_t **vals, yaml_node_t **keys)
{
	char in[96], h[512];
	size_t i, j, dup, first = 0;

	where_label(in, sizeof(in), where);
	if (n->type != YAML_MAPPING_NODE && (!where || !*where))
		return err_node(s, n, "expected a mapping of keys, got a %s", ykind(n));
	if (n->type != YAML_MAPPING_NODE)
		return err_node(s, n, "'%s' must be a mapping, got a %s", where, ykind(n));
	for (j = 0; j < nnames; j++) {
		vals[j] = NULL;
		if (keys)
			keys[j] = NULL;
	}
	dup = repeated_key(s, n, &first);
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i);

		if (!is_scalar(k))
			return err_node(s, k, "keys must be plain names, got a %s%s", ykind(k), in);
		if (i == dup)
			return err_node(s, k, "duplicate key '%.80s'%s (first at line %d)", sval(k),
			                in, (int)map_key(s, n, first)->start_mark.line + 1);
		if (!names)
			continue;
		for (j = 0; j < nnames; j++)
			if (!strcmp(names[j], sval(k)))
				break;
		if (j == nnames) {
			yhint(h, sizeof(h), sval(k), names, nnames, "known");
			return err_node(s, k, "unknown %s '%.80s'%s%s", noun, sval(k), in, h);
		}
		vals[j] = map_val(s, n, i);
		if (keys)
			keys[j] = k;
	}
	return 0;
}

int map_fields(struct ysrc *s, const yaml_node_t *n, const char *where, const char *const *names,
               size_t nnames, yaml_node_t **vals, yaml_node_t **keys)
{
	return map_fields_noun(s, n, where, "key", names, nnames, vals, keys);
}

int yneed(struct ysrc *s, const yaml_node_t *parent, const char *where, const char *key,
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

int get_string(struct ysrc *s, const yaml_node_t *n, const char *key, char **out)
{
	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a string, got a %s", key, ykind(n));
	if (!*sval(n))
		return err_node(s, n, "'%s' must not be empty", key);
	*out = xstrdup(sval(n));
	return 0;
}

int yis_ident(const char *v)
{
	if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') || *v == '_'))
		return 0;
	for (v++; *v; v++)
		if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= '0' && *v <= '9') || *v == '_'))
			return 0;
	return 1;
}

int get_ident(struct ysrc *s, const yaml_node_t *n, const char *key, char **out)
{
	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a name, got a %s", key, ykind(n));
	if (!yis_ident(sval(n)))
		return err_node(s, n, "'%s' must be a C identifier, got '%.80s'", key, sval(n));
	*out = xstrdup(sval(n));
	return 0;
}

int get_ll(struct ysrc *s, const yaml_node_t *n, const char *key, long long min, long long max,
           long long *out)
{
	int r;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be an integer, got a %s", key, ykind(n));
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

int get_int(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int *out)
{
	long long v = 0; /* get_ll sets it, or fails with err_node's -1 */

	if (get_ll(s, n, key, min, INT_MAX, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

int get_int_max(struct ysrc *s, const yaml_node_t *n, const char *key, int min, int max, int *out)
{
	long long v = 0; /* get_ll sets it, or fails with err_node's -1 */

	if (get_ll(s, n, key, min, max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

/* A finite number; above zero when positive, else at least zero. */
int get_double(struct ysrc *s, const yaml_node_t *n, const char *key, int positive, double *out)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a number, got a %s", key, ykind(n));
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
int get_double_signed(struct ysrc *s, const yaml_node_t *n, const char *key, double *out)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'%s' must be a number, got a %s", key, ykind(n));
	v = sval(n);
	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || !isfinite(*out) || errno == ERANGE ||
	    (*v != '-' && *v != '+' && *v != '.' && (*v < '0' || *v > '9')))
		return err_node(s, n, "'%s' must be a number, got '%.80s'", key, v);
	return 0;
}

int get_enum(struct ysrc *s, const yaml_node_t *n, const char *key, const char *const *names,
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
		return err_node(s, n, "'%s' must be one of %s, got a %s", key, list, ykind(n));
	c = yclosest(sval(n), names, nnames);
	if (c)
		snprintf(h, sizeof(h), " (did you mean '%s'?)", c);
	return err_node(s, n, "'%s' must be one of %s, got '%.80s'%s", key, list, sval(n), h);
}

/* A list, or nothing when the value is null. */
int get_list(struct ysrc *s, const yaml_node_t *n, const char *key)
{
	if (n->type == YAML_SEQUENCE_NODE || is_null(n))
		return 0;
	return err_node(s, n, "'%s' must be a list, got a %s", key, ykind(n));
}

size_t list_len(const yaml_node_t *n)
{
	return n->type == YAML_SEQUENCE_NODE ? seq_len(n) : 0;
}
