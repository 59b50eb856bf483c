// Minimal ONNX graph writer on top of npm `onnx-proto` (protobufjs bindings of
// onnx.proto), plus the HF tokenizers JSON for a BERT-style uncased WordPiece
// vocabulary. Used by build-builtin-model.mjs (and by tests' stand-in models via
// plain JSON, so nothing here is needed at run time).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** ONNX TensorProto.DataType values used here. */
export const T = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, FLOAT16: 10 };

let onnxProto;
function onnx() {
  if (!onnxProto) {
    try {
      onnxProto = require('onnx-proto').onnx;
    } catch (err) {
      throw new Error('npm package onnx-proto is missing: run `npm install` (it is a devDependency of the daemon workspace)', {
        cause: err,
      });
    }
  }
  return onnxProto;
}

/** An initializer: `typed` is a TypedArray stored as raw little-endian bytes. */
export function tensor(name, dataType, dims, typed) {
  return { name, dataType, dims, rawData: new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength) };
}
export const f32 = (name, dims, values) => tensor(name, T.FLOAT, dims, Float32Array.from(values));
export const i64 = (name, dims, values) => tensor(name, T.INT64, dims, BigInt64Array.from(values.map(BigInt)));

function attribute(name, v) {
  const A = onnx().AttributeProto.AttributeType;
  if (typeof v === 'number' && Number.isInteger(v)) return { name, type: A.INT, i: v };
  if (typeof v === 'number') return { name, type: A.FLOAT, f: v };
  if (typeof v === 'string') return { name, type: A.STRING, s: Buffer.from(v) };
  if (Array.isArray(v) && v.every(Number.isInteger)) return { name, type: A.INTS, ints: v };
  if (Array.isArray(v)) return { name, type: A.FLOATS, floats: v };
  throw new Error(`unsupported attribute ${name}`);
}

function valueInfo(name, elemType, shape) {
  return {
    name,
    type: { tensorType: { elemType, shape: { dim: shape.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } } },
  };
}

export class Graph {
  constructor(name) {
    this.name = name;
    this.nodes = [];
    this.initializers = [];
    this.inputs = [];
    this.outputs = [];
    this.counter = 0;
  }
  input(name, elemType, shape) {
    this.inputs.push(valueInfo(name, elemType, shape));
    return name;
  }
  output(name, elemType, shape) {
    this.outputs.push(valueInfo(name, elemType, shape));
    return name;
  }
  init(t) {
    this.initializers.push(t);
    return t.name;
  }
  /** Adds a node; returns its (single) output name. */
  op(opType, inputs, attrs = {}, outName) {
    const out = outName ?? `${opType.toLowerCase()}_${this.counter++}`;
    this.nodes.push({
      opType,
      input: inputs,
      output: [out],
      name: `${out}_node`,
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return out;
  }
  toBytes({ opset = 13, producer = 'cairn onnx-builder', docString = '' } = {}) {
    const proto = onnx();
    const model = proto.ModelProto.create({
      irVersion: 7,
      producerName: producer,
      docString,
      opsetImport: [{ domain: '', version: opset }],
      graph: { name: this.name, node: this.nodes, initializer: this.initializers, input: this.inputs, output: this.outputs },
    });
    return proto.ModelProto.encode(model).finish();
  }
}

export const SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

/**
 * tokenizer.json (HF tokenizers format) for an uncased BERT WordPiece vocabulary.
 * `vocabList[i]` gets id i. Without `withClsSep` no [CLS]/[SEP] are added (a static
 * model must not average them in).
 */
export function bertTokenizerJson(vocabList, { withClsSep = true } = {}) {
  const vocab = Object.create(null);
  vocabList.forEach((w, i) => {
    vocab[w] = i;
  });
  const added = SPECIAL_TOKENS.filter((s) => s in vocab).map((s) => ({
    id: vocab[s],
    content: s,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const special = (id) => ({ SpecialToken: { id, type_id: 0 } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: true, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: withClsSep
      ? {
          type: 'TemplateProcessing',
          single: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]')],
          pair: [
            special('[CLS]'),
            { Sequence: { id: 'A', type_id: 0 } },
            special('[SEP]'),
            { Sequence: { id: 'B', type_id: 1 } },
            special('[SEP]'),
          ],
          special_tokens: {
            '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
            '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
          },
        }
      : null,
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

export function bertTokenizerConfig(modelMaxLength = 512) {
  return {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    strip_accents: true,
    model_max_length: modelMaxLength,
    clean_up_tokenization_spaces: true,
    unk_token: '[UNK]',
    pad_token: '[PAD]',
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    mask_token: '[MASK]',
  };
}
