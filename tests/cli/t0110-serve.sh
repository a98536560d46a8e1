# tuner serve on SQLite: submit's checks (file:line, the roots, nothing echoed, nothing queued),
# 4 fake GPUs running 3 replay jobs whose results equal plain tuner run's, jobs and wait,
# cancel, SIGTERM's drain and the restart that resumes, SIGKILL midway, SIGHUP's new log.
. tests/cli/lib.sh
. tests/cli/serve-lib.sh
export TUNER_WORKER_FAKE=1
Q=$TMP/queue.db

for s in 11 12 13 14 15; do
	solo $s 4 "$TMP/solo-$s.db"
done

# ---------------------------------------------------------------- submit's checks
mkdir -p "$TMP/root" "$TMP/outside"
printf 'SECRET-LINE: 42\n' >"$TMP/outside/secret.yaml"
run_tuner --db "$Q" submit configs/default.yaml
expect_rc 64 "no --root and no server to take roots from"
expect_grep "$TMP/err" "--root DIR" "says how to name the roots"

sed "s#^template: .*#template: $TMP/outside/secret.yaml#" configs/default.yaml >"$TMP/root/escape.yaml"
run_tuner --db "$Q" submit --root "$TMP/root" "$TMP/root/escape.yaml"
expect_rc 78 "a template outside the roots"
expect_grep "$TMP/err" "is outside the directories this daemon reads jobs from" "the refusal"
expect_no_grep "$TMP/err" "SECRET-LINE" "the refused file is not echoed"
ln -s "$TOP/configs/default.yaml" "$TMP/root/link.yaml"
run_tuner --db "$Q" submit --root "$TMP/root" "$TMP/root/link.yaml"
expect_rc 78 "a symlink out of the roots"
expect_grep "$TMP/err" "config '$TMP/root/link.yaml' is outside" "the symlink is resolved"
run_tuner --db "$Q" submit --root "$TOP/configs" --root "$TOP/kernels" --replay "$REC" configs/default.yaml
expect_rc 78 "a recording outside the roots"
expect_grep "$TMP/err" "recording '$REC' is outside" "names the recording"
printf 'template: %s\narch: sm_90\nshapes:\n  - {name: a, B: 1, H: 8, S: 512, D: 64}\nbudgt: {}\n' \
	"$TOP/kernels/templates/flash_fwd.yaml" >"$TMP/root/bad.yaml"
run_tuner --db "$Q" submit --root "$TMP/root" --root "$TOP/kernels" "$TMP/root/bad.yaml"
expect_rc 78 "a bad config"
expect_grep "$TMP/err" "bad.yaml:5" "file:line"
run_tuner --db "$Q" jobs
expect_rc 0 "jobs"
expect_grep "$TMP/out" "no jobs" "nothing was queued"

# ---------------------------------------------------------------- 3 jobs on 4 GPUs
for s in 11 12 13; do
	run_tuner --db "$Q" submit --root "$TOP" --replay "$REC" --generations 4 --seed $s configs/default.yaml
	expect_rc 0 "submit seed $s"
done
[ "$(cat "$TMP/out")" = 3 ] || fail "submit prints the job's id: $(cat "$TMP/out")"
run_tuner --db "$Q" jobs
expect_grep "$TMP/out" "queued" "queued before a server runs"
start_serve "$TMP/serve.log" "$Q" --root "$TOP" --gpus 0,1,2,3 --heartbeat 0.5 --batch 2
for j in 1 2 3; do
	run_tuner --db "$Q" wait --timeout 60 $j
	expect_rc 0 "job $j done"
	expect_grep "$TMP/out" "job $j done (run" "wait says how it ended"
done
for j in 1 2 3; do
	same_as_solo "$Q" $j $((10 + j))
