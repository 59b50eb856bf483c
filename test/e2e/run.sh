#!/usr/bin/env bash
# Cairn's real-editor end-to-end tests: code-server (VS Code 1.100 from npm) + Debian's headless chromium.
#
#   bash test/e2e/run.sh
#
# 1. install.sh: apt packages and code-server + playwright-core into .e2e/ (idempotent)
# 2. build the daemon and the extension, package the .vsix (with its bundled daemon)
# 3. seed a store with the CLI, then run the extension's mocha suite inside the real extension host
#    (extensionDevelopmentPath = this checkout's extension/)
# 4. install the .vsix into a fresh profile and store, and drive the UI with playwright-core
#    (Cairn view, memories, hover, Search Memories, a live CLI write), saving screenshots
# 5. in a third profile with an offline chat fixture, @cairn in the real Chat view with capture on, then the
#    session on the dashboard's Timeline (chat.js)
#
# Everything runs as this user with HOME, XDG_* and the store in a temporary folder: the tests never
# touch the real store or editor profile. Every process started (code-server, chromium, daemons) is
# stopped on exit. Last line: `e2e: N passed, N failed`; exit status non-zero on any failure.
#
# Artifacts (screenshots, logs, results.json): test-artifacts/e2e/ (CAIRN_E2E_ARTIFACTS to change).
# Knobs: CAIRN_E2E_CACHE (install cache, default .e2e/), CAIRN_E2E_KEEP=1 (keep the temp folder),
#        CAIRN_E2E_GREP (only mocha tests matching), CAIRN_E2E_SKIP_SMOKE=1 (UI smoke and dashboard),
#        CAIRN_E2E_SKIP_DASHBOARD=1, CAIRN_E2E_ONLY_DASHBOARD=1 (no UI smoke), CAIRN_E2E_SKIP_MOCHA=1,
#        CAIRN_E2E_SKIP_CHAT=1 (only the chat steps: CAIRN_E2E_SKIP_MOCHA=1 CAIRN_E2E_SKIP_SMOKE=1).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ARTIFACTS=${CAIRN_E2E_ARTIFACTS:-$REPO/test-artifacts/e2e}
T0=$SECONDS
PASSED=0
FAILED=0
lap() { echo "[e2e $((SECONDS - T0))s] $*"; }
fail_step() { FAILED=$((FAILED + 1)); lap "FAILED: $*"; }

RUN_ID="cairn-e2e-$$-$RANDOM"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-e2e.XXXXXX") # short: Unix socket paths live under it
PGIDS=()

