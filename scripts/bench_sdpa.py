#!/usr/bin/env python3
"""Put a tuner run's kernels next to PyTorch SDPA, timed the same way in one process.

For each shape of the run's suite: the baseline configuration, the fastest configuration
on that shape (the per-shape winner), and the run's best by fitness (geometric-mean
speedup), loaded from the tuner's cubin cache, against SDPA's flash and cuDNN backends.
Every kernel is timed with BENCH.md's method: CUDA-graph replays of 20 calls, median of
30 samples, divided by 20, warm L2, same inputs ([B, H, S, D], the problem's dtype, causal
when the shape's `causal` dim says so). Each of our kernels is checked against SDPA's math
backend before it is timed. Any attention family whose problem has dims B H S D (and
optionally causal) works: its launches, scratch buffers and args come from its sidecar
(scripts/attn_family.py), e.g. flash_fwd and flash_attn.

  python3 scripts/bench_sdpa.py --db sweep.db --cache tuner-cache [--sidecar S] [--json out.json]
      [--library library.json]

Needs torch and cupy (the GPU machine has both). Prints a Markdown table.

--library FILE writes SDPA's timings in the format `tuner report --library FILE`
imports: a JSON array of {"shape", "library", "median_us", "dims", "device",
"method"}, one entry per shape and backend ("sdpa-flash", "sdpa-cudnn"). An earlier
--json output converts without a GPU:

  python3 scripts/bench_sdpa.py --from-json bench.json --library library.json
"""

import argparse
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_family as af  # noqa: E402  (the sidecar's launches on torch buffers)
import flash_check as fc  # noqa: E402  (the graph timer)


def pick(db, fam):
    """The run, its shapes, and for each shape the variants to time."""
    run = db.execute("SELECT id, device, shapes, config_path FROM runs WHERE gpu = 1"
                     " ORDER BY id DESC LIMIT 1").fetchone()
    if not run:
        sys.exit("bench_sdpa: no GPU run in the database")
    run_id, device, shapes, _ = run
    shapes = json.loads(shapes)
    base = db.execute("SELECT variant_id FROM population WHERE run_id = ? AND origin = 'baseline'",
                      (run_id,)).fetchone()
    best = db.execute("SELECT variant_id, fitness FROM evals WHERE run_id = ? AND outcome = 'ok'"
                      " AND fitness IS NOT NULL ORDER BY fitness DESC LIMIT 1",
                      (run_id,)).fetchone()
    picks = []
    for sh in shapes:
        dims = ",".join("%s=%d" % (k, sh[k]) for k in fam.dims)
        fastest = db.execute("SELECT variant_id, median_us FROM measurements WHERE device = ?"
                             " AND shape_dims = ? AND outcome = 'ok' AND median_us IS NOT NULL"
                             " ORDER BY median_us LIMIT 1", (device, dims)).fetchone()
        picks.append((sh, {"baseline": base[0] if base else None,
                           "fastest": fastest[0] if fastest else None,
                           "best": best[0] if best else None}))
    return run_id, device, picks


def params(db, vid):
    s = db.execute("SELECT params FROM variants WHERE id = ?", (vid,)).fetchone()[0]
    return {k: int(v) for k, v in (kv.split("=") for kv in s.split(","))}


def cubin(db, cache, vid, spec):
    row = db.execute("SELECT key FROM builds WHERE variant_id = ? AND spec = ? AND sanitize = 0"
                     " AND outcome = 'ok'", (vid, spec)).fetchone()
    if not row:
        return None
    path = os.path.join(cache, row[0] + ".cubin")
    return path if os.path.exists(path) else None


METHOD = ("scripts/bench_sdpa.py: CUDA graph of 20 calls, median of 30 samples / 20, warm L2,"
          " fp16, non-causal")
BACKENDS = (("sdpa_flash", "sdpa-flash"), ("sdpa_cudnn", "sdpa-cudnn"))


def library_entries(doc):
    """The library timings of a --json document, in tuner report's import format."""
    out = []
    for r in doc["rows"]:
        dims = ",".join("%s=%d" % kv for kv in zip(doc.get("dim_names", "BHSD"), r["dims"]))
        for key, name in BACKENDS:
            if r.get(key):  # a backend that does not support the shape has none
                out.append({"shape": r["shape"], "library": name, "median_us": r[key],
                            "dims": dims, "device": doc["gpu"], "method": METHOD})
    return out


