/* The export stage: a run's ranking read out of the database, written as a C header, JSON or T4. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

	for (i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].text);
	}
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
		const char *end = strchr(p, ','), *eq, *digits, *c;
		char *num_end;
		long long v;
		int is_int;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq || !is_ident(p, (size_t)(eq - p)) || eq + 1 == end)
			goto bad;
		for (c = eq + 1; c < end; c++) /* an integer, or a label (space_label_valid) */
			if (!is_alnum(*c) && !strchr("_.+-", *c))
				goto bad;
		digits = eq + 1 + (eq[1] == '-');
		errno = 0;
		v = strtoll(eq + 1, &num_end, 10);
		is_int = *digits >= '0' && *digits <= '9' && num_end == end;
		if (is_int && errno)
			goto bad;
		for (i = 0; i < out->n; i++)
			if (strlen(out->v[i].name) == (size_t)(eq - p) &&
			    !memcmp(out->v[i].name, p, (size_t)(eq - p)))
				goto bad;
		ALLOC_GROW(out->v, out->n + 1, alloc);
		out->v[out->n].name = xstrndup(p, (size_t)(eq - p));
		out->v[out->n].text = xstrndup(eq + 1, (size_t)(end - eq - 1));
		out->v[out->n].value = is_int ? v : 0;
		out->v[out->n].is_int = is_int;
		out->n++;
		if (!*end)
			return 0;
		p = end + 1;
	}
bad:
	export_params_release(out);
	return error("malformed params '%s' (expected NAME=VALUE,... without repeats)", text);
}

int export_label_is_number(const char *label)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(label, &end);
	/* strtod also reads "inf", "nan" and hex: a label is a number only in decimal digits */
	return *label && !*end && errno != ERANGE && isfinite(d) &&
	       strspn(label, "0123456789.+-eE") == strlen(label);
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

static const char *nn(const char *s)
{
	return s ? s : "";
}

static void timing_clear(struct export_timing *t)
{
	t->measured = 0;
	t->median_us = t->ci_lo_us = t->ci_hi_us = t->tflops = t->rel_l2 = t->speedup = NAN;
	t->gbps = NAN;
}

static double speedup(double base_us, double us)
{
	return isfinite(base_us) && isfinite(us) && base_us > 0 && us > 0 ? base_us / us : NAN;
}

/*
 * A variant's measurement on one shape of the run's device; speedup left NAN.
 * With m, the whole measurement (samples included) is the caller's to release.
 */
static int lookup_timing(struct db *db, long long variant_id, const char *device, const char *dims,
                         struct export_timing *t, struct db_measured *m)
{
	struct db_measured own, *got;
	struct db_conditions c;
	int r;

	memset(&own, 0, sizeof(own));
	got = m ? m : &own;
	r = db_measure_lookup(db, variant_id, device, dims, got);

