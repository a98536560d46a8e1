# tuner --help, --version, each command's own --help, global options anywhere, usage errors; the
# man page and the bash completion know every command and option.
. tests/cli/lib.sh

COMMANDS="run sweep check runs show top export cache"

run_tuner --version
expect_rc 0 "--version"
head -1 "$TMP/out" | grep -Eq '^tuner [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version first line"
grep -Eq '^NVRTC [0-9]+\.[0-9]+$' "$TMP/out" || fail "--version names NVRTC: $(cat "$TMP/out")"
# The driver through the dlopen loader: none here, and a (fake) one that says its version.
TUNER_LIBCUDA="$TMP/no-such-libcuda.so" run_tuner --version
expect_rc 0 "--version without a driver"
expect_grep "$TMP/out" "CUDA driver: none (cannot load '$TMP/no-such-libcuda.so'" "--version says no driver"
cat >"$TMP/fakecuda.c" <<'EOF'
int cuDriverGetVersion(int *v) { *v = 12040; return 0; }
EOF
if ${CC:-cc} -shared -fPIC -o "$TMP/libfakecuda.so" "$TMP/fakecuda.c"; then
	TUNER_LIBCUDA="$TMP/libfakecuda.so" run_tuner --version
	expect_rc 0 "--version with a driver"
	grep -Eq '^CUDA driver 12\.4( |$)' "$TMP/out" || fail "--version names the driver: $(cat "$TMP/out")"
else
	fail "cannot build a fake driver"
fi

run_tuner --help
expect_rc 0 "--help"
for c in $COMMANDS; do
	expect_grep "$TMP/out" "  $c " "--help lists $c"
done
for code in "64 " "65 " "66 " "73 " "78 " "130"; do
	expect_grep "$TMP/out" "  $code" "--help documents exit status $code"
done
for opt in --db --config --quiet --verbose --version; do
	expect_grep "$TMP/out" "$opt" "--help documents $opt"
done

# Every command's --help is its own, on stdout, and 'help CMD' says the same.
for c in $COMMANDS; do
	run_tuner "$c" --help
	expect_rc 0 "$c --help"
	head -1 "$TMP/out" | grep -q "^usage: tuner $c " || fail "$c --help prints its own usage: $(head -1 "$TMP/out")"
	[ -s "$TMP/err" ] && fail "$c --help wrote to stderr"
	cp "$TMP/out" "$TMP/help-$c"
	run_tuner help "$c"
	cmp -s "$TMP/out" "$TMP/help-$c" || fail "'help $c' differs from '$c --help'"
done
expect_no_grep "$TMP/help-sweep" "usage: tuner run" "sweep --help is not run's"
# A usage error prints the command's own usage on stderr.
run_tuner sweep --bogus-flag
expect_rc 64 "sweep with an unknown flag"
expect_grep "$TMP/err" "usage: tuner sweep" "sweep's usage error names sweep"

# Global options after the command: README's `sweep --config X`, and --db too.
run_tuner sweep --config "$TMP/no-such.yaml"
expect_rc 78 "sweep --config after the command is read"
expect_grep "$TMP/err" "$TMP/no-such.yaml" "the config named after the command is the one used"
run_tuner check --no-compile --config=configs/l4.yaml
expect_rc 0 "check --config=FILE after the command"
expect_grep "$TMP/out" "sm_89" "check used the config given after the command"
run_tuner top --db "$TMP/missing.db"
expect_rc 66 "top --db after the command"
expect_grep "$TMP/err" "no database '$TMP/missing.db'" "the database named after the command is used"
run_tuner show --db
expect_rc 64 "--db without a value"
# After a "--" nothing is a global option.
run_tuner show -- --db x
expect_rc 64 "'--' ends the global options"

run_tuner frobnicate
expect_rc 64 "unknown command exits EX_USAGE"
expect_grep "$TMP/err" "unknown command 'frobnicate'" "unknown command message"
run_tuner check --bogus-flag
expect_rc 64 "unknown flag exits EX_USAGE"
run_tuner
expect_rc 64 "no command exits EX_USAGE"

# The man page and the completion know every command and every long option.
if command -v scdoc >/dev/null 2>&1; then
	scdoc <docs/tuner.1.scd >"$TMP/tuner.1" || fail "the man page source does not build"
	grep -v -e '^\.TH' -e '^\.\\"' "$TMP/tuner.1" >"$TMP/a"
	grep -v -e '^\.TH' -e '^\.\\"' docs/tuner.1 >"$TMP/b"
	cmp -s "$TMP/a" "$TMP/b" || fail "docs/tuner.1 is stale: run 'make man'"
fi
for c in $COMMANDS; do
	grep -q "^\*$c\*" docs/tuner.1.scd || fail "the man page lacks the command $c"
	sed -n 's/.*local commands="\(.*\)"/\1/p' contrib/completion/tuner.bash | tr ' ' '\n' |
		grep -qx "$c" || fail "the completion lacks the command $c"
	# The options: the usage lines up to the first blank one, and the option table's lines.
	for opt in $( (sed '/^$/q' "$TMP/help-$c"; grep '^  -' "$TMP/help-$c") |
		grep -o -- '--[a-z][a-z-]*' | sort -u); do
		grep -q -- "\*$opt\*" docs/tuner.1.scd || fail "the man page lacks $c $opt"
		sed -n "s/^	$c) echo \"\(.*\)\" ;;/\1/p" contrib/completion/tuner.bash |
			grep -q -- "$opt\( \|$\)" || fail "the completion lacks $c $opt"
	done
done
if command -v bash >/dev/null 2>&1; then
	got=$(bash -c '. contrib/completion/tuner.bash; COMP_WORDS=(tuner --db x.db sw); COMP_CWORD=3;
		_tuner; echo "${COMPREPLY[*]}"')
	[ "$got" = sweep ] || fail "completion of 'sw' after --db: '$got'"
	got=$(bash -c '. contrib/completion/tuner.bash; COMP_WORDS=(tuner export --format ""); COMP_CWORD=3;
		_tuner; echo "${COMPREPLY[*]}"')
	[ "$got" = "header json t4" ] || fail "completion of --format: '$got'"
fi
finish
