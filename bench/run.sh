#!/usr/bin/env bash
# Every benchmark, one command: npm run bench [-- --quick]
# Builds first; writes JSON results to bench/results/ and prints the figures.
# --quick: 10k memories only (the full run also measures 100k and takes ~10 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
sizes=10000,100000
[ "${1:-}" = "--quick" ] && sizes=10000
mkdir -p bench/results
export CAIRN_ALLOW_REMOTE_MODELS=0
echo "== foundation: upsert throughput, full-text latency"
node --import tsx bench/foundation.ts --sizes "$sizes" --json bench/results/foundation.json
echo "== embedding throughput (built-in model)"
node --import tsx bench/embed-throughput.ts
echo "== hybrid latency and scale"
node --import tsx bench/hybrid.ts --sizes "$sizes" --json bench/results/hybrid.json
echo "== side by side: the shared developer corpus and queries (issue 8's table)"
node --import tsx bench/sidebyside.ts --sizes "$sizes" --json bench/results/sidebyside.json ${CAIRN_BENCH_CORPUS:+--corpus "$CAIRN_BENCH_CORPUS"} ${CAIRN_BENCH_GEN:+--gen "$CAIRN_BENCH_GEN"}
echo "== LoCoMo retrieval"
node --import tsx bench/locomo.ts --json bench/results/locomo.json ${LOCOMO_DATA:+--data "$LOCOMO_DATA"}
echo "== reliability: crash loop (SIGKILL cycles), concurrent writers, daemon start race"
if [ "${1:-}" = "--quick" ]; then
  node --import tsx bench/crash-loop.ts --cycles 10 --race-trials 5 --json bench/results/reliability.json
else
  node --import tsx bench/crash-loop.ts --json bench/results/reliability.json
fi
