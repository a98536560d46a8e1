# tuner run without a GPU: samples, gates and compiles, records everything, says nothing was timed.
. tests/cli/lib.sh

run_tuner run --generations 2 --no-gpu
expect_rc 0 "run --no-gpu"
expect_grep "$TMP/out" "nothing was timed" "says plainly that nothing was timed"
expect_grep "$TMP/out" "variants/s" "reports compile throughput"
grep -Eq 'compiled[: ]+[0-9]+' "$TMP/out" || fail "reports how many compiled"

# The sqlite3 shell can list the variants with their gate outcomes.
n=$(sqlite3 "$TUNER_DB" "select count(distinct v.id) from variants v join builds b on b.variant_id = v.id where b.outcome = 'ok' and v.arch = 'sm_90'")
[ "$n" -ge 30 ] || fail "at least 30 distinct variants compiled for sm_90 (got $n)"
g=$(sqlite3 "$TUNER_DB" "select count(*) from gates")
[ "$g" -gt 0 ] || fail "gate outcomes recorded"
r=$(sqlite3 "$TUNER_DB" "select status from runs order by id desc limit 1")
[ "$r" = "done" ] || fail "run status done (got $r)"

# show explains the run.
run_tuner show
expect_rc 0 "show"
expect_grep "$TMP/out" "run 1" "show summarises the latest run"

# A second identical run compiles nothing new: the cubin cache answers.
run_tuner run --generations 2 --no-gpu
expect_rc 0 "second run"
expect_grep "$TMP/out" "cached" "second run served from the cache"
finish
