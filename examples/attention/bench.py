#!/usr/bin/env python3
"""Time the combined attention extension next to SDPA's flash and cuDNN backends, as
/work/shared/BENCH.md says.

    python3 bench.py --db DB --run A --run B [--json out.json]

The shapes of check.py (the runs' tuned shapes, then common.UNTUNED), fp16, same inputs, one
process: the extension (the family attention_select() picks) and
torch.nn.functional.scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION) and
(CUDNN_ATTENTION), is_causal as the shape says, each as a CUDA graph of 20 calls replayed warm,
median of 30 samples divided by 20 (µs). The extension is checked against SDPA before it is
timed. Prints a Markdown table with the family that served each shape and the ratios (SDPA's
time / ours: above 1, ours is faster).
"""

import argparse
import json
import os

import torch

import common


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", default=os.path.join(common.HERE, "gen", "two.db"))
    ap.add_argument("--run", type=int, action="append", help="a run the header was exported from")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    runs = args.run or [1, 2]
    rows = []
    for sh in common.shapes(args.db, runs):
        c = common.choice(sh)
        row = {"shape": sh["name"], "dims": [sh[d] for d in common.DIMS], "tuned": sh["tuned"],
               "choice": c, "ours": None}
        rows.append(row)
        if c["family"] < 0:
            continue
        q, k, v = common.inputs(sh)
        causal = bool(sh["causal"])
        rel_tol, abs_tol = common.tolerances(c["family_name"])
        o = common.forward(sh, q, k, v)
        row["ok"], row["rel_l2"], row["max_abs"] = common.compare(
            o, common.reference(q, k, v, causal), rel_tol, abs_tol)
        if row["ok"]:
            row["ours"] = common.time_graph(lambda: common.forward(sh, q, k, v))
        row.update(common.time_sdpa(q, k, v, causal, ("flash", "cudnn")))
        B, H, S, D = sh["B"], sh["H"], sh["S"], sh["D"]
        flops = 2.0 * B * H * S * (S + 1) * D if causal else 4.0 * B * H * S * S * D
        row["tflops"] = flops / (row["ours"] * 1e-6) / 1e12 if row["ours"] else None
        del q, k, v, o
        torch.cuda.empty_cache()

    us, ratio = common.us, common.ratio
    print("GPU: %s, torch %s; CUDA graph of 20 calls, median of 30 samples / 20, warm L2, fp16"
          % (torch.cuda.get_device_name(0), torch.__version__))
    print()
    print("| shape (B,H,S,D,causal) | served by | µs | TFLOP/s | SDPA flash µs | cuDNN µs |"
          " vs flash | vs cuDNN |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["choice"]
        by = "%s #%d, %s %s" % (c["family_name"], c["config"], "tuned" if c["exact"]
                                else "near", c["shape"]) if c["family"] >= 0 else "none"
        print("| %s (%s)%s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], ",".join(map(str, r["dims"])), "" if r["tuned"] else " untuned", by,
            us(r["ours"]), "%.1f" % r["tflops"] if r.get("tflops") else "-", us(r.get("flash")),
            us(r.get("cudnn")), ratio(r.get("flash"), r["ours"]), ratio(r.get("cudnn"), r["ours"])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "runs": runs, "rows": rows}, fh, indent=1)
    return 0 if all(r["ours"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
