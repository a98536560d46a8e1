/* The export stage: a run's ranking read out of the database, written as a C header, JSON or T4. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "tuner/export.h"
#include "tuner/outcome.h"

/* ------------------------------------------------------------ pure parts */

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum(int c)
{
	return is_alpha(c) || (c >= '0' && c <= '9');
}

static int is_ident(const char *s, size_t n)
{
	size_t i;

	if (!n || !(is_alpha(s[0]) || s[0] == '_'))
		return 0;
	for (i = 1; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_')
			return 0;
	return 1;
}

void export_params_release(struct export_params *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->v[i].name);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

int export_params_parse(const char *text, struct export_params *out)
{
	const char *p = text;
	size_t alloc = 0, i;

	memset(out, 0, sizeof(*out));
	if (!*p)
		return 0; /* a family without params */
	for (;;) {
		const char *end = strchr(p, ','), *eq, *digits;
		char *num_end;
		long long v;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || !is_ident(p, (size_t)(eq - p)))
			goto bad;
		digits = eq + 1 + (eq[1] == '-');
		if (*digits < '0' || *digits > '9')
			goto bad;
		errno = 0;
		v = strtoll(eq + 1, &num_end, 10);
		if (errno || num_end != end)
			goto bad;
		for (i = 0; i < out->n; i++)
			if (strlen(out->v[i].name) == (size_t)(eq - p) &&
			    !memcmp(out->v[i].name, p, (size_t)(eq - p)))
				goto bad;
		ALLOC_GROW(out->v, out->n + 1, alloc);
		out->v[out->n].name = xstrndup(p, (size_t)(eq - p));
		out->v[out->n].value = v;
		out->n++;
		if (!*end)
			return 0;
		p = end + 1;
	}
bad:
	export_params_release(out);
	return error("malformed params '%s' (expected NAME=INTEGER,... without repeats)", text);
}

char *export_ident(const char *s)
{
	char *out = xstrdup(s), *p;

	for (p = out; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : is_alnum(*p) ? *p : '_');
	return out;
}

char *export_prefix(const char *template_name)
{
	char *id = export_ident(template_name);
	char *prefix = xasprintf("%s%s_", is_alpha(id[0]) ? "" : "TUNER_", id);

	free(id);
	return prefix;
}

void export_shapes_free(struct export_shape *s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++) {
		free(s[i].name);
		free(s[i].dims);
	}
	free(s);
}

