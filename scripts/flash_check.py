#!/usr/bin/env python3
"""Check a kernel family on every configuration its sidecar admits (dev harness).

For each configuration of the declared space (or those given with --config) and each
head dim, render the tuner's #define preamble + the template, apply the sidecar's
static gates (constraints, shared-memory budget, alignment of the layout), compile
through NVRTC (ctypes, so compiling needs no GPU), reject what spills, then run each
survivor on fresh random fp16 inputs (output poisoned with NaN first) for several
shapes and compare with torch SDPA in float32 math. Also checks the reference
kernel and the sanitize build (clean on admitted configs; the planted misalignment
fills the log, and faults in a plain build).

  python3 scripts/flash_check.py --out DIR --time     # everything on the GPU, logs in DIR
  python3 scripts/flash_check.py --compile-only --arch sm_80 [--config BLOCK_M=64,...]

The resource gate uses ptxas's report and, on the GPU, the loaded module's own register
and local-memory attributes (a cached NVRTC compile can come back without a report).
Compiles happen in worker processes before CUDA is initialised. Needs python3 with
torch and cupy for the GPU part; PyYAML if present (else a small built-in reader).
"""

import argparse
import ctypes
import ctypes.util
import itertools
import json
import math
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

# cupy 14 deprecates ExternalStream (used to launch on torch's capture stream); still works.
warnings.filterwarnings("ignore", message="ExternalStream is deprecated")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")

# Opt-in dynamic shared memory per block, bytes (the tuner's arch table agrees).
SMEM_OPTIN = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448}

# Shapes (B, H, S, D) per head dim: tails that are no multiple of any block size, S = 1,
# and the seeds' mission shape.
SHAPES = {
    64: [(1, 2, 77, 64), (1, 8, 512, 64), (2, 1, 1, 64)],
    128: [(2, 3, 300, 128), (1, 2, 77, 128), (1, 1, 33, 128)],
}
REL_L2 = 1e-2
MAX_ABS = 2e-2

# ------------------------------------------------------------------ expressions


class ExprError(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(&&|\|\||==|!=|<=|>=|[-+*/%<>!?:(),]))")


def _tokens(src):
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise ExprError("bad character at column %d of '%s'" % (pos + 1, src))
        pos = m.end()
        if m.group(1):
            out.append(("num", int(m.group(1))))
        elif m.group(2):
            out.append(("id", m.group(2)))
        else:
            out.append(("op", m.group(3)))
    out.append(("end", None))
    return out


def _cdiv(a, b):
    if b == 0:
        raise ExprError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a, b):
    return a - b * _cdiv(a, b)


_BINARY = [  # precedence, lowest first (C)
    ("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%")]


def eval_expr(src, env):
    """Evaluate a sidecar expression (C integer semantics) with names from env."""
    toks = _tokens(str(src))
    pos = [0]

    def peek():
        return toks[pos[0]]

    def take(op=None):
        t = toks[pos[0]]
        if op is not None and t != ("op", op):
            raise ExprError("expected '%s' in '%s'" % (op, src))
        pos[0] += 1
        return t

    def cond():
        c = binary(0)
        if peek() == ("op", "?"):
            take()
            a = cond()
            take(":")
            b = cond()
            return a if c else b
        return c

    def binary(level):
        if level == len(_BINARY):
            return unary()
        v = binary(level + 1)
        while peek()[0] == "op" and peek()[1] in _BINARY[level]:
            op = take()[1]
            w = binary(level + 1)
            v = {"||": lambda: int(bool(v) or bool(w)), "&&": lambda: int(bool(v) and bool(w)),
                 "==": lambda: int(v == w), "!=": lambda: int(v != w),
                 "<": lambda: int(v < w), "<=": lambda: int(v <= w),
                 ">": lambda: int(v > w), ">=": lambda: int(v >= w),
                 "+": lambda: v + w, "-": lambda: v - w, "*": lambda: v * w,
                 "/": lambda: _cdiv(v, w), "%": lambda: _cmod(v, w)}[op]()
        return v

    def unary():
        t = peek()
        if t == ("op", "-"):
            take()
            return -unary()
        if t == ("op", "+"):
            take()
            return unary()
        if t == ("op", "!"):
            take()
            return int(not unary())
        return primary()

    def primary():
        t = take()
        if t[0] == "num":
            return t[1]
        if t == ("op", "("):
            v = cond()
            take(")")
            return v
        if t[0] == "id":
            if peek() == ("op", "(") and t[1] in ("min", "max", "ceil_div"):
                take("(")
                a = cond()
                take(",")
                b = cond()
                take(")")
                if t[1] == "min":
                    return min(a, b)
                if t[1] == "max":
                    return max(a, b)
                return _cdiv(a + b - 1, b)
            if t[1] not in env:
                raise ExprError("unknown identifier '%s' in '%s'" % (t[1], src))
            return env[t[1]]
        raise ExprError("unexpected token %r in '%s'" % (t[1], src))

    v = cond()
    if peek()[0] != "end":
        raise ExprError("trailing input in '%s'" % src)
    return v


