/*
 * FlashAttention-2-level forward pass on mma.sync: fp16 (or bf16 with FLASH_BF16) in and
 * out, fp32 accumulation, optionally causal, with the keys optionally split over several
 * blocks (split-KV) and merged exactly by log-sum-exp; [B, H, S, D] contiguous.
 *
 * Preamble: BLOCK_M, BLOCK_N, NUM_WARPS, STAGES, SWIZZLE, Q_REGS, SPLITS, COMBINE, SHAPE_D
 * (64 or 128), SHAPE_causal (0 or 1), TUNER_SMEM_BYTES (the sidecar's smem_bytes),
 * optionally TUNER_SANITIZE (checked instructions, see tuner_device.cuh) and FLASH_BF16
 * (the sidecar's options: bf16 tensors and bf16 mma).
 *
 * flash_attn: grid (ceil_div(S, BLOCK_M) * SPLITS, H, B), NUM_WARPS * 32 threads. Block x
 * is query block x / SPLITS (heaviest first when causal: the last query block has the most
 * keys) and split x % SPLITS, so the splits of one query block run side by side and share
 * its Q tile in L2. A block walks its share of the key tiles up to the diagonal (causal) or
 * S; tiles past the diagonal are never loaded. Each warp owns BLOCK_M / NUM_WARPS query rows
 * (16 or 32: whole m16n8k16 row tiles) with its running max and sum and its O accumulators in
 * registers; with Q_REGS the warp's Q fragments stay in registers for the whole key loop
 * (D / 4 registers per row tile), otherwise they are re-read by ldmatrix at each k step.
 * The splits' partial results (O normalised, f32, and the log-sum-exp in log2 units) merge:
 *   SPLITS == 1   no split: O is written directly, one launch;
 *   COMBINE == 0  through global scratch (Opart, Lse): flash_attn_combine, a second launch;
 *   COMBINE == 1  the SPLITS blocks of a query block are one thread-block cluster
 *                 (__cluster_dims__, sm_90): each stages its partial in its own shared
 *                 memory and merges BLOCK_M / SPLITS rows of all of them through
 *                 distributed shared memory; one launch, no scratch.
 *
 * The key loop (scores stay raw; the scale is folded into each exponent as one FFMA before
 * ex2, with scale * log2(e)); only the tiles that can hold a masked key (past S, or past the
 * block's first row when causal) run the masking code:
 *   STAGES == 1  FlashAttention-2's order: one K and one V buffer, two barriers a tile: wait
 *                for K(t), issue V(t), S = Q K^T and softmax while V(t) lands, wait for V(t),
 *                issue K(t + 1), O += P V while K(t + 1) lands.
 *   STAGES >= 2  a ring of STAGES K/V tile pairs, loaded STAGES - 1 tiles ahead, one barrier
 *                a tile.
 *
 * Shared memory (dynamic, all rows SHAPE_D + PAD elements, PAD = SWIZZLE ? 0 : 8):
 *   Q tile  BLOCK_M rows                 at 0 (reused to stage O for 16-byte stores)
 *   K ring  STAGES x BLOCK_N rows        after Q
 *   V ring  STAGES x BLOCK_N rows        after K
 * and, with COMBINE=1, after the key loop, over all of them from 0: the f32 stage of the
 * partial O (BLOCK_M rows of SHAPE_D + 8 floats), then BLOCK_M log-sum-exps.
 * Rows are made of 16-byte chunks; with SWIZZLE=1 chunk c of row r is stored at chunk
 * c ^ (r % 8), so that the eight row addresses of an ldmatrix hit distinct banks; with
 * SWIZZLE=0 the 8-element pad does the same.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "tuner_device.cuh"

#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(NUM_WARPS) || !defined(STAGES) ||           \
    !defined(SWIZZLE) || !defined(Q_REGS) || !defined(SPLITS) || !defined(COMBINE) ||              \
    !defined(SHAPE_D) || !defined(SHAPE_causal) || !defined(TUNER_SMEM_BYTES)
#error                                                                                             \
    "flash_attn.cu needs the tuner's preamble (the params, SHAPE_D, SHAPE_causal, TUNER_SMEM_BYTES)"
#endif

#ifdef FLASH_BF16
typedef __nv_bfloat16 elem_t;
#define FLASH_MMA_DTYPE "bf16"
#else
typedef __half elem_t;
#define FLASH_MMA_DTYPE "f16"
#endif

namespace
{

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kD = SHAPE_D,
	kCausal = SHAPE_causal,
	kThreads = NUM_WARPS * 32,
	kWarpRows = BLOCK_M / NUM_WARPS, /* query rows per warp */
	kMT = kWarpRows / 16,            /* m16 row tiles per warp */
	kChunks = kD / 8,                /* 16-byte chunks per row */
	kLoadRows = kThreads / kChunks,  /* rows a tile load covers per step */
	kRow = kD + (SWIZZLE ? 0 : 8),   /* row stride of every tile, in elements */
	/* The layout, in elements (see the sidecar's layout). */
	kQOff = 0,
	kKOff = kQOff + BLOCK_M * kRow,
	kVOff = kKOff + STAGES * BLOCK_N * kRow,
	kSlotBytes = BLOCK_N * kRow * 2, /* one K or V tile of the ring, in bytes */
	/* A row can see no key in a split only when the split ends before the diagonal. */
	kRowsCanBeEmpty = kCausal && SPLITS > 1,
	/* COMBINE=1: the splits of a query block are one cluster and merge in shared memory. */
	kCluster = COMBINE && SPLITS > 1,
	kOStride = kD + 8,               /* f32 row stride of the staged partial O: 32-byte shift */
	kClusterRows = BLOCK_M / SPLITS, /* rows each block of a cluster merges */
	/* flash_attn_combine: one thread per 8 elements of a row, 128 threads a block. */
	kCombineThreads = 128,
};
enum : long long {
	kTileBytes = (long long)(kVOff + STAGES * BLOCK_N * kRow) * 2,
	kStageBytes = kCluster ? (long long)BLOCK_M * (kOStride + 1) * 4 : 0, /* O and LSE, f32 */
	kSmemBytes = kTileBytes > kStageBytes ? kTileBytes : kStageBytes,
};

