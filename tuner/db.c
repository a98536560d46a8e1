/*
 * The store (SQLite or PostgreSQL): opening and migrating it, statements and transactions, and
 * what a run writes (runs, variants, builds, gates, evals, measurements, elite). What the
 * commands read back is in db-read.c, the job queue in db-queue.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tuner/db-impl.h"
#include "tuner/pq.h"

#define BUSY_TIMEOUT_MS 5000

/* ---------------------------------------------------------------- errors */

/*
 * Every SQLite call outside the backend goes through SQL_CHECK, which, like
 * llm.c's cudaCheck, names the call site, but returns: the SQLite code when it
 * is a success (OK, ROW, DONE), else -1 after error() with the database and
 * SQLite's message.
 */
#define SQL_CHECK(db, call) sql_check_fl((db), (call), __FILE__, __LINE__)

static int sql_check_fl(struct db *db, int rc, const char *file, int line)
{
	if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	return error("database '%s': %s (%s:%d)", db->path, sqlite3_errmsg(db->h), file, line);
}

/* A backend call's failure (-1): error() with the database, the message and the call site. */
int db_failed_at(struct db *db, const char *file, int line)
{
	return error("database '%s': %s (%s:%d)", db->path, dbb_errmsg(db->b), file, line);
}

const char *db_path(const struct db *db)
{
	return db->path;
}

/* ------------------------------------------------------------ statements */

/*
 * Prepare sql and bind its parameters ?1, ?2, ... from the variadic list as
 * types says: 't' const char * (NULL binds NULL), 'i' int, 'I' long long,
 * 'R' long long row id (<= 0 binds NULL), 'd' double (NAN binds NULL).
 * Returns NULL after error().
 */

struct dbb_stmt *db_stmt_at(struct db *db, const char *file, int line, const char *sql,
                            const char *types, ...)
{
	struct dbb_stmt *st = NULL;
	va_list ap;
	int i, rc;

	if (dbb_prepare(db->b, sql, &st, NULL) < 0) {
		db_failed_at(db, file, line);
		return NULL;
	}
	if ((size_t)dbb_param_count(st) != strlen(types))
		BUG("%s:%d: %d parameters but %zu bind types", file, line, dbb_param_count(st),
		    strlen(types));
	va_start(ap, types);
	for (i = 0, rc = 0; types[i] && rc == 0; i++) {
		const char *s;
		long long v;
		double d;

		switch (types[i]) {
		case 't':
			s = va_arg(ap, const char *);
			rc = dbb_bind_text(st, i + 1, s, DBB_TEXT);
			break;
		case 'i':
			rc = dbb_bind_int64(st, i + 1, va_arg(ap, int));
			break;
		case 'I':
			rc = dbb_bind_int64(st, i + 1, va_arg(ap, long long));
			break;
		case 'R':
			v = va_arg(ap, long long);
			rc = v > 0 ? dbb_bind_int64(st, i + 1, v)
			           : dbb_bind_null(st, i + 1, DBB_INT);
			break;
		case 'd':
			d = va_arg(ap, double);
			rc = isnan(d) ? dbb_bind_null(st, i + 1, DBB_REAL)
			              : dbb_bind_double(st, i + 1, d);
			break;
		default:
			BUG("bad bind type '%c'", types[i]);
		}
	}
	va_end(ap);
	if (rc < 0) {
		db_failed_at(db, file, line);
		dbb_finalize(st);
		return NULL;
	}
	return st;
}

/* Step once: DBB_ROW, DBB_DONE, or -1 after error() (the statement is left to the caller). */

int db_step_at(struct db *db, struct dbb_stmt *st, const char *file, int line)
{
	int rc = dbb_step(st);

	return rc < 0 ? db_failed_at(db, file, line) : rc;
}

/* Run a statement that returns no rows to completion and finalize it: 0 or -1. */

int db_exec_at(struct db *db, struct dbb_stmt *st, const char *file, int line)
{
	int rc;

	if (!st)
		return -1;
	rc = db_step_at(db, st, file, line);
	dbb_finalize(st);
	return rc < 0 ? -1 : 0;
}

/* The id an INSERT ... RETURNING id gave: 0, or -1 after error(). The statement is finalized. */
int db_insert_id(struct db *db, struct dbb_stmt *st, long long *id)
{
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

/* A constant statement without parameters (BEGIN, PRAGMA ...). */
#define EXEC_SQL(db, sql)                                                                          \
	db_exec_at((db), db_stmt_at((db), __FILE__, __LINE__, (sql), ""), __FILE__, __LINE__)

/* Column helpers: owned copies, NULL and NAN for SQL NULL. */
char *db_col_str(struct dbb_stmt *st, int i)
{
	const char *s = dbb_column_text(st, i);

	return s ? xstrdup(s) : NULL;
}

double db_col_real(struct dbb_stmt *st, int i)
{
	return dbb_column_null(st, i) ? NAN : dbb_column_double(st, i);
}

static const char *nonnull(const char *s)
{
	return s ? s : "";
}

/* An outcome column; -1 after error() for text this tuner does not know. */
int db_col_outcome(struct db *db, struct dbb_stmt *st, int i)
{
	const char *s = (const char *)dbb_column_text(st, i);
	int o = s ? outcome_parse(s) : -1;

	if (o < 0)
		return error("database '%s': unknown outcome '%s'", db->path, s ? s : "(null)");
	return o;
}

/* ---------------------------------------------------------- transactions */

/*
 * SQLite: IMMEDIATE takes the write lock now (waiting up to the busy timeout),
 * so a transaction never fails half-way because another process wrote first.
 * PostgreSQL locks rows as they are written.
 */
#define BEGIN_SQL(db) ((db)->h ? "BEGIN IMMEDIATE" : "BEGIN")

int db_begin(struct db *db)
{
	if (db->in_tx)
		BUG("nested db_begin on database '%s'", db->path);
	if (EXEC_SQL(db, BEGIN_SQL(db)) < 0)
		return -1;
	db->in_tx = 1;
	return 0;
}

int db_commit(struct db *db)
{
	if (!db->in_tx)
		BUG("db_commit without db_begin on database '%s'", db->path);
	if (EXEC_SQL(db, "COMMIT") < 0) {
		db_rollback(db);
		return -1;
	}
	db->in_tx = 0;
	return 0;
}

void db_rollback(struct db *db)
{
	if (!db->in_tx)
		return;
	/* SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR...). */
	if (dbb_in_transaction(db->b))
		EXEC_SQL(db, "ROLLBACK");
	db->in_tx = 0;
}

/*
 * Several statements that must land together, inside the caller's transaction
 * (as a savepoint) or in one of their own.
 */
int db_group_begin(struct db *db)
{
	return EXEC_SQL(db, db->in_tx ? "SAVEPOINT tuner_group" : BEGIN_SQL(db));
}

int db_group_end(struct db *db, int ok)
{
	if (db->in_tx) {
		if (ok)
			return EXEC_SQL(db, "RELEASE tuner_group");
		EXEC_SQL(db, "ROLLBACK TO tuner_group");
		EXEC_SQL(db, "RELEASE tuner_group");
		return -1;
	}
	if (ok && EXEC_SQL(db, "COMMIT") == 0)
		return 0;
	if (dbb_in_transaction(db->b))
		EXEC_SQL(db, "ROLLBACK");
	return -1;
}

/* --------------------------------------------------------- open, migrate */

static int user_version(struct db *db)
{
	struct dbb_stmt *st =
	    STMT(db, db->h ? "PRAGMA user_version" : "SELECT version FROM tuner_schema", "");
	int v = -1;

	if (st && STEP(db, st) == DBB_ROW)
		v = dbb_column_int(st, 0);
	dbb_finalize(st);
	return v;
}

/* PRAGMA takes no parameters; v is one of our own version numbers, never input. */
static int set_user_version(struct db *db, int v)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	return EXEC_SQL(db, sql);
}

