/*
 * FlashAttention-3-style forward pass for Hopper (sm_90a): fp16 (or bf16 with SM90_BF16) in
 * and out, fp32 accumulation, non-causal, [B, H, S, D] contiguous; TMA loads, wgmma, warp
 * specialisation.
 *
 * Preamble: BLOCK_N, CONSUMERS, STAGES, PINGPONG, OVERLAP, RESCALE, PERSISTENT, OCCUPANCY,
 * SPLITS, STREAMK, KSPLIT (1 when left out: builds from before it), PDL (0 when left out),
 * SHAPE_D (64 or 128), TUNER_SMEM_BYTES (the sidecar's smem_bytes), optionally SM90_BF16 (the
 * options of flash_fwd_sm90_bf16.yaml: bf16 tensors, wgmma .bf16, P and O packed by
 * cvt.rn.bf16x2.f32; the layout, descriptors and boxes count 2-byte elements either way),
 * TUNER_SANITIZE and
 * TUNER_PLANT_MISALIGN (a deliberately broken variant for tests: the V ring 512 bytes off the
 * 1024-byte swizzle atoms, which a sanitize build must report; run it only sanitized).
 *
 * One block computes CONSUMERS * 64 query rows of one (batch, head) (a unit; 64 with KSPLIT=2,
 * below); grid (ceil_div(S, 64 * CONSUMERS / KSPLIT), H, B), or with PERSISTENT > 0 a flat
 * grid of at most PERSISTENT blocks (the SM count: one wave) that loop over the units by a static
 * stride, the next unit's Q and first K/V tiles loading under this unit's last P V GEMM and
 * epilogue (O then has its own staging tile). (CONSUMERS + 1) * 128 threads, OCCUPANCY blocks per
 * SM (2 only with one consumer: its registers and shared memory halved, two blocks' warpgroups
 * interleave on the SM as pingpong would). Warpgroup 0 is the producer: it gives registers
 * back (setmaxnreg) and one thread issues every TMA copy: the Q tiles once, then K and V
 * tiles of BLOCK_N keys into a STAGES-deep ring. K and V of a stage are released apart (K
 * once the S GEMM that reads it has completed, V once P V has), and with OVERLAP the
 * producer loads K of tile j + 1 before V of tile j, the order the consumers use them, so a
 * K tile is refilled a whole P V GEMM earlier than a shared release allows. Warpgroups
 * 1..CONSUMERS are consumers, each owning 64 query rows: S = Q K^T by wgmma from shared
 * memory (Q and K both K-major), online softmax in registers, O += P V by wgmma with P from
 * registers (the accumulator layout of S is the A-fragment layout of P) and V from shared
 * memory N-major.
 *
 * Split-KV (SPLITS > 1, for grids that leave SMs idle): the keys of a unit are shared by
 * SPLITS blocks, adjacent in x, that form one thread-block cluster (__cluster_dims__: a plain
 * launch); split r walks key tiles [r ntiles / SPLITS, (r + 1) ntiles / SPLITS) (none when
 * ntiles < SPLITS). Each split owns 64 / SPLITS rows of every Q tile: the rows of consumer warp
 * w belong to split w SPLITS / 4. After the key loop (and a key split's merge) a warp whose
 * rows another split owns pushes its unnormalised partial there, thread t's registers as they
 * are (O, row maxima, partial row sums), by st.async into that block's receive buffer, counted
 * on its receive barrier (complete_tx), and is done; the owner's warps wait on their barrier,
 * merge the partials into their own thread by thread, exactly as the key split does (m = max
 * m_s, O = sum O_s 2^(m_s - m), l likewise; a split with no tile has m = -inf and weighs 0),
 * and run the normal epilogue on their rows, stored in boxes of 64 / SPLITS rows (the O map's
 * box). No cluster barrier after the key loop: one at entry (arrive after the barriers are
 * initialised, wait before the first push) is all; a block leaves only once its partials have
 * arrived, so nothing is written to a block that has exited. One launch, no scratch. Not with
 * PERSISTENT.
 *
 * Key split inside the block (KSPLIT=2, two consumers, for grids that leave SMs idle): both
 * consumers own the SAME 64 query rows (kBlockM = 64 CONSUMERS / KSPLIT, one Q tile) and take
 * alternate key tiles, consumer w the tiles j with j % 2 == w (none when ntiles == 1), so a
 * block's serial key chain is half as long. The producer fills the ring in tile order as
 * always; every stage is consumed by one consumer (STAGES even: stage s always by consumer
 * s % 2, so no consumer ever waits on a stage barrier whose phase the other one can advance),
 * so the empty barriers expect 128 arrivals. After the key loop consumer 1 puts its
 * unnormalised O, row maxima and partial row sums (f32, thread t's registers as they are) in
 * a region of its own after the V ring, then a named barrier; consumer 0 merges them with its
 * own, thread by thread, exactly (m = max(m0, m1), O = O0 2^(m0 - m) + O1 2^(m1 - m), l
 * likewise: a consumer with no tile has m = -inf and weighs exactly 0, m0 being finite), and
 * runs the normal epilogue (with SPLITS, the split merge first). Not with PINGPONG or
 * PERSISTENT (so not with STREAMK).
 *
 * Stream-K tail (STREAMK=1, with PERSISTENT): G = gridDim.x blocks, U units of nt key tiles.
 * The first F = floor(U / G) * G units are whole, as without it (block c takes c, c + G, ...);
 * the T = (U - F) nt key-tile iterations of the rest (the tail) are spread evenly over the
 * blocks: block c takes iterations [floor(c T / G), floor((c + 1) T / G)) (none when T < G
 * leaves it out), iteration i being key tile i % nt of unit F + i / nt: a few segments (unit,
 * first tile, end tile), cut at unit boundaries (sk_item: the producer and the consumers
 * walk the same schedule). A segment that is a whole unit ends as any unit does. A partial
 * segment's consumer warpgroup writes its rows' partial (O normalised by its own sum, f32, and
 * the rows' log-sum-exp, log2 units, as split-KV stages them) to the global scratch sk_part /
 * sk_lse in this block's slot (2 c for its first segment, 2 c + 1 for its last: a block has at
 * most two partial ones), fences, and one thread counts the warpgroup in on the (tail unit,
 * consumer) counter sk_count. The warpgroup that arrives last merges the partials of every
 * block in the unit (the blocks and slots follow from the schedule alone) with the same exact
 * log-sum-exp merge as split-KV (lse_fold), from L2 (ld.global.cg: slots are reused across
 * calls), stores O through its O tile as any unit does, and sets the counter back to 0. No
 * block waits for another: a grid that is not all resident cannot deadlock.
 *
 * Overlap, as tunables:
 *  - OVERLAP=1 (intra-warpgroup): the S GEMM of tile j and the P V GEMM of tile j - 1 are
 *    issued together; the softmax of tile j runs while P V of tile j - 1 is on the tensor
 *    cores. OVERLAP=0: S GEMM, softmax, P V GEMM, one after the other.
 *  - PINGPONG=1 (inter-warpgroup, CONSUMERS >= 2): the consumers take turns to issue their
 *    GEMMs (named barriers 1..CONSUMERS, round robin), so that one warpgroup's softmax runs
 *    while another's GEMMs do.
 *  - RESCALE (with OVERLAP): where O is multiplied by the softmax's alpha. 0: once P V of
 *    tile j - 1 has completed, before the next turn (on the warpgroup's critical path); 1:
 *    FA3's place, between issuing S of tile j + 1 and P V of tile j, under the S GEMM; 2: as
 *    1, skipped by a warp none of whose row maxima moved (alpha exactly 1); 3: as 2, a warp
 *    keeping its stale maxima until one grows by more than 8 (log2 units: P <= 2^8 in fp16),
 *    so after the first tile it almost never rescales (FA4's conditional rescale).
 * (Batch 2 tried part of the exp2 by an FMA polynomial, EXP_POLY: it lost 4-12% at every
 * D, so the SFU is not the limit; reports/sm90/batch2.md.)
 *
 * Back-to-back calls (PDL=1, launched with programmatic stream serialization): every thread
 * triggers the next kernel of the stream at entry, so that its blocks may be scheduled, set
 * up their barriers and fetch their tensor-map descriptors while this grid's last blocks run;
 * then every thread waits (griddepcontrol.wait, in hardware: a consumer spinning on a barrier
 * would take issue slots from a block of the grid before on the same SM) for the grids before
 * it to complete, so no input is read, and no O written, before what wrote them is done and
 * visible. PDL=0 (or left out) is the kernel
 * before it; the instructions are no-ops in a launch without the attribute.
 *
 * Tensor maps (made by the host, passed as __grid_constant__ parameters): Q, K, V and O as
 * 3-D tensors [D, S, B * H] (innermost first), 128-byte swizzle, boxes of 64 columns (one
 * 128-byte swizzle span) by 64 rows (Q), 64 / SPLITS rows (O) or BLOCK_N rows (K, V). Rows
 * past S load as zeros and are not stored, so a ragged S needs no special path beyond masking
 * the last key tile.
 *
 * Shared memory (dynamic; the kernel rounds its base up to 1024 bytes, the swizzle atom):
 *   Q tiles  CONSUMERS / KSPLIT x [D/64 chunks][64 rows][128 B]  at 0 (reused to stage O)
 *   K ring   STAGES x [D/64 chunks][BLOCK_N rows][128 B]    after Q
 *   V ring   STAGES x [D/64 chunks][BLOCK_N rows][128 B]    after K
 *   O tiles  CONSUMERS x [D/64 chunks][64 rows][128 B]      after V (PERSISTENT only)
 *   merge    [D/8 + 1][128 threads] x 16 B                   after V (KSPLIT > 1 only)
 *   receive  Q tiles x [SPLITS - 1 sources][D/8 + 1][128 / SPLITS threads] x 16 B
 *                                                           after merge (SPLITS > 1 only)
 *   barriers full_q, empty_q, full_k[STAGES], full_v[STAGES], empty_k[STAGES],
 *            empty_v[STAGES], with SPLITS > 1 recv[Q tiles] (8 bytes each)
 * Inside a chunk, 16-byte column group g of row r is stored at group g ^ (r % 8) (what TMA's
 * 128-byte swizzle writes and the wgmma descriptors' swizzle mode 1 reads).
 */
