"""Read a kernel family's sidecar and build its variants with NVRTC, for the dev scripts.

The tuner is the implementation of record (tuner/expr.c, tuner/checks.c); this module
is what a script needs beside it without a GPU or a database: the sidecar and its
problem as data, the expression language of docs/FAMILIES.md, the static gates
(constraints, shared memory, layout alignment), the declared space, and a compile of
one configuration as the tuner does it (its preamble, NVRTC with its options) that
reports ptxas's registers and spills. Needs python3-yaml and libnvrtc.
"""

import itertools
import math
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")

# Opt-in dynamic shared memory per block, bytes (tuner/arch.c agrees).
SMEM_OPTIN = {"sm_80": 166912, "sm_86": 101376, "sm_89": 101376, "sm_90": 232448}

# ------------------------------------------------------------------ expressions


class ExprError(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?)"
                    r"|(\d+)|([A-Za-z_]\w*)|(<<|>>|&&|\|\||==|!=|<=|>=|[-+*/%<>!?:(),]))")

# Binary operators by precedence, lowest first (C).
_BINARY = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"),
           ("*", "/", "%")]

_FUNCS = {
    "min": (2, min), "max": (2, max), "abs": (1, abs),
    "ceil_div": (2, lambda a, b: _div(a + b - 1, b)),
    "sqrt": (1, lambda a: math.sqrt(a)), "rsqrt": (1, lambda a: 1.0 / math.sqrt(a)),
    "exp": (1, math.exp), "log": (1, math.log), "log2": (1, math.log2),
    "pow": (2, lambda a, b: math.pow(a, b)), "float": (1, float),
}


def _div(a, b):
    if b == 0:
        raise ExprError("division by zero")
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _binop(op, f, g):
    """The node of a binary operator over the nodes f and g (&& and || short-circuit)."""
    if op == "&&":
        return lambda env: int(bool(f(env)) and bool(g(env)))
    if op == "||":
        return lambda env: int(bool(f(env)) or bool(g(env)))
    if op == "/":
        return lambda env: _div(f(env), g(env))
    if op == "%":
        def mod(env):
            v, w = f(env), g(env)
            return v - w * _div(v, w)
        return mod
    fn = {"==": lambda v, w: int(v == w), "!=": lambda v, w: int(v != w),
          "<": lambda v, w: int(v < w), "<=": lambda v, w: int(v <= w),
          ">": lambda v, w: int(v > w), ">=": lambda v, w: int(v >= w),
          "<<": lambda v, w: v << w, ">>": lambda v, w: v >> w,
          "+": lambda v, w: v + w, "-": lambda v, w: v - w, "*": lambda v, w: v * w}[op]
    return lambda env: fn(f(env), g(env))


_PARSED = {}


def parse_expr(src):
    """A sidecar expression as a function of env (names to values), parsed once."""
    if src in _PARSED:
        return _PARSED[src]
    toks, pos = [], 0
    while pos < len(src.rstrip()):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise ExprError("bad character at column %d of '%s'" % (pos + 1, src))
        pos = m.end()
        if m.group(1):
            toks.append(("num", float(m.group(1))))
        elif m.group(2):
            toks.append(("num", int(m.group(2))))
        elif m.group(3):
            toks.append(("id", m.group(3)))
        else:
            toks.append(("op", m.group(4)))
    toks.append(("end", None))
    at = [0]

    def peek():
        return toks[at[0]]

    def take(op=None):
        t = toks[at[0]]
        if op is not None and t != ("op", op):
            raise ExprError("expected '%s' in '%s'" % (op, src))
        at[0] += 1
        return t

    def cond():
        c = binary(0)
        if peek() == ("op", "?"):
            take()
            a = cond()
            take(":")
            b = cond()
            return lambda env: a(env) if c(env) else b(env)
        return c

    def binary(level):
        if level == len(_BINARY):
            return unary()
        f = binary(level + 1)
        while peek()[0] == "op" and peek()[1] in _BINARY[level]:
            op = take()[1]
            f = _binop(op, f, binary(level + 1))
        return f

    def unary():
        t = peek()
        if t in (("op", "-"), ("op", "+"), ("op", "!")):
            take()
            f = unary()
            if t[1] == "-":
                return lambda env: -f(env)
            if t[1] == "!":
                return lambda env: int(not f(env))
            return f
        return primary()

    def name(n):
        def get(env):
            if n not in env:
                raise ExprError("unknown identifier '%s' in '%s'" % (n, src))
            return env[n]
        return get

    def primary():
        t = take()
        if t[0] == "num":
            return lambda env, v=t[1]: v
        if t == ("op", "("):
            f = cond()
            take(")")
            return f
        if t[0] == "id" and peek() == ("op", "(") and t[1] in _FUNCS:
            nargs, fn = _FUNCS[t[1]]
            take("(")
            args = [cond()]
            while peek() == ("op", ","):
                take()
                args.append(cond())
            take(")")
            if len(args) != nargs:
                raise ExprError("%s() takes %d arguments in '%s'" % (t[1], nargs, src))
            return lambda env: fn(*[a(env) for a in args])
        if t[0] == "id":
            return name(t[1])
        raise ExprError("unexpected %r in '%s'" % (t[1], src))

    f = cond()
    if peek()[0] != "end":
        raise ExprError("trailing input in '%s'" % src)
    _PARSED[src] = f
    return f


