#!/bin/bash
# Batch 11, on the GPU machine: the bar's five shapes (S >= 2048, D = 64 and 128) with
# scripts/bench_sm90.py's method since this batch (shuffled order, fresh outputs each round),
# each against the same rounds' SDPA. Builds are lines of D BLOCK_N CONSUMERS STAGES PINGPONG
# OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS KSPLIT PDL TAIL_N, checked on ragged shapes and
# timed at the shapes of their D. TAIL_N is the narrowed last tile's width (0: not narrowed):
# the template's TAIL_CUT = BLOCK_N - TAIL_N. (Run 4 built a copy of the template that took
# TAIL_N itself; without -lineinfo that copy and the template compile to byte-identical cubins
# at 9 configurations, sanitize builds aside, which differ in 294 of 94776 bytes.)
#   OUT=$OUT reports/sm90/h100/batch11-tail/claim.sh
# Environment: BUILDS (the lines), SHAPES (the contest's, default all timed), ROUNDS (13),
# METHODS ("new": bench_sm90.py's default; "old": --order rotate --no-fresh; "new old": both),
# TAIL_P=own (runs 2 and 3: the narrowed tile's P in an array of its own, not in p's first rows).
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
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" "$WORK/flash_fwd_sm90.cu" \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DKSPLIT="${11}" \
		-DPDL="${12}" -DTAIL_CUT=$((${13} ? $2 - ${13} : 0)) -DSTREAMK=0 -DSHAPE_D="$1" \
		-DTUNER_SMEM_BYTES="$(sm90_smem "$@")" ${14:+-DTUNER_SANITIZE} \
		>"$WORK/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
# the template, or (TAIL_P=own) runs 2 and 3's variant of it; kernels/include stays on -I
if [ "${TAIL_P:-}" = own ]; then
	sed 's|^\t\tunsigned(&pt)\[kTailW / 16\]\[4\] = .*$|\t\tunsigned pt[kTailW / 16][4];|' \
		kernels/templates/flash_fwd_sm90.cu >"$WORK/flash_fwd_sm90.cu"
	grep -q '^		unsigned pt\[kTailW / 16\]\[4\];$' "$WORK/flash_fwd_sm90.cu" || { echo "TAIL_P=own: no p alias to replace"; exit 1; }
else
	cp kernels/templates/flash_fwd_sm90.cu "$WORK/"
fi
export -f build name; export WORK
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
for m in ${METHODS:-new}; do
	python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" --every \
		${SHAPES:+--shapes $SHAPES} --rounds ${ROUNDS:-13} --json "$WORK/bench-$m.json" \
		$([ $m = old ] && echo --order rotate --no-fresh) >"$WORK/bench-$m.md" 2>&1
done
batch_summary claim.sh | tee "$WORK/claim.log"
for m in ${METHODS:-new}; do echo "## method $m"; cat "$WORK/bench-$m.md"; done | tee -a "$WORK/claim.log"
cp "$WORK/claim.log" "$WORK/ptxas.txt" "$WORK/results.txt" "$WORK"/bench-*.json "$DEST/" 2>/dev/null
