#!/bin/bash
# On the GPU machine, one device call: where the mission shape's (1,8,512,64) time goes. ncu's
# kernel duration (gpu__time_duration: launch overhead excluded) and cycle counts of the sweep's
# per-shape winner at the mission shape and of the best KSPLIT=2 build, to set against the
# per-call time of BENCH.md's graphs (reports/sm90-h100.md: 5.4-5.8 µs) and an empty kernel's
# (scripts/launch_floor.py: 1.2-1.3 µs). As BENCH.md runs it: L2 warm (no cache flush), clocks not
# locked (ncu's defaults would flush the caches and lock the base clock).
#
#   OUT=dir scripts/mission_ncu.sh     # $OUT receives mission_ncu.txt
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/mission_ncu}
mkdir -p "$OUT/cubin"
. scripts/sm90_tools.sh
# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY KSPLIT: the fixture's
# mission winner and batch 6a's best KSPLIT=2 build.
CONFIGS="64 128 1 2 0 1 1 0 1 1
64 128 2 2 0 0 0 0 1 2"
smem() { sm90_smem "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" 1 "${10}"; } # sm90_tools.sh's
echo "$CONFIGS" | while read -r d bn c st pp ov r pe o ks; do
	n=d${d}_bn${bn}_c${c}_s${st}_pp${pp}_ov${ov}_r${r}_pe${pe}_o${o}_ks${ks}
	s=$(smem "$d" "$bn" "$c" "$st" "$pp" "$ov" "$r" "$pe" "$o" "$ks")
	build/nvrtc_compile -o "$OUT/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$bn" -DCONSUMERS="$c" -DSTAGES="$st" -DPINGPONG="$pp" -DOVERLAP="$ov" \
		-DRESCALE="$r" -DPERSISTENT="$pe" -DOCCUPANCY="$o" -DSPLITS=1 -DSTREAMK=0 -DKSPLIT="$ks" \
		-DSHAPE_D="$d" -DTUNER_SMEM_BYTES="$s" >"$OUT/cubin/$n.log" 2>&1 || { echo "BUILD FAILED $n"; continue; }
	echo "== $n at 1,8,512,64"
	timeout 120 ncu --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,launch__grid_size \
		--cache-control none --clock-control none --kernel-name flash_fwd_sm90 --launch-skip 3 --launch-count 2 \
		build/sm90_dev --profile --ksplit "$ks" "$OUT/cubin/$n.cubin" "$bn" "$c" "$s" 1,8,512,64 2>&1 |
		grep -E "gpu__time|sm__cycles|sm__throughput|gmma|dram__bytes|lts__t_bytes|grid_size" | head -24
done | tee "$OUT/mission_ncu.txt"
