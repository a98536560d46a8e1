# tuner report on the committed H100 sweep and on a replayed evolve run: the files, the sections, the
# numbers against the database, a self-contained HTML, valid PNGs; bad input leaves nothing behind.
. tests/cli/lib.sh

run_tuner report --help
expect_rc 0 "report --help"
expect_grep "$TMP/out" "usage: tuner report" "report --help prints its usage"
expect_grep "$TMP/out" '"library": "torch"' "report --help documents the library format"
[ -s "$TMP/err" ] && fail "report --help wrote to stderr"
run_tuner --help
expect_grep "$TMP/out" "  report " "tuner --help lists report"

cp "$TOP/tests/fixtures/sweep-h100.db" "$TMP/sweep.db"
DB="$TMP/sweep.db"
have_gnuplot=0
command -v gnuplot >/dev/null 2>&1 && have_gnuplot=1

# The library timings bench_sdpa.py measured on the H100 next to the sweep, in the import format.
python3 scripts/bench_sdpa.py --from-json reports/sweep-h100/bench.json --library "$TMP/lib.json" ||
	fail "bench_sdpa.py converts its --json output to the import format"

run_tuner --db "$DB" report -o "$TMP/r1" --library "$TMP/lib.json"
expect_rc 0 "report of the sweep"
R="$TMP/r1"
expect_grep "$TMP/out" "wrote $R/report.md" "report says where it wrote"
for f in report.md report.html plots.gp; do
	[ -s "$R/$f" ] || fail "report writes $f"
done
for s in "# tuner report: run 1, flash_fwd on NVIDIA H100 80GB HBM3" "## Run" "## Verdicts" \
	"## Winner" "## Convergence" "## Speedup per shape" "## Verdicts per generation" \
	"## Timing distribution of the winner" "## Plots" "## Reproduce"; do
	expect_grep "$R/report.md" "$s" "the report has the section"
done
expect_grep "$R/report.md" "tuner --db $DB report --run 1 -o $R --library $TMP/lib.json" \
	"the report holds the command that writes it again"

# Every number checked below is computed here from the database, independently of tuner.
python3 - "$DB" "$R/report.md" "$TMP/lib.json" <<'EOF' || fail "the report's numbers match the database"
import json, math, sqlite3, sys

db = sqlite3.connect(sys.argv[1])
md = open(sys.argv[2]).read()
lib = json.load(open(sys.argv[3]))
bad = []

def want(text, what):
    if text not in md:
        bad.append("%s: '%s' not in the report" % (what, text))

# Verdicts: one row per outcome with its count.
for outcome, n in db.execute("SELECT outcome, count(*) FROM evals WHERE run_id = 1 GROUP BY 1"):
    want("| %s | %d |" % (outcome, n), "verdict count")

# The winner: rank 1 of the final elite, with the interval from its evaluation.
vid, f, lo, hi, params = db.execute(
    "SELECT e.variant_id, x.fitness, x.fitness_lo, x.fitness_hi, v.params FROM elite e"
    " JOIN evals x ON x.run_id = e.run_id AND x.variant_id = e.variant_id"
    " JOIN variants v ON v.id = e.variant_id WHERE e.run_id = 1 AND e.rank = 1"
    " ORDER BY e.generation DESC LIMIT 1").fetchone()
want("The winner is variant %d (`%s`), fitness %.3f [%.3f, %.3f]" % (vid, params, f, lo, hi),
     "winner")

# Per shape: baseline and winner medians, the speedup, and the speedup over each library.
run = db.execute("SELECT device, shapes FROM runs WHERE id = 1").fetchone()
base = db.execute("SELECT variant_id FROM population WHERE run_id = 1 AND origin = 'baseline'").fetchone()[0]
def median(v, dims):
    return db.execute("SELECT median_us FROM measurements WHERE variant_id = ? AND device = ?"
                      " AND shape_dims = ?", (v, run[0], dims)).fetchone()[0]
for sh in json.loads(run[1]):
    dims = ",".join("%s=%d" % (k, sh[k]) for k in "BHSD")
    b, w = median(base, dims), median(vid, dims)
    want("| %s | `%s` | %.2f | %.2f | %.3fx |" % (sh["name"], dims, b, w, b / w), "speedup")
    for e in lib:
        if e["shape"] == sh["name"]:
            want("| %.2f | %.3fx |" % (e["median_us"], e["median_us"] / w), "library speedup")
    samples = json.loads(db.execute("SELECT samples FROM measurements WHERE variant_id = ?"
                                    " AND device = ? AND shape_dims = ?",
                                    (vid, run[0], dims)).fetchone()[0])
    want("| %s | %d | %.2f | %.2f |" % (sh["name"], len(samples), min(samples), w),
         "timing samples")

# Convergence: the evaluation at which the run reached its best, in the order recorded.
fit = [r[0] for r in db.execute("SELECT fitness FROM evals WHERE run_id = 1"
                                " ORDER BY generation, created_at, variant_id")]
best = max(x for x in fit if x is not None)
at = next(i for i, x in enumerate(fit, 1) if x == best)
want("reached its best, %.3f, at evaluation %d of %d" % (best, at, len(fit)), "convergence")

