#!/bin/bash
# On the GPU machine, one device call: the tuner's search at the two large D=128 shapes with a
# hot L2 (configs/h100-sm90-large.yaml: BENCH.md keeps the inputs in L2, the default job flushes
# it), then its top configurations and batch 8's large-shape winners next to SDPA in interleaved
# rounds (scripts/sm90_pdl.sh, the fastest persistent one against the fastest other).
#
#   OUT=$OUT scripts/sm90_large_hot.sh    # needs build-static/tuner (make STATIC_DEPS=1)
set -u
OUT=${OUT:-/tmp/large}
mkdir -p "$OUT"
timeout -s INT 240 build-static/tuner --db "$OUT/large.db" --config configs/h100-sm90-large.yaml \
	run --generations 10 >"$OUT/run.log" 2>&1
echo "run rc $?"; tail -4 "$OUT/run.log"
build-static/tuner --db "$OUT/large.db" top --k 5 >"$OUT/top.txt" 2>&1
grep -A1 "^rank" "$OUT/top.txt" | head -15
TOP=$(python3 - "$OUT/large.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select v.params from evals e join variants v on v.id = e.variant_id "
                 "where e.outcome = 'ok' order by e.fitness desc limit 8").fetchall()
seen = []
for (p,) in rows:
    d = dict(kv.split("=") for kv in p.split(","))
    if d["STREAMK"] != "0":
        continue
    line = " ".join(["128"] + [d[k] for k in ("BLOCK_N", "CONSUMERS", "STAGES", "PINGPONG",
                     "OVERLAP", "RESCALE", "PERSISTENT", "OCCUPANCY", "SPLITS", "KSPLIT")])
    if line not in seen:
        seen.append(line)
print("\n".join(seen[:4]))
PY
)
echo "top: $TOP"
CONFIGS="$TOP
128 128 2 2 1 1 3 132 1 1 1
128 160 2 2 1 1 3 132 1 1 1
128 160 2 2 1 1 3 0 1 1 1"
CONFIGS=$(echo "$CONFIGS" | awk '!seen[$0]++')
CONFIGS="$CONFIGS" SANITIZE="128 128 2 2 1 1 3 132 1 1 1" CONTEST=_pe132_ OUT="$OUT/pdl" \
	timeout 330 scripts/sm90_pdl.sh >"$OUT/pdl.log" 2>&1
tail -30 "$OUT/pdl.log"
gzip "$OUT/large.db"
