#!/usr/bin/env python3
"""Check every admitted point of an attention family, then time per-shape winners next to SDPA.

One process on the GPU machine, nothing built but the family's own NVRTC compiles:
  1. every point of the sidecar's space that passes the static gates, for each
     specialisation the suite needs (D, causal), compiled through NVRTC on all cores;
     a compile failure, a ptxas spill or local memory in the loaded module is a gate;
  2. each survivor run on every suite shape and on ragged shapes (S = 1, 77, 300, 1000:
     no multiple of any tile; short enough that splits go empty) against SDPA's math
     backend in float32 (causal as the shape says), outputs and scratch poisoned with
     NaN first, run twice (the runs must agree bit for bit); tolerances from the problem;
  3. a quick timing of every correct point on every suite shape, then the fastest few of
     each shape re-timed with BENCH.md's method (CUDA-graph replays of 20 calls, median
     of 30 samples, warm L2) next to SDPA flash and cuDNN on the same inputs;
  4. a Markdown table, the best single configuration over the suite, and ncu commands.

  python3 scripts/flash_attn_bench.py [--config configs/attention.yaml] [--out DIR]
      [--only SPLITS=4,STAGES=1/3,...] [--specs D=64,causal=0] [--top 3] [--sanitize]
  python3 scripts/flash_attn_bench.py --profile BLOCK_M=64,... --shape 1,8,512,64,0   # for ncu

Needs torch and cupy (the GPU machine has both).
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_family as af  # noqa: E402
import flash_check as fc  # noqa: E402

import yaml  # noqa: E402

warnings.filterwarnings("ignore", message="ExternalStream is deprecated")
RAGGED_S = [1, 77, 300, 1000]


def log(*a):
    print(*a, flush=True)


def parse_kv(s):
    return {k: int(v) for k, v in (kv.split("=") for kv in s.split(","))} if s else {}


def parse_only(s):
    """--only: NAME=V or NAME=V1/V2 (any of the values), comma-separated."""
    return {k: [int(x) for x in v.split("/")] for k, v in (kv.split("=") for kv in s.split(","))} \
        if s else {}


def cfg_str(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def load_config(path):
    with open(path) as f:
        conf = yaml.safe_load(f)
    base = os.path.dirname(os.path.abspath(path))
    shapes = [dict(s) for s in conf["shapes"]]
    for s in shapes:
        s.setdefault("causal", 0)
    return conf, os.path.join(base, conf["template"]), shapes


def gpu_arch():
    import torch
    major, minor = torch.cuda.get_device_capability(0)
    return "sm_%d%d" % (major, minor)


class Bench:
    def __init__(self, fam, args):
        import torch
        self.fam, self.args, self.torch = fam, args, torch
        self.timer = fc.Gpu(fam.side)
        self.compare = fam.problem["buffers"]["O"].get("compare", {})

    # -------------------------------------------------------------- checking

    def check(self, var, shape, data):
        """(ok, rel_l2, max_abs, why) of one variant on one shape's prepared inputs."""
        torch = self.torch
        bufs, ref = data["bufs"], data["ref"]
        plan = var.bind(shape, bufs)
        outs = []
        for _ in range(2):
            af.poison(self.fam, bufs)
            try:
                af.launch(plan)
                torch.cuda.synchronize()
            except Exception as e:  # a launch the driver refuses (a fault poisons the context)
                return False, float("nan"), float("nan"), "launch: %s" % str(e)[:200]
            outs.append(bufs["O"].clone())
        o = af.shape_tensor(shape, outs[0]).float()
        if not torch.isfinite(o).all():
            return False, float("nan"), float("nan"), "%d non-finite outputs" % int(
                (~torch.isfinite(o)).sum())
        if not torch.equal(outs[0], outs[1]):
            return False, float("nan"), float("nan"), "two runs differ (race)"
        err = o - ref
        rel = float(err.norm() / ref.norm())
        mx = float(err.abs().max())
        ok = rel <= self.compare.get("rel_l2", 1e-2) and mx <= self.compare.get("max_abs", 2e-2)
        return ok, rel, mx, "" if ok else "rel_l2 %.3g max_abs %.3g" % (rel, mx)

    def prepare(self, shape, cfgs, seed):
        """Inputs, the reference and scratch big enough for every configuration."""
        big = max(cfgs, key=lambda c: c.get("SPLITS", 1)) if cfgs else {}
        bufs = af.alloc(self.fam, shape, big, seed)
        q, k, v = (af.shape_tensor(shape, bufs[n]) for n in ("Q", "K", "V"))
        return {"bufs": bufs, "ref": af.sdpa_reference(q, k, v, shape.get("causal", 0))}

    # -------------------------------------------------------------- timing

    def time_variant(self, var, shape, bufs, reps, samples):
        plan = var.bind(shape, bufs)
        return self.timer.time_graph(lambda cs: af.launch(plan, cs), reps=reps, samples=samples)

    def time_sdpa(self, shape, bufs, backend):
        torch = self.torch
        from torch.nn.attention import sdpa_kernel
        q, k, v = (af.shape_tensor(shape, bufs[n]) for n in ("Q", "K", "V"))
        causal = bool(shape.get("causal", 0))

        def run(cs):
            with sdpa_kernel(backend):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            return self.timer.time_graph(run)
        except Exception as e:  # a backend that does not take the shape
            return "n/a: " + str(e).split("\n")[0][:80]


