# tuner export --format t4: valid against the official T4 schema (schemas/T4.json), and read as
# the format's reference runner (AutoTuningAssociation/autotuning_methodology) reads it.
. tests/cli/lib.sh

version=$(sed -n 's/^-- schema-version: \([0-9][0-9]*\)$/\1/p' db/schema.sql)
if ! sqlite3 "$TUNER_DB" <db/schema.sql ||
	! sqlite3 "$TUNER_DB" "PRAGMA user_version = $version" ||
	! sqlite3 "$TUNER_DB" <tests/fixtures/top/run.sql; then
	echo "FAIL: cannot build the fixture database"
	exit 1
fi
# Four more verdicts of run 1: spilled beyond the limit, faulted, hung, raced.
sqlite3 "$TUNER_DB" "
	INSERT INTO variants (id, hash, template_name, template_hash, arch, params, options) VALUES
	(9, '0909090909090909090909090909abcd', 'flash_fwd', '0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f',
	 'sm_90', 'BLOCK_M=128,BLOCK_N=128,NUM_WARPS=4,STAGES=1,SWIZZLE=1,PAD=8', '-std=c++17'),
	(10, '1010101010101010101010101010abcd', 'flash_fwd', '0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f',
	 'sm_90', 'BLOCK_M=64,BLOCK_N=64,NUM_WARPS=2,STAGES=2,SWIZZLE=1,PAD=8', '-std=c++17'),
	(11, '1111111111111111111111111111abcd', 'flash_fwd', '0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f',
	 'sm_90', 'BLOCK_M=64,BLOCK_N=64,NUM_WARPS=8,STAGES=2,SWIZZLE=1,PAD=8', '-std=c++17'),
	(12, '1212121212121212121212121212abcd', 'flash_fwd', '0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f',
	 'sm_90', 'BLOCK_M=32,BLOCK_N=64,NUM_WARPS=2,STAGES=1,SWIZZLE=1,PAD=8', '-std=c++17');
	INSERT INTO builds (variant_id, key, spec, sanitize, outcome, regs, spill_stores, spill_loads,
		static_smem, stack_frame, seconds, cached, cubin_size, log) VALUES
	(9, 'k9', 'D=64', 0, 'ok', 255, 96, 64, 1024, 160, 2.25, 0, 50000, NULL),
	(9, 'k9b', 'D=128', 0, 'ok', 250, 8, 8, 2048, 32, 0.75, 0, 50000, NULL);
	INSERT INTO evals (run_id, variant_id, generation, outcome, reason) VALUES
	(1, 9, 1, 'resources', 'resources: 160 bytes spilled, limit 0'),
	(1, 10, 1, 'runtime fault', 'runtime fault: CUDA_ERROR_MISALIGNED_ADDRESS'),
	(1, 11, 1, 'timeout', 'timeout: 20 s'),
	(1, 12, 1, 'race', 'race: two runs differ');"

