# Sourced by the flash_fwd_sm90 device scripts (sm90_dev.sh, sm90_ksplit.sh, sm90_streamk.sh,
# sm90_pdl.sh): builds their two tools into build/, NVRTC as tuner compiles (build/nvrtc_compile)
# and the check-and-time driver (build/sm90_dev), and exits the script when either does not build;
# smem gives a configuration's shared memory, median_table prints the timings, batch_summary a
# check-and-time batch's whole summary.
CUDA=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build
cc -std=c11 -O2 -I"$CUDA/include" scripts/nvrtc_compile.c -L"$CUDA/lib64" -lnvrtc \
	-Wl,-rpath,"$CUDA/lib64" -o build/nvrtc_compile || exit 1
"$CUDA/bin/nvcc" -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a scripts/sm90_dev.cu \
	-lcuda -o build/sm90_dev || exit 1

# The sidecar's smem_bytes for a configuration D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE
# PERSISTENT OCCUPANCY SPLITS KSPLIT (the order of sm90_ksplit.sh, sm90_pdl.sh, sm90_timeline.sh).
sm90_smem() {
	echo $((1024 + (64 * $3 / ${11} * (1 + ($8 > 0)) + 2 * $4 * $2) * $1 * 2 +
		(${11} > 1 ? ($1 / 8 + 1) * 2048 : 0) +
		(${10} > 1 ? $3 / ${11} * (${10} - 1) * ($1 / 8 + 1) * 2048 / ${10} + 8 * $3 / ${11} : 0) +
		8 * (2 + 4 * $4)))
}
smem() { sm90_smem "$@"; }
export -f sm90_smem # for the builds the scripts run under xargs

# The CUDA-event medians of sm90_dev --time lines in RESULTS, one row per build, one column per shape.
median_table() {
	grep '^PASS .* median_us' "$1" | awk '
		{ n = $2; sub(/.*\//, "", n); sub(/\.cubin$/, "", n); sh = $3; sub(/B,H,S,D=/, "", sh)
		  for (i = 1; i <= NF; i++) if ($i == "median_us") us[n, sh] = $(i + 1)
		  if (!(n in seen)) { seen[n] = 1; order[++nn] = n }
		  if (!(sh in sseen)) { sseen[sh] = 1; shapes[++ns] = sh } }
		END { printf "%-48s", "config"; for (j = 1; j <= ns; j++) printf " %13s", shapes[j]; print ""
		      for (i = 1; i <= nn; i++) { printf "%-48s", order[i]
		          for (j = 1; j <= ns; j++)
		              printf " %13s", ((order[i], shapes[j]) in us) ? us[order[i], shapes[j]] : "-"
		          print "" } }'
}

# The summary of a check-and-time batch in $WORK (sm90_ksplit.sh, sm90_pdl.sh), begun at $start:
# counts of PASS, FAIL and RC/SKIP lines, build errors, spills and serialised wgmma (C75: a
# sanitize build serialises wgmma, it is for checking, not timing), the failures, the medians,
# and bench_sm90.py's contest when it ran.
batch_summary() { # NAME
	echo "$1: $(($(date +%s) - start)) s; $(grep -c '^PASS' "$WORK/results.txt") PASS," \
		"$(grep -c '^FAIL' "$WORK/results.txt") FAIL, $(grep -c '^RC\|^SKIP' "$WORK/results.txt")" \
		"RC/SKIP"
	grep -h "BUILD FAILED\|error" "$WORK"/cubin/*.log | head -5
	grep "spill stores\|C75" "$WORK/ptxas.txt" | grep -v " 0 bytes spill stores\|_san.log" | head -5
	grep -E "^FAIL|^RC |^SKIP|violations \(" "$WORK/results.txt" | cut -c1-220 | head -20
	echo
	echo "median µs per launch (CUDA events, graphs of 20), by config and shape:"
	median_table "$WORK/results.txt"
	echo
	[ -f "$WORK/bench.md" ] && cat "$WORK/bench.md"
}
