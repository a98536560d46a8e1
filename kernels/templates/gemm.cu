/*
 * Matrix product C = A B, fp16 in and out, fp32 accumulation, all row-major (A [M, K],
 * B [K, N], C [M, N]), on mma.sync tensor cores, tunable through the tuner's preamble.
 *
 * Preamble: BLOCK_M, BLOCK_N, BLOCK_K (the block's tile), WARPS_M, WARPS_N (the warp
 * grid over it), STAGES (depth of the cp.async ring), SPLIT_K (blocks sharing one
 * tile's K range), SWIZZLE (block rows per raster group), TUNER_SMEM_BYTES, optionally
 * TUNER_SANITIZE (checked instructions, see tuner_device.cuh).
 *
 * Grid (ceil_div(M, BLOCK_M) * ceil_div(N, BLOCK_N), 1, SPLIT_K), WARPS_M * WARPS_N * 32
 * threads. blockIdx.x is a tile in grouped raster order: SWIZZLE block rows at a time,
 * down each column of tiles of the group, so that the blocks running together share
 * panels of A and B in L2 (SWIZZLE = 1 is plain row-major order). blockIdx.z is the
 * split: split s computes the tile's share of K tiles [s * per, (s + 1) * per).
 *
 * Each warp owns a (BLOCK_M / WARPS_M) x (BLOCK_N / WARPS_N) piece of the tile: whole
 * m16n8k16 tiles, with fp32 accumulators in registers. A and B tiles go through a
 * STAGES-deep ring in shared memory by 16-byte cp.async; A is read with ldmatrix, B
 * (row-major [k][n]) with ldmatrix.trans, which gives the mma's column-major operand.
 *
 * Shared memory (dynamic): the A ring (STAGES x BLOCK_M rows of BLOCK_K halves), then
 * the B ring (STAGES x BLOCK_K rows of BLOCK_N halves), no padding: 16-byte chunk c of
 * row r is stored at chunk c ^ f(r), f chosen so that the 8 rows an ldmatrix reads fall
 * in 8 distinct 16-byte bank groups.
 *
 * Tails: rows of A past M, columns past N and k past K are loaded as zeros (cp.async
 * with a source size of 0) and never stored. N and K must be multiples of 8 (the
 * problem's validity rules): a 16-byte chunk of a row is then wholly in or out.
 *
 * SPLIT_K > 1: every split writes its fp32 partial tile to Cpart[split], then counts
 * itself in Locks[tile]; the block that arrives last adds the partials in split order
 * (so the sum is the same bits whoever arrives last), writes C and resets the counter
 * to 0 for the next call. Locks must hold zeros before the first call.
 */
#include <cuda_fp16.h>

#include "tuner_device.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(WARPS_M) ||            \
    !defined(WARPS_N) || !defined(STAGES) || !defined(SPLIT_K) || !defined(SWIZZLE) ||             \
    !defined(TUNER_SMEM_BYTES)
#error "gemm.cu needs the tuner's preamble (the params and TUNER_SMEM_BYTES)"
#endif

namespace
{

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kThreads = WARPS_M * WARPS_N * 32,
	kWarpM = BLOCK_M / WARPS_M, /* rows of C per warp */
	kWarpN = BLOCK_N / WARPS_N, /* columns of C per warp */
	kMT = kWarpM / 16,          /* m16 tiles per warp */
	kNT = kWarpN / 8,           /* n8 tiles per warp */
	kChunksA = BLOCK_K / 8,     /* 16-byte chunks per row of an A tile */
	kChunksB = BLOCK_N / 8,     /* ... and of a B tile */
	/* The layout, in halves (the sidecar's layout: A ring at 0, B ring after it). */
	kStageA = BLOCK_M * BLOCK_K,
	kStageB = BLOCK_K * BLOCK_N,
	kOffB = STAGES * kStageA,
};
enum : long long { kSmemBytes = (long long)(kOffB + STAGES * kStageB) * 2 };

static_assert(BLOCK_M % (16 * WARPS_M) == 0, "each warp needs whole m16 row tiles");
static_assert(BLOCK_N % (16 * WARPS_N) == 0,
              "each warp needs whole pairs of n8 tiles (one ldmatrix.x4.trans)");
static_assert(BLOCK_K == 32 || BLOCK_K == 64, "the swizzle handles rows of 4 or 8 chunks of A");
static_assert(BLOCK_N >= 32, "the swizzle needs rows of at least 4 chunks of B");
static_assert(STAGES >= 2, "the ring needs at least 2 stages");
static_assert(SPLIT_K >= 1 && SWIZZLE >= 1, "SPLIT_K and SWIZZLE are at least 1");
static_assert(kThreads <= 1024, "at most 1024 threads per block");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared-memory layout exceeds TUNER_SMEM_BYTES: the sidecar's "
              "smem_bytes expression disagrees with the kernel");

