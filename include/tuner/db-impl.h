/*
 * The database module's own (tuner/db.c, db-read.c, db-queue.c): the handle, the statement
 * helpers every query goes through, and what one part reads of another's. Not an API: the
 * rest of tuner uses tuner/db.h.
 */
#ifndef TUNER_DB_IMPL_H
#define TUNER_DB_IMPL_H

#include <stddef.h>

#include <sqlite3.h>

#include "tuner/db-backend.h"
#include "tuner/db.h"

struct db {
	struct dbb *b; /* SQLite or PostgreSQL: every query goes through it */
	sqlite3 *h;    /* SQLite's own handle, for opening and its pragmas; NULL for PostgreSQL */
	char *path;    /* for messages: the file, or the URL without its password */
	int in_tx;     /* inside db_begin() */
	int version; /* the schema version of the file: readers of an older one read what it has */
};

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

/*
 * Prepare sql and bind ?1, ?2, ... from the arguments as types says ('t' text, 'i' int, 'I'
 * long long, 'R' row id (<= 0 binds NULL), 'd' double (NAN binds NULL)); NULL after error().
 * The macros pass the call site, which every error names.
 */
#define STMT(db, ...) db_stmt_at((db), __FILE__, __LINE__, __VA_ARGS__)
struct dbb_stmt *db_stmt_at(struct db *db, const char *file, int line, const char *sql,
                            const char *types, ...);

/* Step once: DBB_ROW, DBB_DONE, or -1 after error() (the statement is left to the caller). */
#define STEP(db, st) db_step_at((db), (st), __FILE__, __LINE__)
int db_step_at(struct db *db, struct dbb_stmt *st, const char *file, int line);

/* Run a statement that returns no rows to completion and finalize it: 0 or -1. */
#define EXEC(db, st) db_exec_at((db), (st), __FILE__, __LINE__)
int db_exec_at(struct db *db, struct dbb_stmt *st, const char *file, int line);

/* A backend call's failure (-1): error() with the database, the message and the call site. */
int db_failed_at(struct db *db, const char *file, int line);

/* The id an INSERT ... RETURNING id gave: 0, or -1 after error(). The statement is finalized. */
int db_insert_id(struct db *db, struct dbb_stmt *st, long long *id);

/* Columns: owned copies, NULL and NAN for SQL NULL; an outcome, -1 after error() if unknown. */
char *db_col_str(struct dbb_stmt *st, int i);
double db_col_real(struct dbb_stmt *st, int i);
int db_col_outcome(struct db *db, struct dbb_stmt *st, int i);

/* Statements that land together: in the caller's transaction (a savepoint) or their own. */
int db_group_begin(struct db *db);
int db_group_end(struct db *db, int ok);

/* The host a run or a server records: $TUNER_HOST, else gethostname(). */
void db_this_host(char *out, size_t len);

/* A measurement's columns, and the row st stands on read into out: 0, or -1 after error(). */
#define MEASURED_COLUMNS                                                                           \
	"SELECT m.id, m.variant_id, m.run_id, m.shape, m.outcome, m.reason, m.rel_l2, m.max_abs,"  \
	" m.median_us, m.ci_lo_us, m.ci_hi_us, m.tflops, m.samples, m.device, m.shape_dims"        \
	" FROM measurements m"
int db_measured_row(struct db *db, struct dbb_stmt *st, struct db_measured *out);

#endif