# Every process this run starts carries CAIRN_E2E_RUN=$RUN_ID in its environment (daemons spawned
# detached by the extension included); cleanup finds them by that marker, never by name.
marked_pids() {
  local f pid
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}; pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qx "CAIRN_E2E_RUN=$RUN_ID" && echo "$pid"
  done
}
cleanup() {
  local pg pids
  for pg in "${PGIDS[@]}"; do kill -TERM -- "-$pg" 2>/dev/null; done
  for _ in 1 2 3 4 5 6; do
    pids=$(marked_pids)
    [ -z "$pids" ] && break
    kill -TERM $pids 2>/dev/null
    sleep 0.5
  done
  pids=$(marked_pids)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  # keep the logs that explain a failure
  mkdir -p "$ARTIFACTS/logs"
  find "$WORK" \( -name '*.log' -o -name 'results*.json' \) -size -20M -exec cp --backup=numbered {} "$ARTIFACTS/logs/" \; 2>/dev/null
  if [ -n "${CAIRN_E2E_KEEP:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
finish() {
  local rc=$?
  cleanup
  [ "$FAILED" -eq 0 ] && [ "$PASSED" -eq 0 ] && FAILED=1
  lap "done (wall time $((SECONDS - T0)) s); artifacts in $ARTIFACTS"
  echo "e2e: $PASSED passed, $FAILED failed"
  if [ "$FAILED" -gt 0 ] || [ "$rc" -ne 0 ]; then exit 1; fi
  exit 0
}
trap finish EXIT
trap 'exit 130' INT TERM

rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"

# 1. install (as the real user: npm cache and apt)
CS_DIR=$(bash "$HERE/install.sh" | tail -1) || { fail_step "install"; exit 1; }
CS="$CS_DIR/node_modules/.bin/code-server"
lap "installed: $("$CS" --config /dev/null --version 2>/dev/null | tail -1)"

# 2. build + package
(cd "$REPO" && npm run build -w daemon >"$WORK/build-daemon.log" 2>&1) || { tail -30 "$WORK/build-daemon.log"; fail_step "daemon build"; exit 1; }
(cd "$REPO" && npm run build -w extension >"$WORK/build-extension.log" 2>&1) || { tail -30 "$WORK/build-extension.log"; fail_step "extension build"; exit 1; }
(cd "$REPO" && npm run build -w webview >"$WORK/build-webview.log" 2>&1) || { tail -30 "$WORK/build-webview.log"; fail_step "dashboard webview build"; exit 1; }
VSIX="$WORK/cairn.vsix"
(cd "$REPO" && node extension/scripts/package.mjs --out "$VSIX" >"$WORK/package.log" 2>&1) || { tail -30 "$WORK/package.log"; fail_step "packaging the vsix"; exit 1; }
lap "built; $(grep '^package:' "$WORK/package.log" | tail -1)"

# 3. isolated environment
FREE_PORT() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
PORT=${CAIRN_E2E_PORT:-}
NODE_BIN=$(command -v node)
CLI="$REPO/daemon/bin/cairn.js"
# A profile = HOME + XDG dirs + code-server data + workspace. Two: one for the mocha run, one for the UI.
make_profile() { # $1 = name; prints nothing, sets P_* variables
  local p="$WORK/$1"
  mkdir -p "$p/home" "$p/run" "$p/ud/User" "$p/exts" "$p/ws/src" "$p/ws/.git"
  chmod 700 "$p/run"
  # files.autoSave off: code-server (a web build) saves 1 s after each edit by default, which would let a slow moment
  # save a test's unsaved edit (a revert then restores the edited text, an edit-conflict test finds nothing dirty).
  echo '{"files.autoSave":"off","extensions.autoCheckUpdates":false,"extensions.autoUpdate":false,"workbench.startupEditor":"none","telemetry.telemetryLevel":"off","workbench.tips.enabled":false,"security.workspace.trust.enabled":false,"workbench.enableExperiments":false,"chat.commandCenter.enabled":false}' >"$p/ud/User/settings.json"
  # A small project: a git remote (the project namespace is derived from it) and a source file to anchor to.
  printf '[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n\turl = https://example.com/acme/Sample-App.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n' >"$p/ws/.git/config"
  printf 'ref: refs/heads/main\n' >"$p/ws/.git/HEAD"
  cat >"$p/ws/src/billing.py" <<'PY'
"""Invoices."""

def invoice_total(lines):
    return round_half_even(sum(l.amount for l in lines))


def round_half_even(x):
    return round(x, 2)


def tax(amount, rate):
    return amount * rate
PY
}
# The environment of everything a profile runs (code-server, its extension host, daemons, the CLI).
profile_env() { # $1 = name
  local p="$WORK/$1"
  echo "HOME=$p/home XDG_DATA_HOME=$p/home/.local/share XDG_CONFIG_HOME=$p/home/.config XDG_CACHE_HOME=$p/home/.cache XDG_STATE_HOME=$p/home/.local/state XDG_RUNTIME_DIR=$p/run CAIRN_E2E_RUN=$RUN_ID CAIRN_ALLOW_REMOTE_MODELS=0"
}
run_in() { # $1 = profile, rest = command (no CAIRN_* overrides from the caller's shell leak in)
  local name=$1; shift
  env -u CAIRN_DB -u CAIRN_DAEMON -u CAIRN_NODE -u CAIRN_MODEL -u CAIRN_MODEL_PATH -u CAIRN_ALLOW_REMOTE_MODELS -u CAIRN_REVIEW_AGENT_WRITES -u CAIRN_SCOPE_ROOT -u CAIRN_ACTOR -u CAIRN_DISABLE_VEC $(profile_env "$name") "$@"
}
seed() { # $1 = profile: memories written from the CLI before the editor starts (no daemon runs yet)
  run_in "$1" "$NODE_BIN" "$CLI" add project.sample-app welcome "Welcome to Cairn: memories written from the CLI show up in this view." --kind fact --tags e2e,seed >/dev/null &&
    run_in "$1" "$NODE_BIN" "$CLI" add project.sample-app rounding-rule "Invoice totals round half-even (banker rounding): the auditors require it." --kind decision --tags billing --anchor src/billing.py:3-4 >/dev/null &&
    run_in "$1" "$NODE_BIN" "$CLI" add project.sample-app agent-guess "An agent thinks the tax rate is always 20%." --kind fact --proposed --actor agent:e2e >/dev/null &&
    run_in "$1" "$NODE_BIN" "$CLI" add user editor-pref "Prefers short commit messages in the imperative mood." --kind preference >/dev/null
}
start_server() { # $1 = profile, then VAR=value pairs for the extension host; code-server runs in its own session
  local name=$1 p="$WORK/$1" pg; shift
  # A fresh port for each server: a previous one still shutting down can never answer for this profile.
  PORT=${CAIRN_E2E_PORT:-$(FREE_PORT)}
  echo "bind-addr: 127.0.0.1:$PORT" >"$p/config.yaml"
  run_in "$name" "$@" setsid bash -c 'echo $$ > "$0"; exec "$@"' "$p/server.pgid" \
    "$CS" --config "$p/config.yaml" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
    --disable-workspace-trust --disable-getting-started-override --user-data-dir "$p/ud" --extensions-dir "$p/exts" "$p/ws" \
    >>"$p/code-server.log" 2>&1 &
  # Wait for the state (this server's pid file and its health check), up to 3 minutes on a loaded machine;
  # give up early if the server has already exited.
  for _ in $(seq 1 720); do
    if [ -s "$p/server.pgid" ]; then
      pg=$(cat "$p/server.pgid")
      curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break
      kill -0 -- "-$pg" 2>/dev/null || break
    fi
    sleep 0.25
  done
  [ -s "$p/server.pgid" ] && PGIDS+=("$(cat "$p/server.pgid")")
  curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || { tail -20 "$p/code-server.log"; return 1; }
}
stop_server() { # $1 = profile: returns once every process of the server's session is gone
  local pg; pg=$(cat "$WORK/$1/server.pgid" 2>/dev/null) || return 0
  kill -TERM -- "-$pg" 2>/dev/null
  for _ in $(seq 1 120); do kill -0 -- "-$pg" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL -- "-$pg" 2>/dev/null
}
count_results() { # $1 = results json ({passed, failed}); adds to the totals, echoes "P F"
  node -e "const r=require(process.argv[1]);console.log(r.passed+' '+r.failed)" "$1" 2>/dev/null
}

# 4. extension-host (mocha) tests, against this checkout's extension
if [ -z "${CAIRN_E2E_SKIP_MOCHA:-}" ]; then
  make_profile mocha
  # A second extension that uses Cairn's extension API (agents suite), installed into the profile.
  cp -r "$HERE/fixtures/api-consumer" "$WORK/mocha/exts/cairn-e2e.api-consumer-0.0.1"
  seed mocha || fail_step "seeding the store with the CLI"
  # The extension host inherits code-server's environment: the tests' parameters go there.
  if start_server mocha CAIRN_E2E_RESULTS="$WORK/results-mocha.json" CAIRN_E2E_SEEDED_KEY=welcome \
      CAIRN_E2E_EXPECT_PROJECT=project.sample-app CAIRN_E2E_EXPECT_DB="$WORK/mocha/home/.local/share/cairn/cairn.db" \
      CAIRN_E2E_GREP="${CAIRN_E2E_GREP:-}"; then
    lap "code-server up on 127.0.0.1:$PORT (mocha profile)"
    run_in mocha env NODE_PATH="$CS_DIR/node_modules" CS_BASE="http://127.0.0.1:$PORT" WS="$WORK/mocha/ws" \
      EXT_DEV="$REPO/extension" EXT_TESTS="$REPO/extension/out/test/index" ARTIFACTS="$ARTIFACTS" \
      "$NODE_BIN" "$HERE/runtests.js" 2>&1 | tee "$WORK/mocha.log" | grep -v '^\[runtests' | sed 's/^/  /'
    if r=$(count_results "$WORK/results-mocha.json"); then
      PASSED=$((PASSED + ${r% *})); FAILED=$((FAILED + ${r#* }))
      lap "extension-host tests: ${r% *} passed, ${r#* } failed"
      grep -h '^metrics:' "$WORK/mocha.log" | tail -1 | sed 's/^/  /'
    else
      fail_step "the extension-host tests did not report results (see $ARTIFACTS/logs)"
    fi
    stop_server mocha
  else
    fail_step "code-server did not start (mocha profile)"
  fi
fi

# 5. UI smoke against the installed .vsix (its bundled daemon, a fresh store)
if [ -z "${CAIRN_E2E_SKIP_SMOKE:-}" ]; then
  make_profile ui
  seed ui || fail_step "seeding the UI store with the CLI"
  if run_in ui "$CS" --config /dev/null --user-data-dir "$WORK/ui/ud" --extensions-dir "$WORK/ui/exts" --install-extension "$VSIX" >"$WORK/ui/install-extension.log" 2>&1; then
    if start_server ui; then
      lap "code-server up on 127.0.0.1:$PORT (UI profile, vsix installed)"
      if [ -z "${CAIRN_E2E_ONLY_DASHBOARD:-}" ]; then
      run_in ui env NODE_PATH="$CS_DIR/node_modules" CS_URL="http://127.0.0.1:$PORT/?folder=$WORK/ui/ws" ARTIFACTS="$ARTIFACTS" \
        RESULTS="$WORK/results-smoke.json" CLI="$CLI" NODE_BIN="$NODE_BIN" \
        "$NODE_BIN" "$HERE/smoke.js" 2>&1 | tee "$WORK/smoke.log" | sed 's/^/  /'
      if r=$(count_results "$WORK/results-smoke.json"); then
        PASSED=$((PASSED + ${r% *})); FAILED=$((FAILED + ${r#* }))
        lap "UI smoke: ${r% *} passed, ${r#* } failed; screenshots in $ARTIFACTS"
      else
        fail_step "the UI smoke did not report results"
      fi
      fi
      # the dashboard, driven through its UI in the same editor (CAIRN_E2E_SKIP_DASHBOARD=1 skips it)
      if [ -z "${CAIRN_E2E_SKIP_DASHBOARD:-}" ]; then
        run_in ui env NODE_PATH="$CS_DIR/node_modules" CS_URL="http://127.0.0.1:$PORT/?folder=$WORK/ui/ws" ARTIFACTS="$ARTIFACTS" \
          RESULTS="$WORK/results-dashboard.json" CLI="$CLI" NODE_BIN="$NODE_BIN" \
          "$NODE_BIN" "$HERE/dashboard.js" 2>&1 | tee "$WORK/dashboard.log" | sed 's/^/  /'
        if r=$(count_results "$WORK/results-dashboard.json"); then
          PASSED=$((PASSED + ${r% *})); FAILED=$((FAILED + ${r#* }))
          lap "dashboard UI: ${r% *} passed, ${r#* } failed; screenshots in $ARTIFACTS"
        else
          fail_step "the dashboard UI steps did not report results"
        fi
      fi
      stop_server ui
    else
      fail_step "code-server did not start (UI profile)"
    fi
  else
    tail -20 "$WORK/ui/install-extension.log"
    fail_step "installing the vsix into code-server"
  fi
fi

# 6. @cairn in the real Chat view, with capture on, through to the Timeline (its own profile and code-server):
#    the .vsix and the offline chat fixture (a default chat participant and a deterministic language model, so
#    the Chat view is on without a network or Copilot), packaged and installed like any extension
if [ -z "${CAIRN_E2E_SKIP_CHAT:-}" ]; then
  make_profile chat
  seed chat || fail_step "seeding the chat store with the CLI"
  cp -r "$HERE/fixtures/chat-model" "$WORK/chat-model"
  if (cd "$WORK/chat-model" && node "$REPO/node_modules/@vscode/vsce/vsce" package --out "$WORK/chat-model.vsix" \
        --allow-missing-repository --skip-license >"$WORK/chat/package-fixture.log" 2>&1) &&
     run_in chat "$CS" --config /dev/null --user-data-dir "$WORK/chat/ud" --extensions-dir "$WORK/chat/exts" \
       --install-extension "$VSIX" --install-extension "$WORK/chat-model.vsix" >"$WORK/chat/install-extension.log" 2>&1; then
    if start_server chat; then
      lap "code-server up on 127.0.0.1:$PORT (chat profile, vsix and chat fixture installed)"
      run_in chat env NODE_PATH="$CS_DIR/node_modules" CS_URL="http://127.0.0.1:$PORT/?folder=$WORK/chat/ws" ARTIFACTS="$ARTIFACTS" \
        RESULTS="$WORK/results-chat.json" CLI="$CLI" NODE_BIN="$NODE_BIN" \
        "$NODE_BIN" "$HERE/chat.js" 2>&1 | tee "$WORK/chat.log" | sed 's/^/  /'
      if r=$(count_results "$WORK/results-chat.json"); then
        PASSED=$((PASSED + ${r% *})); FAILED=$((FAILED + ${r#* }))
        lap "@cairn in the Chat view: ${r% *} passed, ${r#* } failed; screenshots in $ARTIFACTS"
      else
        fail_step "the chat UI steps did not report results"
      fi
      stop_server chat
    else
      fail_step "code-server did not start (chat profile)"
    fi
  else
    tail -20 "$WORK/chat/package-fixture.log" "$WORK/chat/install-extension.log" 2>/dev/null
    fail_step "packaging or installing the vsix and the chat fixture"
  fi
fi
