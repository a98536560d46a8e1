# The GEMM family without a GPU: its gates explain themselves and a run gates and compiles.
. tests/cli/lib.sh
G="--config configs/gemm.yaml"

# The baseline passes every gate, its compile included.
run_tuner $G check
expect_rc 0 "the baseline passes"
expect_grep "$TMP/out" "accepted" "the baseline is accepted"

# A warp must own whole m16 tiles: 16 rows over 2 warps is refused before compiling.
run_tuner $G check --set BLOCK_M=16,WARPS_M=2
expect_rc 1 "16 rows over 2 warps rejected"
expect_grep "$TMP/out" "rejected by the constraint gate" "by the constraint gate"
expect_grep "$TMP/out" "BLOCK_M % (16 * WARPS_M) == 0" "names the constraint"

# 5 stages (outside the domain: allowed here) of 128 x 256 x 64 tiles need 240 KiB of shared
# memory; sm_90 gives a block 227 KiB.
run_tuner $G check --set BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,WARPS_M=2,WARPS_N=4,STAGES=5
expect_rc 1 "245760 bytes of shared memory rejected"
expect_grep "$TMP/out" "rejected by the smem gate" "by the shared-memory gate"
expect_grep "$TMP/out" "245760" "names the bytes asked for"

# Split K with its scratch buffers and the grouped raster pass too.
run_tuner $G check --set BLOCK_M=64,BLOCK_N=64,WARPS_M=2,WARPS_N=2,SPLIT_K=4,SWIZZLE=1
expect_rc 0 "a split-K point passes"

# A shape the problem's validity rules refuse is a config error naming the rule.
sed -e "s#^template: \.\./#template: $TOP/#" -e 's/N: 1160/N: 1161/' configs/gemm.yaml \
	>"$TMP/odd.yaml"
run_tuner --config "$TMP/odd.yaml" check --no-compile
expect_rc 78 "N = 1161 refused"
expect_grep "$TMP/err" "N % 8 == 0" "names the broken rule"

# A search without a GPU gates and compiles, and says nothing was timed.
run_tuner $G run --generations 1 --population 6 --no-gpu
expect_rc 0 "run --no-gpu"
expect_grep "$TMP/out" "nothing was timed" "says that nothing was timed"
n=$(sqlite3 "$TUNER_DB" "select count(*) from builds where outcome = 'ok'")
[ "$n" -ge 3 ] || fail "at least 3 gemm variants compiled (got $n)"
finish
