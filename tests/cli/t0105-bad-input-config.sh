# Bad configs, sidecars and problem files that once hung, ate memory or passed: deep nesting,
# /dev/zero, shapes beyond the launch's limits, an expression no point can evaluate; and a
# live database replayed. Each is refused quickly with file:line and exit 78, nothing written.
. tests/cli/lib.sh

DB="$TMP/new.db"
nothing_written() {
	[ ! -e "$DB" ] || fail "$1 created the database"
	rm -f "$DB"
}
# refused CONFIG PATTERN DESCRIPTION: check and run exit 78 within 5 s, naming PATTERN
refused() {
	for c in check "run --no-gpu"; do
		rc=0
		timeout 5 "$TUNER" --db "$DB" --config "$1" $c >"$TMP/out" 2>"$TMP/err" || rc=$?
		expect_rc 78 "$3 ($c)"
		expect_grep "$TMP/err" "$2" "$3 ($c): the message"
		nothing_written "$3 ($c)"
	done
}

# A copy of the transpose family and its job, to break.
mkdir -p "$TMP/k"
cp kernels/templates/transpose.cu kernels/reference/transpose_ref.cu "$TMP/k/"
sed 's#\.\./problems/transpose.yaml#problem.yaml#' kernels/templates/transpose.yaml \
	>"$TMP/k/transpose.yaml"
sed 's#\.\./reference/##' kernels/problems/transpose.yaml >"$TMP/k/problem.yaml"
sed "s#^template: .*#template: $TMP/k/transpose.yaml#" configs/transpose.yaml >"$TMP/job.yaml"
cp -r "$TMP/k" "$TMP/good"

# 400 KB of nested brackets, in the config, the sidecar and the problem file (took 16 s).
python3 -c "print('a: ' + '[' * 100000 + ']' * 100000)" >"$TMP/deep.yaml"
refused "$TMP/deep.yaml" "$TMP/deep.yaml:1:67: collections nested deeper than 64 levels" \
	"a deeply nested config"
python3 -c "print('junk: ' + '{a: ' * 65 + '1' + '}' * 65)" >>"$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "collections nested deeper than 64 levels" "a deeply nested sidecar"
cp "$TMP/good/transpose.yaml" "$TMP/k/"
python3 -c "print('junk:\n' + ''.join('  ' * i + '- \n' for i in range(1, 70)))" \
	>>"$TMP/k/problem.yaml"
refused "$TMP/job.yaml" "$TMP/k/problem.yaml:" "a deeply nested problem file"
cp "$TMP/good/problem.yaml" "$TMP/k/"
# 64 levels are still read
python3 -c "print('junk: ' + '[' * 63 + ']' * 63)" >>"$TMP/job.yaml"
run_tuner --config "$TMP/job.yaml" check --no-compile
expect_no_grep "$TMP/err" "nested" "64 levels are allowed"
sed -i '/^junk:/d' "$TMP/job.yaml"

# 60000 anchors and as many aliases (1.2 MB): libyaml compares each with every anchor before it
# (took 24 s).
python3 - >"$TMP/anchors.yaml" <<'EOF'
n = 60000
print('a: [' + ', '.join('&a%d 1' % i for i in range(n)) + ']')
print('b: [' + ', '.join(['*a%d' % (n - 1)] * n) + ']')
EOF
refused "$TMP/anchors.yaml" "$TMP/anchors.yaml:1:795: more than 100 anchors ('&a100')" \
	"60000 anchors"
# The sidecar's constraints as 250000 aliases of one of 2 KB (1 MB): each was parsed (took 81 s).
sed -i '/^constraints:/,/^smem_bytes:/{/^smem_bytes:/!d}' "$TMP/k/transpose.yaml"
python3 - >>"$TMP/k/transpose.yaml" <<'EOF'
print('constraints: [&c "' + ' + '.join(['TILE'] * 300) + ' > 0"' + ', *c' * 250000 + ']')
EOF
refused "$TMP/job.yaml" "$TMP/k/transpose.yaml:20:34047: aliases repeat more than 16 MiB of the document" \
	"250000 aliases of a constraint"
