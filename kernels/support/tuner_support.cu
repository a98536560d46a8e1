/*
 * The worker's own kernels, compiled by tuner for the job's architecture: inputs filled on the
 * GPU from a counter-based generator, outputs poisoned, converted, compared with the reference
 * and with each other, inputs checksummed. Every kernel is a grid-stride loop over n elements.
 *
 * Element types are numbered as enum dtype in include/tuner/problem.h.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

enum : int {
	DT_F16,
	DT_BF16,
	DT_F32,
	DT_F64,
	DT_I8,
	DT_U8,
	DT_I32,
	DT_I64,
	DT_E4M3,
	DT_E5M2,
};

/* As enum fill_kind. */
enum : int { FILL_NORMAL, FILL_UNIFORM, FILL_IOTA, FILL_CONSTANT, FILL_ZEROS, FILL_POISON };

/* What tuner_compare accumulates; laid out as struct worker_cmp in tuner/worker-child.c. */
struct tuner_cmp {
	double sum_d2, sum_r2, sum_o2, sum_or;
	unsigned long long max_abs_bits; /* |out - ref| as the bits of a non-negative double */
	unsigned long long nonfinite;
	unsigned long long first_nonfinite; /* starts at ~0 */
	unsigned long long worst;           /* starts at ~0: the first index with max_abs */
};

__device__ __forceinline__ unsigned long long mix64(unsigned long long z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

__device__ __forceinline__ double load_as_double(const void *p, int dt, unsigned long long i)
{
	switch (dt) {
	case DT_F16:
		return (double)__half2float(((const __half *)p)[i]);
	case DT_BF16:
		return (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
	case DT_F32:
		return (double)((const float *)p)[i];
	case DT_F64:
		return ((const double *)p)[i];
	case DT_I8:
		return (double)((const signed char *)p)[i];
	case DT_U8:
		return (double)((const unsigned char *)p)[i];
	case DT_I32:
		return (double)((const int *)p)[i];
	case DT_I64:
		return (double)((const long long *)p)[i];
	case DT_E4M3: {
		__half_raw h = __nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t *)p)[i], __NV_E4M3);
		return (double)__half2float(__half(h));
	}
	default: {
		__half_raw h = __nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t *)p)[i], __NV_E5M2);
		return (double)__half2float(__half(h));
	}
	}
}

/* Integers round to nearest and saturate; floating types round to nearest. */
__device__ __forceinline__ long long to_int(double v, double lo, double hi)
{
	v = rint(v);
	return (long long)(v < lo ? lo : v > hi ? hi : v);
}

__device__ __forceinline__ void store_from_double(void *p, int dt, unsigned long long i, double v)
{
	switch (dt) {
	case DT_F16:
		((__half *)p)[i] = __double2half(v);
		break;
	case DT_BF16:
		((__nv_bfloat16 *)p)[i] = __double2bfloat16(v);
		break;
	case DT_F32:
		((float *)p)[i] = (float)v;
		break;
	case DT_F64:
		((double *)p)[i] = v;
		break;
	case DT_I8:
		((signed char *)p)[i] = (signed char)to_int(v, -128.0, 127.0);
		break;
	case DT_U8:
		((unsigned char *)p)[i] = (unsigned char)to_int(v, 0.0, 255.0);
		break;
	case DT_I32:
		((int *)p)[i] = (int)to_int(v, -2147483648.0, 2147483647.0);
		break;
	case DT_I64:
		((long long *)p)[i] = to_int(v, -9.2233720368547758e18, 9.2233720368547748e18);
		break;
	case DT_E4M3:
		((__nv_fp8_storage_t *)p)[i] =
		    __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
		break;
	default:
		((__nv_fp8_storage_t *)p)[i] =
		    __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
		break;
	}
}

/* A NaN of the element type (integers: a byte pattern, `salt` picks which). */
__device__ __forceinline__ void store_poison(void *p, int dt, unsigned long long i, int salt)
{
	switch (dt) {
	case DT_F16:
		((unsigned short *)p)[i] = 0x7e00;
		break;
	case DT_BF16:
		((unsigned short *)p)[i] = 0x7fc0;
		break;
	case DT_F32:
		((unsigned *)p)[i] = 0x7fc00000u;
		break;
	case DT_F64:
		((unsigned long long *)p)[i] = 0x7ff8000000000000ULL;
		break;
	case DT_E4M3:
	case DT_E5M2:
		((unsigned char *)p)[i] = 0x7f;
		break;
	case DT_I8:
	case DT_U8:
		((unsigned char *)p)[i] = salt ? 0x5a : 0xa5;
		break;
	case DT_I32:
		((unsigned *)p)[i] = salt ? 0x5a5a5a5au : 0xa5a5a5a5u;
		break;
	default:
		((unsigned long long *)p)[i] = salt ? 0x5a5a5a5a5a5a5a5aULL : 0xa5a5a5a5a5a5a5a5ULL;
		break;
	}
}

