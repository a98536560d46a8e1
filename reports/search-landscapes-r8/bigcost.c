/* Round 8: the cost of a proposal in a space too big to enumerate (20^5 = 3.2M declared points, about 2%
 * valid, as in test_evolve's test_sparse_big_space_fills_generations): 25 generations of 16, a smooth
 * fitness. Build against libtuner.a as run.sh builds sim.c; usage: bigcost STRATEGY [CONSTRAINT]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tuner/config.h"
#include "tuner/evolve.h"
#include "tuner/expr.h"
#include "tuner/common.h"
int main(int argc, char **argv)
{
	static const char *const names[] = {"P", "Q", "R", "S", "T"};
	static long long dom[20];
	static struct problem none = {.ndims = 0};
	struct config big; struct candidate cands[16]; struct expr_err err; struct member m;
	size_t i, n; int gen;
	for (i = 0; i < 20; i++) dom[i] = (long long)i;
	memset(&big, 0, sizeof(big));
	big.fam.name = "sparse"; big.fam.problem = &none; big.fam.nparams = 5;
	for (i = 0; i < 5; i++) { big.fam.params[i].name = (char *)names[i]; big.fam.params[i].values = dom; big.fam.params[i].nvalues = 20; }
	big.fam.constraints = calloc(1, sizeof(*big.fam.constraints));
	big.fam.constraints[0].e = expr_parse(argc > 2 ? argv[2] : "P + Q + R + S + T < 22", &err);
	big.fam.nconstraints = 1; big.elite = 3; big.margin = 0.03; big.population = 16;
	struct search *s = search_new(&big, argv[1], 7);
	double t0 = now_seconds(), tp = 0;
	for (gen = 0; gen < 25; gen++) {
		double t1 = now_seconds();
		n = search_propose(s, gen, cands, 16, NULL, NULL);
		tp += now_seconds() - t1;
		for (i = 0; i < n; i++) {
			memset(&m, 0, sizeof(m)); m.va = cands[i].va; m.nshapes = 1;
			double f = 1.0 / (1 + abs((int)cands[i].va.v[0] - 7) + abs((int)cands[i].va.v[1] - 3));
			m.fitness = m.fitness_lo = m.fitness_hi = m.speedup[0] = m.speedup_lo[0] = m.speedup_hi[0] = f;
			search_observe(s, &cands[i].va, &m);
		}
	}
	printf("%s: 25 proposals, %.1f ms each (total %.2f s)\n", argv[1], 1e3 * tp / 25, now_seconds() - t0);
	return 0;
}
