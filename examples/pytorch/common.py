"""Shared by check.py and bench.py: the extension, the run's shapes, the sidecar's tolerances,
and BENCH.md's timer (CUDA-graph replays of 20 calls, median of 30 samples, divided by 20)."""

import json
import os
import re
import sqlite3
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import tuned_flash_fwd  # noqa: E402  (python3 setup.py build_ext --inplace)

# A shape with S no multiple of any tile: the problem checks S ragged (ragged: [S]).
RAGGED = {"name": "ragged", "B": 2, "H": 8, "S": 1000, "D": 64}


def shapes(db_path):
    """The suite of the latest completed run in the database, as the header was exported."""
    db = sqlite3.connect(db_path)
    row = db.execute("SELECT shapes FROM runs WHERE status = 'done' ORDER BY id DESC"
                     " LIMIT 1").fetchone()
    if not row:
        sys.exit("%s: no completed run" % db_path)
    return json.loads(row[0])


def tolerances():
    """O's compare: {rel_l2, max_abs} of kernels/problems/attention.yaml (flash_fwd's problem)."""
    text = open(os.path.join(ROOT, "kernels", "problems", "attention.yaml")).read()
    m = re.search(r"^\s*O:.*compare:\s*\{([^}]*)\}", text, re.M)
    tol = {k.strip(): float(v) for k, v in (kv.split(":") for kv in m.group(1).split(","))}
    return tol["rel_l2"], tol["max_abs"]


def inputs(sh, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    size = (sh["B"], sh["H"], sh["S"], sh["D"])
    return [torch.randn(size, device="cuda", dtype=torch.float16, generator=g) for _ in range(3)]


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
