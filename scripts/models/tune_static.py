"""Chooses the built-in static model's PCA dimension and SIF coefficient on a selection set:
LoCoMo conversations 0-2 (never 3-4, which confirm the choice in bench/locomo.ts).

It reuses the teacher pass that distill_static.py cached (run that first, any options) and the
vocabulary it wrote, applies each (dimension, SIF coefficient, common components removed)
candidate in numpy, and scores the vector arm alone: every turn of a conversation is a document,
every question with evidence a query, turn recall@5 and MRR as bench/locomo.ts computes them.
Tokenization is the same BERT basic tokenizer + greedy WordPiece over the model's vocabulary
(the `tokenizers` library, configured like static-model.ts).

Usage: python tune_static.py MODEL_DIR TEACHER_CACHE.npy LOCOMO.json [--convs 0-2] [--dims 256,384]
       [--whiten 0,0.5,1] [--sifs 1e-3,...] [--drops 0,2]
"""
import argparse
import json
import os
import re
import sys

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))


def turns_and_questions(sample):
    conv = sample["conversation"]
    docs = []
    for k, v in conv.items():
        m = re.match(r"^session_(\d+)$", k)
        if not m or not isinstance(v, list):
            continue
        for t in v:
            cap = f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else ""
            docs.append((t["dia_id"], f"{t['speaker']}: {t['text']}{cap}"))
    qs = []
    for qa in sample["qa"]:
        ev = sorted({m for e in qa.get("evidence", []) or [] for m in re.findall(r"D\d+:\d+", str(e))})
        if ev:
            qs.append((qa["question"], ev))
    return docs, qs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("cache")
    ap.add_argument("data")
    ap.add_argument("--convs", default="0-2")
    ap.add_argument("--dims", default="256", help="comma-separated PCA dimensions to try")
    ap.add_argument("--whiten", default="0", help="comma-separated whitening powers to try: component c is scaled by eigenvalue_c^(-w/2) (0: plain PCA, 1: full whitening)")
    ap.add_argument("--sifs", default="1e-3,3e-3,1e-2,3e-2,1e-1,1")
    ap.add_argument("--drops", default="0,2")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.convs.split("-"))
    samples = json.load(open(a.data))[lo:hi + 1]

    vocab = [l.rstrip("\n") for l in open(os.path.join(a.model, "vocab.txt"), encoding="utf-8")]
    emb = np.load(a.cache)
    assert len(emb) == len(vocab), f"cache has {len(emb)} rows, vocab {len(vocab)}"
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()

    ranked = [l.strip() for l in open(os.path.join(HERE, "data", "glove-words-by-frequency.txt")) if l.strip()]
    rank = {}
    for i, w in enumerate(ranked):
        rank.setdefault(w, i + 1)
    r = np.array([rank.get(t, len(ranked)) for t in vocab], dtype=np.float64)
    p = 1.0 / (r * (np.log(len(ranked)) + 0.5772156649))
    import string
    import unicodedata

    def punct_only(t):
        t = t[2:] if t.startswith("##") and len(t) > 2 else t
        return all(unicodedata.category(c).startswith("P") or c in string.punctuation for c in t)

    zero = np.array([t in {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>", "<pad>", "<unk>", "<mask>"} or t.startswith("[unused") or punct_only(t) for t in vocab])

    data = []
    for s in samples:
        docs, qs = turns_and_questions(s)
        data.append((docs, qs, [e.ids for e in tok.encode_batch([d[1] for d in docs])], [e.ids for e in tok.encode_batch([q[0] for q in qs])]))

    x = emb.astype(np.float64) - emb.mean(0)
    vals, vecs = np.linalg.eigh(x.T @ x / len(x))
    vecs = vecs[:, ::-1]
    vals = np.maximum(vals[::-1], 1e-12)

    def embed(table, ids_list):
        out = np.zeros((len(ids_list), table.shape[1]))
        for i, ids in enumerate(ids_list):
            if ids:
                out[i] = table[ids].sum(0)
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n > 0, n, 1)

    results = []
    for dim, whiten, drop in [(d, wh, dr) for d in map(int, a.dims.split(",")) for wh in map(float, a.whiten.split(",")) for dr in map(int, a.drops.split(","))]:
        y = x @ vecs[:, :dim]
        if whiten:
            y = y * vals[:dim] ** (-whiten / 2)
        if True:
            yy = y.copy()
            if drop:
                yy[:, :drop] = 0  # all-but-the-top: remove the common components
            for sif in map(float, a.sifs.split(",")):
                w = sif / (sif + p)
                w[zero] = 0
                table = yy * w[:, None]
                r5 = mrr = n = 0.0
                for docs, qs, dids, qids in data:
                    D = embed(table, dids)
                    Q = embed(table, qids)
                    S = Q @ D.T
                    keys = [d[0] for d in docs]
                    for qi, (q, ev) in enumerate(qs):
                        top = [keys[j] for j in np.argsort(-S[qi], kind="stable")[:10]]
                        evs = set(ev)
                        r5 += len([h for h in top[:5] if h in evs]) / len(evs)
                        first = next((i for i, h in enumerate(top) if h in evs), None)
                        mrr += 1 / (first + 1) if first is not None else 0
                        n += 1
                results.append({"dim": dim, "whiten": whiten, "dropComponents": drop, "sif": sif, "turnRecall5": r5 / n, "turnMRR": mrr / n, "questions": int(n)})
                print(json.dumps(results[-1]), file=sys.stderr)
    results.sort(key=lambda z: (-z["turnRecall5"], -z["turnMRR"]))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
