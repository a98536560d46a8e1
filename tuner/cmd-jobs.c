/* tuner jobs: the queue as a table (or JSON): status, progress, best so far, where it runs. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"

const struct cmd cmd_jobs_entry = {
    .name = "jobs",
    .fn = cmd_jobs,
    .flags = READ_DB,
    .summary = "list the queue: status, progress, best so far, GPUs, host",
    .usage = "usage: tuner jobs [--active] [--json]\n"
	     "\n"
	     "The jobs of the queue, oldest first: id, status (queued, running, done,\n"
	     "failed, cancelled, interrupted: its server stopped or died, and the next\n"
	     "server resumes it), priority, progress (generations observed, candidates\n"
	     "evaluated), the best fitness so far (geometric-mean speedup over the\n"
	     "baseline), the GPUs evaluating its candidates now (host:ordinal), the\n"
	     "host of the server that owns it, its config, and its budget (submit\n"
	     "--time, --evals) with the wall time spent since it first started.\n"
	     "Then the servers.\n"
	     "\n"
	     "  --active     only queued, running and interrupted jobs\n"
	     "  --json       one JSON document on stdout\n"
	     "  -h, --help   print this help\n",
};

static json_t *json_text(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *job_json(const struct db_job *j, const struct db_job_progress *p)
{
	json_t *o = json_object();
	char text[128];
	long long evals;
	double time_s;

	json_object_set_new(o, "id", json_integer(j->id));
	json_object_set_new(o, "status", json_string(j->status));
	json_object_set_new(o, "priority", json_integer(j->priority));
	json_object_set_new(o, "config", json_text(j->config_path));
	json_object_set_new(o, "options", json_loads(j->options, 0, NULL));
	json_object_set_new(o, "submitted_at", json_text(j->submitted_at));
	json_object_set_new(o, "submitted_by", json_text(j->submitted_by));
	json_object_set_new(o, "started_at", json_text(j->started_at));
	json_object_set_new(o, "finished_at", json_text(j->finished_at));
	json_object_set_new(o, "run", j->run_id > 0 ? json_integer(j->run_id) : json_null());
	json_object_set_new(o, "host", json_text(j->host));
	json_object_set_new(o, "generation", json_integer(p->generation));
	json_object_set_new(o, "generations", json_integer(p->generations));
	json_object_set_new(o, "evaluated", json_integer(p->evaluated));
	json_object_set_new(o, "best", isnan(p->best) ? json_null() : json_real(p->best));
	json_object_set_new(o, "gpus", json_text(p->gpus && *p->gpus ? p->gpus : NULL));
	json_object_set_new(o, "device", json_text(p->device));
	json_object_set_new(o, "cancel_requested", json_boolean(j->cancel));
	json_object_set_new(o, "message", json_text(j->message));
	json_object_set_new(o, "elapsed", json_real(j->elapsed));
	cmd_job_budget(j, &time_s, &evals, text, sizeof(text));
	json_object_set_new(o, "budget_time", time_s > 0 ? json_real(time_s) : json_null());
	json_object_set_new(o, "budget_evals", evals > 0 ? json_integer(evals) : json_null());
	return o;
}

static void job_row(const struct db_job *j, const struct db_job_progress *p)
{
	char progress[48] = "-", best[24] = "-", status[24], budget[128];
	long long evals;
	double time_s;
	const char *cfg = j->config_path ? strrchr(j->config_path, '/') : NULL;

	if (j->run_id > 0)
		snprintf(progress, sizeof(progress), "%d/%d, %lld", p->generation, p->generations,
		         p->evaluated);
	if (!isnan(p->best))
		snprintf(best, sizeof(best), "x%.3f", p->best);
	snprintf(status, sizeof(status), "%s%s", j->status,
	         j->cancel && !strcmp(j->status, "running") ? "*" : "");
	printf("%4lld  %-12s %4d  %-14s %-8s %-16s %-12s %s", j->id, status, j->priority, progress,
	       best, p->gpus && *p->gpus ? p->gpus : "-", j->host ? j->host : "-",
	       cfg ? cfg + 1 : j->config_path);
	cmd_job_budget(j, &time_s, &evals, budget, sizeof(budget));
	if (*budget)
		printf("  [budget %s]", budget);
	/* a job done has a message when its budget ended it */
	if (j->message)
		printf("  (%s)", j->message);
	printf("\n");
}

static void server_rows(const struct db_server *sv, size_t n)
{
	size_t i, live = 0;

	for (i = 0; i < n; i++)
		live += sv[i].alive;
	printf("\n%zu server%s serving", live, live == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		if (sv[i].alive)
			printf("%s %s (pid %lld, %s%s%s)", live > 1 && i ? "," : ":", sv[i].host,
			       sv[i].pid, *sv[i].gpus ? "GPUs " : "no GPU", sv[i].gpus,
			       *sv[i].gpus ? "" : "");
	printf("\n");
}

int cmd_jobs(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"active", no_argument, NULL, 'a'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct db *db = NULL;
	struct db_job *jobs = NULL;
	struct db_server *sv = NULL;
	size_t n = 0, ns = 0, i;
	json_t *doc = NULL, *arr = NULL;
	int c, active = 0, json = 0, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			active = 1;
			break;
		case 'J':
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
	if (db_job_list(db, active, &jobs, &n) < 0 || db_server_list(db, 0, &sv, &ns) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	if (json) {
		doc = json_object();
		arr = json_array();
		json_object_set_new(doc, "jobs", arr);
	} else if (n) {
		printf("%4s  %-12s %4s  %-14s %-8s %-16s %-12s %s\n", "id", "status", "pri",
		       "progress", "best", "gpus", "host", "config");
	} else {
		printf("no %sjobs\n", active ? "active " : "");
	}
	for (i = 0; i < n && !rc; i++) {
		struct db_job_progress p;

		if (db_job_progress(db, &jobs[i], &p) < 0) {
			rc = EX_SOFTWARE;
			break;
		}
		if (json)
			json_array_append_new(arr, job_json(&jobs[i], &p));
		else
			job_row(&jobs[i], &p);
		db_job_progress_release(&p);
	}
	if (!rc && json) {
		json_t *servers = json_array();

		for (i = 0; i < ns; i++) {
			json_t *o = json_object();

			json_object_set_new(o, "id", json_integer(sv[i].id));
			json_object_set_new(o, "host", json_text(sv[i].host));
			json_object_set_new(o, "pid", json_integer(sv[i].pid));
			json_object_set_new(o, "gpus", json_text(sv[i].gpus));
			json_object_set_new(o, "device", json_text(sv[i].device));
			json_object_set_new(o, "alive", json_boolean(sv[i].alive));
			json_object_set_new(o, "started_at", json_text(sv[i].started_at));
			json_array_append_new(servers, o);
		}
		json_object_set_new(doc, "servers", servers);
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("\n");
	} else if (!rc) {
		server_rows(sv, ns);
	}
	if (!rc)
		rc = cmd_flush_stdout();
out:
	json_decref(doc);
	for (i = 0; i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
	for (i = 0; i < ns; i++)
		db_server_release(&sv[i]);
	free(sv);
	db_close(db);
	return rc;
}
