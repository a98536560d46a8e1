#!/bin/bash
# On the GPU machine, one device call: where the life of a flash_fwd_sm90 block goes at small
# shapes. Builds a copy of the template patched by scripts/sm90_timeline.patch (thread 0 of every
# warpgroup stamps clock64 at the barriers of the key loop and the epilogue, globaltimer at entry
# and exit), checks and times each configuration with sm90_dev --time --timeline, and summarises
# the stamps of the last timed call (scripts/sm90_timeline.py). The same builds without the patch
# are checked (ragged shapes, 3 calls in a row, and a sanitize build) and timed beside them, so
# the cost of the stamps shows; BASELINE_SRC names another copy of the template (an earlier
# version) whose builds are checked and timed first, as "base".
#
#   OUT=$OUT scripts/sm90_timeline.sh    # $OUT (default build/sm90_timeline) gets timeline.log
#
# A configuration is D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY
# SPLITS KSPLIT PDL EXP_POLY (the order of scripts/sm90_pdl.sh, then EXP_POLY); CONFIGS, SHAPES
# and SHAPES128 replace the lists. Each build's count of SFU exponentials (MUFU.EX2 in its SASS)
# is printed. After a change to the template, python3 scripts/sm90_timeline_gen.py rewrites the patch.
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
DEST=${OUT:-build/sm90_timeline}
WORK=/tmp/sm90tl
rm -rf "$WORK"
mkdir -p "$WORK/cubin" "$WORK/src" "$DEST"
export PATH="$CUDA/bin:$PATH"
. scripts/sm90_tools.sh

cp kernels/templates/flash_fwd_sm90.cu "$WORK/src/"
STAMPED=stamped
patch -s "$WORK/src/flash_fwd_sm90.cu" scripts/sm90_timeline.patch ||
	{ echo "the timeline patch does not apply: no stamped builds"; STAMPED=; }

CONFIGS=${CONFIGS:-"64 128 2 2 0 0 0 0 1 1 2 1 0
64 128 2 4 0 0 0 0 1 1 2 1 0
64 128 2 2 0 0 0 0 1 1 2 1 2
64 128 2 2 1 1 0 0 1 1 2 1 0
64 128 2 2 1 1 0 0 1 1 2 1 2
64 64 2 4 1 1 1 0 1 1 2 1 0
128 128 2 2 0 0 0 0 1 1 2 1 0
128 64 2 4 1 1 3 0 1 1 2 1 0
64 128 1 2 0 1 1 0 2 1 1 1 0"}
SHAPES=${SHAPES:-"1,8,512,64 2,8,512,64 4,8,512,64 1,8,1024,64"}
SHAPES128=${SHAPES128:-"1,8,512,128 2,8,1024,128"}
CHECK="1,1,1,64 1,2,100,64 2,3,257,64 1,2,384,64 1,2,640,64 1,8,512,64 2,4,1000,64"
CHECK128="1,1,1,128 1,2,100,128 2,3,257,128 1,2,640,128 1,8,512,128 2,4,1000,128"

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS KSPLIT PDL EXP_POLY
	local n a s
	n="d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_o$9_sp${10}_ks${11}_pdl${12}_e${13}" s=$(smem "$@")
	a="--persistent $8 --splits ${10} --ksplit ${11}"
	[ "${12}" = 1 ] && a="$a --pdl"
	local check=$CHECK shapes=$SHAPES
	[ "$1" = 128 ] && check=$CHECK128 shapes=$SHAPES128
	local vs="plain $STAMPED san"
	[ -n "${BASELINE_SRC:-}" ] && [ "${13}" = 0 ] && vs="base $vs"
	for v in $vs; do
		local src=kernels/templates/flash_fwd_sm90.cu
		[ $v = stamped ] && src="$WORK/src/flash_fwd_sm90.cu"
		[ $v = base ] && src=$BASELINE_SRC
		local opt=""
		[ $v = san ] && opt=-DTUNER_SANITIZE
		build/nvrtc_compile -o "$WORK/cubin/${n}_$v.cubin" "$src" --gpu-architecture=sm_90a \
			-std=c++17 -Xptxas=-v -I kernels/include -DBLOCK_N="$2" -DCONSUMERS="$3" \
			-DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" -DRESCALE="$7" -DPERSISTENT="$8" \
			-DOCCUPANCY="$9" -DSPLITS="${10}" -DKSPLIT="${11}" -DPDL="${12}" -DEXP_POLY="${13}" \
			-DSTREAMK=0 \
			-DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$s" $opt >"$WORK/cubin/${n}_$v.log" 2>&1 ||
			{ echo "BUILD FAILED ${n}_$v"; continue; }
		grep -h "Used\|spill stores" "$WORK/cubin/${n}_$v.log" | sed "s/^/${n}_$v: /"
		echo "${n}_$v: MUFU.EX2 $(cuobjdump -sass "$WORK/cubin/${n}_$v.cubin" | grep -c MUFU.EX2)"
		timeout 60 build/sm90_dev --repeat 3 ${opt:+--sanitize} $a "$WORK/cubin/${n}_$v.cubin" \
			"$2" "$3" "$s" $check || { echo "CHECK FAILED ${n}_$v"; continue; }
		[ $v = san ] && continue
		local tl=""
		[ $v = stamped ] && tl="--timeline $WORK/$n"
		timeout 60 build/sm90_dev --time $tl $a "$WORK/cubin/${n}_$v.cubin" "$2" "$3" "$s" $shapes
	done
	for sh in $shapes; do
		f="$WORK/$n.$(echo "$sh" | tr , _).bin"
		[ -f "$f" ] && python3 scripts/sm90_timeline.py "$f"
	done
}
echo "$CONFIGS" | while read -r cfg; do run $cfg; done 2>&1 | tee "$WORK/timeline.log"
cp "$WORK/timeline.log" "$DEST/"
