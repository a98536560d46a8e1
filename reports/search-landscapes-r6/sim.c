/* Fast simulator: the search API against a recording, no pipeline. CURVE=K (round 10) also prints the
 * mean best-found / optimum over evaluations 1-K (a run that reached the target carries its best on). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "tuner/config.h"
#include "tuner/evolve.h"
#include "tuner/space.h"
#include "tuner/common.h"

struct rec { char *params; int ok; double fit; };
static struct rec *recs; static size_t nrecs;
static int cmp(const void *a, const void *b) { return strcmp(((const struct rec*)a)->params, ((const struct rec*)b)->params); }

int main(int argc, char **argv)
{
	struct config cfg; sqlite3 *db; sqlite3_stmt *st;
	const char *conf = argv[1], *dbp = argv[2], *strategy = argv[3];
	int seeds = atoi(argv[4]), pop = atoi(argv[5]);
	double within = argc > 6 ? atof(argv[6]) : 0.02;
	int verbose = argc > 7 ? atoi(argv[7]) : 0;
	double opt = 0; size_t cap = 0;
	if (config_load(conf, &cfg) < 0) return 1;
	{ char uri[4096]; snprintf(uri, sizeof uri, "file:%s?immutable=1", dbp); sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL); }
	sqlite3_prepare_v2(db, "SELECT v.params, e.outcome, e.fitness FROM evals e JOIN variants v ON v.id = e.variant_id WHERE e.run_id = 1", -1, &st, NULL);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (nrecs == cap) { cap = cap ? 2*cap : 1024; recs = realloc(recs, cap*sizeof(*recs)); }
		recs[nrecs].params = strdup((const char*)sqlite3_column_text(st, 0));
		recs[nrecs].ok = !strcmp((const char*)sqlite3_column_text(st,1), "ok") && sqlite3_column_type(st,2) != SQLITE_NULL;
		recs[nrecs].fit = recs[nrecs].ok ? sqlite3_column_double(st, 2) : 0;
		if (recs[nrecs].fit > opt) opt = recs[nrecs].fit;
		nrecs++;
	}
	qsort(recs, nrecs, sizeof(*recs), cmp);
	double target = opt * (1 - within);
	int *res = calloc(seeds, sizeof(int));
	size_t ccap = pop; if (getenv("FIRST") && (size_t)atoi(getenv("FIRST")) > ccap) ccap = atoi(getenv("FIRST")); struct candidate *c = calloc(ccap, sizeof(*c));
	double tprop = 0; long nprop = 0; int K = getenv("CURVE") ? atoi(getenv("CURVE")) : 0; double *curve = calloc(K + 2, sizeof(double));
	int first = getenv("SEED") ? atoi(getenv("SEED")) : 1; for (int seed = first; seed < first + seeds; seed++) {
		struct search *s = search_new(&cfg, strategy, seed);
		int evals = 0, found = 0; double bsf = 0;
		for (int gen = 0; !found && evals < 200000; gen++) {
			double t0 = now_seconds();
			size_t want = (gen == 0 && getenv("FIRST")) ? (size_t)atoi(getenv("FIRST")) : (size_t)pop;
			size_t n = search_propose(s, gen, c, want, NULL, NULL);
			tprop += now_seconds() - t0; nprop += n;
			if (!n) break;
			for (size_t i = 0; i < n; i++) {
				char *p = space_format(&cfg.fam, &c[i].va);
				struct rec key = {p, 0, 0}, *r = bsearch(&key, recs, nrecs, sizeof(*recs), cmp);
				struct member m; memset(&m, 0, sizeof(m));
				evals++;
				if (r && r->ok && r->fit > bsf) bsf = r->fit;
				if (evals <= K) curve[evals] += bsf / opt;
				if (r && r->ok) { m.va = c[i].va; m.fitness = m.fitness_lo = m.fitness_hi = r->fit; search_observe(s, &c[i].va, &m);
					if (!found && r->fit >= target) { found = evals; }
				} else search_observe(s, &c[i].va, NULL);
				if (verbose > 1) printf("  %d %s %s %.3f\n", evals, evolve_origin_name(c[i].origin), p, r ? r->fit : -1);
				free(p);
			}
		}
		for (int k = evals + 1; k <= K; k++) curve[k] += bsf / opt;
		res[seed-first] = found ? found : 999999;
		search_free(s);
	}
	int *sorted = malloc(seeds*sizeof(int)); memcpy(sorted, res, seeds*sizeof(int));
	for (int i = 0; i < seeds; i++) for (int j = i+1; j < seeds; j++) if (sorted[j] < sorted[i]) { int t = sorted[i]; sorted[i] = sorted[j]; sorted[j] = t; }
	double med = seeds % 2 ? sorted[seeds/2] : (sorted[seeds/2-1]+sorted[seeds/2])/2.0;
	printf("%s %s: median %.1f max %d q1 %d q3 %d  (%.1f us/proposal)", conf, strategy, med, sorted[seeds-1], sorted[seeds/4], sorted[3*seeds/4], 1e6*tprop/nprop);
	if (verbose) { printf(" |"); for (int i = 0; i < seeds; i++) printf(" %d", res[i]); }
	printf("\n");
	if (K) { printf("curve"); for (int k = 1; k <= K; k++) printf(" %.4f", curve[k] / seeds); printf("\n"); }
	return 0;
}