/* Run a script of several statements (schema.sql, a migration). */
static int exec_script(struct db *db, const char *what, const char *sql)
{
	if (dbb_exec_script(db->b, sql) < 0)
		return error("database '%s': %s: %s", db->path, what, dbb_errmsg(db->b));
	return 0;
}

/* A migration may rebuild tables with foreign keys off; it must leave none dangling. */
static int foreign_key_check(struct db *db, const char *what)
{
	struct dbb_stmt *st = STMT(db, "PRAGMA foreign_key_check", "");
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		error("database '%s': %s leaves a dangling foreign key in table '%s'", db->path,
		      what, (const char *)dbb_column_text(st, 0));
	dbb_finalize(st);
	return rc == DBB_DONE ? 0 : -1;
}

static int create_schema(struct db *db, const char *schema, int version)
{
	struct dbb_stmt *st;
	int ok = 0, tables = -1;

	if (EXEC_SQL(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	/* Another process may have created it while we waited for the lock. */
	if (user_version(db) != 0) {
		EXEC_SQL(db, "ROLLBACK");
		return 0;
	}
	st = STMT(db, "SELECT count(*) FROM sqlite_schema", "");
	if (st && STEP(db, st) == DBB_ROW)
		tables = dbb_column_int(st, 0);
	dbb_finalize(st);
	if (tables > 0)
		error("database '%s' is not a tuner database (it has tables but no schema version)",
		      db->path);
	else if (tables == 0 && !exec_script(db, "schema.sql", schema) &&
	         !set_user_version(db, version))
		ok = 1;
	return ok ? EXEC_SQL(db, "COMMIT") : (EXEC_SQL(db, "ROLLBACK"), -1);
}

static int apply_migration(struct db *db, const struct db_migration *m)
{
	int cur, ok = 0;
	char *what;

	if (EXEC_SQL(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	cur = user_version(db);
	if (cur < 0) {
		EXEC_SQL(db, "ROLLBACK");
		return -1;
	}
	if (cur >= m->version) { /* another process got here first */
		EXEC_SQL(db, "ROLLBACK");
		return 0;
	}
	what = xasprintf("migration '%s'", m->name);
	if (!exec_script(db, what, m->sql) && !foreign_key_check(db, what) &&
	    !set_user_version(db, m->version))
		ok = 1;
	free(what);
	return ok ? EXEC_SQL(db, "COMMIT") : (EXEC_SQL(db, "ROLLBACK"), -1);
}

static void check_migrations(int version, const struct db_migration *m)
{
	int want = 2;

	for (; m->sql; m++, want++)
		if (m->version != want || !m->name)
			BUG("migration '%s' is version %d, expected %d", m->name ? m->name : "?",
			    m->version, want);
	if (version != want - 1)
		BUG("schema version %d but migrations end at version %d", version, want - 1);
}

static int migrate(struct db *db, const char *schema, int version,
                   const struct db_migration *migrations)
{
	const struct db_migration *m;
	int cur = user_version(db);

	if (cur < 0)
		return -1;
	if (cur > version)
		return error("database '%s' has schema version %d; this tuner knows up to %d",
		             db->path, cur, version);
	if (cur == version)
		return 0;
	/* Outside any transaction: the pragma is a no-op inside one. */
	if (EXEC_SQL(db, "PRAGMA foreign_keys = OFF") < 0)
		return -1;
	if (cur == 0)
		return create_schema(db, schema, version);
	for (m = migrations; m->sql; m++)
		if (m->version > cur && apply_migration(db, m) < 0)
			return -1;
	return 0;
}

/*
 * Switch to WAL (it persists in the file). Two processes opening a new file at
 * once both ask; the switch needs an exclusive lock and SQLite answers the
 * loser SQLITE_BUSY at once, without calling the busy handler, so retry until
 * the busy timeout.
 */
static int wal_mode(struct db *db)
{
	double deadline = now_seconds() + BUSY_TIMEOUT_MS / 1000.0;
	struct dbb_stmt *st = STMT(db, "PRAGMA journal_mode = WAL", "");
	int rc, code;

	if (!st)
		return -1;
	while ((rc = dbb_step_rc(st, &code)) < 0 && code == SQLITE_BUSY &&
	       now_seconds() < deadline) {
		dbb_reset(st);
		usleep(10 * 1000);
	}
	if (rc < 0)
		db_failed_at(db, __FILE__, __LINE__);
	if (rc == DBB_ROW && strcmp((const char *)dbb_column_text(st, 0), "wal")) {
		error("database '%s' cannot use WAL mode (journal mode '%s')", db->path,
		      (const char *)dbb_column_text(st, 0));
		rc = -1;
	}
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

int db_open_schema(const char *path, const char *schema, int version,
                   const struct db_migration *migrations, struct db **out)
{
	struct db *db = NULL;
	sqlite3 *h = NULL;
	int created = 0, fd, rc;

	check_migrations(version, migrations);
	*out = NULL;
	/* Create the file ourselves, so that we know to remove it if anything fails. */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		created = 1;
		close(fd);
	} else if (errno != EEXIST) {
		return error("cannot create database '%s': %s", path, strerror(errno));
	}
	rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL);
	if (rc != SQLITE_OK) {
		error("cannot open database '%s': %s", path,
		      h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
		sqlite3_close(h);
		goto fail;
	}
	db = xcalloc(1, sizeof(*db));
	db->h = h;
	db->b = dbb_sqlite(h);
	db->path = xstrdup(path);
	if (SQL_CHECK(db, sqlite3_busy_timeout(h, BUSY_TIMEOUT_MS)) < 0)
		goto fail;
	if (wal_mode(db) < 0 || EXEC_SQL(db, "PRAGMA synchronous = NORMAL") < 0 ||
	    migrate(db, schema, version, migrations) < 0 ||
	    EXEC_SQL(db, "PRAGMA foreign_keys = ON") < 0)
		goto fail;
	db->version = version;
	*out = db;
	return 0;
fail:
	if (db)
		db_close(db);
	if (created) {
		char *aux = xasprintf("%s-wal", path);

		unlink(aux);
		free(aux);
		aux = xasprintf("%s-shm", path);
		unlink(aux);
		free(aux);
		unlink(path);
	}
	return -1;
}

/* Join a NULL-terminated array of lines from tuner/db-sql.c. */
static char *join_lines(const char *const *lines)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *lines; lines++)
		sb_adds(&sb, *lines);
	return sb_detach(&sb);
}

/* ------------------------------------------------------------ PostgreSQL */

/* pg_advisory_xact_lock's key ("tuner"): servers that start together set the schema up in turn. */
#define PG_SCHEMA_LOCK "128047354226034"

/* The version tuner_schema holds: 1 found, 0 no tuner_schema (not a tuner database), -1 error(). */
static int pg_version(struct db *db, int *version)
{
	struct dbb_stmt *st = STMT(db, "SELECT to_regclass('tuner_schema') IS NOT NULL", "");
	int rc, found = 0;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		found = dbb_column_int(st, 0);
	dbb_finalize(st);
	if (rc < 0)
		return -1;
	if (!found)
		return 0;
	*version = user_version(db);
	return *version < 0 ? -1 : 1;
}

/* A fresh database: the schema of db/pg/schema.sql at the current version. */
static int pg_create(struct db *db)
{
	struct dbb_stmt *st = STMT(
	    db,
	    "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
	    "");
	char *schema, sql[96];
	int rc, tables = -1;

	if (!st)
		return -1;
	if (STEP(db, st) == DBB_ROW)
		tables = dbb_column_int(st, 0);
	dbb_finalize(st);
	if (tables < 0)
		return -1;
	if (tables > 0)
		return error("database '%s' is not a tuner database (it has tables but no "
		             "tuner_schema)",
		             db->path);
	schema = join_lines(db_sql_pg_schema);
	rc = exec_script(db, "db/pg/schema.sql", schema);
	free(schema);
	snprintf(sql, sizeof(sql),
	         "CREATE TABLE tuner_schema (version INTEGER NOT NULL);"
	         " INSERT INTO tuner_schema VALUES (%d)",
	         db_sql_version);
	return rc < 0 ? -1 : exec_script(db, "tuner_schema", sql);
}

/* An older database: each PostgreSQL migration above its version, in the one transaction. */
static int pg_migrate(struct db *db, int from)
{
	const struct db_sql_file *f;
	char sql[64], *text;
	int v = from, rc;

	for (f = db_sql_pg_migrations; f->name; f++) {
		if (f->version <= v)
			continue;
		if (f->version != v + 1)
			break;
		text = join_lines(f->lines);
		rc = exec_script(db, f->name, text);
		free(text);
		if (rc < 0)
			return -1;
		v = f->version;
	}
	if (v != db_sql_version)
		return error("database '%s' has schema version %d, from before this tuner's "
		             "PostgreSQL migrations (version %d on): it cannot be migrated",
		             db->path, from, v + 1);
	snprintf(sql, sizeof(sql), "UPDATE tuner_schema SET version = %d", v);
	return exec_script(db, "tuner_schema", sql);
}

/* Create or migrate the schema (a writer), or only read its version (a reader). */
static int pg_schema(struct db *db, int write)
{
	int v = 0, r, ok;

	if (EXEC_SQL(db, "BEGIN") < 0)
		return -1;
	ok = write ? !EXEC_SQL(db, "SELECT pg_advisory_xact_lock(" PG_SCHEMA_LOCK ")") : 1;
	r = ok ? pg_version(db, &v) : -1;
	if (r == 0 && !write)
		error("database '%s' is not a tuner database (no tuner_schema)", db->path);
	else if (r == 0)
		ok = !pg_create(db), v = db_sql_version;
	else if (r > 0 && v > db_sql_version)
		ok = !error("database '%s' has schema version %d; this tuner knows up to %d",
		            db->path, v, db_sql_version);
	else if (r > 0 && v < db_sql_version && write && !pg_migrate(db, v))
		v = db_sql_version;
	else if (r > 0 && v < db_sql_version && write)
		ok = 0;
	ok = ok && r >= 0 && !(r == 0 && !write);
	if (ok && EXEC_SQL(db, "COMMIT") == 0) {
		db->version = v;
		return 0;
	}
	if (dbb_in_transaction(db->b))
		EXEC_SQL(db, "ROLLBACK");
	return -1;
}

/* Connect to url; a writer sets the schema up, a reader's transactions are read-only. */
static int open_pg(const char *url, int write, struct db **out)
{
	struct db *db = xcalloc(1, sizeof(*db));
	char why[512];

	*out = NULL;
	db->path = pq_redact(url);
	if (dbb_pg_connect(url, &db->b, why, sizeof(why)) < 0) {
		error("cannot open database '%s': %s", db->path, why);
		free(db->path);
		free(db);
		return -1;
	}
	if (pg_schema(db, write) < 0 ||
	    (!write && EXEC_SQL(db, "SET default_transaction_read_only = on") < 0)) {
		db_close(db);
		return -1;
	}
	*out = db;
	return 0;
}

int db_open_readonly(const char *path, struct db **out)
{
	struct strbuf uri = STRBUF_INIT;
	struct db *db;
	sqlite3 *h = NULL;
	const char *c;
	int rc, v;

	*out = NULL;
	if (pq_is_url(path))
		return error("a recording is a SQLite file, not '%s'", path);
	if (access(path, R_OK) < 0)
		return error("cannot read database '%s': %s", path, strerror(errno));
	/* immutable: no locks, no -wal or -shm beside a file that may sit in a read-only tree */
	sb_adds(&uri, "file:");
	for (c = path; *c; c++) {
		if (*c == '?' || *c == '#' || *c == '%')
			sb_addf(&uri, "%%%02X", (unsigned char)*c);
		else
			sb_add(&uri, c, 1);
	}
	sb_adds(&uri, "?immutable=1");
	rc = sqlite3_open_v2(uri.buf, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
	sb_release(&uri);
	if (rc != SQLITE_OK) {
		error("cannot open database '%s': %s", path,
		      h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
		sqlite3_close(h);
		return -1;
	}
	db = xcalloc(1, sizeof(*db));
	db->h = h;
	db->b = dbb_sqlite(h);
	db->path = xstrdup(path);
	v = user_version(db);
	if (v < 1 || v > db_sql_version) {
		if (v >= 0)
			error("'%s' is not a tuner database this version can read (schema version "
			      "%d, "
			      "this tuner knows 1 to %d)",
			      path, v, db_sql_version);
		db_close(db);
		return -1;
	}
	db->version = v;
	*out = db;
	return 0;
}

/* "file:PATH?QUERY" with the bytes a URI reserves escaped. */
static char *file_uri(const char *path, const char *query)
{
	struct strbuf uri = STRBUF_INIT;
	const char *c;

	sb_adds(&uri, "file:");
	for (c = path; *c; c++) {
		if (*c == '?' || *c == '#' || *c == '%')
			sb_addf(&uri, "%%%02X", (unsigned char)*c);
		else
			sb_add(&uri, c, 1);
	}
	sb_addf(&uri, "?%s", query);
	return sb_detach(&uri);
}

/* One read-only attempt: 0, or the SQLite code that refused it (nothing reported yet). */
static int open_read_as(const char *path, int flags, const char *uri, struct db **out)
{
	sqlite3 *h = NULL;
	struct db *db;
	sqlite3_stmt *st = NULL;
	int rc;

	*out = NULL;
	rc = sqlite3_open_v2(uri, &h, flags | SQLITE_OPEN_URI, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(h, BUSY_TIMEOUT_MS);
	/* The first read is where a WAL database without its -shm file refuses. */
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(h);
	if (rc != SQLITE_OK) {
		rc = sqlite3_extended_errcode(h) ? sqlite3_extended_errcode(h) : rc;
		sqlite3_finalize(st);
		sqlite3_close(h);
		return rc ? rc : SQLITE_ERROR;
	}
	db = xcalloc(1, sizeof(*db));
	db->h = h;
	db->b = dbb_sqlite(h);
	db->path = xstrdup(path);
	db->version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	*out = db;
	return 0;
}

int db_open_read(const char *path, struct db **out)
{
	char *dir, *uri;
	int writable, rc;

	*out = NULL;
	if (pq_is_url(path))
		return open_pg(path, 0, out);
	dir = path_dirname(path);
	writable = access(path, W_OK) == 0 && access(dir, W_OK) == 0;
	free(dir);
	if (access(path, R_OK) < 0)
		return error("cannot read database '%s': %s", path, strerror(errno));
	if (writable) {
		/* As any SQLite reader: the last one to close folds the WAL back and removes it. */
		uri = file_uri(path, "mode=rw");
		rc = open_read_as(path, SQLITE_OPEN_READWRITE, uri, out);
	} else {
		/* A read-only file, directory or mount: no -wal or -shm can be made beside it. */
		uri = file_uri(path, "mode=ro");
		rc = open_read_as(path, SQLITE_OPEN_READONLY, uri, out);
		if (rc) {
			free(uri);
			uri = file_uri(path, "immutable=1");
			rc = open_read_as(path, SQLITE_OPEN_READONLY, uri, out);
		}
	}
	free(uri);
	if (rc)
		return error("cannot open database '%s': %s", path, sqlite3_errstr(rc));
	if ((*out)->version < 1 || (*out)->version > db_sql_version) {
		error("'%s' is not a tuner database this version can read (schema version %d, this "
		      "tuner knows 1 to %d)",
		      path, (*out)->version, db_sql_version);
		db_close(*out);
		*out = NULL;
		return -1;
	}
	/* Nothing through this connection writes, whatever the file allows. */
	if (EXEC_SQL(*out, "PRAGMA query_only = ON") < 0) {
		db_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

int db_open(const char *path, struct db **out)
{
	const struct db_sql_file *f;
	struct db_migration *m;
	char *schema = join_lines(db_sql_schema);
	size_t i, n = 0;
	int rc;

	if (pq_is_url(path)) {
		free(schema);
		return open_pg(path, 1, out);
	}
	for (f = db_sql_migrations; f->name; f++)
		n++;
	m = xcalloc(n + 1, sizeof(*m));
	for (i = 0; i < n; i++) {
		m[i].version = db_sql_migrations[i].version;
		m[i].name = db_sql_migrations[i].name;
		m[i].sql = join_lines(db_sql_migrations[i].lines);
	}
	rc = db_open_schema(path, schema, db_sql_version, m, out);
	for (i = 0; i < n; i++)
		free((char *)m[i].sql);
	free(m);
	free(schema);
	return rc;
}

void db_close(struct db *db)
{
	if (!db)
		return;
	/* An open transaction is rolled back: its state change did not happen. */
	db_rollback(db);
	if (dbb_close(db->b) < 0)
		BUG("database '%s' closed with statements still open: %s", db->path,
		    dbb_errmsg(db->b));
	free(db->path);
	free(db);
}

int db_schema_version(struct db *db)
{
	return user_version(db);
}

/* ------------------------------------------------------------------ runs */

int db_run_create(struct db *db, const struct run_info *ri, long long *run_id)
{
	struct dbb_stmt *st = STMT(
	    db,
	    "INSERT INTO runs (command, config_path, config_text, template_name, template_hash,"
	    " arch, device, driver, nvrtc, strategy, seed, generations, population, shapes, gpu,"
	    " replay_of) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	    " ?15, ?16) RETURNING id",
	    "ttttttttttIiitit", ri->command, ri->config_path, ri->config_text, ri->template_name,
	    ri->template_hash, ri->arch, ri->device, ri->driver, ri->nvrtc, ri->strategy,
	    (long long)ri->seed, ri->generations, ri->population, ri->shapes, ri->gpu ? 1 : 0,
	    ri->replay_of);

	return db_insert_id(db, st, run_id);
}

int db_run_set_status(struct db *db, long long run_id, const char *status)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "UPDATE runs SET status = ?2, finished_at = CASE WHEN ?2 = 'running'"
	         " THEN NULL ELSE " NOW_SQL " END WHERE id = ?1",
	         "It", run_id, status);

	if (EXEC(db, st) < 0)
		return -1;
	if (!dbb_changes(db->b))
		return error("database '%s' has no run %lld", db->path, run_id);
	return 0;
}

int db_run_latest(struct db *db, long long *run_id)
{
	struct dbb_stmt *st = STMT(db, "SELECT max(id) FROM runs", "");
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW && dbb_column_null(st, 0))
		rc = error("database '%s' has no runs", db->path);
	else if (rc == DBB_ROW)
		*run_id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

/* ------------------------------------------------------------- liveness */

/* Seconds without a heartbeat after which a run seen from another host counts as interrupted. */
#define RUN_STALE_SECONDS (10 * 60)

/* A process's start time, field 22 of /proc/PID/stat (clock ticks after boot); 0: unknown. */
static long long process_start(long long pid)
{
	char path[64], buf[1024], *p;
	long long v = 0;
	int field;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count after its last ')'. */
	if (!(p = strrchr(buf, ')')))
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (sscanf(p, "%lld", &v) != 1)
		return 0;
	return v;
}

/*
 * The host a run or a server records: $TUNER_HOST, else gethostname().
 * Containers on several machines may share a host name, and a process of
 * "this host" whose pid is gone counts as dead at once: give each its own.
 */
void db_this_host(char *out, size_t len)
{
	const char *env = getenv("TUNER_HOST");

	if (env && *env)
		snprintf(out, len, "%s", env);
	else if (gethostname(out, len) < 0)
		snprintf(out, len, "?");
	out[len - 1] = '\0';
}

/*
 * Whether the process recorded with a running run is still there. On this
 * host: its pid exists and started when the run's process did (a reused pid
 * does not count). Seen from another host, or without a pid (a run recorded
 * before schema version 2): its last heartbeat is recent.
 */
static int run_alive(const char *host, long long pid, long long pid_start, double quiet_seconds)
{
	char me[256];
	long long started;

	db_this_host(me, sizeof(me));
	if (host && pid > 0 && !strcmp(host, me)) {
		if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
			return 0;
		started = pid_start ? process_start(pid) : 0;
		return !started || started == pid_start;
	}
	return quiet_seconds < RUN_STALE_SECONDS;
}

/* The liveness columns exist from schema version 2 on; older files read as NULL. */
#define RUN_COLUMNS                                                                                \
	"SELECT id, started_at, finished_at, status, command, config_path, config_text,"           \
	" template_name, template_hash, arch, device, driver, nvrtc, strategy, shapes, replay_of," \
	" seed, generations, population, gpu,"                                                     \
	" (julianday('now') - julianday(started_at)) * 86400,"                                     \
	" (julianday(coalesce(finished_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"                \
	" - julianday(started_at)) * 86400, "
#define RUN_LIVENESS_V2                                                                            \
	"host, pid, pid_start, heartbeat_at, active_seconds,"                                      \
	" (julianday('now') - julianday(coalesce(heartbeat_at, started_at))) * 86400 FROM runs"
#define RUN_LIVENESS_V1                                                                            \
	"NULL, NULL, NULL, NULL, NULL,"                                                            \
	" (julianday('now') - julianday(started_at)) * 86400 FROM runs"

int db_run_get(struct db *db, long long run_id, struct db_run *r)
{
	struct dbb_stmt *st = STMT(db,
	                           db->version >= 2 ? RUN_COLUMNS RUN_LIVENESS_V2 " WHERE id = ?1"
	                                            : RUN_COLUMNS RUN_LIVENESS_V1 " WHERE id = ?1",
	                           "I", run_id);
	double active, span, quiet;
	long long pid_start;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_DONE)
		error("database '%s' has no run %lld", db->path, run_id);
	if (rc != DBB_ROW) {
		dbb_finalize(st);
		return -1;
	}
	r->id = dbb_column_int64(st, 0);
	r->started_at = db_col_str(st, 1);
	r->finished_at = db_col_str(st, 2);
	r->status = db_col_str(st, 3);
	r->command = db_col_str(st, 4);
	r->config_path = db_col_str(st, 5);
	r->config_text = db_col_str(st, 6);
	r->template_name = db_col_str(st, 7);
	r->template_hash = db_col_str(st, 8);
	r->arch = db_col_str(st, 9);
	r->device = db_col_str(st, 10);
	r->driver = db_col_str(st, 11);
	r->nvrtc = db_col_str(st, 12);
	r->strategy = db_col_str(st, 13);
	r->shapes = db_col_str(st, 14);
	r->replay_of = db_col_str(st, 15);
	r->seed = (unsigned long long)dbb_column_int64(st, 16);
	r->generations = dbb_column_int(st, 17);
	r->population = dbb_column_int(st, 18);
	r->gpu = dbb_column_int(st, 19);
	r->age_seconds = db_col_real(st, 20);
	span = db_col_real(st, 21);
	r->host = db_col_str(st, 22);
	r->pid = dbb_column_int64(st, 23);
	pid_start = dbb_column_int64(st, 24);
	r->heartbeat_at = db_col_str(st, 25);
	active = db_col_real(st, 26);
	quiet = db_col_real(st, 27);
	dbb_finalize(st);

	if (r->status && !strcmp(r->status, "running")) {
		r->alive = run_alive(r->host, r->pid, pid_start, quiet);
		if (!r->alive) {
			/* Derived when read; the next writer stores it (db_runs_reap). */
			free(r->status);
			r->status = xstrdup("interrupted");
		}
	}
	/* The time it ran, not the time since it started: a run that lay dead is not working. */
	if (!isnan(active))
		r->wall_seconds = active + (r->alive ? quiet : 0);
	else if (r->status && !strcmp(r->status, "interrupted"))
		r->wall_seconds = NAN; /* died before it kept count */
	else
		r->wall_seconds = span;
	return 0;
}

void db_run_release(struct db_run *r)
{
	char **s[] = {&r->started_at,  &r->finished_at, &r->status,        &r->command,
	              &r->config_path, &r->config_text, &r->template_name, &r->template_hash,
	              &r->arch,        &r->device,      &r->driver,        &r->nvrtc,
	              &r->strategy,    &r->shapes,      &r->replay_of,     &r->host,
	              &r->heartbeat_at};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(s); i++)
		free(*s[i]);
	memset(r, 0, sizeof(*r));
}

int db_recording_find(struct db *db, const char *template_hash, const char *arch,
                      const char *shapes, long long *run_id, char *device, size_t len)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT id, device FROM runs WHERE template_hash = ?1 AND arch = ?2"
	         " AND shapes = ?3 AND gpu = 1 ORDER BY id DESC LIMIT 1",
	         "ttt", template_hash, arch, shapes);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		*run_id = dbb_column_int64(st, 0);
		snprintf(device, len, "%s", nonnull((const char *)dbb_column_text(st, 1)));
	}
	dbb_finalize(st);
	return rc < 0 ? -1 : rc == DBB_ROW;
}

