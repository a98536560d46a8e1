# PostgreSQL as the store (tests/pg.sh starts the server): what a run records reads out the same
# as from SQLite; tuner serve with 4 fake GPUs runs 3 replay jobs to plain tuner run's results;
# a job's --evals budget ends it done; two servers on two "hosts" share the jobs, one is killed
# midway and the other finishes them; the store crashes and restarts under a server; the password
# never reaches the command line or the log; without libpq, a clear error.
. tests/cli/lib.sh
. tests/cli/serve-lib.sh
export TUNER_WORKER_FAKE=1

# ---------------------------------------------------------------- the same semantics as SQLite
P=$(pg_url t0120_read)
for db in "$TMP/read.db" "$P"; do
	run_tuner --db "$db" run --replay "$REC" --generations 3 --seed 5
	expect_rc 0 "a replayed run on $db"
done
i=0
for args in "show" "show 5" "show 2a" "top --k 5" "top --json --k 8" "export --k 2" \
	"export --format json --k 3" "runs --json"; do
	i=$((i + 1))
	run_tuner --db "$TMP/read.db" $args
	cp "$TMP/out" "$TMP/lite.$i"
	a=$rc
	run_tuner --db "$P" $args
	cp "$TMP/out" "$TMP/pg.$i"
	[ "$rc" -eq "$a" ] || fail "'$args': exit $a on SQLite, $rc on PostgreSQL"
	# what differs by nature: times, wall time, where the database is
	sed -i -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?/TIME/g; s/wall time .*//;
		s/"wall_seconds": [0-9.e-]+/"wall_seconds": W/; s#postgresql://[^ "]*#DB#g;
		s#'"$TMP"'/read.db#DB#g' "$TMP/lite.$i" "$TMP/pg.$i"
	cmp -s "$TMP/lite.$i" "$TMP/pg.$i" ||
		fail "'$args' reads otherwise from PostgreSQL: $(diff "$TMP/lite.$i" "$TMP/pg.$i" | head -6)"
done
[ -s "$TMP/pg.5" ] || fail "top --json printed nothing"
# T4 lists evaluations in the order they were recorded, to the millisecond: the same ones
"$TUNER" --db "$TMP/read.db" export --format t4 | sed -E 's/[0-9]{4}-[0-9-]+T[0-9:.]+Z?/TIME/g' |
	sort >"$TMP/t4.lite"
"$TUNER" --db "$P" export --format t4 | sed -E 's/[0-9]{4}-[0-9-]+T[0-9:.]+Z?/TIME/g' | sort >"$TMP/t4.pg"
[ -s "$TMP/t4.pg" ] && cmp -s "$TMP/t4.lite" "$TMP/t4.pg" || fail "T4 exports differ"

# ---------------------------------------------------------------- 3 jobs on 4 GPUs
for s in 21 22 23; do
	solo $s 4 "$TMP/solo.db"
done
Q=$(pg_url t0120_queue)
for s in 21 22 23; do
	run_tuner --db "$Q" submit --root "$TOP" --replay "$REC" --generations 4 --seed $s configs/default.yaml
	expect_rc 0 "submit seed $s"
done
start_serve "$TMP/serve.log" "$Q" --root "$TOP" --gpus 0,1,2,3 --heartbeat 0.5 --batch 2
for j in 1 2 3; do
	run_tuner --db "$Q" wait --timeout 60 $j
	expect_rc 0 "job $j done"
	same_as_solo "$Q" $j $((20 + j))
done
run_tuner --db "$Q" jobs
expect_grep "$TMP/out" "4/4, 64" "progress"
stop_serve "$SERVE_PID"
expect_rc 0 "drained"
expect_grep "$TMP/serve.log" "serving postgresql://tuner@/t0120_queue" "the log names the store"

# ---------------------------------------------------------------- a budget (t0112 on SQLite)
Q=$(pg_url t0120_budget)
run_tuner --db "$Q" submit --root "$TOP" --replay "$REC" --generations 4 --seed 21 --evals 10 \
	configs/default.yaml
expect_rc 0 "submit --evals 10"
start_serve "$TMP/budget.log" "$Q" --root "$TOP" --gpus 0,1 --heartbeat 0.5 --batch 1
run_tuner --db "$Q" wait --timeout 60 1
expect_rc 0 "the job whose budget is spent is done"
expect_grep "$TMP/out" "budget: 10 evaluations spent" "wait says why"
stop_serve "$SERVE_PID"
n=$(job_field "$Q" 1 evaluated)
# two lanes: each claims at most what the budget leaves, so one more at most
[ "$n" -ge 10 ] && [ "$n" -le 11 ] || fail "the job stopped at 10 verdicts: $n"
python3 -c "import sys; sys.exit(not 0 < float('$(job_field "$Q" 1 elapsed)') < 60)" ||
	fail "the job's elapsed time on the store's clock: $(job_field "$Q" 1 elapsed)"

