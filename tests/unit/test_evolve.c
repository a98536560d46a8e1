/* Unit tests for the search strategies and the elite admission rule, on a synthetic landscape. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/evolve.h"
#include "tuner/rng.h"

/* ------------------------------------------------ synthetic landscape */

/*
 * Four params, 8 x 8 x 8 x 4 = 2048 points, two shapes (N = 128 and N = 96).
 * Valid: A * C <= 4096, C <= N on every shape (so C <= 96), (B + D) % 5 != 0.
 * Performance is unimodal and separable in the domain indices, with its single
 * optimum at A=16 B=5 C=64 D=3; every step towards it gains more than 5%.
 */
#define NA    8
#define NB    8
#define NC    8
#define ND    4
#define SPACE (NA * NB * NC * ND)

static long long dom_a[NA] = {1, 2, 4, 8, 16, 32, 64, 128};
static long long dom_b[NB] = {0, 1, 2, 3, 4, 5, 6, 7};
static long long dom_c[NC] = {16, 32, 48, 64, 80, 96, 112, 128};
static long long dom_d[ND] = {1, 2, 3, 4};
static const int opt_idx[4] = {4, 5, 3, 2};

static struct problem syn_problem = {.dims = {(char *)"N"}, .ndims = 1};

static const char *const syn_constraints[] = {"A * C <= 4096", "C <= N", "(B + D) % 5 != 0"};

static struct config cfg;

static void config_build(void)
{
	static const char *const names[] = {"A", "B", "C", "D"};
	long long *doms[] = {dom_a, dom_b, dom_c, dom_d};
	size_t sizes[] = {NA, NB, NC, ND};
	struct expr_err err;
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fam.name = "synthetic";
	cfg.fam.problem = &syn_problem;
	cfg.fam.nparams = 4;
	for (i = 0; i < 4; i++) {
		cfg.fam.params[i].name = (char *)names[i];
		cfg.fam.params[i].values = doms[i];
		cfg.fam.params[i].nvalues = sizes[i];
	}
	cfg.fam.constraints = calloc(ARRAY_SIZE(syn_constraints), sizeof(*cfg.fam.constraints));
	assert_non_null(cfg.fam.constraints);
	for (i = 0; i < ARRAY_SIZE(syn_constraints); i++) {
		cfg.fam.constraints[i].e = expr_parse(syn_constraints[i], &err);
		if (!cfg.fam.constraints[i].e)
			fail_msg("cannot parse '%s': %s", syn_constraints[i], err.msg);
	}
	cfg.fam.nconstraints = ARRAY_SIZE(syn_constraints);
	/* baseline A=4 B=1 C=32 D=1: valid, far from the optimum */
	cfg.fam.baseline[0] = 4;
	cfg.fam.baseline[1] = 1;
	cfg.fam.baseline[2] = 32;
	cfg.fam.baseline[3] = 1;
	cfg.shapes[0].name = "wide";
	cfg.shapes[0].dims[0] = 128;
	cfg.shapes[1].name = "narrow";
	cfg.shapes[1].dims[0] = 96;
	cfg.nshapes = 2;
	cfg.elite = 3;
	cfg.margin = 0.03;
	cfg.population = 16;
	cfg.strategy = "evolve";
}

static int setup(void **state)
{
	config_build();
	return 0;
}

static int teardown(void **state)
{
	size_t i;

	for (i = 0; i < cfg.fam.nconstraints; i++)
		expr_free(cfg.fam.constraints[i].e);
	free(cfg.fam.constraints);
	set_error_routine(NULL);
	return 0;
}

static int index_of(const long long *dom, size_t n, long long v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (dom[i] == v)
			return (int)i;
	return -1;
}

/* Domain indices of va; 0 when a value lies outside its domain. */
static int indices(const struct variant *va, int idx[4])
{
	idx[0] = index_of(dom_a, NA, va->v[0]);
	idx[1] = index_of(dom_b, NB, va->v[1]);
	idx[2] = index_of(dom_c, NC, va->v[2]);
	idx[3] = index_of(dom_d, ND, va->v[3]);
	return idx[0] >= 0 && idx[1] >= 0 && idx[2] >= 0 && idx[3] >= 0;
}

/* The point's index in space_point order (last param fastest), -1 outside the domain. */
static int point_index(const struct variant *va)
{
	int idx[4];

	if (!indices(va, idx))
		return -1;
	return ((idx[0] * NB + idx[1]) * NC + idx[2]) * ND + idx[3];
}

static void point_at(int index, struct variant *va)
{
	memset(va, 0, sizeof(*va));
	va->v[3] = dom_d[index % ND];
	index /= ND;
	va->v[2] = dom_c[index % NC];
	index /= NC;
	va->v[1] = dom_b[index % NB];
	index /= NB;
	va->v[0] = dom_a[index];
}

/* The constraints again, written in C: an independent check of what the search proposes. */
static int valid(const struct variant *va)
{
	return va->v[0] * va->v[2] <= 4096 && va->v[2] <= 96 && (va->v[1] + va->v[3]) % 5 != 0;
}

static void baseline_va(struct variant *va)
{
	memset(va, 0, sizeof(*va));
	memcpy(va->v, cfg.fam.baseline, 4 * sizeof(long long));
}

static int is_optimum(const struct variant *va)
{
	int idx[4];

	return indices(va, idx) && idx[0] == opt_idx[0] && idx[1] == opt_idx[1] &&
	       idx[2] == opt_idx[2] && idx[3] == opt_idx[3];
}

static double perf(const struct variant *va)
{
	double p = 1;
	int idx[4], i;

	assert_true(indices(va, idx));
	for (i = 0; i < 4; i++)
		p /= 1 + 0.1 * abs(idx[i] - opt_idx[i]);
	return p;
}

/* What the pipeline would measure: speedups over the baseline with a +-1% interval. */
static void measure(const struct variant *va, struct member *m)
{
	struct variant base;
	double ratio, logsum = 0;
	size_t i;

	baseline_va(&base);
	ratio = perf(va) / perf(&base);
	memset(m, 0, sizeof(*m));
	m->va = *va;
	m->id = point_index(va);
	m->nshapes = 2;
	for (i = 0; i < 2; i++) {
		m->speedup[i] = i ? pow(ratio, 1.1) : ratio;
		m->speedup_lo[i] = m->speedup[i] * 0.99;
		m->speedup_hi[i] = m->speedup[i] * 1.01;
		logsum += log(m->speedup[i]);
	}
	m->fitness = exp(logsum / 2);
	m->fitness_lo = m->fitness * 0.99;
	m->fitness_hi = m->fitness * 1.01;
}

/* The database, as far as the search sees it: which points were evaluated or proposed. */
struct fake_db {
	unsigned char seen[SPACE];
	int calls;
};

static int db_seen(void *ctx, const struct variant *va)
{
	struct fake_db *db = ctx;
	int i = point_index(va);

	db->calls++;
	return i >= 0 && db->seen[i];
}

/* Gate (the constraints) and measure one candidate, then tell the search. */
static void evaluate(struct search *s, struct fake_db *db, const struct candidate *c)
{
	struct member m;
	int i = point_index(&c->va);

	assert_true(i >= 0);
	assert_false(db->seen[i]);
	db->seen[i] = 1;
	if (!valid(&c->va)) {
		search_observe(s, &c->va, NULL);
		return;
	}
	measure(&c->va, &m);
	search_observe(s, &c->va, &m);
}

static int count_valid(void)
{
	struct variant va;
	int i, n = 0;

	for (i = 0; i < SPACE; i++) {
		point_at(i, &va);
		n += valid(&va);
	}
	return n;
}

/*
 * Run a strategy until it proposes the optimum; the number of evaluations
 * that took (the optimum's included), or budget + 1 if it did not within budget.
 */
static int evaluations_to_optimum(const char *strategy, unsigned long long seed, int budget)
{
	struct candidate cands[16];
	struct fake_db *db = calloc(1, sizeof(*db));
	struct search *s = search_new(&cfg, strategy, seed);
	int gen, evals = 0;
	size_t i, n;

	assert_non_null(db);
	assert_non_null(s);
	for (gen = 0; evals < budget; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, db);
		if (!n)
			break;
		for (i = 0; i < n && evals < budget; i++) {
			evals++;
			if (is_optimum(&cands[i].va))
				goto out;
			evaluate(s, db, &cands[i]);
		}
	}
	evals = budget + 1;
out:
	search_free(s);
	free(db);
	return evals;
}

static int int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* ----------------------------------------------------------- exhaustive */

/* Every point of the declared space exactly once (baseline first), then nothing. */
static void test_exhaustive_every_point_once(void **state)
{
	struct candidate cands[7];
	struct fake_db db;
	struct search *s = search_new(&cfg, "exhaustive", 1);
	struct variant va;
	int count[SPACE] = {0}, order[SPACE], total = 0, gen, i;
	size_t j, n;

	memset(&db, 0, sizeof(db));
	for (gen = 0; gen < 1000; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db);
		if (!n)
			break;
		assert_true(n <= ARRAY_SIZE(cands));
		for (j = 0; j < n; j++) {
			i = point_index(&cands[j].va);
			assert_true(i >= 0);
			assert_int_equal(cands[j].origin, total ? ORIGIN_SWEEP : ORIGIN_BASELINE);
			assert_int_equal(cands[j].parent_a, -1);
			assert_int_equal(cands[j].parent_b, -1);
			order[total++] = i;
			count[i]++;
		}
	}
	assert_int_equal(total, SPACE);
	for (i = 0; i < SPACE; i++)
		assert_int_equal(count[i], 1);
	baseline_va(&va);
	assert_int_equal(order[0], point_index(&va));
	/* the rest in space_point order */
	for (i = 2; i < SPACE; i++)
		assert_true(order[i] > order[i - 1]);
	assert_int_equal(search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db), 0);
	search_free(s);
}

/* A sweep resumed against a database skips what it already holds. */
static void test_exhaustive_skips_seen(void **state)
{
	struct candidate cands[64];
	struct fake_db db;
	struct search *s = search_new(&cfg, "exhaustive", 1);
	int total = 0, i, gen;
	size_t j, n;

	memset(&db, 0, sizeof(db));
	for (i = 0; i < SPACE; i += 2)
		db.seen[i] = 1;
	for (gen = 0; (n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db)); gen++)
		for (j = 0; j < n; j++) {
			i = point_index(&cands[j].va);
			assert_int_equal(i % 2, 1);
			assert_false(db.seen[i]);
			db.seen[i] = 1;
			total++;
		}
	assert_int_equal(total, SPACE / 2);
	search_free(s);
}

