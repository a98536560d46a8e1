# The planted-defect corpus (tests/gpu/corpus/) without a GPU: every family loads and its
# baseline compiles; every plant passes the static gates (only the GPU or the compiler can
# catch it) and compiles, but for the compiler's own crash and hang, which the sweep of the
# compiler job must record as compile rejections (tests/gpu/corpus/expected.tsv) while the
# run goes on. tests/gpu/t-corpus.sh sweeps every job on a GPU.
. tests/cli/lib.sh
. tests/gpu/corpus/verdict.sh

CORPUS=tests/gpu/corpus
TAB=$(printf '\t')

for job in "$CORPUS"/jobs/*.yaml; do
	run_tuner --config "$job" check --no-compile
	expect_rc 0 "$job: the static gates on the baseline"
	run_tuner --config "$job" check
	expect_rc 0 "$job: the baseline compiles"
done

# The compiler job: the crash and the hang are compile rejections, the run finishes.
run_tuner --config "$CORPUS/jobs/compiler.yaml" run --no-gpu --strategy exhaustive
expect_rc 0 "the compiler job's sweep"
run=$(sqlite3 "$TUNER_DB" "SELECT max(id) FROM runs")
r=$(sqlite3 "$TUNER_DB" "SELECT status FROM runs WHERE id = $run")
[ "$r" = "done" ] || fail "the compiler job's run is done (got $r)"
nvrtc=$(sqlite3 "$TUNER_DB" "SELECT nvrtc FROM runs WHERE id = $run")
sqlite3 -separator "$TAB" "$TUNER_DB" "SELECT v.params, e.outcome, e.reason FROM evals e
	JOIN variants v ON v.id = e.variant_id WHERE e.run_id = $run" >"$TMP/compiler.rows"
clean=$(grep -c ",DEFECT=0${TAB}ok$TAB" "$TMP/compiler.rows")
[ "$clean" -eq 2 ] || fail "the compiler job's 2 clean variants compile: $clean do"

# Every plant: the static gates pass; it compiles, or the compiler job recorded its verdict.
while IFS="$TAB" read -r class job defect outcomes needles needs; do
	case $class in
	'#'* | '') continue ;;
	esac
	run_tuner --config "$CORPUS/jobs/$job.yaml" check --no-compile --set "DEFECT=$defect" </dev/null
	expect_rc 0 "$class (DEFECT=$defect): the static gates pass"
	if [ "$needs" ] && [ "nvrtc=$nvrtc" != "$needs" ]; then
		echo "skipped: $class (DEFECT=$defect) needs ${needs#nvrtc=}, this NVRTC is $nvrtc"
		continue
	fi
	if [ "$outcomes" != compile ]; then
		run_tuner --config "$CORPUS/jobs/$job.yaml" check --set "DEFECT=$defect" </dev/null
		expect_rc 0 "$class (DEFECT=$defect): compiles"
		continue
	fi
	[ "$job" = compiler ] || fail "$class: a compile verdict outside the compiler job"
	case $needles in
	*"died of signal 11"*) needles=$NVRTC_CRASH ;; # as this build names the crash (lib.sh)
	esac
	n=0
	grep ",DEFECT=$defect$TAB" "$TMP/compiler.rows" >"$TMP/plant.rows"
	while IFS="$TAB" read -r params outcome reason; do
		n=$((n + 1))
		corpus_match "$outcome" "$reason" "$outcomes" "$needles" ||
			fail "$params: $outcome ($reason); expected $outcomes with '$needles'"
	done <"$TMP/plant.rows"
	[ "$n" -ge 2 ] || fail "$class (DEFECT=$defect): $n variants evaluated"
done <"$CORPUS/expected.tsv"
finish
