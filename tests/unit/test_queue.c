/* Unit tests for the job queue on SQLite and on a real PostgreSQL: jobs, claims, heartbeats. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "pg_fixture.h"
#include "tuner/db.h"

/* ------------------------------------------------------ fixtures */

static int use_pg;      /* the group: 0 SQLite, 1 PostgreSQL */
static char dir[64];    /* SQLite's directory */
static char *store;     /* the file or the URL */
static long long run_a; /* a run the claims belong to */

static struct db *open_store(void)
{
	struct db *db = NULL;

	if (db_open(store, &db) < 0)
		fail_msg("db_open('%s') failed: %s", store, captured);
	return db;
}

static void make_run(void)
{
	struct run_info ri;
	struct db *db = open_store();

	memset(&ri, 0, sizeof(ri));
	ri.command = "test";
	ri.template_name = "t";
	ri.template_hash = "h";
	ri.arch = "sm_90";
	ri.device = ri.driver = "none";
	ri.nvrtc = "13.0";
	ri.strategy = "evolve";
	ri.shapes = "[]";
	ri.generations = ri.population = 1;
	assert_int_equal(db_run_create(db, &ri, &run_a), 0);
	db_close(db);
}

static int setup(void **state)
{
	capture_start();
	if (use_pg) {
		store = pg_fixture_db("test_queue");
		if (!store)
			return -1;
	} else {
		snprintf(dir, sizeof(dir), "/tmp/test_queue.XXXXXX");
		if (!mkdtemp(dir))
			return -1;
		store = xasprintf("%s/q.db", dir);
	}
	make_run();
	return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int teardown(void **state)
{
	capture_stop();
	free(store);
	store = NULL;
	return use_pg ? 0 : nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int group_sqlite(void **state)
{
	use_pg = 0;
	return 0;
}

static int group_pg(void **state)
{
	use_pg = 1;
	return 0;
}

static long long server(struct db *db, double ttl)
{
	struct db_server_info si = {"0", "fake GPU", "[\"/tmp\"]", ttl};
	long long id = 0;

	assert_int_equal(db_server_register(db, &si, &id), 0);
	assert_true(id > 0);
	return id;
}

static long long submit(struct db *db, int priority)
{
	struct db_job_info ji = {"/tmp/c.yaml", "text: 1\n", "{}", "me@here", priority, 0};
	long long id = 0;

	assert_int_equal(db_job_submit(db, &ji, &id), 0);
	return id;
}

static const char *status(struct db *db, long long job, struct db_job *j)
{
	assert_int_equal(db_job_get(db, job, j), 0);
	return j->status;
}

static void offer(struct db *db, int gen, size_t n)
{
	const char *h[16];
	char names[16][8];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "v%zu", i);
		h[i] = names[i];
	}
	assert_int_equal(db_claims_offer(db, run_a, gen, 0, h, n), 0);
}

/* "0,1," from seqs. */
static const char *seqs_text(const int *seqs, size_t n)
{
	static char buf[128];
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%d,", seqs[i]);
	return buf;
}

/* ------------------------------------------------------ jobs */

