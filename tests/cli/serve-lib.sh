# Helpers for the tuner serve tests (sourced after lib.sh): servers in the background, the
# result of a run in a form two databases can be compared by, a PostgreSQL database per test.
REC=tests/fixtures/sweep-h100.db
SERVE_PIDS=""
trap 'for p in $SERVE_PIDS; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# start_serve LOG DB ARGS...: tuner serve in the background, $! in $SERVE_PID; waits until it
# serves (the "serving" line in LOG), at most 20 s. DB "": $TUNER_DB.
start_serve() {
	log=$1
	db=$2
	shift 2
	if [ -n "$db" ]; then
		"$TUNER" --db "$db" serve --log "$log" "$@" >/dev/null 2>&1 &
	else
		"$TUNER" serve --log "$log" "$@" >/dev/null 2>&1 &
	fi
	SERVE_PID=$!
	SERVE_PIDS="$SERVE_PIDS $SERVE_PID"
	i=0
	while ! grep -q "serving " "$log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 200 ] || ! kill -0 "$SERVE_PID" 2>/dev/null; then
			fail "tuner serve did not start: $(tail -5 "$log" 2>/dev/null)"
			return 1
		fi
		sleep 0.1
	done
}

# stop_serve PID [SIGNAL]: signal it (TERM) and wait for it to exit; its status in $rc.
stop_serve() {
	kill -"${2:-TERM}" "$1" 2>/dev/null
	rc=0
	wait "$1" || rc=$?
}

# signature DB RUN: a run's result as text: its final elite in rank order, then every correct
# variant with its fitness, by hash (variant ids differ between databases; ties may too).
signature() {
	"$TUNER" --db "$1" top --json --run "$2" --k 100000 | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("elite generation", d["elite_generation"])
for r in d["results"]:
    if r["elite"]:
        print("elite", r["rank"], r["hash"], repr(r["fitness"]), repr(r["fitness_lo"]), repr(r["fitness_hi"]))
for r in sorted((r for r in d["results"] if not r["elite"]), key=lambda r: r["hash"]):
    print("ok", r["hash"], repr(r["fitness"]))
'
}

# job_run DB JOB: the run of a job.
job_run() {
	"$TUNER" --db "$1" jobs --json | python3 -c '
import json, sys
print([j["run"] for j in json.load(sys.stdin)["jobs"] if j["id"] == int(sys.argv[1])][0])' "$2"
}

# job_field DB JOB FIELD: one field of a job, as tuner jobs --json has it.
job_field() {
	"$TUNER" --db "$1" jobs --json | python3 -c '
import json, sys
print([j[sys.argv[2]] for j in json.load(sys.stdin)["jobs"] if j["id"] == int(sys.argv[1])][0])' "$2" "$3"
}

# wait_evaluated DB JOB N: until the job has N candidates evaluated (at most 30 s).
wait_evaluated() {
	i=0
	while [ "$(job_field "$1" "$2" evaluated 2>/dev/null || echo 0)" -lt "$3" ]; do
		i=$((i + 1))
		[ $i -gt 300 ] && {
			fail "job $2 did not reach $3 evaluations"
			return 1
		}
		sleep 0.1
	done
}

# solo SEED GENS DB: the reference, plain tuner run, its signature in $TMP/solo-SEED.sig.
solo() {
	TUNER_DB="$3" run_tuner run --replay "$REC" --generations "$2" --seed "$1"
	expect_rc 0 "plain tuner run, seed $1"
	run=$("$TUNER" --db "$3" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
	signature "$3" "$run" >"$TMP/solo-$1.sig"
}

# same_as_solo DB JOB SEED: the job's result is plain tuner run's, bit for bit.
same_as_solo() {
	r=$(job_run "$1" "$2")
	signature "$1" "$r" >"$TMP/job-$2.sig"
	[ -s "$TMP/solo-$3.sig" ] || fail "no reference for seed $3"
	cmp -s "$TMP/job-$2.sig" "$TMP/solo-$3.sig" ||
		fail "job $2 (seed $3) differs from plain tuner run: $(diff "$TMP/solo-$3.sig" "$TMP/job-$2.sig" | head -5)"
}

# pg_url NAME: a fresh database on the suite's PostgreSQL server (tests/pg.sh), or fail.
pg_url() {
	if [ -z "${TUNER_TEST_PG:-}" ]; then
		fail "no PostgreSQL server for this test: ${TUNER_TEST_PG_WHY:-run it through tests/run.sh}"
		finish
	fi
	PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$TUNER_TEST_PG" \
		-c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" -c "CREATE DATABASE \"$1\"" >/dev/null ||
		fail "cannot create database $1"
	printf "$PG_URL_BASE\n" "$1"
}
