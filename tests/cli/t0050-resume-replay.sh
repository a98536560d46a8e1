# Replay from the committed H100 sweep; a run killed (SIGKILL) or stopped (SIGINT) in
# mid-generation resumes with no evaluation lost or repeated and ends as an uninterrupted run.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/sweep-h100.db"
before=$(cksum <"$FIX")
ARGS="--generations 4 --population 12 --seed 5"

# the evals of a run: params, outcome, fitness, in variant order
evals() {
	sqlite3 "$1" "SELECT v.params, e.generation, e.outcome, printf('%.6f', e.fitness)
		FROM evals e JOIN variants v ON v.id = e.variant_id WHERE e.run_id = ${2:-1}
		ORDER BY v.params"
}

# The uninterrupted reference.
TUNER_DB="$TMP/full.db" run_tuner run --replay "$FIX" $ARGS
expect_rc 0 "replayed run"
expect_grep "$TMP/out" "replaying the measurements of" "replay says where answers come from"
expect_no_grep "$TMP/out" "nothing was timed" "a replay has timings"
evals "$TMP/full.db" >"$TMP/full.txt"
[ "$(wc -l <"$TMP/full.txt")" -eq 48 ] || fail "4 x 12 candidates evaluated: $(wc -l <"$TMP/full.txt")"
[ "$(cksum <"$FIX")" = "$before" ] || fail "the replay wrote to its recording"
ls "$FIX"-wal "$FIX"-shm >/dev/null 2>&1 && fail "the replay left -wal/-shm files beside the recording"

# Killed after 17 verdicts: in the middle of generation 2.
TUNER_DB="$TMP/kill.db" TUNER_TEST_SIGNAL=17:9 run_tuner run --replay "$FIX" $ARGS
[ "$rc" -eq 137 ] || [ "$rc" -gt 128 ] || fail "the hook kills the run (exit $rc)"
n=$(sqlite3 "$TMP/kill.db" "SELECT count(*) FROM evals")
[ "$n" -eq 17 ] || fail "17 verdicts recorded before the kill, found $n"
status=$(sqlite3 "$TMP/kill.db" "SELECT status FROM runs WHERE id = 1")
[ "$status" = running ] || fail "a killed run stays 'running', found '$status'"
meas=$(sqlite3 "$TMP/kill.db" "SELECT count(*) FROM measurements")

TUNER_DB="$TMP/kill.db" run_tuner run --resume
expect_rc 0 "resume after SIGKILL"
expect_grep "$TMP/out" "resuming run 1" "resume names the run"
expect_grep "$TMP/out" "(17 answered from this run's records)" "the 17 recorded verdicts are reused, not repeated"
evals "$TMP/kill.db" >"$TMP/kill.txt"
diff "$TMP/full.txt" "$TMP/kill.txt" >"$TMP/diff" || fail "killed+resumed differs from uninterrupted: $(head -5 "$TMP/diff")"
[ "$(sqlite3 "$TMP/kill.db" "SELECT status FROM runs WHERE id = 1")" = done ] || fail "resumed run is done"
dup=$(sqlite3 "$TMP/kill.db" "SELECT count(*) FROM (SELECT variant_id, shape_dims FROM measurements GROUP BY 1, 2 HAVING count(*) > 1)")
[ "$dup" -eq 0 ] || fail "a measurement was repeated"
[ "$(sqlite3 "$TMP/kill.db" "SELECT count(*) FROM measurements")" -ge "$meas" ] || fail "measurements lost"
e1=$(sqlite3 "$TMP/full.db" "SELECT group_concat(variant_id || ':' || printf('%.6f', fitness)) FROM elite WHERE generation = 3 ORDER BY rank")
e2=$(sqlite3 "$TMP/kill.db" "SELECT group_concat(variant_id || ':' || printf('%.6f', fitness)) FROM elite WHERE generation = 3 ORDER BY rank")
[ -n "$e1" ] && [ "$e1" = "$e2" ] || fail "final elite differs: '$e1' vs '$e2'"

# SIGINT: finishes the evaluation in flight, commits, says how to resume, exits 130.
TUNER_DB="$TMP/int.db" TUNER_TEST_SIGNAL=30:2 run_tuner run --replay "$FIX" $ARGS
expect_rc 130 "SIGINT stops cleanly"
expect_grep "$TMP/out" "stopped by SIGINT" "stop is reported"
expect_grep "$TMP/out" "run --resume=1" "the resume command is printed"
[ "$(sqlite3 "$TMP/int.db" "SELECT status FROM runs")" = stopped ] || fail "status 'stopped'"
TUNER_DB="$TMP/int.db" run_tuner run --resume=1
expect_rc 0 "resume after SIGINT"
evals "$TMP/int.db" >"$TMP/int.txt"
diff "$TMP/full.txt" "$TMP/int.txt" >/dev/null || fail "stopped+resumed differs from uninterrupted"
TUNER_DB="$TMP/int.db" run_tuner run --resume=1
expect_rc 0 "resuming a finished run"
expect_grep "$TMP/out" "nothing to resume" "a done run is not run again"

# top and export agree on the winner
TUNER_DB="$TMP/full.db" run_tuner top --k 1 --json
expect_rc 0 "top"
p_top=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]["params"]; print(",".join("%s=%s" % kv for kv in sorted(r.items())))' "$TMP/out")
TUNER_DB="$TMP/full.db" run_tuner export -o "$TMP/best.h"
expect_rc 0 "export"
cc -std=c11 -Wall -Wextra -pedantic -Werror -c "$TMP/best.h" -o "$TMP/best.o" || fail "the header does not compile"
# rank 1's block of the header: up to the first blank line after its comment
p_hdr=$(awk '/^\/\* rank 1:/ { f = 1; next } f && /^$/ { exit } f' "$TMP/best.h" |
	sed -n 's/^#define FLASH_FWD_\([A-Z_]*\) \([0-9]*\)$/\1=\2/p' | sort | paste -sd, -)
[ -n "$p_top" ] && [ "$p_top" = "$p_hdr" ] || fail "export '$p_hdr' != top '$p_top'"

# Not in the recording: reported, never invented.
sqlite3 "$TMP/full.db" "SELECT 1" >/dev/null
cp "$FIX" "$TMP/partial.db"
sqlite3 "$TMP/partial.db" "PRAGMA journal_mode=DELETE; DELETE FROM measurements WHERE variant_id IN (SELECT id FROM variants WHERE params LIKE 'BLOCK_M=128,%')" >/dev/null
TUNER_DB="$TMP/p.db" run_tuner run --replay "$TMP/partial.db" $ARGS
expect_rc 0 "replay of a partial recording"
expect_grep "$TMP/out" "unmeasured" "the summary counts the unmeasured"
r=$(sqlite3 "$TMP/p.db" "SELECT reason FROM evals WHERE outcome = 'unmeasured' LIMIT 1")
case "$r" in *"not measured in the recording"*) ;; *) fail "unmeasured reason: '$r'" ;; esac
n=$(sqlite3 "$TMP/p.db" "SELECT count(*) FROM evals e JOIN variants v ON v.id = e.variant_id WHERE v.params LIKE 'BLOCK_M=128,%' AND e.fitness IS NOT NULL")
[ "$n" -eq 0 ] || fail "an unmeasured variant got a fitness"

TUNER_DB="$TMP/x.db" run_tuner run --replay "$TMP/nonexistent.db"
expect_rc 66 "a missing recording is EX_NOINPUT"
finish
