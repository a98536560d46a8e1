#!/bin/sh
# End to end on a GPU, through tuner itself: `tuner sweep` over the planted-fault family
# (tests/gpu/faults/) must turn every fault into a recorded result while the run goes on, and
# the database must hold the right outcome and reason for each value of FAULT:
#   0 ok, 1 runtime fault (misaligned address), 2 runtime fault (illegal address),
#   3 timeout, 4 wrong (NaN), 5 race.
# Then with the dynamic alignment gate on every variant (config-sanitize.yaml): FAULT=1 is
# rejected as align (a misaligned cp.async, recorded by the sanitize build) before its plain
# build ever runs, and FAULT=0 still passes.
#
# Usage, from the repository root: TUNER=build/tuner tests/gpu/t-faults.sh
# Prints one "ok      ..." line per check that holds and one "FAIL: ..." line per check that
# does not; exits 1 when any failed. Reads the database with tests/gpu/lib.sh's query.
TUNER=${TUNER:-build/tuner}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-faults.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
export TUNER_CACHE="$TMP/cache"
export NO_COLOR=1
TAB=$(printf '\t')
fails=0
. tests/gpu/lib.sh

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

pass() {
	echo "ok      $*"
}

# sweep NAME CONFIG: tuner sweep into $TMP/NAME.db, stdout in $TMP/NAME.out, status in $rc
sweep() {
	rc=0
	if command -v timeout >/dev/null 2>&1; then
		timeout 900 "$TUNER" --db "$TMP/$1.db" --config "$2" sweep \
			>"$TMP/$1.out" 2>"$TMP/$1.err" || rc=$?
	else
		"$TUNER" --db "$TMP/$1.db" --config "$2" sweep >"$TMP/$1.out" 2>"$TMP/$1.err" ||
			rc=$?
	fi
	echo "        $TUNER --config $2 sweep: exit $rc"
	sed 's/^/        | /' "$TMP/$1.out"
	if [ "$rc" -ne 0 ]; then
		fail "$1: sweep exited with status $rc; stderr: $(tail -c 1500 "$TMP/$1.err")"
		return
	fi
	pass "$1: sweep exited 0"
	if grep -q '^no GPU (' "$TMP/$1.out"; then
		fail "$1: tuner found no GPU: $(grep '^no GPU (' "$TMP/$1.out")"
	fi
	query "$TMP/$1.db" "SELECT v.params, e.outcome, e.reason FROM evals e
		JOIN variants v ON v.id = e.variant_id ORDER BY v.params" >"$TMP/$1.rows" ||
		fail "$1: cannot read the database"
}

# expect NAME FAULT OUTCOME NEEDLE...: the evals row of FAULT=n has that outcome, and its
# reason contains every needle
expect() {
	name=$1
	f=$2
	want=$3
	shift 3
	line=$(grep "^FAULT=$f$TAB" "$TMP/$name.rows")
	if [ -z "$line" ]; then
		fail "$name FAULT=$f: no evals row (the run did not get to it)"
		return
	fi
	outcome=$(printf '%s\n' "$line" | cut -f 2)
	reason=$(printf '%s\n' "$line" | cut -f 3-)
	if [ "$outcome" != "$want" ]; then
		fail "$name FAULT=$f: outcome '$outcome', expected '$want' (reason: $reason)"
		return
	fi
	for needle in "$@"; do
		case $reason in
		*"$needle"*) ;;
		*)
			fail "$name FAULT=$f: $outcome, but the reason lacks '$needle': $reason"
			return
			;;
		esac
	done
	pass "$name FAULT=$f: $outcome ($reason)"
}

# count NAME SQL WANT WHAT: a single-value query must answer WANT
count() {
	got=$(query "$TMP/$1.db" "$2")
	if [ "$got" = "$3" ]; then
		pass "$1: $4 ($got)"
	else
		fail "$1: $4: got '$got', expected '$3'"
	fi
}

# The run went on past every fault and summarised: 6 candidates, each with an evals row.
summarised() {
	if grep -q '^6 candidates in ' "$TMP/$1.out" && grep -q '^rejected: ' "$TMP/$1.out" &&
		grep -q ': 1 correct, ' "$TMP/$1.out"; then
		pass "$1: summary printed: $(grep '^rejected: ' "$TMP/$1.out")"
	else
		fail "$1: no summary of 6 candidates with 1 correct in the output"
	fi
	count "$1" "SELECT count(*) FROM evals" 6 "every FAULT value evaluated"
	count "$1" "SELECT status FROM runs ORDER BY id DESC LIMIT 1" "done" "the run is done"
}

# gates FAULT GATE: the distinct outcomes of that gate's rows for FAULT=n
gates() {
	echo "SELECT group_concat(DISTINCT g.outcome) FROM gates g
		JOIN variants v ON v.id = g.variant_id WHERE v.params = 'FAULT=$1' AND g.gate = '$2'"
}

# measured FAULT [CONDITION]: how many shapes of FAULT=n have a measurement (that holds)
measured() {
	echo "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id
		WHERE v.params = 'FAULT=$1' ${2:+AND $2}"
}

# ---------------------------------------------------------------- plain
sweep plain tests/gpu/faults/config.yaml
if [ "$rc" -eq 0 ]; then
	summarised plain
	expect plain 0 ok
	expect plain 1 "runtime fault" CUDA_ERROR_MISALIGNED_ADDRESS misaligned "shape 'a'"
	expect plain 2 "runtime fault" CUDA_ERROR_ILLEGAL_ADDRESS illegal "shape 'a'"
	expect plain 3 timeout "timed out after 5.0 s" "shape 'a'"
	expect plain 4 wrong "NaN or Inf" "shape 'a'"
	expect plain 5 race "two runs on the same inputs differ" "shape 'a'"
	# the sidecar's layout "forgets" FAULT=1's misaligned slots: the static gate passes it
	count plain "$(gates 1 align)" ok "the static alignment gate passed FAULT=1"
	count plain "$(measured 0 "m.outcome = 'ok' AND m.median_us > 0")" 2 \
		"FAULT=0 timed on both shapes"
fi

# ---------------------------------------------------- sanitize: every
sweep sanitize tests/gpu/faults/config-sanitize.yaml
if [ "$rc" -eq 0 ]; then
	summarised sanitize
	expect sanitize 0 ok
	expect sanitize 1 align "misaligned cp.async write" "shared address 0x" "shape 'a'"
	count sanitize "$(gates 1 sanitize)" align "the dynamic alignment gate rejected FAULT=1"
	count sanitize "$(measured 1)" 0 "FAULT=1's plain build never ran"
	count sanitize "$(gates 0 sanitize)" ok "the dynamic alignment gate passed FAULT=0"
	count sanitize "$(measured 0 "m.outcome = 'ok' AND m.median_us > 0")" 2 \
		"FAULT=0 timed on both shapes"
fi

if [ "$fails" -ne 0 ]; then
	echo "t-faults: $fails failed"
	exit 1
fi
echo "t-faults: all passed"
exit 0
