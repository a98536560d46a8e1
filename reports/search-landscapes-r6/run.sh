#!/bin/sh
# Round 6's simulator runs (reports/search-landscapes.md, "Round 6").
#   W:  a checkout of main at 239b006 with round6.patch applied (git apply round6.patch)
#   LS: a folder holding the five shared landscapes imported by `tuner import`, made there with
#         for f in ../shared/landscapes/*_T4.json.gz; do n=$(basename "$f" _T4.json.gz)
#             tuner --db "$n.db" import --t1 ../shared/landscapes/"${n%_*}"_T1.json -o "$n.yaml" "$f"
#         done
#       (<name>.yaml, <name>.family.yaml, <name>.db for convolution_milo_{A4000,A6000,MI250X}
#       and dedispersion_milo_{W6600,W7800})
# usage: run.sh OUT.txt [SEEDS]   with the variant's switch in the environment, e.g.
#   X_CELL=1 run.sh cell.txt 80;  X_Y=2 run.sh y2.txt 80;  X_W3=0.2 run.sh w3-0.2.txt 80
set -e
: "${W:?a checkout with round6.patch}" "${LS:?the imported landscapes}"
D=$(cd "$(dirname "$0")" && pwd)
OUTF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(mktemp -d "${TMPDIR:-/tmp}/search-sim.XXXXXX")
trap 'rm -rf "$BIN"' EXIT
(cd "$W" && make -j2 build/libtuner.a >/dev/null)
cc -O2 -I"$W/include" "$D/sim.c" "$W/build/libtuner.a" -lyaml -lsqlite3 -ljansson -lz \
    -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -ldl -lpthread -lm -o "$BIN/sim"
N=${2:-80}
cd "$LS"
{
	"$BIN/sim" "$W/configs/default.yaml" "$W/tests/fixtures/sweep-h100.db" evolve "$N" 16 0.02 1 |
	    sed 's|^[^ ]*|flash|'
	for f in convolution_milo_A4000 convolution_milo_A6000 convolution_milo_MI250X \
	         dedispersion_milo_W6600 dedispersion_milo_W7800; do
		"$BIN/sim" "$f.yaml" "$f.db" evolve "$N" 16 0.02 1
	done
} | sed 's/convolution_milo_//;s/dedispersion_milo_//;s/\.yaml//' > "$OUTF"
python3 "$D/summ.py" "$OUTF"