cp "$TMP/good/transpose.yaml" "$TMP/k/"

# 70000 params (1.1 MB), and a param of 300000 values with one twice (2.3 MB): duplicates were
# looked for in pairs (took 39 s and 12 s).
python3 - "$TMP/k/transpose.yaml" <<'EOF'
import sys
text = open(sys.argv[1]).read()
keys = ''.join('  P%07d: [1]\n' % i for i in range(70000))
open(sys.argv[1] + '.keys', 'w').write(text.replace('params:\n', 'params:\n' + keys))
values = ', '.join(str(i) for i in range(16, 300000))
open(sys.argv[1] + '.values', 'w').write(text.replace('MINB: [1, 2, 4, 8]',
	'MINB: [1, 2, 4, 8, ' + values + ', 16]'))
EOF
mv "$TMP/k/transpose.yaml.keys" "$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "$TMP/k/transpose.yaml:40:3: more than 32 params" "70000 params"
mv "$TMP/k/transpose.yaml.values" "$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "$TMP/k/transpose.yaml:12:2288858: duplicate value 16 in param 'MINB'" \
	"a param of 300000 values"
cp "$TMP/good/transpose.yaml" "$TMP/k/"

# The constraints as one flow list of 31000 expressions, each split at its comma (560 KB), the
# last naming no param: each was rejoined from a position found from the start of the file, and
# the rest of the list moved (took 13 s); 100000 '(' never closed (1 MB) were each followed to
# the end of the list (took 41 s).
sed -i '/^constraints:/,/^smem_bytes:/{/^smem_bytes:/!d}' "$TMP/k/transpose.yaml"
cp "$TMP/k/transpose.yaml" "$TMP/k/transpose.yaml.open"
python3 - >>"$TMP/k/transpose.yaml" <<'EOF'
print('constraints: [' + 'max(TILE, 1) > 0, ' * 31000 + 'max(TILE, NOPE) > 0]')
EOF
refused "$TMP/job.yaml" "$TMP/k/transpose.yaml:20:558025: unknown name 'NOPE' in 'constraints'" \
	"31000 expressions split at a comma"
mv "$TMP/k/transpose.yaml.open" "$TMP/k/transpose.yaml"
python3 - >>"$TMP/k/transpose.yaml" <<'EOF'
print('constraints: [' + 'max(TILE, ' * 100000 + '1]')
EOF
refused "$TMP/job.yaml" \
	"$TMP/k/transpose.yaml:20:23: cannot parse 'constraints': expected ',' or ')' in call to 'max'" \
	"100000 '(' never closed"
cp "$TMP/good/transpose.yaml" "$TMP/k/"

# A layout of 60000 buffers (3.7 MB): each name was compared with every one before it (took 12 s).
python3 - "$TMP/k/transpose.yaml" <<'EOF'
import sys
text = open(sys.argv[1]).read()
bufs = ''.join('  - {name: b%05d, offset: 0, stride: 4, align: 4, access: x}\n' % i
	for i in range(60000))
open(sys.argv[1], 'w').write(text.replace('layout: []', 'layout:\n' + bufs + '#'))
EOF
refused "$TMP/job.yaml" "$TMP/k/transpose.yaml:85:5: more than 64 buffers in 'layout'" \
	"a layout of 60000 buffers"
cp "$TMP/good/transpose.yaml" "$TMP/k/"

# A problem's dim of 1 MB and a shape's key of 1 MB beside it: the two were compared for a "did you
# mean" (did not end in 100 s).
mkdir -p "$TMP/ed"
cp "$TMP/k/transpose.cu" "$TMP/ed/k.cu"
python3 - "$TMP/ed" <<'EOF'
import sys
d = sys.argv[1]
open(d + '/problem.yaml', 'w').write('dims: [D' + 'a' * 1000000 + ']\n'
	'buffers: {X: {dtype: f32, count: 1, role: out}}\nargs: [X]\n'
	'reference: {source: k.cu, kernel: k, grid: [1], block: [32]}\n')
