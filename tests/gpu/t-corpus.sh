#!/bin/sh
# End to end on a GPU, through tuner itself: the planted-defect corpus (tests/gpu/corpus/, one
# family per defect class, each a copy of the FlashAttention kernel with the defect planted).
# Each job in tests/gpu/corpus/jobs/ is swept with `tuner sweep`. Whatever its kernels do, the
# run must finish: exit 0, status done, an evals row for every candidate. Every variant that
# carries a defect must get the verdict tests/gpu/corpus/expected.tsv gives for it, and every
# clean variant (DEFECT=0, swept between the defective ones) must pass.
#
# Usage, from the repository root: TUNER=build/tuner tests/gpu/t-corpus.sh [JOB...]
# (JOB: a name in tests/gpu/corpus/jobs/; default: every job expected.tsv names).
# Prints one "ok      ..." line per check that holds and one "FAIL: ..." line per check that
# does not, then the table of the report, Markdown (also written to $CORPUS_TABLE when that is
# set); exits 1 when any check failed.
TUNER=${TUNER:-build/tuner}
CORPUS=tests/gpu/corpus
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tuner-corpus.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM
export TUNER_CACHE="$TMP/cache"
export NO_COLOR=1
TAB=$(printf '\t')
fails=0
. tests/gpu/lib.sh
. "$CORPUS/verdict.sh"

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

pass() {
	echo "ok      $*"
}

if [ $# -gt 0 ]; then
	jobs="$*"
else
	jobs=$(grep -v '^#' "$CORPUS/expected.tsv" | cut -f 2 | awk '!seen[$0]++')
fi
for job in $jobs; do
	[ -f "$CORPUS/jobs/$job.yaml" ] || {
		echo "t-corpus: no job '$job' in $CORPUS/jobs" >&2
		exit 2
	}
done

# sweep JOB: tuner sweep into $TMP/JOB.db; $TMP/JOB.rows holds params, outcome and reason of
# each variant, $TMP/JOB.nvrtc the NVRTC version; clean variants are checked here
sweep() {
	db="$TMP/$1.db"
	rc=0
	t0=$(date +%s)
	if command -v timeout >/dev/null 2>&1; then
		timeout 900 "$TUNER" --db "$db" --config "$CORPUS/jobs/$1.yaml" sweep \
			>"$TMP/$1.out" 2>"$TMP/$1.err" || rc=$?
	else
		"$TUNER" --db "$db" --config "$CORPUS/jobs/$1.yaml" sweep >"$TMP/$1.out" \
			2>"$TMP/$1.err" || rc=$?
	fi
	echo "        $TUNER --config $CORPUS/jobs/$1.yaml sweep: exit $rc, $(($(date +%s) - t0)) s"
	sed 's/^/        | /' "$TMP/$1.out"
	if [ "$rc" -ne 0 ]; then
		fail "$1: sweep exited with status $rc; stderr: $(tail -c 1500 "$TMP/$1.err")"
	else
		pass "$1: sweep exited 0"
	fi
	if grep -q '^no GPU (' "$TMP/$1.out"; then
		fail "$1: tuner found no GPU: $(grep '^no GPU (' "$TMP/$1.out")"
	fi
	# the points a sidecar's constraints leave out are no variants of the corpus
	if ! [ -f "$db" ] || ! query "$db" "SELECT v.params, e.outcome, e.reason FROM evals e
		JOIN variants v ON v.id = e.variant_id ORDER BY v.id" >"$TMP/$1.all"; then
		fail "$1: cannot read the database"
		: >"$TMP/$1.rows"
		return
	fi
	grep -v "${TAB}constraint$TAB" "$TMP/$1.all" >"$TMP/$1.rows"
	query "$db" "SELECT nvrtc FROM runs ORDER BY id DESC LIMIT 1" >"$TMP/$1.nvrtc"
	status=$(query "$db" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
	if [ "$status" = "done" ]; then
		pass "$1: the run is done"
	else
		fail "$1: the run's status is '$status', not done"
	fi
	n=$(sed -n 's/^\([0-9][0-9]*\) candidates in .*/\1/p' "$TMP/$1.out")
	got=$(wc -l <"$TMP/$1.all" | tr -d ' ')
	if [ -n "$n" ] && [ "$got" -eq "$n" ]; then
		pass "$1: every candidate evaluated ($n)"
	else
		fail "$1: ${n:-no} candidates in the summary, $got evals rows"
	fi

	clean=0
	ok=0
	grep ",DEFECT=0$TAB" "$TMP/$1.rows" >"$TMP/clean.rows"
	while IFS="$TAB" read -r params outcome reason; do
		clean=$((clean + 1))
		if [ "$outcome" = ok ]; then
			ok=$((ok + 1))
			pass "$1 $params: ok"
		else
			fail "$1 $params (clean): $outcome ($reason)"
		fi
	done <"$TMP/clean.rows"
	[ "$clean" -gt 0 ] || fail "$1: no clean variant evaluated"
	printf '%s\t%s\t%s\n' "$1" "$ok" "$clean" >>"$TMP/clean.tsv"
}

selected() {
	for j in $jobs; do
		[ "$j" = "$1" ] && return 0
	done
	return 1
}

for job in $jobs; do
	sweep "$job"
done

# Every plant of expected.tsv: each variant's verdict, and a row of the table per plant.
while IFS="$TAB" read -r class job defect outcomes needles needs; do
	case $class in
	'#'* | '') continue ;;
	esac
	selected "$job" || continue
	skip=
	case $needs in
	nvrtc=*)
		have=$(cat "$TMP/$job.nvrtc" 2>/dev/null)
		[ "$have" = "${needs#nvrtc=}" ] ||
			skip="the plant needs NVRTC ${needs#nvrtc=}, this is ${have:-unknown}"
		;;
	esac
	n=0
	rejected=0
	good=0
	grep ",DEFECT=$defect$TAB" "$TMP/$job.rows" >"$TMP/plant.rows"
	while IFS="$TAB" read -r params outcome reason; do
		n=$((n + 1))
		[ "$outcome" = ok ] || rejected=$((rejected + 1))
		printf '%s\t%s\n' "$class" "$outcome" >>"$TMP/outcomes.tsv"
		if [ -n "$skip" ]; then
			echo "skip    $job $params: $outcome ($reason): $skip"
		elif corpus_match "$outcome" "$reason" "$outcomes" "$needles"; then
			good=$((good + 1))
			pass "$job $params: $outcome ($reason)"
		else
			fail "$job $params: $outcome ($reason); expected $outcomes with '$needles'"
		fi
	done <"$TMP/plant.rows"
	[ "$n" -gt 0 ] || fail "$class: no variant with DEFECT=$defect was evaluated in $job"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$class" "$job" "$n" "$rejected" "$good" "$skip" \
		>>"$TMP/table.tsv"
