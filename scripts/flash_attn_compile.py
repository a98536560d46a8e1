#!/usr/bin/env python3
"""Compile every point a family's sidecar admits with nvcc and report ptxas's verdict (no GPU).

For each point of the declared space and each specialisation (the sidecar's `specialize`
dims; by default D in {64, 128} and causal in {0, 1}): the static gates (constraints,
shared memory against the arch's opt-in limit, the layout's alignment), then
`nvcc -cubin` with the tuner's options and preamble, then ptxas's registers and spills
for every entry. A point the gates admit must compile without spills; a point they
reject is reported by the gate that rejected it. --no-constraint N drops constraint N
(0-based) to measure what it guards; --sanitize also builds with TUNER_SANITIZE;
--sass counts HMMA/LDSM/LDGSTS in each cubin (needs cuobjdump).

  python3 scripts/flash_attn_compile.py kernels/templates/flash_attn.yaml [-j 2] [--arch sm_90]
      [--only BLOCK_M=64,SPLITS=4] [--dims D=64,causal=1] [--no-constraint 1] [--sanitize]
      [--sample N [--seed S]] [--sass] [--json out.json]

Exit status 1 when an admitted point fails to compile, spills, or breaks a static_assert.
"""

import argparse
import concurrent.futures
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_family as af  # noqa: E402  (the sidecar: space, gates, preamble)
import flash_check as fc  # noqa: E402  (the expression evaluator and the opt-in smem table)

NVCC = os.path.join(fc.CUDA_HOME, "bin", "nvcc")
SPEC_VALUES = {"D": [64, 128], "causal": [0, 1]}
# A shape to evaluate the gates on; only specialised dims and params enter them.
GATE_SHAPE = {"B": 1, "H": 1, "S": 4096}


def ptxas_report(log):
    """{entry: (registers, spill store bytes, spill load bytes)} from nvcc -Xptxas=-v."""
    out, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur] = [0, int(m.group(1)), int(m.group(2))]
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur in out:
            out[cur][0] = int(m.group(1))
    return out


def sass_counts(cubin):
    tool = shutil.which("cuobjdump") or os.path.join(fc.CUDA_HOME, "bin", "cuobjdump")
    if not os.path.exists(tool):
        return None
    sass = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True).stdout
    return {op: len(re.findall(r"\b%s\b" % op, sass)) for op in ("HMMA", "LDSM", "LDGSTS")}


def compile_one(job):
    text, options, arch, sass = job
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "v.cu")
        with open(src, "w") as f:
            f.write(text)
        cubin = os.path.join(tmp, "v.cubin")
        cmd = [NVCC, "-cubin", "-arch=" + arch, "-std=c++17", "-Xptxas=-v", "-lineinfo",
               "-I" + os.path.join(fc.ROOT, "kernels", "include"), src, "-o", cubin] + options
        r = subprocess.run(cmd, capture_output=True, text=True)
        log = r.stdout + r.stderr
        res = {"ok": r.returncode == 0, "ptxas": ptxas_report(log)}
        if r.returncode:
            res["log"] = "\n".join(l for l in log.splitlines() if "error" in l)[:2000]
        elif sass:
            res["sass"] = sass_counts(cubin)
        return res


def parse_kv(s):
    return {k: int(v) for k, v in (kv.split("=") for kv in s.split(","))} if s else {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sidecar")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", default="", help="fix some params: BLOCK_M=64,SPLITS=4")
    ap.add_argument("--dims", default="", help="fix some specialised dims: D=64,causal=0")
    ap.add_argument("--no-constraint", type=int, action="append", default=[])
    ap.add_argument("--sanitize", action="store_true")
    ap.add_argument("--sample", type=int, help="only this many admitted builds, drawn at random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sass", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()

    fam = af.Family(args.sidecar)
    only, fixed = parse_kv(args.only), parse_kv(args.dims)
    names = list(fam.params)
    domains = [[only[n]] if n in only else fam.params[n] for n in names]
    spec_names = fam.spec_dims
    specs = [dict(zip(spec_names, vals)) for vals in itertools.product(
        *[[fixed[d]] if d in fixed else SPEC_VALUES[d] for d in spec_names])]
    smem_limit = fc.SMEM_OPTIN[args.arch.rstrip("a")]

    points, rejected = [], {}
    for spec in specs:
        for vals in itertools.product(*domains):
            cfg = dict(zip(names, vals))
            env = dict(GATE_SHAPE, **spec, **cfg)
            smem, why = fam.gates({}, env, smem_limit, set(args.no_constraint))
            why = why and why.split(":")[0]
            key = ",".join("%s=%d" % kv for kv in spec.items())
            if why:
                rejected.setdefault(key, {}).setdefault(why, 0)
                rejected[key][why] += 1
                continue
            for san in ([False, True] if args.sanitize else [False]):
                points.append((cfg, spec, smem, san))

    if args.sample is not None and args.sample < len(points):
        random.Random(args.seed).shuffle(points)
        points = points[:args.sample]
    jobs = [(fam.render(cfg, spec, smem, san), fam.options, args.arch, args.sass)
            for cfg, spec, smem, san in points]
    print("%s: %d builds to compile on %s (%d jobs)" % (fam.name, len(jobs), args.arch, args.j),
          flush=True)
    results, bad = [], 0
    with concurrent.futures.ProcessPoolExecutor(args.j) as ex:
        for (cfg, spec, smem, san), res in zip(points, ex.map(compile_one, jobs)):
            row = {"cfg": cfg, "spec": spec, "smem": smem, "sanitize": san, **res}
            results.append(row)
            spills = {e: v for e, v in res["ptxas"].items() if v[1] or v[2]}
            if not res["ok"] or (spills and not san):
                bad += 1
                print("FAIL %s %s%s: %s" % (
                    ",".join("%s=%d" % kv for kv in spec.items()),
                    ",".join("%s=%d" % kv for kv in cfg.items()), " sanitize" if san else "",
                    res.get("log") or "spills %s" % spills), flush=True)

    print()
    print("| specialisation | admitted | compiled clean | spilled or failed | registers (main) | rejected |")
    print("|---|---|---|---|---|---|")
    for spec in specs:
        key = ",".join("%s=%d" % kv for kv in spec.items())
        rows = [r for r in results if r["spec"] == spec and not r["sanitize"]]
        clean = [r for r in rows if r["ok"] and not any(v[1] or v[2] for v in r["ptxas"].values())]
        regs = [r["ptxas"][fam.entries[0]][0] for r in clean if fam.entries[0] in r["ptxas"]]
        print("| %s | %d | %d | %d | %s | %s |" % (
            key, len(rows), len(clean), len(rows) - len(clean),
            "%d-%d" % (min(regs), max(regs)) if regs else "-",
            ", ".join("%s %d" % kv for kv in sorted(rejected.get(key, {}).items())) or "-"))
    if args.sanitize:
        san = [r for r in results if r["sanitize"]]
        print("\nsanitize builds: %d, compiled %d" % (len(san), sum(r["ok"] for r in san)))
    if args.sass:
        seen = [r["sass"] for r in results if r.get("sass")]
        if seen:
            print("\nSASS (min over builds): " + ", ".join(
                "%s %d" % (op, min(s[op] for s in seen)) for op in seen[0]))
        else:
            print("\nSASS: no cuobjdump here")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
