# Helpers for the CLI tests (sourced). $TUNER is the binary, $TOP the repo root.
set -u
: "${TUNER:?}" "${TOP:?}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export TUNER_DB="$TMP/test.db"
export TUNER_CACHE="${TUNER_TEST_CACHE:-$TMP/cache}"
export NO_COLOR=1
fails=0
cd "$TOP"

# NVRTC 13.0's crash on sm_90a, as a compile rejection names it: a tuner built with
# AddressSanitizer stops NVRTC's wild allocation before the segfault, and the compile
# process exits with status 1 instead
if ldd "$TUNER" 2>/dev/null | grep -q libasan; then
	NVRTC_CRASH="ended without a result"
else
	NVRTC_CRASH="died of signal 11"
fi

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# run_tuner ARGS...: runs tuner, stdout in $TMP/out, stderr in $TMP/err, status in $rc
run_tuner() {
	rc=0
	"$TUNER" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}

expect_rc() {
	[ "$rc" -eq "$1" ] || fail "$2: exit $rc, expected $1; stderr: $(head -c 600 "$TMP/err")"
}

# expect_grep FILE PATTERN DESCRIPTION (fixed-string match)
expect_grep() {
	grep -qF -- "$2" "$1" || fail "$3: '$2' not in $(basename "$1"): $(head -c 600 "$1")"
}

expect_no_grep() {
	! grep -qF -- "$2" "$1" || fail "$3: '$2' unexpectedly in $(basename "$1")"
}

finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$fails failure(s)"
		exit 1
	fi
	echo "all good"
	exit 0
}
