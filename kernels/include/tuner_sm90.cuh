/*
 * Hopper (sm_90a) device helpers as inline PTX: mbarriers, TMA tensor copies, wgmma
 * descriptors and fences, register reallocation, named barriers and thread-block clusters
 * (distributed shared memory), with checked versions of the TMA copies and descriptors when
 * TUNER_SANITIZE is defined.
 *
 * NVRTC has neither <cuda.h> nor the cuda::barrier headers, so everything here is raw PTX.
 * Conventions: shared addresses are byte offsets in the shared window (tuner_smem_addr); a
 * tensor map is the kernel's `const __grid_constant__ tuner_tensormap` parameter, passed to
 * the copies by address.
 *
 * Sanitize builds check what the async proxy would otherwise fault on or silently get wrong:
 * a TMA destination or a wgmma operand tile must lie inside the dynamic shared allocation and,
 * with the 128-byte swizzle, start on a 1024-byte swizzle atom. A failed check is counted in
 * tuner_san_log (kind TUNER_SAN_CP_ASYNC for copies, TUNER_SAN_LDMATRIX for wgmma operands:
 * the nearest existing kinds) and the instruction is not issued; a skipped copy still
 * completes its barrier (without data), so a bad variant finishes with a non-empty log
 * instead of hanging.
 */
#ifndef TUNER_SM90_CUH
#define TUNER_SM90_CUH

#include "tuner_device.cuh"
#include "tuner_wgmma.cuh"

/* The CUtensorMap of <cuda.h>: 128 opaque bytes, 64-byte aligned. */
struct __align__(64) tuner_tensormap
{
	unsigned long long opaque[16];
};

/* ---------------------------------------------------------------- mbarrier */