# ---------------------------------------------------------------- two hosts, one killed midway
export TUNER_TEST_STEP_DELAY=0.05
Q=$(pg_url t0120_hosts)
for s in 21 22 23; do
	run_tuner --db "$Q" submit --root "$TOP" --replay "$REC" --generations 4 --seed $s configs/default.yaml
done
export TUNER_HOST=host-a
start_serve "$TMP/a.log" "$Q" --root "$TOP" --gpus 0,1 --heartbeat 0.5 --batch 1
A=$SERVE_PID
export TUNER_HOST=host-b
start_serve "$TMP/b.log" "$Q" --root "$TOP" --gpus 0,1 --heartbeat 0.5 --batch 1
B=$SERVE_PID
unset TUNER_HOST
wait_evaluated "$Q" 1 20
stop_serve "$A" KILL
run_tuner --db "$Q" jobs
expect_grep "$TMP/out" "host-b" "the other host works on"
for j in 1 2 3; do
	run_tuner --db "$Q" wait --timeout 90 $j
	expect_rc 0 "job $j done after host-a died"
	same_as_solo "$Q" $j $((20 + j))
done
# host-b reaps host-a once its heartbeat is stale, claims or not; the jobs may all be done before
# that (host-a held no claim when it died, or the machine is loaded): wait for it, 30 s at most
i=0
while ! grep -q "dead server" "$TMP/b.log" && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
stop_serve "$B"
unset TUNER_TEST_STEP_DELAY
# both hosts measured, and nothing was lost or repeated: plain tuner run's measurements, exactly
counts=$("$PG_BIN/psql" -X -q -t -A "$Q" -c "SELECT count(DISTINCT c.server_id) FROM claims c
	JOIN servers s ON s.id = c.server_id WHERE c.done = 1" -c "SELECT count(*) FROM measurements" \
	-c "SELECT count(*) FROM evals" -c "SELECT count(*) FROM claims WHERE done = 0")
[ "$(echo "$counts" | sed -n 1p)" -eq 2 ] || fail "both servers evaluated candidates: $counts"
[ "$(echo "$counts" | sed -n 2p)" -eq "$(sqlite3 "$TMP/solo.db" "SELECT count(*) FROM measurements")" ] ||
	fail "the measurements are plain tuner run's: $counts"
[ "$(echo "$counts" | sed -n 3p)" -eq 192 ] || fail "64 evaluations per job: $counts"
[ "$(echo "$counts" | sed -n 4p)" -eq 0 ] || fail "every claim done: $counts"
expect_grep "$TMP/b.log" "dead server" "host-b took host-a for dead"

# ---------------------------------------------------------------- the store restarts
export TUNER_TEST_STEP_DELAY=0.05
Q=$(pg_url t0120_restart)
run_tuner --db "$Q" submit --root "$TOP" --replay "$REC" --generations 4 --seed 21 configs/default.yaml
start_serve "$TMP/restart.log" "$Q" --root "$TOP" --gpus 0,1 --heartbeat 0.5 --batch 1
wait_evaluated "$Q" 1 10
. tests/pg.sh
pg_restart || fail "the test server did not restart"
run_tuner --db "$Q" wait --timeout 60 1
expect_rc 0 "the job finishes across the store's restart"
same_as_solo "$Q" 1 21
expect_grep "$TMP/restart.log" "connected to the database again" "the server connects again"
stop_serve "$SERVE_PID"
expect_rc 0 "the server drains after the restart"
unset TUNER_TEST_STEP_DELAY

# ---------------------------------------------------------------- the password, libpq
W="postgresql://tuner:hunter2@/t0120_hosts?host=$PG_DIR"
run_tuner --db "$W" serve --root "$TOP" --gpus 0
expect_rc 64 "a password on the command line is refused"
expect_grep "$TMP/err" "PGPASSWORD" "and says where it goes"
expect_no_grep "$TMP/err" "hunter2" "without repeating it"
export TUNER_DB="$W"
start_serve "$TMP/pw.log" "" --root "$TOP" --gpus 0 --heartbeat 0.5
stop_serve "$SERVE_PID"
export TUNER_DB="$TMP/test.db"
expect_grep "$TMP/pw.log" "postgresql://tuner:***@" "the log shows the URL redacted"
expect_no_grep "$TMP/pw.log" "hunter2" "never the password"
TUNER_LIBPQ=/nonexistent/libpq.so.5 run_tuner --db "$Q" jobs
expect_rc 66 "no libpq"
expect_grep "$TMP/err" "cannot load the PostgreSQL client library" "a clear error"
finish
