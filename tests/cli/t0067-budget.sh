# A budget in the user's terms: `run --evals N` and `run --time D` stop the run cleanly once
# spent (exit 0, the run recorded as stopped, the generation in flight finished as a signal
# would finish it), and --resume continues it to the same result as a run never stopped.
# Replayed from the committed sweep, so no GPU is needed; --time against the fake worker,
# whose shapes take their time.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/sweep-h100.db"
evals() {
	sqlite3 "$1" "SELECT v.params, e.generation, e.outcome, printf('%.6f', e.fitness)
		FROM evals e JOIN variants v ON v.id = e.variant_id WHERE e.run_id = ${2:-1} ORDER BY v.params"
}

# the run never stopped, as the reference
TUNER_DB="$TMP/full.db" run_tuner run --replay "$FIX" --seed 3
expect_rc 0 "the replay, whole"
evals "$TMP/full.db" >"$TMP/full.txt"
total=$(wc -l <"$TMP/full.txt")

TUNER_DB="$TMP/e.db" run_tuner run --replay "$FIX" --seed 3 --evals 20
expect_rc 0 "a run whose --evals budget is spent"
expect_grep "$TMP/out" "the budget of --evals is spent in generation 2" "it says why it stopped, and where"
expect_grep "$TMP/out" "--resume" "it says how to go on"
n=$(sqlite3 "$TMP/e.db" "SELECT count(*) FROM evals")
# the budget is checked as verdicts arrive: the candidate in flight is finished, no more
[ "$n" -ge 20 ] && [ "$n" -le 21 ] || fail "stopped at the 20th evaluation: $n"
[ "$n" -lt "$total" ] || fail "the budget stopped the run short of its $total evaluations"
st=$(sqlite3 "$TMP/e.db" "SELECT status FROM runs")
[ "$st" = stopped ] || fail "the run is recorded as stopped, resumable: '$st'"
TUNER_DB="$TMP/e.db" run_tuner run --resume
expect_rc 0 "the stopped run resumed"
evals "$TMP/e.db" >"$TMP/e.txt"
diff "$TMP/full.txt" "$TMP/e.txt" >"$TMP/diff" ||
	fail "stopped by --evals and resumed differs from the whole run: $(head -5 "$TMP/diff")"

# --time: every shape of the fake worker takes 40 ms, a generation of 16 several seconds
TUNER_WORKER_FAKE=1 TUNER_WORKER_FAKE_MS=40 TUNER_DB="$TMP/t.db" \
	run_tuner run --generations 3 --population 16 --time 1s
expect_rc 0 "a run whose --time budget is spent"
expect_grep "$TMP/out" "the budget of --time is spent in generation 1" "it stops in the first generation"
st=$(sqlite3 "$TMP/t.db" "SELECT status FROM runs")
[ "$st" = stopped ] || fail "the run is recorded as stopped: '$st'"
n=$(sqlite3 "$TMP/t.db" "SELECT count(*) FROM evals")
[ "$n" -lt 48 ] || fail "the time budget stopped the run short: $n evaluations of 48"

# bad budgets are refused before anything is written
for bad in "--time 0" "--time -5m" "--time 2w" "--time 9d" "--evals 0" "--evals x"; do
	# shellcheck disable=SC2086
	TUNER_DB="$TMP/bad.db" run_tuner run --no-gpu $bad
	expect_rc 64 "run $bad"
	[ ! -e "$TMP/bad.db" ] || fail "run $bad wrote a database"
done
expect_grep "$TMP/err" "--evals" "the error names the option"
finish
