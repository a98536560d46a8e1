#!/usr/bin/env python3
"""A synthetic T4 results file for a T1 search space: every configuration within its
restrictions, timed at random, and some outside them recorded as breaking them.

What it is for: to see whether `tuner import` reads a space (its values and restrictions
as Python, evaluated here by Python itself) and agrees with Python on every configuration,
before real results exist. The times are random: a landscape made this way says nothing
about a search strategy.

    python3 scripts/t4_synth.py SPACE_T1.json OUT_T4.json [--invalid 200] [--seed 1]
        [--sample N] [--count]
    tuner --db x.db import --t1 SPACE_T1.json -o x.yaml OUT_T4.json

A declared space of up to 10**7 points is walked point by point, as it always was (the
same file for the same seed). A bigger one is walked with each restriction checked as
soon as the params it names have values, so that a branch that breaks one is left whole:
the same configurations within the restrictions, in the same order, but other times and
other configurations outside them. --sample N records N configurations within the
restrictions, drawn uniformly at random (each restriction again checked as soon as it
can be), where the space holds too many to record all: the rest have no result, which
the importer counts as missing. --count only counts (declared, within the restrictions).
"""
import argparse
import itertools
import json
import random
import sys

WALK_LIMIT = 10 ** 7  # points walked one by one; a bigger space is pruned
BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "range": range}


def values(p):
    v = p["Values"]
    return list(eval(v, {"__builtins__": {"range": range, "list": list, "tuple": tuple,
                                          "min": min, "max": max, "int": int}}))\
        if isinstance(v, str) else v


def timed(rng, cfg):
    t = round(rng.uniform(1, 10), 6)
    return {"configuration": cfg, "times": {"runtimes": [t]}, "invalidity": "correct",
            "correctness": 1, "measurements": [{"name": "time", "value": t, "unit": "ms"}],
            "objectives": ["time"]}


def broken(cfg):
    return {"configuration": cfg, "times": {}, "invalidity": "constraints", "correctness": 0,
            "measurements": [{"name": "time", "value": "InvalidConfig", "unit": ""}],
            "objectives": ["time"]}


def names_of(code):
    """The names a compiled expression reads, those of its comprehensions too."""
    out = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    for k in code.co_consts:
        if hasattr(k, "co_names"):
            out |= names_of(k)
    return out


class Space:
    def __init__(self, path):
        space = json.load(open(path))["ConfigurationSpace"]
        self.names = [p["Name"] for p in space["TuningParameters"]]
        self.domains = [values(p) for p in space["TuningParameters"]]
        self.conds = [compile(c["Expression"] if isinstance(c, dict) else c, "restriction",
                              "eval") for c in space.get("Conditions", [])]
        # each restriction at the depth where the last of the params it names has a value
        self.at = [[] for _ in range(len(self.names) + 1)]
        for c in self.conds:
            used = [self.names.index(n) for n in names_of(c) if n in self.names]
            self.at[max(used) + 1 if used else 0].append(c)
        self.size = 1
        for d in self.domains:
            self.size *= len(d)

    def passes(self, depth, cfg):
        return all(eval(c, {"__builtins__": BUILTINS}, cfg) for c in self.at[depth])

    def complete(self, rng, cfg, depth):
        """cfg with random values for the params from depth on (a copy)."""
        out = dict(cfg)
        for i in range(depth, len(self.names)):
            out[self.names[i]] = rng.choice(self.domains[i])
        return out


def walk(space, rng, args, results):
    """Every declared point, one by one (the original walk: the same file as before)."""
    invalid = 0
    for point in itertools.product(*space.domains):
        cfg = dict(zip(space.names, point))
        if all(eval(c, {"__builtins__": BUILTINS}, cfg) for c in space.conds):
            results.append(timed(rng, cfg))
        elif invalid < args.invalid and rng.random() < 0.01:
            invalid += 1
            results.append(broken(cfg))
    return invalid


def prune(space, rng, args, results, count_only=False):
    """Depth first, in the declared order, a branch left as soon as a restriction fails."""
    state = {"invalid": 0, "valid": 0}
    n = len(space.names)
    cfg = {}

    def go(depth):
        if not space.passes(depth, cfg):
            if (not count_only and state["invalid"] < args.invalid
                    and rng.random() < 0.01):
                state["invalid"] += 1
                results.append(broken(space.complete(rng, cfg, depth)))
            return
        if depth == n:
            state["valid"] += 1
            if not count_only:
                results.append(timed(rng, dict(cfg)))
            return
        name = space.names[depth]
        for v in space.domains[depth]:
            cfg[name] = v
            go(depth + 1)
        del cfg[name]

    go(0)
    return state["invalid"], state["valid"]


def sample(space, rng, args, results):
    """args.sample distinct configurations within the restrictions, uniformly at random."""
    seen, invalid, draws = set(), 0, 0
    n = len(space.names)
    limit = args.max_draws or 10000 * args.sample
    while len(seen) < args.sample and draws < limit:
        draws += 1
        cfg, depth = {}, 0
        while space.passes(depth, cfg):
            if depth == n:
                break
            cfg[space.names[depth]] = rng.choice(space.domains[depth])
            depth += 1
        else:
            if invalid < args.invalid and rng.random() < 0.01:
                invalid += 1
                results.append(broken(space.complete(rng, cfg, depth)))
            continue
        key = tuple(cfg[k] for k in space.names)
        if key in seen:
            continue
        seen.add(key)
        results.append(timed(rng, cfg))
    if len(seen) < args.sample:
        print("%s: only %d configurations within the restrictions in %d draws"
              % (args.out, len(seen), draws), file=sys.stderr)
    return invalid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("t1")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--invalid", type=int, default=200,
                    help="configurations breaking the restrictions to record (at most)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample", type=int,
                    help="record this many configurations within the restrictions, drawn at "
                    "random, instead of all")
    ap.add_argument("--max-draws", type=int,
                    help="with --sample: give up after this many draws (default 10000 per "
                    "configuration asked for)")
    ap.add_argument("--count", action="store_true",
                    help="print the declared points and those within the restrictions; "
                    "write nothing")
    args = ap.parse_args()
    if not args.out and not args.count:
        ap.error("OUT_T4.json is needed (or --count)")
    rng = random.Random(args.seed)
    space = Space(args.t1)
    if args.count:
        _, valid = prune(space, rng, args, [], count_only=True)
        print("%s: %d declared, %d within the restrictions (%.3g%%)"
              % (args.t1, space.size, valid, 100.0 * valid / space.size))
        return
    results = []
    if args.sample:
        invalid = sample(space, rng, args, results)
    elif space.size <= WALK_LIMIT:
        invalid = walk(space, rng, args, results)
    else:
        invalid, _ = prune(space, rng, args, results)
    with open(args.out, "w") as fh:
        json.dump({"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds"},
                   "results": results}, fh)
    print("%s: %d configurations within the restrictions, %d outside recorded"
          % (args.out, len(results) - invalid, invalid))


if __name__ == "__main__":
    main()
