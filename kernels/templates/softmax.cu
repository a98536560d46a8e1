/*
 * Row softmax over the last dim, fp16 in and out, fp32 math: y[r, :] = softmax(x[r, :]) for
 * `rows` contiguous rows of `cols` elements, any rows and cols, tunable through the #define
 * preamble the tuner generates.
 *
 * Preamble: VEC (halves per vector access: 2, 4 or 8, i.e. 4, 8 or 16 bytes), TPR (threads
 * per row), BLOCK (threads per block; BLOCK / TPR rows per block), ITEMS (vectors each thread
 * holds in registers), CLUSTER (blocks per row, a Hopper thread-block cluster), optionally
 * TUNER_SANITIZE (checked vector accesses, see tuner_device.cuh).
 *
 * Launch: grid (ceil_div(rows, BLOCK / TPR) * CLUSTER), BLOCK threads, no dynamic shared
 * memory. Block b works on row group b / CLUSTER and is rank b % CLUSTER of its cluster (the
 * cluster's size is compiled in with __cluster_dims__, so a plain launch makes clusters).
 *
 * A row is shared by TPR * CLUSTER "row threads". It is cut into VEC-element slots aligned to
 * the vector width in memory, not to the row's start: slot s covers the row's elements
 * s * VEC - off .. s * VEC - off + VEC - 1, where off is how far the row starts past a
 * VEC-aligned address. So every slot is one aligned vector load, whatever cols is; only the
 * first and last slot of a row can reach outside it, and there the neighbouring rows' elements
 * are masked (-inf, never stored). Only where such a vector would leave the buffer itself (its
 * first or last few elements, when the buffer does not start or end on a vector boundary) is a
 * slot read element by element. Slot s belongs to row thread s % (TPR * CLUSTER), so a warp's
 * loads are consecutive 32 * VEC * 2 bytes.
 *
 * One pass or two. Each thread reads its slots ITEMS at a time (a "batch", ITEMS loads in
 * flight). When a row has at most ITEMS * TPR * CLUSTER slots it is read once: the one batch
 * stays in registers for the write. Otherwise the batches stream: pass 1 keeps a running
 * (max, sum of exp) per thread (online softmax), pass 2 reads the row again (from L2, mostly)
 * and writes. Either way the row's (max, sum) pairs are merged once: across the lanes of the
 * row (shuffles), the row's warps (shared memory, one __syncthreads) and the cluster's blocks
 * (distributed shared memory, one cluster barrier), in an order every thread of the row shares,
 * so all of them hold the same max and sum bit for bit.
 *
 * Exponentials are exp2 of x * log2(e) - max * log2(e) (ex2.approx, relative error ~2^-22),
 * computed twice per element (sum, write) rather than held: registers hold the raw halves.
 */
#include <cuda_fp16.h>

#include "tuner_device.cuh"

#if !defined(VEC) || !defined(TPR) || !defined(BLOCK) || !defined(ITEMS) || !defined(CLUSTER)
#error "softmax.cu needs the tuner's preamble (VEC, TPR, BLOCK, ITEMS, CLUSTER)"
#endif

/*
 * One slot: the vector type of VEC halves, made from and split into VEC / 2 registers of two
 * halves each. The kernel holds slots as such registers and never reaches a half through a
 * pointer to a vector: where it did, the compiler split the 16-byte stores into four.
 */
template <int V> struct softmax_vec;
template <> struct softmax_vec<2> {
	typedef unsigned type;
	static __device__ __forceinline__ type make(const unsigned w[1])
	{
		return w[0];
	}
	static __device__ __forceinline__ void split(type v, unsigned w[1])
	{
		w[0] = v;
	}
};
template <> struct softmax_vec<4> {
	typedef uint2 type;
	static __device__ __forceinline__ type make(const unsigned w[2])
	{
		return make_uint2(w[0], w[1]);
	}
	static __device__ __forceinline__ void split(type v, unsigned w[2])
	{
		w[0] = v.x;
		w[1] = v.y;
	}
};
template <> struct softmax_vec<8> {
	typedef uint4 type;
	static __device__ __forceinline__ type make(const unsigned w[4])
	{
		return make_uint4(w[0], w[1], w[2], w[3]);
	}
	static __device__ __forceinline__ void split(type v, unsigned w[4])
	{
		w[0] = v.x;
		w[1] = v.y;
		w[2] = v.z;
		w[3] = v.w;
	}
};

