/* Unit tests for the SQLite store: schema and migrations, round trips, transactions, two processes,
 * crashes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "capture.h"
#include "tuner/db.h"

/* ------------------------------------------------------ fixtures */

static char dir[64];
static char path[128];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_db.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.db", dir);
	capture_start();
	return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int teardown(void **state)
{
	capture_stop();
	return nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

static struct db *open_ok(void)
{
	struct db *db = NULL;

	if (db_open(path, &db) < 0)
		fail_msg("db_open('%s') failed: %s", path, captured);
	assert_non_null(db);
	return db;
}

/* A value from the file through a connection of its own, as another process would see it. */
static long long raw_int(const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	long long v = -1;

	assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("'%s': %s", sql, sqlite3_errmsg(h));
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static void raw_exec(const char *sql)
{
	sqlite3 *h;

	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("'%s': %s", sql, sqlite3_errmsg(h));
	sqlite3_close(h);
}

/* The first column of the first row of a query, as text, through db_exec_callback. */
struct first {
	char text[4096];
	int rows;
	int null;
};

static int first_row(void *ctx, int ncols, const char *const *values, const char *const *names)
{
	struct first *f = ctx;

	if (!f->rows++) {
		f->null = !values[0];
		snprintf(f->text, sizeof(f->text), "%s", values[0] ? values[0] : "");
	}
	return 0;
}

static struct first query1(struct db *db, const char *sql, const char *param)
{
	struct first f;

	memset(&f, 0, sizeof(f));
	if (db_exec_callback(db, sql, first_row, &f, param, NULL) < 0)
		fail_msg("'%s' failed: %s", sql, captured);
	return f;
}

static long long count(struct db *db, const char *table)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return atoll(query1(db, sql, NULL).text);
}

/* Fake but well-formed 32-hex-digit hashes. */
static void fake_hash(char out[HASH_HEX_LEN], const char *prefix, int n)
{
	char tail[HASH_HEX_LEN];

	snprintf(tail, sizeof(tail), "%032x", (unsigned)n);
	snprintf(out, HASH_HEX_LEN, "%s%s", prefix, tail + strlen(prefix));
}

static long long add_variant(struct db *db, const char *hash, const char *params)
{
	long long id = 0;
	int created = -1;

	if (db_variant_upsert(db, hash, "flash_fwd", "tmplhash", "sm_90", params, "-O3", &id,
	                      &created) < 0)
		fail_msg("upsert '%s': %s", hash, captured);
	return id;
}

static const struct run_info test_run = {
    .config_path = "configs/h100.yaml",
    .config_text = "arch: sm_90\n",
    .template_name = "flash_fwd",
    .template_hash = "tmplhash",
    .arch = "sm_90",
    .device = "NVIDIA H100 80GB HBM3",
    .driver = "580.159.04",
    .nvrtc = "13.0",
    .strategy = "evolve",
    .shapes = "[{\"name\":\"s512\",\"B\":1,\"H\":8,\"S\":512,\"D\":64}]",
    .command = "tuner run --config configs/h100.yaml",
    .seed = 42,
    .generations = 10,
    .population = 16,
    .gpu = 1,
};

static long long add_run(struct db *db)
{
	long long id = 0;

	if (db_run_create(db, &test_run, &id) < 0)
		fail_msg("db_run_create: %s", captured);
	return id;
}

/* Run fn in a child process; returns its exit status (or 128 + signal). */
static int in_child(void (*fn)(void), int quiet)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (quiet && !freopen("/dev/null", "w", stderr))
			_exit(99);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* --------------------------------------------- create, migrate, versions */

static int table_names(void *ctx, int ncols, const char *const *values, const char *const *names)
{
	struct strbuf *sb = ctx;

	sb_addf(sb, "%s ", values[0]);
	return 0;
}

static void test_create(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct db *db;

	assert_false(exists(path));
	db = open_ok();
	assert_true(exists(path));
	assert_int_equal(db_schema_version(db), db_sql_version);
	assert_int_equal(db_sql_version, 1);
	assert_string_equal(db_path(db), path);
	assert_int_equal(db_exec_callback(db,
	                                  "SELECT name FROM sqlite_schema WHERE type = 'table'"
	                                  " ORDER BY name",
	                                  table_names, &sb, NULL),
	                 0);
	assert_string_equal(sb.buf,
	                    "builds elite evals gates measurements population runs variants ");
	sb_release(&sb);
	/* WAL is a property of the file: a second connection sees it. */
	assert_int_equal(query1(db, "PRAGMA synchronous", NULL).text[0], '1'); /* NORMAL */
	db_close(db);
	assert_int_equal(raw_int("PRAGMA user_version"), 1);
	{
		sqlite3 *h;
		sqlite3_stmt *st;

		assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL),
		                 SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
		sqlite3_finalize(st);
		sqlite3_close(h);
	}
	assert_int_equal(nerrors, 0);
}

/* The compiled-in SQL is exactly what is in db/ (the generated file is not stale). */
static void test_embedded_sql_matches_files(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	const char *const *line;
	char *text = NULL;
	glob_t g;
	size_t n = 0;

	for (line = db_sql_schema; *line; line++)
		sb_adds(&sb, *line);
	if (read_file("db/schema.sql", &text, NULL) < 0)
		fail_msg("run the tests from the repository root: cannot read db/schema.sql");
	assert_string_equal(sb.buf, text);
	free(text);
	sb_release(&sb);
	while (db_sql_migrations[n].name)
		n++;
	if (glob("db/migrations/*.sql", 0, NULL, &g) == GLOB_NOMATCH)
		g.gl_pathc = 0;
	assert_int_equal(n, g.gl_pathc);
	assert_int_equal(db_sql_version, n + 1);
	if (g.gl_pathc)
		globfree(&g);
}

