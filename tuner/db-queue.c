/* The job queue of tuner serve, submit, jobs, cancel and wait: servers, jobs and claims. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/db-impl.h"

/* A server is alive while it has not stopped and its heartbeat is younger than its ttl. */
#define SERVER_ALIVE(s)                                                                            \
	"(" s ".stopped_at IS NULL AND (julianday('now') - julianday(" s ".heartbeat_at))"         \
	" * 86400.0 <= " s ".ttl)"

/*
 * The queue's SELECT on PostgreSQL locks the rows it picks and skips those
 * another claimer holds (FOR UPDATE SKIP LOCKED), so that claimers never wait
 * on each other; SQLite's UPDATE runs under its one write lock, alone. sql has
 * one {skip} where the clause goes, for table alias. Caller frees.
 */
static char *skip_locked(const struct db *db, const char *sql, const char *alias)
{
	char *clause = db->h ? xstrdup("") : xasprintf(" FOR UPDATE OF %s SKIP LOCKED", alias);
	struct strbuf sb = STRBUF_INIT;
	const char *at = strstr(sql, "{skip}");

	if (at) {
		sb_add(&sb, sql, (size_t)(at - sql));
		sb_adds(&sb, clause);
		sb_adds(&sb, at + strlen("{skip}"));
	} else {
		BUG("no place for SKIP LOCKED in '%s'", sql);
	}
	free(clause);
	return sb_detach(&sb);
}

int db_server_register(struct db *db, const struct db_server_info *si, long long *server_id)
{
	char host[256];
	struct dbb_stmt *st;
	int rc;

	db_this_host(host, sizeof(host));
	st = STMT(db,
	          "INSERT INTO servers (host, pid, ttl, gpus, device, roots)"
	          " VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
	          "tIdttt", host, (long long)getpid(), si->ttl, si->gpus, si->device, si->roots);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*server_id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

int db_server_heartbeat(struct db *db, long long server_id)
{
	return EXEC(db, STMT(db,
	                     "UPDATE servers SET heartbeat_at = " NOW_SQL ", stopped_at = NULL"
	                     " WHERE id = ?1",
	                     "I", server_id));
}

/* Inside the caller's transaction: a server's claims return, its running jobs are interrupted. */
static int stop_server(struct db *db, long long server_id)
{
	if (EXEC(db, STMT(db,
	                  "UPDATE servers SET stopped_at = coalesce(stopped_at, " NOW_SQL ")"
	                  " WHERE id = ?1",
	                  "I", server_id)) < 0)
		return -1;
	if (EXEC(db, STMT(db,
	                  "UPDATE claims SET server_id = NULL, gpu = NULL, claimed_at = NULL"
	                  " WHERE server_id = ?1 AND done = 0",
	                  "I", server_id)) < 0)
		return -1;
	return EXEC(db, STMT(db,
	                     "UPDATE jobs SET status = 'interrupted' WHERE server_id = ?1"
	                     " AND status = 'running'",
	                     "I", server_id));
}

int db_server_stop(struct db *db, long long server_id)
{
	if (db_group_begin(db) < 0)
		return -1;
	return db_group_end(db, stop_server(db, server_id) == 0);
}

/* Whether a server recorded on this host is still there (pid reuse aside: ttl covers it). */
static int local_pid_gone(const char *host, long long pid)
{
	char me[256];

	db_this_host(me, sizeof(me));
	return host && !strcmp(host, me) && pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int db_servers_reap(struct db *db, long long *reaped)
{
	struct dbb_stmt *st = STMT(
	    db,
	    "SELECT id, host, pid, " SERVER_ALIVE("s") " FROM servers s"
						       " WHERE s.stopped_at IS NULL ORDER BY id",
	    "");
	long long *ids = NULL;
	size_t n = 0, alloc = 0, i;
	int rc, ok;

	*reaped = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		if (dbb_column_int(st, 3) &&
		    !local_pid_gone((const char *)dbb_column_text(st, 1), dbb_column_int64(st, 2)))
			continue;
		ALLOC_GROW(ids, n + 1, alloc);
		ids[n++] = dbb_column_int64(st, 0);
	}
	dbb_finalize(st);
	if (rc != DBB_DONE) {
		free(ids);
		return -1;
	}
	if (db_group_begin(db) < 0) {
		free(ids);
		return -1;
	}
	for (i = 0, ok = 1; ok && i < n; i++)
		ok = !stop_server(db, ids[i]);
	/* a cancel asked of a job whose owner then died: nobody is left to act on it */
	ok = ok && !EXEC(db, STMT(db,
	                          "UPDATE jobs SET status = 'cancelled', finished_at = " NOW_SQL
	                          ", message = coalesce(message, 'cancelled')"
	                          " WHERE cancel = 1 AND status IN ('queued', 'interrupted')",
	                          ""));
	free(ids);
	if (db_group_end(db, ok) < 0)
		return -1;
	*reaped = (long long)n;
	return 0;
}

int db_server_list(struct db *db, int live_only, struct db_server **out, size_t *n)
{
	struct dbb_stmt *st = STMT(db,
	                           "SELECT id, pid, host, gpus, device, roots, started_at,"
	                           " (julianday('now') - julianday(heartbeat_at)) * 86400.0,"
	                           " " SERVER_ALIVE("s") " FROM servers s ORDER BY id",
	                           "");
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		struct db_server sv;

		memset(&sv, 0, sizeof(sv));
		sv.id = dbb_column_int64(st, 0);
		sv.pid = dbb_column_int64(st, 1);
		sv.host = db_col_str(st, 2);
		sv.alive = dbb_column_int(st, 8) && !local_pid_gone(sv.host, sv.pid);
		if (live_only && !sv.alive) {
			free(sv.host);
			continue;
		}
		sv.gpus = db_col_str(st, 3);
		sv.device = db_col_str(st, 4);
		sv.roots = db_col_str(st, 5);
		sv.started_at = db_col_str(st, 6);
		sv.quiet = db_col_real(st, 7);
		ALLOC_GROW(*out, *n + 1, alloc);
		(*out)[(*n)++] = sv;
	}
	dbb_finalize(st);
	if (rc == DBB_DONE)
		return 0;
	while (*n)
		db_server_release(&(*out)[--(*n)]);
	free(*out);
	*out = NULL;
	return -1;
}

