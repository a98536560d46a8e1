/* The report stage: a run read out of the database as Markdown and self-contained HTML, with plots
 * by gnuplot. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/report.h"

/* How many ranks of the elite the report lists. */
#define REPORT_ELITE 3

/* ------------------------------------------------------------ pure parts */

void report_base64(struct strbuf *sb, const unsigned char *d, size_t len)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char q[4];
	size_t i;

	sb_grow(sb, (len + 2) / 3 * 4);
	for (i = 0; i + 2 < len; i += 3) {
		q[0] = abc[d[i] >> 2];
		q[1] = abc[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
		q[2] = abc[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
		q[3] = abc[d[i + 2] & 63];
		sb_add(sb, q, 4);
	}
	if (i < len) {
		unsigned b1 = i + 1 < len ? d[i + 1] : 0;

		q[0] = abc[d[i] >> 2];
		q[1] = abc[((d[i] & 3) << 4) | (b1 >> 4)];
		q[2] = i + 1 < len ? abc[(b1 & 15) << 2] : '=';
		q[3] = '=';
		sb_add(sb, q, 4);
	}
}

int report_png_valid(const unsigned char *d, size_t len)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	static const unsigned char iend[12] = {0,   0,   0,    0,    'I',  'E',
	                                       'N', 'D', 0xae, 0x42, 0x60, 0x82};

	return len >= 8 + 25 + 12 && !memcmp(d, sig, 8) && !memcmp(d + 12, "IHDR", 4) &&
	       !memcmp(d + len - 12, iend, 12);
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

void report_expected_best(double base, const double *pool, size_t npool, double *out, size_t nout)
{
	double *w = xcalloc(npool + 1, sizeof(*w));
	size_t i, k;

	if (nout > npool + 1)
		BUG("report_expected_best: %zu evaluations of a pool of %zu", nout, npool);
	/* A draw without fitness leaves the best where the baseline put it. */
	for (i = 0; i < npool; i++)
		w[i] = isfinite(pool[i]) && pool[i] > base ? pool[i] : base;
	qsort(w, npool, sizeof(*w), cmp_desc);
	for (k = 0; k < nout; k++) {
		/* k draws: p = C(npool - 1 - i, k - 1) / C(npool, k), from p(0) = k / npool on. */
		double p, e = 0;

		if (!k) {
			out[0] = base;
			continue;
		}
		p = (double)k / (double)npool;
		/* p falls with i, so once it is negligible the rest of the sum is too. */
		for (i = 0; i + k <= npool && p > 1e-18; i++) {
			e += p * w[i];
			p *= (double)(npool - i - k) / (double)(npool - i - 1 ? npool - i - 1 : 1);
		}
		out[k] = e;
	}
	free(w);
}

void report_libraries_release(struct report_libraries *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].shape);
		free(l->v[i].library);
		free(l->v[i].dims);
		free(l->v[i].device);
		free(l->v[i].method);
		free(l->v[i].source);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* A name for a table and a plot key: printable, not empty, not too long. */
static int printable(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (!n || n > max)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* An optional string member: 0 (absent or set), or -1 when it is not a string. */
static int opt_string(json_t *o, const char *key, char **out)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v) || !printable(json_string_value(v), 200))
		return -1;
	*out = xstrdup(json_string_value(v));
	return 0;
}

int report_library_parse(const char *path, const char *text, struct report_libraries *out)
{
	static const char *const keys[] = {"shape", "library", "median_us",
	                                   "dims",  "device",  "method"};
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr), *item;
	size_t i, start = out->n;

	if (!root)
		return error("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
	if (!json_is_array(root)) {
		json_decref(root);
		return error(
		    "%s: not a JSON array of {\"shape\", \"library\", \"median_us\"} objects",
		    path);
	}
	json_array_foreach(root, i, item)
	{
		json_t *shape = json_object_get(item, "shape"),
		       *lib = json_object_get(item, "library"),
		       *us = json_object_get(item, "median_us"), *val;
		struct report_library *l;
		const char *key;
		size_t j;

		if (!json_is_object(item)) {
			error("%s: entry %zu is not an object", path, i + 1);
			goto fail;
		}
		json_object_foreach(item, key, val)
		{
			for (j = 0; j < ARRAY_SIZE(keys) && strcmp(key, keys[j]); j++)
				;
			if (j == ARRAY_SIZE(keys)) {
				error("%s: entry %zu: unknown key '%s' (shape, library, median_us, "
				      "dims, device, method)",
				      path, i + 1, key);
				goto fail;
			}
		}
		if (!json_is_string(shape) || !printable(json_string_value(shape), 200)) {
			error("%s: entry %zu: 'shape' must be a shape's name", path, i + 1);
			goto fail;
		}
		if (!json_is_string(lib) || !printable(json_string_value(lib), 64)) {
			error("%s: entry %zu: 'library' must be a name of 1 to 64 printable "
			      "characters",
			      path, i + 1);
			goto fail;
		}
		if (!json_is_number(us) || !isfinite(json_number_value(us)) ||
		    json_number_value(us) <= 0) {
			error(
			    "%s: entry %zu: 'median_us' must be a positive number of microseconds",
			    path, i + 1);
			goto fail;
		}
		ALLOC_GROW(out->v, out->n + 1, out->alloc);
		l = &out->v[out->n];
		memset(l, 0, sizeof(*l));
		if (opt_string(item, "dims", &l->dims) < 0 ||
		    opt_string(item, "device", &l->device) < 0 ||
		    opt_string(item, "method", &l->method) < 0) {
			free(l->dims);
			free(l->device);
			error("%s: entry %zu: 'dims', 'device' and 'method' must be strings", path,
			      i + 1);
			goto fail;
		}
		l->shape = xstrdup(json_string_value(shape));
		l->library = xstrdup(json_string_value(lib));
		l->median_us = json_number_value(us);
		l->source = xstrdup(path);
		out->n++;
	}
	json_decref(root);
	return 0;
fail:
	json_decref(root);
	/* Keep what earlier files added, drop this one's entries. */
	while (out->n > start) {
		struct report_library *l = &out->v[--out->n];

		free(l->shape);
		free(l->library);
		free(l->dims);
		free(l->device);
		free(l->method);
		free(l->source);
	}
	return -1;
}

/* -------------------------------------------------------------- gathering */

static void curve_release(struct report_curve *c)
{
	free(c->best);
	free(c->seconds);
	memset(c, 0, sizeof(*c));
}

/* Best so far over evaluations in the order given. */
static void curve_from(const struct db_eval_point *e, size_t n, struct report_curve *c)
{
	double best = NAN;
	size_t i;

	c->n = n;
	c->best = xcalloc(n + 1, sizeof(*c->best));
	c->seconds = xcalloc(n + 1, sizeof(*c->seconds));
	for (i = 0; i < n; i++) {
		if (isfinite(e[i].fitness) && !(e[i].fitness <= best))
			best = e[i].fitness;
		c->best[i] = best;
		c->seconds[i] = e[i].seconds;
	}
}

static int random_run_baseline(struct db *db, long long run_id, struct report_baseline *b)
{
	struct db_eval_point *e;
	size_t n;

	if (db_run_eval_points(db, run_id, &e, &n) < 0)
		return -1;
	b->present = 1;
	b->run_id = run_id;
	b->db = xstrdup(db_path(db));
	curve_from(e, n, &b->curve);
	free(e);
	return 0;
}

/* The expectation from exhaustive run_id in db, over up to nout evaluations. */
static int expected_baseline(struct db *db, long long run_id, size_t nout, struct report *r)
{
	struct report_baseline *b = &r->expected;
	struct db_eval_point *e;
	struct db_ranked br;
	long long base_id = 0;
	double base = NAN, *pool;
	size_t n, i, npool = 0;
	int rc = db_run_baseline(db, run_id, &br);

	if (rc > 0)
		base_id = br.variant_id;
	db_ranked_release(&br);
	if (rc < 0 || db_run_eval_points(db, run_id, &e, &n) < 0)
		return -1;
	pool = xcalloc(n + 1, sizeof(*pool));
	for (i = 0; i < n; i++) {
		if (rc && e[i].variant_id == base_id)
			base = e[i].fitness;
		else if (e[i].outcome != REJECT_CONSTRAINT) /* random search never proposes those */
			pool[npool++] = e[i].fitness;
	}
	free(e);
	if (!isfinite(base)) {
		r->baseline_note = xasprintf("exhaustive run %lld in '%s' has no timed baseline to "
		                             "start random search from",
		                             run_id, db_path(db));
		free(pool);
		return 0;
	}
	if (nout > npool + 1)
		nout = npool + 1;
	b->present = 1;
	b->run_id = run_id;
	b->db = xstrdup(db_path(db));
	b->pool = npool;
	b->base = base;
	b->curve.n = nout;
	b->curve.best = xcalloc(nout + 1, sizeof(double));
	report_expected_best(base, pool, npool, b->curve.best, nout);
	free(pool);
	return 0;
}