static void test_foreign_keys_on(void **state)
{
	struct db *db = open_ok();

	assert_int_equal(db_gate_record(db, 99, 98, "smem", "", REJECT_SMEM, "too big"), -1);
	assert_non_null(strstr(captured, "FOREIGN KEY constraint failed"));
	assert_non_null(strstr(captured, path));
	assert_non_null(strstr(captured, "db.c:")); /* the call site */
	assert_int_equal(count(db, "gates"), 0);
	db_close(db);
}

static void test_reopen_is_idempotent(void **state)
{
	struct db *db = open_ok();
	long long id = add_variant(db, "aaaa0000000000000000000000000001", "A=1");

	db_close(db);
	db = open_ok();
	assert_int_equal(db_schema_version(db), 1);
	assert_int_equal(count(db, "variants"), 1);
	assert_int_equal(add_variant(db, "aaaa0000000000000000000000000001", "A=1"), id);
	db_close(db);
	assert_int_equal(nerrors, 0);
}

/* The schema at versions 2 and 3 in these tests: version 1 plus a table, plus another. */
#define NOTES_SQL "CREATE TABLE notes (variant_id INTEGER REFERENCES variants (id), text TEXT);\n"
#define TAGS_SQL  "CREATE TABLE tags (name TEXT);\n"

static char *schema_v1(void)
{
	struct strbuf sb = STRBUF_INIT;
	const char *const *line;

	for (line = db_sql_schema; *line; line++)
		sb_adds(&sb, *line);
	return sb_detach(&sb);
}

static int open_with(const char *schema, int version, const struct db_migration *m, struct db **db)
{
	capture_start();
	return db_open_schema(path, schema, version, m, db);
}

