/* The database module's backend: SQLite or PostgreSQL behind prepare, bind, step and column. */
#ifndef TUNER_DB_BACKEND_H
#define TUNER_DB_BACKEND_H

#include <stddef.h>

#include <sqlite3.h>

/*
 * Only tuner/db*.c use this. Queries are written once, in the SQL both
 * engines read: parameters ?1, ?2, ... (PostgreSQL gets $1, $2, ...), the
 * SQLite functions the PostgreSQL schema defines for it (strftime with
 * tuner's one format, julianday), table-qualified columns in ON CONFLICT
 * ... DO UPDATE, explicit NULLS FIRST/LAST where a sorted column may be NULL.
 */
enum dbb_kind { DBB_SQLITE, DBB_PG };

/* What dbb_step() returns besides -1 (an error, see dbb_errmsg). */
enum { DBB_ROW = 100, DBB_DONE = 101 };

/* A parameter's type, which PostgreSQL needs where the query leaves it open (?1 IS NULL). */
enum dbb_type { DBB_ANY, DBB_TEXT, DBB_INT, DBB_REAL };

struct dbb;
struct dbb_stmt;

/* SQLite: wrap an open handle, which dbb_close() closes. */
struct dbb *dbb_sqlite(sqlite3 *h);
/*
 * PostgreSQL: connect to url (libpq's URI or key=value string; the password
 * comes from PGPASSWORD, ~/.pgpass or the string). 0, or -1 with why (which
 * never holds the password).
 */
int dbb_pg_connect(const char *url, struct dbb **out, char *why, size_t whylen);
/* 0, or -1 when SQLite refused to close (statements left open): dbb_errmsg says why. */
int dbb_close(struct dbb *b);

enum dbb_kind dbb_kind(const struct dbb *b);
sqlite3 *dbb_sqlite_handle(struct dbb *b); /* NULL for PostgreSQL */
/* The last failure's message, one line; "" when none. */
const char *dbb_errmsg(const struct dbb *b);
/* PostgreSQL's SQLSTATE of the last failure ("40P01"), "" for SQLite or none. */
const char *dbb_sqlstate(const struct dbb *b);

/*
 * Prepare the first statement of sql; *tail (may be NULL) gets what follows
 * it. 0, or -1 (dbb_errmsg). PostgreSQL parses at the first step.
 */
int dbb_prepare(struct dbb *b, const char *sql, struct dbb_stmt **out, const char **tail);
int dbb_param_count(const struct dbb_stmt *st);
/* Whether the statement only reads (SQLite's verdict; a SELECT or WITH for PostgreSQL). */
int dbb_readonly(const struct dbb_stmt *st);

/* Parameters count from 1. 0, or -1 (dbb_errmsg). s NULL binds NULL. */
int dbb_bind_text(struct dbb_stmt *st, int i, const char *s, enum dbb_type type);
int dbb_bind_int64(struct dbb_stmt *st, int i, long long v);
int dbb_bind_double(struct dbb_stmt *st, int i, double v);
int dbb_bind_null(struct dbb_stmt *st, int i, enum dbb_type type);

/*
 * DBB_ROW, DBB_DONE, or -1 (dbb_errmsg; SQLite's code in *sqlite_rc when not
 * NULL, so that the caller can wait on SQLITE_BUSY).
 */
int dbb_step(struct dbb_stmt *st);
int dbb_step_rc(struct dbb_stmt *st, int *sqlite_rc);
/* Run again from the start with the same bindings. */
void dbb_reset(struct dbb_stmt *st);
void dbb_finalize(struct dbb_stmt *st); /* NULL is fine */

/* The current row's columns, from 0; text is valid until the next step. */
int dbb_column_count(const struct dbb_stmt *st);
const char *dbb_column_name(const struct dbb_stmt *st, int i);
int dbb_column_null(const struct dbb_stmt *st, int i);
const char *dbb_column_text(const struct dbb_stmt *st, int i); /* NULL for NULL */
long long dbb_column_int64(const struct dbb_stmt *st, int i);  /* 0 for NULL; true is 1 */
int dbb_column_int(const struct dbb_stmt *st, int i);
double dbb_column_double(const struct dbb_stmt *st, int i); /* 0 for NULL */

/* Rows the last finished INSERT, UPDATE or DELETE changed. */
long long dbb_changes(const struct dbb *b);
/* Whether a transaction is open (also one that failed and awaits ROLLBACK). */
int dbb_in_transaction(const struct dbb *b);
/* Run a script of several statements without parameters (a schema). 0, or -1 (dbb_errmsg). */
int dbb_exec_script(struct dbb *b, const char *sql);

/*
 * sql with ?N turned into $N outside quotes and comments, up to the first
 * statement's end; *end gets the offset where the rest begins. Exposed for
 * tests. Caller frees.
 */
char *dbb_pg_sql(const char *sql, size_t *end, int *nparams);

#endif
