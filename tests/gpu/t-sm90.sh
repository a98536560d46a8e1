#!/bin/sh
# flash_fwd_sm90 (TMA, wgmma, clusters: sm_90a only) against the plain reference through its own
# check driver (scripts/sm90_pdl.sh with QUICK=1: built by NVRTC as tuner builds it, then
# build/sm90_dev), one configuration per schedule the sidecar admits: the baseline, the key split,
# split-KV across a cluster (one consumer, and with the key split), the persistent grid, D=128, and
# a narrowed last key tile (TAIL_CUT 32 and 64: batch 11's D=128 builds, and one at D=64), each
# with PDL 0 and 1, on small, ragged (S = 1, 100, 130, 257, 1000) and D=128 shapes, three calls in
# a row; and sanitize builds of the split ones and of a cut one. Then the same checks in bf16
# (BF16=1: the flash_fwd_sm90_bf16 family's builds) of the baseline, the key split and the cut
# builds, and a sanitize build of a cut one. Each check that passes is an "ok" line,
# each that fails (or a build, a hang) a FAIL line. Skipped on a GPU that is not sm_90.
#
# Usage, from the repository root: tests/gpu/t-sm90.sh
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
if [ "$cc" != 90 ]; then
	echo "SKIP: flash_fwd_sm90 needs an sm_90 GPU (this one: ${cc:-none})"
	exit 0
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-sm90.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS KSPLIT [TAIL_CUT]
CONFIGS="64 128 2 2 1 1 0 0 1 1 1
64 128 2 2 0 0 0 0 1 1 2
64 256 1 2 0 1 0 0 1 2 1
64 128 2 2 0 0 0 0 1 2 2
64 128 2 2 1 1 1 132 1 1 1
128 128 2 2 1 1 3 132 1 1 1
128 128 1 2 0 1 0 0 1 2 1
128 160 2 2 1 1 1 132 1 1 1 64
128 160 2 2 1 1 1 132 1 1 1 32
64 128 3 4 1 1 3 0 1 1 1 64" \
	SANITIZE="64 256 1 2 0 1 0 0 1 2 1
64 128 2 2 0 0 0 0 1 2 2
128 128 1 2 0 1 0 0 1 2 1
128 160 2 2 1 1 1 132 1 1 1 64" QUICK=1 OUT="$TMP" bash scripts/sm90_pdl.sh >"$TMP/log" 2>&1
rc=$?
results=/tmp/sm90pdl/results.txt
[ -f "$results" ] || { echo "FAIL: sm90_pdl.sh wrote no results (rc $rc): $(tail -3 "$TMP/log")"; exit 1; }
cp "$results" "$TMP/results.txt"
CONFIGS="64 128 2 2 1 1 0 0 1 1 1
64 128 2 2 0 0 0 0 1 1 2
128 160 2 2 1 1 1 132 1 1 1 64
128 160 2 2 1 1 1 132 1 1 1 32
64 128 3 4 1 1 3 0 1 1 1 64" \
	SANITIZE="128 160 2 2 1 1 1 132 1 1 1 32" BF16=1 QUICK=1 OUT="$TMP" bash scripts/sm90_pdl.sh \
	>>"$TMP/log" 2>&1
rc16=$?
[ -f "$results" ] || { echo "FAIL: the bf16 pass wrote no results (rc $rc16)"; exit 1; }
cat "$results" >>"$TMP/results.txt"
results=$TMP/results.txt
sed -n 's|^PASS .*/\([^/]*\)\.cubin \(B,H,S,D=[0-9,]*\).*|ok      \1 \2|p' "$results"
bad=$(grep -h '^FAIL\|^RC \|^SKIP\|BUILD FAILED' "$results" "$TMP/log")
[ -z "$bad" ] || { echo "$bad" | sed 's/^/FAIL: /'; exit 1; }
n=$(grep -c '^PASS' "$results")
# 10 configurations x 2 PDL x their shapes, and the sanitize builds: far more than 150 checks.
[ "$n" -ge 150 ] || { echo "FAIL: only $n checks passed"; exit 1; }
tc=$(grep -c '^PASS .*_tc[0-9]*_pdl[01]\.cubin' "$results")
[ "$tc" -ge 30 ] || { echo "FAIL: only $tc checks of the TAIL_CUT builds passed"; exit 1; }
bf=$(grep -c '^PASS .*_tc[0-9]*_pdl[01]_bf16' "$results")
[ "$bf" -ge 30 ] || { echo "FAIL: only $bf checks of the bf16 TAIL_CUT builds passed"; exit 1; }
[ "$rc" -eq 0 ] && [ "$rc16" -eq 0 ]
