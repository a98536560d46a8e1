# scripts/search_bench.py, the search benchmark over recorded landscapes: every strategy on every
# landscape given (T4 files found with their T1 beside them, gzipped or not), each seed's count
# behind the table's median, the baseline replaced by the median configuration where the declared
# default is within 5% of the optimum (and said), runs that repeat with their seeds, the picture,
# a budget that bounds every run, a part of a recorded space benchmarked as that part, and a clear
# error for a landscape that is not there.
. tests/cli/lib.sh

FIX="$TOP/tests/fixtures/import"
LS="$TMP/ls"
mkdir "$LS"
cp "$FIX/toy_T1.json" "$FIX/hub_T1.json" "$FIX/hub_gpu_T4.json" "$LS/"
gzip -c "$FIX/toy_gpu_T4.json" >"$LS/toy_gpu_T4.json.gz"
# the same landscape, its declared default moved to the optimum (bs=64, tile=2, layout=col)
python3 - "$FIX/toy_T1.json" "$LS/toynear_T1.json" <<'PY'
import json, sys
t1 = json.load(open(sys.argv[1]))
for p in t1["ConfigurationSpace"]["TuningParameters"]:
    p["Default"] = {"bs": 64, "tile": 2, "layout": "col"}.get(p["Name"], p["Default"])
json.dump(t1, open(sys.argv[2], "w"))
PY
cp "$FIX/toy_gpu_T4.json" "$LS/toynear_gpu_T4.json"

bench() {
	rc=0
	python3 scripts/search_bench.py --tuner "$TUNER" --seeds 3 "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}

bench --strategies evolve,evolve1,evolve-rf,random --plot "$TMP/bench.png" \
	"$LS/toy_gpu_T4.json.gz" "$LS/hub_gpu_T4.json" "$LS/toynear_gpu_T4.json"
expect_rc 0 "the benchmark on three imported landscapes"
cp "$TMP/out" "$TMP/first"
for name in toy_gpu hub_gpu toynear_gpu; do
	expect_grep "$TMP/out" "### $name" "a section per landscape ($name)"
done
for s in evolve evolve1 evolve-rf random; do
	n=$(grep -c "^| $s | 3/3 |" "$TMP/out")
	[ "$n" -eq 3 ] || fail "$s reaches 2% of the optimum in every run on all 3 landscapes: $n"
done
expect_grep "$TMP/out" "started from the median configuration: the declared default is within 5% of the optimum" \
	"a default within 5% of the optimum is replaced, and the report says so"
# the table's median and maximum are those of the per-seed counts it prints
python3 - "$TMP/out" <<'PY' || fail "the table agrees with the per-seed counts"
import re, statistics, sys
text = open(sys.argv[1]).read()
rows = 0
for name, strategy, counts in re.findall(r"<!-- (\S+) (\S+) within 2% per seed: ([\d ]+) -->", text):
    c = [int(x) for x in counts.split()]
    assert len(c) == 3, (name, strategy, c)
    section = text.split("### " + name + "\n")[1].split("###")[0]
    row = re.search(r"^\| %s \| 3/3 \| ([\d.]+) \| [\d.-]+ \| (\d+) \|" % re.escape(strategy), section, re.M)
    assert row, (name, strategy)
    assert float(row.group(1)) == statistics.median(c), (name, strategy, row.group(1), c)
    assert int(row.group(2)) == max(c), (name, strategy, row.group(2), c)
    rows += 1
assert rows == 12, rows
PY
head -c 8 "$TMP/bench.png" | od -An -c | grep -q "P   N   G" || fail "the picture is a PNG"

# seeded: the same seeds give the same counts
bench --strategies evolve,evolve1,evolve-rf,random \
	"$LS/toy_gpu_T4.json.gz" "$LS/hub_gpu_T4.json" "$LS/toynear_gpu_T4.json"
expect_rc 0 "the benchmark again"
grep '^<!--' "$TMP/first" >"$TMP/seeds1"
grep '^<!--' "$TMP/out" >"$TMP/seeds2"
cmp -s "$TMP/seeds1" "$TMP/seeds2" || fail "the same seeds gave other counts: $(diff "$TMP/seeds1" "$TMP/seeds2" | head -4)"

# --budget: no run takes more evaluations (a landscape recorded in part would keep doubling)
bench --strategies random,evolve --budget 8 "$LS/toy_gpu_T4.json.gz"
expect_rc 0 "the benchmark with a budget"
python3 - "$TMP/out" <<'PY' || fail "every count within the budget of 8: $(grep '^<!--' "$TMP/out")"
import re, sys
counts = re.findall(r"<!-- \S+ \S+ within 2% per seed: ([\dx ]+) -->", open(sys.argv[1]).read())
assert len(counts) == 2, counts
assert all(c == "x" or int(c) <= 8 for line in counts for c in line.split()), counts
PY

# DB:CONFIG is the config's space as the recording answers it: a config that declares part of
# the recorded space (bs without 64, the optimum's) is benchmarked on that part, its optimum and
# its median those of the points it declares
"$TUNER" -q --db "$TMP/toy.db" import -o "$TMP/toy.yaml" --t1 "$FIX/toy_T1.json" "$FIX/toy_gpu_T4.json" \
	>"$TMP/import.out" 2>&1 || fail "import toy: $(cat "$TMP/import.out")"
sed 's/^\(  bs: \).*/\1[16, 32, 128]/' "$TMP/toy.family.yaml" >"$TMP/part.family.yaml"
grep -q '^  bs: \[16, 32, 128\]$' "$TMP/part.family.yaml" || fail "the part's family declares bs without 64"
sed 's/toy\.family\.yaml/part.family.yaml/' "$TMP/toy.yaml" >"$TMP/part.yaml"
bench --strategies evolve,random "$TMP/toy.db:$TMP/toy.yaml" "$TMP/toy.db:$TMP/part.yaml"
expect_rc 0 "the benchmark on a part of a recorded space"
expect_grep "$TMP/out" "### toy-toy" "one recording in two spaces: each named by its config too (toy)"
expect_grep "$TMP/out" "### toy-part" "one recording in two spaces: each named by its config too (part)"
python3 - "$TMP/out" "$TMP/toy.db" <<'PY' || fail "the part's optimum is that of the points it declares"
import re, sqlite3, sys
text = open(sys.argv[1]).read()
opt = [float(x) for x in re.findall(r"optimum fitness ([\d.]+)", text)]
con = sqlite3.connect(sys.argv[2])
rows = con.execute("SELECT v.params, e.fitness FROM evals e JOIN variants v ON v.id = e.variant_id"
                   " WHERE e.fitness IS NOT NULL").fetchall()
whole = max(f for _, f in rows)
part = max(f for p, f in rows if "bs=64," not in p + ",")
assert part < whole, (part, whole)
assert len(opt) == 2 and abs(opt[0] - whole) < 1e-3 and abs(opt[1] - part) < 1e-3, (opt, whole, part)
PY
for s in evolve random; do
	n=$(grep -c "^| $s | 3/3 |" "$TMP/out")
	[ "$n" -eq 2 ] || fail "$s reaches 2% of the part's optimum in every run: $n"
done

# a landscape that is not there: an error naming it, no table
bench --strategies random "$LS/missing_gpu_T4.json"
[ "$rc" -ne 0 ] || fail "a missing landscape is an error"
expect_grep "$TMP/err" "missing_gpu_T4.json" "the error names the file"
expect_no_grep "$TMP/out" "| random |" "no table for a missing landscape"

finish
