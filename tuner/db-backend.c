/* SQLite and PostgreSQL behind one small statement interface, for the database module alone. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/db-backend.h"
#include "tuner/pq.h"

/* Parameters and columns PostgreSQL's types need: text, int8, float8 (pg_type's OIDs). */
#define OID_TEXT   25
#define OID_INT8   20
#define OID_FLOAT8 701

struct dbb {
	enum dbb_kind kind;
	sqlite3 *h;
	PGconn *pg;
	long long changes;
	char err[512];
	char sqlstate[8];
};

struct dbb_param {
	char *value; /* NULL: NULL */
	Oid type;
};

struct dbb_stmt {
	struct dbb *b;
	sqlite3_stmt *st; /* SQLite */
	/* PostgreSQL: the translated text, the bindings, the result and the row read */
	char *sql;
	int nparams, readonly;
	struct dbb_param *params;
	PGresult *res;
	int row, nrows;
};

static void set_err(struct dbb *b, const char *msg, const char *sqlstate)
{
	size_t n, k;

	/* one line: libpq's messages end in a newline and may add DETAIL and HINT lines */
	snprintf(b->err, sizeof(b->err), "%s", msg ? msg : "unknown error");
	n = strlen(b->err);
	while (n && (b->err[n - 1] == '\n' || b->err[n - 1] == ' '))
		b->err[--n] = '\0';
	/* libpq's second line starts with a tab: one space between the lines */
	for (n = 0, k = 0; b->err[n]; n++) {
		char c = b->err[n] == '\n' || b->err[n] == '\t' ? ' ' : b->err[n];

		if (c != ' ' || !k || b->err[k - 1] != ' ')
			b->err[k++] = c;
	}
	b->err[k] = '\0';
	snprintf(b->sqlstate, sizeof(b->sqlstate), "%s", sqlstate ? sqlstate : "");
}

static void set_sqlite_err(struct dbb *b)
{
	set_err(b, sqlite3_errmsg(b->h), NULL);
}

/* ---------------------------------------------------------- connections */

struct dbb *dbb_sqlite(sqlite3 *h)
{
	struct dbb *b = xcalloc(1, sizeof(*b));

	b->kind = DBB_SQLITE;
	b->h = h;
	return b;
}

/* libpq prints NOTICEs (an IF NOT EXISTS that found the table) on stderr unless told otherwise. */
static void quiet_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

int dbb_pg_connect(const char *url, struct dbb **out, char *why, size_t whylen)
{
	PGconn *c;
	struct dbb *b;
	PGresult *r;
	char *safe;

	*out = NULL;
	if (pq_load(why, whylen) < 0)
		return -1;
	c = pq.connectdb(url);
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (pq.status(c) != CONNECTION_OK) {
		/* libpq's message names the host and the user, never the password */
		b = xcalloc(1, sizeof(*b));
		set_err(b, pq.error_message(c), NULL);
		safe = pq_redact(b->err);
		snprintf(why, whylen, "%s", safe);
		free(safe);
		free(b);
		pq.finish(c);
		return -1;
	}
	pq.set_notice_processor(c, quiet_notice, NULL);
	/* Times are written by the schema's functions in UTC; this keeps casts in UTC as well. */
	r = pq.exec(c, "SET TIME ZONE 'UTC'");
	if (pq.result_status(r) != PGRES_COMMAND_OK) {
		snprintf(why, whylen, "%s", pq.result_error_message(r));
		pq.clear(r);
		pq.finish(c);
		return -1;
	}
	pq.clear(r);
	b = xcalloc(1, sizeof(*b));
	b->kind = DBB_PG;
	b->pg = c;
	*out = b;
	return 0;
}

int dbb_close(struct dbb *b)
{
	if (!b)
		return 0;
	if (b->kind == DBB_SQLITE) {
		if (sqlite3_close(b->h) != SQLITE_OK) {
			set_sqlite_err(b);
			return -1;
		}
	} else {
		pq.finish(b->pg);
	}
	free(b);
	return 0;
}

enum dbb_kind dbb_kind(const struct dbb *b)
{
	return b->kind;
}

sqlite3 *dbb_sqlite_handle(struct dbb *b)
{
	return b->kind == DBB_SQLITE ? b->h : NULL;
}

