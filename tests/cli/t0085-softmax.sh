# The softmax family, a problem given as data alone: check, a shape its validity refuses, run --no-gpu.
. tests/cli/lib.sh
CFG=configs/softmax.yaml

# The baseline (a warp per row) passes every gate; nothing is specialised, so one build
# serves all six shapes.
run_tuner --config "$CFG" check
expect_rc 0 "softmax baseline passes"
expect_grep "$TMP/out" "accepted" "baseline accepted"
expect_grep "$TMP/out" "6 shapes" "checked on the suite's six shapes"
expect_grep "$TMP/out" "build (no specialisation)" "one build for every shape"

# A cluster over a block of several rows is outside the space: the constraint gate says so
# before anything compiles.
run_tuner --config "$CFG" check --set TPR=32,BLOCK=128,CLUSTER=2 --no-compile
expect_rc 1 "cluster with several rows per block rejected"
expect_grep "$TMP/out" "rejected by the constraint gate" "constraint gate names it"
expect_grep "$TMP/out" "CLUSTER == 1 || TPR == BLOCK" "names the constraint"

# 16 vectors of 16 bytes per thread at 1024 threads spill (64 registers each at most): the
# register constraint turns it away without compiling it.
run_tuner --config "$CFG" check --set VEC=8,TPR=1024,BLOCK=1024,ITEMS=16,CLUSTER=1 --no-compile
expect_rc 1 "a point that would spill is rejected"
expect_grep "$TMP/out" "rejected by the constraint gate" "the register rule is a constraint"

# A cluster of 4 blocks per row compiles (__cluster_dims__) and passes.
run_tuner --config "$CFG" check --set VEC=8,TPR=1024,BLOCK=1024,ITEMS=8,CLUSTER=4
expect_rc 0 "a cluster configuration passes"

# A shape the problem's validity refuses is a config error naming the rule, before any work.
cat >"$TMP/bad.yaml" <<EOT
template: $TOP/kernels/templates/softmax.yaml
arch: sm_90
shapes:
  - {name: empty, rows: 0, cols: 128}
EOT
run_tuner --config "$TMP/bad.yaml" check --no-compile
expect_rc 78 "rows 0 refused (EX_CONFIG)"
expect_grep "$TMP/err" "rows >= 1 && cols >= 1" "names the validity rule"
expect_grep "$TMP/err" "empty" "names the shape"

# A short run without a GPU gates and compiles a population of the space.
run_tuner --config "$CFG" run --generations 2 --no-gpu
expect_rc 0 "run --no-gpu"
expect_grep "$TMP/out" "nothing was timed" "says that nothing was timed"
n=$(sqlite3 "$TUNER_DB" "select count(distinct variant_id) from builds where outcome = 'ok'")
[ "$n" -ge 10 ] || fail "at least 10 softmax variants compiled (got $n)"
finish
