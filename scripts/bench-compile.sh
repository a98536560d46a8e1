#!/bin/sh
# Compile throughput of two tuner binaries, interleaved: each run compiles the same variants of
# the default config's flash_fwd family (--no-gpu, fixed seed) into a fresh cache and database.
# usage: scripts/bench-compile.sh BEFORE AFTER [REPS] [JOBS] [GENERATIONS] [POPULATION]
# JOBS 0 is one compile per core. Prints one line per run (wall-clock throughput as tuner reports
# it, then the CPU seconds of tuner and its compile processes per build, from /usr/bin/time) and
# the medians of each binary.
set -eu
[ $# -ge 2 ] || { sed -n 2,7p "$0" >&2; exit 64; }
before=$(realpath "$1") after=$(realpath "$2") reps=${3:-3} jobs=${4:-0} gens=${5:-2} pop=${6:-16}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-compile.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$(dirname "$0")/.."
i=0
while [ "$i" -lt "$reps" ]; do
	for which in before after; do
		eval bin=\$$which
		rm -rf "$dir/cache" "$dir/t.db"*
		TUNER_CACHE="$dir/cache" TUNER_DB="$dir/t.db" /usr/bin/time -f '%U %S' -o "$dir/time" \
			"$bin" --config configs/default.yaml run --no-gpu --generations "$gens" \
			--population "$pop" --jobs "$jobs" >"$dir/out"
		line=$(grep '^compiled ' "$dir/out")
		builds=$(echo "$line" | sed -n 's/.*(\([0-9]*\) builds.*/\1/p')
		cpu=$(awk -v n="$builds" '{printf "%.3f", ($1 + $2) / n}' "$dir/time")
		echo "$which $((i + 1)): $line; $cpu CPU s per build"
		echo "$line" | sed -n 's/.*: \([0-9.]*\) variants\/s.*/\1/p' >>"$dir/$which"
		echo "$cpu" >>"$dir/$which.cpu"
	done
	i=$((i + 1))
done
median() {
	sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
for which in before after; do
	echo "$which median: $(median "$dir/$which") variants/s, $(median "$dir/$which.cpu") CPU s per build"
done
