#!/usr/bin/env python3
"""An attention family's sidecar read as the tuner reads it, for the dev scripts on the GPU machine.

Loads a sidecar and its problem (docs/FAMILIES.md), enumerates the declared space, applies
the static gates, renders the preamble, compiles through NVRTC (scripts/flash_check.py's
ctypes binding), and launches a compiled variant on torch tensors from the sidecar's own
`launch` or `launches` (grid, block, smem, `when`, args), with outputs and scratch poisoned
before each run. Used by scripts/flash_attn_bench.py and scripts/bench_sdpa.py.
"""

import itertools
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flash_check as fc  # noqa: E402  (expressions, NVRTC, the graph timer)

import yaml  # noqa: E402

ROOT = fc.ROOT
_MATH = {"sqrt": math.sqrt, "rsqrt": lambda x: 1.0 / math.sqrt(x), "exp": math.exp,
         "log": math.log, "log2": math.log2, "pow": math.pow, "float": float, "min": min,
         "max": max, "abs": abs, "ceil_div": lambda a, b: -(-a // b)}


def evaluate(expr, env):
    """An integer expression through the C-semantics evaluator; a floating one (a scalar
    argument such as rsqrt(D)) as Python."""
    if isinstance(expr, (int, float)):
        return expr
    try:
        return fc.eval_expr(expr, env)
    except fc.ExprError:
        return eval(str(expr), {"__builtins__": {}}, dict(_MATH, **env))  # noqa: S307


class Family:
    def __init__(self, sidecar):
        with open(sidecar) as f:
            self.side = yaml.safe_load(f)
        self.dir = os.path.dirname(os.path.abspath(sidecar))
        prob = self.side["problem"]
        if isinstance(prob, str):
            with open(os.path.join(self.dir, prob)) as f:
                prob = yaml.safe_load(f)
        self.problem = prob
        self.name = self.side["name"]
        self.dims = prob["dims"]
        self.spec_dims = self.side.get("specialize") or []
        self.params = self.side["params"]
        self.options = list(self.side.get("options") or [])
        if "launches" in self.side:
            self.launches = self.side["launches"]
        else:
            self.launches = [dict(self.side["launch"], kernel=self.side["kernel"],
                                  smem="smem_bytes")]
        self.entries = [l["kernel"] for l in self.launches]
        with open(os.path.join(self.dir, self.side["source"])) as f:
            self.source = f.read()

    def space(self):
        names = list(self.params)
        for vals in itertools.product(*[self.params[n] for n in names]):
            yield dict(zip(names, vals))

    def spec_of(self, shape):
        return {d: shape[d] for d in self.spec_dims}

    def gates(self, cfg, shape, smem_limit, skip=()):
        """(smem, None) when cfg passes the constraints (but those whose index is in skip),
        smem and alignment, else (smem, why)."""
        env = dict(shape, **cfg)
        for i, c in enumerate(self.side.get("constraints") or []):
            if i not in skip and not fc.eval_expr(c, env):
                return None, "constraint %d: %s" % (i, c)
        smem = fc.eval_expr(self.side["smem_bytes"], env)
        if smem > smem_limit:
            return smem, "smem: %d > %d" % (smem, smem_limit)
        for buf in self.side.get("layout") or []:
            for what in ("offset", "stride"):
                if fc.eval_expr(buf[what], env) % int(buf["align"]):
                    return smem, "align: %s %s" % (buf["name"], what)
        return smem, None

    def render(self, cfg, spec, smem, sanitize=False):
        lines = ["#define %s %d" % kv for kv in cfg.items()]
        lines += ["#define SHAPE_%s %d" % kv for kv in spec.items()]
        lines.append("#define TUNER_SMEM_BYTES %d" % smem)
        if sanitize:
            lines.append("#define TUNER_SANITIZE 1")
        return "\n".join(lines) + '\n#line 1 "%s"\n' % self.side["source"] + self.source

    def compile_job(self, cfg, spec, smem, arch, out_dir, sanitize=False):
        key = "_".join("%s%d" % kv for kv in list(cfg.items()) + list(spec.items()))
        key += "_san" if sanitize else ""
        return {"key": key, "src": self.render(cfg, spec, smem, sanitize), "arch": arch,
                "options": self.options, "entries": self.entries, "dir": out_dir}


def _compile(job):
    ok, cubin, log = fc.nvrtc_compile(job["src"], job["key"] + ".cu", job["arch"],
                                      [os.path.join(ROOT, "kernels", "include"),
                                       os.path.join(fc.CUDA_HOME, "include")],
                                      ["-lineinfo"] + job["options"])
    out = {"key": job["key"], "ok": ok, "log": log if not ok else ""}
    if ok:
        out["res"] = {e: fc.ptxas_resources(log, e) for e in job["entries"]}
        out["spills"] = any(r["spill_st"] or r["spill_ld"] for r in out["res"].values())
        out["cubin"] = os.path.join(job["dir"], job["key"] + ".cubin")
        with open(out["cubin"], "wb") as f:
            f.write(cubin)
    return out


def compile_all(jobs, nproc):
    """{key: result}; in worker processes forked before CUDA is initialised."""
    import multiprocessing
    if not jobs:
        return {}
    with multiprocessing.get_context("fork").Pool(nproc) as pool:
        return {r["key"]: r for r in pool.imap_unordered(_compile, jobs, chunksize=4)}


TORCH_DTYPE = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
               "i32": "int32", "i64": "int64", "u8": "uint8", "i8": "int8"}


class Variant:
    """One compiled configuration, launchable on one shape's buffers."""

    def __init__(self, fam, cubin, cfg):
        import cupy
        self.fam, self.cfg = fam, cfg
        self.mod = cupy.RawModule(path=cubin)
        self.fns = {e: self.mod.get_function(e) for e in fam.entries}

    def resources(self):
        """Registers and local bytes per thread of each entry, from the loaded module."""
        out = {}
        for e, fn in self.fns.items():
            a = fn.attributes  # cupy.RawKernel: the driver's cuFuncGetAttribute values
            out[e] = {"num_regs": int(a["num_regs"]),
                      "local_size_bytes": int(a["local_size_bytes"])}
        return out

    def bind(self, shape, bufs):
        """The launch list for a shape: (fn, grid, block, smem, args) of each launch that runs."""
        import numpy as np
        env = dict(shape, **self.cfg)
        smem_bytes = fc.eval_expr(self.fam.side["smem_bytes"], env)
        plan = []
        for l in self.fam.launches:
            if "when" in l and not evaluate(l["when"], env):
                continue
            smem = l.get("smem", 0)
            smem = smem_bytes if smem == "smem_bytes" else evaluate(smem, env)
            args = []
            for a in l.get("args") or self.fam.problem["args"]:
                if isinstance(a, str):
                    args.append(np.uint64(bufs[a].data_ptr()))
                else:
                    (t, e), = a.items()
                    v = evaluate(e, env)
                    args.append({"i32": np.int32, "i64": np.int64, "f32": np.float32,
                                 "f64": np.float64}[t](v))
            fn = self.fns[l["kernel"]]
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            plan.append((fn, tuple(evaluate(g, env) for g in l["grid"]),
                         tuple(evaluate(b, env) for b in l["block"]), smem, tuple(args)))
        return plan


def alloc(fam, shape, cfg, seed):
    """The problem's buffers for a shape: inputs filled (normal, from seed), the rest NaN."""
    import torch
    env = dict(shape, **cfg)
    g = torch.Generator(device="cuda").manual_seed(seed)
    bufs = {}
    for name, b in fam.problem["buffers"].items():
        dt = getattr(torch, TORCH_DTYPE[b["dtype"]])
        n = evaluate(b["count"], env)
        if b.get("role") == "in":
            bufs[name] = torch.randn(n, generator=g, device="cuda", dtype=torch.float32).to(dt)
        else:
            bufs[name] = torch.full((n,), float("nan"), device="cuda", dtype=dt)
    return bufs


def poison(fam, bufs):
    for name, b in fam.problem["buffers"].items():
        if b.get("role") != "in":
            bufs[name].fill_(float("nan"))


def launch(plan, stream=None):
    for fn, grid, block, smem, args in plan:
        if stream is None:
            fn(grid, block, args, shared_mem=smem)
        else:
            with stream:
                fn(grid, block, args, shared_mem=smem)


def sdpa_reference(q, k, v, causal):
    """SDPA's math backend in float32: q, k, v [B, H, S, D]."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float(), v.float(), is_causal=bool(causal),
            scale=1.0 / math.sqrt(q.shape[-1]))


def shape_tensor(shape, flat):
    return flat.view(shape["B"], shape["H"], shape["S"], shape["D"])


def shape_str(shape):
    return "(%s)" % ",".join(str(shape[d]) for d in ("B", "H", "S", "D", "causal") if d in shape)


def flops(fam, shape):
    return float(evaluate(fam.problem["flops"], dict(shape)))
