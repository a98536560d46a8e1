/*
 * FlashAttention-2-style forward pass, fp16 in and out, fp32 accumulation, non-causal,
 * [B, H, S, D] contiguous, tunable through the #define preamble the tuner generates.
 *
 * Preamble: BLOCK_M, BLOCK_N, NUM_WARPS, STAGES, SWIZZLE, PAD, SHAPE_D (the head dim,
 * 64 or 128), TUNER_SMEM_BYTES (the sidecar's smem_bytes), optionally TUNER_SANITIZE
 * (checked instructions, see tuner_device.cuh) and TUNER_PLANT_MISALIGN (a deliberately
 * broken variant for tests: the seeds' 2-byte-off K row stride).
 *
 * One block computes BLOCK_M query rows of one (batch, head); grid (ceil_div(S, BLOCK_M),
 * H, B), NUM_WARPS * 32 threads. Each warp owns BLOCK_M / NUM_WARPS rows (a multiple of
 * 16: whole m16n8k16 row tiles) and holds its running max and sum and its O accumulators
 * in registers; Q fragments are re-read from shared memory at each k step (holding them
 * costs D / 4 registers per row tile, which the accumulators need more). The block
 * shares K/V tiles of BLOCK_N keys, loaded by 16-byte cp.async into a STAGES-deep ring.
 *
 * Shared memory (dynamic, all rows SHAPE_D + PAD halves):
 *   Q tile  BLOCK_M rows                 at 0 (reused to stage O for 16-byte stores)
 *   K ring  STAGES x BLOCK_N rows        after Q
 *   V ring  STAGES x BLOCK_N rows        after K
 * Rows are made of 16-byte chunks; with SWIZZLE=1 chunk c of row r is stored at chunk
 * c ^ (r % 8), so that the eight row addresses of an ldmatrix hit distinct banks.
 */
#include <cuda_fp16.h>

#include "tuner_device.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(NUM_WARPS) || !defined(STAGES) ||           \
    !defined(SWIZZLE) || !defined(PAD) || !defined(SHAPE_D) || !defined(TUNER_SMEM_BYTES)
#error "flash_fwd.cu needs the tuner's preamble (the params, SHAPE_D, TUNER_SMEM_BYTES)"
#endif

namespace
{

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kD = SHAPE_D,
	kThreads = NUM_WARPS * 32,
	kWarpRows = BLOCK_M / NUM_WARPS, /* query rows per warp */
	kMT = kWarpRows / 16,            /* m16 row tiles per warp */
	kChunks = kD / 8,                /* 16-byte chunks per row */
	kRow = kD + PAD,                 /* row stride of Q and V, in halves */
#ifdef TUNER_PLANT_MISALIGN
	kRowK = kD + PAD + 1, /* the seeds' bug: a K row stride 2 bytes off a multiple of 16 */
#else
	kRowK = kD + PAD,
#endif
	/* The layout, in halves; regions are sized with the nominal stride (see the sidecar). */
	kQOff = 0,
	kKOff = kQOff + BLOCK_M * kRow,
	kVOff = kKOff + STAGES * BLOCK_N * kRow,
};
enum : long long { kSmemBytes = (long long)(kVOff + STAGES * BLOCK_N * kRow) * 2 };

static_assert(BLOCK_M % (16 * NUM_WARPS) == 0, "each warp needs whole m16 row tiles");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of the mma k (16)");
static_assert(kD % 16 == 0, "the head dim must be a multiple of 16");
static_assert(!SWIZZLE || kChunks % 8 == 0, "the XOR swizzle permutes groups of 8 chunks");
static_assert(STAGES >= 1, "STAGES must be at least 1");
static_assert(PAD >= 0, "PAD must not be negative");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared-memory layout exceeds TUNER_SMEM_BYTES: the sidecar's "
              "smem_bytes expression disagrees with the kernel");

/* Offset in halves of chunk c of row r of a tile with row stride `stride`. */
template <int stride> __device__ __forceinline__ int tile_off(int r, int c)
{
	return r * stride + (SWIZZLE ? (c ^ (r & 7)) : c) * 8;
}

/*
 * Issue the cp.asyncs of `rows` rows of one [S, D] head starting at row0 into a tile;
 * rows at or past S are zero-filled (their source is clamped to row 0, never read).
 * Not unrolled: unrolled, every address is hoisted out of the tile loop and costs a
 * register (ptxas, sm_90: the baseline at D=64 went from 127 to 178 registers and
 * several configurations spilled).
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

} /* namespace */

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    flash_fwd(const __half *__restrict__ Q, const __half *__restrict__ K,
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
	const int ntiles = (S + BLOCK_N - 1) / BLOCK_N;
	/* Scores are kept in log2 units: exp(x * scale) = exp2(x * scale * log2(e)). */
	const float scale_log2 = softmax_scale * 1.4426950408889634f;
	const int wrow0 = warp * kWarpRows;
	(void)B;

	float o[kMT][kD / 8][4];
	float row_max[kMT][2], row_sum[kMT][2];

	if (m0 >= S)
		return;

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
#pragma unroll
	for (int t = 0; t < STAGES - 1; t++) {
		if (t < ntiles) {
			load_tile<BLOCK_N, kRowK>(Ks + t * BLOCK_N * kRowK, Kh, t * BLOCK_N, S);
			load_tile<BLOCK_N, kRow>(Vs + t * BLOCK_N * kRow, Vh, t * BLOCK_N, S);
		}
		tuner_cp_async_commit();
	}

	for (int j = 0; j < ntiles; j++) {
		const int stage = j % STAGES;

		if constexpr (STAGES == 1) {
			load_tile<BLOCK_N, kRowK>(Ks, Kh, j * BLOCK_N, S);
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

				load_tile<BLOCK_N, kRowK>(Ks + st * BLOCK_N * kRowK, Kh,
				                          t * BLOCK_N, S);
				load_tile<BLOCK_N, kRow>(Vs + st * BLOCK_N * kRow, Vh, t * BLOCK_N,
				                         S);
			}
			tuner_cp_async_commit();
		}

		const __half *Kt = Ks + stage * BLOCK_N * kRowK;
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
				                  Kt + tile_off<kRowK>(r, kk * 2 + (lane / 8) % 2));
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
					if (tail && key >= S)
						s[mt][nt][i] = neg_inf();
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

				tuner_ldmatrix_x4_trans(b,
				                        Vt + tile_off<kRow>(r, dp * 2 + lane / 16));
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					tuner_mma_16816(o[mt][2 * dp], p[mt][kt], b[0], b[1]);
					tuner_mma_16816(o[mt][2 * dp + 1], p[mt][kt], b[2], b[3]);
				}
			}
		}

		if constexpr (STAGES == 1)
			__syncthreads(); /* before the next tile overwrites the only stage */
	}

	/*
	 * Normalise and stage this warp's rows of O in its own rows of the Q tile (only
	 * this warp ever read them), then store them with coalesced 16-byte writes. The first
	 * barrier orders the warp's last ldmatrix of Q before the stores that overwrite it.
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

		if (m0 + r < S) {
			uint4 v =
			    tuner_ld(reinterpret_cast<const uint4 *>(Qs + tile_off<kRow>(r, c)));

			tuner_st(
			    reinterpret_cast<uint4 *>(O + head + (size_t)(m0 + r) * kD + c * 8), v);
		}
	}
}
