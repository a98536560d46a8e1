/*
 * Device helpers every kernel family can use (cp.async, ldmatrix, mma.sync, vector
 * access), with alignment- and bounds-checked versions when TUNER_SANITIZE is defined.
 *
 * Plain builds compile each helper to the one PTX instruction it names. Sanitize builds
 * check the alignment the instruction needs before issuing it; on a violation they do
 * NOT issue it (a misaligned cp.async or ldmatrix would poison the context) but count it
 * and record the first few in tuner_san_log (layout in tuner_sanitize.h), which the
 * worker zeroes before a launch and reads after. Data a skipped instruction would have
 * produced reads as zero, so a sanitize build's output is only meaningful when the log
 * is empty.
 *
 * NVRTC has no host headers: this file needs only <cuda_fp16.h>.
 */
#ifndef TUNER_DEVICE_CUH
#define TUNER_DEVICE_CUH

#include <cuda_fp16.h>

#include "tuner_sanitize.h"

#define TUNER_DEV static __device__ __forceinline__

/* Byte offset of a generic pointer to shared memory in the shared window. */
TUNER_DEV unsigned tuner_smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

/* ---------------------------------------------------------------- sanitize log */
#ifdef TUNER_SANITIZE

/* Unmangled so that the worker finds it with cuModuleGetGlobal("tuner_san_log"). */
extern "C" {
__device__ struct tuner_san_log tuner_san_log;
}

/* Aliases the start of the dynamic shared allocation, for the bounds check. */
extern __shared__ __align__(16) unsigned char tuner_san_dyn_smem[];

static __device__ __noinline__ void tuner_san_report(unsigned kind, unsigned space, unsigned width,
                                                     unsigned is_write, unsigned long long addr)
{
	unsigned slot;

	atomicAdd(&tuner_san_log.count[kind], 1u);
	slot = atomicAdd(&tuner_san_log.nrecords, 1u);
	if (slot < TUNER_SAN_MAX_RECORDS) {
		struct tuner_san_record *r = &tuner_san_log.first[slot];

		r->kind = kind;
		r->space = space;
		r->width = width;
		r->is_write = is_write;
		r->thread[0] = threadIdx.x;
		r->thread[1] = threadIdx.y;
		r->thread[2] = threadIdx.z;
		r->block[0] = blockIdx.x;
		r->block[1] = blockIdx.y;
		r->block[2] = blockIdx.z;
		r->addr = addr;
	}
}

TUNER_DEV unsigned tuner_dyn_smem_size(void)
{
	unsigned n;

	asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
	return n;
}

/*
 * Check one shared access of `width` bytes at window offset `off`: alignment (reported
 * as `kind`), then bounds against the dynamic allocation. Returns 1 when it is safe.
 */
TUNER_DEV int tuner_san_shared_ok(unsigned kind, unsigned off, unsigned width, unsigned is_write)
{
	unsigned base = tuner_smem_addr(tuner_san_dyn_smem);

	if (off % width) {
		tuner_san_report(kind, TUNER_SAN_SHARED, width, is_write, off);
		return 0;
	}
	if (off < base || off - base + width > tuner_dyn_smem_size()) {
		tuner_san_report(TUNER_SAN_BOUNDS, TUNER_SAN_SHARED, width, is_write, off);
		return 0;
	}
	return 1;
}

TUNER_DEV int tuner_san_global_ok(unsigned kind, const void *p, unsigned width, unsigned is_write)
{
	unsigned long long a = (unsigned long long)p;

	if (a % width) {
		tuner_san_report(kind, TUNER_SAN_GLOBAL, width, is_write, a);
		return 0;
	}
	return 1;
}

#endif /* TUNER_SANITIZE */

/* ---------------------------------------------------------------- cp.async */

/*
 * Copy 16 bytes global -> shared, asynchronously (cp.async.cg: L2 only). src_bytes
 * (0 or 16) is how many bytes to read; the rest of the 16 are zero-filled, so rows
 * past the end of a tensor load as zeros without touching memory (src must still be a
 * valid, aligned address).
 */
