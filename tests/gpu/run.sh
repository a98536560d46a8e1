#!/bin/sh
# Build the GPU test kernels with nvcc, run every GPU test binary, print "N passed, N failed".
BUILD=${BUILD:-build}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$TUNER_GPU_ARCH" ]; then
	cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
	cc=$(echo "$cc" | tr -d " .")
	TUNER_GPU_ARCH=sm_${cc:-90}
fi
KDIR="$BUILD/tests/gpu-kernels"
mkdir -p "$KDIR"
passed=0
failed=0

nvcc_cubin() { # out.cubin source [flags...]
	out=$1
	src=$2
	shift 2
	"$NVCC" -cubin -arch="$TUNER_GPU_ARCH" -Ikernels/include -Itests/gpu/kernels "$@" \
		-o "$KDIR/$out.cubin" "$src"
}

for k in tests/gpu/kernels/*.cu kernels/reference/attention_ref.cu; do
	name=$(basename "$k" .cu)
	if ! nvcc_cubin "$name" "$k"; then
		echo "FAILED  nvcc $k"
		failed=$((failed + 1))
	fi
done
nvcc_cubin misalign_san tests/gpu/kernels/misalign.cu -DTUNER_SANITIZE || failed=$((failed + 1))
nvcc_cubin tuner_support kernels/support/tuner_support.cu -std=c++17 || failed=$((failed + 1))
nvcc_cubin copy128 tests/gpu/kernels/copy.cu -DTEST_D=128 || failed=$((failed + 1))

# The FlashAttention family at its baseline (informational: the test prints, does not count it).
flash="-DBLOCK_M=64 -DBLOCK_N=64 -DNUM_WARPS=4 -DSTAGES=1 -DSWIZZLE=1 -DPAD=8 -DSHAPE_D=64"
flash="$flash -DTUNER_SMEM_BYTES=27648"
if [ -f kernels/templates/flash_fwd.cu ]; then
	nvcc_cubin flash_fwd kernels/templates/flash_fwd.cu $flash 2>/dev/null
	nvcc_cubin flash_fwd_plant kernels/templates/flash_fwd.cu $flash -DTUNER_PLANT_MISALIGN \
		2>/dev/null
	nvcc_cubin flash_fwd_plant_san kernels/templates/flash_fwd.cu $flash \
		-DTUNER_PLANT_MISALIGN -DTUNER_SANITIZE 2>/dev/null
fi

# count NAME LOG RC: add the log's "ok " and "FAIL..." lines; a failing exit without a FAIL line counts once.
count() {
	cat "$2"
	p=$(grep -c '^ok ' "$2")
	f=$(grep -c '^FAIL' "$2")
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAILED  $1 exited with status $3"
		failed=$((failed + 1))
	fi
}

for t in "$BUILD"/tests/gpu-test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	log="$BUILD/tests/$name.log"
	rc=0
	"$t" "$KDIR" >"$log" 2>&1 || rc=$?
	count "$name" "$log" "$rc"
done

# tuner end to end: the planted faults, then the planted-defect corpus, through `tuner sweep`,
# verdicts read back from the database; the corpus's table goes to $CORPUS_TABLE too.
# GPU_SCRIPTS="t-faults t-serve" runs only those.
export CORPUS_TABLE="${CORPUS_TABLE:-$BUILD/tests/corpus-table.md}"
for t in ${GPU_SCRIPTS:-t-nvrtc-cache t-uninstrumented t-faults t-corpus t-serve t-sm90}; do
	log="$BUILD/tests/$t.log"
	if [ -x "$BUILD/tuner" ]; then
		rc=0
		TUNER="$BUILD/tuner" sh "tests/gpu/$t.sh" >"$log" 2>&1 || rc=$?
		count "$t.sh" "$log" "$rc"
	else
		echo "FAILED  $t.sh: no $BUILD/tuner"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