#include <cuda_fp16.h>
#if SM90_BF16
#include <cuda_bf16.h>
#endif

#include "tuner_sm90.cuh"

#ifndef KSPLIT
#define KSPLIT 1 /* builds from before the param: no key split */
#endif
#ifndef TAIL_N
#define TAIL_N 0
#endif
#ifndef PDL
#define PDL 0 /* builds from before the param: a plain launch */
#endif

#if !defined(BLOCK_N) || !defined(CONSUMERS) || !defined(STAGES) || !defined(PINGPONG) ||          \
    !defined(OVERLAP) || !defined(RESCALE) || !defined(PERSISTENT) || !defined(OCCUPANCY) ||       \
    !defined(SPLITS) || !defined(STREAMK) || !defined(SHAPE_D) || !defined(TUNER_SMEM_BYTES)
#error "flash_fwd_sm90.cu needs the tuner's preamble (the params, SHAPE_D, TUNER_SMEM_BYTES)"
#endif

namespace
{

#if SM90_BF16
typedef __nv_bfloat16 elem_t; /* the tensors' element type */
template <int N> using wgmma_op = tuner_wgmma_bf16<N>;
#else
typedef __half elem_t;
template <int N> using wgmma_op = tuner_wgmma<N>;
#endif

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kD = SHAPE_D,
	kThreads = (CONSUMERS + 1) * 128,
	/* 64-row Q tiles per block: one a consumer, or one per KSPLIT consumers */
	kQTiles = CONSUMERS / KSPLIT,
	kBlockM = 64 * kQTiles,     /* query rows per block */
	kChunks = kD / 64,          /* 64-column (128-byte) swizzle chunks per row */
	kChunkQ = 64 * 128,         /* bytes of one chunk of a Q (or O) tile */
	kChunkKV = BLOCK_N * 128,   /* bytes of one chunk of a K or V tile */
	kQTile = kChunks * kChunkQ, /* one consumer's Q tile */
	kKVTile = kChunks * kChunkKV,
	/* The layout, in bytes from the 1024-aligned base. */
	kQOff = 0,
	kKOff = kQOff + kQTiles * kQTile,
#ifdef TUNER_PLANT_MISALIGN
	kVOff = kKOff + STAGES * kKVTile - 512, /* a broken variant for tests: V off its atoms */
#else
	kVOff = kKOff + STAGES * kKVTile,
#endif
	kOOff = kVOff + STAGES * kKVTile,
	/* KSPLIT > 1: consumer 1's O (kD / 8 float4 per thread) and its m, l (one float4). */
	kMergeOff = kOOff + (PERSISTENT ? CONSUMERS * kQTile : 0),
	/*
	 * SPLITS > 1: a split owns the rows of 128 / SPLITS threads of each consumer warpgroup
	 * (64 / SPLITS rows) and receives, per Q tile, the other splits' partials of them.
	 */
	kOwnThreads = 128 / SPLITS,
	kBoxRows = 64 / SPLITS, /* rows of the O map's box */
	kRecvTile = (SPLITS - 1) * (kD / 8 + 1) * kOwnThreads * 16,
	kRecvOff = kMergeOff + (KSPLIT > 1 ? (kD / 8 + 1) * 128 * 16 : 0),
	kBarOff = kRecvOff + (SPLITS > 1 ? kQTiles * kRecvTile : 0),
	kSmemBytes = 1024 + kBarOff + 8 * (2 + 4 * STAGES + (SPLITS > 1 ? kQTiles : 0)),
	/*
	 * Registers after setmaxnreg: 128 * (producer + CONSUMERS * consumer) <= 65536 /
	 * OCCUPANCY, what __launch_bounds__ gives the block at entry. One consumer alone on
	 * the SM keeps the entry's 255 and reallocates nothing.
	 */
	kRealloc = CONSUMERS > 1 || OCCUPANCY > 1,
	kProducerRegs = CONSUMERS == 3 ? 32 : 24,
	kConsumerRegs = CONSUMERS == 3   ? 160
	                : OCCUPANCY == 2 ? 232
	                                 : 240,
	kSchedBar = 1, /* named barriers kSchedBar + c: consumer c may issue its GEMMs */
	kEpiBar = 4,   /* named barriers kEpiBar + c: consumer c's O tile is staged */
	kMergeBar = 8, /* named barrier 8: consumer 1's partial staged (KSPLIT > 1) */
	kTailW = TAIL_N > 0 ? TAIL_N : BLOCK_N,
	kPeel = TAIL_N > 0 && OVERLAP && !STREAMK && SPLITS == 1 && KSPLIT == 1,
};

