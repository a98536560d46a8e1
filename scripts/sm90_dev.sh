#!/bin/bash
# On the GPU machine, in one go: compile a handful of flash_fwd_sm90 configurations through
# NVRTC as tuner does, show their SASS has what the design says (HGMMA, UTMALDG, UTMASTG, SYNCS),
# check each against a plain reference on small, ragged and large shapes (and two sanitize
# builds), and time them on BENCH.md's large shapes. When ncu is there, profile two of them
# (SourceCounters included: the per-instruction SASS counters, scripts/sass_opmix.py) at
# (4,16,4096,128) and (8,16,2048,64). Then, when torch is there, put the two best of each shape
# next to PyTorch SDPA timed the same way in interleaved rounds (scripts/bench_sm90.py).
#
#   scripts/sm90_dev.sh            # results under $OUT (default build/sm90_dev)
#   QUICK=1 scripts/sm90_dev.sh    # correctness only, no timing, no profile
#   NCU=0 scripts/sm90_dev.sh      # no profile
#   BF16=1 scripts/sm90_dev.sh     # bf16 builds (SM90_BF16, names ..._bf16), inputs, SDPA
#   MORE_CONFIGS="64 128 1 3 0 1 2 0 2
#   128 128 2 3 1 1" scripts/sm90_dev.sh   # also these (e.g. a tuner sweep's per-shape winners)
#
# A configuration is D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP [RESCALE PERSISTENT OCCUPANCY
# [SPLITS]]; the last four default to 0 0 1 1 (the kernel before they existed). A batch-2 line
# of eight fields (EXP_POLY, since removed, and OCCUPANCY) keeps its OCCUPANCY.
set -u
cd "$(dirname "$0")/.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=${OUT:-build/sm90_dev}
mkdir -p "$OUT/cubin" build
export PATH="$CUDA/bin:$PATH"
log() { echo "== $*"; }

. scripts/sm90_tools.sh

# D BLOCK_N CONSUMERS STAGES PINGPONG OVERLAP RESCALE PERSISTENT OCCUPANCY SPLITS
# What each group asks (reports/sm90/batch4.md, round 2):
#  - batch 3's per-shape winners (and the tuner sweep's small-shape winner, r1), unchanged;
#  - two split-KV builds (SPLITS 2 and 4: out of the sidecar's space since batch 4 measured
#    them slower everywhere), kept for their correctness and for OCCUPANCY: how many clusters
#    of them the driver says can be resident, next to their times.
CONFIGS="
64 128 1 3 0 1 0 0 2 1
64 128 1 2 0 1 3 0 2 1
64 128 1 2 0 1 1 0 2 1
64 128 3 4 1 1 0 0 1 1
64 128 3 4 1 1 3 0 1 1
128 128 2 2 1 1 3 0 1 1
128 128 2 2 1 1 3 132 1 1
64 128 1 2 0 1 0 0 2 2
64 128 1 2 0 1 0 0 2 4
${MORE_CONFIGS:-}
"
SANITIZE="64 128 3 4 1 1 3 132 1 1
64 128 1 2 0 1 2 0 2 1
128 128 2 2 1 1 3 132 1 1
64 128 1 2 0 1 0 0 2 4"
# Profiled with ncu (config, shape): the D=128 and the three-consumer D=64 winners.
PROFILE="128 128 2 2 1 1 3 132 1 1 4,16,4096,128
64 128 3 4 1 1 0 0 1 1 8,16,2048,64"

# A configuration line with RESCALE, PERSISTENT, OCCUPANCY and SPLITS filled in (0 0 1 1 when
# left out). Duplicates (a MORE_CONFIGS line already listed) are dropped: two builds would
# share a file.
full() {
	awk 'NF == 6 { $7 = 0; $8 = 0; $9 = 1 } NF == 8 { $9 = $8; $7 = 0; $8 = 0 } NF == 9 { $10 = 1 }
	     NF >= 9 { print $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }' | awk '!seen[$0]++'
}
# The sidecar's smem_bytes (sm90_tools.sh's; SPLITS 1 when left out, no key split).
smem() { sm90_smem "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10:-1}" 1; }
name() { echo "d$1_bn$2_c$3_s$4_pp$5_ov$6_r$7_pe$8_o$9_sp${10}${11:-}${BF16:+_bf16}"; }

build() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS [san]
	local n; n=$(name "$@")
	build/nvrtc_compile -o "$OUT/cubin/$n.cubin" kernels/templates/flash_fwd_sm90.cu \
		--gpu-architecture=sm_90a -std=c++17 -Xptxas=-v -lineinfo -I kernels/include \
		-DBLOCK_N="$2" -DCONSUMERS="$3" -DSTAGES="$4" -DPINGPONG="$5" -DOVERLAP="$6" \
		-DRESCALE="$7" -DPERSISTENT="$8" -DOCCUPANCY="$9" -DSPLITS="${10}" -DSTREAMK=0 -DSHAPE_D="$1" \
		-DTUNER_SMEM_BYTES="$(smem "$@")" ${11:+-DTUNER_SANITIZE} ${BF16:+-DSM90_BF16=1} \
		>"$OUT/cubin/$n.log" 2>&1 || echo "BUILD FAILED $n (rc $?)"
}
export -f build smem name
CONFIGS=$(echo "$CONFIGS" | full)
SANITIZE=$(echo "$SANITIZE" | full)
export OUT BF16

log "compile (NVRTC)"
{
	echo "$CONFIGS" | grep .
	echo "$SANITIZE" | sed 's/$/ _san/'
} | xargs -P 8 -L 1 bash -c 'build "$@"' _
grep -H "Used\|spill stores\|C75" "$OUT"/cubin/*.log | sed 's|.*/||' | sort

log "SASS: instruction counts (HGMMA wgmma, UTMALDG/UTMASTG TMA, SYNCS mbarrier, MUFU.EX2 SFU)"
for c in d64_bn128_c3_s4_pp1_ov1_r0_pe0_o1_sp1 d64_bn128_c1_s2_pp0_ov1_r0_pe0_o2_sp1 \
	d64_bn128_c1_s2_pp0_ov1_r0_pe0_o2_sp2 d64_bn128_c1_s2_pp0_ov1_r0_pe0_o2_sp4 \
	d128_bn128_c2_s2_pp1_ov1_r3_pe0_o1_sp1 d128_bn128_c2_s2_pp1_ov1_r3_pe132_o1_sp1; do
	c=$c${BF16:+_bf16}
	cuobjdump -sass "$OUT/cubin/$c.cubin" >"$OUT/cubin/$c.sass" 2>&1
	printf '%s:' "$c"
	for op in HGMMA UTMALDG UTMASTG SYNCS MUFU.EX2 FMUL FFMA FMNMX SHFL F2FP VOTE BAR \
		USETMAXREG UCGABAR MAPA LDL STL; do
		printf ' %s=%s' "$op" "$(grep -c "$op" "$OUT/cubin/$c.sass")"
	done
	echo
done

# The last two have more units (row blocks x heads) than a persistent grid has blocks: ragged
# rows and keys across units, and units of a single key tile.
CHECK64="1,1,1,64 1,2,100,64 2,3,333,64 1,8,512,64 2,4,1000,64 1,1,4097,64 3,16,1000,64 4,64,100,64"
CHECK128="1,1,1,128 1,2,100,128 2,3,333,128 1,8,512,128 2,4,1000,128 1,1,4097,128 3,16,1000,128 4,64,100,128"
TIME64="1,8,512,64 2,8,512,64 2,8,2048,64 16,16,1024,64 8,16,2048,64 8,16,4096,64"
TIME128="4,16,4096,128 4,32,2048,128"

