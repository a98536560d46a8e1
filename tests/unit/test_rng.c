/* Unit tests for the seeded PRNG. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "tuner/common.h"
#include "tuner/rng.h"

/* The reference xoshiro256** sequence from state {1, 2, 3, 4}. */
static void test_reference_sequence(void **state)
{
	struct rng r = {{1, 2, 3, 4}};

	assert_true(rng_next(&r) == 11520ULL);
	assert_true(rng_next(&r) == 0ULL);
	assert_true(rng_next(&r) == 1509978240ULL);
	assert_true(rng_next(&r) == 1215971899390074240ULL);
}

/* splitmix64 seeding: seed 0 expands to the well-known first splitmix64 output, and so on. */
static void test_seeding(void **state)
{
	struct rng r;

	rng_seed(&r, 0);
	assert_true(r.s[0] == 0xe220a8397b1dcdafULL);
	assert_true(r.s[1] == 0x6e789e6aa1b965f4ULL);
	assert_true(r.s[2] == 0x06c45d188009454fULL);
	assert_true(r.s[3] == 0xf88bb8a8724c81ecULL);
	assert_true(rng_next(&r) == 0x99ec5f36cb75f2b4ULL);
	rng_seed(&r, 42);
	assert_true(rng_next(&r) == 0x15780b2e0c2ec716ULL);
	assert_true(rng_next(&r) == 0x6104d9866d113a7eULL);
	assert_true(rng_next(&r) == 0xae17533239e499a1ULL);
}

static void test_same_seed_same_sequence(void **state)
{
	struct rng a, b;

	rng_seed(&a, 1234567);
	rng_seed(&b, 1234567);
	for (int i = 0; i < 1000; i++) {
		assert_true(rng_next(&a) == rng_next(&b));
		assert_true(rng_below(&a, 77) == rng_below(&b, 77));
		assert_true(rng_double(&a) == rng_double(&b));
	}
	/* Re-seeding restarts the sequence. */
	rng_seed(&a, 99);
	unsigned long long first = rng_next(&a);
	rng_next(&a);
	rng_seed(&a, 99);
	assert_true(rng_next(&a) == first);
}

static void test_different_seeds_differ(void **state)
{
	unsigned long long firsts[64];

	for (int s = 0; s < 64; s++) {
		struct rng r;

		rng_seed(&r, (unsigned long long)s);
		firsts[s] = rng_next(&r);
		for (int t = 0; t < s; t++)
			assert_true(firsts[t] != firsts[s]);
	}
	/* Neighbouring seeds give unrelated streams, not shifted copies. */
	struct rng a, b;
	int same = 0;

	rng_seed(&a, 7);
	rng_seed(&b, 8);
	for (int i = 0; i < 100; i++)
		same += rng_below(&a, 2) == rng_below(&b, 2);
	assert_in_range(same, 25, 75);
}

static void test_below_range_and_uniform(void **state)
{
	enum { N = 10, DRAWS = 100000 };
	int count[N] = {0};
	struct rng r;

	rng_seed(&r, 2024);
	for (int i = 0; i < DRAWS; i++) {
		unsigned long long v = rng_below(&r, N);

		assert_true(v < N);
		count[v]++;
	}
	/* Chi-square with 9 degrees of freedom: 27.9 is the 0.001 critical value. */
	double chi2 = 0;

	for (int i = 0; i < N; i++) {
		double d = count[i] - (double)DRAWS / N;

		chi2 += d * d / ((double)DRAWS / N);
	}
	assert_true(chi2 < 27.9);

	assert_true(rng_below(&r, 0) == 0);
	for (int i = 0; i < 100; i++)
		assert_true(rng_below(&r, 1) == 0);
	/* Huge bounds, where rejection matters most, stay in range. */
	for (int i = 0; i < 1000; i++) {
		unsigned long long n = (1ULL << 63) + 1;

		assert_true(rng_below(&r, n) < n);
		assert_true(rng_below(&r, 3) < 3);
	}
}

/*
 * With n = 3 * 2^62, plain x % n would give values below 2^62 twice as often
 * as the rest (half the draws instead of a third).
 */
static void test_below_unbiased(void **state)
{
	const unsigned long long n = 3ULL << 62;
	struct rng r;
	int low = 0;

	rng_seed(&r, 5);
	for (int i = 0; i < 30000; i++)
		low += rng_below(&r, n) < (1ULL << 62);
	assert_in_range(low, 9400, 10600);
}

static void test_double(void **state)
{
	struct rng r;
	double sum = 0, lo = 1, hi = 0;
	int bins[4] = {0};

	rng_seed(&r, 3);
	for (int i = 0; i < 100000; i++) {
		double d = rng_double(&r);

		assert_true(d >= 0.0 && d < 1.0);
		sum += d;
		lo = fmin(lo, d);
		hi = fmax(hi, d);
		bins[(int)(d * 4)]++;
	}
	assert_true(fabs(sum / 100000 - 0.5) < 0.01);
	assert_true(lo < 0.001 && hi > 0.999);
	for (int i = 0; i < 4; i++)
		assert_in_range(bins[i], 24000, 26000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reference_sequence),
	    cmocka_unit_test(test_seeding),
	    cmocka_unit_test(test_same_seed_same_sequence),
	    cmocka_unit_test(test_different_seeds_differ),
	    cmocka_unit_test(test_below_range_and_uniform),
	    cmocka_unit_test(test_below_unbiased),
	    cmocka_unit_test(test_double),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