def compile_space(fam, specs, args, arch, out_dir):
    """Admitted configurations per spec and their compiled variants' paths."""
    smem_limit = fc.SMEM_OPTIN.get(arch.rstrip("a"), 232448)
    only = parse_only(args.only)
    jobs, admitted, gate_counts = [], {}, {}
    for key, (spec, shape) in specs.items():
        admitted[key] = []
        for cfg in fam.space():
            if any(cfg.get(k) not in v for k, v in only.items()):
                continue
            smem, why = fam.gates(cfg, shape, smem_limit)
            if why:
                gate_counts.setdefault(key, {}).setdefault(why.split(":")[0], 0)
                gate_counts[key][why.split(":")[0]] += 1
                continue
            admitted[key].append(cfg)
            jobs.append(fam.compile_job(cfg, spec, smem, arch, out_dir))
            if args.sanitize:
                jobs.append(fam.compile_job(cfg, spec, smem, arch, out_dir, sanitize=True))
    t0 = time.time()
    log("compiling %d builds on %d processes ..." % (len(jobs), args.jobs))
    built = af.compile_all(jobs, args.jobs)
    log("compiled in %.1f s" % (time.time() - t0))
    return admitted, built, gate_counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=os.path.join(af.ROOT, "configs/attention.yaml"))
    ap.add_argument("--sidecar", help="default: the config's template")
    ap.add_argument("--only", default="", help="fix params: SPLITS=4,Q_REGS=1,STAGES=1/3")
    ap.add_argument("--specs", action="append", default=[], help="D=64,causal=0 (repeatable)")
    ap.add_argument("--top", type=int, default=3, help="re-timed per shape")
    ap.add_argument("--quick", default="5,5", help="reps,samples of the quick timing")
    ap.add_argument("--sanitize", action="store_true", help="also run the sanitize builds")
    ap.add_argument("--no-time", action="store_true", help="checks only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", help="directory for the JSON results")
    ap.add_argument("--profile", help="run one configuration (for ncu): NAME=V,...")
    ap.add_argument("--shape", help="with --profile: B,H,S,D,causal")
    args = ap.parse_args()

    conf, template, shapes = load_config(args.config)
    fam = af.Family(args.sidecar or template)
    arch = gpu_arch()
    out_dir = args.out or tempfile.mkdtemp(prefix="flash_attn_")
    os.makedirs(out_dir, exist_ok=True)
    cubin_dir = tempfile.mkdtemp(prefix="cubins_")

    if args.profile:
        return profile(fam, args, arch, cubin_dir)

    # Specialisations: those of the suite's shapes, each with the suite and ragged shapes.
    specs, plan_shapes = {}, {}
    for s in shapes:
        spec = fam.spec_of(s)
        key = ",".join("%s=%d" % kv for kv in spec.items())
        if args.specs and key not in args.specs:
            continue
        specs.setdefault(key, (spec, s))
        plan_shapes.setdefault(key, []).append(s)
    for key, (spec, s) in specs.items():
        for S in RAGGED_S:
            plan_shapes[key].append(dict(s, name="ragged", B=1 + (S % 2), H=2, S=S))

    log("GPU %s, %s; family %s" % (fc_name(), arch, fam.name))
    admitted, built, gate_counts = compile_space(fam, specs, args, arch, cubin_dir)
    bench = Bench(fam, args)
    results = {}  # key -> list of {cfg, verdict, rel, per-shape times}
    import torch
    for key, (spec, _) in specs.items():
        rows = []
        variants = []
        for cfg in admitted[key]:
            job = fam.compile_job(cfg, spec, 0, arch, cubin_dir)
            b = built.get(job["key"])
            row = {"cfg": cfg, "spec": spec}
            rows.append(row)
            if not b or not b["ok"]:
                row["verdict"] = "compile"
                row["why"] = (b or {}).get("log", "")[:300]
                continue
            if b["spills"]:
                row["verdict"] = "spills"
                continue
            var = af.Variant(fam, b["cubin"], cfg)
            res = var.resources()
            row["regs"] = res[fam.entries[0]]["num_regs"]
            if any(r["local_size_bytes"] for r in res.values()):
                row["verdict"] = "local memory"
                continue
            variants.append((row, var))
        log("%s: %d admitted by the static gates, %d compiled without spills" % (
            key, len(rows), len(variants)))

        # Correctness on every shape of this spec, two seeds on the ragged ones.
        for s in plan_shapes[key]:
            for seed in ([1, 2] if s["name"] == "ragged" else [1]):
                data = bench.prepare(s, [r["cfg"] for r, _ in variants], seed)
                for row, var in variants:
                    if row.get("verdict"):
                        continue
                    ok, rel, mx, why = bench.check(var, s, data)
                    row["worst_rel"] = max(row.get("worst_rel", 0.0), rel if ok else 0.0)
                    if not ok:
                        row["verdict"] = "wrong"
                        row["why"] = "%s seed %d: %s" % (af.shape_str(s), seed, why)
                del data
                torch.cuda.empty_cache()
        if args.sanitize:
            sanitize_checks(fam, bench, variants, plan_shapes[key], built, arch, cubin_dir)
        for row, _ in variants:
            row.setdefault("verdict", "ok")
        bad = [r for r in rows if r["verdict"] in ("wrong", "compile", "sanitize")]
        log("%s: %d correct, %d wrong or failed to compile, rejected by the static gates: %s" % (
            key, sum(r["verdict"] == "ok" for r in rows), len(bad),
            ", ".join("%s %d" % kv for kv in sorted(gate_counts.get(key, {}).items())) or "none"))
        for r in bad[:20]:
            log("  %s %s: %s" % (r["verdict"], cfg_str(r["cfg"]), r.get("why", "")))
        if rows:
            log("  worst rel_l2 of a correct configuration: %.3g" % max(
                [r.get("worst_rel", 0) for r in rows if r["verdict"] == "ok"] or [0]))
        results[key] = (rows, variants)

    if args.no_time:
        dump(out_dir, results, [])
        return
    table = timing(fam, bench, args, shapes, specs, results)
    dump(out_dir, results, table)


