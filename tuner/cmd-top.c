/* tuner top: rank a run's elite by geometric-mean speedup, as a table or JSON. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/export.h"

/* printf("%*.*f") of v, or "-" in the same width when it is NAN. */
static void print_num(int width, int prec, double v, const char *suffix)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof(buf), "%.*f%s", prec, v, suffix);
	else
		snprintf(buf, sizeof(buf), "-");
	printf("%*s", width, buf);
}

static void print_interval(int width, int prec, double lo, double hi)
{
	char buf[96];

	if (isfinite(lo) && isfinite(hi))
		snprintf(buf, sizeof(buf), "[%.*f, %.*f]", prec, lo, prec, hi);
	else
		snprintf(buf, sizeof(buf), "-");
	printf("%-*s", width, buf);
}

static void print_timings(const struct ranking *r, const struct export_timing *t)
{
	int wn = (int)strlen("shape"), wd = (int)strlen("dims");
	size_t i;

	for (i = 0; i < r->nshapes; i++) {
		if ((int)strlen(r->shapes[i].name) > wn)
			wn = (int)strlen(r->shapes[i].name);
		if ((int)strlen(r->shapes[i].dims) > wd)
			wd = (int)strlen(r->shapes[i].dims);
	}
	printf("        %-*s  %-*s  %10s  %-22s  %8s  %8s  %8s\n", wn, "shape", wd, "dims",
	       "median us", "95% interval us", "TFLOP/s", "GB/s", "speedup");
	for (i = 0; i < r->nshapes; i++) {
		printf("        %-*s  %-*s  ", wn, r->shapes[i].name, wd, r->shapes[i].dims);
		print_num(10, 2, t[i].median_us, "");
		printf("  ");
		print_interval(22, 2, t[i].ci_lo_us, t[i].ci_hi_us);
		printf("  ");
		print_num(8, 2, t[i].tflops, "");
		printf("  ");
		print_num(8, 1, t[i].gbps, "");
		printf("  ");
		print_num(8, 3, t[i].speedup, "x");
		printf("\n");
	}
}

/*
 * Whether b, ranked below a in the elite, is not told apart from it: the
 * intervals overlap, or the run listed b below a faster measurement (the
 * elite's report order, evolve_report_order, with the run's margin).
 */
static int tied(const struct export_entry *a, const struct export_entry *b)
{
	return a->elite && (b->fitness > a->fitness || !(a->fitness_lo > b->fitness_hi));
}

/*
 * Why a correct variant ranked among the elite is not in it, where the reason is
 * the one the measurements show: slower than the baseline beyond noise (the
 * intervals apart) on two or more shapes, which the elite's admission refuses
 * whatever the geometric mean (evolve_admits).
 */
static size_t print_regressions(const struct ranking *r, const struct export_entry *e)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, n = 0;

	for (i = 0; i < r->nshapes; i++) {
		if (!e->t[i].measured || !r->base[i].measured ||
		    !(e->t[i].ci_lo_us > r->base[i].ci_hi_us))
			continue;
		sb_addf(&sb, "%s%s", n ? ", " : "", r->shapes[i].name);
		n++;
	}
	if (n >= 2)
		printf(
		    "        slower than the baseline beyond noise on %zu shapes (%s): the elite\n"
		    "        admits no variant that regresses on two or more ('tuner export\n"
		    "        --per-shape' gives each shape its fastest)\n",
		    n, sb.buf);
	sb_release(&sb);
	return n;
}

/*
 * Why a correct variant that regresses on fewer than two shapes is not in the
 * elite: the elite is full, and the admission takes a variant only when it beats
 * the weakest member by the run's margin beyond noise (evolve_admits); a member
 * it displaced was the weakest at the time.
 */
static void print_outranked(const struct ranking *r)
{
	const struct export_entry *weakest = NULL;
	size_t i, n = 0;

	for (i = 0; i < r->n; i++)
		if (r->v[i].elite) {
			n++;
			if (!weakest || r->v[i].fitness < weakest->fitness)
				weakest = &r->v[i];
		}
	if (weakest)
		printf("        the elite is full (%zu member%s) and takes a variant only when it\n"
		       "        beats the weakest, rank %d at x%.3f [%.3f, %.3f], by the run's\n"
		       "        margin beyond noise\n",
		       n, n == 1 ? "" : "s", weakest->rank, weakest->fitness, weakest->fitness_lo,
		       weakest->fitness_hi);
}

