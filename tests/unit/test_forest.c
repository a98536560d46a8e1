/* Unit tests for the random forest: interactions, single levels, unseen levels, determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tuner/forest.h"
#include "tuner/rng.h"

#define TREES 32

/*
 * Three two-valued features and a four-valued one: the value is high only
 * where a == 0, b == 0 and c == 1 together (a three-way interaction, poor on
 * average along each feature alone, as a kernel's best region can be), and
 * the fourth feature does nothing. The forest, fitted on the full factorial,
 * ranks that region above every other point.
 */
static void test_forest_finds_interaction(void **state)
{
	static const size_t nv[4] = {2, 2, 2, 4};
	int X[32 * 4], x[4];
	double y[32], mean, var, worst_out = -INFINITY, best_in = INFINITY;
	struct forest *f;
	struct rng r;
	size_t i, n = 0;

	for (i = 0; i < 32; i++) {
		X[n * 4 + 0] = (int)(i & 1);
		X[n * 4 + 1] = (int)(i >> 1 & 1);
		X[n * 4 + 2] = (int)(i >> 2 & 1);
		X[n * 4 + 3] = (int)(i >> 3);
		y[n] = !X[n * 4] && !X[n * 4 + 1] && X[n * 4 + 2] ? 3 : -(double)(i % 5) * 0.1;
		n++;
	}
	rng_seed(&r, 7);
	f = forest_fit(X, y, n, 4, nv, TREES, &r);
	assert_int_equal(forest_ntrees(f), TREES);
	for (i = 0; i < 32; i++) {
		memcpy(x, &X[i * 4], sizeof(x));
		forest_predict(f, x, &mean, &var);
		if (y[i] > 1)
			best_in = fmin(best_in, mean);
		else
			worst_out = fmax(worst_out, mean);
	}
	assert_true(best_in > 1);
	assert_true(worst_out < 1);
	assert_true(best_in > worst_out + 1);
	forest_free(f);
}

/*
 * One level of an eight-level feature stands out of its neighbours (a tile
 * count of 3 among 1, 2, 4, ...): an equality split isolates it, where a
 * threshold would need two.
 */
static void test_forest_single_level(void **state)
{
	static const size_t nv[1] = {8};
	int X[8], x;
	double y[8], mean, var;
	struct forest *f;
	struct rng r;

	for (x = 0; x < 8; x++) {
		X[x] = x;
		y[x] = x == 3 ? -5 : 0.1 * x;
	}
	rng_seed(&r, 3);
	f = forest_fit(X, y, 8, 1, nv, TREES, &r);
	for (x = 0; x < 8; x++) {
		forest_predict(f, &x, &mean, &var);
		if (x == 3)
			assert_true(mean < -1);
		else
			assert_true(mean > -1);
	}
	forest_free(f);
}

/* A threshold lies halfway between the levels seen: the unseen ones go to the nearer side. */
static void test_forest_unseen_levels_halfway(void **state)
{
	static const size_t nv[1] = {9};
	int X[4] = {0, 0, 8, 8}, x;
	double y[4] = {0, 0, 1, 1}, mean, var;
	struct forest *f;
	struct rng r;

	rng_seed(&r, 5);
	f = forest_fit(X, y, 4, 1, nv, TREES, &r);
	for (x = 0; x <= 8; x++) {
		forest_predict(f, &x, &mean, &var);
		/* a bootstrap may hold one side only: then its tree is a single leaf */
		if (x < 4)
			assert_true(mean < 0.5);
		if (x > 4)
			assert_true(mean > 0.5);
	}
	forest_free(f);
}

/* The same data and rng state give the same forest; constant data give no spread. */
static void test_forest_deterministic(void **state)
{
	static const size_t nv[2] = {5, 5};
	int X[50], x[2];
	double y[50], c[25];
	struct forest *f, *g, *h;
	struct rng r1, r2;
	size_t i, t;
	double m1, v1, m2, v2;

	for (i = 0; i < 25; i++) {
		X[2 * i] = (int)(i % 5);
		X[2 * i + 1] = (int)(i / 5);
		y[i] = sin((double)i);
		c[i] = 2.5;
	}
	rng_seed(&r1, 11);
	rng_seed(&r2, 11);
	f = forest_fit(X, y, 25, 2, nv, TREES, &r1);
	g = forest_fit(X, y, 25, 2, nv, TREES, &r2);
	h = forest_fit(X, c, 25, 2, nv, TREES, &r1);
	for (i = 0; i < 25; i++) {
		x[0] = X[2 * i];
		x[1] = X[2 * i + 1];
		for (t = 0; t < TREES; t++)
			assert_true(forest_tree_predict(f, t, x) == forest_tree_predict(g, t, x));
		forest_predict(f, x, &m1, &v1);
		forest_predict(g, x, &m2, &v2);
		assert_true(m1 == m2 && v1 == v2);
		forest_predict(h, x, &m1, &v1);
		assert_true(fabs(m1 - 2.5) < 1e-12);
		assert_true(v1 < 1e-9);
	}
	forest_free(f);
	forest_free(g);
	forest_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forest_finds_interaction),
	    cmocka_unit_test(test_forest_single_level),
	    cmocka_unit_test(test_forest_unseen_levels_halfway),
	    cmocka_unit_test(test_forest_deterministic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