int export_shapes_parse(const char *text, struct export_shape **out, size_t *n)
{
	json_error_t jerr;
	json_t *root = json_loads(text ? text : "", 0, &jerr), *item;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!root)
		return error("malformed shape suite: %s", jerr.text);
	if (!json_is_array(root)) {
		json_decref(root);
		return error("malformed shape suite: not a JSON array");
	}
	*out = xcalloc(json_array_size(root) + 1, sizeof(**out));
	json_array_foreach(root, i, item)
	{
		json_t *name = json_object_get(item, "name"), *dims = item, *val;
		struct strbuf sb = STRBUF_INIT;
		const char *key;

		if (!json_is_object(item) || !json_is_string(name)) {
			error("malformed shape suite: shape %zu has no name", i + 1);
			goto fail;
		}
		/* {"name": ..., "dims": {"B": 1, ...}} is read as well as the flat form. */
		if (json_is_object(json_object_get(item, "dims")))
			dims = json_object_get(item, "dims");
		sb_grow(&sb, 0);
		json_object_foreach(dims, key, val)
		{
			if (dims == item && !strcmp(key, "name"))
				continue;
			if (!json_is_integer(val)) {
				error(
				    "malformed shape suite: shape '%s': dim '%s' is not an integer",
				    json_string_value(name), key);
				sb_release(&sb);
				goto fail;
			}
			sb_addf(&sb, "%s%s=%lld", sb.len ? "," : "", key,
			        (long long)json_integer_value(val));
		}
		(*out)[i].name = xstrdup(json_string_value(name));
		(*out)[i].dims = sb_detach(&sb);
		(*n)++;
	}
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	export_shapes_free(*out, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void export_comment_text(struct strbuf *sb, const char *s)
{
	char prev = 0;

	for (; s && *s; s++) {
		char c = *s;

		if (c < 0x20 || c > 0x7e)
			c = ' ';
		/* No comment delimiters, and no "??" that could start a trigraph. */
		if ((prev == '*' && c == '/') || (prev == '/' && c == '*') ||
		    (prev == '?' && c == '?'))
			sb_adds(sb, " ");
		sb_add(sb, &c, 1);
		prev = c;
	}
}

/* --------------------------------------------------------------- queries */

static double num(const char *s)
{
	return s ? strtod(s, NULL) : NAN;
}

static long long inum(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

static char *sdup(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static const char *nn(const char *s)
{
	return s ? s : "";
}

static void timing_clear(struct export_timing *t)
{
	t->measured = 0;
	t->median_us = t->ci_lo_us = t->ci_hi_us = t->tflops = t->rel_l2 = t->speedup = NAN;
}

static double speedup(double base_us, double us)
{
	return isfinite(base_us) && isfinite(us) && base_us > 0 && us > 0 ? base_us / us : NAN;
}

struct timing_ctx {
	struct export_timing *t;
	char **samples; /* the samples column, or NULL */
};

static int timing_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct timing_ctx *c = ctx;

	c->t->measured = 1;
	c->t->median_us = num(v[0]);
	c->t->ci_lo_us = num(v[1]);
	c->t->ci_hi_us = num(v[2]);
	c->t->tflops = num(v[3]);
	c->t->rel_l2 = num(v[4]);
	if (c->samples)
		*c->samples = sdup(v[5]);
	return 1;
}

/* A variant's measurement on one shape of the run's device; speedup left NAN. */
static int lookup_timing(struct db *db, long long variant_id, const char *device, const char *dims,
                         struct export_timing *t, char **samples)
{
	struct timing_ctx c;
	char id[32];

	timing_clear(t);
	c.t = t;
	c.samples = samples;
	if (samples)
		*samples = NULL;
	snprintf(id, sizeof(id), "%lld", variant_id);
	return db_exec_callback(db,
	                        "SELECT median_us, ci_lo_us, ci_hi_us, tflops, rel_l2, samples"
	                        " FROM measurements WHERE variant_id = ?1 AND device = ?2"
	                        " AND shape_dims = ?3",
	                        timing_row, &c, id, device, dims, (const char *)NULL);
}

/* Every shape of the suite, with speedups over the baseline's timings in base (may be NULL). */
static int lookup_timings(struct db *db, const struct ranking *r, long long variant_id,
                          struct export_timing *t)
{
	size_t i;

	for (i = 0; i < r->nshapes; i++) {
		if (lookup_timing(db, variant_id, r->run.device, r->shapes[i].dims, &t[i], NULL) <
		    0)
			return -1;
		if (r->base)
			t[i].speedup = speedup(r->base[i].median_us, t[i].median_us);
	}
	return 0;
}

static int int_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	long long *out = ctx;

	*out = v[0] ? inum(v[0]) : -1;
	return 1;
}

static int baseline_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct ranking *r = ctx;

	r->baseline_id = inum(v[0]);
	r->baseline_hash = sdup(v[1]);
	r->baseline_params = sdup(v[2]);
	return 1;
}

struct rank_ctx {
	struct ranking *r;
	size_t k, alloc;
	int elite;
};

static int entry_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct rank_ctx *c = ctx;
	struct ranking *r = c->r;
	struct export_entry *e;

	if (r->n >= c->k)
		return 1;
	ALLOC_GROW(r->v, r->n + 1, c->alloc);
	e = &r->v[r->n++];
	memset(e, 0, sizeof(*e));
	e->rank = (int)r->n;
	e->elite = c->elite;
	e->variant_id = inum(v[0]);
	e->hash = sdup(v[1]);
	e->params = sdup(v[2]);
	e->fitness = num(v[3]);
	e->fitness_lo = num(v[4]);
	e->fitness_hi = num(v[5]);
	return 0;
}

#define FINAL_ELITE_GENERATION "(SELECT max(generation) FROM elite WHERE run_id = ?1)"

