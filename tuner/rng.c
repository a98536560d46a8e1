/* xoshiro256** (Blackman and Vigna) seeded by splitmix64: fast, small, and reproducible. */
#include "tuner/rng.h"

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, unsigned long long seed)
{
	uint64_t x = seed;

	/* splitmix64 never yields four zero words in a row, the one state xoshiro must avoid. */
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

unsigned long long rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

unsigned long long rng_below(struct rng *r, unsigned long long n)
{
	/* Reject the 2^64 mod n lowest values so every residue is equally likely. */
	uint64_t threshold, x;

	if (n == 0)
		return 0;
	threshold = (0 - (uint64_t)n) % n;
	do
		x = rng_next(r);
	while (x < threshold);
	return x % n;
}

double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}
