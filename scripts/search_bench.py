#!/usr/bin/env python3
"""Search efficiency on a replayed sweep: evaluations to come within 2% of the optimum.

Runs `tuner run --replay SWEEP --strategy S --seed N` for each strategy and seed, each
into a fresh database, and counts the candidates evaluated (every verdict: gate
rejections included, since each costs at least a compile) until the best fitness so
far is within --within of the sweep's optimum fitness. Evaluation order is the order
in which the run first stored each variant (a fresh database numbers variants in
that order). Prints a Markdown table; nothing runs on a GPU.

  python3 scripts/search_bench.py [--tuner build/tuner] [--sweep tests/fixtures/sweep-h100.db]
"""

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def optimum(sweep):
    db = sqlite3.connect("file:%s?immutable=1" % sweep, uri=True)
    run = db.execute("SELECT id FROM runs WHERE gpu = 1 AND strategy = 'exhaustive'"
                     " ORDER BY id DESC LIMIT 1").fetchone()
    if not run:
        sys.exit("search_bench: '%s' holds no exhaustive GPU run" % sweep)
    best, n, ok = db.execute("SELECT max(fitness), count(*), sum(outcome = 'ok') FROM evals"
                             " WHERE run_id = ?", run).fetchone()
    return best, n, ok


def one(tuner, config, sweep, strategy, seed, gens, pop, target, tmp):
    path = os.path.join(tmp, "%s-%d.db" % (strategy, seed))
    cmd = [tuner, "--db", path, "--config", config, "run", "--replay", sweep, "--strategy",
           strategy, "--seed", str(seed), "--generations", str(gens), "--population", str(pop)]
    env = dict(os.environ, TUNER_CACHE=os.path.join(tmp, "cache"))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    if r.returncode:
        sys.exit("search_bench: %s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    db = sqlite3.connect(path)
    rows = db.execute("SELECT e.fitness FROM evals e WHERE e.run_id = 1"
                      " ORDER BY e.variant_id").fetchall()
    best = 0.0
    for i, (f,) in enumerate(rows, 1):
        if f is not None and f > best:
            best = f
        if best >= target:
            return i, len(rows)
    return None, len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tuner", default=os.path.join(ROOT, "build/tuner"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/default.yaml"))
    ap.add_argument("--sweep", default=os.path.join(ROOT, "tests/fixtures/sweep-h100.db"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--within", type=float, default=0.02)
    ap.add_argument("--population", type=int, default=16)
    ap.add_argument("--strategies", default="evolve,random")
    args = ap.parse_args()

    best, space, correct = optimum(args.sweep)
    target = best * (1 - args.within)
    gens = (space + args.population - 1) // args.population
    print("sweep: %s; space %d points, %d correct; optimum fitness %.4f; target %.4f "
          "(within %g%%)" % (os.path.relpath(args.sweep, ROOT), space, correct, best, target,
                             100 * args.within))
    print("budget per run: %d generations of %d (up to the whole space); %d seeds per strategy"
          % (gens, args.population, args.seeds))
    print()
    print("| strategy | reached | median evaluations | quartiles | max | median % of space |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in args.strategies.split(","):
            got = []
            for seed in range(1, args.seeds + 1):
                k, _ = one(args.tuner, args.config, args.sweep, strategy, seed, gens,
                           args.population, target, tmp)
                got.append(k if k is not None else float("inf"))
            reached = [k for k in got if k != float("inf")]
            med = statistics.median(got)
            q = statistics.quantiles(got, n=4) if len(reached) == len(got) else ["-", "-", "-"]
            print("| %s | %d/%d | %s | %s | %s | %s |" % (
                strategy, len(reached), len(got), med,
                "%s-%s" % (q[0], q[2]) if q[0] != "-" else "-",
                max(reached) if reached else "-",
                "%.1f%%" % (100.0 * med / space) if med != float("inf") else "-"))
            print("<!-- %s per seed: %s -->" % (strategy, " ".join(
                str(k) if k != float("inf") else "x" for k in got)))


if __name__ == "__main__":
    main()
