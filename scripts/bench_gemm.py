#!/usr/bin/env python3
"""Put tuned GEMM configurations next to cuBLAS, timed the same way in one process.

For each shape of the job's suite: cuBLAS through torch.matmul on fp16 (fp32 reduction, and
again with the reduced-precision reduction torch allows by default), and each of our
configurations, compiled from the template as the tuner does (NVRTC) and launched through
cupy with the problem's own buffers and argument list. Every kernel is timed with BENCH.md's method:
CUDA-graph replays of 20 calls, median of 30 samples, divided by 20, warm L2, same inputs
(fp16, row-major). Each of our configurations is first checked against an fp32 product
(torch, TF32 off) with the problem's tolerances; a wrong one is reported, not timed.

Configurations come from `tuner top --json` (its baseline and the first --k results), an
exported header (every rank and per-shape variant it defines), or --set; several sources add up.

  build/tuner top --json --k 3 > top.json
  python3 scripts/bench_gemm.py --top top.json --k 3 --json bench.json
  python3 scripts/bench_gemm.py --header include/tuned/gemm_config.h
  python3 scripts/bench_gemm.py --set BLOCK_M=128,BLOCK_N=256,WARPS_N=4 --shape 4096,4096,4096

--check instead checks admitted points of the space (all, or a random --sample) on small
shapes with every tail ragged, --check-shape to add more: each point twice on one input (the
two outputs must agree bit for bit, as the tuner's race check asks), outputs poisoned with
NaN first, then against an fp32 product with the problem's tolerances. The tuner checks the
points it evaluates itself; this covers many points quickly, without a database.

  python3 scripts/bench_gemm.py --check --sample 300 --jobs 16

Needs torch and cupy (the GPU machine has both) and libnvrtc. Prints a Markdown table.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import familylib as fl  # noqa: E402


def configs_from_top(side, path, k):
    doc = json.load(open(path))
    out = []
    if doc.get("baseline"):
        out.append(("baseline", doc["baseline"]["params"]))
    for r in doc.get("results", [])[:k]:
        out.append(("rank %d" % r["rank"], r["params"]))
    return out


def configs_from_header(side, path):
    """Every variant an exported header defines: PREFIX_NAME (rank 1), PREFIX_R<r>_NAME,
    PREFIX_<SHAPE>_NAME, with PREFIX the family's name upper-cased."""
    prefix = side["name"].upper() + "_"
    names = fl.param_names(side)
    found = {}
    for m in re.finditer(r"^#define\s+(\w+)\s+(-?\d+)\s*$", open(path).read(), re.M):
        macro, value = m.group(1), int(m.group(2))
        if not macro.startswith(prefix):
            continue
        rest = macro[len(prefix):]
        for n in sorted(names, key=len, reverse=True):
            if rest == n or rest.endswith("_" + n):
                label = rest[:-len(n)].rstrip("_") or "R1"
                found.setdefault(label, {})[n] = value
                break
    out = []
    for label, cfg in found.items():
        if set(cfg) == set(names):
            out.append((label.lower() if not re.fullmatch(r"R\d+", label)
                        else "rank " + label[1:], {n: cfg[n] for n in names}))
    return out


# Shapes for --check: every dim off every tile size, M = 1, K shorter than one K tile, a
# skinny M, and K long enough for every split to own several K tiles.
CHECK_SHAPES = [(1, 8, 8), (77, 200, 136), (129, 264, 40), (16, 1096, 1032), (300, 520, 2056)]