const char *dbb_errmsg(const struct dbb *b)
{
	return b->err;
}

const char *dbb_sqlstate(const struct dbb *b)
{
	return b->sqlstate;
}

long long dbb_changes(const struct dbb *b)
{
	return b->changes;
}

int dbb_in_transaction(const struct dbb *b)
{
	if (b->kind == DBB_SQLITE)
		return !sqlite3_get_autocommit(b->h);
	return pq.transaction_status(b->pg) != PQTRANS_IDLE;
}

/* A PGresult that failed: its message and SQLSTATE into b. */
static void set_pg_err(struct dbb *b, const PGresult *r)
{
	const char *msg = r ? pq.result_error_message(r) : NULL;

	if (!msg || !*msg)
		msg = pq.error_message(b->pg);
	set_err(b, msg, r ? pq.result_error_field(r, PG_DIAG_SQLSTATE) : NULL);
}

int dbb_exec_script(struct dbb *b, const char *sql)
{
	char *msg = NULL;
	PGresult *r;
	int ok;

	if (b->kind == DBB_SQLITE) {
		if (sqlite3_exec(b->h, sql, NULL, NULL, &msg) == SQLITE_OK)
			return 0;
		set_err(b, msg ? msg : sqlite3_errmsg(b->h), NULL);
		sqlite3_free(msg);
		return -1;
	}
	r = pq.exec(b->pg, sql);
	ok = r &&
	     (pq.result_status(r) == PGRES_COMMAND_OK || pq.result_status(r) == PGRES_TUPLES_OK);
	if (!ok)
		set_pg_err(b, r);
	pq.clear(r);
	return ok ? 0 : -1;
}

/* ----------------------------------------------------------- statements */

/* Past a quoted run starting at s (quote q, doubled to escape); the end of text if unclosed. */
static const char *skip_quoted(const char *s, char q)
{
	for (s++; *s; s++) {
		if (*s != q)
			continue;
		if (s[1] != q)
			return s + 1;
		s++;
	}
	return s;
}

char *dbb_pg_sql(const char *sql, size_t *end, int *nparams)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s = sql, *from;
	int max = 0;

	sb_adds(&sb, "");
	while (*s && *s != ';') {
		from = s;
		if (*s == '\'' || *s == '"') {
			s = skip_quoted(s, *s);
		} else if (s[0] == '-' && s[1] == '-') {
			s += strcspn(s, "\n");
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");

			s = e ? e + 2 : s + strlen(s);
		} else if (*s == '?' && isdigit((unsigned char)s[1])) {
			int n = (int)strtol(s + 1, (char **)&s, 10);

			if (n > max)
				max = n;
			sb_addf(&sb, "$%d", n);
			continue;
		} else if (*s == '?') {
			BUG("anonymous parameter in '%s': write ?1, ?2, ...", sql);
		} else {
			s++;
		}
		sb_add(&sb, from, (size_t)(s - from));
	}
	*end = (size_t)(s - sql);
	*nparams = max;
	return sb_detach(&sb);
}

/* A SELECT, a WITH or VALUES: the statements that only read (PostgreSQL). */
static int starts_reading(const char *sql)
{
	static const char *const words[] = {"select", "with", "values"};
	size_t i, n;

	for (;;) {
		sql += strspn(sql, " \t\r\n(");
		if (sql[0] == '-' && sql[1] == '-')
			sql += strcspn(sql, "\n");
		else
			break;
	}
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		n = strlen(words[i]);
		if (!strncasecmp(sql, words[i], n) && !isalnum((unsigned char)sql[n]) &&
		    sql[n] != '_')
			return 1;
	}
	return 0;
}

