/* Unit tests: a fresh database on the PostgreSQL server that tests/run.sh starts (tests/pg.sh). */
#ifndef TUNER_TEST_PG_FIXTURE_H
#define TUNER_TEST_PG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/common.h"
#include "tuner/db-backend.h"

/*
 * The URL of database "NAME_PID", dropped and created anew, or NULL after
 * printing why (no server: tests/run.sh sets TUNER_TEST_PG). A test that gets
 * NULL fails: CI installs PostgreSQL (scripts/install-deps).
 */
static inline char *pg_fixture_db(const char *name)
{
	const char *base = getenv("TUNER_TEST_PG"), *at;
	char why[512], *url, *sql;
	struct dbb *b;
	int r;

	if (!base || !*base) {
		const char *w = getenv("TUNER_TEST_PG_WHY");

		fprintf(stderr, "no PostgreSQL server for this test: %s\n",
		        w && *w ? w : "TUNER_TEST_PG is not set (run it through tests/run.sh)");
		return NULL;
	}
	if (dbb_pg_connect(base, &b, why, sizeof(why)) < 0) {
		fprintf(stderr, "cannot connect to the test server '%s': %s\n", base, why);
		return NULL;
	}
	/* FORCE: a test that failed half-way may have left a connection open */
	sql = xasprintf("DROP DATABASE IF EXISTS %s_%ld WITH (FORCE)", name, (long)getpid());
	r = dbb_exec_script(b, sql);
	free(sql);
	sql = xasprintf("CREATE DATABASE %s_%ld", name, (long)getpid());
	if (!r)
		r = dbb_exec_script(b, sql);
	free(sql);
	if (r < 0)
		fprintf(stderr, "cannot create a test database: %s\n", dbb_errmsg(b));
	dbb_close(b);
	if (r < 0)
		return NULL;
	/* postgresql://USER@/postgres?host=DIR: the same with another database */
	at = strstr(base, "/postgres?");
	if (!at) {
		fprintf(stderr, "TUNER_TEST_PG '%s' does not name the database 'postgres'\n", base);
		return NULL;
	}
	url = xasprintf("%.*s/%s_%ld%s", (int)(at - base), base, name, (long)getpid(),
	                at + strlen("/postgres"));
	return url;
}

#endif
