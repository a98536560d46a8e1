# tuner import: a T4 file (gzipped) and a Kernel Tuner cache with their T1 space become
# landscapes that run --replay searches; invalid results keep their verdicts; restrictions
# that cannot be translated are refused; replay finds a recording by params, not by hash.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/import"
gzip -c "$FIX/toy_gpu_T4.json" >"$TMP/toy_gpu_T4.json.gz"

# the T4 file, gzipped: config, sidecar and recording
TUNER_DB="$TMP/t4.db" run_tuner import --t1 "$FIX/toy_T1.json" -o "$TMP/toy.yaml" "$TMP/toy_gpu_T4.json.gz"
expect_rc 0 "import a T4 file"
expect_grep "$TMP/out" "imported 54 configurations of toy_kernel on toy_gpu (T4 1.0.0): 41 timed, 10 constraint, 1 compile, 1 runtime fault, 1 wrong" "the summary counts every verdict"
expect_grep "$TMP/out" "3 restrictions translated" "restrictions translated"
[ -f "$TMP/toy.family.yaml" ] || fail "the sidecar is written beside the config"
expect_grep "$TMP/toy.family.yaml" '"((layout == 0) || (tile > 1))"' "a restriction on a string param, translated to its codes"
expect_grep "$TMP/toy.family.yaml" "landscape: true" "the sidecar declares a landscape"
expect_grep "$TMP/toy.family.yaml" "layout: ['row', 'col']" "a string param's labels"
expect_grep "$TMP/toy.family.yaml" "frac: [0.5, 1.0, 1.5]" "a float param's labels"

# every point of the space replayed: each verdict as recorded, nothing invented
TUNER_DB="$TMP/sweep.db" run_tuner --config "$TMP/toy.yaml" run --replay "$TMP/t4.db" --strategy exhaustive --generations 10
expect_rc 0 "exhaustive replay of the landscape"
got=$(sqlite3 "$TMP/sweep.db" "SELECT group_concat(outcome || ':' || n) FROM (SELECT outcome, count(*) n FROM evals GROUP BY outcome ORDER BY outcome)")
[ "$got" = "compile:1,constraint:28,ok:41,runtime fault:1,wrong:1" ] || fail "replayed verdicts: '$got'"
r=$(sqlite3 "$TMP/sweep.db" "SELECT e.reason FROM evals e JOIN variants v ON v.id = e.variant_id WHERE v.params = 'bs=128,tile=2,layout=row,frac=1.0'")
case "$r" in *"failed to compile (recorded)"*) ;; *) fail "a recorded compile failure: '$r'" ;; esac
best=$(sqlite3 "$TMP/sweep.db" "SELECT v.params FROM evals e JOIN variants v ON v.id = e.variant_id ORDER BY e.fitness DESC LIMIT 1")
[ "$best" = "bs=64,tile=2,layout=col,frac=1.0" ] || fail "the optimum of the recording, by its labels: '$best'"

# the default search finds it too, and the run reads like any other
TUNER_DB="$TMP/run.db" run_tuner --config "$TMP/toy.yaml" run --replay "$TMP/t4.db" --generations 3 --seed 4
expect_rc 0 "evolve on the landscape"
expect_grep "$TMP/out" "replaying the measurements of" "a replay"
TUNER_DB="$TMP/run.db" run_tuner top --k 1 --json
expect_rc 0 "top on a replayed landscape"
expect_grep "$TMP/out" '"layout": "col"' "top names the best's params by their labels"

# the header of a landscape's winner: its params as #defines (no kernel to launch), a header C
# compiles, no trailing blanks in what it generated
TUNER_DB="$TMP/sweep.db" run_tuner export -o "$TMP/toy.h"
expect_rc 0 "export a replayed landscape as a header"
expect_grep "$TMP/toy.h" "#define TOY_KERNEL_bs 64" "the optimum's block size"
expect_grep "$TMP/toy.h" "#define TOY_KERNEL_tile 2" "and its tile"
expect_grep "$TMP/toy.h" '#define TOY_KERNEL_layout "col"' "a string param by its label"
expect_grep "$TMP/toy.h" "#define TOY_KERNEL_frac 1.0" "a float param by its label"
! grep -q ' $' "$TMP/toy.h" || fail "trailing blanks in the header: $(grep -n ' $' "$TMP/toy.h")"
printf '#include "toy.h"\nint main(void) { return TOY_KERNEL_bs == 64 ? 0 : 1; }\n' >"$TMP/toy-main.c"
cc -std=c11 -Wall -Wextra -pedantic -Werror -o "$TMP/toy-main" "$TMP/toy-main.c" && "$TMP/toy-main" ||
	fail "the landscape's header does not compile, or names another block size"

# exported as T4, the configurations are those of the file imported: labels, not codes
TUNER_DB="$TMP/sweep.db" run_tuner export --format t4 -o "$TMP/sweep_T4.json"
expect_rc 0 "export the replay as T4"
python3 - "$FIX/toy_gpu_T4.json" "$TMP/sweep_T4.json" <<'PY' || fail "the T4 export's configurations are not the file's"
import json, sys
vals = {}
for r in json.load(open(sys.argv[1]))["results"]:
    for k, v in r["configuration"].items():
        vals.setdefault(k, set()).add(json.dumps(v))
