"""Shared by check.py and bench.py: the extension, the ragged shape, and ../extbench.py (the
run's shapes, the problem's tolerances, inputs, the SDPA reference, BENCH.md's timer)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import tuned_flash_fwd  # noqa: E402  (python3 setup.py build_ext --inplace)
from extbench import (ROOT, compare, inputs, ratio, reference, time_graph,  # noqa: E402,F401
                      time_sdpa, us)
import extbench  # noqa: E402

# A shape with S no multiple of any tile: the problem checks S ragged (ragged: [S]).
RAGGED = {"name": "ragged", "B": 2, "H": 8, "S": 1000, "D": 64}


def shapes(db_path):
    """The suite of the latest completed run in the database, as the header was exported."""
    return extbench.suite(db_path)


def tolerances():
    """O's compare: {rel_l2, max_abs} of kernels/problems/attention.yaml (flash_fwd's problem)."""
    return extbench.tolerances("attention.yaml")
