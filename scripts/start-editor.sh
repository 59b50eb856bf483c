#!/usr/bin/env bash
# Start an editor with the Cairn extension, connected to the Cairn daemon on the default store.
#
#   bash scripts/start-editor.sh [FOLDER]        FOLDER defaults to the current directory
#
# - builds the daemon and the extension and packages the .vsix (with its own copy of the daemon);
# - VS Code desktop (`code` on PATH): installs the .vsix and opens FOLDER; the extension starts the
#   daemon itself (detached, shared by every window) when none runs;
# - otherwise code-server (VS Code in the browser, installed once into .e2e/ from npm): starts the daemon
#   on the default store, installs the .vsix into a Cairn-specific code-server profile and serves FOLDER
#   on http://127.0.0.1:PORT behind code-server's password login. Ctrl-C stops code-server and the daemon
#   this script started (a daemon that was already serving the store keeps serving).
#
# Environment:
#   CAIRN_EDITOR_PORT (or CAIRN_PORT, PORT)  code-server port, default 8080
#   CAIRN_EDITOR=code|code-server force one editor (default: code when on PATH, else code-server)
#   CAIRN_DB                      store file (default: the per-user store, XDG_DATA_HOME/cairn/cairn.db)
# Needs Node.js >= 20 and `npm install` run in the repository. code-server is bound to 127.0.0.1 and asks for a
# password (anyone with a shell on this machine could otherwise open an editor and a terminal as you): a random
# one is generated on first use, stored in <profile>/password (mode 0600) and printed once.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
FOLDER=$(cd "${1:-$PWD}" && pwd)
PORT=${CAIRN_EDITOR_PORT:-${CAIRN_PORT:-${PORT:-8080}}}
NODE=$(command -v node) || { echo "start-editor: Node.js >= 20 is required" >&2; exit 1; }
say() { echo "[cairn] $*"; }

[ -d "$REPO/node_modules" ] || { echo "start-editor: run \`npm install\` in $REPO first" >&2; exit 1; }
major=$("$NODE" -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "start-editor: Node.js $("$NODE" --version) is too old; Cairn needs 20 or newer" >&2; exit 1; }

# 1. build and package, each only when its inputs changed (npm start has just built: CAIRN_BUILT=1)
if [ -z "${CAIRN_BUILT:-}" ]; then
  say "building the daemon and the extension…"
  (cd "$REPO" && npm run --silent build -w daemon && npm run --silent build -w extension) >/dev/null
fi
VERSION=$("$NODE" -p "require('$REPO/extension/package.json').version")
VSIX="$REPO/extension/cairn-$VERSION.vsix"
# What the .vsix is made of: the built bundles, the models, the manifest and the locked dependencies, by content
# (a rebuild rewrites unchanged files), so a start with nothing changed packages nothing.
fingerprint() {
  (cd "$REPO" && find extension/out extension/package.json extension/scripts/package.mjs daemon/bin daemon/dist daemon/models \
    package-lock.json -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
FP=$(fingerprint)
if [ -f "$VSIX" ] && [ "$(cat "$VSIX.inputs" 2>/dev/null)" = "$FP" ]; then
  say "the extension package is up to date ($(basename "$VSIX"))"
else
  (cd "$REPO" && "$NODE" extension/scripts/package.mjs --out "$VSIX" | tail -1)
  echo "$FP" >"$VSIX.inputs"
fi

EDITOR_KIND=${CAIRN_EDITOR:-}
if [ -z "$EDITOR_KIND" ]; then
  if command -v code >/dev/null 2>&1; then EDITOR_KIND=code; else EDITOR_KIND=code-server; fi
fi

# 2a. VS Code desktop
if [ "$EDITOR_KIND" = code ]; then
  code --install-extension "$VSIX" --force
  say "opening $FOLDER in VS Code; the Cairn view is in the activity bar (the extension starts the daemon)."
  exec code "$FOLDER"
fi

# 2b. code-server
CS_DIR=$(CAIRN_NO_BROWSER=1 bash "$REPO/test/e2e/install.sh" | tail -1)
CS="$CS_DIR/node_modules/.bin/code-server"
PROFILE=${XDG_DATA_HOME:-$HOME/.local/share}/cairn/code-server
umask 077
mkdir -p "$PROFILE/data/User" "$PROFILE/extensions"
chmod 700 "$PROFILE"
PASSWORD_FILE="$PROFILE/password"
NEW_PASSWORD=
if [ ! -s "$PASSWORD_FILE" ]; then
  "$NODE" -e 'process.stdout.write(require("crypto").randomBytes(18).toString("base64url"))' >"$PASSWORD_FILE"
  NEW_PASSWORD=1
fi
chmod 600 "$PASSWORD_FILE"
[ -f "$PROFILE/data/User/settings.json" ] ||
  echo '{"workbench.startupEditor":"none","telemetry.telemetryLevel":"off","extensions.autoCheckUpdates":false}' >"$PROFILE/data/User/settings.json"
echo "bind-addr: 127.0.0.1:$PORT" >"$PROFILE/config.yaml"
# Install the package into the profile unless this very package is installed there already.
INSTALLED_MARK="$PROFILE/extensions/.cairn-installed"
if [ "$(cat "$INSTALLED_MARK" 2>/dev/null)" = "$FP" ] && compgen -G "$PROFILE/extensions/cairn.cairn-$VERSION*" >/dev/null; then
  say "the extension is installed in the editor profile"
else
  "$CS" --config "$PROFILE/config.yaml" --user-data-dir "$PROFILE/data" --extensions-dir "$PROFILE/extensions" \
    --install-extension "$VSIX" --force >/dev/null
  echo "$FP" >"$INSTALLED_MARK"
fi
if "$NODE" -e "require('net').connect($PORT,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then
  echo "start-editor: port $PORT is in use; set CAIRN_EDITOR_PORT to another port" >&2
  exit 1
fi

DAEMON_PID=
CS_PGID=
stop() {
  set +e
  trap - EXIT INT TERM
  [ -n "$CS_PGID" ] && kill -TERM -- "-$CS_PGID" 2>/dev/null
  if [ -n "$DAEMON_PID" ]; then
    kill -TERM "$DAEMON_PID" 2>/dev/null
    for _ in $(seq 1 20); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.25; done
  fi
  say "stopped."
}
trap stop EXIT
trap 'exit 130' INT TERM

# The daemon on the default store (or $CAIRN_DB): reuse a running one, else start one for this session.
daemon_pid() { # pid of the daemon serving the store, from `cairn status` (which goes through it when it runs)
  "$NODE" "$REPO/daemon/bin/cairn.js" status --json 2>/dev/null | "$NODE" -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { const p = JSON.parse(s).daemon?.pid; if (p) console.log(p); } catch {} });'
}
if [ -n "$(daemon_pid)" ]; then
  say "using the running Cairn daemon (pid $(daemon_pid))"
