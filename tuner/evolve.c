/* Search strategies behind one interface (evolve, evolve1, random, exhaustive); elite admission. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/evolve.h"
#include "tuner/forest.h"
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
/*
 * A space too big to scan is drawn from this many times before it counts as
 * dry: where 2% of the declared points are valid (the benchmark hub's hotspot
 * space), 256 draws miss once in 120, which cut generations short.
 */
#define RANDOM_TRIES_BIG (1 << 16)
/* Spaces up to this many points are scanned when random draws keep hitting old or invalid ones. */
#define SCAN_LIMIT (1ULL << 20)
/*
 * A bigger space has its valid points listed once, by a walk that leaves a
 * branch as soon as a constraint on the params it has set fails, when that
 * takes at most LIST_NODES steps and finds at most LIST_MAX points (8 bytes
 * each); draws then come from the list. Drawing at random takes a thousand
 * draws per valid point where 0.1% of the points are valid, and gives up
 * where fewer than 1 in RANDOM_TRIES_BIG are.
 */
#define LIST_MAX   (1u << 22)
#define LIST_NODES (1ULL << 24)
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
/*
 * evolve screens the ends of the domains: its first design, and half of the
 * picks of every batch that go by expected improvement, are end points, where
 * every param of this many values or more is at its first value or its upper
 * end (its last, or for a size its largest most aligned value: upper_end();
 * a smaller param may take any of its values: its middle is as cheap to see).
 */
#define END_MIN_VALUES 4
/* A space too big to enumerate: end points drawn per proposal, beside the random candidates. */
#define END_DRAWS 1024

/*
 * evolve: the surrogate-guided search (below); evolve-rf: the same with a
 * random forest's samples in part of each batch (round 4, not the default);
 * evolve2: evolve as it was before it screened the ends of the domains (rounds
 * 2 to 7); evolve1: the evolution evolve replaced. The older ones are kept so
 * that they can be compared on the same landscapes.
 */
enum strategy {
	STRATEGY_EVOLVE,
	STRATEGY_EVOLVE_RF,
	STRATEGY_EVOLVE2,
	STRATEGY_EVOLVE1,
	STRATEGY_RANDOM,
	STRATEGY_EXHAUSTIVE
};

static const char *const strategy_names[] = {
    [STRATEGY_EVOLVE] = "evolve",   [STRATEGY_EVOLVE_RF] = "evolve-rf",
    [STRATEGY_EVOLVE2] = "evolve2", [STRATEGY_EVOLVE1] = "evolve1",
    [STRATEGY_RANDOM] = "random",   [STRATEGY_EXHAUSTIVE] = "exhaustive",
};

/* The strategy called name, or -1. */
static int strategy_of(const char *name)
{
	size_t i;

	for (i = 0; name && i < ARRAY_SIZE(strategy_names); i++)
		if (!strcmp(name, strategy_names[i]))
			return (int)i;
	return -1;
}

const char *const *search_strategy_names(size_t *n)
{
	*n = ARRAY_SIZE(strategy_names);
	return strategy_names;
}

int search_strategy_known(const char *name)
{
	return strategy_of(name) >= 0;
}

int search_strategy_local(const char *name)
{
	const int which = strategy_of(name);

	return which == STRATEGY_EVOLVE || which == STRATEGY_EVOLVE_RF ||
	       which == STRATEGY_EVOLVE2 || which == STRATEGY_EVOLVE1;
}

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

/*
 * Each value times its own odd constant, summed, then mixed once: the
 * products do not wait on one another, as a chain of mixes does. A sparse
 * space draws thousands of points per candidate, each looked up here.
 */
static unsigned long long variant_hash(const struct variant *va)
{
	unsigned long long h = 0;
	size_t i;

	for (i = 0; i < TUNER_MAX_PARAMS; i++)
		h += (unsigned long long)va->v[i] * (0x9e3779b97f4a7c15ULL * (2 * i + 1));
	return mix64(h);
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
	int listed;                /* the valid points of a big space: 1 listed, -1 too many */
	unsigned long long *list;  /* their space_point indices, in that order */
	size_t nlist, list_alloc;
	struct lister *lister; /* what checks a constraint as soon as its params are set */
	char why[256];
	struct model *model; /* evolve: observations, candidates, surrogate */
};

static void model_free(struct model *m);
static size_t param_upper_end(const struct model *m, size_t param);
static struct model *model_new(const struct search *s);
static void lister_free(struct lister *l);
static void model_observe(struct search *s, const struct variant *va, const struct member *m);
static size_t model_propose(struct search *s, struct candidate *out, size_t n, size_t max,
                            seen_fn seen, void *ctx);

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
	int which;

	if (!strategy)
		strategy = cfg->strategy ? cfg->strategy : "evolve";
	which = strategy_of(strategy);
	if (which < 0) {
		error("unknown strategy '%s' (%s)", strategy, SEARCH_STRATEGIES);
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
	if (s->strategy == STRATEGY_EVOLVE || s->strategy == STRATEGY_EVOLVE_RF ||
	    s->strategy == STRATEGY_EVOLVE2)
		s->model = model_new(s);
	return s;
}