static_assert(BLOCK_M % (16 * NUM_WARPS) == 0, "each warp needs whole m16 row tiles");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of the mma k (16)");
static_assert(kD % 16 == 0, "the head dim must be a multiple of 16");
static_assert(!SWIZZLE || kChunks % 8 == 0, "the XOR swizzle permutes groups of 8 chunks");
static_assert(STAGES >= 1, "STAGES must be at least 1");
static_assert(kThreads % kChunks == 0 && BLOCK_N % kLoadRows == 0 && BLOCK_M % kLoadRows == 0 &&
                  (!SWIZZLE || kLoadRows % 8 == 0),
              "a tile load is whole rows a step, each thread at one fixed (swizzled) chunk");
static_assert(SPLITS >= 1, "SPLITS must be at least 1");
static_assert(!kCluster || (SPLITS <= 8 && BLOCK_M % SPLITS == 0),
              "a cluster is at most 8 blocks (portable), each merging whole rows");
#if COMBINE && SPLITS > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "COMBINE=1 needs thread-block clusters (sm_90 and up)"
#endif
static_assert(kCausal == 0 || kCausal == 1, "causal is 0 or 1");
static_assert(sizeof(elem_t) == 2, "tiles are made of 2-byte elements");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared-memory layout exceeds TUNER_SMEM_BYTES: the sidecar's "
              "smem_bytes expression disagrees with the kernel");

__device__ __forceinline__ float neg_inf(void)
{
	return __int_as_float(0xff800000);
}

/* 2^x in one MUFU.EX2; ex2.approx.ftz(-inf) is +0, which the masking relies on. */
__device__ __forceinline__ float fast_exp2(float x)
{
	float y;

	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

/* d = a * b + d: one m16n8k16 tile of the family's element type, f32 accumulators. */
__device__ __forceinline__ void mma_16816(float d[4], const unsigned a[4], unsigned b0, unsigned b1)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32." FLASH_MMA_DTYPE "." FLASH_MMA_DTYPE ".f32 "
	    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats as one register of two elements, the first in the low 16 bits. */
__device__ __forceinline__ unsigned pack2(float lo, float hi)
{
#ifdef FLASH_BF16
	__nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
#else
	__half2 h = __floats2half2_rn(lo, hi);
#endif
	return *reinterpret_cast<unsigned *>(&h);
}

/* The shared::cluster address of the same offset as p in the shared memory of block `rank`. */
__device__ __forceinline__ unsigned cluster_addr(const void *p, int rank)
{
	unsigned a;

	asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(tuner_smem_addr(p)), "r"(rank));
	return a;
}

