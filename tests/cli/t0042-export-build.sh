# tuner export's build section: the header then the template compile with nvcc and no other
# define; #if on its counts; its launches and per-shape dispatch from C and C++; other families.
. tests/cli/lib.sh

CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
[ -x "$NVCC" ] || NVCC=
[ -n "$NVCC" ] || echo "SKIP: no nvcc (looked on PATH and in \$CUDA_HOME/bin): the header is not compiled with the templates"
SWEEP=tests/fixtures/sweep-h100.db
CFLAGS_T="-Wall -Wextra -pedantic -Werror"

# nvcc_c FILE.cu: compile for sm_90 against the templates; 0 when it compiles
nvcc_c() {
	"$NVCC" -arch=sm_90 -std=c++17 -I"$TMP" -I"$TOP/kernels/templates" -I"$TOP/kernels/include" \
		-c -o "$TMP/nvcc.o" "$1" >"$TMP/nvcc.log" 2>&1
}

# val HEADER MACRO: the value a header #defines for MACRO
val() {
	awk -v m="$2" '$1 == "#define" && $2 == m { print $3; exit }' "$1"
}

# family_db DB FAMILY CONFIG SHAPES PARAMS...: a finished run of any family (the fixture's rules)
family_db() {
	db=$1
	shift
	version=$(sed -n 's/^-- schema-version: \([0-9][0-9]*\)$/\1/p' db/schema.sql)
	sqlite3 "$db" <db/schema.sql && sqlite3 "$db" "PRAGMA user_version = $version" &&
		tests/fixtures/export/family-run.sh "$@" | sqlite3 "$db" ||
		fail "cannot build the fixture database $db"
}

# ------------------------------------------------------- flash_fwd, rank 1

run_tuner --db "$SWEEP" export -o "$TMP/flash_fwd_config.h"
expect_rc 0 "export of the sweep"
H=$TMP/flash_fwd_config.h
BM=$(val "$H" FLASH_FWD_BLOCK_M) BN=$(val "$H" FLASH_FWD_BLOCK_N) NW=$(val "$H" FLASH_FWD_NUM_WARPS)
ST=$(val "$H" FLASH_FWD_STAGES) PAD=$(val "$H" FLASH_FWD_PAD)
[ -n "$BM" ] && [ -n "$PAD" ] || fail "the header defines rank 1's params"
# The sidecar's smem_bytes, (BLOCK_M + 2 * STAGES * BLOCK_N) * (D + PAD) * 2, at D = 64 and 128.
smem64=$(((BM + 2 * ST * BN) * (64 + PAD) * 2))
smem128=$(((BM + 2 * ST * BN) * (128 + PAD) * 2))
expect_grep "$H" "$smem128 bytes of dynamic shared memory, above the 48 KB default" \
	"the header notes the opt-in above 48 KB"
expect_grep "$H" "cudaFuncAttributeMaxDynamicSharedMemorySize" "the header names the attribute"

# The preamble's values, seen from C: the default specialisation is the suite's first (D=64).
for d in "" 64 128; do
	want=$smem64
	[ "$d" = 128 ] && want=$smem128
	cat >"$TMP/pre.c" <<EOF
