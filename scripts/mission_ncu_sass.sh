#!/bin/bash
# On the GPU machine, one device call: where a flash_fwd_sm90 block's cycles go at the mission
# shape (1,8,512,64), or at SHAPE, instruction by instruction. ncu samples the warps' stall reasons per SASS
# instruction (SourceCounters, WarpStateStats) for each configuration, and the source page is
# written out as CSV for scripts/sass_stalls.py. L2 warm, clocks free, as BENCH.md times.
#
#   OUT=dir scripts/mission_ncu_sass.sh    # $OUT receives NAME.sass.csv and NAME.details.txt
#
# A configuration is D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE KSPLIT PDL [PERSISTENT]
# (CONFIGS replaces the list).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/mission_ncu_sass}
mkdir -p "$OUT/cubin"
. scripts/sm90_tools.sh
CONFIGS=${CONFIGS:-"64 128 2 2 0 0 0 2 1
64 128 2 2 1 1 0 2 1"}
SHAPE=${SHAPE:-1,8,512,64}
echo "$CONFIGS" | while read -r d bn c st pp ov r ks pdl pe; do
	pe=${pe:-0}
	n=d${d}_bn${bn}_c${c}_s${st}_pp${pp}_ov${ov}_r${r}_ks${ks}_pdl${pdl}_pe${pe}
	s=$(smem "$d" "$bn" "$c" "$st" "$pp" "$ov" "$r" "$pe" 1 1 "$ks") # sm90_tools.sh's
	build/nvrtc_compile -o "$OUT/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$bn" -DCONSUMERS="$c" -DSTAGES="$st" -DPINGPONG="$pp" -DOVERLAP="$ov" \
		-DRESCALE="$r" -DPERSISTENT="$pe" -DOCCUPANCY=1 -DSPLITS=1 -DSTREAMK=0 -DKSPLIT="$ks" \
		-DPDL="$pdl" -DSHAPE_D="$d" -DTUNER_SMEM_BYTES="$s" >"$OUT/cubin/$n.log" 2>&1 ||
		{ echo "BUILD FAILED $n"; continue; }
	a="--ksplit $ks --persistent $pe"
	[ "$pdl" = 1 ] && a="$a --pdl"
	echo "== $n at $SHAPE"
	timeout 200 ncu --section SourceCounters --section WarpStateStats --section SchedulerStats \
		--warp-sampling-interval 0 --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
		--cache-control none --clock-control none --kernel-name flash_fwd_sm90 \
		--launch-skip 3 --launch-count 1 -f -o "$OUT/$n" \
		build/sm90_dev --profile $a "$OUT/cubin/$n.cubin" "$bn" "$c" "$s" "$SHAPE" \
		>"$OUT/$n.ncu.log" 2>&1 || { echo "NCU FAILED $n"; tail -5 "$OUT/$n.ncu.log"; continue; }
	ncu --import "$OUT/$n.ncu-rep" --page details >"$OUT/$n.details.txt" 2>&1
	ncu --import "$OUT/$n.ncu-rep" --page source --csv --print-source sass >"$OUT/$n.sass.csv" 2>&1
	grep -E "Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Active Warps Per|gpu__time|per_second|gmma|pipe_xu" \
		"$OUT/$n.details.txt" | head -12
	head -c 600 "$OUT/$n.sass.csv"
	echo
	rm -f "$OUT/$n.ncu-rep"
done
