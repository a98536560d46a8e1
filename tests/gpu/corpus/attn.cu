/*
 * The planted-defect corpus (tests/gpu/t-corpus.sh): a copy of the FlashAttention-2-style
 * forward kernel (kernels/templates/flash_fwd.cu) with one defect per value of DEFECT, each
 * planted where an engineer would have written it. DEFECT=0 is the kernel as it should be.
 *
 *    1  misaligned shared access: an 8-byte slot before the V ring leaves V 8 bytes off the
 *       16 bytes cp.async and ldmatrix need; the sidecar's layout does not know about it
 *    2  infinite loop: the KV loop stops when the tile start equals S, so it never stops
 *       where BLOCK_N does not divide S
 *    3  wrong swizzle: the V reads use the swizzle of 64-byte rows, the writes that of rows
 *       of D halves
 *    4  missing barrier: no __syncthreads before the next K/V tile overwrites the only stage
 *    5  unmasked tail: the keys past S of the last tile are not masked
 *    6  state across launches: a trace ring whose "ring is full" test returns from the kernel;
 *       past kTraceSlots blocks (over all launches of the loaded module) every block returns
 *       at once
 *    7  state across launches: the tile count is computed by the first launch and kept in a
 *       __device__ variable for the next ones, whatever their S
 *    8  writes into an input: Q is rounded to bf16 precision in place (idempotent: two runs
 *       agree, and the outputs stay within tolerance)
 *    9  writes into an input: the softmax scale is folded into Q in place (every launch
 *       scales Q once more)
 *   10  out-of-bounds global write: the epilogue stores every row of the block's tile, also
 *       the rows past S (only where BLOCK_M does not divide S)
 *   11  out-of-bounds global write: the epilogue steps through O with the padded row stride
 *       of shared memory (D + PAD halves) instead of D
 *   12  NaN: the tail tile is masked without a branch, s + (key >= S) * -inf, and 0 * -inf
 *       is NaN for every key that is not masked
 *   13  compiler crash: an sm_90a warpgroup MMA whose matrix descriptors are still the
 *       constant 0 placeholders; NVRTC 13.0 segfaults compiling it
 *   14  compiler hang: a compile-time table whose recursive template doubles its
 *       instantiations at every level, 40 levels deep
 *
 * Each sidecar in this directory restricts the params to points where its defect is live
 * (STAGES=1 for the barrier, SWIZZLE=1 for the swizzle, PAD=8 for the stride, ...), so
 * every variant with DEFECT != 0 has the defect. DEFECT is the last param: the exhaustive
 * sweep alternates clean and defective variants, and a clean one that follows a defective
 * one checks that the defect did not leak into the worker (its inputs, its references).
 *
 * Preamble: BLOCK_M, BLOCK_N, NUM_WARPS, STAGES, SWIZZLE, PAD, DEFECT, SHAPE_D,
 * TUNER_SMEM_BYTES, optionally TUNER_SANITIZE. Layout and launch as flash_fwd.cu: one block
 * computes BLOCK_M query rows of one (batch, head), grid (ceil_div(S, BLOCK_M), H, B),
 * NUM_WARPS * 32 threads; shared memory holds the Q tile, then a STAGES-deep ring of K tiles
 * and one of V tiles, rows of SHAPE_D + PAD halves, 16-byte chunk c of row r stored at
 * c ^ (r % 8) with SWIZZLE=1.
 */
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "tuner_device.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(NUM_WARPS) || !defined(STAGES) ||           \
    !defined(SWIZZLE) || !defined(PAD) || !defined(DEFECT) || !defined(SHAPE_D) ||                 \
    !defined(TUNER_SMEM_BYTES)
#error "attn.cu needs the tuner's preamble (the params, SHAPE_D, TUNER_SMEM_BYTES)"
#endif

#define DEFECT_MISALIGN  1
#define DEFECT_HANG      2
#define DEFECT_SWIZZLE   3
#define DEFECT_BARRIER   4
#define DEFECT_TAIL      5
#define DEFECT_TRACE     6
#define DEFECT_PLAN      7
#define DEFECT_ROUND_Q   8
#define DEFECT_SCALE_Q   9
#define DEFECT_TAIL_ROWS 10
#define DEFECT_STRIDE    11
#define DEFECT_NAN       12
#define DEFECT_WGMMA     13
#define DEFECT_TEMPLATE  14

