#!/bin/sh
# Rounds 6, 7 and 8's simulator runs (reports/search-landscapes.md, "Round 6", "Round 7", "80 seeds",
# "Round 8").
#   W:  a checkout of main with the round's patch applied: 239b006 with round6.patch, or 722b403
#       with ../search-landscapes-r7/round7.patch, or 61da7bf with ../search-landscapes-r8/round8.patch
#       (git apply ...); or main as it is, for the strategies as they are (round 8: STRAT=evolve,
#       evolve2, evolve1, random; OUT ../search-landscapes-r8/STRAT-80.txt, 80 seeds)
#   LS: a folder holding the five shared landscapes imported by `tuner import`, made there with
#         for f in ../shared/landscapes/*_T4.json.gz; do n=$(basename "$f" _T4.json.gz)
#             tuner --db "$n.db" import --t1 ../shared/landscapes/"${n%_*}"_T1.json -o "$n.yaml" "$f"
#         done
#       (<name>.yaml, <name>.family.yaml, <name>.db for convolution_milo_{A4000,A6000,MI250X}
#       and dedispersion_milo_{W6600,W7800})
# usage: run.sh OUT.txt [SEEDS]   with the variant's switch in the environment, and the population
# (POP, default 16) and the strategy (STRAT, default evolve) as settings, e.g.
#   round 6: X_CELL=1 run.sh cell.txt 80;  X_Y=2 run.sh y2.txt 80;  X_W3=0.2 run.sh w3-0.2.txt 80
#   round 7: POP=8 run.sh pop8.txt 80;  POP=8 X_DESIGN=16 X_STUCKN=32 run.sh pop8-design16-stuck32.txt 40;
#            STRAT=evolve1 POP=8 run.sh evolve1-pop8.txt 80
#            FIRST=8 run.sh first8.txt 40   (sim.c: the first batch FIRST points, the rest POP;
#            on main as it is, no patch; since round 8 a FIRST above POP no longer overruns its buffer)
#   round 8: STRAT=evolve2 run.sh ../search-landscapes-r8/evolve2-80.txt 80 (W = main);
#            ../search-landscapes-r8/ablations.sh for the variants (W = 61da7bf + round8.patch)
set -e
: "${W:?a checkout with the round's patch}" "${LS:?the imported landscapes}"
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
	"$BIN/sim" "$W/configs/default.yaml" "$W/tests/fixtures/sweep-h100.db" "${STRAT:-evolve}" "$N" \
	    "${POP:-16}" 0.02 1 | sed 's|^[^ ]*|flash|'
	for f in convolution_milo_A4000 convolution_milo_A6000 convolution_milo_MI250X \
	         dedispersion_milo_W6600 dedispersion_milo_W7800; do
		"$BIN/sim" "$f.yaml" "$f.db" "${STRAT:-evolve}" "$N" "${POP:-16}" 0.02 1
	done
} | sed 's/convolution_milo_//;s/dedispersion_milo_//;s/\.yaml//' > "$OUTF"
python3 "$D/summ.py" "$OUTF"
