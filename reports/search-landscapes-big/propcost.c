/*
 * The cost of a proposal on a recorded landscape ("Large declared spaces" in
 * ../search-landscapes.md): the search API in batches of POP for GENS
 * generations, one seed, answered from the recording as sim.c answers
 * (../search-landscapes-r6/sim.c), no pipeline. Prints the first proposal's
 * time (it lists a big space's valid points), the mean and the worst of the
 * others, the generations that came up short, the evaluations the recording
 * did not hold, and a checksum of every proposal (the same for two builds that
 * propose the same).
 *
 *   cc -O2 -I$W/include propcost.c $W/build/libtuner.a -lyaml -lsqlite3 -ljansson -lz \
 *       -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -ldl -lpthread -lm \
 *       -o propcost
 *   propcost LANDSCAPE.yaml LANDSCAPE.db STRATEGY GENS POP SEED
 */
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
	int gens = atoi(argv[4]), pop = atoi(argv[5]), seed = atoi(argv[6]);
	double opt = 0, t0, tload; size_t cap = 0;
	t0 = now_seconds();
	if (config_load(conf, &cfg) < 0) return 1;
	tload = now_seconds() - t0;
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
	struct candidate *c = calloc(pop, sizeof(*c));
	double tprop = 0, tmax = 0, first = 0, best = 0;
	int shorts = 0, evals = 0, found = 0, unrec = 0, g;
	unsigned long long sum = 1469598103934665603ULL;
	struct search *s = search_new(&cfg, strategy, seed);
	for (g = 0; g < gens; g++) {
		double t = now_seconds(), dt;
		size_t n = search_propose(s, g, c, pop, NULL, NULL);
		dt = now_seconds() - t;
		if (g == 0) first = dt; else { tprop += dt; if (dt > tmax) tmax = dt; }
		if (n < (size_t)pop) shorts++;
		if (!n) break;
		for (size_t i = 0; i < n; i++) {
			char *p = space_format(&cfg.fam, &c[i].va);
			struct rec key = {p, 0, 0}, *r = bsearch(&key, recs, nrecs, sizeof(*recs), cmp);
			struct member m; memset(&m, 0, sizeof(m));
			evals++;
			for (const char *q = p; *q; q++) sum = (sum ^ (unsigned char)*q) * 1099511628211ULL;
			if (!r) unrec++;
			if (r && r->ok) { m.va = c[i].va; m.fitness = m.fitness_lo = m.fitness_hi = r->fit; search_observe(s, &c[i].va, &m);
				if (r->fit > best) best = r->fit;
				if (!found && r->fit >= opt * 0.98) found = evals;
			} else search_observe(s, &c[i].va, NULL);
			free(p);
		}
	}
	printf("%s %s seed %d: config %.2f s; %d gens, %d short, %d evals (%d unrecorded); first proposal %.1f ms, later %.1f ms mean %.1f ms max; best %.3f of %.3f; within 2%% at %d; proposals %016llx\n",
	       conf, strategy, seed, tload, g, shorts, evals, unrec, 1e3 * first, g > 1 ? 1e3 * tprop / (g - 1) : 0, 1e3 * tmax, best, opt, found, sum);
	search_free(s);
	return 0;
}
