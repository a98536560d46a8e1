#!/usr/bin/env python3
"""Put the tuned transpose next to torch and a device copy, timed the same way in one process.

For each shape of the job (configs/transpose.yaml by default): a device-to-device copy of the
same bytes (y.copy_(x): what the memory can do for a kernel that reads x once and writes y
once, the ceiling a transpose can reach), torch's own transpose (y.copy_(x.t()), the kernel
behind x.t().contiguous()), and our variants from the tuner's latest GPU run: its baseline,
its best by fitness and the fastest on each shape, each loaded from the tuner's cubin cache,
i.e. the very cubin the tuner timed. All with BENCH.md's method (familylib.time_graph: CUDA
graph replays of 20 calls, median of 30 samples). With --l2 cold (the default) the calls of a
graph rotate over enough copies of x and y that none is still in L2 (50 MB on an H100) when it
comes round again. GB/s is 2 * rows * cols * 4 bytes over the time. Every variant of ours is
first checked against x.t() bit for bit.

  build-static/tuner --db /tmp/fresh.db --config configs/transpose.yaml run --generations 10
  python3 scripts/bench_transpose.py --db /tmp/fresh.db --cache tuner-cache [--json out.json]

Needs torch and cupy (the GPU machine has both). Prints a Markdown table.
"""

import argparse
import json
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import familylib as fl  # noqa: E402

L2_BYTES = 50 << 20


