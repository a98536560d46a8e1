# Compiling ahead: while the GPU (the fake worker, each shape taking its time) works through a
# generation, the compile pool, idle, builds the best variant's unseen neighbours, and the next
# generation finds them in the cubin cache. It changes wall time only: the same run without it
# (TUNER_PREFETCH=0) proposes, judges and ranks exactly the same candidates, and so does a run
# killed in mid-generation and resumed, whatever its cache got ahead of time.
. tests/cli/lib.sh

export TUNER_WORKER_FAKE=1 TUNER_WORKER_FAKE_MS=15

TUNER_CACHE="$TMP/cache-a" run_tuner --config configs/softmax.yaml run --generations 3 --population 5 --jobs 2
expect_rc 0 "a run that compiles ahead"
expect_grep "$TMP/out" "GPU idle: " "the summary says what the GPU waited on"
used=$(sed -n 's/^compiled ahead: .*, \([0-9]*\) of them used .*/\1/p' "$TMP/out")
[ "${used:-0}" -ge 1 ] || fail "a later generation found builds compiled ahead: '$used' in $(cat "$TMP/out")"
cached=$(sed -n 's/^compiled .* builds, \([0-9]*\) cached).*/\1/p' "$TMP/out")
[ "${cached:-0}" -ge "${used:-1}" ] || fail "builds compiled ahead are cache hits: $cached cached, $used used"
mv "$TUNER_DB" "$TMP/a.db"

TUNER_PREFETCH=0 TUNER_CACHE="$TMP/cache-b" run_tuner --config configs/softmax.yaml run --generations 3 --population 5 --jobs 2
expect_rc 0 "the same run without compiling ahead"
expect_grep "$TMP/out" " 0 cached)" "nothing is in a fresh cache without a prefetch"
expect_no_grep "$TMP/out" "compiled ahead:" "TUNER_PREFETCH=0 compiles nothing ahead"

# The same candidates, verdicts, populations and elites, in the same order.
q="SELECT e.generation, v.hash, e.outcome, e.reason, e.fitness FROM evals e
   JOIN variants v ON v.id = e.variant_id ORDER BY e.generation, v.hash;
   SELECT p.generation, v.hash, p.origin FROM population p
   JOIN variants v ON v.id = p.variant_id ORDER BY p.generation, v.hash;
   SELECT l.generation, l.rank, v.hash, l.fitness FROM elite l
   JOIN variants v ON v.id = l.variant_id ORDER BY l.generation, l.rank;"
sqlite3 "$TMP/a.db" "$q" >"$TMP/a.txt"
sqlite3 "$TUNER_DB" "$q" >"$TMP/b.txt"
[ -s "$TMP/a.txt" ] || fail "the run recorded its evaluations"
cmp -s "$TMP/a.txt" "$TMP/b.txt" || fail "compiling ahead changed the search: $(diff "$TMP/a.txt" "$TMP/b.txt" | head -20)"

# Killed after 8 verdicts (in generation 2, with builds compiled ahead), then resumed.
TUNER_DB="$TMP/k.db" TUNER_TEST_SIGNAL=8:9 TUNER_CACHE="$TMP/cache-k" \
	run_tuner --config configs/softmax.yaml run --generations 3 --population 5 --jobs 2
[ "$rc" -gt 128 ] || fail "the hook kills the run (exit $rc)"
TUNER_DB="$TMP/k.db" TUNER_CACHE="$TMP/cache-k" run_tuner --config configs/softmax.yaml run --resume
expect_rc 0 "resume after SIGKILL"
sqlite3 "$TMP/k.db" "$q" >"$TMP/k.txt"
cmp -s "$TMP/a.txt" "$TMP/k.txt" || fail "killed and resumed differs from uninterrupted: $(diff "$TMP/a.txt" "$TMP/k.txt" | head -20)"
finish
