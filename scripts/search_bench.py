#!/usr/bin/env python3
"""Search efficiency over many recorded landscapes: evaluations to come within 2% and 5% of the optimum.

Every strategy runs on every landscape, once per seed, as `tuner run --replay` into a
fresh database, and is scored from what the run stored:
- evaluations to come within 2% (and 5%) of the optimum fitness: every candidate the
  run gave a verdict counts (gate rejections too, each costs a compile), in the order
  the run first stored it; median, quartiles, maximum, and the share of runs that got
  there at all (the budget is the whole space, or --budget evaluations);
- the performance-curve score of Willemsen et al. (FGCS 2024, "A methodology for
  comparing optimization algorithms for auto-tuning"): the mean best-found fitness,
  relative to the calculated random-search baseline, (best - random) / (optimum -
  random), averaged over the budget from where random search is expected halfway
  from the median to the optimum (cutoff 0.5) to where it is expected at 95% of the
  way (cutoff 0.95); 0 is as good as random, 1 finds the optimum at once.
A landscape is a tuner recording (an exhaustive sweep: DB:CONFIG, the config's space as
the recording answers it, so a config that declares part of the recorded space, fewer
values of a param, benchmarks that part) or another tuner's results file (T4 or Kernel
Tuner cache, with its T1 file), imported here with `tuner import`. Where a landscape's
declared default is within 5% of its optimum, the baseline that every run evaluates
first would hand it the target: it is imported with the median configuration as
baseline instead, and the output says so. Writes a Markdown report to stdout and, with
--plot and gnuplot, a picture of best-found fitness against evaluations per landscape.
Nothing runs on a GPU.

  python3 scripts/search_bench.py [--strategies evolve,evolve1,random] [--seeds 20]
      [--budget N] [--plot out.png] [tests/fixtures/sweep-h100.db:configs/default.yaml]
      [../shared/landscapes/convolution_milo_A4000_T4.json.gz ...]
"""

import argparse
import collections
import concurrent.futures
import glob
import gzip
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUTOFF_START, CUTOFF_END = 0.5, 0.95