/*
 * The expectation from a finished exhaustive run of the run's space in another
 * database (opened read-only): 1 found, 0 none, -1 error().
 */
static int expected_from(const char *path, size_t nout, struct report *r)
{
	struct db_run like = r->rank.run;
	struct db *other;
	long long id;
	int rc;

	if (db_open_readonly(path, &other) < 0)
		return -1;
	like.id = 0; /* another file's run ids are no relation */
	rc = db_run_find_like(other, &like, "exhaustive", 1, &id);
	if (rc > 0 && expected_baseline(other, id, nout, r) < 0)
		rc = -1;
	db_close(other);
	return rc;
}

static int find_baselines(struct db *db, const char *sweep, struct report *r)
{
	const struct db_run *run = &r->rank.run;
	size_t nout = r->nevals ? r->nevals : 1;
	long long id = 0;
	int rc;

	if (strcmp(run->strategy, "random")) {
		rc = db_run_find_like(db, run, "random", 0, &id);
		if (rc < 0 || (rc && random_run_baseline(db, id, &r->random_run) < 0))
			return -1;
	}
	/* The expectation: from the sweep named, else the run itself when it swept the whole
	 * space, else another exhaustive run here, else the recording a replay answered from. */
	if (sweep) {
		rc = expected_from(sweep, nout, r);
		if (!rc)
			error("'%s' holds no finished exhaustive run of the space of run %lld "
			      "(template "
			      "hash, arch, device and shapes)",
			      sweep, run->id);
		return rc > 0 ? 0 : -1;
	}
	if (!strcmp(run->strategy, "exhaustive") && !strcmp(run->status, "done")) {
		id = run->id;
		rc = 1;
	} else {
		rc = db_run_find_like(db, run, "exhaustive", 1, &id);
	}
	if (rc)
		return rc < 0 ? -1 : expected_baseline(db, id, nout, r);
	if (run->replay_of && access(run->replay_of, R_OK) < 0) {
		r->baseline_note =
		    xasprintf("the recording '%s' this run replayed cannot be read: %s",
		              run->replay_of, strerror(errno));
		return 0;
	}
	if (run->replay_of && (rc = expected_from(run->replay_of, nout, r)) != 0)
		return rc < 0 ? -1 : 0;
	if (!r->expected.present && !r->baseline_note)
		r->baseline_note = xasprintf("no finished exhaustive run of the same space "
		                             "(template, arch, device and shapes) "
		                             "in the database%s%s%s (--sweep names one)",
		                             run->replay_of ? ", nor in '" : "",
		                             run->replay_of ? run->replay_of : "",
		                             run->replay_of ? "' that this run replayed" : "");
	return 0;
}

static void verdicts_per_generation(struct report *r)
{
	size_t i, ngen;

	r->first_generation = r->nevals ? r->evals[0].generation : 0;
	r->last_generation = r->first_generation - 1;
	for (i = 0; i < r->nevals; i++) {
		if (r->evals[i].generation < r->first_generation)
			r->first_generation = r->evals[i].generation;
		if (r->evals[i].generation > r->last_generation)
			r->last_generation = r->evals[i].generation;
	}
	ngen = (size_t)(r->last_generation - r->first_generation + 1);
	r->gen_outcomes = xcalloc(ngen * OUTCOME_COUNT + 1, sizeof(*r->gen_outcomes));
	for (i = 0; i < r->nevals; i++) {
		const struct db_eval_point *e = &r->evals[i];

		r->outcomes[e->outcome]++;
		r->gen_outcomes[(size_t)(e->generation - r->first_generation) * OUTCOME_COUNT +
		                e->outcome]++;
	}
}

static int winner_timing(struct db *db, struct report *r)
{
	const struct ranking *k = &r->rank;
	size_t i;

	r->timing = xcalloc(k->nshapes + 1, sizeof(*r->timing));
	r->timed = xcalloc(k->nshapes + 1, sizeof(*r->timed));
	for (i = 0; k->n && i < k->nshapes; i++) {
		int rc = db_measure_lookup(db, k->v[0].variant_id, k->run.device, k->shapes[i].dims,
		                           &r->timing[i]);

		if (rc < 0)
			return -1;
		r->timed[i] = rc;
	}
	return 0;
}

static size_t shape_index(const struct ranking *k, const char *name)
{
	size_t i;

	for (i = 0; i < k->nshapes && strcmp(k->shapes[i].name, name); i++)
		;
	return i;
}

/* Match the imported timings to the suite; 0 or error(). */
static int match_libraries(struct report *r)
{
	const struct ranking *k = &r->rank;
	const struct report_libraries *lib = r->lib;
	size_t i, j, s;

	r->libs = xcalloc(lib->n + 1, sizeof(*r->libs));
	r->lib_method = xcalloc(lib->n + 1, sizeof(*r->lib_method));
	for (i = 0; i < lib->n; i++) {
		for (j = 0; j < r->nlibs && strcmp(r->libs[j], lib->v[i].library); j++)
			;
		if (j == r->nlibs)
			r->libs[r->nlibs++] = xstrdup(lib->v[i].library);
	}
	r->lib_us = xcalloc(k->nshapes * r->nlibs + 1, sizeof(*r->lib_us));
	for (i = 0; i < k->nshapes * r->nlibs; i++)
		r->lib_us[i] = NAN;
	for (i = 0; i < lib->n; i++) {
		const struct report_library *l = &lib->v[i];

		s = shape_index(k, l->shape);
		if (s == k->nshapes)
			return error("%s: shape '%s' is not in the suite of run %lld", l->source,
			             l->shape, k->run.id);
		if (l->dims && strcmp(l->dims, k->shapes[s].dims))
			return error("%s: shape '%s' is %s in run %lld, the file says %s",
			             l->source, l->shape, k->shapes[s].dims, k->run.id, l->dims);
		for (j = 0; strcmp(r->libs[j], l->library); j++)
			;
		if (!isnan(r->lib_us[s * r->nlibs + j]))
			return error("%s: library '%s' is given twice for shape '%s'", l->source,
			             l->library, l->shape);
		r->lib_us[s * r->nlibs + j] = l->median_us;
		if (l->method && !r->lib_method[j])
			r->lib_method[j] = xstrdup(l->method);
		if (l->device && strcmp(l->device, k->run.device) && !r->lib_note)
			r->lib_note = xasprintf("%s: '%s' was timed on %s, the run on %s",
			                        l->source, l->library, l->device, k->run.device);
	}
	return 0;
}

int report_gather(struct db *db, long long run_id, const struct report_libraries *lib,
                  const char *sweep, struct report *r)
{
	static const struct report_libraries none = {NULL, 0, 0};

	memset(r, 0, sizeof(*r));
	r->db_path = xstrdup(db_path(db));
	r->lib = lib ? lib : &none;
	if (export_rank(db, run_id, REPORT_ELITE, &r->rank) < 0)
		goto fail;
	if (export_rank_per_shape(db, &r->rank) < 0 ||
	    db_run_eval_points(db, run_id, &r->evals, &r->nevals) < 0)
		goto fail;
	curve_from(r->evals, r->nevals, &r->curve);
	verdicts_per_generation(r);
	if (find_baselines(db, sweep, r) < 0 || winner_timing(db, r) < 0 || match_libraries(r) < 0)
		goto fail;
	return 0;
fail:
	report_release(r);
	return -1;
}

static void baseline_release(struct report_baseline *b)
{
	free(b->db);
	curve_release(&b->curve);
	memset(b, 0, sizeof(*b));
}