int db_run_latest_with(struct db *db, const char *status, long long *run_id)
{
	struct dbb_stmt *st;
	long long id = 0;
	int rc = 0, found = 0;

	/* The status read is derived (a dead 'running' run is interrupted): newest first. */
	st = STMT(db, "SELECT id FROM runs ORDER BY id DESC", "");
	if (!st)
		return -1;
	while (!found && (rc = STEP(db, st)) == DBB_ROW) {
		struct db_run r;

		id = dbb_column_int64(st, 0);
		if (!status) {
			found = 1;
			break;
		}
		if (db_run_get(db, id, &r) < 0) {
			rc = -1;
			break;
		}
		found = !strcmp(r.status, status);
		db_run_release(&r);
	}
	dbb_finalize(st);
	if (!found && rc < 0)
		return -1;
	if (found)
		*run_id = id;
	return found;
}

int db_run_begin(struct db *db, long long run_id, double *active_before)
{
	char host[256];
	long long pid = (long long)getpid();
	struct dbb_stmt *st;
	int rc;

	db_this_host(host, sizeof(host));
	st = STMT(db,
	          "UPDATE runs SET status = 'running', finished_at = NULL, host = ?2, pid = ?3,"
	          " pid_start = ?4, heartbeat_at = " NOW_SQL " WHERE id = ?1",
	          "ItII", run_id, host, pid, process_start(pid));
	if (EXEC(db, st) < 0)
		return -1;
	if (!dbb_changes(db->b))
		return error("database '%s' has no run %lld", db->path, run_id);
	st = STMT(db, "SELECT coalesce(active_seconds, 0) FROM runs WHERE id = ?1", "I", run_id);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*active_before = dbb_column_double(st, 0);
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

int db_run_heartbeat(struct db *db, long long run_id, double active_seconds)
{
	/* A writer elsewhere may have taken a long silence for death: this process says otherwise.
	 */
	return EXEC(db, STMT(db,
	                     "UPDATE runs SET heartbeat_at = " NOW_SQL ", active_seconds = ?2,"
	                     " status = CASE WHEN status = 'interrupted' AND pid = ?3"
	                     " THEN 'running' ELSE status END WHERE id = ?1",
	                     "IdI", run_id, active_seconds, (long long)getpid()));
}

int db_run_end(struct db *db, long long run_id, const char *status, double active_seconds)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "UPDATE runs SET status = ?2, finished_at = " NOW_SQL ", heartbeat_at = " NOW_SQL
	         ", active_seconds = ?3 WHERE id = ?1",
	         "Itd", run_id, status, active_seconds);

	if (EXEC(db, st) < 0)
		return -1;
	if (!dbb_changes(db->b))
		return error("database '%s' has no run %lld", db->path, run_id);
	return 0;
}

