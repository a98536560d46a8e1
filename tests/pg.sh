# A throwaway PostgreSQL server for the tests (sourced): initdb in a temporary directory, a Unix
# socket there and no TCP port, trust authentication for the role "tuner". As root (CI), the
# server runs as the "postgres" system user, which the postgresql package creates.
#
#   pg_start       starts it and exports TUNER_TEST_PG, the URL of its "postgres" database
#                  (empty, with the reason in TUNER_TEST_PG_WHY, when it cannot be started)
#   pg_createdb N  creates database N and prints its URL
#   pg_restart     crashes it and starts it again
#   pg_stop        stops it and removes the directory
pg_bindir() {
	for d in "${TUNER_PG_BINDIR:-}" "$(pg_config --bindir 2>/dev/null)" \
		$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
		[ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && {
			echo "$d"
			return 0
		}
	done
	return 1
}

# pg_as CMD...: run CMD as the server's owner.
pg_as() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_start() {
	TUNER_TEST_PG=
	TUNER_TEST_PG_WHY=
	export TUNER_TEST_PG TUNER_TEST_PG_WHY
	if ! PG_BIN=$(pg_bindir); then
		TUNER_TEST_PG_WHY="no PostgreSQL server programs (initdb, pg_ctl): install the postgresql package (scripts/install-deps)"
		return 1
	fi
	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		TUNER_TEST_PG_WHY="running as root without a 'postgres' user to run the server as"
		return 1
	fi
	PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tuner-pg.XXXXXX")
	[ "$(id -u)" -eq 0 ] && chown postgres "$PG_DIR"
	chmod 755 "$PG_DIR"
	if ! pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U tuner -A trust -E UTF8 --locale=C \
		--no-sync >"$PG_DIR/initdb.log" 2>&1; then
		TUNER_TEST_PG_WHY="initdb failed: $(tail -3 "$PG_DIR/initdb.log")"
		return 1
	fi
	# fsync off: a test server that dies loses nothing anyone keeps
	if ! pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -t 30 -l "$PG_DIR/server.log" \
		-o "-k $PG_DIR -c listen_addresses= -F -c max_connections=60" start >/dev/null 2>&1; then
		TUNER_TEST_PG_WHY="the server did not start: $(tail -3 "$PG_DIR/server.log")"
		return 1
	fi
	PG_URL_BASE="postgresql://tuner@/%s?host=$PG_DIR"
	TUNER_TEST_PG=$(printf "$PG_URL_BASE" postgres)
	export PG_BIN PG_DIR PG_URL_BASE
}

pg_createdb() {
	"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$TUNER_TEST_PG" -c "CREATE DATABASE \"$1\"" >/dev/null &&
		printf "$PG_URL_BASE\n" "$1"
}

# pg_restart: the server stops at once (as if it crashed) and starts again, with its data.
pg_restart() {
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 -l "$PG_DIR/server.log" \
		-o "-k $PG_DIR -c listen_addresses= -F -c max_connections=60" restart >/dev/null 2>&1
}

pg_stop() {
	[ -n "${PG_DIR:-}" ] || return 0
	[ -d "$PG_DIR/data" ] && pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$PG_DIR"
	PG_DIR=
}
