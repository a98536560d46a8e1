/* A random forest of regression trees (Breiman 2001), as SMAC uses one: bootstrap, best splits,
 * mean leaves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/forest.h"

/* A node is split only when it holds this many points (of its bootstrap sample) or more. */
#define MIN_SPLIT 2
/* Each side of a split keeps at least this many. */
#define MIN_LEAF 1
/* Deeper nodes are leaves. */
#define MAX_DEPTH 24

struct fnode {
	int dim; /* -1: a leaf */
	int thr; /* go left when x[dim] <= thr, or x[dim] == thr for an equality split */
	int eq;
	size_t left, right;
	double val; /* a leaf's mean */
};

struct tree {
	struct fnode *node;
	size_t n, alloc;
};

struct forest {
	size_t ntrees;
	struct tree *tree;
};

struct builder {
	const int *X;
	const double *y;
	size_t d;
	const size_t *nv;
	struct rng *rng;
	double *sum;    /* per level of the feature at hand */
	size_t *cnt;    /* per level */
	int *lev;       /* the levels a node holds */
	size_t *feat;   /* the features, shuffled per node */
	struct tree *t; /* the tree being grown */
};

static size_t node_new(struct tree *t)
{
	ALLOC_GROW(t->node, t->n + 1, t->alloc);
	memset(&t->node[t->n], 0, sizeof(t->node[t->n]));
	t->node[t->n].dim = -1;
	return t->n++;
}

