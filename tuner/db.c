/* The SQLite store: runs, variants, builds, gate results, measurements, populations, the elite. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tuner/db.h"

struct db {
	sqlite3 *h;
	char *path;
	int in_tx;   /* inside db_begin() */
	int version; /* the schema version of the file: readers of an older one read what it has */
};

#define NOW_SQL         "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
#define BUSY_TIMEOUT_MS 5000

/* ---------------------------------------------------------------- errors */

/*
 * Every SQLite call goes through SQL_CHECK, which, like llm.c's cudaCheck,
 * names the call site, but returns: the SQLite code when it is a success
 * (OK, ROW, DONE), else -1 after error() with the database and SQLite's message.
 */
#define SQL_CHECK(db, call) sql_check_fl((db), (call), __FILE__, __LINE__)

static int sql_check_fl(struct db *db, int rc, const char *file, int line)
{
	if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	return error("database '%s': %s (%s:%d)", db->path, sqlite3_errmsg(db->h), file, line);
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
#define STMT(db, ...) stmt_fl((db), __FILE__, __LINE__, __VA_ARGS__)

static sqlite3_stmt *stmt_fl(struct db *db, const char *file, int line, const char *sql,
                             const char *types, ...)
{
	sqlite3_stmt *st = NULL;
	va_list ap;
	int i, rc;

	if (sql_check_fl(db, sqlite3_prepare_v2(db->h, sql, -1, &st, NULL), file, line) < 0)
		return NULL;
	if ((size_t)sqlite3_bind_parameter_count(st) != strlen(types))
		BUG("%s:%d: %d parameters but %zu bind types", file, line,
		    sqlite3_bind_parameter_count(st), strlen(types));
	va_start(ap, types);
	for (i = 0, rc = SQLITE_OK; types[i] && rc == SQLITE_OK; i++) {
		const char *s;
		long long v;
		double d;

		switch (types[i]) {
		case 't':
			s = va_arg(ap, const char *);
			rc = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT)
			       : sqlite3_bind_null(st, i + 1);
			break;
		case 'i':
			rc = sqlite3_bind_int(st, i + 1, va_arg(ap, int));
			break;
		case 'I':
			rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, long long));
			break;
		case 'R':
			v = va_arg(ap, long long);
			rc =
			    v > 0 ? sqlite3_bind_int64(st, i + 1, v) : sqlite3_bind_null(st, i + 1);
			break;
		case 'd':
			d = va_arg(ap, double);
			rc = isnan(d) ? sqlite3_bind_null(st, i + 1)
			              : sqlite3_bind_double(st, i + 1, d);
			break;
		default:
			BUG("bad bind type '%c'", types[i]);
		}
	}
	va_end(ap);
	if (sql_check_fl(db, rc, file, line) < 0) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* Step once: SQLITE_ROW, SQLITE_DONE, or -1 after error() (the statement is left to the caller). */
#define STEP(db, st) sql_check_fl((db), sqlite3_step(st), __FILE__, __LINE__)
/* The same check on a result code already in hand. */
#define STEP_RC(db, rc) sql_check_fl((db), (rc), __FILE__, __LINE__)

/* Run a statement that returns no rows to completion and finalize it: 0 or -1. */
#define EXEC(db, st) exec_fl((db), (st), __FILE__, __LINE__)

static int exec_fl(struct db *db, sqlite3_stmt *st, const char *file, int line)
{
	int rc;

	if (!st)
		return -1;
	rc = sql_check_fl(db, sqlite3_step(st), file, line);
	sqlite3_finalize(st);
	return rc < 0 ? -1 : 0;
}

/* A constant statement without parameters (BEGIN, PRAGMA ...). */
#define EXEC_SQL(db, sql)                                                                          \
	exec_fl((db), stmt_fl((db), __FILE__, __LINE__, (sql), ""), __FILE__, __LINE__)

/* Column helpers: owned copies, NULL and NAN for SQL NULL. */
static char *col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? xstrdup((const char *)s) : NULL;
}

static double col_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static const char *nonnull(const char *s)
{
	return s ? s : "";
}

/* An outcome column; -1 after error() for text this tuner does not know. */
static int col_outcome(struct db *db, sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	int o = s ? outcome_parse(s) : -1;

	if (o < 0)
		return error("database '%s': unknown outcome '%s'", db->path, s ? s : "(null)");
	return o;
}

/* ---------------------------------------------------------- transactions */

