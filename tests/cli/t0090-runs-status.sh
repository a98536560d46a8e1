# The run you see is the run you get: 'runs' lists them; a killed run reads as interrupted (and
# the next writer stores it); top and export take the latest completed run; a closed pipe or
# Ctrl-C leaves a stopped, resumable run and exits 128 + the signal with a coherent summary; a
# resume refuses what it cannot honour; show's wall time is the time a run ran.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/sweep-h100.db"
ARGS="--generations 4 --population 12 --seed 5"
export TUNER_DB="$TMP/s.db"
status_of() {
	sqlite3 "$TUNER_DB" "SELECT status FROM runs WHERE id = $1"
}

run_tuner run --replay "$FIX" $ARGS
expect_rc 0 "run 1"
# Killed outright after 17 verdicts.
TUNER_TEST_SIGNAL=17:9 run_tuner run --replay "$FIX" $ARGS
[ "$rc" -eq 137 ] || fail "the hook kills run 2 (exit $rc)"

run_tuner runs
expect_rc 0 "runs"
cp "$TMP/out" "$TMP/runs"
awk '$1 == 1 { print $2, $NF }' "$TMP/runs" | grep -qx "done 48" || fail "runs: run 1 done, 48 evaluations: $(cat "$TMP/runs")"
awk '$1 == 2 { print $2, $NF }' "$TMP/runs" | grep -qx "interrupted 17" || fail "runs: run 2 interrupted, 17 evaluations: $(cat "$TMP/runs")"
grep -q '^ *1 .*configs/default.yaml .*[0-9]\.[0-9][0-9][0-9]x' "$TMP/runs" || fail "runs shows the config and the best"
run_tuner runs --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [x["status"] for x in r] == ["done", "interrupted"] and r[1]["evaluations"] == 17, r' \
	"$TMP/out" || fail "runs --json"

run_tuner show
expect_grep "$TMP/out" "run 2 (interrupted)" "show says the killed run is interrupted"
expect_grep "$TMP/out" "is gone" "show says its process is gone"
[ "$(status_of 2)" = running ] || fail "a reader does not write the status"

# top and export take the latest completed run, not the cut-off one.
run_tuner top --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["run"] == 1' "$TMP/out" ||
	fail "top takes the latest completed run"
run_tuner export --format json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["run"] == 1' "$TMP/out" ||
	fail "export takes the latest completed run"
run_tuner top --run 2 --json
expect_rc 0 "top --run of the interrupted run"
sqlite3 "$TMP/s.db" ".backup '$TMP/none-done.db'"
sqlite3 "$TMP/none-done.db" "UPDATE runs SET status = 'stopped' WHERE id = 1"
TUNER_DB="$TMP/none-done.db" run_tuner top
expect_rc 65 "top without a completed run"
expect_grep "$TMP/err" "has no completed run; the latest, run 2, is interrupted (name it with --run 2)" \
	"top says why and what to do"

# A resume keeps the run's settings: another is an error, and nothing is written.
for bad in "--seed 6" "--population 5" "--strategy random" "--no-gpu" "--replay $TMP/other.db"; do
	run_tuner run --resume=2 $bad
	expect_rc 64 "run --resume $bad"
	expect_grep "$TMP/err" "${bad%% *}" "the refusal names $bad"
done
run_tuner sweep --resume=2
expect_rc 64 "sweep --resume of an evolve run"
[ "$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE run_id = 2")" = 17 ] ||
	fail "a refused resume evaluated nothing"
# The next writer stores what the readers derived.
[ "$(status_of 2)" = interrupted ] || fail "the next writer stores 'interrupted' (got $(status_of 2))"

# Resumed with the same seed: fine; the summary counts outcomes, not gates.
run_tuner run --resume=2 --seed 5
expect_rc 0 "resume with the run's own seed"
expect_grep "$TMP/out" "(17 answered from this run's records)" "the resume reuses the 17 verdicts"
grep -Eq 'rejected.*correct [0-9]' "$TMP/out" && fail "a resume does not count reused verdicts as 'correct' rejections"
[ "$(status_of 2)" = done ] || fail "the resumed run is done"

# A live run is not resumed by another process.
sqlite3 "$TUNER_DB" "UPDATE runs SET status = 'running', host = '$(uname -n)', pid = $$, pid_start = NULL WHERE id = 2"
run_tuner runs
awk '$1 == 2 { print $2 }' "$TMP/out" | grep -qx running || fail "a run whose process is alive is running"
run_tuner run --resume=2
expect_rc 75 "resuming a live run"
expect_grep "$TMP/err" "run 2 is running (pid $$" "the refusal names the process"
sqlite3 "$TUNER_DB" "UPDATE runs SET status = 'done' WHERE id = 2"

