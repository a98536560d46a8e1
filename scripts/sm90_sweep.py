#!/usr/bin/env python3
"""Compile every point of a family's space with nvcc or NVRTC and check the gates are exact.

For each head dim of the problem (D in --dims) and each point of the sidecar's params: evaluate
the constraints and smem_bytes as the tuner would, compile the point (with TUNER_SMEM_BYTES set
to smem_bytes), and read ptxas's report. An admitted point must compile with no spill, no
serialised wgmma (ptxas C7520) and no ignored setmaxnreg (C7508) (with --sanitize: compile); with TUNER_SMEM_BYTES one byte
short it must fail (the kernel's static_assert: smem_bytes is exact). With --all the points the
constraints reject are compiled too, to show what each constraint keeps out.

  python3 scripts/sm90_sweep.py [--nvrtc build/nvrtc_compile] [--sanitize] [--all] [-j 2]
      [--sidecar kernels/templates/flash_fwd_sm90.yaml] [--dims 64,128] [--json out.json]
      [--where 'SPLITS > 1']

Without --nvrtc it runs nvcc (-gencode=arch=compute_90a,code=sm_90a). Exit status 1 when an
admitted point fails any check.
"""

import argparse
import concurrent.futures as cf
import itertools
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMEM_LIMIT = 232448  # sm_90: 227 KB opt-in per block


def c_to_py(expr):
    """The sidecar's C-syntax integer expressions as Python (enough for these files)."""
    e = str(expr)
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    e = re.sub(r"(?<![/])/(?![/])", "//", e)
    return e


def ceil_div(a, b):
    return -(-a // b)


def evaluate(expr, env):
    return eval(c_to_py(expr), {"__builtins__": {}, "min": min, "max": max, "ceil_div": ceil_div,
                                "abs": abs}, env)


def compile_point(args, side, src, point, smem_bytes, extra=()):
    defs = ["-D%s=%d" % kv for kv in point.items() if kv[0] != "D"]
    defs += ["-DSHAPE_D=%d" % point["D"], "-DTUNER_SMEM_BYTES=%d" % smem_bytes]
    if args.sanitize:
        defs.append("-DTUNER_SANITIZE")
    inc = "-I" + os.path.join(ROOT, "kernels/include")
    if args.nvrtc:
        cmd = [args.nvrtc, src, "--gpu-architecture=sm_90a", "-std=c++17", "-Xptxas=-v",
               "-lineinfo", inc] + defs + list(side.get("options") or [])
    else:
        cmd = ["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17",
               "-Xptxas=-v", "-lineinfo", inc, "-o", os.devnull] + defs
        cmd += list(side.get("options") or []) + [src]
    p = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def parse(log):
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.findall(r"(\d+) bytes spill stores", log)
    return {
        "regs": int(regs.group(1)) if regs else None,
        "spill": max(int(s) for s in spill) if spill else None,
        "serialised": "C7520" in log,
        "setmaxnreg_ignored": "C7508" in log,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", default=os.path.join(ROOT, "kernels/templates/flash_fwd_sm90.yaml"))
    ap.add_argument("--nvrtc", help="the nvrtc_compile program (default: nvcc)")
    ap.add_argument("--sanitize", action="store_true", help="compile with -DTUNER_SANITIZE")
    ap.add_argument("--all", action="store_true", help="also compile the rejected points")
    ap.add_argument("--dims", default="64,128", help="head dims D to enumerate")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--json", help="write every point's result here")
    ap.add_argument("--where", help="only the points where this C expression holds (e.g. SPLITS > 1)")
    args = ap.parse_args()

    with open(args.sidecar) as fh:
        side = yaml.safe_load(fh)
    src = os.path.join(os.path.dirname(args.sidecar), side["source"])
    names = list(side["params"])
    points = []
    for d in (int(x) for x in args.dims.split(",")):
        for values in itertools.product(*(side["params"][n] for n in names)):
            pt = dict(zip(names, values))
            pt["D"] = d
            if args.where and not evaluate(args.where, dict(pt)):
                continue
            ok_c = all(evaluate(c, dict(pt)) for c in side.get("constraints") or [])
            smem = evaluate(side["smem_bytes"], dict(pt))
            points.append((pt, ok_c, smem, ok_c and smem <= SMEM_LIMIT))

    todo = [p for p in points if p[3] or (args.all and p[2] <= SMEM_LIMIT)]

    def run(p):
        pt, ok_c, smem, admitted = p
        rc, log = compile_point(args, side, src, pt, smem)
        lines = log.strip().splitlines()
        r = parse(log) if rc == 0 else {"error": [x for x in lines if "error" in x][:2] or lines[-3:]}
        r.update(point=pt, smem=smem, admitted=admitted, rc=rc)
        if admitted and rc == 0:
            rc_short, _ = compile_point(args, side, src, pt, smem - 1)
            r["smem_exact"] = rc_short != 0
        return r

    results = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for r in ex.map(run, todo):
            results.append(r)

    bad = []
    print("| D | " + " | ".join(names) + " | smem | admitted | regs | spill | verdict |")
    print("|---" * (len(names) + 6) + "|")
    for r in results:
        pt = r["point"]
        if r["rc"] != 0:
            verdict = "compile error: " + " / ".join(r["error"])[:160]
        elif r["spill"]:
            verdict = "spills"
        elif r["serialised"]:
            verdict = "wgmma serialised"
        elif r["setmaxnreg_ignored"]:
            verdict = "setmaxnreg ignored"
        elif r["admitted"] and not r.get("smem_exact", True):
            verdict = "smem_bytes larger than the kernel needs"
        else:
            verdict = "ok"
        r["verdict"] = verdict
        # A sanitize build is for checking, not timing: only a compile failure counts there.
        if r["admitted"] and verdict != "ok" and (not args.sanitize or r["rc"] != 0):
            bad.append(r)
        print("| %d | %s | %d | %s | %s | %s | %s |" % (
            pt["D"], " | ".join(str(pt[n]) for n in names), r["smem"],
            "yes" if r["admitted"] else "no", r.get("regs", "-"), r.get("spill", "-"), verdict))
    n_adm = sum(1 for p in points if p[3])
    print()
    print("%d points in the domain, %d admitted, %d compiled (%s%s), %d admitted points failing" % (
        len(points), n_adm, len(results), "NVRTC" if args.nvrtc else "nvcc",
        ", sanitize" if args.sanitize else "", len(bad)))
    if args.all:
        ok_rejected = [r for r in results if not r["admitted"] and r["verdict"] == "ok"]
        print("%d rejected points compile cleanly (what the constraints keep out anyway)" %
              len(ok_rejected))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
