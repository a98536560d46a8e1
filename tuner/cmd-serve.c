/* tuner serve: the daemon's options; the serving itself is tuner/serve.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/pq.h"
#include "tuner/serve.h"

const struct cmd cmd_serve_entry = {
    .name = "serve",
    .fn = cmd_serve,
    .flags = NEED_DB | NEED_CACHE,
    .summary = "the daemon: run the queued jobs on this host's GPUs until SIGTERM",
    .usage =
	"usage: tuner serve --root DIR... [--gpus LIST|all] [--log FILE] [--heartbeat SECONDS]\n"
	"                   [--batch N] [--jobs N]\n"
	"\n"
	"Run the jobs 'tuner submit' queues in the database, in the foreground,\n"
	"until SIGTERM: one lane per GPU, all of one model, each taking jobs by\n"
	"priority, then age, the lanes spread evenly over the jobs of the highest\n"
	"priority. A job's generations are shared by every lane and every\n"
	"'tuner serve' on the same database (--db postgresql://... for several\n"
	"hosts), candidate by candidate; the search does not depend on who\n"
	"measured what. tuner opens no port: the database is the only way in.\n"
	"SIGTERM finishes each lane's variant, commits, and leaves the running\n"
	"jobs to be resumed (a second SIGTERM exits at once); a restart resumes\n"
	"them without measuring anything twice. SIGHUP reopens the log.\n"
	"\n"
	"  --root DIR          a directory jobs may be read from (configs, templates,\n"
	"                      recordings); repeat for several; nothing else is read\n"
	"  --gpus LIST|all     the GPU ordinals to own, \"0,1\" (default: all; with\n"
	"                      none visible, one lane for jobs that need no GPU)\n"
	"  --log FILE          append the log there instead of stderr\n"
	"  --heartbeat SECONDS between heartbeats (default 10); a server silent\n"
	"                      5 heartbeats is dead and its claims return to the queue\n"
	"  --batch N           candidates a lane claims at once (default 4)\n"
	"  --jobs N            parallel compiles per lane (default: the cores shared)\n"
	"  -h, --help          print this help\n",
};

/* "0,1,3" or "all" (NULL). 0, or error(). */
static int parse_gpus(const char *s, int **gpus, size_t *n)
{
	size_t alloc = 0;
	char *end;
	long v;

	*gpus = NULL;
	*n = 0;
	if (!strcmp(s, "all"))
		return 0;
	for (;;) {
		v = strtol(s, &end, 10);
		if (end == s || v < 0 || v > 1023 || (*end && *end != ',')) {
			free(*gpus);
			*gpus = NULL;
			return error("--gpus needs 'all' or GPU ordinals like 0,1, got '%s'", s);
		}
		ALLOC_GROW(*gpus, *n + 1, alloc);
		(*gpus)[(*n)++] = (int)v;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int cmd_serve(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'},  {"gpus", required_argument, NULL, 'g'},
	    {"log", required_argument, NULL, 'l'},   {"heartbeat", required_argument, NULL, 'b'},
	    {"batch", required_argument, NULL, 'B'}, {"jobs", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	struct serve_options o;
	int *gpus = NULL, c, rc = EX_USAGE;
	long long v;
	char *end;

	memset(&o, 0, sizeof(o));
	o.heartbeat = 10;
	o.batch = 4;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (roots_add(&o.roots, optarg) < 0)
				goto out;
			break;
		case 'g':
			free(gpus);
			if (parse_gpus(optarg, &gpus, &o.ngpus) < 0)
				goto out;
			o.gpus = gpus;
			break;
		case 'l':
			o.log_path = optarg;
			break;
		case 'b':
			o.heartbeat = strtod(optarg, &end);
			if (*end || end == optarg || !(o.heartbeat >= 0.1 && o.heartbeat <= 3600)) {
				error("--heartbeat needs seconds from 0.1 to 3600, got '%s'",
				      optarg);
				goto out;
			}
			break;
		case 'B':
			if (cmd_parse_int("--batch", optarg, 1, &v) < 0)
				goto out;
			o.batch = (size_t)v;
			break;
		case 'j':
			if (cmd_parse_int("--jobs", optarg, 0, &v) < 0)
				goto out;
			o.jobs = (int)v;
			break;
		case 'h':
			rc = cmd_usage(g, 0);
			goto out;
		default:
			goto usage;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		goto usage;
	}
	if (!o.roots.n) {
		error(
		    "tuner serve reads jobs only from the directories it is given: name them with "
		    "--root DIR");
		goto usage;
	}
	if (g->db_given && pq_is_url(g->db_path) && pq_has_password(g->db_path)) {
		char *shown = pq_redact(g->db_path);

		error("'%s': a password on the command line is visible to every user of this host; "
		      "put it in PGPASSWORD or ~/.pgpass",
		      shown);
		free(shown);
		goto out;
	}
	o.db_path = g->db_path;
	o.cache_dir = g->cache_dir;
	rc = serve_main(&o);
	goto out;
usage:
	rc = cmd_usage(g, EX_USAGE);
out:
	roots_release(&o.roots);
	free(gpus);
	return rc;
}
