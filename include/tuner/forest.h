/* A random forest of regression trees over small integer features: the search's second surrogate.
 */
#ifndef TUNER_FOREST_H
#define TUNER_FOREST_H

#include <stddef.h>

#include "tuner/rng.h"

struct forest;

/*
 * Fit ntrees regression trees to n points: X holds n rows of d features, feature
 * j taking the levels 0 .. nv[j] - 1 (domain positions, alignment levels), and
 * y their values. Each tree sees a bootstrap sample of the points and splits
 * a node where it most lowers the squared error, on a threshold of one feature
 * (x[j] <= t) or on one level against the rest (x[j] == t); a leaf holds the
 * mean of its points. The draws come from rng only, so the same data and the
 * same rng state give the same forest.
 */
struct forest *forest_fit(const int *X, const double *y, size_t n, size_t d, const size_t *nv,
                          size_t ntrees, struct rng *rng);

/* The trees' mean prediction at x, and their variance around it (spread, not noise). */
void forest_predict(const struct forest *f, const int *x, double *mean, double *var);

/* Tree t's prediction at x. */
double forest_tree_predict(const struct forest *f, size_t t, const int *x);

size_t forest_ntrees(const struct forest *f);

void forest_free(struct forest *f);

#endif