def die(msg):
    sys.exit("search_bench: " + msg)


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode:
        die("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


class Landscape:
    """A recording to replay: its config, its database, and the fitness of every timed point."""

    def __init__(self, name, config, db, note=""):
        self.name, self.config, self.db, self.note = name, config, db, note
        con = sqlite3.connect("file:%s?immutable=1" % db, uri=True)
        row = con.execute("SELECT id FROM runs WHERE gpu = 1 AND strategy = 'exhaustive'"
                          " ORDER BY id DESC LIMIT 1").fetchone()
        if not row:
            die("'%s' holds no exhaustive GPU run" % db)
        self.fitness = sorted(f for (f,) in con.execute(
            "SELECT fitness FROM evals WHERE run_id = ? AND fitness IS NOT NULL", row))
        self.evaluated = con.execute("SELECT count(*) FROM evals WHERE run_id = ?",
                                     row).fetchone()[0]
        self.passed = con.execute("SELECT count(*) FROM evals WHERE run_id = ? AND outcome !="
                                  " 'constraint'", row).fetchone()[0]
        con.close()
        if not self.fitness:
            die("'%s' has no timed configuration" % db)
        self.optimum = self.fitness[-1]
        self.median = statistics.median(self.fitness)

    def target(self, within):
        return self.optimum * (1 - within)

    # The calculated random-search baseline (without replacement, timed points only):
    # the expected rank of the best of k draws from N is k (N + 1) / (k + 1).
    def random_at(self, k):
        n = len(self.fitness)
        return self.fitness[min(n - 1, round(k * (n + 1) / (k + 1)))]

    def cutoff(self, p):
        """Evaluations random search is expected to need to come p of the way from median to optimum."""
        goal = self.optimum - (self.optimum - self.median) * (1 - p)
        n = len(self.fitness)
        i = next(j for j, f in enumerate(self.fitness) if f >= goal)  # points worse than goal
        return max(1, math.ceil(i / (n + 1 - i)))


def import_landscape(tuner, results, t1, tmp):
    base = os.path.basename(results)
    for suffix in (".gz", ".json", "_T4"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    config, db = os.path.join(tmp, base + ".yaml"), os.path.join(tmp, base + ".db")
    cmd = [tuner, "--db", db, "import", "-o", config, results] + (["--t1", t1] if t1 else [])
    run(cmd)
    ls = Landscape(base, config, db)
    if 1 / ls.optimum >= 0.95:  # the declared default is within 5% of the optimum
        run(cmd + ["--force", "--baseline", "median"])
        ls = Landscape(base, config, db, "started from the median configuration: the "
                       "declared default is within 5% of the optimum")
    return ls


def find_t1(results):
    """KERNEL_T1.json beside KERNEL_DEVICE_T4.json.gz: the longest KERNEL that prefixes it."""
    d, base = os.path.split(results)
    best = None
    for t1 in glob.glob(os.path.join(d, "*_T1.json")):
        kernel = os.path.basename(t1)[: -len("_T1.json")]
        if base.startswith(kernel + "_") and (not best or len(t1) > len(best)):
            best = t1
    return best


def space_of(tuner, recording, config, db):
    """The config's space as the recording answers it: an exhaustive replay of the config.

    The config may declare less than the recording holds (fewer values of a param, another
    constraint): the optimum, the median and the random baseline are then those of the
    points it declares, not of the whole recording."""
    run([tuner, "-q", "--db", db, "--config", config, "sweep", "--replay", recording,
         "--population", "4096"],
        dict(os.environ, TUNER_CACHE=os.path.join(os.path.dirname(db), "cache")))
    return db


def landscapes(args, tmp):
    out = []
    for spec in args.landscapes or [os.path.join(ROOT, "tests/fixtures/sweep-h100.db") + ":" +
                                    os.path.join(ROOT, "configs/default.yaml")]:
        path, _, extra = spec.partition(":")
        if path.endswith(".db.gz"):  # a committed sweep too large to keep whole: read a copy
            plain = os.path.join(tmp, os.path.basename(path)[:-3])
            with gzip.open(path) as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
            path = plain
        if path.endswith(".db"):
            name, config = os.path.basename(path)[:-3], extra or args.config
            space = os.path.join(tmp, "space-%d.db" % len(out))
            ls = Landscape(name, config, space_of(args.tuner, path, config, space))
            if 1 / ls.optimum >= 0.95:
                ls.note = "the declared default is within 5% of the optimum (not changed)"
            out.append(ls)
        else:
            t1 = extra or find_t1(path)
            out.append(import_landscape(args.tuner, path, t1, tmp))
    # one recording in several spaces: each is named by its config too
    named = collections.Counter(ls.name for ls in out)
    for ls in out:
        if named[ls.name] > 1:
            ls.name += "-" + os.path.splitext(os.path.basename(ls.config))[0]
    return out


def best_curve(db):
    """Best fitness so far after each evaluation, in the order the run first stored them."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT e.fitness FROM evals e WHERE e.run_id = 1"
                       " ORDER BY e.variant_id").fetchall()
    con.close()
    best, curve = 0.0, []
    for (f,) in rows:
        if f is not None and f > best:
            best = f
        curve.append(best)
    return curve


def one(args, ls, strategy, seed, tmp):
    """One run, its budget doubled (a fresh run) until it comes within 2%, exhausts the space or
    reaches --budget evaluations (then cut there)."""
    path = os.path.join(tmp, "%s-%s-%d.db" % (ls.name, strategy, seed))
    env = dict(os.environ, TUNER_CACHE=os.path.join(tmp, "cache"))
    gens, before = 16, 0
    cap = -(-args.budget // args.population) if args.budget else None
    while True:
        if cap:
            gens = min(gens, cap)
        for f in (path, path + "-wal", path + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        run([args.tuner, "--db", path, "--config", ls.config, "run", "--replay", ls.db,
             "--strategy", strategy, "--seed", str(seed), "--generations", str(gens),
             "--population", str(args.population)], env)
        curve = best_curve(path)
        # The space is spent when a run stops short of its budget and twice the budget
        # brought nothing more (a generation may come up short of the population without
        # the space being spent).
        spent = len(curve) < gens * args.population and len(curve) <= before
        if curve[-1] >= ls.target(0.02) or spent or gens == cap:
            os.unlink(path)
            return curve[: args.budget] if args.budget else curve
        before = len(curve)
        gens *= 2


def reached(curve, target):
    return next((i + 1 for i, f in enumerate(curve) if f >= target), None)


def score(ls, curves):
    """The performance-curve score over the budget [cutoff 0.5, cutoff 0.95] in evaluations.

    A run stops once within 2% of the optimum: its best-found is carried forward to the end of
    the budget (short of the truth by at most 2% of the optimum)."""
    lo, hi = ls.cutoff(CUTOFF_START), ls.cutoff(CUTOFF_END)
    total = 0.0
    for k in range(lo, hi + 1):
        mean = statistics.fmean(c[min(k, len(c)) - 1] if c else 0.0 for c in curves)
        rnd = ls.random_at(k)
        total += (mean - rnd) / (ls.optimum - rnd) if ls.optimum > rnd else 1.0
    return total / (hi - lo + 1)


def describe(counts):
    got = [k for k in counts if k is not None]
    if not got:
        return "0/%d | - | - | -" % len(counts)
    full = [k if k is not None else math.inf for k in counts]
    med = statistics.median(full)
    q = statistics.quantiles(full, n=4) if len(full) > 1 else [med, med, med]
    fmt = lambda v: "-" if v == math.inf or math.isnan(v) else ("%g" % v)
    return "%d/%d | %s | %s-%s | %s" % (len(got), len(counts), fmt(med), fmt(q[0]), fmt(q[2]),
                                        max(got) if len(got) == len(counts) else "-")


def plot(path, results, lss, strategies):
    """Mean best-found fitness over the optimum against evaluations, one panel per landscape."""
    if not shutil.which("gnuplot"):
        print("\n(no gnuplot: no picture)")
        return
    datadir = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    cols = 3 if len(lss) > 4 else min(2, len(lss))
    rows = (len(lss) + cols - 1) // cols
    script = ["set terminal pngcairo size %d,%d font ',9'" % (480 * cols, 340 * rows),
              "set output '%s'" % path, "set multiplot layout %d,%d" % (rows, cols),
              "set logscale x", "set key bottom right", "set grid",
              "set xlabel 'evaluations'", "set ylabel 'best fitness / optimum'"]
    for ls in lss:
        xmax = 1
        for s in strategies:
            meds = [reached(c, ls.target(0.02)) or len(c) for c in results[ls.name][s]]
            xmax = max(xmax, statistics.median(meds))
        xmax = min(ls.passed, max(16, int(2 * xmax)))
        data = os.path.join(datadir, "%s-%s.dat" % (stem, ls.name))
        with open(data, "w") as f:
            f.write("# k random %s\n" % " ".join(strategies))
            for k in range(1, xmax + 1):
                row = [ls.random_at(k) / ls.optimum]
                for s in strategies:
                    cs = results[ls.name][s]
                    row.append(statistics.fmean(c[min(k, len(c)) - 1] if c else 0 for c in cs)
                               / ls.optimum)
                f.write("%d %s\n" % (k, " ".join("%.5f" % v for v in row)))
        lines = ["'%s' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random "
                 "(calculated)'" % data]
        for i, s in enumerate(strategies):
            lines.append("'%s' using 1:%d with lines lw 2 title '%s'" % (data, i + 3, s))
        script += ["set title '%s (%d timed)'" % (ls.name.replace("_", "\\_"),
                                                  len(ls.fitness)),
                   "set xrange [1:%d]" % xmax, "set yrange [*:1.01]",
                   "plot " + ", ".join(lines)]
    script.append("unset multiplot")
    gp = os.path.join(datadir, stem + ".gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    run(["gnuplot", gp])
    print("\npicture: %s (gnuplot script %s)" % (os.path.relpath(path), os.path.relpath(gp)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("landscapes", nargs="*",
                    help="SWEEP.db[:CONFIG] (or SWEEP.db.gz) or RESULTS (T4, cache)[:T1.json]; "
                    "default: the flash_fwd H100 sweep")
    ap.add_argument("--tuner", default=os.path.join(ROOT, "build/tuner"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/default.yaml"),
                    help="the config of a sweep given without one")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--population", type=int, default=16)
    ap.add_argument("--strategies", default="evolve,evolve1,random")
    ap.add_argument("--budget", type=int,
                    help="evaluations a run may take at most (default: the whole space); a "
                    "landscape recorded in part (most points unmeasured) needs one")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once")
    ap.add_argument("--plot", help="write the picture there (PNG)")
    args = ap.parse_args()
    strategies = args.strategies.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        lss = landscapes(args, tmp)
        jobs = [(ls, s, seed) for ls in lss for s in strategies
                for seed in range(1, args.seeds + 1)]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            curves = list(pool.map(lambda j: one(args, j[0], j[1], j[2], tmp), jobs))
        results = {ls.name: {s: [] for s in strategies} for ls in lss}
        for (ls, s, _), c in zip(jobs, curves):
            results[ls.name][s].append(c)

        print("%d seeds per strategy and landscape, population %d; an evaluation is every "
              "candidate given a verdict, in the order first stored" % (args.seeds,
                                                                      args.population))
        for ls in lss:
            print("\n### %s\n" % ls.name)
            print("%d points evaluated in the recording, %d timed; optimum fitness %.4f, "
                  "median %.4f; score budget %d-%d evaluations%s" % (
                      ls.evaluated, len(ls.fitness), ls.optimum, ls.median,
                      ls.cutoff(CUTOFF_START), ls.cutoff(CUTOFF_END),
                      "; " + ls.note if ls.note else ""))
            print()
            print("| strategy | within 2%: reached | median | quartiles | max | within 5%: "
                  "reached | median | quartiles | max | score |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for s in strategies:
                cs = results[ls.name][s]
                k2 = [reached(c, ls.target(0.02)) for c in cs]
                k5 = [reached(c, ls.target(0.05)) for c in cs]
                print("| %s | %s | %s | %.3f |" % (s, describe(k2), describe(k5), score(ls, cs)))
            for s in strategies:
                k2 = [reached(c, ls.target(0.02)) for c in results[ls.name][s]]
                print("<!-- %s %s within 2%% per seed: %s -->" % (
                    ls.name, s, " ".join(str(k) if k else "x" for k in k2)))
        if args.plot:
            plot(args.plot, results, lss, strategies)


if __name__ == "__main__":
    main()