int db_runs_reap(struct db *db, long long *reaped)
{
	struct dbb_stmt *st =
	    STMT(db, "SELECT id FROM runs WHERE status = 'running' ORDER BY id", "");
	long long *ids = NULL;
	size_t n = 0, alloc = 0, i;
	int rc;

	*reaped = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		ALLOC_GROW(ids, n + 1, alloc);
		ids[n++] = dbb_column_int64(st, 0);
	}
	dbb_finalize(st);
	for (i = 0; rc == DBB_DONE && i < n; i++) {
		struct db_run r;

		if (db_run_get(db, ids[i], &r) < 0) {
			rc = -1;
			break;
		}
		/* It ended at its last sign of life; the pid guards against a resume in between. */
		if (!r.alive && EXEC(db, STMT(db,
		                              "UPDATE runs SET status = 'interrupted',"
		                              " finished_at = coalesce(heartbeat_at, started_at)"
		                              " WHERE id = ?1 AND status = 'running'"
		                              " AND pid IS NOT DISTINCT FROM ?2",
		                              "IR", ids[i], r.pid)) < 0)
			rc = -1;
		else if (!r.alive)
			*reaped += dbb_changes(db->b);
		db_run_release(&r);
	}
	free(ids);
	return rc == DBB_DONE ? 0 : -1;
}