int export_rank(struct db *db, long long run_id, size_t k, struct ranking *r)
{
	struct rank_ctx c;
	char id[32], lim[32];
	long long gen = -1;
	size_t i;

	memset(r, 0, sizeof(*r));
	c.r = r;
	c.k = k;
	c.alloc = 0;
	c.elite = 1;
	r->elite_generation = -1;
	if (db_run_get(db, run_id, &r->run) < 0)
		return -1;
	if (export_shapes_parse(r->run.shapes, &r->shapes, &r->nshapes) < 0)
		goto fail;
	snprintf(id, sizeof(id), "%lld", run_id);
	snprintf(lim, sizeof(lim), "%zu", k);

	if (db_exec_callback(db, "SELECT max(generation) FROM elite WHERE run_id = ?1", int_row,
	                     &gen, id, (const char *)NULL) < 0)
		goto fail;
	r->elite_generation = (int)gen;

	/* Speedups are against the run's baseline, on the same device and shapes. */
	if (db_exec_callback(db,
	                     "SELECT p.variant_id, v.hash, v.params FROM population p"
	                     " JOIN variants v ON v.id = p.variant_id"
	                     " WHERE p.run_id = ?1 AND p.origin = 'baseline'"
	                     " ORDER BY p.generation LIMIT 1",
	                     baseline_row, r, id, (const char *)NULL) < 0)
		goto fail;
	if (r->baseline_id) {
		r->base = xcalloc(r->nshapes + 1, sizeof(*r->base));
		if (lookup_timings(db, r, r->baseline_id, r->base) < 0)
			goto fail;
	}

	/* The final elite, best first; the evals row has the fitness interval. */
	if (k && db_exec_callback(db,
	                          "SELECT e.variant_id, v.hash, v.params,"
	                          " coalesce(x.fitness, e.fitness), x.fitness_lo, x.fitness_hi"
	                          " FROM elite e JOIN variants v ON v.id = e.variant_id"
	                          " LEFT JOIN evals x ON x.run_id = e.run_id"
	                          " AND x.variant_id = e.variant_id"
	                          " WHERE e.run_id = ?1 AND e.generation = " FINAL_ELITE_GENERATION
	                          " ORDER BY e.rank LIMIT CAST(?2 AS INTEGER)",
	                          entry_row, &c, id, lim, (const char *)NULL) < 0)
		goto fail;
	/* Then the run's other correct, timed variants. */
	c.elite = 0;
	if (r->n < k &&
	    db_exec_callback(db,
	                     "SELECT x.variant_id, v.hash, v.params, x.fitness, x.fitness_lo,"
	                     " x.fitness_hi FROM evals x JOIN variants v ON v.id = x.variant_id"
	                     " WHERE x.run_id = ?1 AND x.outcome = 'ok' AND x.fitness IS NOT NULL"
	                     " AND x.variant_id NOT IN (SELECT variant_id FROM elite"
	                     " WHERE run_id = ?1 AND generation = " FINAL_ELITE_GENERATION ")"
	                     " ORDER BY x.fitness DESC, x.variant_id LIMIT CAST(?2 AS INTEGER)",
	                     entry_row, &c, id, lim, (const char *)NULL) < 0)
		goto fail;

	for (i = 0; i < r->n; i++) {
		r->v[i].t = xcalloc(r->nshapes + 1, sizeof(*r->v[i].t));
		if (lookup_timings(db, r, r->v[i].variant_id, r->v[i].t) < 0)
			goto fail;
	}
	return 0;
fail:
	ranking_release(r);
	return -1;
}

static int best_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct export_best *b = ctx;

	b->variant_id = inum(v[0]);
	b->hash = sdup(v[1]);
	b->params = sdup(v[2]);
	return 1;
}

int export_rank_per_shape(struct db *db, struct ranking *r)
{
	char id[32];
	size_t i;

	snprintf(id, sizeof(id), "%lld", r->run.id);
	if (!r->best)
		r->best = xcalloc(r->nshapes + 1, sizeof(*r->best));
	for (i = 0; i < r->nshapes; i++) {
		struct export_best *b = &r->best[i];

		timing_clear(&b->t);
		/* Correct: the variant passed every gate of the run, and this shape's check. */
		if (db_exec_callback(
			db,
			"SELECT m.variant_id, v.hash, v.params FROM measurements m"
			" JOIN evals x ON x.variant_id = m.variant_id AND x.run_id = ?1"
			" JOIN variants v ON v.id = m.variant_id"
			" WHERE x.outcome = 'ok' AND m.outcome = 'ok'"
			" AND m.median_us IS NOT NULL AND m.device = ?2"
			" AND m.shape_dims = ?3 ORDER BY m.median_us, m.variant_id LIMIT 1",
			best_row, b, id, r->run.device, r->shapes[i].dims, (const char *)NULL) < 0)
			return -1;
		if (!b->variant_id)
			continue;
		if (lookup_timing(db, b->variant_id, r->run.device, r->shapes[i].dims, &b->t,
		                  NULL) < 0)
			return -1;
		if (r->base)
			b->t.speedup = speedup(r->base[i].median_us, b->t.median_us);
	}
	return 0;
}

void ranking_release(struct ranking *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		free(r->v[i].hash);
		free(r->v[i].params);
		free(r->v[i].t);
	}
	free(r->v);
	for (i = 0; r->best && i < r->nshapes; i++) {
		free(r->best[i].hash);
		free(r->best[i].params);
	}
	free(r->best);
	free(r->base);
	free(r->baseline_hash);
	free(r->baseline_params);
	export_shapes_free(r->shapes, r->nshapes);
	db_run_release(&r->run);
	memset(r, 0, sizeof(*r));
}

const char *export_empty_reason(const struct ranking *r, char *buf, size_t len)
{
	if (!r->run.gpu && !r->run.replay_of)
		snprintf(buf, len, "run %lld timed nothing (no GPU)", r->run.id);
	else
		snprintf(buf, len, "run %lld has no correct timed variant%s", r->run.id,
		         r->run.status && !strcmp(r->run.status, "running") ? " yet" : "");
	return buf;
}

/* ------------------------------------------------------------- C header */

struct macros {
	char **name;
	size_t n, alloc;
};