namespace
{

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kRowsPerBlock = BLOCK / TPR,
	kRowThreads = TPR * CLUSTER,  /* threads sharing one row */
	kCap = ITEMS * kRowThreads,   /* slots of a row that fit in registers */
	kLanes = TPR < 32 ? TPR : 32, /* lanes of a warp on one row */
	kWarpsPerRow = TPR < 32 ? 1 : TPR / 32,
	kWarps = BLOCK / 32,
};

static_assert(VEC == 2 || VEC == 4 || VEC == 8, "VEC must be 2, 4 or 8 halves");
static_assert(TPR >= 1 && (TPR & (TPR - 1)) == 0, "TPR must be a power of two");
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps, at most 1024");
static_assert(BLOCK % TPR == 0, "a block holds whole rows: BLOCK must be a multiple of TPR");
static_assert(ITEMS >= 1, "ITEMS must be at least 1");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8,
              "CLUSTER must be 1, 2, 4 or 8 (the portable cluster sizes)");

typedef softmax_vec<VEC>::type vec_t;
static_assert(sizeof(vec_t) == 2 * VEC, "a slot is VEC halves");

#define LOG2E 1.4426950408889634f

__device__ __forceinline__ float neg_inf(void)
{
	return __int_as_float(0xff800000);
}

