#!/bin/sh
# Round 8's variants (reports/search-landscapes.md, "Each mechanism's share"): each a set of switches of
# round8.patch, 80 seeds, per-seed counts to abl-NAME.txt here, through round 6's run.sh (which says what
# W and LS are). W: a checkout of 61da7bf with round8.patch applied. The switches at the default's values
# (the first line) give evolve's counts on main seed for seed.
set -e
D=$(cd "$(dirname "$0")" && pwd)
R8="X_ECORNS=8 X_LORD=5 X_CMIN=4 X_CORNER=99 X_ADIST=3 X_ECORN=2"
run() { name=$1; shift; env "$@" "$D/../search-landscapes-r6/run.sh" "$D/abl-$name.txt" 80; }
run r8 $R8
run no-end-design X_ECORNS=8 X_LORD=5 X_ADIST=3 X_ECORN=2 X_CMIN=4
run no-end-explore X_LORD=5 X_CMIN=4 X_CORNER=99 X_ADIST=3
run no-relink X_ECORNS=8 X_CMIN=4 X_CORNER=99 X_ADIST=3 X_ECORN=2
run no-align-steps X_ECORNS=8 X_LORD=5 X_CMIN=4 X_CORNER=99 X_ECORN=2
run ends-of-3 X_ECORNS=8 X_LORD=5 X_CORNER=99 X_ADIST=3 X_ECORN=2
run three-levels $R8 X_CMID=1
run ends-adjacent $R8 X_CYC=2
run toward-best-3 X_ECORNS=8 X_LORD=4 X_TOWARD=3 X_CMIN=4 X_CORNER=99 X_ADIST=3 X_ECORN=2
run align-cheap-only X_ECORNS=8 X_LORD=5 X_CMIN=4 X_CORNER=99 X_ADIST=1 X_ECORN=2
run end-explore-all X_ECORNS=16 X_LORD=5 X_CMIN=4 X_CORNER=99 X_ADIST=3 X_ECORN=4
run feasibility $R8 X_FEAS=0.3
run prune-ucb2 $R8 X_PRUNE=2
run depri-ucb2 $R8 X_DEPRI=2
run anchors-3 $R8 X_ANCH=3
run explore-third $R8 X_EXPL=3
run tile-align $R8 X_TALIGN=1