int db_run_outcome_counts(struct db *db, long long run_id, long long counts[OUTCOME_COUNT])
{
	struct dbb_stmt *st =
	    STMT(db, "SELECT outcome, count(*) FROM evals WHERE run_id = ?1 GROUP BY outcome", "I",
	         run_id);
	int rc, o;

	memset(counts, 0, OUTCOME_COUNT * sizeof(counts[0]));
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		if ((o = db_col_outcome(db, st, 0)) < 0) {
			rc = -1;
			break;
		}
		counts[o] = dbb_column_int64(st, 1);
	}
	dbb_finalize(st);
	return rc == DBB_DONE ? 0 : -1;
}

/* -------------------------------------------------------------- variants */

int db_variant_find(struct db *db, const char *hash, long long *variant_id)
{
	struct dbb_stmt *st = STMT(db, "SELECT id FROM variants WHERE hash = ?1", "t", hash);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW)
		*variant_id = dbb_column_int64(st, 0);
	dbb_finalize(st);
	return rc < 0 ? -1 : rc == DBB_ROW;
}

int db_variant_upsert(struct db *db, const char *hash, const char *template_name,
                      const char *template_hash, const char *arch, const char *params,
                      const char *options, long long *variant_id, int *created)
{
	struct dbb_stmt *st;
	int rc;

	*created = 0;
	/* The same hash must mean the same point: anything else is a hash bug or collision. */
	st = STMT(db,
	          "SELECT id, template_hash, arch, params, options FROM variants WHERE hash = ?1",
	          "t", hash);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		const char *th = (const char *)dbb_column_text(st, 1);
		const char *ar = (const char *)dbb_column_text(st, 2);
		const char *pa = (const char *)dbb_column_text(st, 3);
		const char *op = (const char *)dbb_column_text(st, 4);

		*variant_id = dbb_column_int64(st, 0);
		if (strcmp(th, template_hash) || strcmp(ar, arch) || strcmp(pa, params) ||
		    strcmp(op, options))
			rc = error("database '%s': variant hash '%s' already names another variant "
			           "('%s' on %s, template %s)",
			           db->path, hash, pa, ar, th);
	}
	dbb_finalize(st);
	if (rc != DBB_DONE)
		return rc == DBB_ROW ? 0 : -1;

	st = STMT(db,
	          "INSERT INTO variants (hash, template_name, template_hash, arch, params, options)"
	          " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (hash) DO NOTHING RETURNING id",
	          "tttttt", hash, template_name, template_hash, arch, params, options);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		*variant_id = dbb_column_int64(st, 0);
		*created = 1;
	}
	dbb_finalize(st);
	if (rc < 0)
		return -1;
	if (*created)
		return 0;
	/* Another process inserted it between our SELECT and INSERT. */
	rc = db_variant_find(db, hash, variant_id);
	if (rc == 0)
		return error("database '%s': variant '%s' vanished while being inserted", db->path,
		             hash);
	return rc < 0 ? -1 : 0;
}

