/* tuner cancel: stop a job, now when nobody runs it, else after its lanes' variants in flight. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/pq.h"

const char cmd_cancel_usage[] =
    "usage: tuner cancel JOB\n"
    "\n"
    "Cancel a job. A queued or interrupted job is cancelled at once; a running\n"
    "one is asked to stop, and its servers stop it after the variants in\n"
    "flight ('tuner wait JOB' waits for that). What it measured stays in the\n"
    "database.\n"
    "\n"
    "  -h, --help   print this help\n";

int cmd_cancel(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct db *db = NULL;
	long long id;
	int c, now, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(cmd_cancel_usage, stdout);
			return 0;
		}
		fputs(cmd_cancel_usage, stderr);
		return EX_USAGE;
	}
	if (optind + 1 != argc) {
		error("which JOB? (tuner cancel JOB)");
		fputs(cmd_cancel_usage, stderr);
		return EX_USAGE;
	}
	if (cmd_parse_int("JOB", argv[optind], 1, &id) < 0)
		return EX_USAGE;
	if (!pq_is_url(g->db_path) && access(g->db_path, F_OK) < 0) {
		error("no database '%s'", g->db_path);
		return EX_NOINPUT;
	}
	if (db_open(g->db_path, &db) < 0)
		return EX_NOINPUT;
	rc = db_job_cancel(db, id, &now) < 0 ? EX_DATAERR : 0;
	if (!rc && now)
		printf("job %lld cancelled\n", id);
	else if (!rc)
		printf("job %lld: cancel asked; its servers stop it after the variants in flight\n",
		       id);
	db_close(db);
	return rc ? rc : cmd_flush_stdout();
}
