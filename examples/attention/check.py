#!/usr/bin/env python3
"""Check the combined attention extension against torch.nn.functional.scaled_dot_product_attention.

    python3 check.py --db DB --run A --run B

Every tuned shape of the runs' suites and untuned ones (common.UNTUNED: ragged S = 1000 and
3000, D=128 non-causal, (1,1,8192,64), causal), two seeds each: the extension's O against SDPA
in fp32 (the math backend, is_causal for causal shapes) with the tolerances of the problem of
the family that served it (rel_l2, max_abs; NaN and Inf fail). A tuned shape must be served
exactly (the header's tuned dims), any dims by some family. Exit status 1 on a failure.
"""

import argparse
import os

import torch

import common


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.path.join(common.HERE, "gen", "two.db"))
    ap.add_argument("--run", type=int, action="append", help="a run the header was exported from")
    args = ap.parse_args()
    runs = args.run or [1, 2]
    print("GPU: %s; runs %s" % (torch.cuda.get_device_name(0), ",".join(map(str, runs))))
    fails = 0
    served = {}
    for sh in common.shapes(args.db, runs):
        c = common.choice(sh)
        what = "%-12s %-7s B,H,S,D,causal=%-18s" % (
            sh["name"], "tuned" if sh["tuned"] else "untuned", common.dims(sh))
        if c["family"] < 0:
            print("FAIL %s: no family of the header serves these dims" % what)
            fails += 1
            continue
        how = "%s build %d (%s %s%s)" % (
            c["family_name"], c["config"], "shape" if c["exact"] else "nearest", c["shape"],
            ", %d launches" % c["launches"] if c["launches"] > 1 else "")
        if sh["tuned"] and not c["exact"]:
            print("FAIL %s: tuned, but the header serves it from %s" % (what, how))
            fails += 1
            continue
        served[c["family_name"]] = served.get(c["family_name"], 0) + 1
        rel_tol, abs_tol = common.tolerances(c["family_name"])
        for seed in (1, 2):
            q, k, v = common.inputs(sh, seed)
            o = common.forward(sh, q, k, v)
            ref = common.reference(q, k, v, bool(sh["causal"]))
            torch.cuda.synchronize()
            ok, rel, mx = common.compare(o, ref, rel_tol, abs_tol)
            fails += not ok
            print("%-4s %s seed %d: rel_l2 %.2e, max_abs %.2e; %s" % (
                "ok" if ok else "FAIL", what, seed, rel, mx, how))
            del q, k, v, o, ref
        torch.cuda.empty_cache()
    print("served: %s" % ", ".join("%s %d shapes" % kv for kv in sorted(served.items())))
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