# The expectation of random search, by the CDF of the best of k draws (the C code sums the PMF):
# the baseline first, then k draws from the points that pass the constraints.
bfit = db.execute("SELECT fitness FROM evals WHERE run_id = 1 AND variant_id = ?", (base,)).fetchone()[0]
pool = [max(bfit, x if x is not None else -math.inf) for (x,) in db.execute(
    "SELECT fitness FROM evals WHERE run_id = 1 AND outcome != 'constraint' AND variant_id != ?",
    (base,))]
def expected(n):
    k, m = n - 1, len(pool)
    le = lambda v: math.comb(sum(1 for x in pool if x <= v), k) / math.comb(m, k)
    lt = lambda v: math.comb(sum(1 for x in pool if x < v), k) / math.comb(m, k)
    return sum(v * (le(v) - lt(v)) for v in sorted(set(pool)))
want("from the %d points that pass the constraints" % len(pool), "pool size")
for n in (10, 50, 100):
    best_n = max(x for x in fit[:n] if x is not None)
    row = [l for l in md.splitlines() if l.startswith("| %d | " % n)]
    if not row or not row[0].endswith("| %.3f |" % expected(n)) or "| %.3f |" % best_n not in row[0]:
        bad.append("checkpoint %d: expected best %.3f, run best %.3f, row %s" % (n, expected(n), best_n, row))

if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF

# The HTML stands alone: no external source, the plots embedded, the same bytes as the PNGs.
python3 - "$R" "$have_gnuplot" <<'EOF' || fail "the HTML is self-contained and embeds the PNGs"
import base64, html.parser, os, sys

d, have = sys.argv[1], sys.argv[2] == "1"
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], set()
    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href", "data", "srcset")]
