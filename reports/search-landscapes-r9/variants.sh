#!/bin/sh
# Round 9's variants in the simulator (reports/search-landscapes.md, "Parts of the recorded spaces"):
# each a set of switches of variants.patch, seeds 1-40 (the held-out sweeps 1-20) over the fifteen
# parts, the six landscapes and the two held-out sweeps, per-seed counts to sim-NAME.txt here, and
# the bars met (score.py) to stdout. W: a checkout of main with variants.patch applied (no switch
# gives main's counts seed for seed); LS and PARTS as sim.sh says.
set -e
D=$(cd "$(dirname "$0")" && pwd)
run() { name=$1; shift; env "$@" "$D/sim.sh" "$D/sim-$name.txt" 40; }
run evolve1 STRAT=evolve1
run evolve2 STRAT=evolve2
run evolve STRAT=evolve
run last-end X_LASTEND=1
run no-end-design X_NOED=1
run no-end-explore X_NOEE=1
run no-relink X_NORL=1
run no-align-steps X_NOAL=1
run end-explore-quarter X_EEQ=4
run stuck-1 X_STUCK=1
run radius-2 X_RADIUS=2
run radius-4 X_RADIUS=4
run explore-third X_EXPLORE=3
run explore-eighth X_EXPLORE=8
run pattern-move X_PAT=2
run poll-first X_POLL1=1
run design-jitter X_JIT=1
run log-steps X_LOGSTEP=1
run ends-until-covered X_ENDSAT=1
run end-pick-ei-0.1 X_EEI=0.1
run end-pick-ei-0.5 X_EEI=0.5
cd "$D" && python3 score.py sim-evolve1.txt sim-*.txt
