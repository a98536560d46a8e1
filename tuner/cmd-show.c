/* tuner show: explain one variant (params, builds, gate verdicts, measurements) or summarise a run.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/export.h"
#include "tuner/outcome.h"

static const char *nn(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* "%.*f" of a database value, or "-" for NULL. */
static const char *fmt_num(char *buf, size_t len, const char *v, int prec)
{
	if (!v)
		return "-";
	snprintf(buf, len, "%.*f", prec, strtod(v, NULL));
	return buf;
}

/* "[lo, hi]", or "-" when either is NULL. */
static const char *fmt_interval(char *buf, size_t len, const char *lo, const char *hi, int prec)
{
	if (!lo || !hi)
		return "-";
	snprintf(buf, len, "[%.*f, %.*f]", prec, strtod(lo, NULL), prec, strtod(hi, NULL));
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

static int build_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	char b[32];

	section_row(ctx);
	/* spec, sanitize, outcome, regs, spill_stores, spill_loads, static_smem, stack_frame,
	 * seconds, cached */
	printf("  %-12s %-8s %-8s %5s %8s/%-8s %8s %7s %8s%s\n", nn(v[0], "(none)"),
	       v[1] && !strcmp(v[1], "1") ? "sanitize" : "plain", v[2], v[3], v[4], v[5], v[6],
	       v[7], fmt_num(b, sizeof(b), v[8], 2), v[9] && !strcmp(v[9], "1") ? " (cached)" : "");
	return 0;
}

static int gate_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	section_row(ctx);
	/* run, gate, shape, outcome, reason */
	printf("  %-4s %-11s %-10s %-7s", v[0], v[1], nn(v[2], "-"),
	       v[3] && !strcmp(v[3], "ok") ? "pass" : "REJECT");
	printf("%s%s\n", v[4] && *v[4] ? " " : "", nn(v[4], ""));
	return 0;
}

static int measurement_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	char a[32], b[64], c[32];

	section_row(ctx);
	/* device, shape, shape_dims, outcome, median, ci lo, ci hi, tflops, rel_l2, max_abs,
	 * samples count, run, reason */
	printf("  %s  %s (%s): %s", v[0], v[1], v[2], v[3]);
	if (v[11])
		printf(", measured by run %s", v[11]);
	printf("%s%s\n      ", v[12] && *v[12] ? ": " : "", nn(v[12], ""));
	if (v[4])
		printf("median %s us  %s us  %s TFLOP/s  %s sample%s  ",
		       fmt_num(a, sizeof(a), v[4], 2), fmt_interval(b, sizeof(b), v[5], v[6], 2),
		       fmt_num(c, sizeof(c), v[7], 2), nn(v[10], "0"),
		       v[10] && !strcmp(v[10], "1") ? "" : "s");
	else
		printf("not timed  ");
	if (v[8])
		printf("rel_l2 %s  max_abs %s\n", v[8], nn(v[9], "-"));
	else
		printf("not checked\n");
	return 0;
}

static int eval_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	char f[32], i[96];

	section_row(ctx);
	/* run, generation, outcome, fitness, lo, hi, reason, elite rank */
	printf("  %-4s %-10s %-13s %-8s %-18s %-5s", v[0], v[1], v[2],
	       fmt_num(f, sizeof(f), v[3], 3), fmt_interval(i, sizeof(i), v[4], v[5], 3),
	       nn(v[7], "-"));
	printf("%s%s\n", v[6] && *v[6] ? " " : "", nn(v[6], ""));
	return 0;
}