p = P()
p.feed(open(os.path.join(d, "report.html")).read())
assert not {"link", "script", "iframe", "object"} & p.tags, p.tags
assert all(r.startswith("data:image/png;base64,") for r in p.refs), [r[:40] for r in p.refs]
pngs = sorted(f for f in os.listdir(d) if f.endswith(".png"))
if have:
    assert pngs == ["convergence-time.png", "convergence.png", "speedup.png", "timing.png",
                    "verdicts.png"], pngs
    embedded = sorted(base64.b64decode(r.split(",", 1)[1]) for r in p.refs)
    assert embedded == sorted(open(os.path.join(d, f), "rb").read() for f in pngs)
    for f in pngs:
        b = open(os.path.join(d, f), "rb").read()
        assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", f
        assert b[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82", f
        w, h = int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")
        assert w >= 400 and h >= 300, (f, w, h)
EOF
if [ "$have_gnuplot" = 1 ]; then
	for p in convergence convergence-time speedup verdicts timing; do
		expect_grep "$R/report.md" "]($p.png)" "the Markdown links $p.png"
	done
	expect_grep "$R/report.md" "5 plots drawn by gnuplot" "the report says gnuplot drew the plots"
else
	echo "gnuplot is not installed: PNGs not checked"
fi

# Without gnuplot: a warning, exit 0, the tables, no PNG and no image in the HTML.
TUNER_GNUPLOT="$TMP/no-such-gnuplot" run_tuner --db "$DB" report -o "$TMP/r2"
expect_rc 0 "report without gnuplot"
expect_grep "$TMP/err" "warning: gnuplot ('$TMP/no-such-gnuplot') was not found" "a warning without gnuplot"
expect_grep "$TMP/r2/report.md" "Not drawn: gnuplot" "the report says why it has no plots"
expect_grep "$TMP/r2/report.md" "| ok | 148 |" "the tables are there without gnuplot"
ls "$TMP"/r2/*.png >/dev/null 2>&1 && fail "no PNG without gnuplot"
expect_no_grep "$TMP/r2/report.html" "<img" "no image in the HTML without gnuplot"

# Again into a directory that holds a report: the old plots go, --no-plots is said.
cp -R "$R" "$TMP/r3"
run_tuner --db "$DB" report -o "$TMP/r3/" --no-plots
expect_rc 0 "report into an existing directory"
ls "$TMP"/r3/*.png >/dev/null 2>&1 && fail "an older report's PNGs are removed"
expect_grep "$TMP/r3/report.md" "turned off (--no-plots)" "--no-plots is said"
expect_no_grep "$TMP/r3/report.md" "sdpa-cudnn" "the new report replaced the old one"
ls -a "$TMP/r3" | grep -q '^\.report-' && fail "the staging directory is removed"

# A replayed evolve run in a fresh database: the expectation comes from the recording, and a
# random run over the same space in the same database is the other baseline.
run_tuner --db "$TMP/evo.db" run --replay "$DB" --generations 3 --seed 2
expect_rc 0 "replayed evolve run"
run_tuner --db "$TMP/evo.db" run --replay "$DB" --generations 3 --seed 2 --strategy random
expect_rc 0 "replayed random run"
run_tuner --db "$TMP/evo.db" report --run 1 -o "$TMP/r4"
expect_rc 0 "report of a replayed run"
expect_grep "$TMP/r4/report.md" "computed from exhaustive run 1 of \`$DB\`" \
	"the expectation comes from the replay's recording"
expect_grep "$TMP/r4/report.md" "Random search, run 2 of this database" "the random run is a baseline"
expect_grep "$TMP/r4/report.md" "| evaluations | run 1 best | seconds | random run 2 best | random search, expected best |" \
	"the convergence table has both baselines"
n=$(sqlite3 "$TMP/evo.db" "SELECT count(*) FROM evals WHERE run_id = 1")
expect_grep "$TMP/r4/report.md" "| all | $n | 100% |" "the verdicts count the run's evaluations"
if [ "$have_gnuplot" = 1 ]; then
	grep -q "random search, run 2" "$TMP/r4/plots.gp" || fail "the random run is plotted"
	grep -q "random search, expected (from exhaustive run 1)" "$TMP/r4/plots.gp" ||
		fail "the expectation is plotted"
fi

# A run that is no replay (as on the GPU) takes the expectation from the sweep --sweep names.
cp "$TMP/evo.db" "$TMP/gpu.db"
sqlite3 "$TMP/gpu.db" "UPDATE runs SET replay_of = NULL, gpu = 1"
run_tuner --db "$TMP/gpu.db" report --run 1 -o "$TMP/r5"
expect_rc 0 "report without a sweep"
expect_grep "$TMP/r5/report.md" "No expected random-search curve: no finished exhaustive run" \
	"the report says why it has no expectation"
run_tuner --db "$TMP/gpu.db" report --run 1 -o "$TMP/r5" --sweep "$DB"
expect_rc 0 "report with --sweep"
expect_grep "$TMP/r5/report.md" "computed from exhaustive run 1 of \`$DB\`" \
	"the expectation comes from --sweep"
expect_grep "$TMP/r5/report.md" "--sweep $DB" "the command to reproduce names the sweep"
run_tuner --db "$TMP/gpu.db" report --run 1 -o "$TMP/r6" --sweep "$TMP/evo.db"
expect_rc 65 "--sweep without an exhaustive run"
expect_grep "$TMP/err" "holds no finished exhaustive run" "why the sweep is refused"
[ -e "$TMP/r6" ] && fail "nothing written for a sweep without a sweep"
run_tuner --db "$TMP/gpu.db" report --run 1 -o "$TMP/r6" --sweep "$TMP/missing.db"
expect_rc 66 "--sweep of a missing file"
[ -e "$TMP/missing.db" ] && fail "--sweep does not create a database"

# Bad input: clear errors, the sysexits code, nothing written.
run_tuner --db "$DB" report --run 9 -o "$TMP/bad1"
expect_rc 65 "unknown run"
expect_grep "$TMP/err" "no run 9" "the unknown run is named"
[ -e "$TMP/bad1" ] && fail "nothing written for an unknown run"

: >"$TMP/a-file"
run_tuner --db "$DB" report -o "$TMP/a-file/out"
expect_rc 73 "-o under a file"
expect_grep "$TMP/err" "cannot write the report to '$TMP/a-file/out'" "the directory is named"
run_tuner --db "$DB" report -o "$TMP/a-file"
expect_rc 73 "-o a file"
expect_grep "$TMP/err" "it is not a directory" "why a file is refused"
[ -s "$TMP/a-file" ] && fail "the file is left alone"
run_tuner --db "$DB" report -o "$TMP/no/such/dir"
expect_rc 73 "-o where the parent is missing"

printf '[{"shape": "nope", "library": "x", "median_us": 1}]' >"$TMP/bad.json"
run_tuner --db "$DB" report -o "$TMP/bad2" --library "$TMP/bad.json"
expect_rc 65 "a library shape not in the suite"
expect_grep "$TMP/err" "$TMP/bad.json: shape 'nope' is not in the suite of run 1" "the shape is named"
printf '[{"shape": "mission", "library": "x", "median_us": 1, "dims": "B=9,H=8,S=512,D=64"}]' \
	>"$TMP/bad.json"
run_tuner --db "$DB" report -o "$TMP/bad2" --library "$TMP/bad.json"
expect_rc 65 "library dims that are not the suite's"
printf '[{"shape": "mission", "library": "x", "median": 1}]' >"$TMP/bad.json"
run_tuner --db "$DB" report -o "$TMP/bad2" --library "$TMP/bad.json"
expect_rc 65 "a misspelt key"
expect_grep "$TMP/err" "unknown key 'median'" "the key is named"
run_tuner --db "$DB" report -o "$TMP/bad2" --library "$TMP/missing.json"
expect_rc 66 "an unreadable library file"
[ -e "$TMP/bad2" ] && fail "nothing written for a bad library file"
run_tuner --db "$TMP/none.db" report -o "$TMP/bad3"
expect_rc 66 "no database"
[ -e "$TMP/none.db" ] && fail "report does not create a database"
run_tuner --db "$DB" report --run x
expect_rc 64 "a bad --run"
ls -a "$TMP" | grep -q 'tmp-' && fail "no staging directory is left: $(ls -a "$TMP")"
finish
