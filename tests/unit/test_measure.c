/* Unit tests for the statistics of measurement, against hand-computed values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/measure.h"
#include "tuner/rng.h"

#define assert_near(a, b, tol)                                                                     \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		if (!(fabs(a_ - b_) <= (tol)))                                                     \
			fail_msg("%s = %.17g, want %.17g", #a, a_, b_);                            \
	} while (0)

static void silence(const char *prefix, const char *msg)
{
}

/* ----------------------------------------------------------------- median */

static void test_median(void **state)
{
	double odd[] = {5, 1, 3};
	double even[] = {4, 1, 3, 2};
	double neg[] = {-2, -8, 10, 0, 7};
	double one[] = {42};
	double dup[] = {3, 3, 1, 3, 9, 9};
	const double odd_before[] = {5, 1, 3};

	assert_true(measure_median(odd, 3) == 3);
	assert_true(measure_median(even, 4) == 2.5);
	assert_true(measure_median(neg, 5) == 0);
	assert_true(measure_median(one, 1) == 42);
	assert_true(measure_median(dup, 6) == 3);
	assert_true(isnan(measure_median(odd, 0)));
	/* The caller's samples keep their order. */
	assert_memory_equal(odd, odd_before, sizeof(odd));
}

static void test_quantile(void **state)
{
	double x[] = {4, 2, 3, 1};
	const double before[] = {4, 2, 3, 1};
	double one[] = {7};

	/* Type 7: h = (n - 1) q, interpolated between the neighbouring order statistics. */
	assert_true(measure_quantile(x, 4, 0) == 1);
	assert_true(measure_quantile(x, 4, 1) == 4);
	assert_near(measure_quantile(x, 4, 0.25), 1.75, 1e-12);
	assert_near(measure_quantile(x, 4, 0.5), 2.5, 1e-12);
	assert_near(measure_quantile(x, 4, 0.9), 3.7, 1e-12);
	assert_near(measure_quantile(x, 4, 1.0 / 3), 2, 1e-12);
	assert_true(measure_quantile(one, 1, 0.3) == 7);
	assert_true(isnan(measure_quantile(x, 4, -0.1)));
	assert_true(isnan(measure_quantile(x, 4, 1.5)));
	assert_true(isnan(measure_quantile(x, 4, NAN)));
	assert_true(isnan(measure_quantile(x, 0, 0.5)));
	assert_memory_equal(x, before, sizeof(x));
}

/* --------------------------------------------------------------- geomean */

static void test_geomean(void **state)
{
	double a[] = {1, 4};
	double b[] = {2, 8};
	double c[] = {1, 10, 100};
	double d[] = {5};
	double zero[] = {1, 0, 4};
	double neg[] = {1, -4};
	double speedups[] = {1.10, 0.95, 1.30};

	assert_near(measure_geomean(a, 2), 2, 1e-12);
	assert_near(measure_geomean(b, 2), 4, 1e-12);
	assert_near(measure_geomean(c, 3), 10, 1e-12);
	assert_near(measure_geomean(d, 1), 5, 1e-12);
	assert_near(measure_geomean(speedups, 3), cbrt(1.10 * 0.95 * 1.30), 1e-12);
	assert_true(isnan(measure_geomean(zero, 3)));
	assert_true(isnan(measure_geomean(neg, 2)));
	assert_true(isnan(measure_geomean(a, 0)));
}

/* ---------------------------------------------------------- Mann-Whitney */

static void test_mann_whitney_separated(void **state)
{
	double a[] = {1, 2, 3, 4, 5};
	double b[] = {6, 7, 8, 9, 10};

	/*
	 * U = 0, mean 12.5, variance 5 * 5 * 11 / 12; z = (12.5 - 0.5) / 4.7871 = 2.5067,
	 * p = 2 (1 - Phi(z)) = 0.0121858.
	 */
	assert_near(measure_mann_whitney_p(a, 5, b, 5), 0.012185780355344818, 1e-9);
	/* Two-sided: the order of the samples does not matter. */
	assert_near(measure_mann_whitney_p(b, 5, a, 5), 0.012185780355344818, 1e-9);
}

