/* Load libpq with dlopen at run time: tuner runs (on SQLite) where PostgreSQL's client is not. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/pq.h"

struct pq_api pq;

/* ---------------------------------------------------------------- loading */

struct pq_sym {
	const char *name;
	size_t offset;
};

#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, offsetof(struct pq_api, field)                                               \
	}

static const struct pq_sym pq_syms[] = {
    SYM(connectdb, "PQconnectdb"),
    SYM(status, "PQstatus"),
    SYM(error_message, "PQerrorMessage"),
    SYM(finish, "PQfinish"),
    SYM(exec, "PQexec"),
    SYM(exec_params, "PQexecParams"),
    SYM(result_status, "PQresultStatus"),
    SYM(result_error_message, "PQresultErrorMessage"),
    SYM(result_error_field, "PQresultErrorField"),
    SYM(ntuples, "PQntuples"),
    SYM(nfields, "PQnfields"),
    SYM(fname, "PQfname"),
    SYM(getvalue, "PQgetvalue"),
    SYM(getisnull, "PQgetisnull"),
    SYM(cmd_tuples, "PQcmdTuples"),
    SYM(clear, "PQclear"),
    SYM(transaction_status, "PQtransactionStatus"),
    SYM(set_notice_processor, "PQsetNoticeProcessor"),
    SYM(conninfo_parse, "PQconninfoParse"),
    SYM(conninfo_free, "PQconninfoFree"),
    SYM(freemem, "PQfreemem"),
    SYM(lib_version, "PQlibVersion"),
    SYM(is_threadsafe, "PQisthreadsafe"),
};

static pthread_once_t load_once_ctl = PTHREAD_ONCE_INIT;
static int load_state; /* 1: loaded, -1: failed */
static char load_why[320];

static void load_fail(void *handle, const char *fmt, const char *a, const char *b)
{
	snprintf(load_why, sizeof(load_why), fmt, a, b);
	if (handle)
		dlclose(handle);
	memset(&pq, 0, sizeof(pq));
	load_state = -1;
}

static void load_once(void)
{
	const char *lib = getenv("TUNER_LIBPQ");
	char line[200];
	void *handle;
	size_t i, n;
	const char *e;

	if (!lib || !*lib)
		lib = "libpq.so.5";
	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		/* dlerror() text can run over several lines; keep the first */
		e = dlerror();
		n = strcspn(e ? e : "unknown error", "\n");
		snprintf(line, sizeof(line), "%.*s", (int)n, e ? e : "unknown error");
		load_fail(NULL,
		          "cannot load the PostgreSQL client library '%s' (%s); install libpq5 "
		          "or use a SQLite database",
		          lib, line);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(pq_syms); i++) {
		void *fn = dlsym(handle, pq_syms[i].name);

		if (!fn) {
			load_fail(handle,
			          "the PostgreSQL client library '%s' lacks '%s' (too old?)", lib,
			          pq_syms[i].name);
			return;
		}
		/* POSIX guarantees that a data pointer from dlsym converts to a function pointer.
		 */
		memcpy((char *)&pq + pq_syms[i].offset, &fn, sizeof(fn));
	}
	if (!pq.is_threadsafe()) {
		load_fail(handle, "the PostgreSQL client library '%s' is not thread-safe%s", lib,
		          "");
		return;
	}
	load_state = 1;
}

int pq_load(char *why, size_t whylen)
{
	pthread_once(&load_once_ctl, load_once);
	if (load_state < 0) {
		if (why && whylen)
			snprintf(why, whylen, "%s", load_why);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------- URLs */

int pq_is_url(const char *db)
{
	return db && (!strncmp(db, "postgresql://", 13) || !strncmp(db, "postgres://", 11));
}

/*
 * Where the password of a URL lies: [*pw, *pw + *len) in userinfo
 * ("user:PASSWORD@host") or the first password=VALUE of the query. Returns
 * the number found (0 to 2) and fills at most two spans, in order.
 */
static int password_spans(const char *url, size_t start[2], size_t len[2])
{
	const char *auth, *end, *at = NULL, *c, *q;
	int n = 0;

	if (!pq_is_url(url))
		return 0;
	auth = strstr(url, "://") + 3;
	end = auth + strcspn(auth, "/?");
	for (c = auth; c < end; c++)
		if (*c == '@')
			at = c;
	if (at) {
		c = memchr(auth, ':', (size_t)(at - auth));
		if (c) {
			start[n] = (size_t)(c + 1 - url);
			len[n++] = (size_t)(at - c - 1);
		}
	}
	q = strchr(end, '?');
	while (q && n < 2) {
		q++;
		if (!strncmp(q, "password=", 9)) {
			start[n] = (size_t)(q + 9 - url);
			len[n++] = strcspn(q + 9, "&");
			break;
		}
		q = strchr(q, '&');
	}
	return n;
}

char *pq_redact(const char *url)
{
	struct strbuf sb = STRBUF_INIT;
	size_t start[2], len[2], at = 0;
	int i, n = password_spans(url, start, len);

	for (i = 0; i < n; i++) {
		sb_add(&sb, url + at, start[i] - at);
		sb_adds(&sb, "***");
		at = start[i] + len[i];
	}
	sb_adds(&sb, url + at);
	return sb_detach(&sb);
}

int pq_has_password(const char *url)
{
	size_t start[2], len[2];

	return password_spans(url, start, len) > 0;
}
