/* tuner runs: every run in the database, with its status as it is now. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"

const struct cmd cmd_runs_entry = {
    .name = "runs",
    .fn = cmd_runs,
    .flags = READ_DB,
    .summary = "list the runs: id, status, when, config, best, evaluations",
    .usage = "usage: tuner runs [--json]\n"
	     "\n"
	     "Every run in the database, oldest first: its id, status, when it\n"
	     "started, its config, the best fitness among its correct variants and\n"
	     "how many variants it evaluated. The status is what it is now:\n"
	     "running (its process is alive), done, stopped (by a signal, and\n"
	     "resumable), failed, or interrupted (its process died without a word,\n"
	     "resumable).\n"
	     "\n"
	     "  --json       one JSON array on stdout\n"
	     "  -h, --help   print this help\n",
};

struct row {
	struct db_run r;
	long long evaluations;
	double best;
};

static void print_table(const struct row *v, size_t n)
{
	int wc = (int)strlen("config");
	char best[32];
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].r.config_path && (int)strlen(v[i].r.config_path) > wc)
			wc = (int)strlen(v[i].r.config_path);
	printf("%4s  %-11s  %-19s  %-*s  %7s  %11s\n", "id", "status", "started (UTC)", wc,
	       "config", "best", "evaluations");
	for (i = 0; i < n; i++) {
		const struct db_run *r = &v[i].r;

		if (isfinite(v[i].best))
			snprintf(best, sizeof(best), "%.3fx", v[i].best);
		else
			snprintf(best, sizeof(best), "-");
		/* "2026-11-20T10:00:00.000Z" shown to the second */
		printf("%4lld  %-11s  %-19.19s  %-*s  %7s  %11lld\n", r->id, r->status,
		       r->started_at, wc, r->config_path ? r->config_path : "-", best,
		       v[i].evaluations);
	}
}

static int print_json(const struct row *v, size_t n)
{
	json_t *a = json_array();
	char *s;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct db_run *r = &v[i].r;
		json_t *o =
		    json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:I}", "id", (json_int_t)r->id,
		              "status", r->status, "started_at", r->started_at, "template",
		              r->template_name, "device", r->device, "strategy", r->strategy,
		              "evaluations", (json_int_t)v[i].evaluations);

		json_object_set_new(o, "config",
		                    r->config_path ? json_string(r->config_path) : json_null());
		json_object_set_new(o, "finished_at",
		                    r->finished_at ? json_string(r->finished_at) : json_null());
		json_object_set_new(o, "best",
		                    isfinite(v[i].best) ? json_real(v[i].best) : json_null());
		json_object_set_new(o, "wall_seconds",
		                    isfinite(r->wall_seconds) ? json_real(r->wall_seconds)
		                                              : json_null());
		json_array_append_new(a, o);
	}
	s = json_dumps(a, JSON_INDENT(2));
	json_decref(a);
	if (!s)
		return error("cannot serialise the runs");
	printf("%s\n", s);
	free(s);
	return 0;
}

int cmd_runs(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct row *v = NULL;
	long long *ids = NULL;
	size_t n = 0, i, got = 0;
	struct db *db;
	int json = 0, c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind < argc)
		return cmd_extra_arg(g, argv[optind]);
	if ((rc = cmd_open_db(g, &db)) != 0)
		return rc;
	if (db_run_ids(db, &ids, &n) < 0) {
		db_close(db);
		return EX_DATAERR;
	}
	v = xcalloc(n + 1, sizeof(*v));
	for (got = 0; got < n; got++)
		if (db_run_get(db, ids[got], &v[got].r) < 0 ||
		    db_run_evals_summary(db, ids[got], &v[got].evaluations, &v[got].best) < 0) {
			db_run_release(&v[got].r);
			rc = EX_DATAERR;
			break;
		}
	db_close(db);
	if (!rc && json)
		rc = print_json(v, got) < 0 ? EX_SOFTWARE : 0;
	else if (!rc && n)
		print_table(v, got);
	else if (!rc && g->verbosity >= 0)
		printf("no runs yet in '%s'\n", g->db_path);
	for (i = 0; i < got; i++)
		db_run_release(&v[i].r);
	free(v);
	free(ids);
	return rc;
}