done <"$CORPUS/expected.tsv"

# The table: one row per defect class, its plants added up.
touch "$TMP/table.tsv" "$TMP/outcomes.tsv" "$TMP/clean.tsv"
awk -F "$TAB" '
FILENAME == ARGV[1] { clean_ok[$1] = $2; clean_n[$1] = $3; next }
FILENAME == ARGV[2] {
	if (!(($1, $2) in seen))
		kinds[$1] = kinds[$1] SUBSEP $2
	seen[$1, $2]++
	next
}
{
	if (!($1 in n)) {
		order[++classes] = $1
		job[$1] = $2
	}
	n[$1] += $3
	rej[$1] += $4
	good[$1] += $5
	if ($6 != "")
		note[$1] = " (not asserted: " $6 ")"
}
END {
	print "| defect class | variants | rejected | as expected | verdicts | clean variants ok |"
	print "|---|---|---|---|---|---|"
	for (i = 1; i <= classes; i++) {
		c = order[i]
		split(substr(kinds[c], 2), k, SUBSEP)
		v = ""
		for (j = 1; j in k; j++)
			v = v (j > 1 ? ", " : "") k[j] " " seen[c, k[j]]
		printf "| %s | %d | %d | %d | %s%s | %s of %s |\n", c, n[c], rej[c], good[c], v,
		    note[c], clean_ok[job[c]], clean_n[job[c]]
	}
}' "$TMP/clean.tsv" "$TMP/outcomes.tsv" "$TMP/table.tsv" >"$TMP/table.md"
echo
cat "$TMP/table.md"
echo
[ -z "${CORPUS_TABLE:-}" ] || cp "$TMP/table.md" "$CORPUS_TABLE"

if [ "$fails" -ne 0 ]; then
	echo "t-corpus: $fails failed"
	exit 1
fi
echo "t-corpus: all passed"
exit 0