static void print_table(const struct ranking *r, size_t k)
{
	size_t i;

	printf("run %lld: %s on %s (%s), %zu shape%s", r->run.id, r->run.template_name,
	       r->run.device, r->run.arch, r->nshapes, r->nshapes == 1 ? "" : "s");
	if (r->elite_generation >= 0)
		printf(", elite of generation %d", r->elite_generation);
	printf("\n");
	if (r->baseline_id)
		printf("baseline: variant %lld (%.12s), %s\n", r->baseline_id, r->baseline_hash,
		       r->baseline_params);
	else
		printf("baseline: none recorded, so no speedups\n");
	for (i = 0; i < r->n; i++) {
		const struct export_entry *e = &r->v[i];

		printf("\nrank %d  speedup ", e->rank);
		print_num(0, 3, e->fitness, "x");
		printf(" ");
		print_interval(0, 3, e->fitness_lo, e->fitness_hi);
		printf("  variant %lld (%.12s)%s\n", e->variant_id, e->hash,
		       e->elite ? "" : ", correct, not in the elite");
		if (i && e->elite && tied(&r->v[i - 1], e))
			printf("        within noise of rank %d: tied members are listed by "
			       "parameters\n",
			       e->rank - 1);
		if (!e->elite && print_regressions(r, e) < 2)
			print_outranked(r);
		printf("        %s\n", e->params);
		print_timings(r, e->t);
	}
	if (r->n < k)
		printf("\n(%zu ranked: the run has no more correct timed variants)\n", r->n);
}

const struct cmd cmd_top_entry = {
    .name = "top",
    .fn = cmd_top,
    .flags = READ_DB,
    .summary = "rank a run's elite by geometric-mean speedup",
    .usage = "usage: tuner top [--k N] [--run ID] [--json]\n"
	     "\n"
	     "The best K variants of a run (its final elite, then its other correct\n"
	     "variants by fitness): rank, params, geometric-mean speedup over the\n"
	     "baseline with its 95% interval, and each shape's median time and\n"
	     "speedup. The best measured is rank 1; below it, elite members within\n"
	     "noise of each other (the run's margin, or overlapping intervals) are\n"
	     "listed by their parameters, so two runs that found them agree. A\n"
	     "correct variant ranked after the elite says why it is not in it.\n"
	     "\n"
	     "  --k N        how many, 1 to 100000 (default 3)\n"
	     "  --run ID     the run (default: the latest completed run)\n"
	     "  --json       one JSON document on stdout\n"
	     "  -h, --help   print this help\n",
};

int cmd_top(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"k", required_argument, NULL, 'k'},
	    {"run", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	long long k = 3, run = 0;
	int json = 0, c, rc;
	struct db *db;
	struct ranking r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (cmd_parse_range("--k", optarg, 1, 100000, &k) < 0)
				return cmd_usage(g, EX_USAGE);
			break;
		case 'r':
			if (cmd_parse_range("--run", optarg, 1, LLONG_MAX, &run) < 0)
				return cmd_usage(g, EX_USAGE);
			break;
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
	if ((rc = cmd_pick_run(db, run, 1, &run)) != 0) {
		db_close(db);
		return rc;
	}
	if (export_rank(db, run, (size_t)k, &r) < 0) {
		db_close(db);
		return EX_DATAERR;
	}
	db_close(db);
	if (!r.n) {
		char why[128];

		error("%s: nothing to rank", export_empty_reason(&r, why, sizeof(why)));
		ranking_release(&r);
		return EX_DATAERR;
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;

		rc = export_json(&r, &sb);
		if (!rc)
			fwrite(sb.buf, 1, sb.len, stdout);
		sb_release(&sb);
	} else {
		print_table(&r, (size_t)k);
	}
	ranking_release(&r);
	return rc ? EX_DATAERR : 0;
}
