#!/bin/bash
# On the GPU machine: profile one attention kernel of ours next to the kernels PyTorch SDPA runs
# for the same shape (FlashAttention-2 and cuDNN), one launch each, with the same ncu sections,
# and keep, for each, the report, its text and its per-instruction SASS counters (CSV), so that
# where the time goes can be compared instruction by instruction on this machine afterwards.
#
#   OUT=/tmp/ncu scripts/ncu_compare.sh 4,16,4096,128 \
#       BLOCK_M=128,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=1,Q_REGS=0,SPLITS=1,COMBINE=0
#
# The shape is B,H,S,D (fp16, not causal); the configuration is of the flash_attn family
# (configs/attention.yaml), run through scripts/flash_attn_bench.py --profile. Leave the
# configuration out to profile only SDPA's kernels. ncu's default clock control holds the SM at
# its base clock: durations are longer than timings elsewhere, ratios are what to read.
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 1 ] || { echo "usage: scripts/ncu_compare.sh B,H,S,D [flash_attn config]" >&2; exit 64; }
shape=$1
cfg=${2:-}
OUT=${OUT:-build/ncu_compare}
mkdir -p "$OUT"
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats
	--section SchedulerStats --section InstructionStats --section Occupancy --section LaunchStats
	--section SourceCounters --section MemoryWorkloadAnalysis"
tag=${shape//,/x}

sdpa=$(mktemp --suffix=.py)
cat >"$sdpa" <<'EOF'
import sys, torch
from torch.nn.attention import sdpa_kernel, SDPBackend
B, H, S, D = map(int, sys.argv[2].split(","))
backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[sys.argv[1]]
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel(backend):
    for _ in range(5):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
EOF

# name, kernel-name regex, command
profile() {
	local name=$1 regex=$2
	shift 2
	# shellcheck disable=SC2086
	ncu $SECTIONS --kernel-name "regex:$regex" --launch-skip 3 --launch-count 1 -f \
		-o "$OUT/${name}_$tag" "$@" >"$OUT/${name}_$tag.log" 2>&1 ||
		{ echo "ncu_compare: $name failed, see $OUT/${name}_$tag.log" >&2; return 1; }
	ncu --import "$OUT/${name}_$tag.ncu-rep" --print-details all >"$OUT/${name}_$tag.txt"
	ncu --import "$OUT/${name}_$tag.ncu-rep" --page source --print-source sass --csv \
		>"$OUT/${name}_$tag.sass.csv"
}
# NCU_WHICH: the kernels to profile, of "fa2 cudnn ours" (default all three).
which=" ${NCU_WHICH:-fa2 cudnn ours} "
[[ $which != *" fa2 "* ]] || profile fa2 'flash_fwd' python3 "$sdpa" flash "$shape"
[[ $which != *" cudnn "* ]] || profile cudnn 'sdpa|fmha|cudnn|attn' python3 "$sdpa" cudnn "$shape"
[ -z "$cfg" ] || [[ $which != *" ours "* ]] || profile ours '^flash_attn$' python3 scripts/flash_attn_bench.py \
	--config configs/attention.yaml --profile "$cfg" --shape "$shape,0"
rm -f "$sdpa"

# One line each: the kernel, its launch, and the few numbers that tell the story.
for f in "$OUT"/*_"$tag".txt; do
	awk -v f="$(basename "$f" .txt)" '
		/Context [0-9]+, Stream/ && !k { k = $1; if (k == "void") k = $2; sub(/[<(].*/, "", k) }
		/^    Duration / && !d { d = $NF " " $(NF - 1) }
		/^    Registers Per Thread / && !r { r = $NF }
		/^    Block Size / && !b { b = $NF } /^    Grid Size / && !g { g = $NF }
		/Achieved Active Warps Per SM/ && !w { w = $NF }
		/No Eligible / && !ne { ne = $NF } /Issue Slots Busy/ && !is { is = $NF }
		/^    Executed Instructions / && !ins { ins = $NF }
		END { printf "%-22s %-32.32s %12s  grid %6s block %4s regs %4s warps/SM %5s issue %5s%% no-eligible %5s%% inst %s\n",
			f, k, d, g, b, r, w, is, ne, ins }' "$f"
done
