"""Shared by check.py and bench.py: the extension, the shapes to run (the runs' tuned shapes,
then untuned ones) and ../extbench.py (tolerances, inputs, the SDPA reference, the timer)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import tuned_attention  # noqa: E402  (python3 setup.py build_ext --inplace)
from extbench import (ROOT, compare, inputs, ratio, reference, time_graph,  # noqa: E402,F401
                      time_sdpa, us)
import extbench  # noqa: E402

# Dims no run tuned (unless one did: then they count as tuned), served by the nearest tuned
# shape whose family can: S no multiple of any tile (the problems' ragged: [S]), D=128 away
# from the tuned d128, a single long head, causal away from the tuned long_causal.
UNTUNED = [
    {"name": "ragged1000", "B": 2, "H": 8, "S": 1000, "D": 64, "causal": 0},
    {"name": "ragged1000c", "B": 2, "H": 8, "S": 1000, "D": 64, "causal": 1},
    {"name": "ragged3000", "B": 1, "H": 16, "S": 3000, "D": 64, "causal": 0},
    {"name": "ragged3000c", "B": 1, "H": 16, "S": 3000, "D": 64, "causal": 1},
    {"name": "d128_2k", "B": 2, "H": 16, "S": 2048, "D": 128, "causal": 0},
    {"name": "d128_ragged", "B": 1, "H": 8, "S": 1000, "D": 128, "causal": 0},
    {"name": "head1", "B": 1, "H": 1, "S": 8192, "D": 64, "causal": 0},
    {"name": "head1c", "B": 1, "H": 1, "S": 8192, "D": 64, "causal": 1},
    {"name": "causal1k", "B": 4, "H": 16, "S": 1024, "D": 64, "causal": 1},
]
DIMS = ("B", "H", "S", "D", "causal")


def shapes(db_path, runs):
    """The runs' tuned shapes (tuned: True), then the untuned ones not among them."""
    out = [dict(sh, tuned=True) for sh in extbench.suite(db_path, runs)]
    seen = {tuple(sh[d] for d in DIMS) for sh in out}
    return out + [dict(sh, tuned=False) for sh in UNTUNED
                  if tuple(sh[d] for d in DIMS) not in seen]


def dims(sh):
    return ",".join(str(sh[d]) for d in DIMS)


def choice(sh):
    return tuned_attention.choice(*(sh[d] for d in DIMS))


def forward(sh, q, k, v):
    return tuned_attention.forward(q, k, v, bool(sh["causal"]))


def tolerances(family):
    """O's compare of the problem the family's sidecar names."""
    return extbench.tolerances(extbench.problem_of(family))