/*
 * Offset in halves of chunk c of row r of a tile whose rows hold `chunks` 16-byte
 * chunks. The 8 rows one ldmatrix matrix reads (same c, 8 consecutive r) must land in
 * the 8 distinct 16-byte groups of a 128-byte bank line: with 8 or more chunks per row
 * XOR c with r % 8; with 4 (two rows per line) XOR it with (r / 2) % 4.
 */
template <int chunks> __device__ __forceinline__ int tile_off(int r, int c)
{
	static_assert(chunks == 4 || chunks % 8 == 0, "rows of 4 or a multiple of 8 chunks");
	const int x = chunks >= 8 ? (r & 7) : ((r >> 1) & 3);

	return r * chunks * 8 + (c ^ x) * 8;
}

/*
 * Issue the cp.asyncs of one stage: A rows m0.. and columns k0.., B rows k0.. and
 * columns n0... Chunks past M, N or K are zero-filled; their source is clamped to the
 * matrix's first element, which is never read (the size is 0) but stays a valid,
 * aligned address. Not unrolled: unrolled, every chunk's address is hoisted out of
 * the K loop and costs registers.
 */
__device__ __forceinline__ void load_stage(__half *As, __half *Bs, const __half *A, const __half *B,
                                           int M, int N, int K, int m0, int n0, int k0)
{
	constexpr int totalA = BLOCK_M * kChunksA, totalB = BLOCK_K * kChunksB;

#pragma unroll 1
	for (int i = threadIdx.x; i < totalA; i += kThreads) {
		const int r = i / kChunksA, c = i % kChunksA;
		const int gm = m0 + r, gk = k0 + c * 8;
		const bool ok = gm < M && gk < K;
		const __half *src = ok ? A + (size_t)gm * K + gk : A;

		tuner_cp_async_16(As + tile_off<kChunksA>(r, c), src, ok ? 16 : 0);
	}
#pragma unroll 1
	for (int i = threadIdx.x; i < totalB; i += kThreads) {
		const int r = i / kChunksB, c = i % kChunksB;
		const int gk = k0 + r, gn = n0 + c * 8;
		const bool ok = gk < K && gn < N;
		const __half *src = ok ? B + (size_t)gk * N + gn : B;

		tuner_cp_async_16(Bs + tile_off<kChunksB>(r, c), src, ok ? 16 : 0);
	}
}

/* fp32 pairs through L2 only: partials are written and read by different SMs. */
__device__ __forceinline__ void st_cg_f2(float2 *p, float2 v)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_global_ok(TUNER_SAN_VEC_STORE, p, sizeof(float2), 1))
		return;
#endif
	__stcg(p, v);
}

__device__ __forceinline__ float2 ld_cg_f2(const float2 *p)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_global_ok(TUNER_SAN_VEC_LOAD, p, sizeof(float2), 0))
		return make_float2(0.0f, 0.0f);
#endif
	return __ldcg(p);
}

} /* namespace */

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemm(const __half *__restrict__ A, const __half *__restrict__ B, __half *__restrict__ C,
         float *__restrict__ Cpart, int *__restrict__ Locks, int M, int N, int K)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	__half *As = reinterpret_cast<__half *>(smem_raw);
	__half *Bs = As + kOffB;

	const int lane = threadIdx.x % 32;
	const int warp = threadIdx.x / 32;
	const int wm = warp / WARPS_N, wn = warp % WARPS_N;

	/* The tile, in grouped raster order. */
	const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M;
	const int tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
	const int tile = blockIdx.x;
	const int per_group = SWIZZLE * tiles_n;
	const int first_m = tile / per_group * SWIZZLE;
	const int group_m = min(tiles_m - first_m, SWIZZLE);
	const int tm = first_m + tile % per_group % group_m;
	const int tn = tile % per_group / group_m;
	const int m0 = tm * BLOCK_M, n0 = tn * BLOCK_N;

	/* This split's K tiles. */
	const int ktiles = (K + BLOCK_K - 1) / BLOCK_K;
	const int per_split = (ktiles + SPLIT_K - 1) / SPLIT_K;
	const int kt0 = min((int)blockIdx.z * per_split, ktiles);
	const int nk = min(kt0 + per_split, ktiles) - kt0;

	float acc[kMT][kNT][4];
#pragma unroll
	for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
		for (int nt = 0; nt < kNT; nt++)
#pragma unroll
			for (int i = 0; i < 4; i++)
				acc[mt][nt][i] = 0.0f;
	}

	/* Prologue: tiles 0..STAGES-2 in flight, one commit group each (empty past nk). */