void report_release(struct report *r)
{
	size_t i;

	for (i = 0; r->timing && i < r->rank.nshapes; i++)
		db_measured_release(&r->timing[i]);
	free(r->timing);
	free(r->timed);
	for (i = 0; i < r->nlibs; i++) {
		free(r->libs[i]);
		free(r->lib_method[i]);
	}
	free(r->libs);
	free(r->lib_method);
	free(r->lib_us);
	free(r->lib_note);
	ranking_release(&r->rank);
	free(r->evals);
	curve_release(&r->curve);
	baseline_release(&r->random_run);
	baseline_release(&r->expected);
	free(r->baseline_note);
	free(r->gen_outcomes);
	free(r->db_path);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------ Markdown and HTML */

/*
 * One document written twice, as Markdown and as HTML. Text is plain with
 * `code` spans marked by backticks; each writer escapes it for itself.
 */
struct doc {
	struct strbuf md, html;
	int in_list;
};

/* Append text from outside (a name, a path) as plain text: its backticks made quotes. */
static void add_plain(struct strbuf *sb, const char *s)
{
	for (; s && *s; s++)
		sb_add(sb, *s == '`' ? "'" : s, 1);
}

/* Append s as a code span. */
static void add_code(struct strbuf *sb, const char *s)
{
	sb_adds(sb, "`");
	add_plain(sb, s);
	sb_adds(sb, "`");
}

static void html_text(struct strbuf *sb, const char *s)
{
	int code = 0;

	for (; *s; s++) {
		switch (*s) {
		case '`':
			sb_adds(sb, code ? "</code>" : "<code>");
			code = !code;
			break;
		case '&':
			sb_adds(sb, "&amp;");
			break;
		case '<':
			sb_adds(sb, "&lt;");
			break;
		case '>':
			sb_adds(sb, "&gt;");
			break;
		case '"':
			sb_adds(sb, "&quot;");
			break;
		default:
			sb_add(sb, s, 1);
		}
	}
	if (code)
		sb_adds(sb, "</code>");
}

/* Markdown: a table cell needs its pipes escaped; a line break would end the row. */
static void md_text(struct strbuf *sb, const char *s, int cell)
{
	for (; *s; s++) {
		if (cell && *s == '|')
			sb_adds(sb, "\\|");
		else if (*s == '\n' || *s == '\r')
			sb_adds(sb, " ");
		else
			sb_add(sb, s, 1);
	}
}

static void doc_end_list(struct doc *d)
{
	if (!d->in_list)
		return;
	sb_adds(&d->md, "\n");
	sb_adds(&d->html, "</ul>\n");
	d->in_list = 0;
}

static void doc_heading(struct doc *d, int level, const char *text)
{
	doc_end_list(d);
	sb_addf(&d->md, "%.*s ", level, "######");
	md_text(&d->md, text, 0);
	sb_adds(&d->md, "\n\n");
	sb_addf(&d->html, "<h%d>", level);
	html_text(&d->html, text);
	sb_addf(&d->html, "</h%d>\n", level);
}

static void doc_para(struct doc *d, const char *text)
{
	doc_end_list(d);
	md_text(&d->md, text, 0);
	sb_adds(&d->md, "\n\n");
	sb_adds(&d->html, "<p>");
	html_text(&d->html, text);
	sb_adds(&d->html, "</p>\n");
}

static void doc_item(struct doc *d, const char *text)
{
	if (!d->in_list) {
		sb_adds(&d->html, "<ul>\n");
		d->in_list = 1;
	}
	sb_adds(&d->md, "- ");
	md_text(&d->md, text, 0);
	sb_adds(&d->md, "\n");
	sb_adds(&d->html, "<li>");
	html_text(&d->html, text);
	sb_adds(&d->html, "</li>\n");
}

static void doc_pre(struct doc *d, const char *text)
{
	const char *s;

	doc_end_list(d);
	sb_addf(&d->md, "```sh\n%s\n```\n\n", text);
	sb_adds(&d->html, "<pre>");
	for (s = text; *s; s++) {
		if (*s == '&' || *s == '<' || *s == '>')
			sb_adds(&d->html, *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : "&gt;");
		else
			sb_add(&d->html, s, 1);
	}
	sb_adds(&d->html, "</pre>\n");
}

/* A table row being built: cells of plain text with code spans. */
struct row {
	char **cell;
	size_t n, alloc;
};

static void row_add(struct row *r, const char *text)
{
	ALLOC_GROW(r->cell, r->n + 1, r->alloc);
	r->cell[r->n++] = xstrdup(text);
}

static void row_addf(struct row *r, const char *fmt, ...) TUNER_PRINTF(2, 3);
static void row_addf(struct row *r, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	ALLOC_GROW(r->cell, r->n + 1, r->alloc);
	r->cell[r->n++] = sb_detach(&sb);
}

/* A number with fmt, or "-" when it is not finite. */
static void row_num(struct row *r, const char *fmt, double v)
{
	if (isfinite(v))
		row_addf(r, fmt, v);
	else
		row_add(r, "-");
}

/* A cell of text from outside, as plain text or as code. */
static void row_text(struct row *r, const char *s, int code)
{
	struct strbuf sb = STRBUF_INIT;

	if (code)
		add_code(&sb, s);
	else
		add_plain(&sb, s);
	ALLOC_GROW(r->cell, r->n + 1, r->alloc);
	r->cell[r->n++] = sb.buf ? sb_detach(&sb) : xstrdup("");
}

static void row_reset(struct row *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->cell[i]);
	r->n = 0;
}

static void row_release(struct row *r)
{
	row_reset(r);
	free(r->cell);
	memset(r, 0, sizeof(*r));
}

/* The header row; align has 'l' or 'r' per column. The row is emptied. */
static void doc_table(struct doc *d, const char *align, struct row *head)
{
	size_t i;

	doc_end_list(d);
	sb_adds(&d->html, "<table>\n<tr>");
	for (i = 0; i < head->n; i++) {
		sb_adds(&d->md, "| ");
		md_text(&d->md, head->cell[i], 1);
		sb_adds(&d->md, " ");
		sb_addf(&d->html, "<th%s>", align[i] == 'r' ? " class=\"num\"" : "");
		html_text(&d->html, head->cell[i]);
		sb_adds(&d->html, "</th>");
	}
	sb_adds(&d->md, "|\n");
	for (i = 0; i < head->n; i++)
		sb_adds(&d->md, align[i] == 'r' ? "|---:" : "|---");
	sb_adds(&d->md, "|\n");
	sb_adds(&d->html, "</tr>\n");
	row_reset(head);
}

static void doc_row(struct doc *d, const char *align, struct row *r)
{
	size_t i;

	sb_adds(&d->html, "<tr>");
	for (i = 0; i < r->n; i++) {
		sb_adds(&d->md, "| ");
		md_text(&d->md, r->cell[i], 1);
		sb_adds(&d->md, " ");
		sb_addf(&d->html, "<td%s>", align[i] == 'r' ? " class=\"num\"" : "");
		html_text(&d->html, r->cell[i]);
		sb_adds(&d->html, "</td>");
	}
	sb_adds(&d->md, "|\n");
	sb_adds(&d->html, "</tr>\n");
	row_reset(r);
}

static void doc_table_end(struct doc *d)
{
	sb_adds(&d->md, "\n");
	sb_adds(&d->html, "</table>\n");
}

/* A plot: linked from the Markdown, embedded in the HTML as a data URI. */
static void doc_image(struct doc *d, const char *file, const char *alt, const struct strbuf *png)
{
	doc_end_list(d);
	sb_adds(&d->md, "![");
	md_text(&d->md, alt, 1);
	sb_addf(&d->md, "](%s)\n\n", file);
	sb_adds(&d->html, "<figure><img alt=\"");
	html_text(&d->html, alt);
	sb_adds(&d->html, "\" src=\"data:image/png;base64,");
	report_base64(&d->html, (const unsigned char *)png->buf, png->len);
	sb_adds(&d->html, "\"><figcaption>");
	html_text(&d->html, alt);
	sb_adds(&d->html, "</figcaption></figure>\n");
}

/* ------------------------------------------------------------------ plots */

enum plot { PLOT_CONVERGENCE, PLOT_TIME, PLOT_SPEEDUP, PLOT_VERDICTS, PLOT_TIMING, PLOT_COUNT };

static const char *const plot_file[PLOT_COUNT] = {
    [PLOT_CONVERGENCE] = "convergence.png", [PLOT_TIME] = "convergence-time.png",
    [PLOT_SPEEDUP] = "speedup.png",         [PLOT_VERDICTS] = "verdicts.png",
    [PLOT_TIMING] = "timing.png",
};

/* Colours of the verdicts, in enum outcome order: one for each, or the build fails. */
static const char *const outcome_colour[] = {
    "#4daf4a", "#999999", "#ff7f00", "#ffd92f", "#e41a1c", "#984ea3",
    "#a65628", "#7f3b08", "#f781bf", "#c51b7d", "#d9d9d9", "#4393c3",
};
_Static_assert(sizeof(outcome_colour) / sizeof(outcome_colour[0]) == OUTCOME_COUNT,
               "a colour for every outcome");

/* A gnuplot single-quoted string: no escapes inside but '' for a quote. */
static void gp_str(struct strbuf *sb, const char *s)
{
	sb_adds(sb, "'");
	for (; s && *s; s++) {
		if (*s == '\'')
			sb_adds(sb, "''");
		else if ((unsigned char)*s < 0x20)
			sb_adds(sb, " ");
		else
			sb_add(sb, s, 1);
	}
	sb_adds(sb, "'");
}

