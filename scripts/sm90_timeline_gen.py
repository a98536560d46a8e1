#!/usr/bin/env python3
"""Write scripts/sm90_timeline.patch from kernels/templates/flash_fwd_sm90.cu: the stamps of
scripts/sm90_timeline.sh (thread 0 of each warpgroup stores clock64 at numbered points, globaltimer
at entry, after the PDL wait and at exit; scripts/sm90_timeline.py names the points), placed by
exact text replacements. Run it after every change to the template; a replacement whose text is
gone stops it with that text, so the patch is never stale in silence.

    python3 scripts/sm90_timeline_gen.py    # rewrites scripts/sm90_timeline.patch
"""
import difflib
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TEMPLATE = os.path.join(ROOT, "kernels/templates/flash_fwd_sm90.cu")
PATCH = os.path.join(ROOT, "scripts/sm90_timeline.patch")

orig = open(TEMPLATE).read()
src = orig


def rep(old, new, count=1):
    global src
    n = src.count(old)
    if n != count:
        raise SystemExit("sm90_timeline_gen.py: %d occurrences, not %d, of:\n%s" % (n, count, old))
    src = src.replace(old, new)


rep('extern "C" __global__ void __launch_bounds__(kThreads, OCCUPANCY) SM90_CLUSTER',
'''/* Timeline instrumentation (scripts/sm90_timeline.patch): thread 0 of each warpgroup stamps
 * clock64 since its entry at numbered points; slot 0 = globaltimer at entry, 31 = at exit,
 * 32 = once the grids before have completed (griddepcontrol.wait), 30 = the SM. The first
 * TL_CALLS calls are kept apart, counted per block and warpgroup by an atomic before the
 * block's first barrier (it delays the set-up, not what follows the wait). */
#define TL_CALLS 48
#define TL_BLOCKS 128
#define TL_SLOTS 40
extern "C" {
__device__ unsigned long long tuner_tl[TL_CALLS][TL_BLOCKS][4][TL_SLOTS];
__device__ unsigned tuner_tl_n[TL_BLOCKS][4];
}
__device__ __forceinline__ unsigned long long tl_gtime(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
#define TL(k)                                                                                      \\
	do {                                                                                       \\
		if (tl_on)                                                                         \\
			tuner_tl[tl_call][tl_bid][threadIdx.x / 128][k] = clock64() - tl_t0;                \\
	} while (0)

extern "C" __global__ void __launch_bounds__(kThreads, OCCUPANCY) SM90_CLUSTER''')
rep('''	const int rowblock = (int)blockIdx.x / SPLITS;
''', '''	const int rowblock = (int)blockIdx.x / SPLITS;
	const long long tl_t0 = clock64();
	const unsigned tl_bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned tl_call = 0;
	bool tl_on = threadIdx.x % 128 == 0 && tl_bid < TL_BLOCKS;
	if (tl_on) {
		unsigned smid;
		asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
		tl_call = atomicAdd(&tuner_tl_n[tl_bid][threadIdx.x / 128], 1u);
		tl_on = tl_call < TL_CALLS;
		if (tl_on) {
			tuner_tl[tl_call][tl_bid][threadIdx.x / 128][0] = tl_gtime();
			tuner_tl[tl_call][tl_bid][threadIdx.x / 128][30] = smid;
		}
	}
''')
rep('''	/* PDL: every thread waits here, none spinning on a barrier beside the grid before. */
	if (PDL)
		tuner_pdl_wait();
''', '''	TL(1);
	/* PDL: every thread waits here, none spinning on a barrier beside the grid before. */
	if (PDL)
		tuner_pdl_wait();
	TL(2);
	if (tl_on)
		tuner_tl[tl_call][tl_bid][threadIdx.x / 128][32] = tl_gtime();
''')
rep('''				/*
				 * K of tile j, then V of tile j - OVERLAP''', '''				TL(3);
				/*
				 * K of tile j, then V of tile j - OVERLAP''')
rep('''		if (SPLITS > 1) {
			__syncwarp();
			tuner_cluster_wait();''', '''		TL(4);
		if (SPLITS > 1) {
			__syncwarp();
			tuner_cluster_wait();''')
rep('''					               bar);
					continue;''', '''					               bar);
					TL(33);
					continue;''')
rep('''				tuner_mbar_wait(RECV(cw / KSPLIT), 0);
''', '''				tuner_mbar_wait(RECV(cw / KSPLIT), 0);
				TL(34);
''')
rep('''						o[4 * q + 3] += x.w * w[1];
					}
				}
			}''', '''						o[4 * q + 3] += x.w * w[1];
					}
				}
				TL(35);
			}''')
