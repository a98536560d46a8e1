/* What show, top, export, runs and report read from the store, and SQL run for the user. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/db-impl.h"

/* ----------------------------------------------------------- reading out */

/*
 * The functions below read what show, top, export and runs print. Each
 * collects its rows into an array the caller frees with the matching _free().
 * ROWS_LOOP steps st, growing (v, n, alloc) by one element per row, and runs
 * body with `e` pointing at the new, zeroed element.
 */
#define ROWS_LOOP(db, st, v, n, alloc, rc, body)                                                   \
	do {                                                                                       \
		while (((rc) = STEP((db), (st))) == DBB_ROW) {                                     \
			ALLOC_GROW((v), (n) + 1, (alloc));                                         \
			e = &(v)[(n)++];                                                           \
			memset(e, 0, sizeof(*e));                                                  \
			body                                                                       \
		}                                                                                  \
		dbb_finalize(st);                                                                  \
	} while (0)

int db_variant_builds(struct db *db, long long variant_id, struct db_build_row **out, size_t *n)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT spec, sanitize, outcome, regs, spill_stores, spill_loads,"
	         " static_smem, stack_frame, seconds, cached, cubin_size FROM builds"
	         " WHERE variant_id = ?1 ORDER BY sanitize, spec, id",
	         "I", variant_id);
	struct db_build_row *v = NULL, *e;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, {
		e->spec = db_col_str(st, 0);
		e->sanitize = dbb_column_int(st, 1);
		e->outcome = db_col_str(st, 2);
		e->regs = dbb_column_int(st, 3);
		e->spill_stores = dbb_column_int(st, 4);
		e->spill_loads = dbb_column_int(st, 5);
		e->static_smem = dbb_column_int(st, 6);
		e->stack_frame = dbb_column_int(st, 7);
		e->seconds = dbb_column_double(st, 8);
		e->cached = dbb_column_int(st, 9);
		e->cubin_size = dbb_column_int64(st, 10);
	});
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_build_rows_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void db_build_rows_free(struct db_build_row *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].spec);
		free(v[i].outcome);
	}
	free(v);
}

int db_variant_gates(struct db *db, long long variant_id, struct db_gate_row **out, size_t *n)
{
	struct dbb_stmt *st = STMT(db,
	                           "SELECT run_id, gate, shape, outcome, reason FROM gates"
	                           " WHERE variant_id = ?1 ORDER BY run_id, id",
	                           "I", variant_id);
	struct db_gate_row *v = NULL, *e;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, {
		e->run_id = dbb_column_int64(st, 0);
		e->gate = db_col_str(st, 1);
		e->shape = db_col_str(st, 2);
		e->outcome = db_col_str(st, 3);
		e->reason = db_col_str(st, 4);
	});
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_gate_rows_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void db_gate_rows_free(struct db_gate_row *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].gate);
		free(v[i].shape);
		free(v[i].outcome);
		free(v[i].reason);
	}
	free(v);
}

int db_variant_measurements(struct db *db, long long variant_id, struct db_measured **out,
                            size_t *n)
{
	struct dbb_stmt *st =
	    STMT(db, MEASURED_COLUMNS " WHERE m.variant_id = ?1 ORDER BY m.device, m.id", "I",
	         variant_id);
	struct db_measured *v = NULL, *e;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, {
		if (db_measured_row(db, st, e) < 0) {
			(*n)--;
			rc = -1;
			break;
		}
	});
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_measured_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void db_measured_free(struct db_measured *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		db_measured_release(&v[i]);
	free(v);
}

int db_variant_evals(struct db *db, long long variant_id, struct db_variant_eval **out, size_t *n)
{
	/* The elite rank is the one in the run's final elite. */
	struct dbb_stmt *st = STMT(db,
	                           "SELECT x.run_id, x.generation, x.outcome, x.reason, x.fitness,"
	                           " x.fitness_lo, x.fitness_hi, (SELECT e.rank FROM elite e"
	                           " WHERE e.run_id = x.run_id AND e.variant_id = x.variant_id"
	                           " AND e.generation = (SELECT max(generation) FROM elite"
	                           " WHERE run_id = x.run_id)) FROM evals x WHERE x.variant_id = ?1"
	                           " ORDER BY x.run_id",
	                           "I", variant_id);
	struct db_variant_eval *v = NULL, *e;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, {
		e->run_id = dbb_column_int64(st, 0);
		e->generation = dbb_column_int(st, 1);
		e->outcome = db_col_str(st, 2);
		e->reason = db_col_str(st, 3);
		e->fitness = db_col_real(st, 4);
		e->fitness_lo = db_col_real(st, 5);
		e->fitness_hi = db_col_real(st, 6);
		e->elite_rank = dbb_column_int(st, 7);
	});
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_variant_evals_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void db_variant_evals_free(struct db_variant_eval *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].outcome);
		free(v[i].reason);
	}
	free(v);
}

