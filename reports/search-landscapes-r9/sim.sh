#!/bin/sh
# Round 9's simulator runs (reports/search-landscapes.md, "Parts of the recorded spaces"): the
# simulator of round 6 (../search-landscapes-r6/sim.c) over the fifteen parts (parts.sh), the six
# landscapes and the two held-out H100 sweeps, one strategy, the variant's switches in the environment.
#   W:  a checkout: main as it is, or with variants.patch applied for the switches (X_...)
#   LS: the five imported landscapes (../search-landscapes-r6/run.sh says how), beside them
#       sm90.db: zcat tests/fixtures/sweep-h100-sm90.db.gz > LS/sm90.db
#   PARTS: a folder that keeps the parts' spaces between calls (made on the first)
# usage: sim.sh OUT.txt [SEEDS]   (SEEDS 40 by default; STRAT, default evolve; the held-out sweeps 20)
set -e
: "${W:?a checkout}" "${LS:?the imported landscapes}" "${PARTS:?a folder for the parts}"
D=$(cd "$(dirname "$0")" && pwd)
OUTF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-40}
S=${STRAT:-evolve}
BIN=$(mktemp -d "${TMPDIR:-/tmp}/search-sim.XXXXXX")
trap 'rm -rf "$BIN"' EXIT
(cd "$W" && make -j2 build/libtuner.a build/tuner >/dev/null)
cc -O2 -I"$W/include" "$D/../search-landscapes-r6/sim.c" "$W/build/libtuner.a" -lyaml -lsqlite3 \
    -ljansson -lz -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -ldl -lpthread -lm \
    -o "$BIN/sim"
mkdir -p "$PARTS"
PARTS=$(cd "$PARTS" && pwd)
for spec in $("$D/parts.sh" configs "$PARTS"); do
	db=${spec%%:*} conf=${spec#*:}
	[ -f "${conf%.yaml}.db" ] ||
		"$W/build/tuner" -q --db "${conf%.yaml}.db" --config "$conf" sweep --replay "$db" --population 4096
done
{
	for conf in "$PARTS"/*-*.yaml; do
		case "$conf" in *.family.yaml) continue ;; esac
		echo "$BIN/sim $conf ${conf%.yaml}.db $S $N 16 0.02 1"
	done
	for f in convolution_milo_A4000 convolution_milo_A6000 convolution_milo_MI250X \
	         dedispersion_milo_W6600 dedispersion_milo_W7800; do
		echo "$BIN/sim $LS/$f.yaml $LS/$f.db $S $N 16 0.02 1"
	done
	echo "$BIN/sim $W/configs/default.yaml $W/tests/fixtures/sweep-h100.db $S $N 16 0.02 1"
	echo "$BIN/sim $W/configs/h100-sm90.yaml $LS/sm90.db $S 20 16 0.02 1"
	echo "$BIN/sim $W/configs/attention-d64.yaml $W/tests/fixtures/sweep-h100-attn.db $S 20 16 0.02 1"
} | xargs -P 2 -I{} sh -c '{}' | sed 's|^[^ ]*/||;s/\.yaml / /;s/^convolution_milo_//;s/^dedispersion_milo_//;
    s/^default /flash /;s/^h100-sm90 /sm90 /;s/^attention-d64 /attn /' | sort >"$OUTF"