/* Add "#define NAME value" to out, unless NAME is already taken: 0 or error(). */
static int add_define(struct macros *m, struct strbuf *out, const char *name, long long value)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name))
			return error("two macros would be named '%s' (rename a shape or param)",
			             name);
	ALLOC_GROW(m->name, m->n + 1, m->alloc);
	m->name[m->n++] = xstrdup(name);
	/* Parenthesised when negative, so the macro is safe inside any expression. */
	if (value < 0)
		sb_addf(out, "#define %s (%lld)\n", name, value);
	else
		sb_addf(out, "#define %s %lld\n", name, value);
	return 0;
}

static int add_defines(struct macros *m, struct strbuf *out, const char *prefix, const char *params)
{
	struct export_params ps;
	size_t i;
	int rc = 0;

	if (export_params_parse(params, &ps) < 0)
		return -1;
	for (i = 0; rc == 0 && i < ps.n; i++) {
		char *name = xasprintf("%s%s", prefix, ps.v[i].name);

		rc = add_define(m, out, name, ps.v[i].value);
		free(name);
	}
	export_params_release(&ps);
	return rc;
}

static size_t max_shape_name(const struct ranking *r)
{
	size_t i, w = 0;

	for (i = 0; i < r->nshapes; i++)
		if (strlen(r->shapes[i].name) > w)
			w = strlen(r->shapes[i].name);
	return w;
}

/* The include guard: from the file's name, else from the prefix. Caller frees. */
static char *header_guard(const char *prefix, const struct export_header_opts *o)
{
	const char *base;
	char *id, *guard;

	if (!o->output)
		return xasprintf("%s%sCONFIG_H", prefix, o->per_shape ? "PER_SHAPE_" : "");
	base = strrchr(o->output, '/');
	base = base ? base + 1 : o->output;
	id = export_ident(base);
	guard = xasprintf("%s%s", is_alpha(id[0]) ? "" : "TUNER_", id);
	free(id);
	return guard;
}

/* Append "%.3f" of v, or "-" for NAN. */
static void add_fixed(struct strbuf *sb, const char *fmt, double v)
{
	if (isfinite(v))
		sb_addf(sb, fmt, v);
	else
		sb_adds(sb, "-");
}

/* One line of the block comment: " * " and the text made safe for a comment. */
static void comment_line(struct strbuf *c, const char *text)
{
	sb_adds(c, *text ? " * " : " *");
	export_comment_text(c, text);
	sb_adds(c, "\n");
}

static void comment_linef(struct strbuf *c, const char *fmt, ...) TUNER_PRINTF(2, 3);
static void comment_linef(struct strbuf *c, const char *fmt, ...)
{
	struct strbuf l = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&l, fmt, ap);
	va_end(ap);
	if (l.buf) /* NULL only when the format failed */
		comment_line(c, l.buf);
	sb_release(&l);
}

/* "fitness 1.250 [1.200, 1.300]" */
static void add_fitness(struct strbuf *sb, const struct export_entry *e)
{
	sb_adds(sb, "fitness ");
	add_fixed(sb, "%.3f", e->fitness);
	sb_adds(sb, " [");
	add_fixed(sb, "%.3f", e->fitness_lo);
	sb_adds(sb, ", ");
	add_fixed(sb, "%.3f", e->fitness_hi);
	sb_adds(sb, "]");
}

