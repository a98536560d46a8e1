#!/bin/sh
# Run every unit test binary and every CLI script; print "N passed, N failed".
BUILD=${BUILD:-build}
export BUILD
export TUNER="$PWD/$BUILD/tuner"
export TOP="$PWD"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:suppressions=$PWD/tests/lsan.supp"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$PWD/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0
failed=0
failures=""
# One PostgreSQL server for the tests that use it, started and stopped here (tests/pg.sh).
. tests/pg.sh
pg_start || echo "no PostgreSQL for the tests: $TUNER_TEST_PG_WHY"
trap pg_stop EXIT
trap 'pg_stop; exit 130' INT TERM
# TESTS="t0060 test_evolve ...": only the tests whose names begin with one of these words.
selected() {
	[ -z "${TESTS:-}" ] && return 0
	for w in $TESTS; do
		case "$1" in "$w"*) return 0 ;; esac
	done
	return 1
}
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	selected "$name" || continue
	if "$t" >"$BUILD/tests/$name.log" 2>&1; then
		passed=$((passed + 1))
		echo "ok      $name"
	else
		failed=$((failed + 1))
		failures="$failures $name"
		echo "FAILED  $name"
		sed 's/^/    /' "$BUILD/tests/$name.log" | tail -40
	fi
done
for t in tests/cli/t[0-9]*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	selected "$name" || continue
	log="$BUILD/tests/$name.log"
	mkdir -p "$BUILD/tests"
	if sh "$t" >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "ok      $name"
	else
		failed=$((failed + 1))
		failures="$failures $name"
		echo "FAILED  $name"
		sed 's/^/    /' "$log" | tail -40
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