int db_begin(struct db *db)
{
	if (db->in_tx)
		BUG("nested db_begin on database '%s'", db->path);
	/* IMMEDIATE takes the write lock now (waiting up to the busy timeout), so a
	 * transaction never fails half-way because another process wrote first. */
	if (EXEC_SQL(db, "BEGIN IMMEDIATE") < 0)
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
	if (!sqlite3_get_autocommit(db->h))
		EXEC_SQL(db, "ROLLBACK");
	db->in_tx = 0;
}

/*
 * Several statements that must land together, inside the caller's transaction
 * (as a savepoint) or in one of their own.
 */
static int group_begin(struct db *db)
{
	return EXEC_SQL(db, db->in_tx ? "SAVEPOINT tuner_group" : "BEGIN IMMEDIATE");
}

static int group_end(struct db *db, int ok)
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
	if (!sqlite3_get_autocommit(db->h))
		EXEC_SQL(db, "ROLLBACK");
	return -1;
}

/* --------------------------------------------------------- open, migrate */

static int user_version(struct db *db)
{
	sqlite3_stmt *st = STMT(db, "PRAGMA user_version", "");
	int v = -1;

	if (st && STEP(db, st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
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
	char *msg = NULL;

	if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		error("database '%s': %s: %s", db->path, what, msg ? msg : sqlite3_errmsg(db->h));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* A migration may rebuild tables with foreign keys off; it must leave none dangling. */
static int foreign_key_check(struct db *db, const char *what)
{
	sqlite3_stmt *st = STMT(db, "PRAGMA foreign_key_check", "");
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW)
		error("database '%s': %s leaves a dangling foreign key in table '%s'", db->path,
		      what, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int create_schema(struct db *db, const char *schema, int version)
{
	sqlite3_stmt *st;
	int ok = 0, tables = -1;

	if (EXEC_SQL(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	/* Another process may have created it while we waited for the lock. */
	if (user_version(db) != 0) {
		EXEC_SQL(db, "ROLLBACK");
		return 0;
	}
	st = STMT(db, "SELECT count(*) FROM sqlite_schema", "");
	if (st && STEP(db, st) == SQLITE_ROW)
		tables = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
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
	sqlite3_stmt *st = STMT(db, "PRAGMA journal_mode = WAL", "");
	int rc;

	if (!st)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_BUSY && now_seconds() < deadline) {
		sqlite3_reset(st);
		usleep(10 * 1000);
	}
	rc = STEP_RC(db, rc);
	if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "wal")) {
		error("database '%s' cannot use WAL mode (journal mode '%s')", db->path,
		      (const char *)sqlite3_column_text(st, 0));
		rc = -1;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
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

int db_open_readonly(const char *path, struct db **out)
{
	struct strbuf uri = STRBUF_INIT;
	struct db *db;
	sqlite3 *h = NULL;
	const char *c;
	int rc, v;

	*out = NULL;
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
	db->path = xstrdup(path);
	db->version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	*out = db;
	return 0;
}

int db_open_read(const char *path, struct db **out)
{
	char *dir = path_dirname(path), *uri;
	int writable = access(path, W_OK) == 0 && access(dir, W_OK) == 0, rc;

	free(dir);
	*out = NULL;
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

/* Join a NULL-terminated array of lines from tuner/db-sql.c. */
static char *join_lines(const char *const *lines)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *lines; lines++)
		sb_adds(&sb, *lines);
	return sb_detach(&sb);
}

int db_open(const char *path, struct db **out)
{
	const struct db_sql_file *f;
	struct db_migration *m;
	char *schema = join_lines(db_sql_schema);
	size_t i, n = 0;
	int rc;

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
	if (sqlite3_close(db->h) != SQLITE_OK)
		BUG("database '%s' closed with statements still open: %s", db->path,
		    sqlite3_errmsg(db->h));
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
	sqlite3_stmt *st = STMT(
	    db,
	    "INSERT INTO runs (command, config_path, config_text, template_name, template_hash,"
	    " arch, device, driver, nvrtc, strategy, seed, generations, population, shapes, gpu,"
	    " replay_of) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	    " ?15, ?16)",
	    "ttttttttttIiitit", ri->command, ri->config_path, ri->config_text, ri->template_name,
	    ri->template_hash, ri->arch, ri->device, ri->driver, ri->nvrtc, ri->strategy,
	    (long long)ri->seed, ri->generations, ri->population, ri->shapes, ri->gpu ? 1 : 0,
	    ri->replay_of);

	if (EXEC(db, st) < 0)
		return -1;
	*run_id = sqlite3_last_insert_rowid(db->h);
	return 0;
}

int db_run_set_status(struct db *db, long long run_id, const char *status)
{
	sqlite3_stmt *st =
	    STMT(db,
	         "UPDATE runs SET status = ?2, finished_at = CASE WHEN ?2 = 'running'"
	         " THEN NULL ELSE " NOW_SQL " END WHERE id = ?1",
	         "It", run_id, status);

	if (EXEC(db, st) < 0)
		return -1;
	if (!sqlite3_changes(db->h))
		return error("database '%s' has no run %lld", db->path, run_id);
	return 0;
}

int db_run_latest(struct db *db, long long *run_id)
{
	sqlite3_stmt *st = STMT(db, "SELECT max(id) FROM runs", "");
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_NULL)
		rc = error("database '%s' has no runs", db->path);
	else if (rc == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
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

static void this_host(char *out, size_t len)
{
	if (gethostname(out, len) < 0)
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

	this_host(me, sizeof(me));
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
	sqlite3_stmt *st = STMT(db,
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
	if (rc == SQLITE_DONE)
		error("database '%s' has no run %lld", db->path, run_id);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		return -1;
	}
	r->id = sqlite3_column_int64(st, 0);
	r->started_at = col_str(st, 1);
	r->finished_at = col_str(st, 2);
	r->status = col_str(st, 3);
	r->command = col_str(st, 4);
	r->config_path = col_str(st, 5);
	r->config_text = col_str(st, 6);
	r->template_name = col_str(st, 7);
	r->template_hash = col_str(st, 8);
	r->arch = col_str(st, 9);
	r->device = col_str(st, 10);
	r->driver = col_str(st, 11);
	r->nvrtc = col_str(st, 12);
	r->strategy = col_str(st, 13);
	r->shapes = col_str(st, 14);
	r->replay_of = col_str(st, 15);
	r->seed = (unsigned long long)sqlite3_column_int64(st, 16);
	r->generations = sqlite3_column_int(st, 17);
	r->population = sqlite3_column_int(st, 18);
	r->gpu = sqlite3_column_int(st, 19);
	r->age_seconds = col_real(st, 20);
	span = col_real(st, 21);
	r->host = col_str(st, 22);
	r->pid = sqlite3_column_int64(st, 23);
	pid_start = sqlite3_column_int64(st, 24);
	r->heartbeat_at = col_str(st, 25);
	active = col_real(st, 26);
	quiet = col_real(st, 27);
	sqlite3_finalize(st);

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
	sqlite3_stmt *st = STMT(db,
	                        "SELECT id, device FROM runs WHERE template_hash = ?1 AND arch = ?2"
	                        " AND shapes = ?3 AND gpu = 1 ORDER BY id DESC LIMIT 1",
	                        "ttt", template_hash, arch, shapes);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW) {
		*run_id = sqlite3_column_int64(st, 0);
		snprintf(device, len, "%s", nonnull((const char *)sqlite3_column_text(st, 1)));
	}
	sqlite3_finalize(st);
	return rc < 0 ? -1 : rc == SQLITE_ROW;
}

int db_run_latest_with(struct db *db, const char *status, long long *run_id)
{
	sqlite3_stmt *st;
	long long id = 0;
	int rc = 0, found = 0;

	/* The status read is derived (a dead 'running' run is interrupted): newest first. */
	st = STMT(db, "SELECT id FROM runs ORDER BY id DESC", "");
	if (!st)
		return -1;
	while (!found && (rc = STEP(db, st)) == SQLITE_ROW) {
		struct db_run r;

		id = sqlite3_column_int64(st, 0);
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
	sqlite3_finalize(st);
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
	sqlite3_stmt *st;
	int rc;

	this_host(host, sizeof(host));
	st = STMT(db,
	          "UPDATE runs SET status = 'running', finished_at = NULL, host = ?2, pid = ?3,"
	          " pid_start = ?4, heartbeat_at = " NOW_SQL " WHERE id = ?1",
	          "ItII", run_id, host, pid, process_start(pid));
	if (EXEC(db, st) < 0)
		return -1;
	if (!sqlite3_changes(db->h))
		return error("database '%s' has no run %lld", db->path, run_id);
	st = STMT(db, "SELECT coalesce(active_seconds, 0) FROM runs WHERE id = ?1", "I", run_id);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW)
		*active_before = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
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
	sqlite3_stmt *st = STMT(db,
	                        "UPDATE runs SET status = ?2, finished_at = " NOW_SQL
	                        ", heartbeat_at = " NOW_SQL ", active_seconds = ?3 WHERE id = ?1",
	                        "Itd", run_id, status, active_seconds);

	if (EXEC(db, st) < 0)
		return -1;
	if (!sqlite3_changes(db->h))
		return error("database '%s' has no run %lld", db->path, run_id);
	return 0;
}

int db_runs_reap(struct db *db, long long *reaped)
{
	sqlite3_stmt *st = STMT(db, "SELECT id FROM runs WHERE status = 'running' ORDER BY id", "");
	long long *ids = NULL;
	size_t n = 0, alloc = 0, i;
	int rc;

	*reaped = 0;
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == SQLITE_ROW) {
		ALLOC_GROW(ids, n + 1, alloc);
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	for (i = 0; rc == SQLITE_DONE && i < n; i++) {
		struct db_run r;

		if (db_run_get(db, ids[i], &r) < 0) {
			rc = -1;
			break;
		}
		/* It ended at its last sign of life; the pid guards against a resume in between. */
		if (!r.alive && EXEC(db, STMT(db,
		                              "UPDATE runs SET status = 'interrupted',"
		                              " finished_at = coalesce(heartbeat_at, started_at)"
		                              " WHERE id = ?1 AND status = 'running' AND pid IS ?2",
		                              "IR", ids[i], r.pid)) < 0)
			rc = -1;
		else if (!r.alive)
			*reaped += sqlite3_changes(db->h);
		db_run_release(&r);
	}
	free(ids);
	return rc == SQLITE_DONE ? 0 : -1;
}

int db_run_outcome_counts(struct db *db, long long run_id, long long counts[OUTCOME_COUNT])
{
	sqlite3_stmt *st =
	    STMT(db, "SELECT outcome, count(*) FROM evals WHERE run_id = ?1 GROUP BY outcome", "I",
	         run_id);
	int rc, o;

	memset(counts, 0, OUTCOME_COUNT * sizeof(counts[0]));
	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == SQLITE_ROW) {
		if ((o = col_outcome(db, st, 0)) < 0) {
			rc = -1;
			break;
		}
		counts[o] = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* -------------------------------------------------------------- variants */

int db_variant_find(struct db *db, const char *hash, long long *variant_id)
{
	sqlite3_stmt *st = STMT(db, "SELECT id FROM variants WHERE hash = ?1", "t", hash);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW)
		*variant_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc < 0 ? -1 : rc == SQLITE_ROW;
}

int db_variant_upsert(struct db *db, const char *hash, const char *template_name,
                      const char *template_hash, const char *arch, const char *params,
                      const char *options, long long *variant_id, int *created)
{
	sqlite3_stmt *st;
	int rc;

	*created = 0;
	/* The same hash must mean the same point: anything else is a hash bug or collision. */
	st = STMT(db,
	          "SELECT id, template_hash, arch, params, options FROM variants WHERE hash = ?1",
	          "t", hash);
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW) {
		const char *th = (const char *)sqlite3_column_text(st, 1);
		const char *ar = (const char *)sqlite3_column_text(st, 2);
		const char *pa = (const char *)sqlite3_column_text(st, 3);
		const char *op = (const char *)sqlite3_column_text(st, 4);

		*variant_id = sqlite3_column_int64(st, 0);
		if (strcmp(th, template_hash) || strcmp(ar, arch) || strcmp(pa, params) ||
		    strcmp(op, options))
			rc = error("database '%s': variant hash '%s' already names another variant "
			           "('%s' on %s, template %s)",
			           db->path, hash, pa, ar, th);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return rc == SQLITE_ROW ? 0 : -1;

	st = STMT(db,
	          "INSERT INTO variants (hash, template_name, template_hash, arch, params, options)"
	          " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (hash) DO NOTHING",
	          "tttttt", hash, template_name, template_hash, arch, params, options);
	if (EXEC(db, st) < 0)
		return -1;
	if (sqlite3_changes(db->h)) {
		*variant_id = sqlite3_last_insert_rowid(db->h);
		*created = 1;
		return 0;
	}
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

static int add_matches(struct db *db, sqlite3_stmt *st, struct match *m, size_t *n, size_t max)
{
	int rc;

	if (!st)
		return -1;
	while ((rc = STEP(db, st)) == SQLITE_ROW) {
		long long id = sqlite3_column_int64(st, 0);
		size_t i;

		for (i = 0; i < *n && m[i].id != id; i++)
			;
		if (i < *n || *n == max)
			continue;
		m[*n].id = id;
		snprintf(m[*n].hash, sizeof(m[*n].hash), "%s", sqlite3_column_text(st, 1));
		(*n)++;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
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
		/* Hex digits only, so GLOB has nothing to escape; hashes are lowercase. */
		for (i = 0; i < len; i++)
			pattern[i] = (char)(name[i] >= 'A' && name[i] <= 'F' ? name[i] - 'A' + 'a'
			                                                     : name[i]);
		pattern[len] = '*';
		pattern[len + 1] = '\0';
		if (add_matches(
			db,
			STMT(db,
		             "SELECT id, hash FROM variants WHERE hash GLOB ?1 ORDER BY hash"
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
	sqlite3_stmt *st =
	    STMT(db,
	         "SELECT id, hash, template_name, template_hash, arch, params, options,"
	         " created_at FROM variants WHERE id = ?1",
	         "I", variant_id);
	int rc;

	memset(v, 0, sizeof(*v));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_DONE)
		error("database '%s' has no variant %lld", db->path, variant_id);
	if (rc == SQLITE_ROW) {
		v->id = sqlite3_column_int64(st, 0);
		v->hash = col_str(st, 1);
		v->template_name = col_str(st, 2);
		v->template_hash = col_str(st, 3);
		v->arch = col_str(st, 4);
		v->params = col_str(st, 5);
		v->options = col_str(st, 6);
		v->created_at = col_str(st, 7);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
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
	sqlite3_stmt *st =
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
	sqlite3_stmt *st =
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
	sqlite3_stmt *st =
	    STMT(db,
	         "INSERT INTO evals (run_id, variant_id, generation, outcome, reason)"
	         " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, variant_id) DO UPDATE SET"
	         " generation = excluded.generation, outcome = excluded.outcome,"
	         " reason = excluded.reason,"
	         " fitness = CASE WHEN excluded.outcome = 'ok' THEN fitness END,"
	         " fitness_lo = CASE WHEN excluded.outcome = 'ok' THEN fitness_lo END,"
	         " fitness_hi = CASE WHEN excluded.outcome = 'ok' THEN fitness_hi END",
	         "IIitt", run_id, variant_id, generation, outcome_name(outcome), nonnull(reason));

	return EXEC(db, st);
}

int db_eval_set_fitness(struct db *db, long long run_id, long long variant_id, double fitness,
                        double fitness_lo, double fitness_hi)
{
	sqlite3_stmt *st = STMT(db,
	                        "UPDATE evals SET fitness = ?3, fitness_lo = ?4, fitness_hi = ?5"
	                        " WHERE run_id = ?1 AND variant_id = ?2",
	                        "IIddd", run_id, variant_id, fitness, fitness_lo, fitness_hi);

	if (EXEC(db, st) < 0)
		return -1;
	if (!sqlite3_changes(db->h))
		return error("database '%s' has no evaluation of variant %lld in run %lld",
		             db->path, variant_id, run_id);
	return 0;
}

int db_eval_get(struct db *db, long long run_id, long long variant_id, struct db_eval *e)
{
	sqlite3_stmt *st =
	    STMT(db,
	         "SELECT generation, outcome, reason, fitness, fitness_lo, fitness_hi"
	         " FROM evals WHERE run_id = ?1 AND variant_id = ?2",
	         "II", run_id, variant_id);
	int rc, o = 0;

	memset(e, 0, sizeof(*e));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW && (o = col_outcome(db, st, 1)) >= 0) {
		e->generation = sqlite3_column_int(st, 0);
		e->outcome = (enum outcome)o;
		e->reason = col_str(st, 2);
		e->fitness = col_real(st, 3);
		e->fitness_lo = col_real(st, 4);
		e->fitness_hi = col_real(st, 5);
	}
	sqlite3_finalize(st);
	if (rc < 0 || o < 0)
		return -1;
	return rc == SQLITE_ROW;
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
	sqlite3_stmt *st =
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
		*created = sqlite3_changes(db->h) > 0;
	return 0;
}

int db_measure_conditions(struct db *db, long long measurement_id, struct db_conditions *out)
{
	sqlite3_stmt *st;
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
	if (rc == SQLITE_ROW) {
		out->gbps = col_real(st, 0);
		out->sm_mhz = col_real(st, 1);
		out->temp_c = col_real(st, 2);
		out->power_w = col_real(st, 3);
		out->throttle = col_real(st, 4);
		out->retaken = col_real(st, 5);
	}
	sqlite3_finalize(st);
	return rc < 0 ? -1 : 0;
}

#define MEASURED_COLUMNS                                                                           \
	"SELECT m.id, m.variant_id, m.run_id, m.shape, m.outcome, m.reason, m.rel_l2, m.max_abs,"  \
	" m.median_us, m.ci_lo_us, m.ci_hi_us, m.tflops, m.samples, m.device, m.shape_dims"        \
	" FROM measurements m"

/* The row st stands on, MEASURED_COLUMNS: 0, or -1 after error(). */
static int measured_row(struct db *db, sqlite3_stmt *st, struct db_measured *out)
{
	int o = col_outcome(db, st, 4);

	memset(out, 0, sizeof(*out));
	if (o < 0)
		return -1;
	out->id = sqlite3_column_int64(st, 0);
	out->variant_id = sqlite3_column_int64(st, 1);
	out->run_id = sqlite3_column_int64(st, 2);
	out->shape = col_str(st, 3);
	out->outcome = (enum outcome)o;
	out->reason = col_str(st, 5);
	out->rel_l2 = col_real(st, 6);
	out->max_abs = col_real(st, 7);
	out->median_us = col_real(st, 8);
	out->ci_lo_us = col_real(st, 9);
	out->ci_hi_us = col_real(st, 10);
	out->tflops = col_real(st, 11);
	out->device = col_str(st, 13);
	out->shape_dims = col_str(st, 14);
	if (parse_samples((const char *)sqlite3_column_text(st, 12), &out->samples,
	                  &out->nsamples) < 0) {
		error("database '%s': measurement %lld has malformed samples", db->path, out->id);
		db_measured_release(out);
		return -1;
	}
	return 0;
}

static int read_measured(struct db *db, sqlite3_stmt *st, struct db_measured *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW && measured_row(db, st, out) < 0)
		rc = -1;
	sqlite3_finalize(st);
	if (rc < 0)
		return -1;
	return rc == SQLITE_ROW;
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
	sqlite3_stmt *st = STMT(db,
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
	if (rc == SQLITE_ROW && (o = col_outcome(db, st, 1)) >= 0) {
		out->gate = col_str(st, 0);
		out->outcome = (enum outcome)o;
		out->reason = col_str(st, 2);
	}
	sqlite3_finalize(st);
	if (rc < 0 || o < 0)
		return -1;
	return rc == SQLITE_ROW;
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
	sqlite3_stmt *st = STMT(
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

	if (group_begin(db) < 0)
		return -1;
	ok = !EXEC(db, STMT(db, "DELETE FROM elite WHERE run_id = ?1 AND generation = ?2", "Ii",
	                    run_id, generation));
	for (i = 0; ok && i < n; i++)
		ok = !EXEC(db,
		           STMT(db,
		                "INSERT INTO elite (run_id, generation, rank, variant_id, fitness)"
		                " VALUES (?1, ?2, ?3, ?4, ?5)",
		                "IiIId", run_id, generation, (long long)i + 1, variant_ids[i],
		                fitness[i]));
	return group_end(db, ok);
}

/* ----------------------------------------------------------- reading out */

/*
 * The functions below read what show, top, export and runs print. Each
 * collects its rows into an array the caller frees with the matching _free().
 * ROWS_LOOP steps st, growing (v, n, alloc) by one element per row, and runs
 * body with `e` pointing at the new, zeroed element.
 */
#define ROWS_LOOP(db, st, v, n, alloc, rc, body)                                                   \
	do {                                                                                       \
		while (((rc) = STEP((db), (st))) == SQLITE_ROW) {                                  \
			ALLOC_GROW((v), (n) + 1, (alloc));                                         \
			e = &(v)[(n)++];                                                           \
			memset(e, 0, sizeof(*e));                                                  \
			body                                                                       \
		}                                                                                  \
		sqlite3_finalize(st);                                                              \
	} while (0)

int db_variant_builds(struct db *db, long long variant_id, struct db_build_row **out, size_t *n)
{
	sqlite3_stmt *st = STMT(db,
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
		e->spec = col_str(st, 0);
		e->sanitize = sqlite3_column_int(st, 1);
		e->outcome = col_str(st, 2);
		e->regs = sqlite3_column_int(st, 3);
		e->spill_stores = sqlite3_column_int(st, 4);
		e->spill_loads = sqlite3_column_int(st, 5);
		e->static_smem = sqlite3_column_int(st, 6);
		e->stack_frame = sqlite3_column_int(st, 7);
		e->seconds = sqlite3_column_double(st, 8);
		e->cached = sqlite3_column_int(st, 9);
		e->cubin_size = sqlite3_column_int64(st, 10);
	});
	*out = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st = STMT(db,
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
		e->run_id = sqlite3_column_int64(st, 0);
		e->gate = col_str(st, 1);
		e->shape = col_str(st, 2);
		e->outcome = col_str(st, 3);
		e->reason = col_str(st, 4);
	});
	*out = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st =
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
		if (measured_row(db, st, e) < 0) {
			(*n)--;
			rc = -1;
			break;
		}
	});
	*out = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st = STMT(db,
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
		e->run_id = sqlite3_column_int64(st, 0);
		e->generation = sqlite3_column_int(st, 1);
		e->outcome = col_str(st, 2);
		e->reason = col_str(st, 3);
		e->fitness = col_real(st, 4);
		e->fitness_lo = col_real(st, 5);
		e->fitness_hi = col_real(st, 6);
		e->elite_rank = sqlite3_column_int(st, 7);
	});
	*out = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st =
	    STMT(db,
	         "SELECT count(DISTINCT CASE WHEN b.outcome = 'ok' THEN b.variant_id END),"
	         " count(*), total(b.cached = 0), total(b.cached), total(b.seconds)"
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
	if (rc == SQLITE_ROW) {
		out->distinct_ok = sqlite3_column_int64(st, 0);
		out->builds = sqlite3_column_int64(st, 1);
		out->fresh = (long long)sqlite3_column_double(st, 2);
		out->cached = (long long)sqlite3_column_double(st, 3);
		out->seconds = sqlite3_column_double(st, 4);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

/* One integer (or -1 for NULL) from a query over one run. */
static int run_int(struct db *db, const char *sql, long long run_id, long long *out)
{
	sqlite3_stmt *st = STMT(db, sql, "I", run_id);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

int db_run_generations_done(struct db *db, long long run_id, int *n)
{
	long long g = -1;

	if (run_int(db,
	            "SELECT max(g) FROM (SELECT max(generation) AS g FROM population"
	            " WHERE run_id = ?1 UNION ALL SELECT max(generation) FROM evals"
	            " WHERE run_id = ?1)",
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
	sqlite3_stmt *st = STMT(db,
	                        "SELECT count(*), max(CASE WHEN outcome = 'ok' THEN fitness END)"
	                        " FROM evals WHERE run_id = ?1",
	                        "I", run_id);
	int rc;

	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW) {
		*evaluations = sqlite3_column_int64(st, 0);
		*best = col_real(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

static void ranked_row(sqlite3_stmt *st, struct db_ranked *e, int elite)
{
	e->variant_id = sqlite3_column_int64(st, 0);
	e->hash = col_str(st, 1);
	e->params = col_str(st, 2);
	e->fitness = col_real(st, 3);
	e->fitness_lo = col_real(st, 4);
	e->fitness_hi = col_real(st, 5);
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
static int ranked_one(struct db *db, sqlite3_stmt *st, struct db_ranked *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -1;
	rc = STEP(db, st);
	if (rc == SQLITE_ROW)
		ranked_row(st, out, 0);
	sqlite3_finalize(st);
	return rc < 0 ? -1 : rc == SQLITE_ROW;
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
	sqlite3_stmt *st;
	struct db_ranked *v = NULL, *e;
	size_t alloc = 0;
	int rc = SQLITE_DONE, pass;

	*out = NULL;
	*n = 0;
	/* The final elite, best first (the evals row has the fitness interval); then the run's
	 * other correct, timed variants by fitness. */
	for (pass = 0; pass < 2 && *n < k && rc == SQLITE_DONE; pass++) {
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
	if (rc == SQLITE_DONE)
		return 0;
	db_ranked_free(v, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

int db_run_evals(struct db *db, long long run_id, struct db_run_eval **out, size_t *n)
{
	sqlite3_stmt *st = STMT(db,
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
		int o = col_outcome(db, st, 2);

		if (o < 0) {
			(*n)--;
			rc = -1;
			break;
		}
		e->variant_id = sqlite3_column_int64(st, 0);
		e->params = col_str(st, 1);
		e->outcome = (enum outcome)o;
		e->reason = col_str(st, 3);
		e->fitness = col_real(st, 4);
		e->fitness_lo = col_real(st, 5);
		e->fitness_hi = col_real(st, 6);
		e->created_at = col_str(st, 7);
		e->generation = sqlite3_column_int(st, 8);
	});
	*out = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st = STMT(db, "SELECT id FROM runs ORDER BY id", "");
	size_t alloc = 0;
	long long *v = NULL, *e;
	int rc;

	*ids = NULL;
	*n = 0;
	if (!st)
		return -1;
	ROWS_LOOP(db, st, v, *n, alloc, rc, { *e = sqlite3_column_int64(st, 0); });
	*ids = v;
	if (rc == SQLITE_DONE)
		return 0;
	free(v);
	*ids = NULL;
	*n = 0;
	return -1;
}

int db_run_build_keys(struct db *db, long long run_id, char ***keys, size_t *n)
{
	/* The builds this run recorded (fresh or from the cache) while it ran. */
	sqlite3_stmt *st = STMT(db,
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
	ROWS_LOOP(db, st, v, *n, alloc, rc, { *e = col_str(st, 0); });
	*keys = v;
	if (rc == SQLITE_DONE)
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
	sqlite3_stmt *st = NULL;
	const char *tail, *p;
	const char **values = NULL, **names = NULL;
	va_list ap;
	int i, n, rc, stop = 0;

	if (SQL_CHECK(db, sqlite3_prepare_v2(db->h, sql, -1, &st, &tail)) < 0)
		return -1;
	if (!st)
		BUG("db_exec_callback: no statement in '%s'", sql);
	if (tail[strspn(tail, " \t\n;")])
		BUG("db_exec_callback runs one statement: '%s'", sql);
	if (!sqlite3_stmt_readonly(st))
		BUG("db_exec_callback runs queries only: '%s'", sql);
	va_start(ap, ctx);
	for (i = 1, rc = SQLITE_OK; rc == SQLITE_OK && (p = va_arg(ap, const char *)); i++)
		rc = sqlite3_bind_text(st, i, p, -1, SQLITE_TRANSIENT);
	va_end(ap);
	if (SQL_CHECK(db, rc) < 0) {
		sqlite3_finalize(st);
		return -1;
	}
	n = sqlite3_column_count(st);
	values = xcalloc((size_t)n + 1, sizeof(*values));
	names = xcalloc((size_t)n + 1, sizeof(*names));
	for (i = 0; i < n; i++)
		names[i] = sqlite3_column_name(st, i);
	while (!stop && (rc = STEP(db, st)) == SQLITE_ROW) {
		for (i = 0; i < n; i++)
			values[i] = (const char *)sqlite3_column_text(st, i);
		stop = fn(ctx, n, values, names);
	}
	sqlite3_finalize(st);
	free(values);
	free(names);
	if (stop)
		return stop < 0 ? -1 : 0;
	return rc == SQLITE_DONE ? 0 : -1;
}

/* ========================================================= report queries */
/* What `tuner report` reads (tuner/report.c); kept apart so it merges as one block. */

int db_run_eval_points(struct db *db, long long run_id, struct db_eval_point **out, size_t *n)
{
	sqlite3_stmt *st = STMT(db,
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
	while ((rc = STEP(db, st)) == SQLITE_ROW && (o = col_outcome(db, st, 2)) >= 0) {
		struct db_eval_point *p;

		ALLOC_GROW(*out, *n + 1, alloc);
		p = &(*out)[(*n)++];
		p->variant_id = sqlite3_column_int64(st, 0);
		p->generation = sqlite3_column_int(st, 1);
		p->outcome = (enum outcome)o;
		p->fitness = col_real(st, 3);
		p->seconds = col_real(st, 4);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
	free(*out);
	*out = NULL;
	*n = 0;
	return -1;
}

int db_run_find_like(struct db *db, const struct db_run *like, const char *strategy, int done_only,
                     long long *run_id)
{
	sqlite3_stmt *st =
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
	if (rc == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc < 0 ? -1 : rc == SQLITE_ROW;
}
