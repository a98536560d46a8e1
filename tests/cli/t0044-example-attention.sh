# examples/attention without torch: gen_builds.py writes one translation unit per family build of
# the combined header (at the arch each run was tuned for), every build compiles with its
# template, all link into one program with dispatch.cuh (renamed entries, no collision), and the
# dispatch serves the tuned dims with the header's builds (test_host.cu). nvcc: the compiles.
. tests/cli/lib.sh

EX=$TOP/examples/attention
NVCC=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
[ -x "$NVCC" ] || NVCC=
[ -n "$NVCC" ] || echo "SKIP: no nvcc: the builds are generated, not compiled"

run_tuner --config configs/attention-d64.yaml run --replay tests/fixtures/sweep-h100-attn.db \
	--seed 1
expect_rc 0 "the flash_attn replay"
gunzip -c tests/fixtures/sweep-h100-sm90.db.gz >"$TMP/sm90.db" # kept compressed: 50 MB whole
run_tuner --config configs/h100-sm90.yaml run --replay "$TMP/sm90.db" --seed 1
expect_rc 0 "the flash_fwd_sm90 replay"
G=$TMP/gen
mkdir -p "$G"
run_tuner export --per-shape --run 1 --run 2 --prefix attention -o "$G/attention.h"
expect_rc 0 "the combined export"

python3 "$EX/gen_builds.py" "$G/attention.h" >"$TMP/builds" 2>"$TMP/err" ||
	fail "gen_builds.py: $(cat "$TMP/err")"
FA_N=$(awk '$2 == "FLASH_ATTN_NCONFIGS" { print $3 }' "$G/attention.h")
SM_N=$(awk '$2 == "FLASH_FWD_SM90_NCONFIGS" { print $3 }' "$G/attention.h")
FA_RE='/flash_attn_[0-9]*\.cu -gencode arch=compute_90,code=sm_90$'
SM_RE='/flash_fwd_sm90_[0-9]*\.cu -gencode arch=compute_90a,code=sm_90a$'
[ "$(grep -c "$FA_RE" "$TMP/builds")" = "$FA_N" ] ||
	fail "a flash_attn build per config, at sm_90 ($FA_N): $(cat "$TMP/builds")"
[ "$(grep -c "$SM_RE" "$TMP/builds")" = "$SM_N" ] ||
	fail "a flash_fwd_sm90 build per config, at sm_90a ($SM_N): $(cat "$TMP/builds")"
expect_grep "$G/builds_table.h" "static const flash_attn_build_fn flash_attn_builds[$FA_N]" \
	"flash_attn's table"
expect_grep "$G/flash_fwd_sm90_0.cu" "#define FLASH_FWD_SM90_CONFIG 0" "a build names its config"

# A header of one family is not a combined one.
run_tuner export --per-shape --run 1 -o "$TMP/one.h"
expect_rc 0 "the flash_attn export alone"
python3 "$EX/gen_builds.py" "$TMP/one.h" "$TMP" >/dev/null 2>"$TMP/err" &&
	fail "gen_builds.py takes a header of one family"
expect_grep "$TMP/err" "no ATTENTION_NFAMILIES" "gen_builds.py's refusal"

if [ -n "$NVCC" ]; then
	while read -r cu flags; do
		# shellcheck disable=SC2086 # flags: -gencode and its value
		"$NVCC" -std=c++17 $flags -I"$G" -I"$EX" -I"$TOP/kernels/templates" \
			-I"$TOP/kernels/include" -c -o "${cu%.cu}.o" "$cu" >"$TMP/nvcc.log" 2>&1 ||
			fail "$(basename "$cu"): $(head -c 800 "$TMP/nvcc.log")"
	done <"$TMP/builds"
	"$NVCC" -std=c++17 -I"$G" -I"$EX" -o "$TMP/test_host" "$EX/test_host.cu" "$G"/*.o \
		>"$TMP/nvcc.log" 2>&1 || fail "test_host links every build: $(head -c 800 "$TMP/nvcc.log")"
	[ ! -x "$TMP/test_host" ] || "$TMP/test_host" >"$TMP/host.out" 2>&1 ||
		fail "test_host: $(grep FAIL "$TMP/host.out" | head -5)"
fi
finish
