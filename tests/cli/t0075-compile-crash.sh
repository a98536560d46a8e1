# A compiler that crashes takes one variant, not the run: the compile process dies, the
# variant is a compile rejection that names the signal, and the run finishes. The compile
# process's testing hook crashes it on CRASH=1 (NVRTC 13.0's own crash needs sm_90a).
. tests/cli/lib.sh

CFG=tests/fixtures/crash/crash.yaml
TUNER_TEST_COMPILE_CRASH='#define CRASH 1' run_tuner --config "$CFG" run --no-gpu --strategy exhaustive
expect_rc 0 "a run where the compiler crashes on half the variants"
expect_grep "$TMP/out" "rejected: compile 2" "both crashing variants are compile rejections"
ok=$(sqlite3 "$TUNER_DB" "SELECT count(*) FROM evals WHERE outcome = 'ok'")
[ "$ok" -eq 2 ] || fail "the other two variants compile: $ok"
r=$(sqlite3 "$TUNER_DB" "SELECT status FROM runs ORDER BY id DESC LIMIT 1")
[ "$r" = "done" ] || fail "run status done (got $r)"

run_tuner show
expect_rc 0 "show the run"
expect_grep "$TMP/out" "compile 2" "the run's outcomes count the crashes"

v=$(sqlite3 "$TUNER_DB" "SELECT e.variant_id FROM evals e JOIN variants v ON v.id = e.variant_id WHERE e.outcome = 'compile' LIMIT 1")
run_tuner show "$v"
expect_rc 0 "show a crashed variant"
expect_grep "$TMP/out" "CRASH=1" "the variant shown is a crashing one"
expect_grep "$TMP/out" "the compiler crashed on 'tests/fixtures/crash/kernels/wgmma.cu': the compile process died of signal 6 (SIGABRT" \
	"show explains the compile rejection by the signal"

# Without the hook nothing crashes: on sm_90 the wgmma is an ordinary compile error, and the
# crashes were not cached in its place.
run_tuner --config "$CFG" run --no-gpu --strategy exhaustive
expect_rc 0 "the same run without the hook"
v=$(sqlite3 "$TUNER_DB" "SELECT reason FROM evals WHERE run_id = 2 AND outcome = 'compile' LIMIT 1")
echo "without the hook: $v"
case "$v" in
*crashed*) fail "a crash was answered from the cache: $v" ;;
*wgmma*) ;;
*) fail "CRASH=1 on sm_90 is a compile error naming the wgmma: $v" ;;
esac

# On sm_90a NVRTC 13.0 itself segfaults on the CRASH=1 variants: no hook, a real crash.
nvrtc=$(python3 -c 'import ctypes
l = ctypes.CDLL("'"${CUDA:-/usr/local/cuda}"'/lib64/libnvrtc.so")
a, b = ctypes.c_int(), ctypes.c_int()
l.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
print("%d.%d" % (a.value, b.value))' 2>/dev/null)
if [ "$nvrtc" = "13.0" ]; then
	run_tuner --config tests/fixtures/crash/crash-90a.yaml run --no-gpu --strategy exhaustive
	expect_rc 0 "a run where NVRTC itself crashes"
	expect_grep "$TMP/out" "rejected: compile 2" "the real crashes are compile rejections"
	v=$(sqlite3 "$TUNER_DB" "SELECT reason FROM evals WHERE run_id = 3 AND outcome = 'compile' LIMIT 1")
	echo "sm_90a: $v"
	case "$v" in
	*"$NVRTC_CRASH"*) ;;
	*) fail "NVRTC's own crash is named by its signal: $v" ;;
	esac
else
	echo "skipped: the real NVRTC crash needs NVRTC 13.0 (this is ${nvrtc:-unknown})"
fi

# The compile process is tuner's own: by hand it refuses to start.
run_tuner __compile --fd=3
expect_rc 64 "tuner __compile by hand"
expect_grep "$TMP/err" "tuner starts it itself" "says what it is"
finish