open(d + '/side.yaml', 'w').write('name: x\nsource: k.cu\nkernel: k\nproblem: problem.yaml\n'
	'params: {P: [1]}\nlaunch: {grid: [1], block: [32]}\nbaseline: {P: 1}\n')
open(d + '/job.yaml', 'w').write('template: side.yaml\narch: sm_90\nshapes:\n'
	'  - name: a\n    ? D' + 'b' * 1000000 + '\n    : 1\n')
EOF
refused "$TMP/ed/job.yaml" "$TMP/ed/job.yaml:5:7: unknown dim 'Dbbbbbbbbb" "a dim and a key of 1 MB"

# /dev/zero as the config, the template or the reference: a size limit, not all memory.
refused /dev/zero "cannot read config '/dev/zero': larger than 4 MiB" "/dev/zero as the config"
sed "s#^template: .*#template: /dev/zero#" "$TMP/job.yaml" >"$TMP/zero-side.yaml"
refused "$TMP/zero-side.yaml" "cannot read template '/dev/zero': larger than 64 MiB" \
	"/dev/zero as the sidecar (a sidecar's limit is 64 MiB)"
sed -i 's#^source: .*#source: /dev/zero#' "$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "cannot read source '/dev/zero'" "/dev/zero as the template"
cp "$TMP/good/transpose.yaml" "$TMP/k/"
sed -i 's#source: transpose_ref.cu#source: /dev/zero#' "$TMP/k/problem.yaml"
refused "$TMP/job.yaml" "/dev/zero" "/dev/zero as the reference"
cp "$TMP/good/problem.yaml" "$TMP/k/"

# Shapes beyond what the problem allows: 2^63-1, and a grid past 65535 blocks in y.
sed 's#^  - {name: ragged.*#  - {name: huge, rows: 9223372036854775807, cols: 8}#' \
	"$TMP/job.yaml" >"$TMP/huge.yaml"
refused "$TMP/huge.yaml" "shape 'huge'" "rows of 2^63-1"
sed 's#^  - {name: ragged.*#  - {name: high, rows: 600000, cols: 8}#' "$TMP/job.yaml" >"$TMP/tall.yaml"
refused "$TMP/tall.yaml" "65535" "a grid past 65535 blocks in y"
tpl="$TOP/kernels/templates/flash_fwd.yaml"
printf 'template: %s\narch: sm_90\nshapes:\n  - {name: wide, B: 1, H: 70000, S: 512, D: 64}\n' \
	"$tpl" >"$TMP/h.yaml"
refused "$TMP/h.yaml" "$TMP/h.yaml:4:" "attention's H beyond 65535"
printf 'template: %s\narch: sm_90\nshapes:\n  - {name: long, B: 1, H: 8, S: 9223372036854775807, D: 64}\n' \
	"$tpl" >"$TMP/s.yaml"
refused "$TMP/s.yaml" "$TMP/s.yaml:4:" "attention's S of 2^63-1"

# An expression no point of the space can evaluate is a config error naming it, before a run
# row is written; one that fails at some points only rejects those variants.
sed -i 's#^  - TILE % RPT == 0.*#&\n  - TILE / (RPT - RPT) > 0#' "$TMP/k/transpose.yaml"
line=$(grep -n 'RPT - RPT' "$TMP/k/transpose.yaml" | cut -d: -f1)
refused "$TMP/job.yaml" \
	"$TMP/k/transpose.yaml:$line: constraint 'TILE / (RPT - RPT) > 0' cannot be evaluated at any point of the space for shape 'sq4096': division by zero" \
	"a constraint that divides by zero everywhere"