/* --------------------------------------------------------------- random */

/* Valid on every shape, never seen, never twice, and in the end every valid unseen point. */
static void test_random_valid_and_unseen(void **state)
{
	struct candidate cands[5];
	struct fake_db db;
	struct search *s = search_new(&cfg, "random", 7);
	struct variant va;
	int proposed[SPACE] = {0}, total = 0, expect = 0, i, gen;
	size_t j, n;

	memset(&db, 0, sizeof(db));
	for (i = 0; i < SPACE; i += 3)
		db.seen[i] = 1;
	for (i = 0; i < SPACE; i++) {
		point_at(i, &va);
		expect += valid(&va) && !db.seen[i];
	}
	for (gen = 0; gen < 10000; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db);
		if (!n)
			break;
		for (j = 0; j < n; j++) {
			i = point_index(&cands[j].va);
			assert_true(i >= 0);
			assert_false(db.seen[i]);
			assert_false(proposed[i]);
			proposed[i] = 1;
			if (cands[j].origin == ORIGIN_BASELINE) {
				assert_int_equal(total, 0);
			} else {
				assert_int_equal(cands[j].origin, ORIGIN_RANDOM);
				/* C <= 96 comes from the shape N = 96: every shape counts */
				assert_true(valid(&cands[j].va));
			}
			total++;
			/* the search hears back only about some of them */
			if (gen % 2)
				evaluate(s, &db, &cands[j]);
		}
	}
	assert_true(gen < 10000);
	/* the baseline (valid, not seen) is one of them */
	baseline_va(&va);
	assert_true(proposed[point_index(&va)]);
	assert_int_equal(total, expect);
	search_free(s);
}

/* Random draws are spread over the space, not a scan in disguise. */
static void test_random_is_spread(void **state)
{
	struct candidate cands[40];
	struct search *s = search_new(&cfg, "random", 3);
	int a_seen[NA] = {0}, idx[4], distinct = 0;
	size_t j, n;

	n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
	assert_int_equal(n, ARRAY_SIZE(cands));
	for (j = 1; j < n; j++) {
		assert_true(indices(&cands[j].va, idx));
		if (!a_seen[idx[0]]++)
			distinct++;
	}
	/* A has 8 values, all allowed with some C: 39 uniform draws reach at least 5 */
	assert_true(distinct >= 5);
	search_free(s);
}

/* ------------------------------------------------------------ evolution */

/* On a single-optimum landscape both evolutions need far fewer evaluations than the space has. */
static void test_evolve_finds_optimum(void **state)
{
	static const char *const strategies[] = {"evolve", "evolve-rf", "evolve1"};
	enum { SEEDS = 15, BUDGET = 1500 };
	int evo[SEEDS], rnd[SEEDS], i, nvalid = count_valid();
	size_t k;
	double evo_mean, rnd_mean = 0;

	for (i = 0; i < SEEDS; i++) {
		rnd[i] = evaluations_to_optimum("random", 100 + (unsigned long long)i, BUDGET);
		rnd_mean += rnd[i];
	}
	rnd_mean /= SEEDS;
	qsort(rnd, SEEDS, sizeof(int), int_cmp);
	for (k = 0; k < ARRAY_SIZE(strategies); k++) {
		evo_mean = 0;
		for (i = 0; i < SEEDS; i++) {
			evo[i] = evaluations_to_optimum(strategies[k], 100 + (unsigned long long)i,
			                                BUDGET);
			evo_mean += evo[i];
		}
		evo_mean /= SEEDS;
		qsort(evo, SEEDS, sizeof(int), int_cmp);
		print_message("valid points %d of %d; evaluations to the optimum: %s median %d "
		              "mean %.1f max %d, random median %d mean %.1f\n",
		              nvalid, SPACE, strategies[k], evo[SEEDS / 2], evo_mean,
		              evo[SEEDS - 1], rnd[SEEDS / 2], rnd_mean);
		/* far fewer than the space: a fifth of the valid points at most */
		assert_true(evo[SEEDS / 2] * 5 < nvalid);
		assert_true(evo[SEEDS - 1] <= BUDGET);
		/* and clearly better than random search on average */
		assert_true(evo_mean * 1.5 < rnd_mean);
	}
}

/* Observe the synthetic measurements of everything proposed; fill log with the proposals. */
static size_t run_logged(const char *strategy, unsigned long long seed, int gens,
                         struct candidate *log, size_t cap)
{
	struct candidate cands[16];
	struct fake_db *db = calloc(1, sizeof(*db));
	struct search *s = search_new(&cfg, strategy, seed);
	size_t total = 0, i, n;
	int gen;

	assert_non_null(db);
	for (gen = 0; gen < gens; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, db);
		for (i = 0; i < n; i++) {
			assert_true(total < cap);
			log[total++] = cands[i];
			evaluate(s, db, &cands[i]);
		}
	}
	search_free(s);
	free(db);
	return total;
}

/* The same seed and the same observations give the same proposals; another seed does not. */
static void test_evolve_deterministic(void **state)
{
	static const char *const strategies[] = {"evolve", "evolve-rf", "evolve1"};
	static struct candidate a[200], b[200], c[200];
	size_t na, nb, nc, i, k;
	int differ;

	for (k = 0; k < ARRAY_SIZE(strategies); k++) {
		na = run_logged(strategies[k], 42, 8, a, ARRAY_SIZE(a));
		nb = run_logged(strategies[k], 42, 8, b, ARRAY_SIZE(b));
		nc = run_logged(strategies[k], 43, 8, c, ARRAY_SIZE(c));
		assert_int_equal(na, 8 * 16);
		assert_int_equal(nb, na);
		for (i = 0; i < na; i++) {
			assert_memory_equal(&a[i].va, &b[i].va, sizeof(a[i].va));
			assert_int_equal(a[i].origin, b[i].origin);
		}
		assert_int_equal(nc, na);
		for (i = 1, differ = 0; i < 16; i++)
			differ += memcmp(&a[i].va, &c[i].va, sizeof(a[i].va)) != 0;
		assert_true(differ > 8);
	}
}

/* A search rebuilt from the recorded evaluations proposes what the uninterrupted one would have. */
static void resume_reproduces(const char *strategy)
{
	static struct candidate log[5 * 16];
	struct candidate cands[16], again[16];
	struct fake_db *db = calloc(1, sizeof(*db)), *db2 = calloc(1, sizeof(*db2));
	struct search *s = search_new(&cfg, strategy, 11), *r;
	size_t total = 0, i, n, n2;
	struct member m;
	int gen;

	assert_non_null(db);
	assert_non_null(db2);
	for (gen = 0; gen < 5; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, db);
		for (i = 0; i < n; i++) {
			log[total++] = cands[i];
			evaluate(s, db, &cands[i]);
		}
	}
	/* the resumed process: a fresh search told every evaluation again, in order */
	r = search_new(&cfg, strategy, 11);
	for (i = 0; i < total; i++) {
		db2->seen[point_index(&log[i].va)] = 1;
		if (valid(&log[i].va)) {
			measure(&log[i].va, &m);
			search_observe(r, &log[i].va, &m);
		} else {
			search_observe(r, &log[i].va, NULL);
		}
	}
	n = search_propose(s, 5, cands, ARRAY_SIZE(cands), db_seen, db);
	n2 = search_propose(r, 5, again, ARRAY_SIZE(again), db_seen, db2);
	assert_int_equal(n, ARRAY_SIZE(cands));
	assert_int_equal(n2, n);
	for (i = 0; i < n; i++) {
		assert_memory_equal(&cands[i].va, &again[i].va, sizeof(cands[i].va));
		assert_int_equal(cands[i].origin, again[i].origin);
	}
	search_free(s);
	search_free(r);
	free(db);
	free(db2);
}

static void test_resume_reproduces(void **state)
{
	resume_reproduces("evolve");
	resume_reproduces("evolve-rf");
	resume_reproduces("evolve1");
}

/* --------------------------------------------------- evolve: the surrogate */

/* Its first generation covers every value of every param, not a random handful. */
static void test_evolve_design_covers(void **state)
{
	struct candidate cands[16];
	struct fake_db db;
	struct search *s = search_new(&cfg, "evolve", 3);
	int seen[4][8], idx[4], k;
	size_t i, n, nv[4] = {NA, NB, 6 /* C <= 96 */, ND};

	memset(&db, 0, sizeof(db));
	memset(seen, 0, sizeof(seen));
	n = search_propose(s, 0, cands, ARRAY_SIZE(cands), db_seen, &db);
	assert_int_equal(n, ARRAY_SIZE(cands));
	for (i = 0; i < n; i++) {
		assert_true(valid(&cands[i].va));
		assert_true(indices(&cands[i].va, idx));
		for (k = 0; k < 4; k++)
			seen[k][idx[k]]++;
	}
	for (k = 0; k < 4; k++)
		for (i = 0; i < nv[k]; i++)
			assert_true(seen[k][i] > 0);
	search_free(s);
}

/*
 * Results that arrive out of order (several GPUs racing): proposals are made
 * a few at a time while others are still out, and results come back shuffled.
 * Nothing is proposed twice, and the optimum is found about as fast.
 */
static int racing_to_optimum(const char *strategy, unsigned long long seed, int racing)
{
	enum { BATCH = 4, BUDGET = 1500 };
	struct candidate cands[BATCH], out[3 * BATCH];
	struct fake_db *db = calloc(1, sizeof(*db));
	struct search *s = search_new(&cfg, strategy, seed);
	struct rng r;
	size_t nout = 0, i, n;
	int evals = 0, call;

	assert_non_null(db);
	rng_seed(&r, seed);
	for (call = 0; evals < BUDGET; call++) {
		n = search_propose(s, call, cands, BATCH, db_seen, db);
		if (!n)
			break;
		for (i = 0; i < n; i++) {
			int pi = point_index(&cands[i].va);

			assert_false(db->seen[pi]); /* never proposed twice */
			db->seen[pi] = 1;
			evals++;
			if (is_optimum(&cands[i].va))
				goto out;
			out[nout++] = cands[i];
		}
		/* racing: the results of two batches stay out, the rest come back shuffled */
		while (nout > (racing ? 2 * BATCH : 0)) {
			struct member m;
			size_t k = racing ? (size_t)rng_below(&r, nout) : 0;

			if (valid(&out[k].va)) {
				measure(&out[k].va, &m);
				search_observe(s, &out[k].va, &m);
			} else {
				search_observe(s, &out[k].va, NULL);
			}
			out[k] = out[--nout];
		}
	}
	evals = BUDGET + 1;
out:
	search_free(s);
	free(db);
	return evals;
}

