"""Converts a sentence-transformers BERT checkpoint (model.safetensors + tokenizer) into a folder
transformers.js loads as a feature-extraction model: config.json, tokenizer files,
onnx/model.onnx (fp32) and onnx/model_quantized.onnx (int8, dynamic quantization).

No torch: the safetensors file is read with numpy, and the BERT encoder graph is written op by op
with the `onnx` package from the checkpoint's tensors.

It also checks the result: an independent numpy forward pass (numpy_bert below, the same BERT
arithmetic written directly, with the Rust `tokenizers` library for tokens) embeds a few hundred
sentences; onnxruntime runs the written fp32 and int8 graphs on the same tokens, and the cosine
of each pair is reported. The numpy embeddings are written to cairn-reference/ so a Node test can
compare what Cairn's production path computes against them.

Usage: python convert_teacher.py SRC_MODEL_DIR DEST_DIR
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


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
        out[name] = np.frombuffer(data[a:b], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"]).astype(
            np.float32 if meta["dtype"] != "I64" else np.int64
        )
    return out


def strip_prefix(w):
    # checkpoints saved from BertModel have no prefix; some carry "bert." or "0.auto_model."
    for p in ("bert.", "0.auto_model.", "auto_model."):
        if all(k.startswith(p) for k in w):
            return {k[len(p):]: v for k, v in w.items()}
    return w


# ---------------------------------------------------------------- ONNX graph
class G:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, arr, base="c"):
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def op(self, op_type, inputs, base=None, **attrs):
        out = self.name(base or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out


def build_onnx(w, cfg):
    H = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    dh = H // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    g = G()

    def linear(x, prefix):
        wt = g.const(w[prefix + ".weight"].T.copy(), prefix.replace(".", "_") + "_w")
        b = g.const(w[prefix + ".bias"], prefix.replace(".", "_") + "_b")
        return g.op("Add", [g.op("MatMul", [x, wt]), b])

    def layer_norm(x, prefix):
        s = g.const(w[prefix + ".weight"])
        b = g.const(w[prefix + ".bias"])
        return g.op("LayerNormalization", [x, s, b], axis=-1, epsilon=eps)

    # embeddings
    word = g.op("Gather", [g.const(w["embeddings.word_embeddings.weight"], "word_emb"), "input_ids"], axis=0)
    tt = g.op("Gather", [g.const(w["embeddings.token_type_embeddings.weight"], "type_emb"), "token_type_ids"], axis=0)
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.array(1, dtype=np.int64))], axis=0)
    positions = g.op("Range", [g.const(np.array(0, dtype=np.int64)), seq_len, g.const(np.array(1, dtype=np.int64))])
    pos = g.op("Gather", [g.const(w["embeddings.position_embeddings.weight"], "pos_emb"), positions], axis=0)
    x = g.op("Add", [g.op("Add", [word, tt]), pos])
    x = layer_norm(x, "embeddings.LayerNorm")

    # additive attention mask [b, 1, 1, s]: 0 where attended, a large negative number elsewhere
    m = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    m = g.op("Mul", [g.op("Sub", [g.const(np.array(1.0, dtype=np.float32)), m]), g.const(np.array(-1e4, dtype=np.float32))])
    m = g.op("Unsqueeze", [m, g.const(np.array([1, 2], dtype=np.int64))])

    split_shape = g.const(np.array([0, 0, heads, dh], dtype=np.int64))
    merge_shape = g.const(np.array([0, 0, H], dtype=np.int64))
    scale = g.const(np.array(1.0 / np.sqrt(dh), dtype=np.float32))
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.query"), split_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.key"), split_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, p + "attention.self.value"), split_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), m])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_shape])
        x = layer_norm(g.op("Add", [x, linear(ctx, p + "attention.output.dense")]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        # exact GELU: 0.5 * h * (1 + erf(h / sqrt(2)))
        gelu = g.op("Mul", [g.op("Mul", [h, g.const(np.array(0.5, dtype=np.float32))]),
                            g.op("Add", [g.op("Erf", [g.op("Div", [h, g.const(np.array(np.sqrt(2.0), dtype=np.float32))])]),
                                         g.const(np.array(1.0, dtype=np.float32))])])
        x = layer_norm(g.op("Add", [x, linear(gelu, p + "output.dense")]), p + "output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    dims = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [H])]
    graph = helper.make_graph(g.nodes, "bert", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="cairn-convert-teacher")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# ---------------------------------------------------------------- numpy reference
def numpy_bert(w, cfg, ids, mask, types):
    """Plain numpy BERT encoder (float64): the reference the ONNX graphs are checked against."""
    H = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    dh = H // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    W = {k: v.astype(np.float64) for k, v in w.items() if v.dtype != np.int64}

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * W[p + ".weight"] + W[p + ".bias"]

    def lin(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    def verf(z):
        # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), vectorized; math.erf per element is far too slow
        t = 1.0 / (1.0 + 0.3275911 * np.abs(z))
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-z * z)
        return np.sign(z) * y
    B, S = ids.shape
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.token_type_embeddings.weight"][types] + W["embeddings.position_embeddings.weight"][np.arange(S)][None]
    x = ln(x, "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :].astype(np.float64)) * -1e4
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        def heads_of(t):
            return t.reshape(B, S, heads, dh).transpose(0, 2, 1, 3)
        q, k, v = (heads_of(lin(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
        x = ln(x + lin(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + verf(h / np.sqrt(2.0)))
        x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
    return x


def mean_pool_normalize(hidden, mask):
    m = mask[..., None].astype(hidden.dtype)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def check_sentences():
    """A few hundred deterministic English sentences of the kind Cairn stores."""
    subjects = ["The build", "Our API client", "The database migration", "My sister", "The test suite", "Caroline",
                "The deployment script", "A new hire", "The cache layer", "Melanie", "The search index", "The team"]
    verbs = ["failed because of", "was rewritten to use", "depends on", "was slowed down by", "now prefers",
             "talked about", "keeps a copy of", "replaced", "was blocked by", "was tested against"]
    objects = ["a missing environment variable.", "the retry policy for HTTP requests.", "the database file in WAL mode.",
               "her painting class on Sunday.", "a flaky network connection.", "the vacation photos from the lake.",
               "an expired TLS certificate.", "the new onboarding document.", "pottery and camping trips.",
               "a race condition in the worker thread."]
    out = []
    for i, s in enumerate(subjects):
        for j, v in enumerate(verbs):
            o = objects[(i * 7 + j * 3) % len(objects)]
            out.append(f"{s} {v} {o}")
            out.append(f"Yesterday {s.lower()} {v} {objects[(i + j * 5 + 1) % len(objects)]}")
            if (i + j) % 2 == 0:
                out.append(f"Why did {s.lower()} {v.split()[0]} {o[:-1]}?")
    return out[:300]


def main():
    src, dest = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(src, "config.json")))
    w = strip_prefix(read_safetensors(os.path.join(src, "model.safetensors")))
    os.makedirs(os.path.join(dest, "onnx"), exist_ok=True)

    # config and tokenizer files; the upstream id lets Cairn find pooling / max length in the folder itself
    out_cfg = dict(cfg)
    out_cfg["_name_or_path"] = "sentence-transformers/all-MiniLM-L6-v2"
    json.dump(out_cfg, open(os.path.join(dest, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
              "modules.json", "sentence_bert_config.json", "README.md"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copyfile(os.path.join(src, f), os.path.join(dest, f))
    if os.path.isdir(os.path.join(src, "1_Pooling")):
        shutil.copytree(os.path.join(src, "1_Pooling"), os.path.join(dest, "1_Pooling"), dirs_exist_ok=True)

    fp32 = os.path.join(dest, "onnx", "model.onnx")
    q8 = os.path.join(dest, "onnx", "model_quantized.onnx")
    onnx.save(build_onnx(w, cfg), fp32)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    # per-channel weights keep int8 within ~0.99 cosine of fp32 (per-tensor: ~0.94 at worst)
    quantize_dynamic(fp32, q8, weight_type=QuantType.QInt8, per_channel=True)

    # ---- check: numpy reference vs onnxruntime fp32 and int8, same tokens
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(src, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    sentences = check_sentences()
    ref, got32, got8 = [], [], []
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s32 = ort.InferenceSession(fp32, so, providers=["CPUExecutionProvider"])
    s8 = ort.InferenceSession(q8, so, providers=["CPUExecutionProvider"])
    for k in range(0, len(sentences), 50):
        enc = tok.encode_batch(sentences[k:k + 50])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        types = np.zeros_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        ref.append(mean_pool_normalize(numpy_bert(w, cfg, ids, mask, types), mask))
        got32.append(mean_pool_normalize(s32.run(None, feeds)[0].astype(np.float64), mask))
        got8.append(mean_pool_normalize(s8.run(None, feeds)[0].astype(np.float64), mask))
    ref, got32, got8 = (np.concatenate(a) for a in (ref, got32, got8))
    cos32 = (ref * got32).sum(-1)
    cos8 = (ref * got8).sum(-1)
    report = {
        "sentences": len(sentences),
        "fp32_vs_numpy_min_cosine": float(cos32.min()),
        "fp32_vs_numpy_mean_cosine": float(cos32.mean()),
        "int8_vs_numpy_min_cosine": float(cos8.min()),
        "int8_vs_numpy_mean_cosine": float(cos8.mean()),
        "fp32_bytes": os.path.getsize(fp32),
        "int8_bytes": os.path.getsize(q8),
    }
    refdir = os.path.join(dest, "cairn-reference")
    os.makedirs(refdir, exist_ok=True)
    json.dump(sentences, open(os.path.join(refdir, "sentences.json"), "w"))
    ref.astype("<f4").tofile(os.path.join(refdir, "embeddings.f32"))
    json.dump(report, open(os.path.join(refdir, "check.json"), "w"), indent=2)
    print(json.dumps(report))
    if cos32.min() < 0.999:
        sys.exit(f"fp32 ONNX disagrees with the numpy reference (min cosine {cos32.min():.6f} < 0.999)")


if __name__ == "__main__":
    main()
