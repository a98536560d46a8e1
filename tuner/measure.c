/* The statistics of measurement: medians, quantiles, bootstrap CIs, geometric means, rank tests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/measure.h"
#include "tuner/rng.h"

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

static double *sorted_copy(const double *x, size_t n)
{
	double *s = xmalloc(n * sizeof(*s));

	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

/* --------------------------------------------------------------- location */

double measure_median(const double *x, size_t n)
{
	double *s, m;

	if (!n)
		return NAN;
	s = sorted_copy(x, n);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* Type 7 on already sorted data. */
static double quantile_sorted(const double *s, size_t n, double q)
{
	double h = (double)(n - 1) * q;
	size_t k = (size_t)floor(h);

	if (k + 1 >= n)
		return s[n - 1];
	return s[k] + (h - (double)k) * (s[k + 1] - s[k]);
}

double measure_quantile(const double *x, size_t n, double q)
{
	double *s, v;

	if (!n || !(q >= 0 && q <= 1))
		return NAN;
	s = sorted_copy(x, n);
	v = quantile_sorted(s, n, q);
	free(s);
	return v;
}

double measure_geomean(const double *x, size_t n)
{
	double sum = 0;

	if (!n)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		if (!(x[i] > 0))
			return NAN;
		sum += log(x[i]);
	}
	return exp(sum / (double)n);
}

/* -------------------------------------------------------------- bootstrap */

/*
 * A resample is a multiset of positions in the sorted sample, so its median is
 * found by walking the draw counts in order: O(n) per resample, no sorting.
 */
static double resample_median(const double *s, size_t n, unsigned *count, struct rng *r)
{
	size_t lo_rank = (n - 1) / 2, hi_rank = n / 2, seen = 0, i;
	double lo = 0;

	memset(count, 0, n * sizeof(*count));
	for (i = 0; i < n; i++)
		count[rng_below(r, n)]++;
	for (i = 0; i < n; i++) {
		if (!count[i])
			continue;
		if (seen <= lo_rank && lo_rank < seen + count[i])
			lo = s[i];
		if (seen <= hi_rank && hi_rank < seen + count[i])
			return (lo + s[i]) / 2;
		seen += count[i];
	}
	BUG("resample of %zu lost its median", n);
}

int measure_bootstrap_ci(const double *x, size_t n, int resamples, unsigned long long seed,
                         double *lo, double *hi)
{
	double *s, *med;
	unsigned *count;
	struct rng r;

	if (!n)
		return error("bootstrap of an empty sample");
	if (resamples < 1)
		return error("bootstrap needs at least one resample, got %d", resamples);
	s = sorted_copy(x, n);
	med = xmalloc((size_t)resamples * sizeof(*med));
	count = xmalloc(n * sizeof(*count));
	rng_seed(&r, seed);
	for (int i = 0; i < resamples; i++)
		med[i] = resample_median(s, n, count, &r);
	qsort(med, (size_t)resamples, sizeof(*med), cmp_double);
	*lo = quantile_sorted(med, (size_t)resamples, 0.025);
	*hi = quantile_sorted(med, (size_t)resamples, 0.975);
	free(count);
	free(med);
	free(s);
	return 0;
}

/* ------------------------------------------------------------ rank tests */

struct ranked {
	double v;
	int from_a;
};

static int cmp_ranked(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;

	return (a->v > b->v) - (a->v < b->v);
}

double measure_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb)
{
	size_t n = na + nb, i, j;
	double r1 = 0, ties = 0, u, mu, var, z, dn;
	struct ranked *all;

	if (!na || !nb)
		return NAN;
	all = xmalloc(n * sizeof(*all));
	for (i = 0; i < na; i++)
		all[i] = (struct ranked){a[i], 1};
	for (i = 0; i < nb; i++)
		all[na + i] = (struct ranked){b[i], 0};
	qsort(all, n, sizeof(*all), cmp_ranked);

	/* Tied values share the mean of the ranks they span (1-based). */
	for (i = 0; i < n; i = j) {
		double rank, t;

		for (j = i + 1; j < n && all[j].v == all[i].v; j++)
			;
		rank = ((double)i + 1 + (double)j) / 2;
		t = (double)(j - i);
		ties += t * t * t - t;
		for (size_t k = i; k < j; k++)
			if (all[k].from_a)
				r1 += rank;
	}
	free(all);

	dn = (double)n;
	u = r1 - (double)na * ((double)na + 1) / 2;
	mu = (double)na * (double)nb / 2;
	var = (double)na * (double)nb / 12 * ((dn + 1) - ties / (dn * (dn - 1)));
	if (!(var > 0))
		return 1; /* every value ties: no evidence either way */
	z = (fabs(u - mu) - 0.5) / sqrt(var);
	if (z <= 0)
		return 1;
	return erfc(z / sqrt(2));
}

int measure_faster(const double *a, size_t na, const double *b, size_t nb, double margin,
                   double alpha)
{
	if (!na || !nb)
		return 0;
	if (!(measure_median(a, na) * (1 + margin) <= measure_median(b, nb)))
		return 0;
	return measure_mann_whitney_p(a, na, b, nb) < alpha;
}