int db_run_compile_stats(struct db *db, long long run_id, struct db_compile_stats *out)
{
	/*
	 * Builds are shared by every run in the file and a build is recorded again
	 * (cached) when a later run reuses it: the run's own are those of the
	 * variants it evaluated, recorded while it ran.
	 */
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT count(DISTINCT CASE WHEN b.outcome = 'ok' THEN b.variant_id END),"
	         " count(*), coalesce(sum(CASE WHEN b.cached = 0 THEN 1 ELSE 0 END), 0),"
	         " coalesce(sum(b.cached), 0), coalesce(sum(b.seconds), 0)"
	         " FROM builds b, runs r WHERE r.id = ?1"
	         " AND b.variant_id IN (SELECT variant_id FROM evals WHERE run_id = ?1)"
	         " AND b.created_at >= r.started_at"
	         " AND (r.finished_at IS NULL OR b.created_at <= r.finished_at)",
	         "I", run_id);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		out->distinct_ok = dbb_column_int64(st, 0);
		out->builds = dbb_column_int64(st, 1);
		out->fresh = (long long)dbb_column_double(st, 2);
		out->cached = (long long)dbb_column_double(st, 3);
		out->seconds = dbb_column_double(st, 4);
	}
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

/* One integer (or -1 for NULL) from a query over one run. */
static int run_int(struct db *db, const char *sql, long long run_id, long long *out)
{
	struct dbb_stmt *st = STMT(db, sql, "I", run_id);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*out = dbb_column_null(st, 0) ? -1 : dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

int db_run_generations_done(struct db *db, long long run_id, int *n)
{
	long long g = -1;

	if (run_int(db,
	            "SELECT max(g) FROM (SELECT max(generation) AS g FROM population"
	            " WHERE run_id = ?1 UNION ALL SELECT max(generation) FROM evals"
	            " WHERE run_id = ?1) AS gens",
	            run_id, &g) < 0)
		return -1;
	*n = (int)(g + 1);
	return 0;
}

int db_elite_final(struct db *db, long long run_id, int *generation, long long *count)
{
	long long g = -1;

	*count = 0;
	if (run_int(db, "SELECT max(generation) FROM elite WHERE run_id = ?1", run_id, &g) < 0)
		return -1;
	*generation = (int)g;
	if (g < 0)
		return 0;
	return run_int(db,
	               "SELECT count(*) FROM elite WHERE run_id = ?1 AND generation ="
	               " (SELECT max(generation) FROM elite WHERE run_id = ?1)",
	               run_id, count);
}

int db_run_evals_summary(struct db *db, long long run_id, long long *evaluations, double *best)
{
	struct dbb_stmt *st = STMT(db,
	                           "SELECT count(*), max(CASE WHEN outcome = 'ok' THEN fitness END)"
	                           " FROM evals WHERE run_id = ?1",
	                           "I", run_id);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		*evaluations = dbb_column_int64(st, 0);
		*best = db_col_real(st, 1);
	}
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

static void ranked_row(struct dbb_stmt *st, struct db_ranked *e, int elite)
{
	e->variant_id = dbb_column_int64(st, 0);
	e->hash = db_col_str(st, 1);
	e->params = db_col_str(st, 2);
	e->fitness = db_col_real(st, 3);
	e->fitness_lo = db_col_real(st, 4);
	e->fitness_hi = db_col_real(st, 5);
	e->elite = elite;
}

void db_ranked_release(struct db_ranked *r)
{
	free(r->hash);
	free(r->params);
	memset(r, 0, sizeof(*r));
}

void db_ranked_free(struct db_ranked *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		db_ranked_release(&v[i]);
	free(v);
}

/* The first row of st as a db_ranked: 1, 0 for none, -1 after error(). */
static int ranked_one(struct db *db, struct dbb_stmt *st, struct db_ranked *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		ranked_row(st, out, 0);
	dbb_finalize(st);
	return rc < 0 ? -1 : rc == DBB_ROW;
}

int db_run_baseline(struct db *db, long long run_id, struct db_ranked *out)
{
	return ranked_one(db,
	                  STMT(db,
	                       "SELECT p.variant_id, v.hash, v.params, NULL, NULL, NULL"
	                       " FROM population p JOIN variants v ON v.id = p.variant_id"
	                       " WHERE p.run_id = ?1 AND p.origin = 'baseline'"
	                       " ORDER BY p.generation LIMIT 1",
	                       "I", run_id),
	                  out);
}

int db_best_on_shape(struct db *db, long long run_id, const char *device, const char *shape_dims,
                     struct db_ranked *out)
{
	/* Correct: the variant passed every gate of the run, and this shape's check. */
	return ranked_one(db,
	                  STMT(db,
	                       "SELECT m.variant_id, v.hash, v.params, NULL, NULL, NULL"
	                       " FROM measurements m"
	                       " JOIN evals x ON x.variant_id = m.variant_id AND x.run_id = ?1"
	                       " JOIN variants v ON v.id = m.variant_id"
	                       " WHERE x.outcome = 'ok' AND m.outcome = 'ok'"
	                       " AND m.median_us IS NOT NULL AND m.device = ?2"
	                       " AND m.shape_dims = ?3 ORDER BY m.median_us, m.variant_id LIMIT 1",
	                       "Itt", run_id, device, shape_dims),
	                  out);
}

#define FINAL_ELITE_GENERATION "(SELECT max(generation) FROM elite WHERE run_id = ?1)"

int db_run_ranked(struct db *db, long long run_id, size_t k, struct db_ranked **out, size_t *n)
{
	struct dbb_stmt *st;
	struct db_ranked *v = NULL, *e;
	size_t alloc = 0;
	int rc = DBB_DONE, pass;

	*out = NULL;
	*n = 0;
	/* The final elite, best first (the evals row has the fitness interval); then the run's
	 * other correct, timed variants by fitness. */
	for (pass = 0; pass < 2 && *n < k && rc == DBB_DONE; pass++) {
		st =
		    pass == 0
			? STMT(db,
		               "SELECT e.variant_id, v.hash, v.params,"
		               " coalesce(x.fitness, e.fitness), x.fitness_lo, x.fitness_hi"
		               " FROM elite e JOIN variants v ON v.id = e.variant_id"
		               " LEFT JOIN evals x ON x.run_id = e.run_id"
		               " AND x.variant_id = e.variant_id"
		               " WHERE e.run_id = ?1 AND e.generation = " FINAL_ELITE_GENERATION
		               " ORDER BY e.rank LIMIT ?2",
		               "II", run_id, (long long)(k - *n))
			: STMT(db,
		               "SELECT x.variant_id, v.hash, v.params, x.fitness, x.fitness_lo,"
		               " x.fitness_hi FROM evals x JOIN variants v ON v.id = x.variant_id"
		               " WHERE x.run_id = ?1 AND x.outcome = 'ok' AND x.fitness IS NOT NULL"
		               " AND x.variant_id NOT IN (SELECT variant_id FROM elite"
		               " WHERE run_id = ?1 AND generation = " FINAL_ELITE_GENERATION ")"
		               " ORDER BY x.fitness DESC, x.variant_id LIMIT ?2",
		               "II", run_id, (long long)(k - *n));
		if (!st) {
			rc = -1;
			break;
		}
		ROWS_LOOP(db, st, v, *n, alloc, rc, { ranked_row(st, e, pass == 0); });
	}
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_ranked_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

int db_run_evals(struct db *db, long long run_id, struct db_run_eval **out, size_t *n)
{
	struct dbb_stmt *st = STMT(db,
	                           "SELECT x.variant_id, v.params, x.outcome, x.reason, x.fitness,"
	                           " x.fitness_lo, x.fitness_hi, x.created_at, x.generation"
	                           " FROM evals x JOIN variants v ON v.id = x.variant_id"
	                           " WHERE x.run_id = ?1 ORDER BY x.generation, x.created_at,"
	                           " x.variant_id",
	                           "I", run_id);
	struct db_run_eval *v = NULL, *e;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, {
		int o = db_col_outcome(db, st, 2);

		if (o < 0) {
			(*n)--;
			rc = -1;
			break;
		}
		e->variant_id = dbb_column_int64(st, 0);
		e->params = db_col_str(st, 1);
		e->outcome = (enum outcome)o;
		e->reason = db_col_str(st, 3);
		e->fitness = db_col_real(st, 4);
		e->fitness_lo = db_col_real(st, 5);
		e->fitness_hi = db_col_real(st, 6);
		e->created_at = db_col_str(st, 7);
		e->generation = dbb_column_int(st, 8);
	});
	*out = v;
	if (rc == DBB_DONE)
		return 0;
	db_run_evals_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

void db_run_evals_free(struct db_run_eval *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].params);
		free(v[i].reason);
		free(v[i].created_at);
	}
	free(v);
}