def write_library(path, doc):
    with open(path + ".tmp", "w") as fh:
        json.dump(library_entries(doc), fh, indent=1)
        fh.write("\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db")
    ap.add_argument("--cache", help="the tuner's cubin cache (TUNER_CACHE)")
    ap.add_argument("--sidecar", default=os.path.join(fc.ROOT, "kernels/templates/flash_fwd.yaml"))
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--library", help="also write SDPA's timings for 'tuner report --library'")
    ap.add_argument("--from-json", help="no GPU: convert this earlier --json output (--library)")
    args = ap.parse_args()
    if args.from_json:
        if not args.library:
            ap.error("--from-json needs --library FILE")
        with open(args.from_json) as fh:
            write_library(args.library, json.load(fh))
        return
    if not args.db or not args.cache:
        ap.error("--db and --cache are required (or --from-json)")

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    db = sqlite3.connect(args.db)
    fam = af.Family(args.sidecar)
    run_id, device, picks = pick(db, fam)
    timer = fc.Gpu(fam.side)
    tol = fam.problem["buffers"]["O"].get("compare", {}).get("rel_l2", 1e-2)
    gpu = torch.cuda.get_device_name(0)
    rows = []
    for sh, chosen in picks:
        shape = {d: sh[d] for d in fam.dims}
        causal = bool(shape.get("causal", 0))
        spec = ",".join("%s=%d" % (d, shape[d]) for d in fam.spec_dims)
        bufs = af.alloc(fam, shape, {"SPLITS": 8}, 1)  # scratch for any split count
        q, k, v = (af.shape_tensor(shape, bufs[n]) for n in ("Q", "K", "V"))
        ref = af.sdpa_reference(q, k, v, causal)
        flops = af.flops(fam, shape)
        row = {"shape": sh["name"], "dims": [shape[d] for d in fam.dims]}

        for backend, key in ((SDPBackend.FLASH_ATTENTION, "sdpa_flash"),
                             (SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn")):
            def launch(cs, backend=backend):
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                row[key] = timer.time_graph(launch)
            except Exception as e:  # a backend that does not support the shape
                row[key] = None
                row[key + "_why"] = str(e).split("\n")[0][:120]

        for role, vid in chosen.items():
            if vid is None:
                continue
            cfg = params(db, vid)
            path = cubin(db, args.cache, vid, spec)
            if not path:
                row[role] = None
                row[role + "_why"] = "no cubin in the cache"
                continue
            plan = af.Variant(fam, path, cfg).bind(shape, bufs)
            af.poison(fam, bufs)
            af.launch(plan)
            torch.cuda.synchronize()
            o = af.shape_tensor(shape, bufs["O"]).float()
            rel = float((o - ref).norm() / ref.norm())
            ok = bool(torch.isfinite(o).all()) and rel <= tol

            def launch(cs, plan=plan):
                af.launch(plan, cs)
            row[role] = timer.time_graph(launch) if ok else None
            row[role + "_params"] = ",".join("%s=%d" % kv for kv in cfg.items())
            row[role + "_rel_l2"] = rel
        row["tflops_fastest"] = flops / (row["fastest"] * 1e-6) / 1e12 if row.get("fastest") else None
        rows.append(row)
        del bufs, q, k, v, ref
        torch.cuda.empty_cache()

    def f(x):
        return "%.2f" % x if x else "-"

    print("GPU: %s; run %d of %s; BENCH.md method (graph of 20 calls, median of 30, warm)" %
          (gpu, run_id, args.db))
    print()
    print("| shape (%s) | baseline µs | fastest µs | TFLOP/s | best-fitness µs | SDPA flash µs"
          " | SDPA cuDNN µs | fastest vs flash | fastest vs cuDNN |" % ",".join(fam.dims))
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        vs_f = r["sdpa_flash"] / r["fastest"] if r.get("fastest") and r.get("sdpa_flash") else None
        vs_c = r["sdpa_cudnn"] / r["fastest"] if r.get("fastest") and r.get("sdpa_cudnn") else None
        print("| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], ",".join(str(x) for x in r["dims"]), f(r.get("baseline")),
            f(r.get("fastest")), f(r.get("tflops_fastest")), f(r.get("best")),
            f(r.get("sdpa_flash")), f(r.get("sdpa_cudnn")),
            "%.2fx" % vs_f if vs_f else "-", "%.2fx" % vs_c if vs_c else "-"))
    print()
    for r in rows:
        print("- %s: fastest %s; best-fitness %s" % (r["shape"], r.get("fastest_params", "-"),
                                                     r.get("best_params", "-")))
    doc = {"gpu": gpu, "run": run_id, "rows": rows, "dim_names": list(fam.dims)}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    if args.library:
        write_library(args.library, doc)


if __name__ == "__main__":
    main()
