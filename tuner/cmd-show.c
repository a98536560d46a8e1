/* tuner show: explain one variant (params, builds, gate verdicts, measurements) or summarise a run.
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/nvml.h"
#include "tuner/export.h"
#include "tuner/outcome.h"

static const char *nn(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* "%.*f" of v, or "-" for NAN. */
static const char *fmt_num(char *buf, size_t len, double v, int prec)
{
	if (isnan(v))
		return "-";
	snprintf(buf, len, "%.*f", prec, v);
	return buf;
}

/* "%g" of v, as SQLite prints a REAL. */
static const char *fmt_g(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.15g", v);
	return buf;
}

/* "[lo, hi]", or "-" when either is NAN. */
static const char *fmt_interval(char *buf, size_t len, double lo, double hi, int prec)
{
	if (isnan(lo) || isnan(hi))
		return "-";
	snprintf(buf, len, "[%.*f, %.*f]", prec, lo, prec, hi);
	return buf;
}

/* A section's rows: the heading is printed before the first, "(none)" when there is none. */
struct section {
	const char *title, *header;
	int rows;
};

static void section_row(struct section *s)
{
	if (!s->rows++)
		printf("\n%s\n%s", s->title, s->header);
}

static void section_end(const struct section *s)
{
	if (!s->rows)
		printf("\n%s\n  (none)\n", s->title);
}

/* ------------------------------------------------------------- a variant */

static void print_builds(const struct db_build_row *b, size_t n)
{
	struct section sec = {
	    .title = "builds",
	    .header = "  spec         kind     outcome   regs   spills st/ld B   smem B  stack B"
		      "  seconds\n",
	};
	size_t i;

	for (i = 0; i < n; i++) {
		section_row(&sec);
		printf("  %-12s %-8s %-8s %5d %8d/%-8d %8d %7d %8.2f%s\n", nn(b[i].spec, "(none)"),
		       b[i].sanitize ? "sanitize" : "plain", b[i].outcome, b[i].regs,
		       b[i].spill_stores, b[i].spill_loads, b[i].static_smem, b[i].stack_frame,
		       b[i].seconds, b[i].cached ? " (cached)" : "");
	}
	section_end(&sec);
}

static void print_gates(const struct db_gate_row *v, size_t n)
{
	struct section sec = {
	    .title = "gate verdicts",
	    .header = "  run  gate        shape      verdict reason\n",
	};
	size_t i;

	for (i = 0; i < n; i++) {
		section_row(&sec);
		printf("  %-4lld %-11s %-10s %-7s", v[i].run_id, v[i].gate, nn(v[i].shape, "-"),
		       v[i].outcome && !strcmp(v[i].outcome, "ok") ? "pass" : "REJECT");
		printf("%s%s\n", v[i].reason && *v[i].reason ? " " : "", nn(v[i].reason, ""));
	}
	section_end(&sec);
}

/* GB/s, and what the GPU was doing while it was timed: clock, temperature, power, throttling. */
static void print_conditions(struct db *db, const struct db_measured *m)
{
	struct db_conditions c;

	if (db_measure_conditions(db, m->id, &c) < 0)
		return;
	if (!isnan(c.gbps))
		printf("%.1f GB/s  ", c.gbps);
	if (!isnan(c.sm_mhz)) {
		char why[128];

		nvml_describe((unsigned long long)c.throttle, why, sizeof(why));
		printf("\n      while timed: SM %.0f MHz, %.0f C, %.0f W, throttled: %s%s  ",
		       c.sm_mhz, c.temp_c, c.power_w, why, c.retaken > 0 ? " (timed again)" : "");
	}
}

static void print_measurements(struct db *db, const struct db_measured *m, size_t n)
{
	struct section sec = {.title = "measurements", .header = ""};
	char a[64], b[32], c[32];
	size_t i;

	for (i = 0; i < n; i++) {
		section_row(&sec);
		printf("  %s  %s (%s): %s", m[i].device, m[i].shape, m[i].shape_dims,
		       outcome_name(m[i].outcome));
		if (m[i].run_id)
			printf(", measured by run %lld", m[i].run_id);
		printf("%s%s\n      ", m[i].reason && *m[i].reason ? ": " : "",
		       nn(m[i].reason, ""));
		if (!isnan(m[i].median_us))
			printf("median %.2f us  %s us  %s TFLOP/s  %zu sample%s  ", m[i].median_us,
			       fmt_interval(a, sizeof(a), m[i].ci_lo_us, m[i].ci_hi_us, 2),
			       fmt_num(b, sizeof(b), m[i].tflops, 2), m[i].nsamples,
			       m[i].nsamples == 1 ? "" : "s");
		if (!isnan(m[i].median_us))
			print_conditions(db, &m[i]);
		else
			printf("not timed  ");
		if (!isnan(m[i].rel_l2))
			printf("rel_l2 %s  max_abs %s\n", fmt_g(b, sizeof(b), m[i].rel_l2),
			       isnan(m[i].max_abs) ? "-" : fmt_g(c, sizeof(c), m[i].max_abs));
		else
			printf("not checked\n");
	}
	section_end(&sec);
}

