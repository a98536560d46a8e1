# make install into a temporary PREFIX: the installed binary finds its data from any directory,
# keeps its database and cache where XDG says outside a project (and beside the configs inside
# one), writes nothing into the directory it is run from, and its man page and completion are in.
. tests/cli/lib.sh

P="$TMP/p"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s install PREFIX="$P" \
	BUILD="$BUILD" >"$TMP/make.log" 2>&1 || fail "make install: $(tail -5 "$TMP/make.log")"
for f in bin/tuner share/tuner/configs/default.yaml share/tuner/configs/sweep-h100.yaml \
	share/tuner/kernels/templates/flash_fwd.cu share/tuner/kernels/include/tuner_device.cuh \
	share/man/man1/tuner.1 share/bash-completion/completions/tuner; do
	[ -f "$P/$f" ] || fail "make install puts $f in PREFIX"
done
if command -v man >/dev/null 2>&1; then
	MANWIDTH=80 man -l "$P/share/man/man1/tuner.1" >"$TMP/man.txt" 2>"$TMP/man.err" ||
		fail "man -l reads the installed page: $(head -3 "$TMP/man.err")"
	for word in "tuner - an autotuning search daemon" "EXIT STATUS" "--resume" "XDG_DATA_HOME"; do
		grep -qF -- "$word" "$TMP/man.txt" || fail "the man page reads '$word'"
	done
fi

# Outside any project: XDG places under a HOME of our own; nothing in the working directory.
HOMEDIR="$TMP/home"
mkdir -p "$HOMEDIR" "$TMP/empty"
installed() {
	rc=0
	env -u TUNER_DB -u TUNER_CACHE -u TUNER_CONFIG -u XDG_DATA_HOME -u XDG_CACHE_HOME \
		HOME="$HOMEDIR" "$P/bin/tuner" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}
(cd "$TMP/empty" && installed run --no-gpu --generations 1 --population 4
	echo "$rc" >"$TMP/rc")
rc=$(cat "$TMP/rc")
expect_rc 0 "the installed tuner runs from an empty directory"
[ -z "$(ls -A "$TMP/empty")" ] || fail "tuner wrote into the directory it ran in: $(ls -A "$TMP/empty")"
DB="$HOMEDIR/.local/share/tuner/tuner.db"
[ -f "$DB" ] || fail "the database is in \$HOME/.local/share/tuner"
ls "$HOMEDIR/.cache/tuner" | grep -q '\.cubin$' || fail "the cubins are in \$HOME/.cache/tuner"
case $(sqlite3 "$DB" "select config_path from runs") in
*/share/tuner/configs/default.yaml) ;;
*) fail "the run used the installed default config: $(sqlite3 "$DB" "select config_path from runs")" ;;
esac

# The issue's own words: from /, the same run works (and answers from the cache).
(cd / && installed run --no-gpu --generations 1 --population 4
	echo "$rc" >"$TMP/rc")
rc=$(cat "$TMP/rc")
expect_rc 0 "cd / && tuner run --no-gpu --generations 1"
[ "$(sqlite3 "$DB" "select count(*) from runs where status = 'done'")" = 2 ] ||
	fail "both runs are in the XDG database"

# XDG variables are honoured; a config is found by its bare name in the data directory.
(cd "$TMP/empty" && env -u TUNER_DB -u TUNER_CACHE XDG_DATA_HOME="$TMP/xdg" HOME="$HOMEDIR" \
	"$P/bin/tuner" runs >"$TMP/out" 2>"$TMP/err")
expect_grep "$TMP/err" "no database '$TMP/xdg/tuner/tuner.db'" "\$XDG_DATA_HOME places the database"
(cd "$TMP/empty" && installed check --no-compile --config sweep-h100
	echo "$rc" >"$TMP/rc")
rc=$(cat "$TMP/rc")
expect_rc 0 "--config NAME finds the installed configs/NAME.yaml"

# Moved elsewhere, the installed tree still finds its data (beside the binary).
mv "$P" "$TMP/moved"
P="$TMP/moved"
(cd "$TMP/empty" && installed check --no-compile
	echo "$rc" >"$TMP/rc")
rc=$(cat "$TMP/rc")
expect_rc 0 "a moved installation finds its data"

# In a project directory (a configs/ directory here) the database is ./tuner.db.
mkdir -p "$TMP/proj/configs"
(cd "$TMP/proj" && installed runs
	echo "$rc" >"$TMP/rc")
rc=$(cat "$TMP/rc")
expect_rc 66 "runs in a project without a database"
expect_grep "$TMP/err" "no database 'tuner.db'" "in a project directory the database is ./tuner.db"
[ ! -e "$TMP/proj/tuner.db" ] || fail "reading created the project's database"

env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s uninstall PREFIX="$P" \
	>"$TMP/make.log" 2>&1 || fail "make uninstall"
[ ! -e "$P/bin/tuner" ] && [ ! -e "$P/share/tuner" ] && [ ! -e "$P/share/man/man1/tuner.1" ] ||
	fail "make uninstall removes what install put there"
finish
