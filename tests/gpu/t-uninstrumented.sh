#!/bin/sh
# A family whose kernel does not include tuner_device.cuh (configs/transpose.yaml) under
# `sanitize: elite`: its sanitize builds have nothing that checks an access, so the dynamic
# alignment gate does not apply. The elite's newcomers must pass with the gate recorded as not
# checked, never be rejected for the missing instrumentation.
#
# Usage, from the repository root: TUNER=build/tuner tests/gpu/t-uninstrumented.sh
TUNER=${TUNER:-build/tuner}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-uninst.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
. tests/gpu/lib.sh
fails=0
DB=$TMP/t.db
TUNER_CACHE=$TMP/cache "$TUNER" --db "$DB" --config configs/transpose.yaml run --generations 2 \
	--population 8 >"$TMP/out" 2>&1 || { echo "FAIL: the run: $(tail -3 "$TMP/out")"; exit 1; }
faults=$(query "$DB" "SELECT count(*) FROM evals WHERE outcome <> 'ok' AND reason LIKE '%tuner_san_log%'")
[ "$faults" = 0 ] && echo "ok      no variant rejected for the missing instrumentation" ||
	{ echo "FAIL: $faults variants rejected for the missing instrumentation"; fails=$((fails + 1)); }
gated=$(query "$DB" "SELECT count(*) FROM gates WHERE gate = 'sanitize' AND outcome = 'ok' AND reason LIKE 'not checked%'")
[ "$gated" -ge 1 ] && echo "ok      the gate recorded as not checked ($gated)" ||
	{ echo "FAIL: no sanitize gate row says not checked"; fails=$((fails + 1)); }
grep -q "does not include tuner_device.cuh" "$TMP/out" && echo "ok      the run says so once" ||
	{ echo "FAIL: no warning"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "t-uninstrumented: all passed"
[ "$fails" -eq 0 ]