static void gp_strf(struct strbuf *sb, const char *fmt, ...) TUNER_PRINTF(2, 3);
static void gp_strf(struct strbuf *sb, const char *fmt, ...)
{
	struct strbuf s = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(&s, fmt, ap);
	va_end(ap);
	gp_str(sb, s.buf ? s.buf : "");
	sb_release(&s);
}

static void gp_num(struct strbuf *sb, double v)
{
	if (isfinite(v))
		sb_addf(sb, " %.9g", v);
	else
		sb_adds(sb, " NaN");
}

/* The steps of a best-so-far curve: where it changes, and its end. */
static void gp_curve(struct strbuf *sb, const char *name, const struct report_curve *c)
{
	size_t i;

	sb_addf(sb, "$%s << EOD\n", name);
	for (i = 0; i < c->n; i++) {
		if (!isfinite(c->best[i]))
			continue;
		if (i + 1 < c->n && i && c->best[i] == c->best[i - 1])
			continue;
		sb_addf(sb, "%zu", i + 1);
		gp_num(sb, c->best[i]);
		gp_num(sb, c->seconds ? c->seconds[i] : NAN);
		sb_adds(sb, "\n");
	}
	sb_adds(sb, "EOD\n");
}

static int curve_has_data(const struct report_curve *c)
{
	return c->n && isfinite(c->best[c->n - 1]);
}

static void gp_begin(struct strbuf *sb, enum plot p, const char *title)
{
	sb_adds(sb, "\nreset\n");
	sb_addf(sb, "set output '%s'\n", plot_file[p]);
	sb_adds(sb, "set title ");
	gp_str(sb, title);
	sb_adds(sb, "\nset grid\n");
}

static void gp_convergence(struct strbuf *sb, const struct report *r, int time)
{
	const struct db_run *run = &r->rank.run;
	struct strbuf t = STRBUF_INIT;
	const char *x = time ? "3" : "1";

	sb_addf(&t, "run %lld (%s): best fitness against %s", run->id, run->strategy,
	        time ? "wall time" : "evaluations");
	gp_begin(sb, time ? PLOT_TIME : PLOT_CONVERGENCE, t.buf);
	sb_addf(sb, "set xlabel '%s'\n",
	        time ? "seconds since the run started" : "evaluations, in the order recorded");
	sb_adds(sb, "set ylabel 'fitness: geometric-mean speedup over the baseline'\n"
	            "set key bottom right opaque box\nset xrange [0:*]\n");
	sb_addf(sb,
	        "plot $evals using %s:2 with points pt 7 ps 0.5 lc rgb '#b0b0b0' "
	        "title 'fitness of each evaluation', \\\n",
	        x);
	sb_addf(sb, "     $best using %s:2 with steps lw 2 lc rgb '#1f77b4' title ", x);
	gp_strf(sb, "best so far, run %lld", run->id);
	if (r->random_run.present && curve_has_data(&r->random_run.curve)) {
		sb_addf(sb, ", \\\n     $random using %s:2 with steps lw 2 lc rgb '#d62728' title ",
		        x);
		gp_strf(sb, "random search, run %lld", r->random_run.run_id);
	}
	if (!time && r->expected.present) {
		sb_adds(sb, ", \\\n     $expected using 1:2 with lines dt 2 lw 2 lc rgb '#ff7f0e' "
		            "title ");
		gp_strf(sb, "random search, expected (from exhaustive run %lld)",
		        r->expected.run_id);
	}
	sb_adds(sb, "\nunset output\n");
	sb_release(&t);
}

static int has_speedups(const struct report *r)
{
	size_t i;

	for (i = 0; r->rank.n && i < r->rank.nshapes; i++)
		if (isfinite(r->rank.v[0].t[i].speedup) || r->nlibs)
			return 1;
	return 0;
}

static void gp_xtics(struct strbuf *sb, const struct ranking *k)
{
	size_t i;

	sb_adds(sb, "set xtics (");
	for (i = 0; i < k->nshapes; i++) {
		sb_adds(sb, i ? ", " : "");
		gp_str(sb, k->shapes[i].name);
		sb_addf(sb, " %zu", i);
	}
	sb_adds(sb, ")\n");
}

static void gp_speedup(struct strbuf *sb, const struct report *r)
{
	const struct ranking *k = &r->rank;
	const struct export_entry *w = &k->v[0];
	struct strbuf t = STRBUF_INIT;
	size_t i, j, col;

	sb_adds(sb, "\n$speedup << EOD\n");
	for (i = 0; i < k->nshapes; i++) {
		sb_addf(sb, "%zu", i);
		gp_num(sb, w->t[i].speedup);
		gp_num(sb, k->best ? k->best[i].t.speedup : NAN);
		for (j = 0; j < r->nlibs; j++)
			gp_num(sb, r->lib_us[i * r->nlibs + j] / w->t[i].median_us);
		sb_adds(sb, "\n");
	}
	sb_adds(sb, "EOD\n");
	sb_addf(&t, "run %lld: speedup of the winner (variant %lld) on each shape", k->run.id,
	        w->variant_id);
	gp_begin(sb, PLOT_SPEEDUP, t.buf);
	sb_adds(sb, "set ylabel 'speedup (their median / ours; above 1: ours is faster)'\n"
	            "set style data histogram\nset style histogram clustered gap 1\n"
	            "set style fill solid 0.85 border -1\nset boxwidth 0.9\n"
	            "set yrange [0:*]\nset key top left\nset grid noxtics\n"
	            "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2\n");
	gp_xtics(sb, k);
	sb_addf(sb, "plot $speedup using 2 title 'winner vs the baseline configuration' "
	            "lc rgb '#1f77b4', \\\n"
	            "     $speedup using 3 title 'each shape''s best vs the baseline' "
	            "lc rgb '#aec7e8'");
	for (j = 0, col = 4; j < r->nlibs; j++, col++) {
		static const char *const lc[] = {"#d62728", "#ff7f0e", "#9467bd",
		                                 "#8c564b", "#e377c2", "#7f7f7f"};

		sb_addf(sb, ", \\\n     $speedup using %zu lc rgb '%s' title ", col,
		        lc[j % ARRAY_SIZE(lc)]);
		gp_strf(sb, "winner vs %s", r->libs[j]);
	}
	sb_adds(sb, "\nunset output\n");
	sb_release(&t);
}

static void gp_verdicts(struct strbuf *sb, const struct report *r)
{
	int ngen = r->last_generation - r->first_generation + 1, g, step = (ngen + 29) / 30,
	    first = 1;
	size_t o, col;
	struct strbuf t = STRBUF_INIT;

	sb_adds(sb, "\n$verdicts << EOD\n");
	for (g = 0; g < ngen; g++) {
		sb_addf(sb, "%d", r->first_generation + g);
		for (o = 0; o < OUTCOME_COUNT; o++)
			if (r->outcomes[o])
				sb_addf(sb, " %lld",
				        r->gen_outcomes[(size_t)g * OUTCOME_COUNT + o]);
		sb_adds(sb, "\n");
	}
	sb_adds(sb, "EOD\n");
	sb_addf(&t, "run %lld: the verdict on each candidate, per generation", r->rank.run.id);
	gp_begin(sb, PLOT_VERDICTS, t.buf);
	sb_adds(sb, "set xlabel 'generation'\nset ylabel 'candidates'\n"
	            "set style data histogram\nset style histogram rowstacked\n"
	            "set style fill solid 0.85 border -1\nset boxwidth 0.8\n"
	            "set key outside right top\nset yrange [0:*]\nset grid noxtics\n");
	sb_adds(sb, "plot");
	for (o = 0, col = 2; o < OUTCOME_COUNT; o++) {
		if (!r->outcomes[o])
			continue;
		sb_addf(sb, "%s $verdicts using %zu", first ? "" : ", \\\n    ", col);
		if (first)
			sb_addf(sb, ":xtic(int($0) %% %d == 0 ? stringcolumn(1) : '')", step);
		sb_addf(sb, " lc rgb '%s' title ", outcome_colour[o]);
		gp_str(sb, outcome_name((enum outcome)o));
		first = 0;
		col++;
	}
	sb_adds(sb, "\nunset output\n");
	sb_release(&t);
}

static int has_timing(const struct report *r)
{
	size_t i;

	for (i = 0; i < r->rank.nshapes; i++)
		if (r->timed[i] && r->timing[i].nsamples && isfinite(r->timing[i].median_us))
			return 1;
	return 0;
}