static void header_comment(const struct ranking *r, const struct export_header_opts *o,
                           const char *prefix, struct strbuf *c)
{
	const struct db_run *run = &r->run;
	struct strbuf l = STRBUF_INIT;
	int w = (int)max_shape_name(r);
	char date[32];
	struct tm tm;
	size_t i, s;

	gmtime_r(&o->now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);

	sb_adds(c, "/*\n");
	comment_linef(c, "The tuned configuration%s of the %s kernel family, with its provenance.",
	              r->n > 1 ? "s" : "", nn(run->template_name));
	comment_linef(c, "Generated by tuner %s on %s; export again rather than edit.",
	              TUNER_VERSION, date);
	comment_line(c, "");
	comment_linef(c, "run       %lld (%s, started %s): %s", run->id, nn(run->status),
	              nn(run->started_at), nn(run->command));
	comment_linef(c, "GPU       %s, driver %s", nn(run->device), nn(run->driver));
	comment_linef(c, "arch      %s, NVRTC %s", nn(run->arch), nn(run->nvrtc));
	comment_linef(c, "template  %s, hash %s", nn(run->template_name), nn(run->template_hash));
	if (r->baseline_id)
		comment_linef(c, "baseline  variant %lld: %s", r->baseline_id,
		              nn(r->baseline_params));
	for (i = 0; i < r->nshapes; i++)
		comment_linef(c, "%s%-*s  %s", i ? "          " : "shapes    ", w,
		              r->shapes[i].name, r->shapes[i].dims);

	for (i = 0; i < r->n; i++) {
		const struct export_entry *e = &r->v[i];

		comment_line(c, "");
		if (e->elite)
			comment_linef(c, "rank %d: variant %lld (hash %s), elite of generation %d",
			              e->rank, e->variant_id, nn(e->hash), r->elite_generation);
		else
			comment_linef(c,
			              "rank %d: variant %lld (hash %s), correct, not in the elite",
			              e->rank, e->variant_id, nn(e->hash));
		comment_linef(c, "  %s", nn(e->params));
		sb_reset(&l);
		sb_adds(&l, "  ");
		add_fitness(&l, e);
		sb_adds(&l, " (geometric-mean speedup over the baseline, 95% interval)");
		comment_line(c, l.buf);
		for (s = 0; s < r->nshapes; s++) {
			sb_reset(&l);
			sb_addf(&l, "  %-*s  median ", w, r->shapes[s].name);
			add_fixed(&l, "%.3f us", e->t[s].median_us);
			sb_adds(&l, ", speedup ");
			add_fixed(&l, "%.3f", e->t[s].speedup);
			comment_line(c, l.buf);
		}
	}

	comment_line(c, "");
	comment_linef(c, "Macros: rank 1 is %sNAME for each param NAME; rank r > 1 is %sR<r>_NAME.",
	              prefix, prefix);
	if (o->per_shape) {
		comment_linef(c, "%s<SHAPE>_NAME is the correct variant with the lowest median on",
		              prefix);
		comment_line(
		    c, "that shape (its name upper-cased, bytes other than letters and digits "
		       "made _).");
	}
	comment_linef(c, "%sRANKS is the number of ranks defined.", prefix);
	sb_adds(c, " */\n");
	sb_release(&l);
}

int export_header(const struct ranking *r, const struct export_header_opts *o, struct strbuf *out)
{
	char *prefix = export_prefix(r->run.template_name), *guard = header_guard(prefix, o),
	     *ranks;
	struct strbuf defs = STRBUF_INIT, l = STRBUF_INIT;
	struct macros m = {NULL, 0, 0};
	size_t i;
	int rc = -1;

	if (!r->n) {
		char why[128];

		error("%s: nothing to export", export_empty_reason(r, why, sizeof(why)));
		goto out;
	}
	if (o->per_shape && !r->best)
		BUG("export_header: per_shape without export_rank_per_shape()");
	/* The guard is a macro too. */
	ALLOC_GROW(m.name, 1, m.alloc);
	m.name[m.n++] = xstrdup(guard);

	for (i = 0; i < r->n; i++) {
		const struct export_entry *e = &r->v[i];
		char *p = e->rank == 1 ? xstrdup(prefix) : xasprintf("%sR%d_", prefix, e->rank);

		sb_reset(&l);
		sb_addf(&l, "rank %d: variant %lld, ", e->rank, e->variant_id);
		add_fitness(&l, e);
		sb_adds(&defs, "\n/* ");
		export_comment_text(&defs, l.buf);
		sb_adds(&defs, " */\n");
		rc = add_defines(&m, &defs, p, nn(e->params));
		free(p);
		if (rc < 0)
			goto out;
	}
	for (i = 0; o->per_shape && i < r->nshapes; i++) {
		const struct export_best *b = &r->best[i];
		char *id, *p;

		sb_reset(&l);
		sb_addf(&l, "shape %s (%s): ", r->shapes[i].name, r->shapes[i].dims);
		if (!b->variant_id) {
			sb_adds(&l, "no correct timed variant, nothing defined");
		} else {
			sb_addf(&l, "variant %lld, median ", b->variant_id);
			add_fixed(&l, "%.3f us", b->t.median_us);
			sb_adds(&l, ", speedup ");
			add_fixed(&l, "%.3f", b->t.speedup);
		}
		sb_adds(&defs, "\n/* ");
		export_comment_text(&defs, l.buf);
		sb_adds(&defs, " */\n");
		if (!b->variant_id)
			continue;
		id = export_ident(r->shapes[i].name);
		p = xasprintf("%s%s_", prefix, id);
		rc = add_defines(&m, &defs, p, nn(b->params));
		free(id);
		free(p);
		if (rc < 0)
			goto out;
	}

	/* ISO C has no empty translation unit: a declaration makes the header one on its own. */
	ranks = xasprintf("%sRANKS", prefix);
	ALLOC_GROW(m.name, m.n + 1, m.alloc);
	m.name[m.n++] = ranks;
	for (i = 0; i + 1 < m.n; i++)
		if (!strcmp(m.name[i], ranks)) {
			error("two identifiers would be named '%s' (rename a shape or param)",
			      ranks);
			rc = -1;
			goto out;
		}
	sb_addf(&defs, "\nenum { %s = %zu };\n", ranks, r->n);

	header_comment(r, o, prefix, out);
	sb_addf(out, "#ifndef %s\n#define %s\n", guard, guard);
	sb_add(out, defs.buf, defs.len);
	sb_addf(out, "\n#endif /* %s */\n", guard);
	rc = 0;
out:
	for (i = 0; i < m.n; i++)
		free(m.name[i]);
	free(m.name);
	sb_release(&defs);
	sb_release(&l);
	free(guard);
	free(prefix);
	return rc;
}