int dbb_prepare(struct dbb *b, const char *sql, struct dbb_stmt **out, const char **tail)
{
	struct dbb_stmt *st;
	sqlite3_stmt *h = NULL;
	const char *t = NULL;
	size_t end;

	*out = NULL;
	if (b->kind == DBB_SQLITE) {
		if (sqlite3_prepare_v2(b->h, sql, -1, &h, &t) != SQLITE_OK) {
			set_sqlite_err(b);
			return -1;
		}
		if (!h) {
			set_err(b, "no statement", NULL);
			return -1;
		}
		st = xcalloc(1, sizeof(*st));
		st->b = b;
		st->st = h;
		if (tail)
			*tail = t;
		*out = st;
		return 0;
	}
	st = xcalloc(1, sizeof(*st));
	st->b = b;
	st->sql = dbb_pg_sql(sql, &end, &st->nparams);
	st->readonly = starts_reading(st->sql);
	st->params = xcalloc((size_t)st->nparams + 1, sizeof(*st->params));
	if (tail) /* past the semicolon, as SQLite's */
		*tail = sql + end + (sql[end] == ';');
	*out = st;
	return 0;
}

int dbb_param_count(const struct dbb_stmt *st)
{
	return st->st ? sqlite3_bind_parameter_count(st->st) : st->nparams;
}

int dbb_readonly(const struct dbb_stmt *st)
{
	return st->st ? sqlite3_stmt_readonly(st->st) : st->readonly;
}

/* PostgreSQL: keep the value as text with its type, for the step. */
static int pg_bind(struct dbb_stmt *st, int i, char *value, Oid type)
{
	if (i < 1 || i > st->nparams) {
		free(value);
		set_err(st->b, "parameter index out of range", NULL);
		return -1;
	}
	free(st->params[i - 1].value);
	st->params[i - 1].value = value;
	st->params[i - 1].type = type;
	return 0;
}

static Oid pg_type(enum dbb_type type)
{
	switch (type) {
	case DBB_TEXT:
		return OID_TEXT;
	case DBB_INT:
		return OID_INT8;
	case DBB_REAL:
		return OID_FLOAT8;
	default:
		return 0; /* the server infers it from the query */
	}
}

static int sqlite_bound(struct dbb_stmt *st, int rc)
{
	if (rc == SQLITE_OK)
		return 0;
	set_sqlite_err(st->b);
	return -1;
}

int dbb_bind_text(struct dbb_stmt *st, int i, const char *s, enum dbb_type type)
{
	if (!s)
		return dbb_bind_null(st, i, type);
	if (st->st)
		return sqlite_bound(st, sqlite3_bind_text(st->st, i, s, -1, SQLITE_TRANSIENT));
	return pg_bind(st, i, xstrdup(s), pg_type(type));
}

int dbb_bind_int64(struct dbb_stmt *st, int i, long long v)
{
	if (st->st)
		return sqlite_bound(st, sqlite3_bind_int64(st->st, i, v));
	return pg_bind(st, i, xasprintf("%lld", v), OID_INT8);
}

int dbb_bind_double(struct dbb_stmt *st, int i, double v)
{
	if (st->st)
		return sqlite_bound(st, sqlite3_bind_double(st->st, i, v));
	if (isnan(v))
		return pg_bind(st, i, xstrdup("NaN"), OID_FLOAT8);
	if (isinf(v))
		return pg_bind(st, i, xstrdup(v > 0 ? "Infinity" : "-Infinity"), OID_FLOAT8);
	/* 17 significant digits read back as the same double */
	return pg_bind(st, i, xasprintf("%.17g", v), OID_FLOAT8);
}

int dbb_bind_null(struct dbb_stmt *st, int i, enum dbb_type type)
{
	if (st->st)
		return sqlite_bound(st, sqlite3_bind_null(st->st, i));
	return pg_bind(st, i, NULL, pg_type(type));
}

static int pg_exec(struct dbb_stmt *st)
{
	struct dbb *b = st->b;
	const char **values = xcalloc((size_t)st->nparams + 1, sizeof(*values));
	Oid *types = xcalloc((size_t)st->nparams + 1, sizeof(*types));
	ExecStatusType s;
	const char *n;
	int i;

	for (i = 0; i < st->nparams; i++) {
		values[i] = st->params[i].value;
		types[i] = st->params[i].type;
	}
	st->res = pq.exec_params(b->pg, st->sql, st->nparams, types, values, NULL, NULL, 0);
	free(values);
	free(types);
	s = st->res ? pq.result_status(st->res) : PGRES_FATAL_ERROR;
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		set_pg_err(b, st->res);
		pq.clear(st->res);
		st->res = NULL;
		return -1;
	}
	n = pq.cmd_tuples(st->res);
	b->changes = n && *n ? strtoll(n, NULL, 10) : 0;
	st->nrows = s == PGRES_TUPLES_OK ? pq.ntuples(st->res) : 0;
	st->row = -1;
	return 0;
}