/* 2^x, flushing results below 2^-126 to zero (they do not move a softmax). */
__device__ __forceinline__ float ex2(float x)
{
	float y;

	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

/* The two halves in a register, as __half2 (the low half first) and back. */
__device__ __forceinline__ __half2 as_half2(unsigned u)
{
	return *reinterpret_cast<const __half2 *>(&u);
}

/* Register w with its half k (0 low, 1 high) replaced by the bits h. */
__device__ __forceinline__ unsigned with_half(unsigned w, int k, unsigned short h)
{
	return k ? (w & 0xffffu) | (unsigned)h << 16 : (w & 0xffff0000u) | h;
}

/* Where a row lies: its elements, and whether its first and last slots may be read whole. */
struct row_span {
	int n;     /* elements (0 for a row past the last) */
	int off;   /* elements between the VEC-aligned address before the row and its start */
	bool head; /* the row's first slot lies inside the buffer (not before its start) */
	bool tail; /* the row's last slot lies inside the buffer (not past its end) */
};

/*
 * The slot of the row's elements j0 .. j0 + VEC - 1 (j0 + off is a multiple of VEC) into w,
 * the elements outside the row as -inf. A slot that straddles the row's edge is still read as
 * one vector, of which the neighbouring row's elements are then masked, unless that vector
 * would reach outside the buffer (the first row of a buffer that does not start VEC-aligned,
 * the last row of one that does not end so): only there is it read element by element.
 */
__device__ __forceinline__ void load_slot(unsigned w[VEC / 2], const __half *row, int j0,
                                          const row_span &r)
{
	const bool head = j0<0, tail = j0 + VEC> r.n;

	if (j0 + VEC <= 0 || j0 >= r.n) {
#pragma unroll
		for (int k = 0; k < VEC / 2; k++)
			w[k] = 0xfc00fc00u;
	} else if ((!head || r.head) && (!tail || r.tail)) {
		softmax_vec<VEC>::split(tuner_ld(reinterpret_cast<const vec_t *>(row + j0)), w);
		if (head || tail)
#pragma unroll
			for (int k = 0; k < VEC; k++)
				if (j0 + k < 0 || j0 + k >= r.n)
					w[k / 2] = with_half(w[k / 2], k % 2, 0xfc00);
	} else {
#pragma unroll
		for (int k = 0; k < VEC / 2; k++)
			w[k] = 0;
#pragma unroll
		for (int k = 0; k < VEC; k++) {
			const int j = j0 + k;
			const unsigned short h =
			    j >= 0 && j < r.n ? __half_as_ushort(row[j]) : 0xfc00;

			w[k / 2] = with_half(w[k / 2], k % 2, h);
		}
	}
}

/*
 * p as a vector pointer. The slot geometry makes p aligned, but the compiler cannot see it and
 * splits the 16-byte store into four (or, given a plain integer mask, makes it a generic store):
 * so the address is masked in the global window. The sanitize build checks p as it is instead.
 */
__device__ __forceinline__ vec_t *aligned_vec(__half *p)
{
#ifdef TUNER_SANITIZE
	return reinterpret_cast<vec_t *>(p);
#else
	const size_t a = __cvta_generic_to_global(p) & ~(size_t)(sizeof(vec_t) - 1);

	return reinterpret_cast<vec_t *>(__cvta_global_to_generic(a));
#endif
}

/*
 * The store of load_slot's slot, from VEC / 2 registers of two halves each; `vector` says
 * whether the output row has the input's offset. Only the slots on the row's edges (or a
 * differently aligned output) are stored element by element.
 */
__device__ __forceinline__ void store_slot(__half *row, int j0, int n, bool vector,
                                           const unsigned w[VEC / 2])
{
	if (vector && j0 >= 0 && j0 + VEC <= n) {
		tuner_st(aligned_vec(row + j0), softmax_vec<VEC>::make(w));
		return;
	}
	if (j0 + VEC <= 0 || j0 >= n)
		return;
#pragma unroll
	for (int k = 0; k < VEC; k++) {
		const int j = j0 + k;

		if (j >= 0 && j < n)
			row[j] = __ushort_as_half((unsigned short)(w[k / 2] >> (k % 2 * 16)));
	}
}

/* Batch b of this row thread: its slots (b * ITEMS + i) * kRowThreads + rt, i < ITEMS. */
__device__ __forceinline__ void load_batch(unsigned buf[ITEMS][VEC / 2], const __half *row,
                                           const row_span &r, int b, int rt)
{
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
		load_slot(buf[i], row, ((b * ITEMS + i) * kRowThreads + rt) * VEC - r.off, r);
}

/* Fold a batch into the running (max, sum of 2^((x - max) log2 e)) of this thread. */
__device__ __forceinline__ void batch_stats(const unsigned buf[ITEMS][VEC / 2], float &m, float &s)
{
	__half2 h = as_half2(buf[0][0]);

#pragma unroll
	for (int i = 0; i < ITEMS; i++)
#pragma unroll
		for (int k = 0; k < VEC / 2; k++)
			h = __hmax2(h, as_half2(buf[i][k]));
	const float bm = fmaxf(__low2float(h), __high2float(h));

	if (bm > m) {
		s *= ex2((m - bm) * LOG2E); /* 0 while m is -inf */
		m = bm;
	}
	if (m == neg_inf())
		return; /* nothing but masked elements so far */
	const float ml = m * LOG2E;
#pragma unroll
	for (int i = 0; i < ITEMS; i++)
#pragma unroll
		for (int k = 0; k < VEC / 2; k++) {
			const float2 f = __half22float2(as_half2(buf[i][k]));

			s += ex2(fmaf(f.x, LOG2E, -ml)) + ex2(fmaf(f.y, LOG2E, -ml));
		}
}

/* Write a batch: y = 2^((x - max) log2 e) / sum. */
__device__ __forceinline__ void store_batch(const unsigned buf[ITEMS][VEC / 2], __half *row,
                                            const row_span &r, bool vector, int b, int rt, float ml,
                                            float inv)
{
#pragma unroll
	for (int i = 0; i < ITEMS; i++) {
		unsigned w[VEC / 2];

#pragma unroll
		for (int k = 0; k < VEC / 2; k++) {
			const float2 f = __half22float2(as_half2(buf[i][k]));

			w[k] = tuner_pack_half2(ex2(fmaf(f.x, LOG2E, -ml)) * inv,
			                        ex2(fmaf(f.y, LOG2E, -ml)) * inv);
		}
		store_slot(row, ((b * ITEMS + i) * kRowThreads + rt) * VEC - r.off, r.n, vector, w);
	}
}

/*
 * (m, s) := the pair for the union of two sets of elements. Commutative bit for bit (max and
 * + are), which makes the butterfly below leave the same pair in every lane.
 */
__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2)
{
	const float mx = fmaxf(m, m2);
	/* Equal maxima need no rescaling; this also keeps -inf - -inf out of ex2. */
	const float a = m == mx ? s : s * ex2((m - mx) * LOG2E);
	const float b = m2 == mx ? s2 : s2 * ex2((m2 - mx) * LOG2E);

	m = mx;
	s = a + b;
}

/* ---------------------------------------------------------------- clusters */

__device__ __forceinline__ unsigned cluster_rank(void)
{
	unsigned r;

	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return r;
}