/* ------------------------------------------------------------------ JSON */

static json_t *jnum(double d)
{
	return isfinite(d) ? json_real(d) : json_null();
}

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* {"BLOCK_M": 64, ...}, or NULL after error(). */
static json_t *params_json(const char *params)
{
	struct export_params ps;
	json_t *o;
	size_t i;

	if (export_params_parse(nn(params), &ps) < 0)
		return NULL;
	o = json_object();
	for (i = 0; i < ps.n; i++)
		json_object_set_new(o, ps.v[i].name, json_integer(ps.v[i].value));
	export_params_release(&ps);
	return o;
}

static json_t *timings_json(const struct ranking *r, const struct export_timing *t)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < r->nshapes; i++) {
		json_t *s = json_object();

		json_object_set_new(s, "name", json_string(r->shapes[i].name));
		json_object_set_new(s, "dims", json_string(r->shapes[i].dims));
		json_object_set_new(s, "median_us", jnum(t[i].median_us));
		json_object_set_new(s, "ci_lo_us", jnum(t[i].ci_lo_us));
		json_object_set_new(s, "ci_hi_us", jnum(t[i].ci_hi_us));
		json_object_set_new(s, "tflops", jnum(t[i].tflops));
		json_object_set_new(s, "rel_l2", jnum(t[i].rel_l2));
		json_object_set_new(s, "speedup", jnum(t[i].speedup));
		json_array_append_new(a, s);
	}
	return a;
}

/* Serialise and free doc; 0, or error() when it could not be (a NULL member, no memory). */
static int dump_json(json_t *doc, struct strbuf *out)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));

	json_decref(doc);
	if (!s)
		return error("cannot serialise the JSON document");
	sb_adds(out, s);
	sb_adds(out, "\n");
	free(s);
	return 0;
}

int export_json(const struct ranking *r, struct strbuf *out)
{
	json_t *doc = json_object(), *shapes = json_array(), *results = json_array(), *base, *p;
	size_t i;

	json_object_set_new(doc, "run", json_integer(r->run.id));
	json_object_set_new(doc, "status", jstr(r->run.status));
	json_object_set_new(doc, "device", jstr(r->run.device));
	json_object_set_new(doc, "driver", jstr(r->run.driver));
	json_object_set_new(doc, "arch", jstr(r->run.arch));
	json_object_set_new(doc, "nvrtc", jstr(r->run.nvrtc));
	json_object_set_new(doc, "template", jstr(r->run.template_name));
	json_object_set_new(doc, "template_hash", jstr(r->run.template_hash));
	json_object_set_new(doc, "elite_generation",
	                    r->elite_generation >= 0 ? json_integer(r->elite_generation)
	                                             : json_null());
	for (i = 0; i < r->nshapes; i++)
		json_array_append_new(shapes, json_pack("{s:s, s:s}", "name", r->shapes[i].name,
		                                        "dims", r->shapes[i].dims));
	json_object_set_new(doc, "shapes", shapes);
	if (r->baseline_id) {
		if (!(p = params_json(r->baseline_params)))
			goto fail;
		base = json_object();
		json_object_set_new(base, "variant_id", json_integer(r->baseline_id));
		json_object_set_new(base, "hash", jstr(r->baseline_hash));
		json_object_set_new(base, "params", p);
		if (r->base)
			json_object_set_new(base, "shapes", timings_json(r, r->base));
		json_object_set_new(doc, "baseline", base);
	} else {
		json_object_set_new(doc, "baseline", json_null());
	}
	for (i = 0; i < r->n; i++) {
		const struct export_entry *e = &r->v[i];
		json_t *o;

		if (!(p = params_json(e->params)))
			goto fail;
		o = json_object();
		json_object_set_new(o, "rank", json_integer(e->rank));
		json_object_set_new(o, "variant_id", json_integer(e->variant_id));
		json_object_set_new(o, "hash", jstr(e->hash));
		json_object_set_new(o, "elite", json_boolean(e->elite));
		json_object_set_new(o, "params", p);
		json_object_set_new(o, "fitness", jnum(e->fitness));
		json_object_set_new(o, "fitness_lo", jnum(e->fitness_lo));
		json_object_set_new(o, "fitness_hi", jnum(e->fitness_hi));
		json_object_set_new(o, "shapes", timings_json(r, e->t));
		json_array_append_new(results, o);
	}
	json_object_set_new(doc, "results", results);
	return dump_json(doc, out);
fail:
	json_decref(results);
	json_decref(doc);
	return -1;
}

