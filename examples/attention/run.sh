#!/bin/bash
# The combined attention header in a real build, in one go, from the repository root:
#   OUT=/some/dir bash examples/attention/run.sh [TUNER] [DB RUN_A RUN_B]
# TUNER defaults to build/tuner. Without DB, a database of two runs is made from the replay
# fixtures (flash_attn: tests/fixtures/sweep-h100-attn.db, flash_fwd_sm90:
# tests/fixtures/sweep-h100-sm90.db.gz, uncompressed into gen/), as
# tests/cli/t0043-export-families.sh does. Logs go to
# $OUT (default examples/attention/build/logs): runs.log, export.log, attention.h, build.log,
# host.log, check.log, bench.log, bench.json.
set -euo pipefail
TUNER=${1:-build/tuner}
HERE=examples/attention
OUT=${OUT:-$HERE/build/logs}
mkdir -p "$OUT" "$HERE/gen"
OUT=$(cd "$OUT" && pwd)
if [ $# -ge 2 ]; then
	[ $# -eq 4 ] || { echo "usage: run.sh [TUNER] [DB RUN_A RUN_B]" >&2; exit 64; }
	DB=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") RUN_A=$3 RUN_B=$4
else
	DB=$(pwd)/$HERE/gen/two.db RUN_A=1 RUN_B=2
	rm -f "$DB" "$DB-wal" "$DB-shm"
	gunzip -c tests/fixtures/sweep-h100-sm90.db.gz >"$HERE/gen/sm90.db"
	{
		"$TUNER" --db "$DB" --config configs/attention-d64.yaml run \
			--replay tests/fixtures/sweep-h100-attn.db --seed 1
		"$TUNER" --db "$DB" --config configs/h100-sm90.yaml run \
			--replay "$HERE/gen/sm90.db" --seed 1
	} >"$OUT/runs.log" 2>&1 || { tail -20 "$OUT/runs.log"; exit 1; }
fi

"$TUNER" --db "$DB" export --per-shape --run "$RUN_A" --run "$RUN_B" --prefix attention \
	-o "$HERE/gen/attention.h" 2>&1 | tee "$OUT/export.log"
cp "$HERE/gen/attention.h" "$OUT/"
cd "$HERE"
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' |
	tee "$OUT/build.log"
start=$(date +%s)
python3 setup.py build_ext --inplace >>"$OUT/build.log" 2>&1 || {
	tail -40 "$OUT/build.log"
	exit 1
}
echo "built in $(($(date +%s) - start)) s" | tee -a "$OUT/build.log"
status=0
# The launchers without torch, on the fixtures' tuned dims (test_host.cu names them).
if [ $# -lt 2 ]; then
	NVCC=$(python3 -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME)')/bin/nvcc
	{ "$NVCC" -std=c++17 -Igen -I. -o gen/test_host test_host.cu gen/*.o && gen/test_host; } \
		>"$OUT/host.log" 2>&1 || status=1
	tail -1 "$OUT/host.log"
fi
python3 check.py --db "$DB" --run "$RUN_A" --run "$RUN_B" 2>&1 | tee "$OUT/check.log" || status=1
python3 bench.py --db "$DB" --run "$RUN_A" --run "$RUN_B" --json "$OUT/bench.json" 2>&1 |
	tee "$OUT/bench.log" || status=1
exit $status
