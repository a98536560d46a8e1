/* tuner cancel: stop a job, now when nobody runs it, else after its lanes' variants in flight. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"

const struct cmd cmd_cancel_entry = {
    .name = "cancel",
    .fn = cmd_cancel,
    .flags = NEED_DB,
    .summary = "cancel a queued or running job",
    .usage = "usage: tuner cancel JOB\n"
	     "\n"
	     "Cancel a job. A queued or interrupted job is cancelled at once; a running\n"
	     "one is asked to stop, and its servers stop it after the variants in\n"
	     "flight ('tuner wait JOB' waits for that). What it measured stays in the\n"
	     "database.\n"
	     "\n"
	     "  -h, --help   print this help\n",
};

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
			return cmd_usage(g, 0);
		}
		return cmd_usage(g, EX_USAGE);
	}
	if (optind + 1 != argc) {
		error("which JOB? (tuner cancel JOB)");
		return cmd_usage(g, EX_USAGE);
	}
	if (cmd_parse_int("JOB", argv[optind], 1, &id) < 0)
		return EX_USAGE;
	if ((rc = cmd_open_db(g, &db)) != 0)
		return rc;
	rc = db_job_cancel(db, id, &now) < 0 ? EX_DATAERR : 0;
	if (!rc && now)
		printf("job %lld cancelled\n", id);
	else if (!rc)
		printf("job %lld: cancel asked; its servers stop it after the variants in flight\n",
		       id);
	db_close(db);
	return rc ? rc : cmd_flush_stdout();
}