def check(args):
    job, side = fl.load_config(args.config)
    shapes = CHECK_SHAPES + [tuple(map(int, s.split(","))) for s in args.check_shape]
    dims_list = [dict(zip(("M", "N", "K"), sh)) for sh in shapes]
    arch = "sm_%s%s" % tuple(subprocess_cc())
    limit = fl.SMEM_OPTIN.get(arch, 49152)
    suite = [fl.shape_dims(side, sh) for sh in job["shapes"]] + dims_list
    points = [p for p in fl.space(side)
              if all(not fl.static_gates(side, p, d, limit)[1] for d in suite)]
    total = len(points)
    if args.sample and args.sample < total:
        points = random.Random(1).sample(points, args.sample)
    work = tempfile.mkdtemp(prefix="bench_gemm_check.")
    t0 = time.time()
    fl.Variant.prebuild(side, [(p, dims_list[0]) for p in points], arch, work, args.jobs)
    print("compiled %d of %d admitted points in %.0f s" % (len(points), total, time.time() - t0),
          flush=True)

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    cmp_spec = side["problem"]["buffers"]["C"].get("compare", {})
    rel_tol, abs_tol = cmp_spec.get("rel_l2", 1e-2), cmp_spec.get("max_abs", 2e-2)
    bad, worst = [], 0.0
    for n, p in enumerate(points):
        for dims in dims_list:
            M, N, K = dims["M"], dims["N"], dims["K"]
            why = None
            try:
                var = fl.Variant(side, p, dims, arch, work)
            except RuntimeError as e:
                bad.append((p, dims, str(e).split("\n")[0]))
                break
            bufs = fl.make_buffers(side, p, dims, seed=n + 1)
            var.bind(bufs)
            outs = []
            for _ in range(2):
                bufs["C"].view(torch.uint8).fill_(0xff)
                var(fl.cupy_stream())
                torch.cuda.synchronize()
                outs.append(bufs["C"].clone())
            c = outs[0].view(M, N).float()
            ref = bufs["A"].view(M, K).float() @ bufs["B"].view(K, N).float()
            if not torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16)):
                why = "two runs differ"
            elif not bool(torch.isfinite(c).all()):
                why = "%d non-finite outputs" % int((~torch.isfinite(c)).sum())
            else:
                err = c - ref
                rel = float(err.norm() / ref.norm())
                mx = float(err.abs().max())
                worst = max(worst, rel)
                if rel > rel_tol or mx > abs_tol:
                    why = "rel_l2 %.3g, max_abs %.3g" % (rel, mx)
            if why:
                bad.append((p, dims, why))
        if (n + 1) % 50 == 0:
            print("  %d/%d points checked, %d wrong" % (n + 1, len(points), len(bad)), flush=True)
    print("%d points x %d shapes (%s): %d wrong; worst rel_l2 of a correct one %.2e"
          % (len(points), len(dims_list), ", ".join("%dx%dx%d" % s for s in shapes), len(bad),
             worst))
    for p, dims, why in bad[:50]:
        print("- %s on %dx%dx%d: %s" % (fl.cfg_str(p), dims["M"], dims["N"], dims["K"], why))
    return 1 if bad else 0


