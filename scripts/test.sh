#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up, type checks, unit and
# integration tests (node:test), the Python example, and the real-editor
# end-to-end tests (code-server + headless Chromium). Ends with one summary
# line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# Tests never touch the user's real store, sockets or model cache, and never go to the network for models.
SANDBOX=$(mktemp -d "${TMPDIR:-/tmp}/cairn-tests-XXXXXX")
trap 'rm -rf "$SANDBOX"' EXIT
export XDG_DATA_HOME="$SANDBOX/data" XDG_CACHE_HOME="$SANDBOX/cache" XDG_RUNTIME_DIR="$SANDBOX/run" XDG_CONFIG_HOME="$SANDBOX/config"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
export CAIRN_MODEL=builtin CAIRN_ALLOW_REMOTE_MODELS=0

passed=0 failed=0
count() { # add the "# pass N" / "# fail N" / "# cancelled N" lines of a node:test run
  local p f c
  p=$(grep -E '^# pass [0-9]+' "$1" | tail -1 | awk '{print $3}')
  f=$(grep -E '^# fail [0-9]+' "$1" | tail -1 | awk '{print $3}')
  # A test cancelled by its parent (a failed before() hook, a suite timeout) did not pass: it counts as failed.
  c=$(grep -E '^# cancelled [0-9]+' "$1" | tail -1 | awk '{print $3}')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${c:-0}))
}

echo "== type check (tsc --strict)"
if npm run typecheck --silent; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "type check failed"; fi

echo "== lint (eslint + typescript-eslint, eslint.config.mjs)"
if npm run lint --silent; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "lint failed"; fi

echo "== format (prettier --check, .prettierrc)"
if npm run format:check --silent >"$SANDBOX/format.log" 2>&1; then passed=$((passed + 1)); else failed=$((failed + 1)); grep -F "[warn]" "$SANDBOX/format.log" | head -20; echo "format check failed: run npm run format"; fi

echo "== PostgreSQL + pgvector for the team-memory tests (pip: pgserver; scripts/pg/)"
bash scripts/pg/install.sh >/dev/null || echo "could not install the pgserver wheel; the team-memory tests will fail"

echo "== unit and integration tests"
# Every *.test.ts in the repository, except the extension-host suites, which need a real editor and run in the
# e2e step below (extension/src/test/suite, loaded by its all.ts; test/unit/tidy.test.ts checks both lists).
mapfile -t files < <(find . \( -name node_modules -o -name .git -o -name out \) -prune -o -name '*.test.ts' -print |
  sed 's|^\./||' | grep -v '^extension/src/test/suite/' | sort)
# Show the summary, and each failing test with its whole diagnostic block (error, stack, expected/actual), nested
# ones too: a failing test inside a describe is an indented "not ok" before its suite's own (which says only "1
# subtest failed").
# A hung test file (a process that never exits) fails the run after 40 minutes instead of using up CI's whole limit.
timeout --kill-after=30s 40m node --import tsx --test --test-reporter=tap "${files[@]}" 2>&1 | tee "$SANDBOX/node-tests.log" |
  awk '/^ *not ok/ { show = 1; print; next } /^ *(ok|# Subtest)/ { show = 0 } /^# (tests|pass|fail|cancelled|skipped) / { print; next } show && n++ < 400 { print }' || true
count "$SANDBOX/node-tests.log"
if ! grep -qE '^# pass [0-9]+' "$SANDBOX/node-tests.log"; then failed=$((failed + 1)); echo "node test run did not complete"; tail -40 "$SANDBOX/node-tests.log"; fi

if [ "${CAIRN_SKIP_E2E:-0}" != "1" ] && [ -f test/e2e/run.sh ]; then
  echo "== real-editor end-to-end tests (code-server + chromium)"
  timeout --kill-after=60s 30m bash test/e2e/run.sh 2>&1 | tee "$SANDBOX/e2e.log"
  e2e_status=${PIPESTATUS[0]}
  line=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$SANDBOX/e2e.log" | tail -1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | awk '{print $2}'))); failed=$((failed + $(echo "$line" | awk '{print $4}')))
  fi
  if [ "$e2e_status" -ne 0 ] && [ -z "$line" ]; then failed=$((failed + 1)); fi
fi

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