static_assert(kD == 64 || kD == 128, "the head dim must be 64 or 128");
static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "one to three consumer warpgroups");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 256,
              "BLOCK_N is a wgmma N (<= 256) and the k of P V (a multiple of 16)");
static_assert(STAGES >= 2, "the S GEMM of tile j waits for K while P V of tile j - 1 holds V");
static_assert(!PINGPONG || CONSUMERS >= 2, "pingpong needs two consumer warpgroups or more");
static_assert(RESCALE >= 0 && RESCALE <= 3 && (RESCALE == 0 || OVERLAP),
              "RESCALE places the O rescale of the overlapped loop");
static_assert(PERSISTENT >= 0, "PERSISTENT is a block count (0: one block per unit)");
static_assert(SPLITS == 1 || SPLITS == 2 || SPLITS == 4,
              "a cluster of 1, 2 or 4 blocks, each storing whole 64 / SPLITS-row O boxes");
static_assert(SPLITS == 1 || PERSISTENT == 0, "split-KV is a grid of one block per split");
static_assert(STREAMK == 0 || (STREAMK == 1 && PERSISTENT > 0),
              "the stream-K tail spreads a persistent grid's last units over its blocks");
static_assert(STREAMK == 0 || PERSISTENT <= 512,
              "the stream-K schedule's int arithmetic (sk_begin)");
static_assert(OCCUPANCY == 1 || (OCCUPANCY == 2 && CONSUMERS == 1),
              "two blocks per SM only with one consumer warpgroup");
static_assert(128 * (kProducerRegs + CONSUMERS * kConsumerRegs) <= 65536 / OCCUPANCY,
              "setmaxnreg asks for more registers than the block has");
static_assert(KSPLIT == 1 || (KSPLIT == 2 && CONSUMERS == 2 && STAGES % 2 == 0 && !PINGPONG &&
                              PERSISTENT == 0),
              "a key split is two consumers on one Q tile, stage s always consumer s % 2's");
static_assert(sizeof(elem_t) == 2, "the layout and the tensor maps' boxes count 2-byte elements");
static_assert(kKVTile % 1024 == 0 && kQTile % 1024 == 0, "tiles must keep 1024-byte atoms");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared-memory layout exceeds TUNER_SMEM_BYTES: the sidecar's "
              "smem_bytes expression disagrees with the kernel");

__device__ __forceinline__ float neg_inf(void)
{
	return __int_as_float(0xff800000);
}

/* Two floats as one register of two elements, the first in the low 16 bits (cvt.rn.*x2.f32). */
__device__ __forceinline__ unsigned pack2(float lo, float hi)
{
#if SM90_BF16
	__nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);

	return *reinterpret_cast<unsigned *>(&h);
#else
	return tuner_pack_half2(lo, hi);
#endif
}

/* ---------------------------------------------------------------- producer */

/* One K or V tile of BLOCK_N keys from key row0 of head bh: kChunks boxes on one barrier. */
__device__ __forceinline__ void load_kv(const tuner_tensormap *map, unsigned dst, unsigned bar,
                                        int row0, int bh)
{
	int ok = 1;

#pragma unroll
	for (int c = 0; c < kChunks; c++)
		ok &= tuner_tma_check(dst + c * kChunkKV, kChunkKV);
	tuner_tma_arm(bar, kKVTile, ok);
	if (ok)
#pragma unroll
		for (int c = 0; c < kChunks; c++)
			tuner_tma_load_3d(dst + c * kChunkKV, map, c * 64, row0, bh, bar);
}

/* ---------------------------------------------------------------- consumer */

/* S = Q K^T for one consumer's 64 rows and one K tile (D / 16 k16 steps). */
template <int W>
__device__ __forceinline__ void gemm_qk(float (&sw)[W / 2], unsigned q_tile, unsigned k_tile)
{
	const int ok = tuner_wgmma_check(q_tile, kQTile) && tuner_wgmma_check(k_tile, kKVTile);

	tuner_reg_fence(sw);
	tuner_wgmma_fence();
	if (ok) {
#pragma unroll
		for (int kk = 0; kk < kD / 16; kk++) {
			/* k16 step kk: chunk kk / 4, 32 bytes per step inside the 128-byte row. */
			const unsigned off = (kk % 4) * 32;
			const unsigned long long da =
			    tuner_wgmma_desc_sw128(q_tile + (kk / 4) * kChunkQ + off, 16, 1024);
			const unsigned long long db =
			    tuner_wgmma_desc_sw128(k_tile + (kk / 4) * kChunkKV + off, 16, 1024);

			wgmma_op<W>::ss(sw, da, db, kk > 0);
		}
	}
	tuner_wgmma_commit();
}

/*
 * O += P V for one V tile: BLOCK_N / 16 k16 steps of 16 key rows (2048 bytes) each; the N
 * of the product is D, whose 64-column chunks are kChunkKV bytes apart (the leading byte
 * offset of an N-major operand), and 8-row groups 1024 bytes apart (the stride offset).
 */
template <int W>
__device__ __forceinline__ void gemm_pv(float (&o)[kD / 2], unsigned (&p)[W / 16][4],
                                        unsigned v_tile)
{
	const int ok = tuner_wgmma_check(v_tile, kKVTile);

	tuner_reg_fence(o);
#pragma unroll
	for (int kt = 0; kt < W / 16; kt++)
		tuner_reg_fence(p[kt]);
	tuner_wgmma_fence();
	if (ok) {
#pragma unroll
		for (int kt = 0; kt < W / 16; kt++)
			wgmma_op<kD>::rs_tb(
			    o, p[kt], tuner_wgmma_desc_sw128(v_tile + kt * 2048, kChunkKV, 1024),
			    1);
	}
	tuner_wgmma_commit();
}

/*
 * Online softmax, first half: mask keys past S (the last tile only), take each row's new
 * max, exponentiate the scores in place (log2 units: exp(x * scale) = 2^(x * scale_log2), the
 * scale and the max in one FFMA per score) and sum them. The thread holds rows lane/4 (r = 0:
 * s[4j], s[4j+1]) and lane/4 + 8 (r = 1: s[4j+2], s[4j+3]) of its warp's 16; a row's columns
 * are spread over a quad of lanes (two shuffles). The max and the sum run as four independent
 * chains each, so their latency is a quarter of one chain's. Returns alpha (the factor that
 * rescales what was summed before), the partial sums, and (RESCALE >= 2) whether any row max
 * of the warp moved (when none did, alpha is exactly 1 for all its rows).
 */
