"""A numpy forward pass of a sentence-transformers MPNet checkpoint (all-mpnet-base-v2): the
teacher for Cairn's built-in static model. No torch: the safetensors file is read with numpy and
the encoder is written out directly (the arithmetic of Hugging Face's MPNetModel: learned absolute
positions starting after the padding index, a T5-style bucketed relative position bias shared by
all layers, post-norm layers, exact GELU), then mean pooling over the attention mask.

    from mpnet_numpy import MPNet
    m = MPNet("path/to/all-mpnet-base-v2")
    vecs = m.embed_ids([[0, 2023, 2], ...])   # token ids with <s> ... </s>; mean-pooled, not normalized
    vecs = m.embed_texts(["a sentence", ...])  # tokenizes with the model's tokenizer.json
"""
import json
import math
import os
import struct

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
        out[name] = arr.astype(np.float32) if meta["dtype"] != "I64" else arr
    return out


def erf(x):
    # Abramowitz & Stegun 7.1.26 is 1.5e-7 accurate; this is the same idea with float64 inside
    x = x.astype(np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def relative_position_bucket(rel, num_buckets=32, max_distance=128):
    ret = np.zeros_like(rel)
    n = -rel
    num_buckets //= 2
    ret += (n < 0).astype(rel.dtype) * num_buckets
    n = np.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    with np.errstate(divide="ignore"):
        large = max_exact + (np.log(np.maximum(n, 1).astype(np.float64) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)).astype(rel.dtype)
    large = np.minimum(large, num_buckets - 1)
    ret += np.where(is_small, n, large)
    return ret


class MPNet:
    def __init__(self, folder):
        self.folder = folder
        cfg = json.load(open(os.path.join(folder, "config.json")))
        self.cfg = cfg
        w = read_safetensors(os.path.join(folder, "model.safetensors"))
        for p in ("mpnet.", "0.auto_model.", "auto_model."):
            if all(k.startswith(p) for k in w):
                w = {k[len(p):]: v for k, v in w.items()}
        self.w = w
        self.H = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = float(cfg.get("layer_norm_eps", 1e-5))
        self.pad = cfg.get("pad_token_id", 1)
        self.buckets = cfg.get("relative_attention_num_buckets", 32)
        # pre-transposed weights for x @ W
        self.lin = {}
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (w[p + f"attention.attn.{n}.weight"] for n in "qkv")
            self.lin[i] = {
                "qkv": np.ascontiguousarray(np.concatenate([q, k, v], 0).T),
                "qkv_b": np.concatenate([w[p + f"attention.attn.{n}.bias"] for n in "qkv"]),
                "o": np.ascontiguousarray(w[p + "attention.attn.o.weight"].T),
                "i": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                "out": np.ascontiguousarray(w[p + "output.dense.weight"].T),
            }
        self._tok = None

    def tokenizer(self):
        if self._tok is None:
            from tokenizers import Tokenizer

            t = Tokenizer.from_file(os.path.join(self.folder, "tokenizer.json"))
            t.no_padding()
            t.enable_truncation(384)
            self._tok = t
        return self._tok

    def forward(self, ids, mask):
        """ids, mask: (B, L) int arrays; returns the last hidden state (B, L, H), float32."""
        w = self.w
        B, L = ids.shape
        H, nh = self.H, self.heads
        dh = H // nh
        pos = np.cumsum(mask, 1) * mask + self.pad  # create_position_ids_from_input_ids
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][pos]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        rel = np.arange(L)[None, :] - np.arange(L)[:, None]
        bucket = relative_position_bucket(rel, self.buckets)
        bias = w["encoder.relative_attention_bias.weight"][bucket].transpose(2, 0, 1)[None]  # (1, nh, L, L)
        bias = bias + ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9))
        bias = bias.astype(np.float32)
        x = x.reshape(B * L, H).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(dh))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            lw = self.lin[i]
            qkv = x @ lw["qkv"] + lw["qkv_b"]
            q, k, v = (qkv[:, j * H:(j + 1) * H].reshape(B, L, nh, dh).transpose(0, 2, 1, 3) for j in range(3))
            s = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            s = s - s.max(-1, keepdims=True)
            e = np.exp(s)
            a = e / e.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(B * L, H)
            o = ctx @ lw["o"] + w[p + "attention.attn.o.bias"]
            x = layer_norm(o + x, w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"], self.eps)
            h = gelu(x @ lw["i"] + w[p + "intermediate.dense.bias"])
            o = h @ lw["out"] + w[p + "output.dense.bias"]
            x = layer_norm(o + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x.reshape(B, L, H)

    def embed_ids(self, seqs, batch_tokens=8192, progress=None):
        """Mean-pooled sentence vectors (not normalized) for token id lists, in input order.
        Batches by length (sorted), so padding costs little; deterministic for the same input."""
        out = np.zeros((len(seqs), self.H), dtype=np.float32)
        order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), i))
        k = 0
        done = 0
        while k < len(order):
            L = len(seqs[order[k]])
            n = 1
            while k + n < len(order) and (n + 1) * len(seqs[order[k + n]]) <= batch_tokens and n < 1024:
                n += 1
            idx = order[k:k + n]
            L = max(len(seqs[i]) for i in idx)
            ids = np.full((n, L), self.pad, dtype=np.int64)
            mask = np.zeros((n, L), dtype=np.int64)
            for r, i in enumerate(idx):
                ids[r, :len(seqs[i])] = seqs[i]
                mask[r, :len(seqs[i])] = 1
            hs = self.forward(ids, mask)
            m = mask[..., None].astype(np.float32)
            out[idx] = (hs * m).sum(1) / m.sum(1)
            k += n
            done += n
            if progress:
                progress(done, len(seqs))
        return out

    def embed_texts(self, texts, **kw):
        enc = self.tokenizer().encode_batch(list(texts))
        return self.embed_ids([e.ids for e in enc], **kw)
