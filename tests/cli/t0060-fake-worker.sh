# The GPU stage of the pipeline without a GPU: the worker's fake mode (TUNER_WORKER_FAKE=1)
# passes every shape, so each gate-passing variant is sent to the worker with the cubin the
# compile stage built, stored per shape, and put through the dynamic alignment gate.
. tests/cli/lib.sh

TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 4
expect_rc 0 "a run on the fake worker"
expect_grep "$TMP/out" "fake GPU (TUNER_WORKER_FAKE)" "the device is named"
expect_no_grep "$TMP/out" "nothing was timed" "the fake worker is a GPU to the pipeline"
ok=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome = 'ok'")
[ "$ok" -ge 1 ] || fail "some variants pass: $ok"
m=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM measurements WHERE outcome = 'ok' AND shape NOT LIKE '%~%'")
[ "$m" -eq $((ok * 5)) ] || fail "one measurement per shape of each passing variant: $m for $ok"
# The ragged shapes derived from the suite (attention declares S ragged) are checked, not timed:
# S at the largest prime below each suite value, and S=1.
r=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM measurements WHERE outcome = 'ok' AND shape LIKE '%~%' AND median_us IS NULL")
[ "$r" -ge "$ok" ] || fail "ragged shapes checked for each passing variant: $r for $ok"
for s in "mission~S=509" "mission~S=1" "d128~S=4093"; do
	n=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM measurements WHERE shape = '$s' AND shape_dims LIKE '%S=${s#*S=},%'")
	[ "$n" -ge 1 ] || fail "the ragged shape $s was checked"
done
san=$(sqlite3 "$TUNER_DB" "SELECT count(DISTINCT variant_id) FROM builds WHERE sanitize = 1 AND outcome = 'ok'")
[ "$san" -ge 1 ] || fail "sanitize builds recorded: $san"
g=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM gates WHERE gate = 'sanitize'")
[ "$g" -eq "$san" ] || fail "a sanitize verdict per sanitized variant: $g for $san"

# Measured once per device and shape: a second run measures nothing again.
all=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM measurements")
TUNER_WORKER_FAKE=1 run_tuner run --generations 1 --population 4
expect_rc 0 "the same run again"
expect_grep "$TMP/out" "0 measured now" "nothing is measured twice"
[ "$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM measurements")" -eq "$all" ] || fail "measurements repeated"
finish
