# A malformed config gives a file:line message and exit 78 (EX_CONFIG), and the database is untouched.
. tests/cli/lib.sh

good="$TOP/configs/default.yaml"
mkdir -p "$TMP/cfg"
# Configs live beside the real ones' relative paths: copy the template dir reference by rewriting it.
tpl="$TOP/kernels/templates/flash_fwd.yaml"

write_cfg() { # NAME: stdin is the config body, template line prepended
	{ echo "template: $tpl"; cat; } >"$TMP/cfg/$1.yaml"
}

write_cfg misspelt <<'EOF2'
arch: sm_90
shapes:
  - {name: mission, B: 1, H: 8, S: 512, D: 64}
budgte:
  generations: 2
EOF2
write_cfg text-int <<'EOF2'
arch: sm_90
shapes:
  - {name: mission, B: 1, H: 8, S: 512, D: 64}
budget:
  generations: ten
EOF2
cat >"$TMP/cfg/no-template.yaml" <<'EOF2'
template: does-not-exist.yaml
arch: sm_90
shapes:
  - {name: mission, B: 1, H: 8, S: 512, D: 64}
EOF2

check_bad() { # NAME LINE PATTERN
	for cmd in run check; do
		rm -f "$TUNER_DB"
		run_tuner --config "$TMP/cfg/$1.yaml" $cmd
		expect_rc 78 "$1: $cmd exits EX_CONFIG"
		expect_grep "$TMP/err" "$TMP/cfg/$1.yaml:$2:" "$1: $cmd names file:line"
		expect_grep "$TMP/err" "$3" "$1: $cmd message"
		[ -e "$TUNER_DB" ] && fail "$1: $cmd created the database"
	done
}
check_bad misspelt 5 "budgte"
grep -q "did you mean 'budget'" "$TMP/err" || fail "misspelt: did-you-mean suggestion"
check_bad text-int 6 "ten"
check_bad no-template 1 "does-not-exist.yaml"

# A bad config never touches an existing database either.
run_tuner --config "$good" run --generations 1 --population 2 --no-gpu
expect_rc 0 "good run to create a database"
before=$(sqlite3 "$TUNER_DB" "select count(*) from runs")
sum_before=$(sqlite3 "$TUNER_DB" .dump | md5sum)
run_tuner --config "$TMP/cfg/text-int.yaml" run
expect_rc 78 "bad config against an existing database"
[ "$(sqlite3 "$TUNER_DB" .dump | md5sum)" = "$sum_before" ] || fail "database changed by a bad config"
[ "$before" -ge 1 ] || fail "first run recorded"
finish