/* -------------------------------------------------------------------- T4 */

/*
 * T4's invalidity for an outcome; NULL: not a result (a replay that had no
 * recording of the variant evaluated nothing).
 */
static const char *t4_invalidity(enum outcome o)
{
	switch (o) {
	case VARIANT_OK:
		return "correct";
	case REJECT_CONSTRAINT:
	case REJECT_SMEM:
	case REJECT_ALIGN:
	case REJECT_RESOURCES:
		return "constraints";
	case REJECT_COMPILE:
		return "compile";
	case REJECT_RUNTIME_FAULT:
		return "runtime";
	case REJECT_TIMEOUT:
		return "timeout";
	case REJECT_WRONG:
	case REJECT_RACE:
		return "correctness";
	case REJECT_UNMEASURED:
	case OUTCOME_COUNT:
		break;
	}
	return NULL;
}

struct t4_eval {
	long long variant_id;
	char *params, *outcome, *reason, *created_at;
	double fitness, fitness_lo, fitness_hi, compile_seconds;
};

struct t4_evals {
	struct t4_eval *v;
	size_t n, alloc;
};

static int t4_eval_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct t4_evals *es = ctx;
	struct t4_eval *e;

	ALLOC_GROW(es->v, es->n + 1, es->alloc);
	e = &es->v[es->n++];
	e->variant_id = inum(v[0]);
	e->params = sdup(v[1]);
	e->outcome = sdup(v[2]);
	e->reason = sdup(v[3]);
	e->fitness = num(v[4]);
	e->fitness_lo = num(v[5]);
	e->fitness_hi = num(v[6]);
	e->created_at = sdup(v[7]);
	e->compile_seconds = num(v[8]);
	return 0;
}

static void measurement(json_t *ms, const char *name, double v, const char *unit)
{
	if (isfinite(v))
		json_array_append_new(
		    ms, json_pack("{s:s, s:f, s:s}", "name", name, "value", v, "unit", unit));
}

/* Append the per-launch samples (a JSON array) to runtimes; 0 or error(). */
static int add_samples(json_t *runtimes, const char *samples, long long variant_id)
{
	json_t *a, *x;
	size_t i;

	if (!samples)
		return 0;
	a = json_loads(samples, JSON_DECODE_ANY, NULL);
	if (!json_is_array(a)) {
		json_decref(a);
		return error("variant %lld has malformed samples", variant_id);
	}
	json_array_foreach(a, i, x)
	{
		if (json_is_number(x))
			json_array_append_new(runtimes, json_real(json_number_value(x)));
	}
	json_decref(a);
	return 0;
}

/* One T4 result; *skip when the evaluation is no result (unmeasured, or never timed). */
static json_t *t4_result(struct db *db, const struct ranking *r, const struct t4_eval *e, int *skip)
{
	json_t *res, *cfg, *times, *runtimes, *ms;
	const char *inv;
	int o = outcome_parse(nn(e->outcome)), timed = isfinite(e->fitness);
	struct strbuf name = STRBUF_INIT;
	size_t i;

	*skip = 0;
	if (o < 0) {
		error("variant %lld has unknown outcome '%s'", e->variant_id, nn(e->outcome));
		return NULL;
	}
	if (!(inv = t4_invalidity((enum outcome)o))) {
		*skip = 1;
		return NULL;
	}
	if (!(cfg = params_json(e->params)))
		return NULL;
	runtimes = json_array();
	ms = json_array();
	for (i = 0; i < r->nshapes; i++) {
		struct export_timing t;
		char *samples;

		if (lookup_timing(db, e->variant_id, r->run.device, r->shapes[i].dims, &t,
		                  &samples) < 0 ||
		    add_samples(runtimes, samples, e->variant_id) < 0) {
			free(samples);
			json_decref(cfg);
			json_decref(runtimes);
			json_decref(ms);
			sb_release(&name);
			return NULL;
		}
		free(samples);
		if (!t.measured)
			continue;
		timed |= isfinite(t.median_us);
		t.speedup = r->base ? speedup(r->base[i].median_us, t.median_us) : NAN;
#define M(what, v, unit)                                                                           \
	do {                                                                                       \
		sb_reset(&name);                                                                   \
		sb_addf(&name, "%s.%s", r->shapes[i].name, what);                                  \
		measurement(ms, name.buf, v, unit);                                                \
	} while (0)
		M("median", t.median_us, "us");
		M("ci_lo", t.ci_lo_us, "us");
		M("ci_hi", t.ci_hi_us, "us");
		M("tflops", t.tflops, "TFLOP/s");
		M("speedup", t.speedup, "");
		M("rel_l2", t.rel_l2, "");
#undef M
	}
	sb_release(&name);
	/* A correct variant that was never timed (a run without a GPU) measured nothing. */
	if (o == VARIANT_OK && !timed) {
		json_decref(cfg);
		json_decref(runtimes);
		json_decref(ms);
		*skip = 1;
		return NULL;
	}
	measurement(ms, "fitness", e->fitness, "");
	measurement(ms, "fitness_lo", e->fitness_lo, "");
	measurement(ms, "fitness_hi", e->fitness_hi, "");

	times = json_object();
	json_object_set_new(times, "compilation_time",
	                    json_real(isfinite(e->compile_seconds) ? e->compile_seconds * 1e6 : 0));
	json_object_set_new(times, "runtimes", runtimes);
	res = json_object();
	json_object_set_new(res, "timestamp", jstr(e->created_at));
	json_object_set_new(res, "configuration", cfg);
	json_object_set_new(res, "objectives", json_pack("[s]", "fitness"));
	json_object_set_new(res, "times", times);
	json_object_set_new(res, "invalidity", json_string(inv));
	/* As Kernel Tuner writes it: 0 only when the output check failed. */
	json_object_set_new(res, "correctness", json_integer(!strcmp(inv, "correctness") ? 0 : 1));
	json_object_set_new(res, "measurements", ms);
	return res;
}