#pragma unroll
	for (int s = 0; s < STAGES - 1; s++) {
		if (s < nk)
			load_stage(As + s * kStageA, Bs + s * kStageB, A, B, M, N, K, m0, n0,
			           (kt0 + s) * BLOCK_K);
		tuner_cp_async_commit();
	}

	for (int j = 0; j < nk; j++) {
		/* Tile j (group j) has landed; every warp is done with tile j - 1's stage. */
		tuner_cp_async_wait<STAGES - 2>();
		__syncthreads();
		{
			const int t = j + STAGES - 1;

			if (t < nk) {
				const int st = t % STAGES;

				load_stage(As + st * kStageA, Bs + st * kStageB, A, B, M, N, K, m0,
				           n0, (kt0 + t) * BLOCK_K);
			}
			tuner_cp_async_commit();
		}

		const __half *At = As + (j % STAGES) * kStageA;
		const __half *Bt = Bs + (j % STAGES) * kStageB;

#pragma unroll
		for (int kk = 0; kk < BLOCK_K / 16; kk++) {
			unsigned a[kMT][4];
#pragma unroll
			for (int mt = 0; mt < kMT; mt++) {
				const int r = wm * kWarpM + mt * 16 + lane % 16;

				tuner_ldmatrix_x4(a[mt],
				                  At + tile_off<kChunksA>(r, kk * 2 + lane / 16));
			}
#pragma unroll
			for (int np = 0; np < kNT / 2; np++) {
				unsigned b[4];
				const int r = kk * 16 + lane % 8 + ((lane / 8) % 2) * 8;
				const int c = (wn * kWarpN + np * 16) / 8 + lane / 16;

				tuner_ldmatrix_x4_trans(b, Bt + tile_off<kChunksB>(r, c));
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					tuner_mma_16816(acc[mt][2 * np], a[mt], b[0], b[1]);
					tuner_mma_16816(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
				}
			}
		}
	}
	tuner_cp_async_wait<0>(); /* only empty groups are left; leave none behind */

	/*
	 * Accumulator (mt, nt, i) of a thread is C row m0 + wm * kWarpM + mt * 16 + lane / 4
	 * (+ 8 for i = 2, 3), columns col and col + 1 with col = n0 + wn * kWarpN + nt * 8 +
	 * (lane % 4) * 2. N is a multiple of 8, so col < N means col + 1 < N.
	 */
	const int row0 = m0 + wm * kWarpM + lane / 4;
	const int col0 = n0 + wn * kWarpN + (lane % 4) * 2;

	if constexpr (SPLIT_K == 1) {
#pragma unroll
		for (int mt = 0; mt < kMT; mt++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int row = row0 + mt * 16 + h * 8;
#pragma unroll
				for (int nt = 0; nt < kNT; nt++) {
					const int col = col0 + nt * 8;

					if (row < M && col < N)
						tuner_st(reinterpret_cast<unsigned *>(
							     C + (size_t)row * N + col),
						         tuner_pack_half2(acc[mt][nt][2 * h],
						                          acc[mt][nt][2 * h + 1]));
				}
			}
		return;
	}

	/* SPLIT_K > 1: this split's partial tile, then count it in. */
	const size_t slice = (size_t)M * N;
#pragma unroll
	for (int mt = 0; mt < kMT; mt++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int row = row0 + mt * 16 + h * 8;
#pragma unroll
			for (int nt = 0; nt < kNT; nt++) {
				const int col = col0 + nt * 8;

				if (row < M && col < N)
					st_cg_f2(reinterpret_cast<float2 *>(Cpart +
					                                    blockIdx.z * slice +
					                                    (size_t)row * N + col),
					         make_float2(acc[mt][nt][2 * h],
					                     acc[mt][nt][2 * h + 1]));
			}
		}
	__threadfence(); /* this thread's partials before the count, device-wide */
	__syncthreads(); /* every thread's partials before thread 0 counts */
	int arrived = 0;
	if (threadIdx.x == 0)
		arrived = atomicAdd(&Locks[tm * tiles_n + tn], 1) + 1;
	if (!__syncthreads_or(arrived == SPLIT_K))
		return;
	__threadfence(); /* the others' partials, seen through their count */

	/*
	 * Last to arrive: add the partials in split order, this block's own read back like
	 * the others (the sum's order never depends on which block arrives last), and write
	 * C. Unrolled by 4 only: fully unrolled, ptxas issues every load at once and spills.
	 */
#pragma unroll 4
	for (int i = 0; i < kMT * 2 * kNT; i++) {
		const int mt = i / (2 * kNT), h = i / kNT % 2, nt = i % kNT;
		const int row = row0 + mt * 16 + h * 8, col = col0 + nt * 8;

		if (row < M && col < N) {
			const float *p = Cpart + (size_t)row * N + col;
			float2 sum = ld_cg_f2(reinterpret_cast<const float2 *>(p));

#pragma unroll
			for (int s = 1; s < SPLIT_K; s++) {
				const float2 v =
				    ld_cg_f2(reinterpret_cast<const float2 *>(p + s * slice));

				sum.x += v.x;
				sum.y += v.y;
			}
			tuner_st(reinterpret_cast<unsigned *>(C + (size_t)row * N + col),
			         tuner_pack_half2(sum.x, sum.y));
		}
	}
	if (threadIdx.x == 0)
		Locks[tm * tiles_n + tn] = 0; /* every split has counted: ready for the next call */
}