__device__ __forceinline__ float cluster_ld(unsigned a)
{
	float v;

	asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
	return v;
}

__device__ __forceinline__ float4 cluster_ld4(unsigned a)
{
	float4 v;

	asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
	             : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
	             : "r"(a)
	             : "memory");
	return v;
}

/* Every thread of the cluster arrives; shared-memory writes before are visible after. */
__device__ __forceinline__ void cluster_sync(void)
{
	asm volatile("barrier.cluster.arrive.release.aligned;\n"
	             "barrier.cluster.wait.acquire.aligned;\n" ::
	                 : "memory");
}

/* Offset in elements of chunk c of row r of a tile. */
__device__ __forceinline__ int tile_off(int r, int c)
{
	return r * kRow + (SWIZZLE ? (c ^ (r & 7)) : c) * 8;
}

/*
 * The shared-window address of the fragment k step kk (chunks 2 kk and 2 kk + 1) reads, `rows`
 * rows (a multiple of 16) below the row of `base`, where base is the address of this lane's
 * chunk 0 or 1 (tile_off) of a tile that starts at a multiple of 128 bytes. The swizzle permutes
 * chunks within groups of 8 by the row's low 3 bits, which no k step or row offset here changes:
 * chunk (2 kk + c0) ^ r7 = 8 (kk / 4) + ((2 (kk % 4)) ^ (c0 ^ r7)), so the k step is an XOR of
 * bits 5-6 of the byte address (one LOP3, shared by every row offset) plus an immediate, and
 * without the swizzle a plain immediate.
 */
__device__ __forceinline__ unsigned frag_addr(unsigned base, int kk, int rows)
{
	if (SWIZZLE)
		return (base ^ (unsigned)((kk % 4) * 32)) +
		       (unsigned)(((kk / 4) * 128) + rows * kRow * 2);
	return base + (unsigned)(kk * 32 + rows * kRow * 2);
}

/*
 * x, which the compiler can no longer see through: an address derived from it inside the key
 * loop is recomputed there (one instruction) rather than hoisted out of the loop, where each
 * would hold a register across the whole loop.
 */
__device__ __forceinline__ unsigned opaque(unsigned x)
{
	asm volatile("mov.b32 %0, %0;" : "+r"(x));
	return x;
}

/*
 * ldmatrix and cp.async on shared-window addresses (tuner_device.cuh's take generic pointers,
 * whose conversion the compiler re-did at every use); the sanitize build checks them the same
 * way tuner_device.cuh does.
 */
__device__ __forceinline__ void ldsm_x4(unsigned r[4], unsigned a)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_ldmatrix_ok(a)) {
		r[0] = r[1] = r[2] = r[3] = 0;
		return;
	}
#endif
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(a));
}

__device__ __forceinline__ void ldsm_x4_trans(unsigned r[4], unsigned a)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_ldmatrix_ok(a)) {
		r[0] = r[1] = r[2] = r[3] = 0;
		return;
	}
#endif
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(a));
}

/* 16 bytes global -> shared; with kZfill, zeros unless ok (src must still be valid). */
template <bool kZfill>
__device__ __forceinline__ void cp_async_16(unsigned dst, const void *src, bool ok)
{
#ifdef TUNER_SANITIZE
	int good = tuner_san_shared_ok(TUNER_SAN_CP_ASYNC, dst, 16, 1);

	good &= tuner_san_global_ok(TUNER_SAN_CP_ASYNC, src, 16, 0);
	if (!good)
		return;
#endif
	if constexpr (kZfill)
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
		             "r"(ok ? 16 : 0)
		             : "memory");
	else
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src)
		             : "memory");
}

/*
 * Issue the cp.asyncs of `rows` rows of a tile. Thread i copies chunk i % kChunks of rows
 * i / kChunks + k kLoadRows: its destination and source are one base each (dst, src) plus
 * compile-time offsets, since kLoadRows is a multiple of the swizzle's 8 rows. Unmasked, the
 * steps are unrolled (each an LDGSTS with immediate offsets); masked (a tile reaching past the
 * tensor's end: at most the last one or two of a block), a row at or past the end (k kLoadRows
 * >= rem, rem = rows left from this thread's first) is zero-filled from `safe`, a valid address
 * never read, in a loop: unrolled, its addresses cost registers the d128 points do not have.
 */
