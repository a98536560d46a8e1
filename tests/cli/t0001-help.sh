# tuner --help, --version, each subcommand's --help, and usage errors.
. tests/cli/lib.sh

run_tuner --version
expect_rc 0 "--version"
head -1 "$TMP/out" | grep -Eq '^tuner [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version first line"

run_tuner --help
expect_rc 0 "--help"
for c in run check show top export; do
	expect_grep "$TMP/out" "  $c " "--help lists $c"
done

for c in run check show top export; do
	run_tuner "$c" --help
	expect_rc 0 "$c --help"
	expect_grep "$TMP/out" "usage: tuner $c" "$c --help prints its usage"
	[ -s "$TMP/err" ] && fail "$c --help wrote to stderr"
done

run_tuner frobnicate
expect_rc 64 "unknown command exits EX_USAGE"
expect_grep "$TMP/err" "unknown command 'frobnicate'" "unknown command message"

run_tuner check --bogus-flag
expect_rc 64 "unknown flag exits EX_USAGE"

run_tuner
expect_rc 64 "no command exits EX_USAGE"
finish