namespace
{

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kD = SHAPE_D,
	kThreads = NUM_WARPS * 32,
	kWarpRows = BLOCK_M / NUM_WARPS, /* query rows per warp */
	kMT = kWarpRows / 16,            /* m16 row tiles per warp */
	kChunks = kD / 8,                /* 16-byte chunks per row */
	kRow = kD + PAD,                 /* row stride of every tile, in halves */
	kQOff = 0,                       /* the layout, in halves */
	kKOff = kQOff + BLOCK_M * kRow,
#if DEFECT == DEFECT_MISALIGN
	/* 8 bytes for the block's two softmax statistics, which the split-KV version exchanges */
	kStatOff = kKOff + STAGES * BLOCK_N * kRow,
	kVOff = kStatOff + 4,
#else
	kVOff = kKOff + STAGES * BLOCK_N * kRow,
#endif
	kTraceSlots = 256, /* DEFECT_TRACE: blocks the trace ring records */
};
enum : long long { kSmemBytes = (long long)(kVOff + STAGES * BLOCK_N * kRow) * 2 };

static_assert(BLOCK_M % (16 * NUM_WARPS) == 0, "each warp needs whole m16 row tiles");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of the mma k (16)");
static_assert(kD % 16 == 0, "the head dim must be a multiple of 16");
static_assert(!SWIZZLE || kChunks % 8 == 0, "the XOR swizzle permutes groups of 8 chunks");
static_assert(STAGES >= 1, "STAGES must be at least 1");
static_assert(PAD >= 0, "PAD must not be negative");
static_assert(DEFECT >= 0 && DEFECT <= DEFECT_TEMPLATE, "DEFECT is 0 to 14");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared-memory layout exceeds TUNER_SMEM_BYTES: the sidecar's "
              "smem_bytes expression disagrees with the kernel");

/* Offset in halves of chunk c of row r of a tile with row stride `stride`. */
template <int stride> __device__ __forceinline__ int tile_off(int r, int c)
{
	return r * stride + (SWIZZLE ? (c ^ (r & 7)) : c) * 8;
}

#if DEFECT == DEFECT_SWIZZLE
/* The swizzle of the D=32 kernel this read was copied from: rows of 64 bytes pair up. */
template <int stride> __device__ __forceinline__ int tile_off_64b(int r, int c)
{
	return r * stride + (SWIZZLE ? (c ^ ((r >> 1) & 7)) : c) * 8;
}
#endif

/*
 * Issue the cp.asyncs of `rows` rows of one [S, D] head starting at row0 into a tile;
 * rows at or past S are zero-filled (their source is clamped to row 0, never read).
 */
template <int rows, int stride>
__device__ __forceinline__ void load_tile(__half *tile, const __half *head, int row0, int S)
{
	constexpr int total = rows * kChunks;

#pragma unroll 1
	for (int k = 0; k < (total + kThreads - 1) / kThreads; k++) {
		int i = k * kThreads + (int)threadIdx.x;

		if (total % kThreads == 0 || i < total) {
			int r = i / kChunks, c = i % kChunks;
			int g = row0 + r;
			int ok = g < S;
			const __half *src = head + (size_t)(ok ? g : 0) * kD + c * 8;

			tuner_cp_async_16(tile + tile_off<stride>(r, c), src, ok ? 16 : 0);
		}
	}
}

__device__ __forceinline__ float neg_inf(void)
{
	return __int_as_float(0xff800000);
}

#if DEFECT == DEFECT_TEMPLATE
/*
 * A compile-time tag of the tile geometry, folded bit by bit. Each level instantiates two
 * children that differ in K, so depth N is 2^N distinct types: 40 levels never finish.
 */
template <int N, unsigned long long K> struct GeometryTag {
	static constexpr unsigned long long value =
	    GeometryTag<N - 1, 2 * K>::value ^ GeometryTag<N - 1, 2 * K + 1>::value;
};
template <unsigned long long K> struct GeometryTag<0, K> {
	static constexpr unsigned long long value = K * 0x9e3779b97f4a7c15ull;
};
#endif

} /* namespace */

#if DEFECT == DEFECT_TRACE
/* When each of the first kTraceSlots blocks started, for the timeline tool. */
__device__ unsigned corpus_trace_next;
__device__ unsigned long long corpus_trace[kTraceSlots];
#endif
#if DEFECT == DEFECT_PLAN
/* The launch plan, computed once: the number of K/V tiles (0 until the first launch). */
__device__ int corpus_plan_ntiles;
#endif

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    corpus_attn(const __half *__restrict__ Q, const __half *__restrict__ K,
                const __half *__restrict__ V, __half *__restrict__ O, int B, int H, int S,
                float softmax_scale)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	__half *smem = reinterpret_cast<__half *>(smem_raw);
	__half *Qs = smem + kQOff;
	__half *Ks = smem + kKOff;
	__half *Vs = smem + kVOff;

	const int lane = threadIdx.x % 32;
	const int warp = threadIdx.x / 32;
	const int m0 = blockIdx.x * BLOCK_M;
	const size_t head = ((size_t)blockIdx.z * H + blockIdx.y) * (size_t)S * kD;
	const __half *Qh = Q + head, *Kh = K + head, *Vh = V + head;
