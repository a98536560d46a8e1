#!/usr/bin/env python3
"""Put softmax kernels next to torch.softmax and a device copy, timed the same way in one process.

For each shape of the tuning job (configs/softmax.yaml by default): torch.softmax(x, dim=-1)
on fp16, a device-to-device copy of the same bytes (x into y: what the memory can do for a
kernel that reads x once and writes y once), and each of our configurations, all with
BENCH.md's method: CUDA-graph replays of 20 calls, median of 30 samples, divided by 20. GB/s
is the bytes one call must move, 2 * rows * cols * 2 (x read, y written), over its time.
With --l2 cold (the default) the calls of a graph rotate over enough copies of x and y that
none of them is still in L2 (50 MB on an H100) when it comes round again, so that a shape
that fits in L2 is not timed from it; --l2 warm times one x and y over and over.

Our configurations: --config VEC=8,TPR=32,... (repeatable, each compiled here with NVRTC,
as the tuner does), and/or --db and --cache: the latest GPU run's baseline, its best by
fitness and the fastest variant on each shape, loaded from the tuner's cubin cache. Every
kernel of ours is checked against torch.softmax in fp32 before it is timed, on the same
inputs (normal, mean 100, std 2, like the problem's fill).

  python3 scripts/bench_softmax.py --config VEC=8,TPR=32,BLOCK=128,ITEMS=4,CLUSTER=1 \\
      --config VEC=8,TPR=1024,BLOCK=1024,ITEMS=8,CLUSTER=1 [--json out.json]
  python3 scripts/bench_softmax.py --db tuner.db --cache tuner-cache
  python3 scripts/bench_softmax.py --check [--sample 200]   # correctness of admitted points

--check compiles admitted points of the space (all, or a random --sample) and checks each on
small ragged shapes (cols from 1 to past every configuration's register capacity, rows that
leave blocks part empty), with the buffers also offset by a few elements, so that rows start
off 16-byte boundaries, the buffer's first and last slots are read element by element, and
the output may be aligned differently from the input. Needs torch and cupy (the GPU machine
has both); prints Markdown.
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import sqlite3
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import softmax_space as cs  # noqa: E402  (render, admitted points)
import flash_check as fc  # noqa: E402  (eval_expr, NVRTC, the graph timer)

warnings.filterwarnings("ignore", message="ExternalStream is deprecated")

SIDECAR = os.path.join(fc.ROOT, "kernels/templates/softmax.yaml")
JOB = os.path.join(fc.ROOT, "configs/softmax.yaml")
REL_L2 = 1e-3
MAX_ABS = 1e-3
L2_BYTES = 50 << 20
# --check: (rows, cols). Tiny rows, a row per slot, rows past a block's, cols past the register
# capacity of small configurations (they stream), and past the largest one's: ITEMS * VEC *
# BLOCK <= 65536 halves per block, times 8 blocks in a cluster.
CHECK_SHAPES = [(1, 1), (3, 5), (5, 8), (17, 127), (9, 1000), (130, 129), (5, 4097),
                (3, 33001), (2, 65537), (1, 140003), (1, 600001)]
# Offsets in elements of x and y into their allocations: aligned, both off, differently off.
CHECK_OFFSETS = [(0, 0), (3, 3), (1, 6)]


def parse_cfg(side, text):
    cfg = dict(side.get("baseline") or {})
    for kv in text.split(","):
        k, v = kv.split("=")
        if k.strip() not in side["params"]:
            sys.exit("bench_softmax: unknown param '%s'" % k.strip())
        cfg[k.strip()] = int(v)
    return {k: int(cfg[k]) for k in side["params"]}


def cfg_str(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def compile_job(args):
    side, cfg, arch = args
    inc = [os.path.join(fc.ROOT, "kernels/include"), os.path.join(fc.CUDA_HOME, "include")]
    src = cs.render(side, cfg, [], int(fc.eval_expr(side.get("smem_bytes", 0), cfg)), False)
    ok, cubin, log = fc.nvrtc_compile(src, side["source"], arch, inc, ["-lineinfo"])
    if not ok:
        return cfg, None, log
    fd, path = tempfile.mkstemp(suffix=".cubin", prefix="softmax_")
    with os.fdopen(fd, "wb") as f:
        f.write(cubin)
    return cfg, path, log


def compile_all(side, cfgs, arch, jobs):
    """Compile in worker processes, before this process initialises CUDA."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        return pool.map(compile_job, [(side, c, arch) for c in cfgs])