void db_server_release(struct db_server *s)
{
	free(s->host);
	free(s->gpus);
	free(s->device);
	free(s->roots);
	free(s->started_at);
	memset(s, 0, sizeof(*s));
}

int db_job_submit(struct db *db, const struct db_job_info *ji, long long *job_id)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "INSERT INTO jobs (submitted_by, priority, config_path, config_text,"
	         " options, gpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
	         "tIttti", ji->submitted_by, (long long)ji->priority, ji->config_path,
	         ji->config_text, ji->options, ji->gpu ? 1 : 0);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*job_id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

#define JOB_COLUMNS                                                                                \
	"SELECT j.id, j.run_id, j.server_id, j.priority, j.gpu, j.cancel, j.status,"               \
	" j.submitted_at, j.submitted_by, j.config_path, j.config_text, j.options, j.started_at,"  \
	" j.finished_at, j.message, s.host, s.pid, " SERVER_ALIVE(                                 \
	    "s") ", (julianday(coalesce(j.finished_at, 'now')) - julianday(j.started_at)) * 86400" \
		 " FROM jobs j LEFT JOIN servers s ON s.id = j.server_id"

static void read_job(struct dbb_stmt *st, struct db_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = dbb_column_int64(st, 0);
	j->run_id = dbb_column_int64(st, 1);
	j->server_id = dbb_column_int64(st, 2);
	j->priority = dbb_column_int(st, 3);
	j->gpu = dbb_column_int(st, 4);
	j->cancel = dbb_column_int(st, 5);
	j->status = db_col_str(st, 6);
	j->submitted_at = db_col_str(st, 7);
	j->submitted_by = db_col_str(st, 8);
	j->config_path = db_col_str(st, 9);
	j->config_text = db_col_str(st, 10);
	j->options = db_col_str(st, 11);
	j->started_at = db_col_str(st, 12);
	j->finished_at = db_col_str(st, 13);
	j->message = db_col_str(st, 14);
	j->host = db_col_str(st, 15);
	j->elapsed = dbb_column_null(st, 18) ? 0 : dbb_column_double(st, 18);
	j->owner_alive = j->server_id > 0 && dbb_column_int(st, 17) &&
	                 !local_pid_gone(j->host, dbb_column_int64(st, 16));
	if (!strcmp(j->status, "running") && !j->owner_alive) {
		/* derived when read; db_servers_reap() stores it */
		free(j->status);
		j->status = xstrdup("interrupted");
	}
}

