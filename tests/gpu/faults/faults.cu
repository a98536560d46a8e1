/*
 * The `faults` family: a plain, obviously correct attention kernel with one planted fault
 * per value of FAULT, for the end-to-end test (tests/gpu/t-faults.sh) that drives it through
 * `tuner sweep` and reads the verdicts back from the database.
 *
 *   FAULT=0  correct (the baseline)
 *   FAULT=1  a 16-byte cp.async into shared memory 2 bytes off alignment (the seeds' bug).
 *            The sidecar's layout describes the staging buffer as aligned and does not know
 *            about the +2: only the dynamic gate (a -DTUNER_SANITIZE build) can see it. A plain
 *            build faults with CUDA_ERROR_MISALIGNED_ADDRESS; a sanitize build records the
 *            violation in tuner_san_log and carries on.
 *   FAULT=2  a store far past the end of O (CUDA_ERROR_ILLEGAL_ADDRESS)
 *   FAULT=3  an infinite loop on a flag nothing sets (the worker's watchdog)
 *   FAULT=4  NaN in some outputs, the rest correct
 *   FAULT=5  a data race: warp 1 reads a shared slot warp 0 writes, with no barrier, at times
 *            taken from the global timer; what it sees changes from run to run. The values
 *            stay finite, so it is the race (two runs differ), not a NaN, that is caught.
 *
 * Preamble (from tuner): FAULT, SHAPE_D, TUNER_SMEM_BYTES, optionally TUNER_SANITIZE.
 * Arguments: the attention problem's (Q, K, V, O, B, H, S, softmax_scale), [B, H, S, D]
 * contiguous, fp16 in and out. One thread per query row, fp32 online softmax over all keys
 * read from global memory. Launch: grid (ceil_div(S, 64), H, B), 64 threads (two warps).
 *
 * Dynamic shared memory (the sidecar's smem_bytes, 64 * 16 + 256):
 *   stage  64 slots of 16 bytes at 0: each thread's first 8 query halves, by cp.async
 *   slot   64 floats at 1024: FAULT=5's racy slots
 */
#include <cuda_fp16.h>

#include "tuner_device.cuh"

#if !defined(FAULT) || !defined(SHAPE_D) || !defined(TUNER_SMEM_BYTES)
#error "faults.cu needs the tuner's preamble (FAULT, SHAPE_D, TUNER_SMEM_BYTES)"
#endif

/* Enumerators rather than constexpr variables: NVRTC would emit those as globals. */
enum : int {
	kD = SHAPE_D,
	kThreads = 64,
	kStageOff = 0,               /* bytes */
	kSlotOff = kThreads * 16,    /* bytes */
	kSmemBytes = kSlotOff + 256, /* the sidecar's 64 * 16 + 256 */
	kRaceRounds = 32,
};

static_assert(kD % 8 == 0 && kD <= 128, "the head dim must be a multiple of 8, at most 128");
static_assert(kSmemBytes <= TUNER_SMEM_BYTES,
              "the kernel's shared memory exceeds TUNER_SMEM_BYTES: the sidecar's smem_bytes "
              "disagrees with the kernel");
static_assert(FAULT >= 0 && FAULT <= 5, "FAULT is 0 to 5");
static_assert(kRaceRounds <= 32, "the race keeps one bit per round in 32 bits");

#if FAULT == 3
/* Nothing ever sets it: the kernel waits forever. */
__device__ int faults_never_set;
#endif