# ------------------------------------------------------------------ sidecar


def _scalar(s):
    s = s.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def _split_top(s, sep=","):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def _flow(s):
    s = s.strip()
    if s.startswith("["):
        return [_flow(x) for x in _split_top(s[1:-1])]
    if s.startswith("{"):
        d = {}
        for item in _split_top(s[1:-1]):
            k, v = item.split(":", 1)
            d[k.strip()] = _flow(v)
        return d
    return _scalar(s)


def _mini_yaml(text):
    """Enough YAML for a sidecar: top-level keys, flow collections, one nested level."""
    doc, key = {}, None
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$", "", raw) if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if not line[0].isspace():
            k, v = line.split(":", 1)
            key = k.strip()
            doc[key] = _flow(v) if v.strip() else None
        elif line.strip().startswith("- "):
            doc[key] = doc[key] or []
            doc[key].append(_flow(line.strip()[2:]))
        else:
            k, v = line.strip().split(":", 1)
            doc[key] = doc[key] or {}
            doc[key][k.strip()] = _flow(v)
    return doc


def load_sidecar(path):
    with open(path) as f:
        text = f.read()
    try:
        import yaml
        doc = yaml.safe_load(text)
    except ImportError:
        doc = _mini_yaml(text)
    doc["_dir"] = os.path.dirname(os.path.abspath(path))
    return doc


# ------------------------------------------------------------------ gates


def static_gates(side, cfg, shape, smem_limit):
    """(smem_bytes, None) when cfg passes constraints, smem and alignment on shape, else (_, why)."""
    env = dict(cfg)
    env.update(zip("BHSD", shape))
    for c in side.get("constraints") or []:
        if not eval_expr(c, env):
            return None, "constraint: %s" % c
    smem = eval_expr(side["smem_bytes"], env)
    if smem > smem_limit:
        return smem, "smem: %d bytes > %d" % (smem, smem_limit)
    for buf in side.get("layout") or []:
        align = int(buf["align"])
        for what in ("offset", "stride"):
            v = eval_expr(buf[what], env)
            if v % align:
                return smem, "align: buffer '%s' %s %d bytes is not a multiple of %d (%s)" % (
                    buf["name"], "row stride" if what == "stride" else what, v, align,
                    buf.get("access", ""))
    return smem, None


def launch_dims(side, cfg, shape):
    """Grid and block from the sidecar's launch expressions."""
    env = dict(cfg)
    env.update(zip("BHSD", shape))
    return (tuple(eval_expr(e, env) for e in side["launch"]["grid"]),
            tuple(eval_expr(e, env) for e in side["launch"]["block"]))


def render(side, cfg, d, smem, sanitize=False, plant=False):
    lines = ["#define %s %d" % (k, v) for k, v in cfg.items()]
    lines.append("#define SHAPE_D %d" % d)
    lines.append("#define TUNER_SMEM_BYTES %d" % smem)
    if sanitize:
        lines.append("#define TUNER_SANITIZE 1")
    if plant:
        lines.append("#define TUNER_PLANT_MISALIGN 1")
    src_path = os.path.join(side["_dir"], side["source"])
    with open(src_path) as f:
        body = f.read()
    lines.append('#line 1 "%s"' % side["source"])
    return "\n".join(lines) + "\n" + body


# ------------------------------------------------------------------ NVRTC


