/* libpq, PostgreSQL's client library, loaded with dlopen at run time (tuner starts without it). */
#ifndef TUNER_PQ_H
#define TUNER_PQ_H

#include <stddef.h>

#include <libpq-fe.h>

/*
 * The libpq entry points tuner uses. Call them as pq.exec_params(...) once
 * pq_load() has succeeded. Only tuner/db-backend.c talks to PostgreSQL.
 */
struct pq_api {
	PGconn *(*connectdb)(const char *conninfo);
	ConnStatusType (*status)(const PGconn *conn);
	char *(*error_message)(const PGconn *conn);
	void (*finish)(PGconn *conn);
	PGresult *(*exec)(PGconn *conn, const char *query);
	PGresult *(*exec_params)(PGconn *conn, const char *command, int nparams, const Oid *types,
	                         const char *const *values, const int *lengths, const int *formats,
	                         int result_format);
	ExecStatusType (*result_status)(const PGresult *res);
	char *(*result_error_message)(const PGresult *res);
	char *(*result_error_field)(const PGresult *res, int field);
	int (*ntuples)(const PGresult *res);
	int (*nfields)(const PGresult *res);
	char *(*fname)(const PGresult *res, int column);
	char *(*getvalue)(const PGresult *res, int row, int column);
	int (*getisnull)(const PGresult *res, int row, int column);
	char *(*cmd_tuples)(PGresult *res);
	void (*clear)(PGresult *res);
	PGTransactionStatusType (*transaction_status)(const PGconn *conn);
	PQnoticeProcessor (*set_notice_processor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
	PQconninfoOption *(*conninfo_parse)(const char *conninfo, char **errmsg);
	void (*conninfo_free)(PQconninfoOption *options);
	void (*freemem)(void *ptr);
	int (*lib_version)(void);
	int (*is_threadsafe)(void);
};

/* The resolved table; valid after pq_load() returned 0. */
extern struct pq_api pq;

/*
 * Load libpq (libpq.so.5, or $TUNER_LIBPQ when set) and resolve the table.
 * 0, or -1 with a one-line reason in why (the library is missing, too old).
 * Prints nothing; thread-safe, and the first call's result is kept.
 */
int pq_load(char *why, size_t whylen);

/* Whether a --db value names a PostgreSQL database: "postgresql://..." or "postgres://...". */
int pq_is_url(const char *db);

/*
 * The URL with its password (user:PASSWORD@ or password=...) replaced by
 * "***", for messages and logs; other strings are copied. Caller frees.
 */
char *pq_redact(const char *url);

/* Whether the URL carries a password (which belongs in PGPASSWORD or ~/.pgpass). */
int pq_has_password(const char *url);

#endif
