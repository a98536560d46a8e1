/* The search space: parameter vectors, domains, expression scopes and specialisations. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/space.h"

/* ----------------------------------------------------------------- scopes */

void space_scope_init(struct space_scope *s, const struct config *cfg, const struct variant *va,
                      const struct shape *shape)
{
	const struct family *fam = &cfg->fam;
	size_t i, n = 0;

	for (i = 0; i < fam->nparams; i++) {
		s->vars[n].name = fam->params[i].name;
		s->vars[n].value = va->v[i];
		n++;
	}
	if (shape && fam->problem) {
		for (i = 0; i < fam->problem->ndims && i < TUNER_MAX_DIMS; i++) {
			s->vars[n].name = fam->problem->dims[i];
			s->vars[n].value = shape->dims[i];
			n++;
		}
	}
	s->scope.vars = s->vars;
	s->scope.n = n;
	s->scope.next = NULL;
}

/* ----------------------------------------------------------------- points */

unsigned long long space_size(const struct family *fam)
{
	unsigned long long size = 1;
	size_t i;

	for (i = 0; i < fam->nparams; i++) {
		unsigned long long n = fam->params[i].nvalues;

		if (n == 0)
			return 0;
		if (size > ULLONG_MAX / n)
			return ULLONG_MAX; /* saturate: no search enumerates that far */
		size *= n;
	}
	return size;
}

void space_point(const struct family *fam, unsigned long long idx, struct variant *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = fam->nparams; i-- > 0;) {
		const struct param *p = &fam->params[i];

		if (p->nvalues == 0)
			continue;
		out->v[i] = p->values[idx % p->nvalues];
		idx /= p->nvalues;
	}
}

/* A value and its position, sorted by value, then position: no context for qsort() to need. */
struct placed {
	long long v;
	size_t i;
};

