/* Load and validate kernel-family sidecars and the problems they name, through the YAML layer. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/config.h"
#include "tuner/space.h"
#include "tuner/template.h"
#include "tuner/yaml-src.h"

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
	c = yclosest(name, names, n);
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
		return err_node(s, n, "'%s' must be an expression, got a %s", key, ykind(n));
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
	size_t i, j;

	free(fam->path);
	free(fam->name);
	free(fam->source_path);
	free(fam->source);
	free(fam->text);
	for (i = 0; i < fam->nparams; i++) {
		free(fam->params[i].name);
		free(fam->params[i].values);
		free(fam->params[i].order);
		for (j = 0; fam->params[i].labels && j < fam->params[i].nvalues; j++)
			free(fam->params[i].labels[j]);
		free(fam->params[i].labels);
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
	FK_LABELS,
	FK_COUNT
};

static const char *const family_keys[FK_COUNT] = {
    "name",     "source",      "kernel",     "problem",   "specialize",
    "params",   "constraints", "smem_bytes", "layout",    "launch",
    "baseline", "options",     "launches",   "landscape", "labels",
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
			                ykind(it));
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

	if (!yis_ident(name))
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
		                ykind(v));
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

struct placed_label {
	const char *l;
	size_t i;
};

static int placed_label_cmp(const void *a, const void *b)
{
	const struct placed_label *x = a, *y = b;
	int c = strcmp(x->l, y->l);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The first position whose label came earlier in p's list, or nvalues; sorted, for 10**6 labels. */
static size_t first_label_repeat(const struct param *p)
{
	struct placed_label *r = xcalloc(p->nvalues + 1, sizeof(*r));
	size_t i, first = p->nvalues;

	for (i = 0; i < p->nvalues; i++) {
		r[i].l = p->labels[i];
		r[i].i = i;
	}
	qsort(r, p->nvalues, sizeof(*r), placed_label_cmp);
	for (i = 1; i < p->nvalues; i++)
		if (!strcmp(r[i].l, r[i - 1].l) && r[i].i < first)
			first = r[i].i;
	free(r);
	return first;
}

/*
 * labels: what each value of a param stands for, in its domain's order (an
 * imported landscape's codes of floats and strings). What "NAME=V,..." can hold:
 * letters, digits and _ . + -, none twice in a param.
 */
