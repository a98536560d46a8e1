#!/bin/bash
# On the GPU machine, one device call for the FP8 Hopper family (flash_fwd_sm90_fp8): compile a
# handful of configurations through NVRTC as tuner does (and three sanitize builds), count what
# their SASS has (HGMMA, UTMALDG, SHFL, PRMT, F2FP), check each against the problem's float64
# reference (scripts/sm90_fp8_dev.cu) on the suite's shapes, ragged S (100, 130, 257, 1000,
# 4097) and D = 64 and 128, time them (BENCH.md: graphs of 20 calls, median of 30), then put
# the two fastest of each timed shape next to our fp16 flash_fwd_sm90 winner of that shape and
# SDPA cuDNN (fp16) in interleaved rounds (scripts/bench_sm90_fp8.py), and finally let the
# tuner itself search the family for 3 generations (its gates, checks and sanitize over fp8
# variants) with a static build the lead carries (build-static/tuner).
#
#   scripts/sm90_fp8.sh            # results under $OUT (default build/sm90_fp8), a table on stdout
#   NO_TUNER=1 scripts/sm90_fp8.sh # without the tuner run
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=${OUT:-build/sm90_fp8}
mkdir -p "$OUT/cubin" build
export PATH="$CUDA/bin:$PATH"
log() { echo "== $*"; }
start=$(date +%s)

cc -std=c11 -O2 -I"$CUDA/include" scripts/nvrtc_compile.c -L"$CUDA/lib64" -lnvrtc \
	-Wl,-rpath,"$CUDA/lib64" -o build/nvrtc_compile || exit 1
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a scripts/sm90_fp8_dev.cu -lcuda \
	-o build/sm90_fp8_dev || exit 1

# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP (the sidecar's baseline first)
CONFIGS="64 128 2 2 1 1
64 128 1 3 0 1
64 192 2 2 1 1
64 256 2 2 1 1
128 128 2 2 1 1
128 128 2 3 0 1
128 128 2 2 1 0
128 192 2 2 1 1
128 256 1 2 0 1
128 64 2 4 1 1"
SANITIZE="64 128 2 2 1 1
128 192 2 2 1 1
128 128 1 2 0 0"
# Our fp16 winners at the timed shapes (reports/sm90-h100.md, batch 4), as sm90_dev.sh names
# them: D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS.
FP16="1,8,512,64 64 128 1 3 0 1 0 0 2 1
8,16,2048,64 64 128 3 4 1 1 3 0 1 1
8,16,4096,64 64 128 3 4 1 1 3 0 1 1
4,16,4096,128 128 128 2 2 1 1 3 132 1 1"
CHECK64="1,1,1,64 1,2,100,64 2,3,130,64 2,4,257,64 2,4,1000,64 1,1,4097,64 1,8,512,64 2,8,512,64"
CHECK128="1,1,1,128 1,2,100,128 2,3,130,128 2,4,257,128 2,4,1000,128 1,1,4097,128 4,8,512,128"
TIME64="1,8,512,64 8,16,2048,64 8,16,4096,64"
TIME128="4,16,4096,128"