static void gp_timing(struct strbuf *sb, const struct report *r)
{
	const struct ranking *k = &r->rank;
	struct strbuf t = STRBUF_INIT;
	size_t i, j;
	int first = 1;

	/* One block per shape (index i), samples as % off that shape's median. */
	sb_adds(sb, "\n$timing << EOD\n");
	for (i = 0; i < k->nshapes; i++) {
		const struct db_measured *m = &r->timing[i];

		if (i)
			sb_adds(sb, "\n\n");
		/* An empty block would shift the indices: a row without a value keeps its place. */
		sb_addf(sb, "%zu NaN\n", i);
		for (j = 0; r->timed[i] && isfinite(m->median_us) && j < m->nsamples; j++) {
			if (!isfinite(m->samples[j]))
				continue;
			/* A fixed jitter, so the points of one shape do not hide each other. */
			sb_addf(sb, "%.3f", (double)i + (double)((int)(j % 9) - 4) * 0.03);
			gp_num(sb, (m->samples[j] / m->median_us - 1) * 100);
			sb_adds(sb, "\n");
		}
	}
	sb_adds(sb, "EOD\n");
	sb_addf(&t, "run %lld: the winner's timing samples (variant %lld)", k->run.id,
	        k->v[0].variant_id);
	gp_begin(sb, PLOT_TIMING, t.buf);
	sb_adds(sb, "set ylabel 'sample off the shape''s median (%)'\n"
	            "set style fill solid 0.25 border -1\nset style boxplot nooutliers\n"
	            "set boxwidth 0.5\nset key off\nset grid noxtics\n");
	gp_xtics(sb, k);
	sb_addf(sb, "set xrange [-0.6:%zu.6]\nplot", k->nshapes - 1);
	for (i = 0; i < k->nshapes; i++) {
		if (!r->timed[i] || !isfinite(r->timing[i].median_us))
			continue;
		sb_addf(sb,
		        "%s $timing index %zu using (%zu):2 with boxplot lc rgb '#1f77b4', "
		        "$timing index %zu using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728'",
		        first ? "" : ", \\\n    ", i, i, i);
		first = 0;
	}
	sb_adds(sb, "\nunset output\n");
	sb_release(&t);
}

/* The whole script; wanted[p] says which plots the data allows. */
static void gp_script(const struct report *r, struct strbuf *sb, int wanted[PLOT_COUNT])
{
	const struct db_run *run = &r->rank.run;
	size_t i;

	memset(wanted, 0, PLOT_COUNT * sizeof(*wanted));
	wanted[PLOT_CONVERGENCE] = wanted[PLOT_TIME] = curve_has_data(&r->curve);
	wanted[PLOT_SPEEDUP] = has_speedups(r);
	wanted[PLOT_VERDICTS] = r->nevals > 0;
	wanted[PLOT_TIMING] = r->rank.n && has_timing(r);

	sb_addf(sb, "# The plots of 'tuner report' for run %lld of ", run->id);
	gp_str(sb, r->db_path); /* no line break can end the comment early */
	sb_adds(sb, ", data inline.\n");
	sb_adds(sb, "# Draw them again with: gnuplot plots.gp (in this directory).\n"
	            "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
	            "    set terminal pngcairo noenhanced size 960,540 font 'sans,10'\n"
	            "} else {\n"
	            "    set terminal png noenhanced size 960,540\n"
	            "}\n");
	if (wanted[PLOT_CONVERGENCE]) {
		sb_adds(sb, "\n$evals << EOD\n");
		for (i = 0; i < r->nevals; i++) {
			if (!isfinite(r->evals[i].fitness))
				continue;
			sb_addf(sb, "%zu", i + 1);
			gp_num(sb, r->evals[i].fitness);
			gp_num(sb, r->evals[i].seconds);
			sb_adds(sb, "\n");
		}
		sb_adds(sb, "EOD\n");
		gp_curve(sb, "best", &r->curve);
		if (r->random_run.present)
			gp_curve(sb, "random", &r->random_run.curve);
		if (r->expected.present)
			gp_curve(sb, "expected", &r->expected.curve);
		gp_convergence(sb, r, 0);
		gp_convergence(sb, r, 1);
	}
	if (wanted[PLOT_SPEEDUP])
		gp_speedup(sb, r);
	if (wanted[PLOT_VERDICTS])
		gp_verdicts(sb, r);
	if (wanted[PLOT_TIMING])
		gp_timing(sb, r);
}

/* ---------------------------------------------------------------- render */

/* The PNGs drawn, read back for embedding; len 0: not drawn. */
struct plots {
	struct strbuf png[PLOT_COUNT];
	int wanted[PLOT_COUNT];
	char *why; /* why none was drawn, or NULL */
};

static const char *nn(const char *s)
{
	return s ? s : "";
}

/* A plot, or a line saying why it is missing. */
static void put_plot(struct doc *d, const struct plots *p, enum plot which, const char *alt)
{
	if (p->png[which].len)
		doc_image(d, plot_file[which], alt, &p->png[which]);
	else if (p->wanted[which])
		doc_para(d, "(plot not drawn: see Plots below)");
}

/* "2.411 [2.406, 2.427]" */
static void add_fitness(struct strbuf *sb, double f, double lo, double hi)
{
	if (!isfinite(f)) {
		sb_adds(sb, "-");
		return;
	}
	sb_addf(sb, "%.3f", f);
	if (isfinite(lo) && isfinite(hi))
		sb_addf(sb, " [%.3f, %.3f]", lo, hi);
}

static double wall_seconds(const struct report *r)
{
	return r->nevals ? r->evals[r->nevals - 1].seconds : NAN;
}