void search_free(struct search *s)
{
	if (!s)
		return;
	model_free(s->model);
	vset_release(&s->known);
	free(s->list);
	lister_free(s->lister);
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
 * A point at random among the ends: every param of END_MIN_VALUES values or
 * more at its first value or its upper end (its last, or a size's most
 * aligned), the smaller ones at any value.
 */
static void end_point(struct search *s, struct variant *va)
{
	size_t i;

	memset(va, 0, sizeof(*va));
	for (i = 0; i < s->fam->nparams; i++) {
		const struct param *p = &s->fam->params[i];

		if (p->nvalues >= END_MIN_VALUES)
			va->v[i] =
			    p->values[rng_below(&s->rng, 2) ? param_upper_end(s->model, i) : 0];
		else
			va->v[i] = p->values[rng_below(&s->rng, p->nvalues)];
	}
}

/* ------------------------------------------- the valid points of a big space */

struct lister {
	const struct family *fam;
	struct space_scope sc[TUNER_MAX_SHAPES]; /* one per shape, params first */
	size_t nshapes;
	size_t *con;                        /* the constraints by level: the params they need */
	size_t first[TUNER_MAX_PARAMS + 2]; /* con[first[d] .. first[d + 1]) need params 0..d-1 */
	unsigned long long nodes;
	struct search *s;
};

struct level_ctx {
	const struct family *fam;
	int level;
};

static int level_of_ident(const char *name, int col, void *ctx)
{
	struct level_ctx *c = ctx;
	int i = family_param_index(c->fam, name);

	(void)col;
	if (i + 1 > c->level)
		c->level = i + 1;
	return 0;
}

/* Whether the constraints that depth d completes hold on every shape. */
static int level_holds(struct lister *l, size_t d)
{
	const struct family *fam = l->fam;
	struct expr_err err;
	long long v;
	size_t i, j;

	for (i = l->first[d]; i < l->first[d + 1]; i++)
		for (j = 0; j < l->nshapes; j++)
			if (expr_eval(fam->constraints[l->con[i]].e, &l->sc[j].scope, &v, &err) <
			        0 ||
			    !v)
				return 0;
	return 1;
}

/* Params d.. of the points below idx (params 0..d-1 set); -1 when past a limit. */
static int list_from(struct lister *l, size_t d, unsigned long long idx)
{
	const struct param *p;
	size_t k, j;

	if (++l->nodes > LIST_NODES)
		return -1;
	if (!level_holds(l, d))
		return 0;
	if (d == l->fam->nparams) {
		struct search *s = l->s;

		if (s->nlist == LIST_MAX)
			return -1;
		ALLOC_GROW(s->list, s->nlist + 1, s->list_alloc);
		s->list[s->nlist++] = idx;
		return 0;
	}
	p = &l->fam->params[d];
	for (k = 0; k < p->nvalues; k++) {
		for (j = 0; j < l->nshapes; j++)
			l->sc[j].vars[d].value = p->values[k];
		if (list_from(l, d + 1, idx * p->nvalues + k) < 0)
			return -1;
	}
	return 0;
}

static void lister_free(struct lister *l)
{
	if (!l)
		return;
	free(l->con);
	free(l);
}

/* The level of every constraint, and a scope per shape (params at 0). */
static struct lister *lister_new(struct search *s)
{
	const struct config *cfg = s->cfg;
	struct lister *l = xcalloc(1, sizeof(*l));
	size_t i, d, k, n = s->fam->nconstraints;
	int *level = xcalloc(n + 1, sizeof(*level));
	struct variant zero;

	l->fam = s->fam;
	l->s = s;
	for (i = 0; i < n; i++) {
		struct level_ctx c = {s->fam, 0};

		expr_foreach_ident(s->fam->constraints[i].e, level_of_ident, &c);
		level[i] = c.level;
	}
	l->con = xcalloc(n + 1, sizeof(*l->con));
	for (d = 0, k = 0; d <= s->fam->nparams; d++) {
		for (i = 0; i < n; i++)
			if (level[i] == (int)d)
				l->con[k++] = i;
		l->first[d + 1] = k;
	}
	free(level);
	memset(&zero, 0, sizeof(zero));
	l->nshapes = cfg->nshapes ? cfg->nshapes : 1;
	for (i = 0; i < l->nshapes; i++)
		space_scope_init(&l->sc[i], cfg, &zero, cfg->nshapes ? &cfg->shapes[i] : NULL);
	return l;
}

/*
 * List the valid points of a space too big to scan, once: depth first in
 * space_point order, each constraint checked as soon as the params it names
 * are set, on every shape. 1 when listed; 0 when past LIST_NODES steps or
 * LIST_MAX points, and draws stay random.
 */
static int list_valid(struct search *s)
{
	if (s->listed)
		return s->listed > 0;
	s->listed = -1;
	s->lister = lister_new(s);
	if (s->size == ULLONG_MAX) /* saturated: no index fits */
		return 0;
	if (list_from(s->lister, 0, 0) == 0 && s->nlist) {
		s->listed = 1;
	} else {
		free(s->list);
		s->list = NULL;
		s->nlist = s->list_alloc = 0;
	}
	return s->listed > 0;
}

/*
 * A point at random, each param drawn in turn until a constraint on those
 * drawn fails: 1 when it is valid. Uniform over the valid points, as a
 * whole draw and a check would be, with fewer draws and checks.
 */
static int draw_checked(struct search *s, struct variant *va)
{
	struct lister *l = s->lister;
	size_t d, j;

	memset(va, 0, sizeof(*va));
	for (d = 0; d < s->fam->nparams; d++) {
		const struct param *p = &s->fam->params[d];

		if (!level_holds(l, d))
			return 0;
		va->v[d] = p->values[rng_below(&s->rng, p->nvalues)];
		for (j = 0; j < l->nshapes; j++)
			l->sc[j].vars[d].value = va->v[d];
	}
	return level_holds(l, d);
}

/* A new point of the list, at random, then by a scan from a random offset; 0 when none. */
static int listed_new(struct search *s, struct variant *out, seen_fn seen, void *ctx)
{
	unsigned long long start, j;
	int t;

	if (!s->nlist) /* list_valid() keeps a list only when it has points */
		BUG("drawing from an empty list of valid points");
	for (t = 0; t < RANDOM_TRIES; t++) {
		space_point(s->fam, s->list[rng_below(&s->rng, s->nlist)], out);
		normalize(s, out);
		if (is_new(s, out, seen, ctx))
			return 1;
	}
	start = rng_below(&s->rng, s->nlist);
	for (j = 0; j < s->nlist; j++) {
		space_point(s->fam, s->list[(start + j) % s->nlist], out);
		normalize(s, out);
		if (is_new(s, out, seen, ctx))
			return 1;
	}
	s->random_dry = 1;
	return 0;
}

/*
 * A new valid configuration drawn uniformly at random. When draws keep hitting
 * old or invalid points, a small space is scanned from a random offset, so
 * that the last valid points are still found; a big one is drawn from its
 * list of valid points where it has one, else for longer; 0 when none is
 * left (or none was found).
 */
static int random_new(struct search *s, struct variant *out, seen_fn seen, void *ctx)
{
	unsigned long long start, j;
	int t;

	if (s->random_dry || !s->size)
		return 0;
	if (s->size > SCAN_LIMIT) {
		if (list_valid(s))
			return listed_new(s, out, seen, ctx);
		for (t = 0; t < RANDOM_TRIES_BIG; t++)
			if (draw_checked(s, out) && is_new(s, out, seen, ctx))
				return 1;
		return 0;
	}
	for (t = 0; t < RANDOM_TRIES; t++) {
		random_point(s, out);
		if (is_new_valid(s, out, seen, ctx))
			return 1;
	}
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
	idx = space_value_index(p, parent->v[i]);
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
	long long idx = space_value_index(p, va->v[i]);

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
	case STRATEGY_EVOLVE_RF:
	case STRATEGY_EVOLVE2:
		n = model_propose(s, out, n, max, seen, ctx);
		break;
	case STRATEGY_EVOLVE1:
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

static int member_ptr_cmp(const void *a, const void *b)
{
	return member_cmp(*(const struct member *const *)a, *(const struct member *const *)b);
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
	if (s->model)
		model_observe(s, &v, m);
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

size_t search_final_candidates(const struct search *s, const struct member **out, size_t max)
{
	size_t n = search_elite(s, out, max), i, j;

	for (i = 0; i < s->npool && n < max; i++) {
		const struct member *m = &s->pool[i], *baseline = NULL;

		for (j = 0; j < s->nelite && !variant_same(&s->elite[j].va, &m->va); j++)
			;
		if (j < s->nelite)
			continue;
		if (variant_same(&m->va, &s->baseline_va))
			baseline = m;
		else if (s->have_baseline)
			baseline = &s->baseline;
		if (evolve_admits(NULL, 0, 1, m, baseline, s->margin, NULL, 0))
			out[n++] = m;
	}
	/* the fittest first, whichever of them arrived in time to be admitted */
	qsort(out, n, sizeof(*out), member_ptr_cmp);
	return n;
}

double search_margin(const struct search *s)
{
	return s->margin;
}

int evolve_within_noise(const struct member *a, const struct member *b, double margin)
{
	return !(a->fitness >= b->fitness * (1 + margin) && a->fitness_lo > b->fitness_hi);
}

static int member_ptr_variant_cmp(const void *a, const void *b)
{
	const struct member *const *x = a, *const *y = b;

	return variant_cmp(&(*x)->va, &(*y)->va);
}

void evolve_report_order(const struct member **m, size_t n, double margin)
{
	size_t i = 1, j;

	while (i < n) {
		for (j = i; j + 1 < n && evolve_within_noise(m[j], m[j + 1], margin); j++)
			;
		qsort(m + i, j - i + 1, sizeof(*m), member_ptr_variant_cmp);
		i = j + 1;
	}
}

/* ---------------------------------------------------------------- racing */

double search_race_bar(const struct search *s)
{
	double bar;

	/*
	 * An exhaustive sweep measures every point in full: it is the landscape
	 * searches are judged against (a replay fixture), and a point stopped
	 * early would be a hole in it.
	 */
	if (s->strategy == STRATEGY_EXHAUSTIVE)
		return 0;
	/*
	 * A candidate worth finishing could enter the elite or the breeding pool:
	 * the bar is the lower of the two, and only once both are full (both are
	 * kept sorted, best first, and never hold more than k and pool_cap).
	 */
	if (!s->nelite || !s->npool || s->nelite < s->k || s->npool < s->pool_cap)
		return 0;
	bar = s->elite[s->nelite - 1].fitness * (1 + s->margin);
	if (s->pool[s->npool - 1].fitness < bar)
		bar = s->pool[s->npool - 1].fitness;
	return bar > 0 ? bar : 0;
}

/* -------------------------------------------------- evolve: the surrogate */

/* Spaces up to this many points are enumerated once: every valid point is a candidate. */
#define ENUM_LIMIT (1ULL << 18)
/* Otherwise the candidates of a proposal are this many random valid points. */
#define SAMPLE_CANDIDATES 4096
/* The model learns from at most this many observations: the best half and the latest. */
#define MODEL_MAX_OBS 160
/* Its length scales are fitted on the first this many of those. */
#define HYPER_MAX_OBS 96
/* Pair tables up to this many cells are kept by the design; bigger pairs count singly only. */
#define PAIR_CELLS 4096
/* The incumbent's neighbourhood: points within this many domain steps of it. */
#define RADIUS 3
/* After this many batches in a row without progress (progress_at), the neighbourhood is left. */
#define STUCK 2
/* evolve: progress is a point this much better than the incumbent was (a gain, not a creep). */
#define STUCK_GAIN 0.01
/* The neighbourhoods searched: of the best point and of the runners-up, this many in all. */
#define ANCHORS 2
/* Of each batch, one slot in this many is kept from them for expected improvement anywhere. */
#define EXPLORE 4
/* evolve-rf: trees in the forest whose samples share the exploring slots. */
#define FOREST_TREES 32

struct obs {
	struct variant va;
	double fit; /* NAN: rejected by a gate */
};

/* Encoded dimensions at most: a position and an alignment per param. */
#define MODEL_DIMS (2 * TUNER_MAX_PARAMS)
/* Trailing zero bits beyond this count as this many (alignment levels). */
#define ALIGN_MAX 12

struct model {
	size_t d;    /* encoded dimensions: params with more than one value, then alignments */
	size_t nord; /* the first nord are domain positions; the rest, alignments */
	size_t dim_param[MODEL_DIMS]; /* the param of each dimension */
	size_t nv[MODEL_DIMS];        /* its number of values (or alignment levels) */
	int *level[MODEL_DIMS];       /* alignment dimensions: the level of each domain position */
	int align_of[MODEL_DIMS];     /* a domain dimension's alignment dimension, or -1 */
	struct obs *obs;
	size_t nobs, obs_alloc;
	struct variant *pending; /* proposed, not observed yet */
	size_t npending, pending_alloc;
	struct variant *valid; /* every valid point, when the space is small enough */
	size_t nvalid;
	int enumerated;
	/* the Gaussian process: n points (domain indices), their values, its factor */
	size_t n, cap;
	int *X;
	double *y, *L, *alpha, *kbuf;
	double ls[MODEL_DIMS]; /* length scale per dimension, in units of the whole domain */
	/*
	 * The similarity of two values of a dimension at that scale, by a - b for
	 * positions a and b: mid[i][a - b], from tab[i] (2 nv - 1 entries).
	 */
	double *tab[MODEL_DIMS];
	const double *mid[MODEL_DIMS];
	double w1;          /* the weight of single effects; pairs get 1 - W0 - w1 */
	int forest;         /* evolve-rf: a random forest shares the exploring slots */
	int screen;         /* not evolve2: ends first, relinking, alignment in steps */
	int hi[MODEL_DIMS]; /* a domain dimension's upper end: upper_end() */
};

#define W0   0.1  /* the weight of the constant */
#define LS0  0.3  /* where the fit of a length scale starts */
#define W1_0 0.45 /* where the fit of the single effects' weight starts */
#define SN2  1e-2 /* observation noise, in units of the standardised log fitness */

static void model_free(struct model *m)
{
	size_t i;

	if (!m)
		return;
	free(m->obs);
	free(m->pending);
	free(m->valid);
	free(m->X);
	free(m->y);
	free(m->L);
	free(m->alpha);
	free(m->kbuf);
	for (i = 0; i < m->d; i++) {
		free(m->tab[i]);
		free(m->level[i]);
	}
	free(m);
}

/*
 * The similarity depends only on how far apart two positions are: one entry
 * per difference (a param may have 10**6 values, and a table of every pair
 * would not fit).
 */
static void set_scale(struct model *m, size_t i, double ls)
{
	size_t k, n = m->nv[i];

	m->ls[i] = ls;
	for (k = 0; k < n; k++) {
		double t = (double)k / (double)(n - 1) / ls;

		m->tab[i][n - 1 + k] = m->tab[i][n - 1 - k] = exp(-0.5 * t * t);
	}
}

static long long gcd_ll(long long a, long long b)
{
	while (b) {
		long long t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static int trailing_zeros(long long v)
{
	int n = 0;

	if (v == 0)
		return ALIGN_MAX;
	while (!(v & 1) && n < ALIGN_MAX) {
		v >>= 1;
		n++;
	}
	return n;
}

/*
 * The alignment of a param's values (how many trailing zero bits), as a
 * dimension of its own when it says something the domain position does not:
 * on a GPU, a block of 128 threads is more like one of 256 than like one of
 * 112 or 144, its neighbours in the domain (warps, vector loads, banks). Only
 * for a size (four values or more, all multiples of a common unit of 2 or
 * more: not tile counts 1-4) whose levels are not already in domain order (as
 * they are for powers of two); the levels are the distinct counts, in
 * increasing order.
 */
static void add_alignment(struct model *m, const struct param *p, size_t param)
{
	int tz[ALIGN_MAX + 1] = {0}, *level;
	size_t i, n = 0, l;
	int monotone = 1;
	long long g = 0;

	for (i = 0; i < p->nvalues; i++)
		g = gcd_ll(g, p->values[i] < 0 ? -p->values[i] : p->values[i]);
	if (p->nvalues < 4 || g < 2)
		return;
	for (i = 0; i < p->nvalues; i++) {
		int z = trailing_zeros(p->values[i]);

		tz[z] = 1;
		if (i && z < trailing_zeros(p->values[i - 1]))
			monotone = 0;
	}
	for (l = 0; l <= ALIGN_MAX; l++)
		n += tz[l];
	if (n < 2 || monotone)
		return;
	level = xcalloc(p->nvalues, sizeof(*level));
	for (i = 0; i < p->nvalues; i++) {
		int z = trailing_zeros(p->values[i]);

		for (l = 0; l < (size_t)z; l++)
			level[i] += tz[l];
	}
	m->level[m->d] = level;
	m->nv[m->d] = n;
	m->dim_param[m->d++] = param;
}

/*
 * The upper end of a domain dimension, as a position: its last value, but
 * for a size (one with an alignment dimension) the largest of the most
 * aligned values of the upper half of its domain: of 16, 32, ..., 224, 128
 * and not 224; of 48, 64, 80, 96, 96 and not 64. On a GPU the largest size
 * worth a look is an aligned one; where the domain ends on a less aligned
 * value (224 = 7 x 32), that value says little about large sizes (its
 * alignment dimension already tells the model it differs from them). A
 * domain ending at its most aligned value (16, ..., 256) keeps its end.
 */
static int upper_end(const struct model *m, size_t i)
{
	const int *level = m->align_of[i] >= 0 ? m->level[m->align_of[i]] : NULL;
	int hi = (int)m->nv[i] - 1, j;

	for (j = hi - 1; level && j >= (int)m->nv[i] / 2; j--)
		if (level[j] > level[hi])
			hi = j;
	return hi;
}

/* A param's upper end, as a domain position (its last for a param of one value). */
static size_t param_upper_end(const struct model *m, size_t param)
{
	size_t i;

	for (i = 0; i < m->nord; i++)
		if (m->dim_param[i] == param)
			return (size_t)m->hi[i];
	return 0;
}

static struct model *model_new(const struct search *s)
{
	struct model *m = xcalloc(1, sizeof(*m));
	size_t i;

	for (i = 0; i < s->fam->nparams; i++)
		if (s->fam->params[i].nvalues > 1) {
			m->nv[m->d] = s->fam->params[i].nvalues;
			m->dim_param[m->d++] = i;
		}
	m->nord = m->d;
	m->forest = s->strategy == STRATEGY_EVOLVE_RF;
	m->screen = s->strategy != STRATEGY_EVOLVE2;
	for (i = 0; i < m->nord; i++) {
		size_t d = m->d;

		add_alignment(m, &s->fam->params[m->dim_param[i]], m->dim_param[i]);
		m->align_of[i] = m->d > d ? (int)d : -1;
		m->hi[i] = upper_end(m, i);
	}
	for (i = 0; i < m->d; i++) {
		m->tab[i] = xcalloc(2 * m->nv[i] - 1, sizeof(double));
		m->mid[i] = m->tab[i] + m->nv[i] - 1;
	}
	return m;
}

static void pending_drop(struct model *m, const struct variant *va)
{
	size_t i;

	for (i = 0; i < m->npending; i++)
		if (variant_same(&m->pending[i], va)) {
			m->pending[i] = m->pending[--m->npending];
			return;
		}
}

static void model_observe(struct search *s, const struct variant *va, const struct member *mb)
{
	struct model *m = s->model;
	struct obs *o;

	pending_drop(m, va);
	ALLOC_GROW(m->obs, m->nobs + 1, m->obs_alloc);
	o = &m->obs[m->nobs++];
	o->va = *va;
	o->fit = mb && isfinite(mb->fitness) && mb->fitness > 0 ? mb->fitness : NAN;
}

/* Propose va: emitted, and pending in the model until observed. */
static void model_emit(struct search *s, struct candidate *c, const struct variant *va,
                       enum origin o)
{
	struct model *m = s->model;

	emit(s, c, va, o, -1, -1);
	ALLOC_GROW(m->pending, m->npending + 1, m->pending_alloc);
	m->pending[m->npending++] = *va;
}

/* The domain position of each encoded param (0 for a value outside the domain). */
static void encode(const struct search *s, const struct variant *va, int *x)
{
	const struct model *m = s->model;
	size_t i;

	for (i = 0; i < m->d; i++) {
		long long idx =
		    space_value_index(&s->fam->params[m->dim_param[i]], va->v[m->dim_param[i]]);

		x[i] = idx < 0 ? 0 : (int)idx;
		if (m->level[i])
			x[i] = m->level[i][x[i]];
	}
}

/*
 * The kernel: a constant, each param's own effect and every pair's joint
 * effect (an additive kernel of orders 1 and 2: Duvenaud et al. 2011). The
 * similarity of two values of a param falls with their distance in the
 * domain; a short length scale treats them as unrelated categories.
 */
static double kernel(const struct model *m, const int *a, const int *b)
{
	double s1 = 0, s2 = 0, k;
	size_t i, d = m->d;

	for (i = 0; i < d; i++) {
		k = m->mid[i][a[i] - b[i]];
		s1 += k;
		s2 += k * k;
	}
	if (d < 2)
		return W0 + (1 - W0) * s1;
	return W0 + m->w1 * s1 / (double)d +
	       (1 - W0 - m->w1) * (s1 * s1 - s2) / (double)(d * (d - 1));
}

/* Solve L z = b in place (forward), then L^T x = z (backward) when both. */
static void tri_solve(const double *L, size_t ld, size_t n, double *b, int both)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		double v = b[i];

		for (k = 0; k < i; k++)
			v -= L[i * ld + k] * b[k];
		b[i] = v / L[i * ld + i];
	}
	if (!both)
		return;
	for (i = n; i-- > 0;) {
		double v = b[i];

		for (k = i + 1; k < n; k++)
			v -= L[k * ld + i] * b[k];
		b[i] = v / L[i * ld + i];
	}
}

/* Row i of the Cholesky factor, rows before it done; 0, or -1 when not positive definite. */
static int factor_row(struct model *m, size_t i)
{
	double *L = m->L, v;
	size_t j, k, ld = m->cap;

	for (j = 0; j <= i; j++) {
		v = kernel(m, &m->X[i * m->d], &m->X[j * m->d]) + (i == j ? SN2 : 0);
		for (k = 0; k < j; k++)
			v -= L[i * ld + k] * L[j * ld + k];
		if (i == j) {
			if (!(v > 0))
				return -1;
			L[i * ld + i] = sqrt(v);
		} else {
			L[i * ld + j] = v / L[j * ld + j];
		}
	}
	return 0;
}

/* Factor the first n points and solve for alpha; the log marginal likelihood, or -INFINITY. */
static double gp_fit(struct model *m, size_t n)
{
	double lml = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (factor_row(m, i) < 0)
			return -INFINITY;
	memcpy(m->alpha, m->y, n * sizeof(*m->y));
	tri_solve(m->L, m->cap, n, m->alpha, 1);
	for (i = 0; i < n; i++)
		lml -= 0.5 * m->y[i] * m->alpha[i] + log(m->L[i * m->cap + i]);
	return lml;
}

/* The posterior mean at x; leaves k(x, X) in m->kbuf for gp_var(). */
static double gp_mean(struct model *m, const int *x)
{
	double mu = 0;
	size_t i;

	for (i = 0; i < m->n; i++) {
		m->kbuf[i] = kernel(m, x, &m->X[i * m->d]);
		mu += m->kbuf[i] * m->alpha[i];
	}
	return mu;
}

/* The posterior variance at the x of the last gp_mean() call. */
static double gp_var(struct model *m, const int *x)
{
	double v = 0;
	size_t i;

	tri_solve(m->L, m->cap, m->n, m->kbuf, 0);
	for (i = 0; i < m->n; i++)
		v += m->kbuf[i] * m->kbuf[i];
	v = kernel(m, x, x) - v;
	return v < 1e-12 ? 1e-12 : v;
}

static void gp_reserve(struct model *m, size_t n)
{
	double *L;
	size_t i, old = m->cap;

	if (n <= m->cap)
		return;
	m->cap = n + 32;
	m->X = xrealloc(m->X, m->cap * MODEL_DIMS * sizeof(*m->X));
	m->y = xrealloc(m->y, m->cap * sizeof(*m->y));
	m->alpha = xrealloc(m->alpha, m->cap * sizeof(*m->alpha));
	m->kbuf = xrealloc(m->kbuf, m->cap * sizeof(*m->kbuf));
	/* the factor's rows keep their stride: copy them over */
	L = xcalloc(m->cap * m->cap, sizeof(*L));
	for (i = 0; i < old && m->L; i++)
		memcpy(&L[i * m->cap], &m->L[i * old], old * sizeof(*L));
	free(m->L);
	m->L = L;
}

/*
 * Add x with value y to the model: one more row of the factor, and alpha
 * again. With y the posterior mean at x (a point of this batch, believed at
 * its prediction) the mean stays where it was and only the variance shrinks
 * around x, so the next pick looks elsewhere.
 */
static int believe(struct model *m, const int *x, double y)
{
	gp_reserve(m, m->n + 1);
	memcpy(&m->X[m->n * m->d], x, m->d * sizeof(*x));
	m->y[m->n] = y;
	if (factor_row(m, m->n) < 0)
		return -1;
	m->n++;
	memcpy(m->alpha, m->y, m->n * sizeof(*m->y));
	tri_solve(m->L, m->cap, m->n, m->alpha, 1);
	return 0;
}

static int obs_by_fit(const void *a, const void *b)
{
	const struct obs *x = *(const struct obs *const *)a, *y = *(const struct obs *const *)b;
	double fx = isnan(x->fit) ? -INFINITY : x->fit, fy = isnan(y->fit) ? -INFINITY : y->fit;

	if (fx != fy)
		return fx > fy ? -1 : 1;
	return variant_cmp(&x->va, &y->va);
}

/*
 * The training set, best first: log fitness, standardised; a rejected point
 * gets the worst value seen, so the model steers away from where gates
 * reject. At most MODEL_MAX_OBS: the best half of them and the latest.
 * Returns the best standardised value.
 */
static double gp_data(struct search *s)
{
	struct model *m = s->model;
	const struct obs **use = xcalloc(m->nobs + 1, sizeof(*use));
	unsigned char *in = xcalloc(m->nobs + 1, 1);
	size_t i, n = 0;
	double lo = INFINITY, mean = 0, var = 0, sd, best = -INFINITY;

	for (i = 0; i < m->nobs; i++) {
		use[i] = &m->obs[i];
		if (!isnan(m->obs[i].fit) && log(m->obs[i].fit) < lo)
			lo = log(m->obs[i].fit);
	}
	qsort(use, m->nobs, sizeof(*use), obs_by_fit);
	n = m->nobs < MODEL_MAX_OBS / 2 ? m->nobs : MODEL_MAX_OBS / 2;
	for (i = 0; i < n; i++)
		in[use[i] - m->obs] = 1;
	for (i = m->nobs; i-- > 0 && n < MODEL_MAX_OBS;)
		if (!in[i])
			use[n++] = &m->obs[i];
	gp_reserve(m, n + 1);
	m->n = n;
	for (i = 0; i < n; i++) {
		encode(s, &use[i]->va, &m->X[i * m->d]);
		m->y[i] = isnan(use[i]->fit) ? lo : log(use[i]->fit);
		mean += m->y[i];
	}
	mean /= (double)n;
	for (i = 0; i < n; i++)
		var += (m->y[i] - mean) * (m->y[i] - mean);
	sd = n > 1 && var > 0 ? sqrt(var / (double)(n - 1)) : 1;
	for (i = 0; i < n; i++) {
		m->y[i] = (m->y[i] - mean) / sd;
		best = fmax(best, m->y[i]);
	}
	free(use);
	free(in);
	return best;
}

/*
 * The length scales and the weight of single effects against pairs: a
 * coordinate search of the marginal likelihood on the first HYPER_MAX_OBS
 * points, from the last fit's values; then the whole set is factored.
 */
static void gp_hyper(struct model *m)
{
	static const double grid[] = {0.05, 0.15, 0.3, 0.6, 1.2};
	static const double wgrid[] = {0.2, 0.45, 0.7, 0.85};
	size_t n = m->n < HYPER_MAX_OBS ? m->n : HYPER_MAX_OBS, i, g;
	double best, lml, keep;

	/* from the same start each time: the fit depends on the observations only (resume) */
	for (i = 0; i < m->d; i++)
		set_scale(m, i, LS0);
	m->w1 = W1_0;
	best = gp_fit(m, n);
	for (i = 0; i <= m->d; i++) {
		size_t ng = i < m->d ? ARRAY_SIZE(grid) : ARRAY_SIZE(wgrid);

		keep = i < m->d ? m->ls[i] : m->w1;
		for (g = 0; g < ng; g++) {
			double v = i < m->d ? grid[g] : wgrid[g];

			if (v == keep)
				continue;
			if (i < m->d)
				set_scale(m, i, v);
			else
				m->w1 = v;
			lml = gp_fit(m, n);
			if (lml > best) {
				best = lml;
				keep = v;
			}
		}
		if (i < m->d)
			set_scale(m, i, keep);
		else
			m->w1 = keep;
	}
	if (gp_fit(m, m->n) == -INFINITY)
		BUG("the surrogate's kernel matrix is not positive definite");
}

static double expected_improvement(double mu, double var, double best)
{
	double sd = sqrt(var), gain = mu - best - 0.01, z = gain / sd;

	return gain * 0.5 * erfc(-z / sqrt(2)) + sd * exp(-0.5 * z * z) / sqrt(2 * M_PI);
}

/* Every valid point of a small space, once. */
static void enumerate_valid(struct search *s)
{
	struct model *m = s->model;
	unsigned long long i;
	size_t alloc = 0;

	m->enumerated = 1;
	if (s->size > ENUM_LIMIT)
		return;
	for (i = 0; i < s->size; i++) {
		struct variant va;

		space_point(s->fam, i, &va);
		normalize(s, &va);
		if (!satisfies_constraints(s, &va))
			continue;
		ALLOC_GROW(m->valid, m->nvalid + 1, alloc);
		m->valid[m->nvalid++] = va;
	}
}

/*
 * The candidates of this proposal: unseen valid points (all, or a sample of a
 * big space, where a sample at random holds few end points: evolve draws
 * END_DRAWS more among the ends).
 */
static size_t candidates(struct search *s, struct variant **out, seen_fn seen, void *ctx)
{
	struct model *m = s->model;
	struct variant *c;
	size_t n = 0, i;

	if (!m->enumerated)
		enumerate_valid(s);
	if (m->nvalid) {
		c = xcalloc(m->nvalid, sizeof(*c));
		for (i = 0; i < m->nvalid; i++)
			if (is_new(s, &m->valid[i], seen, ctx))
				c[n++] = m->valid[i];
	} else {
		struct vset drawn = {NULL, NULL, 0, 0};

		c = xcalloc(SAMPLE_CANDIDATES + END_DRAWS, sizeof(*c));
		for (i = 0; i < 4 * SAMPLE_CANDIDATES && n < SAMPLE_CANDIDATES; i++) {
			if (!random_new(s, &c[n], seen, ctx))
				break;
			n += vset_add(&drawn, &c[n]);
		}
		for (i = 0; m->screen && i < END_DRAWS; i++) {
			end_point(s, &c[n]);
			if (!vset_has(&drawn, &c[n]) && is_new_valid(s, &c[n], seen, ctx))
				n += vset_add(&drawn, &c[n]);
		}
		vset_release(&drawn);
	}
	*out = c;
	return n;
}

/* How often each value, and each pair of values, was seen: what the design covers next. */
struct coverage {
	size_t d, n[MODEL_DIMS];
	unsigned *single[MODEL_DIMS];
	unsigned *pair[MODEL_DIMS][MODEL_DIMS];
};

static void coverage_add(struct coverage *cv, const int *idx)
{
	size_t i, j;

	for (i = 0; i < cv->d; i++) {
		cv->single[i][idx[i]]++;
		for (j = i + 1; j < cv->d; j++)
			if (cv->pair[i][j])
				cv->pair[i][j][(size_t)idx[i] * cv->n[j] + (size_t)idx[j]]++;
	}
}

/*
 * 1 when every domain position of x (encoded) with END_MIN_VALUES values or
 * more is an end of its domain: the points evolve screens first.
 */
static int at_ends(const struct model *m, const int *x)
{
	size_t i;

	for (i = 0; i < m->nord; i++)
		if (m->nv[i] >= END_MIN_VALUES && x[i] != 0 && x[i] != m->hi[i])
			return 0;
	return 1;
}

/* Rarer values score higher; a value never seen outweighs any number of pairs. */
static double coverage_score(const struct coverage *cv, const int *idx)
{
	double sc = 0;
	size_t i, j;

	for (i = 0; i < cv->d; i++) {
		sc += 100.0 / (1 + cv->single[i][idx[i]]);
		for (j = i + 1; j < cv->d; j++)
			if (cv->pair[i][j])
				sc += 1.0 /
				      (1 +
				       cv->pair[i][j][(size_t)idx[i] * cv->n[j] + (size_t)idx[j]]);
	}
	return sc;
}

/*
 * The first design: each pick the candidate whose values, and pairs of
 * values, have been seen least (observed, pending or chosen), ties at random:
 * every value of every param early, and its pairs spread, which is what a
 * model of single and paired effects needs first. evolve screens the ends
 * first (a two-level screening design, as in the design of experiments): only
 * end points while any is left, every param of END_MIN_VALUES values or more
 * at its first value or its upper end, so that the model sees what each end
 * of each domain does and how the ends combine; recorded GPU landscapes often have
 * their best points there (the largest tile a resource allows, the smallest
 * block, a switch on or off), and the local search walks inward from them.
 */
static size_t design(struct search *s, struct candidate *out, size_t n, size_t max,
                     const struct variant *c, size_t nc)
{
	struct model *m = s->model;
	struct coverage cv;
	int *idx = xcalloc(nc * m->d + 1, sizeof(*idx)), one[MODEL_DIMS];
	unsigned char *taken = xcalloc(nc + 1, 1), *inner = NULL;
	size_t i, j;

	memset(&cv, 0, sizeof(cv));
	cv.d = m->d;
	for (i = 0; i < m->d; i++) {
		cv.n[i] = m->nv[i];
		cv.single[i] = xcalloc(cv.n[i], sizeof(unsigned));
	}
	for (i = 0; i < m->d; i++)
		for (j = i + 1; j < m->d; j++)
			if (cv.n[i] * cv.n[j] <= PAIR_CELLS)
				cv.pair[i][j] = xcalloc(cv.n[i] * cv.n[j], sizeof(unsigned));
	for (i = 0; i < m->nobs + m->npending + n; i++) {
		if (i < m->nobs)
			encode(s, &m->obs[i].va, one);
		else if (i < m->nobs + m->npending)
			encode(s, &m->pending[i - m->nobs], one);
		else
			encode(s, &out[i - m->nobs - m->npending].va, one);
		coverage_add(&cv, one);
	}
	for (i = 0; i < nc; i++)
		encode(s, &c[i], &idx[i * m->d]);
	if (m->screen) {
		inner = xcalloc(nc + 1, 1);
		for (i = 0; i < nc; i++)
			inner[i] = !at_ends(m, &idx[i * m->d]);
	}
	while (n < max) {
		size_t pick = nc, ties = 0;
		double best = -1, sc;

		for (i = 0; i < nc; i++) {
			if (taken[i] || (inner && inner[i]) || vset_has(&s->known, &c[i]))
				continue;
			sc = coverage_score(&cv, &idx[i * m->d]);
			if (sc > best) {
				best = sc;
				pick = i;
				ties = 1;
			} else if (sc == best && rng_below(&s->rng, ++ties) == 0) {
				pick = i;
			}
		}
		if (pick == nc && inner) {
			/* the end points are spent: the rest of the space */
			free(inner);
			inner = NULL;
			continue;
		}
		if (pick == nc)
			break;
		taken[pick] = 1;
		coverage_add(&cv, &idx[pick * m->d]);
		model_emit(s, &out[n++], &c[pick], ORIGIN_RANDOM);
	}
	for (i = 0; i < m->d; i++) {
		free(cv.single[i]);
		for (j = i + 1; j < m->d; j++)
			free(cv.pair[i][j]);
	}
	free(idx);
	free(taken);
	free(inner);
	return n;
}

struct scored {
	size_t idx;
	double v;
};

static int by_value(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Steps between two points: the sum over params of how far apart their domain
 * positions are. evolve measures a size param (one with an alignment
 * dimension) by its alignment too: a move within an alignment class costs a
 * step and one per level crossed (256 to 128 is 2 steps, not 8), and a move
 * that loses alignment costs at least the levels lost (256 to 240 is 4 steps,
 * not 1), as the model's alignment dimension says such sizes differ.
 */
static int steps(const struct model *m, const int *a, const int *b)
{
	int d = 0, dp, dl;
	size_t i;

	for (i = 0; i < m->nord; i++) {
		dp = abs(a[i] - b[i]);
		if (m->screen && m->align_of[i] >= 0) {
			dl = abs(a[m->align_of[i]] - b[m->align_of[i]]);
			if (1 + dl < dp)
				dp = 1 + dl;
			if (dl > dp)
				dp = dl;
		}
		d += dp;
	}
	return d;
}

/*
 * The candidate of highest expected improvement among those not taken. The
 * variance is the costly part: var[] holds each candidate's from earlier in
 * the batch, which only shrinks as points are believed, so its improvement
 * bounds the present one and only candidates whose bound still wins are
 * computed again.
 */
static size_t best_ei(struct model *m, const int *x, const double *mu, double *var,
                      struct scored *order, size_t nc, const unsigned char *taken, double best)
{
	size_t i, k, pick = nc;
	double top = -1, ei;

	for (i = 0; i < nc; i++) {
		order[i].idx = i;
		order[i].v = taken[i] ? -1 : expected_improvement(mu[i], var[i], best);
	}
	qsort(order, nc, sizeof(*order), by_value);
	for (i = 0; i < nc && order[i].v > top; i++) {
		k = order[i].idx;
		gp_mean(m, &x[k * m->d]);
		var[k] = gp_var(m, &x[k * m->d]);
		ei = expected_improvement(mu[k], var[k], best);
		if (ei > top) {
			top = ei;
			pick = k;
		}
	}
	return pick;
}

/*
 * A sample shortlists, the Gaussian process picks: among the candidates not
 * taken of the highest score (a tree's prediction is piecewise constant: many
 * tie), the one of highest expected improvement under the process, which
 * believes every pick and so spreads a batch.
 */
static size_t best_of_top(struct model *m, const int *x, const double *mu, double *var,
                          struct scored *order, size_t nc, const unsigned char *taken,
                          const double *score, double best)
{
	unsigned char *out = xcalloc(nc + 1, 1);
	double top = -INFINITY;
	size_t i, pick;

	for (i = 0; i < nc; i++)
		if (!taken[i] && score[i] > top)
			top = score[i];
	for (i = 0; i < nc; i++)
		out[i] = taken[i] || score[i] < top;
	pick = best_ei(m, x, mu, var, order, nc, out, best);
	free(out);
	return pick;
}

/* The best fitness observed and where (-1 when nothing has been timed). */
static double incumbent(const struct model *m, size_t *at)
{
	double best = -1;
	size_t i;

	for (i = 0; i < m->nobs; i++)
		if (!isnan(m->obs[i].fit) && m->obs[i].fit > best) {
			best = m->obs[i].fit;
			*at = i;
		}
	return best;
}

/*
 * Where the search last made progress: the incumbent (obs[at]) for evolve2;
 * for evolve, the first point within STUCK_GAIN of it, so that an incumbent
 * creeping up a plateau by fractions of a percent, a batch at a time, still
 * counts as stuck (on MI250X's convolution a run went 5.677, 5.680, 5.683,
 * 5.711, 5.715, 5.719, 5.742 over 70 evaluations, never stuck, while the
 * optimum, 14.9, lay elsewhere).
 */
static size_t progress_at(const struct model *m, size_t at)
{
	size_t i;

	if (!m->screen)
		return at;
	for (i = 0; i < at; i++)
		if (!isnan(m->obs[i].fit) && m->obs[i].fit >= m->obs[at].fit * (1 - STUCK_GAIN))
			return i;
	return at;
}

/*
 * The end point to screen next from where the search is: of those not in
 * skip, the fewest steps from the incumbent (anchor) beyond the local search's
 * RADIUS, the highest expected improvement among them. The local search
 * cannot step past a poor middle (tile counts of 3, 30 times slower, between
 * 4 x 2 and 2 x 4 tiles); the model, which judges an end by points that differ
 * from it in several params at once, often rates the end beyond it poorly.
 * Returns nc when none is left beyond it.
 */
static size_t nearest_end(struct model *m, const int *x, const double *mu, double *var,
                          struct scored *order, size_t nc, const unsigned char *skip,
                          const int *anchor, double best)
{
	unsigned char *out = xcalloc(nc + 1, 1);
	int *st = xcalloc(nc + 1, sizeof(*st)), least = INT_MAX;
	size_t i, pick;

	for (i = 0; i < nc; i++) {
		st[i] = skip[i] ? -1 : steps(m, &x[i * m->d], anchor);
		if (st[i] > RADIUS && st[i] < least)
			least = st[i];
	}
	for (i = 0; i < nc; i++)
		out[i] = st[i] != least;
	pick = least == INT_MAX ? nc : best_ei(m, x, mu, var, order, nc, out, best);
	free(st);
	free(out);
	return pick;
}

/*
 * The local search's anchors, encoded: the incumbent (obs[at]), then the next
 * best timed points, ANCHORS in all, so that a runner-up's basin is searched
 * beside the incumbent's.
 */
static size_t anchors(const struct search *s, size_t at, int anch[][MODEL_DIMS])
{
	const struct model *m = s->model;
	const struct obs **use = xcalloc(m->nobs + 1, sizeof(*use));
	size_t i, n = 1;

	encode(s, &m->obs[at].va, anch[0]);
	for (i = 0; i < m->nobs; i++)
		use[i] = &m->obs[i];
	qsort(use, m->nobs, sizeof(*use), obs_by_fit);
	for (i = 0; i < m->nobs && n < ANCHORS && !isnan(use[i]->fit); i++)
		if (use[i] != &m->obs[at])
			encode(s, &use[i]->va, anch[n++]);
	free(use);
	return n;
}

/*
 * A batch from the surrogate. While the last batches improved on the best
 * point seen (the incumbent), the neighbourhoods of the anchors (it and the
 * runner-up) first, in all but 1 / EXPLORE of the batch: the unseen points
 * within RADIUS domain steps of either, nearest first, the incumbent's before
 * the runner-up's and, at the same distance from the same anchor, the most
 * promising first (the model ranks them; it does not rule any out, so a move
 * it wrongly thinks bad is still tried while the neighbourhood lasts). evolve
 * (not evolve2) relinks the anchors: the points between them first (the
 * fewest steps to both anchors together), then as above, so that the moves
 * that combine what the two best points have (path relinking) come before
 * those that lead away from both. Then, and after STUCK batches without
 * progress, by expected improvement anywhere in the space; evolve takes
 * half of those picks among the end points (the screening goes on: an end
 * the first design missed is often where the model is wrong), the first of
 * them, while not stuck, the end nearest the incumbent (nearest_end). Every pick is
 * believed at its predicted value before the next, and so are points still
 * pending from earlier proposals, so that a batch, or proposals made while
 * results are still out, spread instead of piling onto one peak. evolve-rf:
 * while not stuck, every other exploring slot goes to a Thompson sample of
 * the forest instead.
 */
static size_t model_batch(struct search *s, struct candidate *out, size_t n, size_t max,
                          const struct variant *c, size_t nc)
{
	struct model *m = s->model;
	struct scored *order = xcalloc(nc + 1, sizeof(*order));
	int *x = xcalloc(nc * m->d + 1, sizeof(*x)), one[MODEL_DIMS];
	double *mu = xcalloc(nc + 1, sizeof(*mu)), *var = xcalloc(nc + 1, sizeof(*var)), best;
	double *sample = NULL;
	struct forest *rf = NULL;
	unsigned char *taken = xcalloc(nc + 1, 1), *skip = NULL;
	size_t i, pick, nloc = 0, at = 0, nanch, a, nends;
	int stuck, near, anch[ANCHORS][MODEL_DIMS];

	/* stuck: no progress (progress_at) in the last STUCK batches' worth of results */
	incumbent(m, &at);
	stuck = m->nobs - progress_at(m, at) - 1 >= STUCK * (max - n);
	nanch = anchors(s, at, anch);
	best = gp_data(s);
	gp_hyper(m);
	if (m->forest) {
		rf = forest_fit(m->X, m->y, m->n, m->d, m->nv, FOREST_TREES, &s->rng);
		sample = xcalloc(nc + 1, sizeof(*sample));
	}
	for (i = 0; i < m->npending; i++) {
		encode(s, &m->pending[i], one);
		if (believe(m, one, gp_mean(m, one)) < 0)
			break;
	}
	for (i = 0; i < nc; i++) {
		int d, r, sum = 0;

		encode(s, &c[i], &x[i * m->d]);
		mu[i] = gp_mean(m, &x[i * m->d]);
		var[i] = gp_var(m, &x[i * m->d]);
		if (stuck)
			continue;
		/* the nearest anchor, the better one at the same distance; the steps to all */
		d = INT_MAX;
		r = 0;
		for (a = 0; a < nanch; a++) {
			int da = steps(m, &x[i * m->d], anch[a]);

			sum += da;
			if (da < d) {
				d = da;
				r = (int)a;
			}
		}
		if (d <= RADIUS) {
			/*
			 * nearest first, then the better anchor's, then the mean (which
			 * never spans 100); evolve puts the points between the anchors
			 * (the fewest steps to all of them) before that
			 */
			int rank = d * (int)nanch + r;

			if (m->screen)
				rank += sum * (RADIUS + 1) * ANCHORS;
			order[nloc].idx = i;
			order[nloc++].v = mu[i] - 100.0 * (double)rank;
		}
	}
	qsort(order, nloc, sizeof(*order), by_value);
	for (i = 0; i < nloc && n < max - max / EXPLORE; i++) {
		pick = order[i].idx;
		taken[pick] = 1;
		model_emit(s, &out[n++], &c[pick], ORIGIN_MUTATION);
		if (believe(m, &x[pick * m->d], mu[pick]) < 0)
			break;
	}
	/*
	 * evolve: half of the picks by expected improvement are end points, made
	 * first: skip holds what they may not take (taken, or not an end point);
	 * while not stuck, the first of them is the end nearest the incumbent
	 * beyond the local search's reach
	 */
	nends = m->screen ? (max - n) / 2 : 0;
	near = nends && !stuck;
	if (nends) {
		skip = xcalloc(nc + 1, 1);
		for (i = 0; i < nc; i++)
			skip[i] = taken[i] || !at_ends(m, &x[i * m->d]);
	}
	while (n < max) {
		if (nends) {
			nends--;
			pick = nc;
			if (near)
				pick = nearest_end(m, x, mu, var, order, nc, skip, anch[0], best);
			if (pick == nc)
				pick = best_ei(m, x, mu, var, order, nc, skip, best);
			near = 0;
			if (pick != nc) {
				taken[pick] = skip[pick] = 1;
				model_emit(s, &out[n++], &c[pick], ORIGIN_MUTATION);
				if (believe(m, &x[pick * m->d], mu[pick]) < 0)
					break;
				continue;
			}
			nends = 0; /* no end point left */
		}
		if (rf && forest_ntrees(rf) && !stuck && n % 2 == 0) {
			/* Thompson sampling: one tree, drawn at random, stands for the landscape */
			size_t t = (size_t)rng_below(&s->rng, forest_ntrees(rf));

			for (i = 0; i < nc; i++)
				sample[i] = forest_tree_predict(rf, t, &x[i * m->d]);
			pick = best_of_top(m, x, mu, var, order, nc, taken, sample, best);
		} else {
			pick = best_ei(m, x, mu, var, order, nc, taken, best);
		}
		if (pick == nc)
			break;
		taken[pick] = 1;
		model_emit(s, &out[n++], &c[pick], ORIGIN_MUTATION);
		if (believe(m, &x[pick * m->d], mu[pick]) < 0)
			break;
	}
	forest_free(rf);
	free(sample);
	free(skip);
	free(order);
	free(taken);
	free(x);
	free(mu);
	free(var);
	return n;
}

static size_t model_propose(struct search *s, struct candidate *out, size_t n, size_t max,
                            seen_fn seen, void *ctx)
{
	struct variant *c = NULL;
	size_t nc = candidates(s, &c, seen, ctx), valid = 0, i;

	for (i = 0; i < s->model->nobs; i++)
		valid += !isnan(s->model->obs[i].fit);
	if (valid < 2 || s->model->d == 0)
		n = design(s, out, n, max, c, nc);
	else
		n = model_batch(s, out, n, max, c, nc);
	free(c);
	return n;
}
