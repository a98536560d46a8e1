#!/bin/sh
# flash_fwd_sm90 (TMA, wgmma, clusters: sm_90a only) against the plain reference through its own
# check driver (scripts/sm90_pdl.sh with QUICK=1: built by NVRTC as tuner builds it, then
# build/sm90_dev), one configuration per schedule the sidecar admits: the baseline, the key split,
# split-KV across a cluster (one consumer, and with the key split), the persistent grid, and D=128,
# each with PDL 0 and 1, on small, ragged (S = 1, 100, 130, 257, 1000) and D=128 shapes, three
# calls in a row; and sanitize builds of the split ones. Each check that passes is an "ok" line,
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
# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS KSPLIT
CONFIGS="64 128 2 2 1 1 0 0 1 1 1
64 128 2 2 0 0 0 0 1 1 2
64 256 1 2 0 1 0 0 1 2 1
64 128 2 2 0 0 0 0 1 2 2
64 128 2 2 1 1 1 132 1 1 1
128 128 2 2 1 1 3 132 1 1 1
128 128 1 2 0 1 0 0 1 2 1" \
	SANITIZE="64 256 1 2 0 1 0 0 1 2 1
64 128 2 2 0 0 0 0 1 2 2
128 128 1 2 0 1 0 0 1 2 1" QUICK=1 OUT="$TMP" bash scripts/sm90_pdl.sh >"$TMP/log" 2>&1
rc=$?
results=/tmp/sm90pdl/results.txt
[ -f "$results" ] || { echo "FAIL: sm90_pdl.sh wrote no results (rc $rc): $(tail -3 "$TMP/log")"; exit 1; }
sed -n 's|^PASS .*/\([^/]*\)\.cubin \(B,H,S,D=[0-9,]*\).*|ok      \1 \2|p' "$results"
bad=$(grep -h '^FAIL\|^RC \|^SKIP\|BUILD FAILED' "$results" "$TMP/log")
[ -z "$bad" ] || { echo "$bad" | sed 's/^/FAIL: /'; exit 1; }
n=$(grep -c '^PASS' "$results")
# 7 configurations x 2 PDL x their shapes, and the sanitize builds: far more than 100 checks.
[ "$n" -ge 100 ] || { echo "FAIL: only $n checks passed"; exit 1; }
[ "$rc" -eq 0 ]