else
  LOG=${XDG_STATE_HOME:-$HOME/.local/state}/cairn/daemon.log
  mkdir -p "$(dirname "$LOG")"
  # The Node flags and environment every daemon starter passes (DAEMON_NODE_FLAGS and DAEMON_ENV in
  # daemon/src/client/ensure-daemon.ts; a tidy test keeps them the same). Variables of your own win.
  MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2} MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-131072} "$NODE" --max-semi-space-size=2 "$REPO/daemon/bin/cairn.js" daemon >>"$LOG" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 1 80); do [ -n "$(daemon_pid)" ] && break; kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.25; done
  if [ -z "$(daemon_pid)" ]; then
    tail -20 "$LOG" >&2
    echo "start-editor: the Cairn daemon did not start (log: $LOG)" >&2
    DAEMON_PID=
    exit 1
  fi
  say "started the Cairn daemon (pid $DAEMON_PID, log $LOG)"
fi

PASSWORD=$(cat "$PASSWORD_FILE") setsid bash -c 'echo $$ > "$0"; exec "$@"' "$PROFILE/code-server.pgid" \
  "$CS" --config "$PROFILE/config.yaml" --auth password --bind-addr "127.0.0.1:$PORT" --disable-telemetry \
  --disable-update-check --disable-workspace-trust --user-data-dir "$PROFILE/data" --extensions-dir "$PROFILE/extensions" \
  "$FOLDER" >>"$PROFILE/code-server.log" 2>&1 &
CS_BG=$!
for _ in $(seq 1 120); do
  [ -s "$PROFILE/code-server.pgid" ] && curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$CS_BG" 2>/dev/null || break
  sleep 0.25
done
CS_PGID=$(cat "$PROFILE/code-server.pgid" 2>/dev/null || true)
rm -f "$PROFILE/code-server.pgid"
if ! curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then
  tail -20 "$PROFILE/code-server.log" >&2
  echo "start-editor: code-server did not start (log: $PROFILE/code-server.log)" >&2
  exit 1
fi
URL="http://127.0.0.1:$PORT/?folder=$("$NODE" -p 'encodeURIComponent(process.argv[1])' "$FOLDER")"
say "Cairn is ready in code-server: $URL"
if [ -n "$NEW_PASSWORD" ]; then
  say "code-server password (shown once; kept in $PASSWORD_FILE, mode 0600): $(cat "$PASSWORD_FILE")"
else
  say "code-server password: see $PASSWORD_FILE (mode 0600)"
fi
say "open it in a browser; the Cairn view is in the activity bar. Ctrl-C stops code-server and the daemon."
wait "$CS_BG"