def picks(path, cache, dims_order):
    """[(role, params, cubin)] of the latest GPU run: baseline, best, fastest per shape."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    run = db.execute("SELECT id, device, shapes FROM runs WHERE gpu = 1 ORDER BY id DESC"
                     " LIMIT 1").fetchone()
    if not run:
        sys.exit("bench_transpose: no GPU run in %s" % path)
    run_id, device, shapes = run
    roles = {}
    base = db.execute("SELECT variant_id FROM population WHERE run_id = ? AND origin ="
                      " 'baseline'", (run_id,)).fetchone()
    if base:
        roles.setdefault(base[0], []).append("baseline")
    best = db.execute("SELECT variant_id FROM evals WHERE run_id = ? AND outcome = 'ok' AND"
                      " fitness IS NOT NULL ORDER BY fitness DESC LIMIT 1",
                      (run_id,)).fetchone()
    if best:
        roles.setdefault(best[0], []).append("best")
    for sh in json.loads(shapes):
        dims = ",".join("%s=%d" % (d, sh[d]) for d in dims_order)
        f = db.execute("SELECT variant_id FROM measurements WHERE device = ? AND shape_dims = ?"
                       " AND outcome = 'ok' AND median_us IS NOT NULL ORDER BY median_us"
                       " LIMIT 1", (device, dims)).fetchone()
        if f:
            roles.setdefault(f[0], []).append("fastest on " + sh["name"])
    out = []
    for vid, r in roles.items():
        params = db.execute("SELECT params FROM variants WHERE id = ?", (vid,)).fetchone()[0]
        cfg = {k: int(v) for k, v in (kv.split("=") for kv in params.split(","))}
        key = db.execute("SELECT key FROM builds WHERE variant_id = ? AND sanitize = 0 AND"
                         " outcome = 'ok'", (vid,)).fetchone()
        cubin = os.path.join(cache, key[0] + ".cubin") if key else None
        out.append((", ".join(r), cfg, cubin if cubin and os.path.exists(cubin) else None))
    return run_id, device, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=os.path.join(fl.ROOT, "configs/transpose.yaml"))
    ap.add_argument("--db", required=True, help="the tuner's database (read only)")
    ap.add_argument("--cache", default=os.path.join(fl.ROOT, "tuner-cache"))
    ap.add_argument("--l2", choices=["cold", "warm"], default="cold")
    ap.add_argument("--json", help="write the numbers here too")
    args = ap.parse_args()

    job, side = fl.load_config(args.config)
    dims_order = side["problem"]["dims"]
    run_id, device, ours = picks(args.db, args.cache, dims_order)

    import cupy as cp
    import torch
    mods = {}
    rows_out = []
    for sh in job["shapes"]:
        rows, cols = int(sh["rows"]), int(sh["cols"])
        nbytes = 2 * rows * cols * 4
        k = 1 if args.l2 == "warm" or nbytes >= 2 * L2_BYTES else \
            min(20, 1 + math.ceil(2 * L2_BYTES / nbytes))
        g = torch.Generator(device="cuda").manual_seed(1)
        xs = [torch.randn(rows, cols, generator=g, device="cuda") for _ in range(k)]
        ys = [torch.empty(cols, rows, device="cuda") for _ in range(k)]
        ref = xs[0].t().contiguous()
        row = {"shape": sh["name"], "rows": rows, "cols": cols, "bytes": nbytes, "sets": k}

        def rot(fn):
            state = {"i": 0}

            def one(stream):
                i = state["i"] % k
                state["i"] += 1
                with stream:
                    fn(i)
            return fl.time_graph(one)

        # torch launches on its current stream: time_graph captures on that stream
        row["copy_us"] = rot(lambda i: ys[i].view(-1).copy_(xs[i].view(-1)))
        row["torch_us"] = rot(lambda i: ys[i].copy_(xs[i].t()))
        row["ours"] = []
        kargs = [(cp.from_dlpack(x), cp.from_dlpack(y), cp.int32(rows), cp.int32(cols))
                 for x, y in zip(xs, ys)]
        for role, cfg, cubin in ours:
            e = {"role": role, "params": ",".join("%s=%d" % kv for kv in cfg.items())}
            if not cubin:
                e["why"] = "no cubin in the cache"
                row["ours"].append(e)
                continue
            if cubin not in mods:
                mod = cp.RawModule(path=cubin)
                mods[cubin] = (mod, mod.get_function(side["kernel"]))
            fn = mods[cubin][1]
            env = dict(cfg, rows=rows, cols=cols)
            grid = tuple(int(fl.eval_expr(str(x), env)) for x in side["launch"]["grid"])
            block = tuple(int(fl.eval_expr(str(x), env)) for x in side["launch"]["block"])
            smem = int(fl.eval_expr(str(side["smem_bytes"]), env))
            ys[0].fill_(float("nan"))
            fn(grid, block, kargs[0], shared_mem=smem)
            torch.cuda.synchronize()
            if not torch.equal(ys[0], ref):
                e["why"] = "wrong: differs from x.t()"
            else:
                e["us"] = rot(lambda i, fn=fn, grid=grid, block=block, smem=smem:
                              fn(grid, block, kargs[i], shared_mem=smem))
            row["ours"].append(e)
        rows_out.append(row)
        del xs, ys, kargs, ref
        torch.cuda.empty_cache()

    gpu = torch.cuda.get_device_name()

    def gbs(r, us):
        return "%.0f" % (r["bytes"] / (us * 1e-6) / 1e9) if us else "-"

    print("tuner run %d on %s; this bench on %s, L2 %s\n" % (run_id, device, gpu, args.l2))
    print("| shape (rows, cols) | copy µs | copy GB/s | torch µs | torch GB/s | ours µs "
          "| ours GB/s | ours / torch | config |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows_out:
        timed = [e for e in r["ours"] if "us" in e]
        b = min(timed, key=lambda e: e["us"]) if timed else None
        print("| %s (%d, %d) | %.1f | %s | %.1f | %s | %s | %s | %s | %s |" % (
            r["shape"], r["rows"], r["cols"], r["copy_us"], gbs(r, r["copy_us"]),
            r["torch_us"], gbs(r, r["torch_us"]), "%.1f" % b["us"] if b else "-",
            gbs(r, b["us"]) if b else "-",
            "%.2fx" % (r["torch_us"] / b["us"]) if b else "-",
            "%s (%s)" % (b["params"], b["role"]) if b else "-"))
    for r in rows_out:
        for e in r["ours"]:
            if "why" in e:
                print("\n%s: %s %s: %s" % (r["shape"], e["role"], e["params"], e["why"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"run": run_id, "device": gpu, "l2": args.l2, "shapes": rows_out}, f,
                      indent=1)


if __name__ == "__main__":
    main()