int export_t4(struct db *db, long long run_id, struct strbuf *out)
{
	struct ranking r;
	struct t4_evals es = {NULL, 0, 0};
	json_t *doc = NULL, *meta, *results;
	char id[32];
	size_t i;
	int rc = -1;

	/* The run, its suite and its baseline's timings: a ranking of none. */
	if (export_rank(db, run_id, 0, &r) < 0)
		return -1;
	snprintf(id, sizeof(id), "%lld", run_id);
	if (db_exec_callback(
		db,
		"SELECT x.variant_id, v.params, x.outcome, x.reason, x.fitness,"
		" x.fitness_lo, x.fitness_hi, x.created_at,"
		" (SELECT total(b.seconds) FROM builds b"
		" WHERE b.variant_id = x.variant_id)"
		" FROM evals x JOIN variants v ON v.id = x.variant_id"
		" WHERE x.run_id = ?1 ORDER BY x.generation, x.created_at, x.variant_id",
		t4_eval_row, &es, id, (const char *)NULL) < 0)
		goto out;

	doc = json_object();
	json_object_set_new(doc, "schema_version", json_string("1.1.0"));
	meta = json_object();
	json_object_set_new(meta, "compute_api", json_string("CUDA"));
	json_object_set_new(meta, "platform",
	                    json_sprintf("NVIDIA CUDA (driver %s, NVRTC %s, %s)", nn(r.run.driver),
	                                 nn(r.run.nvrtc), nn(r.run.arch)));
	json_object_set_new(meta, "device", jstr(r.run.device));
	json_object_set_new(meta, "autotuner", json_string("tuner"));
	json_object_set_new(meta, "autotuner_version", json_string(TUNER_VERSION));
	json_object_set_new(meta, "timestamp", jstr(r.run.started_at));
	json_object_set_new(meta, "timeunit", json_string("microseconds"));
	json_object_set_new(doc, "metadata", meta);
	results = json_array();
	json_object_set_new(doc, "results", results);
	for (i = 0; i < es.n; i++) {
		int skip;
		json_t *res = t4_result(db, &r, &es.v[i], &skip);

		if (!res && !skip)
			goto out;
		if (res)
			json_array_append_new(results, res);
	}
	rc = dump_json(doc, out);
	doc = NULL;
out:
	json_decref(doc);
	for (i = 0; i < es.n; i++) {
		free(es.v[i].params);
		free(es.v[i].outcome);
		free(es.v[i].reason);
		free(es.v[i].created_at);
	}
	free(es.v);
	ranking_release(&r);
	return rc;
}

/* ----------------------------------------------------------- for cmd-*.c */

int export_open(const char *db_path, long long run_id, struct db **db, long long *run)
{
	struct db_run r;
	struct stat st;

	*db = NULL;
	/* db_open() creates a missing file: reading out must not. */
	if (stat(db_path, &st) < 0) {
		if (errno == ENOENT)
			error("no database '%s' (run 'tuner run' first)", db_path);
		else
			error("cannot read database '%s': %s", db_path, strerror(errno));
		return 1;
	}
	if (db_open(db_path, db) < 0)
		return -1;
	if (!run)
		return 0;
	if (run_id <= 0) {
		if (db_run_latest(*db, &run_id) < 0)
			goto fail;
	} else {
		if (db_run_get(*db, run_id, &r) < 0)
			goto fail;
		db_run_release(&r);
	}
	*run = run_id;
	return 0;
fail:
	db_close(*db);
	*db = NULL;
	return -1;
}
