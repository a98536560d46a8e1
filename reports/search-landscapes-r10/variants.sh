#!/bin/sh
# Round 10's variants in the simulator (reports/search-landscapes.md, "Round 10"): each a set of
# switches of variants.patch (on main at 5086a86, round 9's default; it holds round 9's switches
# too), seeds 1-40 (the held-out sweeps 1-20) over the fifteen parts, the six landscapes and the two
# held-out sweeps, by round 9's sim.sh; per-seed counts to sim-NAME.txt here, the bars met
# (round 9's score.py) to stdout.
#   W:  a checkout of 5086a86 with variants.patch applied (no switch gives 5086a86's counts)
#   LS, PARTS: as ../search-landscapes-r9/sim.sh says
# The new default (main since d06cba1) is X_SEPS=0.01 X_ENEAR=3: sim-seps-0.01-enear-3.txt,
# the same counts seed for seed as main's (W=main, no switch).
set -e
D=$(cd "$(dirname "$0")" && pwd)
R9=$D/../search-landscapes-r9
run() { name=$1; shift; env "$@" "$R9/sim.sh" "$D/sim-$name.txt" 40; }
run seps-0.005 X_SEPS=0.005
run seps-0.01 X_SEPS=0.01
run seps-0.03 X_SEPS=0.03
run enear-1 X_ENEAR=1
run enear-3 X_ENEAR=3
run seps-0.01-enear-2 X_SEPS=0.01 X_ENEAR=2
run seps-0.01-enear-3 X_SEPS=0.01 X_ENEAR=3
run seps-0.02-enear-3 X_SEPS=0.02 X_ENEAR=3
run seps-0.03-enear-3 X_SEPS=0.03 X_ENEAR=3
run k3-0.1 X_K3=0.1
run k3-0.3 X_K3=0.3
run seps-0.01-enear-3-k3-0.3 X_SEPS=0.01 X_ENEAR=3 X_K3=0.3
cd "$R9" && python3 score.py sim-evolve1.txt sim-evolve.txt "$D"/sim-*.txt
