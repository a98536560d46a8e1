/* Unit tests for the random forest: interactions, single levels, unseen levels, determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>
#include <unistd.h>

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

/*
 * A feature of 10**6 levels (a landscape's param of 10**6 values), of which
 * the points hold 1000: the same trees as over those levels ranked 0..999 (a
 * split only sees the levels its node holds, in the same order), so the same
 * prediction at every point. Each node walked all 10**6 levels before, a
 * minute for this fit: the alarm is the failure.
 */
static void test_forest_many_levels(void **state)
{
	enum { N = 1000 };
	static const size_t wide[3] = {1000000, 1000000, 4}, ranked[3] = {N, N, 4};
	int Xw[N * 3], Xr[N * 3];
	double y[N], mw, vw, mr, vr;
	struct forest *fw, *fr;
	struct rng r;
	size_t i;

	alarm(30);
	for (i = 0; i < N; i++) {
		/* 997 and 7919 are prime to N: the second feature ranks the points in another order
		 */
		Xw[i * 3] = (int)(i * 997);
		Xr[i * 3] = (int)i;
		Xw[i * 3 + 1] = (int)(i * 7919 % N * 1000);
		Xr[i * 3 + 1] = (int)(i * 7919 % N);
		Xw[i * 3 + 2] = Xr[i * 3 + 2] = (int)(i % 4);
		y[i] =
		    (i < N / 3 ? 2.0 : 0.0) + 0.1 * (double)(i % 4) + 1e-4 * (double)(i * 37 % N);
	}
	rng_seed(&r, 11);
	fw = forest_fit(Xw, y, N, 3, wide, TREES, &r);
	rng_seed(&r, 11);
	fr = forest_fit(Xr, y, N, 3, ranked, TREES, &r);
	for (i = 0; i < N; i++) {
		forest_predict(fw, &Xw[i * 3], &mw, &vw);
		forest_predict(fr, &Xr[i * 3], &mr, &vr);
		assert_true(mw == mr && vw == vr);
		assert_true(i < N / 3 ? mw > 1 : mw < 1);
	}
	forest_free(fw);
	forest_free(fr);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forest_finds_interaction),
	    cmocka_unit_test(test_forest_single_level),
	    cmocka_unit_test(test_forest_unseen_levels_halfway),
	    cmocka_unit_test(test_forest_deterministic),
	    cmocka_unit_test(test_forest_many_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