template <int rows, bool masked>
__device__ __forceinline__ void load_tile(unsigned dst, const elem_t *src, int rem,
                                          const elem_t *safe)
{
	if constexpr (masked) {
#pragma unroll 1
		for (int k = 0; k < rows / kLoadRows; k++) {
			const bool ok = k * kLoadRows < rem;

			cp_async_16<true>(dst + (unsigned)(k * kLoadRows * kRow * 2),
			                  ok ? src + k * kLoadRows * kD : safe, ok);
		}
	} else {
#ifdef TUNER_SANITIZE
#pragma unroll 1 /* each checked cp.async is a call: unrolled, the d128 points spill */
#else
#pragma unroll
#endif
		for (int k = 0; k < rows / kLoadRows; k++)
			cp_async_16<false>(dst + (unsigned)(k * kLoadRows * kRow * 2),
			                   src + k * kLoadRows * kD, true);
	}
}

} /* namespace */

#if COMBINE && SPLITS > 1
#define FLASH_CLUSTER __cluster_dims__(SPLITS, 1, 1)
#else
#define FLASH_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(kThreads, 1) FLASH_CLUSTER
    flash_attn(const elem_t *__restrict__ Q, const elem_t *__restrict__ K,
               const elem_t *__restrict__ V, elem_t *__restrict__ O, float *__restrict__ Opart,
               float *__restrict__ Lse, int B, int H, int S, float softmax_scale)
{
	/* 128-byte aligned: frag_addr's XOR needs every tile to start at a multiple of 128. */
	extern __shared__ __align__(128) unsigned char smem_raw[];
	elem_t *smem = reinterpret_cast<elem_t *>(smem_raw);
	elem_t *Qs = smem + kQOff;

	const int lane = threadIdx.x % 32;
	const int warp = threadIdx.x / 32;
	const int nmb = (S + BLOCK_M - 1) / BLOCK_M;
	const int split = (int)blockIdx.x % SPLITS;
	const int mb = kCausal ? nmb - 1 - (int)blockIdx.x / SPLITS : (int)blockIdx.x / SPLITS;
	const int m0 = mb * BLOCK_M;
	const size_t bh = (size_t)blockIdx.z * H + blockIdx.y;
	const size_t head = bh * (size_t)S * kD;
	const elem_t *Qh = Q + head, *Kh = K + head, *Vh = V + head;
	/* exp(x * scale) = exp2(x * scale * log2(e)); scores stay raw until the exponent. */
	const float scale_log2 = softmax_scale * 1.4426950408889634f;
	const int wrow0 = warp * kWarpRows;

	/*
	 * Shared-memory addresses are per-thread bases computed here once; the key loop adds
	 * compile-time offsets (frag_addr, load_tile) and the ring slot. The ldmatrix bases are
	 * this lane's row and chunk (0 or 1) of the first fragment of each operand; the cp.async
	 * base is this thread's row and chunk of a tile (ld_dst, ld_src), the same in every tile.
	 */
	const unsigned sbase = tuner_smem_addr(smem_raw);
	const unsigned q_base = sbase + 2 * (kQOff + tile_off(wrow0 + lane % 16, lane / 16));
	const unsigned k_base =
	    sbase + 2 * (kKOff + tile_off(lane % 8 + (lane / 16) * 8, (lane / 8) % 2));
	const unsigned v_base =
	    sbase + 2 * (kVOff + tile_off(lane % 8 + ((lane / 8) % 2) * 8, lane / 16));
	const int ld_row = (int)threadIdx.x / kChunks;
	const unsigned ld_dst = sbase + 2 * tile_off(ld_row, (int)threadIdx.x % kChunks);
	const int ld_src = ld_row * kD + ((int)threadIdx.x % kChunks) * 8;

	/*
	 * The key tiles of this block: up to the diagonal (causal) or S, shared evenly by the
	 * splits. Tiles from t_mask on can hold a key past S or past one of the block's rows.
	 */
	const int n_end = kCausal ? min(S, m0 + BLOCK_M) : S;
	const int ntiles = (n_end + BLOCK_N - 1) / BLOCK_N;
	const int per_split = (ntiles + SPLITS - 1) / SPLITS;
	const int t_begin = split * per_split;
	const int t_end = min(ntiles, t_begin + per_split);
	const int t_mask = kCausal ? min(S / BLOCK_N, (m0 + 1) / BLOCK_N) : S / BLOCK_N;
	const size_t R = (size_t)B * H * S; /* rows of all heads: the partials' split stride */

	if (!kCluster && t_begin >= t_end) {
		/* A split with no keys (short or causal rows): it only says so, to the combine. */
		if (SPLITS > 1)
			for (int r = threadIdx.x; r < BLOCK_M; r += kThreads)
				if (m0 + r < S)
					Lse[split * R + bh * S + m0 + r] = neg_inf();
		return;
	}

	float o[kMT][kD / 8][4];
	float row_max[kMT][2], row_sum[kMT][2]; /* max in scaled log2 units; per-thread sums */
	unsigned qreg[Q_REGS ? kMT : 1][Q_REGS ? kD / 16 : 1][4];

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

	/*
	 * Load key tile t of a head (K or V) at byte offset `slot` of the shared window's tiles;
	 * only a tile that reaches past S masks its rows (a uniform branch).
	 */
	auto load_kv = [&](unsigned slot, const elem_t *headp, int t) {
		const elem_t *src = headp + (size_t)t * (BLOCK_N * kD) + ld_src;

		if ((t + 1) * BLOCK_N <= S)
			load_tile<BLOCK_N, false>(ld_dst + slot, src, 0, headp);
		else
			load_tile<BLOCK_N, true>(ld_dst + slot, src, S - t * BLOCK_N - ld_row,
			                         headp);
	};

	/*
	 * The ring (STAGES >= 2): tile t is read from slot rd (a byte offset from the K ring's
	 * first slot; V's slot is the same offset from V's), and tile t + STAGES - 1 is written to
	 * wr, the slot tile t - 1 was read from. Both advance by a compare, not a modulo.
	 */
	unsigned rd = 0, wr = (STAGES - 1) * kSlotBytes;

	/* One key tile, t its index. */
	auto step = [&](int t) {
		unsigned kb, vb; /* this tile's K and V ldmatrix bases */
		const unsigned qb = Q_REGS ? 0u : opaque(q_base); /* Q_REGS: Q is in registers */

		if constexpr (STAGES == 1) {
			/* K(t) has landed; every warp is done with V(t - 1). */
			tuner_cp_async_wait<0>();
			__syncthreads();
			load_kv(2 * kVOff, Vh, t);
			tuner_cp_async_commit();
			kb = opaque(k_base);
			vb = opaque(v_base);
		} else {
			/* Tile t has landed; every warp is done with tile t - 1's slot. */
			tuner_cp_async_wait<STAGES - 2>();
			__syncthreads();
			const int tn = t + STAGES - 1;
			if (tn < t_end) {
				load_kv(2 * kKOff + wr, Kh, tn);
				load_kv(2 * kVOff + wr, Vh, tn);
			}
			tuner_cp_async_commit();
			kb = opaque(k_base + rd);
			vb = opaque(v_base + rd);
			wr = rd;
			rd = rd + kSlotBytes == STAGES * kSlotBytes ? 0 : rd + kSlotBytes;
		}

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
				if constexpr (Q_REGS) {
#pragma unroll
					for (int i = 0; i < 4; i++)
						qf[mt][i] = qreg[mt][kk][i];
				} else {
					ldsm_x4(qf[mt], frag_addr(qb, kk, mt * 16));
				}
			}
#pragma unroll
			for (int np = 0; np < BLOCK_N / 16; np++) {
				unsigned b[4];

				ldsm_x4(b, frag_addr(kb, kk, np * 16));
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					mma_16816(s[mt][2 * np], qf[mt], b[0], b[1]);
					mma_16816(s[mt][2 * np + 1], qf[mt], b[2], b[3]);
				}
			}
		}

		/* Keys past S, and past the row when causal, score -inf (a uniform branch). */
		if (t >= t_mask) {
			const int kv0 = t * BLOCK_N;
#pragma unroll
			for (int mt = 0; mt < kMT; mt++)
#pragma unroll
				for (int nt = 0; nt < BLOCK_N / 8; nt++)
#pragma unroll
					for (int i = 0; i < 4; i++) {
						int key = kv0 + nt * 8 + (lane % 4) * 2 + (i & 1);
						int row =
						    m0 + wrow0 + mt * 16 + lane / 4 + (i / 2) * 8;

						if (key >= S || (kCausal && key > row))
							s[mt][nt][i] = neg_inf();
					}
		}

		/*
		 * Online softmax. Thread holds rows lane/4 (i = 0, 1) and lane/4 + 8 (i = 2, 3)
		 * of each row tile; a row's columns are spread over the 4 lanes of a quad. The
		 * running max is kept scaled, so each score costs one FFMA and one EX2.
		 */
		unsigned p[kMT][BLOCK_N / 16][4];