#if DEFECT == DEFECT_PLAN
	int ntiles = *(volatile int *)&corpus_plan_ntiles;

	if (!ntiles) {
		ntiles = (S + BLOCK_N - 1) / BLOCK_N;
		corpus_plan_ntiles = ntiles; /* every block of the first launch writes the same */
	}
#else
	const int ntiles = (S + BLOCK_N - 1) / BLOCK_N;
#endif
	/* Scores are kept in log2 units: exp(x * scale) = exp2(x * scale * log2(e)). */
#if DEFECT == DEFECT_SCALE_Q
	const float scale_log2 = 1.4426950408889634f; /* the scale is folded into Q below */
#else
	const float scale_log2 = softmax_scale * 1.4426950408889634f;
#endif
	const int wrow0 = warp * kWarpRows;
	(void)B;

	float o[kMT][kD / 8][4];
	float row_max[kMT][2], row_sum[kMT][2];

	if (m0 >= S)
		return;

#if DEFECT == DEFECT_TRACE
	{
		__shared__ unsigned slot;

		if (threadIdx.x == 0)
			slot = atomicAdd(&corpus_trace_next, 1u);
		__syncthreads();
		if (slot >= kTraceSlots)
			return; /* the ring is full: nothing to record */
		if (threadIdx.x == 0) {
			unsigned long long t;

			asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
			corpus_trace[slot] = t;
		}
	}
#endif

#if DEFECT == DEFECT_WGMMA
	{
		/* The sm_90a path for S = Q K^T, one warpgroup: the smem descriptors come later. */
		float d[32];
		unsigned long long desc_q = 0, desc_k = 0;

#pragma unroll
		for (int i = 0; i < 32; i++)
			d[i] = 0.0f;
		asm volatile("wgmma.fence.sync.aligned;\n");
		asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
		             "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
		             "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
		             "%28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;\n"
		             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
		               "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
		               "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
		               "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
		               "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
		               "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
		               "+f"(d[30]), "+f"(d[31])
		             : "l"(desc_q), "l"(desc_k));
		asm volatile("wgmma.commit_group.sync.aligned;\n");
		asm volatile("wgmma.wait_group.sync.aligned 0;\n");
		if (d[lane] != 0.0f)
			return;
	}
#endif
#if DEFECT == DEFECT_TEMPLATE
	if (softmax_scale == 0.0f && GeometryTag<40, 1>::value == 0)
		return;
#endif

#pragma unroll
	for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			row_max[mt][r] = neg_inf();
			row_sum[mt][r] = 0.0f;
		}
#pragma unroll
		for (int dt = 0; dt < kD / 8; dt++)
#pragma unroll
			for (int i = 0; i < 4; i++)
				o[mt][dt][i] = 0.0f;
	}

	/* Prologue: Q joins the group of K/V tile 0; tiles 0..STAGES-2 in flight. */
	load_tile<BLOCK_M, kRow>(Qs, Qh, m0, S);
#if DEFECT == DEFECT_ROUND_Q || DEFECT == DEFECT_SCALE_Q
	{
		/*
		 * Round (8) or scale (9) the Q tile once, in place in global memory, then read it:
		 * each block owns its rows, so no other block sees them change.
		 */
		tuner_cp_async_commit();
		tuner_cp_async_wait<0>();
		__syncthreads();
		for (int i = threadIdx.x; i < BLOCK_M * kD; i += kThreads) {
			const int r = i / kD, c = i % kD;
			__half *q = Qs + tile_off<kRow>(r, c / 8) + c % 8;

#if DEFECT == DEFECT_ROUND_Q
			*q = __float2half(__bfloat162float(__float2bfloat16(__half2float(*q))));
#else
			*q = __float2half(__half2float(*q) * softmax_scale);
#endif
			if (m0 + r < S)
				const_cast<__half *>(Qh)[(size_t)(m0 + r) * kD + c] = *q;
		}
		__syncthreads();
	}