def _nvrtc():
    cands = [os.path.join(CUDA_HOME, "lib64", "libnvrtc.so"),
             os.path.join(CUDA_HOME, "lib64", "libnvrtc.so.13"),
             ctypes.util.find_library("nvrtc") or "", "libnvrtc.so.13", "libnvrtc.so.12"]
    for c in cands:
        if not c:
            continue
        try:
            return ctypes.CDLL(c)
        except OSError:
            pass
    raise RuntimeError("cannot load libnvrtc (set CUDA_HOME)")


def nvrtc_compile(src, name, arch, include_dirs, extra=()):
    """Compile to a cubin; returns (ok, cubin bytes or None, log)."""
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r:
        raise RuntimeError("nvrtcCreateProgram failed: %d" % r)
    opts = ["-std=c++17", "--gpu-architecture=%s" % arch, "-Xptxas=-v"]
    opts += ["-I%s" % d for d in include_dirs] + list(extra)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    cubin = None
    if rc == 0:
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
        cb = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetCUBIN(prog, cb)
        cubin = cb.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, cubin, log


def ptxas_resources(log, entry):
    """Registers, spill bytes, stack frame of entry from a ptxas -v log."""
    res = {"regs": None, "spill_st": 0, "spill_ld": 0, "stack": 0}
    m = re.search(r"Function properties for %s\s*\n[^\n]*?(\d+) bytes stack frame, (\d+) bytes "
                  r"spill stores, (\d+) bytes spill loads" % re.escape(entry), log)
    if m:
        res["stack"], res["spill_st"], res["spill_ld"] = map(int, m.groups())
    m = re.search(r"Compiling entry function '%s'.*?Used (\d+) registers" % re.escape(entry),
                  log, re.S)
    if m:
        res["regs"] = int(m.group(1))
    return res