static void render_run(struct doc *d, const struct report *r, const struct report_write_opts *o)
{
	const struct db_run *run = &r->rank.run;
	struct strbuf sb = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	char date[32];
	struct tm tm;
	size_t i;

	gmtime_r(&o->now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sb_addf(&sb, "Run %lld of ", run->id);
	add_code(&sb, r->db_path);
	sb_addf(&sb,
	        ", written by tuner %s on %s. Every number below is read from that database; "
	        "the command at the end writes this report again.",
	        TUNER_VERSION, date);
	doc_para(d, sb.buf);

	doc_heading(d, 2, "Run");
	row_add(&row, "");
	row_add(&row, "");
	doc_table(d, "ll", &row);
#define KV(key, ...)                                                                               \
	do {                                                                                       \
		row_add(&row, key);                                                                \
		row_addf(&row, __VA_ARGS__);                                                       \
		doc_row(d, "ll", &row);                                                            \
	} while (0)
	sb_reset(&sb);
	add_code(&sb, nn(run->command));
	KV("command", "%s", sb.buf);
	KV("status", "%s", nn(run->status));
	KV("strategy", "%s, seed %llu, %d generations of %d", nn(run->strategy), run->seed,
	   run->generations, run->population);
	KV("started", "%s", nn(run->started_at));
	KV("finished", "%s", run->finished_at ? run->finished_at : "-");
	sb_reset(&sb);
	if (isfinite(wall_seconds(r)))
		sb_addf(&sb, "%.1f s to the last verdict", wall_seconds(r));
	else
		sb_adds(&sb, "-");
	KV("wall time", "%s", sb.buf);
	sb_reset(&sb);
	add_plain(&sb, nn(run->device));
	sb_adds(&sb, ", driver ");
	add_plain(&sb, nn(run->driver));
	KV("device", "%s", sb.buf);
	sb_reset(&sb);
	add_plain(&sb, nn(run->arch));
	sb_adds(&sb, ", NVRTC ");
	add_plain(&sb, nn(run->nvrtc));
	KV("arch", "%s", sb.buf);
	sb_reset(&sb);
	add_code(&sb, nn(run->template_name));
	sb_adds(&sb, ", hash ");
	add_code(&sb, nn(run->template_hash));
	KV("template", "%s", sb.buf);
	if (run->replay_of) {
		sb_reset(&sb);
		sb_adds(&sb, "answered from the measurements recorded in ");
		add_code(&sb, run->replay_of);
		KV("replay", "%s", sb.buf);
	}
	sb_reset(&sb);
	for (i = 0; i < r->rank.nshapes; i++) {
		sb_adds(&sb, i ? ", " : "");
		add_plain(&sb, r->rank.shapes[i].name);
		sb_adds(&sb, " (");
		add_code(&sb, r->rank.shapes[i].dims);
		sb_adds(&sb, ")");
	}
	KV("shapes", "%s", sb.buf);
	sb_reset(&sb);
	if (r->rank.baseline_id) {
		sb_addf(&sb, "variant %lld, ", r->rank.baseline_id);
		add_code(&sb, nn(r->rank.baseline_params));
	} else {
		sb_adds(&sb, "none recorded, so no speedups");
	}
	KV("baseline", "%s", sb.buf);
#undef KV
	doc_table_end(d);
	sb_release(&sb);
	row_release(&row);
}

static void render_verdicts(struct doc *d, const struct report *r)
{
	struct row row = {NULL, 0, 0};
	size_t o;

	doc_heading(d, 2, "Verdicts");
	if (!r->nevals) {
		doc_para(d, "The run has evaluated nothing yet.");
		return;
	}
	row_add(&row, "verdict");
	row_add(&row, "candidates");
	row_add(&row, "share");
	doc_table(d, "lrr", &row);
	for (o = 0; o < OUTCOME_COUNT; o++) {
		if (!r->outcomes[o])
			continue;
		row_add(&row, outcome_name((enum outcome)o));
		row_addf(&row, "%lld", r->outcomes[o]);
		row_addf(&row, "%.1f%%", 100.0 * (double)r->outcomes[o] / (double)r->nevals);
		doc_row(d, "lrr", &row);
	}
	row_add(&row, "all");
	row_addf(&row, "%zu", r->nevals);
	row_add(&row, "100%");
	doc_row(d, "lrr", &row);
	doc_table_end(d);
	row_release(&row);
}

static void render_winner(struct doc *d, const struct report *r)
{
	const struct ranking *k = &r->rank;
	struct strbuf sb = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	size_t i;

	doc_heading(d, 2, "Winner");
	if (!k->n) {
		char why[128];

		sb_addf(&sb, "No winner: %s.", export_empty_reason(k, why, sizeof(why)));
		doc_para(d, sb.buf);
		sb_release(&sb);
		return;
	}
	sb_addf(&sb, "The winner is variant %lld (", k->v[0].variant_id);
	add_code(&sb, nn(k->v[0].params));
	sb_adds(&sb, "), fitness ");
	add_fitness(&sb, k->v[0].fitness, k->v[0].fitness_lo, k->v[0].fitness_hi);
	sb_addf(&sb,
	        ": the geometric-mean speedup over the baseline on the %zu shapes, with its 95%% "
	        "interval. ",
	        k->nshapes);
	if (k->elite_generation >= 0)
		sb_addf(&sb,
		        "The ranks come from the elite of generation %d (`tuner top` ranks the "
		        "same way).",
		        k->elite_generation);
	doc_para(d, sb.buf);
	row_add(&row, "rank");
	row_add(&row, "variant");
	row_add(&row, "fitness [95% interval]");
	row_add(&row, "params");
	doc_table(d, "rrll", &row);
	for (i = 0; i < k->n; i++) {
		sb_reset(&sb);
		add_fitness(&sb, k->v[i].fitness, k->v[i].fitness_lo, k->v[i].fitness_hi);
		row_addf(&row, "%d", k->v[i].rank);
		row_addf(&row, "%lld%s", k->v[i].variant_id, k->v[i].elite ? "" : " (not elite)");
		row_add(&row, sb.buf);
		row_text(&row, nn(k->v[i].params), 1);
		doc_row(d, "rrll", &row);
	}
	doc_table_end(d);
	sb_release(&sb);
	row_release(&row);
}

/* The first evaluation (1-based) at which c reached its final best; 0: never. */
static size_t reached_best(const struct report_curve *c)
{
	size_t i;

	if (!curve_has_data(c))
		return 0;
	for (i = 0; i < c->n && !(c->best[i] == c->best[c->n - 1]); i++)
		;
	return i + 1;
}

static void render_baselines(struct doc *d, const struct report *r, struct strbuf *sb)
{
	const struct report_baseline *rr = &r->random_run, *e = &r->expected;

	if (rr->present) {
		sb_reset(sb);
		sb_addf(sb,
		        "Random search, run %lld of this database: a run with strategy random "
		        "over the same space (template, arch, device and shapes), one sample of "
		        "what random search does; %zu evaluations, best ",
		        rr->run_id, rr->curve.n);
		add_fitness(sb, curve_has_data(&rr->curve) ? rr->curve.best[rr->curve.n - 1] : NAN,
		            NAN, NAN);
		sb_adds(sb, ".");
		doc_item(d, sb->buf);
	}
	if (e->present) {
		sb_reset(sb);
		sb_addf(
		    sb,
		    "Random search, expected: the exact expectation (order statistics) of the "
		    "best fitness after n evaluations of `tuner run --strategy random`, computed "
		    "from exhaustive run %lld of ",
		    e->run_id);
		add_code(sb, e->db);
		sb_addf(
		    sb,
		    ", which measured every point of the space: evaluation 1 is the baseline "
		    "(fitness %.3f), each later one is drawn uniformly without replacement from "
		    "the %zu points that pass the constraints (those without a fitness, "
		    "rejected by a later gate, count as no improvement). It has no wall time, "
		    "so it is plotted against evaluations only.",
		    e->base, e->pool);
		doc_item(d, sb->buf);
	} else if (r->baseline_note) {
		sb_reset(sb);
		sb_adds(sb, "No expected random-search curve: ");
		add_plain(sb, r->baseline_note);
		sb_adds(sb, ".");
		doc_item(d, sb->buf);
	}
	if (!rr->present && strcmp(r->rank.run.strategy, "random")) {
		sb_reset(sb);
		sb_adds(sb, "No random-search run over the same space in this database (`tuner run "
		            "--strategy random` makes one).");
		doc_item(d, sb->buf);
	}
}

/* Best of curve c after n evaluations, NAN past its end. */
static double best_after(const struct report_curve *c, size_t n)
{
	return n <= c->n ? c->best[n - 1] : NAN;
}

static void render_convergence(struct doc *d, const struct report *r, const struct plots *p)
{
	const struct report_curve *c = &r->curve;
	struct strbuf sb = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	char align[8];
	size_t n, at, i;

	doc_heading(d, 2, "Convergence");
	if (!curve_has_data(c)) {
		doc_para(d,
		         "No evaluation of this run has a fitness (nothing was timed), so there is "
		         "no convergence to show.");
		return;
	}
	at = reached_best(c);
	sb_addf(&sb,
	        "Fitness is the geometric-mean speedup over the baseline configuration, higher "
	        "is better. An evaluation is a candidate the run gave a verdict, gate "
	        "rejections included, in the order recorded. The run reached its best, %.3f, "
	        "at evaluation %zu of %zu",
	        c->best[c->n - 1], at, c->n);
	if (isfinite(c->seconds[at - 1]))
		sb_addf(&sb, " (%.1f s into the run)", c->seconds[at - 1]);
	sb_adds(&sb, ". Baselines:");
	doc_para(d, sb.buf);
	render_baselines(d, r, &sb);
	put_plot(d, p, PLOT_CONVERGENCE, "best fitness against evaluations");
	put_plot(d, p, PLOT_TIME, "best fitness against wall time");

	snprintf(align, sizeof(align), "rrr%s%s", r->random_run.present ? "r" : "",
	         r->expected.present ? "r" : "");
	row_add(&row, "evaluations");
	row_addf(&row, "run %lld best", r->rank.run.id);
	row_add(&row, "seconds");
	if (r->random_run.present)
		row_addf(&row, "random run %lld best", r->random_run.run_id);
	if (r->expected.present)
		row_add(&row, "random search, expected best");
	doc_table(d, align, &row);
	/* 1, 2, 5, 10, 20, 50, ... and the last. */
	for (n = 1, i = 0; n <= c->n; i++) {
		row_addf(&row, "%zu", n);
		row_num(&row, "%.3f", c->best[n - 1]);
		row_num(&row, "%.1f", c->seconds[n - 1]);
		if (r->random_run.present)
			row_num(&row, "%.3f", best_after(&r->random_run.curve, n));
		if (r->expected.present)
			row_num(&row, "%.3f", best_after(&r->expected.curve, n));
		doc_row(d, align, &row);
		if (n == c->n)
			break;
		n = (i % 3 == 1 ? n * 5 / 2 : n * 2);
		if (n > c->n)
			n = c->n;
	}
	doc_table_end(d);
	sb_release(&sb);
	row_release(&row);
}

static void render_speedup(struct doc *d, const struct report *r, const struct plots *p)
{
	const struct ranking *k = &r->rank;
	struct strbuf sb = STRBUF_INIT, align = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	size_t i, j;

	doc_heading(d, 2, "Speedup per shape");
	if (!k->n) {
		doc_para(d, "No winner, so no speedups.");
		return;
	}
	sb_adds(&sb, "Median time per call on ");
	add_plain(&sb, k->run.device);
	sb_addf(&sb,
	        " as the run measured it, and speedup = the other's median / ours (above 1: ours "
	        "is faster). The winner is variant %lld; each shape's best is the correct variant "
	        "with the lowest median on that shape (what `tuner export --per-shape` writes).",
	        k->v[0].variant_id);
	doc_para(d, sb.buf);
	for (j = 0; j < r->nlibs; j++) {
		sb_reset(&sb);
		sb_adds(&sb, "Library ");
		add_code(&sb, r->libs[j]);
		sb_adds(&sb, ": imported timings");
		if (r->lib_method[j]) {
			sb_adds(&sb, ", timed by: ");
			add_plain(&sb, r->lib_method[j]);
		}
		sb_adds(&sb, ". A different timing method than the run's own shifts the ratio; "
		             "read it as indicative.");
		doc_item(d, sb.buf);
	}
	if (r->lib_note) {
		sb_reset(&sb);
		sb_adds(&sb, "Note: ");
		add_plain(&sb, r->lib_note);
		sb_adds(&sb, ".");
		doc_item(d, sb.buf);
	}
	put_plot(d, p, PLOT_SPEEDUP, "speedup of the winner on each shape");

	sb_adds(&align, "llrrrrr");
	row_add(&row, "shape");
	row_add(&row, "dims");
	row_add(&row, "baseline µs");
	row_add(&row, "winner µs");
	row_add(&row, "winner speedup");
	row_add(&row, "shape's best µs");
	row_add(&row, "shape's best speedup");
	for (j = 0; j < r->nlibs; j++) {
		row_addf(&row, "%s µs", r->libs[j]);
		row_addf(&row, "winner vs %s", r->libs[j]);
		sb_adds(&align, "rr");
	}
	doc_table(d, align.buf, &row);
	for (i = 0; i < k->nshapes; i++) {
		const struct export_timing *w = &k->v[0].t[i];

		row_text(&row, k->shapes[i].name, 0);
		row_text(&row, k->shapes[i].dims, 1);
		row_num(&row, "%.2f", k->base ? k->base[i].median_us : NAN);
		row_num(&row, "%.2f", w->median_us);
		row_num(&row, "%.3fx", w->speedup);
		row_num(&row, "%.2f", k->best[i].variant_id ? k->best[i].t.median_us : NAN);
		row_num(&row, "%.3fx", k->best[i].variant_id ? k->best[i].t.speedup : NAN);
		for (j = 0; j < r->nlibs; j++) {
			double us = r->lib_us[i * r->nlibs + j];

			row_num(&row, "%.2f", us);
			row_num(&row, "%.3fx", us / w->median_us);
		}
		doc_row(d, align.buf, &row);
	}
	doc_table_end(d);
	sb_release(&sb);
	sb_release(&align);
	row_release(&row);
}

static void render_generations(struct doc *d, const struct report *r, const struct plots *p)
{
	struct strbuf align = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	int g, ngen = r->last_generation - r->first_generation + 1;
	size_t o;

	doc_heading(d, 2, "Verdicts per generation");
	if (!r->nevals) {
		doc_para(d, "Nothing evaluated yet.");
		return;
	}
	doc_para(d,
	         "Each candidate's verdict: `ok` passed every gate (and, where a GPU or a replay "
	         "answered, was checked and timed on every shape); any other names the gate that "
	         "rejected it first.");
	put_plot(d, p, PLOT_VERDICTS, "verdicts per generation");
	sb_adds(&align, "rr");
	row_add(&row, "generation");
	row_add(&row, "candidates");
	for (o = 0; o < OUTCOME_COUNT; o++) {
		if (!r->outcomes[o])
			continue;
		row_add(&row, outcome_name((enum outcome)o));
		sb_adds(&align, "r");
	}
	doc_table(d, align.buf, &row);
	for (g = 0; g < ngen; g++) {
		const long long *c = &r->gen_outcomes[(size_t)g * OUTCOME_COUNT];
		long long all = 0;

		for (o = 0; o < OUTCOME_COUNT; o++)
			all += c[o];
		row_addf(&row, "%d", r->first_generation + g);
		row_addf(&row, "%lld", all);
		for (o = 0; o < OUTCOME_COUNT; o++)
			if (r->outcomes[o])
				row_addf(&row, "%lld", c[o]);
		doc_row(d, align.buf, &row);
	}
	doc_table_end(d);
	sb_release(&align);
	row_release(&row);
}

static int cmp_asc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static void render_timing(struct doc *d, const struct report *r, const struct plots *p)
{
	const struct ranking *k = &r->rank;
	struct strbuf sb = STRBUF_INIT;
	struct row row = {NULL, 0, 0};
	static const char align[] = "lrrrrrrrl";
	size_t i, j;

	doc_heading(d, 2, "Timing distribution of the winner");
	if (!k->n || !has_timing(r)) {
		doc_para(d, "No winner with timing samples.");
		return;
	}
	sb_addf(&sb,
	        "Every sample the run stored for variant %lld on each shape (microseconds per "
	        "call; the median is the time the ranking uses, its interval a bootstrap 95%% "
	        "interval). The plot shows each sample as its distance from the shape's median "
	        "in per cent.",
	        k->v[0].variant_id);
	doc_para(d, sb.buf);
	put_plot(d, p, PLOT_TIMING, "timing samples of the winner");
	row_add(&row, "shape");
	row_add(&row, "samples");
	row_add(&row, "min µs");
	row_add(&row, "median µs");
	row_add(&row, "mean µs");
	row_add(&row, "max µs");
	row_add(&row, "(max - min) / median");
	row_add(&row, "TFLOP/s");
	row_add(&row, "95% interval µs");
	doc_table(d, align, &row);
	for (i = 0; i < k->nshapes; i++) {
		const struct db_measured *m = &r->timing[i];
		double *s = xcalloc(m->nsamples + 1, sizeof(*s)), sum = 0;
		size_t n = 0;

		for (j = 0; r->timed[i] && j < m->nsamples; j++)
			if (isfinite(m->samples[j]))
				s[n++] = m->samples[j];
		qsort(s, n, sizeof(*s), cmp_asc);
		for (j = 0; j < n; j++)
			sum += s[j];
		row_text(&row, k->shapes[i].name, 0);
		row_addf(&row, "%zu", n);
		row_num(&row, "%.2f", n ? s[0] : NAN);
		row_num(&row, "%.2f", r->timed[i] ? m->median_us : NAN);
		row_num(&row, "%.2f", n ? sum / (double)n : NAN);
		row_num(&row, "%.2f", n ? s[n - 1] : NAN);
		row_num(&row, "%.2f%%", n ? (s[n - 1] - s[0]) / m->median_us * 100 : NAN);
		row_num(&row, "%.1f", r->timed[i] ? m->tflops : NAN);
		sb_reset(&sb);
		if (r->timed[i] && isfinite(m->ci_lo_us) && isfinite(m->ci_hi_us))
			sb_addf(&sb, "[%.2f, %.2f]", m->ci_lo_us, m->ci_hi_us);
		else
			sb_adds(&sb, "-");
		row_add(&row, sb.buf);
		doc_row(d, align, &row);
		free(s);
	}
	doc_table_end(d);
	sb_release(&sb);
	row_release(&row);
}

static void render_tail(struct doc *d, const struct plots *p, const struct report_write_opts *o)
{
	struct strbuf sb = STRBUF_INIT;
	int drawn = 0, wanted = 0, i;

	for (i = 0; i < PLOT_COUNT; i++) {
		drawn += p->png[i].len > 0;
		wanted += p->wanted[i];
	}
	doc_heading(d, 2, "Plots");
	if (!wanted)
		sb_adds(&sb, "Nothing to plot: this run has no evaluations yet.");
	else if (p->why)
		sb_addf(&sb,
		        "Not drawn: %s. The tables above hold the same numbers; `plots.gp` "
		        "beside this report draws the plots with `gnuplot plots.gp` (Debian "
		        "package gnuplot-nox).",
		        p->why);
	else
		sb_addf(&sb,
		        "%d plot%s drawn by gnuplot from `plots.gp` beside this report (its data "
		        "inline; `gnuplot plots.gp` draws them again).",
		        drawn, drawn == 1 ? "" : "s");
	if (wanted && wanted < PLOT_COUNT)
		sb_addf(&sb, " %d plot%s had no data in this run.", PLOT_COUNT - wanted,
		        PLOT_COUNT - wanted == 1 ? "" : "s");
	doc_para(d, sb.buf);
	doc_heading(d, 2, "Reproduce");
	doc_pre(d, o->command);
	sb_release(&sb);
}

static void render(const struct report *r, const struct plots *p, const struct report_write_opts *o,
                   struct doc *d)
{
	struct strbuf title = STRBUF_INIT;

	sb_addf(&title, "tuner report: run %lld, ", r->rank.run.id);
	add_plain(&title, nn(r->rank.run.template_name));
	sb_adds(&title, " on ");
	add_plain(&title, nn(r->rank.run.device));
	sb_adds(&d->html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	                  "<title>");
	html_text(&d->html, title.buf);
	sb_adds(
	    &d->html,
	    "</title>\n<style>\n"
	    "body { font-family: sans-serif; max-width: 1000px; margin: 2em auto; padding: 0 1em;"
	    " line-height: 1.4; color: #222; }\n"
	    "table { border-collapse: collapse; margin: 1em 0; }\n"
	    "th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }\n"
	    "th.num, td.num { text-align: right; }\n"
	    "code, pre { font-family: monospace; background: #f4f4f4; }\n"
	    "pre { padding: 0.6em; overflow-x: auto; }\n"
	    "figure { margin: 1em 0; } img { max-width: 100%; }\n"
	    "figcaption { color: #555; font-size: 0.9em; }\n"
	    "</style>\n</head>\n<body>\n");
	doc_heading(d, 1, title.buf);
	render_run(d, r, o);
	render_verdicts(d, r);
	render_winner(d, r);
	render_convergence(d, r, p);
	render_speedup(d, r, p);
	render_generations(d, r, p);
	render_timing(d, r, p);
	render_tail(d, p, o);
	doc_end_list(d);
	sb_adds(&d->html, "</body>\n</html>\n");
	sb_release(&title);
}

/* ----------------------------------------------------------------- write */

/* The files a report consists of, so that a directory holding an older one is cleaned. */
static const char *const report_files[] = {
    "report.md",   "report.html",  "plots.gp",   "convergence.png", "convergence-time.png",
    "speedup.png", "verdicts.png", "timing.png",
};

static void remove_staging(const char *staging)
{
	size_t i;
	char *p;

	for (i = 0; i < ARRAY_SIZE(report_files); i++) {
		p = path_join(staging, report_files[i]);
		unlink(p);
		free(p);
	}
	p = path_join(staging, "gnuplot.log");
	unlink(p);
	free(p);
	if (rmdir(staging) < 0 && errno != ENOENT)
		warning("cannot remove '%s': %s", staging, strerror(errno));
}

/* The last lines of gnuplot's log, for the warning. */
static char *log_tail(const char *staging)
{
	char *path = path_join(staging, "gnuplot.log"), *text = NULL, *s;
	size_t len = 0;
	int lines = 0;

	if (read_file(path, &text, &len) < 0 || !len) {
		free(path);
		free(text);
		return xstrdup("(no output)");
	}
	free(path);
	while (len && text[len - 1] == '\n')
		text[--len] = '\0';
	for (s = text + len; s > text && lines < 4; s--)
		if (s[-1] == '\n')
			lines++;
	s = xstrdup(s == text ? s : s + 1);
	free(text);
	return s;
}

/*
 * Run gnuplot on plots.gp in the staging directory: 0 when it ran and
 * exited 0; else why, in *why (the caller frees).
 */
static int run_gnuplot(const char *gnuplot, const char *staging, char **why)
{
	char *log = path_join(staging, "gnuplot.log");
	pid_t pid;
	int status, fd;

	*why = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		*why = xasprintf("cannot start gnuplot: %s", strerror(errno));
		free(log);
		return -1;
	}
	if (!pid) {
		/* The child: only async-signal-safe calls until exec. */
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || chdir(staging) < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, 0);
			close(fd);
		}
		execlp(gnuplot, gnuplot, "plots.gp", (char *)NULL);
		_exit(127);
	}
	free(log);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			*why = xasprintf("cannot wait for gnuplot: %s", strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		*why = xasprintf("gnuplot ('%s') was not found", gnuplot);
	else {
		char *tail = log_tail(staging);

		if (WIFEXITED(status))
			*why = xasprintf("gnuplot ('%s') failed (exit %d): %s", gnuplot,
			                 WEXITSTATUS(status), tail);
		else
			*why = xasprintf("gnuplot ('%s') was killed by signal %d", gnuplot,
			                 WTERMSIG(status));
		free(tail);
	}
	return -1;
}