static void print_evals(const struct db_variant_eval *v, size_t n)
{
	struct section sec = {
	    .title = "evaluations",
	    .header = "  run  generation outcome       fitness  95% interval       elite reason\n",
	};
	char f[32], i96[96], rank[16];
	size_t i;

	for (i = 0; i < n; i++) {
		section_row(&sec);
		snprintf(rank, sizeof(rank), "%d", v[i].elite_rank);
		printf("  %-4lld %-10d %-13s %-8s %-18s %-5s", v[i].run_id, v[i].generation,
		       v[i].outcome, fmt_num(f, sizeof(f), v[i].fitness, 3),
		       fmt_interval(i96, sizeof(i96), v[i].fitness_lo, v[i].fitness_hi, 3),
		       v[i].elite_rank ? rank : "-");
		printf("%s%s\n", v[i].reason && *v[i].reason ? " " : "", nn(v[i].reason, ""));
	}
	section_end(&sec);
}

static int show_variant(struct db *db, const char *name)
{
	struct db_variant v;
	struct db_build_row *builds = NULL;
	struct db_gate_row *gates = NULL;
	struct db_measured *meas = NULL;
	struct db_variant_eval *evals = NULL;
	size_t nb = 0, ng = 0, nm = 0, ne = 0;
	long long id;
	int rc = -1;

	if (db_variant_find_prefix(db, name, &id) < 0 || db_variant_get(db, id, &v) < 0)
		return -1;
	printf("variant %lld %s\n", v.id, v.hash);
	printf("params    %s\n", nn(v.params, "(none)"));
	printf("template  %s, hash %s, arch %s\n", v.template_name, v.template_hash, v.arch);
	printf("options   %s\n", nn(v.options, "(none)"));
	printf("created   %s\n", v.created_at);
	db_variant_release(&v);

	if (db_variant_builds(db, id, &builds, &nb) < 0 ||
	    db_variant_gates(db, id, &gates, &ng) < 0 ||
	    db_variant_measurements(db, id, &meas, &nm) < 0 ||
	    db_variant_evals(db, id, &evals, &ne) < 0)
		goto out;
	print_builds(builds, nb);
	print_gates(gates, ng);
	print_measurements(db, meas, nm);
	print_evals(evals, ne);
	rc = 0;
out:
	db_build_rows_free(builds, nb);
	db_gate_rows_free(gates, ng);
	db_measured_free(meas, nm);
	db_variant_evals_free(evals, ne);
	return rc;
}

/* ----------------------------------------------------------------- a run */

static void print_outcomes(const long long counts[OUTCOME_COUNT])
{
	long long total = 0;
	int o, first = 1;

	for (o = 0; o < OUTCOME_COUNT; o++)
		total += counts[o];
	printf("outcomes    %lld evaluated", total);
	for (o = 0; o < OUTCOME_COUNT; o++) {
		if (!counts[o])
			continue;
		printf("%s%s %lld", first ? ": " : ", ", outcome_name((enum outcome)o), counts[o]);
		first = 0;
	}
	printf("\n");
}

static int print_compiles(struct db *db, const struct db_run *r, long long evaluated)
{
	struct db_compile_stats c;

	if (db_run_compile_stats(db, r->id, &c) < 0)
		return -1;
	printf("compiled    %lld distinct variant%s: %lld build%s, %lld compiled", c.distinct_ok,
	       c.distinct_ok == 1 ? "" : "s", c.builds, c.builds == 1 ? "" : "s", c.fresh);
	if (c.fresh > 0 && c.seconds > 0)
		printf(" in %.1f s of compile time (%.2f builds/s per job)", c.seconds,
		       (double)c.fresh / c.seconds);
	printf(", %lld from the cache\n", c.cached);
	/* The time it ran: stops, kills and the hours it lay dead in between do not count. */
	if (isfinite(r->wall_seconds) && r->wall_seconds > 0)
		printf("wall time   %.1f s, %.2f variants/s evaluated\n", r->wall_seconds,
		       (double)evaluated / r->wall_seconds);
	else if (isnan(r->wall_seconds))
		printf("wall time   unknown (the run died before it kept count)\n");
	return 0;
}

static int print_elite(struct db *db, const struct db_run *run)
{
	struct ranking r;
	long long count;
	int gen;
	size_t i;

	if (db_elite_final(db, run->id, &gen, &count) < 0)
		return -1;
	if (!count) {
		printf("elite       none%s\n",
		       !run->gpu && !run->replay_of ? " (nothing was timed: no GPU)" : "");
		return 0;
	}
	printf("elite       generation %d, best first\n", gen);
	if (export_rank(db, run->id, (size_t)count, &r) < 0)
		return -1;
	for (i = 0; i < r.n; i++) {
		const struct export_entry *e = &r.v[i];

		printf("  %d  ", e->rank);
		if (isfinite(e->fitness))
			printf("%.3fx", e->fitness);
		else
			printf("-");
		if (isfinite(e->fitness_lo) && isfinite(e->fitness_hi))
			printf(" [%.3f, %.3f]", e->fitness_lo, e->fitness_hi);
		printf("  variant %lld (%.12s)  %s\n", e->variant_id, e->hash, e->params);
	}
	ranking_release(&r);
	return 0;
}

