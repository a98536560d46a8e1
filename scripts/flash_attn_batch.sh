#!/bin/bash
# On the GPU machine, in one call: the flash_attn family's fp16 suite (D=64 and D=128, causal 0
# and 1) checked and timed next to SDPA flash and cuDNN (scripts/flash_attn_bench.py), then the
# new d128 and wide winners under ncu next to SDPA's FlashAttention-2 kernel
# (scripts/ncu_compare.sh) with their SASS op mix against it (scripts/sass_opmix.py).
#
#   OUT=/path scripts/flash_attn_batch.sh
#
# ONLY restricts the space (flash_attn_bench.py --only; default NUM_WARPS=4, where every winner
# of the last full run was: about 3 minutes on an H100); NCU_WHICH is passed to ncu_compare.sh
# (default "fa2 ours"). Everything goes to /tmp/flash (the ncu reports themselves excepted),
# packed as $OUT/x.tgz; the table and the op mixes are printed last.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-build/flash_batch}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
dir=/tmp/flash
rm -rf "$dir"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1

start=$SECONDS
python3 scripts/flash_attn_bench.py --only "${ONLY:-NUM_WARPS=4}" \
	--specs D=64,causal=0 --specs D=128,causal=0 --specs D=64,causal=1 --specs D=128,causal=1 \
	--out "$dir/bench" >"$dir/bench.log" 2>&1
echo "flash_attn_bench: exit $?, $((SECONDS - start)) s" | tee -a "$dir/bench.log"

# The winners of d128 and wide from the bench's table: B,H,S,D and the configuration.
winner() {
	python3 - "$dir/bench/flash_attn_bench.json" "$1" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1]))["table"]:
    if r["shape"] == sys.argv[2] and r.get("best_cfg"):
        print(",".join(r["dims"].strip("()").split(",")[:4]), r["best_cfg"])
EOF
}
for name in d128 wide; do
	shape='' cfg=''
	read -r shape cfg < <(winner "$name")
	if [ -z "${cfg:-}" ]; then
		echo "no $name winner in the bench's table" | tee -a "$dir/summary.txt"
		continue
	fi
	start=$SECONDS
	OUT="$dir/ncu" NCU_WHICH="${NCU_WHICH:-fa2 ours}" scripts/ncu_compare.sh "$shape" "$cfg" \
		>"$dir/ncu_$name.log" 2>&1
	tag=${shape//,/x}
	{
		echo "== $name ($shape) $cfg: ncu_compare $((SECONDS - start)) s"
		cat "$dir/ncu_$name.log"
		echo "A = ours, B = FA2"
		python3 scripts/sass_opmix.py "$dir/ncu/ours_$tag.sass.csv" "$dir/ncu/fa2_$tag.sass.csv"
	} >>"$dir/summary.txt" 2>&1
done
rm -f "$dir"/ncu/*.ncu-rep

grep -A 12 '^| shape' "$dir/bench.log"
grep -E 'admitted by|correct,|^  (wrong|compile|sanitize) |best single' "$dir/bench.log"
cat "$dir/summary.txt"
cd /tmp && tar czf "$OUT/x.tgz" flash