def subprocess_cc():
    """The GPU's compute capability without initialising CUDA here (compiles fork later)."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout.split()[0]
    return out.split(".")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=os.path.join(fl.ROOT, "configs/gemm.yaml"),
                    help="the job config: sidecar and shapes")
    ap.add_argument("--top", help="`tuner top --json` output")
    ap.add_argument("--k", type=int, default=3, help="results of --top to take")
    ap.add_argument("--header", help="a header `tuner export` wrote")
    ap.add_argument("--set", action="append", default=[],
                    help="NAME=V,... over the baseline; repeatable")
    ap.add_argument("--shape", action="append", default=[],
                    help="M,N,K instead of the config's suite; repeatable")
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--check", action="store_true",
                    help="check admitted points of the space instead of timing")
    ap.add_argument("--sample", type=int, default=0,
                    help="with --check: this many admitted points, at random (default: all)")
    ap.add_argument("--check-shape", action="append", default=[],
                    help="with --check: M,N,K to check on besides the built-in ones")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel compiles")
    args = ap.parse_args()
    if args.check:
        return check(args)

    import torch

    job, side = fl.load_config(args.config)
    # Our reference, and cuBLAS's fp16 product, without TF32 or fp16 reductions.
    torch.backends.cuda.matmul.allow_tf32 = False
    cfgs = []
    if args.top:
        cfgs += configs_from_top(side, args.top, args.k)
    if args.header:
        cfgs += configs_from_header(side, args.header)
    cfgs += [("set %d" % (i + 1), fl.parse_cfg(side, s)) for i, s in enumerate(args.set)]
    if not cfgs:
        cfgs = [("baseline", {k: int(v) for k, v in side["baseline"].items()})]
    seen = {}
    for i, (label, cfg) in enumerate(cfgs):  # labels name columns: make them unique
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            cfgs[i] = ("%s (%d)" % (label, seen[label]), cfg)
    if args.shape:
        shapes = [dict(zip(("M", "N", "K"), map(int, s.split(",")))) for s in args.shape]
        for s in shapes:
            s["name"] = "%dx%dx%d" % (s["M"], s["N"], s["K"])
    else:
        shapes = job["shapes"]

    cap = torch.cuda.get_device_capability()
    arch = "sm_%d%d" % cap
    gpu = torch.cuda.get_device_name()
    cmp_spec = side["problem"]["buffers"]["C"].get("compare", {})
    rel_tol, abs_tol = cmp_spec.get("rel_l2", 1e-2), cmp_spec.get("max_abs", 2e-2)
    work = tempfile.mkdtemp(prefix="bench_gemm.")
    rows = []
    for sh in shapes:
        dims = fl.shape_dims(side, sh)
        M, N, K = dims["M"], dims["N"], dims["K"]
        flops = 2.0 * M * N * K
        base = fl.make_buffers(side, cfgs[0][1], dims, seed=1)
        a, b = base["A"].view(M, K), base["B"].view(K, N)
        ref = a.float() @ b.float()
        row = {"shape": sh["name"], "dims": [M, N, K], "results": {}}

        def blas(reduced):
            def launch(cs):
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced
                torch.matmul(a, b)
            return launch

        for key, reduced in (("cublas", False), ("cublas_reduced", True)):
            row["results"][key] = {"us": fl.time_graph(blas(reduced))}
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False

        for label, cfg in cfgs:
            res = {"params": fl.cfg_str(cfg)}
            row["results"][label] = res
            _, why = fl.static_gates(side, cfg, dims, fl.SMEM_OPTIN.get(arch, 49152))
            if why:
                res["why"] = why
                continue
            try:
                var = fl.Variant(side, cfg, dims, arch, work)
            except RuntimeError as e:
                res["why"] = str(e).split("\n")[0]
                continue
            bufs = fl.make_buffers(side, cfg, dims, seed=1)
            bufs["A"].copy_(base["A"])
            bufs["B"].copy_(base["B"])
            var.bind(bufs)
            var(fl.cupy_stream())
            torch.cuda.synchronize()
            c = bufs["C"].view(M, N).float()
            if not bool(torch.isfinite(c).all()):
                res["why"] = "%d non-finite outputs" % int((~torch.isfinite(c)).sum())
                continue
            err = c - ref
            res["rel_l2"] = float(err.norm() / ref.norm())
            res["max_abs"] = float(err.abs().max())
            if res["rel_l2"] > rel_tol or res["max_abs"] > abs_tol:
                res["why"] = "wrong: rel_l2 %.3g, max_abs %.3g" % (res["rel_l2"],
                                                                    res["max_abs"])
                continue
            res["us"] = fl.time_graph(var)
            res["regs"] = var.resources["regs"]
        for res in row["results"].values():
            if res.get("us"):
                res["tflops"] = flops / (res["us"] * 1e-6) / 1e12
        ours = [r for lbl, r in row["results"].items()
                if not lbl.startswith("cublas") and r.get("us")]
        if ours:
            best = min(ours, key=lambda r: r["us"])
            row["best"] = best
            row["best_vs_cublas"] = row["results"]["cublas"]["us"] / best["us"]
        rows.append(row)
        del base, ref
        torch.cuda.empty_cache()

    def us(r):
        return "%.2f" % r["us"] if r.get("us") else "-"

    def tf(r):
        return "%.0f" % r["tflops"] if r.get("tflops") else "-"

    labels = [lbl for lbl, _ in cfgs]
    print("GPU: %s (%s); BENCH.md method (graph of 20 calls, median of 30, warm L2); fp16 in"
          " and out, fp32 accumulation" % (gpu, arch))
    print()
    print("| shape (M,N,K) | cuBLAS µs | TFLOP/s | cuBLAS, fp16 reduction allowed µs | "
          + " | ".join("%s µs" % lbl for lbl in labels) + " | our best TFLOP/s | "
          "speedup over cuBLAS (its µs / ours) |")
    print("|---" * (6 + len(labels)) + "|")
    for r in rows:
        res = r["results"]
        print("| %s (%d,%d,%d) | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], *r["dims"], us(res["cublas"]), tf(res["cublas"]),
            us(res["cublas_reduced"]), " | ".join(us(res[lbl]) for lbl in labels),
            tf(r["best"]) if r.get("best") else "-",
            "%.2fx" % r["best_vs_cublas"] if r.get("best_vs_cublas") else "-"))
    print()
    for lbl, cfg in cfgs:
        print("- %s: %s" % (lbl, fl.cfg_str(cfg)))
    for r in rows:
        for lbl, res in r["results"].items():
            if res.get("why"):
                print("- %s on %s: %s" % (lbl, r["shape"], res["why"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": gpu, "arch": arch, "configs": cfgs, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
