# The bf16 Hopper family (configs/h100-sm90-bf16.yaml): tuner check passes its baseline with the
# bf16 reference, its gates are the fp16 family's, and its builds carry -DSM90_BF16=1 and differ
# from the fp16 family's builds of the same configuration.
. tests/cli/lib.sh

BF=configs/h100-sm90-bf16.yaml
run_tuner --config $BF check
expect_rc 0 "the bf16 baseline passes every gate"
expect_grep "$TMP/out" "flash_fwd_sm90_bf16 BLOCK_N=128,CONSUMERS=2" "names the family and the baseline"
expect_grep "$TMP/out" "build D=64" "compiled for D=64"
expect_grep "$TMP/out" "build D=128" "compiled for D=128"
expect_grep "$TMP/out" "kernel 'attention_causal_ref_bf16'" "the bf16 reference"
expect_grep "$TMP/out" "0 bytes spilled (limit 0)" "no spill"

# The fp16 family's gates: a key split with turns is refused before compiling.
run_tuner --config $BF check --set KSPLIT=2
expect_rc 1 "KSPLIT=2 with PINGPONG=1 is rejected"
expect_grep "$TMP/out" "rejected by the constraint gate" "by the constraint gate"
expect_no_grep "$TMP/out" "build D=" "nothing compiled"

# The same configurations in both families: the bf16 builds have the option and other cubins.
for c in configs/h100-sm90.yaml $BF; do
	run_tuner --config $c run --generations 1 --population 2 --no-gpu
	expect_rc 0 "run --no-gpu of $c"
done
q() { sqlite3 "$TUNER_DB" "$1"; }
[ "$(q "SELECT count(*) FROM variants WHERE template_name = 'flash_fwd_sm90_bf16' AND
	' ' || options || ' ' LIKE '% -DSM90_BF16=1 %'")" = 2 ] ||
	fail "both bf16 variants are built with -DSM90_BF16=1: $(q 'SELECT template_name, options FROM variants')"
[ "$(q "SELECT count(*) FROM variants WHERE options LIKE '%SM90_BF16%'")" = 2 ] ||
	fail "no fp16 variant has the option"
pairs=$(q "SELECT a.key, b.key FROM builds a JOIN variants va ON va.id = a.variant_id
	JOIN builds b ON b.spec = a.spec JOIN variants vb ON vb.id = b.variant_id
	WHERE va.template_name = 'flash_fwd_sm90' AND vb.template_name = 'flash_fwd_sm90_bf16'
	AND va.params = vb.params AND a.sanitize = 0 AND b.sanitize = 0")
[ -n "$pairs" ] || fail "the families share a configuration (the seeded baseline)"
echo "$pairs" | while IFS='|' read -r a b; do
	[ "$a" != "$b" ] || echo "same cache key $a"
	cmp -s "$TUNER_CACHE/$a.cubin" "$TUNER_CACHE/$b.cubin" && echo "same cubin $a $b"
done >"$TMP/same"
[ ! -s "$TMP/same" ] || fail "bf16 and fp16 builds of one configuration differ: $(cat "$TMP/same")"
finish
