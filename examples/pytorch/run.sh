#!/bin/bash
# Export, build, check and benchmark the example in one go, from the repository root:
#   OUT=/some/dir bash examples/pytorch/run.sh [TUNER] [DB]
# TUNER defaults to build/tuner, DB to tests/fixtures/sweep-h100.db; logs go to $OUT
# (default examples/pytorch/build/logs): export.log, build.log, check.log, bench.log, bench.json.
set -euo pipefail
TUNER=${1:-build/tuner}
DB=${2:-tests/fixtures/sweep-h100.db}
DB=$(cd "$(dirname "$DB")" && pwd)/$(basename "$DB")
HERE=examples/pytorch
OUT=${OUT:-$HERE/build/logs}
mkdir -p "$OUT" "$HERE/gen"
OUT=$(cd "$OUT" && pwd)
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}

"$TUNER" --db "$DB" export -o "$HERE/gen/flash_fwd_config.h" 2>&1 | tee "$OUT/export.log"
cp "$HERE/gen/flash_fwd_config.h" "$OUT/"
cd "$HERE"
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' |
	tee "$OUT/build.log"
command -v ninja >/dev/null && echo "ninja: $(command -v ninja)" >>"$OUT/build.log" ||
	echo "no ninja: setuptools builds the sources one by one" >>"$OUT/build.log"
start=$(date +%s)
python3 setup.py build_ext --inplace >>"$OUT/build.log" 2>&1 || {
	tail -40 "$OUT/build.log"
	exit 1
}
echo "built in $(($(date +%s) - start)) s" | tee -a "$OUT/build.log"
status=0
python3 check.py --db "$DB" 2>&1 | tee "$OUT/check.log" || status=1
python3 bench.py --db "$DB" --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" || status=1
exit $status