#endif
#pragma unroll
	for (int t = 0; t < STAGES - 1; t++) {
		if (t < ntiles) {
			load_tile<BLOCK_N, kRow>(Ks + t * BLOCK_N * kRow, Kh, t * BLOCK_N, S);
			load_tile<BLOCK_N, kRow>(Vs + t * BLOCK_N * kRow, Vh, t * BLOCK_N, S);
		}
		tuner_cp_async_commit();
	}

#if DEFECT == DEFECT_HANG
	/* The tiles, by their first key, up to S. */
	for (int j = 0; j * BLOCK_N != S; j++) {
#else
	for (int j = 0; j < ntiles; j++) {
#endif
		const int stage = j % STAGES;

		if constexpr (STAGES == 1) {
			load_tile<BLOCK_N, kRow>(Ks, Kh, j * BLOCK_N, S);
			load_tile<BLOCK_N, kRow>(Vs, Vh, j * BLOCK_N, S);
			tuner_cp_async_commit();
			tuner_cp_async_wait<0>();
			__syncthreads();
		} else {
			/* Tile j (group j) has landed; everyone is done with tile j - 1. */
			tuner_cp_async_wait<STAGES - 2>();
			__syncthreads();
			const int t = j + STAGES - 1;
			if (t < ntiles) {
				const int st = t % STAGES;

				load_tile<BLOCK_N, kRow>(Ks + st * BLOCK_N * kRow, Kh, t * BLOCK_N,
				                         S);
				load_tile<BLOCK_N, kRow>(Vs + st * BLOCK_N * kRow, Vh, t * BLOCK_N,
				                         S);
			}
			tuner_cp_async_commit();
		}

		const __half *Kt = Ks + stage * BLOCK_N * kRow;
		const __half *Vt = Vs + stage * BLOCK_N * kRow;

		/* S = Q K^T for this warp's rows and the tile's BLOCK_N keys. */
		float s[kMT][BLOCK_N / 8][4];
#pragma unroll
		for (int mt = 0; mt < kMT; mt++)
#pragma unroll
			for (int nt = 0; nt < BLOCK_N / 8; nt++)
#pragma unroll
				for (int i = 0; i < 4; i++)
					s[mt][nt][i] = 0.0f;
#pragma unroll
		for (int kk = 0; kk < kD / 16; kk++) {
			unsigned qf[kMT][4];
#pragma unroll
			for (int mt = 0; mt < kMT; mt++) {
				int r = wrow0 + mt * 16 + lane % 16;

				tuner_ldmatrix_x4(qf[mt],
				                  Qs + tile_off<kRow>(r, kk * 2 + lane / 16));
			}
#pragma unroll
			for (int np = 0; np < BLOCK_N / 16; np++) {
				unsigned b[4];
				int r = np * 16 + lane % 8 + (lane / 16) * 8;

				tuner_ldmatrix_x4(b,
				                  Kt + tile_off<kRow>(r, kk * 2 + (lane / 8) % 2));
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					tuner_mma_16816(s[mt][2 * np], qf[mt], b[0], b[1]);
					tuner_mma_16816(s[mt][2 * np + 1], qf[mt], b[2], b[3]);
				}
			}
		}

		/* Scale into log2 units and mask the keys past S (only the last tile has any). */
		const int kv0 = j * BLOCK_N;
		const bool tail = kv0 + BLOCK_N > S;
#pragma unroll
		for (int mt = 0; mt < kMT; mt++)
#pragma unroll
			for (int nt = 0; nt < BLOCK_N / 8; nt++)
#pragma unroll
				for (int i = 0; i < 4; i++) {
					int key = kv0 + nt * 8 + (lane % 4) * 2 + (i & 1);

					s[mt][nt][i] *= scale_log2;
#if DEFECT == DEFECT_NAN
					/* branch-free: add -inf where masked */
					if (tail)
						s[mt][nt][i] += (float)(key >= S) * neg_inf();
#elif DEFECT != DEFECT_TAIL /* which holds that BLOCK_N divides every S */
					if (tail && key >= S)
						s[mt][nt][i] = neg_inf();
#endif
				}

		/*
		 * Online softmax. Thread holds rows lane/4 (i = 0, 1) and lane/4 + 8 (i = 2, 3)
		 * of each row tile; a row's columns are spread over the 4 lanes of a quad.
		 * Every tile has at least one key < S, so the new max is finite.
		 */
		unsigned p[kMT][BLOCK_N / 16][4];
#pragma unroll
		for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
			for (int r = 0; r < 2; r++) {
				float mx = row_max[mt][r];

#pragma unroll
				for (int nt = 0; nt < BLOCK_N / 8; nt++)
					mx = fmaxf(mx,
					           fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
				const float alpha = exp2f(row_max[mt][r] - mx);
				row_max[mt][r] = mx;

				float sum = 0.0f;
#pragma unroll
				for (int nt = 0; nt < BLOCK_N / 8; nt++) {
					float e0 = exp2f(s[mt][nt][2 * r] - mx);
					float e1 = exp2f(s[mt][nt][2 * r + 1] - mx);

					s[mt][nt][2 * r] = e0;
					s[mt][nt][2 * r + 1] = e1;
					sum += e0 + e1;
				}
				/* Per-thread partial sums; the quad is summed once at the end. */
				row_sum[mt][r] = row_sum[mt][r] * alpha + sum;
#pragma unroll
				for (int dt = 0; dt < kD / 8; dt++) {
					o[mt][dt][2 * r] *= alpha;
					o[mt][dt][2 * r + 1] *= alpha;
				}
			}
			/* FA2: the accumulator layout of S is the A-operand layout of P V. */
#pragma unroll
			for (int kt = 0; kt < BLOCK_N / 16; kt++) {
				p[mt][kt][0] = tuner_pack_half2(s[mt][2 * kt][0], s[mt][2 * kt][1]);
				p[mt][kt][1] = tuner_pack_half2(s[mt][2 * kt][2], s[mt][2 * kt][3]);
				p[mt][kt][2] =
				    tuner_pack_half2(s[mt][2 * kt + 1][0], s[mt][2 * kt + 1][1]);
				p[mt][kt][3] =
				    tuner_pack_half2(s[mt][2 * kt + 1][2], s[mt][2 * kt + 1][3]);
			}
		}

		/* O += P V; V is row-major [key][d], so ldmatrix.trans gives the .col operand. */
#pragma unroll
		for (int kt = 0; kt < BLOCK_N / 16; kt++) {
#pragma unroll
			for (int dp = 0; dp < kD / 16; dp++) {
				unsigned b[4];
				int r = kt * 16 + lane % 8 + ((lane / 8) % 2) * 8;

#if DEFECT == DEFECT_SWIZZLE
				tuner_ldmatrix_x4_trans(
				    b, Vt + tile_off_64b<kRow>(r, dp * 2 + lane / 16));
#else
				tuner_ldmatrix_x4_trans(b,
				                        Vt + tile_off<kRow>(r, dp * 2 + lane / 16));
#endif
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					tuner_mma_16816(o[mt][2 * dp], p[mt][kt], b[0], b[1]);
					tuner_mma_16816(o[mt][2 * dp + 1], p[mt][kt], b[2], b[3]);
				}
			}
		}

