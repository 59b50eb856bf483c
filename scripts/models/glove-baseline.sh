#!/usr/bin/env bash
# Restores the previous built-in model, GloVe 100-d (cairn/glove-100d, public domain; see its README),
# from git history into a gitignored folder, so benchmarks can still measure it as the baseline:
#
#   bash scripts/models/glove-baseline.sh          # -> .models/cairn-glove-100d (prints the folder)
#   node --import tsx bench/locomo.ts --model "$(bash scripts/models/glove-baseline.sh)"
#
# It loads as a folder model through transformers.js (ONNX), as it did when it was built in.
# Needs the repository's history (not a shallow clone). Idempotent.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
COMMIT=e3fa96ba6ad651611fe440a7a28464ff24e97b14   # last commit with daemon/models/cairn-glove-100d
SRC=daemon/models/cairn-glove-100d
OUT=${1:-$ROOT/.models/cairn-glove-100d}
if [ -f "$OUT/onnx/model_quantized.onnx" ]; then echo "$OUT"; exit 0; fi
rm -rf "$OUT.tmp"
git -C "$ROOT" ls-tree -r --name-only "$COMMIT" "$SRC" | while read -r f; do
  mkdir -p "$OUT.tmp/$(dirname "${f#"$SRC"/}")"
  git -C "$ROOT" show "$COMMIT:$f" >"$OUT.tmp/${f#"$SRC"/}"
done
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
echo "$OUT"