#pragma unroll
		for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
			for (int r = 0; r < 2; r++) {
				float mx = neg_inf();

#pragma unroll
				for (int nt = 0; nt < BLOCK_N / 8; nt++)
					mx = fmaxf(mx,
					           fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
				const float m_new = fmaxf(row_max[mt][r], mx * scale_log2);
				/* A row with no key yet: exponents against 0 give 0, not NaN. */
				const float m_use =
				    (kRowsCanBeEmpty && m_new == neg_inf()) ? 0.0f : m_new;
				const float alpha = fast_exp2(row_max[mt][r] - m_use);
				row_max[mt][r] = m_new;

				float sum = 0.0f;
#pragma unroll
				for (int nt = 0; nt < BLOCK_N / 8; nt++) {
					float e0 =
					    fast_exp2(fmaf(s[mt][nt][2 * r], scale_log2, -m_use));
					float e1 = fast_exp2(
					    fmaf(s[mt][nt][2 * r + 1], scale_log2, -m_use));

					s[mt][nt][2 * r] = e0;
					s[mt][nt][2 * r + 1] = e1;
					sum += e0 + e1;
				}
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
				p[mt][kt][0] = pack2(s[mt][2 * kt][0], s[mt][2 * kt][1]);
				p[mt][kt][1] = pack2(s[mt][2 * kt][2], s[mt][2 * kt][3]);
				p[mt][kt][2] = pack2(s[mt][2 * kt + 1][0], s[mt][2 * kt + 1][1]);
				p[mt][kt][3] = pack2(s[mt][2 * kt + 1][2], s[mt][2 * kt + 1][3]);
			}
		}

		if constexpr (STAGES == 1) {
			/* V(t) has landed; every warp is done with K(t): load K(t + 1). */
			tuner_cp_async_wait<0>();
			__syncthreads();
			if (t + 1 < t_end)
				load_kv(2 * kKOff, Kh, t + 1);
			tuner_cp_async_commit();
		}

		/* O += P V; V is row-major [key][d], so ldmatrix.trans gives the .col operand. */
