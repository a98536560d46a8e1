#!/bin/sh
# NVRTC (12.9 and later) keeps a cache of its own where a driver is installed, and answers a
# compile it has seen without running ptxas, so without the report the resource gate reads.
# Two checks of a configuration that spills, each with an empty tuner cache and the same NVRTC
# cache: both must reject it as spilling, and neither may lack ptxas's report.
#
# Usage, from the repository root: TUNER=build/tuner tests/gpu/t-nvrtc-cache.sh
TUNER=${TUNER:-build/tuner}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-nvrtc.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
fails=0
SPILLS=BLOCK_M=32,BLOCK_N=64,NUM_WARPS=1,STAGES=1,SWIZZLE=0,PAD=8
for i in 1 2; do
	# the same HOME both times: NVRTC's cache lives under it
	HOME=$TMP/home TUNER_CACHE=$TMP/cache$i "$TUNER" --config configs/default.yaml check \
		--set "$SPILLS" >"$TMP/out$i" 2>&1
	if grep -q "no ptxas report" "$TMP/out$i"; then
		echo "FAIL: check $i: a compile without ptxas's report"
		fails=$((fails + 1))
	elif ! grep -q "resources  REJECT.*spills" "$TMP/out$i"; then
		echo "FAIL: check $i: the spilling configuration is not rejected: $(grep -i resources "$TMP/out$i")"
		fails=$((fails + 1))
	else
		echo "ok      check $i: rejected as spilling, ptxas's report read"
	fi
done
[ "$fails" -eq 0 ] && echo "t-nvrtc-cache: all passed"
[ "$fails" -eq 0 ]