def sanitize_checks(fam, bench, variants, shapes, built, arch, cubin_dir):
    """Sanitize build of each correct variant on the ragged shapes: the log must stay empty."""
    for row, var in variants:
        if row.get("verdict"):
            continue
        b = built.get(fam.compile_job(row["cfg"], row["spec"], 0, arch, cubin_dir, True)["key"])
        if not b or not b["ok"]:
            row["verdict"], row["why"] = "sanitize", "sanitize build failed"
            continue
        svar = af.Variant(fam, b["cubin"], row["cfg"])
        for s in shapes:
            if s["name"] != "ragged":
                continue
            data = bench.prepare(s, [row["cfg"]], 3)
            bench.timer.san_log(svar.mod, zero=True)
            af.launch(svar.bind(s, data["bufs"]))
            bench.torch.cuda.synchronize()
            counts = list(bench.timer.san_log(svar.mod)["count"])
            if any(counts):
                row["verdict"] = "sanitize"
                row["why"] = "%s: violations %s" % (af.shape_str(s), counts)
                break


def timing(fam, bench, args, shapes, specs, results):
    """Quick pass over every correct variant, then the top few per shape with SDPA."""
    from torch.nn.attention import SDPBackend
    reps, samples = (int(x) for x in args.quick.split(","))
    table = []
    for s in shapes:
        key = ",".join("%s=%d" % kv for kv in fam.spec_of(s).items())
        if key not in results:
            continue
        rows, variants = results[key]
        good = [(r, v) for r, v in variants if r["verdict"] == "ok"]
        data = bench.prepare(s, [r["cfg"] for r, _ in good], 1)
        quick = []
        for r, v in good:
            t = bench.time_variant(v, s, data["bufs"], reps, samples)
            r.setdefault("quick_us", {})[s["name"]] = t
            quick.append((t, r, v))
        quick.sort(key=lambda x: x[0])
        best = []
        for _, r, v in quick[:args.top]:
            best.append((bench.time_variant(v, s, data["bufs"], 20, 30), r, v))
        best.sort(key=lambda x: x[0])
        flash = bench.time_sdpa(s, data["bufs"], SDPBackend.FLASH_ATTENTION)
        cudnn = bench.time_sdpa(s, data["bufs"], SDPBackend.CUDNN_ATTENTION)
        row = {"shape": s["name"], "dims": af.shape_str(s), "flops": af.flops(fam, s),
               "sdpa_flash": flash, "sdpa_cudnn": cudnn}
        if best:
            row.update(best_us=best[0][0], best_cfg=cfg_str(best[0][1]["cfg"]),
                       best_regs=best[0][1].get("regs"))
        table.append(row)
        log("%s %s: ours %s, flash %s, cuDNN %s" % (s["name"], row["dims"], row.get("best_us"),
                                                    flash, cudnn))
        del data
        bench.torch.cuda.empty_cache()

    def f(x):
        return "%.2f" % x if isinstance(x, float) else "-"

    def ratio(a, b):
        return "%.2fx" % (a / b) if isinstance(a, float) and isinstance(b, float) else "-"

    log("\nBENCH.md method (graph of 20 calls, median of 30, warm L2); ratio > 1: ours faster\n")
    log("| shape (B,H,S,D,causal) | ours µs | TFLOP/s | SDPA flash µs | SDPA cuDNN µs"
        " | vs flash | vs cuDNN | configuration |")
    log("|---|---|---|---|---|---|---|---|")
    for r in table:
        tf = r["flops"] / (r["best_us"] * 1e-6) / 1e12 if r.get("best_us") else None
        log("| %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["shape"], r["dims"], f(r.get("best_us")), f(tf), f(r["sdpa_flash"]),
            f(r["sdpa_cudnn"]), ratio(r["sdpa_flash"], r.get("best_us")),
            ratio(r["sdpa_cudnn"], r.get("best_us")), r.get("best_cfg", "-")))

    # One configuration for the whole suite: the best geometric mean of flash / ours.
    by_cfg = {}
    for s in shapes:
        key = ",".join("%s=%d" % kv for kv in fam.spec_of(s).items())
        if key not in results:
            continue
        for r, _ in results[key][1]:
            if r["verdict"] == "ok" and s["name"] in r.get("quick_us", {}):
                by_cfg.setdefault(cfg_str(r["cfg"]), {})[s["name"]] = r["quick_us"][s["name"]]
    names = [s["name"] for s in shapes]
    flash_t = {r["shape"]: r["sdpa_flash"] for r in table}
    whole = [(math.exp(sum(math.log(flash_t[n] / t[n]) for n in names) / len(names)), c)
             for c, t in by_cfg.items() if len(t) == len(names)
             and all(isinstance(flash_t.get(n), float) for n in names)]
    if whole:
        g, c = max(whole)
        log("\nbest single configuration over the suite (quick timing): %s, geo-mean %.2fx of "
            "SDPA flash" % (c, g))

    log("\nncu, for the per-shape winners (tensor pipe active %, stall reasons):")
    for r in table:
        if r.get("best_cfg"):
            dims = r["dims"].strip("()")
            log("  ncu --kernel-name 'regex:^flash_attn$' --launch-skip 3 --launch-count 1 "
                "--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats "
                "--section SchedulerStats --metrics "
                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active "
                "python3 scripts/flash_attn_bench.py --config %s --profile %s --shape %s" % (
                    os.path.relpath(bench.args.config, af.ROOT), r["best_cfg"], dims))
    return table


