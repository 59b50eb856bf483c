#!/usr/bin/env bash
# Runs the whole real-editor suite (test/e2e/run.sh: mocha in the extension host, UI smoke, dashboard) N times in a
# row and reports each run, to show the suite is deterministic rather than lucky:
#
#   bash test/e2e/repeat.sh 10        # last line: "e2e repeat: 10 of 10 runs green"
#
# Each run keeps its own artifacts in test-artifacts/e2e-repeat/run-K/ (screenshots, logs, results.json); a summary
# with every run's counts and wall time goes to test-artifacts/e2e-repeat/summary.json. All runs are done even after
# a failure, so the report counts them all; the exit status is non-zero if any run failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
N=${1:-10}
case "$N" in '' | *[!0-9]*) echo "usage: repeat.sh [runs]  (runs: a positive integer)" >&2; exit 2 ;; esac
[ "$N" -ge 1 ] || { echo "usage: repeat.sh [runs]  (runs: a positive integer)" >&2; exit 2; }
OUT=$REPO/test-artifacts/e2e-repeat
rm -rf "$OUT"
mkdir -p "$OUT"
GREEN=0
RUNS=()
for k in $(seq 1 "$N"); do
  dir=$OUT/run-$k
  start=$SECONDS
  CAIRN_E2E_ARTIFACTS=$dir bash "$HERE/run.sh" >"$OUT/run-$k.log" 2>&1
  rc=$?
  line=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$OUT/run-$k.log" | tail -1)
  passed=$(echo "$line" | sed -nE 's/^e2e: ([0-9]+) passed.*/\1/p')
  failed=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
  # a run without its count line (killed, crashed harness) is a failed run, never a green one
  if [ "$rc" -eq 0 ] && [ -n "$passed" ] && [ "${failed:-1}" -eq 0 ] && [ "$passed" -gt 0 ]; then ok=true; GREEN=$((GREEN + 1)); else ok=false; fi
  secs=$((SECONDS - start))
  echo "run $k/$N: ${line:-no result line (exit $rc)} in ${secs} s"
  [ "$ok" = true ] || grep -E 'FAIL|FAILED|failing' "$OUT/run-$k.log" | head -5 | sed 's/^/    /'
  RUNS+=("{\"run\":$k,\"green\":$ok,\"passed\":${passed:-0},\"failed\":${failed:-0},\"exit\":$rc,\"seconds\":$secs}")
done
(IFS=,; echo "{\"runs\":$N,\"green\":$GREEN,\"commit\":\"$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)\",\"each\":[${RUNS[*]}]}") >"$OUT/summary.json"
echo "e2e repeat: $GREEN of $N runs green (summary: test-artifacts/e2e-repeat/summary.json)"
[ "$GREEN" -eq "$N" ]
