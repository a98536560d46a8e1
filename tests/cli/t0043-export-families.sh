# tuner export --per-shape --run A --run B: both attention families in one header, each shape's
# winner the family with the lower median there (computed here from the database), the dispatch
# for tuned, untuned and causal dims, one translation unit per family build; and the refusals.
. tests/cli/lib.sh

CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
[ -x "$NVCC" ] || NVCC=
[ -n "$NVCC" ] || echo "SKIP: no nvcc (looked on PATH and in \$CUDA_HOME/bin): the header is not compiled with the templates"
CFLAGS_T="-Wall -Wextra -pedantic -Werror"
DEV='NVIDIA H100 80GB HBM3'

# val HEADER MACRO: the value a header #defines for MACRO
val() {
	awk -v m="$2" '$1 == "#define" && $2 == m { print $3; exit }' "$1"
}

# One run of each family, replayed from the sweeps: run 1 flash_attn (mma.sync, causal), run 2
# flash_fwd_sm90 (TMA, wgmma, non-causal).
run_tuner --config configs/attention-d64.yaml run --replay tests/fixtures/sweep-h100-attn.db --seed 1
expect_rc 0 "the flash_attn replay"
gunzip -c tests/fixtures/sweep-h100-sm90.db.gz >"$TMP/sm90.db" # kept compressed: 50 MB whole
run_tuner --config configs/h100-sm90.yaml run --replay "$TMP/sm90.db" --seed 1
expect_rc 0 "the flash_fwd_sm90 replay"
cp "$TUNER_DB" "$TMP/two.db"

H=$TMP/attention.h
run_tuner export --per-shape --run 1 --run 2 --prefix attention -o "$H"
expect_rc 0 "the combined export"
[ -s "$H" ] || fail "the combined header is written"
expect_grep "$H" "#define ATTENTION_NFAMILIES 2" "two families"
expect_grep "$H" "#define ATTENTION_FLASH_ATTN 0" "flash_attn is family 0 (run order)"
expect_grep "$H" "#define ATTENTION_FLASH_FWD_SM90 1" "flash_fwd_sm90 is family 1"
# Each family's section is whole: its own per-shape macros and dispatch.
expect_grep "$H" "static inline struct flash_attn_config flash_attn_select(" "flash_attn's section"
expect_grep "$H" "static inline struct flash_fwd_sm90_config flash_fwd_sm90_select(" "sm90's section"

# best RUN DIMS: the median of the run's correct per-shape best on those dims ('' when none)
best() {
	sqlite3 "$TUNER_DB" "SELECT min(m.median_us) FROM measurements m JOIN evals x
		ON x.variant_id = m.variant_id AND x.run_id = $1 WHERE x.outcome = 'ok'
		AND m.outcome = 'ok' AND m.median_us IS NOT NULL AND m.device = '$DEV'
		AND m.shape_dims = '$2'"
}
# The combined suite: name, dims, the runs that tuned it and the dims as C arguments.
sqlite3 "$TUNER_DB" "SELECT shapes FROM runs WHERE id IN (1, 2) ORDER BY id" | python3 -c '
import json, sys
suite = {}
for run, line in enumerate(sys.stdin, 1):
    for s in json.loads(line):
        dims = ",".join("%s=%d" % (k, v) for k, v in s.items() if k != "name")
        args = ", ".join(str(v) for k, v in s.items() if k != "name")
        suite.setdefault(dims, [s["name"], dims, [], args])[2].append(str(run))
for name, dims, runs, args in suite.values():
    print(name, dims, ",".join(runs), args)
' >"$TMP/suite"
[ "$(wc -l <"$TMP/suite")" -eq 7 ] || fail "the combined suite has 7 shapes: $(cat "$TMP/suite")"

