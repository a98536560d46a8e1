/* tuner submit: validate a tuning job where a server would read it, then queue it. */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/evolve.h"
#include "tuner/roots.h"
#include "tuner/run.h"

const struct cmd cmd_submit_entry = {
    .name = "submit",
    .fn = cmd_submit,
    .flags = NEED_DB,
    .summary = "check a tuning job and queue it for tuner serve",
    .usage =
	"usage: tuner submit [--priority N] [--root DIR]... [--generations N] [--population N]\n"
	"                    [--seed N] [--strategy S] [--time D] [--evals N]\n"
	"                    [--replay OTHER.db] [--no-gpu] CONFIG\n"
	"\n"
	"Queue a tuning job for 'tuner serve'. The job is checked first, as a\n"
	"server will read it: the config and every file it names must lie in the\n"
	"roots (--root, or else those of the servers running on this database),\n"
	"and must load without error; a bad job is refused with file:line and\n"
	"nothing is queued. The job holds the config's text: a server runs only\n"
	"that, and fails the job if the file has changed when it starts.\n"
	"Prints the job's id.\n"
	"\n"
	"  --priority N      higher runs first (default 0); equal priorities share\n"
	"                    the GPUs, the oldest job first\n"
	"  --root DIR        a directory the job may be read from (repeatable)\n"
	"  --generations N   generations to run (default: the config's budget)\n"
	"  --population N    candidates per generation (default: the config's budget)\n"
	"  --seed N          RNG seed (default: the config's seed)\n"
	"  --strategy S      " SEARCH_STRATEGIES "\n"
	"                    (default: the config's)\n"
	"  --time D          end the job once D of wall time (90, 90s, 10m, 2h) has\n"
	"                    passed since a server first started it, whoever ran\n"
	"                    it since: the candidates in flight get their verdict,\n"
	"                    the job ends done with the elite of the verdicts\n"
	"                    reached, its run stopped (tuner run --resume=RUN\n"
	"                    continues it)\n"
	"  --evals N         the same once N candidates of its run have their verdict\n"
	"  --replay OTHER.db answer from that recording instead of a GPU\n"
	"  --no-gpu          compile and gate only\n"
	"  -h, --help        print this help\n",
};

/* The roots of the live servers of this database, as they read on this host. */
static int server_roots(struct db *db, struct roots *r)
{
	struct db_server *sv;
	size_t n, i, k;
	int rc = 0;

	if (db_server_list(db, 1, &sv, &n) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		json_t *a = json_loads(sv[i].roots ? sv[i].roots : "[]", 0, NULL);

		for (k = 0; a && k < json_array_size(a); k++) {
			const char *dir = json_string_value(json_array_get(a, k));
			char *abs = dir ? realpath(dir, NULL) : NULL;
			size_t m;

			if (!abs)
				continue; /* not here: a path of another host */
			for (m = 0; m < r->n && strcmp(r->dir[m], abs); m++)
				;
			if (m == r->n)
				rc |= roots_add(r, abs);
			free(abs);
		}
		json_decref(a);
		db_server_release(&sv[i]);
	}
	free(sv);
	return rc ? -1 : 0;
}

static char *submitter(void)
{
	struct passwd *pw = getpwuid(getuid());
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	return xasprintf("%s@%s", pw && pw->pw_name ? pw->pw_name : "?", host);
}

int cmd_submit(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"priority", required_argument, NULL, 'P'},
	    {"root", required_argument, NULL, 'r'},
	    {"generations", required_argument, NULL, 'g'},
	    {"population", required_argument, NULL, 'p'},
	    {"seed", required_argument, NULL, 's'},
	    {"strategy", required_argument, NULL, 'S'},
	    {"time", required_argument, NULL, 'T'},
	    {"evals", required_argument, NULL, 'E'},
	    {"replay", required_argument, NULL, 'R'},
	    {"no-gpu", no_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct run_request rq;
	struct db_job_info ji;
	struct roots roots = {0};
	struct db *db = NULL;
	char *config = NULL, *replay = NULL, *text = NULL, *options = NULL, *who = NULL;
	long long v, job_id, priority = 0;
	int c, rc = EX_USAGE;

	memset(&rq, 0, sizeof(rq));
	while ((c = getopt_long(argc, argv, "hg:p:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'P':
			if (cmd_parse_int("--priority", optarg, -1000000, &priority) < 0)
				goto out;
			break;
		case 'r':
			if (roots_add(&roots, optarg) < 0)
				goto out;
			break;
		case 'g':
			if (cmd_parse_int("--generations", optarg, 1, &v) < 0)
				goto out;
			rq.generations = (int)v;
			break;
		case 'p':
			if (cmd_parse_int("--population", optarg, 1, &v) < 0)
				goto out;
			rq.population = (int)v;
			break;
		case 's':
			if (cmd_parse_int("--seed", optarg, 0, &v) < 0)
				goto out;
			rq.seed = (unsigned long long)v;
			rq.seed_given = 1;
			break;
		case 'S':
			if (!search_strategy_known(optarg)) {
				error("unknown strategy '%s' (%s)", optarg, SEARCH_STRATEGIES);
				goto out;
			}
			rq.strategy = optarg;
			break;
		case 'T':
			if (cmd_parse_time(optarg, &rq.time_s) < 0)
				goto out;
			break;
		case 'E':
			if (cmd_parse_evals(optarg, &rq.evals) < 0)
				goto out;
			break;
		case 'R':
			rq.replay = optarg;
			break;
		case 'n':
			rq.no_gpu = 1;
			break;
		case 'h':
			rc = cmd_usage(g, 0);
			goto out;
		default:
			goto usage;
		}
	}
	if (optind + 1 != argc) {
		error(optind < argc ? "one CONFIG, please" : "which CONFIG? (tuner submit CONFIG)");
		goto usage;
	}
	if ((rc = cmd_open_db(g, &db)) != 0)
		goto out;
	if (!roots.n && server_roots(db, &roots) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	if (!roots.n) {
		error("no --root, and no tuner serve runs on '%s' to take its roots from: name the "
		      "directories the job may be read from with --root DIR",
		      g->db_path);
		goto usage;
	}
	/* read as a server would: nothing outside the roots is opened */
	rc = EX_CONFIG;
	if (roots_check(&roots, "config", argv[optind], &config) < 0)
		goto out;
	if (rq.replay && roots_check(&roots, "recording", rq.replay, &replay) < 0)
		goto out;
	rq.config_path = config;
	rq.replay = replay;
	rq.roots = &roots;
	roots_confine(&roots, NULL);
	rc = run_check(&rq, &text);
	roots_confine(NULL, NULL);
	if (rc)
		goto out;
	options = run_request_json(&rq);
	who = submitter();
	memset(&ji, 0, sizeof(ji));
	ji.config_path = config;
	ji.config_text = text;
	ji.options = options;
	ji.submitted_by = who;
	ji.priority = (int)priority;
	ji.gpu = run_needs_gpu(&rq);
	if (db_job_submit(db, &ji, &job_id) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	printf("%lld\n", job_id);
	rc = cmd_flush_stdout();
	goto out;
usage:
	rc = cmd_usage(g, EX_USAGE);
out:
	db_close(db);
	roots_release(&roots);
	free(config);
	free(replay);
	free(text);
	free(options);
	free(who);
	return rc;
}