/* A match for db_variant_find_prefix(), kept to list them when there are several. */
struct match {
	long long id;
	char hash[HASH_HEX_LEN];
};

static int add_matches(struct db *db, struct dbb_stmt *st, struct match *m, size_t *n, size_t max)
{
	int rc;

	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == DBB_ROW) {
		long long id = dbb_column_int64(st, 0);
		size_t i;

		for (i = 0; i < *n && m[i].id != id; i++)
			;
		if (i < *n || *n == max)
			continue;
		m[*n].id = id;
		snprintf(m[*n].hash, sizeof(m[*n].hash), "%s", dbb_column_text(st, 1));
		(*n)++;
	}
	dbb_finalize(st);
	return rc == DBB_DONE ? 0 : -1;
}

int db_variant_find_prefix(struct db *db, const char *name, long long *variant_id)
{
	struct match m[4];
	size_t len = strlen(name), digits = strspn(name, "0123456789"), n = 0, i;
	int is_id = len && digits == len && len <= 18;
	int is_hex =
	    len >= 4 && len < HASH_HEX_LEN && strspn(name, "0123456789abcdefABCDEF") == len;
	struct strbuf sb = STRBUF_INIT;
	char pattern[HASH_HEX_LEN + 1];

	if (!is_id && !is_hex)
		return error(
		    "'%s' is neither a variant id nor a hash prefix of 4 or more hex digits", name);
	if (is_id && add_matches(db,
	                         STMT(db, "SELECT id, hash FROM variants WHERE id = ?1", "I",
	                              strtoll(name, NULL, 10)),
	                         m, &n, ARRAY_SIZE(m)) < 0)
		return -1;
	if (is_hex) {
		/* Hex digits only, so LIKE has nothing to escape; hashes are lowercase. */
		for (i = 0; i < len; i++)
			pattern[i] = (char)(name[i] >= 'A' && name[i] <= 'F' ? name[i] - 'A' + 'a'
			                                                     : name[i]);
		pattern[len] = '%';
		pattern[len + 1] = '\0';
		if (add_matches(
			db,
			STMT(db,
		             "SELECT id, hash FROM variants WHERE hash LIKE ?1 ORDER BY hash"
		             " LIMIT 4",
		             "t", pattern),
			m, &n, ARRAY_SIZE(m)) < 0)
			return -1;
	}
	if (n == 1) {
		*variant_id = m[0].id;
		return 0;
	}
	if (!n)
		return error("no variant '%s' in database '%s'", name, db->path);
	for (i = 0; i < n; i++)
		sb_addf(&sb, "%s%lld (%.12s)", i ? ", " : "", m[i].id, m[i].hash);
	error("variant '%s' is ambiguous: it matches %s%s", name, sb.buf,
	      n == ARRAY_SIZE(m) ? ", ..." : "");
	sb_release(&sb);
	return -1;
}

int db_variant_get(struct db *db, long long variant_id, struct db_variant *v)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT id, hash, template_name, template_hash, arch, params, options,"
	         " created_at FROM variants WHERE id = ?1",
	         "I", variant_id);
	int rc;

	memset(v, 0, sizeof(*v));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_DONE)
		error("database '%s' has no variant %lld", db->path, variant_id);
	if (rc == DBB_ROW) {
		v->id = dbb_column_int64(st, 0);
		v->hash = db_col_str(st, 1);
		v->template_name = db_col_str(st, 2);
		v->template_hash = db_col_str(st, 3);
		v->arch = db_col_str(st, 4);
		v->params = db_col_str(st, 5);
		v->options = db_col_str(st, 6);
		v->created_at = db_col_str(st, 7);
	}
	dbb_finalize(st);
	return rc == DBB_ROW ? 0 : -1;
}

