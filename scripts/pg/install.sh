#!/usr/bin/env bash
# Make PostgreSQL server binaries with pgvector available and print their bin directory.
# Debian's PostgreSQL has no pgvector package, so this installs the `pgserver` wheel from PyPI
# (PostgreSQL 16 + pgvector) into a private folder with pip. Idempotent: a second run only prints.
# Override the folder with CAIRN_PG_HOME, or point CAIRN_PG_BIN at an existing bin directory
# (it must hold initdb, pg_ctl, postgres, and the vector extension in ../share).
set -euo pipefail
if [ -n "${CAIRN_PG_BIN:-}" ] && [ -x "$CAIRN_PG_BIN/postgres" ]; then echo "$CAIRN_PG_BIN"; exit 0; fi
# Outside any user's home: when tests run as root, the server runs as `nobody`, which must reach the binaries.
HOME_DIR=${CAIRN_PG_HOME:-${TMPDIR:-/tmp}/cairn-pgserver-$(id -u)}
BIN="$HOME_DIR/pgserver/pginstall/bin"
if [ ! -x "$BIN/postgres" ]; then
  PY=$(command -v python3 || command -v python || true)
  if [ -z "$PY" ]; then echo "scripts/pg/install.sh: python3 is needed to install pgserver" >&2; exit 1; fi
  mkdir -p "$HOME_DIR"
  # One installer at a time (parallel test files may all ask).
  exec 9>"$HOME_DIR.lock"
  flock 9
  if [ ! -x "$BIN/postgres" ]; then
    "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-warn-script-location --target "$HOME_DIR" 'pgserver==0.1.4' >&2
  fi
  chmod -R a+rX "$HOME_DIR"
fi
echo "$BIN"
