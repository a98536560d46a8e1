#!/bin/sh
# Round 7's simulator runs (reports/search-landscapes.md, "Round 7"): round 6's run.sh with the
# population (POP, default 16) and the strategy (STRAT, default evolve) as settings.
#   W:  a checkout of main at 722b403 with round7.patch applied (git apply round7.patch): the
#       X_DESIGN and X_STUCKN switches; with neither set it is main's search
#   LS: the five shared landscapes imported by `tuner import` (see ../search-landscapes-r6/run.sh)
# usage: run.sh OUT.txt [SEEDS], e.g.
#   POP=8 run.sh pop8.txt 80;  POP=8 X_DESIGN=16 X_STUCKN=32 run.sh pop8-design16-stuck32.txt 40
#   STRAT=evolve1 POP=8 run.sh evolve1-pop8.txt 80
set -e
: "${W:?a checkout with round7.patch}" "${LS:?the imported landscapes}"
D=$(cd "$(dirname "$0")" && pwd)
R6=$D/../search-landscapes-r6
OUTF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(mktemp -d "${TMPDIR:-/tmp}/search-sim.XXXXXX")
trap 'rm -rf "$BIN"' EXIT
(cd "$W" && make -j2 build/libtuner.a >/dev/null)
cc -O2 -I"$W/include" "$R6/sim.c" "$W/build/libtuner.a" -lyaml -lsqlite3 -ljansson -lz \
    -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -ldl -lpthread -lm -o "$BIN/sim"
N=${2:-80}
cd "$LS"
{
	"$BIN/sim" "$W/configs/default.yaml" "$W/tests/fixtures/sweep-h100.db" "${STRAT:-evolve}" "$N" \
	    "${POP:-16}" 0.02 1 | sed 's|^[^ ]*|flash|'
	for f in convolution_milo_A4000 convolution_milo_A6000 convolution_milo_MI250X \
	         dedispersion_milo_W6600 dedispersion_milo_W7800; do
		"$BIN/sim" "$f.yaml" "$f.db" "${STRAT:-evolve}" "$N" "${POP:-16}" 0.02 1
	done
} | sed 's/convolution_milo_//;s/dedispersion_milo_//;s/\.yaml//' > "$OUTF"
python3 "$R6/summ.py" "$OUTF"
