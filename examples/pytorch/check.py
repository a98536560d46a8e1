#!/usr/bin/env python3
"""Check the tuned flash_fwd extension against torch.nn.functional.scaled_dot_product_attention.

    python3 check.py [--db tests/fixtures/sweep-h100.db]

On each shape of the run's suite and a ragged one (S = 1000), two seeds: the extension's O
against SDPA computed in fp32 (the math backend), with the tolerances of the problem's O
(kernels/problems/attention.yaml: rel_l2, max_abs), NaN and Inf failing. Exit status 1 on a failure.
"""

import argparse
import os

import torch

import common


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.path.join(common.ROOT, "tests/fixtures/sweep-h100.db"))
    args = ap.parse_args()
    rel_tol, abs_tol = common.tolerances()
    ext = common.tuned_flash_fwd
    print("GPU: %s; tolerances rel_l2 %g, max_abs %g" % (torch.cuda.get_device_name(0), rel_tol,
                                                       abs_tol))
    fails = 0
    for sh in common.shapes(args.db) + [common.RAGGED]:
        cfg = ext.config(sh["B"], sh["H"], sh["S"], sh["D"])
        for seed in (1, 2):
            q, k, v = common.inputs(sh, seed)
            o = ext.forward(q, k, v)
            ref = common.reference(q, k, v)
            torch.cuda.synchronize()
            ok, rel, mx = common.compare(o, ref, rel_tol, abs_tol)
            fails += not ok
            print("%-4s %-8s B=%d,H=%d,S=%d,D=%d seed %d: rel_l2 %.2e, max_abs %.2e; grid %s block "
                  "%s smem %d%s" % ("ok" if ok else "FAIL", sh["name"], sh["B"], sh["H"], sh["S"],
                                    sh["D"], seed, rel, mx, cfg["grid"], cfg["block"],
                                    cfg["smem_bytes"], " (opt-in)" if cfg["smem_optin"] else ""))
    print("%d failure(s)" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
