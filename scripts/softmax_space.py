#!/usr/bin/env python3
"""Compile every point of the softmax family's space that its constraints admit, without a GPU.

For each point of the sidecar's declared domain that satisfies every constraint (on every
shape of --config's suite, where given), render the tuner's preamble (each param,
SHAPE_<dim> of each specialised dim, TUNER_SMEM_BYTES) before the template and compile it
with NVRTC as the tuner does (or with nvcc, --nvcc), ptxas verbose. Prints what the tuner's
build gates would decide: compile errors, spills (against --max-spill, the config's
max_spill_bytes), registers x threads over the register file, static + dynamic shared
memory over the opt-in limit. Exits 1 when an admitted point fails a build gate, so that a
constraint can be made exact; --sanitize builds with -DTUNER_SANITIZE too.

  python3 scripts/softmax_space.py --jobs 2 --sanitize --json out.json
  python3 scripts/softmax_space.py --where 'VEC == 8' --ptx

--ptx also compiles each point to PTX (for a virtual arch) and counts its global and shared
loads and stores by width: each point must keep its 2 * ITEMS loads and ITEMS stores of VEC
halves whole (cuobjdump is not installed here to read the SASS).
Any sidecar will do (default: the softmax family's). Reuses flash_check's YAML reader,
expression evaluator and NVRTC binding.
"""

import argparse
import collections
import ctypes
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flash_check as fc  # noqa: E402  (eval_expr: the sidecar's expression language)

REGS_PER_SM = 65536
SMEM_OPTIN = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448}


def load(path):
    """A sidecar, problem or job: PyYAML where installed, else flash_check's small reader."""
    return fc.load_sidecar(path)


def shapes_of(config, side):
    """The suite's shapes as dicts of dims (one empty shape without a config)."""
    if not config:
        return [{}]
    doc = load(config)
    prob = side.get("problem")
    if isinstance(prob, str):
        prob = load(os.path.join(side["_dir"], prob))
    dims = (prob or {}).get("dims") or []
    return [{d: int(sh[d]) for d in dims if d in sh} for sh in doc.get("shapes") or []]


def admitted(side, shapes, where):
    names = list(side["params"])
    for values in itertools.product(*(side["params"][n] for n in names)):
        cfg = dict(zip(names, (int(v) for v in values)))
        ok = True
        for sh in shapes:
            env = dict(sh, **cfg)
            if not all(fc.eval_expr(c, env) for c in side.get("constraints") or []):
                ok = False
                break
        if ok and where and not fc.eval_expr(where, cfg):
            ok = False
        if ok:
            yield cfg


def specs(side, shapes):
    """Distinct values of the specialised dims over the suite, as lists of (dim, value)."""
    dims = side.get("specialize") or []
    out = []
    for sh in shapes:
        spec = [(d, sh[d]) for d in dims]
        if spec not in out:
            out.append(spec)
    return out


def render(side, cfg, spec, smem, sanitize):
    lines = ["#define %s %d" % kv for kv in cfg.items()]
    lines += ["#define SHAPE_%s %d" % kv for kv in spec]
    lines.append("#define TUNER_SMEM_BYTES %d" % smem)
    if sanitize:
        lines.append("#define TUNER_SANITIZE 1")
    with open(os.path.join(side["_dir"], side["source"])) as f:
        body = f.read()
    lines.append('#line 1 "%s"' % side["source"])
    return "\n".join(lines) + "\n" + body


PTXAS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
ACCESS = re.compile(r"^\s*(?:@!?%p\d+\s+)?((?:ld|st)\.(?:global|shared)[.a-z0-9:]*?)\s", re.M)


def access_counts(ptx):
    """Global and shared loads and stores by width: ld.global.v4.u32 -> 'ld.global 128'."""
    out = collections.Counter()
    for op in ACCESS.findall(ptx):
        parts = op.split(".")
        vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
        bits = next((int(re.sub(r"\D", "", p)) for p in reversed(parts)
                     if re.fullmatch(r"[usbf]\d+", p)), 0)
        out["%s.%s %d" % (parts[0], parts[1], vec * bits)] += 1
    return dict(out)


