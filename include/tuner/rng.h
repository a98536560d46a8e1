/* A small seeded PRNG (xoshiro256** seeded by splitmix64), so runs are reproducible. */
#ifndef TUNER_RNG_H
#define TUNER_RNG_H

#include <stdint.h>

/* The whole state; seed it with rng_seed before use (the all-zero state only ever yields 0). */
struct rng {
	uint64_t s[4];
};

/* Expand seed into a full state with splitmix64; every seed, 0 included, gives a valid state. */
void rng_seed(struct rng *r, unsigned long long seed);
/* The next 64 uniformly distributed bits. */
unsigned long long rng_next(struct rng *r);
/* Uniform in [0, n), without modulo bias; 0 when n is 0. */
unsigned long long rng_below(struct rng *r, unsigned long long n);
/* Uniform in [0, 1), in steps of 2^-53. */
double rng_double(struct rng *r);

#endif
