#!/usr/bin/env bash
# A throw-away PostgreSQL + pgvector server for tests and benchmarks.
#   scripts/pg/server.sh start DIR [PORT]   initdb into DIR/data, listen on 127.0.0.1:PORT (default 5432 + random)
#                                           and on a Unix socket in DIR; prints "port=N socket=DIR"
#   scripts/pg/server.sh stop DIR           stop it (fast shutdown) and leave DIR for the caller to remove
# CAIRN_PG_OPTIONS adds server settings (bench/team.ts sizes shared_buffers and maintenance_work_mem with it).
# CAIRN_PG_GLIBC_TUNABLES (default below; empty: glibc's defaults) is the server's GLIBC_TUNABLES: glibc gives the
# memory a backend frees back to the system at once, and an HNSW insert allocates and frees a few MB, so each team
# write with a vector page-faulted its memory in again (~40% of the server's CPU per write; docs/team.md, server sizing).
# The superuser is `postgres` (trusted on the socket and loopback); every other role logs in with a password.
# Run as root, the server runs as `nobody` (PostgreSQL refuses to run as root).
set -euo pipefail
cmd=${1:?start or stop}; DIR=${2:?directory}
BIN=$(bash "$(dirname "$0")/install.sh")
as_server() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    PORT=${3:-$((20000 + RANDOM % 20000))}
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
    # (as root, every folder above DIR must be traversable by nobody: use a fresh folder under /tmp-like places)
    if [ "$(id -u)" = 0 ]; then chown nobody:nogroup "$DIR"; fi
    if [ ! -f "$DIR/data/PG_VERSION" ]; then
      as_server "$BIN/initdb" -D "$DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale >"$DIR/initdb.log" 2>&1 ||
        { cat "$DIR/initdb.log" >&2; exit 1; }
      cat >"$DIR/data/pg_hba.conf" <<HBA
local all postgres trust
local all all scram-sha-256
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
    fi
    export GLIBC_TUNABLES=${CAIRN_PG_GLIBC_TUNABLES-glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432}
    as_server "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB ${CAIRN_PG_OPTIONS:-}" start >/dev/null ||
      { cat "$DIR/server.log" >&2; exit 1; }
    "$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -d postgres -qAt -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
    echo "port=$PORT socket=$DIR"
    ;;
  stop)
    DIR=$(cd "$DIR" && pwd)
    [ -f "$DIR/data/postmaster.pid" ] && as_server "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop >/dev/null || true
    ;;
  *) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