done
gpus=$(sqlite3 "$Q" "SELECT count(DISTINCT gpu) FROM claims")
[ "$gpus" -ge 2 ] || fail "the jobs' candidates were spread over the GPUs: $gpus used"
[ "$(sqlite3 "$Q" "SELECT count(*) FROM claims WHERE done = 0")" -eq 0 ] || fail "claims left undone"
run_tuner --db "$Q" jobs
expect_rc 0 "jobs"
expect_grep "$TMP/out" "4/4, 64" "progress: generations and evaluations"
expect_grep "$TMP/out" "x2." "the best so far"
expect_grep "$TMP/out" "1 server serving" "the server"
expect_grep "$TMP/serve.log" "job 1 done" "the log says a job ended"

# SIGHUP: a new log where the old one was moved away
mv "$TMP/serve.log" "$TMP/serve.log.1"
kill -HUP "$SERVE_PID"
sleep 0.5
expect_grep "$TMP/serve.log" "the log is open again" "SIGHUP reopens the log"

# cancel: a queued job at once; the server's view of the queue follows
# without --root, submit reads the job under the roots of the servers running on the database
run_tuner --db "$Q" submit --replay "$REC" --generations 4 --seed 99 --priority -1 configs/default.yaml
expect_rc 0 "submit under the running server's roots"
j=$(cat "$TMP/out")
stop_serve "$SERVE_PID"
expect_rc 0 "SIGTERM: the server drains and exits 0"
expect_grep "$TMP/serve.log" "draining" "the drain is logged"
run_tuner --db "$Q" cancel "$j"
expect_rc 0 "cancel a job nobody runs"
expect_grep "$TMP/out" "job $j cancelled" "at once"
run_tuner --db "$Q" wait "$j"
expect_rc 1 "wait on a cancelled job"
run_tuner --db "$Q" cancel "$j"
expect_rc 65 "cancel it again"

# ---------------------------------------------------------------- SIGTERM, then a restart
export TUNER_TEST_STEP_DELAY=0.05
D=$TMP/drain.db
run_tuner --db "$D" submit --root "$TOP" --replay "$REC" --generations 4 --seed 14 configs/default.yaml
start_serve "$TMP/drain.log" "$D" --root "$TOP" --gpus 0,1 --heartbeat 0.5 --batch 1
wait_evaluated "$D" 1 20
stop_serve "$SERVE_PID"
expect_rc 0 "drained"
[ "$(job_field "$D" 1 status)" = interrupted ] || fail "a drained job is interrupted: $(job_field "$D" 1 status)"
[ "$(sqlite3 "$D" "SELECT count(*) FROM claims WHERE done = 0 AND server_id IS NOT NULL")" -eq 0 ] ||
	fail "the drain returned its claims"
n=$(job_field "$D" 1 evaluated)
[ "$n" -lt 64 ] || fail "the job was drained before its end ($n evaluated)"
start_serve "$TMP/drain2.log" "$D" --root "$TOP" --gpus 0,1 --heartbeat 0.5
run_tuner --db "$D" wait --timeout 60 1
expect_rc 0 "the restart resumes it"
expect_grep "$TMP/drain2.log" "job 1: resumes run 1" "resumed, not started again"
same_as_solo "$D" 1 14
stop_serve "$SERVE_PID"

# ---------------------------------------------------------------- SIGKILL midway
K=$TMP/kill.db
run_tuner --db "$K" submit --root "$TOP" --replay "$REC" --generations 4 --seed 15 configs/default.yaml
start_serve "$TMP/kill.log" "$K" --root "$TOP" --gpus 0,1,2 --heartbeat 0.5 --batch 1
wait_evaluated "$K" 1 24
stop_serve "$SERVE_PID" KILL
[ "$(job_field "$K" 1 status)" = interrupted ] || fail "a killed server's job reads interrupted"
start_serve "$TMP/kill2.log" "$K" --root "$TOP" --gpus 0,1,2 --heartbeat 0.5
run_tuner --db "$K" wait --timeout 60 1
expect_rc 0 "the job finishes after the kill"
same_as_solo "$K" 1 15
# nothing lost, nothing repeated: the same measurements and evaluations as plain tuner run's
solo_m=$(sqlite3 "$TMP/solo-15.db" "SELECT count(*) FROM measurements")
[ "$(sqlite3 "$K" "SELECT count(*) FROM measurements")" -eq "$solo_m" ] || fail "measurements differ after the kill"
[ "$(sqlite3 "$K" "SELECT count(*) FROM evals")" -eq 64 ] || fail "64 evaluations after the kill"
stop_serve "$SERVE_PID"