static void test_job_lifecycle(void **state)
{
	struct db *db = open_store(), *db2 = open_store();
	long long a = server(db, 60), b = server(db2, 60), j1 = submit(db, 0), j2 = submit(db, 5);
	struct db_job j, *list;
	size_t n;

	assert_true(j2 > j1);
	assert_int_equal(db_job_list(db, 1, &list, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(list[0].id, j1);
	assert_int_equal(list[1].priority, 5);
	assert_string_equal(list[1].config_text, "text: 1\n");
	db_job_release(&list[0]);
	db_job_release(&list[1]);
	free(list);

	/* one server takes it; the other, seeing its owner alive, does not */
	assert_int_equal(db_job_take(db, j1, a), 1);
	assert_int_equal(db_job_take(db2, j1, b), 0);
	assert_string_equal(status(db2, j1, &j), "running");
	assert_int_equal(j.server_id, a);
	assert_true(j.owner_alive);
	assert_non_null(j.started_at);
	db_job_release(&j);
	assert_int_equal(db_job_set_run(db, j1, run_a), 0);

	/* finished once: the second finish changes nothing */
	assert_int_equal(db_job_finish(db, j1, "done", NULL), 1);
	assert_int_equal(db_job_finish(db2, j1, "failed", "late"), 0);
	assert_string_equal(status(db, j1, &j), "done");
	assert_int_equal(j.run_id, run_a);
	assert_null(j.message);
	assert_non_null(j.finished_at);
	db_job_release(&j);

	/* the active list no longer holds it */
	assert_int_equal(db_job_list(db, 1, &list, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(list[0].id, j2);
	db_job_release(&list[0]);
	free(list);
	db_close(db);
	db_close(db2);
}

static void test_cancel(void **state)
{
	struct db *db = open_store();
	long long a = server(db, 60), queued = submit(db, 0), running = submit(db, 0);
	struct db_job j;
	int now = -1;

	assert_int_equal(db_job_cancel(db, queued, &now), 0);
	assert_int_equal(now, 1);
	assert_string_equal(status(db, queued, &j), "cancelled");
	db_job_release(&j);
	assert_int_equal(db_job_take(db, queued, a), 0); /* nobody takes a cancelled job */

	assert_int_equal(db_job_take(db, running, a), 1);
	assert_int_equal(db_job_cancel(db, running, &now), 0);
	assert_int_equal(now, 0); /* its owner stops it */
	assert_string_equal(status(db, running, &j), "running");
	assert_int_equal(j.cancel, 1);
	db_job_release(&j);

	capture_start();
	assert_int_equal(db_job_cancel(db, queued, &now), -1);
	assert_non_null(strstr(captured, "cancelled already"));
	capture_start();
	assert_int_equal(db_job_cancel(db, 999, &now), -1);
	assert_non_null(strstr(captured, "no job 999"));
	db_close(db);
}

/* ------------------------------------------------------ claims */

static void test_claims(void **state)
{
	struct db *db = open_store(), *db2 = open_store();
	long long a = server(db, 60), b = server(db2, 60), offered, done, held;
	int seqs[16];
	size_t n;

	offer(db, 0, 6);
	offer(db2, 0, 6); /* every server offers the same: nothing changes */
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 2, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,");
	assert_int_equal(db_claims_take(db2, run_a, 0, b, 3, 10, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "2,3,4,5,");
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 2, seqs, &n), 0);
	assert_int_equal(n, 0); /* all held by live servers */
	assert_int_equal(db_claim_take_seq(db, run_a, 0, 4, a, 0), 0);

	seqs[0] = 0;
	seqs[1] = 1;
	assert_int_equal(db_claims_done(db, run_a, 0, seqs, 2), 0);
	assert_int_equal(db_claim_is_done(db, run_a, 0, 1), 1);
	assert_int_equal(db_claim_is_done(db, run_a, 0, 2), 0);
	assert_int_equal(db_claims_state(db, run_a, 0, &offered, &done, &held), 0);
	assert_int_equal(offered, 6);
	assert_int_equal(done, 2);
	assert_int_equal(held, 4);

	/* returned claims are taken again, lowest first; done ones never */
	seqs[0] = 3;
	seqs[1] = 5;
	assert_int_equal(db_claims_return(db2, run_a, 0, seqs, 2), 0);
	assert_int_equal(db_claims_take(db, run_a, 0, a, 1, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "3,5,");
	/* what one GPU held goes back (its lane lost the store), the other GPU's stays */
	offer(db, 2, 3);
	assert_int_equal(db_claims_take(db, run_a, 2, a, 0, 2, seqs, &n), 0);
	assert_int_equal(db_claims_take(db, run_a, 2, a, 1, 1, seqs, &n), 0);
	assert_int_equal(db_claims_release(db, a, 0), 0);
	assert_int_equal(db_claims_take(db2, run_a, 2, b, 0, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,");
	/* the next generation is a queue of its own */
	offer(db, 1, 2);
	assert_int_equal(db_claims_take(db2, run_a, 1, b, 0, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,");
	db_close(db);
	db_close(db2);
}

/* A server that stops heartbeating is dead after its ttl: its claims and jobs go to others. */
static void test_failover(void **state)
{
	struct db *db = open_store(), *db2 = open_store();
	long long a = server(db, 0.5), b = server(db2, 60), job = submit(db, 0), reaped = -1;
	struct db_job j;
	struct db_server *sv;
	int seqs[16];
	size_t n, i;

	offer(db, 0, 4);
	assert_int_equal(db_job_take(db, job, a), 1);
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 3, seqs, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(db_job_take(db2, job, b), 0);
	usleep(800 * 1000); /* a falls silent past its ttl */
	assert_string_equal(status(db2, job, &j), "interrupted");
	assert_false(j.owner_alive);
	db_job_release(&j);
	assert_int_equal(db_server_list(db2, 1, &sv, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sv[0].id, b);
	for (i = 0; i < n; i++)
		db_server_release(&sv[i]);
	free(sv);

	/* the live server takes over what a held */
	assert_int_equal(db_claims_take(db2, run_a, 0, b, 2, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,2,3,");
	assert_int_equal(db_job_take(db2, job, b), 1);
	assert_string_equal(status(db, job, &j), "running");
	assert_int_equal(j.server_id, b);
	db_job_release(&j);

	/* the reaper stores it; a heartbeat brings a alive again, with nothing back */
	assert_int_equal(db_servers_reap(db2, &reaped), 0);
	assert_int_equal(reaped, 1);
	assert_int_equal(db_server_heartbeat(db, a), 0);
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 8, seqs, &n), 0);
	assert_int_equal(n, 0);

	/* a stopping server returns its claims and leaves its jobs interrupted */
	assert_int_equal(db_server_stop(db2, b), 0);
	assert_string_equal(status(db, job, &j), "interrupted");
	db_job_release(&j);
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,2,3,");
	db_close(db);
	db_close(db2);
}

/* A server of this host whose process is gone is dead at once, ttl or not. */
static void test_dead_process(void **state)
{
	struct db *db;
	long long reaped = -1, b;
	int seqs[16], st;
	size_t n;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct db *c = NULL;
		long long a;

		if (db_open(store, &c) < 0)
			_exit(1);
		a = server(c, 3600);
		offer(c, 0, 3);
		if (db_claims_take(c, run_a, 0, a, 0, 2, seqs, &n) < 0 || n != 2)
			_exit(2);
		_exit(0); /* killed, as it were: no stop, no word */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	db = open_store();
	b = server(db, 60);
	assert_int_equal(db_servers_reap(db, &reaped), 0);
	assert_int_equal(reaped, 1);
	assert_int_equal(db_claims_take(db, run_a, 0, b, 0, 8, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,2,");
	db_close(db);
}

/* ------------------------------------------------------ PostgreSQL only */

/* A claimer skips rows another holds in an open transaction instead of waiting for it. */
static void test_skip_locked(void **state)
{
	struct db *db = open_store(), *db2 = open_store();
	long long a = server(db, 60), b = server(db2, 60);
	int seqs[16];
	size_t n;
	double t0;

	offer(db, 0, 4);
	assert_int_equal(db_begin(db), 0);
	assert_int_equal(db_claims_take(db, run_a, 0, a, 0, 2, seqs, &n), 0);
	assert_string_equal(seqs_text(seqs, n), "0,1,");
	t0 = now_seconds();
	assert_int_equal(db_claims_take(db2, run_a, 0, b, 1, 2, seqs, &n), 0);
	assert_true(now_seconds() - t0 < 2.0);
	assert_string_equal(seqs_text(seqs, n), "2,3,");
	assert_int_equal(db_commit(db), 0);
	db_close(db);
	db_close(db2);
}

/* The tables and columns (and NOT NULL) of db/schema.sql and db/pg/schema.sql, compared. */
struct cols {
	struct strbuf sb;
};

static int add_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct cols *c = ctx;
	int i;

	for (i = 0; i < ncols; i++)
		sb_addf(&c->sb, "%s%s", v[i] ? v[i] : "NULL", i + 1 < ncols ? " " : "\n");
	return 0;
}

/* A query that must work, row by row into c. */
static void rows(struct db *db, const char *sql, struct cols *c)
{
	capture_start();
	if (db_exec_callback(db, sql, add_row, c, NULL) < 0)
		fail_msg("'%s': %s", sql, captured);
}

static void test_schema_same(void **state)
{
	char tmp[64], *file;
	struct db *lite = NULL, *pg = open_store();
	struct cols a = {STRBUF_INIT}, b = {STRBUF_INIT};

	snprintf(tmp, sizeof(tmp), "/tmp/test_queue.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	file = xasprintf("%s/s.db", tmp);
	assert_int_equal(db_open(file, &lite), 0);
	rows(lite,
	     "SELECT m.name, p.name, CASE WHEN p.\"notnull\" OR p.pk"
	     " THEN 1 ELSE 0 END FROM sqlite_schema m"
	     " JOIN pragma_table_info(m.name) p WHERE m.type = 'table'"
	     " ORDER BY 1, 2",
	     &a);
	rows(pg,
	     "SELECT table_name::text COLLATE \"C\", column_name::text COLLATE \"C\", CASE WHEN "
	     "is_nullable ="
	     " 'NO' THEN 1 ELSE 0 END FROM information_schema.columns"
	     " WHERE table_schema = current_schema()"
	     " AND table_name <> 'tuner_schema'"
	     " ORDER BY 1, 2",
	     &b);
	assert_true(a.sb.len > 500);
	assert_string_equal(a.sb.buf, b.sb.buf);
	sb_reset(&a.sb);
	sb_reset(&b.sb);
	/* and the same indexes */
	rows(lite,
	     "SELECT tbl_name, name FROM sqlite_schema WHERE type ="
	     " 'index' AND name NOT LIKE 'sqlite_%' ORDER BY 1, 2",
	     &a);
	rows(pg,
	     "SELECT tablename::text COLLATE \"C\", indexname::text COLLATE \"C\" FROM pg_indexes "
	     "WHERE"
	     " schemaname = current_schema() AND indexname NOT LIKE"
	     " '%\\_pkey' AND indexname NOT LIKE '%\\_key'"
	     " ORDER BY 1, 2",
	     &b);
	assert_string_equal(a.sb.buf, b.sb.buf);
	assert_int_equal(db_schema_version(pg), db_sql_version);
	sb_release(&a.sb);
	sb_release(&b.sb);
	db_close(lite);
	db_close(pg);
	unlink(file);
	free(file);
	rmdir(tmp);
}

/* Servers that start together on a fresh database set its schema up once, in turn. */
static void test_concurrent_open(void **state)
{
	char *url = pg_fixture_db("test_queue_fresh");
	pid_t pids[4];
	int i, st, ok = 0;

	assert_non_null(url);
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct db *db = NULL;

			_exit(db_open(url, &db) == 0 && db_schema_version(db) == db_sql_version
			          ? 0
			          : 1);
		}
	}
	for (i = 0; i < 4; i++)
		if (waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && !WEXITSTATUS(st))
			ok++;
	assert_int_equal(ok, 4);
	free(url);
}

int main(void)
{
	const struct CMUnitTest both[] = {
	    cmocka_unit_test_setup_teardown(test_job_lifecycle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_claims, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failover, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dead_process, setup, teardown),
	};
	const struct CMUnitTest pg_only[] = {
	    cmocka_unit_test_setup_teardown(test_skip_locked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_schema_same, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_open, setup, teardown),
	};
	int failed = 0;

	failed += cmocka_run_group_tests_name("sqlite", both, group_sqlite, NULL);
	failed += cmocka_run_group_tests_name("postgresql", both, group_pg, NULL);
	failed += cmocka_run_group_tests_name("postgresql only", pg_only, group_pg, NULL);
	return failed;
}