#pragma unroll
		for (int kt = 0; kt < BLOCK_N / 16; kt++) {
#pragma unroll
			for (int dp = 0; dp < kD / 16; dp++) {
				unsigned b[4];

				ldsm_x4_trans(b, frag_addr(vb, dp, kt * 16));
#pragma unroll
				for (int mt = 0; mt < kMT; mt++) {
					mma_16816(o[mt][2 * dp], p[mt][kt], b[0], b[1]);
					mma_16816(o[mt][2 * dp + 1], p[mt][kt], b[2], b[3]);
				}
			}
		}
	};

	if (t_begin < t_end) {
		/* Prologue: Q in its own group, then the first K or the ring's K/V tiles. */
		load_tile<BLOCK_M, true>(ld_dst + 2 * kQOff, Qh + (size_t)m0 * kD + ld_src,
		                         S - m0 - ld_row, Qh);
		tuner_cp_async_commit();
		if constexpr (STAGES == 1) {
			load_kv(2 * kKOff, Kh, t_begin);
			tuner_cp_async_commit();
		} else {
#pragma unroll
			for (int i = 0; i < STAGES - 1; i++) {
				if (t_begin + i < t_end) {
					load_kv(2 * kKOff + i * kSlotBytes, Kh, t_begin + i);
					load_kv(2 * kVOff + i * kSlotBytes, Vh, t_begin + i);
				}
				tuner_cp_async_commit();
			}
		}
		if constexpr (Q_REGS) {
			/* Q has landed when at most the groups issued after it are pending. */
			tuner_cp_async_wait<STAGES == 1 ? 1 : STAGES - 1>();
			__syncthreads();
#pragma unroll
			for (int mt = 0; mt < kMT; mt++)
#pragma unroll
				for (int kk = 0; kk < kD / 16; kk++)
					ldsm_x4(qreg[mt][kk], frag_addr(q_base, kk, mt * 16));
		}
		for (int t = t_begin; t < t_end; t++)
			step(t);
	}

	/* The rows' sums: each thread held its quad's share. */