static int placed_cmp(const void *a, const void *b)
{
	const struct placed *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Sort pa's positions by value into pa->order; the first position (in the
 * sidecar's order) whose value repeats one before it, or nvalues. Threads load
 * families at once (tuner serve's lanes), so nothing here is static.
 */
size_t space_param_order(struct param *pa)
{
	struct placed *r = xcalloc(pa->nvalues + 1, sizeof(*r));
	size_t i, first = pa->nvalues;

	for (i = 0; i < pa->nvalues; i++) {
		r[i].v = pa->values[i];
		r[i].i = i;
	}
	qsort(r, pa->nvalues, sizeof(*r), placed_cmp);
	free(pa->order);
	pa->order = xcalloc(pa->nvalues + 1, sizeof(*pa->order));
	for (i = 0; i < pa->nvalues; i++) {
		pa->order[i] = r[i].i;
		if (i && r[i].v == r[i - 1].v && r[i].i < first)
			first = r[i].i;
	}
	free(r);
	return first;
}

long long space_value_index(const struct param *pa, long long value)
{
	size_t i, lo = 0, hi = pa->nvalues;

	if (!pa->order) {
		/* a domain made by hand: looked through */
		for (i = 0; i < pa->nvalues; i++)
			if (pa->values[i] == value)
				return (long long)i;
		return -1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pa->values[pa->order[mid]] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pa->nvalues && pa->values[pa->order[lo]] == value ? (long long)pa->order[lo]
	                                                              : -1;
}

int space_label_valid(const char *l)
{
	size_t n = strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-");

	return n && !l[n];
}

const char *space_label(const struct param *pa, long long v)
{
	long long i;

	if (!pa->labels)
		return NULL;
	i = space_value_index(pa, v);
	return i < 0 ? NULL : pa->labels[i];
}

int space_value_of(const struct param *pa, const char *text, long long *out)
{
	char *end;
	size_t i;

	if (pa->labels) {
		for (i = 0; i < pa->nvalues; i++)
			if (!strcmp(pa->labels[i], text)) {
				*out = pa->values[i];
				return 0;
			}
		return -1;
	}
	errno = 0;
	*out = strtoll(text, &end, 10);
	return *text && !*end && errno != ERANGE ? 0 : -1;
}

int space_in_domain(const struct family *fam, const struct variant *va, int *bad)
{
	size_t i;

	for (i = 0; i < fam->nparams; i++)
		if (space_value_index(&fam->params[i], va->v[i]) < 0) {
			if (bad)
				*bad = (int)i;
			return 0;
		}
	if (bad)
		*bad = -1;
	return 1;
}

void space_baseline(const struct family *fam, struct variant *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < fam->nparams; i++)
		out->v[i] = fam->baseline[i];
}

int space_equal(const struct family *fam, const struct variant *a, const struct variant *b)
{
	size_t i;

	for (i = 0; i < fam->nparams; i++)
		if (a->v[i] != b->v[i])
			return 0;
	return 1;
}

char *space_format(const struct family *fam, const struct variant *va)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_grow(&sb, 0);
	for (i = 0; i < fam->nparams; i++) {
		const char *l = space_label(&fam->params[i], va->v[i]);

		if (l)
			sb_addf(&sb, "%s%s=%s", i ? "," : "", fam->params[i].name, l);
		else
			sb_addf(&sb, "%s%s=%lld", i ? "," : "", fam->params[i].name, va->v[i]);
	}
	return sb_detach(&sb);
}

/* ------------------------------------------------------------ --set text */

/* "unknown param 'X'" with the closest name as a suggestion, or the list of params. */
static int unknown_param(const struct family *fam, const char *name)
{
	struct strbuf names = STRBUF_INIT;
	const char *best = NULL;
	int best_d = INT_MAX;
	size_t i;

	for (i = 0; i < fam->nparams; i++) {
		const char *p = fam->params[i].name;
		int d = strcasecmp(p, name) ? edit_distance(p, name) : 0;

		if (d < best_d) {
			best_d = d;
			best = p;
		}
		sb_addf(&names, "%s%s", i ? ", " : "", p);
	}
	if (best && (best_d <= 2 || (size_t)best_d * 3 <= strlen(name)))
		error("unknown param '%s' (did you mean '%s'?)", name, best);
	else
		error("unknown param '%s' (params: %s)", name, names.buf ? names.buf : "none");
	sb_release(&names);
	return -1;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int parse_assignment(const struct family *fam, char *item, struct variant *va,
                            unsigned char *seen)
{
	char *eq = strchr(item, '='), *name, *val, *end;
	long long v;
	int idx;

	if (!eq)
		return error("expected NAME=VALUE, got '%s'", trim(item));
	*eq = '\0';
	name = trim(item);
	val = trim(eq + 1);
	if (!*name)
		return error("missing param name before '=%s'", val);
	idx = family_param_index(fam, name);
	if (idx < 0)
		return unknown_param(fam, name);
	if (seen[idx])
		return error("param '%s' is set twice", name);
	seen[idx] = 1;
	if (fam->params[idx].labels) {
		const struct param *pa = &fam->params[idx];
		struct strbuf all = STRBUF_INIT;
		size_t i;

		if (space_value_of(pa, val, &va->v[idx]) == 0)
			return 0;
		for (i = 0; i < pa->nvalues && i < 8; i++)
			sb_addf(&all, "%s%s", i ? ", " : "", pa->labels[i]);
		error("value '%s' of '%s' is not one of its labels (%s%s)", val, name, all.buf,
		      pa->nvalues > 8 ? ", ..." : "");
		sb_release(&all);
		return -1;
	}
	errno = 0;
	v = strtoll(val, &end, 10);
	if (!*val || *end)
		return error("value '%s' of '%s' is not an integer", val, name);
	if (errno == ERANGE)
		return error("value '%s' of '%s' is out of range", val, name);
	va->v[idx] = v;
	return 0;
}

int space_parse_set(const struct family *fam, const char *spec, struct variant *va)
{
	unsigned char seen[TUNER_MAX_PARAMS] = {0};
	struct variant tmp = *va;
	char *copy = xstrdup(spec), *item = copy, *comma;
	int ret = 0;

	for (;;) {
		comma = strchr(item, ',');
		if (comma)
			*comma = '\0';
		if (parse_assignment(fam, item, &tmp, seen) < 0) {
			ret = -1;
			break;
		}
		if (!comma)
			break;
		item = comma + 1;
	}
	free(copy);
	if (!ret)
		*va = tmp;
	return ret;
}

/* ------------------------------------------------------- specialisations */

static size_t dim_index(const struct problem *pb, const char *name)
{
	size_t i;

	for (i = 0; i < pb->ndims; i++)
		if (!strcmp(pb->dims[i], name))
			return i;
	BUG("'%s' is not a dim of the problem (%s)", name, pb->path);
}

/* The values of the specialised dims of one shape, unused slots zero. */
static void shape_spec_vals(const struct family *fam, const struct shape *sh,
                            long long vals[TUNER_MAX_DIMS])
{
	size_t j;

	memset(vals, 0, TUNER_MAX_DIMS * sizeof(*vals));
	for (j = 0; j < fam->nspecialize; j++)
		vals[j] = sh->dims[dim_index(fam->problem, fam->specialize[j])];
}

size_t space_specs(const struct config *cfg, struct spec *specs, size_t *shape_spec)
{
	const struct family *fam = &cfg->fam;
	size_t nspecs = 0, i, j;

	for (i = 0; i < cfg->nshapes && i < TUNER_MAX_SHAPES; i++) {
		long long vals[TUNER_MAX_DIMS];

		shape_spec_vals(fam, &cfg->shapes[i], vals);
		for (j = 0; j < nspecs; j++)
			if (!memcmp(specs[j].vals, vals, sizeof(vals)))
				break;
		if (j == nspecs) {
			struct strbuf key = STRBUF_INIT;
			size_t k;

			memcpy(specs[j].vals, vals, sizeof(vals));
			sb_grow(&key, 0);
			for (k = 0; k < fam->nspecialize; k++)
				sb_addf(&key, "%s%s=%lld", k ? "," : "", fam->specialize[k],
				        vals[k]);
			snprintf(specs[j].key, sizeof(specs[j].key), "%s", key.buf);
			sb_release(&key);
			nspecs++;
		}
		if (shape_spec)
			shape_spec[i] = j;
	}
	return nspecs;
}

const struct shape *space_spec_shape(const struct config *cfg, const struct spec *sp)
{
	size_t i;

	for (i = 0; i < cfg->nshapes && i < TUNER_MAX_SHAPES; i++) {
		long long vals[TUNER_MAX_DIMS];

		shape_spec_vals(&cfg->fam, &cfg->shapes[i], vals);
		if (!memcmp(sp->vals, vals, sizeof(vals)))
			return &cfg->shapes[i];
	}
	return NULL;
}