/* Draw the plots in staging and read back the PNGs that came out whole. */
static void draw(const struct report *r, const char *gnuplot, const char *staging, struct plots *p)
{
	struct strbuf script = STRBUF_INIT;
	char *path = path_join(staging, "plots.gp");
	int i, any = 0;

	gp_script(r, &script, p->wanted);
	for (i = 0; i < PLOT_COUNT; i++)
		any |= p->wanted[i];
	if (write_file_atomic(path, script.buf, script.len) < 0) {
		p->why = xstrdup("the gnuplot script could not be written");
	} else if (!any) {
		/* nothing to draw: the tail says which plots had no data */
	} else if (!gnuplot) {
		p->why = xstrdup("plots were turned off (--no-plots)");
	} else if (run_gnuplot(gnuplot, staging, &p->why) < 0) {
		warning("%s; the report has its tables but no plots", p->why);
	}
	free(path);
	sb_release(&script);
	for (i = 0; i < PLOT_COUNT; i++) {
		char *png = path_join(staging, plot_file[i]), *data = NULL;
		size_t len = 0;

		if (p->wanted[i] && !p->why && read_file(png, &data, &len) == 0 &&
		    report_png_valid((const unsigned char *)data, len))
			sb_add(&p->png[i], data, len);
		else
			unlink(png); /* a partial one, or one from no plot */
		if (p->wanted[i] && !p->why && !p->png[i].len)
			warning("gnuplot did not draw '%s'", plot_file[i]);
		free(data);
		free(png);
	}
	path = path_join(staging, "gnuplot.log");
	unlink(path);
	free(path);
}

