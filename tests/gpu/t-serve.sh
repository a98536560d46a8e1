#!/bin/sh
# tuner serve on a GPU: two jobs submitted to a server that owns GPU 0 run to completion and
# `tuner jobs` shows them done with their best; then `tuner run` with the same configs and seeds,
# on the same database (so answering from the measurements the jobs took: the same
# measurements), must reach the same elites, bit for bit.
#
# Usage, from the repository root: TUNER=build/tuner tests/gpu/t-serve.sh
# SERVE_GENERATIONS and SERVE_POPULATION size the jobs (3 and 8: a few minutes on an H100).
# Prints one "ok      ..." line per check that holds and one "FAIL: ..." line per check that
# does not; exits 1 when any failed.
TUNER=${TUNER:-build/tuner}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-serve.XXXXXX") || exit 1
SERVE_PID=
trap '[ -n "$SERVE_PID" ] && kill -9 "$SERVE_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
export TUNER_CACHE="$TMP/cache"
export NO_COLOR=1
GENS=${SERVE_GENERATIONS:-3}
POP=${SERVE_POPULATION:-8}
DB=$TMP/serve.db
fails=0
. tests/gpu/lib.sh

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

pass() {
	echo "ok      $*"
}

# signature RUN: the final elite in rank order, then every correct variant's fitness, by hash.
signature() {
	"$TUNER" --db "$DB" top --json --run "$1" --k 100000 | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("elite generation", d["elite_generation"])
for r in d["results"]:
    if r["elite"]:
        print("elite", r["rank"], r["hash"], repr(r["fitness"]))
for r in sorted((r for r in d["results"] if not r["elite"]), key=lambda r: r["hash"]):
    print("ok", r["hash"], repr(r["fitness"]))
'
}

for s in 1 2; do
	if "$TUNER" --db "$DB" submit --root "$PWD" --generations "$GENS" --population "$POP" \
		--seed "$s" configs/default.yaml >"$TMP/submit.$s" 2>&1; then
		pass "job $(cat "$TMP/submit.$s") submitted (seed $s)"
	else
		fail "submit seed $s: $(cat "$TMP/submit.$s")"
	fi
done
"$TUNER" --db "$DB" serve --root "$PWD" --gpus 0 --log "$TMP/serve.log" >/dev/null 2>&1 &
SERVE_PID=$!
for j in 1 2; do
	if "$TUNER" --db "$DB" wait --timeout 1800 "$j" >"$TMP/wait.$j" 2>&1; then
		pass "$(cat "$TMP/wait.$j")"
	else
		fail "job $j: $(cat "$TMP/wait.$j")"
	fi
done
"$TUNER" --db "$DB" jobs | tee "$TMP/jobs"
[ "$(grep -c ' done ' "$TMP/jobs")" -eq 2 ] && pass "tuner jobs shows both done" ||
	fail "tuner jobs does not show both done"
grep -q 'x[0-9]' "$TMP/jobs" && pass "with their best" || fail "no best in tuner jobs"
kill -TERM "$SERVE_PID"
rc=0
wait "$SERVE_PID" || rc=$?
SERVE_PID=
[ "$rc" -eq 0 ] && pass "SIGTERM: the server drained and exited 0" || fail "serve exited $rc"
grep -q "serving .* on NVIDIA" "$TMP/serve.log" && pass "the server ran on $(sed -n 's/.* on \(NVIDIA[^,]*\).*/\1/p' "$TMP/serve.log" | head -1)" ||
	fail "the server did not run on an NVIDIA GPU: $(head -3 "$TMP/serve.log")"
m=$(query "$DB" "SELECT count(*) FROM measurements WHERE median_us IS NOT NULL")
[ "${m:-0}" -gt 0 ] && pass "the jobs timed $m shapes on the GPU" || fail "nothing was timed"

# the same configs and seeds through tuner run: runs 3 and 4, on the jobs' measurements
for s in 1 2; do
	"$TUNER" --db "$DB" run --generations "$GENS" --population "$POP" --seed "$s" \
		>"$TMP/run.$s" 2>&1 || fail "tuner run seed $s: $(tail -3 "$TMP/run.$s")"
done
for s in 1 2; do
	job_run=$(query "$DB" "SELECT run_id FROM jobs WHERE id = $s")
	signature "$job_run" >"$TMP/job.$s.sig"
	signature $((2 + s)) >"$TMP/run.$s.sig"
	if [ -s "$TMP/job.$s.sig" ] && cmp -s "$TMP/job.$s.sig" "$TMP/run.$s.sig"; then
		pass "job $s's elite equals tuner run's (seed $s): $(sed -n 2p "$TMP/job.$s.sig")"
	else
		fail "job $s differs from tuner run: $(diff "$TMP/job.$s.sig" "$TMP/run.$s.sig" | head -6)"
	fi
done
cp "$TMP/serve.log" "${SERVE_LOG:-/dev/null}" 2>/dev/null
[ "$fails" -eq 0 ]