static void test_mann_whitney_ties(void **state)
{
	double a[] = {1, 2, 2, 3};
	double b[] = {2, 3, 3, 4};

	/*
	 * Ranks: 1 -> 1, the three 2s -> 3, the three 3s -> 6, 4 -> 8; R_a = 13, U = 3,
	 * mean 8, variance 16 / 12 (9 - 48 / 56) = 10.857, z = 4.5 / 3.2950 = 1.3657,
	 * p = 0.172034.
	 */
	assert_near(measure_mann_whitney_p(a, 4, b, 4), 0.17203370892182296, 1e-9);
}

/* Hollander and Wolfe (1973), p. 69, the example of R's wilcox.test: W = 35. */
static void test_mann_whitney_textbook(void **state)
{
	double x[] = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
	double y[] = {1.15, 0.88, 0.90, 0.74, 1.21};

	/* U = 35, mean 25, variance 10 * 5 * 16 / 12; z = 9.5 / 8.165 = 1.1635, p = 0.244624. */
	assert_near(measure_mann_whitney_p(x, 10, y, 5), 0.24462360512698333, 1e-9);
}

static void test_mann_whitney_degenerate(void **state)
{
	double same[] = {2, 2, 2};
	double a[] = {1, 2, 3};
	double b[] = {3, 2, 1};
	double one_a[] = {1}, one_b[] = {2};
	double p;

	assert_true(measure_mann_whitney_p(same, 3, same, 3) == 1);
	/* U equal to its mean, within the continuity correction. */
	assert_true(measure_mann_whitney_p(a, 3, b, 3) == 1);
	p = measure_mann_whitney_p(one_a, 1, one_b, 1);
	assert_true(p > 0 && p <= 1);
	assert_true(isnan(measure_mann_whitney_p(a, 0, b, 3)));
	assert_true(isnan(measure_mann_whitney_p(a, 3, b, 0)));
}

/* -------------------------------------------------------------- faster */

static void test_faster(void **state)
{
	double a[] = {1, 2, 3, 4, 5};
	double b[] = {6, 7, 8, 9, 10};
	double base[20], quick[20], close[20];
	struct rng r;

	assert_int_equal(measure_faster(a, 5, b, 5, 0.03, 0.05), 1);
	assert_int_equal(measure_faster(b, 5, a, 5, 0.03, 0.05), 0);
	/* Median 3 * (1 + 2) = 9 > 8: not faster by the margin. */
	assert_int_equal(measure_faster(a, 5, b, 5, 2.0, 0.05), 0);
	/* p = 0.0122 is not below 0.01. */
	assert_int_equal(measure_faster(a, 5, b, 5, 0.03, 0.01), 0);
	assert_int_equal(measure_faster(a, 5, a, 5, 0, 0.05), 0);
	assert_int_equal(measure_faster(a, 0, b, 5, 0, 0.05), 0);

	/* Timings with 1% noise: 5% faster passes a 3% margin, 1% faster does not. */
	rng_seed(&r, 11);
	for (int i = 0; i < 20; i++) {
		base[i] = 1.00 * (1 + 0.01 * (rng_double(&r) - 0.5));
		quick[i] = 0.95 * (1 + 0.01 * (rng_double(&r) - 0.5));
		close[i] = 0.99 * (1 + 0.01 * (rng_double(&r) - 0.5));
	}
	assert_int_equal(measure_faster(quick, 20, base, 20, 0.03, 0.05), 1);
	assert_int_equal(measure_faster(close, 20, base, 20, 0.03, 0.05), 0);
	assert_int_equal(measure_faster(close, 20, base, 20, 0.0, 0.05), 1);
	/* One lucky sample does not make a variant faster. */
	assert_int_equal(measure_faster(quick, 1, base, 20, 0.03, 0.05), 0);
}

/* ------------------------------------------------------------- bootstrap */

