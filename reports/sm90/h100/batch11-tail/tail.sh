#!/bin/bash
# Batch 11, on the GPU machine: the D=128 winners with the last key tile's GEMMs narrowed to
# its keys (TAIL_N, flash_fwd_sm90_tail.cu beside this script: S and P of the last tile TAIL_N
# wide when its keys fit and it is not the first; the first run's flash_fwd_sm90_tail_static.cu
# peeled it always, right only at one tail) against the same builds without (TAIL_N 0; TAIL_N
# 00 is a second build of TAIL_N 0 under another name: a control of the method's noise). Every
# build is checked on ragged shapes and timed at both large D=128 shapes, then every build that
# passed goes into BENCH.md's interleaved rounds with SDPA (scripts/bench_sm90.py --every).
#   OUT=$OUT reports/sm90/h100/batch11-tail/tail.sh
set -u
cd "$(dirname "$0")/../../../.."
HERE=reports/sm90/h100/batch11-tail
DEST=${OUT:-build/tail}
WORK=/tmp/sm90tail
rm -rf "$WORK"; mkdir -p "$WORK/cubin" "$DEST"
start=$(date +%s)
. scripts/sm90_tools.sh
CONFIGS=${CONFIGS:-"128 160 2 2 1 1 3 0 1 1 1 1"}
TAILS=${TAILS:-"0 00 96 128"}
# and these with TAIL_N 0 and 96 only (batch 9's best at both shapes: TAIL_N 128 spills)
BASE_ONLY=${BASE_ONLY:-"128 160 2 2 1 1 1 132 1 1 1 1"}
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
{ for t in $TAILS; do echo "$CONFIGS" | sed "s/\$/ $t/"; echo "$CONFIGS" | head -1 | sed "s/\$/ $t _san/"; done
  echo "$BASE_ONLY" | sed "s/\$/ 0/"; echo "$BASE_ONLY" | sed "s/\$/ 96/"; } |
	xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores\|C75" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"
CHECK="1,1,1,128 1,2,100,128 2,3,257,128 1,2,256,128 2,3,416,128 1,8,512,128 2,4,1000,128
1,8,1376,128 1,2,288,128 2,3,448,128"
check_of() { echo $CHECK; }
time_of() { echo "4,32,2048,128 4,16,4096,128"; }
run() { # config TAIL [_san]
	local n c a rc; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	a="--persistent $8 --splits ${10} --ksplit ${11} --repeat 3"; [ "${12}" = 1 ] && a="$a --pdl"
	timeout 60 build/sm90_dev ${14:+--sanitize} $a "$c" "$2" "$3" "$(sm90_smem "$@")" $(check_of "${13}")
	rc=$?
	if [ $rc -eq 0 ] && [ $# -lt 14 ]; then
		timeout 90 build/sm90_dev --time $a "$c" "$2" "$3" "$(sm90_smem "$@")" $(time_of "${13}")
		rc=$?
	fi
	[ $rc -eq 0 ] || echo "RC $rc $n"
}
{ for t in $TAILS; do echo "$CONFIGS" | sed "s/\$/ $t/"; done; echo "$BASE_ONLY" | sed "s/\$/ 0/"
  echo "$BASE_ONLY" | sed "s/\$/ 96/"; } | while read -r cfg; do run $cfg; done >"$WORK/results.txt" 2>&1
for t in $TAILS; do echo "$CONFIGS" | head -1 | sed "s/\$/ $t _san/"; done | while read -r cfg; do run $cfg; done >>"$WORK/results.txt" 2>&1
# METHODS: "new" (bench_sm90.py's default since batch 11: shuffled order, fresh outputs each
# round) and/or "old" (--order rotate --no-fresh, the method of batches 1-10)
for m in ${METHODS:-new}; do
	python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" --every \
		--shapes 4,16,4096,128 4,32,2048,128 --rounds ${ROUNDS:-13} --json "$WORK/bench-$m.json" \
		$([ $m = old ] && echo --order rotate --no-fresh) >"$WORK/bench-$m.md" 2>&1
done
batch_summary tail.sh | tee "$WORK/tail.log"
for m in ${METHODS:-new}; do echo "## method $m"; cat "$WORK/bench-$m.md"; done | tee -a "$WORK/tail.log"
cp "$WORK/tail.log" "$WORK/ptxas.txt" "$WORK/results.txt" "$WORK"/bench-*.json "$DEST/" 2>/dev/null