cp "$TMP/good/transpose.yaml" "$TMP/k/"
sed -i 's#^smem_bytes: .*#smem_bytes: TILE * (TILE + PAD) * 4 / (MINB - MINB)#' "$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "smem_bytes 'TILE * (TILE + PAD) * 4 / (MINB - MINB)'" "smem_bytes"
cp "$TMP/good/transpose.yaml" "$TMP/k/"
sed -i 's#{i32: rows}, {i32: cols}\]$#{i32: rows}, {i32: cols / (rows - rows)}]#' \
	"$TMP/k/problem.yaml"
refused "$TMP/job.yaml" "$TMP/k/problem.yaml:" "an argument that divides by zero"
cp "$TMP/good/problem.yaml" "$TMP/k/"
# the same expression failing for one shape only: that shape is named
sed -i 's#^  - TILE % RPT == 0.*#&\n  - TILE / (rows - 3001) != 0 || 1#' "$TMP/k/transpose.yaml"
refused "$TMP/job.yaml" "for shape 'ragged': division by zero" "fails on one shape"
cp "$TMP/good/transpose.yaml" "$TMP/k/"
# at some points only (RPT = 1): a per-variant rejection, and the run goes on
sed -i 's#^  - TILE % RPT == 0.*#&\n  - TILE / (RPT - 1) >= 0#' "$TMP/k/transpose.yaml"
run_tuner --db "$DB" --config "$TMP/job.yaml" sweep --no-gpu
expect_rc 0 "an expression failing at some points"
n=$(sqlite3 "$DB" "SELECT count(*) FROM gates WHERE gate = 'constraint'
	AND reason LIKE '%TILE / (RPT - 1)%division by zero%'")
[ "$n" -ge 1 ] || fail "the points where it fails are rejected, with the reason: $n"
m=$(sqlite3 "$DB" "SELECT count(*) FROM evals WHERE outcome = 'ok'")
[ "$m" -ge 1 ] || fail "the other variants pass: $m"
rm -f "$DB"
cp "$TMP/good/transpose.yaml" "$TMP/k/"

# A recording replayed while another process writes it: a consistent snapshot, the same
# answers as from a quiet copy, no "malformed".
FIX="$TOP/tests/fixtures/sweep-h100.db"
cp "$FIX" "$TMP/live.db"
cp "$FIX" "$TMP/quiet.db"
ARGS="--config configs/default.yaml --generations 3 --population 12 --seed 7"
TUNER_DB="$TMP/a.db" run_tuner run --replay "$TMP/quiet.db" $ARGS
expect_rc 0 "replay of a quiet recording"
sqlite3 "$TMP/live.db" "CREATE TABLE churn(x BLOB)"
(
	i=0
	while [ ! -e "$TMP/stop" ] && [ $i -lt 2000 ]; do
		sqlite3 "$TMP/live.db" "INSERT INTO churn SELECT randomblob(8192) FROM
			(SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3); DELETE FROM churn
			WHERE rowid % 2 = 0; UPDATE runs SET notes = notes WHERE 0" 2>/dev/null
		i=$((i + 1))
	done
) &
writer=$!
TUNER_DB="$TMP/b.db" run_tuner run --replay "$TMP/live.db" $ARGS
touch "$TMP/stop"
wait $writer
expect_rc 0 "replay of a recording being written"
expect_no_grep "$TMP/err" "malformed" "no torn read"
q=$(sqlite3 "$TMP/a.db" "SELECT v.params, e.outcome FROM evals e JOIN variants v ON v.id = e.variant_id ORDER BY 1" | md5sum)
l=$(sqlite3 "$TMP/b.db" "SELECT v.params, e.outcome FROM evals e JOIN variants v ON v.id = e.variant_id ORDER BY 1" | md5sum)
[ "$q" = "$l" ] || fail "the live replay gives the verdicts of the quiet one"
finish
