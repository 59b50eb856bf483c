#!/usr/bin/env bash
# Installs npm dependencies (only when package-lock.json changed) and builds the
# daemon and the extension. Used by scripts/start.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# onnxruntime-node's install script would fetch a CUDA add-on from GitHub; the CPU binary ships in the package.
export ONNXRUNTIME_NODE_INSTALL=skip
. scripts/node-headers.sh
stamp=node_modules/.cairn-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
echo "[setup] build"
npm run build --silent
