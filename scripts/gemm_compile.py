#!/usr/bin/env python3
"""Compile every point the GEMM family's (or another family's) gates admit, as the tuner does.

For a job config (its sidecar and its shapes): enumerate the declared space, apply the
static gates on every shape of the suite (constraints, shared memory against the arch's
opt-in limit, layout alignment), compile each admitted point with NVRTC, the tuner's
preamble and options, in the tuner's plain and sanitize builds, and report every admitted point
that fails to compile (a static_assert the constraints let through) or spills (which the
tuner's resource gate would reject: the constraints should have). With --rejected N it
also compiles N points the constraints reject, to show that they are rejected for a
reason (they fail a static_assert or spill). Each build's instructions are checked: the
PTX (and the SASS, where cuobjdump is installed) must hold the ones --expect names, and
no build may use local memory. Also compiles the problem's reference kernel.

  python3 scripts/gemm_compile.py --out /tmp/gemm-space
  python3 scripts/gemm_compile.py --limit 50 --jobs 2
  python3 scripts/gemm_compile.py --only "WARPS_M * WARPS_N == 16" --sanitize 0

Writes DIR/builds.jsonl (one line per build) and DIR/summary.txt; exits 1 when an
admitted point fails to compile or spills, or a build lacks an expected instruction.
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import familylib as fl  # noqa: E402

# Instructions each family's builds must hold: PTX mnemonic -> SASS opcode.
EXPECT = {"mma.sync": "HMMA", "ldmatrix": "LDSM", "cp.async": "LDGSTS"}


def build(job):
    """One build: compile, then look at the instructions. Runs in a worker process."""
    t0 = time.time()
    out = os.path.join(job["dir"], job["key"])
    res = fl.nvrtc_compile(job["src"], job["name"], job["entry"], job["arch"], out + ".cubin")
    res["seconds"] = time.time() - t0
    res.update({k: job[k] for k in ("key", "cfg", "kind", "sanitize")})
    if not res["ok"]:
        res["log"] = res["log"][-3000:]
        return res
    res["log"] = ""
    if job["check_isa"]:
        ptx = fl.nvrtc_compile(job["src"], job["name"], job["entry"], job["arch"], out + ".ptx",
                               ptx=True)
        text = open(out + ".ptx").read() if ptx["ok"] else ""
        res["ptx_missing"] = [m for m in job["expect"] if m not in text]
        res["ptx_local"] = ".local" in text
        if job["cuobjdump"]:
            sass = subprocess.run([job["cuobjdump"], "-sass", out + ".cubin"],
                                  capture_output=True, text=True).stdout
            res["sass_missing"] = [EXPECT[m] for m in job["expect"]
                                   if not re.search(r"\b%s\b" % EXPECT[m], sass)]
            res["sass_local"] = bool(re.search(r"\b(LDL|STL)\b", sass))
        os.unlink(out + ".ptx")
    os.unlink(out + ".cubin")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", nargs="?", default=os.path.join(fl.ROOT, "configs/gemm.yaml"),
                    help="the job config: its template and shapes (default: configs/gemm.yaml)")
    ap.add_argument("--arch", help="default: the config's")
    ap.add_argument("--out", help="directory for builds.jsonl and summary.txt")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0,
                    help="compile only this many admitted points, sampled (default: all)")
    ap.add_argument("--sanitize", type=int, default=-1, metavar="N",
                    help="also build N sampled admitted points with TUNER_SANITIZE "
                    "(default: every one compiled)")
    ap.add_argument("--rejected", type=int, default=0,
                    help="also compile this many points the constraints reject, sampled")
    ap.add_argument("--isa-every", type=int, default=1,
                    help="check the instructions of every Nth plain build (1: all)")
    ap.add_argument("--expect", default="mma.sync,ldmatrix,cp.async",
                    help="PTX instructions every build must hold (comma-separated, or empty)")
    ap.add_argument("--only", metavar="EXPR",
                    help="compile only the admitted points where this expression holds")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    cfg, side = fl.load_config(args.config)
    arch = args.arch or cfg["arch"]
    limit = fl.SMEM_OPTIN.get(arch, 49152)
    shapes = [fl.shape_dims(side, sh) for sh in cfg["shapes"]]
    entry = side.get("kernel") or fl.launches(side)[0]["kernel"]
    expect = [e for e in args.expect.split(",") if e]
    cuobjdump = shutil.which("cuobjdump") or (
        os.path.join(fl.CUDA_HOME, "bin", "cuobjdump")
        if os.path.exists(os.path.join(fl.CUDA_HOME, "bin", "cuobjdump")) else None)
    out_dir = args.out or tempfile.mkdtemp(prefix="gemm_compile.")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gemm_compile_bin.")
    rng = random.Random(args.seed)

    # The static gates, over every shape of the suite.
    declared, admitted, rejected, why = 0, [], [], {}
    for point in fl.space(side):
        declared += 1
        smem, reason = None, None
        for dims in shapes:
            smem, reason = fl.static_gates(side, point, dims, limit)
            if reason:
                break
        if reason:
            gate = reason.split(":")[0]
            why[gate] = why.get(gate, 0) + 1
            if gate == "constraint":
                rejected.append((point, reason))
        else:
            admitted.append((point, smem))

    chosen = [a for a in admitted if not args.only or fl.eval_expr(args.only, a[0])]
    rng.shuffle(chosen)  # so that --sanitize N and --isa-every sample the whole space
    if args.limit:
        chosen = chosen[:args.limit]
    spec_dims = shapes[0]  # specialised dims: one build per distinct value (see below)
    specs = sorted({tuple(d[k] for k in side.get("specialize") or []) for d in shapes})
    jobs = []
    for n, (point, smem) in enumerate(chosen):
        for spec in specs:
            dims = dict(spec_dims)
            dims.update(zip(side.get("specialize") or [], spec))
            key = "p%d_%s" % (n, "_".join(map(str, spec)))
            common = {"cfg": point, "kind": "admitted", "name": side["source"],
                      "entry": entry, "arch": arch, "dir": work, "expect": expect,
                      "cuobjdump": cuobjdump}
            jobs.append(dict(common, key=key, sanitize=False,
                             src=fl.render(side, point, dims, smem),
                             check_isa=n % args.isa_every == 0))
            if args.sanitize < 0 or n < args.sanitize:
                jobs.append(dict(common, key=key + "_san", sanitize=True,
                                 src=fl.render(side, point, dims, smem, sanitize=True),
                                 check_isa=False))
    for n, (point, reason) in enumerate(rng.sample(rejected, min(args.rejected, len(rejected)))):
        env = dict(point)
        env.update(spec_dims)
        smem = int(fl.eval_expr(side["smem_bytes"], env))
        jobs.append({"cfg": point, "kind": "rejected: " + reason, "name": side["source"],
                     "entry": entry, "arch": arch, "dir": work, "expect": expect,
                     "cuobjdump": cuobjdump, "key": "r%d" % n, "sanitize": False,
                     "src": fl.render(side, point, spec_dims, smem), "check_isa": False})
    ref = side["problem"].get("reference") or {}
    if ref.get("source"):
        with open(os.path.join(side["problem"]["_dir"], ref["source"])) as f:
            ref_src = f.read()
        jobs.append({"cfg": {}, "kind": "reference", "entry": ref["kernel"], "arch": arch,
                     "src": ref_src, "name": os.path.basename(ref["source"]), "dir": work,
                     "expect": [], "cuobjdump": None, "key": "reference", "sanitize": False,
                     "check_isa": False})

    print("%s: %d declared, %d admitted (%s), %d builds on %d processes for %s"
          % (side["name"], declared, len(admitted),
             ", ".join("%s rejects %d" % kv for kv in sorted(why.items())) or "none rejected",
             len(jobs), args.jobs, arch), flush=True)
    if not cuobjdump:
        print("no cuobjdump here: instructions checked in the PTX only", flush=True)
    t0 = time.time()
    results = []
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool, \
            open(os.path.join(out_dir, "builds.jsonl"), "w") as log:
        for i, r in enumerate(pool.imap_unordered(build, jobs)):
            results.append(r)
            log.write(json.dumps(r) + "\n")
            if (i + 1) % 100 == 0:
                print("  %d/%d builds, %.0f s" % (i + 1, len(jobs), time.time() - t0),
                      flush=True)
    shutil.rmtree(work, ignore_errors=True)

    bad, notes, lines = [], [], []
    adm = [r for r in results if r["kind"] == "admitted"]
    for r in adm:
        what = "sanitize build" if r["sanitize"] else "build"
        if not r["ok"]:
            bad.append("%s fails to compile: %s\n%s" % (what, fl.cfg_str(r["cfg"]), r["log"]))
        elif (r["spill_st"] or r["spill_ld"]) and r["sanitize"]:
            notes.append("%s spills %d/%d bytes (%d registers): %s" % (
                what, r["spill_st"], r["spill_ld"], r["regs"], fl.cfg_str(r["cfg"])))
        elif r["spill_st"] or r["spill_ld"]:
            bad.append("%s spills %d/%d bytes (%d registers): %s" % (
                what, r["spill_st"], r["spill_ld"], r["regs"], fl.cfg_str(r["cfg"])))
        for m in r.get("ptx_missing") or []:
            bad.append("no %s in the PTX: %s" % (m, fl.cfg_str(r["cfg"])))
        for m in r.get("sass_missing") or []:
            bad.append("no %s in the SASS: %s" % (m, fl.cfg_str(r["cfg"])))
        if r.get("ptx_local") or r.get("sass_local"):
            bad.append("local memory: %s" % fl.cfg_str(r["cfg"]))
    plain = [r for r in adm if r["ok"] and not r["sanitize"]]
    regs = sorted(r["regs"] for r in plain if r["regs"] is not None)
    lines.append("%s on %s: %d declared, %d admitted, %d compiled (%d plain, %d sanitize) in "
                 "%.0f s" % (side["name"], arch, declared, len(admitted), len(adm),
                             sum(1 for r in adm if not r["sanitize"]),
                             sum(1 for r in adm if r["sanitize"]), time.time() - t0))
    lines.append("static gates: %s" % (", ".join("%s rejects %d" % kv
                                                 for kv in sorted(why.items())) or "none"))
    if regs:
        lines.append("registers of the plain builds: min %d, median %d, max %d"
                     % (regs[0], regs[len(regs) // 2], regs[-1]))
    isa = [r for r in adm if "ptx_missing" in r]
    lines.append("instructions checked on %d builds (%s): %s" % (
        len(isa), "PTX and SASS" if cuobjdump else "PTX", ", ".join(expect) or "none"))
    lines.append("admitted points that fail: %d" % len(bad))
    lines.append("sanitize builds that spill (slower, not rejected: the resource gate "
                 "looks at the plain build): %d" % len(notes))
    rej = [r for r in results if r["kind"].startswith("rejected")]
    if rej:
        caught = sum(1 for r in rej if not r["ok"] or r["spill_st"] or r["spill_ld"])
        lines.append("constraint-rejected points compiled: %d, of which %d fail a static_assert "
                     "or spill" % (len(rej), caught))
        for r in rej:
            if r["ok"] and not (r["spill_st"] or r["spill_ld"]):
                lines.append("  compiles clean though rejected (%s): %s"
                             % (r["kind"], fl.cfg_str(r["cfg"])))
    refb = [r for r in results if r["kind"] == "reference"]
    for r in refb:
        lines.append("reference %s: %s" % (r["key"], "compiles" if r["ok"] else
                                             "FAILS\n" + r["log"]))
        if not r["ok"]:
            bad.append("reference fails to compile")
    text = "\n".join(lines) + "\n"
    if bad or notes:
        text += "\n" + "\n".join(bad[:50] + notes[:20]) + "\n"
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    print("logs in %s" % out_dir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
