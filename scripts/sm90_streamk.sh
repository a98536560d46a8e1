#!/bin/bash
# On the GPU machine, one device call (issue 12, batch 6): the stream-K tail of flash_fwd_sm90
# (STREAMK=1) next to the batch-4 winners it extends. Compiles each configuration through NVRTC
# as tuner does (STREAMK 0 and 1 side by side), checks every build against a plain reference on
# shapes with a stream-K tail (ragged S, a tail of fewer iterations than blocks, a tail of whole
# units) and on the timed shapes, 50 calls in a row each (the output poisoned before each call
# and compared on the GPU: a counter or slot left stale by one call shows as wrong output in a
# later one), runs sanitize builds of the STREAMK=1 ones and of a split-KV build (whose merge
# shares lse_fold with stream-K), then times ours interleaved against SDPA's cuDNN and flash
# (FA2) backends with NVML clocks at (4,16,4096,128), (4,32,2048,128), (8,16,2048,64) and
# (2,8,2048,64) (scripts/bench_sm90.py --every). Prints a short report; tars the rest.
#
#   scripts/sm90_streamk.sh     # the device's $OUT receives streamk.log and streamk.tgz
#   QUICK=1 scripts/sm90_streamk.sh   # no timing
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
DEST=${OUT:-build}
WORK=/tmp/sm90sk
rm -rf "$WORK"
mkdir -p "$WORK/cubin" "$DEST" build
export PATH="$CUDA/bin:$PATH"
start=$(date +%s)
log() { echo "== $* ($(($(date +%s) - start)) s)"; }

. scripts/sm90_tools.sh

# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS STREAMK:
# batch 4's winners (d128: BLOCK_N 160 and 128; d64: the two-consumer persistent one and the
# wide winner, pe0 as measured and pe132, the persistent grid stream-K needs), each with
# STREAMK 0 and 1; one split-KV build (its merge now goes through lse_fold), checked only.
CONFIGS="128 160 2 2 1 1 3 132 1 1 0
128 160 2 2 1 1 3 132 1 1 1
128 128 2 2 1 1 3 132 1 1 0
128 128 2 2 1 1 3 132 1 1 1
64 128 2 2 1 1 1 132 1 1 0
64 128 2 2 1 1 1 132 1 1 1
64 128 3 4 1 1 3 0 1 1 0
64 128 3 4 1 1 3 132 1 1 0
64 128 3 4 1 1 3 132 1 1 1"
SPLIT="64 128 1 2 0 1 0 0 2 2 0"
SANITIZE="128 160 2 2 1 1 3 132 1 1 1
128 128 2 2 1 1 3 132 1 1 1
64 128 2 2 1 1 1 132 1 1 1
64 128 3 4 1 1 3 132 1 1 1
$SPLIT"
# Shapes with a tail on a 132-block grid (units of 128 rows; 192 with three consumers):
#  (1,67,256,D): 134 units of two key tiles, a tail of 2 units = 4 iterations over 132 blocks
#    (T < G: blocks without a tail segment between those that have one);
#  (1,133,100,D): a tail of one whole unit (one block takes it: no fix-up);
#  (4,16,1000,D), (2,16,4000,D), (3,11,3333,D): ragged S (rows and keys), many partial segments;
#  (1,8,512,64), (2,8,512,64), (1,1,640,128), (1,2,100,D), (1,1,1,64): no tail (no more units
#    than blocks; the grid is min(PERSISTENT, units)).
CHECK64="1,67,256,64 1,133,100,64 4,16,1000,64 2,16,4000,64 3,11,3333,64 1,8,512,64 2,8,512,64 1,2,100,64 1,1,1,64"
CHECK128="1,67,256,128 1,133,100,128 4,16,1000,128 2,16,4000,128 3,11,3333,128 1,1,640,128 1,2,100,128"
TIME64="8,16,2048,64 2,8,2048,64"
TIME128="4,16,4096,128 4,32,2048,128"