template <int W>
__device__ __forceinline__ bool softmax_tile(float (&s)[W / 2], float (&row_max)[2],
                                             float (&alpha)[2], float (&sum)[2], float scale_log2,
                                             int kv0, int S, bool tail)
{
	const int lane = threadIdx.x % 32;
	float mx[2];
	bool moved = false;

	if (tail) {
#pragma unroll
		for (int j = 0; j < W / 8; j++)
#pragma unroll
			for (int i = 0; i < 4; i++)
				if (kv0 + j * 8 + (lane % 4) * 2 + (i & 1) >= S)
					s[4 * j + i] = neg_inf();
	}
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float m4[4] = {row_max[r], row_max[r], row_max[r], row_max[r]};

#pragma unroll
		for (int j = 0; j < W / 8; j++)
			m4[j % 4] = fmaxf(m4[j % 4], fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
		mx[r] = fmaxf(fmaxf(m4[0], m4[1]), fmaxf(m4[2], m4[3]));
		mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
		mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
		/* Every tile has a key < S: mx is finite. */
		moved |=
		    RESCALE == 3 ? (mx[r] - row_max[r]) * scale_log2 > 8.0f : mx[r] != row_max[r];
	}
	if (RESCALE >= 2)
		moved = __any_sync(0xffffffffu, moved);
	/*
	 * RESCALE 3: a warp keeps its rows' old maxima while none grew by more than 2^8 (then P
	 * is at most 256, exact enough in fp16, and alpha is 1); tile 0's -inf always moves.
	 */
	if (RESCALE == 3 && !moved) {
		mx[0] = row_max[0];
		mx[1] = row_max[1];
	}
#pragma unroll
	for (int r = 0; r < 2; r++) {
		/* Tile 0's alpha is 2^-inf = 0. */
		alpha[r] = tuner_exp2((row_max[r] - mx[r]) * scale_log2);
		row_max[r] = mx[r];

		const float mc = mx[r] * scale_log2;
		float a4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
		for (int j = 0; j < W / 8; j++) {
			const float e0 = tuner_exp2(fmaf(s[4 * j + 2 * r], scale_log2, -mc));
			const float e1 = tuner_exp2(fmaf(s[4 * j + 2 * r + 1], scale_log2, -mc));

			s[4 * j + 2 * r] = e0;
			s[4 * j + 2 * r + 1] = e1;
			a4[j % 4] += e0 + e1;
		}
		sum[r] = (a4[0] + a4[1]) + (a4[2] + a4[3]);
	}
	return RESCALE >= 2 && moved;
}

/* O *= alpha, row by row (only while no P V GEMM has O in flight). */
__device__ __forceinline__ void rescale_o(float (&o)[kD / 2], const float (&alpha)[2])
{
#pragma unroll
	for (int r = 0; r < 2; r++)
#pragma unroll
		for (int j = 0; j < kD / 8; j++) {
			o[4 * j + 2 * r] *= alpha[r];
			o[4 * j + 2 * r + 1] *= alpha[r];
		}
}

/* Online softmax, second half: rescale l, pack P (cvt.rn.f16x2.f32 or .bf16x2.f32, two a time). */
template <int W>
__device__ __forceinline__ void pack_p(const float (&s)[W / 2],
                                       unsigned (&p)[W / 16][4], float (&row_sum)[2],
                                       const float (&alpha)[2], const float (&sum)[2])
{
#pragma unroll
	for (int r = 0; r < 2; r++)
		row_sum[r] = row_sum[r] * alpha[r] + sum[r];
#pragma unroll
	for (int kt = 0; kt < W / 16; kt++) {
		p[kt][0] = pack2(s[8 * kt + 0], s[8 * kt + 1]);
		p[kt][1] = pack2(s[8 * kt + 2], s[8 * kt + 3]);
		p[kt][2] = pack2(s[8 * kt + 4], s[8 * kt + 5]);
		p[kt][3] = pack2(s[8 * kt + 6], s[8 * kt + 7]);
	}
}

/* Pingpong: wait for this consumer's turn to issue GEMMs, and pass the turn on. */
__device__ __forceinline__ void turn_wait(int cw)
{
	if (PINGPONG)
		tuner_bar_sync(kSchedBar + cw, 256);
}

/* The last consumer's last turn is passed to no one (every sync has exactly one arrive). */
__device__ __forceinline__ void turn_pass(int cw, bool last)
{
	if (PINGPONG && !(last && cw == CONSUMERS - 1))
		tuner_bar_arrive(kSchedBar + (cw + 1) % CONSUMERS, 256);
}

/* ---------------------------------------------------------------- merging partials */

/*
 * The exact log-sum-exp merge of partial rows (O_s normalised by its own sum, l_s its
 * log-sum-exp in log2 units), one partial at a time, for split-KV and stream-K alike:
 * O = sum_s w_s O_s / sum_s w_s with w_s = 2^(l_s - max l). Folds l into the running max m and
 * weight sum w; the caller multiplies its running sum of weighted partials by `keep` and adds
 * the partial's values times `take`. A partial that saw no key (l = -inf) weighs nothing.
 */
__device__ __forceinline__ void lse_fold(float &m, float &w, float l, float &keep, float &take)
{
	if (l == neg_inf()) {
		keep = 1.0f;
		take = 0.0f;
		return;
	}
	const float mx = fmaxf(m, l);

	keep = tuner_exp2(m - mx); /* m = -inf (nothing yet): 0 */
	take = tuner_exp2(l - mx);
	m = mx;
	w = w * keep + take;
}

/* ---------------------------------------------------------------- schedule */

/*
 * Stream-K: the first tail iteration that block c of G takes, floor(c T / G) with T = r nt (r
 * tail units of nt tiles), in 32-bit arithmetic without a 64-bit division (a call, whose
 * saved registers spill): with c r = q G + e it is q nt + floor(e nt / G); every term is at
 * most G nt < 2^31 (G <= 512, nt <= 2^21: S <= 2^25 by the problem's valid, BLOCK_N >= 16).
 */
__device__ __forceinline__ int sk_begin(int c, int r, int nt, int G)
{
	const int cr = c * r;

	return cr / G * nt + cr % G * nt / G;
}

/*
 * Stream-K: the block that takes tail iteration i < T (the last c with sk_begin(c) <= i):
 * estimated in float, then corrected exactly.
 */
__device__ __forceinline__ int sk_owner(int i, int r, int nt, int G)
{
	int c = min(G - 1, (int)(((float)i + 1.0f) * (float)G / ((float)r * (float)nt)));

	while (c > 0 && sk_begin(c, r, nt, G) > i)
		c--;
	while (c + 1 < G && sk_begin(c + 1, r, nt, G) <= i)
		c++;
	return c;
}

/* Stream-K: block c's scratch slot for tail unit tu (2 c: its first segment; 2 c + 1: its last). */
__device__ __forceinline__ int sk_slot(int c, int tu, int r, int nt, int G)
{
	return 2 * c + (sk_begin(c, r, nt, G) / nt == tu ? 0 : 1);
}

/*
 * Stream-K: how many items block `first` of `stride` has: the U / G whole units, then one per
 * unit its tail iterations touch (none when its range is empty).
 */
__device__ __forceinline__ int sk_items(int first, int stride, int units, int nt)
{
	const int whole = units / stride, r = units - whole * stride;
	const int i0 = sk_begin(first, r, nt, stride), i1 = sk_begin(first + 1, r, nt, stride);

	return whole + (i0 < i1 ? (i1 - 1) / nt - i0 / nt + 1 : 0);
}

/*
 * Stream-K: item `it` < sk_items() of the block's work (first = c, stride = G), the same for
 * the producer and the consumers: unit u, key tiles [kb, ke) of its nt, and g0, the K/V tiles
 * the block's ring has taken before it. The U / G whole units first, then the block's tail
 * iterations cut at unit boundaries. (Without STREAMK the loops walk units first, first +
 * stride, ... as they always did: their code is the same as before.)
 */