void db_variant_release(struct db_variant *v)
{
	free(v->hash);
	free(v->template_name);
	free(v->template_hash);
	free(v->arch);
	free(v->params);
	free(v->options);
	free(v->created_at);
	memset(v, 0, sizeof(*v));
}

/* ------------------------------------------------- builds, gates, evals */

int db_build_record(struct db *db, long long variant_id, const char *key, const char *spec,
                    int sanitize, const struct build *b)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "INSERT INTO builds (variant_id, key, spec, sanitize, outcome, regs, spill_stores,"
	         " spill_loads, static_smem, stack_frame, seconds, cached, cubin_size, log)"
	         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
	         " ON CONFLICT (key) DO UPDATE SET variant_id = excluded.variant_id,"
	         " spec = excluded.spec, sanitize = excluded.sanitize, outcome = excluded.outcome,"
	         " regs = excluded.regs, spill_stores = excluded.spill_stores,"
	         " spill_loads = excluded.spill_loads, static_smem = excluded.static_smem,"
	         " stack_frame = excluded.stack_frame, seconds = excluded.seconds,"
	         " cached = excluded.cached, cubin_size = excluded.cubin_size, log = excluded.log,"
	         " created_at = excluded.created_at",
	         "IttitiiiiidiIt", variant_id, key, spec, sanitize ? 1 : 0,
	         outcome_name(b->outcome), b->regs, b->spill_stores, b->spill_loads, b->static_smem,
	         b->stack_frame, b->seconds, b->cached ? 1 : 0, (long long)b->cubin_size, b->log);

	return EXEC(db, st);
}

int db_gate_record(struct db *db, long long run_id, long long variant_id, const char *gate,
                   const char *shape, enum outcome outcome, const char *reason)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "INSERT INTO gates (run_id, variant_id, gate, shape, outcome, reason)"
	         " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	         "IItttt", run_id, variant_id, gate, shape && *shape ? shape : NULL,
	         outcome_name(outcome), nonnull(reason));

	return EXEC(db, st);
}

int db_eval_record(struct db *db, long long run_id, long long variant_id, int generation,
                   enum outcome outcome, const char *reason)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "INSERT INTO evals (run_id, variant_id, generation, outcome, reason)"
	         " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, variant_id) DO UPDATE SET"
	         " generation = excluded.generation, outcome = excluded.outcome,"
	         " reason = excluded.reason,"
	         " fitness = CASE WHEN excluded.outcome = 'ok' THEN evals.fitness END,"
	         " fitness_lo = CASE WHEN excluded.outcome = 'ok' THEN evals.fitness_lo END,"
	         " fitness_hi = CASE WHEN excluded.outcome = 'ok' THEN evals.fitness_hi END",
	         "IIitt", run_id, variant_id, generation, outcome_name(outcome), nonnull(reason));

	return EXEC(db, st);
}

int db_eval_set_fitness(struct db *db, long long run_id, long long variant_id, double fitness,
                        double fitness_lo, double fitness_hi)
{
	struct dbb_stmt *st = STMT(db,
	                           "UPDATE evals SET fitness = ?3, fitness_lo = ?4, fitness_hi = ?5"
	                           " WHERE run_id = ?1 AND variant_id = ?2",
	                           "IIddd", run_id, variant_id, fitness, fitness_lo, fitness_hi);

	if (EXEC(db, st) < 0)
		return -1;
	if (!dbb_changes(db->b))
		return error("database '%s' has no evaluation of variant %lld in run %lld",
		             db->path, variant_id, run_id);
	return 0;
}

int db_eval_get(struct db *db, long long run_id, long long variant_id, struct db_eval *e)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT generation, outcome, reason, fitness, fitness_lo, fitness_hi"
	         " FROM evals WHERE run_id = ?1 AND variant_id = ?2",
	         "II", run_id, variant_id);
	int rc, o = 0;

	memset(e, 0, sizeof(*e));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW && (o = db_col_outcome(db, st, 1)) >= 0) {
		e->generation = dbb_column_int(st, 0);
		e->outcome = (enum outcome)o;
		e->reason = db_col_str(st, 2);
		e->fitness = db_col_real(st, 3);
		e->fitness_lo = db_col_real(st, 4);
		e->fitness_hi = db_col_real(st, 5);
	}
	dbb_finalize(st);
	if (rc < 0 || o < 0)
		return -1;
	return rc == DBB_ROW;
}

void db_eval_release(struct db_eval *e)
{
	free(e->reason);
	memset(e, 0, sizeof(*e));
}

/* ---------------------------------------------------------- measurements */

/* The shortest decimal that reads back as the same double; null for NAN and infinities. */
static void add_json_number(struct strbuf *sb, double v)
{
	char buf[32];
	int prec;

	if (!isfinite(v)) {
		sb_adds(sb, "null");
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	sb_adds(sb, buf);
}

static char *samples_json(const double *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_adds(&sb, "[");
	for (i = 0; i < n; i++) {
		if (i)
			sb_adds(&sb, ",");
		add_json_number(&sb, s[i]);
	}
	sb_adds(&sb, "]");
	return sb_detach(&sb);
}

/* The samples column as written by samples_json() (any JSON array of numbers and nulls). */
static int parse_samples(const char *s, double **out, size_t *n)
{
	double *v = NULL;
	size_t alloc = 0;
	char *end;

	*n = 0;
	*out = NULL;
	s += strspn(s, " \t\n\r");
	if (*s++ != '[')
		return -1;
	s += strspn(s, " \t\n\r");
	if (*s == ']')
		return s[1 + strspn(s + 1, " \t\n\r")] ? -1 : 0;
	for (;;) {
		double d;

		s += strspn(s, " \t\n\r");
		if (!strncmp(s, "null", 4)) {
			d = NAN;
			end = (char *)s + 4;
		} else if ((*s >= '0' && *s <= '9') || *s == '-') {
			d = strtod(s, &end);
		} else {
			break;
		}
		ALLOC_GROW(v, *n + 1, alloc);
		v[(*n)++] = d;
		s = end + strspn(end, " \t\n\r");
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s == ']' && !s[1 + strspn(s + 1, " \t\n\r")]) {
			*out = v;
			return 0;
		}
		break;
	}
	free(v);
	*n = 0;
	return -1;
}

int db_measure_record(struct db *db, long long run_id, long long variant_id,
                      const struct db_measurement *m, int *created)
{
	char *samples = samples_json(m->samples, m->nsamples);
	struct dbb_stmt *st =
	    STMT(db,
	         "INSERT INTO measurements (variant_id, device, shape, shape_dims, outcome, reason,"
	         " rel_l2, max_abs, median_us, ci_lo_us, ci_hi_us, tflops, samples, run_id,"
	         " gbps, sm_mhz, temp_c, power_w, throttle, retaken)"
	         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	         " ?15, ?16, ?17, ?18, ?19, ?20)"
	         " ON CONFLICT (variant_id, device, shape_dims) DO NOTHING",
	         "ItttttddddddtRdddddd", variant_id, m->device, m->shape, m->shape_dims,
	         outcome_name(m->outcome), nonnull(m->reason), m->rel_l2, m->max_abs, m->median_us,
	         m->ci_lo_us, m->ci_hi_us, m->tflops, samples, run_id, m->gbps, m->sm_mhz,
	         m->temp_c, m->power_w, m->throttle, m->retaken);
	int rc = EXEC(db, st);

	free(samples);
	if (rc < 0)
		return -1;
	if (created)
		*created = dbb_changes(db->b) > 0;
	return 0;
}