int db_job_get(struct db *db, long long job_id, struct db_job *out)
{
	struct dbb_stmt *st = STMT(db, JOB_COLUMNS " WHERE j.id = ?1", "I", job_id);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		read_job(st, out);
	else if (rc == DBB_DONE)
		error("database '%s' has no job %lld", db->path, job_id);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

void db_job_release(struct db_job *j)
{
	char **s[] = {&j->status,      &j->submitted_at, &j->submitted_by, &j->config_path,
	              &j->config_text, &j->options,      &j->started_at,   &j->finished_at,
	              &j->message,     &j->host};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(s); i++)
		free(*s[i]);
	memset(j, 0, sizeof(*j));
}

int db_job_list(struct db *db, int active, struct db_job **out, size_t *n)
{
	struct dbb_stmt *st = STMT(db,
	                           JOB_COLUMNS " WHERE ?1 = 0 OR j.status IN ('queued', 'running',"
	                                       " 'interrupted') ORDER BY j.id",
	                           "i", active ? 1 : 0);
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		ALLOC_GROW(*out, *n + 1, alloc);
		read_job(st, &(*out)[(*n)++]);
	}
	dbb_finalize(st);
	if (rc == DBB_DONE)
		return 0;
	while (*n)
		db_job_release(&(*out)[--(*n)]);
	free(*out);
	*out = NULL;
	return -1;
}

int db_job_progress(struct db *db, const struct db_job *j, struct db_job_progress *p)
{
	struct strbuf sb = STRBUF_INIT;
	struct dbb_stmt *st;
	int rc;

	memset(p, 0, sizeof(*p));
	p->best = NAN;
	if (j->run_id <= 0)
		return 0;
	st =
	    STMT(db,
	         "SELECT r.generations, r.device,"
	         " (SELECT count(*) FROM evals x WHERE x.run_id = r.id),"
	         " (SELECT max(x.fitness) FROM evals x WHERE x.run_id = r.id AND x.outcome = 'ok'),"
	         " (SELECT count(DISTINCT p.generation) FROM population p WHERE p.run_id = r.id)"
	         " FROM runs r WHERE r.id = ?1",
	         "I", j->run_id);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		p->generations = dbb_column_int(st, 0);
		p->device = db_col_str(st, 1);
		p->evaluated = dbb_column_int64(st, 2);
		p->best = db_col_real(st, 3);
		p->generation = dbb_column_int(st, 4);
	}
	dbb_finalize(st);
	if (rc != DBB_ROW)
		return rc == DBB_DONE ? 0 : -1;
	/* where its candidates are being evaluated now */
	st = STMT(
	    db,
	    "SELECT DISTINCT s.host, c.gpu FROM claims c JOIN servers s ON s.id = c.server_id"
	    " WHERE c.run_id = ?1 AND c.done = 0 AND " SERVER_ALIVE("s") " AND c.gpu >= 0"
									 " ORDER BY s.host, c.gpu",
	    "I", j->run_id);
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW)
		sb_addf(&sb, "%s%s:%d", sb.len ? "," : "", dbb_column_text(st, 0),
		        dbb_column_int(st, 1));
	dbb_finalize(st);
	p->gpus = sb_detach(&sb);
	return rc == DBB_DONE ? 0 : -1;
}

void db_job_progress_release(struct db_job_progress *p)
{
	free(p->gpus);
	free(p->device);
	memset(p, 0, sizeof(*p));
}