static int goes_left(int x, int thr, int eq)
{
	return eq ? x == thr : x <= thr;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The split of one feature that most lowers the squared error, if better than
 * *gain. Only the levels the node holds are walked, in increasing order: a
 * feature may have 10**6 levels, a node at most the sample's points.
 */
static void best_split(struct builder *b, const size_t *idx, size_t m, size_t j, double total,
                       double *gain, int *thr, int *eq)
{
	size_t nv = b->nv[j], l, k, nlev = 0, nl = 0;
	double sl = 0, base = total * total / (double)m, g;

	if (nv < 2)
		return;
	for (l = 0; l < m; l++) {
		int x = b->X[idx[l] * b->d + j];

		b->sum[x] += b->y[idx[l]];
		if (!b->cnt[x]++)
			b->lev[nlev++] = x;
	}
	qsort(b->lev, nlev, sizeof(*b->lev), int_cmp);
	for (k = 0; k < nlev && (size_t)b->lev[k] + 1 < nv; k++) {
		l = (size_t)b->lev[k];
		nl += b->cnt[l];
		sl += b->sum[l];
		if (nl < MIN_LEAF || m - nl < MIN_LEAF)
			continue;
		g = sl * sl / (double)nl + (total - sl) * (total - sl) / (double)(m - nl) - base;
		if (g > *gain) {
			/* halfway to the next level held: the ones between go to the nearer side */
			*gain = g;
			*thr = (int)((l + (size_t)b->lev[k + 1]) / 2);
			*eq = 0;
		}
	}
	/* one level against the rest: a block size or a tile count that stands out of its
	 * neighbours */
	for (k = 0; nv > 2 && k < nlev; k++) {
		size_t c = b->cnt[b->lev[k]];

		l = (size_t)b->lev[k];
		if (c < MIN_LEAF || m - c < MIN_LEAF)
			continue;
		g = b->sum[l] * b->sum[l] / (double)c +
		    (total - b->sum[l]) * (total - b->sum[l]) / (double)(m - c) - base;
		if (g > *gain) {
			*gain = g;
			*thr = (int)l;
			*eq = 1;
		}
	}
	for (k = 0; k < nlev; k++) {
		b->sum[b->lev[k]] = 0;
		b->cnt[b->lev[k]] = 0;
	}
}

/* Grow the subtree over idx[0 .. m); returns its root. idx is reordered. */
static size_t grow(struct builder *b, size_t *idx, size_t m, int depth)
{
	size_t at = node_new(b->t), i, j, nl;
	double total = 0, sse = 0, mean, gain = 1e-12 * (double)m;
	int thr = -1, eq = 0, dim = -1;

	for (i = 0; i < m; i++)
		total += b->y[idx[i]];
	mean = total / (double)m;
	b->t->node[at].val = mean;
	for (i = 0; i < m; i++)
		sse += (b->y[idx[i]] - mean) * (b->y[idx[i]] - mean);
	if (m < MIN_SPLIT || depth >= MAX_DEPTH || sse <= 1e-12)
		return at;
	/* every feature, in a random order: ties go to the first */
	for (i = b->d; i > 1; i--) {
		size_t k = (size_t)rng_below(b->rng, i), t = b->feat[i - 1];

		b->feat[i - 1] = b->feat[k];
		b->feat[k] = t;
	}
	for (i = 0; i < b->d; i++) {
		double before = gain;

		best_split(b, idx, m, b->feat[i], total, &gain, &thr, &eq);
		if (gain > before)
			dim = (int)b->feat[i];
	}
	if (dim < 0)
		return at;
	for (i = 0, nl = 0; i < m; i++)
		if (goes_left(b->X[idx[i] * b->d + (size_t)dim], thr, eq)) {
			j = idx[nl];
			idx[nl++] = idx[i];
			idx[i] = j;
		}
	b->t->node[at].dim = dim;
	b->t->node[at].thr = thr;
	b->t->node[at].eq = eq;
	i = grow(b, idx, nl, depth + 1);
	b->t->node[at].left = i;
	i = grow(b, idx + nl, m - nl, depth + 1);
	b->t->node[at].right = i;
	return at;
}

struct forest *forest_fit(const int *X, const double *y, size_t n, size_t d, const size_t *nv,
                          size_t ntrees, struct rng *rng)
{
	struct forest *f = xcalloc(1, sizeof(*f));
	struct builder b = {X, y, d, nv, rng, NULL, NULL, NULL, NULL, NULL};
	size_t *idx = xcalloc(n + 1, sizeof(*idx)), maxnv = 1, i, t;

	for (i = 0; i < d; i++)
		if (nv[i] > maxnv)
			maxnv = nv[i];
	b.sum = xcalloc(maxnv, sizeof(*b.sum));
	b.cnt = xcalloc(maxnv, sizeof(*b.cnt));
	b.lev = xcalloc(n + 1, sizeof(*b.lev));
	b.feat = xcalloc(d + 1, sizeof(*b.feat));
	for (i = 0; i < d; i++)
		b.feat[i] = i;
	f->ntrees = n ? ntrees : 0;
	f->tree = xcalloc(ntrees + 1, sizeof(*f->tree));
	for (t = 0; t < f->ntrees; t++) {
		for (i = 0; i < n; i++)
			idx[i] = (size_t)rng_below(rng, n);
		b.t = &f->tree[t];
		grow(&b, idx, n, 0);
	}
	free(b.sum);
	free(b.cnt);
	free(b.lev);
	free(b.feat);
	free(idx);
	return f;
}

double forest_tree_predict(const struct forest *f, size_t t, const int *x)
{
	const struct fnode *nd = f->tree[t].node, *at = nd;

	while (at->dim >= 0)
		at = &nd[goes_left(x[at->dim], at->thr, at->eq) ? at->left : at->right];
	return at->val;
}

void forest_predict(const struct forest *f, const int *x, double *mean, double *var)
{
	double s = 0, s2 = 0, v;
	size_t t;

	for (t = 0; t < f->ntrees; t++) {
		v = forest_tree_predict(f, t, x);
		s += v;
		s2 += v * v;
	}
	if (!f->ntrees) {
		*mean = 0;
		*var = 1;
		return;
	}
	*mean = s / (double)f->ntrees;
	*var = s2 / (double)f->ntrees - *mean * *mean;
	if (*var < 1e-12)
		*var = 1e-12;
}

size_t forest_ntrees(const struct forest *f)
{
	return f->ntrees;
}

void forest_free(struct forest *f)
{
	size_t t;

	if (!f)
		return;
	for (t = 0; t < f->ntrees; t++)
		free(f->tree[t].node);
	free(f->tree);
	free(f);
}
