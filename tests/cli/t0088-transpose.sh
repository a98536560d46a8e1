# A family written fresh from README.md and docs/FAMILIES.md alone (the tiled transpose):
# check, run without a GPU, and on the fake worker top and export; and the mistakes a
# newcomer makes in such a family are reported where they are made.
. tests/cli/lib.sh
T="--config configs/transpose.yaml"

# The baseline passes every gate, and the reference kernel compiles.
run_tuner $T check
expect_rc 0 "the baseline passes"
expect_grep "$TMP/out" "accepted" "the baseline is accepted"
expect_grep "$TMP/out" "reference  pass    '" "check compiles the reference"
expect_grep "$TMP/out" "kernel 'transpose_ref'" "check names the reference's kernel"

# More threads than a block may have: refused by the constraint gate.
run_tuner $T check --set TILE=64,RPT=2 --no-compile
expect_rc 1 "64 x 32 threads rejected"
expect_grep "$TMP/out" "TILE * (TILE / RPT) <= 1024" "names the constraint"

# run --no-gpu gates and compiles: every admitted point compiles (320 declared points).
run_tuner $T run --no-gpu --generations 2
expect_rc 0 "run --no-gpu"
expect_grep "$TMP/out" "nothing was timed" "no GPU: nothing timed"
ok=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome = 'ok'")
[ "$ok" -ge 16 ] || fail "the variants of two generations pass every gate: $ok"
bad=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome NOT IN ('ok', 'constraint')")
[ "$bad" -eq 0 ] || fail "no admitted point fails to compile: $bad"
rm -f "$TUNER_DB"

# On the fake worker: top shows GB/s from the problem's bytes, export writes the header.
TUNER_WORKER_FAKE=1 run_tuner $T run --generations 1 --population 4
expect_rc 0 "a run on the fake worker"
run_tuner top --k 1
expect_rc 0 "top"
expect_grep "$TMP/out" "GB/s" "top has a GB/s column"
# sq4096 moves 2 * 4096 * 4096 * 4 bytes; the fake worker's median is 1 us
expect_grep "$TMP/out" "134217.7" "GB/s is the problem's bytes over the median"
run_tuner top --k 1 --json
expect_grep "$TMP/out" '"gbps": 134217' "top --json has gbps"
run_tuner export -o "$TMP/transpose.h"
expect_rc 0 "export"
grep -q "^#define TRANSPOSE_TILE " "$TMP/transpose.h" || fail "the header defines TRANSPOSE_TILE"
printf '#include "transpose.h"\nint x[TRANSPOSE_TILE];\n' >"$TMP/use.c"
cc -fsyntax-only -I"$TMP" "$TMP/use.c" || fail "the exported header compiles"

# A copy of the family to break.
mkdir -p "$TMP/k"
cp kernels/templates/transpose.cu kernels/reference/transpose_ref.cu "$TMP/k/"
sed 's#\.\./problems/transpose.yaml#problem.yaml#' kernels/templates/transpose.yaml \
	>"$TMP/k/transpose.yaml"
sed 's#\.\./reference/##' kernels/problems/transpose.yaml >"$TMP/k/problem.yaml"
sed "s#^template: .*#template: $TMP/k/transpose.yaml#" configs/transpose.yaml >"$TMP/job.yaml"
J="--config $TMP/job.yaml"
run_tuner $J check
expect_rc 0 "the copy passes"

# A sidecar whose kernel name is not the template's.
sed -i 's/^kernel: transpose$/kernel: transpos/' "$TMP/k/transpose.yaml"
run_tuner $J check
expect_rc 1 "a kernel name the build lacks is rejected"
expect_grep "$TMP/out" "has no kernel named 'transpos'; its kernels: transpose" "names both"
sed -i 's/^kernel: transpos$/kernel: transpose/' "$TMP/k/transpose.yaml"

# A kernel without extern "C": its name is mangled.
sed -i 's/^extern "C" __global__/__global__/' "$TMP/k/transpose.cu"
run_tuner $J check
expect_rc 1 "a C++ kernel name is rejected"
expect_grep "$TMP/out" 'declare the kernel extern "C"' "says what to do"
cp kernels/templates/transpose.cu "$TMP/k/"

# A reference that does not compile, or whose kernel is named wrong: a config error.
echo "not C++" >>"$TMP/k/transpose_ref.cu"
run_tuner $J check
expect_rc 78 "a broken reference"
expect_grep "$TMP/err" "the reference kernel '$TMP/k/transpose_ref.cu' does not compile" "names it"
cp kernels/reference/transpose_ref.cu "$TMP/k/"
sed -i 's/kernel: transpose_ref/kernel: transpose_rf/' "$TMP/k/problem.yaml"
run_tuner $J check
expect_rc 78 "a reference kernel name the build lacks"
expect_grep "$TMP/err" "has no kernel named 'transpose_rf'" "names the missing kernel"

# The core knows no problem: no file under tuner/ or include/tuner/ names one of the
# families, their dims or their example shapes.
hits=$(grep -rniE 'attention|softmax|flash|sdpa|\bmission\b|B=1,H=|[^_]SHAPE_D\b' tuner include/tuner)
[ -z "$hits" ] || fail "the core names a problem: $hits"
finish