${d:+#define SHAPE_D $d}
#include "flash_fwd_config.h"
_Static_assert(BLOCK_M == $BM && BLOCK_N == $BN && NUM_WARPS == $NW && STAGES == $ST, "params");
_Static_assert(SHAPE_D == ${d:-64}, "the specialisation");
_Static_assert(TUNER_SMEM_BYTES == $want, "smem_bytes of that specialisation");
_Static_assert(FLASH_FWD_SMEM_OPTIN == ($want > 49152), "the opt-in");
EOF
	$CC -std=c11 $CFLAGS_T -c -o "$TMP/pre.o" "$TMP/pre.c" ||
		fail "the preamble at SHAPE_D '${d:-default}' is rank 1's with smem $want"
done
# A specialisation the run never tuned stops the build, naming the tuned ones.
printf '#define SHAPE_D 96\n#include "flash_fwd_config.h"\n' >"$TMP/bad.c"
! $CC -std=c11 -c -o "$TMP/bad.o" "$TMP/bad.c" 2>"$TMP/bad.err" ||
	fail "SHAPE_D 96 is no tuned build"
expect_grep "$TMP/bad.err" "specialisation (D=64; D=128)" "the #error names the tuned ones"
# FLASH_FWD_NO_PREAMBLE: the prefixed names alone.
printf '#define FLASH_FWD_NO_PREAMBLE\n#include "flash_fwd_config.h"\n#ifdef BLOCK_M\n#error BLOCK_M\n#endif\nint f(void) { return FLASH_FWD_BLOCK_M; }\n' \
	>"$TMP/nopre.c"
$CC -std=c11 $CFLAGS_T -c -o "$TMP/nopre.o" "$TMP/nopre.c" || fail "FLASH_FWD_NO_PREAMBLE"

# The header, then the template, nothing else: it compiles for sm_90 at both head dims.
if [ -n "$NVCC" ]; then
	printf '#include "flash_fwd_config.h"\n#include "flash_fwd.cu"\n' >"$TMP/use64.cu"
	nvcc_c "$TMP/use64.cu" || fail "header + flash_fwd.cu compile: $(head -c 800 "$TMP/nvcc.log")"
	printf '#define SHAPE_D 128\n#include "flash_fwd_config.h"\n#include "flash_fwd.cu"\n' \
		>"$TMP/use128.cu"
	nvcc_c "$TMP/use128.cu" || fail "header + flash_fwd.cu at D=128: $(head -c 800 "$TMP/nvcc.log")"
	# Without the header the template stops at its #error: the header is what made it build.
	printf '#include "flash_fwd.cu"\n' >"$TMP/bare.cu"
	! nvcc_c "$TMP/bare.cu" || fail "flash_fwd.cu alone compiled: the test proves nothing"
fi

# ---------------------------------------------------------- ranks in #if

printf '#include "flash_fwd_config.h"\n#if FLASH_FWD_RANKS > 1\n#error more than one rank\n#endif\nint one;\n' \
	>"$TMP/r1.c"
$CC -std=c11 $CFLAGS_T -c -o "$TMP/r1.o" "$TMP/r1.c" || fail "#if FLASH_FWD_RANKS > 1 is false for --k 1"
run_tuner --db "$SWEEP" export --k 2 -o "$TMP/flash_fwd_config.h"
expect_rc 0 "export --k 2"
R2BM=$(val "$H" FLASH_FWD_R2_BLOCK_M) R2BN=$(val "$H" FLASH_FWD_R2_BLOCK_N)
R2ST=$(val "$H" FLASH_FWD_R2_STAGES) R2PAD=$(val "$H" FLASH_FWD_R2_PAD)
cat >"$TMP/r2.c" <<EOF
#define FLASH_FWD_RANK 2
#include "flash_fwd_config.h"
#if FLASH_FWD_RANKS > 1
int two;
#else
#error FLASH_FWD_RANKS > 1 is false with two ranks
#endif
_Static_assert(BLOCK_M == $R2BM && BLOCK_N == $R2BN, "FLASH_FWD_RANK 2 is rank 2's preamble");
_Static_assert(TUNER_SMEM_BYTES == ($R2BM + 2 * $R2ST * $R2BN) * (64 + $R2PAD) * 2, "its smem");
EOF
$CC -std=c11 $CFLAGS_T -c -o "$TMP/r2.o" "$TMP/r2.c" || fail "#if FLASH_FWD_RANKS > 1 and FLASH_FWD_RANK 2"

# ----------------------------------------------------- per-shape dispatch

run_tuner --db "$SWEEP" export --per-shape -o "$TMP/flash_fwd_config.h"
expect_rc 0 "export --per-shape"
cat >"$TMP/sel.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "flash_fwd_config.h"

static int fails;
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			printf("FAIL: line %d: %s\n", __LINE__, #c);                               \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

/* What the sidecar says for a flash_fwd configuration at B, H, S, D. */
static void geometry(struct flash_fwd_config c, long long B, long long H, long long S, long long D)
{
	long long smem = (c.block_m + 2 * c.stages * c.block_n) * (D + c.pad) * 2;

	CHECK(c.launch[0].enabled && !strcmp(c.launch[0].kernel, "flash_fwd"));
	CHECK(c.launch[0].grid[0] == (S + c.block_m - 1) / c.block_m);
	CHECK(c.launch[0].grid[1] == H && c.launch[0].grid[2] == B);
	CHECK(c.launch[0].block[0] == c.num_warps * 32 && c.launch[0].block[1] == 1);
	CHECK(c.launch[0].smem_bytes == smem && c.launch[0].smem_optin == (smem > 49152));
}

/* select() at a tuned shape's dims: that shape, and its own best (the FLASH_FWD_<SHAPE>_ macros). */
#define EXACT(i, NAME, name, B, H, S, D)                                                                 \
	do {                                                                                       \
		struct flash_fwd_config c = flash_fwd_select(B, H, S, D);                           \
		CHECK(c.exact == 1 && c.shape == i && !strcmp(c.shape_name, name));                \
		CHECK(c.config == FLASH_FWD_##NAME##_CONFIG);                                       \
		CHECK(c.block_m == FLASH_FWD_##NAME##_BLOCK_M && c.stages == FLASH_FWD_##NAME##_STAGES); \
		CHECK(c.swizzle == FLASH_FWD_##NAME##_SWIZZLE && c.pad == FLASH_FWD_##NAME##_PAD);    \
		geometry(c, B, H, S, D);                                                           \
	} while (0)

/* select() between tuned shapes: the nearest in log space, with the same head dim. */
static void near(const char *want, long long B, long long H, long long S, long long D)
{
	struct flash_fwd_config c = flash_fwd_select(B, H, S, D);

	CHECK(c.exact == 0 && c.config >= 0 && !strcmp(c.shape_name, want));
	if (strcmp(c.shape_name, want))
		printf("  (%lld, %lld, %lld, %lld) gave '%s', expected '%s'\n", B, H, S, D,
		       c.shape_name, want);
	geometry(c, B, H, S, D);
}

int main(void)
{
	struct flash_fwd_config c;

	EXACT(0, MISSION, "mission", 1, 8, 512, 64);
	EXACT(1, SMALL, "small", 2, 8, 512, 64);
	EXACT(2, LONG, "long", 2, 8, 2048, 64);
	EXACT(3, WIDE, "wide", 8, 16, 2048, 64);
	EXACT(4, D128, "d128", 4, 16, 4096, 128);
	near("mission", 1, 8, 1024, 64);  /* S twice mission's; small and long are further */
	near("small", 2, 8, 600, 64);
	near("long", 2, 8, 1800, 64);
	near("wide", 16, 16, 2048, 64);
	near("d128", 1, 8, 512, 128);     /* mission is nearer, but D=64 is another build */
	near("mission", 1, 8, 333, 64);  /* a ragged S */
	c = flash_fwd_select(1, 8, 512, 96); /* no tuned shape has D=96 */
	CHECK(c.config == -1 && c.shape == -1 && c.launch[0].grid[0] == 0);
	CHECK(FLASH_FWD_NSHAPES == 5 && FLASH_FWD_NCONFIGS >= 1 && FLASH_FWD_NLAUNCHES == 1);
	c = flash_fwd_rank(1, 2, 8, 1000, 64);
	CHECK(c.rank == 1 && c.config == -1 && c.block_m == FLASH_FWD_BLOCK_M);
	geometry(c, 2, 8, 1000, 64);
	CHECK(flash_fwd_rank(2, 2, 8, 1000, 64).rank == 0); /* --k 1: one rank */
	printf("%d failures\n", fails);
	return fails != 0;
}
EOF
if $CC -std=c11 $CFLAGS_T -I"$TMP" -o "$TMP/sel" "$TMP/sel.c" 2>"$TMP/cc.err"; then
	"$TMP/sel" >"$TMP/sel.out" || fail "flash_fwd_select from C: $(grep -v '^0 failures' "$TMP/sel.out")"
else
	fail "the select test compiles as C: $(head -c 800 "$TMP/cc.err")"
fi
# C++ too: the same program as C++ (extern "C", no designated initialisers in the header).
if command -v "$CXX" >/dev/null; then
	if $CXX -std=c++11 $CFLAGS_T -x c++ -I"$TMP" -o "$TMP/selxx" "$TMP/sel.c" 2>"$TMP/cxx.err"; then
		"$TMP/selxx" >"$TMP/selxx.out" || fail "flash_fwd_select from C++"
	else
		fail "the select test compiles as C++: $(head -c 800 "$TMP/cxx.err")"
	fi
fi
# Each per-shape build compiles with the template: FLASH_FWD_CONFIG picks it, SHAPE_D included.
n=$(val "$H" FLASH_FWD_NCONFIGS)
last=$((n - 1))
printf '#define FLASH_FWD_CONFIG %s\n#include "flash_fwd_config.h"\n_Static_assert(SHAPE_D == 128, "d128 is the last build");\n' \
	"$last" >"$TMP/cfg.c"
$CC -std=c11 $CFLAGS_T -c -o "$TMP/cfg.o" "$TMP/cfg.c" || fail "FLASH_FWD_CONFIG $last is d128's build"
if [ -n "$NVCC" ]; then
	printf '#define FLASH_FWD_CONFIG %s\n#include "flash_fwd_config.h"\n#include "flash_fwd.cu"\n' \
		"$last" >"$TMP/cfg.cu"
	nvcc_c "$TMP/cfg.cu" || fail "per-shape build $last + flash_fwd.cu: $(head -c 800 "$TMP/nvcc.log")"
fi

# ---------------------------------- a family without specialised dims: softmax

family_db "$TMP/softmax.db" softmax configs/softmax.yaml \
	'[{"name": "narrow", "rows": 65536, "cols": 128}, {"name": "few", "rows": 32, "cols": 65536}]' \
	'VEC=8,TPR=32,BLOCK=128,ITEMS=4,CLUSTER=1' 'VEC=8,TPR=1024,BLOCK=1024,ITEMS=8,CLUSTER=4'
run_tuner --db "$TMP/softmax.db" export --per-shape -o "$TMP/softmax_config.h"
expect_rc 0 "export of softmax"
expect_grep "$TMP/err" "the template of 'softmax' changed since run 1" "a changed template is said"
expect_no_grep "$TMP/softmax_config.h" "#define SHAPE_" "softmax specialises nothing"
cat >"$TMP/sm.c" <<'EOF'
#include "softmax_config.h"
#include <string.h>

/* The sidecar's grid: ceil_div(rows, BLOCK / TPR) * CLUSTER; any dims get a configuration. */
static int ok(struct softmax_config c, long long rows, const char *shape)
{
	long long per = c.block / c.tpr;

	return c.config >= 0 && !strcmp(c.shape_name, shape) &&
	       c.launch[0].grid[0] == (rows + per - 1) / per * c.cluster &&
	       c.launch[0].block[0] == c.block && c.launch[0].smem_bytes == 0;
}

int main(void)
{
	/* narrow's best is variant 2 (TPR=1024 ... CLUSTER=4), few's variant 1 (the fixture) */
	struct softmax_config a = softmax_select(60000, 100), b = softmax_select(64, 50000);

	return !(ok(a, 60000, "narrow") && a.tpr == 1024 && a.cluster == 4 && ok(b, 64, "few") &&
	         b.tpr == 32 && BLOCK == 128 && TPR == 32);
}
EOF
$CC -std=c11 $CFLAGS_T -I"$TMP" -o "$TMP/sm" "$TMP/sm.c" && "$TMP/sm" ||
	fail "softmax: preamble, select and its grid"
if [ -n "$NVCC" ]; then
	printf '#include "softmax_config.h"\n#include "softmax.cu"\n' >"$TMP/sm.cu"
	nvcc_c "$TMP/sm.cu" || fail "header + softmax.cu compile: $(head -c 800 "$TMP/nvcc.log")"
fi

# ------------------------------------------------------------------- gemm

family_db "$TMP/gemm.db" gemm configs/gemm.yaml \
	'[{"name": "sq512", "M": 512, "N": 512, "K": 512}, {"name": "ragged", "M": 777, "N": 1160, "K": 1000}]' \
	'BLOCK_M=64,BLOCK_N=128,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=3,SPLIT_K=2,SWIZZLE=8' \
	'BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,WARPS_M=2,WARPS_N=2,STAGES=3,SPLIT_K=1,SWIZZLE=8'
run_tuner --db "$TMP/gemm.db" export -o "$TMP/gemm_config.h"
expect_rc 0 "export of gemm"
cat >"$TMP/gm.c" <<'EOF'
#include "gemm_config.h"

int main(void)
{
	struct gemm_config c = gemm_rank(1, 777, 1160, 1000);

	/* ceil_div(M, BLOCK_M) * ceil_div(N, BLOCK_N), 1, SPLIT_K; STAGES * (BM + BN) * BK * 2 */
	return !(c.launch[0].grid[0] == 13 * 10 && c.launch[0].grid[2] == 2 &&
	         c.launch[0].block[0] == 128 && c.launch[0].smem_bytes == 3 * 192 * 32 * 2 &&
	         c.launch[0].smem_optin == 0 && TUNER_SMEM_BYTES == 36864 && !GEMM_SMEM_OPTIN);
}
EOF
$CC -std=c11 $CFLAGS_T -I"$TMP" -o "$TMP/gm" "$TMP/gm.c" && "$TMP/gm" || fail "gemm: its launch"
if [ -n "$NVCC" ]; then
	printf '#include "gemm_config.h"\n#include "gemm.cu"\n' >"$TMP/gm.cu"
	nvcc_c "$TMP/gm.cu" || fail "header + gemm.cu compile: $(head -c 800 "$TMP/nvcc.log")"
fi

# ------------------------------------- two launches and `when`: flash_attn

family_db "$TMP/fa.db" flash_attn configs/attention.yaml \
	'[{"name": "mission", "B": 1, "H": 8, "S": 512, "D": 64, "causal": 0}, {"name": "d128_causal", "B": 4, "H": 16, "S": 4096, "D": 128, "causal": 1}]' \
	'BLOCK_M=128,BLOCK_N=64,NUM_WARPS=8,STAGES=2,SWIZZLE=0,Q_REGS=0,SPLITS=1,COMBINE=0' \
	'BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=2,SWIZZLE=1,Q_REGS=0,SPLITS=4,COMBINE=0' \
	'BLOCK_M=64,BLOCK_N=64,NUM_WARPS=4,STAGES=2,SWIZZLE=1,Q_REGS=0,SPLITS=2,COMBINE=1'
run_tuner --db "$TMP/fa.db" export --k 3 --per-shape -o "$TMP/flash_attn_config.h"
expect_rc 0 "export of flash_attn"
cat >"$TMP/fa.c" <<'EOF'
#include "flash_attn_config.h"
#include <string.h>

int main(void)
{
	struct flash_attn_config r1 = flash_attn_rank(1, 2, 8, 1000, 64, 0),
	                         r2 = flash_attn_rank(2, 2, 8, 1000, 64, 0),
	                         r3 = flash_attn_rank(3, 2, 8, 1000, 64, 0),
	                         s = flash_attn_select(1, 8, 512, 128, 1);
	int fails = 0;

	/* SPLITS=1: the combine is skipped; SPLITS=4, COMBINE=0: it runs over B*H*S*D / 1024 */
	fails += !(FLASH_ATTN_NLAUNCHES == 2 && r1.launch[0].grid[0] == 8 && r1.launch[1].enabled == 0);
	fails += !(r2.launch[0].grid[0] == 16 * 4 && r2.launch[1].enabled == 1 &&
	           !strcmp(r2.launch[1].kernel, "flash_attn_combine") &&
	           r2.launch[1].grid[0] == (2 * 8 * 1000 * 64 + 1023) / 1024 &&
	           r2.launch[1].block[0] == 128);
	fails += !(r3.launch[1].enabled == 0 && r3.launch[0].grid[0] == 16 * 2);
	/* max((BM + 2 * ST * BN) * (D + 8 - 8 * SWIZZLE) * 2, COMBINE * BM * (D + 9) * 4) */
	fails += !(r1.launch[0].smem_bytes == (128 + 2 * 2 * 64) * (64 + 8) * 2);
	fails += !(r3.launch[0].smem_bytes == (64 + 2 * 2 * 64) * (64 + 8 - 8 * 1) * 2);
	/* causal is specialised: d128_causal is the only tuned shape with D=128, causal=1 */
	fails += !(s.config >= 0 && !strcmp(s.shape_name, "d128_causal"));
	fails += flash_attn_select(1, 8, 512, 128, 0).config != -1;
	return fails;
}
EOF
$CC -std=c11 $CFLAGS_T -I"$TMP" -o "$TMP/fa" "$TMP/fa.c" && "$TMP/fa" ||
	fail "flash_attn: two launches, when, specialised causal"
if [ -n "$NVCC" ]; then
	printf '#include "flash_attn_config.h"\n#include "flash_attn.cu"\n' >"$TMP/fa.cu"
	nvcc_c "$TMP/fa.cu" || fail "header + flash_attn.cu compile: $(head -c 800 "$TMP/nvcc.log")"
fi

# ------------------------------------------------------- finding the sidecar

# Away from the directory the run was made in, its config's relative path is not there.
cd "$TMP"
run_tuner --db "$TOP/$SWEEP" export
expect_rc 78 "export away from the run's directory"
expect_grep "$TMP/err" "cannot read run 1's config 'configs/sweep-h100.yaml'" "names the config"
expect_grep "$TMP/err" "--config FILE" "says how to give it"
run_tuner --db "$TOP/$SWEEP" --config "$TOP/configs/sweep-h100.yaml" export
expect_rc 0 "--config names it"
run_tuner --db "$TOP/$SWEEP" --config "$TOP/configs/softmax.yaml" export
expect_rc 78 "a config of another family"
expect_grep "$TMP/err" "is for the family 'softmax', run 1 tuned 'flash_fwd'" "names both families"
# JSON and T4 need no sidecar.
run_tuner --db "$TOP/$SWEEP" export --format json
expect_rc 0 "json needs no sidecar"
cd "$TOP"
finish
