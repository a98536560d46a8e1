#!/bin/sh
# Parts of the five shared landscapes (reports/search-landscapes.md, "Parts of the recorded spaces"):
# each a config that declares fewer values of one param than its recording holds, cut so that the
# part's optimum is elsewhere, often inside its domains rather than at their ends. The benchmark
# replays a part's space from the whole recording (scripts/search_bench.py, DB:CONFIG).
#   LS: the five landscapes imported by `tuner import` (../search-landscapes-r6/run.sh says how)
# usage: LS=... parts.sh configs DIR      write the parts' configs into DIR, print their DB:CONFIG
#        LS=... parts.sh bench OUT.txt [STRATEGIES] [SEEDS]
#                                         the benchmark over them (default evolve,evolve2,evolve1,
#                                         random; 20 seeds)
set -e
: "${LS:?the imported landscapes}"
D=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$D/../.." && pwd)
# part DIR NAME LANDSCAPE PARAM VALUES: LANDSCAPE's space with PARAM's values cut to VALUES
part() {
	sed "s/^\(  $4: \).*/\1[$5]/" "$LS/$3.family.yaml" >"$1/$2.family.yaml"
	grep -q "^  $4: \[$5\]\$" "$1/$2.family.yaml"
	sed "s|^template: .*|template: $2.family.yaml|" "$LS/$3.yaml" >"$1/$2.yaml"
	echo "$LS/$3.db:$1/$2.yaml"
}
configs() {
	bx224="16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224"
	by40=$(seq -s ', ' 40 8 256)
	for g in A4000 A6000 MI250X; do
		part "$1" "$g-bx224" "convolution_milo_$g" block_size_x "$bx224"
		part "$1" "$g-by2" "convolution_milo_$g" block_size_y "2, 4, 8, 16"
		part "$1" "$g-ty123" "convolution_milo_$g" tile_size_y "1, 2, 3"
	done
	for g in W6600 W7800; do
		part "$1" "$g-bx16" "dedispersion_milo_$g" block_size_x "1, 2, 4, 8, 16"
		part "$1" "$g-by40" "dedispersion_milo_$g" block_size_y "$by40"
		part "$1" "$g-ty2" "dedispersion_milo_$g" tile_size_y "2, 3, 4, 5, 6, 7, 8"
	done
}
case "$1" in
configs)
	mkdir -p "$2"
	configs "$(cd "$2" && pwd)"
	;;
bench)
	OUTF=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
	P=$(mktemp -d "${TMPDIR:-/tmp}/parts.XXXXXX")
	trap 'rm -rf "$P"' EXIT
	specs=$(configs "$P")
	# shellcheck disable=SC2086
	python3 "$TOP/scripts/search_bench.py" --seeds "${4:-20}" --jobs 2 \
	    --strategies "${3:-evolve,evolve2,evolve1,random}" $specs >"$OUTF"
	;;
*)
	echo "usage: LS=... $0 configs DIR | bench OUT.txt [STRATEGIES] [SEEDS]" >&2
	exit 64
	;;
esac
