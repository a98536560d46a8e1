/* tuner wait: block until a job is done, failed or cancelled, and say how it ended. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"

/* How often the database is asked; a job's generation takes seconds at the least. */
#define POLL_US (250 * 1000)

const struct cmd cmd_wait_entry = {
    .name = "wait",
    .fn = cmd_wait,
    .flags = READ_DB,
    .summary = "wait for a job to finish and print how it ended",
    .usage = "usage: tuner wait [--timeout SECONDS] JOB\n"
	     "\n"
	     "Wait until a job is done, failed or cancelled (an interrupted job is\n"
	     "waited for: a server resumes it), then print how it ended and its best\n"
	     "fitness. Exits 0 when it is done, 1 when it failed or was cancelled,\n"
	     "75 when the timeout passed first.\n"
	     "\n"
	     "  --timeout SECONDS  give up after that long (default: never)\n"
	     "  -h, --help         print this help\n",
};

static int finished(const char *status)
{
	return !strcmp(status, "done") || !strcmp(status, "failed") || !strcmp(status, "cancelled");
}

int cmd_wait(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct db *db = NULL;
	struct db_job j;
	struct db_job_progress p;
	double timeout = -1, deadline;
	char *end;
	long long id;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			timeout = strtod(optarg, &end);
			if (*end || end == optarg || !(timeout >= 0)) {
				error("--timeout needs seconds, got '%s'", optarg);
				return EX_USAGE;
			}
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind + 1 != argc) {
		error("which JOB? (tuner wait JOB)");
		return cmd_usage(g, EX_USAGE);
	}
	if (cmd_parse_int("JOB", argv[optind], 1, &id) < 0)
		return EX_USAGE;
	if ((rc = cmd_open_db(g, &db)) != 0)
		return rc;
	deadline = now_seconds() + timeout;
	for (;;) {
		if (db_job_get(db, id, &j) < 0) {
			db_close(db);
			return EX_DATAERR;
		}
		if (finished(j.status))
			break;
		db_job_release(&j);
		if (timeout >= 0 && now_seconds() >= deadline) {
			error("job %lld is not finished after %g s", id, timeout);
			db_close(db);
			return EX_TEMPFAIL;
		}
		usleep(POLL_US);
	}
	rc = db_job_progress(db, &j, &p) < 0 ? EX_SOFTWARE : 0;
	if (!rc) {
		printf("job %lld %s", id, j.status);
		if (j.run_id > 0)
			printf(" (run %lld, %d/%d generations, %lld evaluated)", j.run_id,
			       p.generation, p.generations, p.evaluated);
		if (!isnan(p.best))
			printf(": best x%.3f", p.best);
		if (j.message) /* a job done says so when its budget ended it */
			printf(": %s", j.message);
		printf("\n");
		rc = strcmp(j.status, "done") ? 1 : 0;
		db_job_progress_release(&p);
	}
	db_job_release(&j);
	db_close(db);
	if (cmd_flush_stdout())
		return EX_IOERR;
	return rc;
}