out = [r["configuration"] for r in json.load(open(sys.argv[2]))["results"]]
bad = [c for c in out if set(c) != set(vals) or any(json.dumps(v) not in vals[k] for k, v in c.items())]
assert len(out) > 40 and not bad, bad[:3]
PY

# no --replay: a landscape has nothing to compile
TUNER_DB="$TMP/none.db" run_tuner --config "$TMP/toy.yaml" run --generations 1
expect_rc 64 "a landscape without --replay"
expect_grep "$TMP/err" "search it with --replay" "the error says what to do"

# the Kernel Tuner cache: its own device, the same verdicts
TUNER_DB="$TMP/kt.db" run_tuner import --t1 "$FIX/toy_T1.json" -o "$TMP/kt.yaml" "$FIX/toy_cache.json"
expect_rc 0 "import a Kernel Tuner cache"
expect_grep "$TMP/out" "on Toy GPU (Kernel Tuner cache 1.1.0)" "the cache names its device"
TUNER_DB="$TMP/kt-run.db" run_tuner --config "$TMP/kt.yaml" run --replay "$TMP/kt.db" --strategy exhaustive --generations 10
expect_rc 0 "replay of the cache"
n=$(sqlite3 "$TMP/kt-run.db" "SELECT count(*) FROM evals WHERE outcome = 'ok'")
[ "$n" -eq 42 ] || fail "42 timed in the cache, $n replayed"

# a run may write into the database it replays: the import stores each variant's options as
# a run does, so the run's variants are the recording's own, not a clash of hashes
cp "$TMP/kt.db" "$TMP/kt-self.db"
TUNER_DB="$TMP/kt-self.db" run_tuner --config "$TMP/kt.yaml" run --replay "$TMP/kt-self.db" --generations 2
expect_rc 0 "a run into the recording's own database"
n=$(sqlite3 "$TMP/kt-self.db" "SELECT count(DISTINCT hash) = count(*) FROM variants")
[ "$n" -eq 1 ] || fail "each variant once in the recording's database"
n=$(sqlite3 "$TMP/kt-self.db" "SELECT count(*) FROM runs")
[ "$n" -eq 2 ] || fail "the import's run and the replay's, $n runs"

# the benchmark hub's forms: values as range() and comprehensions, a default given as a
# list, one that is not among its values (warned, then the median is the baseline), true
# division in a restriction; replayed whole, the translation rejects exactly what the file does
TUNER_DB="$TMP/hub.db" run_tuner import --t1 "$FIX/hub_T1.json" -o "$TMP/hub.yaml" "$FIX/hub_gpu_T4.json"
expect_rc 0 "import the hub's forms"
expect_grep "$TMP/err" "the default of 'm' (1) is not one of its values" "a default outside its values is named"
expect_grep "$TMP/out" "baseline: the configuration of median cost" "and the median is the baseline"
expect_grep "$TMP/hub.family.yaml" "bx: [16, 32, 64, 128]" "values from a list joined to a range()"
expect_grep "$TMP/hub.family.yaml" '"(((bx * 3) % (ty * 48)) == 0)"' "true division, multiplied out"
TUNER_DB="$TMP/hub-run.db" run_tuner --config "$TMP/hub.yaml" run --replay "$TMP/hub.db" --strategy exhaustive --generations 10
expect_rc 0 "replay of the hub's forms"
got=$(sqlite3 "$TMP/hub-run.db" "SELECT group_concat(outcome || ':' || n) FROM (SELECT outcome, count(*) n FROM evals GROUP BY outcome ORDER BY outcome)")
[ "$got" = "constraint:3,ok:9" ] || fail "replayed verdicts of the hub's forms: '$got'"

# a cache whose device_name is empty (Kernel Tuner's when it could not ask) takes the
# device from its file name, as a T4 file does; with nothing there either, --device is asked for
printf '%s' '{"schema_version": "1.0.0", "device_name": "", "kernel_name": "conv",
 "tune_params_keys": ["bx"], "tune_params": {"bx": [16, 32]}, "objective": "time",
 "cache": {"16": {"bx": 16, "time": "CompilationFailedConfig"}, "32": {"bx": 32, "time": 2.5}}}' >"$TMP/conv_A100.json"
TUNER_DB="$TMP/nodev.db" run_tuner import -o "$TMP/nodev.yaml" "$TMP/conv_A100.json"
expect_rc 0 "a cache with an empty device name"
expect_grep "$TMP/out" "of conv on A100 (Kernel Tuner cache 1.0.0): 1 timed, 1 compile" "the device from the file name"
cp "$TMP/conv_A100.json" "$TMP/conv.json"
TUNER_DB="$TMP/nodev2.db" run_tuner import -o "$TMP/nodev2.yaml" "$TMP/conv.json"
expect_rc 65 "no device anywhere"
expect_grep "$TMP/err" "names no device: give one (--device)" "the error says what to give"
[ ! -e "$TMP/nodev2.db" ] && [ ! -e "$TMP/nodev2.yaml" ] || fail "nothing written when refused"