#pragma unroll
	for (int mt = 0; mt < kMT; mt++)
#pragma unroll
		for (int r = 0; r < 2; r++) {
			float l = row_sum[mt][r];

			l += __shfl_xor_sync(0xffffffffu, l, 1);
			l += __shfl_xor_sync(0xffffffffu, l, 2);
			row_sum[mt][r] = l;
		}

	if constexpr (kCluster) {
		/*
		 * Stage the split's normalised partial O (f32) and its log-sum-exp in this block's
		 * shared memory, over the tiles (every warp must be done with them), then each
		 * block of the cluster merges BLOCK_M / SPLITS rows from all SPLITS blocks' stages
		 * and writes them; the last cluster barrier keeps every stage alive until then.
		 */
		float *Ost = reinterpret_cast<float *>(smem_raw);
		float *Lst = Ost + BLOCK_M * kOStride;

		__syncthreads();
#pragma unroll
		for (int mt = 0; mt < kMT; mt++)
#pragma unroll
			for (int r = 0; r < 2; r++) {
				const int row = wrow0 + mt * 16 + lane / 4 + r * 8;
				const float l = row_sum[mt][r];
				const float inv = l > 0.0f ? 1.0f / l : 0.0f;
				float *dst = Ost + row * kOStride + (lane % 4) * 2;
#pragma unroll
				for (int dt = 0; dt < kD / 8; dt++)
					tuner_st(reinterpret_cast<float2 *>(dst + dt * 8),
					         make_float2(o[mt][dt][2 * r] * inv,
					                     o[mt][dt][2 * r + 1] * inv));
				if (lane % 4 == 0)
					Lst[row] =
					    l > 0.0f ? row_max[mt][r] + __log2f(l) : neg_inf();
			}
		cluster_sync();
		for (int it = threadIdx.x; it < kClusterRows * kChunks; it += kThreads) {
			const int row = split * kClusterRows + it / kChunks, c = it % kChunks;

			if (m0 + row >= S)
				continue;
			float lse[SPLITS], mx = neg_inf();
#pragma unroll
			for (int s = 0; s < SPLITS; s++) {
				lse[s] = cluster_ld(cluster_addr(Lst + row, s));
				mx = fmaxf(mx, lse[s]);
			}
			float acc[8], sum = 0.0f;
#pragma unroll
			for (int e = 0; e < 8; e++)
				acc[e] = 0.0f;
#pragma unroll
			for (int s = 0; s < SPLITS; s++) {
				if (lse[s] == neg_inf())
					continue;
				const float w = fast_exp2(lse[s] - mx);
				const unsigned a = cluster_addr(Ost + row * kOStride + c * 8, s);
				const float4 x = cluster_ld4(a), y = cluster_ld4(a + 16);

				sum += w;
				acc[0] += w * x.x;
				acc[1] += w * x.y;
				acc[2] += w * x.z;
				acc[3] += w * x.w;
				acc[4] += w * y.x;
				acc[5] += w * y.y;
				acc[6] += w * y.z;
				acc[7] += w * y.w;
			}
			const float inv = 1.0f / sum;
			uint4 v;
			v.x = pack2(acc[0] * inv, acc[1] * inv);
			v.y = pack2(acc[2] * inv, acc[3] * inv);
			v.z = pack2(acc[4] * inv, acc[5] * inv);
			v.w = pack2(acc[6] * inv, acc[7] * inv);
			tuner_st(
			    reinterpret_cast<uint4 *>(O + head + (size_t)(m0 + row) * kD + c * 8),
			    v);
		}
		cluster_sync();
		return;
	}

	if constexpr (SPLITS > 1) {
		/*
		 * The split's normalised partial O, f32, straight from the accumulators (a quad
		 * writes 32 contiguous bytes of a row), and its log-sum-exp in log2 units; a row
		 * that saw no key in this split gets -inf, which the combine skips.
		 */
#pragma unroll
		for (int mt = 0; mt < kMT; mt++)
#pragma unroll
			for (int r = 0; r < 2; r++) {
				const int row = m0 + wrow0 + mt * 16 + lane / 4 + r * 8;
				const float l = row_sum[mt][r];
				const float inv = l > 0.0f ? 1.0f / l : 0.0f;

				if (row >= S)
					continue;
				float *dst =
				    Opart + (split * R + bh * S + row) * kD + (lane % 4) * 2;
#pragma unroll
				for (int dt = 0; dt < kD / 8; dt++)
					tuner_st(reinterpret_cast<float2 *>(dst + dt * 8),
					         make_float2(o[mt][dt][2 * r] * inv,
					                     o[mt][dt][2 * r + 1] * inv));
				if (lane % 4 == 0)
					Lse[split * R + bh * S + row] =
					    l > 0.0f ? row_max[mt][r] + __log2f(l) : neg_inf();
			}
		return;
	}

	/*
	 * Normalise and stage this warp's rows of O in its own rows of the Q tile (only this
	 * warp ever read them), then store them with coalesced 16-byte writes. The first
	 * barrier orders the warp's last ldmatrix of Q before the stores that overwrite it.
	 */
	__syncwarp();