# Ctrl-C: 130, the run stopped, and the numbers agree with each other and with the database.
TUNER_TEST_SIGNAL=30:2 run_tuner run --replay "$FIX" $ARGS
expect_rc 130 "Ctrl-C exits 130"
[ "$(status_of 3)" = stopped ] || fail "run 3 is stopped"
line=$(grep '^stopped by SIGINT in generation' "$TMP/out")
sum=$(grep 'generations\? complete,' "$TMP/out")
n=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE run_id = 3")
gen=$(echo "$line" | sed -n 's/.* generation \([0-9]*\): \([0-9]*\) of its \([0-9]*\) .*/\1/p')
got=$(echo "$line" | sed -n 's/.* generation \([0-9]*\): \([0-9]*\) of its \([0-9]*\) .*/\2/p')
total=$(echo "$sum" | sed -n 's/^\([0-9]*\) candidates in .*/\1/p')
complete=$(echo "$sum" | sed -n 's/.*: \([0-9]*\) generations\? complete, .*/\1/p')
[ -n "$gen" ] && [ -n "$got" ] && [ -n "$total" ] && [ -n "$complete" ] ||
	fail "the stop and the summary say where: '$line' / '$sum'"
[ "$got" -gt 0 ] || fail "the stop counts the verdicts reached: '$line'"
[ "$complete" -eq $((gen - 1)) ] || fail "generations complete: '$sum' vs '$line'"
[ "$total" -eq $((complete * 12 + got)) ] || fail "the summary adds up: '$sum' vs '$line'"
[ "$total" -eq "$n" ] || fail "the summary counts what the database holds: $total vs $n"
expect_grep "$TMP/out" "continue it with: tuner run --resume=3" "the stop says how to go on"

# Stopped three hours ago and resumed now: the wall time is the time it ran.
sqlite3 "$TUNER_DB" "UPDATE runs SET started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3 hours') WHERE id = 3"
run_tuner run --resume=3
expect_rc 0 "resume after Ctrl-C"
run_tuner show --run 3
wall=$(sed -n 's/^wall time *\([0-9.]*\) s.*/\1/p' "$TMP/out")
[ -n "$wall" ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 600 else 1)" "$wall" ||
	fail "show's wall time excludes the three hours the run lay stopped: '$wall'"

# A closed pipe (tuner run | head): SIGPIPE stops the run, recorded, resumable.
python3 - "$TUNER" "$FIX" >"$TMP/pipe.txt" 2>&1 <<'EOF' || fail "a closed pipe: $(cat "$TMP/pipe.txt")"
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # nobody will read: the first write gets SIGPIPE
p = subprocess.run([sys.argv[1], "run", "--replay", sys.argv[2], "--generations", "4",
                    "--population", "12", "--seed", "5"], stdout=w, stderr=subprocess.PIPE)
os.close(w)
err = p.stderr.decode()
assert p.returncode == -13, (p.returncode, err)
assert "stopped; continue it with: tuner run --resume=4" in err, err
EOF
[ "$(status_of 4)" = stopped ] || fail "a run whose output pipe closed is stopped, not running: $(status_of 4)"
run_tuner run --resume=4
expect_rc 0 "resume after SIGPIPE"
a=$(sqlite3 "$TUNER_DB" "SELECT group_concat(variant_id || e.outcome, ',') FROM (SELECT * FROM evals WHERE run_id = 1 ORDER BY variant_id) e")
b=$(sqlite3 "$TUNER_DB" "SELECT group_concat(variant_id || e.outcome, ',') FROM (SELECT * FROM evals WHERE run_id = 4 ORDER BY variant_id) e")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "stopped by SIGPIPE and resumed, the run ends as an uninterrupted one"

# --quiet prints nothing but what was asked; --verbose a line per verdict.
run_tuner --quiet run --replay "$FIX" --generations 1 --population 6 --seed 9
expect_rc 0 "run --quiet"
[ -s "$TMP/out" ] && fail "run --quiet printed: $(head -3 "$TMP/out")"
run_tuner run --replay "$FIX" --generations 1 --population 6 --seed 10 --verbose
expect_rc 0 "run --verbose"
[ "$(grep -c '^  BLOCK_M=' "$TMP/out")" -eq 6 ] || fail "run --verbose prints each verdict: $(cat "$TMP/out")"
finish