static int show_variant(struct db *db, const char *name)
{
	struct section builds = {
	    .title = "builds",
	    .header = "  spec         kind     outcome   regs   spills st/ld B   smem B  stack B"
		      "  seconds\n",
	};
	struct section gates = {
	    .title = "gate verdicts",
	    .header = "  run  gate        shape      verdict reason\n",
	};
	struct section meas = {.title = "measurements", .header = ""};
	struct section evals = {
	    .title = "evaluations",
	    .header = "  run  generation outcome       fitness  95% interval       elite reason\n",
	};
	struct db_variant v;
	long long id;
	char ids[32];

	if (db_variant_find_prefix(db, name, &id) < 0 || db_variant_get(db, id, &v) < 0)
		return -1;
	snprintf(ids, sizeof(ids), "%lld", id);
	printf("variant %lld %s\n", v.id, v.hash);
	printf("params    %s\n", nn(v.params, "(none)"));
	printf("template  %s, hash %s, arch %s\n", v.template_name, v.template_hash, v.arch);
	printf("options   %s\n", nn(v.options, "(none)"));
	printf("created   %s\n", v.created_at);
	db_variant_release(&v);

	if (db_exec_callback(db,
	                     "SELECT spec, sanitize, outcome, regs, spill_stores, spill_loads,"
	                     " static_smem, stack_frame, seconds, cached FROM builds"
	                     " WHERE variant_id = ?1 ORDER BY sanitize, spec, id",
	                     build_row, &builds, ids, (const char *)NULL) < 0)
		return -1;
	section_end(&builds);
	if (db_exec_callback(db,
	                     "SELECT run_id, gate, shape, outcome, reason FROM gates"
	                     " WHERE variant_id = ?1 ORDER BY run_id, id",
	                     gate_row, &gates, ids, (const char *)NULL) < 0)
		return -1;
	section_end(&gates);
	if (db_exec_callback(db,
	                     "SELECT device, shape, shape_dims, outcome, median_us, ci_lo_us,"
	                     " ci_hi_us, tflops, rel_l2, max_abs, json_array_length(samples),"
	                     " run_id, reason FROM measurements WHERE variant_id = ?1"
	                     " ORDER BY device, id",
	                     measurement_row, &meas, ids, (const char *)NULL) < 0)
		return -1;
	section_end(&meas);
	/* The elite rank is the one in the run's final elite. */
	if (db_exec_callback(db,
	                     "SELECT x.run_id, x.generation, x.outcome, x.fitness, x.fitness_lo,"
	                     " x.fitness_hi, x.reason, (SELECT e.rank FROM elite e"
	                     " WHERE e.run_id = x.run_id AND e.variant_id = x.variant_id"
	                     " AND e.generation = (SELECT max(generation) FROM elite"
	                     " WHERE run_id = x.run_id)) FROM evals x WHERE x.variant_id = ?1"
	                     " ORDER BY x.run_id",
	                     eval_row, &evals, ids, (const char *)NULL) < 0)
		return -1;
	section_end(&evals);
	return 0;
}

/* ----------------------------------------------------------------- a run */

/* The first row's columns, copied. */
struct first_row {
	char *v[8];
};

static int first_row(void *ctx, int ncols, const char *const *v, const char *const *names)
{
	struct first_row *r = ctx;
	int i;

	for (i = 0; i < ncols && i < (int)ARRAY_SIZE(r->v); i++)
		r->v[i] = v[i] ? xstrdup(v[i]) : NULL;
	return 1;
}

static void first_row_release(struct first_row *r)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(r->v); i++)
		free(r->v[i]);
	memset(r, 0, sizeof(*r));
}

static double col(const struct first_row *r, int i)
{
	return r->v[i] ? strtod(r->v[i], NULL) : NAN;
}

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

static int print_compiles(struct db *db, const char *id, long long evaluated)
{
	struct first_row c = {{NULL}}, w = {{NULL}};
	double distinct, builds, fresh, cached, seconds, wall;

	/*
	 * Builds are shared by every run in the file and a build is recorded again
	 * (cached) when a later run reuses it: the run's own are those of the
	 * variants it evaluated, recorded while it ran.
	 */
	if (db_exec_callback(
		db,
		"SELECT count(DISTINCT CASE WHEN b.outcome = 'ok' THEN b.variant_id END),"
		" count(*), total(b.cached = 0), total(b.cached), total(b.seconds)"
		" FROM builds b, runs r WHERE r.id = ?1"
		" AND b.variant_id IN (SELECT variant_id FROM evals WHERE run_id = ?1)"
		" AND b.created_at >= r.started_at"
		" AND (r.finished_at IS NULL OR b.created_at <= r.finished_at)",
		first_row, &c, id, (const char *)NULL) < 0 ||
	    db_exec_callback(db,
	                     "SELECT (julianday(coalesce(finished_at,"
	                     " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) - julianday(started_at))"
	                     " * 86400 FROM runs WHERE id = ?1",
	                     first_row, &w, id, (const char *)NULL) < 0) {
		first_row_release(&c);
		return -1;
	}
	distinct = col(&c, 0);
	builds = col(&c, 1);
	fresh = col(&c, 2);
	cached = col(&c, 3);
	seconds = col(&c, 4);
	wall = col(&w, 0);
	printf("compiled    %.0f distinct variant%s: %.0f build%s, %.0f compiled", distinct,
	       distinct == 1 ? "" : "s", builds, builds == 1 ? "" : "s", fresh);
	if (fresh > 0 && seconds > 0)
		printf(" in %.1f s of compile time (%.2f builds/s per job)", seconds,
		       fresh / seconds);
	printf(", %.0f from the cache\n", cached);
	if (isfinite(wall) && wall >= 1)
		printf("wall time   %.1f s, %.2f variants/s evaluated\n", wall,
		       (double)evaluated / wall);
	first_row_release(&c);
	first_row_release(&w);
	return 0;
}