# validate SCHEMA DOC: every error the official schema finds, or none.
validate() {
	python3 - "$@" <<'EOF'
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
errors = sorted(Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errors[:5]:
    print("schema: %s at %s" % (e.message, "/".join(map(str, e.absolute_path))))
sys.exit(1 if errors else 0)
EOF
}

run_tuner export --format t4
expect_rc 0 "export --format t4"
cp "$TMP/out" "$TMP/t4.json"
validate schemas/T4.json "$TMP/t4.json" || fail "the export is valid T4"

# The validator can fail: a resources verdict filed under its own name is not T4.
python3 - "$TMP/t4.json" "$TMP/bad.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["results"][0]["invalidity"] = "resources"
json.dump(doc, open(sys.argv[2], "w"))
EOF
validate schemas/T4.json "$TMP/bad.json" >/dev/null && fail "the schema check rejects what is not T4"

python3 - "$TMP/t4.json" <<'EOF' || fail "export --format t4 reads as the reference runner reads it"
import json, math, sys
doc = json.load(open(sys.argv[1]))
meta, res = doc["metadata"], doc["results"]
key = lambda r: r["configuration"]["BLOCK_M"] * 1000 + r["configuration"]["BLOCK_N"] + \
    r["configuration"]["NUM_WARPS"] * 1000000
by = {key(r): r for r in res}

# The objective and its direction are stated.
assert meta["objective"]["name"] == "fitness" and meta["objective"]["direction"] == "maximize"
assert meta["objective"]["baseline"]["variant_id"] == 1, meta["objective"]
assert all(r["objectives"] == ["fitness"] for r in res)
assert meta["timeunit"] == "microseconds"
assert [s["name"] for s in meta["shapes"]] == ["mission", "long"], meta["shapes"]

# 12 evaluations, one unmeasured (a replay had no recording): 11 results.
assert len(res) == 11, len(res)
inv = {k: r["invalidity"] for k, r in by.items()}
assert inv[8128064] == "correct" and inv[8128128] == "constraints"            # ok; smem
assert inv[1032032] == "compile"                                              # compile
assert inv[4128128] == "compile", "resources is a compile-stage verdict, not constraints"
assert inv[2064064] == "runtime" and inv[8064064] == "timeout"
assert inv[4064032] == "correctness" and inv[2032064] == "correctness"         # wrong; race
assert by[4064032]["correctness"] == 0 and by[2032064]["correctness"] == 0
assert by[4128128]["correctness"] == 1

def measurement(r, name):
    ms = [m for m in r["measurements"] if m["name"] == name]
    assert len(ms) == 1, (name, r["measurements"])
    return ms[0]["value"]

verdict = {k: measurement(r, "verdict") for k, r in by.items()}
assert verdict[4128128] == "resources" and verdict[8128128] == "smem" and verdict[2032064] == "race"

# As the runner does: every result but 'constraints' names the objective once; an invalid one's
# value is one of Kernel Tuner's error strings, a valid one's a number; runtimes sum.
errors = {"", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig"}
want = {"compile": "CompilationFailedConfig", "runtime": "RuntimeFailedConfig",
        "timeout": "RuntimeFailedConfig", "correctness": "InvalidConfig"}
for r in res:
    if r["invalidity"] == "constraints":
        continue
    v = measurement(r, "fitness")
    sum(r["times"]["runtimes"])
    r["times"]["compilation_time"] + 0
    if r["invalidity"] == "correct":
        assert isinstance(v, float) and not math.isnan(v), v
    else:
        assert v in errors and v == want[r["invalidity"]], (r["invalidity"], v)
        assert measurement(r, "time") == v

# Per-shape runtimes: one median per shape in metadata.shapes' order; every launch per shape.
r = by[8128064]
assert r["times"]["runtimes"] == [80.0, 400.0], r["times"]
assert r["times"]["shape_runtimes"] == {"mission": [80.0, 79.0, 81.0], "long": [400.0, 395.0, 405.0]}
assert measurement(r, "time") == 480.0 and abs(measurement(r, "fitness") - 1.3693) < 1e-9
assert abs(measurement(r, "mission.speedup") - 1.25) < 1e-9 and measurement(r, "long.median") == 400.0

# compilation_data: registers, shared memory, spills, compile time; sanitize builds are validation.
cd = r["compilation_data"]
assert cd["registers"] == 168 and cd["compile_time"] == 1.5e6 and cd["spill_bytes"] == 0, cd
assert r["times"]["compilation_time"] == 1.5e6 and r["times"]["validation"] == 2.0e6, r["times"]
cd = by[4128128]["compilation_data"]
assert cd["registers"] == 255 and cd["spill_bytes"] == 160 and cd["static_shared_memory"] == 2048, cd
assert [b["spec"] for b in cd["builds"]] == ["D=128", "D=64"] and cd["compile_time"] == 3.0e6, cd
assert "compilation_data" not in by[8128128], "nothing was compiled for a smem rejection"
EOF

# Every export validates: a replayed run (from the committed H100 sweep) too.
TUNER_DB="$TMP/replay.db" run_tuner run --replay tests/fixtures/sweep-h100.db --generations 2 \
	--population 8 --seed 3
expect_rc 0 "a replayed run"
TUNER_DB="$TMP/replay.db" run_tuner export --format t4 -o "$TMP/replay.json"
expect_rc 0 "export --format t4 of the replayed run"
validate schemas/T4.json "$TMP/replay.json" || fail "the replayed run's export is valid T4"
python3 - "$TMP/replay.json" <<'EOF' || fail "the replayed run's export has every verdict"
import json, sys
res = json.load(open(sys.argv[1]))["results"]
assert len(res) >= 8 and any(r["invalidity"] == "correct" for r in res), len(res)
assert all(len(r["times"]["runtimes"]) == 5 for r in res if r["invalidity"] == "correct")
EOF
finish