def _compile_job(job):
    t0 = time.time()
    ok, cubin, log = nvrtc_compile(job["src"], job["name"], job["arch"], job["inc"])
    out = {"key": job["key"], "ok": ok, "log": log, "seconds": time.time() - t0}
    if ok:
        out.update(ptxas_resources(log, job["entry"]))
        path = os.path.join(job["dir"], job["key"] + ".cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        out["cubin"] = path
    return out


def compile_all(jobs, nproc):
    if not jobs:
        return {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(nproc) as pool:
        return {r["key"]: r for r in pool.imap_unordered(_compile_job, jobs)}


# ------------------------------------------------------------------ GPU side

def _san_dtype(np):
    rec = np.dtype([("kind", "<u4"), ("space", "<u4"), ("width", "<u4"), ("is_write", "<u4"),
                    ("thread", "<u4", 3), ("block", "<u4", 3), ("addr", "<u8")])
    return np.dtype([("count", "<u4", 5), ("nrecords", "<u4"), ("first", rec, 8)])


class Gpu:
    def __init__(self, side):
        self.side = side
        import cupy
        import numpy
        import torch
        self.cp, self.np, self.torch = cupy, numpy, torch
        torch.backends.cuda.matmul.allow_tf32 = False
        self.mods = {}

    def load(self, cubin, entry):
        mod = self.cp.RawModule(path=cubin)
        fn = mod.get_function(entry)
        self.mods[cubin] = mod
        return mod, fn

    def resources(self, fn):
        """Registers and local memory per thread of a loaded kernel (cuFuncGetAttribute)."""
        out = {}
        for name, code in (("num_regs", 4), ("local_size_bytes", 3)):
            v = getattr(fn, name, None)
            if v is None:
                v = self.cp.cuda.driver.funcGetAttribute(code, fn.ptr)
            out[name] = int(v)
        return out

    def inputs(self, shape, seed):
        torch = self.torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(shape, generator=g, device="cuda", dtype=torch.float16)
                for _ in range(3)]

    def sdpa(self, q, k, v, scale):
        torch = self.torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.MATH):
            return torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), scale=scale)

    def compare(self, out, ref):
        torch = self.torch
        out = out.float()
        if torch.isnan(out).any() or torch.isinf(out).any():
            n = int((~torch.isfinite(out)).sum())
            return False, float("nan"), float("nan"), "%d non-finite outputs" % n
        err = (out - ref)
        rel = float(err.norm() / ref.norm())
        mx = float(err.abs().max())
        ok = rel < REL_L2 and mx < MAX_ABS
        return ok, rel, mx, "" if ok else "rel_l2 %.3g max_abs %.3g" % (rel, mx)

    def run_flash(self, fn, cfg, smem, shape, q, k, v, o):
        cp, np = self.cp, self.np
        b, h, s, d = shape
        scale = 1.0 / math.sqrt(d)
        fn.max_dynamic_shared_size_bytes = smem
        grid, block = launch_dims(self.side, cfg, shape)
        fn(grid, block,
           (cp.from_dlpack(q), cp.from_dlpack(k), cp.from_dlpack(v), cp.from_dlpack(o),
            np.int32(b), np.int32(h), np.int32(s), np.float32(scale)), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        return scale

    def check_flash(self, fn, cfg, smem, shape, seed):
        q, k, v = self.inputs(shape, seed)
        o = self.torch.full(shape, float("nan"), device="cuda", dtype=self.torch.float16)
        scale = self.run_flash(fn, cfg, smem, shape, q, k, v, o)
        return self.compare(o, self.sdpa(q, k, v, scale))

    def san_log(self, mod, zero=False):
        np = self.np
        dt = _san_dtype(np)
        ptr = mod.get_global("tuner_san_log")
        if zero:
            ptr.memset(0, dt.itemsize)
            return None
        host = np.zeros(1, dtype=dt)
        ptr.copy_to_host(host.ctypes.data, dt.itemsize)
        return host[0]

    def time_graph(self, launch, reps=20, samples=30, warm=3):
        """Median us per launch: CUDA-graph replays of reps launches, timed with events
        (BENCH.md's method). launch(stream) must launch on the given cupy stream."""
        torch, cp = self.torch, self.cp
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            cs = cp.cuda.ExternalStream(st.cuda_stream)
            for _ in range(warm):
                launch(cs)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=st):
            cs = cp.cuda.ExternalStream(st.cuda_stream)
            for _ in range(reps):
                launch(cs)
        g.replay()
        torch.cuda.synchronize()
        ts = []
        for _ in range(samples):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0 / reps)
        ts.sort()
        del g
        return ts[len(ts) // 2]

    def time_kernel(self, launch, reps=20, samples=15, warm=3):
        torch = self.torch
        for _ in range(warm):
            launch()
        torch.cuda.synchronize()
        ts = []
        for _ in range(samples):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(reps):
                launch()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0 / reps)
        ts.sort()
        return ts[len(ts) // 2]


# ------------------------------------------------------------------ driver


def gpu_arch():
    """sm_XY of GPU 0, without initialising CUDA here (compiles fork after this)."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout.split()[0]
    return "sm_" + out.replace(".", "")


def cfg_key(cfg, d, tag=""):
    return "_".join("%s%d" % (k[0] + k[-1], v) for k, v in cfg.items()) + "_D%d%s" % (d, tag)


def cfg_str(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def parse_cfg(side, s):
    cfg = {k: int(v[0] if isinstance(v, list) else v) for k, v in side["baseline"].items()}
    for item in s.split(","):
        if item.strip():
            k, v = item.split("=")
            if k.strip() not in cfg:
                raise SystemExit("unknown param '%s'" % k)
            cfg[k.strip()] = int(v)
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sidecar", default=os.path.join(ROOT, "kernels/templates/flash_fwd.yaml"))
    ap.add_argument("--reference", default=os.path.join(ROOT, "kernels/reference/attention_ref.cu"))
    ap.add_argument("--arch", help="default: the GPU's, or sm_90 with --compile-only")
    ap.add_argument("--config", action="append", default=[],
                    help="NAME=V,... (others from the baseline); repeatable; default: the whole space")
    ap.add_argument("--dims", default="64,128", help="head dims to check")
    ap.add_argument("--compile-only", action="store_true", help="gates and compiles, no GPU")
    ap.add_argument("--no-sanitize", action="store_true", help="skip the sanitize builds")
    ap.add_argument("--time", action="store_true", help="time the baseline and the fastest few")
    ap.add_argument("--seeds", type=int, default=2, help="fresh inputs per shape")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", help="directory for logs")
    ap.add_argument("--plant-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    side = load_sidecar(args.sidecar)
    inc = [os.path.join(CUDA_HOME, "include"), os.path.join(ROOT, "kernels/include")]
    entry = side["kernel"]
    dims = [int(x) for x in args.dims.split(",")]
    out_dir = args.out or tempfile.mkdtemp(prefix="flash_check.")
    os.makedirs(out_dir, exist_ok=True)
    cubin_dir = tempfile.mkdtemp(prefix="flash_cubins.")

    if args.plant_child:
        return plant_child(side, args, inc, entry, cubin_dir)

    arch = args.arch
    if not arch:
        if args.compile_only:
            arch = "sm_90"
        else:
            arch = gpu_arch()
    smem_limit = SMEM_OPTIN.get(arch, 49152)

    names = list(side["params"].keys())
    if args.config:
        cfgs = [parse_cfg(side, s) for s in args.config]
    else:
        cfgs = [dict(zip(names, vals)) for vals in itertools.product(
            *[side["params"][n] for n in names])]

    # Static gates and compile jobs.
    rows = []  # one per (cfg, D)
    jobs = []
    for cfg in cfgs:
        for d in dims:
            row = {"cfg": cfg, "D": d, "key": cfg_key(cfg, d), "status": None, "why": ""}
            smem, why = None, None
            for shape in SHAPES[d]:
                smem, why = static_gates(side, cfg, shape, smem_limit)
                if why:
                    break
            row["smem"] = smem
            if why:
                row["status"], row["why"] = "rejected", why
            else:
                jobs.append({"key": row["key"], "src": render(side, cfg, d, smem),
                             "name": side["source"], "arch": arch, "inc": inc, "entry": entry,
                             "dir": cubin_dir})
                if not args.no_sanitize and not args.compile_only:
                    jobs.append({"key": row["key"] + "_san",
                                 "src": render(side, cfg, d, smem, sanitize=True),
                                 "name": side["source"], "arch": arch, "inc": inc,
                                 "entry": entry, "dir": cubin_dir})
            rows.append(row)
    ref_src = open(args.reference).read()
    jobs.append({"key": "reference", "src": ref_src, "name": "attention_ref.cu", "arch": arch,
                 "inc": inc, "entry": "attention_ref", "dir": cubin_dir})
    if not args.compile_only:
        base = parse_cfg(side, "")
        for d in dims:
            smem, _ = static_gates(side, base, SHAPES[d][0], smem_limit)
            jobs.append({"key": "plant_san_D%d" % d,
                         "src": render(side, base, d, smem, sanitize=True, plant=True),
                         "name": side["source"], "arch": arch, "inc": inc, "entry": entry,
                         "dir": cubin_dir})

    t0 = time.time()
    print("compiling %d units for %s on %d processes" % (len(jobs), arch, args.jobs), flush=True)
    builds = compile_all(jobs, args.jobs)
    print("compiled in %.1f s" % (time.time() - t0), flush=True)

    for row in rows:
        if row["status"]:
            continue
        b = builds[row["key"]]
        row["build"] = {k: b.get(k) for k in ("regs", "spill_st", "spill_ld", "stack", "seconds")}
        if not b["ok"]:
            row["status"], row["why"] = "compile_fail", b["log"][-2000:]
        elif b["spill_st"] or b["spill_ld"]:
            row["status"] = "rejected"
            row["why"] = "spills: %d bytes stores, %d loads (%d regs)" % (
                b["spill_st"], b["spill_ld"], b["regs"])
        elif args.compile_only:
            row["status"] = "compiled"
        san = builds.get(row["key"] + "_san")
        if san is not None and not san["ok"]:
            row["status"], row["why"] = "compile_fail", "sanitize build: " + san["log"][-2000:]
    rb = builds["reference"]
    if not rb["ok"]:
        print("reference kernel failed to compile:\n" + rb["log"])

    ok_all = True
    if not args.compile_only:
        ok_all = gpu_checks(side, args, rows, builds, entry, smem_limit, out_dir, dims)

    with open(os.path.join(out_dir, "configs.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    table = summary(rows, dims, arch)
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(table)
    print(table)
    bad = [r for r in rows if r["status"] in ("compile_fail", "wrong", "fault")]
    for r in bad[:20]:
        print("%-10s D=%d %s: %s" % (r["status"], r["D"], cfg_str(r["cfg"]), r["why"][:300]))
    return 0 if ok_all and not bad and rb["ok"] else 1


def summary(rows, dims, arch):
    lines = ["", "flash_fwd on %s" % arch,
             "%-5s %6s %8s %9s %9s %8s %6s  rejected by" % (
                 "D", "tried", "compfail", "rejected", "compiled", "correct", "wrong")]
    for d in dims:
        rs = [r for r in rows if r["D"] == d]
        n = lambda s: sum(1 for r in rs if r["status"] == s)
        why = {}
        for r in rs:
            if r["status"] == "rejected":
                g = r["why"].split(":")[0]
                why[g] = why.get(g, 0) + 1
        lines.append("%-5d %6d %8d %9d %9d %8d %6d  %s" % (
            d, len(rs), n("compile_fail"), n("rejected"),
            len(rs) - n("compile_fail") - n("rejected"), n("correct"),
            n("wrong") + n("fault"), ", ".join("%s %d" % kv for kv in sorted(why.items()))))
        worst = [r["worst_rel_l2"] for r in rs if r["status"] == "correct"]
        if worst:
            lines.append("      worst rel_l2 of a correct configuration: %.2e" % max(worst))
    return "\n".join(lines) + "\n"


def gpu_checks(side, args, rows, builds, entry, smem_limit, out_dir, dims):
    gpu = Gpu(side)
    np, torch = gpu.np, gpu.torch
    print("device: %s" % torch.cuda.get_device_name(), flush=True)
    ok_all = True
    seed = 1000
    log = open(os.path.join(out_dir, "checks.log"), "w")

    # The reference kernel against SDPA.
    ref_shapes = [(1, 2, 77, 64), (2, 3, 300, 128), (1, 8, 512, 64)]
    if builds["reference"]["ok"]:
        _, ref_fn = gpu.load(builds["reference"]["cubin"], "attention_ref")
    else:
        ref_shapes, ok_all = [], False
    for shape in ref_shapes:
        seed += 1
        q, k, v = gpu.inputs(shape, seed)
        o = torch.full(shape, float("nan"), device="cuda", dtype=torch.float32)
        b, h, s, d = shape
        scale = 1.0 / math.sqrt(d)
        ref_fn(((s + 127) // 128, h, b), (128, 1, 1),
               (gpu.cp.from_dlpack(q), gpu.cp.from_dlpack(k), gpu.cp.from_dlpack(v),
                gpu.cp.from_dlpack(o), np.int32(b), np.int32(h), np.int32(s), np.int32(d),
                np.float32(scale)))
        gpu.cp.cuda.runtime.deviceSynchronize()
        ok, rel, mx, why = gpu.compare(o, gpu.sdpa(q, k, v, scale))
        ok = ok and rel < 1e-4  # both fp32: only the order of the sums differs
        ok_all &= ok
        print("reference %-18s rel_l2 %.2e max_abs %.2e %s" % (shape, rel, mx,
              "ok" if ok else "WRONG " + why), flush=True)

    # Every admitted configuration, plain build, every shape, several seeds.
    t0 = time.time()
    for row in rows:
        if row["status"]:
            continue
        b = builds[row["key"]]
        mod, fn = gpu.load(b["cubin"], entry)
        # The resource gate again, from the loaded module: a cached NVRTC compile can come
        # back without ptxas's report (seen on the device), and a missing report must not
        # read as "no spills".
        res = row["module"] = gpu.resources(fn)
        if b.get("regs") is not None and b["regs"] != res["num_regs"]:
            print("note: %s ptxas says %d registers, the module %d" % (
                row["key"], b["regs"], res["num_regs"]))
        if res["local_size_bytes"]:
            row["status"] = "rejected"
            row["why"] = "spills: %d bytes of local memory per thread, %d regs (module)" % (
                res["local_size_bytes"], res["num_regs"])
            del gpu.mods[b["cubin"]]
            continue
        worst = 0.0
        row["status"] = "correct"
        for shape in SHAPES[row["D"]]:
            for _ in range(args.seeds):
                seed += 1
                try:
                    ok, rel, mx, why = gpu.check_flash(fn, row["cfg"], row["smem"], shape, seed)
                except Exception as e:  # a fault poisons the context: stop here
                    row["status"], row["why"] = "fault", "%s on %s" % (e, shape)
                    print("FAULT D=%d %s: %s" % (row["D"], cfg_str(row["cfg"]), row["why"]),
                          flush=True)
                    return False
                worst = max(worst, rel)
                log.write("%s %s seed %d rel %.3e max %.3e %s\n" % (
                    row["key"], shape, seed, rel, mx, why))
                if not ok and row["status"] == "correct":
                    row["status"], row["why"] = "wrong", "%s on %s" % (why, shape)
        row["worst_rel_l2"] = worst
        del gpu.mods[b["cubin"]]
    print("plain builds checked in %.1f s" % (time.time() - t0), flush=True)

    # Sanitize builds, the planted misalignment and timing; a Python error in one phase
    # is reported and fails the run but does not hide the others.
    phases = []
    if not args.no_sanitize:
        phases += [("sanitize", lambda: sanitize_checks(gpu, rows, builds, entry, seed)),
                   ("plant", lambda: plant_checks(gpu, side, args, builds, entry, smem_limit,
                                                  dims))]
    if args.time:
        phases.append(("timing", lambda: time_some(gpu, side, rows, builds, entry) or True))
    for name, fn in phases:
        try:
            ok_all &= fn()
        except Exception as e:
            ok_all = False
            print("%s phase failed: %s: %s" % (name, type(e).__name__, e), flush=True)
    log.close()
    return ok_all


def sanitize_checks(gpu, rows, builds, entry, seed):
    """Sanitize build of every admitted configuration: log empty, output still correct."""
    t0 = time.time()
    nsan, dirty = 0, 0
    for row in rows:
        if row["status"] not in ("correct", "wrong"):
            continue
        b = builds[row["key"] + "_san"]
        mod, fn = gpu.load(b["cubin"], entry)
        gpu.san_log(mod, zero=True)
        seed += 1
        shape = SHAPES[row["D"]][0]
        ok, rel, mx, why = gpu.check_flash(fn, row["cfg"], row["smem"], shape, seed)
        lg = gpu.san_log(mod)
        nsan += 1
        row["sanitize"] = [int(x) for x in lg["count"]]
        if int(lg["nrecords"]) or not ok:
            dirty += 1
            row["status"] = "wrong"
            row["why"] = "sanitize build: counts %s %s" % (list(lg["count"]), why)
        del gpu.mods[b["cubin"]]
    print("sanitize builds: %d run, %d with violations or wrong output (%.1f s)" % (
        nsan, dirty, time.time() - t0), flush=True)
    return dirty == 0


def plant_checks(gpu, side, args, builds, entry, smem_limit, dims):
    """The planted misalignment: the sanitize build fills the log, the plain build faults."""
    torch = gpu.torch
    ok_all = True
    kinds = ["cp.async", "ldmatrix", "vec_load", "vec_store", "bounds"]
    base = parse_cfg(side, "")
    for d in dims:
        b = builds["plant_san_D%d" % d]
        mod, fn = gpu.load(b["cubin"], entry)
        gpu.san_log(mod, zero=True)
        smem, _ = static_gates(side, base, SHAPES[d][0], smem_limit)
        shape = (1, 8, 512, d)
        q, k, v = gpu.inputs(shape, 7)
        o = torch.zeros(shape, device="cuda", dtype=torch.float16)
        gpu.run_flash(fn, base, smem, shape, q, k, v, o)
        lg = gpu.san_log(mod)
        counts = dict(zip(kinds, [int(x) for x in lg["count"]]))
        filled = counts["cp.async"] > 0 and int(lg["nrecords"]) > 0
        # Negative control: the skipped copies leave K rows missing, so the comparison
        # that passed every admitted configuration must fail here.
        wrong, rel, _, _ = gpu.compare(o, gpu.sdpa(q, k, v, 1.0 / math.sqrt(d)))
        wrong = not wrong
        ok_all &= filled and wrong
        print("plant+sanitize D=%d: %s counts %s, %d records; output %s (rel_l2 %.3g)" % (
            d, "log filled" if filled else "LOG EMPTY", counts, int(lg["nrecords"]),
            "wrong, as it must be" if wrong else "PASSED THE COMPARISON", rel))
        for r in lg["first"][:min(4, int(lg["nrecords"]))]:
            print("  %s %s %dB %s thread (%d,%d,%d) block (%d,%d,%d) addr 0x%x" % (
                kinds[int(r["kind"])], ["global", "shared"][int(r["space"])],
                int(r["width"]), "write" if r["is_write"] else "read", *r["thread"],
                *r["block"], int(r["addr"])))
    sys.stdout.flush()

    # In a child process: a fault poisons the context for good.
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--plant-child",
                        "--sidecar", args.sidecar], capture_output=True, text=True, timeout=120)
    faulted = "misaligned address" in (p.stdout + p.stderr).lower()
    print("plant plain build: rc %d, %s: %s" % (
        p.returncode, "faulted with misaligned address" if faulted else "DID NOT FAULT",
        (p.stdout + p.stderr).strip()[-300:]), flush=True)
    return ok_all and faulted


def plant_child(side, args, inc, entry, cubin_dir):
    import torch
    arch = gpu_arch()
    base = parse_cfg(side, "")
    shape = (1, 8, 512, 64)
    smem, _ = static_gates(side, base, shape, SMEM_OPTIN.get(arch, 49152))
    ok, cubin, log = nvrtc_compile(render(side, base, 64, smem, plant=True), side["source"],
                                   arch, inc)
    if not ok:
        print(log)
        return 2
    path = os.path.join(cubin_dir, "plant.cubin")
    with open(path, "wb") as f:
        f.write(cubin)
    gpu = Gpu(side)
    _, fn = gpu.load(path, entry)
    q, k, v = gpu.inputs(shape, 3)
    o = torch.zeros(shape, device="cuda", dtype=torch.float16)
    try:
        gpu.run_flash(fn, base, smem, shape, q, k, v, o)
    except Exception as e:
        print("launch failed: %s" % e)
        return 3
    print("plant ran without a fault")
    return 0


def time_some(gpu, side, rows, builds, entry):
    """Kernel time of every correct configuration (a quick pass), then of the three fastest
    and the baseline again, next to SDPA's backends, all as CUDA-graph replays."""
    torch = gpu.torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    base_str = cfg_str(parse_cfg(side, ""))
    print("\ntiming: us per call, CUDA-graph replays of 20 calls, median of 30 samples")
    for shape in [(1, 8, 512, 64), (2, 8, 2048, 64), (4, 16, 4096, 128)]:
        b, h, s, d = shape
        q, k, v = gpu.inputs(shape, 5)
        o = torch.empty_like(q)
        scale = 1.0 / math.sqrt(d)
        flops = 4.0 * b * h * s * s * d
        res = {}
        for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
            def sdpa(_cs, be=be):
                with sdpa_kernel(be):
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            try:
                res[be.name] = gpu.time_graph(sdpa)
            except Exception as e:  # backend not available or not capturable
                print("  sdpa %s: %s" % (be.name, e))
                res[be.name] = float("nan")

        def timer(r, reps, samples):
            mod, fn = gpu.load(builds[r["key"]]["cubin"], entry)
            fn.max_dynamic_shared_size_bytes = r["smem"]
            grid, blk = launch_dims(side, r["cfg"], shape)
            a = (gpu.cp.from_dlpack(q), gpu.cp.from_dlpack(k), gpu.cp.from_dlpack(v),
                 gpu.cp.from_dlpack(o), gpu.np.int32(b), gpu.np.int32(h), gpu.np.int32(s),
                 gpu.np.float32(scale))
            t = gpu.time_graph(lambda cs: fn(grid, blk, a, shared_mem=r["smem"], stream=cs),
                               reps, samples, 1)
            del gpu.mods[builds[r["key"]]["cubin"]]
            return t

        cand = [r for r in rows if r["D"] == d and r["status"] == "correct"]
        quick = sorted((timer(r, 4, 3), i) for i, r in enumerate(cand))
        pick = [cand[i] for _, i in quick[:3]]
        pick += [r for r in cand if cfg_str(r["cfg"]) == base_str and r not in pick]
        print("%s %.1f GFLOP; sdpa %s" % (shape, flops / 1e9, ", ".join(
            "%s %.2f us (%.1f TFLOP/s)" % (n, t, flops / t / 1e6) for n, t in res.items())))
        for r in pick:
            t = timer(r, 20, 30)
            r.setdefault("timing_us", {})[str(shape)] = t
            print("  %9.2f us %6.1f TFLOP/s %s%s" % (
                t, flops / t / 1e6, cfg_str(r["cfg"]),
                "  (baseline)" if cfg_str(r["cfg"]) == base_str else ""))
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
