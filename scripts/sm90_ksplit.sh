#!/bin/bash
# On the GPU machine, one device call: flash_fwd_sm90's key split inside the block (KSPLIT=2: two
# consumers on one 64-row Q tile, alternate key tiles, merged in shared memory) next to the
# small-shape winners of reports/sm90-h100.md. Builds each configuration through NVRTC as tuner
# does, checks it against the plain reference (the mission and small shapes, ragged S = 100, 130,
# 257, 1000, S <= BLOCK_N where consumer 1 has no key tile, D=128, three sanitize builds), times it
# (CUDA events, BENCH.md's graphs of 20) at the four small shapes, then puts the best KSPLIT=2 build
# and the best of the rest next to SDPA flash (FA2) and cuDNN in interleaved rounds
# (scripts/bench_sm90.py --contest _ks2). Prints a short table; the rest is tarred.
#
#   scripts/sm90_ksplit.sh     # $OUT (default build/sm90_ksplit) receives ksplit.log, ksplit.tgz
#   QUICK=1 scripts/sm90_ksplit.sh   # checks only
#
# A configuration is D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY
# SPLITS KSPLIT (scripts/sm90_dev.sh's, KSPLIT added).
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
DEST=${OUT:-build/sm90_ksplit}
WORK=/tmp/sm90ksplit
rm -rf "$WORK"
mkdir -p "$WORK/cubin" "$DEST" build
export PATH="$CUDA/bin:$PATH"
start=$(date +%s)
log() { echo "== $*"; }

. scripts/sm90_tools.sh

# KSPLIT=2 (D=64): BLOCK_N 64 and 128, STAGES 2 and 4 (an odd ring is refused: a stage would be
# both consumers'), OVERLAP 0 and 1, and the two other RESCALE places at the mission's likely
# best; two D=128 builds, checked only. Then the small-shape winners (KSPLIT=1): one consumer at
# OCCUPANCY 1 and 2, the persistent one, and two unsplit consumers (the same warpgroups as
# KSPLIT=2, 128 rows a block).
CONFIGS="64 128 2 2 0 1 0 0 1 1 2
64 128 2 4 0 1 0 0 1 1 2
64 128 2 2 0 0 0 0 1 1 2
64 128 2 4 0 0 0 0 1 1 2
64 64 2 2 0 1 0 0 1 1 2
64 64 2 4 0 1 0 0 1 1 2
64 64 2 2 0 0 0 0 1 1 2
64 64 2 4 0 0 0 0 1 1 2
64 128 2 2 0 1 1 0 1 1 2
64 128 2 2 0 1 3 0 1 1 2
128 128 2 2 0 1 0 0 1 1 2
128 64 2 4 0 0 0 0 1 1 2
64 128 1 2 0 1 0 0 1 1 1
64 128 1 2 0 1 1 132 1 1 1
64 128 1 3 0 1 0 0 2 1 1
64 128 1 2 0 1 1 0 2 1 1
64 128 1 2 0 1 3 0 2 1 1
64 128 2 2 0 1 0 0 1 1 1"
SANITIZE="64 128 2 2 0 1 0 0 1 1 2
64 64 2 4 0 0 0 0 1 1 2
128 128 2 2 0 1 3 0 1 1 2"

name() { echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}_ks${11}${12:-}"; }
build() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS KSPLIT [_san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DKSPLIT="${11}" -DSTREAMK=0 \
		-DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$(smem "$@")" ${12:+-DTUNER_SANITIZE} \
		>"$WORK/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build smem name
export WORK

log "compile (NVRTC)"
{
	echo "$CONFIGS"
	echo "$SANITIZE" | sed 's/$/ _san/'
} | xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores\|C75" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"
if command -v cuobjdump >/dev/null; then
	for n in d64_bn128_c2_s2_pp0_ov1_r0_pe0_o1_sp1_ks2 d64_bn128_c2_s2_pp0_ov1_r0_pe0_o1_sp1_ks1; do
		cuobjdump -sass "$WORK/cubin/$n.cubin" >"$WORK/cubin/$n.sass" 2>&1
		printf '%s:' "$n"
		for op in HGMMA UTMALDG UTMASTG SYNCS MUFU.EX2 BAR LDS STS LDL STL; do
			printf ' %s=%s' "$op" "$(grep -c "$op" "$WORK/cubin/$n.sass")"
		done
		echo
	done
fi

# S <= BLOCK_N (1, 64, and 128 at BLOCK_N 128): consumer 1 gets no key tile. The masked last
# tile is consumer 1's at S = 100 (BLOCK_N 64) and 130 (128), consumer 0's at 130 (64) and 257.
CHECK64="1,1,1,64 1,2,64,64 2,2,128,64 1,2,100,64 1,2,130,64 2,3,257,64 1,8,512,64 2,8,512,64
2,4,1000,64 1,8,1024,64 4,8,512,64 3,16,1000,64"
CHECK128="1,1,1,128 1,2,64,128 2,2,128,128 1,2,100,128 1,2,130,128 2,3,257,128 1,8,512,128
2,4,1000,128"
TIME64="1,8,512,64 2,8,512,64 1,8,1024,64 4,8,512,64"

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS KSPLIT [_san]
	local n c s a check rc; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@") a="--persistent $8 --splits ${10} --ksplit ${11}"
	check=$([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	timeout 60 build/sm90_dev ${12:+--sanitize} $a "$c" "$2" "$3" "$s" $check
	rc=$?
	if [ $rc -eq 0 ] && [ $# -lt 12 ] && [ -z "${QUICK:-}" ] && [ "$1" = 64 ]; then
		timeout 60 build/sm90_dev --time $a "$c" "$2" "$3" "$s" $TIME64
		rc=$?
	fi
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check and time"
echo "$CONFIGS" | while read -r cfg; do run $cfg; done >"$WORK/results.txt" 2>&1
log "sanitize builds"
echo "$SANITIZE" | while read -r cfg; do run $cfg _san; done >>"$WORK/results.txt" 2>&1
if [ -z "${QUICK:-}" ] && python3 -c 'import torch' 2>/dev/null; then
	python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" \
		--contest _ks2 --json "$WORK/bench.json" >"$WORK/bench.md" 2>&1
fi

batch_summary sm90_ksplit.sh | tee "$WORK/ksplit.log"
cp "$WORK/ksplit.log" "$DEST/"
(cd /tmp && tar czf "$DEST/ksplit.tgz" --exclude='*.cubin' sm90ksplit)