static void out_of_order(const char *strategy)
{
	enum { SEEDS = 11 };
	int inorder[SEEDS], racing[SEEDS], i;

	for (i = 0; i < SEEDS; i++) {
		inorder[i] = racing_to_optimum(strategy, 200 + (unsigned long long)i, 0);
		racing[i] = racing_to_optimum(strategy, 200 + (unsigned long long)i, 1);
	}
	qsort(inorder, SEEDS, sizeof(int), int_cmp);
	qsort(racing, SEEDS, sizeof(int), int_cmp);
	print_message("%s: evaluations to the optimum, batches of 4: in order median %d max %d, "
	              "racing median %d max %d\n",
	              strategy, inorder[SEEDS / 2], inorder[SEEDS - 1], racing[SEEDS / 2],
	              racing[SEEDS - 1]);
	assert_true(racing[SEEDS - 1] <= 1500);
	assert_true(racing[SEEDS / 2] <= inorder[SEEDS / 2] * 3 / 2 + 8);
}

static void test_evolve_out_of_order(void **state)
{
	out_of_order("evolve");
	out_of_order("evolve-rf");
}

/* Time 12 generations of 16 proposals on big, observed on a smooth landscape. */
static void proposal_cost(const struct config *big, const char *strategy, long long **doms,
                          const size_t *sizes)
{
	struct candidate cands[16];
	struct expr_err err;
	struct search *s = search_new(big, strategy, 1);
	unsigned long long valid_points = 0, p;
	size_t i, n, proposals = 0;
	double t0, secs = 0;
	int gen;

	for (gen = 0; gen < 12; gen++) {
		t0 = now_seconds();
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
		secs += now_seconds() - t0;
		proposals += n;
		for (i = 0; i < n; i++) {
			struct member m;
			double f = 1;
			int k;

			/* smooth, with an optimum inside: fitness falls with the distance to it */
			for (k = 0; k < 7; k++)
				f /= 1 + 0.05 *
				             fabs((double)cands[i].va.v[k] -
				                  (double)doms[k][sizes[k] / 2]) /
				             (double)(doms[k][sizes[k] - 1] + 1);
			memset(&m, 0, sizeof(m));
			m.va = cands[i].va;
			m.fitness = m.fitness_lo = m.fitness_hi = f;
			search_observe(s, &cands[i].va, &m);
		}
	}
	for (p = 0; p < 6ULL * 29 * 4 * 8 * 2 * 2; p++) {
		struct variant va;
		struct space_scope sc;
		long long v, ok = 1;

		space_point(&big->fam, p, &va);
		space_scope_init(&sc, big, &va, NULL);
		for (i = 0; i < 3 && ok; i++)
			assert_int_equal(expr_eval(big->fam.constraints[i].e, &sc.scope, &v, &err),
			                 0),
			    ok = v;
		valid_points += (unsigned long long)ok;
	}
	assert_int_equal(valid_points, 11130);
	print_message("%s: %zu proposals at %llu valid points: %.0f microseconds each\n", strategy,
	              proposals, valid_points, 1e6 * secs / (double)proposals);
	assert_int_equal(proposals, 12 * 16);
	/* a compile takes about a second: a proposal must stay far below (sanitizers included) */
	assert_true(secs / (double)proposals < 0.1);
	search_free(s);
}

/*
 * A space of 11130 valid points of 22272 (the dedispersion kernel's of the
 * benchmark hub): proposals stay cheap next to a compile. Prints the cost.
 */
static void test_evolve_proposal_cost(void **state)
{
	static long long bx[] = {1, 2, 4, 8, 16, 32}, tx[] = {1, 2, 3, 4},
			 ty[] = {1, 2, 3, 4, 5, 6, 7, 8}, st[] = {0, 1}, one[] = {1};
	static long long by[29];
	static const char *const cons[] = {"32 <= X * Y && X * Y <= 1024", "TX > 1 || SX == 0",
	                                   "TY > 1 || SY == 0"};
	const char *names[] = {"X", "Y", "Z", "TX", "TY", "SX", "SY"};
	long long *doms[] = {bx, by, one, tx, ty, st, st};
	static const char *const strategies[] = {"evolve", "evolve-rf"};
	size_t sizes[] = {6, 29, 1, 4, 8, 2, 2}, i, k;
	struct config big = cfg;
	struct expr_err err;

	for (i = 0; i < 29; i++)
		by[i] = 32 + 8 * (long long)i;
	memset(&big.fam, 0, sizeof(big.fam));
	big.fam.name = "big";
	big.fam.problem = cfg.fam.problem;
	big.fam.nparams = 7;
	for (i = 0; i < 7; i++) {
		big.fam.params[i].name = (char *)names[i];
		big.fam.params[i].values = doms[i];
		big.fam.params[i].nvalues = sizes[i];
		big.fam.baseline[i] = doms[i][0];
	}
	big.fam.baseline[0] = 8;
	big.fam.constraints = calloc(3, sizeof(*big.fam.constraints));
	assert_non_null(big.fam.constraints);
	for (i = 0; i < 3; i++) {
		big.fam.constraints[i].e = expr_parse(cons[i], &err);
		assert_non_null(big.fam.constraints[i].e);
	}
	big.fam.nconstraints = 3;
	for (k = 0; k < ARRAY_SIZE(strategies); k++)
		proposal_cost(&big, strategies[k], doms, sizes);
	for (i = 0; i < 3; i++)
		expr_free(big.fam.constraints[i].e);
	free(big.fam.constraints);
}

/* ------------------------------------------- evolve on a two-param plane */

/* A family of two params, X and Y, over the values given, without constraints. */
static struct config plane_config(long long *xs, size_t nx, long long *ys, size_t ny)
{
	struct config c = cfg;

	memset(&c.fam, 0, sizeof(c.fam));
	c.fam.name = "plane";
	c.fam.problem = cfg.fam.problem;
	c.fam.nparams = 2;
	c.fam.params[0].name = (char *)"X";
	c.fam.params[0].values = xs;
	c.fam.params[0].nvalues = nx;
	c.fam.params[1].name = (char *)"Y";
	c.fam.params[1].values = ys;
	c.fam.params[1].nvalues = ny;
	c.fam.baseline[0] = xs[0];
	c.fam.baseline[1] = ys[0];
	return c;
}

static void observe_fitness(struct search *s, const struct variant *va, double f)
{
	struct member m;

	memset(&m, 0, sizeof(m));
	m.va = *va;
	m.nshapes = 1;
	m.speedup[0] = m.speedup_lo[0] = m.speedup_hi[0] = f;
	m.fitness = m.fitness_lo = m.fitness_hi = f;
	search_observe(s, va, &m);
}

/* Domain steps between two points of the plane (values are their own positions there). */
static int plane_steps(const struct variant *a, const struct variant *b)
{
	return (int)(llabs(a->v[0] - b->v[0]) + llabs(a->v[1] - b->v[1]));
}

/* A smooth hill on the 64 x 64 plane, its top at (40, 20). */
static double hill(const struct variant *va)
{
	return 1 / (1 + 0.02 * (double)llabs(va->v[0] - 40) + 0.02 * (double)llabs(va->v[1] - 20));
}

/*
 * After the first design, a batch of evolve searches the neighbourhoods of the
 * best point and of the runner-up (the runner-up's nearest before the best's
 * farther ones), and keeps a quarter of its slots for expected improvement
 * anywhere: some of those lie beyond the local search's reach.
 */
static void test_evolve_runner_up_and_explore(void **state)
{
	static long long dom[64];
	struct candidate cands[16];
	struct variant best = {{0}}, second = {{0}};
	size_t i, n;
	int seed;

	for (i = 0; i < 64; i++)
		dom[i] = (long long)i;
	for (seed = 1; seed <= 5; seed++) {
		struct config c = plane_config(dom, 64, dom, 64);
		struct search *s = search_new(&c, "evolve", (unsigned long long)seed);
		double fb = -1, fs = -1, f;
		int near_second = 0, far = 0, last_near_best = -1, first_near_second = -1;

		n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < n; i++) {
			f = hill(&cands[i].va);
			if (f > fb) {
				second = best;
				fs = fb;
				best = cands[i].va;
				fb = f;
			} else if (f > fs) {
				second = cands[i].va;
				fs = f;
			}
			observe_fitness(s, &cands[i].va, f);
		}
		assert_true(plane_steps(&best, &second) > 2);
		n = search_propose(s, 1, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < n; i++) {
			int db = plane_steps(&cands[i].va, &best);
			int ds = plane_steps(&cands[i].va, &second);

			if (i < 12) {
				/* local: nearest first, the best's neighbours before the
				 * runner-up's */
				assert_true(db <= 3 || ds <= 3);
				if (ds == 1 && db > 1 && !near_second++)
					first_near_second = (int)i;
				if (db == 1)
					last_near_best = (int)i;
				if (db >= 2 && ds > 1)
					assert_true(near_second > 0);
			} else if (db > 3 && ds > 3) {
				far++;
			}
		}
		assert_true(last_near_best >= 0);
		assert_true(near_second > 0);
		assert_true(last_near_best < first_near_second);
		assert_true(far > 0);
		search_free(s);
	}
}

/* Trailing zero bits of v > 0. */
static int tz(long long v)
{
	int n = 0;

	while (!(v & 1)) {
		v >>= 1;
		n++;
	}
	return n;
}

/*
 * A size in steps of 16 whose speed goes with its alignment (a block of 512
 * threads is fast, 496 and 528 are not), as on a GPU: evolve models alignment
 * beside the domain position, so it finds the best size in a few batches,
 * where its domain neighbours say nothing about it.
 */
