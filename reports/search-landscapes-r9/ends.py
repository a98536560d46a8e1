"""How good the end points of a recorded landscape are: python3 ends.py RECORDING.db...

Round 9's rule (round 8's is ../search-landscapes-r8/ends.py): an end point has every param of four values
or more at its first value or its upper end (the smaller ones at any), as evolve's first design picks them;
the upper end is the last value, but for a size whose alignment is not in domain order (integers of a common
unit of 2 or more, whose trailing zero bits do not rise with the value: 16, 32, 48, ...) the largest of its
most aligned values (of 16-224, 128), as evolve's upper_end() takes it. A recording is a database holding one exhaustive run (tuner's sweep,
or what `tuner import` writes); a param's domain is the values its points take, in numeric order, and the
valid points are those the constraints pass. Prints, per recording: valid points, end points, and the best
end point's fitness over the optimum."""
import math
import sqlite3
import statistics
import sys


def number(v):
    try:
        return float(v)
    except ValueError:
        return v


def tz(v):
    return (v & -v).bit_length() - 1 if v else 12


def upper(d):
    """A domain's upper end: its last value, or a size's largest most aligned value."""
    vals = sorted(d, key=number)
    last = vals[-1]
    try:
        ints = [int(v) for v in vals]
    except ValueError:
        return last
    if len(ints) < 4 or math.gcd(*ints) < 2:
        return last
    zs = [tz(abs(v)) for v in ints]
    if all(a <= b for a, b in zip(zs, zs[1:])):
        return last
    top = max(zs)
    return vals[max(i for i, z in enumerate(zs) if z == top)]


for path in sys.argv[1:]:
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
    ends = {k: (min(d, key=number), upper(d)) for k, d in domains.items() if len(d) >= 4}
    at_ends = [f for kv, f in points if all(kv[k] in e for k, e in ends.items())]
    best = max(f for _, f in points)
    print("%s: %d valid points, %d end points (%.1f%%); best end point %.3f of the optimum, "
          "median %.3f (the space's %.3f)" % (path, len(points), len(at_ends),
                                             100.0 * len(at_ends) / len(points), max(at_ends) / best,
                                             statistics.median(at_ends) / best,
                                             statistics.median(f for _, f in points) / best))