static int cmp(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/*
 * The interval by the textbook method: sort, draw n positions with replacement
 * from the same RNG stream, take each resample's median, then the 2.5% and
 * 97.5% quantiles.
 */
static void naive_ci(const double *x, size_t n, int b, unsigned long long seed, double *lo,
                     double *hi)
{
	double *s = malloc(n * sizeof(*s)), *res = malloc(n * sizeof(*res));
	double *med = malloc((size_t)b * sizeof(*med));
	struct rng r;

	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp);
	rng_seed(&r, seed);
	for (int i = 0; i < b; i++) {
		for (size_t j = 0; j < n; j++)
			res[j] = s[rng_below(&r, n)];
		med[i] = measure_median(res, n);
	}
	*lo = measure_quantile(med, (size_t)b, 0.025);
	*hi = measure_quantile(med, (size_t)b, 0.975);
	free(s);
	free(res);
	free(med);
}

static void test_bootstrap(void **state)
{
	double x[41], lo, hi, lo2, hi2, nlo, nhi, m;
	struct rng r;

	rng_seed(&r, 1);
	for (int i = 0; i < 41; i++)
		x[i] = 10 + rng_double(&r);
	m = measure_median(x, 41);

	assert_int_equal(measure_bootstrap_ci(x, 41, 2000, 7, &lo, &hi), 0);
	assert_true(lo <= m && m <= hi);
	assert_true(lo < hi);
	/* The median of 41 uniform samples on [10, 11] is known to within about +-0.15. */
	assert_true(hi - lo < 0.4);
	assert_true(lo >= 10 && hi <= 11);

	/* Reproducible for a seed. */
	assert_int_equal(measure_bootstrap_ci(x, 41, 2000, 7, &lo2, &hi2), 0);
	assert_true(lo == lo2 && hi == hi2);
	/* And the same as the textbook computation on the same random stream. */
	naive_ci(x, 41, 2000, 7, &nlo, &nhi);
	assert_true(lo == nlo && hi == nhi);

	/*
	 * Other seeds give intervals around the same median. Their ends are order
	 * statistics of the sample (15th and 27th of 41 here, as the binomial
	 * interval predicts), so they rarely move from seed to seed.
	 */
	for (unsigned long long seed = 8; seed < 20; seed++) {
		assert_int_equal(measure_bootstrap_ci(x, 41, 2000, seed, &lo2, &hi2), 0);
		assert_true(lo2 <= m && m <= hi2);
		assert_true(hi2 - lo2 < 0.4);
	}
}

static void test_bootstrap_even_and_small(void **state)
{
	double even[] = {3, 1, 4, 1, 5, 9, 2, 6};
	double same[] = {2.5, 2.5, 2.5, 2.5};
	double one[] = {7};
	double lo, hi, nlo, nhi;

	assert_int_equal(measure_bootstrap_ci(even, 8, 500, 3, &lo, &hi), 0);
	naive_ci(even, 8, 500, 3, &nlo, &nhi);
	assert_true(lo == nlo && hi == nhi);
	assert_true(lo <= 3.5 && 3.5 <= hi);

	assert_int_equal(measure_bootstrap_ci(same, 4, 100, 1, &lo, &hi), 0);
	assert_true(lo == 2.5 && hi == 2.5);
	assert_int_equal(measure_bootstrap_ci(one, 1, 10, 1, &lo, &hi), 0);
	assert_true(lo == 7 && hi == 7);
}

static void test_bootstrap_errors(void **state)
{
	double x[] = {1, 2, 3}, lo = -1, hi = -1;

	set_error_routine(silence);
	assert_int_equal(measure_bootstrap_ci(x, 0, 100, 1, &lo, &hi), -1);
	assert_int_equal(measure_bootstrap_ci(x, 3, 0, 1, &lo, &hi), -1);
	set_error_routine(NULL);
	assert_true(lo == -1 && hi == -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_median),
	    cmocka_unit_test(test_quantile),
	    cmocka_unit_test(test_geomean),
	    cmocka_unit_test(test_mann_whitney_separated),
	    cmocka_unit_test(test_mann_whitney_ties),
	    cmocka_unit_test(test_mann_whitney_textbook),
	    cmocka_unit_test(test_mann_whitney_degenerate),
	    cmocka_unit_test(test_faster),
	    cmocka_unit_test(test_bootstrap),
	    cmocka_unit_test(test_bootstrap_even_and_small),
	    cmocka_unit_test(test_bootstrap_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