static void test_evolve_alignment(void **state)
{
	enum { SEEDS = 9, BUDGET = 1024 };
	static long long xs[64], ys[4] = {1, 2, 3, 4};
	struct candidate cands[16];
	int evals[SEEDS], seed;
	size_t i, n;

	for (i = 0; i < 64; i++)
		xs[i] = 16 * (long long)(i + 1);
	for (seed = 0; seed < SEEDS; seed++) {
		struct config c = plane_config(xs, 64, ys, 4);
		struct search *s = search_new(&c, "evolve", 300 + (unsigned long long)seed);
		int gen, k = 0, found = 0;

		for (gen = 0; !found && k < BUDGET; gen++) {
			n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
			assert_true(n > 0);
			for (i = 0; i < n && !found; i++) {
				long long x = cands[i].va.v[0], y = cands[i].va.v[1];

				k++;
				found = x == 512 && y == 3;
				observe_fitness(s, &cands[i].va,
				                pow(1.5, tz(x)) *
				                    (1 - 0.05 * (double)llabs(y - 3)));
			}
		}
		evals[seed] = found ? k : BUDGET + 1;
		search_free(s);
	}
	qsort(evals, SEEDS, sizeof(int), int_cmp);
	print_message("evaluations to the best-aligned size (256 points): median %d max %d\n",
	              evals[SEEDS / 2], evals[SEEDS - 1]);
	assert_true(evals[SEEDS / 2] <= 48);
}

/* k params over the same domain, no constraints, the baseline at position base of each. */
static struct config grid_config(long long *dom, size_t n, size_t k, size_t base)
{
	static const char *const names[] = {"P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7"};
	struct config c = cfg;
	size_t i;

	assert_true(k <= ARRAY_SIZE(names) && base < n);
	memset(&c.fam, 0, sizeof(c.fam));
	c.fam.name = "grid";
	c.fam.problem = cfg.fam.problem;
	c.fam.nparams = k;
	for (i = 0; i < k; i++) {
		c.fam.params[i].name = (char *)names[i];
		c.fam.params[i].values = dom;
		c.fam.params[i].nvalues = n;
		c.fam.baseline[i] = dom[base];
	}
	return c;
}

/* 1 when every param of va is at the first or the last value of dom. */
static int grid_at_ends(const struct variant *va, const long long *dom, size_t n, size_t k)
{
	size_t i;

	for (i = 0; i < k; i++)
		if (va->v[i] != dom[0] && va->v[i] != dom[n - 1])
			return 0;
	return 1;
}

/* How many of the first design's picks (the baseline left out) are end points. */
static int design_ends(const char *strategy, struct config *c, long long *dom, size_t n, size_t k,
                       unsigned long long seed)
{
	struct candidate cands[16];
	struct search *s = search_new(c, strategy, seed);
	int ends = 0;
	size_t i, got;

	assert_non_null(s);
	got = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
	assert_int_equal(got, 16);
	assert_int_equal(cands[0].origin, ORIGIN_BASELINE);
	for (i = 1; i < got; i++)
		ends += grid_at_ends(&cands[i].va, dom, n, k);
	search_free(s);
	return ends;
}

/*
 * evolve's first design screens the ends of the domains: while end points are
 * left, every pick has each param of 4 values or more at its first or last
 * value (the baseline, proposed first, is in the middle here); evolve2's
 * covering design spreads the picks over every value. In a space too big to
 * enumerate (8**7 points), the ends are drawn beside the random candidates.
 */
static void test_evolve_screens_ends_first(void **state)
{
	static long long dom[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	unsigned long long seed;

	for (seed = 1; seed <= 3; seed++) {
		struct config c4 = grid_config(dom, 8, 4, 3), c7 = grid_config(dom, 8, 7, 3);

		assert_int_equal(design_ends("evolve", &c4, dom, 8, 4, seed), 15);
		assert_int_equal(design_ends("evolve-rf", &c4, dom, 8, 4, seed), 15);
		assert_true(design_ends("evolve2", &c4, dom, 8, 4, seed) <= 4);
		assert_int_equal(design_ends("evolve", &c7, dom, 8, 7, seed), 15);
		assert_true(design_ends("evolve2", &c7, dom, 8, 7, seed) <= 4);
	}
}

/*
 * A size's upper end is the largest most aligned value of the upper half of
 * its domain: over 16, 32, ..., 224 (224 = 7 x 32 is less aligned than 128 =
 * 2^7), evolve's first design puts each param at 16 or 128 and never at 224;
 * where the domain ends on its most aligned value (16, ..., 256) the end stays
 * the last value, and over 48, 64, 80, 96 it is 96 (64, more aligned, is in
 * the lower half). In a space small enough to enumerate (4 params) and one
 * whose ends are drawn (7 params).
 */
static void test_evolve_size_upper_end(void **state)
{
	static long long to224[14], to256[16];
	struct candidate cands[16];
	unsigned long long seed;
	size_t i, k, j;

	for (i = 0; i < 16; i++) {
		to256[i] = 16 * (long long)(i + 1);
		if (i < 14)
			to224[i] = to256[i];
	}
	for (seed = 1; seed <= 3; seed++)
		for (k = 4; k <= 7; k += 3) {
			struct config c224 = grid_config(to224, 14, k, 4);
			struct config c256 = grid_config(to256, 16, k, 4);
			struct search *s = search_new(&c224, "evolve", seed);
			size_t n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
			int at128 = 0;

			assert_int_equal(n, 16);
			for (i = 1; i < n; i++)
				for (j = 0; j < k; j++) {
					assert_true(cands[i].va.v[j] == 16 ||
					            cands[i].va.v[j] == 128);
					at128 += cands[i].va.v[j] == 128;
				}
			assert_true(at128 >= 15); /* every param at both ends, over the design */
			search_free(s);
			s = search_new(&c256, "evolve", seed);
			n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
			assert_int_equal(n, 16);
			for (i = 1; i < n; i++)
				for (j = 0; j < k; j++)
					assert_true(cands[i].va.v[j] == 16 ||
					            cands[i].va.v[j] == 256);
			search_free(s);
		}
	for (seed = 1; seed <= 3; seed++) {
		static long long to96[4] = {48, 64, 80, 96};
		struct config c96 = grid_config(to96, 4, 4, 2);
		struct search *s = search_new(&c96, "evolve", seed);
		size_t n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);

		assert_int_equal(n, 16);
		for (i = 1; i < n; i++)
			for (j = 0; j < 4; j++)
				assert_true(cands[i].va.v[j] == 48 || cands[i].va.v[j] == 96);
		search_free(s);
	}
}

/*
 * Once the end points are spent (two params of 8 values: 4 ends), the design
 * goes on over the rest of the space, never twice the same point.
 */