__device__ __forceinline__ void sk_item(int it, int first, int stride, int units, int nt, int &u,
                                        int &kb, int &ke, int &g0)
{
	const int whole = units / stride;

	if (it < whole) {
		u = first + it * stride;
		kb = 0;
		ke = nt;
		g0 = it * nt;
		return;
	}
	const int r = units - whole * stride;
	const int i0 = sk_begin(first, r, nt, stride), i1 = sk_begin(first + 1, r, nt, stride);
	const int tu = i0 / nt + (it - whole); /* the tail unit of this segment */
	const int b = max(i0, tu * nt), e = min(i1, (tu + 1) * nt);

	u = whole * stride + tu;
	kb = b - tu * nt;
	ke = e - tu * nt;
	g0 = whole * nt + b - i0;
}

/* ---------------------------------------------------------------- stream-K fix-up */

/*
 * The end of a partial segment of tail unit tu (STREAMK) for consumer warpgroup cw: write its
 * rows' partial in this block's slot, count the warpgroup in, and when it is the last of the
 * unit's segments merge them all. Returns whether it merged (then o holds sum_s w_s O_s, winv
 * 1 / sum_s w_s of its two rows, and the caller stores the rows); the others are done with
 * the unit. Blocks whose tail range is empty (T < G) take no part.
 */
__device__ __forceinline__ bool sk_fixup(float (&o)[kD / 2], const float (&row_max)[2],
                                         const float (&row_sum)[2], float (&winv)[2],
                                         float scale_log2, float *part, float *lse, int *count,
                                         int tu, int nt, int units, int cw)
{
	const int G = gridDim.x, c = blockIdx.x;
	const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
	const int rt = units % G; /* tail units */
	const int c0 = sk_owner(tu * nt, rt, nt, G), c1 = sk_owner((tu + 1) * nt - 1, rt, nt, G);
	int row[2], nseg = 0;

	for (int b = c0; b <= c1; b++)
		nseg += sk_begin(b, rt, nt, G) < sk_begin(b + 1, rt, nt, G);
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float l = row_sum[r];

		l += __shfl_xor_sync(0xffffffffu, l, 1);
		l += __shfl_xor_sync(0xffffffffu, l, 2);
		const float inv = 1.0f / l;
		const int slot = sk_slot(c, tu, rt, nt, G);

		row[r] = cw * 64 + warp * 16 + lane / 4 + r * 8;
		float *dst = part + ((size_t)slot * kBlockM + row[r]) * kD + (lane % 4) * 2;
#pragma unroll
		for (int j = 0; j < kD / 8; j++)
			tuner_st_cg(
			    reinterpret_cast<float2 *>(dst + j * 8),
			    make_float2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv));
		if (lane % 4 == 0)
			tuner_st_cg(lse + slot * kBlockM + row[r],
			            row_max[r] * scale_log2 + __log2f(l));
	}
	/*
	 * Release: every thread's partial is in L2 (its fence), then, after the barrier, before
	 * the count says so (thread 0's fence, cumulative over what the barrier ordered before
	 * it). Acquire: the last arrival's fence orders its count before the reads of the others'
	 * partials that the barrier lets the warpgroup make.
	 */
	__threadfence();
	tuner_bar_sync(kEpiBar + cw, 128);
	int last = 0;
	if (t == 0) {
		int *n = count + tu * CONSUMERS + cw;

		__threadfence();
		last = atomicAdd(n, 1) == nseg - 1;
		if (last) {
			atomicExch(n, 0); /* every segment is in: ready for the next call */
			__threadfence();
		}
	}
	if (!tuner_bar_red_or(kEpiBar + cw, 128, last))
		return false;

	float m[2] = {neg_inf(), neg_inf()}, w[2] = {0.0f, 0.0f};

#pragma unroll
	for (int i = 0; i < kD / 2; i++)
		o[i] = 0.0f;
#pragma unroll 1
	for (int b = c0; b <= c1; b++) {
		if (sk_begin(b, rt, nt, G) == sk_begin(b + 1, rt, nt, G))
			continue; /* no tail iteration: no segment */
		const int slot = sk_slot(b, tu, rt, nt, G);
#pragma unroll
		for (int r = 0; r < 2; r++) {
			const float *src =
			    part + ((size_t)slot * kBlockM + row[r]) * kD + (lane % 4) * 2;
			float keep, take;

			lse_fold(m[r], w[r], tuner_ld_cg(lse + slot * kBlockM + row[r]), keep,
			         take);
#pragma unroll
			for (int j = 0; j < kD / 8; j++) {
				const float2 x =
				    tuner_ld_cg(reinterpret_cast<const float2 *>(src + j * 8));

				o[4 * j + 2 * r] = o[4 * j + 2 * r] * keep + take * x.x;
				o[4 * j + 2 * r + 1] = o[4 * j + 2 * r + 1] * keep + take * x.y;
			}
		}
	}
#pragma unroll
	for (int r = 0; r < 2; r++)
		winv[r] = 1.0f / w[r];
	return true;
}

} /* namespace */

#if SPLITS > 1
#define SM90_CLUSTER __cluster_dims__(SPLITS, 1, 1)
#else
#define SM90_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(kThreads, OCCUPANCY) SM90_CLUSTER
    flash_fwd_sm90(const __grid_constant__ tuner_tensormap Qmap,
                   const __grid_constant__ tuner_tensormap Kmap,
                   const __grid_constant__ tuner_tensormap Vmap,
                   const __grid_constant__ tuner_tensormap Omap, float *sk_part, float *sk_lse,
                   int *sk_count, int B, int H, int S, float softmax_scale)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	const unsigned base = (tuner_smem_addr(smem_raw) + 1023u) & ~1023u;
	const unsigned bar_q = base + kBarOff;
	const int wg = threadIdx.x / 128;
	const int ntiles = (S + BLOCK_N - 1) / BLOCK_N;
	/*
	 * The work units, blocks of kBlockM query rows of one (batch, head). Without PERSISTENT
	 * the grid has one block per unit (x the row block, y the head, z the batch); with it,
	 * a flat grid of at most PERSISTENT blocks takes units blockIdx.x, + gridDim.x, ...,
	 * row blocks of a head one after the other (they share K and V in L2); with STREAMK the
	 * units past the last whole round are shared by key tiles (sk_item).
	 */
	const int nrow = (S + kBlockM - 1) / kBlockM;
	const int units = PERSISTENT ? nrow * H * B : 1;
	const int first = PERSISTENT ? blockIdx.x : 0;
	const int stride = PERSISTENT ? gridDim.x : 1;
	/*
	 * Split-KV: block x is row block x / SPLITS and split x % SPLITS (its cluster rank);
	 * it walks key tiles jb .. jb + nt - 1 (nt = 0: a split past the last tile). With
	 * STREAMK nt is the unit's tile count, of which an item takes [kb, ke).
	 */
	const int split = SPLITS > 1 ? tuner_cluster_rank() : 0;
	const int jb = split * ntiles / SPLITS;
	const int nt = (split + 1) * ntiles / SPLITS - jb;
	int kb, ke, g0; /* the current item's key tiles and K/V tiles before it (sk_item) */
	const int nitems = STREAMK ? sk_items(first, stride, units, nt) : 0;
	const int rowblock = (int)blockIdx.x / SPLITS;

/*
 * Barriers: full_q, empty_q (Q landed; every consumer's last S GEMM of the unit done),
 * full_k[s], full_v[s] (TMA landed), empty_k[s], empty_v[s] (all consumers done), recv[q]
 * (SPLITS > 1: the other splits' partials of Q tile q's rows this split owns have landed).
 */