def eval_expr(src, env):
    """Value of a sidecar expression (C semantics: integer / truncates) over env's names."""
    if isinstance(src, (int, float)):
        return src
    return parse_expr(str(src))(env)


# ------------------------------------------------------------------ sidecar


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def load_sidecar(path):
    """The sidecar as a dict, its problem resolved ('problem' a mapping), paths absolute."""
    path = os.path.abspath(path)
    side = load_yaml(path)
    side["_path"] = path
    side["_dir"] = os.path.dirname(path)
    prob = side.get("problem")
    if isinstance(prob, str):
        ppath = os.path.join(side["_dir"], prob)
        prob = load_yaml(ppath)
        prob["_dir"] = os.path.dirname(ppath)
    elif isinstance(prob, dict):
        prob["_dir"] = side["_dir"]
    side["problem"] = prob
    return side


def load_config(path):
    """A job config and its sidecar: (config, sidecar)."""
    path = os.path.abspath(path)
    cfg = load_yaml(path)
    return cfg, load_sidecar(os.path.join(os.path.dirname(path), cfg["template"]))


def param_names(side):
    return list(side["params"].keys())


def space(side):
    """Every declared point, as dicts in the sidecar's param order."""
    names = param_names(side)
    for vals in itertools.product(*[side["params"][n] for n in names]):
        yield dict(zip(names, vals))


def shape_dims(side, shape):
    """A config shape's dims ({name: M, M: 512, ...}) in the problem's dims order."""
    return {d: int(shape[d]) for d in side["problem"]["dims"]}


def static_gates(side, cfg, dims, smem_limit):
    """(smem_bytes, None) when cfg passes constraints, shared memory and layout on one
    shape's dims, else (smem_bytes or None, why)."""
    env = dict(cfg)
    env.update(dims)
    for c in side.get("constraints") or []:
        if not eval_expr(c, env):
            return None, "constraint: %s" % c
    smem = int(eval_expr(side["smem_bytes"], env))
    if smem > smem_limit:
        return smem, "smem: %d bytes > %d" % (smem, smem_limit)
    for buf in side.get("layout") or []:
        align = int(buf["align"])
        for what in ("offset", "stride"):
            v = eval_expr(buf[what], env)
            if v % align:
                return smem, "align: %s %s %d is not a multiple of %d" % (buf["name"], what, v,
                                                                         align)
    return smem, None


def launches(side):
    """The launch list: the multi-launch form as is, the single form as one entry."""
    if side.get("launches"):
        return side["launches"]
    return [{"kernel": side["kernel"], "grid": side["launch"]["grid"],
             "block": side["launch"]["block"], "smem": "smem_bytes"}]


def launch_geometry(side, launch, cfg, dims):
    """(grid, block, smem bytes) of one launch entry."""
    env = dict(cfg)
    env.update(dims)
    smem = launch.get("smem", 0)
    smem = eval_expr(side["smem_bytes"], env) if smem == "smem_bytes" else eval_expr(smem, env)
    return (tuple(int(eval_expr(e, env)) for e in launch["grid"]),
            tuple(int(eval_expr(e, env)) for e in launch["block"]), int(smem))