def launch_dims(side, cfg, rows, cols):
    env = dict(cfg, rows=rows, cols=cols)
    return (tuple(fc.eval_expr(e, env) for e in side["launch"]["grid"]),
            tuple(fc.eval_expr(e, env) for e in side["launch"]["block"]))


# ------------------------------------------------------------------ the tuner's database


def from_db(path, cache, dims_order):
    """(role, params, cubin) for the latest GPU run: baseline, best, fastest per shape."""
    db = sqlite3.connect(path)
    run = db.execute("SELECT id, device, shapes FROM runs WHERE gpu = 1 ORDER BY id DESC"
                     " LIMIT 1").fetchone()
    if not run:
        sys.exit("bench_softmax: no GPU run in %s" % path)
    run_id, device, shapes = run
    picks = {}
    base = db.execute("SELECT variant_id FROM population WHERE run_id = ? AND origin ="
                      " 'baseline'", (run_id,)).fetchone()
    if base:
        picks.setdefault(base[0], []).append("baseline")
    best = db.execute("SELECT variant_id FROM evals WHERE run_id = ? AND outcome = 'ok' AND"
                      " fitness IS NOT NULL ORDER BY fitness DESC LIMIT 1",
                      (run_id,)).fetchone()
    if best:
        picks.setdefault(best[0], []).append("best")
    for sh in json.loads(shapes):
        dims = ",".join("%s=%d" % (d, sh[d]) for d in dims_order)
        f = db.execute("SELECT variant_id FROM measurements WHERE device = ? AND shape_dims = ?"
                       " AND outcome = 'ok' AND median_us IS NOT NULL ORDER BY median_us"
                       " LIMIT 1", (device, dims)).fetchone()
        if f:
            picks.setdefault(f[0], []).append("fastest on " + sh["name"])
    out = []
    for vid, roles in picks.items():
        params = db.execute("SELECT params FROM variants WHERE id = ?", (vid,)).fetchone()[0]
        cfg = {k: int(v) for k, v in (kv.split("=") for kv in params.split(","))}
        key = db.execute("SELECT key FROM builds WHERE variant_id = ? AND sanitize = 0 AND"
                         " outcome = 'ok'", (vid,)).fetchone()
        path = os.path.join(cache, key[0] + ".cubin") if key else None
        out.append((", ".join(roles), cfg, path if path and os.path.exists(path) else None))
    return run_id, out


# ------------------------------------------------------------------ GPU side


class Bench:
    def __init__(self, side):
        import cupy
        import torch
        self.cp, self.torch, self.side = cupy, torch, side
        self.timer = fc.Gpu(side)
        self.fns = {}

    def load(self, path):
        mod = self.cp.RawModule(path=path)
        fn = mod.get_function(self.side["kernel"])
        self.fns[path] = (mod, fn)
        return fn

    def inputs(self, rows, cols, n=1, pad=0, seed=1):
        """n buffers of rows * cols fp16 (+ pad elements before), like the problem's fill."""
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(pad + rows * cols, generator=g, device="cuda",
                            dtype=torch.float32).mul_(2).add_(100).half() for _ in range(n)]

    def args(self, x, y, rows, cols):
        """The kernel's arguments, made before any graph capture (from_dlpack syncs streams)."""
        cp = self.cp
        return (cp.from_dlpack(x), cp.from_dlpack(y), cp.int32(rows), cp.int32(cols))

    def run(self, fn, cfg, args, stream=None):
        rows, cols = int(args[2]), int(args[3])
        grid, block = launch_dims(self.side, cfg, rows, cols)
        if stream is None:
            fn(grid, block, args)
        else:
            with stream:
                fn(grid, block, args)

    def compare(self, y, ref):
        """(ok, rel_l2, max_abs) of an fp16 output against an fp32 reference."""
        torch = self.torch
        yf = y.float()
        if not bool(torch.isfinite(yf).all()):
            return False, float("nan"), float("nan")
        err = yf - ref
        rel = float(err.norm() / ref.norm())
        mx = float(err.abs().max())
        return rel < REL_L2 and mx < MAX_ABS, rel, mx

    def time(self, launch, sets):
        """BENCH.md's graph timing; launch(stream, i) makes call i, on set i % sets."""
        state = {"i": 0}

        def one(stream):
            launch(stream, state["i"] % sets)
            state["i"] += 1
        return self.timer.time_graph(one)


