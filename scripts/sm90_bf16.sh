#!/bin/bash
# On the GPU machine, one device call (issue 12, item 1's bf16): flash_fwd_sm90 over bf16 tensors
# (SM90_BF16, the flash_fwd_sm90_bf16 family). Compiles the fp16 winners' configurations of
# reports/sm90-h100.md through NVRTC as tuner does, each in bf16 and in fp16, checks every bf16
# build against a plain fp32 reference over the same bf16 inputs (the suite shapes, ragged S =
# 100, 130, 257, 1000, D = 128; attention_tma_bf16.yaml's tolerances), runs two bf16 sanitize
# builds, then times the bf16 builds interleaved against SDPA in bf16 (flash and cuDNN) at
# (1,8,512,64), (2,8,2048,64), (8,16,2048,64), (4,32,2048,128) and (4,16,4096,128), each build's
# fp16 twin in the same rounds (scripts/bench_sm90.py --dtype bf16 --every: "f16 / bf16" is the
# fp16 twin's time over the bf16 build's). Last, the tuner's own job over the bf16 family
# (configs/h100-sm90-bf16.yaml, 3 generations: its gates, correctness checks and sanitize run on
# the GPU) with the static tuner the lead built from this branch, and its top 3.
#
#   OUT=... scripts/sm90_bf16.sh      # $OUT receives bf16.log, bf16.db, bench.md/json, bf16.tgz
#   QUICK=1 scripts/sm90_bf16.sh      # no timing, no tuner run
#   CONFIGS="..." SANITIZE="..."      # replace the lists below
#   TUNER=build-static/tuner          # the tuner binary (default)
#
# Prediction (written before the run): bf16 / fp16 time 1.00 (0.98-1.02) at every shape and
# configuration. The tensor cores run wgmma .bf16 at the .f16 rate, the bytes moved are the same,
# and the instruction stream differs only in the packing (F2FP.BF16 for F2FP.F16, same count and
# throughput). So bf16 against SDPA bf16 should repeat fp16 against SDPA fp16: about 1.6x cuDNN at
# the mission shape, 0.96-1.05x at the large ones (cuDNN's and FA2's bf16 paths also run at their
# fp16 speed).
set -u
cd "$(dirname "$0")/.." || exit 1
CUDA=${CUDA_HOME:-/usr/local/cuda}
DEST=${OUT:-build/sm90_bf16}
TUNER=${TUNER:-build-static/tuner}
WORK=/tmp/sm90bf16
rm -rf "$WORK"
mkdir -p "$WORK/cubin" "$DEST" build
export PATH="$CUDA/bin:$PATH"
start=$(date +%s)
log() { echo "== $* ($(($(date +%s) - start)) s)"; }

. scripts/sm90_tools.sh

# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS STREAMK KSPLIT:
# the fp16 winners of reports/sm90-h100.md (batch 4's per-shape ones, batch 6's D=128 BLOCK_N=160
# one and its mission KSPLIT=2 one, and the tuner sweep's geometric-mean best at each D).
CONFIGS=${CONFIGS:-"64 128 1 3 0 1 0 0 2 1 0 1
64 128 1 2 0 1 1 0 2 1 0 1
64 128 1 2 0 1 3 0 2 1 0 1
64 128 3 4 1 1 3 0 1 1 0 1
64 128 2 2 1 1 0 132 1 1 0 1
64 128 2 2 0 0 0 0 1 1 0 2
128 160 2 2 1 1 3 132 1 1 0 1
128 128 2 2 1 1 3 132 1 1 0 1
128 128 2 2 1 1 0 132 1 1 0 1"}
SANITIZE=${SANITIZE:-"128 160 2 2 1 1 3 132 1 1 0 1
64 128 2 2 0 0 0 0 1 1 0 2"}
# The suite shapes of the D, ragged S, and more row blocks than a persistent grid has blocks.
CHECK64="1,8,512,64 2,8,512,64 2,8,2048,64 8,16,2048,64 1,2,100,64 1,2,130,64 2,3,257,64 2,4,1000,64 3,16,1000,64 1,1,1,64"
CHECK128="4,16,4096,128 4,32,2048,128 1,2,100,128 1,2,130,128 2,3,257,128 2,4,1000,128 3,16,1000,128 1,1,1,128"
SAN64="1,8,512,64 1,2,100,64 1,2,130,64 2,3,257,64 2,4,1000,64 3,16,1000,64"
SAN128="1,2,100,128 1,2,130,128 2,3,257,128 2,4,1000,128 3,16,1000,128 1,16,2048,128"
TIME64="1,8,512,64 2,8,2048,64 8,16,2048,64"
TIME128="4,32,2048,128 4,16,4096,128"

# The sidecar's smem_bytes (sm90_tools.sh's, which takes no STREAMK).
smem() { sm90_smem "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" "${12}"; }
# A build's name: ..._bf16 for SM90_BF16 (what bench_sm90.py reads), _san before it.
name() {
	echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}_sk${11}_ks${12}${14:-}$([ "${13}" = bf16 ] && echo _bf16)"
}
build() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS STREAMK KSPLIT f16|bf16 [_san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$WORK/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DSTREAMK="${11}" \
		-DKSPLIT="${12}" -DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$(smem "$@")" \
		$([ "${13}" = bf16 ] && echo -DSM90_BF16=1) ${14:+-DTUNER_SANITIZE} \
		>"$WORK/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build smem name
export WORK

main() {
log "compile (NVRTC)"
{
	echo "$CONFIGS" | sed 's/$/ bf16/'
	echo "$CONFIGS" | sed 's/$/ f16/'
	echo "$SANITIZE" | sed 's/$/ bf16 _san/'
} | xargs -P 16 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores" "$WORK"/cubin/*.log | sed 's|.*/||' | sort >"$WORK/ptxas.txt"
grep "spill stores" "$WORK/ptxas.txt" | grep -v "_san" | grep -v " 0 bytes spill stores" ||
	echo "no spills (sanitize builds aside)"
echo "registers (bf16 | fp16):"
echo "$CONFIGS" | while read -r cfg; do
	b=$(name $cfg bf16) h=$(name $cfg f16)
	echo "  $b $(grep -h -o 'Used [0-9]* registers' "$WORK/cubin/$b.log") | $(grep -h -o 'Used [0-9]* registers' "$WORK/cubin/$h.log")"
done
if command -v cuobjdump >/dev/null; then
	echo "SASS (bf16 | fp16): HGMMA and its types, F2FP packs"
	echo "$CONFIGS" | sed -n '1p;$p' | while read -r cfg; do
		for t in bf16 f16; do
			n=$(name $cfg $t)
			cuobjdump -sass "$WORK/cubin/$n.cubin" >"$WORK/cubin/$n.sass" 2>&1
			printf '  %s: %s\n' "$n" "$(grep -o 'HGMMA\.[A-Z0-9x.]*\|F2FP\.[A-Z0-9_.]*' \
				"$WORK/cubin/$n.sass" | sort | uniq -c | tr -s ' \n' ' ')"
		done
	done
fi

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS STREAMK KSPLIT f16|bf16 [_san]
	local n c s f; n=$(name "$@"); c="$WORK/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@") f="--persistent $8 --splits ${10} --streamk ${11} --ksplit ${12}"
	[ "${13}" = bf16 ] && f="$f --bf16"
	if [ $# -ge 14 ]; then
		timeout 150 build/sm90_dev --sanitize $f "$c" "$2" "$3" "$s" \
			$([ "$1" = 64 ] && echo $SAN64 || echo $SAN128)
	elif [ "${13}" = f16 ]; then # the fp16 twin: checked and timed where the bench times it
		timeout 150 build/sm90_dev $([ -z "${QUICK:-}" ] && echo --time) $f "$c" "$2" "$3" "$s" \
			$([ "$1" = 64 ] && echo $TIME64 || echo $TIME128)
	else
		timeout 150 build/sm90_dev $([ -z "${QUICK:-}" ] && echo --time) $f "$c" "$2" "$3" "$s" \
			$([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	fi
	local rc=$?
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check and time (CUDA events): bf16 builds on every check shape, fp16 twins on the timed ones"
{
	echo "$CONFIGS" | sed 's/$/ bf16/'
	echo "$CONFIGS" | sed 's/$/ f16/'
} | while read -r cfg; do run $cfg; done 2>&1 | tee "$WORK/results.txt"
log "bf16 sanitize builds"
echo "$SANITIZE" | while read -r cfg; do run $cfg bf16 _san; done 2>&1 | tee -a "$WORK/results.txt"
log "summary: $(grep -c '^PASS' "$WORK/results.txt") PASS, $(grep -c '^FAIL' "$WORK/results.txt") FAIL, $(grep -c '^RC\|^SKIP\|BUILD FAILED' "$WORK/results.txt") RC/SKIP"

if [ -z "${QUICK:-}" ] && python3 -c 'import torch' 2>/dev/null; then
	log "interleaved with SDPA bf16 (cuDNN, flash), the fp16 twins in the same rounds"
	timeout 240 python3 scripts/bench_sm90.py --results "$WORK/results.txt" --cubins "$WORK/cubin" \
		--dtype bf16 --every --shapes $TIME64 $TIME128 --rounds 9 --samples 10 \
		--json "$WORK/bench.json" >"$WORK/bench.md" 2>&1
	echo "bench_sm90.py: rc $?"
fi
if [ -z "${QUICK:-}" ] && [ -x "$TUNER" ]; then
	log "the tuner over the bf16 family: $TUNER run --generations 3"
	rm -f "$DEST/bf16.db"
	TUNER_CACHE=$WORK/tcache timeout 200 "$TUNER" --db "$DEST/bf16.db" \
		--config configs/h100-sm90-bf16.yaml run --generations 3 >"$WORK/tuner-run.log" 2>&1
	echo "tuner run: rc $?"
	tail -12 "$WORK/tuner-run.log"
	"$TUNER" --db "$DEST/bf16.db" top --k 3 >"$WORK/tuner-top.txt" 2>&1
	echo "tuner top: rc $?"
elif [ -z "${QUICK:-}" ]; then
	echo "no tuner at $TUNER: the tuner run skipped"
fi
log "done"
}

main >"$WORK/bf16.log" 2>&1
# The short report: failures, spills, registers, SASS, each bf16 build's worst error over its
# checks and CUDA-event times, the interleaved tables and the tuner's top 3.
grep -E "^== |^FAIL|^RC |^SKIP|BUILD FAILED|spill stores|^no spills|^registers|^  d|^SASS|^bench_sm90|^tuner" \
	"$WORK/bf16.log" | grep -v " 0 bytes spill stores\|_san.log" | cut -c1-240 | head -60
echo
echo "worst error per build over its checks (rel_l2, max_abs), CUDA-event median µs at the timed shapes:"
awk '/^(PASS|FAIL) / {
	n = $2; sub(/.*\//, "", n); sub(/\.cubin$/, "", n)
	for (i = 1; i <= NF; i++) {
		if ($i == "rel_l2" && $(i + 1) > rel[n]) rel[n] = $(i + 1)
		if ($i == "max_abs" && $(i + 1) > mx[n]) mx[n] = $(i + 1)
		if ($i == "median_us") { sh = $3; sub(/^B,H,S,D=/, "", sh); us[n] = us[n] " (" sh ") " $(i + 1) }
	}
	if ($1 == "FAIL") bad[n]++
	seen[n] = 1; checks[n]++
}
END { for (n in seen) printf "  %-44s checks %d rel %.3g max %.3g fails %d%s\n",
	n, checks[n], rel[n], mx[n], bad[n], us[n] }' "$WORK/results.txt" | sort
echo
[ -f "$WORK/bench.md" ] && cat "$WORK/bench.md"
echo
[ -f "$WORK/tuner-top.txt" ] && { echo "tuner top --k 3:"; cat "$WORK/tuner-top.txt"; }
cp "$WORK/bf16.log" "$WORK/results.txt" "$DEST/"
[ -f "$WORK/bench.md" ] && cp "$WORK/bench.md" "$WORK/bench.json" "$DEST/" 2>/dev/null
(cd /tmp && tar czf "$DEST/bf16.tgz" --exclude='*.cubin' --exclude=tcache sm90bf16)
