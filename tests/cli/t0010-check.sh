# tuner check: the seeds' misalignment is rejected by the alignment gate before compiling; the baseline passes.
. tests/cli/lib.sh

# The seeds' bug: PAD=1 at D=64 gives a 130-byte row stride under 16-byte cp.async.
run_tuner check --set BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=1,PAD=1
expect_rc 1 "PAD=1 is rejected"
expect_grep "$TMP/out" "rejected by the align gate" "names the alignment gate"
expect_grep "$TMP/out" "130 bytes" "names the 130-byte stride"
expect_grep "$TMP/out" "16" "names the required alignment"
expect_grep "$TMP/err" "outside the declared domain" "warns that PAD=1 is outside the domain"
expect_no_grep "$TMP/out" "build D=" "nothing compiled for a statically rejected variant"

# A constraint violation is caught by the cheapest gate first.
run_tuner check --set BLOCK_M=64,NUM_WARPS=8,PAD=1 --no-compile
expect_rc 1 "constraint violation rejected"
expect_grep "$TMP/out" "rejected by the constraint gate" "constraint gate comes first"

# The seeds' baseline passes every gate, compile included.
for pad in 8 0; do
	run_tuner check --set BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=1,SWIZZLE=1,PAD=$pad
	expect_rc 0 "baseline with PAD=$pad passes"
	expect_grep "$TMP/out" "accepted" "baseline PAD=$pad accepted"
	expect_grep "$TMP/out" "build D=64" "baseline PAD=$pad compiled for D=64"
	expect_grep "$TMP/out" "build D=128" "baseline PAD=$pad compiled for D=128"
done

# Bad --set input is a usage error naming the param.
run_tuner check --set BLOK_M=64
expect_rc 64 "unknown param"
expect_grep "$TMP/err" "BLOK_M" "names the unknown param"
expect_grep "$TMP/err" "BLOCK_M" "suggests BLOCK_M"

run_tuner check --set BLOCK_M=sixty
expect_rc 64 "non-integer value"
finish
