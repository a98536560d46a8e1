#!/bin/bash
# Batch 11, on the GPU machine: the bar's five shapes (S >= 2048, D = 64 and 128) with
# scripts/bench_sm90.py's method since this batch (shuffled order, fresh outputs each round),
# each against the same rounds' SDPA. Builds are lines of D BLOCK_N CONSUMERS STAGES PINGPONG
# OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS KSPLIT PDL TAIL_N (flash_fwd_sm90_tail.cu beside
# this script; TAIL_N 0 builds the kernel as the template does without the narrowed last tile),
# checked on ragged shapes and timed at the shapes of their D.
#   OUT=$OUT reports/sm90/h100/batch11-tail/claim.sh
set -u
cd "$(dirname "$0")/../../../.."
HERE=reports/sm90/h100/batch11-tail
DEST=${OUT:-build/claim}
WORK=/tmp/sm90claim
rm -rf "$WORK"; mkdir -p "$WORK/cubin" "$DEST"
start=$(date +%s)
. scripts/sm90_tools.sh
BUILDS=${BUILDS:-"64 128 1 2 0 1 3 0 2 1 1 0 0
64 128 1 2 0 1 3 0 2 1 1 1 0
64 128 3 4 1 1 3 0 1 1 1 0 0
64 128 3 4 1 1 3 0 1 1 1 1 0
128 160 2 2 1 1 1 132 1 1 1 1 0
128 160 2 2 1 1 1 132 1 1 1 1 96
128 160 2 2 1 1 1 132 1 1 1 1 128"}
name() { echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}_ks${11}_pdl${12}_t${13}${14:-}"; }
build() { # D BN C ST PP OV R PE OCC SP KS PDL TAIL [_san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" $HERE/flash_fwd_sm90_tail.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DKSPLIT="${11}" \
		-DPDL="${12}" -DTAIL_N="${13}" -DSTREAMK=0 -DSHAPE_D="$1" \
		-DTUNER_SMEM_BYTES="$(sm90_smem "$@")" ${14:+-DTUNER_SANITIZE} \
		>"$WORK/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build name; export WORK HERE
{ echo "$BUILDS"; echo "$BUILDS" | grep '^128' | sed 's/$/ _san/'; } | xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores\|C75" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"
CHECK64="1,1,1,64 1,2,100,64 1,2,130,64 2,3,257,64 2,8,512,64 2,4,1000,64 3,16,1000,64"
CHECK128="1,1,1,128 1,2,100,128 2,3,257,128 1,2,256,128 2,3,416,128 1,8,512,128 2,4,1000,128
1,8,1376,128 1,2,288,128 2,3,448,128"
TIME64="2,8,2048,64 8,16,2048,64 8,16,4096,64"
TIME128="4,32,2048,128 4,16,4096,128"
run() { # build [_san]
	local n c a rc; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	a="--persistent $8 --splits ${10} --ksplit ${11} --repeat 3"; [ "${12}" = 1 ] && a="$a --pdl"
	timeout 60 build/sm90_dev ${14:+--sanitize} $a "$c" "$2" "$3" "$(sm90_smem "$@")" \
		$([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	rc=$?
	if [ $rc -eq 0 ] && [ $# -lt 14 ]; then
		timeout 90 build/sm90_dev --time $a "$c" "$2" "$3" "$(sm90_smem "$@")" \
			$([ "$1" = 64 ] && echo $TIME64 || echo $TIME128)
		rc=$?
	fi
	[ $rc -eq 0 ] || echo "RC $rc $n"
}
{ echo "$BUILDS"; echo "$BUILDS" | grep '^128' | sed 's/$/ _san/'; } |
	while read -r cfg; do run $cfg; done >"$WORK/results.txt" 2>&1
python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" --every \
	--rounds ${ROUNDS:-13} --json "$WORK/bench.json" >"$WORK/bench.md" 2>&1
batch_summary claim.sh | tee "$WORK/claim.log"
cp "$WORK/claim.log" "$WORK/ptxas.txt" "$WORK/results.txt" "$WORK/bench.json" "$DEST/" 2>/dev/null