# Per shape, the expected winner and the checks of the host program.
: >"$TMP/checks.c"
sm90_wins=0 fa_wins=0
while read -r name dims runs args; do
	a=$(best 1 "$dims") b=$(best 2 "$dims")
	if [ -n "$a" ] && { [ -z "$b" ] || python3 -c "import sys; sys.exit(not $a <= $b)"; }; then
		want=0 P=FLASH_ATTN m=flash_attn fa_wins=$((fa_wins + 1))
	else
		want=1 P=FLASH_FWD_SM90 m=flash_fwd_sm90 sm90_wins=$((sm90_wins + 1))
	fi
	[ -n "$a$b" ] || fail "shape $name has a best in some run"
	N=$(echo "$name" | tr a-z A-Z)
	got=$(val "$H" "ATTENTION_${N}_FAMILY")
	[ "$got" = "$want" ] || fail "shape $name ($dims): family '$got', expected $want (medians '$a', '$b')"
	cat >>"$TMP/checks.c" <<EOF
	c = attention_select($args);
	CHECK(c.exact == 1 && c.family == $want && !strcmp(c.shape_name, "$name"));
	CHECK(c.config == ${P}_${N}_CONFIG && c.$m.config == c.config && c.$m.block_n == ${P}_${N}_BLOCK_N);
	CHECK(c.$m.launch[0].grid[0] > 0 && !strcmp(c.family_name, "$m"));
EOF
done <"$TMP/suite"
# The fixtures make a real contest: each family wins some shape.
[ "$fa_wins" -ge 1 ] && [ "$sm90_wins" -ge 1 ] ||
	fail "each family wins a shape ($fa_wins flash_attn, $sm90_wins sm90): the test proves little"

# Untuned dims, expected by the rule written again here: the nearest tuned shape in log space whose
# winner can serve them (sm90's valid: causal == 0; same specialised dims: D and causal for
# flash_attn, D for sm90), else another family that tuned a shape and can serve them.
python3 - "$TMP/suite" "$H" >"$TMP/near.c" <<'EOF' || fail "the expected nearest shapes"
import re, sys
suite = [l.split(None, 3) for l in open(sys.argv[1])]
hdr = open(sys.argv[2]).read()
spec = {0: (3, 4), 1: (3,)}
valid = {0: lambda q: True, 1: lambda q: q[4] == 0}
shapes, tuned_by = [], {0: set(), 1: set()}
for name, dims, runs, args in suite:
    v = [int(x) for x in args.split(",")]
    w = int(re.search(r"#define ATTENTION_%s_FAMILY \(?(-?\d+)" % name.upper(), hdr).group(1))
    shapes.append((name, v, w))
    for r in runs.split(","):
        tuned_by[int(r) - 1].add(name)
def dist(a, t):
    d = 1.0
    for x, y in zip(a, t):
        x, y = max(x, 0) + 1.0, y + 1.0
        d *= x / y if x > y else y / x
    return d
def serve(f, q, v):
    return valid[f](q) and all(q[j] == v[j] for j in spec[f])
def pick(q):
    for passes in (0, 1):
        best = None
        for name, v, w in shapes:
            fams = [w] if passes == 0 else [f for f in (0, 1) if f != w and name in tuned_by[f]]
            for f in fams:
                if f >= 0 and serve(f, q, v):
                    d = dist(q, v)
                    if best is None or d < best[0]:
                        best = (d, name, f)
        if best:
            return best[1], best[2]
    return "", -1
for q in ([2, 8, 1000, 64, 0], [1, 8, 1024, 64, 1], [4, 16, 3000, 64, 1], [16, 16, 2048, 64, 0],
          [1, 2, 6000, 64, 0], [2, 16, 2048, 128, 0], [1, 8, 512, 128, 1], [1, 8, 333, 96, 0]):
    name, f = pick(q)
    args = ", ".join(map(str, q))
    print("\tc = attention_select(%s);" % args)
    print("\tCHECK(c.exact == 0 && c.family == %d && !strcmp(c.shape_name, \"%s\"));" % (f, name))
    if q[4] == 1:
        print("\tCHECK(c.family != ATTENTION_FLASH_FWD_SM90); /* sm90 is non-causal */")
    if f >= 0:
        print("\tCHECK(c.config >= 0);")
    else:
        print("\tCHECK(c.config == -1 && c.shape == -1);")
EOF
grep -q 'c.family == 0 && !strcmp(c.shape_name, "long_causal")' "$TMP/near.c" ||
	fail "a causal query goes to flash_attn's long_causal: $(head -c 600 "$TMP/near.c")"
grep -q 'c.family == -1' "$TMP/near.c" || fail "some query has no family (D=128 causal, D=96)"