run() { # D BN C ST PP OV RESCALE PERSISTENT OCC SPLITS [san]
	local n c s pe; n=$(name "$@"); c="$OUT/cubin/$n.cubin"
	[ -f "$c" ] || { echo "SKIP $n (no cubin)"; return; }
	s=$(smem "$@") pe="--persistent $8 --splits ${10}${BF16:+ --bf16}"
	if [ $# -ge 11 ]; then
		timeout 120 build/sm90_dev --sanitize $pe "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128) 1,16,2048,"$1"
	elif [ -n "${QUICK:-}" ]; then
		timeout 120 build/sm90_dev $pe "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
	else
		timeout 120 build/sm90_dev $pe "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $CHECK64 || echo $CHECK128)
		timeout 200 build/sm90_dev --time $pe "$c" "$2" "$3" "$s" $([ "$1" = 64 ] && echo $TIME64 || echo $TIME128)
	fi
	local rc=$?
	[ $rc -eq 0 ] || echo "RC $rc $n$([ $rc -eq 124 ] && echo ' (timed out: a hang)')"
}

log "check and time"
echo "$CONFIGS" | grep . | while read -r cfg; do run $cfg; done 2>&1 | tee "$OUT/results.txt"
log "sanitize builds"
echo "$SANITIZE" | while read -r cfg; do run $cfg _san; done 2>&1 | tee -a "$OUT/results.txt"
log "planted fault (V ring off its swizzle atoms): the sanitize build must report it"
build/nvrtc_compile -o "$OUT/cubin/plant.cubin" kernels/templates/flash_fwd_sm90.cu \
	--gpu-architecture=sm_90a -std=c++17 -I kernels/include -DBLOCK_N=128 -DCONSUMERS=2 \
	-DSTAGES=2 -DPINGPONG=1 -DOVERLAP=1 -DRESCALE=0 -DPERSISTENT=0 -DOCCUPANCY=1 -DSPLITS=1 -DSTREAMK=0 \
	-DSHAPE_D=128 \
	-DTUNER_SMEM_BYTES="$(smem 128 128 2 2 1 1 0 0 1)" \
	-DTUNER_SANITIZE -DTUNER_PLANT_MISALIGN ${BF16:+-DSM90_BF16=1} >"$OUT/cubin/plant.log" 2>&1
if timeout 60 build/sm90_dev --sanitize ${BF16:+--bf16} "$OUT/cubin/plant.cubin" 128 2 "$(smem 128 128 2 2 1 1 0 0 1)" \
	1,2,300,128 | tee -a "$OUT/results.txt" | grep -q "FAIL.*sanitize [1-9]"; then
	echo "PLANT caught"
else
	echo "PLANT MISSED"
fi | tee -a "$OUT/results.txt"

log "summary: $(grep -c '^PASS' "$OUT/results.txt") PASS, $(grep -c '^FAIL' "$OUT/results.txt") FAIL, $(grep -c '^RC\|^SKIP\|BUILD FAILED' "$OUT/results.txt") RC/SKIP"

# ncu of our kernel with the sections the cuDNN and FA2 profiles were taken with (their reports:
# scripts/ncu_compare.sh on the flash branch), one launch after three; then the op mix.
if [ -z "${QUICK:-}" ] && [ "${NCU:-1}" != 0 ] && command -v ncu >/dev/null; then
	log "ncu: op mix of ours (thread-instructions per score; stall samples)"
	mkdir -p "$OUT/ncu"
	echo "$PROFILE" | while read -r d bn c st pp ov r pe o sp shape; do
		n=$(name "$d" "$bn" "$c" "$st" "$pp" "$ov" "$r" "$pe" "$o" "$sp") tag=ours_${shape//,/x}
		timeout 150 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis \
			--section WarpStateStats --section SchedulerStats --section InstructionStats \
			--section Occupancy --section LaunchStats --section SourceCounters \
			--section MemoryWorkloadAnalysis --kernel-name flash_fwd_sm90 --launch-skip 3 \
			--launch-count 1 -f -o "$OUT/ncu/$tag" build/sm90_dev --profile ${BF16:+--bf16} --persistent "$pe" \
			--splits "$sp" "$OUT/cubin/$n.cubin" "$bn" "$c" "$(smem "$d" "$bn" "$c" "$st" \
			"$pp" "$ov" "$r" "$pe" "$o" "$sp")" "$shape" >"$OUT/ncu/$tag.log" 2>&1 ||
			{ echo "ncu failed for $n (see ncu/$tag.log)"; continue; }
		ncu --import "$OUT/ncu/$tag.ncu-rep" --print-details all >"$OUT/ncu/$tag.txt"
		ncu --import "$OUT/ncu/$tag.ncu-rep" --page source --print-source sass --csv \
			>"$OUT/ncu/$tag.sass.csv"
		echo "$n at $shape:"
		grep -E "^ +(Duration|Registers Per Thread|Issue Slots Busy|No Eligible) " "$OUT/ncu/$tag.txt" |
			sed 's/  */ /g'
		grep -E "Pipe Tensor Cycles Active " "$OUT/ncu/$tag.txt" | head -1 | sed 's/  */ /g'
		b_h_s=${shape%,*}
		python3 scripts/sass_opmix.py "$OUT/ncu/$tag.sass.csv" --scores "$b_h_s" --top 22
	done 2>&1 | tee "$OUT/ncu.txt"
fi

if [ -z "${QUICK:-}" ] && python3 -c 'import torch' 2>/dev/null; then
	log "side by side with SDPA (interleaved rounds)"
	python3 scripts/bench_sm90.py --results "$OUT/results.txt" --cubins "$OUT/cubin" \
		${BF16:+--dtype bf16} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.md"
fi