#if DEFECT != DEFECT_BARRIER
		if constexpr (STAGES == 1)
			__syncthreads(); /* before the next tile overwrites the only stage */
#endif
	}

	/*
	 * Normalise and stage this warp's rows of O in its own rows of the Q tile (only
	 * this warp ever read them), then store them with coalesced 16-byte writes.
	 */
	__syncwarp();
#pragma unroll
	for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			float l = row_sum[mt][r];

			l += __shfl_xor_sync(0xffffffffu, l, 1);
			l += __shfl_xor_sync(0xffffffffu, l, 2);
			const float inv = 1.0f / l;
			const int row = wrow0 + mt * 16 + lane / 4 + r * 8;
#pragma unroll
			for (int dt = 0; dt < kD / 8; dt++) {
				__half *dst = Qs + tile_off<kRow>(row, dt) + (lane % 4) * 2;

				tuner_st(reinterpret_cast<unsigned *>(dst),
				         tuner_pack_half2(o[mt][dt][2 * r] * inv,
				                          o[mt][dt][2 * r + 1] * inv));
			}
		}
	}
	__syncwarp();
#pragma unroll
	for (int k = 0; k < kWarpRows * kChunks / 32; k++) {
		int i = k * 32 + lane;
		int r = wrow0 + i / kChunks, c = i % kChunks;

#if DEFECT == DEFECT_TAIL_ROWS
		/* rows past S hold the zero-filled Q rows' output: harmless to store */
		{
#else
		if (m0 + r < S) {
#endif
			uint4 v =
			    tuner_ld(reinterpret_cast<const uint4 *>(Qs + tile_off<kRow>(r, c)));
#if DEFECT == DEFECT_STRIDE
			__half *dst = O + head + (size_t)(m0 + r) * kRow + c * 8;
#else
			__half *dst = O + head + (size_t)(m0 + r) * kD + c * 8;
#endif

			tuner_st(reinterpret_cast<uint4 *>(dst), v);
		}
	}
}
