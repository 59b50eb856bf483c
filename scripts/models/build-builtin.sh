#!/usr/bin/env bash
# Builds the built-in static model daemon/models/cairn-minilm-static from the teacher
# all-MiniLM-L6-v2 (made by fetch-teacher.sh), with scripts/models/distill_static.py:
#
#   bash scripts/models/build-builtin.sh [extra distill_static.py options, e.g. --dim 128]
#
# The options below are the ones the committed model was built with; they were chosen on LoCoMo
# conversations 0-2 and confirmed on 3-4 (bench/README.md). The teacher pass over ~59k vocabulary
# entries is cached under .models/.cache, so rebuilding with other PCA/weighting options is quick.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TEACHER=$(bash "$ROOT/scripts/models/fetch-teacher.sh")
MODELS=$(dirname "$(dirname "$TEACHER")")
OUT=${CAIRN_BUILTIN_OUT:-$ROOT/daemon/models/cairn-minilm-static}
"$MODELS/.venv/bin/python" "$ROOT/scripts/models/distill_static.py" "$TEACHER" "$OUT" \
  --dim 256 --sif 1e-2 --words 50000 "$@"
echo "$OUT"