/* Move the staged files into dir, one rename each, and drop an older report's others. */
static int move_into(const char *staging, const char *dir)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < ARRAY_SIZE(report_files); i++) {
		char *from = path_join(staging, report_files[i]),
		     *to = path_join(dir, report_files[i]);

		if (access(from, F_OK) == 0) {
			if (rename(from, to) < 0)
				rc = error("cannot move '%s' to '%s': %s", from, to,
				           strerror(errno));
		} else if (unlink(to) < 0 && errno != ENOENT) {
			rc = error("cannot remove '%s': %s", to, strerror(errno));
		}
		free(from);
		free(to);
	}
	return rc;
}

int report_write(const struct report *r, const struct report_write_opts *o,
                 struct report_result *res)
{
	struct doc d = {STRBUF_INIT, STRBUF_INIT, 0};
	struct plots p;
	struct stat st;
	char *staging, *parent, *base, *md = NULL, *html = NULL;
	int exists, i, rc = -1;
	mode_t mask;

	memset(&p, 0, sizeof(p));
	memset(res, 0, sizeof(*res));
	exists = stat(o->dir, &st) == 0;
	if (exists && !S_ISDIR(st.st_mode))
		return error("cannot write the report to '%s': it is not a directory", o->dir);
	/* Staged in the same file system, so that each file's move is a rename. */
	if (exists) {
		staging = path_join(o->dir, ".report-XXXXXX");
	} else {
		parent = path_dirname(o->dir);
		base = strrchr(o->dir, '/') ? strrchr(o->dir, '/') + 1 : (char *)o->dir;
		staging = xasprintf("%s/.%s.tmp-XXXXXX", parent, base);
		free(parent);
	}
	if (!mkdtemp(staging)) {
		error("cannot write the report to '%s': %s", o->dir, strerror(errno));
		free(staging);
		return -1;
	}
	/* mkdtemp() makes it private; the report directory is an ordinary one. */
	mask = umask(0);
	umask(mask);
	if (!exists)
		chmod(staging, 0777 & ~mask);
	draw(r, o->gnuplot, staging, &p);
	render(r, &p, o, &d);
	md = path_join(staging, "report.md");
	html = path_join(staging, "report.html");
	if (write_file_atomic(md, d.md.buf, d.md.len) < 0 ||
	    write_file_atomic(html, d.html.buf, d.html.len) < 0)
		goto out;
	if (!exists && rename(staging, o->dir) == 0) {
		free(staging);
		staging = NULL;
	} else if (move_into(staging, o->dir) < 0) {
		goto out;
	}
	for (i = 0; i < PLOT_COUNT; i++) {
		res->plots += p.png[i].len > 0;
		res->plots_wanted += p.wanted[i];
	}
	rc = 0;
out:
	if (staging) {
		remove_staging(staging);
		free(staging);
	}
	for (i = 0; i < PLOT_COUNT; i++)
		sb_release(&p.png[i]);
	free(p.why);
	free(md);
	free(html);
	sb_release(&d.md);
	sb_release(&d.html);
	return rc;
}