static int print_elite(struct db *db, const struct db_run *run, const char *id)
{
	struct first_row n = {{NULL}};
	struct ranking r;
	long long count;
	size_t i;

	if (db_exec_callback(
		db,
		"SELECT count(*), max(generation) FROM elite WHERE run_id = ?1"
		" AND generation = (SELECT max(generation) FROM elite WHERE run_id = ?1)",
		first_row, &n, id, (const char *)NULL) < 0)
		return -1;
	count = n.v[0] ? strtoll(n.v[0], NULL, 10) : 0;
	if (!count) {
		printf("elite       none%s\n",
		       !run->gpu && !run->replay_of ? " (nothing was timed: no GPU)" : "");
		first_row_release(&n);
		return 0;
	}
	printf("elite       generation %s, best first\n", n.v[1]);
	first_row_release(&n);
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

static int show_run(struct db *db, long long run_id)
{
	struct db_run r;
	struct first_row gen = {{NULL}};
	struct export_shape *shapes = NULL;
	long long counts[OUTCOME_COUNT], evaluated = 0;
	size_t nshapes = 0, i, w = 0;
	char id[32];
	int rc = -1, o;

	if (db_run_get(db, run_id, &r) < 0)
		return -1;
	snprintf(id, sizeof(id), "%lld", run_id);
	printf("run %lld (%s), started %s%s%s\n", r.id, r.status, r.started_at,
	       r.finished_at ? ", finished " : "", r.finished_at ? r.finished_at : "");
	printf("command     %s\n", r.command);
	printf("config      %s\n", nn(r.config_path, "(none)"));
	printf("template    %s, hash %s\n", r.template_name, r.template_hash);
	printf("device      %s, driver %s, arch %s, NVRTC %s\n", r.device, r.driver, r.arch,
	       r.nvrtc);
	printf("strategy    %s, seed %llu, population %d\n", r.strategy, r.seed, r.population);
	if (db_exec_callback(db,
	                     "SELECT max(g) FROM (SELECT max(generation) AS g FROM population"
	                     " WHERE run_id = ?1 UNION ALL SELECT max(generation) FROM evals"
	                     " WHERE run_id = ?1)",
	                     first_row, &gen, id, (const char *)NULL) < 0)
		goto out;
	printf("generations %lld done of %d\n", gen.v[0] ? strtoll(gen.v[0], NULL, 10) + 1 : 0,
	       r.generations);
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
	if (print_compiles(db, id, evaluated) < 0 || print_elite(db, &r, id) < 0)
		goto out;
	rc = 0;
out:
	export_shapes_free(shapes, nshapes);
	first_row_release(&gen);
	db_run_release(&r);
	return rc;
}

/* ------------------------------------------------------------------- cmd */

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
	char *end;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			errno = 0;
			run = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || run < 1) {
				error("--run needs a positive integer, got '%s'", optarg);
				goto usage;
			}
			break;
		case 'h':
			fputs(cmd_find("show")->usage, stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc)
		variant = argv[optind++];
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		goto usage;
	}
	if (variant && run) {
		error("give a variant or --run, not both");
		goto usage;
	}

	rc = export_open(g->db_path, run, &db, variant ? NULL : &run);
	if (rc)
		return rc > 0 ? EX_NOINPUT : EX_DATAERR;
	rc = variant ? show_variant(db, variant) : show_run(db, run);
	db_close(db);
	if (rc < 0)
		return EX_DATAERR;
	return cmd_flush_stdout();

usage:
	fputs(cmd_find("show")->usage, stderr);
	return EX_USAGE;
}