smem() { sm90_smem "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" 1; } # sm90_tools.sh's
name() { echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}_sk${11}${12:-}"; }
build() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS STREAMK [san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DSTREAMK="${11}" \
		-DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$(smem "$@")" ${12:+-DTUNER_SANITIZE} \
		>"$WORK/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build smem name
export WORK

main() {
log "compile (NVRTC)"
{
	echo "$CONFIGS"
	echo "$SPLIT"
	echo "$SANITIZE" | sed 's/$/ _san/'
} | xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"
# Sanitize builds may spill (checking, not timing); the others must not.
grep "spill stores" "$WORK/ptxas.txt" | grep -v "_san.log" | grep -v " 0 bytes spill stores" ||
	echo "no spills (sanitize builds aside)"

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS STREAMK [san]
	local n c s f; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@") f="--persistent $8 --splits ${10} --streamk ${11}"
	local check tshapes
	check=$([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	tshapes=$([ "$1" = 64 ] && echo $TIME64 || echo $TIME128)
	if [ $# -ge 12 ]; then
		timeout 150 build/sm90_dev --sanitize --repeat 5 $f "$c" "$2" "$3" "$s" $check
	elif [ "${10}" -gt 1 ] || [ -n "${QUICK:-}" ]; then
		timeout 150 build/sm90_dev --repeat 50 $f "$c" "$2" "$3" "$s" $check
	else
		timeout 150 build/sm90_dev --repeat 50 $f "$c" "$2" "$3" "$s" $check
		timeout 150 build/sm90_dev --time --repeat 50 $f "$c" "$2" "$3" "$s" $tshapes
	fi
	local rc=$?
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check (50 calls each) and time (CUDA events)"
{
	echo "$CONFIGS"
	echo "$SPLIT"
} | while read -r cfg; do run $cfg; done 2>&1 | tee "$WORK/results.txt"
log "sanitize builds (5 calls each)"
echo "$SANITIZE" | while read -r cfg; do run $cfg _san; done 2>&1 | tee -a "$WORK/results.txt"
log "summary: $(grep -c '^PASS' "$WORK/results.txt") PASS, $(grep -c '^FAIL' "$WORK/results.txt") FAIL, $(grep -c '^RC\|^SKIP\|BUILD FAILED' "$WORK/results.txt") RC/SKIP"

if [ -z "${QUICK:-}" ] && python3 -c 'import torch' 2>/dev/null; then
	log "interleaved with SDPA (cuDNN, flash)"
	python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" --every \
		--shapes 4,16,4096,128 4,32,2048,128 8,16,2048,64 2,8,2048,64 \
		--json "$WORK/bench.json" >"$WORK/bench.md" 2>&1
	echo "bench_sm90.py: rc $?"
fi
log "done"
}

main >"$WORK/streamk.log" 2>&1
# The short report: failures, spills, each build's worst error over its checks (first call and
# the 50 after), its CUDA-event times, and the interleaved tables.
grep -E "^== |^FAIL|^RC |^SKIP|BUILD FAILED|spill stores|^no spills|^bench_sm90" "$WORK/streamk.log" |
	grep -v " 0 bytes spill stores\|_san.log" | cut -c1-240 | head -40
echo
echo "worst error per build over its checks (rel_l2, max_abs of the first call; max_abs and"
echo "non-finite count over the repeats), and CUDA-event median µs at the timed shapes:"
awk '/^(PASS|FAIL) / {
	n = $2; sub(/.*\//, "", n); sub(/\.cubin$/, "", n)
	for (i = 1; i <= NF; i++) {
		if ($i == "rel_l2" && $(i + 1) > rel[n]) rel[n] = $(i + 1)
		if ($i == "max_abs" && $(i - 2) != "repeat" && $(i + 1) > mx[n]) mx[n] = $(i + 1)
		if ($i == "repeat") { if ($(i + 3) > rmx[n]) rmx[n] = $(i + 3); rnf[n] += $(i + 5) }
		if ($i == "median_us") { sh = $3; sub(/^B,H,S,D=/, "", sh); us[n] = us[n] " (" sh ") " $(i + 1) }
	}
	if ($1 == "FAIL") bad[n]++
	seen[n] = 1
}
END { for (n in seen) printf "  %-48s rel %.3g max %.3g rep_max %.3g rep_nonfinite %d fails %d%s\n",
	n, rel[n], mx[n], rmx[n], rnf[n], bad[n], us[n] }' "$WORK/results.txt" | sort
echo
[ -f "$WORK/bench.md" ] && cat "$WORK/bench.md"
cp "$WORK/streamk.log" "$DEST/"
(cd /tmp && tar czf "$DEST/streamk.tgz" --exclude='*.cubin' sm90sk)
