#!/usr/bin/env python3
"""Time the tuned flash_fwd extension next to SDPA's backends, as /work/shared/BENCH.md says.

    python3 bench.py [--db tests/fixtures/sweep-h100.db] [--json out.json]

Each shape of the run's suite, fp16, non-causal, same inputs, one process: the extension and
torch.nn.functional.scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION),
(EFFICIENT_ATTENTION) and (CUDNN_ATTENTION), each as a CUDA graph of 20 calls replayed warm,
median of 30 samples divided by 20 (µs). The extension is checked against SDPA before it is
timed. Prints a Markdown table with the ratios (SDPA's time / ours: above 1, ours is faster).
"""

import argparse
import json
import os

import torch

import common


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.path.join(common.ROOT, "tests/fixtures/sweep-h100.db"))
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    ext = common.tuned_flash_fwd
    rel_tol, _ = common.tolerances()
    rows = []
    for sh in common.shapes(args.db):
        q, k, v = common.inputs(sh)
        flops = 4.0 * sh["B"] * sh["H"] * sh["S"] * sh["S"] * sh["D"]
        row = {"shape": sh["name"], "dims": [sh[d] for d in "BHSD"],
               "config": ext.config(sh["B"], sh["H"], sh["S"], sh["D"])}
        ref = common.reference(q, k, v)
        o = ext.forward(q, k, v).float()
        rel = float((o - ref).norm() / ref.norm())
        row["rel_l2"] = rel
        row["tuned"] = common.time_graph(lambda: ext.forward(q, k, v)) if rel <= rel_tol else None
        row.update(common.time_sdpa(q, k, v))
        row["tflops"] = flops / (row["tuned"] * 1e-6) / 1e12 if row["tuned"] else None
        rows.append(row)
        del q, k, v, ref, o
        torch.cuda.empty_cache()

    us, ratio = common.us, common.ratio
    print("GPU: %s, torch %s; CUDA graph of 20 calls, median of 30 samples / 20, warm L2, fp16"
          % (torch.cuda.get_device_name(0), torch.__version__))
    print()
    print("| shape (B,H,S,D) | tuned µs | TFLOP/s | SDPA flash µs | efficient µs | cuDNN µs |"
          " vs flash | vs efficient | vs cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], ",".join(map(str, r["dims"])), us(r["tuned"]),
            "%.1f" % r["tflops"] if r["tflops"] else "-", us(r["flash"]), us(r["efficient"]),
            us(r["cudnn"]), ratio(r["flash"], r["tuned"]), ratio(r["efficient"], r["tuned"]),
            ratio(r["cudnn"], r["tuned"])))
    print()
    c = rows[0]["config"]
    print("tuned: rank 1 of the exported header, %s" % ", ".join(
        "%s=%d" % (k, c[k]) for k in ("BLOCK_M", "BLOCK_N", "NUM_WARPS", "STAGES", "SWIZZLE",
                                      "PAD")))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "rows": rows}, fh, indent=1)
    return 0 if all(r["tuned"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
