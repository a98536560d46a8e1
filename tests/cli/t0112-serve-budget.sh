# A served job's budget: `submit --evals N` ends the job at N verdicts and `submit --time D` once
# D has passed since a server first started it, both done (not failed), the reason in the job's
# message, the log and `wait`, the elite of the verdicts reached stored and the run left stopped,
# resumable; bad budgets are refused with EX_USAGE and nothing queued. Replays: no GPU needed.
. tests/cli/lib.sh
. tests/cli/serve-lib.sh
export TUNER_WORKER_FAKE=1

run_tuner submit --help
expect_rc 0 "submit --help"
expect_grep "$TMP/out" "--time D" "the help names --time"
expect_grep "$TMP/out" "--evals N" "the help names --evals"

# ---------------------------------------------------------------- bad budgets: nothing queued
B=$TMP/bad.db
run_tuner --db "$B" submit --root "$TOP" --replay "$REC" configs/default.yaml
expect_rc 0 "a job without a budget"
for bad in "--time 0" "--time -5m" "--time 2w" "--time 9d" "--time 10x" "--evals 0" "--evals x" \
	"--evals -3"; do
	# shellcheck disable=SC2086
	run_tuner --db "$B" submit --root "$TOP" --replay "$REC" $bad configs/default.yaml
	expect_rc 64 "submit $bad"
done
expect_grep "$TMP/err" "--evals" "the error names the option"
[ "$(sqlite3 "$B" "SELECT count(*) FROM jobs")" -eq 1 ] || fail "a bad budget queued a job"
opts=$(sqlite3 "$B" "SELECT options FROM jobs")
case $opts in *time* | *evals*) fail "a job without a budget stores one: $opts" ;; esac

# ---------------------------------------------------------------- --evals: N verdicts, done
E=$TMP/evals.db
run_tuner --db "$E" submit --root "$TOP" --replay "$REC" --generations 4 --seed 11 --evals 20 \
	configs/default.yaml
expect_rc 0 "submit --evals 20"
run_tuner --db "$E" jobs
expect_grep "$TMP/out" "budget 20 evaluations" "jobs shows the budget while queued"
start_serve "$TMP/evals.log" "$E" --root "$TOP" --gpus 0 --heartbeat 0.5 --batch 4
run_tuner --db "$E" wait --timeout 60 1
expect_rc 0 "a job whose --evals budget is spent ends done"
expect_grep "$TMP/out" "job 1 done" "wait says done"
expect_grep "$TMP/out" "budget: 20 evaluations spent" "wait says why"
stop_serve "$SERVE_PID"
run=$(job_run "$E" 1)
n=$(sqlite3 "$E" "SELECT count(*) FROM evals WHERE run_id = $run")
# one lane claims no more than the budget leaves: exactly N
[ "$n" -eq 20 ] || fail "the job stopped at 20 verdicts: $n"
[ "$(job_field "$E" 1 status)" = done ] || fail "the job is done: $(job_field "$E" 1 status)"
grep -qE "job 1 done \(lane 0\): best (x[0-9.]+|-): budget: 20 evaluations spent" "$TMP/evals.log" ||
	fail "the log line says why: $(grep 'job 1' "$TMP/evals.log")"
st=$(sqlite3 "$E" "SELECT status FROM runs WHERE id = $run")
[ "$st" = stopped ] || fail "the run is left stopped, resumable: '$st'"
# 16 candidates a generation: the first observed whole, the second's 4 verdicts in its elite
g=$(sqlite3 "$E" "SELECT max(generation) FROM elite WHERE run_id = $run")
[ "$g" = 1 ] || fail "the elite of the verdicts reached is stored (generation 1): '$g'"
pop=$(sqlite3 "$E" "SELECT count(*) FROM population WHERE run_id = $run")
[ "$pop" -eq 20 ] || fail "every verdict reached is observed: $pop of 20"
run_tuner --db "$E" jobs
expect_grep "$TMP/out" "(budget: 20 evaluations spent" "jobs says why it ended"
# the elite is what tuner run stopped at the same 20 verdicts stores
TUNER_DB="$TMP/solo.db" run_tuner run --replay "$REC" --generations 4 --seed 11 --evals 20
expect_rc 0 "tuner run --evals 20"
m=$(sqlite3 "$TMP/solo.db" "SELECT count(*) FROM evals")
if [ "$m" -eq 20 ]; then
	signature "$TMP/solo.db" 1 >"$TMP/solo.sig"
	signature "$E" "$run" >"$TMP/job.sig"
	cmp -s "$TMP/solo.sig" "$TMP/job.sig" ||
		fail "the job's elite differs from tuner run's: $(diff "$TMP/solo.sig" "$TMP/job.sig" | head -5)"
fi

# ---------------------------------------------------------------- --time: stops, done
T=$TMP/time.db
run_tuner --db "$T" submit --root "$TOP" --replay "$REC" --generations 4 --seed 12 --time 2s \
	configs/default.yaml
expect_rc 0 "submit --time 2s"
# each step takes 0.2 s: 64 candidates one at a time would take 13 s
TUNER_TEST_STEP_DELAY=0.2 start_serve "$TMP/time.log" "$T" --root "$TOP" --gpus 0 --heartbeat 0.5 \
	--batch 1
run_tuner --db "$T" wait --timeout 60 1
expect_rc 0 "a job whose --time budget is spent ends done"
expect_grep "$TMP/out" "budget: 2s of wall time spent" "wait says why"
stop_serve "$SERVE_PID"
grep -qE "job 1 done \(lane 0\): best (x[0-9.]+|-): budget: 2s of wall time spent" "$TMP/time.log" ||
	fail "the log line says why: $(grep 'job 1' "$TMP/time.log")"
n=$(job_field "$T" 1 evaluated)
[ "$n" -lt 64 ] || fail "the time budget stopped the job short: $n of 64"
[ "$n" -ge 2 ] || fail "the job ran until its time was spent: $n evaluated"
el=$(job_field "$T" 1 elapsed)
python3 -c "import sys; sys.exit(not 2 <= float('$el') < 30)" || fail "elapsed $el s"
st=$(sqlite3 "$T" "SELECT status FROM runs")
[ "$st" = stopped ] || fail "the run is left stopped: '$st'"
# the run goes on where the job stopped, as any stopped run does
TUNER_DB="$T" run_tuner run --resume
expect_rc 0 "the job's run resumed by tuner run"
[ "$(sqlite3 "$T" "SELECT count(*) FROM evals")" -eq 64 ] || fail "the resumed run completes"
finish