def cfg_key(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def compile_one(job):
    t0 = time.time()
    src, opts, arch = job["src"], job["opts"], job["arch"]
    if job["nvcc"]:
        with tempfile.TemporaryDirectory() as d:
            cu = os.path.join(d, "k.cu")
            with open(cu, "w") as f:
                f.write(src)
            p = subprocess.run(["nvcc", "-cubin", "-arch=" + arch] + opts +
                               [cu, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
            ok, log = p.returncode == 0, p.stdout + p.stderr
    else:
        ok, _, log = fc.nvrtc_compile(src, job["name"], arch, [], opts)
    out = {"key": job["key"], "ok": ok, "seconds": round(time.time() - t0, 2)}
    if not ok:
        out["error"] = next((ln for ln in log.splitlines() if "error" in ln), log[:300])
        return out
    m = PTXAS.search(log)
    u = USED.search(log)
    out.update(stack=int(m.group(1)) if m else 0, spill=int(m.group(2)) + int(m.group(3))
               if m else 0, regs=int(u.group(1)) if u else None,
               smem=int(u.group(2)) if u and u.group(2) else 0)
    if job["ptx"]:
        virt = "compute_" + arch.split("_")[1]
        lib = fc._nvrtc()
        prog = ctypes.c_void_p()
        lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), job["name"].encode(), 0, None,
                               None)
        o = ["-std=c++17", "--gpu-architecture=" + virt] + [x for x in opts if x != "-Xptxas=-v"]
        arr = (ctypes.c_char_p * len(o))(*[x.encode() for x in o])
        if lib.nvrtcCompileProgram(prog, len(o), arr) == 0:
            n = ctypes.c_size_t()
            lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value)
            lib.nvrtcGetPTX(prog, buf)
            out["access"] = access_counts(buf.value.decode())
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sidecar", nargs="?",
                    default=os.path.join(fc.ROOT, "kernels/templates/softmax.yaml"))
    ap.add_argument("--config", help="a tuning job: its shapes feed constraints and specialize")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--where", help="an expression over params: compile only those points")
    ap.add_argument("--sanitize", action="store_true", help="also build with TUNER_SANITIZE")
    ap.add_argument("--ptx", action="store_true", help="count global/shared accesses by width")
    ap.add_argument("--nvcc", action="store_true", help="compile with nvcc instead of NVRTC")
    ap.add_argument("--max-spill", type=int, default=0, help="spill bytes allowed (default 0)")
    ap.add_argument("--json", help="write every point's result here")
    args = ap.parse_args()

    side = load(args.sidecar)
    shapes = shapes_of(args.config, side)
    inc = os.path.join(fc.ROOT, "kernels", "include")
    cuda_inc = os.path.join(fc.CUDA_HOME, "include")
    base_opts = ["-std=c++17", "-Xptxas=-v", "-lineinfo", "-I" + inc, "-I" + cuda_inc]
    base_opts += [str(o) for o in side.get("options") or []]
    smem_limit = SMEM_OPTIN.get(args.arch, 49152)
    threads_expr = side.get("launch", {}).get("block") or [1, 1, 1]

    jobs, points, ncfg = [], {}, 0
    for cfg in admitted(side, shapes, args.where):
        ncfg += 1
        for spec in specs(side, shapes):
            env = dict(cfg, **dict(spec))
            smem = fc.eval_expr(side.get("smem_bytes", 0), env)
            threads = 1
            for e in threads_expr:
                threads *= fc.eval_expr(e, env)
            for san in ([False, True] if args.sanitize else [False]):
                key = cfg_key(dict(list(cfg.items()) + spec))
                key += " sanitize" if san else ""
                points[key] = {"cfg": cfg, "spec": dict(spec), "smem_dyn": smem,
                               "threads": threads, "sanitize": san}
                jobs.append({"key": key, "name": side["source"], "arch": args.arch,
                             "src": render(side, cfg, spec, smem, san), "opts": base_opts,
                             "nvcc": args.nvcc, "ptx": args.ptx and not san})
    print("%d admitted point(s) x %d specialisation(s): %d compile(s), %d job(s) at a time" %
          (ncfg, len(specs(side, shapes)), len(jobs), args.jobs), flush=True)

    t0 = time.time()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        for i, res in enumerate(pool.imap_unordered(compile_one, jobs), 1):
            points[res["key"]].update(res)
            if i % 50 == 0:
                print("  %d/%d compiled, %.0f s" % (i, len(jobs), time.time() - t0), flush=True)

    bad = collections.defaultdict(list)
    for key, p in points.items():
        if not p.get("ok"):
            bad["compile"].append("%s: %s" % (key, p.get("error")))
        elif p["sanitize"]:
            continue  # a sanitize build is checked for compiling only
        elif p["spill"] > args.max_spill:
            bad["spill"].append("%s: %d bytes spilled, %d registers" % (key, p["spill"],
                                                                        p["regs"]))
        elif p["threads"] * (p["regs"] or 0) > REGS_PER_SM:
            bad["registers"].append("%s: %d threads x %d registers" % (key, p["threads"],
                                                                      p["regs"]))
        elif p["smem"] + p["smem_dyn"] > smem_limit:
            bad["smem"].append("%s: %d + %d bytes of shared memory" % (key, p["smem"],
                                                                       p["smem_dyn"]))
    plain = [p for p in points.values() if not p["sanitize"] and p.get("ok")]
    print("%d compiled in %.0f s; registers %s..%s; static smem up to %d bytes" % (
        len(plain), time.time() - t0, min((p["regs"] for p in plain), default="-"),
        max((p["regs"] for p in plain), default="-"), max((p["smem"] for p in plain),
                                                          default=0)))
    if args.ptx:
        # softmax.cu's vector accesses: ITEMS slots of VEC halves, loaded in pass 1 and again in
        # pass 2's streaming loop, stored once; anything else means the compiler split them.
        for p in plain:
            c, acc = p["cfg"], p.get("access", {})
            width = "%d" % (16 * c["VEC"])
            if (acc.get("ld.global " + width) != 2 * c["ITEMS"] or
                    acc.get("st.global " + width) != c["ITEMS"]):
                bad["vector access"].append("%s: %s" % (cfg_key(c), json.dumps(acc)))
        print("PTX of %d point(s) read: global and shared accesses by width counted" %
              len(plain))
    for gate, lines in bad.items():
        print("%d admitted point(s) fail the %s gate:" % (len(lines), gate))
        for ln in sorted(lines):
            print("  " + ln)
    if not bad:
        print("every admitted point compiles and passes the build gates")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(list(points.values()), f, indent=0)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
