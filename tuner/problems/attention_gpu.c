/* The attention problem, GPU side: fp16 Q K V inputs, launch arguments, comparison. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tuner/attention_gpu.h"
#include "tuner/common.h"
#include "tuner/cuda.h"

/* Query rows per block of the reference kernel (kernels/reference/attention_ref.cu). */
#define REF_BLOCK 128

static int attention_elems(const long long *d, size_t *in_elems, size_t *out_elems, char *why,
                           size_t whylen)
{
	static const char *const names[] = {"B", "H", "S", "D"};
	unsigned long long n = 1;
	int i;

	for (i = 0; i < 4; i++) {
		if (d[i] <= 0 || d[i] > (1LL << 31) - 1) {
			snprintf(why, whylen, "attention: %s out of range (got %lld)", names[i],
			         d[i]);
			return -1;
		}
		if (n > (1ULL << 40) / (unsigned long long)d[i]) {
			snprintf(why, whylen,
			         "attention: shape too large (%lld x %lld x %lld x %lld)", d[0],
			         d[1], d[2], d[3]);
			return -1;
		}
		n *= (unsigned long long)d[i];
	}
	for (i = 0; i < 3; i++)
		in_elems[i] = (size_t)n;
	*out_elems = (size_t)n;
	return 0;
}

/* splitmix64's finaliser: a good 64-bit mixer, so element i's value is a pure function of i. */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* N(0, 1) by Box-Muller: elements 2k and 2k+1 are the cosine and sine of one pair of uniforms. */
static void attention_fill(unsigned long long seed, size_t input, void *host, size_t begin,
                           size_t end)
{
	const double two_pi = 6.283185307179586476925286766559;
	uint64_t key = mix64(seed ^ mix64((uint64_t)input + 1));
	uint16_t *h = host;
	size_t i;

	for (i = begin; i < end; i++) {
		uint64_t r = mix64(key + (uint64_t)(i >> 1));
		double u1 = ((double)(r >> 32) + 1.0) * 0x1p-32; /* (0, 1] */
		double u2 = (double)(r & 0xffffffffu) * 0x1p-32; /* [0, 1) */
		double radius = sqrt(-2.0 * log(u1));
		double x = (i & 1) ? radius * sin(two_pi * u2) : radius * cos(two_pi * u2);

		h[i] = cuda_float_to_half((float)x);
	}
}

/* flash_fwd(Q, K, V, O, B, H, S, softmax_scale): the signature every attention family implements.
 */
static void attention_args(const long long *d, const unsigned long long *in, unsigned long long out,
                           struct worker_args *a)
{
	worker_args_init(a);
	worker_args_ptr(a, in[0]);
	worker_args_ptr(a, in[1]);
	worker_args_ptr(a, in[2]);
	worker_args_ptr(a, out);
	worker_args_int(a, (int)d[0]);
	worker_args_int(a, (int)d[1]);
	worker_args_int(a, (int)d[2]);
	worker_args_float(a, (float)(1.0 / sqrt((double)d[3])));
}

/* attention_ref(Q, K, V, O (float), B, H, S, D, softmax_scale), grid (ceil(S/128), H, B), 128
 * threads. */
static void attention_ref_args(const long long *d, const unsigned long long *in,
                               unsigned long long ref, struct worker_args *a, unsigned grid[3],
                               unsigned block[3])
{
	worker_args_init(a);
	worker_args_ptr(a, in[0]);
	worker_args_ptr(a, in[1]);
	worker_args_ptr(a, in[2]);
	worker_args_ptr(a, ref);
	worker_args_int(a, (int)d[0]);
	worker_args_int(a, (int)d[1]);
	worker_args_int(a, (int)d[2]);
	worker_args_int(a, (int)d[3]);
	worker_args_float(a, (float)(1.0 / sqrt((double)d[3])));
	grid[0] = (unsigned)((d[2] + REF_BLOCK - 1) / REF_BLOCK);
	grid[1] = (unsigned)d[1];
	grid[2] = (unsigned)d[0];
	block[0] = REF_BLOCK;
	block[1] = block[2] = 1;
}