static void test_migrate_twice(void **state)
{
	static const struct db_migration none[] = {{0, NULL, NULL}};
	static const struct db_migration to2[] = {
	    {2, "0002-notes.sql", NOTES_SQL "INSERT INTO notes SELECT id, params FROM variants;\n"},
	    {0, NULL, NULL},
	};
	static const struct db_migration to3[] = {
	    {2, "0002-notes.sql", NOTES_SQL},
	    {3, "0003-tags.sql", TAGS_SQL},
	    {0, NULL, NULL},
	};
	char *v1 = schema_v1();
	char *v2 = xasprintf("%s%s", v1, NOTES_SQL);
	char *v3 = xasprintf("%s%s", v2, TAGS_SQL);
	struct db *db;

	assert_int_equal(open_with(v1, 1, none, &db), 0);
	add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	db_close(db);

	/* An old database gets the migration, data kept. */
	assert_int_equal(open_with(v2, 2, to2, &db), 0);
	assert_int_equal(db_schema_version(db), 2);
	assert_string_equal(query1(db, "SELECT text FROM notes", NULL).text, "A=1");
	/* Foreign keys are back on after the migration. */
	assert_int_equal(db_gate_record(db, 99, 98, "smem", "", REJECT_SMEM, "x"), -1);
	db_close(db);

	/* Again: nothing to do (the CREATE TABLE would fail if it ran twice). */
	assert_int_equal(open_with(v2, 2, to2, &db), 0);
	assert_int_equal(db_schema_version(db), 2);
	assert_int_equal(count(db, "notes"), 1);
	db_close(db);

	/* One version further: only the newer migration runs. */
	assert_int_equal(open_with(v3, 3, to3, &db), 0);
	assert_int_equal(db_schema_version(db), 3);
	assert_int_equal(count(db, "notes"), 1);
	assert_int_equal(count(db, "tags"), 0);
	db_close(db);

	/* A fresh database is created from the whole schema, without running migrations. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(open_with(v3, 3, to3, &db), 0);
	assert_int_equal(db_schema_version(db), 3);
	assert_int_equal(count(db, "notes"), 0);
	assert_int_equal(count(db, "tags"), 0);
	db_close(db);
	free(v1);
	free(v2);
	free(v3);
}

/* A failing migration leaves the database at the last version that applied, whole. */
static void test_migration_is_one_transaction(void **state)
{
	static const struct db_migration none[] = {{0, NULL, NULL}};
	static const struct db_migration bad[] = {
	    {2, "0002-notes.sql", NOTES_SQL},
	    {3, "0003-broken.sql",
	     "CREATE TABLE more (x);\nINSERT INTO more VALUES (1);\nSELECT * FROM nowhere;\n"},
	    {0, NULL, NULL},
	};
	static const struct db_migration dangling[] = {
	    {2, "0002-dangling.sql",
	     "INSERT INTO gates (run_id, variant_id, gate, outcome, reason)"
	     " VALUES (7, 7, 'smem', 'ok', '');\n"},
	    {0, NULL, NULL},
	};
	char *v1 = schema_v1();
	struct db *db;

	assert_int_equal(open_with(v1, 1, none, &db), 0);
	db_close(db);

	assert_int_equal(open_with(v1, 3, bad, &db), -1);
	assert_null(db);
	assert_non_null(strstr(captured, "migration '0003-broken.sql'"));
	assert_non_null(strstr(captured, "no such table: nowhere"));
	assert_int_equal(raw_int("PRAGMA user_version"), 2);
	assert_int_equal(raw_int("SELECT count(*) FROM sqlite_schema WHERE name = 'notes'"), 1);
	assert_int_equal(raw_int("SELECT count(*) FROM sqlite_schema WHERE name = 'more'"), 0);
	assert_true(exists(path)); /* an existing database is never removed */

	/* Foreign keys are checked before a migration commits. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(open_with(v1, 1, none, &db), 0);
	db_close(db);
	assert_int_equal(open_with(v1, 2, dangling, &db), -1);
	assert_non_null(strstr(captured, "dangling foreign key in table 'gates'"));
	assert_int_equal(raw_int("PRAGMA user_version"), 1);
	assert_int_equal(raw_int("SELECT count(*) FROM gates"), 0);
	free(v1);
}

static void test_version_too_new(void **state)
{
	struct db *db = open_ok();
	char want[256];

	db_close(db);
	raw_exec("PRAGMA user_version = 7");
	capture_start();
	assert_int_equal(db_open(path, &db), -1);
	assert_null(db);
	snprintf(want, sizeof(want), "database '%s' has schema version 7; this tuner knows up to 1",
	         path);
	assert_string_equal(captured, want);
	assert_int_equal(nerrors, 1);
	assert_true(exists(path));
	assert_int_equal(raw_int("PRAGMA user_version"), 7);
}

static void test_open_missing_directory(void **state)
{
	struct db *db = (struct db *)1;
	char *p = xasprintf("%s/no/such/dir/t.db", dir);

	assert_int_equal(db_open(p, &db), -1);
	assert_null(db);
	assert_non_null(strstr(captured, p));
	assert_non_null(strstr(captured, "No such file or directory"));
	assert_false(exists(p));
	free(p);
}

/* A failed open creates nothing: no database, no WAL, no shared-memory file. */
static void test_failed_open_leaves_no_file(void **state)
{
	static const struct db_migration none[] = {{0, NULL, NULL}};
	char *wal = xasprintf("%s-wal", path), *shm = xasprintf("%s-shm", path);
	struct db *db;

	assert_int_equal(open_with("CREATE TABLE ok (x);\nCREATE TABLE (;\n", 1, none, &db), -1);
	assert_null(db);
	assert_non_null(strstr(captured, "schema.sql"));
	assert_false(exists(path));
	assert_false(exists(wal));
	assert_false(exists(shm));
	free(wal);
	free(shm);
}

static void test_not_a_tuner_database(void **state)
{
	struct db *db;
	char *text = NULL;

	assert_int_equal(write_file_atomic(path, "hello\n", 6), 0);
	assert_int_equal(db_open(path, &db), -1);
	assert_non_null(strstr(captured, path));
	assert_non_null(strstr(captured, "not a database"));
	assert_int_equal(read_file(path, &text, NULL), 0);
	assert_string_equal(text, "hello\n");
	free(text);

	assert_int_equal(unlink(path), 0);
	raw_exec("CREATE TABLE mine (x)");
	capture_start();
	assert_int_equal(db_open(path, &db), -1);
	assert_non_null(strstr(captured, "is not a tuner database"));
	assert_int_equal(raw_int("PRAGMA user_version"), 0);
}

/* ---------------------------------------------------------------- runs */

static void test_run_round_trip(void **state)
{
	struct db *db = open_ok();
	struct run_info ri = test_run;
	struct db_run r;
	long long id, id2, latest = 0;

	assert_int_equal(db_run_latest(db, &latest), -1);
	assert_non_null(strstr(captured, "has no runs"));
	capture_start();

	ri.seed = 18446744073709551615ull; /* every bit of the seed survives */
	ri.replay_of = "sweep-h100.db";
	assert_int_equal(db_run_create(db, &ri, &id), 0);
	assert_int_equal(db_run_get(db, id, &r), 0);
	assert_int_equal(r.id, id);
	assert_true(r.seed == 18446744073709551615ull);
	assert_string_equal(r.status, "running");
	assert_null(r.finished_at);
	assert_non_null(r.started_at);
	assert_int_equal(strlen(r.started_at), strlen("2025-01-01T00:00:00.000Z"));
	assert_string_equal(r.command, ri.command);
	assert_string_equal(r.config_path, ri.config_path);
	assert_string_equal(r.config_text, ri.config_text);
	assert_string_equal(r.template_name, "flash_fwd");
	assert_string_equal(r.template_hash, "tmplhash");
	assert_string_equal(r.arch, "sm_90");
	assert_string_equal(r.device, ri.device);
	assert_string_equal(r.driver, ri.driver);
	assert_string_equal(r.nvrtc, "13.0");
	assert_string_equal(r.strategy, "evolve");
	assert_string_equal(r.shapes, ri.shapes);
	assert_string_equal(r.replay_of, "sweep-h100.db");
	assert_int_equal(r.generations, 10);
	assert_int_equal(r.population, 16);
	assert_int_equal(r.gpu, 1);
	db_run_release(&r);
	assert_null(r.command);

	id2 = add_run(db);
	assert_int_equal(db_run_latest(db, &latest), 0);
	assert_int_equal(latest, id2);
	assert_int_equal(db_run_get(db, id2, &r), 0);
	assert_null(r.replay_of);
	assert_true(r.seed == 42);
	db_run_release(&r);

	assert_int_equal(db_run_set_status(db, id, "done"), 0);
	assert_int_equal(db_run_get(db, id, &r), 0);
	assert_string_equal(r.status, "done");
	assert_non_null(r.finished_at);
	db_run_release(&r);
	/* Resumed: running again, not finished. */
	assert_int_equal(db_run_set_status(db, id, "running"), 0);
	assert_int_equal(db_run_get(db, id, &r), 0);
	assert_null(r.finished_at);
	db_run_release(&r);

	assert_int_equal(nerrors, 0);
	assert_int_equal(db_run_set_status(db, id, "paused"), -1);
	assert_non_null(strstr(captured, "runs_status"));
	capture_start();
	assert_int_equal(db_run_set_status(db, 1234, "done"), -1);
	assert_non_null(strstr(captured, "has no run 1234"));
	capture_start();
	assert_int_equal(db_run_get(db, 1234, &r), -1);
	assert_non_null(strstr(captured, "has no run 1234"));
	db_close(db);
}

/* ------------------------------------------------------------ variants */

static void test_variant_upsert_dedup(void **state)
{
	struct db *db = open_ok();
	struct db_variant v;
	long long a, b, again, found = 0;
	int created = -1;

	assert_int_equal(db_variant_upsert(db, "aaaa0000000000000000000000000001", "flash_fwd",
	                                   "tmplhash", "sm_90", "BLOCK_M=64,NUM_WARPS=4", "-O3", &a,
	                                   &created),
	                 0);
	assert_int_equal(created, 1);
	assert_int_equal(db_variant_upsert(db, "aaaa0000000000000000000000000001", "flash_fwd",
	                                   "tmplhash", "sm_90", "BLOCK_M=64,NUM_WARPS=4", "-O3",
	                                   &again, &created),
	                 0);
	assert_int_equal(created, 0);
	assert_int_equal(again, a);
	assert_int_equal(db_variant_upsert(db, "bbbb0000000000000000000000000002", "flash_fwd",
	                                   "tmplhash", "sm_90", "BLOCK_M=128,NUM_WARPS=4", "-O3",
	                                   &b, &created),
	                 0);
	assert_int_equal(created, 1);
	assert_true(b != a);
	assert_int_equal(count(db, "variants"), 2);

	assert_int_equal(db_variant_find(db, "bbbb0000000000000000000000000002", &found), 1);
	assert_int_equal(found, b);
	assert_int_equal(db_variant_find(db, "cccc0000000000000000000000000003", &found), 0);

	assert_int_equal(db_variant_get(db, a, &v), 0);
	assert_string_equal(v.hash, "aaaa0000000000000000000000000001");
	assert_string_equal(v.params, "BLOCK_M=64,NUM_WARPS=4");
	assert_string_equal(v.template_name, "flash_fwd");
	assert_string_equal(v.template_hash, "tmplhash");
	assert_string_equal(v.arch, "sm_90");
	assert_string_equal(v.options, "-O3");
	assert_non_null(v.created_at);
	db_variant_release(&v);
	assert_int_equal(nerrors, 0);

	/* The same hash for another point is a hash bug, not a duplicate. */
	assert_int_equal(db_variant_upsert(db, "aaaa0000000000000000000000000001", "flash_fwd",
	                                   "tmplhash", "sm_90", "BLOCK_M=32,NUM_WARPS=4", "-O3",
	                                   &again, &created),
	                 -1);
	assert_non_null(strstr(captured, "already names another variant"));
	assert_int_equal(count(db, "variants"), 2);
	capture_start();
	assert_int_equal(db_variant_get(db, 999, &v), -1);
	assert_non_null(strstr(captured, "has no variant 999"));
	db_close(db);
}

static void test_variant_find_prefix(void **state)
{
	struct db *db = open_ok();
	long long a = add_variant(db, "3fa91111000000000000000000000000", "A=1");
	long long b = add_variant(db, "3fa9c222000000000000000000000000", "A=2");
	long long c = add_variant(db, "0001ffff000000000000000000000000", "A=3");
	long long id = 0;

	assert_int_equal(a, 1);
	assert_int_equal(db_variant_find_prefix(db, "3fa91", &id), 0);
	assert_int_equal(id, a);
	assert_int_equal(db_variant_find_prefix(db, "3FA9C", &id), 0);
	assert_int_equal(id, b);
	assert_int_equal(db_variant_find_prefix(db, "3fa9c222000000000000000000000000", &id), 0);
	assert_int_equal(id, b);
	assert_int_equal(db_variant_find_prefix(db, "2", &id), 0);
	assert_int_equal(id, b);
	assert_int_equal(nerrors, 0);

	assert_int_equal(db_variant_find_prefix(db, "3fa9", &id), -1);
	assert_non_null(strstr(captured, "'3fa9' is ambiguous"));
	assert_non_null(strstr(captured, "3fa91111"));
	assert_non_null(strstr(captured, "3fa9c222"));
	/* "0001" is id 1 and a prefix of variant 3's hash. */
	capture_start();
	assert_int_equal(db_variant_find_prefix(db, "0001", &id), -1);
	assert_non_null(strstr(captured, "ambiguous"));
	capture_start();
	assert_int_equal(db_variant_find_prefix(db, "0001f", &id), 0);
	assert_int_equal(id, c);
	assert_int_equal(db_variant_find_prefix(db, "ffff", &id), -1);
	assert_non_null(strstr(captured, "no variant 'ffff'"));
	capture_start();
	assert_int_equal(db_variant_find_prefix(db, "77", &id), -1);
	assert_non_null(strstr(captured, "no variant '77'"));
	capture_start();
	assert_int_equal(db_variant_find_prefix(db, "3f*", &id), -1);
	assert_non_null(strstr(captured, "neither a variant id nor a hash prefix"));
	capture_start();
	assert_int_equal(db_variant_find_prefix(db, "", &id), -1);
	assert_int_equal(nerrors, 1);
	db_close(db);
}

/* ------------------------------------------------ builds, gates, evals */

static int build_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct strbuf *sb = ctx;
	int i;

	for (i = 0; i < ncols; i++)
		sb_addf(sb, "%s%s=%s", i ? " " : "", names[i], v[i] ? v[i] : "NULL");
	sb_adds(sb, "\n");
	return 0;
}

static void test_build_round_trip(void **state)
{
	struct db *db = open_ok();
	long long v = add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	struct build b;
	struct strbuf sb = STRBUF_INIT;
	const char *q = "SELECT variant_id, spec, sanitize, outcome, regs, spill_stores,"
			" spill_loads, static_smem, stack_frame, seconds, cached, cubin_size, log"
			" FROM builds WHERE key = ?1";

	memset(&b, 0, sizeof(b));
	b.outcome = VARIANT_OK;
	b.log = "ptxas info    : Used 128 registers";
	b.regs = 128;
	b.spill_stores = 8;
	b.spill_loads = 4;
	b.static_smem = 1024;
	b.stack_frame = 16;
	b.seconds = 1.25;
	b.cubin_size = 40960;
	assert_int_equal(db_build_record(db, v, "key1", "D=64", 0, &b), 0);
	assert_int_equal(db_exec_callback(db, q, build_row, &sb, "key1", NULL), 0);
	assert_string_equal(sb.buf, "variant_id=1 spec=D=64 sanitize=0 outcome=ok regs=128 "
	                            "spill_stores=8 spill_loads=4 static_smem=1024 stack_frame=16 "
	                            "seconds=1.25 cached=0 cubin_size=40960 "
	                            "log=ptxas info    : Used 128 registers\n");

	/* The same key again replaces the row: a recompile, or a cached hit. */
	b.outcome = REJECT_COMPILE;
	b.log = NULL;
	b.cached = 1;
	b.seconds = 0;
	assert_int_equal(db_build_record(db, v, "key1", "D=64", 1, &b), 0);
	sb_reset(&sb);
	assert_int_equal(db_exec_callback(db, q, build_row, &sb, "key1", NULL), 0);
	assert_string_equal(sb.buf, "variant_id=1 spec=D=64 sanitize=1 outcome=compile regs=128 "
	                            "spill_stores=8 spill_loads=4 static_smem=1024 stack_frame=16 "
	                            "seconds=0.0 cached=1 cubin_size=40960 log=NULL\n");
	assert_int_equal(db_build_record(db, v, "key2", "D=128", 0, &b), 0);
	assert_int_equal(count(db, "builds"), 2);
	sb_release(&sb);
	assert_int_equal(nerrors, 0);
	db_close(db);
}

static void test_gate_round_trip(void **state)
{
	struct db *db = open_ok();
	long long run = add_run(db), v = add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(db_gate_record(db, run, v, "constraint", "", VARIANT_OK, ""), 0);
	assert_int_equal(db_gate_record(db, run, v, "align", "s512", REJECT_ALIGN,
	                                "buffer 'Ks' row stride 130 bytes is not a multiple of 16"),
	                 0);
	assert_int_equal(db_gate_record(db, run, v, "smem", NULL, REJECT_SMEM, NULL), 0);
	assert_int_equal(db_exec_callback(db,
	                                  "SELECT gate, shape, outcome, reason FROM gates"
	                                  " WHERE run_id = ?1 AND variant_id = ?2 ORDER BY id",
	                                  build_row, &sb, "1", "1", NULL),
	                 0);
	assert_string_equal(sb.buf,
	                    "gate=constraint shape=NULL outcome=ok reason=\n"
	                    "gate=align shape=s512 outcome=align reason=buffer 'Ks' row stride 130 "
	                    "bytes is not a multiple of 16\n"
	                    "gate=smem shape=NULL outcome=smem reason=\n");
	sb_release(&sb);
	assert_int_equal(nerrors, 0);
	db_close(db);
}

static void test_eval_round_trip(void **state)
{
	struct db *db = open_ok();
	long long run = add_run(db), other = add_run(db);
	long long a = add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	long long b = add_variant(db, "bbbb0000000000000000000000000002", "A=2");
	long long c = add_variant(db, "cccc0000000000000000000000000003", "A=3");
	long long counts[OUTCOME_COUNT];
	struct db_eval e;

	assert_int_equal(db_eval_get(db, run, a, &e), 0);
	assert_int_equal(db_eval_record(db, run, a, 0, VARIANT_OK, NULL), 0);
	assert_int_equal(db_eval_record(db, run, b, 1, REJECT_WRONG, "rel_l2 0.3 > 0.005"), 0);
	assert_int_equal(db_eval_record(db, run, c, 1, REJECT_WRONG, "nan"), 0);
	assert_int_equal(db_eval_record(db, other, c, 0, REJECT_TIMEOUT, "2 s"), 0);

	assert_int_equal(db_eval_get(db, run, a, &e), 1);
	assert_int_equal(e.generation, 0);
	assert_int_equal(e.outcome, VARIANT_OK);
	assert_string_equal(e.reason, "");
	assert_true(isnan(e.fitness) && isnan(e.fitness_lo) && isnan(e.fitness_hi));
	db_eval_release(&e);

	assert_int_equal(db_eval_set_fitness(db, run, a, 1.5, 1.4, NAN), 0);
	assert_int_equal(db_eval_get(db, run, a, &e), 1);
	assert_true(e.fitness == 1.5 && e.fitness_lo == 1.4 && isnan(e.fitness_hi));
	db_eval_release(&e);

	/* Recorded again (a resume): still ok keeps the fitness, a rejection clears it. */
	assert_int_equal(db_eval_record(db, run, a, 2, VARIANT_OK, ""), 0);
	assert_int_equal(db_eval_get(db, run, a, &e), 1);
	assert_int_equal(e.generation, 2);
	assert_true(e.fitness == 1.5);
	db_eval_release(&e);
	assert_int_equal(db_eval_record(db, run, a, 2, REJECT_RACE, "differs on seed 3"), 0);
	assert_int_equal(db_eval_get(db, run, a, &e), 1);
	assert_int_equal(e.outcome, REJECT_RACE);
	assert_string_equal(e.reason, "differs on seed 3");
	assert_true(isnan(e.fitness));
	db_eval_release(&e);
	assert_int_equal(count(db, "evals"), 4);

	assert_int_equal(db_run_outcome_counts(db, run, counts), 0);
	assert_int_equal(counts[VARIANT_OK], 0);
	assert_int_equal(counts[REJECT_WRONG], 2);
	assert_int_equal(counts[REJECT_RACE], 1);
	assert_int_equal(counts[REJECT_TIMEOUT], 0);
	assert_int_equal(db_run_outcome_counts(db, other, counts), 0);
	assert_int_equal(counts[REJECT_TIMEOUT], 1);
	assert_int_equal(counts[REJECT_WRONG], 0);
	assert_int_equal(nerrors, 0);

	assert_int_equal(db_eval_set_fitness(db, other, a, 1.0, 1.0, 1.0), -1);
	assert_non_null(strstr(captured, "no evaluation of variant 1 in run 2"));
	db_close(db);
}

/* -------------------------------------------------------- measurements */

static void test_measure_round_trip(void **state)
{
	double samples[] = {12.3, 12.5, 0.1 + 0.2, 1e-7, 123456.789, 0};
	struct db *db = open_ok();
	long long run = add_run(db), v = add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	struct db_measurement m = {
	    .device = "NVIDIA H100 80GB HBM3",
	    .shape = "s512",
	    .shape_dims = "B=1,H=8,S=512,D=64",
	    .outcome = VARIANT_OK,
	    .reason = NULL,
	    .rel_l2 = 1.5e-4,
	    .max_abs = 2e-3,
	    .median_us = 12.4,
	    .ci_lo_us = 12.3,
	    .ci_hi_us = 12.5,
	    .tflops = 310.25,
	    .samples = samples,
	    .nsamples = ARRAY_SIZE(samples),
	};
	struct db_recorded_key key = {"tmplhash", "sm_90", "A=1"};
	struct db_measured got;
	size_t i;
	int created = -1;

	samples[5] = nextafter(12.3, 13.0); /* needs all 17 digits */
	assert_int_equal(db_measure_lookup(db, v, m.device, m.shape_dims, &got), 0);
	assert_int_equal(db_measure_record(db, run, v, &m, &created), 0);
	assert_int_equal(created, 1);
	assert_int_equal(db_measure_lookup(db, v, m.device, m.shape_dims, &got), 1);
	assert_int_equal(got.variant_id, v);
	assert_int_equal(got.run_id, run);
	assert_string_equal(got.shape, "s512");
	assert_int_equal(got.outcome, VARIANT_OK);
	assert_string_equal(got.reason, "");
	assert_true(got.rel_l2 == 1.5e-4 && got.max_abs == 2e-3);
	assert_true(got.median_us == 12.4 && got.ci_lo_us == 12.3 && got.ci_hi_us == 12.5);
	assert_true(got.tflops == 310.25);
	assert_int_equal(got.nsamples, ARRAY_SIZE(samples));
	for (i = 0; i < got.nsamples; i++)
		assert_true(got.samples[i] == samples[i]); /* bit for bit */
	db_measured_release(&got);
	assert_string_equal(query1(db, "SELECT samples FROM measurements", NULL).text,
	                    "[12.3,12.5,0.30000000000000004,1e-07,123456.789,12.300000000000002]");

	/* Already measured on this device and shape: never again, the first result stays. */
	m.median_us = 99;
	assert_int_equal(db_measure_record(db, run, v, &m, &created), 0);
	assert_int_equal(created, 0);
	assert_int_equal(db_measure_lookup(db, v, m.device, m.shape_dims, &got), 1);
	assert_true(got.median_us == 12.4);
	db_measured_release(&got);

	/* Another device, no run, not timed: a separate row with NULLs. */
	m.device = "NVIDIA H200";
	m.outcome = REJECT_RUNTIME_FAULT;
	m.reason = "CUDA_ERROR_MISALIGNED_ADDRESS";
	m.rel_l2 = m.max_abs = m.median_us = m.ci_lo_us = m.ci_hi_us = m.tflops = NAN;
	m.samples = NULL;
	m.nsamples = 0;
	assert_int_equal(db_measure_record(db, 0, v, &m, NULL), 0);
	assert_int_equal(count(db, "measurements"), 2);
	assert_int_equal(db_measure_lookup_params(db, &key, "NVIDIA H200", m.shape_dims, &got), 1);
	assert_int_equal(got.run_id, 0);
	assert_int_equal(got.outcome, REJECT_RUNTIME_FAULT);
	assert_string_equal(got.reason, "CUDA_ERROR_MISALIGNED_ADDRESS");
	assert_true(isnan(got.median_us) && isnan(got.rel_l2) && isnan(got.tflops));
	assert_int_equal(got.nsamples, 0);
	db_measured_release(&got);
	assert_int_equal(
	    db_measure_lookup_params(db, &key, "NVIDIA H200", "B=1,H=8,S=1024,D=64", &got), 0);
	/* another configuration, template or arch is another point */
	key.params = "A=2";
	assert_int_equal(db_measure_lookup_params(db, &key, "NVIDIA H200", m.shape_dims, &got), 0);
	key.params = "A=1";
	key.arch = "sm_89";
	assert_int_equal(db_measure_lookup_params(db, &key, "NVIDIA H200", m.shape_dims, &got), 0);
	key.arch = "sm_90";
	key.template_hash = "othertmpl";
	assert_int_equal(db_measure_lookup_params(db, &key, "NVIDIA H200", m.shape_dims, &got), 0);
	assert_int_equal(nerrors, 0);

	/* A damaged samples column is reported, not misread. */
	raw_exec("UPDATE measurements SET samples = '[1,2' WHERE device = 'NVIDIA H200'");
	assert_int_equal(db_measure_lookup(db, v, "NVIDIA H200", m.shape_dims, &got), -1);
	assert_non_null(strstr(captured, "malformed samples"));
	assert_null(got.samples);
	db_close(db);
}

/* ---------------------------------------------------- population, elite */

static void test_population_and_elite(void **state)
{
	struct db *db = open_ok();
	long long run = add_run(db), ids[3];
	double fit[3] = {1.8, 1.5, 1.2};
	struct strbuf sb = STRBUF_INIT;
	int i;

	for (i = 0; i < 3; i++) {
		char h[HASH_HEX_LEN];

		fake_hash(h, "ab", i);
		ids[i] = add_variant(db, h, h);
	}
	assert_int_equal(db_population_record(db, run, 0, ids[0], "baseline", -1, -1), 0);
	assert_int_equal(db_population_record(db, run, 1, ids[1], "mutation", ids[0], 0), 0);
	assert_int_equal(db_population_record(db, run, 1, ids[2], "crossover", ids[0], ids[1]), 0);
	assert_int_equal(
	    db_exec_callback(db,
	                     "SELECT generation, variant_id, origin, parent_a, parent_b"
	                     " FROM population WHERE run_id = ?1"
	                     " ORDER BY generation, variant_id",
	                     build_row, &sb, "1", NULL),
	    0);
	assert_string_equal(sb.buf, "generation=0 variant_id=1 origin=baseline parent_a=NULL "
	                            "parent_b=NULL\n"
	                            "generation=1 variant_id=2 origin=mutation parent_a=1 "
	                            "parent_b=NULL\n"
	                            "generation=1 variant_id=3 origin=crossover parent_a=1 "
	                            "parent_b=2\n");
	assert_int_equal(db_population_record(db, run, 1, ids[1], "bred", 0, 0), -1);
	assert_non_null(strstr(captured, "population_origin"));
	capture_start();

	assert_int_equal(db_elite_store(db, run, 1, ids, fit, 3), 0);
	assert_int_equal(count(db, "elite"), 3);
	/* Storing a generation again replaces it. */
	assert_int_equal(db_elite_store(db, run, 1, ids + 1, fit + 1, 2), 0);
	sb_reset(&sb);
	assert_int_equal(db_exec_callback(db,
	                                  "SELECT rank, variant_id, fitness FROM elite"
	                                  " WHERE run_id = ?1 AND generation = ?2 ORDER BY rank",
	                                  build_row, &sb, "1", "1", NULL),
	                 0);
	assert_string_equal(sb.buf, "rank=1 variant_id=2 fitness=1.5\n"
	                            "rank=2 variant_id=3 fitness=1.2\n");
	assert_int_equal(nerrors, 0);

	/* All or nothing: an unknown variant half-way leaves the old elite, alone or nested. */
	ids[1] = 777;
	assert_int_equal(db_elite_store(db, run, 1, ids, fit, 3), -1);
	assert_non_null(strstr(captured, "FOREIGN KEY"));
	assert_int_equal(count(db, "elite"), 2);
	assert_int_equal(db_begin(db), 0);
	assert_int_equal(db_run_set_status(db, run, "stopped"), 0);
	assert_int_equal(db_elite_store(db, run, 1, ids, fit, 3), -1);
	assert_int_equal(count(db, "elite"), 2);
	assert_int_equal(db_commit(db), 0);
	assert_string_equal(query1(db, "SELECT status FROM runs WHERE id = 1", NULL).text,
	                    "stopped");
	assert_int_equal(raw_int("SELECT count(*) FROM elite"), 2);
	sb_release(&sb);
	db_close(db);
}

/* ------------------------------------------------------- transactions */

static void test_rollback_leaves_nothing(void **state)
{
	struct db *db = open_ok();
	long long run, v;

	assert_int_equal(db_begin(db), 0);
	run = add_run(db);
	v = add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	assert_int_equal(db_eval_record(db, run, v, 0, VARIANT_OK, ""), 0);
	/* Not visible to another connection before the commit. */
	assert_int_equal(raw_int("SELECT count(*) FROM variants"), 0);
	db_rollback(db);
	assert_int_equal(count(db, "runs"), 0);
	assert_int_equal(count(db, "variants"), 0);
	assert_int_equal(count(db, "evals"), 0);
	db_rollback(db); /* harmless outside a transaction */

	assert_int_equal(db_begin(db), 0);
	add_run(db);
	assert_int_equal(db_commit(db), 0);
	assert_int_equal(raw_int("SELECT count(*) FROM runs"), 1);

	/* Closing with a transaction open loses that transaction only. */
	assert_int_equal(db_begin(db), 0);
	add_variant(db, "aaaa0000000000000000000000000001", "A=1");
	db_close(db);
	assert_int_equal(raw_int("SELECT count(*) FROM variants"), 0);
	assert_int_equal(raw_int("SELECT count(*) FROM runs"), 1);
	assert_int_equal(nerrors, 0);
}

static void nested_begin(void)
{
	struct db *db = open_ok();

	if (db_begin(db) < 0)
		_exit(2);
	db_begin(db);
	_exit(3);
}

static void test_nested_begin_is_a_bug(void **state)
{
	struct db *db = open_ok();

	db_close(db);
	assert_int_equal(in_child(nested_begin, 1), EX_SOFTWARE);
}

static void commit_without_begin(void)
{
	struct db *db = open_ok();

	db_commit(db);
	_exit(3);
}

static void test_commit_without_begin_is_a_bug(void **state)
{
	struct db *db = open_ok();

	db_close(db);
	assert_int_equal(in_child(commit_without_begin, 1), EX_SOFTWARE);
}

/* ------------------------------------------------ processes and crashes */

#define WRITES 150

/* Each writer: its own run, WRITES transactions of its own variants and one shared variant. */
static void writer(void)
{
	struct db *db;
	long long run, v, shared;
	int i, created;
	char h[HASH_HEX_LEN];

	if (db_open(path, &db) < 0)
		_exit(10);
	if (db_run_create(db, &test_run, &run) < 0)
		_exit(11);
	for (i = 0; i < WRITES; i++) {
		fake_hash(h, "", (int)(getpid() % 100000) * 1000 + i);
		if (db_begin(db) < 0)
			_exit(12);
		if (db_variant_upsert(db, h, "t", "th", "sm_90", h, "", &v, &created) < 0 ||
		    db_variant_upsert(db, "5ea7ed00000000000000000000000000", "t", "th", "sm_90",
		                      "shared", "", &shared, &created) < 0 ||
		    db_eval_record(db, run, v, i, VARIANT_OK, "") < 0 ||
		    db_population_record(db, run, i, shared, "random", 0, 0) < 0)
			_exit(13);
		if (db_commit(db) < 0)
			_exit(14);
	}
	if (db_run_set_status(db, run, "done") < 0)
		_exit(15);
	db_close(db);
	_exit(0);
}

static void test_two_processes_write_concurrently(void **state)
{
	struct db *db;
	pid_t pid[2];
	int i, status;

	/* No file yet: the two also race to create it. */
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0)
			writer();
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	db = open_ok();
	assert_int_equal(count(db, "runs"), 2);
	assert_int_equal(count(db, "variants"), 2 * WRITES + 1);
	assert_int_equal(count(db, "evals"), 2 * WRITES);
	assert_int_equal(count(db, "population"), 2 * WRITES);
	assert_string_equal(query1(db, "SELECT group_concat(status) FROM runs", NULL).text,
	                    "done,done");
	assert_string_equal(query1(db, "SELECT count(*) FROM evals WHERE run_id = ?1", "2").text,
	                    "150");
	db_close(db);
	assert_int_equal(nerrors, 0);
}