TUNER_DEV void tuner_cp_async_16(void *smem_dst, const void *gmem_src, int src_bytes)
{
	unsigned dst = tuner_smem_addr(smem_dst);

#ifdef TUNER_SANITIZE
	int ok = tuner_san_shared_ok(TUNER_SAN_CP_ASYNC, dst, 16, 1);

	ok &= tuner_san_global_ok(TUNER_SAN_CP_ASYNC, gmem_src, 16, 0);
	if (!ok)
		return;
#endif
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src),
	             "r"(src_bytes)
	             : "memory");
}

TUNER_DEV void tuner_cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N committed groups are pending; N must be a constant (the seeds' lesson). */
template <int N> TUNER_DEV void tuner_cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* ---------------------------------------------------------------- ldmatrix */

#ifdef TUNER_SANITIZE
/*
 * ldmatrix is warp-collective (.sync.aligned): the whole warp issues it or none does.
 * Every lane checks its own row address; if any lane fails, no lane issues and all
 * get zeros. Needs all 32 lanes active, as the instruction itself does.
 */
TUNER_DEV int tuner_san_ldmatrix_ok(unsigned addr)
{
	int ok = tuner_san_shared_ok(TUNER_SAN_LDMATRIX, addr, 16, 0);

	return __all_sync(0xffffffffu, ok);
}
#endif

/* Four 8x8 b16 matrices; lane i supplies the row address of row i%8 of matrix i/8. */
TUNER_DEV void tuner_ldmatrix_x4(unsigned r[4], const void *smem_row)
{
	unsigned a = tuner_smem_addr(smem_row);

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

/* As tuner_ldmatrix_x4, each matrix transposed (row-major B operand to .col layout). */
TUNER_DEV void tuner_ldmatrix_x4_trans(unsigned r[4], const void *smem_row)
{
	unsigned a = tuner_smem_addr(smem_row);

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

/* ---------------------------------------------------------------- mma */

/* d = a * b + d: one m16n8k16 tile, f16 inputs, f32 accumulators, A row-major, B col-major. */
TUNER_DEV void tuner_mma_16816(float d[4], const unsigned a[4], unsigned b0, unsigned b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
	             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* ---------------------------------------------------------------- vector access */

/*
 * Load or store one T (uint4: 16 bytes, unsigned or __half2: 4 bytes) in shared or
 * global memory. The sanitize build checks that the address is a multiple of
 * sizeof(T) (and, for shared memory, inside the dynamic allocation); a failing load
 * returns a zero T.
 */
template <typename T> TUNER_DEV T tuner_ld(const T *p)
{
#ifdef TUNER_SANITIZE
	int ok = __isShared(p)
	             ? tuner_san_shared_ok(TUNER_SAN_VEC_LOAD, tuner_smem_addr(p), sizeof(T), 0)
	             : tuner_san_global_ok(TUNER_SAN_VEC_LOAD, p, sizeof(T), 0);
	if (!ok)
		return T();
#endif
	return *p;
}

template <typename T> TUNER_DEV void tuner_st(T *p, const T &v)
{
#ifdef TUNER_SANITIZE
	int ok = __isShared(p)
	             ? tuner_san_shared_ok(TUNER_SAN_VEC_STORE, tuner_smem_addr(p), sizeof(T), 1)
	             : tuner_san_global_ok(TUNER_SAN_VEC_STORE, p, sizeof(T), 1);
	if (!ok)
		return;
#endif
	*p = v;
}

/*
 * As tuner_ld and tuner_st for global memory only, cached in L2 and not in L1 (ld.global.cg,
 * st.global.cg): for data another block writes during the same launch (L1 is not coherent).
 */
template <typename T> TUNER_DEV T tuner_ld_cg(const T *p)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_global_ok(TUNER_SAN_VEC_LOAD, p, sizeof(T), 0))
		return T();
#endif
	return __ldcg(p);
}

template <typename T> TUNER_DEV void tuner_st_cg(T *p, const T &v)
{
#ifdef TUNER_SANITIZE
	if (!tuner_san_global_ok(TUNER_SAN_VEC_STORE, p, sizeof(T), 1))
		return;
#endif
	__stcg(p, v);
}

/* Two floats as one register of two halves, the first in the low 16 bits. */
TUNER_DEV unsigned tuner_pack_half2(float lo, float hi)
{
	__half2 h = __floats2half2_rn(lo, hi);

	return *reinterpret_cast<unsigned *>(&h);
}

#endif /* TUNER_DEVICE_CUH */
