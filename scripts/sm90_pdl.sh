#!/bin/bash
# On the GPU machine, one device call: flash_fwd_sm90 with programmatic dependent launch (PDL=1:
# each call triggers the next at entry; the next sets up and fetches its tensor-map descriptors
# while this one runs, and waits before its first load) against the same builds without it
# (PDL=0), for the small-shape winners of reports/sm90-h100.md and the large-shape ones. Builds
# each through NVRTC as tuner does, checks it against the plain reference (small, ragged and
# D=128 shapes, sanitize builds, 3 calls in a row), times it (CUDA events around graphs of 20
# launches, BENCH.md), then puts the best PDL=1 build and the best PDL=0 build of each shape next
# to SDPA flash (FA2) and cuDNN in interleaved rounds (scripts/bench_sm90.py --contest _pdl1).
#
#   scripts/sm90_pdl.sh     # $OUT (default build/sm90_pdl) receives pdl.log, pdl.tgz
#   QUICK=1 scripts/sm90_pdl.sh   # checks only
#   CONTEST=_sp2 scripts/sm90_pdl.sh   # the contest: the fastest named ..._sp2.. against the rest
#   EVERY=1 CONTEST= scripts/sm90_pdl.sh   # every build that passed in the rounds, not two a shape
#   BENCH_SHAPES="4,16,4096,128 ..." scripts/sm90_pdl.sh   # only these shapes in the rounds
#   BF16=1 QUICK=1 scripts/sm90_pdl.sh   # bf16 builds (SM90_BF16, the flash_fwd_sm90_bf16
#                                         # family: sm90_dev --bf16), named ..._bf16
#
# A configuration is D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY
# SPLITS KSPLIT (scripts/sm90_ksplit.sh's), then optionally TAIL_CUT (0 when left out; a build
# with a cut is named ..._tcN_pdlP); each is built with PDL 0 and 1.
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
DEST=${OUT:-build/sm90_pdl}
WORK=/tmp/sm90pdl
rm -rf "$WORK"
mkdir -p "$WORK/cubin" "$DEST" build
export PATH="$CUDA/bin:$PATH"
start=$(date +%s)
log() { echo "== $*"; }

. scripts/sm90_tools.sh

# Small shapes: one consumer (OCCUPANCY 1 and 2), the key split (BLOCK_N 64 and 128, STAGES 2
# and 4, OVERLAP 0 and 1), split-KV across a cluster (SPLITS 2, out of the sidecar's space since
# batch 4: does PDL hide its cluster launch?), the persistent one; large: the D=64 and D=128
# winners of batches 4 and 6. CONFIGS in the environment replaces the list; SANITIZE replaces the
# sanitize builds' list, and SANITIZE="" builds none.
CONFIGS=${CONFIGS:-"64 128 2 2 0 0 0 0 1 1 2
64 128 2 4 0 0 0 0 1 1 2
64 128 2 2 0 1 0 0 1 1 2
64 64 2 4 0 0 0 0 1 1 2
64 128 1 2 0 1 1 0 1 1 1
64 128 1 3 0 1 0 0 2 1 1
64 128 1 2 0 1 1 0 2 1 1
64 128 1 2 0 1 0 0 2 2 1
64 128 1 2 0 1 0 0 1 2 1
64 128 2 2 0 1 0 0 1 2 1
64 128 1 2 0 1 1 132 1 1 1
64 128 3 4 1 1 3 0 1 1 1
128 160 2 2 1 1 3 132 1 1 1
128 128 2 2 1 1 3 132 1 1 1"}
SANITIZE=${SANITIZE-"64 128 2 2 0 0 0 0 1 1 2
64 128 1 2 0 1 0 0 2 2 1
128 128 2 2 1 1 3 132 1 1 1"}

# The configurations in $1, each with its TAIL_CUT (0 where it names none).
rows() { echo "$1" | awk 'NF { if (NF == 11) $12 = 0; print }'; }
name() {
	local tc=""; [ "${12}" = 0 ] || tc=_tc${12}
	echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}_ks${11}${tc}_pdl${13}${BF16:+_bf16}${14:-}"
}
build() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS KSPLIT TAIL_CUT PDL [_san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DKSPLIT="${11}" \
		-DTAIL_CUT="${12}" -DPDL="${13}" -DSTREAMK=0 -DSHAPE_D="$1" \
		-DTUNER_SMEM_BYTES="$(smem "$@")" ${14:+-DTUNER_SANITIZE} ${BF16:+-DSM90_BF16=1} \
		>"$WORK/cubin/$n.log" 2>&1 ||
		echo "BUILD FAILED $n (rc $?)"
}
export -f build smem name
BF16=${BF16:-}
export WORK BF16

log "compile (NVRTC)"
{
	rows "$CONFIGS" | sed 's/$/ 0/'
	rows "$CONFIGS" | sed 's/$/ 1/'
	rows "$SANITIZE" | sed 's/$/ 1 _san/'
} | xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores\|C75" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"

CHECK64="1,1,1,64 1,2,100,64 1,2,130,64 2,3,257,64 1,8,512,64 2,8,512,64 2,4,1000,64 1,8,1024,64
4,8,512,64 3,16,1000,64"
CHECK128="1,1,1,128 1,2,100,128 2,3,257,128 1,8,512,128 2,4,1000,128"
TIME64="1,8,512,64 2,8,512,64 1,8,1024,64 4,8,512,64 2,8,2048,64 8,16,2048,64"
TIME128="1,8,512,128 4,32,2048,128 4,16,4096,128"

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS KSPLIT TAIL_CUT PDL [_san]
	local n c s a check rc; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@") a="--persistent $8 --splits ${10} --ksplit ${11} --repeat 3"
	[ "${13}" = 1 ] && a="$a --pdl"
	[ -n "${BF16:-}" ] && a="$a --bf16"
	check=$([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	timeout 60 build/sm90_dev ${14:+--sanitize} $a "$c" "$2" "$3" "$s" $check
	rc=$?
	if [ $rc -eq 0 ] && [ $# -lt 14 ] && [ -z "${QUICK:-}" ]; then
		timeout 90 build/sm90_dev --time $a "$c" "$2" "$3" "$s" \
			$([ "$1" = 64 ] && echo $TIME64 || echo $TIME128)
		rc=$?
	fi
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check and time"
{ rows "$CONFIGS" | sed 's/$/ 0/'; rows "$CONFIGS" | sed 's/$/ 1/'; } |
	while read -r cfg; do run $cfg; done >"$WORK/results.txt" 2>&1
log "sanitize builds"
rows "$SANITIZE" | while read -r cfg; do run $cfg 1 _san; done >>"$WORK/results.txt" 2>&1
if [ -z "${QUICK:-}" ] && python3 -c 'import torch' 2>/dev/null; then
	python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" \
		${EVERY:+--every} ${BENCH_SHAPES:+--shapes $BENCH_SHAPES} --contest "${CONTEST-_pdl1}" \
		${BF16:+--dtype bf16} \
		--json "$WORK/bench.json" >"$WORK/bench.md" 2>&1
fi

batch_summary sm90_pdl.sh | tee "$WORK/pdl.log"
cp "$WORK/pdl.log" "$DEST/"
(cd /tmp && tar czf "$DEST/pdl.tgz" --exclude='*.cubin' sm90pdl)