int db_run_ids(struct db *db, long long **ids, size_t *n)
{
	struct dbb_stmt *st = STMT(db, "SELECT id FROM runs ORDER BY id", "");
	size_t alloc = 0;
	long long *v = NULL, *e;
	int rc;

	*ids = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, { *e = dbb_column_int64(st, 0); });
	*ids = v;
	if (rc == DBB_DONE)
		return 0;
	free(v);
	*ids = NULL;
	*n = 0;
	return -1;
}

int db_run_build_keys(struct db *db, long long run_id, char ***keys, size_t *n)
{
	/* The builds this run recorded (fresh or from the cache) while it ran. */
	struct dbb_stmt *st = STMT(db,
	                           "SELECT b.key FROM builds b, runs r WHERE r.id = ?1"
	                           " AND b.created_at >= r.started_at"
	                           " AND b.variant_id IN (SELECT variant_id FROM evals"
	                           " WHERE run_id = ?1) ORDER BY b.id",
	                           "I", run_id);
	size_t alloc = 0, i;
	char **v = NULL, **e;
	int rc;

	*keys = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, { *e = db_col_str(st, 0); });
	*keys = v;
	if (rc == DBB_DONE)
		return 0;
	for (i = 0; i < *n; i++)
		free(v[i]);
	free(v);
	*keys = NULL;
	*n = 0;
	return -1;
}

