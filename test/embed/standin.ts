/**
 * Tiny stand-in models for the embedding tests: real transformers.js model folders (BERT-style
 * tokenizer with [CLS]/[SEP], token_type_ids input, ONNX graph) whose 4-d token vectors are
 * chosen by hand, so that the pooling in use can be read off the output:
 *
 *   [CLS] = (1,0,0,0)   alpha = (0,1,0,0)   beta = (0,0,1,0)   gamma = (0,0,0,1)   [SEP] = (0,0,0,0)
 *
 * "alpha beta" -> cls: (1,0,0,0); mean: (1,1,1,0)/sqrt(3); max: (1,1,1,0)/sqrt(3) too; lasttoken: [SEP] = zero.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

export const STANDIN_VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'alpha', 'beta', 'gamma'];
const ROWS: number[][] = [
  [0, 0, 0, 0], // [PAD]
  [0, 0, 0, 0], // [UNK]
  [1, 0, 0, 0], // [CLS]
  [0, 0, 0, 0], // [SEP]
  [0, 0, 0, 0], // [MASK]
  [0, 1, 0, 0], // alpha
  [0, 0, 1, 0], // beta
  [0, 0, 0, 1], // gamma
];

export interface StandinOptions {
  /** Writes 1_Pooling/config.json (or `<poolingDir>/config.json`) with this mode. */
  pooling?: 'cls' | 'mean' | 'max' | 'lasttoken';
  /** Folder of the Pooling module; also writes modules.json naming it. */
  poolingDir?: string;
  /** config.json `_name_or_path` (the repository the model was "converted from"). */
  nameOrPath?: string;
  /** Leave out the ONNX file (a broken model). */
  withoutWeights?: boolean;
}

// daemon/scripts/onnx-builder.mjs (plain JS, no typings)
type Builder = any;
let builder: Builder | null = null;
async function onnxBuilder(): Promise<Builder> {
  const file = path.join(__dirname, '..', '..', 'daemon', 'scripts', 'onnx-builder.mjs');
  builder ??= await import(pathToFileURL(file).href);
  return builder;
}

/** Writes a stand-in model folder at `dir`. */
export async function writeStandinModel(dir: string, opts: StandinOptions = {}): Promise<string> {
  const { Graph, T, tensor, i64, bertTokenizerJson, bertTokenizerConfig } = await onnxBuilder();
  const D = 4;
  const V = STANDIN_VOCAB.length;
  const g = new Graph('standin');
  g.input('input_ids', T.INT64, ['batch', 'sequence']);
  g.input('attention_mask', T.INT64, ['batch', 'sequence']);
  g.input('token_type_ids', T.INT64, ['batch', 'sequence']);
  g.init(tensor('word_vectors', T.FLOAT, [V, D], Float32Array.from(ROWS.flat())));
  g.init(tensor('type_vectors', T.FLOAT, [2, D], new Float32Array(2 * D)));
  g.init(i64('axis2', [1], [2]));
  const words = g.op('Gather', ['word_vectors', 'input_ids'], { axis: 0 });
  const types = g.op('Gather', ['type_vectors', 'token_type_ids'], { axis: 0 });
  const mask = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: T.FLOAT }), 'axis2']);
  g.op('Mul', [g.op('Add', [words, types]), mask], {}, 'last_hidden_state');
  g.output('last_hidden_state', T.FLOAT, ['batch', 'sequence', D]);

  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  if (!opts.withoutWeights) fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), g.toBytes({ opset: 13 }));
  const json = (f: string, v: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), JSON.stringify(v, null, 1));
  };
  json('tokenizer.json', bertTokenizerJson(STANDIN_VOCAB, { withClsSep: true }));
  json('tokenizer_config.json', bertTokenizerConfig(128));
  json('config.json', {
    model_type: 'bert',
    architectures: ['BertModel'],
    hidden_size: D,
    vocab_size: V,
    max_position_embeddings: 128,
    'transformers.js_config': { dtype: 'fp32' },
    ...(opts.nameOrPath ? { _name_or_path: opts.nameOrPath } : {}),
  });
  if (opts.pooling) {
    const poolDir = opts.poolingDir ?? '1_Pooling';
    json(`${poolDir}/config.json`, {
      word_embedding_dimension: D,
      pooling_mode_cls_token: opts.pooling === 'cls',
      pooling_mode_mean_tokens: opts.pooling === 'mean',
      pooling_mode_max_tokens: opts.pooling === 'max',
      pooling_mode_mean_sqrt_len_tokens: false,
      pooling_mode_weightedmean_tokens: false,
      pooling_mode_lasttoken: opts.pooling === 'lasttoken',
    });
    if (opts.poolingDir) {
      json('modules.json', [
        { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
        { idx: 1, name: '1', path: poolDir, type: 'sentence_transformers.models.Pooling' },
      ]);
    }
  }
  return dir;
}

/** Writes only the sentence-transformers files of a repository (no model), for `_name_or_path` lookups. */
export function writePoolingOnlyRepo(dir: string, pooling: 'cls' | 'mean'): void {
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '1_Pooling', 'config.json'),
    JSON.stringify({
      word_embedding_dimension: 4,
      pooling_mode_cls_token: pooling === 'cls',
      pooling_mode_mean_tokens: pooling === 'mean',
    }),
  );
}
