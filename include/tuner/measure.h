/* The statistics of measurement: medians, quantiles, bootstrap CIs, geometric means, rank tests. */
#ifndef TUNER_MEASURE_H
#define TUNER_MEASURE_H

#include <stddef.h>

/*
 * All functions are deterministic, leave their inputs untouched, and expect
 * samples without NaN. Those returning double give NAN for empty input.
 */

/* The median; the mean of the two middle values when n is even. */
double measure_median(const double *x, size_t n);

/*
 * The q-quantile, 0 <= q <= 1, interpolating linearly between order
 * statistics (Hyndman and Fan type 7, the default of R and NumPy):
 * q = 0 is the minimum, q = 1 the maximum, q = 0.5 the median.
 */
double measure_quantile(const double *x, size_t n, double q);

/*
 * Percentile bootstrap 95% confidence interval of the median: resamples
 * resamples of n drawn with replacement, RNG seeded with seed, so the same
 * input and seed give the same interval. 0, or -1 (error()) for n == 0 or
 * resamples < 1.
 */
int measure_bootstrap_ci(const double *x, size_t n, int resamples, unsigned long long seed,
                         double *lo, double *hi);

/* exp(mean(log x)); NAN for empty input or any value that is not > 0. */
double measure_geomean(const double *x, size_t n);

/*
 * Two-sided p-value of the Mann-Whitney U test that a and b come from the
 * same distribution: normal approximation with tie and continuity
 * corrections. 1 when every value ties; NAN when a sample is empty. Too
 * coarse for tiny samples: with 3 against 3 the smallest p is about 0.08.
 */
double measure_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb);

/*
 * 1 when the samples a (e.g. a variant's times) are faster than b (the
 * baseline's) beyond noise: median(a) * (1 + margin) <= median(b) and the
 * Mann-Whitney p-value is below alpha; otherwise 0 (empty samples included).
 */
int measure_faster(const double *a, size_t na, const double *b, size_t nb, double margin,
                   double alpha);

#endif