# an existing database is not overwritten; --force replaces it
TUNER_DB="$TMP/kt.db" run_tuner import --t1 "$FIX/toy_T1.json" -o "$TMP/kt.yaml" "$FIX/toy_cache.json"
expect_rc 73 "import into an existing database"
expect_grep "$TMP/err" "exists" "says why"
TUNER_DB="$TMP/kt.db" run_tuner import --force --baseline median -o "$TMP/kt.yaml" "$FIX/toy_cache.json"
expect_rc 0 "--force"
expect_grep "$TMP/out" "baseline: the configuration of median cost" "--baseline median"

# an objective whose name does not say its direction is a cost, unless --direction says
printf '%s' '{"device_name": "GPU", "kernel_name": "dir", "objective": "score",
 "tune_params_keys": ["bs"], "tune_params": {"bs": [32, 64, 128]},
 "cache": {"32": {"bs": 32, "score": 2}, "64": {"bs": 64, "score": 8},
 "128": {"bs": 128, "score": 4}}}' >"$TMP/score.json"
TUNER_DB="$TMP/score.db" run_tuner import --baseline bs=32 -o "$TMP/score.yaml" "$TMP/score.json"
expect_rc 0 "a score read as a cost"
expect_grep "$TMP/out" "the optimum is x1.0000 over it" "lower is better: the lowest score is the optimum"
TUNER_DB="$TMP/score2.db" run_tuner import --direction higher --baseline bs=32 -o "$TMP/score2.yaml" "$TMP/score.json"
expect_rc 0 "--direction higher"
expect_grep "$TMP/out" "the optimum is x4.0000 over it" "higher is better: 8 over 2"
expect_grep "$TMP/score2.family.yaml" "score, higher is better" "the sidecar says the direction"
TUNER_DB="$TMP/score2-run.db" run_tuner --config "$TMP/score2.yaml" run --replay "$TMP/score2.db" --strategy exhaustive
expect_rc 0 "replay of a higher-is-better landscape"
[ "$(sqlite3 "$TMP/score2-run.db" "SELECT v.params || ' ' || printf('%.2f', e.fitness) FROM evals e
	JOIN variants v ON v.id = e.variant_id ORDER BY e.fitness DESC LIMIT 1")" = "bs=64 4.00" ] ||
	fail "the replay ranks bs=64 first, at 4x"
TUNER_DB="$TMP/score3.db" run_tuner import --direction up -o "$TMP/score3.yaml" "$TMP/score.json"
expect_rc 64 "--direction up"
expect_grep "$TMP/err" "'higher' or 'lower', not 'up'" "says what it takes"
TUNER_DB="$TMP/score3.db" run_tuner import --direction higher -o "$TMP/score3.yaml" "$FIX/toy_cache.json"
expect_rc 65 "a time made higher-is-better"
expect_grep "$TMP/err" "a time is better lower" "says why"
[ -f "$TMP/score3.db" ] && fail "nothing is written after a refusal"

# a restriction that cannot be translated: refused, naming the file and the restriction
sed 's|"bs \* tile <= 256"|"bs \& tile <= 256"|' "$FIX/toy_T1.json" >"$TMP/bad_T1.json"
TUNER_DB="$TMP/bad.db" run_tuner import --t1 "$TMP/bad_T1.json" -o "$TMP/bad.yaml" "$FIX/toy_gpu_T4.json"
expect_rc 65 "an untranslatable restriction"
expect_grep "$TMP/err" "bad_T1.json: cannot translate restriction 1 'bs & tile <= 256': column 4: bitwise" "the refusal names the file, the restriction and why"
[ -f "$TMP/bad.db" ] && fail "nothing is written after a refusal"

# replay answers by template, arch and params: a recording whose variant hashes differ
# (another tuner version hashes more) replays the same
SWEEP="$TOP/tests/fixtures/sweep-h100.db"
cp "$SWEEP" "$TMP/rehashed.db"
sqlite3 "$TMP/rehashed.db" "PRAGMA journal_mode=DELETE; UPDATE variants SET hash = hash || 'x'" >/dev/null
TUNER_DB="$TMP/a.db" run_tuner run --replay "$SWEEP" --generations 2 --population 12 --seed 3
expect_rc 0 "replay of the sweep"
TUNER_DB="$TMP/b.db" run_tuner run --replay "$TMP/rehashed.db" --generations 2 --population 12 --seed 3
expect_rc 0 "replay of the rehashed sweep"
q="SELECT v.params, e.outcome, printf('%.6f', e.fitness) FROM evals e JOIN variants v ON v.id = e.variant_id ORDER BY v.id"
[ "$(sqlite3 "$TMP/a.db" "$q")" = "$(sqlite3 "$TMP/b.db" "$q")" ] || fail "the rehashed recording replays differently"
[ "$(sqlite3 "$TMP/b.db" "SELECT count(*) FROM evals WHERE outcome = 'ok'")" -gt 0 ] || fail "nothing replayed from the rehashed recording"
finish