#pragma unroll
	for (int mt = 0; mt < kMT; mt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const float inv = 1.0f / row_sum[mt][r];
			const int row = wrow0 + mt * 16 + lane / 4 + r * 8;
#pragma unroll
			for (int dt = 0; dt < kD / 8; dt++) {
				elem_t *dst = Qs + tile_off(row, dt) + (lane % 4) * 2;

				tuner_st(reinterpret_cast<unsigned *>(dst),
				         pack2(o[mt][dt][2 * r] * inv, o[mt][dt][2 * r + 1] * inv));
			}
		}
	}
	__syncwarp();
#pragma unroll
	for (int k = 0; k < kWarpRows * kChunks / 32; k++) {
		int i = k * 32 + lane;
		int r = wrow0 + i / kChunks, c = i % kChunks;

		if (m0 + r < S) {
			uint4 v = tuner_ld(reinterpret_cast<const uint4 *>(Qs + tile_off(r, c)));

			tuner_st(
			    reinterpret_cast<uint4 *>(O + head + (size_t)(m0 + r) * kD + c * 8), v);
		}
	}
}

/*
 * Merge the splits (SPLITS > 1, COMBINE == 0): O = sum_s w_s Opart_s / sum_s w_s with
 * w_s = 2^(Lse_s - max), exact whatever the order the splits finished in. Grid
 * ceil_div(B * H * S * D, 1024), 128 threads: a thread makes 8 elements of one row. Otherwise
 * nothing is launched (the sidecar's `when`), or, launched anyway, nothing is done.
 */
extern "C" __global__ void __launch_bounds__(kCombineThreads)
    flash_attn_combine(const float *__restrict__ Opart, const float *__restrict__ Lse,
                       elem_t *__restrict__ O, int B, int H, int S)
{
	const size_t R = (size_t)B * H * S;
	const size_t i = (size_t)blockIdx.x * kCombineThreads + threadIdx.x;
	const size_t row = i / kChunks;
	const int c = (int)(i % kChunks);

	if (SPLITS == 1 || kCluster || row >= R)
		return;

	float lse[SPLITS];
	float mx = neg_inf();
#pragma unroll
	for (int s = 0; s < SPLITS; s++) {
		lse[s] = Lse[s * R + row];
		mx = fmaxf(mx, lse[s]);
	}

	float acc[8], sum = 0.0f;
#pragma unroll
	for (int e = 0; e < 8; e++)
		acc[e] = 0.0f;
#pragma unroll
	for (int s = 0; s < SPLITS; s++) {
		if (lse[s] == neg_inf())
			continue; /* no key of this row in split s: its Opart was never written */
		const float w = fast_exp2(lse[s] - mx);
		const float4 *src =
		    reinterpret_cast<const float4 *>(Opart + (s * R + row) * kD + c * 8);
		const float4 a = tuner_ld(src), b = tuner_ld(src + 1);

		sum += w;
		acc[0] += w * a.x;
		acc[1] += w * a.y;
		acc[2] += w * a.z;
		acc[3] += w * a.w;
		acc[4] += w * b.x;
		acc[5] += w * b.y;
		acc[6] += w * b.z;
		acc[7] += w * b.w;
	}

	const float inv = 1.0f / sum;
	uint4 v;
	v.x = pack2(acc[0] * inv, acc[1] * inv);
	v.y = pack2(acc[2] * inv, acc[3] * inv);
	v.z = pack2(acc[4] * inv, acc[5] * inv);
	v.w = pack2(acc[6] * inv, acc[7] * inv);
	tuner_st(reinterpret_cast<uint4 *>(O + row * kD + c * 8), v);
}