int dbb_step_rc(struct dbb_stmt *st, int *sqlite_rc)
{
	int rc;

	if (sqlite_rc)
		*sqlite_rc = SQLITE_OK;
	if (st->st) {
		rc = sqlite3_step(st->st);
		if (sqlite_rc)
			*sqlite_rc = rc;
		if (rc == SQLITE_ROW)
			return DBB_ROW;
		if (rc == SQLITE_DONE) {
			st->b->changes = sqlite3_changes(st->b->h);
			return DBB_DONE;
		}
		set_sqlite_err(st->b);
		return -1;
	}
	if (!st->res && pg_exec(st) < 0)
		return -1;
	if (st->row + 1 < st->nrows) {
		st->row++;
		return DBB_ROW;
	}
	st->row = st->nrows;
	return DBB_DONE;
}

int dbb_step(struct dbb_stmt *st)
{
	return dbb_step_rc(st, NULL);
}

void dbb_reset(struct dbb_stmt *st)
{
	if (st->st) {
		sqlite3_reset(st->st);
		return;
	}
	if (st->res)
		pq.clear(st->res);
	st->res = NULL;
	st->row = -1;
	st->nrows = 0;
}

void dbb_finalize(struct dbb_stmt *st)
{
	int i;

	if (!st)
		return;
	if (st->st)
		sqlite3_finalize(st->st);
	if (st->res)
		pq.clear(st->res);
	for (i = 0; i < st->nparams; i++)
		free(st->params[i].value);
	free(st->params);
	free(st->sql);
	free(st);
}

/* -------------------------------------------------------------- columns */

/* PostgreSQL: the current row's value, NULL for NULL or outside a row. */
static const char *pg_value(const struct dbb_stmt *st, int i)
{
	if (!st->res || st->row < 0 || st->row >= st->nrows || i < 0 || i >= pq.nfields(st->res) ||
	    pq.getisnull(st->res, st->row, i))
		return NULL;
	return pq.getvalue(st->res, st->row, i);
}

int dbb_column_count(const struct dbb_stmt *st)
{
	if (st->st)
		return sqlite3_column_count(st->st);
	return st->res ? pq.nfields(st->res) : 0;
}

const char *dbb_column_name(const struct dbb_stmt *st, int i)
{
	if (st->st)
		return sqlite3_column_name(st->st, i);
	return st->res ? pq.fname(st->res, i) : NULL;
}

int dbb_column_null(const struct dbb_stmt *st, int i)
{
	if (st->st)
		return sqlite3_column_type(st->st, i) == SQLITE_NULL;
	return pg_value(st, i) == NULL;
}

const char *dbb_column_text(const struct dbb_stmt *st, int i)
{
	if (st->st)
		return (const char *)sqlite3_column_text(st->st, i);
	return pg_value(st, i);
}

long long dbb_column_int64(const struct dbb_stmt *st, int i)
{
	const char *v;

	if (st->st)
		return sqlite3_column_int64(st->st, i);
	v = pg_value(st, i);
	if (!v)
		return 0;
	/* a comparison is a boolean there, an integer in SQLite */
	if (!strcmp(v, "t"))
		return 1;
	if (!strcmp(v, "f"))
		return 0;
	if (strpbrk(v, ".eEN")) /* a double where SQLite would convert */
		return (long long)strtod(v, NULL);
	return strtoll(v, NULL, 10);
}

int dbb_column_int(const struct dbb_stmt *st, int i)
{
	return (int)dbb_column_int64(st, i);
}

double dbb_column_double(const struct dbb_stmt *st, int i)
{
	const char *v;

	if (st->st)
		return sqlite3_column_double(st->st, i);
	v = pg_value(st, i);
	if (!v)
		return 0;
	if (!strcmp(v, "t") || !strcmp(v, "f"))
		return *v == 't';
	return strtod(v, NULL);
}