int db_job_take(struct db *db, long long job_id, long long server_id)
{
	char *sql =
	    skip_locked(db,
	                "UPDATE jobs SET status = 'running', server_id = ?2,"
	                " started_at = coalesce(started_at, " NOW_SQL ") WHERE id = (SELECT j.id"
	                " FROM jobs j LEFT JOIN servers s ON s.id = j.server_id WHERE j.id = ?1"
	                " AND j.cancel = 0 AND (j.status IN ('queued', 'interrupted')"
	                " OR (j.status = 'running' AND (j.server_id IS NULL OR NOT " SERVER_ALIVE(
			    "s") ")))"
	                         "{skip})",
	                "j");
	int rc = EXEC(db, STMT(db, sql, "II", job_id, server_id));

	free(sql);
	if (rc < 0)
		return -1;
	return dbb_changes(db->b) > 0;
}

int db_job_set_run(struct db *db, long long job_id, long long run_id)
{
	return EXEC(db,
	            STMT(db, "UPDATE jobs SET run_id = ?2 WHERE id = ?1", "II", job_id, run_id));
}

int db_job_finish(struct db *db, long long job_id, const char *status, const char *message)
{
	if (EXEC(db, STMT(db,
	                  "UPDATE jobs SET status = ?2, message = ?3, finished_at = " NOW_SQL
	                  " WHERE id = ?1 AND status NOT IN ('done', 'failed', 'cancelled')",
	                  "Itt", job_id, status, message)) < 0)
		return -1;
	return dbb_changes(db->b) > 0;
}

int db_job_cancel(struct db *db, long long job_id, int *now)
{
	struct db_job j;
	int ok;

	*now = 0;
	if (db_group_begin(db) < 0)
		return -1;
	if (db_job_get(db, job_id, &j) < 0)
		return db_group_end(db, 0);
	if (!strcmp(j.status, "done") || !strcmp(j.status, "failed") ||
	    !strcmp(j.status, "cancelled")) {
		error("job %lld is %s already", job_id, j.status);
		db_job_release(&j);
		return db_group_end(db, 0);
	}
	if (!strcmp(j.status, "running")) {
		ok = !EXEC(db, STMT(db, "UPDATE jobs SET cancel = 1 WHERE id = ?1", "I", job_id));
	} else {
		/* nobody runs it: cancelled now (a server taking it meanwhile sees cancel) */
		ok = !EXEC(db,
		           STMT(db,
		                "UPDATE jobs SET cancel = 1, status = 'cancelled',"
		                " message = 'cancelled', finished_at = " NOW_SQL " WHERE id = ?1",
		                "I", job_id));
		*now = 1;
	}
	db_job_release(&j);
	return db_group_end(db, ok);
}

int db_claims_offer(struct db *db, long long run_id, int generation, int first_seq,
                    const char *const *hashes, size_t n)
{
	size_t i;
	int ok = 1;

	if (db_group_begin(db) < 0)
		return -1;
	for (i = 0; ok && i < n; i++)
		ok = !EXEC(db, STMT(db,
		                    "INSERT INTO claims (run_id, generation, seq, variant_hash)"
		                    " VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
		                    "Iiit", run_id, generation, first_seq + (int)i, hashes[i]));
	return db_group_end(db, ok);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int db_claims_take(struct db *db, long long run_id, int generation, long long server_id, int gpu,
                   size_t max, int *seqs, size_t *n)
{
	char *sql = skip_locked(
	    db,
	    "UPDATE claims SET server_id = ?1, gpu = ?2, claimed_at = " NOW_SQL
	    " WHERE (run_id, generation, seq) IN (SELECT c.run_id, c.generation, c.seq"
	    " FROM claims c LEFT JOIN servers s ON s.id = c.server_id"
	    " WHERE c.run_id = ?3 AND c.generation = ?4 AND c.done = 0"
	    " AND (c.server_id IS NULL OR NOT " SERVER_ALIVE("s") ") ORDER BY c.seq"
								  " LIMIT ?5{skip}) RETURNING seq",
	    "c");
	struct dbb_stmt *st =
	    STMT(db, sql, "IiIiI", server_id, gpu, run_id, generation, (long long)max);
	int rc;

	free(sql);
	*n = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW && *n < max)
		seqs[(*n)++] = dbb_column_int(st, 0);
	dbb_finalize(st);
	if (rc != DBB_DONE)
		return -1;
	qsort(seqs, *n, sizeof(*seqs), int_cmp);
	return 0;
}