static void test_evolve_design_after_the_ends(void **state)
{
	static long long dom[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct config c = grid_config(dom, 8, 2, 3);
	struct candidate cands[16];
	struct search *s = search_new(&c, "evolve", 7);
	size_t i, j, n;

	n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
	assert_int_equal(n, 16);
	for (i = 1; i < n; i++) {
		assert_int_equal(grid_at_ends(&cands[i].va, dom, 8, 2), i <= 4);
		for (j = 0; j < i; j++)
			assert_false(cands[i].va.v[0] == cands[j].va.v[0] &&
			             cands[i].va.v[1] == cands[j].va.v[1]);
	}
	search_free(s);
}

static void observe_at(struct search *s, long long x, long long y, double f)
{
	struct variant va;

	memset(&va, 0, sizeof(va));
	va.v[0] = x;
	va.v[1] = y;
	observe_fitness(s, &va, f);
}

/*
 * evolve relinks its anchors: with the best point at (10, 10) and the
 * runner-up at (13, 10), the points between them, (11, 10) and (12, 10),
 * come first, before the other neighbours of either. evolve2 takes all the
 * best point's neighbours at one step first, so (12, 10) comes later.
 */
static void test_evolve_relinks_anchors(void **state)
{
	static long long dom[64];
	struct candidate cands[16];
	size_t i, n;
	int k, at12 = -1;

	for (i = 0; i < 64; i++)
		dom[i] = (long long)i;
	for (k = 0; k < 2; k++) {
		struct config c = plane_config(dom, 64, dom, 64);
		struct search *s = search_new(&c, k ? "evolve2" : "evolve", 3);

		observe_at(s, 0, 0, 0.1); /* the baseline */
		observe_at(s, 10, 10, 1.0);
		observe_at(s, 13, 10, 0.9);
		observe_at(s, 40, 40, 0.2);
		observe_at(s, 50, 5, 0.3);
		observe_at(s, 5, 50, 0.25);
		n = search_propose(s, 1, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < n; i++)
			if (cands[i].va.v[0] == 12 && cands[i].va.v[1] == 10)
				at12 = (int)i;
		if (!k) {
			assert_true(cands[0].va.v[0] == 11 && cands[0].va.v[1] == 10);
			assert_int_equal(at12, 1);
		} else {
			assert_true(at12 >= 4);
		}
		search_free(s);
	}
}

/*
 * A size param's steps count its alignment: from a block of 256 (in steps of
 * 16 up to 512), 128 and 512 are two steps away and 240 or 272, which lose
 * four levels of alignment, are four: beyond the local search's reach of 3,
 * where evolve2 tries them first (one domain step).
 */
static void test_evolve_alignment_steps(void **state)
{
	static long long xs[32], ys[4] = {1, 2, 3, 4};
	struct candidate cands[16];
	size_t i, n;
	int k;

	for (i = 0; i < 32; i++)
		xs[i] = 16 * (long long)(i + 1);
	for (k = 0; k < 2; k++) {
		struct config c = plane_config(xs, 32, ys, 4);
		struct search *s = search_new(&c, k ? "evolve2" : "evolve", 5);
		int unaligned = 0, aligned = 0;

		observe_at(s, 16, 1, 0.1); /* the baseline */
		observe_at(s, 256, 2, 1.0);
		observe_at(s, 64, 4, 0.6);
		observe_at(s, 496, 1, 0.2);
		observe_at(s, 160, 3, 0.3);
		n = search_propose(s, 1, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < 12; i++) {
			unaligned += cands[i].va.v[0] == 240 || cands[i].va.v[0] == 272;
			aligned += cands[i].va.v[0] == 128 || cands[i].va.v[0] == 512;
		}
		if (!k) {
			assert_int_equal(unaligned, 0);
			assert_true(aligned > 0);
		} else {
			assert_true(unaligned > 0);
		}
		search_free(s);
	}
}

/* A smooth hill on the 4**6 grid, its top in the middle (position 1 or 2 of every param). */
static double grid_hill(const struct variant *va)
{
	double f = 1;
	size_t i;

	for (i = 0; i < 6; i++)
		f *= 1 / (1 + 0.3 * (double)llabs(va->v[i] - 2));
	return f;
}

/*
 * Half of the picks by expected improvement are end points: after the first
 * design, a batch's local search fills 12 slots and the exploring quarter
 * starts with two unseen end points (the screening goes on). Its other picks
 * may land anywhere.
 */
static void test_evolve_explores_ends(void **state)
{
	static long long dom[4] = {1, 2, 3, 4};
	struct candidate cands[16];
	unsigned long long seed;
	size_t i, n;

	for (seed = 1; seed <= 4; seed++) {
		struct config c = grid_config(dom, 4, 6, 1);
		struct search *s = search_new(&c, "evolve", seed);

		n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < n; i++)
			observe_fitness(s, &cands[i].va, grid_hill(&cands[i].va));
		n = search_propose(s, 1, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		assert_true(grid_at_ends(&cands[12].va, dom, 4, 6));
		assert_true(grid_at_ends(&cands[13].va, dom, 4, 6));
		search_free(s);
	}
}

/* Domain steps between two points of the 4**6 grid (no param there has an alignment). */
static int grid_steps(const struct variant *a, const struct variant *b)
{
	int d = 0;
	size_t i;

	for (i = 0; i < 6; i++)
		d += (int)llabs(a->v[i] - b->v[i]);
	return d;
}

/*
 * Batches after the first design on the 4**6 grid, where the first local pick
 * of each batch is better than the best seen by the factor gain and the rest
 * half as good as the hill says. Returns how many of the fourth batch's 16
 * picks are end points: 8 once stuck (half of a batch by expected
 * improvement), fewer while the local search goes on (2 of its exploring 4).
 */
static int ends_after_gains(unsigned long long seed, double gain)
{
	static long long dom[4] = {1, 2, 3, 4};
	struct config c = grid_config(dom, 4, 6, 1);
	struct search *s = search_new(&c, "evolve", seed);
	struct candidate cands[16];
	double best = 0, f;
	size_t i, n;
	int gen, ends = 0;

	for (gen = 0; gen < 4; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		if (gen == 3)
			break;
		for (i = 0; i < n; i++) {
			f = grid_hill(&cands[i].va);
			if (gen > 0)
				f = i == 0 ? best * gain : f / 2;
			if (f > best)
				best = f;
			observe_fitness(s, &cands[i].va, f);
		}
	}
	for (i = 0; i < n; i++)
		ends += grid_at_ends(&cands[i].va, dom, 4, 6);
	search_free(s);
	return ends;
}

/*
 * A gain of less than 1% is not progress: an incumbent that creeps up by 0.1%
 * a batch is stuck after two batches as one that does not move, and the third
 * batch goes to expected improvement anywhere (half of it end points); with
 * gains of 5% the local search goes on.
 */
static void test_evolve_stuck_needs_gain(void **state)
{
	unsigned long long seed;

	for (seed = 1; seed <= 4; seed++) {
		assert_int_equal(ends_after_gains(seed, 1.001), 8);
		assert_true(ends_after_gains(seed, 1.05) < 8);
	}
}

/*
 * While not stuck, the first end point of a batch is the one fewest steps
 * from the best point beyond the local search's reach (3 steps), not the
 * model's favourite: on a hill in the middle of the grid, tilted towards
 * P0's upper end, the end picked after the 12 local picks is as near the
 * first design's best point as any end point not yet seen.
 */
static void test_evolve_screens_near_ends(void **state)
{
	static long long dom[4] = {1, 2, 3, 4};
	struct candidate cands[16];
	struct variant seen[32];
	unsigned long long seed;
	size_t i, n, ns;

	for (seed = 1; seed <= 4; seed++) {
		struct config c = grid_config(dom, 4, 6, 1);
		struct search *s = search_new(&c, "evolve", seed);
		struct variant best, va;
		double fb = -1;
		int least = 1000, k, pick;

		n = search_propose(s, 0, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < n; i++) {
			double f = grid_hill(&cands[i].va) * (1 + 0.1 * (double)cands[i].va.v[0]);

			if (f > fb) {
				fb = f;
				best = cands[i].va;
			}
			seen[i] = cands[i].va;
			observe_fitness(s, &cands[i].va, f);
		}
		ns = n;
		n = search_propose(s, 1, cands, ARRAY_SIZE(cands), NULL, NULL);
		assert_int_equal(n, 16);
		for (i = 0; i < 12; i++)
			seen[ns++] = cands[i].va;
		/* every end point of the grid: 2**6 */
		for (k = 0; k < 64; k++) {
			int d, j;

			memset(&va, 0, sizeof(va));
			for (j = 0; j < 6; j++)
				va.v[j] = k >> j & 1 ? 4 : 1;
			for (i = 0; i < ns; i++)
				if (!memcmp(seen[i].v, va.v, sizeof(va.v[0]) * 6))
					break;
			d = grid_steps(&va, &best);
			if (i == ns && d > 3 && d < least)
				least = d;
		}
		pick = grid_steps(&cands[12].va, &best);
		assert_true(grid_at_ends(&cands[12].va, dom, 4, 6));
		assert_int_equal(pick, least);
		search_free(s);
	}
}

/* Build an elite of the baseline, one point at the edges of A and D, and one in the middle. */
static struct search *search_with_elite(const char *strategy, unsigned long long seed)
{
	static const long long pts[][4] = {{4, 1, 32, 1}, {1, 3, 48, 4}, {16, 4, 64, 2}};
	struct search *s = search_new(&cfg, strategy, seed);
	struct variant va;
	struct member m;
	size_t i;

	assert_non_null(s);
	for (i = 0; i < ARRAY_SIZE(pts); i++) {
		memset(&va, 0, sizeof(va));
		memcpy(va.v, pts[i], sizeof(pts[i]));
		assert_true(valid(&va));
		measure(&va, &m);
		/* the elite holds all three whatever their fitness, none regresses twice */
		m.speedup_hi[0] = m.speedup_hi[1] = 2;
		assert_int_equal(search_observe(s, &va, &m), 1);
	}
	return s;
}

/*
 * evolve1: mutants step one param (or two at once: the local moves of the
 * best-first search) to a neighbouring domain value; crossovers mix their parents; all
 * valid. Parents index the breeding pool, which here is the elite.
 */
/* Compiling ahead pays only for the strategies that propose the best variant's neighbours. */
static void test_strategy_local(void **state)
{
	(void)state;
	assert_true(search_strategy_local("evolve"));
	assert_true(search_strategy_local("evolve-rf"));
	assert_true(search_strategy_local("evolve2"));
	assert_true(search_strategy_local("evolve1"));
	assert_false(search_strategy_local("random"));
	assert_false(search_strategy_local("exhaustive"));
	assert_false(search_strategy_local("evolve3"));
	assert_false(search_strategy_local(NULL));
	assert_true(search_strategy_known("evolve-rf"));
	assert_true(search_strategy_known("evolve2"));
	assert_false(search_strategy_known("evolve3"));
}

/* One list of strategies: the messages name the same ones, the default first. */
static void test_strategy_names(void **state)
{
	size_t n, i;
	const char *const *names = search_strategy_names(&n);
	char joined[256] = "";

	(void)state;
	for (i = 0; i < n; i++) {
		assert_true(search_strategy_known(names[i]));
		strcat(strcat(joined, i ? ", " : ""), names[i]);
	}
	assert_string_equal(joined, SEARCH_STRATEGIES);
	assert_string_equal(names[0], "evolve");
}

static void test_mutation_stays_in_domain(void **state)
{
	struct candidate cands[16];
	const struct member *elite[3];
	struct search *s = search_with_elite("evolve1", 5);
	struct fake_db db;
	int mutants = 0, crosses = 0, gen, idx[4], pidx[4], k, changed, picked[3] = {0};
	size_t i, n;

	memset(&db, 0, sizeof(db));
	for (gen = 1; gen < 4; gen++) {
		assert_int_equal(search_pool(s, elite, 3), 3);
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db);
		assert_true(n > 0);
		for (i = 0; i < n; i++) {
			const struct candidate *c = &cands[i];
			int bad = -1;

			assert_true(space_in_domain(&cfg.fam, &c->va, &bad));
			assert_true(indices(&c->va, idx));
			assert_true(valid(&c->va));
			if (c->origin == ORIGIN_MUTATION || c->origin == ORIGIN_CROSSOVER)
				picked[c->parent_a]++;
			if (c->origin == ORIGIN_MUTATION) {
				mutants++;
				assert_in_range(c->parent_a, 0, 2);
				assert_int_equal(c->parent_b, -1);
				assert_true(indices(&elite[c->parent_a]->va, pidx));
				for (k = 0, changed = 0; k < 4; k++) {
					if (idx[k] == pidx[k])
						continue;
					changed++;
					assert_int_equal(abs(idx[k] - pidx[k]), 1);
				}
				assert_in_range(changed, 1, 2);
			} else if (c->origin == ORIGIN_CROSSOVER) {
				crosses++;
				assert_in_range(c->parent_a, 0, 2);
				assert_in_range(c->parent_b, 0, 2);
				assert_int_not_equal(c->parent_a, c->parent_b);
				for (k = 0; k < 4; k++)
					assert_true(c->va.v[k] == elite[c->parent_a]->va.v[k] ||
					            c->va.v[k] == elite[c->parent_b]->va.v[k]);
			} else {
				assert_int_equal(c->origin, ORIGIN_RANDOM);
			}
			/* rejected by a later gate: the elite stays as it is */
			db.seen[point_index(&c->va)] = 1;
			search_observe(s, &c->va, NULL);
		}
	}
	assert_true(mutants > 10);
	assert_true(crosses > 0);
	/* tournament selection: the best member breeds more often than the weakest */
	assert_true(picked[0] > picked[2]);
	search_free(s);
}

/* evolve1: once the elite's neighbourhood is spent, breeding tops up with random configurations. */
static void test_breeding_runs_dry(void **state)
{
	struct candidate cands[16];
	struct search *s = search_with_elite("evolve1", 9);
	struct fake_db db;
	int gen, randoms = 0, bred = 0;
	size_t i, n;

	memset(&db, 0, sizeof(db));
	for (gen = 1; gen < 12; gen++) {
		n = search_propose(s, gen, cands, ARRAY_SIZE(cands), db_seen, &db);
		assert_int_equal(n, ARRAY_SIZE(cands));
		for (i = 0; i < n; i++) {
			if (cands[i].origin == ORIGIN_RANDOM)
				randoms++;
			else
				bred++;
			db.seen[point_index(&cands[i].va)] = 1;
		}
	}
	assert_true(bred > 0);
	assert_true(randoms > 0);
	search_free(s);
}

/* ------------------------------------------------------------ admission */

static struct member mk(double fit, double lo, double hi)
{
	static long long next = 1;
	struct member m;
	size_t i;