/* "running (pid 123 on host, heartbeat ...)", "interrupted (its process ... is gone)", ... */
static void print_status(const struct db_run *r)
{
	printf("run %lld (%s), started %s", r->id, r->status, r->started_at);
	if (r->alive)
		printf(", running as pid %lld on %s", r->pid, nn(r->host, "?"));
	else if (!strcmp(r->status, "interrupted")) {
		printf(", never finished: its process");
		if (r->pid)
			printf(" (pid %lld on %s)", r->pid, nn(r->host, "?"));
		printf(" is gone");
		if (r->heartbeat_at)
			printf(", last seen %s", r->heartbeat_at);
	} else if (r->finished_at)
		printf(", finished %s", r->finished_at);
	printf("\n");
}

static int show_run(struct db *db, long long run_id)
{
	struct db_run r;
	struct export_shape *shapes = NULL;
	long long counts[OUTCOME_COUNT], evaluated = 0;
	size_t nshapes = 0, i, w = 0;
	int rc = -1, o, gens;

	if (db_run_get(db, run_id, &r) < 0)
		return -1;
	print_status(&r);
	printf("command     %s\n", r.command);
	printf("config      %s\n", nn(r.config_path, "(none)"));
	printf("template    %s, hash %s\n", r.template_name, r.template_hash);
	printf("device      %s, driver %s, arch %s, NVRTC %s\n", r.device, r.driver, r.arch,
	       r.nvrtc);
	printf("strategy    %s, seed %llu, population %d\n", r.strategy, r.seed, r.population);
	if (db_run_generations_done(db, run_id, &gens) < 0)
		goto out;
	printf("generations %d done of %d\n", gens, r.generations);
	if (r.replay_of)
		printf("timing      replayed from '%s'\n", r.replay_of);
	else if (r.gpu)
		printf("timing      on the GPU\n");
	else
		printf("timing      none: evaluated without a GPU, nothing was timed\n");
	if (export_shapes_parse(r.shapes, &shapes, &nshapes) < 0)
		goto out;
	for (i = 0; i < nshapes; i++)
		if (strlen(shapes[i].name) > w)
			w = strlen(shapes[i].name);
	for (i = 0; i < nshapes; i++)
		printf("%s%-*s  %s\n", i ? "            " : "shapes      ", (int)w, shapes[i].name,
		       shapes[i].dims);
	if (db_run_outcome_counts(db, run_id, counts) < 0)
		goto out;
	for (o = 0; o < OUTCOME_COUNT; o++)
		evaluated += counts[o];
	print_outcomes(counts);
	if (print_compiles(db, &r, evaluated) < 0 || print_elite(db, &r) < 0)
		goto out;
	rc = 0;
out:
	export_shapes_free(shapes, nshapes);
	db_run_release(&r);
	return rc;
}

/* ------------------------------------------------------------------- cmd */

const struct cmd cmd_show_entry = {
    .name = "show",
    .fn = cmd_show,
    .flags = READ_DB,
    .summary = "explain a variant or a run from the database",
    .usage = "usage: tuner show [VARIANT | --run ID]\n"
	     "\n"
	     "With a variant id or hash prefix: its params, builds, gate verdicts\n"
	     "and measurements. With --run (or nothing): a run's summary, with its\n"
	     "status as it is now: a run whose process died without finishing is\n"
	     "interrupted, and its wall time counts only the time it ran.\n"
	     "\n"
	     "  --run ID     the run to summarise (default: the latest, any status)\n"
	     "  -h, --help   print this help\n",
};

int cmd_show(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"run", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	long long run = 0;
	const char *variant = NULL;
	struct db *db;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (cmd_parse_range("--run", optarg, 1, LLONG_MAX, &run) < 0)
				return cmd_usage(g, EX_USAGE);
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind < argc)
		variant = argv[optind++];
	if (optind < argc)
		return cmd_extra_arg(g, argv[optind]);
	if (variant && run) {
		error("give a variant or --run, not both");
		return cmd_usage(g, EX_USAGE);
	}

	if ((rc = cmd_open_db(g, &db)) != 0)
		return rc;
	if (!variant && (rc = cmd_pick_run(db, run, 0, &run)) != 0) {
		db_close(db);
		return rc;
	}
	rc = variant ? show_variant(db, variant) : show_run(db, run);
	db_close(db);
	return rc < 0 ? EX_DATAERR : 0;
}