rep('''				tuner_mbar_wait(bar_q, it & 1);
''', '''				tuner_mbar_wait(bar_q, it & 1);
				TL(5);
''', 2)
# ov1 first tile
rep('''				tuner_mbar_wait(FULL_K(STAGE(gk)), PHASE(gk));
				turn_wait(cw);
				gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(gk) * kKVTile);
				turn_pass(cw, false);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(s);''', '''				tuner_mbar_wait(FULL_K(STAGE(gk)), PHASE(gk));
				TL(6);
				turn_wait(cw);
				gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(gk) * kKVTile);
				turn_pass(cw, false);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(s);
				TL(7);''')
rep('''				pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
				moved = false; /* O is 0: nothing to rescale */''', '''				pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
				TL(8);
				moved = false; /* O is 0: nothing to rescale */''')
# ov1 loop
rep('''					const int g = g0 + j, gp = g - KSPLIT;

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					turn_wait(cw);''', '''					const int g = g0 + j, gp = g - KSPLIT;
					const int ts = 6 + 5 * min((j - kp) / KSPLIT, 3);

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					TL(ts);
					turn_wait(cw);''')
rep('''					tuner_wgmma_wait<1>();
					tuner_reg_fence(s);
					tuner_mbar_arrive(EMPTY_K(STAGE(g)));
					moved = softmax_tile<BLOCK_N>(s, row_max, alpha, sum, scale_log2,
					                     (kb + j) * BLOCK_N, S,
					                     ragged && kb + j == ntiles - 1);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);''', '''					tuner_wgmma_wait<1>();
					tuner_reg_fence(s);
					TL(ts + 1);
					tuner_mbar_arrive(EMPTY_K(STAGE(g)));
					moved = softmax_tile<BLOCK_N>(s, row_max, alpha, sum, scale_log2,
					                     (kb + j) * BLOCK_N, S,
					                     ragged && kb + j == ntiles - 1);
					TL(ts + 2);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);
					TL(ts + 4);''')
rep('''				turn_pass(cw, last_unit);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(o);''', '''				turn_pass(cw, last_unit);
				tuner_wgmma_wait<0>();
				tuner_reg_fence(o);
				TL(25);''')
# ov0 loop
rep('''				for (int j = kp; j < n; j += KSPLIT) {
					const int g = g0 + j;

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(g) * kKVTile);
					turn_pass(cw, false);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(s);''', '''				for (int j = kp; j < n; j += KSPLIT) {
					const int g = g0 + j;
					const int ts = 6 + 5 * min((j - kp) / KSPLIT, 3);

					tuner_mbar_wait(FULL_K(STAGE(g)), PHASE(g));
					TL(ts);
					turn_wait(cw);
					gemm_qk<BLOCK_N>(s, q_tile, base + kKOff + STAGE(g) * kKVTile);
					turn_pass(cw, false);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(s);
					TL(ts + 1);''')
rep('''					rescale_o(o, alpha);
					pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
					tuner_mbar_wait(FULL_V(STAGE(g)), PHASE(g));
					turn_wait(cw);
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(g) * kKVTile);
					turn_pass(cw, last_unit && j == n - 1);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);''', '''					rescale_o(o, alpha);
					pack_p<BLOCK_N>(s, p, row_sum, alpha, sum);
					TL(ts + 2);
					tuner_mbar_wait(FULL_V(STAGE(g)), PHASE(g));
					TL(ts + 3);
					turn_wait(cw);
					gemm_pv<BLOCK_N>(o, p, base + kVOff + STAGE(g) * kKVTile);
					turn_pass(cw, last_unit && j == n - 1);
					tuner_wgmma_wait<0>();
					tuner_reg_fence(o);
					TL(ts + 4);''')
rep('''					tuner_bar_arrive(kMergeBar, 256);
					continue;
				}
				tuner_bar_sync(kMergeBar, 256);
				const float4 ml = tuner_ld(mg + kD / 8 * 128);''', '''					tuner_bar_arrive(kMergeBar, 256);
					TL(26);
					continue;
				}
				tuner_bar_sync(kMergeBar, 256);
				const float4 ml = tuner_ld(mg + kD / 8 * 128);
				TL(26);''')
rep('''			tuner_fence_proxy_async();
			/* With SPLITS only this split's rows of the tile: one box of them. */
			tuner_bar_sync(kEpiBar + cw, kOwnThreads);''', '''			tuner_fence_proxy_async();
			TL(27);
			tuner_bar_sync(kEpiBar + cw, kOwnThreads);
			TL(28);''')
rep('''				if (!PERSISTENT)
					tuner_tma_store_wait_read();
			}
		}''', '''				if (!PERSISTENT)
					tuner_tma_store_wait_read();
			}
			TL(29);
		}''')
rep('''	}
#undef EMPTY_Q''', '''	}
	if (tl_on)
		tuner_tl[tl_call][tl_bid][threadIdx.x / 128][31] = tl_gtime();
#undef EMPTY_Q''')

with open(PATCH, "w") as fh:
    fh.writelines(difflib.unified_diff(orig.splitlines(True), src.splitlines(True),
                                       "orig.cu", "inst.cu"))