	memset(&m, 0, sizeof(m));
	m.va.v[0] = next++;
	m.fitness = fit;
	m.fitness_lo = lo;
	m.fitness_hi = hi;
	m.nshapes = 3;
	for (i = 0; i < 3; i++) {
		m.speedup[i] = fit;
		m.speedup_lo[i] = lo;
		m.speedup_hi[i] = hi > 1.0 ? hi : 1.0;
	}
	return m;
}

static void test_admit_not_full(void **state)
{
	struct member base = mk(1, 0.99, 1.01), a = mk(1.2, 1.19, 1.21), cand = mk(0.95, 0.9, 1.0);
	const struct member *elite[] = {&a, &base};
	char why[256];

	/* worse than the best, even slower than the baseline on one shape: there is room */
	cand.speedup_hi[1] = 0.97;
	assert_int_equal(evolve_admits(elite, 2, 3, &cand, &base, 0.03, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "2 of 3"));
}

static void test_admit_not_full_but_regresses_twice(void **state)
{
	struct member base = mk(1, 0.99, 1.01), cand = mk(1.3, 1.2, 1.4);
	const struct member *elite[] = {&base};
	char why[256];

	/* a higher geo-mean bought with two slower shapes */
	cand.speedup[0] = 3;
	cand.speedup_hi[0] = 3.1;
	cand.speedup[1] = 0.9;
	cand.speedup_hi[1] = 0.95;
	cand.speedup[2] = 0.8;
	cand.speedup_hi[2] = 0.85;
	assert_int_equal(evolve_admits(elite, 1, 3, &cand, &base, 0.03, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "regresses against the baseline on 2 shapes"));
	assert_non_null(strstr(why, "shape 1"));
	assert_non_null(strstr(why, "shape 2"));
}

static void test_admit_full_better_beyond_noise(void **state)
{
	struct member base = mk(1, 0.99, 1.01), a = mk(1.5, 1.48, 1.52), b = mk(1.2, 1.18, 1.22);
	struct member cand = mk(1.3, 1.27, 1.33);
	/* not sorted: the weakest is found whatever the order */
	const struct member *elite[] = {&b, &base, &a};
	char why[256];

	assert_int_equal(evolve_admits(elite, 3, 3, &cand, &base, 0.03, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "admitted"));
	assert_non_null(strstr(why, "1.000"));
}

static void test_admit_full_better_within_noise(void **state)
{
	struct member a = mk(1.5, 1.48, 1.52), b = mk(1.3, 1.29, 1.31), w = mk(1.0, 0.9, 1.1);
	struct member cand = mk(1.12, 1.08, 1.16);
	const struct member *elite[] = {&a, &b, &w};
	char why[256];

	/* 12% better than the weakest, but [1.08, 1.16] overlaps its noisy [0.9, 1.1] */
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, NULL, 0.03, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "within noise"));
	/* the same fitness measured more tightly gets in */
	cand.fitness_lo = 1.11;
	cand.fitness_hi = 1.13;
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, NULL, 0.03, why, sizeof(why)), 1);
}

static void test_admit_full_below_margin(void **state)
{
	struct member a = mk(1.5, 1.49, 1.51), b = mk(1.2, 1.199, 1.201), c = mk(1.0, 0.999, 1.001);
	struct member cand = mk(1.02, 1.019, 1.021);
	const struct member *elite[] = {&a, &b, &c};
	char why[256];

	/* 2% better, far beyond its tiny noise, but the margin is 3% */
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, NULL, 0.03, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "3% margin"));
	/* a 1% margin lets it in */
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, NULL, 0.01, why, sizeof(why)), 1);
}

static void test_admit_full_better_but_regresses_twice(void **state)
{
	struct member base = mk(1, 0.99, 1.01), a = mk(1.5, 1.48, 1.52), b = mk(1.2, 1.18, 1.22);
	struct member cand = mk(2.0, 1.95, 2.05);
	const struct member *elite[] = {&a, &b, &base};
	char why[256];

	cand.speedup_hi[0] = 0.99;
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, &base, 0.03, why, sizeof(why)), 1);
	cand.speedup_hi[2] = 0.5;
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, &base, 0.03, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "regresses"));
	/* slower, but within noise (speedup_hi >= 1), is not a regression */
	cand.speedup[0] = cand.speedup[2] = 0.98;
	cand.speedup_hi[0] = cand.speedup_hi[2] = 1.0;
	assert_int_equal(evolve_admits(elite, 3, 3, &cand, &base, 0.03, why, sizeof(why)), 1);
}

static void test_admit_baseline(void **state)
{
	struct member base = mk(1, 0.99, 1.01), a = mk(1.5, 1.48, 1.52), b = mk(1.4, 1.38, 1.42);
	struct member c = mk(1.3, 1.28, 1.32), copy;
	const struct member *elite[] = {&a, &b, &c};
	char why[256];

	assert_int_equal(evolve_admits(NULL, 0, 3, &base, &base, 0.03, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "baseline"));
	/* recognised by its configuration, even in a full elite of better members */
	copy = base;
	assert_int_equal(evolve_admits(elite, 3, 3, &copy, &base, 0.03, why, sizeof(why)), 1);
	/* without the baseline rule the same member would be refused */
	assert_int_equal(evolve_admits(elite, 3, 3, &copy, NULL, 0.03, why, sizeof(why)), 0);
	/* NaN fitness never enters */
	c.fitness = NAN;
	assert_int_equal(evolve_admits(elite, 1, 3, &c, &base, 0.03, NULL, 0), 0);
}

/* Through the search: K members at most, best first, the weakest replaced, rejects ignored. */
/* search_admits answers what search_observe will decide, and changes nothing. */
static void test_admits_predicts_observe(void **state)
{
	struct search *s = search_new(&cfg, "evolve", 1);
	const struct member *elite[4];
	struct variant va;
	struct member m;
	static const int pts[] = {-1, 10, 20, 30, 40, 50};
	static const double fit[] = {1.0, 1.2, 1.1, 1.05, 1.3, 1.12};
	size_t i, before;
	int admits;

	for (i = 0; i < ARRAY_SIZE(pts); i++) {
		if (pts[i] < 0)
			baseline_va(&va);
		else
			point_at(pts[i], &va);
		memset(&m, 0, sizeof(m));
		m.va = va;
		m.fitness = fit[i];
		m.fitness_lo = fit[i] - 0.01;
		m.fitness_hi = fit[i] + 0.01;
		m.nshapes = 2;
		m.speedup[0] = m.speedup[1] = m.speedup_hi[0] = m.speedup_hi[1] = fit[i];
		before = search_elite(s, elite, 4);
		admits = search_admits(s, &va, &m);
		assert_int_equal(search_elite(s, elite, 4), before);
		assert_int_equal(search_observe(s, &va, &m), admits);
	}
	/* 1.12 is within the 3% margin of the weakest (1.1): refused, and predicted so */
	assert_int_equal(admits, 0);
	assert_int_equal(search_elite(s, elite, 4), 3);
	search_free(s);
}

/*
 * Racing starts once the elite and the breeding pool are full, whatever their
 * size: with an elite of 80 (the config allows 1000) the bar was 0 for good,
 * since it was read through arrays of 64 members.
 */
static void test_race_bar_big_elite(void **state)
{
	struct search *s;
	struct variant va;
	struct member m;
	int i, observed = 0;
	double bar = 0;

	cfg.elite = 80;
	s = search_new(&cfg, "evolve", 1);
	assert_non_null(s);
	for (i = 0; i < SPACE && bar <= 0; i++) {
		point_at(i, &va);
		if (!valid(&va))
			continue;
		measure(&va, &m);
		search_observe(s, &va, &m);
		observed++;
		bar = search_race_bar(s);
	}
	cfg.elite = 3;
	search_free(s);
	assert_true(bar > 0);
	assert_true(observed >= 80); /* not before the elite is full */
}

static void test_observe_keeps_elite(void **state)
{
	struct search *s = search_new(&cfg, "evolve", 1);
	const struct member *elite[4];
	struct variant va;
	struct member m;
	static const int pts[] = {-1, 10, 20, 30, 40};
	static const double fit[] = {1.0, 1.2, 1.1, 1.05, 1.3};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pts); i++) {
		if (pts[i] < 0)
			baseline_va(&va);
		else
			point_at(pts[i], &va);
		memset(&m, 0, sizeof(m));
		m.va = va;
		m.fitness = fit[i];
		m.fitness_lo = fit[i] - 0.01;
		m.fitness_hi = fit[i] + 0.01;
		m.nshapes = 2;
		m.speedup[0] = m.speedup[1] = m.speedup_hi[0] = m.speedup_hi[1] = fit[i];
		assert_int_equal(search_observe(s, &va, &m), 1);
	}
	assert_int_equal(search_elite(s, elite, 4), 3);
	/* the baseline, 1.2 and 1.1 filled it; 1.05 (>= 1.03) replaced the baseline, then 1.3 it */
	assert_true(elite[0]->fitness == 1.3);
	assert_true(elite[1]->fitness == 1.2);
	assert_true(elite[2]->fitness == 1.1);
	assert_non_null(strstr(search_last_why(s), "admitted"));
	/* a rejected variant does not enter */
	point_at(50, &va);
	assert_int_equal(search_observe(s, &va, NULL), 0);
	assert_int_equal(search_elite(s, elite, 4), 3);
	search_free(s);
}

/*
 * Observe grid point pt (the baseline when pt < 0) as member id, with these
 * per-shape speedups, each and their geometric mean (the fitness) within +-rel.
 */
static void observe_point(struct search *s, int pt, long long id, size_t nshapes, const double *sp,
                          double rel)
{
	struct variant va;
	struct member m;
	double prod = 1;
	size_t k;

	if (pt < 0)
		baseline_va(&va);
	else
		point_at(pt, &va);
	memset(&m, 0, sizeof(m));
	m.va = va;
	m.id = id;
	m.nshapes = nshapes;
	for (k = 0; k < nshapes; k++) {
		m.speedup[k] = sp[k];
		m.speedup_lo[k] = sp[k] * (1 - rel);
		m.speedup_hi[k] = sp[k] * (1 + rel);
		prod *= sp[k];
	}
	m.fitness = pow(prod, 1.0 / (double)nshapes);
	m.fitness_lo = m.fitness * (1 - rel);
	m.fitness_hi = m.fitness * (1 + rel);
	search_observe(s, &va, &m);
}

