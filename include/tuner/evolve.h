/* Search strategies (evolve, evolve1, random, exhaustive) behind one interface; elite admission. */
#ifndef TUNER_EVOLVE_H
#define TUNER_EVOLVE_H

#include <stddef.h>

#include "tuner/config.h"
#include "tuner/space.h"

/* Why a candidate was proposed. */
enum origin { ORIGIN_BASELINE, ORIGIN_RANDOM, ORIGIN_MUTATION, ORIGIN_CROSSOVER, ORIGIN_SWEEP };

/* "baseline", "random", "mutation", "crossover", "sweep" */
const char *evolve_origin_name(enum origin o);

struct candidate {
	struct variant va;
	enum origin origin;
	int parent_a, parent_b; /* indices into the breeding pool at proposal time, -1 if none */
};

/* An evaluated, correct variant. */
struct member {
	struct variant va;
	long long id; /* the db's variant id, opaque here */
	/* geo-mean speedup over the suite and its 95% interval */
	double fitness, fitness_lo, fitness_hi;
	/* per shape: baseline median / variant median, and its 95% interval */
	double speedup[TUNER_MAX_SHAPES];
	double speedup_lo[TUNER_MAX_SHAPES], speedup_hi[TUNER_MAX_SHAPES];
	size_t nshapes;
};

struct search;

/* The strategies' names, for messages (test_evolve checks it against the list). */
#define SEARCH_STRATEGIES "evolve, evolve-rf, evolve2, evolve1, random, exhaustive"

/* The strategies search_new() knows, the default first: n of them. */
const char *const *search_strategy_names(size_t *n);

/* 1 if name is a strategy search_new() knows. */
int search_strategy_known(const char *name);

/*
 * 1 if the strategy proposes the best variant's unseen neighbours first
 * (evolve, evolve-rf, evolve2, evolve1), so that compiling them ahead pays.
 */
int search_strategy_local(const char *name);

/*
 * A search over cfg->fam's declared space; strategy is "evolve", "evolve-rf",
 * "evolve2", "evolve1", "random" or "exhaustive" (NULL: cfg->strategy). Elite size and margin come
 * from cfg->elite and cfg->margin. cfg must outlive the search. Every random choice comes from the
 * search's one RNG, seeded at each proposal call from (seed, generation, number of the call within
 * the generation): the same seed and the same observations give the same proposals, and a run
 * resumed by observing its recorded evaluations again, in order, proposes what it would have
 * proposed uninterrupted. NULL after error() for an unknown strategy.
 */
struct search *search_new(const struct config *cfg, const char *strategy, unsigned long long seed);

/*
 * Propose up to max candidates for generation (0-based); returns how many.
 * seen(ctx, va) returns 1 for a configuration already evaluated or proposed
 * (the database's view; NULL: none): such configurations, and those this
 * search proposed or was told about before, are never proposed.
 *
 * Every strategy proposes the baseline first (ORIGIN_BASELINE) until it has
 * been proposed or seen once, since speedups are measured against it.
 * evolve: until two variants are timed, a covering design of valid
 * configurations at the ends of the domains (every param of 4 values or more
 * at its first or last value, the smaller ones at any; pairs spread), then of
 * the rest once those are spent; then a Gaussian-process surrogate of log
 * fitness (an additive kernel of single and paired param effects, and of the
 * alignment of size params) orders the unseen valid points within 3 steps of
 * the best variant and of the runner-up (a size param's steps count its
 * alignment levels), those between the two first, then the nearest, for
 * three quarters of the batch, and fills the rest by expected improvement,
 * half among the end points and half anywhere (all of the batch once two
 * batches' worth of results brought nothing better). Points proposed and not
 * yet observed count as pending: results may arrive in any order. Proposals
 * depend on the observations and the pending points, not on earlier calls'
 * model fits. evolve2 (evolve before round 8): the same without the ends
 * (a covering design of the whole space, no end points among the exploring
 * picks), nearest first, and domain positions as steps.
 * evolve-rf: evolve, with half of the exploring slots (while the run
 * improves) taken by Thompson samples of a random forest fitted beside the
 * process: one tree drawn at random, and among the points it rates best the
 * one of highest expected improvement under the process.
 * evolve1 (the evolution evolve replaced): generation 0 is random valid
 * configurations; later generations first take the unseen one- and two-step
 * neighbours of the breeding pool's best members (the best correct variants
 * seen, at least K of them), then breed (tournament of 2, single-step
 * mutation, uniform crossover) and top up with random ones when breeding runs
 * dry. random: uniform random valid configurations.
 * exhaustive: every point of the declared space in space_point order (valid
 * or not: the pipeline's constraint gate records the rejects), across
 * generations until exhausted. Returns 0 once nothing new can be proposed.
 */