int db_claim_take_seq(struct db *db, long long run_id, int generation, int seq, long long server_id,
                      int gpu)
{
	char *sql = skip_locked(
	    db,
	    "UPDATE claims SET server_id = ?1, gpu = ?2, claimed_at = " NOW_SQL
	    " WHERE (run_id, generation, seq) IN (SELECT c.run_id, c.generation, c.seq"
	    " FROM claims c LEFT JOIN servers s ON s.id = c.server_id"
	    " WHERE c.run_id = ?3 AND c.generation = ?4 AND c.seq = ?5"
	    " AND c.done = 0 AND (c.server_id IS NULL OR NOT " SERVER_ALIVE("s") "){skip})",
	    "c");
	int rc = EXEC(db, STMT(db, sql, "IiIii", server_id, gpu, run_id, generation, seq));

	free(sql);
	if (rc < 0)
		return -1;
	return dbb_changes(db->b) > 0;
}

int db_claim_is_done(struct db *db, long long run_id, int generation, int seq)
{
	struct dbb_stmt *st = STMT(db,
	                           "SELECT done FROM claims WHERE run_id = ?1 AND generation = ?2"
	                           " AND seq = ?3",
	                           "Iii", run_id, generation, seq);
	int rc, done = 0;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		done = dbb_column_int(st, 0);
	dbb_finalize(st);
	return rc < 0 ? -1 : done;
}

static int claims_set(struct db *db, const char *sql, long long run_id, int generation,
                      const int *seqs, size_t n)
{
	size_t i;
	int ok = 1;

	if (!n)
		return 0;
	if (db_group_begin(db) < 0)
		return -1;
	for (i = 0; ok && i < n; i++)
		ok = !EXEC(db, STMT(db, sql, "Iii", run_id, generation, seqs[i]));
	return db_group_end(db, ok);
}

int db_claims_done(struct db *db, long long run_id, int generation, const int *seqs, size_t n)
{
	return claims_set(db,
	                  "UPDATE claims SET done = 1 WHERE run_id = ?1 AND generation = ?2"
	                  " AND seq = ?3",
	                  run_id, generation, seqs, n);
}

int db_claims_return(struct db *db, long long run_id, int generation, const int *seqs, size_t n)
{
	return claims_set(db,
	                  "UPDATE claims SET server_id = NULL, gpu = NULL, claimed_at = NULL"
	                  " WHERE run_id = ?1 AND generation = ?2 AND seq = ?3 AND done = 0",
	                  run_id, generation, seqs, n);
}

int db_claims_release(struct db *db, long long server_id, int gpu)
{
	return EXEC(db, STMT(db,
	                     "UPDATE claims SET server_id = NULL, gpu = NULL, claimed_at = NULL"
	                     " WHERE server_id = ?1 AND gpu = ?2 AND done = 0",
	                     "Ii", server_id, gpu));
}

int db_claims_state(struct db *db, long long run_id, int generation, long long *offered,
                    long long *done, long long *held)
{
	struct dbb_stmt *st = STMT(
	    db,
	    "SELECT count(*), coalesce(sum(c.done), 0),"
	    " coalesce(sum(CASE WHEN c.done = 0 AND c.server_id IS NOT NULL"
	    " AND " SERVER_ALIVE("s") " THEN 1 ELSE 0 END), 0)"
				      " FROM claims c LEFT JOIN servers s ON s.id = c.server_id"
				      " WHERE c.run_id = ?1 AND c.generation = ?2",
	    "Ii", run_id, generation);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		*offered = dbb_column_int64(st, 0);
		*done = dbb_column_int64(st, 1);
		*held = dbb_column_int64(st, 2);
	}
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}