TUNER_DEV void tuner_mbar_init(unsigned bar, unsigned count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* Make initialised barriers visible to the async proxy (TMA) before anyone uses them. */
TUNER_DEV void tuner_mbar_init_fence(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

TUNER_DEV void tuner_mbar_arrive(unsigned bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Arrive and announce `bytes` of TMA transactions that complete the current phase. */
TUNER_DEV void tuner_mbar_arrive_tx(unsigned bar, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
	             "r"(bytes)
	             : "memory");
}

/* Wait until the phase of parity `parity` has completed. */
TUNER_DEV void tuner_mbar_wait(unsigned bar, unsigned parity)
{
	unsigned done;

	do {
		asm volatile("{\n.reg .pred p;\n"
		             "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
		             "selp.u32 %0, 1, 0, p;\n}\n"
		             : "=r"(done)
		             : "r"(bar), "r"(parity)
		             : "memory");
	} while (!done);
}

/* ---------------------------------------------------------------- checks (sanitize) */

#ifdef TUNER_SANITIZE
/* A tile of `bytes` at window offset `off` that the async proxy reads or writes. */
TUNER_DEV int tuner_san_tile_ok(unsigned kind, unsigned off, unsigned bytes, unsigned align,
                                unsigned is_write)
{
	unsigned base = tuner_smem_addr(tuner_san_dyn_smem);

	if (off % align) {
		tuner_san_report(kind, TUNER_SAN_SHARED, align, is_write, off);
		return 0;
	}
	if (off < base || off - base + bytes > tuner_dyn_smem_size()) {
		tuner_san_report(TUNER_SAN_BOUNDS, TUNER_SAN_SHARED, bytes, is_write, off);
		return 0;
	}
	return 1;
}
#endif

/* ---------------------------------------------------------------- PDL */

/*
 * Programmatic dependent launch (a launch with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
 * SERIALIZATION): trigger lets the next kernel of the stream be scheduled once every block of
 * this grid has triggered or exited; wait blocks until the grids this one depends on have
 * completed and their writes are visible. Both are no-ops in a launch without the attribute.
 */
TUNER_DEV void tuner_pdl_trigger(void)
{
	asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

TUNER_DEV void tuner_pdl_wait(void)
{
	asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/* ---------------------------------------------------------------- TMA */

/*
 * Start a 3-D tiled copy of one box global -> shared, completing `bar` with the box's bytes
 * (elements out of the tensor's bounds are zero-filled and still counted). The sanitize
 * build checks that the `bytes` of the box fit at `dst` on a 1024-byte atom; the caller arms
 * the barrier only after tuner_tma_check said yes (see tuner_tma_arm).
 */
TUNER_DEV void tuner_tma_load_3d(unsigned dst, const tuner_tensormap *map, int c0, int c1, int c2,
                                 unsigned bar)
{
	asm volatile(
	    "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
	    " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
	    "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
	    : "memory");
}

/* Fetch a tensor map's descriptor ahead of its first copy (it lives in kernel parameters). */
TUNER_DEV void tuner_tma_prefetch(const tuner_tensormap *map)
{
	asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
	             : "memory");
}

/* 1 when a box of `bytes` may land at `dst` (always 1 outside sanitize builds). */
TUNER_DEV int tuner_tma_check(unsigned dst, unsigned bytes)
{
#ifdef TUNER_SANITIZE
	return tuner_san_tile_ok(TUNER_SAN_CP_ASYNC, dst, bytes, 1024, 1);
#else
	(void)dst;
	(void)bytes;
	return 1;
#endif
}

/*
 * Arm `bar` for `bytes` of copies when all of them passed their checks (ok), else complete
 * its phase at once without data, so that no one waits forever on a copy never issued.
 */
TUNER_DEV void tuner_tma_arm(unsigned bar, unsigned bytes, int ok)
{
	if (ok)
		tuner_mbar_arrive_tx(bar, bytes);
	else
		tuner_mbar_arrive(bar);
}

/*
 * Start a 3-D tiled copy of one box of `bytes` shared -> global; out-of-bounds elements are
 * not written.
 */
TUNER_DEV void tuner_tma_store_3d(const tuner_tensormap *map, int c0, int c1, int c2, unsigned src,
                                  unsigned bytes)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_tile_ok(TUNER_SAN_CP_ASYNC, src, bytes, 1024, 0))
		return;
#else
	(void)bytes;
#endif
	asm volatile(
	    "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"
	    " [%0, {%1, %2, %3}], [%4];\n" ::"l"(reinterpret_cast<unsigned long long>(map)),
	    "r"(c0), "r"(c1), "r"(c2), "r"(src)
	    : "memory");
}

TUNER_DEV void tuner_tma_store_commit(void)
{
	asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* Wait until the committed stores have read their shared memory (before it is reused or freed). */
TUNER_DEV void tuner_tma_store_wait_read(void)
{
	asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

/* Order this thread's generic shared-memory writes before later async-proxy accesses. */
TUNER_DEV void tuner_fence_proxy_async(void)
{
	asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* ---------------------------------------------------------------- wgmma */

/*
 * Descriptor of a K-major (or, with lbo set, N-major) operand in 128-byte-swizzled shared
 * memory: start address, leading and stride byte offsets, swizzle mode 1 (128B). Base offset
 * 0: the tile's swizzle atoms start on 1024-byte boundaries (advancing the start by 32 bytes
 * per k16 step inside an atom keeps it so).
 */
TUNER_DEV unsigned long long tuner_wgmma_desc_sw128(unsigned addr, unsigned lbo, unsigned sbo)
{
	return (unsigned long long)((addr & 0x3ffffu) >> 4) |
	       (unsigned long long)((lbo & 0x3ffffu) >> 4) << 16 |
	       (unsigned long long)((sbo & 0x3ffffu) >> 4) << 32 | 1ull << 62;
}

/*
 * The same with the 64-byte swizzle (mode 2): K-major rows of 64 bytes, 8-row atoms of 512
 * bytes (sbo 512 for packed rows); advancing the start by 32 bytes (one k32 step of 8-bit
 * inputs) inside a row keeps the atoms where they were.
 */
TUNER_DEV unsigned long long tuner_wgmma_desc_sw64(unsigned addr, unsigned lbo, unsigned sbo)
{
	return (unsigned long long)((addr & 0x3ffffu) >> 4) |
	       (unsigned long long)((lbo & 0x3ffffu) >> 4) << 16 |
	       (unsigned long long)((sbo & 0x3ffffu) >> 4) << 32 | 2ull << 62;
}

/*
 * 1 when an operand tile of `bytes` whose swizzle atoms start at `base` is inside the
 * allocation and atom-aligned (always 1 outside sanitize builds). Every thread of the
 * warpgroup computes the same answer, so the collective wgmma stays uniform.
 */
TUNER_DEV int tuner_wgmma_check(unsigned base, unsigned bytes)
{
#ifdef TUNER_SANITIZE
	return tuner_san_tile_ok(TUNER_SAN_LDMATRIX, base, bytes, 1024, 0);
#else
	(void)base;
	(void)bytes;
	return 1;
#endif
}

TUNER_DEV void tuner_wgmma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

TUNER_DEV void tuner_wgmma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Wait until at most N committed wgmma groups are pending. */
template <int N> TUNER_DEV void tuner_wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/*
 * Pin registers in place around async wgmma: the compiler may neither move a use of the
 * accumulators above the wait that completes them nor a write of them (or of A fragments)
 * below the fence before the next wgmma.
 */
template <int N> TUNER_DEV void tuner_reg_fence(float (&r)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(r[i])::"memory");
}

template <int N> TUNER_DEV void tuner_reg_fence(unsigned (&r)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+r"(r[i])::"memory");
}

/* ---------------------------------------------------------------- warpgroups */

/* Give registers back (producer) or take them (consumers); the whole warpgroup executes it. */
template <int R> TUNER_DEV void tuner_setmaxnreg_dec(void)
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}

template <int R> TUNER_DEV void tuner_setmaxnreg_inc(void)
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

/* Named barriers 1..15 (0 is __syncthreads); `count` threads, a multiple of 32. */
TUNER_DEV void tuner_bar_sync(unsigned id, unsigned count)
{
	asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

TUNER_DEV void tuner_bar_arrive(unsigned id, unsigned count)
{
	asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/*
 * Named barrier `id` for `count` threads that also ORs a predicate over them: every thread
 * gets 1 when any thread passed pred != 0 (bar.red.or.pred).
 */
TUNER_DEV int tuner_bar_red_or(unsigned id, unsigned count, int pred)
{
	unsigned r;

	asm volatile("{\n.reg .pred p, q;\n"
	             "setp.ne.u32 p, %1, 0;\n"
	             "bar.red.or.pred q, %2, %3, p;\n"
	             "selp.u32 %0, 1, 0, q;\n}\n"
	             : "=r"(r)
	             : "r"(pred), "r"(id), "r"(count)
	             : "memory");
	return (int)r;
}

/* ---------------------------------------------------------------- thread-block clusters */

/* This block's rank in its cluster. */
TUNER_DEV int tuner_cluster_rank(void)
{
	unsigned r;

	asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
	return (int)r;
}

/* The shared::cluster address of shared address a in the shared memory of block `rank`. */
TUNER_DEV unsigned tuner_cluster_addr(unsigned a, int rank)
{
	unsigned r;

	asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
	return r;
}

/*
 * The cluster barrier in two halves: every thread of the cluster (converged warps) arrives,
 * releasing what it wrote before (barrier initialisations included); a thread that waits
 * then sees all of it. A thread arrives once and waits once.
 */
TUNER_DEV void tuner_cluster_arrive(void)
{
	asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}

TUNER_DEV void tuner_cluster_wait(void)
{
	asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/*
 * 16 bytes to another block's shared memory (a, shared::cluster), counted as a transaction
 * on that block's mbarrier bar (shared::cluster): its waiters see the bytes once the phase
 * completes, as with TMA. Asynchronous: the writer does not wait.
 */
TUNER_DEV void tuner_st_async(unsigned a, float4 v, unsigned bar)
{
	asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, "
	             "%3, %4}, [%5];\n" ::"r"(a),
	             "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar)
	             : "memory");
}

/* 2^x by the SFU, flushing denormals (the softmax's exponentials). */
TUNER_DEV float tuner_exp2(float x)
{
	float y;

	asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
	return y;
}

#endif /* TUNER_SM90_CUH */