size_t search_propose(struct search *s, int generation, struct candidate *out, size_t max,
                      int (*seen)(void *ctx, const struct variant *va), void *ctx);

/*
 * Report an evaluated variant: m is NULL when a gate rejected it. The variant
 * is never proposed again. Returns 1 if it entered the elite, else 0;
 * search_last_why() says why.
 */
int search_observe(struct search *s, const struct variant *va, const struct member *m);

/*
 * Whether m, the measurement of va, would enter the elite if observed now
 * (search_observe's decision, nothing changed): for work worth spending only
 * on newcomers to the elite, such as the dynamic alignment gate.
 */
int search_admits(struct search *s, const struct variant *va, const struct member *m);

/*
 * The fitness below which a candidate is of no use to the search (it can
 * enter neither the elite nor the breeding pool): the pipeline stops timing
 * such a candidate early (racing). 0 while either is not full.
 */
double search_race_bar(const struct search *s);

/* The one-line reason of the last search_observe() decision ("" before the first). */
const char *search_last_why(const struct search *s);

/*
 * The breeding pool, best first: what candidates' parent indices point into.
 * It holds the elite and the runners-up the admission rule kept out.
 */
size_t search_pool(const struct search *s, const struct member **out, size_t max);

/* The elite, best first (ties broken by variant order), at most max; returns how many. */
size_t search_elite(const struct search *s, const struct member **out, size_t max);

/*
 * Whom the final check (compute-sanitizer) takes, in order: the elite and
 * the pool's runners-up that the admission rule would take into an empty
 * elite (none that regresses against the baseline on two shapes), fittest
 * first. The final elite is the first K of these that pass: the fittest
 * measured, not those that happened to arrive while the elite had room (a
 * runner-up the margin kept out of a full elite is fitter than the member
 * that got in first). A member the check rejects is replaced by the next
 * of these, never by one the rule kept out.
 */
size_t search_final_candidates(const struct search *s, const struct member **out, size_t max);

/*
 * Put an elite, best first, in the order it is reported (stored ranks, top,
 * export): the best measured stays first; below it, members the admission
 * rule cannot tell apart (fitness within margin of the one above, or 95%
 * intervals that overlap: evolve_within_noise) form runs that are listed
 * by variant order, so that two runs that found the same members report
 * them in the same order whatever the noise did to their fitness.
 */
void evolve_report_order(const struct member **m, size_t n, double margin);

/* 1 if a (fitted at least as high as b) is not better than b beyond noise. */
int evolve_within_noise(const struct member *a, const struct member *b, double margin);

/* The search's margin, for evolve_report_order. */
double search_margin(const struct search *s);

void search_free(struct search *s);

/*
 * The admission rule. Returns 1 if cand enters an elite of n members
 * (capacity k), else 0; why (may be NULL) gets a one-line reason.
 * - The baseline (cand == baseline or the same variant) is always admitted.
 * - A newcomer that regresses against the baseline on two or more shapes
 *   (speedup_hi < 1: slower beyond noise) never enters.
 * - While n < k every other correct newcomer enters.
 * - Once full, a newcomer replaces the weakest member only if its fitness is
 *   at least (1 + margin) times the weakest's AND the two 95% intervals do not
 *   overlap (cand->fitness_lo > weakest->fitness_hi).
 * Variants are compared on every slot of va, so unused slots must be zero.
 */
int evolve_admits(const struct member *const *elite, size_t n, size_t k, const struct member *cand,
                  const struct member *baseline, double margin, char *why, size_t whylen);

#endif