/* Commits one run, then dies in the middle of the next state change. */
static void crasher(void)
{
	struct db *db;
	long long run, v;
	int created;

	if (db_open(path, &db) < 0)
		_exit(10);
	if (db_begin(db) < 0 || db_run_create(db, &test_run, &run) < 0 || db_commit(db) < 0)
		_exit(11);
	if (db_begin(db) < 0 ||
	    db_variant_upsert(db, "dead0000000000000000000000000001", "t", "th", "sm_90", "A=1", "",
	                      &v, &created) < 0 ||
	    db_eval_record(db, run, v, 0, VARIANT_OK, "") < 0 ||
	    db_run_set_status(db, run, "done") < 0)
		_exit(12);
	_exit(0); /* no commit, no close: as kill -9 would leave it */
}

static void test_crash_mid_transaction_leaves_nothing(void **state)
{
	struct db *db;
	long long run, v;

	assert_int_equal(in_child(crasher, 0), 0);
	db = open_ok();
	assert_int_equal(count(db, "runs"), 1);
	assert_int_equal(count(db, "variants"), 0);
	assert_int_equal(count(db, "evals"), 0);
	assert_string_equal(query1(db, "SELECT status FROM runs", NULL).text, "running");
	/* And the file takes writes again: no lock was left behind. */
	assert_int_equal(db_begin(db), 0);
	run = add_run(db);
	v = add_variant(db, "dead0000000000000000000000000001", "A=1");
	assert_int_equal(db_eval_record(db, run, v, 0, VARIANT_OK, ""), 0);
	assert_int_equal(db_commit(db), 0);
	db_close(db);
	assert_int_equal(raw_int("SELECT count(*) FROM evals"), 1);
	assert_int_equal(nerrors, 0);
}