/* ---------------------------------------------------------------- queries */

int db_exec_callback(struct db *db, const char *sql, db_row_fn fn, void *ctx, ...)
{
	struct dbb_stmt *st = NULL;
	const char *tail, *p;
	const char **values = NULL, **names = NULL;
	va_list ap;
	int i, n = 0, rc, stop = 0;

	if (dbb_prepare(db->b, sql, &st, &tail) < 0)
		return db_failed_at(db, __FILE__, __LINE__);
	if (tail[strspn(tail, " \t\n;")])
		BUG("db_exec_callback runs one statement: '%s'", sql);
	if (!dbb_readonly(st))
		BUG("db_exec_callback runs queries only: '%s'", sql);
	va_start(ap, ctx);
	/* untyped: PostgreSQL takes each as the type its place in the query asks for */
	for (i = 1, rc = 0; rc == 0 && (p = va_arg(ap, const char *)); i++)
		rc = dbb_bind_text(st, i, p, DBB_ANY);
	va_end(ap);
	if (rc < 0) {
		db_failed_at(db, __FILE__, __LINE__);
		dbb_finalize(st);
		return -1;
	}
	while (!stop && (rc = STEP(db, st)) == DBB_ROW) {
		if (!names) { /* PostgreSQL knows the columns once the query ran */
			n = dbb_column_count(st);
			values = xcalloc((size_t)n + 1, sizeof(*values));
			names = xcalloc((size_t)n + 1, sizeof(*names));
			for (i = 0; i < n; i++)
				names[i] = dbb_column_name(st, i);
		}
		for (i = 0; i < n; i++)
			values[i] = (const char *)dbb_column_text(st, i);
		stop = fn(ctx, n, values, names);
	}
	dbb_finalize(st);
	free(values);
	free(names);
	if (stop)
		return stop < 0 ? -1 : 0;
	return rc == DBB_DONE ? 0 : -1;
}

/* -------------------------------------------------------- report queries */
/* What `tuner report` reads (tuner/report.c). */

int db_run_eval_points(struct db *db, long long run_id, struct db_eval_point **out, size_t *n)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT x.variant_id, x.generation, x.outcome, x.fitness,"
	         " (julianday(x.created_at) - julianday(r.started_at)) * 86400.0"
	         " FROM evals x JOIN runs r ON r.id = x.run_id WHERE x.run_id = ?1"
	         " ORDER BY x.generation, x.created_at, x.variant_id",
	         "I", run_id);
	size_t alloc = 0;
	int rc, o = 0;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW && (o = db_col_outcome(db, st, 2)) >= 0) {
		struct db_eval_point *p;

		ALLOC_GROW(*out, *n + 1, alloc);
		p = &(*out)[(*n)++];
		p->variant_id = dbb_column_int64(st, 0);
		p->generation = dbb_column_int(st, 1);
		p->outcome = (enum outcome)o;
		p->fitness = db_col_real(st, 3);
		p->seconds = db_col_real(st, 4);
	}
	dbb_finalize(st);
	if (rc == DBB_DONE)
		return 0;
	free(*out);
	*out = NULL;
	*n = 0;
	return -1;
}

int db_run_find_like(struct db *db, const struct db_run *like, const char *strategy, int done_only,
                     long long *run_id)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT id FROM runs WHERE strategy = ?1 AND template_hash = ?2 AND arch = ?3"
	         " AND device = ?4 AND shapes = ?5 AND id != ?6 AND (?7 = 0 OR status = 'done')"
	         " AND (gpu = 1 OR replay_of IS NOT NULL) ORDER BY id DESC LIMIT 1",
	         "tttttIi", strategy, like->template_hash, like->arch, like->device, like->shapes,
	         like->id, done_only ? 1 : 0);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*run_id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc < 0 ? -1 : rc == DBB_ROW;
}
