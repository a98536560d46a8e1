# Helpers for the GPU scripts that read tuner's database (sourced by t-faults.sh, t-corpus.sh).

# query DB SQL: the rows, fields separated by tabs. Reads the database with the sqlite3 shell
# when there is one, else with python3's sqlite3 module.
query() {
	if command -v sqlite3 >/dev/null 2>&1; then
		sqlite3 -batch -separator "$(printf '\t')" "$1" "$2"
	elif command -v python3 >/dev/null 2>&1; then
		python3 - "$1" "$2" <<'PY'
import sqlite3
import sys

con = sqlite3.connect(sys.argv[1])
for row in con.execute(sys.argv[2]):
    print("\t".join("" if v is None else str(v) for v in row))
PY
	else
		echo "FAIL: neither the sqlite3 shell nor python3 to read the database" >&2
		return 1
	fi
}
