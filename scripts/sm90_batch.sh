#!/bin/bash
# On the GPU machine, one device call: run scripts/sm90_dev.sh into a scratch folder, print a
# short report (the checks' summary, any failure, the three fastest configurations of each timed
# shape by CUDA events, the ncu op mix, the interleaved table next to SDPA), and tar the outputs
# (cubins and ncu reports left out; their text, CSV and SASS kept) into $OUT/sm90dev.tgz: the
# device tool returns at most a few files.
#
#   scripts/sm90_batch.sh            # the device's $OUT receives sm90dev.tgz and sm90dev.log
set -u
cd "$(dirname "$0")/.."
DEST=${OUT:-build}
WORK=/tmp/sm90dev
rm -rf "$WORK"
mkdir -p "$WORK" "$DEST"
start=$(date +%s)
NCU=${NCU:-0} OUT=$WORK scripts/sm90_dev.sh >"$WORK/sm90dev.log" 2>&1
echo "sm90_dev.sh: rc $?, $(($(date +%s) - start)) s"
grep -E "^OCCUPANCY|^== summary|^PLANT|^FAIL|^RC |^SKIP|BUILD FAILED|spill stores|ncu failed" "$WORK/sm90dev.log" |
	grep -v " 0 bytes spill stores" | cut -c1-220 | head -30
echo
echo "fastest three per shape (CUDA events, median µs):"
grep '^PASS .* median_us' "$WORK/results.txt" | awk '{
	n = $2; sub(/.*\//, "", n); sub(/\.cubin$/, "", n)
	for (i = 1; i <= NF; i++) if ($i == "median_us") us = $(i + 1)
	print $3, us, n }' | sort -k1,1 -k2,2g | awk '{ if (c[$1]++ < 3) print "  " $0 }'
echo
sed -n '/^== ncu/,/^== side by side/p' "$WORK/sm90dev.log" | grep -v "^== side" | head -70
sed -n '/^== side by side/,$p' "$WORK/sm90dev.log"
cp "$WORK/sm90dev.log" "$DEST/"
(cd /tmp && tar czf "$DEST/sm90dev.tgz" --exclude='*.cubin' --exclude='*.ncu-rep' sm90dev)