#if FAULT == 5
static __device__ __forceinline__ unsigned long long faults_globaltimer(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* A pseudo-random sleep of 0 to 4095 ns, drawn from the global timer: differs from run to run. */
static __device__ __forceinline__ unsigned faults_jitter(unsigned round)
{
	unsigned long long t = faults_globaltimer();
	unsigned h = (unsigned)(t >> 5) ^ (unsigned)(t >> 37);

	h ^= blockIdx.x * 0x9e3779b9u ^ blockIdx.y * 0x85ebca6bu ^ blockIdx.z * 0xc2b2ae35u ^
	     round * 0x27d4eb2fu;
	h *= 0x2c1b3c6du;
	h ^= h >> 15;
	h *= 0x297a2d39u;
	h ^= h >> 15;
	return h & 4095u;
}

/*
 * Each round, warp 0 stores a marker in its lane's slot, sleeps a time drawn from the global
 * timer (0 to 4095 ns), stores the round number and sleeps out the rest of 4096 ns; warp 1
 * reads the slot in the middle of each round with no barrier, so whether it sees the marker
 * is a coin toss per round. Returns warp 1's tosses as a bit mask (0 for warp 0): two runs
 * give the same mask in a block with a chance of about (2/3)^kRaceRounds.
 */
static __device__ __forceinline__ unsigned faults_race(float *slot)
{
	volatile float *vs = slot;
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	unsigned seen = 0;

	if (warp == 0) {
		for (int k = 0; k < kRaceRounds; k++) {
			const unsigned d = faults_jitter((unsigned)k);

			vs[lane] = -1.0f;
			__nanosleep(d);
			vs[lane] = (float)k;
			__nanosleep(4096u - d);
		}
	} else {
		__nanosleep(2048);
		for (int k = 0; k < kRaceRounds; k++) {
			/* no __syncthreads() orders this read after warp 0's stores */
			seen |= (unsigned)(vs[lane] == -1.0f) << k;
			__nanosleep(4096);
		}
	}
	return seen;
}
#endif

extern "C" __global__ void __launch_bounds__(kThreads)
    faults(const __half *__restrict__ Q, const __half *__restrict__ K,
           const __half *__restrict__ V, __half *__restrict__ O, int B, int H, int S,
           float softmax_scale)
{
	extern __shared__ __align__(16) unsigned char smem[];
	const int row = blockIdx.x * kThreads + threadIdx.x;
	const size_t head = ((size_t)blockIdx.z * H + blockIdx.y) * (size_t)S * kD;
	/* rows past S stage (and race on) row 0's data and write nothing */
	const int r = row < S ? row : 0;
	const __half *q = Q + head + (size_t)r * kD;
	float qf[kD], acc[kD], m = __int_as_float(0xff800000) /* -inf */, l = 0.0f;
	unsigned seen = 0; /* FAULT=5: the race's outcome, a bit mask */

#if FAULT == 3
	while (!*(volatile int *)&faults_never_set)
		__nanosleep(1000);
#endif

	/* Stage the row's first 8 query halves (16 bytes) in shared memory by cp.async. */
#if FAULT == 1
	/* The seeds' bug: the slot is 2 bytes off a multiple of 16, which the layout does not say. */
	unsigned char *stage = smem + kStageOff + threadIdx.x * 16 + 2;
#else
	unsigned char *stage = smem + kStageOff + threadIdx.x * 16;
#endif
	tuner_cp_async_16(stage, q, 16);
	tuner_cp_async_commit();
	tuner_cp_async_wait<0>();
	/* each thread reads back only its own slot: no barrier needed after wait_group */

#if FAULT == 5
	seen = faults_race(reinterpret_cast<float *>(smem + kSlotOff));
#endif
	(void)B;

#pragma unroll
	for (int d = 0; d < kD; d++) {
		const __half x = d < 8 ? reinterpret_cast<const __half *>(stage)[d] : q[d];

		qf[d] = __half2float(x) * softmax_scale;
		acc[d] = 0.0f;
	}
	for (int key = 0; key < S; key++) {
		const __half *k = K + head + (size_t)key * kD;
		const __half *v = V + head + (size_t)key * kD;
		float s = 0.0f;

#pragma unroll
		for (int d = 0; d < kD; d++)
			s += qf[d] * __half2float(k[d]);
		const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);

		l = l * corr + p;
#pragma unroll
		for (int d = 0; d < kD; d++)
			acc[d] = acc[d] * corr + p * __half2float(v[d]);
		m = mn;
	}

#if FAULT == 2
	{
		/* 2^41 bytes past the end of O: outside any allocation */
		volatile __half *o = O;

		o[(size_t)B * H * S * kD + ((size_t)1 << 40) + threadIdx.x] = __float2half(1.0f);
	}
#endif
	if (row >= S)
		return;

	__half *o = O + head + (size_t)row * kD;
	const float inv = 1.0f / l;
#pragma unroll
	for (int d = 0; d < kD; d++) {
		float y = acc[d] * inv;

#if FAULT == 4
		if (d == 0 && row % 7 == 3)
			y = __int_as_float(0x7fc00000); /* NaN in about one row in seven */
#endif
		/* finite either way: 0 or 0.5 more, by bit d of the race's mask (0 but for FAULT=5) */
		o[d] = __float2half(y + 0.5f * (float)((seen >> (d % 32)) & 1u));
	}
}
