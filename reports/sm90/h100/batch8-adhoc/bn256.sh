#!/bin/bash
# Run from a directory one level below the repository root (it was wip/): bash wip/bn256.sh; its output,
# printed to the device call, is bn256.out beside it (commit a7abcc0's template).
# Ad hoc (batch 8): BLOCK_N = 256 (and 192) against 128 at the small shapes, PDL on.
cd "$(dirname "$0")/.."
. scripts/sm90_tools.sh
W=/tmp/sktry; mkdir -p $W
smem() { echo $((1024 + (64 * $3 / ${11} * (1 + ($8 > 0)) + 2 * $4 * $2) * $1 * 2 + (${11} > 1 ? ($1 / 8 + 1) * 2048 : 0) + 8 * (2 + 4 * $4))); }
# D BN C ST PP OV R PE OCC SPLITS KSPLIT STREAMK
while read -r d bn c st pp ov r pe o sp ks sk; do
	n=d${d}_bn${bn}_c${c}_s${st}_pp${pp}_ov${ov}_r${r}_pe${pe}_o${o}_sp${sp}_ks${ks}_sk${sk}
	s=$(smem $d $bn $c $st $pp $ov $r $pe $o $sp $ks)
	build/nvrtc_compile -o $W/$n.cubin kernels/templates/flash_fwd_sm90.cu --gpu-architecture=sm_90a -std=c++17 -I kernels/include \
		-DBLOCK_N=$bn -DCONSUMERS=$c -DSTAGES=$st -DPINGPONG=$pp -DOVERLAP=$ov -DRESCALE=$r -DPERSISTENT=$pe -DOCCUPANCY=$o \
		-DSPLITS=$sp -DKSPLIT=$ks -DSTREAMK=$sk -DPDL=1 -DSHAPE_D=$d -DTUNER_SMEM_BYTES=$s -Xptxas=-v > $W/$n.log 2>&1 || { echo BUILD FAILED $n; cat $W/$n.log | head -3; continue; }
	grep -h "spill stores" $W/$n.log | grep -v " 0 bytes spill stores" | sed "s/^/$n: /"
	a="--pdl --persistent $pe --splits $sp --ksplit $ks --streamk $sk"
	build/sm90_dev --repeat 3 $a $W/$n.cubin $bn $c $s 1,1,1,64 1,2,100,64 2,3,257,64 1,8,512,64 2,4,1000,64 | grep -v ^PASS
	build/sm90_dev --time $a $W/$n.cubin $bn $c $s 1,8,512,64 2,8,512,64 1,8,1024,64 | grep median | sed "s|.*cubin|$n|; s/rel_l2.*median_us/us/"
done <<'CFG'
64 128 2 2 0 0 0 0 1 1 2 0
64 256 2 2 0 0 0 0 1 1 2 0
64 256 2 2 0 1 0 0 1 1 2 0
64 256 2 2 1 1 0 0 1 1 2 0
64 192 2 2 0 0 0 0 1 1 2 0
64 256 1 2 0 0 0 0 1 1 1 0
64 256 1 2 0 1 1 0 1 1 1 0
64 256 2 2 1 1 1 0 1 1 1 0
CFG
