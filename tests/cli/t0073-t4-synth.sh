# scripts/t4_synth.py, synthetic T4 files for T1 spaces: the pruned walk (spaces over 10**7
# points) records the same configurations as the point-by-point walk, --count counts them, and
# --sample records that many distinct ones, which tuner import reads and checks.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/import"
cat >"$TMP/synth_T1.json" <<'JSON'
{"General": {"BenchmarkName": "synth"}, "ConfigurationSpace": {"TuningParameters": [
 {"Name": "bx", "Values": "[1, 2, 4, 8, 16] + list(range(32, 257, 32))", "Default": 32},
 {"Name": "by", "Values": "[2**i for i in range(5)]", "Default": 1},
 {"Name": "tile", "Values": "list(range(1, 9))", "Default": 1},
 {"Name": "unroll", "Values": "list(range(1, 9))", "Default": 1},
 {"Name": "layout", "Values": "['row', 'col']", "Default": "row"}],
 "Conditions": ["bx * by >= 32", "tile % unroll == 0",
                "bx * by * tile <= 1024 or layout == 'col'", "min(bx, 64) * unroll <= 256"]}}
JSON

# the pruned walk and the plain one: the same configurations within the restrictions, in order
python3 - "$TOP/scripts" "$TMP/synth_T1.json" <<'PY' || fail "the pruned walk records what the walk does"
import argparse, random, sys
sys.path.insert(0, sys.argv[1])
import t4_synth as t
space = t.Space(sys.argv[2])
args = argparse.Namespace(invalid=50)
walked, pruned = [], []
t.walk(space, random.Random(1), args, walked)
t.prune(space, random.Random(1), args, pruned)
ok = lambda rs: [r["configuration"] for r in rs if r["invalidity"] == "correct"]
assert ok(walked) == ok(pruned) and len(ok(walked)) > 100, (len(ok(walked)), len(ok(pruned)))
for r in pruned:  # what the pruned walk records as breaking them does
    if r["invalidity"] != "correct":
        assert not all(eval(c, {"__builtins__": t.BUILTINS}, r["configuration"]) for c in space.conds)
PY

python3 scripts/t4_synth.py --count "$TMP/synth_T1.json" >"$TMP/out" 2>"$TMP/err"
python3 scripts/t4_synth.py "$TMP/synth_T1.json" "$TMP/all_T4.json" >/dev/null
n=$(python3 -c "import json; print(sum(r['invalidity'] == 'correct' for r in json.load(open('$TMP/all_T4.json'))['results']))")
expect_grep "$TMP/out" "8320 declared, $n within the restrictions" "--count counts what the walk records"

# --sample: that many distinct configurations within the restrictions, imported and checked
python3 scripts/t4_synth.py --sample 300 --seed 2 "$TMP/synth_T1.json" "$TMP/synth_gpu_T4.json" >"$TMP/out"
expect_grep "$TMP/out" "300 configurations within the restrictions" "300 sampled"
python3 - "$TMP/synth_gpu_T4.json" <<'PY' || fail "the sample's configurations are distinct"
import json, sys
rs = [r["configuration"] for r in json.load(open(sys.argv[1]))["results"] if r["invalidity"] == "correct"]
assert len({tuple(sorted(c.items())) for c in rs}) == len(rs) == 300
PY
TUNER_DB="$TMP/s.db" run_tuner import --t1 "$TMP/synth_T1.json" -o "$TMP/s.yaml" "$TMP/synth_gpu_T4.json"
expect_rc 0 "the importer agrees with every sampled verdict"
expect_grep "$TMP/err" "have no result" "the points not sampled are counted as missing"
finish
