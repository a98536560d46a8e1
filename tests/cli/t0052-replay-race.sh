# A replay races candidates as a live run does: once a candidate's recorded shapes, cheapest first,
# show it cannot reach the elite, it is "slower", with the shapes measured so far and no more, and
# a gate row that says so. The race is decided on the recording alone, so a database that already
# holds some of the shapes (another run's) changes nothing; the winner stays the sweep's optimum.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/sweep-h100.db"
run_tuner run --replay "$FIX" --seed 1
expect_rc 0 "the default job, replayed"
slower=$(sed -n 's/^rejected: .*slower \([0-9]*\).*/\1/p' "$TMP/out")
[ "${slower:-0}" -ge 10 ] || fail "the replay raced candidates out: '$slower' in $(grep rejected "$TMP/out")"
raced=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM gates WHERE gate = 'race' AND outcome = 'slower'
	AND reason LIKE 'raced out before shape %(replayed)'")
[ "$raced" -eq "$slower" ] || fail "each raced candidate has its gate row: $raced of $slower"
# a raced candidate stopped short of the suite: fewer shapes measured than the five
short=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM (SELECT g.variant_id FROM gates g
	JOIN measurements m ON m.variant_id = g.variant_id WHERE g.gate = 'race'
	GROUP BY g.variant_id HAVING count(*) < 5)")
[ "$short" -eq "$slower" ] || fail "raced candidates are measured on fewer shapes: $short of $slower"
run_tuner top --k 1 --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]
sys.exit(r["params"] != dict(BLOCK_M=128, BLOCK_N=128, NUM_WARPS=8, STAGES=2, SWIZZLE=0, PAD=8))' "$TMP/out" ||
	fail "the winner is the sweep's optimum: $(head -c 300 "$TMP/out")"
evals() {
	sqlite3 "$1" "SELECT v.params, e.generation, e.outcome, printf('%.6f', e.fitness)
		FROM evals e JOIN variants v ON v.id = e.variant_id WHERE e.run_id = $2 ORDER BY v.params"
}
evals "$TUNER_DB" 1 >"$TMP/first.txt"

# the same run again in the same database: every shape it measured is there; the rest are copied
run_tuner run --replay "$FIX" --seed 1
expect_rc 0 "the same replay in a database that holds its shapes"
evals "$TUNER_DB" 2 >"$TMP/second.txt"
diff "$TMP/first.txt" "$TMP/second.txt" >"$TMP/diff" ||
	fail "the race depends on what the database held: $(head -5 "$TMP/diff")"
# A sweep is not raced: every point is measured in full, since it is the landscape that searches are
# judged against (the fixture itself was made so, before racing existed: its 148 correct points).
TUNER_DB="$TMP/sweep.db" run_tuner sweep --replay "$FIX" --population 64
expect_rc 0 "the sweep, replayed"
expect_no_grep "$TMP/out" "slower" "no sweep candidate is raced out"
expect_grep "$TMP/out" "replayed: 148 correct" "every correct point of the recording is measured"
finish
