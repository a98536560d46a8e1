/* Search strategies behind one interface (evolve, random, exhaustive) and the elite's admission. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/evolve.h"
#include "tuner/rng.h"

/* ------------------------------------------------------------ tunables */

/* Tournament size: with a small elite (K = 3) a size of 2 keeps the weaker members in play. */
#define TOURNAMENT 2
/* Chance that a bred child comes from crossover rather than mutation, given two or more parents. */
#define CROSSOVER_P 0.3
/* Attempts at one new valid child before breeding counts as dry for the generation. */
#define BREED_TRIES 48
/* Random draws for one new valid configuration before falling back to a scan of the space. */
#define RANDOM_TRIES 256
/* Spaces up to this many points are scanned when random draws keep hitting old or invalid ones. */
#define SCAN_LIMIT (1ULL << 20)
/*
 * Parents come from a breeding pool: the best correct variants seen, at least
 * the elite's K. The elite is what the run reports and must be earned (the
 * admission margin, beyond noise); a close runner-up is still a good parent.
 */
#define POOL_MIN 8
/* Slots of each generation kept from local moves for tournament breeding (mutation, crossover). */
#define NEIGHBOUR_RESERVE 1
#define DEFAULT_ELITE     3
#define DEFAULT_MARGIN    0.03

enum strategy { STRATEGY_EVOLVE, STRATEGY_RANDOM, STRATEGY_EXHAUSTIVE };

static const char *const strategy_names[] = {
    [STRATEGY_EVOLVE] = "evolve",
    [STRATEGY_RANDOM] = "random",
    [STRATEGY_EXHAUSTIVE] = "exhaustive",
};

static const char *const origin_names[] = {
    [ORIGIN_BASELINE] = "baseline",   [ORIGIN_RANDOM] = "random", [ORIGIN_MUTATION] = "mutation",
    [ORIGIN_CROSSOVER] = "crossover", [ORIGIN_SWEEP] = "sweep",
};

const char *evolve_origin_name(enum origin o)
{
	if ((size_t)o >= ARRAY_SIZE(origin_names))
		return "unknown";
	return origin_names[o];
}

/* ------------------------------------------------------- variant sets */

/* An open-addressing hash set of variants (compared on every slot: unused slots are zero). */
struct vset {
	struct variant *keys;
	unsigned char *used;
	size_t cap, n;
};

