"""How good the end points of a recorded landscape are: python3 ends.py [--aligned] RECORDING.db...

An end point has every param of four values or more at its first or last value (the smaller ones at any),
as round 8's evolve picks them. With --aligned, round 9's rule, as evolve's upper_end() takes it: the upper
end of a size whose alignment is not in domain order (integers of a common unit of 2 or more, whose trailing
zero bits do not rise with the value: 16, 32, 48, ...) is the largest of the most aligned values of the
upper half of its domain (of 16-224, 128), not its last. A recording is a database holding one exhaustive
run (tuner's sweep, or what `tuner import` writes); a param's domain is the values its points take, in
numeric order, and the valid points are those the constraints pass. Prints, per recording: valid points,
end points, and the best end point's fitness over the optimum."""
import math
import sqlite3
import statistics
import sys


def number(v):
    try:
        return float(v)
    except ValueError:
        return v


def trailing_zeros(v):
    return (v & -v).bit_length() - 1 if v else 12


def upper(d, aligned):
    """A domain's upper end: its last value, or with aligned a size's most aligned of its upper half."""
    vals = sorted(d, key=number)
    try:
        ints = [int(v) for v in vals]
    except ValueError:
        return vals[-1]
    zs = [trailing_zeros(abs(v)) for v in ints]
    if not aligned or len(ints) < 4 or math.gcd(*ints) < 2 or zs == sorted(zs):
        return vals[-1]
    half = zs[len(zs) // 2:]
    return vals[len(zs) // 2 + max(i for i, z in enumerate(half) if z == max(half))]


ALIGNED = "--aligned" in sys.argv[1:]
for path in (a for a in sys.argv[1:] if a != "--aligned"):
    con = sqlite3.connect("file:%s?immutable=1" % path, uri=True)
    run = con.execute("SELECT min(id) FROM runs WHERE strategy = 'exhaustive'").fetchone()[0]
    rows = con.execute("SELECT v.params, e.outcome, e.fitness FROM evals e JOIN variants v "
                       "ON v.id = e.variant_id WHERE e.run_id = ?", (run,)).fetchall()
    points = []
    for params, outcome, fitness in rows:
        if outcome == "constraint":
            continue
        kv = dict(p.split("=", 1) for p in params.split(","))
        points.append((kv, fitness if outcome == "ok" and fitness else 0.0))
    domains = {}
    for kv, _ in points:
        for k, v in kv.items():
            domains.setdefault(k, set()).add(v)
    ends = {k: (min(d, key=number), upper(d, ALIGNED)) for k, d in domains.items() if len(d) >= 4}
    at_ends = [f for kv, f in points if all(kv[k] in e for k, e in ends.items())]
    best = max(f for _, f in points)
    print("%s: %d valid points, %d end points (%.1f%%); best end point %.3f of the optimum, "
          "median %.3f (the space's %.3f)" % (path, len(points), len(at_ends),
                                             100.0 * len(at_ends) / len(points), max(at_ends) / best,
                                             statistics.median(at_ends) / best,
                                             statistics.median(f for _, f in points) / best))