/* fp16 O against fp32 Oref, accumulated in double. */
static void attention_compare(const void *out, const void *ref, size_t n, struct worker_compare *c)
{
	const uint16_t *o = out;
	const float *r = ref;
	double sum_d2 = 0, sum_r2 = 0;
	size_t i;

	c->rel_l2 = c->max_abs = 0;
	c->nonfinite = c->first_nonfinite = c->worst = 0;
	c->worst_out = c->worst_ref = 0;
	for (i = 0; i < n; i++) {
		double x = cuda_half_to_float(o[i]), y = r[i], d;

		if (!isfinite(x) || !isfinite(y)) {
			if (!c->nonfinite++)
				c->first_nonfinite = i;
			continue;
		}
		d = fabs(x - y);
		sum_d2 += d * d;
		sum_r2 += y * y;
		if (d > c->max_abs) {
			c->max_abs = d;
			c->worst = i;
			c->worst_out = x;
			c->worst_ref = y;
		}
	}
	if (sum_r2 > 0)
		c->rel_l2 = sqrt(sum_d2 / sum_r2);
	else
		c->rel_l2 = sum_d2 > 0 ? INFINITY : 0;
}

const struct worker_problem attention_gpu_problem = {
    .name = "attention",
    .ninputs = 3,
    .in_size = 2,
    .out_size = 2,
    .ref_size = 4,
    .out_poison = 0x7e00, /* a quiet NaN in fp16 */
    .elems = attention_elems,
    .fill = attention_fill,
    .args = attention_args,
    .ref_args = attention_ref_args,
    .compare = attention_compare,
};

/* ---------------------------------------------------------- CPU reference */

int attention_cpu_reference(const uint16_t *q, const uint16_t *k, const uint16_t *v, double *out,
                            const long long *dims)
{
	long long B = dims[0], H = dims[1], S = dims[2], D = dims[3], bh, i, j, e;
	double scale, *qd, *kd, *vd, *p;
	size_t n;

	if (B <= 0 || H <= 0 || S <= 0 || D <= 0)
		return error("attention reference: dims must be positive (%lld %lld %lld %lld)", B,
		             H, S, D);
	if ((double)B * (double)H * (double)S * (double)S * (double)D > 4294967296.0)
		return error(
		    "attention reference: shape %lld x %lld x %lld x %lld is too large for "
		    "the CPU",
		    B, H, S, D);
	n = (size_t)(B * H * S * D);
	scale = 1.0 / sqrt((double)D);
	qd = xmalloc(3 * n * sizeof(double));
	kd = qd + n;
	vd = kd + n;
	p = xmalloc((size_t)S * sizeof(double));
	for (i = 0; i < (long long)n; i++) {
		qd[i] = cuda_half_to_float(q[i]);
		kd[i] = cuda_half_to_float(k[i]);
		vd[i] = cuda_half_to_float(v[i]);
	}
	for (bh = 0; bh < B * H; bh++) {
		const double *qh = qd + bh * S * D, *kh = kd + bh * S * D, *vh = vd + bh * S * D;
		double *oh = out + bh * S * D;

		for (i = 0; i < S; i++) {
			double max = -INFINITY, sum = 0;

			for (j = 0; j < S; j++) {
				double dot = 0;

				for (e = 0; e < D; e++)
					dot += qh[i * D + e] * kh[j * D + e];
				p[j] = dot * scale;
				if (p[j] > max)
					max = p[j];
			}
			for (j = 0; j < S; j++) {
				p[j] = exp(p[j] - max);
				sum += p[j];
			}
			for (e = 0; e < D; e++) {
				double acc = 0;

				for (j = 0; j < S; j++)
					acc += p[j] * vh[j * D + e];
				oh[i * D + e] = acc / sum;
			}
		}
	}
	free(p);
	free(qd);
	return 0;
}