def rotation(nbytes, l2):
    """How many copies of x and y the calls of a graph rotate over."""
    if l2 == "warm" or nbytes >= 2 * L2_BYTES:
        return 1
    return min(20, 1 + math.ceil(2 * L2_BYTES / nbytes))


def bench(args, side, shapes, ours):
    b = Bench(side)
    torch = b.torch
    rows_out = []
    for sh in shapes:
        rows, cols = sh["rows"], sh["cols"]
        nbytes = 2 * rows * cols * 2
        k = rotation(nbytes, args.l2)
        xs = b.inputs(rows, cols, k)
        xs = [x.view(rows, cols) for x in xs]
        ys = [torch.empty_like(x) for x in xs]
        kargs = [b.args(x, y, rows, cols) for x, y in zip(xs, ys)]
        ref = torch.softmax(xs[0].float(), dim=-1)
        row = {"shape": sh["name"], "rows": rows, "cols": cols, "bytes": nbytes, "sets": k}

        row["copy_us"] = b.time(lambda st, i: ys[i].copy_(xs[i]), k)
        row["torch_us"] = b.time(lambda st, i: torch.softmax(xs[i], dim=-1), k)
        _, row["torch_rel_l2"], row["torch_max_abs"] = b.compare(torch.softmax(xs[0], dim=-1),
                                                                 ref)
        row["ours"] = []
        for role, cfg, path in ours:
            entry = {"role": role, "params": cfg_str(cfg)}
            if not path:
                entry["why"] = "no cubin"
                row["ours"].append(entry)
                continue
            fn = b.fns[path][1] if path in b.fns else b.load(path)
            ys[0].fill_(float("nan"))
            b.run(fn, cfg, kargs[0])
            torch.cuda.synchronize()
            ok, entry["rel_l2"], entry["max_abs"] = b.compare(ys[0], ref)
            if ok:
                entry["us"] = b.time(lambda st, i, fn=fn, cfg=cfg: b.run(fn, cfg, kargs[i], st),
                                     k)
            else:
                entry["why"] = "wrong: rel_l2 %.3g max_abs %.3g" % (entry["rel_l2"],
                                                                     entry["max_abs"])
            row["ours"].append(entry)
        timed = [e for e in row["ours"] if "us" in e]
        row["best"] = min(timed, key=lambda e: e["us"]) if timed else None
        rows_out.append(row)
        del xs, ys, kargs, ref
        torch.cuda.empty_cache()
    return rows_out


def report(args, rows, gpu):
    def gbs(r, us):
        return r["bytes"] / (us * 1e-6) / 1e9 if us else None

    def f(x, fmt="%.1f"):
        return fmt % x if x else "-"

    print("GPU: %s; BENCH.md method (graph of 20 calls, median of 30); L2 %s; GB/s = 2 * rows"
          " * cols * 2 bytes / time; the copy is x into y, the same bytes (BENCH.md measured"
          " about 3.0 TB/s on an H100)" % (gpu, args.l2))
    print()
    print("| shape (rows x cols) | MB | copy µs | copy GB/s | torch µs | torch GB/s | ours µs |"
          " ours GB/s | ours vs torch | ours / copy GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        best = r["best"] or {}
        us = best.get("us")
        print("| %s (%d x %d) | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], r["rows"], r["cols"], r["bytes"] / 1e6, f(r["copy_us"], "%.2f"),
            f(gbs(r, r["copy_us"]), "%.0f"), f(r["torch_us"], "%.2f"),
            f(gbs(r, r["torch_us"]), "%.0f"), f(us, "%.2f"), f(gbs(r, us), "%.0f"),
            "%.2fx" % (r["torch_us"] / us) if us else "-",
            "%.0f%%" % (100.0 * r["copy_us"] / us) if us else "-"))
    print()
    for r in rows:
        best = r["best"]
        print("- %s: ours %s (%s); torch's own error rel_l2 %.2g" % (
            r["shape"], best["params"] if best else "-", best["role"] if best else "-",
            r["torch_rel_l2"]))
        for e in r["ours"]:
            print("  - %s [%s]: %s" % (e["params"], e["role"],
                                       "%.2f µs, %.0f GB/s, rel_l2 %.2g" % (
                                           e["us"], gbs(r, e["us"]), e["rel_l2"])
                                       if "us" in e else e.get("why")))