cat >"$TMP/host.c" <<EOF
#include <stdio.h>
#include <string.h>
#include "attention.h"
#ifdef BLOCK_N
#error a bare include has a preamble
#endif

static int fails;
#define CHECK(c) do { if (!(c)) { printf("FAIL: line %d: %s\n", __LINE__, #c); fails++; } } while (0)

int main(void)
{
	struct attention_choice c;

$(cat "$TMP/checks.c" "$TMP/near.c")
	/* sm90's launch: (CONSUMERS + 1) * 128 threads, its kernel, PDL */
	c = attention_select(4, 16, 4096, 128, 0);
	CHECK(c.family == 1 && !strcmp(c.flash_fwd_sm90.launch[0].kernel, "flash_fwd_sm90"));
	CHECK(c.flash_fwd_sm90.launch[0].block[0] == (c.flash_fwd_sm90.consumers + 1) * 128);
	CHECK(c.flash_fwd_sm90.launch[0].pdl == (c.flash_fwd_sm90.pdl != 0)); /* the sidecar's pdl: PDL */
	CHECK(c.flash_attn.config == -1); /* the family not chosen is cleared */
	CHECK(flash_fwd_sm90_valid(1, 8, 512, 64, 1) == 0 && flash_attn_valid(1, 8, 512, 64, 1) == 1);
	printf("%d failures\n", fails);
	return fails != 0;
}
EOF
if $CC -std=c11 $CFLAGS_T -I"$TMP" -o "$TMP/host" "$TMP/host.c" 2>"$TMP/cc.err"; then
	"$TMP/host" >"$TMP/host.out" || fail "the dispatch from C: $(grep FAIL "$TMP/host.out" | head -5)"
else
	fail "the host program compiles as C: $(head -c 800 "$TMP/cc.err")"
fi
if command -v "$CXX" >/dev/null; then
	$CXX -std=c++11 $CFLAGS_T -x c++ -I"$TMP" -o "$TMP/hostxx" "$TMP/host.c" 2>"$TMP/cxx.err" &&
		"$TMP/hostxx" >/dev/null || fail "the dispatch from C++: $(head -c 800 "$TMP/cxx.err")"
fi

# A family's build asks for its preamble alone: the other family's params never appear.
FA_N=$(val "$H" FLASH_ATTN_NCONFIGS) SM_N=$(val "$H" FLASH_FWD_SM90_NCONFIGS)
[ "${FA_N:-0}" -ge 1 ] && [ "${SM_N:-0}" -ge 1 ] || fail "each family has builds ($FA_N, $SM_N)"
printf '#define FLASH_ATTN_CONFIG 0\n#include "attention.h"\n#ifdef CONSUMERS\n#error sm90 preamble\n#endif\n_Static_assert(SPLITS >= 1, "flash_attn build 0");\n' \
	>"$TMP/fa_pre.c"
$CC -std=c11 $CFLAGS_T -c -o "$TMP/fa_pre.o" "$TMP/fa_pre.c" || fail "FLASH_ATTN_CONFIG 0: flash_attn's preamble alone"
printf '#define FLASH_FWD_SM90_CONFIG 0\n#include "attention.h"\n#ifdef Q_REGS\n#error flash_attn preamble\n#endif\n_Static_assert(CONSUMERS >= 1, "sm90 build 0");\n' \
	>"$TMP/sm_pre.c"
