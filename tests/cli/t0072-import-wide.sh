# tuner import of a space with a param of 10**6 values (the most a T1 may list): the sidecar
# that lists them loads, and every strategy replays the landscape.
. tests/cli/lib.sh

cat >"$TMP/wide_T1.json" <<'JSON'
{"General": {"BenchmarkName": "wide"}, "ConfigurationSpace": {"TuningParameters": [
 {"Name": "n", "Values": "list(range(1, 1000001))", "Default": 960},
 {"Name": "bs", "Values": "[32, 64]", "Default": 32}],
 "Conditions": ["n % bs == 0"]}}
JSON
# 300 timed results, better nearer n = 500000, and one outside the restrictions
awk 'BEGIN {
	printf "{\"tune_params_keys\": [\"n\", \"bs\"], \"tune_params\": {\"n\": [1], \"bs\": [32]}, \"cache\": {"
	printf "\"960,32\": {\"n\": 960, \"bs\": 32, \"time\": 9.5}"
	for (i = 1; i < 300; i++) {
		n = i * 3200; d = n - 500000; if (d < 0) d = -d
		printf ", \"%d,64\": {\"n\": %d, \"bs\": 64, \"time\": %.4f}", n, n, 1 + d / 100000
	}
	printf ", \"33,32\": {\"n\": 33, \"bs\": 32, \"time\": \"InvalidConfig\"}}}"
}' >"$TMP/wide_gpu.json"

TUNER_DB="$TMP/wide.db" run_tuner import --t1 "$TMP/wide_T1.json" -o "$TMP/wide.yaml" "$TMP/wide_gpu.json"
expect_rc 0 "import a space with a param of 10**6 values"
expect_grep "$TMP/out" "imported 301 configurations of wide on gpu" "every result"
size=$(wc -c <"$TMP/wide.family.yaml")
[ "$size" -gt 4194304 ] || fail "the sidecar lists every value (more than 4 MiB): $size bytes"

for s in evolve evolve-rf evolve1 random; do
	TUNER_DB="$TMP/run-$s.db" run_tuner --config "$TMP/wide.yaml" run --replay "$TMP/wide.db" \
		--strategy "$s" --generations 3 --population 8 --seed 3
	expect_rc 0 "$s replays it"
	n=$(sqlite3 "$TMP/run-$s.db" "SELECT count(*) FROM evals")
	[ "$n" -eq 24 ] || fail "$s: 3 generations of 8 candidates, $n evaluated"
done
finish