# ------------------------------------------------------------------ --check


def check(args, side, built):
    b = Bench(side)
    torch = b.torch
    fails, results = [], []
    cases = []
    for rows, cols in CHECK_SHAPES:
        for xo, yo in CHECK_OFFSETS:
            xbuf = b.inputs(rows, cols, 1, pad=xo, seed=rows * 7 + cols)[0]
            x = xbuf[xo:]
            cases.append((rows, cols, xo, yo, x, torch.softmax(x.view(rows, cols).float(), -1)))
    for cfg, path, log in built:
        name = cfg_str(cfg)
        if not path:
            fails.append("%s: compile error: %s" % (name, log.strip().splitlines()[-1:]))
            continue
        fn = b.load(path)
        worst = 0.0
        for rows, cols, xo, yo, x, ref in cases:
            ybuf = torch.full((yo + rows * cols + 8,), float("nan"), device="cuda",
                              dtype=torch.float16)
            y = ybuf[yo:yo + rows * cols]
            b.run(fn, cfg, b.args(x, y, rows, cols))
            torch.cuda.synchronize()
            ok, rel, mx = b.compare(y.view(rows, cols), ref)
            untouched = bool(torch.isnan(ybuf[:yo]).all() and torch.isnan(ybuf[-8:]).all())
            worst = max(worst, rel if rel == rel else float("inf"))
            if not ok or not untouched:
                fails.append("%s on %dx%d, x+%d y+%d: rel_l2 %.3g max_abs %.3g%s" % (
                    name, rows, cols, xo, yo, rel, mx, "" if untouched else
                    ", wrote outside y"))
        results.append({"params": name, "worst_rel_l2": worst})
        del b.fns[path]
        os.unlink(path)
    print("%d configuration(s) x %d case(s): %d failure(s)" % (len(built), len(cases),
                                                               len(fails)))
    for f in fails[:50]:
        print("  FAIL " + f)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": results, "fails": fails}, fh, indent=1)
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", action="append", default=[], help="NAME=V,...; repeatable")
    ap.add_argument("--db", help="a tuner database: time its latest GPU run's picks")
    ap.add_argument("--cache", help="the tuner's cubin cache (TUNER_CACHE), with --db")
    ap.add_argument("--job", default=JOB, help="the tuning job whose shapes to time")
    ap.add_argument("--shape", action="append", default=[], help="ROWSxCOLS instead; repeatable")
    ap.add_argument("--l2", choices=["cold", "warm"], default="cold")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--check", action="store_true", help="check admitted points, time nothing")
    ap.add_argument("--sample", type=int, help="with --check: this many random points")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()

    side = cs.load(SIDECAR)
    if args.check:
        cfgs = list(cs.admitted(side, [{}], None))
        if args.sample and args.sample < len(cfgs):
            cfgs = random.Random(1).sample(cfgs, args.sample)
        cfgs += [parse_cfg(side, c) for c in args.config]
        sys.exit(check(args, side, compile_all(side, cfgs, args.arch, args.jobs)))

    if args.shape:
        shapes = [{"name": s, "rows": int(s.split("x")[0]), "cols": int(s.split("x")[1])}
                  for s in args.shape]
    else:
        shapes = cs.load(args.job)["shapes"]
    ours = []
    built = compile_all(side, [parse_cfg(side, c) for c in args.config], args.arch, args.jobs)
    for cfg, path, log in built:
        if not path:
            sys.exit("bench_softmax: %s does not compile: %s" % (cfg_str(cfg), log[-400:]))
        ours.append(("given", cfg, path))
    run_id = None
    if args.db:
        if not args.cache:
            sys.exit("bench_softmax: --db needs --cache")
        run_id, picked = from_db(args.db, args.cache, ["rows", "cols"])
        ours += picked
    if not ours:
        sys.exit("bench_softmax: nothing of ours to time: give --config or --db")

    import torch
    rows = bench(args, side, shapes, ours)
    gpu = torch.cuda.get_device_name(0)
    report(args, rows, gpu + (", run %d of %s" % (run_id, args.db) if run_id else ""))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"gpu": gpu, "l2": args.l2, "rows": rows}, fh, indent=1)
    for _, _, path in ours:
        if path and path.startswith(tempfile.gettempdir()):
            os.unlink(path)


if __name__ == "__main__":
    main()
