/* Unit tests for the database backend: one statement interface over SQLite and a real PostgreSQL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_fixture.h"
#include "tuner/common.h"
#include "tuner/db-backend.h"
#include "tuner/pq.h"

/* ------------------------------------------------------ helpers */

static struct dbb_stmt *prep(struct dbb *b, const char *sql)
{
	struct dbb_stmt *st = NULL;

	if (dbb_prepare(b, sql, &st, NULL) < 0)
		fail_msg("prepare '%s': %s", sql, dbb_errmsg(b));
	return st;
}

static void exec_ok(struct dbb *b, const char *sql)
{
	struct dbb_stmt *st = prep(b, sql);
	int rc = dbb_step(st);

	if (rc != DBB_DONE)
		fail_msg("'%s': %d %s", sql, rc, dbb_errmsg(b));
	dbb_finalize(st);
}

static struct dbb *open_sqlite(void)
{
	sqlite3 *h = NULL;

	assert_int_equal(sqlite3_open(":memory:", &h), SQLITE_OK);
	return dbb_sqlite(h);
}

static struct dbb *open_pg(void)
{
	char *url = pg_fixture_db("test_db_backend"), why[512];
	struct dbb *b = NULL;

	if (!url)
		fail_msg("no PostgreSQL server");
	if (dbb_pg_connect(url, &b, why, sizeof(why)) < 0)
		fail_msg("connect: %s", why);
	free(url);
	return b;
}

/* ------------------------------------------------------ the battery both backends pass */

static void battery(struct dbb *b)
{
	struct dbb_stmt *st;
	const char *tail = NULL;
	int rc;

	/* a script of several statements */
	assert_int_equal(dbb_exec_script(b, "CREATE TABLE t (id BIGINT PRIMARY KEY, s TEXT,"
	                                    " d DOUBLE PRECISION, n BIGINT);"
	                                    " CREATE TABLE u (k TEXT PRIMARY KEY, v BIGINT);"),
	                 0);

	/* every binding type round-trips exactly, NULLs included */
	st = prep(b, "INSERT INTO t (id, s, d, n) VALUES (?1, ?2, ?3, ?4)");
	assert_int_equal(dbb_param_count(st), 4);
	assert_false(dbb_readonly(st));
	assert_int_equal(dbb_bind_int64(st, 1, 9007199254740993LL), 0);
	assert_int_equal(dbb_bind_text(st, 2, "it's ?1 -- not a parameter", DBB_TEXT), 0);
	assert_int_equal(dbb_bind_double(st, 3, 0.1 + 0.2), 0);
	assert_int_equal(dbb_bind_null(st, 4, DBB_INT), 0);
	assert_int_equal(dbb_step(st), DBB_DONE);
	assert_int_equal(dbb_changes(b), 1);
	/* run again with other bindings */
	dbb_reset(st);
	assert_int_equal(dbb_bind_int64(st, 1, -(1LL << 62)), 0);
	assert_int_equal(dbb_bind_text(st, 2, NULL, DBB_TEXT), 0);
	assert_int_equal(dbb_bind_double(st, 3, 1e300), 0);
	assert_int_equal(dbb_bind_int64(st, 4, 7), 0);
	assert_int_equal(dbb_step(st), DBB_DONE);
	dbb_finalize(st);

	st = prep(b, "SELECT id, s, d, n, n IS NULL AS missing FROM t ORDER BY id");
	assert_true(dbb_readonly(st));
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_count(st), 5);
	assert_string_equal(dbb_column_name(st, 4), "missing");
	assert_int_equal(dbb_column_int64(st, 0), -(1LL << 62));
	assert_true(dbb_column_null(st, 1));
	assert_null(dbb_column_text(st, 1));
	assert_true(dbb_column_double(st, 2) == 1e300);
	assert_int_equal(dbb_column_int(st, 3), 7);
	assert_int_equal(dbb_column_int(st, 4), 0); /* false, as an integer */
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int64(st, 0), 9007199254740993LL);
	assert_string_equal(dbb_column_text(st, 1), "it's ?1 -- not a parameter");
	assert_true(dbb_column_double(st, 2) == 0.1 + 0.2); /* every bit of it */
	assert_true(dbb_column_null(st, 3));
	assert_int_equal(dbb_column_int64(st, 3), 0);
	assert_int_equal(dbb_column_int(st, 4), 1);
	assert_int_equal(dbb_step(st), DBB_DONE);
	dbb_finalize(st);

	/* a parameter used twice, and one the query leaves untyped unless told */
	st = prep(b, "SELECT count(*) FROM t WHERE (?1 IS NULL OR s = ?1) AND id > ?2");
	assert_int_equal(dbb_bind_null(st, 1, DBB_TEXT), 0);
	assert_int_equal(dbb_bind_int64(st, 2, 0), 0);
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int(st, 0), 1);
	dbb_finalize(st);

	/* RETURNING, ON CONFLICT with a qualified column, the count of changed rows */
	st = prep(b, "INSERT INTO u (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE"
	             " SET v = u.v + excluded.v RETURNING v");
	assert_int_equal(dbb_bind_text(st, 1, "a", DBB_TEXT), 0);
	assert_int_equal(dbb_bind_int64(st, 2, 5), 0);
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int(st, 0), 5);
	assert_int_equal(dbb_step(st), DBB_DONE);
	dbb_reset(st);
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int(st, 0), 10);
	dbb_finalize(st);
	exec_ok(b, "UPDATE t SET n = 1");
	assert_int_equal(dbb_changes(b), 2);

	/* transactions: open, rolled back, gone */
	assert_false(dbb_in_transaction(b));
	exec_ok(b, "BEGIN");
	assert_true(dbb_in_transaction(b));
	exec_ok(b, "DELETE FROM t");
	assert_int_equal(dbb_changes(b), 2);
	exec_ok(b, "ROLLBACK");
	assert_false(dbb_in_transaction(b));
	st = prep(b, "SELECT count(*) FROM t");
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int(st, 0), 2);
	dbb_finalize(st);

	/* an error says what went wrong, on one line */
	st = prep(b, "INSERT INTO u (k, v) VALUES ('a', 1)");
	rc = dbb_step(st);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(dbb_errmsg(b), "u"));
	assert_null(strchr(dbb_errmsg(b), '\n'));
	dbb_finalize(st);
	if (dbb_kind(b) == DBB_PG)
		assert_string_equal(dbb_sqlstate(b), "23505"); /* unique_violation */

	/* the first statement of several, and the rest */
	st = NULL;
	assert_int_equal(dbb_prepare(b, "SELECT 1; SELECT 2", &st, &tail), 0);
	assert_string_equal(tail, " SELECT 2");
	assert_int_equal(dbb_step(st), DBB_ROW);
	assert_int_equal(dbb_column_int(st, 0), 1);
	dbb_finalize(st);
}

