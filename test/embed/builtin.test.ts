/**
 * The built-in model through the production path: Embedder -> worker thread -> the static-model
 * runtime (plain JavaScript), loaded from daemon/models/cairn-mpnet-static with remote loading off.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BUILTIN_MODEL_ID, Embedder, builtinModelPath, isBuiltinModelId, isZeroVector } from '../../daemon/src/embed';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { spawnDaemon } from '../helpers';

const DIM = JSON.parse(fs.readFileSync(path.join(builtinModelPath(), 'config.json'), 'utf8')).cairn.dimension as number;

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);
const norm = (a: Float32Array) => Math.sqrt(dot(a, a));
const noNaN = (v: Float32Array) => v.every((x) => Number.isFinite(x));

let e: Embedder;
// an empty cache: nothing may come from anywhere but the built-in folder
const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-embed-test-'));

before(async () => {
  e = await Embedder.start({ model: 'builtin', allowRemote: false, cacheDir: cache });
});
after(async () => {
  await e?.close();
  fs.rmSync(cache, { recursive: true, force: true });
});

async function sim(a: string, b: string): Promise<number> {
  const [va, vb] = await e.embed([a, b]);
  return dot(va, vb);
}

describe('built-in model', () => {
  it('is found next to the sources, is small, and is named consistently', () => {
    const dir = builtinModelPath();
    for (const f of ['config.json', 'vocab.txt', 'vectors.i8', 'scales.f32', 'README.md']) {
      assert.ok(fs.existsSync(path.join(dir, f)), `${f} missing in ${dir}`);
    }
    let total = 0;
    const walk = (d: string) =>
      fs
        .readdirSync(d, { withFileTypes: true })
        .forEach((x) => (x.isDirectory() ? walk(path.join(d, x.name)) : (total += fs.statSync(path.join(d, x.name)).size)));
    walk(dir);
    assert.ok(total <= 32 * 2 ** 20, `model folder is ${(total / 2 ** 20).toFixed(1)} MiB`);
    assert.ok(isBuiltinModelId('builtin') && isBuiltinModelId(BUILTIN_MODEL_ID) && isBuiltinModelId('cairn-mpnet-static'));
    // the former built-in model's ids (cairn/minilm-static) still name the built-in model
    assert.ok(isBuiltinModelId('cairn/minilm-static') && isBuiltinModelId('cairn-minilm-static'));
    assert.ok(!isBuiltinModelId('Xenova/all-MiniLM-L6-v2'));
  });

  it('loads offline as a static model (weighted token mean, int8), 512 tokens', () => {
    assert.equal(e.info.model, BUILTIN_MODEL_ID);
    assert.equal(e.info.configuredModel, 'builtin');
    assert.equal(e.info.builtin, true);
    assert.equal(e.info.fallbackReason, null);
    assert.equal(e.info.dimension, DIM);
    assert.ok(DIM >= 64 && DIM <= 512);
    assert.equal(e.info.pooling, 'weightedmean');
    assert.equal(e.info.dtype, 'int8');
    assert.equal(e.info.maxTokens, 512);
    assert.ok(fs.readdirSync(cache).length === 0, 'nothing written to the download cache');
  });

  it('gives unit vectors of the model dimension', async () => {
    const vs = await e.embed(['The SQLite store uses WAL mode.', 'getUserById returns null', 'Bought flour and eggs']);
    assert.equal(vs.length, 3);
    for (const v of vs) {
      assert.ok(v instanceof Float32Array);
      assert.equal(v.length, DIM);
      assert.ok(Math.abs(norm(v) - 1) < 1e-4, `norm ${norm(v)}`);
    }
    // each vector owns its buffer (safe to hand to a store as-is)
    assert.equal(vs[0].byteOffset, 0);
    assert.equal(vs[0].buffer.byteLength, DIM * 4);
  });

  it('ranks related texts above unrelated ones', async () => {
    const cases: Array<[string, string, string]> = [
      ['database index', 'sqlite btree', 'banana bread'],
      ['memory leak in the node process', 'garbage collector heap growth', 'holiday trip to italy'],
      ['how do I reset my password', 'forgot login credentials', 'recipe for chocolate cake'],
      ['the cat sat on the mat', 'a kitten rested on the rug', 'stock market crashed today'],
      ['flaky websocket test', 'intermittent socket connection failure in the test suite', 'quarterly revenue grew'],
    ];
    for (const [q, pos, neg] of cases) {
      const [sp, sn] = [await sim(q, pos), await sim(q, neg)];
      assert.ok(sp > sn + 0.1, `${q}: ${pos} ${sp.toFixed(3)} vs ${neg} ${sn.toFixed(3)}`);
    }
  });

  it('embeds code identifiers like the words they are made of', async () => {
    assert.ok((await sim('getUserById', 'get user by id')) > 0.999);
    assert.ok((await sim('MAX_RETRY_COUNT', 'max retry count')) > 0.999);
    assert.ok((await sim('parseConfigFile()', 'parse the config file')) > 0.9);
    assert.ok((await sim('fetchUserProfile', 'load the account profile')) > (await sim('fetchUserProfile', 'banana bread')) + 0.2);
  });

  it('gives the zero vector, never NaN, for empty, blank and all-unknown texts', async () => {
    // WordPiece spells out any Latin word, so "unknown" means characters outside the vocabulary;
    // punctuation carries weight 0
    const texts = ['', '   ', '\n\t ', '___', '?!.;:{}()', '🦜🦜 🧀', '?! 🦜 ...'];
    const vs = await e.embed(texts);
    vs.forEach((v, i) => {
      assert.equal(v.length, DIM);
      assert.ok(noNaN(v), `NaN for ${JSON.stringify(texts[i])}`);
      assert.ok(isZeroVector(v), `not zero for ${JSON.stringify(texts[i])}`);
    });
  });

  it('lets unknown words ([UNK], left out) and punctuation not pull the mean', async () => {
    assert.ok((await sim('database index', 'database 🦜 index 🧀')) > 0.999);
    assert.ok((await sim('database index', 'database, index!')) > 0.999);
  });

  it('truncates long texts to the first 512 tokens', async () => {
    const head = 'database index btree query '.repeat(150); // 600 tokens about databases
    const tail = 'banana bread cake flour oven '.repeat(2000); // then 10 000 about baking
    const [long, db, baking] = await e.embed([head + tail, 'database index btree query', 'banana bread cake flour oven']);
    assert.ok(noNaN(long) && Math.abs(norm(long) - 1) < 1e-4);
    assert.ok(dot(long, db) > 0.99, `long vs db ${dot(long, db)}`);
    assert.ok(dot(long, baking) < 0.5);
    // a huge text is fine too (cut before tokenizing)
    const [huge] = await e.embed(['memory '.repeat(200_000)]);
    assert.ok(Math.abs(norm(huge) - 1) < 1e-4);
  });

  it('gives the same vectors batched and one by one, in input order', async () => {
    const texts = Array.from(
      { length: 300 },
      (_, i) => `note ${i}: ${i % 3 ? 'the sqlite index uses a btree' : 'bake bread with flour'} ${'and more words '.repeat(i % 17)}`,
    );
    texts.splice(7, 0, '', 'qwxzzy');
    const batched = await e.embed(texts);
    assert.equal(batched.length, texts.length);
    for (const i of [0, 1, 7, 8, 50, 151, 299, 301]) {
      const [single] = await e.embed([texts[i]]);
      for (let d = 0; d < DIM; d++) assert.ok(Math.abs(single[d] - batched[i][d]) < 1e-5, `text ${i} dim ${d}`);
    }
  });

  it('serves concurrent calls, each with its own results', async () => {
    const texts = ['sqlite btree', 'banana bread', 'password reset', 'flight to rome', 'memory leak', 'kubernetes pod restart'];
    const expected = await e.embed(texts);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, k) => e.embed([texts[k % texts.length], texts[(k + 1) % texts.length]])),
    );
    results.forEach((r, k) => {
      assert.deepEqual([...r[0]], [...expected[k % texts.length]]);
      assert.deepEqual([...r[1]], [...expected[(k + 1) % texts.length]]);
    });
  });

  it('resolves an empty batch at once and rejects non-string input', async () => {
    assert.deepEqual(await e.embed([]), []);
    await assert.rejects(e.embed('text' as unknown as string[]), TypeError);
    await assert.rejects(e.embed(['ok', null as unknown as string]), /item 1 is null/);
    assert.equal((await e.embedOne('hello world')).length, DIM);
  });

  it('a daemon on the built-in model never loads a neural runtime (no onnxruntime in its address space)', async (t) => {
    if (process.platform !== 'linux') return t.skip('reads /proc/<pid>/maps');
    const d = await spawnDaemon({ args: [], env: { CAIRN_MODEL: 'builtin', CAIRN_ALLOW_REMOTE_MODELS: '0' } });
    try {
      const c = await d.client();
      let st = await c.call(R.status, {});
      for (
        const deadline = Date.now() + 60_000;
        st.embeddings.state === 'loading' && Date.now() < deadline;
        st = await c.call(R.status, {})
      ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(st.embeddings.state, 'ready');
      assert.equal(st.embeddings.model, BUILTIN_MODEL_ID);
      const a = await c.call(R.upsert, { namespace: 'project.rt', key: 'k', value: 'sessions live in redis' });
      assert.equal((await c.call(R.indexWait, { position: a.position, timeoutMs: 30_000 })).reached, true);
      assert.equal(
        (await c.call(R.search, { query: 'where are sessions kept', mode: 'vector', scope: { root: 'project.rt', includeUser: false } }))
          .hits[0]?.memory.key,
        'k',
      );
      const maps = fs.readFileSync(`/proc/${d.proc.pid}/maps`, 'utf8');
      assert.ok(maps.includes('better_sqlite3'), 'the check sees native modules (better-sqlite3 is mapped)');
      assert.ok(!/onnxruntime/i.test(maps), 'onnxruntime is mapped into the daemon');
    } finally {
      await d.stop();
    }
  });

  it('offline with downloads allowed (the default), the fallback to the built-in model loads no neural runtime either', async (t) => {
    if (process.platform !== 'linux') return t.skip('reads /proc/<pid>/maps');
    // port 9 (discard) refuses connections: the hub is unreachable, as on a machine with no network
    const env = { CAIRN_MODEL: 'Xenova/all-MiniLM-L6-v2', CAIRN_ALLOW_REMOTE_MODELS: '1', HF_ENDPOINT: 'http://127.0.0.1:9/' };
    const d = await spawnDaemon({ args: [], env });
    try {
      const c = await d.client();
      let st = await c.call(R.status, {});
      for (
        const deadline = Date.now() + 60_000;
        st.embeddings.state === 'loading' && Date.now() < deadline;
        st = await c.call(R.status, {})
      ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(st.embeddings.state, 'ready');
      assert.equal(st.embeddings.model, BUILTIN_MODEL_ID);
      assert.match(st.embeddings.fallbackReason ?? '', /could not be downloaded, the network seems unavailable/);
      const maps = fs.readFileSync(`/proc/${d.proc.pid}/maps`, 'utf8');
      assert.ok(maps.includes('better_sqlite3'), 'the check sees native modules (better-sqlite3 is mapped)');
      assert.ok(!/onnxruntime/i.test(maps), 'onnxruntime is mapped into the daemon');
    } finally {
      await d.stop();
    }
  });
});
