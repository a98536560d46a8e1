"""Shared by the examples' check.py and bench.py (examples/pytorch, examples/attention): the
runs' shapes, a problem's tolerances, inputs, the SDPA reference and BENCH.md's timer
(CUDA-graph replays of 20 calls, median of 30 samples, divided by 20)."""

import json
import os
import re
import sqlite3
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION}


def suite(db_path, runs=None):
    """The shapes the runs tuned, as exported: the latest completed run's suite, or with runs
    the union of theirs matched by dims (each shape keeps the first run's name and gets
    "runs", the runs that tuned it)."""
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)  # a missing file is an error
    if runs is None:
        row = db.execute("SELECT shapes FROM runs WHERE status = 'done' ORDER BY id DESC"
                         " LIMIT 1").fetchone()
        if not row:
            sys.exit("%s: no completed run" % db_path)
        return json.loads(row[0])
    out = {}
    for run in runs:
        row = db.execute("SELECT shapes FROM runs WHERE id = ?", (run,)).fetchone()
        if not row:
            sys.exit("%s: no run %s" % (db_path, run))
        for sh in json.loads(row[0]):
            key = tuple((k, v) for k, v in sh.items() if k != "name")
            out.setdefault(key, dict(sh, runs=[]))["runs"].append(run)
    return list(out.values())


def tolerances(problem="attention.yaml"):
    """O's compare {rel_l2, max_abs} of kernels/problems/PROBLEM."""
    text = open(os.path.join(ROOT, "kernels", "problems", problem)).read()
    m = re.search(r"^\s*O:.*compare:\s*\{([^}]*)\}", text, re.M)
    tol = {k.strip(): float(v) for k, v in (kv.split(":") for kv in m.group(1).split(","))}
    return tol["rel_l2"], tol["max_abs"]


def problem_of(template):
    """The problem file a template's sidecar names (kernels/templates/TEMPLATE.yaml)."""
    text = open(os.path.join(ROOT, "kernels", "templates", template + ".yaml")).read()
    return os.path.basename(re.search(r"^problem:\s*(\S+)", text, re.M).group(1))


def inputs(sh, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    size = (sh["B"], sh["H"], sh["S"], sh["D"])
    return [torch.randn(size, device="cuda", dtype=torch.float16, generator=g) for _ in range(3)]


def reference(q, k, v, causal=False):
    """SDPA in fp32 (the math backend)."""
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)


def compare(o, ref, rel_tol, abs_tol):
    """(ok, rel_l2, max_abs) of o against ref; NaN and Inf fail."""
    o = o.float()
    rel = float((o - ref).norm() / ref.norm())
    mx = float((o - ref).abs().max())
    return bool(torch.isfinite(o).all()) and rel <= rel_tol and mx <= abs_tol, rel, mx


def time_graph(fn, calls=20, samples=30):
    """Median kernel time in µs of fn: a CUDA graph of `calls` calls, replayed warm."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    return statistics.median(times)


def time_sdpa(q, k, v, causal=False, backends=tuple(BACKENDS)):
    """{backend: µs or None, backend_why: the error of a backend that does not take the shape}."""
    row = {}
    for name in backends:
        def call(backend=BACKENDS[name]):
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            row[name] = time_graph(call)
        except RuntimeError as e:
            row[name] = None
            row[name + "_why"] = str(e).split("\n")[0][:120]
    return row


def us(x):
    return "%.2f" % x if x else "-"


def ratio(a, b):
    """a / b as "1.23x" (SDPA's time / ours: above 1, ours is faster); "-" without both."""
    return "%.2fx" % (a / b) if a and b else "-"