$CC -std=c11 $CFLAGS_T -c -o "$TMP/sm_pre.o" "$TMP/sm_pre.c" || fail "FLASH_FWD_SM90_CONFIG 0: sm90's preamble alone"
if [ -n "$NVCC" ]; then
	# One translation unit per family build, each with its template: flash_attn at sm_90,
	# flash_fwd_sm90 at sm_90a; the last build of each (D=128 for sm90).
	printf '#include "attention.h"\n#include "flash_attn.cu"\n' >"$TMP/fa.cu"
	"$NVCC" -arch=sm_90 -std=c++17 -I"$TMP" -I"$TOP/kernels/templates" -I"$TOP/kernels/include" \
		-DFLASH_ATTN_CONFIG=$((FA_N - 1)) -c -o "$TMP/fa.o" "$TMP/fa.cu" >"$TMP/nvcc.log" 2>&1 ||
		fail "flash_attn build $((FA_N - 1)) + flash_attn.cu: $(head -c 800 "$TMP/nvcc.log")"
	printf '#include "attention.h"\n#include "flash_fwd_sm90.cu"\n' >"$TMP/sm.cu"
	"$NVCC" -gencode arch=compute_90a,code=sm_90a -std=c++17 -I"$TMP" -I"$TOP/kernels/templates" \
		-I"$TOP/kernels/include" -DFLASH_FWD_SM90_CONFIG=$((SM_N - 1)) -c -o "$TMP/sm.o" \
		"$TMP/sm.cu" >"$TMP/nvcc.log" 2>&1 ||
		fail "sm90 build $((SM_N - 1)) + flash_fwd_sm90.cu: $(head -c 800 "$TMP/nvcc.log")"
	# and the host program beside them, as nvcc compiles host code
	cp "$TMP/host.c" "$TMP/host.cu"
	"$NVCC" -std=c++17 -I"$TMP" -o "$TMP/hostcu" "$TMP/host.cu" >"$TMP/nvcc.log" 2>&1 &&
		"$TMP/hostcu" >/dev/null || fail "the host program with nvcc: $(head -c 800 "$TMP/nvcc.log")"
fi

# The default prefix: dispatch_select().
run_tuner export --per-shape --run 1 --run 2
expect_rc 0 "the combined export to stdout"
expect_grep "$TMP/out" "static inline struct dispatch_choice dispatch_select(" "the default prefix"

# ------------------------------------------------------------------ refusals

# refused WHY DB ARGS...: export exits EX_DATAERR (65), says WHY, writes nothing
refused() {
	why=$1 db=$2
	shift 2
	rm -f "$TMP/x.h"
	TUNER_DB=$db run_tuner export --per-shape -o "$TMP/x.h" "$@"
	expect_rc 65 "refused: $why"
	expect_grep "$TMP/err" "$why" "the message"
	[ ! -e "$TMP/x.h" ] || fail "$why: a header was written"
}

# The same template twice: a second replay of sm90 is run 3.
run_tuner --config configs/h100-sm90.yaml run --replay "$TMP/sm90.db" --seed 2
expect_rc 0 "a second sm90 run"
refused "runs 2 and 3 both tuned 'flash_fwd_sm90'" "$TUNER_DB" --run 1 --run 2 --run 3
refused "runs 2 and 2 both tuned 'flash_fwd_sm90'" "$TUNER_DB" --run 2 --run 1 --run 2
# Other dims: flash_fwd's problem (attention.yaml) has no causal; run 4.
run_tuner --config configs/sweep-h100.yaml run --replay tests/fixtures/sweep-h100.db --seed 1
expect_rc 0 "a flash_fwd run"
refused "run 4's 'kernels/problems/attention.yaml' has [B H S D]" "$TUNER_DB" --run 1 --run 4
expect_grep "$TMP/err" "has dims [B H S D causal]" "both dims are named"
# Another GPU: times that cannot be compared.
cp "$TMP/two.db" "$TMP/gpu.db"
sqlite3 "$TMP/gpu.db" "UPDATE runs SET device = 'NVIDIA H200' WHERE id = 2"
refused "run 1 was measured on '$DEV', run 2 on 'NVIDIA H200'" "$TMP/gpu.db" --run 1 --run 2
# A run with nothing to export (no correct timed variant), as export refuses one alone.
cp "$TMP/two.db" "$TMP/empty.db"
sqlite3 "$TMP/empty.db" "DELETE FROM elite WHERE run_id = 2; UPDATE evals SET outcome = 'wrong' WHERE run_id = 2"
refused "run 2 has no correct timed variant" "$TMP/empty.db" --run 1 --run 2
# A run that is not there.
refused "no run 9" "$TMP/two.db" --run 1 --run 9
# Usage: several runs need --per-shape; --prefix needs several runs; --config is one family's.
run_tuner export --run 1 --run 2
expect_rc 64 "--run twice without --per-shape"
run_tuner export --per-shape --run 1 --prefix attention
expect_rc 64 "--prefix with one run"
run_tuner --config configs/h100-sm90.yaml export --per-shape --run 1 --run 2
expect_rc 64 "--config with several runs"
finish
