#!/bin/sh
# Round 10: the order of the first design's picks (reports/search-landscapes.md, "Round 10"): the
# same picks, nearest the baseline first (X_DORD=1), farthest first (-1) or shuffled (2), against
# the default's order, on the six landscapes, seeds 1-20, with round 10's default switched on
# (X_SEPS=0.01 X_ENEAR=3); each run prints its counts and the mean best-found / optimum over
# evaluations 1-8 (the simulator's CURVE=8).
#   W:  a checkout of 5086a86 with variants.patch applied;  LS: as ../search-landscapes-r6/run.sh says
# usage: design-order.sh > design-order.txt
set -e
: "${W:?a checkout with variants.patch}" "${LS:?the imported landscapes}"
D=$(cd "$(dirname "$0")" && pwd)
BIN=$(mktemp -d "${TMPDIR:-/tmp}/search-sim.XXXXXX")
trap 'rm -rf "$BIN"' EXIT
(cd "$W" && make -j2 build/libtuner.a >/dev/null)
cc -O2 -I"$W/include" "$D/../search-landscapes-r6/sim.c" "$W/build/libtuner.a" -lyaml -lsqlite3 \
    -ljansson -lz -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -ldl -lpthread -lm \
    -o "$BIN/sim"
for order in 0 1 -1 2; do
	echo "== X_DORD=$order"
	{
		env X_SEPS=0.01 X_ENEAR=3 X_DORD=$order CURVE=8 "$BIN/sim" "$W/configs/default.yaml" \
		    "$W/tests/fixtures/sweep-h100.db" evolve 20 16 0.02 1
		for f in convolution_milo_A4000 convolution_milo_A6000 convolution_milo_MI250X \
		         dedispersion_milo_W6600 dedispersion_milo_W7800; do
			env X_SEPS=0.01 X_ENEAR=3 X_DORD=$order CURVE=8 "$BIN/sim" "$LS/$f.yaml" "$LS/$f.db" \
			    evolve 20 16 0.02 1
		done
	} | sed 's|^[^ ]*/||;s/ *(.*us\/proposal)//'
done