#define EMPTY_Q    (bar_q + 8)
#define FULL_K(s)  (bar_q + 16 + 8 * (s))
#define FULL_V(s)  (bar_q + 16 + 8 * (STAGES + (s)))
#define EMPTY_K(s) (bar_q + 16 + 8 * (2 * STAGES + (s)))
#define EMPTY_V(s) (bar_q + 16 + 8 * (3 * STAGES + (s)))
#define RECV(q)    (bar_q + 16 + 8 * (4 * STAGES + (q)))
/* Global K/V tile g (counted over the block's items): its stage and the phase of that round. */
#define STAGE(g) ((g) % STAGES)
#define PHASE(g) (((g) / STAGES) & 1)

	if (PDL)
		tuner_pdl_trigger();
	if (threadIdx.x == 0) {
		tuner_mbar_init(bar_q, 1);
		tuner_mbar_init(EMPTY_Q, CONSUMERS * 128);
		for (int s = 0; s < STAGES; s++) {
			tuner_mbar_init(FULL_K(s), 1);
			tuner_mbar_init(FULL_V(s), 1);
			/* With KSPLIT every tile is one consumer's. */
			tuner_mbar_init(EMPTY_K(s), CONSUMERS * 128 / KSPLIT);
			tuner_mbar_init(EMPTY_V(s), CONSUMERS * 128 / KSPLIT);
		}
		for (int q = 0; q < (SPLITS > 1 ? kQTiles : 0); q++)
			tuner_mbar_init(RECV(q), 1);
		tuner_mbar_init_fence();
		if (PDL) {
			tuner_tma_prefetch(&Qmap);
			tuner_tma_prefetch(&Kmap);
			tuner_tma_prefetch(&Vmap);
			tuner_tma_prefetch(&Omap);
		}
	}
	__syncthreads();
	/* Split-KV: the receive barriers are initialised (every thread waits before it leaves). */
	if (SPLITS > 1)
		tuner_cluster_arrive();
	/* PDL: every thread waits here, none spinning on a barrier beside the grid before. */
	if (PDL)
		tuner_pdl_wait();

	if (wg == 0) {
		/* ------------------------------------------------------------ producer */
		if (kRealloc)
			tuner_setmaxnreg_dec<kProducerRegs>();
		if (threadIdx.x == 0) {
#pragma unroll 1
			for (int u = first, it = 0; STREAMK ? it < nitems : u < units;
			     u += STREAMK ? 0 : stride, it++) {
				if (STREAMK)
					sk_item(it, first, stride, units, nt, u, kb, ke, g0);
				const int m0 = (PERSISTENT ? u % nrow : rowblock) * kBlockM;
				const int bh = PERSISTENT ? u / nrow : blockIdx.z * H + blockIdx.y;

				if (!STREAMK) {
					kb = jb;
					ke = jb + nt;
					g0 = it * nt;
				}
				const int n = ke - kb; /* key tiles of this item */

				if (SPLITS > 1 && n == 0)
					break; /* an empty split loads nothing */
				/* Q tiles with a row < S; the others' consumers run on garbage. */
				const int live = min((int)kQTiles, (S - m0 + 63) / 64);
				int ok = 1;

				/* The unit before is done with Q (round 0 passes at once). */
				tuner_mbar_wait(EMPTY_Q, (it & 1) ^ 1);
				for (int c = 0; c < live; c++)
#pragma unroll
					for (int k = 0; k < kChunks; k++)
						ok &= tuner_tma_check(base + kQOff + c * kQTile +
						                          k * kChunkQ,
						                      kChunkQ);
				tuner_tma_arm(bar_q, live * kQTile, ok);
				if (ok) {
					for (int c = 0; c < live; c++)
#pragma unroll
						for (int k = 0; k < kChunks; k++)
							tuner_tma_load_3d(
							    base + kQOff + c * kQTile + k * kChunkQ,
							    &Qmap, k * 64, m0 + 64 * c, bh, bar_q);
				}

				/*
				 * K of tile j, then V of tile j - OVERLAP: the consumers' order of
				 * use. A stage's first round passes its empty barrier at once (the
				 * phase before phase 0).
				 */
#pragma unroll 1
				for (int j = 0; j < n + OVERLAP; j++) {
					if (j < n) {
						const int g = g0 + j;

						tuner_mbar_wait(EMPTY_K(STAGE(g)), PHASE(g) ^ 1);
						load_kv(&Kmap, base + kKOff + STAGE(g) * kKVTile,
						        FULL_K(STAGE(g)), (kb + j) * BLOCK_N, bh);
					}
					const int v = j - OVERLAP;
					if (v >= 0) {
						const int g = g0 + v;

						tuner_mbar_wait(EMPTY_V(STAGE(g)), PHASE(g) ^ 1);
						load_kv(&Vmap, base + kVOff + STAGE(g) * kKVTile,
						        FULL_V(STAGE(g)), (kb + v) * BLOCK_N, bh);
					}
				}
			}
		}
		if (SPLITS > 1) {
			__syncwarp();
			tuner_cluster_wait();
		}
	} else {
		/* ------------------------------------------------------------ consumers */
		if (kRealloc)
			tuner_setmaxnreg_inc<kConsumerRegs>();
		const int cw = wg - 1;
		const int t = threadIdx.x % 128;
		const int warp = t / 32, lane = t % 32;
		/* KSPLIT: consumers 0 and 1 share Q tile 0, cw takes key tiles kp, kp + 2, ... */
		const int kp = cw % KSPLIT;
		const unsigned q_tile = base + kQOff + cw / KSPLIT * kQTile;
		/* With PERSISTENT O has its own tile (the next unit's Q loads meanwhile). */
		const unsigned o_tile = PERSISTENT ? base + kOOff + cw * kQTile : q_tile;
		const float scale_log2 = softmax_scale * 1.4426950408889634f;
		const bool ragged = S % BLOCK_N != 0;

		/* Split-KV: the cluster's receive barriers are initialised (long since, as a rule). */
		if (SPLITS > 1)
			tuner_cluster_wait();

		float o[kD / 2];
		float s[BLOCK_N / 2];
		unsigned p[BLOCK_N / 16][4];
		float st[kTailW / 2];        /* S and P of a last tile TAIL_N wide */
		unsigned pt[kTailW / 16][4];

		/* Consumer 0 goes first: the last one passes it the first turn (if there is one). */
		if (PINGPONG && cw == CONSUMERS - 1 && (SPLITS == 1 || nt > 0))
			tuner_bar_arrive(kSchedBar, 256);

#pragma unroll 1
		for (int u = first, it = 0; STREAMK ? it < nitems : u < units;
		     u += STREAMK ? 0 : stride, it++) {
			if (STREAMK)
				sk_item(it, first, stride, units, nt, u, kb, ke, g0);
			const int m0 = (PERSISTENT ? u % nrow : rowblock) * kBlockM;
			const int bh = PERSISTENT ? u / nrow : blockIdx.z * H + blockIdx.y;
			const bool last_unit = STREAMK ? it + 1 == nitems : u + stride >= units;

			if (!STREAMK) {
				kb = jb;
				ke = jb + nt;
				g0 = it * nt;
			}
			const int n = ke - kb; /* key tiles of this item */
			float row_max[2] = {neg_inf(), neg_inf()}, row_sum[2] = {0.0f, 0.0f};
			float alpha[2], sum[2];
			bool moved;

#pragma unroll
			for (int i = 0; i < kD / 2; i++)
				o[i] = 0.0f;

			if (SPLITS > 1 && n == 0) {
				/* An empty split: O = 0 and l = 0 (log-sum-exp -inf, no weight). */
			} else if (KSPLIT > 1 && kp >= n) {
				/* A key-split consumer with no tile: O = 0, l = 0, m = -inf. */
			} else if (OVERLAP) {
				const int gk = g0 + kp; /* this consumer's first tile */

				tuner_mbar_wait(bar_q, it & 1);
				/* Tile 0 (with KSPLIT this consumer's first): S alone. */
				tuner_mbar_wait(FULL_K(STAGE(gk)), PHASE(gk));
				turn_wait(cw);
				gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(gk) * kKVTile);
				turn_pass(cw, false);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(s);
				tuner_mbar_arrive(EMPTY_K(STAGE(gk)));
				moved = softmax_tile<BLOCK_N>(s, row_max, alpha, sum, scale_log2,
				                     (kb + kp) * BLOCK_N, S,
				                     ragged && kb + kp == ntiles - 1);
				pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
				moved = false; /* O is 0: nothing to rescale */

				/*
				 * Tile j: S of j and P V of j - 1 together; softmax of j under P V.
				 * RESCALE 0 rescales O by tile j's alpha once P V of j - 1 has
				 * completed; RESCALE 1 to 3 rescale it by tile j - 1's alpha
				 * between issuing S of j and P V of j - 1, under the S GEMM (2 and
				 * 3: not at all where no row max of the warp moved, alpha being
				 * exactly 1).
				 */
#pragma unroll 1
				for (int j = kp + KSPLIT; j < n - kPeel; j += KSPLIT) {
					/* gp: this consumer's tile before */
					const int g = g0 + j, gp = g - KSPLIT;

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(g) * kKVTile);
					if (RESCALE == 1 || (RESCALE >= 2 && moved))
						rescale_o(o, alpha);
					tuner_mbar_wait(FULL_V(STAGE(gp)), PHASE(gp));
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(gp) * kKVTile);
					turn_pass(cw, false);
					tuner_wgmma_wait<1>();
					tuner_reg_fence(s);
					tuner_mbar_arrive(EMPTY_K(STAGE(g)));
					moved = softmax_tile<BLOCK_N>(s, row_max, alpha, sum, scale_log2,
					                     (kb + j) * BLOCK_N, S,
					                     ragged && kb + j == ntiles - 1);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);