# ---------------------------------------------------------------- compiled and measured
# Not a replay: each GPU's lane compiles what it claims and measures it on its (fake) GPU, the
# elite's newcomers meet the alignment gate there, and the result is plain tuner run's. The final
# elite goes through compute-sanitizer (the stand-in), whose log lies in TMPDIR, outside the
# server's roots: tuner's own file, which the confinement of the job's inputs must not refuse.
G=$TMP/gpu.db
export TUNER_COMPUTE_SANITIZER="$TOP/tests/fixtures/tools/fake-compute-sanitizer"
export FAKE_SANITIZER_CALLS="$TMP/tool-calls"
TUNER_DB="$TMP/gpu-solo.db" run_tuner run --generations 3 --population 4 --seed 3
expect_rc 0 "plain tuner run on the fake GPU"
signature "$TMP/gpu-solo.db" 1 >"$TMP/solo-gpu.sig"
run_tuner --db "$G" submit --root "$TOP" --generations 3 --population 4 --seed 3 configs/default.yaml
start_serve "$TMP/gpu.log" "$G" --root "$TOP" --gpus 0,1,2 --heartbeat 0.5 --batch 1
run_tuner --db "$G" wait --timeout 120 1
expect_rc 0 "a compiled job"
same_as_solo "$G" 1 gpu
stop_serve "$SERVE_PID"
[ "$(sqlite3 "$G" "SELECT count(DISTINCT gpu) FROM claims")" -ge 2 ] || fail "GPUs shared the job"
for q in "SELECT count(*) FROM measurements" "SELECT gate || outcome || count(*) FROM gates GROUP BY gate, outcome"; do
	[ "$(sqlite3 "$G" "$q")" = "$(sqlite3 "$TMP/gpu-solo.db" "$q")" ] ||
		fail "'$q' differs from plain tuner run's: $(sqlite3 "$G" "$q" | tr '\n' ' ') vs $(sqlite3 "$TMP/gpu-solo.db" "$q" | tr '\n' ' ')"
done
unset TUNER_TEST_STEP_DELAY
[ "$(grep -c . "$TMP/tool-calls")" -ge 2 ] || fail "compute-sanitizer ran in the run and the job"
[ "$(sqlite3 "$G" "SELECT count(*) FROM gates WHERE gate = 'tools' AND outcome = 'ok' AND reason LIKE '%found nothing'")" -ge 1 ] ||
	fail "the job's final elite passed compute-sanitizer: $(sqlite3 "$G" "SELECT gate, outcome, reason FROM gates WHERE gate = 'tools'")"
unset TUNER_COMPUTE_SANITIZER FAKE_SANITIZER_CALLS

# ---------------------------------------------------------------- the server's own checks
mkdir -p "$TMP/other"
F=$TMP/fail.db
run_tuner --db "$F" submit --root "$TOP" --replay "$REC" --generations 1 configs/default.yaml
start_serve "$TMP/fail.log" "$F" --root "$TMP/other" --gpus 0
run_tuner --db "$F" wait --timeout 30 1
expect_rc 1 "a job outside the server's roots fails"
expect_grep "$TMP/out" "is outside the directories this daemon reads jobs from" "and says why"
expect_no_grep "$TMP/fail.log" "correctness:" "the config's text is not logged"
stop_serve "$SERVE_PID"
run_tuner --db "$F" serve --gpus 0
expect_rc 64 "serve needs --root"
finish
