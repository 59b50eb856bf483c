#!/usr/bin/env bash
# Installs what the real-editor tests and scripts/start-editor.sh need, idempotently (a second run
# does nothing): OS packages from apt, and code-server + playwright-core from npm into a cache folder.
#
#   bash test/e2e/install.sh            everything (the e2e tests drive Debian's headless chromium)
#   CAIRN_NO_BROWSER=1 bash ...          skip chromium (start-editor: you bring your own browser)
#
# Environment: CAIRN_E2E_CACHE (default <repo>/.e2e, gitignored), CS_VERSION (default 4.100.3, the
# newest code-server that runs on Node 20; it is VS Code 1.100.3).
# Prints the code-server install folder on its last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${CAIRN_E2E_CACHE:-$REPO/.e2e}
CS_VERSION=${CS_VERSION:-4.100.3}
log() { echo "[install] $*" >&2; }
. "$REPO/scripts/node-headers.sh" # native add-ons build against local Node headers, never downloaded ones

# 1. OS packages: a toolchain for code-server's native modules (kerberos needs the gssapi headers),
#    Debian's ripgrep (see 2), git and curl; chromium for the tests.
pkgs=(build-essential python3 pkg-config libkrb5-dev ripgrep git curl)
[ -z "${CAIRN_NO_BROWSER:-}" ] && pkgs+=(chromium)
if command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
      log "apt-get install ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq "${missing[@]}" >/dev/null
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      log "sudo apt-get install ${missing[*]}"
      sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      log "missing OS packages: ${missing[*]} (install them with apt-get as root, then rerun)"
      exit 1
    fi
  fi
else
  log "not a Debian-like system: make sure a C/C++ toolchain, python3, ripgrep and (for tests) chromium are installed"
fi

# 2. code-server + playwright-core, in their own npm project under the cache folder.
case "$CS_VERSION" in
  4.100.*) RG_PKG=1.15.11; RG_TAG=v13.0.0-10 ;;
  *) RG_PKG=; RG_TAG= ;;
esac
CS_DIR=$CACHE/code-server-$CS_VERSION
if [ ! -f "$CS_DIR/.installed" ] || [ ! -x "$CS_DIR/node_modules/.bin/code-server" ]; then
  log "installing code-server $CS_VERSION and playwright-core into $CS_DIR (about a minute)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR/tmp"
  # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache already holds the archive:
  # seed that cache with Debian's rg.
  if [ -n "$RG_PKG" ] && command -v rg >/dev/null; then
    mkdir -p "$CS_DIR/tmp/rgseed" "$CS_DIR/tmp/vscode-ripgrep-cache-$RG_PKG"
    cp "$(command -v rg)" "$CS_DIR/tmp/rgseed/rg"
    tar czf "$CS_DIR/tmp/vscode-ripgrep-cache-$RG_PKG/ripgrep-$RG_TAG-x86_64-unknown-linux-musl.tar.gz" -C "$CS_DIR/tmp/rgseed" rg
  fi
  # npm 11 runs dependency install scripts only when allowed: code-server's postinstall builds its
  # native modules (node-pty, kerberos, ...) for this Node.
  cat > "$CS_DIR/package.json" <<JSON
{ "name": "cairn-code-server", "private": true, "allowScripts": { "code-server": true } }
JSON
  # npm_config_yes: node-pty's postinstall runs `npx node-gyp` and must not prompt. npm_config_unsafe_perm:
  # code-server's postinstall refuses to run as root without it (npm 11 warns it is an unknown option).
  if ! (cd "$CS_DIR" && TMPDIR="$CS_DIR/tmp" npm_config_yes=true npm_config_unsafe_perm=true \
        npm install --no-audit --no-fund --no-save "code-server@$CS_VERSION" playwright-core@1 >"$CS_DIR/install.log" 2>&1); then
    tail -40 "$CS_DIR/install.log" >&2
    log "code-server install failed (log: $CS_DIR/install.log)"
    exit 1
  fi
  "$CS_DIR/node_modules/.bin/code-server" --config /dev/null --version >/dev/null 2>&1 || { log "code-server does not start"; exit 1; }
  rm -rf "$CS_DIR/tmp"
  touch "$CS_DIR/.installed"
fi
echo "$CS_DIR"