static unsigned long long mix64(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static unsigned long long variant_hash(const struct variant *va)
{
	unsigned long long h = 0;
	size_t i;

	for (i = 0; i < TUNER_MAX_PARAMS; i++)
		h = mix64(h ^ (unsigned long long)va->v[i]);
	return h;
}

static int variant_same(const struct variant *a, const struct variant *b)
{
	return !memcmp(a->v, b->v, sizeof(a->v));
}

/* Lexicographic order on the values: the tie-break wherever fitness is equal. */
static int variant_cmp(const struct variant *a, const struct variant *b)
{
	size_t i;

	for (i = 0; i < TUNER_MAX_PARAMS; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	return 0;
}

/* The slot holding va, or the empty slot where it would go. */
static size_t vset_slot(const struct vset *set, const struct variant *va)
{
	size_t i = (size_t)variant_hash(va) & (set->cap - 1);

	while (set->used[i] && !variant_same(&set->keys[i], va))
		i = (i + 1) & (set->cap - 1);
	return i;
}

static int vset_has(const struct vset *set, const struct variant *va)
{
	return set->cap && set->used[vset_slot(set, va)];
}

/* Add va; 1 if it was new. */
static int vset_add(struct vset *set, const struct variant *va)
{
	size_t i;

	if (2 * (set->n + 1) > set->cap) {
		struct vset grown = {NULL, NULL, set->cap ? 2 * set->cap : 64, 0};

		grown.keys = xmalloc(grown.cap * sizeof(*grown.keys));
		grown.used = xcalloc(grown.cap, 1);
		for (i = 0; i < set->cap; i++)
			if (set->used[i])
				vset_add(&grown, &set->keys[i]);
		free(set->keys);
		free(set->used);
		*set = grown;
	}
	i = vset_slot(set, va);
	if (set->used[i])
		return 0;
	set->used[i] = 1;
	set->keys[i] = *va;
	set->n++;
	return 1;
}

static void vset_release(struct vset *set)
{
	free(set->keys);
	free(set->used);
	memset(set, 0, sizeof(*set));
}

/* ------------------------------------------------------------- search */

typedef int (*seen_fn)(void *ctx, const struct variant *va);

struct search {
	const struct config *cfg;
	const struct family *fam;
	enum strategy strategy;
	unsigned long long seed;
	struct rng rng;           /* reseeded per proposal call from (seed, generation, call) */
	int generation;           /* of the last proposal call */
	unsigned long long calls; /* proposal calls for that generation */
	size_t k;
	double margin;
	struct variant baseline_va;
	int baseline_done;      /* proposed, observed or seen once */
	struct member baseline; /* its measurement, once observed */
	int have_baseline;
	struct member *elite;       /* best first, at most k */
	const struct member **ptrs; /* k pointers for evolve_admits */
	size_t nelite;
	struct member *pool; /* breeding pool, best first */
	size_t npool, pool_cap;
	struct vset known;         /* proposed, observed, or reported seen */
	unsigned long long size;   /* points in the declared space */
	unsigned long long cursor; /* exhaustive: the next space_point index */
	int random_dry;            /* a full scan found nothing new and valid */
	char why[256];
};

/* Zero the slots past the family's params so that variants compare on their values only. */
static void normalize(const struct search *s, struct variant *va)
{
	size_t i;

	for (i = s->fam->nparams; i < TUNER_MAX_PARAMS; i++)
		va->v[i] = 0;
}

struct search *search_new(const struct config *cfg, const char *strategy, unsigned long long seed)
{
	struct search *s;
	size_t i;
	int which = -1;

	if (!strategy)
		strategy = cfg->strategy ? cfg->strategy : "evolve";
	for (i = 0; i < ARRAY_SIZE(strategy_names); i++)
		if (!strcmp(strategy, strategy_names[i]))
			which = (int)i;
	if (which < 0) {
		error("unknown strategy '%s' (evolve, random, exhaustive)", strategy);
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->cfg = cfg;
	s->fam = &cfg->fam;
	s->strategy = (enum strategy)which;
	s->seed = seed;
	s->generation = INT_MIN;
	rng_seed(&s->rng, seed);
	s->k = cfg->elite > 0 ? (size_t)cfg->elite : DEFAULT_ELITE;
	s->margin = isfinite(cfg->margin) && cfg->margin >= 0 ? cfg->margin : DEFAULT_MARGIN;
	s->elite = xcalloc(s->k, sizeof(*s->elite));
	s->ptrs = xcalloc(s->k, sizeof(*s->ptrs));
	s->pool_cap = s->k > POOL_MIN ? s->k : POOL_MIN;
	s->pool = xcalloc(s->pool_cap, sizeof(*s->pool));
	memset(&s->baseline_va, 0, sizeof(s->baseline_va));
	space_baseline(s->fam, &s->baseline_va);
	normalize(s, &s->baseline_va);
	s->size = space_size(s->fam);
	return s;
}

void search_free(struct search *s)
{
	if (!s)
		return;
	vset_release(&s->known);
	free(s->elite);
	free(s->ptrs);
	free(s->pool);
	free(s);
}

/* 1 if va passes every constraint on every shape of the suite (an evaluation error fails it). */
static int satisfies_constraints(const struct search *s, const struct variant *va)
{
	const struct config *cfg = s->cfg;
	size_t nshapes = cfg->nshapes ? cfg->nshapes : 1;
	struct space_scope sc;
	struct expr_err err;
	long long v;
	size_t i, j;

	for (j = 0; j < nshapes; j++) {
		space_scope_init(&sc, cfg, va, cfg->nshapes ? &cfg->shapes[j] : NULL);
		for (i = 0; i < s->fam->nconstraints; i++)
			if (expr_eval(s->fam->constraints[i].e, &sc.scope, &v, &err) < 0 || !v)
				return 0;
	}
	return 1;
}

/* 1 if va is neither known to this search nor seen by the caller (a seen one is remembered). */
static int is_new(struct search *s, const struct variant *va, seen_fn seen, void *ctx)
{
	if (vset_has(&s->known, va))
		return 0;
	if (seen && seen(ctx, va)) {
		vset_add(&s->known, va);
		return 0;
	}
	return 1;
}

/* Cheapest test first: the set, then the constraints, then the caller's (database) lookup. */
static int is_new_valid(struct search *s, const struct variant *va, seen_fn seen, void *ctx)
{
	if (vset_has(&s->known, va) || !satisfies_constraints(s, va))
		return 0;
	return is_new(s, va, seen, ctx);
}

static void emit(struct search *s, struct candidate *c, const struct variant *va, enum origin o,
                 int parent_a, int parent_b)
{
	c->va = *va;
	c->origin = o;
	c->parent_a = parent_a;
	c->parent_b = parent_b;
	vset_add(&s->known, va);
}

/* ------------------------------------------------------ random points */

static void random_point(struct search *s, struct variant *va)
{
	size_t i;

	memset(va, 0, sizeof(*va));
	for (i = 0; i < s->fam->nparams; i++) {
		const struct param *p = &s->fam->params[i];

		va->v[i] = p->values[rng_below(&s->rng, p->nvalues)];
	}
}

/*
 * A new valid configuration drawn uniformly at random. When draws keep hitting
 * old or invalid points, a small space is scanned from a random offset, so
 * that the last valid points are still found; 0 when none is left.
 */
static int random_new(struct search *s, struct variant *out, seen_fn seen, void *ctx)
{
	unsigned long long start, j;
	int t;

	if (s->random_dry || !s->size)
		return 0;
	for (t = 0; t < RANDOM_TRIES; t++) {
		random_point(s, out);
		if (is_new_valid(s, out, seen, ctx))
			return 1;
	}
	if (s->size > SCAN_LIMIT)
		return 0;
	start = rng_below(&s->rng, s->size);
	for (j = 0; j < s->size; j++) {
		memset(out, 0, sizeof(*out));
		space_point(s->fam, (start + j) % s->size, out);
		normalize(s, out);
		if (is_new_valid(s, out, seen, ctx))
			return 1;
	}
	/* The known set only grows, so nothing will turn up later either. */
	s->random_dry = 1;
	return 0;
}

/* ------------------------------------------------------------ breeding */

/* The better of TOURNAMENT members drawn with replacement: the pool is sorted, lower is better. */
static size_t tournament(struct search *s)
{
	size_t best = (size_t)rng_below(&s->rng, s->npool), i, c;

	for (i = 1; i < TOURNAMENT; i++) {
		c = (size_t)rng_below(&s->rng, s->npool);
		if (c < best)
			best = c;
	}
	return best;
}

static long long domain_index(const struct param *p, long long value)
{
	size_t i;

	for (i = 0; i < p->nvalues; i++)
		if (p->values[i] == value)
			return (long long)i;
	return -1;
}

/* Step one parameter to a neighbouring value of its domain (index +-1; inward at the ends). */
static void mutate(struct search *s, const struct variant *parent, struct variant *child)
{
	size_t movable[TUNER_MAX_PARAMS], nmovable = 0, i;
	const struct param *p;
	long long idx, last;

	*child = *parent;
	for (i = 0; i < s->fam->nparams; i++)
		if (s->fam->params[i].nvalues > 1)
			movable[nmovable++] = i;
	if (!nmovable)
		return;
	i = movable[rng_below(&s->rng, nmovable)];
	p = &s->fam->params[i];
	last = (long long)p->nvalues - 1;
	idx = domain_index(p, parent->v[i]);
	if (idx < 0)
		/* a parent from outside the domain (set by hand): back into it */
		idx = (long long)rng_below(&s->rng, p->nvalues);
	else if (idx == 0)
		idx = 1;
	else if (idx == last)
		idx = last - 1;
	else
		idx += rng_below(&s->rng, 2) ? 1 : -1;
	child->v[i] = p->values[idx];
}

/* Uniform crossover: each parameter from either parent with probability 1/2. */
static void crossover(struct search *s, const struct variant *a, const struct variant *b,
                      struct variant *child)
{
	size_t i;

	*child = *a;
	for (i = 0; i < s->fam->nparams; i++)
		if (rng_below(&s->rng, 2))
			child->v[i] = b->v[i];
}

/* One new valid child of the elite in c, or 0 after BREED_TRIES attempts. */
static int breed(struct search *s, struct candidate *c, seen_fn seen, void *ctx)
{
	struct variant child;
	size_t a, b;
	int t;

	for (t = 0; t < BREED_TRIES; t++) {
		a = tournament(s);
		if (s->npool >= 2 && rng_double(&s->rng) < CROSSOVER_P) {
			b = tournament(s);
			if (b == a)
				b = (a + 1 + (size_t)rng_below(&s->rng, s->npool - 1)) % s->npool;
			crossover(s, &s->pool[a].va, &s->pool[b].va, &child);
			if (is_new_valid(s, &child, seen, ctx)) {
				emit(s, c, &child, ORIGIN_CROSSOVER, (int)a, (int)b);
				return 1;
			}
			continue;
		}
		mutate(s, &s->pool[a].va, &child);
		if (is_new_valid(s, &child, seen, ctx)) {
			emit(s, c, &child, ORIGIN_MUTATION, (int)a, -1);
			return 1;
		}
	}
	return 0;
}

/* child = va with param i moved step domain positions; 0 when that leaves the domain. */
static int step_param(const struct family *fam, const struct variant *va, size_t i, int step,
                      struct variant *child)
{
	const struct param *p = &fam->params[i];
	long long idx = domain_index(p, va->v[i]);

	if (idx < 0 || idx + step < 0 || idx + step >= (long long)p->nvalues)
		return 0;
	*child = *va;
	child->v[i] = p->values[idx + step];
	return 1;
}

/* The next unseen valid variant one domain step from va in one param (dist 1) or two (dist 2). */
static int neighbour_of(struct search *s, const struct variant *va, int dist, struct variant *out,
                        seen_fn seen, void *ctx)
{
	size_t n = s->fam->nparams, i, j;
	struct variant one;
	int a, b;

	for (i = 0; i < n; i++)
		for (a = -1; a <= 1; a += 2) {
			if (!step_param(s->fam, va, i, a, &one))
				continue;
			if (dist == 1) {
				if (is_new_valid(s, &one, seen, ctx)) {
					*out = one;
					return 1;
				}
				continue;
			}
			for (j = i + 1; j < n; j++)
				for (b = -1; b <= 1; b += 2)
					if (step_param(s->fam, &one, j, b, out) &&
					    is_new_valid(s, out, seen, ctx))
						return 1;
		}
	return 0;
}

/*
 * Best-first local search over the breeding pool: the next unseen valid
 * neighbour one step away (in one param) from the best member that still has
 * one, else two steps away (two params at once, which crosses the valleys
 * that coupled params make, such as a block size and the warps that must
 * divide it, or a swizzle and a padding that do the same job). 0 when the
 * pool's neighbourhoods are spent.
 */
static int best_neighbour(struct search *s, struct candidate *c, seen_fn seen, void *ctx)
{
	struct variant child;
	size_t r;
	int dist;

	for (r = 0; r < s->npool; r++)
		for (dist = 1; dist <= 2; dist++)
			if (neighbour_of(s, &s->pool[r].va, dist, &child, seen, ctx)) {
				emit(s, c, &child, ORIGIN_MUTATION, (int)r, -1);
				return 1;
			}
	return 0;
}

/* ------------------------------------------------------------ proposal */

/*
 * The draws of a proposal call depend on (seed, generation, call number within
 * the generation) and the observations only, not on how many draws earlier
 * calls made: a run resumed from the database, with its evaluations observed
 * again in order, proposes what the uninterrupted run would have.
 */
static void reseed(struct search *s, int generation)
{
	unsigned long long h;

	if (generation != s->generation) {
		s->generation = generation;
		s->calls = 0;
	}
	h = mix64(s->seed);
	h = mix64(h ^ (unsigned long long)(long long)generation);
	h = mix64(h ^ s->calls++);
	rng_seed(&s->rng, h);
}

size_t search_propose(struct search *s, int generation, struct candidate *out, size_t max,
                      int (*seen)(void *ctx, const struct variant *va), void *ctx)
{
	struct variant va;
	size_t n = 0;
	int dry = 0;

	if (!max)
		return 0;
	reseed(s, generation);
	if (!s->baseline_done) {
		s->baseline_done = 1;
		if (is_new(s, &s->baseline_va, seen, ctx))
			emit(s, &out[n++], &s->baseline_va, ORIGIN_BASELINE, -1, -1);
	}
	switch (s->strategy) {
	case STRATEGY_EXHAUSTIVE:
		while (n < max && s->cursor < s->size) {
			memset(&va, 0, sizeof(va));
			space_point(s->fam, s->cursor++, &va);
			normalize(s, &va);
			if (is_new(s, &va, seen, ctx))
				emit(s, &out[n++], &va, ORIGIN_SWEEP, -1, -1);
		}
		break;
	case STRATEGY_RANDOM:
		while (n < max && random_new(s, &va, seen, ctx))
			emit(s, &out[n++], &va, ORIGIN_RANDOM, -1, -1);
		break;
	case STRATEGY_EVOLVE:
		/* exploit first: the best's unseen neighbours, up to a share of the generation */
		while (generation > 0 && s->npool && n + NEIGHBOUR_RESERVE < max &&
		       best_neighbour(s, &out[n], seen, ctx))
			n++;
		while (n < max) {
			if (generation > 0 && s->npool && !dry) {
				if (breed(s, &out[n], seen, ctx)) {
					n++;
					continue;
				}
				dry = 1; /* the elite's neighbourhood is spent: top up at random */
			}
			if (!random_new(s, &va, seen, ctx))
				break;
			emit(s, &out[n++], &va, ORIGIN_RANDOM, -1, -1);
		}
		break;
	}
	return n;
}

/* ----------------------------------------------------------- admission */

/* Best first: higher fitness, NaN last, ties by variant order. */
static int member_cmp(const struct member *a, const struct member *b)
{
	int na = isnan(a->fitness), nb = isnan(b->fitness);

	if (na || nb) {
		if (na != nb)
			return na - nb;
	} else if (a->fitness != b->fitness) {
		return a->fitness > b->fitness ? -1 : 1;
	}
	return variant_cmp(&a->va, &b->va);
}

static int member_qsort_cmp(const void *a, const void *b)
{
	return member_cmp(a, b);
}

/* Append the shapes where cand is slower than the baseline beyond noise; returns how many. */
static size_t regressions(const struct member *cand, struct strbuf *sb)
{
	size_t nshapes = cand->nshapes < TUNER_MAX_SHAPES ? cand->nshapes : TUNER_MAX_SHAPES;
	size_t i, n = 0;

	for (i = 0; i < nshapes; i++) {
		if (!(cand->speedup_hi[i] < 1))
			continue;
		sb_addf(sb, "%sshape %zu x%.3f [%.3f, %.3f]", n ? ", " : "", i, cand->speedup[i],
		        cand->speedup_lo[i], cand->speedup_hi[i]);
		n++;
	}
	return n;
}

static int verdict(char *why, size_t whylen, int admitted, const char *fmt, ...) TUNER_PRINTF(4, 5);

static int verdict(char *why, size_t whylen, int admitted, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return admitted;
}

int evolve_admits(const struct member *const *elite, size_t n, size_t k, const struct member *cand,
                  const struct member *baseline, double margin, char *why, size_t whylen)
{
	struct strbuf sb = STRBUF_INIT;
	const struct member *weakest;
	size_t i, nreg;
	double need;
	int ret;

	if (baseline && (cand == baseline || variant_same(&cand->va, &baseline->va)))
		return verdict(why, whylen, 1, "admitted: the baseline is always admitted");
	if (!isfinite(cand->fitness) || cand->fitness <= 0)
		return verdict(why, whylen, 0, "refused: fitness %g is not a positive number",
		               cand->fitness);
	nreg = regressions(cand, &sb);
	if (nreg >= 2) {
		ret = verdict(why, whylen, 0,
		              "refused: regresses against the baseline on %zu shapes (%s)", nreg,
		              sb.buf);
		sb_release(&sb);
		return ret;
	}
	sb_release(&sb);
	if (n < k)
		return verdict(why, whylen, 1,
		               "admitted: fitness %.3f, the elite has %zu of %zu members",
		               cand->fitness, n, k);
	if (!n)
		return verdict(why, whylen, 0, "refused: the elite holds no members");
	weakest = elite[0];
	for (i = 1; i < n; i++)
		if (member_cmp(elite[i], weakest) > 0)
			weakest = elite[i];
	need = weakest->fitness * (1 + margin);
	if (!(cand->fitness >= need))
		return verdict(
		    why, whylen, 0,
		    "refused: fitness %.3f does not beat the weakest elite's %.3f by the "
		    "%.0f%% margin (needs %.3f)",
		    cand->fitness, weakest->fitness, margin * 100, need);
	if (!(cand->fitness_lo > weakest->fitness_hi))
		return verdict(why, whylen, 0,
		               "refused: fitness %.3f [%.3f, %.3f] overlaps the weakest elite's "
		               "%.3f [%.3f, %.3f]: within noise",
		               cand->fitness, cand->fitness_lo, cand->fitness_hi, weakest->fitness,
		               weakest->fitness_lo, weakest->fitness_hi);
	return verdict(why, whylen, 1,
	               "admitted: fitness %.3f [%.3f, %.3f] beats the weakest elite's %.3f [%.3f, "
	               "%.3f] by %.1f%%, beyond noise",
	               cand->fitness, cand->fitness_lo, cand->fitness_hi, weakest->fitness,
	               weakest->fitness_lo, weakest->fitness_hi,
	               (cand->fitness / weakest->fitness - 1) * 100);
}

/* ---------------------------------------------------------- observing */

/* Keep the pool_cap best correct variants, best first. */
static void pool_add(struct search *s, const struct member *m)
{
	size_t i;

	if (isnan(m->fitness))
		return;
	for (i = 0; i < s->npool; i++)
		if (variant_same(&s->pool[i].va, &m->va))
			return;
	if (s->npool < s->pool_cap)
		s->pool[s->npool++] = *m;
	else if (member_cmp(m, &s->pool[s->npool - 1]) < 0)
		s->pool[s->npool - 1] = *m;
	else
		return;
	qsort(s->pool, s->npool, sizeof(*s->pool), member_qsort_cmp);
}

/*
 * Whether cand (normalised) enters the elite as it stands: the admission rule,
 * with the baseline as observed (or cand itself when it is the baseline).
 */
static int would_admit(struct search *s, const struct member *cand, char *why, size_t whylen)
{
	const struct member *baseline = NULL;
	size_t i;

	if (variant_same(&cand->va, &s->baseline_va))
		baseline = cand;
	else if (s->have_baseline)
		baseline = &s->baseline;
	for (i = 0; i < s->nelite; i++) {
		if (variant_same(&s->elite[i].va, &cand->va)) {
			snprintf(why, whylen, "refused: already in the elite");
			return 0;
		}
		s->ptrs[i] = &s->elite[i];
	}
	return evolve_admits(s->ptrs, s->nelite, s->k, cand, baseline, s->margin, why, whylen);
}

int search_admits(struct search *s, const struct variant *va, const struct member *m)
{
	struct member cand = *m;

	cand.va = *va;
	normalize(s, &cand.va);
	return would_admit(s, &cand, NULL, 0);
}

int search_observe(struct search *s, const struct variant *va, const struct member *m)
{
	struct member cand;
	struct variant v = *va;

	normalize(s, &v);
	vset_add(&s->known, &v);
	if (variant_same(&v, &s->baseline_va))
		s->baseline_done = 1;
	if (!m) {
		snprintf(s->why, sizeof(s->why), "refused: rejected by a gate");
		return 0;
	}
	cand = *m;
	cand.va = v;
	if (variant_same(&v, &s->baseline_va)) {
		s->baseline = cand;
		s->have_baseline = 1;
	}
	pool_add(s, &cand);
	if (!would_admit(s, &cand, s->why, sizeof(s->why)))
		return 0;
	/* Sorted best first, so the weakest is the last. */
	if (s->nelite < s->k)
		s->elite[s->nelite++] = cand;
	else
		s->elite[s->nelite - 1] = cand;
	qsort(s->elite, s->nelite, sizeof(*s->elite), member_qsort_cmp);
	return 1;
}

const char *search_last_why(const struct search *s)
{
	return s->why;
}

size_t search_pool(const struct search *s, const struct member **out, size_t max)
{
	size_t i, n = s->npool < max ? s->npool : max;

	for (i = 0; i < n; i++)
		out[i] = &s->pool[i];
	return n;
}

size_t search_elite(const struct search *s, const struct member **out, size_t max)
{
	size_t i, n = s->nelite < max ? s->nelite : max;

	for (i = 0; i < n; i++)
		out[i] = &s->elite[i];
	return n;
}

/* ---------------------------------------------------------------- racing */

double search_race_bar(const struct search *s)
{
	const struct member *pool[64], *elite[64];
	size_t np = search_pool(s, pool, ARRAY_SIZE(pool));
	size_t ne = search_elite(s, elite, ARRAY_SIZE(elite));
	double bar;

	/*
	 * A candidate worth finishing could enter the elite or the breeding pool:
	 * the bar is the lower of the two, and only once both are full.
	 */
	if (ne < s->k || np < s->pool_cap)
		return 0;
	bar = elite[ne - 1]->fitness * (1 + s->margin);
	if (pool[np - 1]->fitness < bar)
		bar = pool[np - 1]->fitness;
	return bar > 0 ? bar : 0;
}
