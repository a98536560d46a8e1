# Every shipped config passes the static gates on its baseline, and the FP8 Hopper family
# (configs/h100-sm90-fp8.yaml) compiles, with its reference, and keeps out what would spill or
# not fit.
. tests/cli/lib.sh

for cfg in configs/*.yaml; do
	run_tuner --config "$cfg" check --no-compile
	expect_rc 0 "$cfg: the baseline passes the static gates"
done

F="--config configs/h100-sm90-fp8.yaml"
run_tuner $F check
expect_rc 0 "the fp8 baseline passes every gate"
expect_grep "$TMP/out" "accepted" "the fp8 baseline is accepted"
expect_grep "$TMP/out" "kernel 'attention_fp8_ref'" "check compiles the fp8 reference"
expect_grep "$TMP/out" "D=128: 0 bytes spilled" "the D=128 build does not spill"

# Two consumers, D = 128, 256-key tiles with overlap: ptxas spills, the constraint says so.
run_tuner $F check --no-compile --set BLOCK_N=256,STAGES=2
expect_rc 1 "a spilling point is rejected"
expect_grep "$TMP/out" "BLOCK_N == 256 && (OVERLAP == 1 || PINGPONG == 1)" "names the constraint"

# Four stages of 256-key K and V^T tiles at D = 128 need more than 227 KB.
run_tuner $F check --no-compile --set BLOCK_N=256,STAGES=4,OVERLAP=0,PINGPONG=0
expect_rc 1 "a ring larger than shared memory is rejected"
expect_grep "$TMP/out" "smem       REJECT" "by the shared-memory gate"

finish
