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
#include "tuner/import-python.h"
#include "tuner/import.h"
#include "tuner/measure.h"
#include "tuner/space.h"
#include "tuner/export.h"
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

/* ------------------------------------------------------------ parameters */

int import_param_index(const struct import_landscape *ls, const char *name)
{
	size_t i;

	for (i = 0; i < ls->nparams; i++)
		if (!strcmp(ls->params[i].name, name))
			return (int)i;
	return -1;
}

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

/* A value of a param that is not all integers: "1.0", not "1", so that it reads back as a float. */
static char *float_text(double v)
{
	char *t = num_text(v), *f;

	if (strpbrk(t, ".eEin")) /* a fraction, an exponent, inf or nan */
		return t;
	f = xasprintf("%s.0", t);
	free(t);
	return f;
}

/* A JSON scalar as a constant; 0 for anything else. */
static int json_literal(json_t *v, struct import_lit *out)
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

static int lit_is_int(const struct import_lit *l)
{
	return !l->is_str && l->num == floor(l->num) && fabs(l->num) < 9e15;
}

static int lit_same(const struct import_lit *a, const struct import_lit *b)
{
	return a->is_str == b->is_str && (a->is_str ? !strcmp(a->s, b->s) : a->num == b->num);
}

/* Numbers (NaN last), then strings: a total order in which equal values lie side by side. */
static int lit_order(const void *a, const void *b)
{
	const struct import_lit *x = *(const struct import_lit *const *)a;
	const struct import_lit *y = *(const struct import_lit *const *)b;

	if (x->is_str != y->is_str)
		return x->is_str - y->is_str;
	if (x->is_str)
		return strcmp(x->s, y->s);
	if (isnan(x->num) || isnan(y->num))
		return !!isnan(x->num) - !!isnan(y->num);
	return x->num < y->num ? -1 : x->num > y->num;
}

/* The value at position i of p's domain as a constant. */
static struct import_lit domain_lit(const struct import_param *p, size_t i)
{
	struct import_lit d = {0, 0, NULL};

	if (p->coded) {
		d.is_str = isnan(p->num[i]);
		d.num = p->num[i];
		d.s = p->labels[i];
	} else {
		d.num = (double)p->values[i];
	}
	return d;
}

/* A domain value and its position: sorted without a context that qsort() cannot pass. */
struct placed_lit {
	struct import_lit lit;
	size_t i;
};

static int placed_lit_order(const void *a, const void *b)
{
	const struct placed_lit *x = a, *y = b;
	const struct import_lit *px = &x->lit, *py = &y->lit;
	int c = lit_order(&px, &py);

	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/*
 * The positions of the domain in the order of their values (lit_order), so
 * that a value is found by bisection: a T1 may list 10**6 values, and a file
 * holds a value of each param for every result. 1 when two values are the
 * same (they then lie side by side).
 */
static int order_build(struct import_param *p)
{
	struct placed_lit *r = xcalloc(p->n + 1, sizeof(*r));
	size_t i;
	int dup = 0;

	for (i = 0; i < p->n; i++) {
		r[i].lit = domain_lit(p, i);
		r[i].i = i;
	}
	qsort(r, p->n, sizeof(*r), placed_lit_order);
	p->order = xcalloc(p->n + 1, sizeof(*p->order));
	for (i = 0; i < p->n; i++) {
		p->order[i] = r[i].i;
		if (i && !dup)
			dup = lit_same(&r[i - 1].lit, &r[i].lit);
	}
	free(r);
	return dup;
}

/* The domain from its values: integers as they are, anything else as codes of labels. */
static int param_init(struct import_param *p, const char *name, const struct import_lit *vals,
                      size_t n, const char *where)
{
	size_t i;

	p->name = xstrdup(name);
	if (!n)
		return error("%s: param '%s' has no values", where, name);
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
		p->labels[i] = vals[i].is_str ? xstrdup(vals[i].s) : float_text(vals[i].num);
		p->num[i] = vals[i].is_str ? NAN : vals[i].num;
	}
	if (order_build(p))
		return error("%s: param '%s' lists a value twice", where, name);
	return 0;
}