#pragma unroll
					for (int kt = 0; kt < BLOCK_N / 16; kt++)
						tuner_reg_fence(p[kt]);
					tuner_mbar_arrive(EMPTY_V(STAGE(gp)));
					if (RESCALE == 0)
						rescale_o(o, alpha);
					pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
				}
				if (kPeel) {
					/* The last tile, TAIL_N keys wide. */
					const int j = n - 1, g = g0 + j, gp = g - 1;

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_qk<kTailW>(st, q_tile, base + kKOff + STAGE(g) * kKVTile);
					if (RESCALE == 1 || (RESCALE >= 2 && moved))
						rescale_o(o, alpha);
					tuner_mbar_wait(FULL_V(STAGE(gp)), PHASE(gp));
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(gp) * kKVTile);
					turn_pass(cw, false);
					tuner_wgmma_wait<1>();
					tuner_reg_fence(st);
					tuner_mbar_arrive(EMPTY_K(STAGE(g)));
					moved = softmax_tile<kTailW>(st, row_max, alpha, sum, scale_log2,
					                     (kb + j) * BLOCK_N, S, true);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);
#pragma unroll
					for (int kt = 0; kt < BLOCK_N / 16; kt++)
						tuner_reg_fence(p[kt]);
					tuner_mbar_arrive(EMPTY_V(STAGE(gp)));
					if (RESCALE == 0)
						rescale_o(o, alpha);
					pack_p<kTailW>(st, pt, row_sum, alpha, sum);
				}
				if (PERSISTENT)
					tuner_mbar_arrive(EMPTY_Q); /* every S GEMM has completed */

				/* P V of the last tile (with KSPLIT this consumer's last). */
				const int gl = g0 + n - 1 - (n - 1 - kp) % KSPLIT;
				tuner_mbar_wait(FULL_V(STAGE(gl)), PHASE(gl));
				turn_wait(cw);
				if (RESCALE == 1 || (RESCALE >= 2 && moved))
					rescale_o(o, alpha);
				if (kPeel)
					gemm_pv<kTailW>(o, pt, base + kVOff + STAGE(gl) * kKVTile);
				else
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(gl) * kKVTile);
				turn_pass(cw, last_unit);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(o);
				tuner_mbar_arrive(EMPTY_V(STAGE(gl)));
			} else {
				tuner_mbar_wait(bar_q, it & 1);
#pragma unroll 1
				for (int j = kp; j < n; j += KSPLIT) {
					const int g = g0 + j;

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(g) * kKVTile);
					turn_pass(cw, false);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(s);
					tuner_mbar_arrive(EMPTY_K(STAGE(g)));
					moved = softmax_tile<BLOCK_N>(s, row_max, alpha, sum, scale_log2,
					                     (kb + j) * BLOCK_N, S,
					                     ragged && kb + j == ntiles - 1);
					rescale_o(o, alpha);
					pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
					tuner_mbar_wait(FULL_V(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(g) * kKVTile);
					turn_pass(cw, last_unit && j == n - 1);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);
#pragma unroll
					for (int kt = 0; kt < BLOCK_N / 16; kt++)
						tuner_reg_fence(p[kt]);
					tuner_mbar_arrive(EMPTY_V(STAGE(g)));
				}
				if (PERSISTENT)
					tuner_mbar_arrive(EMPTY_Q);
			}
			(void)moved;

			if (KSPLIT > 1) {
				/*
				 * Key split: consumer 1 stages its partial (thread t's O as
				 * float4s, then {m, l} of its two rows) and passes it on; consumer
				 * 0 merges it into its own, thread by thread (the same rows and
				 * columns), and runs the epilogue. Consumer 1's GEMMs have all
				 * completed by then, so the shared Q tile is free for consumer 0's
				 * O.
				 */
				unsigned char *sm = smem_raw + (base - tuner_smem_addr(smem_raw));
				float4 *mg = reinterpret_cast<float4 *>(sm + kMergeOff) + t;

				if (kp) {
#pragma unroll
					for (int q = 0; q < kD / 8; q++)
						tuner_st(mg + q * 128,
						         make_float4(o[4 * q], o[4 * q + 1],
						                     o[4 * q + 2], o[4 * q + 3]));
					tuner_st(mg + kD / 8 * 128,
					         make_float4(row_max[0], row_max[1], row_sum[0],
					                     row_sum[1]));
					tuner_bar_arrive(kMergeBar, 256);
					continue;
				}
				tuner_bar_sync(kMergeBar, 256);
				const float4 ml = tuner_ld(mg + kD / 8 * 128);
				const float m1[2] = {ml.x, ml.y}, l1[2] = {ml.z, ml.w};
				float w0[2], w1[2];

#pragma unroll
				for (int r = 0; r < 2; r++) {
					/*
					 * m is finite (tile 0 is consumer 0's) but in an empty split
					 * (both -inf, O and l 0): -inf weighs 0. m is the reference of
					 * the merged partial (the split merge's).
					 */
					const float m = fmaxf(row_max[r], m1[r]);
					const float mr = SPLITS > 1 && m == neg_inf() ? 0.0f : m;

					w0[r] = tuner_exp2((row_max[r] - mr) * scale_log2);
					w1[r] = tuner_exp2((m1[r] - mr) * scale_log2);
					row_sum[r] = row_sum[r] * w0[r] + l1[r] * w1[r];
					row_max[r] = m;
				}
#pragma unroll
				for (int q = 0; q < kD / 8; q++) {
					const float4 x = tuner_ld(mg + q * 128);

					o[4 * q] = o[4 * q] * w0[0] + x.x * w1[0];
					o[4 * q + 1] = o[4 * q + 1] * w0[0] + x.y * w1[0];
					o[4 * q + 2] = o[4 * q + 2] * w0[1] + x.z * w1[1];
					o[4 * q + 3] = o[4 * q + 3] * w0[1] + x.w * w1[1];
				}
			}

			/*
			 * Stream-K: a partial segment's rows go to the scratch; the warpgroup of
			 * the unit's last segment merges them all and stores them as below (winv:
			 * the merge's 1 / sum of weights, instead of 1 / l).
			 */
			float winv[2] = {1.0f, 1.0f};
			const bool merged = STREAMK && (kb > 0 || ke < ntiles);

			if (merged &&
			    !sk_fixup(o, row_max, row_sum, winv, scale_log2, sk_part, sk_lse,
			              sk_count, u - units / stride * stride, ntiles, units, cw))
				continue;

			if (SPLITS > 1) {
				/*
				 * Split-KV: this warp's rows belong to split `owner`. Another's: push
				 * the partial there (thread t's registers into that block's receive
				 * buffer, slot `src` of its sources) and be done. Ours: take the
				 * others' partials once they have landed, and merge.
				 */
				const int owner = warp * SPLITS / 4, tw = t % kOwnThreads;
				const unsigned recv = base + kRecvOff + cw / KSPLIT * kRecvTile;

				if (owner != split) {
					const int src = split < owner ? split : split - 1;
					const unsigned dst = tuner_cluster_addr(
					    recv + (src * (kD / 8 + 1) * kOwnThreads + tw) * 16, owner);
					const unsigned bar = tuner_cluster_addr(RECV(cw / KSPLIT), owner);

#pragma unroll
					for (int q = 0; q < kD / 8; q++)
						tuner_st_async(dst + q * kOwnThreads * 16,
						               make_float4(o[4 * q], o[4 * q + 1],
						                           o[4 * q + 2], o[4 * q + 3]),
						               bar);
					tuner_st_async(dst + kD / 8 * kOwnThreads * 16,
					               make_float4(row_max[0], row_max[1], row_sum[0],
					                           row_sum[1]),
					               bar);
					continue;
				}
				if (tw == 0)
					tuner_mbar_arrive_tx(RECV(cw / KSPLIT), kRecvTile);
				tuner_mbar_wait(RECV(cw / KSPLIT), 0);
				unsigned char *sm = smem_raw + (base - tuner_smem_addr(smem_raw));
				const float4 *rv =
				    reinterpret_cast<const float4 *>(sm + (recv - base)) + tw;
				float4 ml[SPLITS > 1 ? SPLITS - 1 : 1];
				float m[2] = {row_max[0], row_max[1]}, w[2];

#pragma unroll
				for (int i = 0; i < SPLITS - 1; i++) {
					ml[i] = tuner_ld(rv + (i * (kD / 8 + 1) + kD / 8) * kOwnThreads);
					m[0] = fmaxf(m[0], ml[i].x);
					m[1] = fmaxf(m[1], ml[i].y);
				}
				/* m is finite (some split has a tile): -inf weighs 0. */
#pragma unroll
				for (int r = 0; r < 2; r++) {
					w[r] = tuner_exp2((row_max[r] - m[r]) * scale_log2);
					row_sum[r] *= w[r];
				}
#pragma unroll
				for (int q = 0; q < kD / 8; q++) {
					o[4 * q] *= w[0];
					o[4 * q + 1] *= w[0];
					o[4 * q + 2] *= w[1];
					o[4 * q + 3] *= w[1];
				}
#pragma unroll
				for (int i = 0; i < SPLITS - 1; i++) {
					w[0] = tuner_exp2((ml[i].x - m[0]) * scale_log2);
					w[1] = tuner_exp2((ml[i].y - m[1]) * scale_log2);
					row_sum[0] += ml[i].z * w[0];
					row_sum[1] += ml[i].w * w[1];
#pragma unroll
					for (int q = 0; q < kD / 8; q++) {
						const float4 x = tuner_ld(rv + (i * (kD / 8 + 1) + q) * kOwnThreads);

						o[4 * q] += x.x * w[0];
						o[4 * q + 1] += x.y * w[0];
						o[4 * q + 2] += x.z * w[1];
						o[4 * q + 3] += x.w * w[1];
					}
				}
			}

			/*
			 * Epilogue: normalise, stage O in o_tile (without PERSISTENT this
			 * consumer's own Q tile, whose last reader, the last S GEMM, has completed)
			 * in the swizzled layout of the O tensor map, then one thread stores it by
			 * TMA; rows past S are clipped by the map. With PERSISTENT the store of the
			 * unit before must have read o_tile first (its thread waits only now).
			 */
			if (PERSISTENT) {
				if (t == 0)
					tuner_tma_store_wait_read();
				tuner_bar_sync(kEpiBar + cw, 128);
			}
			tuner_fence_proxy_async();