/* Every thread of every block of the cluster; orders shared-memory writes before the reads. */
__device__ __forceinline__ void cluster_arrive(void)
{
	asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait(void)
{
	asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/* The float2 at the same shared-memory address in block `rank` of the cluster. */
__device__ __forceinline__ float2 cluster_load(const float2 *p, unsigned rank)
{
	unsigned local = tuner_smem_addr(p), remote;
	float2 v;

	asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
	asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];"
	             : "=f"(v.x), "=f"(v.y)
	             : "r"(remote)
	             : "memory");
	return v;
}

} /* namespace */

#if CLUSTER > 1
#define SOFTMAX_CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define SOFTMAX_CLUSTER_DIMS
#endif

extern "C" __global__ void SOFTMAX_CLUSTER_DIMS __launch_bounds__(BLOCK)
    softmax(const __half *__restrict__ x, __half *__restrict__ y, int rows, int cols)
{
	__shared__ float2 warp_pair[kWarps];         /* used when TPR > 32 */
	__shared__ float2 block_pair[kRowsPerBlock]; /* used when CLUSTER > 1 */
	const int tid = threadIdx.x;
	const int lrow = tid / TPR; /* the block's row */
	const int t = tid % TPR;    /* thread in the block's part of the row */
	const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;
	const int rt = rank * TPR + t; /* row thread */
	const int row = (blockIdx.x / CLUSTER) * kRowsPerBlock + lrow;
	/* Rows past the last take part in every barrier and shuffle, with no elements. */
	const bool valid = row < rows;
	const size_t base = (size_t)(valid ? row : 0) * (size_t)cols;
	const __half *xr = x + base;
	__half *yr = y + base;
	row_span r;

	r.n = valid ? cols : 0;
	r.off = (int)(((size_t)xr / sizeof(__half)) % VEC);
	const int nslots = r.n ? (r.off + r.n + VEC - 1) / VEC : 0;
	/* In elements from the buffer's start: the first slot's start, the last slot's end. */
	r.head = base >= (size_t)r.off;
	r.tail = base + (size_t)nslots * VEC - r.off <= (size_t)rows * (size_t)cols;
	const bool vector = (int)(((size_t)yr / sizeof(__half)) % VEC) == r.off;
	const bool fits = nslots <= kCap;
	unsigned buf[ITEMS][VEC / 2];
	float m = neg_inf(), s = 0.0f;

	/*
	 * Pass 1: this thread's (max, sum). A row that fits is one batch, which stays in buf.
	 * Loops rather than a first batch apart: the code of a batch is large once unrolled
	 * (ITEMS * VEC elements), and ptxas's time grows with it.
	 */
	const int nbatches = fits ? 1 : (nslots + kCap - 1) / kCap;

#pragma unroll 1
	for (int b = 0; b < nbatches; b++) {
		load_batch(buf, xr, r, b, rt);
		batch_stats(buf, m, s);
	}

	/* The row's pair: lanes, then warps, then the cluster's blocks. */
#pragma unroll
	for (int o = kLanes / 2; o >= 1; o /= 2) {
		const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
		const float s2 = __shfl_xor_sync(0xffffffffu, s, o);

		merge(m, s, m2, s2);
	}
	if (kWarpsPerRow > 1) {
		if (tid % 32 == 0)
			warp_pair[tid / 32] = make_float2(m, s);
		__syncthreads();
		m = neg_inf();
		s = 0.0f;
#pragma unroll
		for (int w = 0; w < kWarpsPerRow; w++) {
			const float2 p = warp_pair[lrow * kWarpsPerRow + w];

			merge(m, s, p.x, p.y);
		}
	}
	if (CLUSTER > 1) {
		if (t == 0)
			block_pair[lrow] = make_float2(m, s);
		cluster_arrive();
		cluster_wait();
		m = neg_inf();
		s = 0.0f;
#pragma unroll
		for (int k = 0; k < CLUSTER; k++) {
			const float2 p = cluster_load(&block_pair[lrow], k);

			merge(m, s, p.x, p.y);
		}
		/* Done reading the others' shared memory; they wait for this before exiting. */
		cluster_arrive();
	}

	/* Pass 2: write, from registers when the row fits, else reading the row again. */
	const float ml = m * LOG2E, inv = 1.0f / s;

#pragma unroll 1
	for (int b = 0; b < nbatches; b++) {
		if (!fits)
			load_batch(buf, xr, r, b, rt);
		store_batch(buf, yr, r, vector, b, rt, ml, inv);
	}
	if (CLUSTER > 1)
		cluster_wait(); /* no block leaves while another may still read its shared memory */
}
