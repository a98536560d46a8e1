#!/usr/bin/env python3
"""The issue's bars over the simulator's outputs (sim.sh): per landscape, a median at most half of
evolve1's over the same seeds and a worst seed at most three times the median.

  score.py EVOLVE1.txt VARIANT.txt...   one line per variant: the bars met, the geometric mean of
                                        median / evolve1's median, and the landscapes that miss"""
import math
import sys


def load(path):
    out = {}
    for line in open(path):
        w = line.split()
        if len(w) > 5 and w[2] == "median":
            out[w[0]] = (float(w[3]), int(w[5]))
    return out


ref = load(sys.argv[1])
for path in sys.argv[2:]:
    got = load(path)
    met, miss, logs = 0, [], 0.0
    for name, (med, worst) in sorted(got.items()):
        half, tail = med <= ref[name][0] / 2, worst <= 3 * med
        met += half and tail
        if not (half and tail):
            miss.append("%s %g/%d%s%s" % (name, med, worst, "" if half else " (bar %g)" % (ref[name][0] / 2),
                                          "" if tail else " (tail)"))
        logs += math.log(med / ref[name][0])
    print("%s: %d of %d met, median / evolve1's %.3f (geometric mean); missed: %s" % (
        path, met, len(got), math.exp(logs / len(got)), "; ".join(miss)))