/* Element i of a fill: a pure function of (key, i), so any grid gives the same data. */
extern "C" __global__ void tuner_fill(void *p, unsigned long long n, int dt, int kind, double a,
                                      double b, unsigned long long key, int salt)
{
	const double two_pi = 6.283185307179586476925286766559;
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;

	for (; i < n; i += step) {
		double v;

		if (kind == FILL_POISON) {
			store_poison(p, dt, i, salt);
			continue;
		}
		if (kind == FILL_NORMAL) {
			/* Box-Muller: elements 2k and 2k+1 share one pair of uniforms */
			unsigned long long r = mix64(key + (i >> 1));
			double u1 = ((double)(r >> 32) + 1.0) * 0x1p-32; /* (0, 1] */
			double u2 = (double)(r & 0xffffffffu) * 0x1p-32; /* [0, 1) */
			double radius = sqrt(-2.0 * log(u1));

			v = a + b * ((i & 1) ? radius * sin(two_pi * u2) : radius * cos(two_pi * u2));
		} else if (kind == FILL_UNIFORM) {
			v = a + (b - a) * ((double)(mix64(key + i) >> 11) * 0x1p-53);
		} else if (kind == FILL_IOTA) {
			v = (double)i;
		} else if (kind == FILL_CONSTANT) {
			v = a;
		} else {
			v = 0.0;
		}
		store_from_double(p, dt, i, v);
	}
}

extern "C" __global__ void tuner_convert(const void *src, int sdt, void *dst, int ddt,
                                         unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;

	for (; i < n; i += step)
		store_from_double(dst, ddt, i, load_as_double(src, sdt, i));
}

__device__ __forceinline__ bool is_finite_value(double v)
{
	return !isnan(v) && !isinf(v);
}

/* 256 threads a block: sums over the finite pairs, the largest difference, the non-finite ones. */
extern "C" __global__ void __launch_bounds__(256) tuner_compare(const void *out, int odt,
                                                                const void *ref, int rdt,
                                                                unsigned long long n,
                                                                tuner_cmp *c)
{
	__shared__ double part[4][256];
	__shared__ unsigned long long most[256];
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	double d2 = 0, r2 = 0, o2 = 0, orr = 0, worst = 0;
	const int t = threadIdx.x;

	for (; i < n; i += step) {
		double o = load_as_double(out, odt, i), r = load_as_double(ref, rdt, i), d;

		if (!is_finite_value(o) || !is_finite_value(r)) {
			atomicAdd(&c->nonfinite, 1ULL);
			atomicMin(&c->first_nonfinite, i);
			continue;
		}
		d = fabs(o - r);
		d2 += d * d;
		r2 += r * r;
		o2 += o * o;
		orr += o * r;
		worst = fmax(worst, d);
	}
	part[0][t] = d2;
	part[1][t] = r2;
	part[2][t] = o2;
	part[3][t] = orr;
	most[t] = (unsigned long long)__double_as_longlong(worst);
	__syncthreads();
	for (int s = 128; s > 0; s >>= 1) {
		if (t < s) {
			for (int k = 0; k < 4; k++)
				part[k][t] += part[k][t + s];
			most[t] = most[t] > most[t + s] ? most[t] : most[t + s];
		}
		__syncthreads();
	}
	if (t == 0) {
		atomicAdd(&c->sum_d2, part[0][0]);
		atomicAdd(&c->sum_r2, part[1][0]);
		atomicAdd(&c->sum_o2, part[2][0]);
		atomicAdd(&c->sum_or, part[3][0]);
		atomicMax(&c->max_abs_bits, most[0]);
	}
}

/* The first index whose difference is the largest (tuner_compare found its value). */
extern "C" __global__ void tuner_find_worst(const void *out, int odt, const void *ref, int rdt,
                                            unsigned long long n, tuner_cmp *c)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	const unsigned long long target = c->max_abs_bits;

	for (; i < n; i += step) {
		double o = load_as_double(out, odt, i), r = load_as_double(ref, rdt, i);

		if (is_finite_value(o) && is_finite_value(r) &&
		    (unsigned long long)__double_as_longlong(fabs(o - r)) == target)
			atomicMin(&c->worst, i);
	}
}

/* Elements of `size` bytes that differ between a and b: r[0] the count, r[1] the first (~0). */
extern "C" __global__ void tuner_diff(const unsigned char *a, const unsigned char *b,
                                      unsigned long long n, int size, unsigned long long *r)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;

	for (; i < n; i += step) {
		bool same = true;

		for (int k = 0; k < size; k++)
			same = same && a[i * size + k] == b[i * size + k];
		if (!same) {
			atomicAdd(&r[0], 1ULL);
			atomicMin(&r[1], i);
		}
	}
}

/* An order-sensitive checksum of n bytes: the sum of mix64(word ^ mix64(index)). */
extern "C" __global__ void tuner_checksum(const unsigned char *p, unsigned long long n,
                                          unsigned long long *sum)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	unsigned long long words = (n + 7) / 8, acc = 0;

	for (; i < words; i += step) {
		unsigned long long w = 0;

		for (int k = 0; k < 8 && i * 8 + k < n; k++)
			w |= (unsigned long long)p[i * 8 + k] << (8 * k);
		acc += mix64(w ^ mix64(i));
	}
	atomicAdd(sum, acc);
}