def profile(fam, args, arch, cubin_dir):
    """Launch one configuration a few times on one shape, for a profiler to catch."""
    import torch
    dims = [int(x) for x in args.shape.split(",")]
    shape = dict(zip(["B", "H", "S", "D", "causal"], dims), name="profile")
    cfg = {k: v for k, v in fam.side["baseline"].items()}
    cfg.update(parse_kv(args.profile))
    smem, why = fam.gates(cfg, shape, fc.SMEM_OPTIN.get(arch.rstrip("a"), 232448))
    if why:
        sys.exit("flash_attn_bench: %s" % why)
    job = fam.compile_job(cfg, fam.spec_of(shape), smem, arch, cubin_dir)
    b = af.compile_all([job], 1)[job["key"]]
    if not b["ok"]:
        sys.exit("flash_attn_bench: compile failed\n" + b["log"])
    var = af.Variant(fam, b["cubin"], cfg)
    bufs = af.alloc(fam, shape, cfg, 1)
    plan = var.bind(shape, bufs)
    for _ in range(5):
        af.launch(plan)
    torch.cuda.synchronize()
    log("ran %s on %s 5 times; registers %s" % (cfg_str(cfg), af.shape_str(shape),
                                               var.resources()))


def fc_name():
    import torch
    return torch.cuda.get_device_name(0)


def dump(out_dir, results, table):
    path = os.path.join(out_dir, "flash_attn_bench.json")
    with open(path, "w") as f:
        json.dump({"table": table, "variants": {k: v[0] for k, v in results.items()}}, f,
                  indent=1, default=str)
    log("\nresults: %s" % path)


if __name__ == "__main__":
    main()
