#!/usr/bin/env python3
"""A synthetic T4 results file for a T1 search space: every configuration within its
restrictions, timed at random, and some outside them recorded as breaking them.

What it is for: to see whether `tuner import` reads a space (its values and restrictions
as Python, evaluated here by Python itself) and agrees with Python on every configuration,
before real results exist. The times are random: a landscape made this way says nothing
about a search strategy.

    python3 scripts/t4_synth.py SPACE_T1.json OUT_T4.json [--invalid 200] [--seed 1]
    tuner --db x.db import --t1 SPACE_T1.json -o x.yaml OUT_T4.json
"""
import argparse
import itertools
import json
import random


def values(p):
    v = p["Values"]
    return list(eval(v, {"__builtins__": {"range": range, "list": list, "tuple": tuple,
                                          "min": min, "max": max, "int": int}}))\
        if isinstance(v, str) else v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("t1")
    ap.add_argument("out")
    ap.add_argument("--invalid", type=int, default=200,
                    help="configurations breaking the restrictions to record (at most)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    space = json.load(open(args.t1))["ConfigurationSpace"]
    names = [p["Name"] for p in space["TuningParameters"]]
    domains = [values(p) for p in space["TuningParameters"]]
    conds = [compile(c["Expression"] if isinstance(c, dict) else c, "restriction", "eval")
             for c in space.get("Conditions", [])]
    results, invalid = [], 0
    for point in itertools.product(*domains):
        cfg = dict(zip(names, point))
        if all(eval(c, {"__builtins__": {"min": min, "max": max, "abs": abs, "int": int,
                                         "range": range}}, cfg) for c in conds):
            t = round(rng.uniform(1, 10), 6)
            results.append({"configuration": cfg, "times": {"runtimes": [t]},
                            "invalidity": "correct", "correctness": 1,
                            "measurements": [{"name": "time", "value": t, "unit": "ms"}],
                            "objectives": ["time"]})
        elif invalid < args.invalid and rng.random() < 0.01:
            invalid += 1
            results.append({"configuration": cfg, "times": {}, "invalidity": "constraints",
                            "correctness": 0,
                            "measurements": [{"name": "time", "value": "InvalidConfig",
                                              "unit": ""}],
                            "objectives": ["time"]})
    with open(args.out, "w") as fh:
        json.dump({"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds"},
                   "results": results}, fh)
    print("%s: %d configurations within the restrictions, %d outside recorded"
          % (args.out, len(results) - invalid, invalid))


if __name__ == "__main__":
    main()