static void test_sqlite(void **state)
{
	struct dbb *b = open_sqlite();

	assert_int_equal(dbb_kind(b), DBB_SQLITE);
	assert_non_null(dbb_sqlite_handle(b));
	battery(b);
	assert_int_equal(dbb_close(b), 0);
}

static void test_pg(void **state)
{
	struct dbb *b = open_pg();

	assert_int_equal(dbb_kind(b), DBB_PG);
	assert_null(dbb_sqlite_handle(b));
	battery(b);
	assert_int_equal(dbb_close(b), 0);
}

/* Refused connections say why, without the password. */
static void test_pg_refused(void **state)
{
	const char *base = getenv("TUNER_TEST_PG");
	char why[512], *url;
	struct dbb *b = NULL;

	assert_non_null(base);
	assert_non_null(strstr(base, "/postgres?"));
	url = xasprintf("postgresql://nobody:s3cret@/postgres?%s", strchr(base, '?') + 1);
	assert_int_equal(dbb_pg_connect(url, &b, why, sizeof(why)), -1);
	assert_null(b);
	assert_non_null(strstr(why, "nobody"));
	assert_null(strstr(why, "s3cret"));
	free(url);
}

/* ------------------------------------------------------ text only */

static void test_pg_sql(void **state)
{
	size_t end;
	int n;
	char *s;

	s = dbb_pg_sql("SELECT a FROM t WHERE b = ?2 AND c = '?1''?3' AND \"?4\" = ?1 -- ?9\n"
	               "/* ?8 */ AND d = ?10; SELECT ?5",
	               &end, &n);
	assert_string_equal(s,
	                    "SELECT a FROM t WHERE b = $2 AND c = '?1''?3' AND \"?4\" = $1 -- ?9\n"
	                    "/* ?8 */ AND d = $10");
	assert_int_equal(n, 10);
	assert_int_equal(end, strlen(s)); /* the same length here: ?N and $N */
	free(s);
}

static void test_redact(void **state)
{
	struct {
		const char *in, *out;
		int pw;
	} cases[] = {
	    {"postgresql://u:pw@host:5432/db", "postgresql://u:***@host:5432/db", 1},
	    {"postgres://u@host/db?sslmode=require", "postgres://u@host/db?sslmode=require", 0},
	    {"postgresql:///db?host=/tmp&password=x&user=u",
	     "postgresql:///db?host=/tmp&password=***&user=u", 1},
	    {"postgresql://u:a@b@h/db?password=c", "postgresql://u:***@h/db?password=***", 1},
	    {"tuner.db", "tuner.db", 0},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *r = pq_redact(cases[i].in);

		assert_string_equal(r, cases[i].out);
		assert_int_equal(pq_has_password(cases[i].in), cases[i].pw);
		free(r);
	}
	assert_true(pq_is_url("postgresql://x"));
	assert_true(pq_is_url("postgres://x"));
	assert_false(pq_is_url("postgresql.db"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pg_sql),     cmocka_unit_test(test_redact),
	    cmocka_unit_test(test_sqlite),     cmocka_unit_test(test_pg),
	    cmocka_unit_test(test_pg_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