def render(side, cfg, dims, smem, sanitize=False):
    """The source the tuner compiles (tuner/template.c): its #define preamble (params,
    SHAPE_<dim> of specialised dims, TUNER_SMEM_BYTES, TUNER_SANITIZE in a sanitize
    build), then the template under its own name."""
    lines = ["#define %s %d" % kv for kv in cfg.items()]
    lines += ["#define SHAPE_%s %d" % (d, dims[d]) for d in side.get("specialize") or []]
    lines.append("#define TUNER_SMEM_BYTES %d" % smem)
    if sanitize:
        lines.append("#define TUNER_SANITIZE 1")
    lines.append('#line 1 "%s"' % os.path.basename(side["source"]))
    with open(os.path.join(side["_dir"], side["source"])) as f:
        return "\n".join(lines) + "\n" + f.read()


def cfg_str(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def parse_cfg(side, s):
    """NAME=V,... over the baseline (a config string as tuner prints them)."""
    cfg = {k: int(v) for k, v in side["baseline"].items()}
    for item in s.split(","):
        if item.strip():
            k, v = item.split("=")
            if k.strip() not in cfg:
                raise SystemExit("unknown param '%s'" % k.strip())
            cfg[k.strip()] = int(v)
    return cfg


# ------------------------------------------------------------------ NVRTC

_NVRTC = []


def _nvrtc():
    if not _NVRTC:
        import ctypes
        for name in (os.path.join(CUDA_HOME, "lib64", "libnvrtc.so"), "libnvrtc.so.13",
                     "libnvrtc.so.12", "libnvrtc.so"):
            try:
                _NVRTC.append(ctypes.CDLL(name))
                break
            except OSError:
                pass
        else:
            raise RuntimeError("cannot load libnvrtc (set CUDA_HOME)")
    return _NVRTC[0]


def nvrtc_compile(src, name, entry, arch, out, ptx=False):
    """Compile source text with NVRTC and the tuner's options (tuner/template.c,
    tuner/compile.c) to a cubin at out, or with ptx=True to the PTX of the virtual arch.
    Returns {ok, log, regs, spill_st, spill_ld, stack}."""
    import ctypes
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = ["--gpu-architecture=%s" % (arch.replace("sm_", "compute_") if ptx else arch),
            "-std=c++17", "-Xptxas=-v", "-lineinfo",
            "-I" + os.path.join(ROOT, "kernels", "include"),
            "-I" + os.path.join(CUDA_HOME, "include")]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, buf)
    res = {"ok": rc == 0, "log": buf.value.decode(errors="replace")}
    if rc == 0:
        size, get = ((lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if ptx else
                     (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN))
        size(prog, ctypes.byref(n))
        code = ctypes.create_string_buffer(n.value)
        get(prog, code)
        with open(out, "wb") as f:
            f.write(code.raw.rstrip(b"\0") if ptx else code.raw)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    res.update(ptxas_resources(res["log"], entry))
    return res


def ptxas_resources(log, entry):
    """Registers, spill bytes and stack frame of entry from a ptxas -v log."""
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


# ------------------------------------------------------------------ GPU side (torch + cupy)

_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64",
                 "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def torch_dtype(name):
    import torch
    return getattr(torch, _TORCH_DTYPES[name])


def _fill(torch, t, fill, gen):
    """Fill an input as the problem's `fill` says (docs/FAMILIES.md)."""
    fill = fill or "normal"
    kind, opt = (fill, {}) if isinstance(fill, str) else next(iter(fill.items()))
    work = torch.empty(t.shape, dtype=torch.float32, device=t.device)
    if kind == "normal":
        work.normal_(float((opt or {}).get("mean", 0)), float((opt or {}).get("std", 1)),
                     generator=gen)
    elif kind == "uniform":
        work.uniform_(float((opt or {}).get("min", -1)), float((opt or {}).get("max", 1)),
                      generator=gen)
    elif kind == "iota":
        work = torch.arange(t.numel(), device=t.device, dtype=torch.float64)
    elif kind == "constant":
        work.fill_(float(opt))
    elif kind == "zeros":
        work.zero_()
    else:
        raise ValueError("unknown fill '%s'" % kind)
    t.copy_(work.to(t.dtype))


def make_buffers(side, cfg, dims, seed=1, device="cuda"):
    """The problem's buffers for one configuration and shape, as flat torch tensors:
    inputs filled from seed, outputs poisoned (NaN, or 0xff bytes for integers),
    scratch zeroed or poisoned as its `init` says."""
    import torch
    env = dict(cfg)
    env.update(dims)
    gen = torch.Generator(device=device).manual_seed(seed)
    bufs = {}
    for name, b in side["problem"]["buffers"].items():
        dt = torch_dtype(b["dtype"])
        t = torch.empty(int(eval_expr(b["count"], env)), dtype=dt, device=device)
        role = b.get("role", "in")
        if role in ("in", "inout"):
            _fill(torch, t, b.get("fill"), gen)
        elif role == "scratch" and b.get("init") == "zeros":
            t.zero_()
        else:
            t.view(torch.uint8).fill_(0xff)  # all-ones bits: NaN in every float dtype
        bufs[name] = t
    return bufs


def kernel_args(args, bufs, env):
    """A launch's argument list: device pointers for buffer names, typed scalars else."""
    import numpy as np
    types = {"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}
    out = []
    for a in args:
        if isinstance(a, str):
            out.append(np.uint64(bufs[a].data_ptr()))  # a pointer parameter, by value
        else:
            (ty, e), = a.items()
            out.append(types[ty](eval_expr(e, env)))
    return tuple(out)


class Variant:
    """One configuration, compiled as the tuner compiles it and loaded with cupy; bind it
    to a shape's buffers, then call it to launch on a cupy stream. Builds are shared by
    the configurations and specialised dims that render the same source."""

    _builds = {}   # rendered source -> (cubin path, compile result)
    _modules = {}  # rendered source -> loaded module

    @staticmethod
    def _source(side, cfg, dims):
        env = dict(cfg)
        env.update(dims)
        return render(side, cfg, dims, int(eval_expr(side["smem_bytes"], env)))

    @staticmethod
    def _compile(job):
        src, name, entry, arch, path = job
        return src, path, nvrtc_compile(src, name, entry, arch, path)

    @staticmethod
    def prebuild(side, points, arch, workdir, jobs):
        """Compile (cfg, dims) points in jobs processes; call before CUDA is initialised
        (the workers fork)."""
        import multiprocessing
        entry = side.get("kernel") or launches(side)[0]["kernel"]
        todo = {}
        for cfg, dims in points:
            src = Variant._source(side, cfg, dims)
            if src not in Variant._builds and src not in todo:
                todo[src] = os.path.join(workdir, "%s_%d.cubin" % (
                    side["name"], len(Variant._builds) + len(todo)))
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for src, path, res in pool.imap_unordered(
                    Variant._compile,
                    [(src, side["source"], entry, arch, path) for src, path in todo.items()]):
                Variant._builds[src] = (path, res)

    def __init__(self, side, cfg, dims, arch, workdir):
        import cupy as cp
        src = Variant._source(side, cfg, dims)
        if src not in Variant._builds:
            path = os.path.join(workdir, "%s_%d.cubin" % (side["name"], len(Variant._builds)))
            Variant._builds[src] = (path, nvrtc_compile(
                src, side["source"], side.get("kernel") or launches(side)[0]["kernel"], arch,
                path))
        path, self.resources = Variant._builds[src]
        if not self.resources["ok"]:
            raise RuntimeError("NVRTC failed for %s:\n%s" % (cfg_str(cfg),
                                                             self.resources["log"][-2000:]))
        if src not in Variant._modules:
            Variant._modules[src] = cp.RawModule(path=path)
        self.module = Variant._modules[src]
        env = dict(cfg)
        env.update(dims)
        self.side, self.env = side, env
        self.launch_list = []
        for ln in launches(side):
            grid, block, sm = launch_geometry(side, ln, cfg, dims)
            fn = self.module.get_function(ln["kernel"])
            if sm > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = sm
            self.launch_list.append((fn, grid, block, sm, ln.get("args")))
        self.bound = []

    def bind(self, bufs):
        """Arguments of each launch over these buffers."""
        self.bound = [(fn, grid, block, sm,
                       kernel_args(a or self.side["problem"]["args"], bufs, self.env))
                      for fn, grid, block, sm, a in self.launch_list]

    def __call__(self, stream):
        with stream:
            for fn, grid, block, sm, a in self.bound:
                fn(grid, block, a, shared_mem=sm)


def cupy_stream():
    """The current cupy stream (to launch a Variant outside a timing)."""
    import cupy as cp
    return cp.cuda.get_current_stream()


def time_graph(launch, reps=20, samples=30, warm=3):
    """Median microseconds per call, BENCH.md's method: CUDA-graph replays of reps calls,
    timed with events, warm L2. launch(stream) launches one call on a cupy stream."""
    import warnings

    import cupy as cp
    import torch
    warnings.filterwarnings("ignore", message="ExternalStream is deprecated")
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