/* The value of the domain that the constant l names: 1 found, 0 not. */
static int param_lookup(const struct import_param *p, const struct import_lit *l, long long *out)
{
	size_t i, lo = 0, hi = p->n;

	if (!p->order) {
		/* a domain made by hand (the tests): looked through */
		for (i = 0; i < p->n; i++) {
			struct import_lit d = domain_lit(p, i);

			if (lit_same(&d, l)) {
				*out = p->values[i];
				return 1;
			}
		}
		return 0;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct import_lit d = domain_lit(p, p->order[mid]);
		const struct import_lit *pd = &d;

		if (lit_order(&pd, &l) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n) {
		struct import_lit d = domain_lit(p, p->order[lo]);

		if (lit_same(&d, l)) {
			*out = p->values[p->order[lo]];
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

/*
 * Whether a coded param's labels can be the sidecar's labels (what runs store in
 * "NAME=V,..."): letters, digits and _ . + - only, a string that does not read
 * as a number (it would come back as one). Else the sidecar names them in a
 * comment and runs show the codes.
 */
static int labels_fit(const struct import_param *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		const char *l = p->labels[i];

		if (!space_label_valid(l))
			return 0;
		if (isnan(p->num[i]) && export_label_is_number(l))
			return 0;
	}
	/*
	 * No two alike: the values are distinct (param_init), a number's text reads
	 * back as that number, and a string that reads as a number was refused above.
	 */
	return 1;
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
	if (import_param_index(ls, name) >= 0) {
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

/* T1's "Values": a JSON array, or a string of Python that makes a list (range, comprehensions). */
static int t1_values(const char *where, const char *pname, json_t *v, struct import_param *p)
{
	struct import_values pv = {0};
	struct import_lit *vals = NULL;
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
		r = param_init(p, pname, vals, cnt, where);
	} else if (json_is_string(v)) {
		if (import_python_values(json_string_value(v), &pv, why, sizeof(why)) < 0)
			error("%s: param '%s': cannot read its values '%s': %s", where, pname,
			      json_string_value(v), why);
		else
			r = param_init(p, pname, pv.v, pv.n, where);
	} else {
		error("%s: param '%s' has no list of 'Values'", where, pname);
	}
out:
	free(vals);
	import_values_free(&pv);
	return r;
}

/*
 * T1's "Default": a value of the param (or a list of one, as some files write
 * it). One that is not among the values leaves the param without a default,
 * with a warning: the baseline is then chosen as when none is declared.
 */
static int t1_default(const char *where, struct import_param *p, json_t *d)
{
	struct import_lit l;

	if (json_is_array(d) && json_array_size(d) == 1)
		d = json_array_get(d, 0);
	if (!d || json_is_null(d))
		return 0;
	if (!json_literal(d, &l))
		return error("%s: the default of '%s' is not a number or a string", where, p->name);
	if (!param_lookup(p, &l, &p->deflt)) {
		char *text = json_dumps(d, JSON_ENCODE_ANY);

		warning("%s: the default of '%s' (%s) is not one of its values: it has none", where,
		        p->name, text ? text : "?");
		free(text);
		return 0;
	}
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

/* Values of a domain that an error lists: a T1 may declare 10**6. */
#define DOMAIN_SHOWN 32

/* The configuration of an entry: the value of every param, looked up in cfg by name. */
static int entry_config(const struct import_landscape *ls, json_t *cfg, const char *where,
                        size_t idx, struct import_entry *e)
{
	size_t i;

	for (i = 0; i < ls->nparams; i++) {
		const struct import_param *p = &ls->params[i];
		json_t *v = json_object_get(cfg, p->name);
		struct import_lit l;

		if (!v)
			return error("%s: result %zu has no value for '%s'", where, idx + 1,
			             p->name);
		if (!json_literal(v, &l) || !param_lookup(p, &l, &e->v[i])) {
			struct strbuf sb = STRBUF_INIT;
			char *text = json_dumps(v, JSON_ENCODE_ANY);

			for (size_t k = 0; k < p->n && k < DOMAIN_SHOWN; k++) {
				sb_adds(&sb, k ? ", " : "");
				value_text(p, p->values[k], &sb);
			}
			if (p->n > DOMAIN_SHOWN)
				sb_addf(&sb, ", ... (%zu values)", p->n);
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

static size_t count_outcome(const struct import_landscape *ls, enum outcome o)
{
	size_t i, n = 0;

	for (i = 0; i < ls->nentries; i++)
		n += ls->entries[i].outcome == o;
	return n;
}

/*
 * A result recorded as correct whose objective is missing, not a number or
 * not positive: nothing a search could rank, and no reason to refuse the
 * file. A replay rejects it as unmeasured (no recorded verdict is that one);
 * import_read() counts them aloud.
 */
static void untimed(const struct import_landscape *ls, struct import_entry *e)
{
	free(e->reason);
	e->outcome = REJECT_UNMEASURED;
	e->reason = xasprintf("recorded as correct without a positive %s", ls->objective);
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
			break;
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
	untimed(ls, e);
	return 0;
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

/* Kernel Tuner before its error strings cached a failed configuration with this time. */
#define KT_FAILED 1e20

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
	if (!ls->device && dev && *dev) /* Kernel Tuner writes "" when it could not ask */
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
			if (import_param_index(ls, key) < 0)
				return error("%s tunes '%s', which %s does not declare", path, key,
				             ls->space);
		}
	} else {
		json_array_foreach(keys, j, k)
		{
			json_t *vals = json_object_get(tp, json_string_value(k));
			struct import_param *p;
			struct import_lit *l;

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
		} else if (json_is_number(val) && json_number_value(val) >= KT_FAILED) {
			e->outcome = REJECT_RUNTIME_FAULT;
			e->reason =
			    xstrdup("failed (recorded as 1e20, as old Kernel Tuner caches do)");
		} else if (json_is_number(val) && json_number_value(val) > 0) {
			double scale = strcmp(ls->objective, "time") ? 1 : 1e3; /* ms */

			e->outcome = VARIANT_OK;
			e->reason = xstrdup("");
			e->cost = to_cost(ls, json_number_value(val), scale);
			if (!strcmp(ls->objective, "time"))
				take_samples(ls, e, json_object_get(rec, "times"), scale);
		} else {
			untimed(ls, e);
		}
		i++;
	}
	return 0;
}

/*
 * A name that says nothing of its direction ("score", "energy") is read as a
 * cost; the user may know better. Flipping between a cost and a rate of the
 * same values is cost -> 1e6 / cost either way (a non-time objective is kept
 * at a scale of 1), and what was untimed stays so: a value must be positive
 * both ways. A time is always a cost.
 */
int import_set_direction(struct import_landscape *ls, const char *how)
{
	int maximize;
	size_t i;

	if (!how)
		return 0;
	if (strcmp(how, "higher") && strcmp(how, "lower"))
		return error("--direction must be 'higher' or 'lower', not '%s'", how);
	maximize = !strcmp(how, "higher");
	if (maximize == ls->maximize)
		return 0;
	if (!strcmp(ls->objective, "time"))
		return error("%s: the objective is a time, and a time is better lower", ls->source);
	for (i = 0; i < ls->nentries; i++)
		if (ls->entries[i].outcome == VARIANT_OK)
			ls->entries[i].cost = 1e6 / ls->entries[i].cost;
	ls->maximize = maximize;
	free(ls->unit);
	ls->unit = xstrdup(maximize ? "1e6/value" : "value");
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
#define COUNT_MAX 10000000 /* points counted, some seconds: a few hundred bytes declare 10**20 */
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
	for (i = 0; i < ls->nentries; i++) {
		const struct import_entry *e = &ls->entries[i];

		if (e->outcome == REJECT_CONSTRAINT && index_find(&ix, ls, e->v) == e &&
		    passes(ls, exprs, e->v, &which) == 1)
			ok++;
	}
	if (dups)
		warning("%s: %zu configurations are recorded more than once: the first result "
		        "of each stands",
		        path, dups);
	for (i = 0; i < ls->nparams && size <= COUNT_MAX; i++)
		size = ls->params[i].n > COUNT_MAX ? COUNT_MAX + 1 : size * ls->params[i].n;
	if (size > COUNT_MAX) {
		warning("%s: the space has more than %d configurations, too many to count those "
		        "within the restrictions that have no result",
		        path, COUNT_MAX);
		size = 0;
	}
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
	size_t untimed_n;
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
	if (!ls->objective || !count_outcome(ls, VARIANT_OK))
		return error("%s: no configuration was timed: nothing to search", results);
	untimed_n = count_outcome(ls, REJECT_UNMEASURED);
	if (untimed_n)
		warning("%s: %zu results recorded as correct have no positive %s: a replay "
		        "rejects them as unmeasured",
		        results, untimed_n, ls->objective);
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
		free(p->order);
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
		struct import_lit l = {0, 0, NULL};
		char *end;

		eq = strchr(item, '=');
		if (!eq) {
			r = error("--baseline: expected NAME=VALUE, got '%s'", item);
			break;
		}
		*eq++ = '\0';
		pi = import_param_index(ls, item);
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
		if (p->coded && !labels_fit(p)) {
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
	for (i = 0, j = 0; i < ls->nparams; i++) {
		const struct import_param *p = &ls->params[i];
		size_t k;

		if (!p->coded || !labels_fit(p))
			continue;
		if (!j++)
			sb_adds(&sb,
			        "labels:                      # what the codes above stand for, as "
			        "runs store and show them\n");
		sb_addf(&sb, "  %s: [", p->name);
		for (k = 0; k < p->n; k++)
			sb_addf(&sb, isnan(p->num[k]) ? "%s'%s'" : "%s%s", k ? ", " : "",
			        p->labels[k]);
		sb_adds(&sb, "]\n");
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
	const char *options; /* as a run records them, so a run may write into this database */
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
	                      params, w->options, &vid, &created);
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
	char *shapes = shapes_json_of(cfg), *options;
	char **opts;
	size_t i, nopts;
	int r = -1;

	opts = template_options(cfg, 0, &nopts);
	options = template_options_text(opts, nopts);
	template_options_free(opts, nopts);
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
	w.options = options;
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
	free(options);
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