	timing_clear(t);
	if (r < 0)
		return -1;
	if (r == 0)
		return 0;
	t->measured = 1;
	t->median_us = got->median_us;
	t->ci_lo_us = got->ci_lo_us;
	t->ci_hi_us = got->ci_hi_us;
	t->tflops = got->tflops;
	t->rel_l2 = got->rel_l2;
	r = db_measure_conditions(db, got->id, &c);
	if (r == 0)
		t->gbps = c.gbps;
	if (!m)
		db_measured_release(&own);
	return r;
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

int export_rank(struct db *db, long long run_id, size_t k, struct ranking *r)
{
	struct db_ranked base, *ranked = NULL;
	long long count;
	size_t i, n = 0;
	int found;

	memset(r, 0, sizeof(*r));
	r->elite_generation = -1;
	if (db_run_get(db, run_id, &r->run) < 0)
		return -1;
	if (export_shapes_parse(r->run.shapes, &r->shapes, &r->nshapes) < 0 ||
	    db_elite_final(db, run_id, &r->elite_generation, &count) < 0)
		goto fail;

	/* Speedups are against the run's baseline, on the same device and shapes. */
	if ((found = db_run_baseline(db, run_id, &base)) < 0)
		goto fail;
	if (found) {
		r->baseline_id = base.variant_id;
		r->baseline_hash = base.hash;
		r->baseline_params = base.params;
		r->base = xcalloc(r->nshapes + 1, sizeof(*r->base));
		if (lookup_timings(db, r, r->baseline_id, r->base) < 0)
			goto fail;
	}

	if (k && db_run_ranked(db, run_id, k, &ranked, &n) < 0)
		goto fail;
	r->v = xcalloc(n + 1, sizeof(*r->v));
	for (i = 0; i < n; i++) {
		struct export_entry *e = &r->v[r->n++];

		e->rank = (int)r->n;
		e->elite = ranked[i].elite;
		e->variant_id = ranked[i].variant_id;
		e->hash = ranked[i].hash;
		e->params = ranked[i].params;
		ranked[i].hash = ranked[i].params = NULL;
		e->fitness = ranked[i].fitness;
		e->fitness_lo = ranked[i].fitness_lo;
		e->fitness_hi = ranked[i].fitness_hi;
		e->t = xcalloc(r->nshapes + 1, sizeof(*e->t));
		if (lookup_timings(db, r, e->variant_id, e->t) < 0)
			goto fail;
	}
	db_ranked_free(ranked, n);
	return 0;
fail:
	db_ranked_free(ranked, n);
	ranking_release(r);
	return -1;
}

int export_rank_per_shape(struct db *db, struct ranking *r)
{
	size_t i;

	if (!r->best)
		r->best = xcalloc(r->nshapes + 1, sizeof(*r->best));
	for (i = 0; i < r->nshapes; i++) {
		struct export_best *b = &r->best[i];
		struct db_ranked best;
		int found =
		    db_best_on_shape(db, r->run.id, r->run.device, r->shapes[i].dims, &best);

		timing_clear(&b->t);
		if (found < 0)
			return -1;
		if (!found)
			continue;
		b->variant_id = best.variant_id;
		b->hash = best.hash;
		b->params = best.params;
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

/* Add "#define NAME value" to out, unless NAME is already taken: 0 or error(). */
static int add_define(struct export_names *m, struct strbuf *out, const char *name, long long value)
{
	if (export_names_add(m, name) < 0)
		return -1;
	/* Parenthesised when negative, so the macro is safe inside any expression. */
	if (value < 0)
		sb_addf(out, "#define %s (%lld)\n", name, value);
	else
		sb_addf(out, "#define %s %lld\n", name, value);
	return 0;
}

/* A label as C: a number as it is written (parenthesised when negative), anything else a string. */
static int add_define_label(struct export_names *m, struct strbuf *out, const char *name,
                            const char *label)
{
	if (export_names_add(m, name) < 0)
		return -1;
	if (export_label_is_number(label))
		sb_addf(out, *label == '-' ? "#define %s (%s)\n" : "#define %s %s\n", name, label);
	else
		sb_addf(out, "#define %s \"%s\"\n", name, label);
	return 0;
}

static int add_defines(struct export_names *m, struct strbuf *out, const char *prefix,
                       const char *params)
{
	struct export_params ps;
	size_t i;
	int rc = 0;

	if (export_params_parse(params, &ps) < 0)
		return -1;
	for (i = 0; rc == 0 && i < ps.n; i++) {
		char *name = xasprintf("%s%s", prefix, ps.v[i].name);

		if (ps.v[i].is_int)
			rc = add_define(m, out, name, ps.v[i].value);
		else
			rc = add_define_label(m, out, name, ps.v[i].text);
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
char *export_header_guard(const char *prefix, const struct export_header_opts *o)
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

void export_add_fixed(struct strbuf *sb, const char *fmt, double v)
{
	if (isfinite(v))
		sb_addf(sb, fmt, v);
	else
		sb_adds(sb, "-");
}

void export_comment_line(struct strbuf *c, const char *text)
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
	/* no trailing blanks in a generated file (a shape of no dims ends in its padding) */
	while (l.len && l.buf[l.len - 1] == ' ')
		l.buf[--l.len] = '\0';
	if (l.buf) /* NULL only when the format failed */
		export_comment_line(c, l.buf);
	sb_release(&l);
}

/* "fitness 1.250 [1.200, 1.300]" */
static void add_fitness(struct strbuf *sb, const struct export_entry *e)
{
	sb_adds(sb, "fitness ");
	export_add_fixed(sb, "%.3f", e->fitness);
	sb_adds(sb, " [");
	export_add_fixed(sb, "%.3f", e->fitness_lo);
	sb_adds(sb, ", ");
	export_add_fixed(sb, "%.3f", e->fitness_hi);
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
	export_comment_line(c, "");
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

		export_comment_line(c, "");
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
		export_comment_line(c, l.buf);
		for (s = 0; s < r->nshapes; s++) {
			sb_reset(&l);
			sb_addf(&l, "  %-*s  median ", w, r->shapes[s].name);
			export_add_fixed(&l, "%.3f us", e->t[s].median_us);
			sb_adds(&l, ", speedup ");
			export_add_fixed(&l, "%.3f", e->t[s].speedup);
			export_comment_line(c, l.buf);
		}
	}

	export_comment_line(c, "");
	comment_linef(c, "Macros: rank 1 is %sNAME for each param NAME; rank r > 1 is %sR<r>_NAME.",
	              prefix, prefix);
	if (o->per_shape) {
		comment_linef(c, "%s<SHAPE>_NAME is the correct variant with the lowest median on",
		              prefix);
		export_comment_line(
		    c, "that shape (its name upper-cased, bytes other than letters and digits "
		       "made _).");
	}
	comment_linef(c, "%sRANKS is the number of ranks defined.", prefix);
	sb_adds(c, " */\n");
	sb_release(&l);
}

/* The macros of each rank and shape, and the build section; names taken go into m. */
static int header_defs(const struct ranking *r, const struct export_header_opts *o, int mode,
                       const char *prefix, struct export_names *m, struct strbuf *defs)
{
	struct strbuf l = STRBUF_INIT;
	char *ranks;
	size_t i;
	int rc = -1;

	if (!r->n) {
		char why[128];

		error("%s: nothing to export", export_empty_reason(r, why, sizeof(why)));
		goto out;
	}
	if (mode != EXPORT_RANKS && !r->best)
		BUG("export_header: per_shape without export_rank_per_shape()");

	for (i = 0; i < r->n; i++) {
		const struct export_entry *e = &r->v[i];
		char *p = e->rank == 1 ? xstrdup(prefix) : xasprintf("%sR%d_", prefix, e->rank);

		sb_reset(&l);
		sb_addf(&l, "rank %d: variant %lld, ", e->rank, e->variant_id);
		add_fitness(&l, e);
		sb_adds(defs, "\n/* ");
		export_comment_text(defs, l.buf);
		sb_adds(defs, " */\n");
		rc = add_defines(m, defs, p, nn(e->params));
		free(p);
		if (rc < 0)
			goto out;
	}
	for (i = 0; mode != EXPORT_RANKS && i < r->nshapes; i++) {
		const struct export_best *b = &r->best[i];
		char *id, *p;

		sb_reset(&l);
		sb_addf(&l, "shape %s (%s): ", r->shapes[i].name, r->shapes[i].dims);
		if (!b->variant_id) {
			sb_adds(&l, "no correct timed variant, nothing defined");
		} else {
			sb_addf(&l, "variant %lld, median ", b->variant_id);
			export_add_fixed(&l, "%.3f us", b->t.median_us);
			sb_adds(&l, ", speedup ");
			export_add_fixed(&l, "%.3f", b->t.speedup);
		}
		sb_adds(defs, "\n/* ");
		export_comment_text(defs, l.buf);
		sb_adds(defs, " */\n");
		if (!b->variant_id)
			continue;
		id = export_ident(r->shapes[i].name);
		p = xasprintf("%s%s_", prefix, id);
		rc = add_defines(m, defs, p, nn(b->params));
		free(id);
		free(p);
		if (rc < 0)
			goto out;
	}

	/* A #define, so that #if PREFIX_RANKS > 1 means what it says. */
	ranks = xasprintf("%sRANKS", prefix);
	sb_adds(defs, "\n");
	rc = add_define(m, defs, ranks, (long long)r->n);
	free(ranks);
	if (rc < 0 || (o->cfg && export_build(r, o->cfg, mode, m, defs) < 0)) {
		rc = -1;
		goto out;
	}
	/* ISO C has no empty translation unit: without the build section, a declaration. */
	if (!o->cfg) {
		ranks = xasprintf("%sNOT_EMPTY", prefix);
		rc = export_names_add(m, ranks);
		sb_addf(defs, "\nenum { %s = 1 };\n", ranks);
		free(ranks);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	sb_release(&l);
	return rc;
}

int export_header(const struct ranking *r, const struct export_header_opts *o, struct strbuf *out)
{
	char *prefix = export_prefix(r->run.template_name), *guard = export_header_guard(prefix, o);
	struct strbuf defs = STRBUF_INIT;
	struct export_names m = {NULL, 0, 0};
	int rc = -1;

	/* The guard is a macro too. */
	export_names_add(&m, guard);
	if (header_defs(r, o, o->per_shape ? EXPORT_PER_SHAPE : EXPORT_RANKS, prefix, &m, &defs) <
	    0)
		goto out;
	header_comment(r, o, prefix, out);
	sb_addf(out, "#ifndef %s\n#define %s\n", guard, guard);
	sb_add(out, defs.buf, defs.len);
	sb_addf(out, "\n#endif /* %s */\n", guard);
	rc = 0;
out:
	export_names_release(&m);
	sb_release(&defs);
	free(guard);
	free(prefix);
	return rc;
}

int export_header_section(const struct ranking *r, const struct export_header_opts *o,
                          struct export_names *names, struct strbuf *out)
{
	char *prefix = export_prefix(r->run.template_name);
	struct strbuf defs = STRBUF_INIT;
	int rc = header_defs(r, o, EXPORT_SECTION, prefix, names, &defs);

	if (rc == 0) {
		sb_addf(out, "\n/* ============================================ %s */\n",
		        nn(r->run.template_name));
		header_comment(r, o, prefix, out);
		sb_add(out, defs.buf, defs.len);
	}
	sb_release(&defs);
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

/* {"TILE": 32, ...}, or NULL after error(). */
static json_t *params_json(const char *params)
{
	struct export_params ps;
	json_t *o;
	size_t i;

	if (export_params_parse(nn(params), &ps) < 0)
		return NULL;
	o = json_object();
	for (i = 0; i < ps.n; i++) {
		const struct export_param *v = &ps.v[i];

		json_object_set_new(o, v->name,
		                    v->is_int ? json_integer(v->value)
		                    : export_label_is_number(v->text)
		                        ? json_real(strtod(v->text, NULL))
		                        : json_string(v->text));
	}
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
		json_object_set_new(s, "gbps", jnum(t[i].gbps));
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
 * The T4 results format (schemas/T4.json, from AutoTuningAssociation/
 * autotuning_methodology), written so that its reference runner reads it:
 * one result per evaluated configuration; the objective, fitness, is a
 * measurement of every result but a 'constraints' one (the runner skips
 * those), with Kernel Tuner's error strings as the value of an invalid one;
 * its direction is stated in the metadata. times.runtimes holds one median
 * per shape, in the order metadata.shapes lists them, and times.shape_runtimes
 * every launch's time per shape. All times are in microseconds.
 */

/* T4's invalidity for an outcome; NULL: not a result (a replay had no recording of it). */
static const char *t4_invalidity(enum outcome o)
{
	switch (o) {
	case VARIANT_OK:
		return "correct";
	case REJECT_CONSTRAINT:
	case REJECT_SMEM:
	case REJECT_ALIGN:
		return "constraints"; /* decided before compiling, from the config alone */
	case REJECT_COMPILE:
	case REJECT_RESOURCES:
		return "compile"; /* what the compiler made: failed, or spilled beyond the limit */
	case REJECT_RUNTIME_FAULT:
		return "runtime";
	case REJECT_TIMEOUT:
		return "timeout";
	case REJECT_WRONG:
	case REJECT_RACE:
		return "correctness";
	case REJECT_UNMEASURED:
	case REJECT_SLOWER: /* raced out: correct, but timed on some shapes only */
	case OUTCOME_COUNT:
		break;
	}
	return NULL;
}

/* The value an invalid result's objective takes, as Kernel Tuner writes it. */
static const char *t4_invalid_value(const char *invalidity)
{
	if (!strcmp(invalidity, "compile"))
		return "CompilationFailedConfig";
	if (!strcmp(invalidity, "runtime") || !strcmp(invalidity, "timeout"))
		return "RuntimeFailedConfig";
	return "InvalidConfig";
}

static void measurement(json_t *ms, const char *name, double v, const char *unit)
{
	if (isfinite(v))
		json_array_append_new(
		    ms, json_pack("{s:s, s:f, s:s}", "name", name, "value", v, "unit", unit));
}

static void measurement_str(json_t *ms, const char *name, const char *v, const char *unit)
{
	json_array_append_new(ms,
	                      json_pack("{s:s, s:s, s:s}", "name", name, "value", v, "unit", unit));
}

/*
 * compilation_data: each plain build (one per specialisation of the suite)
 * and their worst case; the seconds of the sanitize builds go to *validation.
 * NULL when nothing was compiled.
 */
static json_t *t4_compilation(struct db *db, long long variant_id, double *compile_us,
                              double *validation_us, int *rc)
{
	struct db_build_row *b;
	json_t *builds, *cd;
	size_t n, i;
	int regs = 0, smem = 0, spills = 0, plain = 0;

	*compile_us = *validation_us = 0;
	if ((*rc = db_variant_builds(db, variant_id, &b, &n)) < 0)
		return NULL;
	builds = json_array();
	for (i = 0; i < n; i++) {
		if (b[i].sanitize) {
			*validation_us += b[i].seconds * 1e6;
			continue;
		}
		plain++;
		*compile_us += b[i].seconds * 1e6;
		if (b[i].regs > regs)
			regs = b[i].regs;
		if (b[i].static_smem > smem)
			smem = b[i].static_smem;
		if (b[i].spill_stores + b[i].spill_loads > spills)
			spills = b[i].spill_stores + b[i].spill_loads;
		json_array_append_new(
		    builds, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:b}", "spec",
		                      nn(b[i].spec), "outcome", nn(b[i].outcome), "registers",
		                      b[i].regs, "static_shared_memory", b[i].static_smem,
		                      "spill_stores", b[i].spill_stores, "spill_loads",
		                      b[i].spill_loads, "stack_frame", b[i].stack_frame,
		                      "compile_time", b[i].seconds * 1e6, "cached", b[i].cached));
	}
	db_build_rows_free(b, n);
	if (!plain) {
		json_decref(builds);
		return NULL;
	}
	cd = json_pack("{s:i, s:i, s:i, s:f}", "registers", regs, "static_shared_memory", smem,
	               "spill_bytes", spills, "compile_time", *compile_us);
	json_object_set_new(cd, "builds", builds);
	return cd;
}

/* One T4 result; *skip when the evaluation is no result (unmeasured, or never timed). */
static json_t *t4_result(struct db *db, const struct ranking *r, const struct db_run_eval *e,
                         int *skip)
{
	json_t *res, *cfg, *times, *runtimes, *shape_runtimes, *ms, *cd;
	const char *inv = t4_invalidity(e->outcome);
	struct strbuf name = STRBUF_INIT;
	double compile_us, validation_us, total_us = 0;
	int timed = isfinite(e->fitness), all_timed = r->nshapes > 0, rc;
	size_t i, j;

	*skip = 0;
	if (!inv) {
		*skip = 1;
		return NULL;
	}
	if (!(cfg = params_json(e->params)))
		return NULL;
	runtimes = json_array();
	shape_runtimes = json_object();
	ms = json_array();
	for (i = 0; i < r->nshapes; i++) {
		struct export_timing t;
		struct db_measured m;

		memset(&m, 0, sizeof(m));
		if (lookup_timing(db, e->variant_id, r->run.device, r->shapes[i].dims, &t, &m) <
		    0) {
			json_decref(cfg);
			json_decref(runtimes);
			json_decref(shape_runtimes);
			json_decref(ms);
			sb_release(&name);
			return NULL;
		}
		if (t.measured && isfinite(t.median_us)) {
			json_t *samples = json_array();

			for (j = 0; j < m.nsamples; j++)
				if (isfinite(m.samples[j]))
					json_array_append_new(samples, json_real(m.samples[j]));
			json_object_set_new(shape_runtimes, r->shapes[i].name, samples);
			json_array_append_new(runtimes, json_real(t.median_us));
			total_us += t.median_us;
			timed = 1;
		} else {
			all_timed = 0;
		}
		db_measured_release(&m);
		if (!t.measured)
			continue;
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
	if (e->outcome == VARIANT_OK && !timed) {
		json_decref(cfg);
		json_decref(runtimes);
		json_decref(shape_runtimes);
		json_decref(ms);
		*skip = 1;
		return NULL;
	}
	if (e->outcome == VARIANT_OK && isfinite(e->fitness)) {
		measurement(ms, "fitness", e->fitness, "");
		measurement(ms, "fitness_lo", e->fitness_lo, "");
		measurement(ms, "fitness_hi", e->fitness_hi, "");
	} else {
		/* Present, and invalid: the reference runner asks every result for the objective.
		 */
		measurement_str(ms, "fitness", t4_invalid_value(inv), "");
	}
	if (e->outcome == VARIANT_OK && all_timed)
		measurement(ms, "time", total_us, "us");
	else
		measurement_str(ms, "time", t4_invalid_value(inv), "us");
	measurement_str(ms, "verdict", outcome_name(e->outcome), "");
	if (e->reason && *e->reason)
		measurement_str(ms, "reason", e->reason, "");

	cd = t4_compilation(db, e->variant_id, &compile_us, &validation_us, &rc);
	if (rc < 0) {
		json_decref(cfg);
		json_decref(runtimes);
		json_decref(shape_runtimes);
		json_decref(ms);
		return NULL;
	}
	times = json_object();
	json_object_set_new(times, "compilation_time", json_real(compile_us));
	json_object_set_new(times, "runtimes", runtimes);
	json_object_set_new(times, "shape_runtimes", shape_runtimes);
	if (validation_us > 0)
		json_object_set_new(times, "validation", json_real(validation_us));
	res = json_object();
	json_object_set_new(res, "timestamp", jstr(e->created_at));
	json_object_set_new(res, "configuration", cfg);
	json_object_set_new(res, "objectives", json_pack("[s]", "fitness"));
	json_object_set_new(res, "times", times);
	json_object_set_new(res, "invalidity", json_string(inv));
	/* As Kernel Tuner writes it: 0 only when the output check failed. */
	json_object_set_new(res, "correctness", json_integer(!strcmp(inv, "correctness") ? 0 : 1));
	json_object_set_new(res, "measurements", ms);
	if (cd)
		json_object_set_new(res, "compilation_data", cd);
	return res;
}

static json_t *t4_metadata(const struct ranking *r)
{
	json_t *meta = json_object(), *shapes = json_array(), *objective;
	size_t i;

	json_object_set_new(meta, "compute_api", json_string("CUDA"));
	json_object_set_new(meta, "platform",
	                    json_sprintf("NVIDIA CUDA (driver %s, NVRTC %s, %s)", nn(r->run.driver),
	                                 nn(r->run.nvrtc), nn(r->run.arch)));
	json_object_set_new(meta, "device", jstr(r->run.device));
	json_object_set_new(meta, "autotuner", json_string("tuner"));
	json_object_set_new(meta, "autotuner_version", json_string(TUNER_VERSION));
	json_object_set_new(meta, "timestamp", jstr(r->run.started_at));
	json_object_set_new(meta, "timeunit", json_string("microseconds"));
	json_object_set_new(meta, "run", json_integer(r->run.id));
	json_object_set_new(meta, "template", jstr(r->run.template_name));
	json_object_set_new(meta, "template_hash", jstr(r->run.template_hash));
	for (i = 0; i < r->nshapes; i++)
		json_array_append_new(shapes, json_pack("{s:s, s:s}", "name", r->shapes[i].name,
		                                        "dims", r->shapes[i].dims));
	json_object_set_new(meta, "shapes", shapes);
	objective = json_pack(
	    "{s:s, s:s, s:s}", "name", "fitness", "direction", "maximize", "definition",
	    "geometric mean over the shapes of the baseline's median time over this variant's "
	    "(the speedup over the baseline); 'time', the sum of the per-shape medians in "
	    "microseconds, is to be minimized");
	if (r->baseline_id)
		json_object_set_new(objective, "baseline",
		                    json_pack("{s:I, s:s}", "variant_id",
		                              (json_int_t)r->baseline_id, "params",
		                              nn(r->baseline_params)));
	json_object_set_new(meta, "objective", objective);
	return meta;
}

int export_t4(struct db *db, long long run_id, struct strbuf *out)
{
	struct ranking r;
	struct db_run_eval *es = NULL;
	json_t *doc = NULL, *results;
	size_t i, n = 0;
	int rc = -1;

	/* The run, its suite and its baseline's timings: a ranking of none. */
	if (export_rank(db, run_id, 0, &r) < 0)
		return -1;
	if (db_run_evals(db, run_id, &es, &n) < 0)
		goto out;

	doc = json_object();
	json_object_set_new(doc, "schema_version", json_string("1.1.0"));
	json_object_set_new(doc, "metadata", t4_metadata(&r));
	results = json_array();
	json_object_set_new(doc, "results", results);
	for (i = 0; i < n; i++) {
		int skip;
		json_t *res = t4_result(db, &r, &es[i], &skip);

		if (!res && !skip)
			goto out;
		if (res)
			json_array_append_new(results, res);
	}
	rc = dump_json(doc, out);
	doc = NULL;
out:
	json_decref(doc);
	db_run_evals_free(es, n);
	ranking_release(&r);
	return rc;
}

/* ----------------------------------------------------------- for cmd-*.c */

int export_open(const char *db_path, long long run_id, struct db **db, long long *run)
{
	struct db_run r;
	struct stat st;
	int found;

	*db = NULL;
	/* Reading out never creates a database. */
	if (stat(db_path, &st) < 0) {
		if (errno == ENOENT)
			error("no database '%s' (run 'tuner run' first)", db_path);
		else
			error("cannot read database '%s': %s", db_path, strerror(errno));
		return 1;
	}
	if (db_open_read(db_path, db) < 0)
		return -1;
	if (!run)
		return 0;
	if (run_id > 0) {
		if (db_run_get(*db, run_id, &r) < 0)
			goto fail;
		db_run_release(&r);
	} else if ((found = db_run_latest_with(*db, "done", &run_id)) <= 0) {
		if (!found)
			error("database '%s' has no completed run", db_path);
		goto fail;
	}
	*run = run_id;
	return 0;
fail:
	db_close(*db);
	*db = NULL;
	return -1;
}

/* The same file (or the database's -wal or -shm beside it). */
static int same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int export_check_target(const char *path, const char *db_path)
{
	struct stat st;
	char *aux;
	int same;

	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return error("cannot write '%s': %s", path, strerror(errno));
	}
	if (S_ISDIR(st.st_mode))
		return error("cannot write '%s': it is a directory (give a file name)", path);
	if (!S_ISREG(st.st_mode))
		return error("will not replace '%s': it is not a regular file (a device, FIFO or "
		             "socket)",
		             path);
	same = db_path && same_file(&st, db_path);
	if (!same && db_path) {
		aux = xasprintf("%s-wal", db_path);
		same = same_file(&st, aux);
		free(aux);
		aux = xasprintf("%s-shm", db_path);
		same |= same_file(&st, aux);
		free(aux);
	}
	if (same)
		return error("will not replace '%s': it is the database the export reads", path);
	return 0;
}

int export_write_file(const char *path, const char *db_path, const void *data, size_t len)
{
	const char *p = data, *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char *dir, *tmp;
	mode_t mask;
	int fd, dfd;

	if (export_check_target(path, db_path) < 0)
		return -1;
	dir = path_dirname(path);
	/* An exclusive, unpredictable name in the target's directory, so rename() is atomic. */
	tmp = xasprintf("%s/.%s.XXXXXX", dir, name);
	fd = mkstemp(tmp);
	if (fd < 0) {
		error("cannot write '%s': %s", path, strerror(errno));
		goto fail;
	}
	/* mkstemp makes it 0600; the file gets what a plain create would give it. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0)
		goto io;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto io;
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0)
		goto io;
	if (close(fd) < 0) {
		fd = -1;
		goto io;
	}
	fd = -1;
	/* Checked again just before: the target may have changed while the export ran. */
	if (export_check_target(path, db_path) < 0)
		goto drop;
	if (rename(tmp, path) < 0)
		goto io;
	/* The rename itself reaches the disk with its directory. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(tmp);
	free(dir);
	return 0;
io:
	error("cannot write '%s': %s", path, strerror(errno));
drop:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
fail:
	free(tmp);
	free(dir);
	return -1;
}
