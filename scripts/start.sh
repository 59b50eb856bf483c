#!/usr/bin/env bash
# Cairn's main job from a fresh clone: install and build, then run the daemon on
# the default store (your per-user data directory) with the extension in a real
# editor — VS Code if `code` is on PATH, otherwise a local code-server on
# 127.0.0.1 (port $CAIRN_PORT, default 8080). Ctrl-C stops everything.
#   npm start [-- WORKSPACE_FOLDER]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CAIRN_BUILT=1 exec bash scripts/start-editor.sh "$@"
