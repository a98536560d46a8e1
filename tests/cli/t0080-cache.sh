# The cubin cache: 'tuner cache' shows, prunes (least recently used first, whole entries) and
# clears it; run keeps it within $TUNER_CACHE_MAX; files that are not cache entries stay.
. tests/cli/lib.sh

C="$TUNER_CACHE"
K1=11111111111111111111111111111111
K2=22222222222222222222222222222222
K3=33333333333333333333333333333333

run_tuner cache
expect_rc 0 "cache on a missing directory"
expect_grep "$TMP/out" "entries     0 (0 files)" "an empty cache"

# Three entries of 3 files each, last used 3, 2 and 1 days ago; and a file of the user's.
mkdir -p "$C"
for k in $K1 $K2 $K3; do
	head -c 100000 /dev/zero >"$C/$k.cubin"
	echo log >"$C/$k.log"
	echo meta >"$C/$k.meta"
done
touch -d '3 days ago' "$C/$K1".*
touch -d '2 days ago' "$C/$K2".*
touch -d '1 day ago' "$C/$K3".*
echo mine >"$C/notes.txt"

run_tuner cache show
expect_rc 0 "cache show"
expect_grep "$TMP/out" "cache       $C" "cache names its directory"
expect_grep "$TMP/out" "entries     3 (9 files)" "cache counts entries and files"
expect_grep "$TMP/out" "other files 1" "cache counts what is not its own"

# Pruned to 250 KB: the least recently used entry goes, whole; the user's file stays.
run_tuner cache prune --max-size 250K
expect_rc 0 "cache prune"
expect_grep "$TMP/out" "evicted 1 entry (3 files" "prune says what it evicted"
[ ! -e "$C/$K1.cubin" ] && [ ! -e "$C/$K1.meta" ] && [ ! -e "$C/$K1.log" ] || fail "the oldest entry goes whole"
[ -e "$C/$K2.cubin" ] && [ -e "$C/$K3.cubin" ] || fail "the newer entries stay"
[ -e "$C/notes.txt" ] || fail "prune leaves the user's file alone"

# A run keeps the cache within $TUNER_CACHE_MAX, and the builds it used count as used now: a
# first run fills the cache (S bytes of its own), a second with a limit of S + 150 KB evicts
# the least recently used entry ($K2), keeps the next ($K3) and every one of its own.
run_tuner run --no-gpu --generations 1 --population 2
expect_rc 0 "a run fills the cache"
entries_size() {
	find "$C" -type f -name '[0-9a-f]*.*' ! -name "$K2.*" ! -name "$K3.*" -exec cat {} + | wc -c
}
S=$(entries_size)
[ "$S" -gt 0 ] || fail "the run's builds are in the cache"
TUNER_CACHE_MAX=$((S + 150 * 1024)) run_tuner -v run --no-gpu --generations 1 --population 2
expect_rc 0 "a run with a cache limit"
expect_grep "$TMP/out" "cache: evicted 1 least recently used entries" "--verbose says what the run evicted"
[ ! -e "$C/$K2.cubin" ] || fail "the least recently used entry was evicted"
[ -e "$C/$K3.cubin" ] || fail "the next entry stays: the cache is within its limit"
[ "$(entries_size)" -eq "$S" ] || fail "every entry the run used stays"
for key in $(sqlite3 "$TUNER_DB" "select key from builds"); do
	[ -e "$C/$key.meta" ] || fail "the run's build $key stays in the cache"
done
[ -e "$C/notes.txt" ] || fail "a run leaves the user's file alone"

# A bad limit is a usage error before anything is written.
TUNER_CACHE_MAX=lots run_tuner run --no-gpu --generations 1 --db "$TMP/new.db"
expect_rc 64 "a bad \$TUNER_CACHE_MAX"
expect_grep "$TMP/err" "TUNER_CACHE_MAX" "the message names the variable"
[ ! -e "$TMP/new.db" ] || fail "a bad limit created a database"
run_tuner cache prune --max-size 12Q
expect_rc 64 "a bad --max-size"
run_tuner cache clear --max-size 1K
expect_rc 64 "--max-size is prune's"
run_tuner cache frobnicate
expect_rc 64 "an unknown cache action"

run_tuner cache clear
expect_rc 0 "cache clear"
[ -z "$(find "$C" -name '[0-9a-f]*.*' -type f)" ] || fail "clear removes every entry"
[ -e "$C/notes.txt" ] || fail "clear leaves the user's file alone"
run_tuner cache
expect_grep "$TMP/out" "entries     0 (0 files)" "a cleared cache is empty"
finish