/*
 * The final check takes the elite, then runners-up the admission rule would
 * elect: a fitter member that regresses on two shapes stays out (on the H100,
 * a sweep's final elite took one that the search had refused).
 */
static void test_final_candidates_follow_the_rule(void **state)
{
	struct search *s = search_new(&cfg, "evolve", 1);
	const struct member *out[8];
	static const int pts[] = {-1, 10, 20, 30, 40};
	/* 30 is the fittest (x3 on one shape) but slower than the baseline on the other two */
	static const double sp[][3] = {
	    {1, 1, 1}, {1.2, 1.2, 1.2}, {1.1, 1.1, 1.1}, {3.0, 0.9, 0.8}, {1.05, 1.05, 1.05}};
	static const int ids[] = {1, 2, 3, 4, 5}, want[] = {2, 3, 5, 1};
	size_t i, n;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(pts); i++)
		observe_point(s, pts[i], ids[i], 3, sp[i], 0.01);
	assert_int_equal(search_pool(s, out, 8), 5);
	assert_int_equal(out[0]->id, 4); /* the pool ranks by fitness alone */
	n = search_final_candidates(s, out, 8);
	assert_int_equal(n, ARRAY_SIZE(want));
	for (i = 0; i < n; i++)
		assert_int_equal(out[i]->id, want[i]);
	search_free(s);
}

/*
 * The final elite does not depend on arrival: B (x1.10) got in while the
 * elite had room, D (x1.12) came later and the 3% margin kept it out of the
 * full elite; the final candidates put D before B, so the final elite is the
 * three fittest measured.
 */
static void test_final_candidates_fittest_first(void **state)
{
	struct search *s = search_new(&cfg, "evolve", 1);
	const struct member *out[8];
	static const int pts[] = {-1, 10, 20, 30, 40};
	static const double fit[] = {1.0, 1.20, 1.10, 1.15, 1.12};
	static const int ids[] = {1, 2, 3, 4, 5}, want[] = {2, 4, 5, 3, 1};
	size_t i, n;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(pts); i++)
		observe_point(s, pts[i], ids[i], 1, &fit[i], 0.005);
	/* the search's elite kept B, which arrived first, and left D out */
	assert_int_equal(search_elite(s, out, 8), 3);
	for (i = 0; i < 3; i++)
		assert_int_not_equal(out[i]->id, 5);
	n = search_final_candidates(s, out, 8);
	assert_int_equal(n, ARRAY_SIZE(want));
	for (i = 0; i < n; i++)
		assert_int_equal(out[i]->id, want[i]);
	search_free(s);
}

/* Equal fitness is ordered by variant, not by arrival. */
static void test_elite_ties_by_variant(void **state)
{
	struct search *s1 = search_new(&cfg, "evolve", 1), *s2 = search_new(&cfg, "evolve", 1);
	const struct member *e1[3], *e2[3];
	struct variant va[2];
	struct member m;
	int i;

	for (i = 0; i < 2; i++)
		point_at(100 + 50 * i, &va[i]);
	memset(&m, 0, sizeof(m));
	m.fitness = m.fitness_lo = m.fitness_hi = 1.1;
	m.nshapes = 1;
	m.speedup_hi[0] = 1.1;
	search_observe(s1, &va[0], &m);
	search_observe(s1, &va[1], &m);
	search_observe(s2, &va[1], &m);
	search_observe(s2, &va[0], &m);
	assert_int_equal(search_elite(s1, e1, 3), 2);
	assert_int_equal(search_elite(s2, e2, 3), 2);
	for (i = 0; i < 2; i++)
		assert_memory_equal(&e1[i]->va, &e2[i]->va, sizeof(struct variant));
	search_free(s1);
	search_free(s2);
}

/*
 * The report order: the best measured first; below it, members within noise
 * of each other are listed by variant, so two runs whose noise swapped two
 * close members report the same order; members apart beyond noise keep
 * their fitness order.
 */
static int values_before(const struct variant *a, const struct variant *b)
{
	size_t i;

	for (i = 0; i < TUNER_MAX_PARAMS && a->v[i] == b->v[i]; i++)
		;
	return i < TUNER_MAX_PARAMS && a->v[i] < b->v[i];
}

static void test_report_order_of_tied_members(void **state)
{
	struct member m[5], swapped[5];
	const struct member *a[5], *b[5];
	/* fitness: leader, two close ones (1%), one 10% below, one 11% below: a tie among them */
	static const double fit[5] = {2.40, 2.30, 2.28, 2.05, 2.03};
	int i;

	(void)state;
	memset(m, 0, sizeof(m));
	for (i = 0; i < 5; i++) {
		point_at(400 - 60 * i,
		         &m[i].va); /* variant order is the reverse of fitness order */
		m[i].fitness = fit[i];
		m[i].fitness_lo = fit[i] * 0.998;
		m[i].fitness_hi = fit[i] * 1.002;
		m[i].id = i + 1;
		a[i] = &m[i];
	}
	memcpy(swapped, m, sizeof(m));
	/* the second run measured the close pairs the other way round */
	swapped[1].fitness = 2.27;
	swapped[2].fitness = 2.29;
	swapped[3].fitness = 2.02;
	swapped[4].fitness = 2.04;
	b[0] = &swapped[0];
	b[1] = &swapped[2];
	b[2] = &swapped[1];
	b[3] = &swapped[4];
	b[4] = &swapped[3];
	evolve_report_order(a, 5, 0.03);
	evolve_report_order(b, 5, 0.03);
	for (i = 0; i < 5; i++)
		assert_int_equal(a[i]->id, b[i]->id);
	assert_int_equal(a[0]->id, 1);                    /* the best measured stays first */
	assert_true(values_before(&a[1]->va, &a[2]->va)); /* a tie: by variant */
	assert_true(a[2]->fitness > a[3]->fitness);       /* beyond noise: by fitness */
	assert_true(values_before(&a[3]->va, &a[4]->va));

	/* a margin of zero and disjoint intervals: nothing is tied, fitness order stays */
	for (i = 0; i < 5; i++)
		a[i] = &m[i];
	evolve_report_order(a, 5, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(a[i]->id, i + 1);
	assert_true(evolve_within_noise(&m[1], &m[2], 0.03));
	assert_false(evolve_within_noise(&m[0], &m[1], 0.03));
}

/* ----------------------------------------------------------- interface */

static char captured[512];

static void capture(const char *prefix, const char *msg)
{
	snprintf(captured, sizeof(captured), "%s%s", prefix, msg);
}

static void test_unknown_strategy(void **state)
{
	set_error_routine(capture);
	assert_null(search_new(&cfg, "anneal", 1));
	set_error_routine(NULL);
	assert_non_null(strstr(captured, "unknown strategy 'anneal'"));
}

static void test_origin_names(void **state)
{
	assert_string_equal(evolve_origin_name(ORIGIN_BASELINE), "baseline");
	assert_string_equal(evolve_origin_name(ORIGIN_MUTATION), "mutation");
	assert_string_equal(evolve_origin_name(ORIGIN_CROSSOVER), "crossover");
	assert_string_equal(evolve_origin_name(ORIGIN_SWEEP), "sweep");
}

/*
 * A space too big to scan (20^5 = 3.2M declared points, over the 1M that are
 * scanned) of which about 2% is valid, as the benchmark hub's hotspot space is:
 * every generation of every strategy is a whole population, as long as the
 * space lasts (256 random draws missed once in about 100 candidates there and
 * ended the generation).
 */
static void test_sparse_big_space_fills_generations(void **state)
{
	static const char *const names[] = {"P", "Q", "R", "S", "T"};
	static const char *const strategies[] = {"random", "evolve", "evolve1"};
	static long long dom[20];
	static struct problem none = {.ndims = 0};
	struct config big;
	struct candidate cands[16];
	struct expr_err err;
	struct member m;
	size_t i, k, n;
	int gen;

	for (i = 0; i < 20; i++)
		dom[i] = (long long)i;
	memset(&big, 0, sizeof(big));
	big.fam.name = "sparse";
	big.fam.problem = &none;
	big.fam.nparams = 5;
	for (i = 0; i < 5; i++) {
		big.fam.params[i].name = (char *)names[i];
		big.fam.params[i].values = dom;
		big.fam.params[i].nvalues = 20;
	}
	big.fam.constraints = calloc(1, sizeof(*big.fam.constraints));
	assert_non_null(big.fam.constraints);
	big.fam.constraints[0].e = expr_parse("P + Q + R + S + T < 22", &err);
	assert_non_null(big.fam.constraints[0].e);
	big.fam.nconstraints = 1;
	big.elite = 3;
	big.margin = 0.03;
	big.population = 16;
	for (k = 0; k < ARRAY_SIZE(strategies); k++) {
		struct search *s = search_new(&big, strategies[k], 7);

		assert_non_null(s);
		for (gen = 0; gen < 25; gen++) {
			n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
			if (n != ARRAY_SIZE(cands))
				fail_msg("%s, generation %d: %zu candidates of 16", strategies[k],
				         gen, n);
			for (i = 0; i < n; i++) {
				memset(&m, 0, sizeof(m));
				m.va = cands[i].va;
				m.id = (long long)(gen * 16 + (int)i + 1);
				m.nshapes = 1;
				/* better nearer P = 10: a landscape, so that the model has one */
				m.fitness = 1.0 / (1.0 + fabs((double)cands[i].va.v[0] - 10));
				m.fitness_lo = m.fitness * 0.99;
				m.fitness_hi = m.fitness * 1.01;
				m.speedup[0] = m.fitness;
				m.speedup_lo[0] = m.fitness_lo;
				m.speedup_hi[0] = m.fitness_hi;
				search_observe(s, &cands[i].va, &m);
			}
		}
		search_free(s);
	}
	expr_free(big.fam.constraints[0].e);
	free(big.fam.constraints);
}

/*
 * A param of 500,000 values (an imported landscape's may have 10**6): the
 * surrogate's similarity of two values is kept per distance between their
 * positions, not per pair (500,000 squared doubles: out of memory before), and
 * the forest's splits walk only the levels a node holds. evolve and evolve-rf
 * fill their generations with new valid points.
 */
static void test_wide_param_model(void **state)
{
	static const char *const strategies[] = {"evolve", "evolve-rf"};
	static long long bs[] = {1, 2};
	static struct problem none = {.ndims = 0};
	enum { NV = 500000 };
	long long *dom = calloc(NV, sizeof(*dom));
	struct config w;
	struct candidate cands[16];
	struct expr_err err;
	struct member m;
	size_t i, k, n;
	int gen;

	assert_non_null(dom);
	for (i = 0; i < NV; i++)
		dom[i] = 2 * (long long)i;
	memset(&w, 0, sizeof(w));
	w.fam.name = "wide";
	w.fam.problem = &none;
	w.fam.nparams = 2;
	w.fam.params[0].name = (char *)"N";
	w.fam.params[0].values = dom;
	w.fam.params[0].nvalues = NV;
	w.fam.params[1].name = (char *)"B";
	w.fam.params[1].values = bs;
	w.fam.params[1].nvalues = 2;
	for (i = 0; i < 2; i++)
		assert_int_equal(space_param_order(&w.fam.params[i]), w.fam.params[i].nvalues);
	w.fam.constraints = calloc(1, sizeof(*w.fam.constraints));
	assert_non_null(w.fam.constraints);
	w.fam.constraints[0].e = expr_parse("N % 3 != 1", &err);
	assert_non_null(w.fam.constraints[0].e);
	w.fam.nconstraints = 1;
	w.fam.baseline[0] = 0;
	w.fam.baseline[1] = 1;
	w.elite = 3;
	w.margin = 0.03;
	w.population = 16;
	for (k = 0; k < ARRAY_SIZE(strategies); k++) {
		struct search *s = search_new(&w, strategies[k], 5);

		assert_non_null(s);
		for (gen = 0; gen < 4; gen++) {
			n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
			if (n != ARRAY_SIZE(cands))
				fail_msg("%s, generation %d: %zu candidates of 16", strategies[k],
				         gen, n);
			for (i = 0; i < n; i++) {
				assert_int_not_equal(cands[i].va.v[0] % 3, 1);
				memset(&m, 0, sizeof(m));
				m.va = cands[i].va;
				m.id = (long long)(gen * 16 + (int)i + 1);
				m.nshapes = 1;
				/* better nearer N = 600,000 */
				m.fitness =
				    1.0 / (1.0 + fabs((double)cands[i].va.v[0] - 6e5) / 1e4 +
				           (double)cands[i].va.v[1]);
				m.fitness_lo = m.fitness * 0.99;
				m.fitness_hi = m.fitness * 1.01;
				m.speedup[0] = m.fitness;
				m.speedup_lo[0] = m.fitness_lo;
				m.speedup_hi[0] = m.fitness_hi;
				search_observe(s, &cands[i].va, &m);
			}
		}
		search_free(s);
	}
	for (i = 0; i < 2; i++)
		free(w.fam.params[i].order);
	expr_free(w.fam.constraints[0].e);
	free(w.fam.constraints);
	free(dom);
}

/* A family by hand: nparams params of the same domain, the constraints, no shapes. */
static void hand_family(struct config *c, const char *name, size_t nparams, long long *dom,
                        size_t nvalues, const char *const *cons, size_t ncons)
{
	static char names[TUNER_MAX_PARAMS][8];
	static struct problem none = {.ndims = 0};
	struct expr_err err;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->fam.name = (char *)name;
	c->fam.problem = &none;
	c->fam.nparams = nparams;
	for (i = 0; i < nparams; i++) {
		snprintf(names[i], sizeof(names[i]), "P%zu", i);
		c->fam.params[i].name = names[i];
		c->fam.params[i].values = dom;
		c->fam.params[i].nvalues = nvalues;
	}
	c->fam.constraints = calloc(ncons + 1, sizeof(*c->fam.constraints));
	assert_non_null(c->fam.constraints);
	for (i = 0; i < ncons; i++) {
		c->fam.constraints[i].e = expr_parse(cons[i], &err);
		if (!c->fam.constraints[i].e)
			fail_msg("cannot parse '%s': %s", cons[i], err.msg);
	}
	c->fam.nconstraints = ncons;
	c->elite = 3;
	c->margin = 0.03;
	c->population = 16;
}

static void hand_family_release(struct config *c)
{
	size_t i;

	for (i = 0; i < c->fam.nconstraints; i++)
		expr_free(c->fam.constraints[i].e);
	free(c->fam.constraints);
}

/* Observe every candidate, fitness better nearer P0 = 10 (a landscape, so that models have one). */
static void observe_all(struct search *s, const struct candidate *cands, size_t n, int gen)
{
	struct member m;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&m, 0, sizeof(m));
		m.va = cands[i].va;
		m.id = (long long)(gen * 16 + (int)i + 1);
		m.nshapes = 1;
		m.fitness = 1.0 / (1.0 + fabs((double)cands[i].va.v[0] - 10));
		m.fitness_lo = m.fitness * 0.99;
		m.fitness_hi = m.fitness * 1.01;
		m.speedup[0] = m.fitness;
		m.speedup_lo[0] = m.fitness_lo;
		m.speedup_hi[0] = m.fitness_hi;
		search_observe(s, &cands[i].va, &m);
	}
}