int db_measure_conditions(struct db *db, long long measurement_id, struct db_conditions *out)
{
	struct dbb_stmt *st;
	int rc;

	out->gbps = out->sm_mhz = out->temp_c = out->power_w = out->throttle = out->retaken = NAN;
	if (db_schema_version(db) < 3)
		return 0; /* measured before tuner watched the clocks */
	st = STMT(db,
	          "SELECT gbps, sm_mhz, temp_c, power_w, throttle, retaken FROM measurements"
	          " WHERE id = ?1",
	          "I", measurement_id);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW) {
		out->gbps = db_col_real(st, 0);
		out->sm_mhz = db_col_real(st, 1);
		out->temp_c = db_col_real(st, 2);
		out->power_w = db_col_real(st, 3);
		out->throttle = db_col_real(st, 4);
		out->retaken = db_col_real(st, 5);
	}
	dbb_finalize(st);
	return rc < 0 ? -1 : 0;
}

/* The row st stands on, MEASURED_COLUMNS: 0, or -1 after error(). */
int db_measured_row(struct db *db, struct dbb_stmt *st, struct db_measured *out)
{
	int o = db_col_outcome(db, st, 4);

	memset(out, 0, sizeof(*out));
	if (o < 0)
		return -1;
	out->id = dbb_column_int64(st, 0);
	out->variant_id = dbb_column_int64(st, 1);
	out->run_id = dbb_column_int64(st, 2);
	out->shape = db_col_str(st, 3);
	out->outcome = (enum outcome)o;
	out->reason = db_col_str(st, 5);
	out->rel_l2 = db_col_real(st, 6);
	out->max_abs = db_col_real(st, 7);
	out->median_us = db_col_real(st, 8);
	out->ci_lo_us = db_col_real(st, 9);
	out->ci_hi_us = db_col_real(st, 10);
	out->tflops = db_col_real(st, 11);
	out->device = db_col_str(st, 13);
	out->shape_dims = db_col_str(st, 14);
	if (parse_samples((const char *)dbb_column_text(st, 12), &out->samples, &out->nsamples) <
	    0) {
		error("database '%s': measurement %lld has malformed samples", db->path, out->id);
		db_measured_release(out);
		return -1;
	}
	return 0;
}

static int read_measured(struct db *db, struct dbb_stmt *st, struct db_measured *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW && db_measured_row(db, st, out) < 0)
		rc = -1;
	dbb_finalize(st);
	if (rc < 0)
		return -1;
	return rc == DBB_ROW;
}

int db_measure_lookup(struct db *db, long long variant_id, const char *device,
                      const char *shape_dims, struct db_measured *out)
{
	return read_measured(db,
	                     STMT(db,
	                          MEASURED_COLUMNS " WHERE m.variant_id = ?1 AND m.device = ?2"
	                                           " AND m.shape_dims = ?3",
	                          "Itt", variant_id, device, shape_dims),
	                     out);
}

int db_measure_lookup_params(struct db *db, const struct db_recorded_key *k, const char *device,
                             const char *shape_dims, struct db_measured *out)
{
	/* the newest variant of that configuration measured there: a recording may hold several
	 * (compile options or a compiler that changed between runs) */
	return read_measured(db,
	                     STMT(db,
	                          MEASURED_COLUMNS " JOIN variants v ON v.id = m.variant_id"
	                                           " WHERE v.template_hash = ?1 AND v.arch = ?2"
	                                           " AND v.params = ?3 AND m.device = ?4"
	                                           " AND m.shape_dims = ?5 ORDER BY m.id DESC"
	                                           " LIMIT 1",
	                          "ttttt", k->template_hash, k->arch, k->params, device,
	                          shape_dims),
	                     out);
}

int db_gate_rejection_params(struct db *db, const struct db_recorded_key *k,
                             struct db_gate_found *out)
{
	struct dbb_stmt *st =
	    STMT(db,
	         "SELECT g.gate, g.outcome, g.reason FROM gates g JOIN variants v"
	         " ON v.id = g.variant_id WHERE v.template_hash = ?1 AND v.arch = ?2"
	         " AND v.params = ?3 AND g.outcome != 'ok'"
	         " AND g.gate IN ('constraint', 'compile', 'resources', 'sanitize')"
	         " ORDER BY g.id LIMIT 1",
	         "ttt", k->template_hash, k->arch, k->params);
	int rc, o = 0;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == DBB_ROW && (o = db_col_outcome(db, st, 1)) >= 0) {
		out->gate = db_col_str(st, 0);
		out->outcome = (enum outcome)o;
		out->reason = db_col_str(st, 2);
	}
	dbb_finalize(st);
	if (rc < 0 || o < 0)
		return -1;
	return rc == DBB_ROW;
}

void db_gate_found_release(struct db_gate_found *g)
{
	free(g->gate);
	free(g->reason);
	memset(g, 0, sizeof(*g));
}

void db_measured_release(struct db_measured *m)
{
	free(m->shape);
	free(m->reason);
	free(m->samples);
	free(m->device);
	free(m->shape_dims);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------ population, elite */

int db_population_record(struct db *db, long long run_id, int generation, long long variant_id,
                         const char *origin, long long parent_a, long long parent_b)
{
	struct dbb_stmt *st = STMT(
	    db,
	    "INSERT INTO population (run_id, generation, variant_id, origin, parent_a, parent_b)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run_id, generation, variant_id)"
	    " DO UPDATE SET origin = excluded.origin, parent_a = excluded.parent_a,"
	    " parent_b = excluded.parent_b",
	    "IiItRR", run_id, generation, variant_id, origin, parent_a, parent_b);

	return EXEC(db, st);
}

int db_elite_store(struct db *db, long long run_id, int generation, const long long *variant_ids,
                   const double *fitness, size_t n)
{
	size_t i;
	int ok;

	/* rank by rank, in order: two servers storing the same elite at once wait, never clash */
	if (db_group_begin(db) < 0)
		return -1;
	ok = !EXEC(db,
	           STMT(db, "DELETE FROM elite WHERE run_id = ?1 AND generation = ?2 AND rank > ?3",
	                "IiI", run_id, generation, (long long)n));
	for (i = 0; ok && i < n; i++)
		ok = !EXEC(
		    db, STMT(db,
		             "INSERT INTO elite (run_id, generation, rank, variant_id, fitness)"
		             " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, generation, rank)"
		             " DO UPDATE SET variant_id = excluded.variant_id,"
		             " fitness = excluded.fitness",
		             "IiIId", run_id, generation, (long long)i + 1, variant_ids[i],
		             fitness[i]));
	return db_group_end(db, ok);
}