#pragma unroll
			for (int r = 0; r < 2; r++) {
				float l = row_sum[r];

				l += __shfl_xor_sync(0xffffffffu, l, 1);
				l += __shfl_xor_sync(0xffffffffu, l, 2);
				const float inv = merged ? winv[r] : 1.0f / l;
				const int row = warp * 16 + lane / 4 + r * 8;
#pragma unroll
				for (int j = 0; j < kD / 8; j++) {
					const unsigned off = (j / 8) * kChunkQ + row * 128 +
					                     ((j % 8) ^ (row % 8)) * 16 +
					                     (lane % 4) * 4;
					unsigned char *dst =
					    smem_raw + (o_tile - tuner_smem_addr(smem_raw)) + off;

					tuner_st(reinterpret_cast<unsigned *>(dst),
					         pack2(o[4 * j + 2 * r] * inv,
					               o[4 * j + 2 * r + 1] * inv));
				}
			}
			tuner_fence_proxy_async();
			/* With SPLITS only this split's rows of the tile: one box of them. */
			tuner_bar_sync(kEpiBar + cw, kOwnThreads);
			const int r0 = 64 * (cw / KSPLIT) + split * kBoxRows;
			if (t % kOwnThreads == 0 && m0 + r0 < S) {
#pragma unroll
				for (int k = 0; k < kChunks; k++)
					tuner_tma_store_3d(&Omap, k * 64, m0 + r0, bh,
					                   o_tile + k * kChunkQ + split * kBoxRows * 128,
					                   kBoxRows * 128);
				tuner_tma_store_commit();
				if (!PERSISTENT)
					tuner_tma_store_wait_read();
			}
		}
		/* The block's shared memory must outlive the last store's reads. */
		if (PERSISTENT && t == 0)
			tuner_tma_store_wait_read();
	}
#undef EMPTY_Q
#undef FULL_K
#undef FULL_V
#undef EMPTY_K
#undef EMPTY_V
#undef RECV
#undef STAGE
#undef PHASE
}