smem() { echo $((1024 + (64 * $3 + 2 * $4 * $2) * $1 + 8 * (1 + 4 * $4))); }
name() { echo "f8_d$1_bn$2_c$3_s$4_pp$5_ov$6${7:-}"; }
build() { # D BN C ST PP OV [_san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$OUT/cubin/$n.cubin" kernels/templates/flash_fwd_sm90_fp8.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$(smem "$@")" ${7:+-DTUNER_SANITIZE} \
		>"$OUT/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
smem16() { echo $((1024 + (64 * $3 * (1 + ($8 > 0)) + 2 * $4 * $2) * $1 * 2 + 8 * (2 + 4 * $4))); }
build16() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS
	local n="d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}"
	build/nvrtc_compile -o "$OUT/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DSTREAMK=0 \
		-DKSPLIT=1 -DSHAPE_D="$1" -DTUNER_SMEM_BYTES="$(smem16 "$@")" \
		>"$OUT/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build build16 smem smem16 name
export OUT

log "compile (NVRTC): ${CONFIGS//$'\n'/; } + sanitize builds + the fp16 winners"
{
	echo "$CONFIGS" | sed 's/^/build /'
	echo "$SANITIZE" | sed 's/^/build /; s/$/ _san/'
	echo "$FP16" | cut -d' ' -f2- | sort -u | sed 's/^/build16 /'
} | xargs -P 8 -L 1 bash -c '"$@"' _
grep -H "Used\|spill stores\|C75\|error" "$OUT"/cubin/*.log | sed 's|.*/||' | grep -v " 0 bytes spill" | sort

log "SASS: instruction counts"
for c in "$OUT"/cubin/f8_*.cubin; do
	n=$(basename "$c" .cubin)
	cuobjdump -sass "$c" >"$OUT/cubin/$n.sass" 2>&1
	printf '%s:' "$n"
	for op in HGMMA UTMALDG SYNCS MUFU.EX2 SHFL PRMT F2FP USETMAXREG LDL STL; do
		printf ' %s=%s' "$op" "$(grep -c "$op" "$OUT/cubin/$n.sass")"
	done
	echo
done | tee "$OUT/sass.txt"

run() { # D BN C ST PP OV [_san]
	local n c s rc=0; n=$(name "$@"); c="$OUT/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@")
	if [ $# -ge 7 ]; then
		timeout 60 build/sm90_fp8_dev --sanitize "$c" "$2" "$3" "$s" \
			$([ "$1" = 64 ] && echo "1,2,100,64 2,4,257,64 1,8,512,64" || echo "1,2,130,128 2,4,1000,128") || rc=$?
	else
		timeout 60 build/sm90_fp8_dev "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128) || rc=$?
		timeout 90 build/sm90_fp8_dev --time "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $TIME64 || echo $TIME128) || rc=$?
	fi
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check and time"
echo "$CONFIGS" | while read -r cfg; do run $cfg; done 2>&1 | tee "$OUT/results.txt"
log "sanitize builds"
echo "$SANITIZE" | while read -r cfg; do run $cfg _san; done 2>&1 | tee -a "$OUT/results.txt"
log "summary: $(grep -c '^PASS' "$OUT/results.txt") PASS, $(grep -c '^FAIL' "$OUT/results.txt") FAIL, $(grep -c '^RC\|^SKIP\|BUILD FAILED' "$OUT/results.txt") RC/SKIP ($(($(date +%s) - start)) s)"
grep -E '^FAIL|^RC|^SKIP' "$OUT/results.txt" | cut -c1-240 | head -20

echo "fastest three fp8 per shape (CUDA events, median µs):"
grep '^PASS .* median_us' "$OUT/results.txt" | awk '{
	n = $2; sub(/.*\//, "", n); sub(/\.cubin$/, "", n)
	for (i = 1; i <= NF; i++) { if ($i == "median_us") us = $(i + 1); if ($i == "tflops") tf = $(i + 1) }
	print $3, us, tf, n }' | sort -k1,1 -k2,2g | awk '{ if (c[$1]++ < 3) print "  " $0 }'

if python3 -c 'import torch' 2>/dev/null; then
	log "side by side: fp8 (two fastest), our fp16 winner, SDPA cuDNN fp16 (interleaved rounds)"
	W=$(echo "$FP16" | awk '{ print $1 "=d" $2 "_bn" $3 "_c" $4 "_s" $5 "_pp" $6 "_ov" $7 "_r" $8 "_pe" $9 "_o" $10 "_sp" $11 }')
	timeout 120 python3 scripts/bench_sm90_fp8.py --results "$OUT/results.txt" \
		--cubins "$OUT/cubin" --fp16 $W --rounds 5 --json "$OUT/bench.json" 2>&1 |
		tee "$OUT/bench.md"
fi

if [ -z "${NO_TUNER:-}" ]; then
	log "tuner run --generations 3 (build-static/tuner)"
	if [ -x build-static/tuner ]; then
		timeout 150 build-static/tuner --db "$OUT/fp8.db" --config configs/h100-sm90-fp8.yaml \
			run --generations 3 >"$OUT/tuner-run.log" 2>&1
		echo "tuner run: rc $?, $(($(date +%s) - start)) s"
		tail -25 "$OUT/tuner-run.log"
		build-static/tuner --db "$OUT/fp8.db" show >"$OUT/tuner-show.txt" 2>&1
		build-static/tuner --db "$OUT/fp8.db" top --k 5 >"$OUT/tuner-top.txt" 2>&1
		head -30 "$OUT/tuner-show.txt"
		cat "$OUT/tuner-top.txt"
	else
		echo "no build-static/tuner: carry a static build of this branch"
	fi
fi
echo "done in $(($(date +%s) - start)) s"