static int load_labels(struct ysrc *s, const yaml_node_t *n, struct family *fam)
{
	const char *names[TUNER_MAX_PARAMS];
	char h[512];
	size_t i, j;

	if (map_fields(s, n, "labels", NULL, 0, NULL, NULL) < 0)
		return -1;
	for (i = 0; i < fam->nparams; i++)
		names[i] = fam->params[i].name;
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i), *v = map_val(s, n, i);
		int idx = family_param_index(fam, sval(k));
		struct param *p;

		if (idx < 0) {
			yhint(h, sizeof(h), sval(k), names, fam->nparams, "params");
			return err_node(s, k, "unknown param '%.80s' in 'labels'%s", sval(k), h);
		}
		p = &fam->params[idx];
		if (v->type != YAML_SEQUENCE_NODE)
			return err_node(s, v, "the labels of '%s' must be a list, got a %s",
			                p->name, ykind(v));
		if (seq_len(v) != p->nvalues)
			return err_node(s, v, "'%s' has %zu values and %zu labels", p->name,
			                p->nvalues, seq_len(v));
		p->labels = xcalloc(p->nvalues, sizeof(*p->labels));
		for (j = 0; j < p->nvalues; j++) {
			yaml_node_t *l = seq_at(s, v, j);
			const char *t = is_scalar(l) ? sval(l) : NULL;

			if (!t || !*t)
				return err_node(s, l, "label %zu of '%s' is not a name or a number",
				                j + 1, p->name);
			if (!space_label_valid(t))
				return err_node(s, l,
				                "label '%.80s' of '%s' has a character other than "
				                "letters, digits and _ . + -",
				                t, p->name);
			p->labels[j] = xstrdup(t);
		}
		if ((j = first_label_repeat(p)) < p->nvalues)
			return err_node(s, seq_at(s, v, j), "label '%.80s' of '%s' is there twice",
			                p->labels[j], p->name);
	}
	return 0;
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
			yhint(h, sizeof(h), sval(k), names, fam->nparams, "params");
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
		if (yneed(s, n, "layout", layout_keys[i], v[i]) < 0)
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
		                ykind(n));
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
	    yneed(s, n, "launch", "grid", v[0]) < 0 || yneed(s, n, "launch", "block", v[1]) < 0)
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
			                ykind(it));
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
		                n->type == YAML_SEQUENCE_NODE ? "empty list" : ykind(n));
	if (seq_len(n) > PROBLEM_MAX_DIMS)
		return err_node(s, n, "more than %d dims", PROBLEM_MAX_DIMS);
	for (i = 0; i < seq_len(n); i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (!is_scalar(it) || is_null(it) || !yis_ident(sval(it)))
			return err_node(s, it, "'dims' entries must be C identifiers, got '%.80s'",
			                is_scalar(it) ? sval(it) : ykind(it));
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
			                is_scalar(it) ? sval(it) : ykind(it));
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
	    yneed(s, n, where, "dtype", v[0]) < 0 || yneed(s, n, where, "count", v[1]) < 0 ||
	    yneed(s, n, where, "role", v[2]) < 0)
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
		                n->type == YAML_MAPPING_NODE ? "empty mapping" : ykind(n));
	if (map_fields(s, n, "buffers", NULL, 0, NULL, NULL) < 0)
		return -1;
	for (i = 0; i < map_len(n); i++) {
		yaml_node_t *k = map_key(s, n, i);
		struct problem_buffer *b = &pb->bufs[i];

		if (i == PROBLEM_MAX_BUFFERS)
			return err_node(s, k, "more than %d buffers", PROBLEM_MAX_BUFFERS);
		if (!yis_ident(sval(k)))
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
	    yneed(s, n, "tensormap", "buffer", v[0]) < 0 ||
	    yneed(s, n, "tensormap", "dims", v[1]) < 0 || yneed(s, n, "tensormap", "box", v[3]) < 0)
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
		                ykind(n));
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
		return err_node(s, n, "'args' must be a list, got a %s", ykind(n));
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
	if (yneed(s, n, "launch", "kernel", v[0]) < 0 || yneed(s, n, "launch", "grid", v[1]) < 0 ||
	    yneed(s, n, "launch", "block", v[2]) < 0)
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
	    yneed(s, n, "reference", "source", v[0]) < 0)
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
		                ykind(n));
	}
	if (map_fields(ps->s, ps->root, "problem", problem_keys, PK_COUNT, ps->v, NULL) < 0 ||
	    yneed(ps->s, ps->root, "problem", "dims", ps->v[PK_DIMS]) < 0 ||
	    yneed(ps->s, ps->root, "problem", "buffers", ps->v[PK_BUFFERS]) < 0 ||
	    yneed(ps->s, ps->root, "problem", "args", ps->v[PK_ARGS]) < 0 ||
	    yneed(ps->s, ps->root, "problem", "reference", ps->v[PK_REFERENCE]) < 0)
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

/*
 * A landscape's identity: its name, and its labels where it has them (what runs
 * store), so that a database whose runs named a point by its code and one that
 * names it by its label never give one hash two names.
 */
static void landscape_hash(struct family *fam)
{
	struct hasher *h = hasher_new();
	size_t i, j;

	hasher_adds(h, "tuner landscape 1");
	hasher_adds(h, fam->name);
	for (i = 0; i < fam->nparams; i++) {
		const struct param *p = &fam->params[i];

		if (!p->labels)
			continue;
		hasher_adds(h, "labels");
		hasher_adds(h, p->name);
		for (j = 0; j < p->nvalues; j++)
			hasher_adds(h, p->labels[j]);
	}
	hasher_final_hex(h, fam->source_hash);
	memcpy(fam->deps_hash, fam->source_hash, sizeof(fam->deps_hash));
}

static int landscape_load(struct ysrc *s, yaml_node_t **v, struct family *fam)
{
	struct expr_err ee;

	if (get_ident(s, v[FK_NAME], "name", &fam->name) < 0)
		return -1;
	fam->problem = xcalloc(1, sizeof(*fam->problem));
	fam->problem->path = xstrdup(s->path);
	if (load_params(s, v[FK_PARAMS], fam) < 0 || load_baseline(s, v[FK_BASELINE], fam) < 0)
		return -1;
	if (v[FK_LABELS] && load_labels(s, v[FK_LABELS], fam) < 0)
		return -1;
	landscape_hash(fam);
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
		    yneed(s, root, "", family_keys[required[i]], v[required[i]]) < 0)
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
	if (!v[FK_LAUNCHES] && (yneed(s, root, "", "kernel", v[FK_KERNEL]) < 0 ||
	                        yneed(s, root, "", "launch", v[FK_LAUNCH]) < 0))
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
	if (v[FK_LABELS] && load_labels(s, v[FK_LABELS], fam) < 0)
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
int family_load_text(const char *path, const char *text, size_t len, struct family *fam)
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