/* ------------------------------------------------------------ queries */

static int stop_at_two(void *ctx, int ncols, const char *const *values, const char *const *names)
{
	int *n = ctx;

	return ++*n == 2;
}

static int fail_row(void *ctx, int ncols, const char *const *values, const char *const *names)
{
	return error("row callback failed");
}

static void write_query(void)
{
	struct db *db = open_ok();
	int n = 0;

	db_exec_callback(db, "DELETE FROM variants", stop_at_two, &n, NULL);
	_exit(3);
}

static void test_exec_callback(void **state)
{
	struct db *db = open_ok();
	int i, n = 0;

	for (i = 0; i < 5; i++) {
		char h[HASH_HEX_LEN];

		fake_hash(h, "ee", i);
		add_variant(db, h, h);
	}
	assert_int_equal(db_exec_callback(db, "SELECT id FROM variants", stop_at_two, &n, NULL), 0);
	assert_int_equal(n, 2);
	/* Parameters are bound, never spliced: a quote is just a character. */
	assert_string_equal(
	    query1(db, "SELECT count(*) FROM variants WHERE params = ?1", "x' OR '1'='1").text,
	    "0");
	assert_string_equal(
	    query1(db, "SELECT id FROM variants WHERE id > ?1 ORDER BY id LIMIT 1", "3").text, "4");
	assert_int_equal(nerrors, 0);
	assert_int_equal(db_exec_callback(db, "SELECT id FROM variants", fail_row, NULL, NULL), -1);
	assert_string_equal(captured, "row callback failed");
	capture_start();
	assert_int_equal(db_exec_callback(db, "SELECT nope FROM variants", fail_row, NULL, NULL),
	                 -1);
	assert_non_null(strstr(captured, "no such column: nope"));
	db_close(db);
	assert_int_equal(in_child(write_query, 1), EX_SOFTWARE);
	assert_int_equal(raw_int("SELECT count(*) FROM variants"), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_embedded_sql_matches_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_keys_on, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reopen_is_idempotent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_migrate_twice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_migration_is_one_transaction, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_version_too_new, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_missing_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_open_leaves_no_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_a_tuner_database, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_variant_upsert_dedup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_variant_find_prefix, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_build_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gate_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eval_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_measure_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_population_and_elite, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rollback_leaves_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nested_begin_is_a_bug, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_commit_without_begin_is_a_bug, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_two_processes_write_concurrently, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_crash_mid_transaction_leaves_nothing, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_exec_callback, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
