#!/usr/bin/env bash
# A throw-away PostgreSQL server for the PostgreSQL test suite (.ci/run uses it; so can you).
#   scripts/pg_local.sh start   -> prints the URL to export as PHILONT_TEST_PG_URL
#   scripts/pg_local.sh stop
# Installs Debian's postgresql + postgresql-contrib (pg_trgm, btree_gin) when no server is on the
# machine, and Debian's pgbouncer (the tests start their own, in transaction pooling mode).
# The cluster lives in $PHILONT_PG_DIR (default /tmp/philont-pg) and listens on 127.0.0.1 only.
set -euo pipefail
DIR="${PHILONT_PG_DIR:-/tmp/philont-pg}"
PORT="${PHILONT_PG_PORT:-54329}"
URL="postgresql+psycopg://philont:philont@127.0.0.1:${PORT}/philont"

bin_dir() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -z "$d" || ! -x "$d/initdb" ]]; then
        echo "installing PostgreSQL from Debian's packages..." >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 && apt-get install -y -qq postgresql postgresql-contrib >&2
        d="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
    fi
    echo "$d"
}

ensure_pgbouncer() {
    # The PostgreSQL tests start their own PgBouncer (tests/pg_support.py); the package only.
    if ! command -v pgbouncer >/dev/null 2>&1 && [[ ! -x /usr/sbin/pgbouncer ]]; then
        echo "installing PgBouncer from Debian's packages..." >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 && apt-get install -y -qq pgbouncer >&2
    fi
}

as_owner() {
    # PostgreSQL refuses to run as root: run its tools as the 'postgres' user then.
    if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    BIN="$(bin_dir)"
    ensure_pgbouncer
    if [[ ! -f "$DIR/PG_VERSION" ]]; then
        mkdir -p "$DIR"
        [[ "$(id -u)" == 0 ]] && chown postgres: "$DIR"
        as_owner "$BIN/initdb" -D "$DIR" -U postgres -A trust --no-sync \
            --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    fi
    if ! as_owner "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
        as_owner "$BIN/pg_ctl" -D "$DIR" -w -l "$DIR/server.log" \
            -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c fsync=off -c max_connections=100" start >/dev/null
    fi
    PSQL=("$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qtA -v ON_ERROR_STOP=1)
    if [[ -z "$(as_owner "${PSQL[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'philont'")" ]]; then
        as_owner "${PSQL[@]}" -c "CREATE ROLE philont LOGIN SUPERUSER PASSWORD 'philont'"
    fi
    if [[ -z "$(as_owner "${PSQL[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'philont'")" ]]; then
        as_owner "${PSQL[@]}" -c "CREATE DATABASE philont OWNER philont"
    fi
    echo "$URL"
    ;;
stop)
    BIN="$(bin_dir)"
    as_owner "$BIN/pg_ctl" -D "$DIR" -m fast stop >/dev/null 2>&1 || true
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