/*
 * 64 valid points of 16.7M (1 in 262,144): drawn at random, 65,536 draws find
 * one only one time in five, and generations came up empty. A space too big
 * to scan has its valid points listed once (the walk leaves a branch as soon
 * as a constraint on the params set so far fails): random proposes all 64, in
 * full generations, then nothing; evolve and evolve1 fill theirs.
 */
static void test_very_sparse_big_space_listed(void **state)
{
	static const char *const cons[] = {"P0 == P1", "P1 == P2", "P2 == P3"};
	static const char *const strategies[] = {"evolve", "evolve1", "evolve-rf"};
	static long long dom[64];
	struct candidate cands[16];
	struct config c;
	int seen[64] = {0};
	size_t i, k, n, total = 0;
	int gen;

	for (i = 0; i < 64; i++)
		dom[i] = (long long)i;
	hand_family(&c, "sparse", 4, dom, 64, cons, ARRAY_SIZE(cons));
	{
		struct search *s = search_new(&c, "random", 3);

		for (gen = 0; gen < 6; gen++) {
			n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
			if (n != (gen < 4 ? 16u : 0u))
				fail_msg("random, generation %d: %zu candidates", gen, n);
			for (i = 0; i < n; i++) {
				const long long *v = cands[i].va.v;

				assert_true(v[0] == v[1] && v[1] == v[2] && v[2] == v[3]);
				assert_false(seen[v[0]]++);
			}
			total += n;
			observe_all(s, cands, n, gen);
		}
		assert_int_equal(total, 64);
		search_free(s);
	}
	for (k = 0; k < ARRAY_SIZE(strategies); k++) {
		struct search *s = search_new(&c, strategies[k], 3);

		for (gen = 0; gen < 3; gen++) {
			n = search_propose(s, gen, cands, ARRAY_SIZE(cands), NULL, NULL);
			if (n != ARRAY_SIZE(cands))
				fail_msg("%s, generation %d: %zu candidates of 16", strategies[k],
				         gen, n);
			for (i = 0; i < n; i++)
				assert_true(cands[i].va.v[0] == cands[i].va.v[3]);
			observe_all(s, cands, n, gen);
		}
		search_free(s);
	}
	hand_family_release(&c);
}

/*
 * Where the valid points cannot be listed (here the space's 4**32 points do
 * not even have an index), a draw sets the params in turn and starts again as
 * soon as a constraint on those set fails: as uniform over the valid points
 * as a whole draw and a check. Of the 10 valid pairs (P0, P1), each comes up
 * about as often in 2,000 draws (200 expected, 3.2 standard deviations either
 * side allowed).
 */
static void test_unlisted_draws_uniform(void **state)
{
	static const char *const cons[] = {"P0 <= P1", "P30 + P31 != 6"};
	static long long dom[4] = {0, 1, 2, 3};
	struct candidate cands[16];
	struct config c;
	int count[4][4] = {{0}}, gen;
	size_t i, a, b;

	hand_family(&c, "huge", 32, dom, 4, cons, ARRAY_SIZE(cons));
	{
		struct search *s = search_new(&c, "random", 9);

		for (gen = 0; gen < 125; gen++) {
			assert_int_equal(search_propose(s, gen, cands, 16, NULL, NULL), 16);
			for (i = 0; i < 16; i++) {
				const long long *v = cands[i].va.v;

				assert_true(v[0] <= v[1] && v[30] + v[31] != 6);
				count[v[0]][v[1]]++;
			}
			observe_all(s, cands, 16, gen);
		}
		search_free(s);
	}
	for (a = 0; a < 4; a++)
		for (b = a; b < 4; b++)
			if (count[a][b] < 155 || count[a][b] > 245)
				fail_msg("(P0, P1) = (%zu, %zu) drawn %d times of 2000", a, b,
				         count[a][b]);
	hand_family_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exhaustive_every_point_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exhaustive_skips_seen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_random_valid_and_unseen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_random_is_spread, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_finds_optimum, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_deterministic, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_resume_reproduces, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_design_covers, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_out_of_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_proposal_cost, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_runner_up_and_explore, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_alignment, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_screens_ends_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_size_upper_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_design_after_the_ends, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_relinks_anchors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_alignment_steps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_explores_ends, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_stuck_needs_gain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_evolve_screens_near_ends, setup, teardown),
	    cmocka_unit_test(test_strategy_local),
	    cmocka_unit_test(test_strategy_names),
	    cmocka_unit_test_setup_teardown(test_mutation_stays_in_domain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_breeding_runs_dry, setup, teardown),
	    cmocka_unit_test(test_admit_not_full),
	    cmocka_unit_test(test_admit_not_full_but_regresses_twice),
	    cmocka_unit_test(test_admit_full_better_beyond_noise),
	    cmocka_unit_test(test_admit_full_better_within_noise),
	    cmocka_unit_test(test_admit_full_below_margin),
	    cmocka_unit_test(test_admit_full_better_but_regresses_twice),
	    cmocka_unit_test(test_admit_baseline),
	    cmocka_unit_test_setup_teardown(test_admits_predicts_observe, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_observe_keeps_elite, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_race_bar_big_elite, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_final_candidates_follow_the_rule, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_final_candidates_fittest_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_elite_ties_by_variant, setup, teardown),
	    cmocka_unit_test(test_report_order_of_tied_members),
	    cmocka_unit_test_setup_teardown(test_unknown_strategy, setup, teardown),
	    cmocka_unit_test(test_origin_names),
	    cmocka_unit_test(test_sparse_big_space_fills_generations),
	    cmocka_unit_test(test_wide_param_model),
	    cmocka_unit_test(test_very_sparse_big_space_listed),
	    cmocka_unit_test(test_unlisted_draws_uniform),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
