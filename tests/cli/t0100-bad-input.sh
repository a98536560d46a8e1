# Bad input on the command line and unsafe output targets: a clear error, a sysexits code, and
# nothing created or written. Reading commands work on a read-only database and mount.
. tests/cli/lib.sh

DB="$TMP/new.db"
nothing_written() {
	[ ! -e "$DB" ] || fail "$1 created the database"
	[ ! -e "$TUNER_CACHE" ] || fail "$1 created the cache"
	rm -f "$DB"
}

# Numbers out of range are usage errors before anything is written.
for bad in "--generations 4294967297" "--generations 2147483648" "--generations 0" \
	"--generations -1" "--generations 12abc" "--generations ''" "--population 2147483647" \
	"--population 100001" "--jobs 100000" "--jobs -2" "--seed -1" \
	"--seed 18446744073709551616" "--seed 0x10"; do
	eval "run_tuner --db '$DB' run --no-gpu $bad"
	expect_rc 64 "run $bad"
	expect_grep "$TMP/err" "${bad%% *}" "the error names ${bad%% *}"
	nothing_written "run $bad"
done
expect_grep "$TMP/err" "from 0 to 18446744073709551615" "the seed's range is 64 bits"
run_tuner --db "$DB" run --no-gpu --population 100001
expect_grep "$TMP/err" "--population must be from 1 to 100000, got '100001'" "the message gives the range"
for bad in "--k 0" "--k 100001" "--run 0" "--run x"; do
	eval "run_tuner top $bad"
	expect_rc 64 "top $bad"
done
run_tuner check --jobs 100000 --no-compile
expect_rc 64 "check --jobs 100000"
# Every 64-bit seed is a seed: it is stored as given.
run_tuner --db "$DB" run --no-gpu --generations 1 --population 1 --seed 18446744073709551615
expect_rc 0 "the largest seed"
[ "$(sqlite3 "$DB" "SELECT seed FROM runs")" = -1 ] || fail "the seed's 64 bits are stored"
rm -rf "$DB" "$TUNER_CACHE"

# A run that cannot start leaves no database and no run row.
run_tuner --db "$DB" run --replay "$TMP/missing.db"
expect_rc 66 "a missing recording"
nothing_written "a run with a missing recording"
run_tuner --db "$DB" run --config "$TMP/missing.yaml"
expect_rc 78 "a missing config"
nothing_written "a run with a missing config"
run_tuner --db "$DB" run --resume
expect_rc 66 "resume without a database"
nothing_written "a resume without a database"
for c in show top export runs; do
	run_tuner --db "$DB" $c
	expect_rc 66 "$c without a database"
	nothing_written "$c"
done

# A database to export from: the committed H100 sweep, copied.
cp tests/fixtures/sweep-h100.db "$TMP/s.db"
export TUNER_DB="$TMP/s.db"
before=$(cksum <"$TMP/s.db")

# export -o refuses the database itself (by any name), a directory and what is not a file.
ln -s s.db "$TMP/link.db"
for target in "$TMP/s.db" "$TMP/link.db" "$TMP/./s.db"; do
	run_tuner export -o "$target"
	expect_rc 73 "export -o onto the database ($target)"
	expect_grep "$TMP/err" "it is the database the export reads" "the refusal says why"
done
[ "$(cksum <"$TMP/s.db")" = "$before" ] || fail "the database is untouched"
mkdir "$TMP/dir"
run_tuner export -o "$TMP/dir"
expect_rc 73 "export -o onto a directory"
expect_grep "$TMP/err" "is a directory" "a directory is refused"
mkfifo "$TMP/fifo"
run_tuner export -o "$TMP/fifo"
expect_rc 73 "export -o onto a FIFO"
expect_grep "$TMP/err" "not a regular file" "a FIFO is refused"
[ -p "$TMP/fifo" ] || fail "the FIFO is left as it was"
run_tuner export -o /dev/null
expect_rc 73 "export -o onto a device"
[ -c /dev/null ] || fail "/dev/null is still a device"
ls -A "$TMP" | grep -q '^\.' && fail "a refused export left a temporary file: $(ls -A "$TMP" | grep '^\.')"

# The written file: whole, with the permissions a plain create gives, no temporary left.
( umask 027 && "$TUNER" export -o "$TMP/out.h" ) || fail "export -o"
[ "$(stat -c %a "$TMP/out.h")" = 640 ] || fail "export -o honours the umask: $(stat -c %a "$TMP/out.h")"
grep -q '^#endif' "$TMP/out.h" || fail "export -o writes the whole header"
ls -A "$TMP" | grep -q '^\.out\.h\.' && fail "export -o left its temporary file"

# Read-only: a database file nobody may write, and a read-only mount.
as_reader() {
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	else
		"$@"
	fi
}
chmod 755 "$TMP"
mkdir "$TMP/ro"
cp tests/fixtures/sweep-h100.db "$TMP/ro/s.db"
chmod 444 "$TMP/ro/s.db"
chmod 555 "$TMP/ro"
if command -v setpriv >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
	for c in "show" "top" "runs" "export --format t4"; do
		rc=0
		as_reader env TUNER_DB="$TMP/ro/s.db" "$TUNER" $c >"$TMP/out" 2>"$TMP/err" || rc=$?
		expect_rc 0 "$c on a read-only database"
		[ -s "$TMP/out" ] || fail "$c on a read-only database printed nothing"
	done
	[ -z "$(ls "$TMP/ro" | grep -v '^s\.db$')" ] || fail "reading left files: $(ls "$TMP/ro")"
fi
chmod 755 "$TMP/ro"
chmod 644 "$TMP/ro/s.db"
if unshare -r -m true 2>/dev/null; then
	for c in "show" "top --k 2" "export --format json"; do
		rc=0
		unshare -r -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
			shift && exec "$@"' sh "$TMP/ro" env TUNER_DB="$TMP/ro/s.db" "$TUNER" $c \
			>"$TMP/out" 2>"$TMP/err" || rc=$?
		expect_rc 0 "$c on a read-only mount"
		[ -s "$TMP/out" ] || fail "$c on a read-only mount printed nothing"
	done
else
	echo "note: no user namespaces here; the read-only mount is not tested"
fi
finish
