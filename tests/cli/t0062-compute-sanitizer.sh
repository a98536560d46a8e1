# compute-sanitizer's gate on the final elite, through the fake GPU worker and a stand-in for the
# tool: the worker really runs under it, its log is read, a member it reports is rejected and the
# stored elite is the verified one; without the tool the gate says it did not run.
. tests/cli/lib.sh

# No compute-sanitizer anywhere: one warning, and the gate recorded as not run.
TUNER_COMPUTE_SANITIZER=/nonexistent TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 4
expect_rc 0 "a run without compute-sanitizer"
expect_grep "$TMP/err" "compute-sanitizer not found" "says the tool is absent"
n=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM gates WHERE gate = 'tools' AND reason LIKE 'not run%'")
[ "$n" -ge 1 ] || fail "the gate is recorded as not run: $n"

# The tool finds nothing: every member of the final elite checked by the three tools.
rm -f "$TUNER_DB"
export TUNER_COMPUTE_SANITIZER="$TOP/tests/fixtures/tools/fake-compute-sanitizer"
export FAKE_SANITIZER_CALLS="$TMP/calls"
TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 4
expect_rc 0 "a run whose elite the tool passes"
expect_grep "$TMP/out" "on the final elite" "reports the gate"
for t in memcheck racecheck synccheck; do
	grep -qx "$t" "$TMP/calls" || fail "the worker ran under $t"
done
ok=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM gates WHERE gate = 'tools' AND outcome = 'ok' AND reason LIKE '%found nothing'")
[ "$ok" -ge 1 ] || fail "clean members recorded as such: $ok"

# What the tools run on, said with -v: the D=64 spec's costliest shape ('wide') scaled down to 2^30
# flops and its cheapest ('mission', within that); the D=128 spec's only shape ('d128', far over the budget) scaled down. The
# reference kernel and the support kernels are left uninstrumented.
rm -f "$TUNER_DB"
: >"$TMP/args"
FAKE_SANITIZER_ARGS="$TMP/args" TUNER_WORKER_FAKE=1 run_tuner -v run --generations 1 --population 2
expect_rc 0 "a verbose run with the tools"
grep -q "compute-sanitizer racecheck on [0-9a-f]*, 2 shapes from 'wide~small': clean" "$TMP/err" ||
	fail "D=64: wide scaled down, and mission: $(grep racecheck "$TMP/err")"
grep -q "compute-sanitizer memcheck on [0-9a-f]*, 1 shape from 'd128~small': clean" "$TMP/err" ||
	fail "D=128: d128 scaled down: $(grep memcheck "$TMP/err")"
expect_grep "$TMP/args" "--kernel-name-exclude kns=tuner_ --kernel-name-exclude kne=attention_ref " "the reference left alone"

# A tool that cannot start gives no verdict: the member stays, unchecked, with a warning.
rm -f "$TUNER_DB"
FAKE_SANITIZER_DIE=racecheck TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 2
expect_rc 0 "a run whose racecheck cannot start"
expect_grep "$TMP/err" "stays unchecked: compute-sanitizer racecheck could not run" "warns"
n=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM gates WHERE gate = 'tools' AND outcome = 'ok' AND reason LIKE 'compute-sanitizer racecheck could not run%'")
[ "$n" -ge 1 ] || fail "the unchecked member recorded as such: $n"
r=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome != 'ok' AND reason LIKE '%compute-sanitizer%'")
[ "$r" -eq 0 ] || fail "no member rejected for the tool's failure: $r"

# racecheck reports a hazard: every member is rejected as a race, naming the tool's words, and the
# final elite stored is empty of them.
rm -f "$TUNER_DB" "$TMP/calls"
FAKE_SANITIZER_REPORT=racecheck TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 4
expect_rc 0 "a run whose elite racecheck rejects"
expect_grep "$TMP/out" "compute-sanitizer rejects" "says what it rejects"
r=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome = 'race' AND reason LIKE '%compute-sanitizer racecheck: Error: Race reported between Write access at 0x1f0 in flash_fwd%'")
[ "$r" -ge 1 ] || fail "members rejected with racecheck's first report: $r"
last=$(sqlite3 "$TUNER_DB" "SELECT max(generation) FROM elite")
bad=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM elite x JOIN evals e ON e.variant_id = x.variant_id AND e.run_id = x.run_id WHERE x.generation = 1 AND e.outcome != 'ok'")
[ "$bad" -eq 0 ] || fail "the verified elite holds no rejected member (generation $last): $bad"
finish
