/**
 * The static-model runtime (daemon/src/embed/static-model.ts) on small hand-made model folders:
 * BERT basic tokenization, greedy WordPiece, the weighted mean, the zero-vector guards, and every
 * way a folder can be broken. The real built-in model is tested in builtin.test.ts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  basicTokens,
  CACHE_WORDS,
  readStaticConfig,
  StaticModel,
  StaticProvider,
  STATIC_FORMAT,
} from '../../daemon/src/embed/static-model';
import { loadWithFallback } from '../../daemon/src/embed/provider';
import { tempDir } from '../helpers';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A model folder: tokens with 2-d vectors (exact in int8 when scale = 1) and scales. */
function makeModel(rows: Array<[string, [number, number], number]>, over: Partial<Record<string, unknown>> = {}): string {
  const dir = tempDir('cairn-static-');
  dirs.push(dir);
  const cfg = {
    cairn: { kind: 'static', format: STATIC_FORMAT, id: 'test/static', dimension: 2, vocabSize: rows.length, maxTokens: 8, ...over },
  };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
  fs.writeFileSync(path.join(dir, 'vocab.txt'), rows.map((r) => r[0]).join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'vectors.i8'), Buffer.from(Int8Array.from(rows.flatMap((r) => r[1])).buffer));
  const scales = Buffer.alloc(rows.length * 4);
  rows.forEach((r, i) => scales.writeFloatLE(r[2], i * 4));
  fs.writeFileSync(path.join(dir, 'scales.f32'), scales);
  return dir;
}

const ROWS: Array<[string, [number, number], number]> = [
  ['[UNK]', [0, 0], 0],
  ['un', [1, 0], 1],
  ['##want', [0, 1], 1],
  ['##ed', [0, 1], 1],
  ['runn', [1, 0], 1],
  ['##ing', [1, 0], 1],
  ['unwanted', [3, 4], 1], // a whole word wins over its pieces
  ['the', [100, 0], 0.01], // frequent word, small weight
  [',', [0, 50], 0], // punctuation: weight 0
  ['get', [0, 2], 1],
  ['user', [2, 0], 1],
  ['bad', [1, 1], Number.NaN], // a non-finite scale is read as 0
];

describe('static model runtime', () => {
  it('tokenizes like BERT uncased: lowercase, accents stripped, punctuation split, CJK spaced, controls dropped', () => {
    assert.deepEqual(basicTokens('Héllo, WORLD!'), ['hello', ',', 'world', '!']);
    assert.deepEqual(basicTokens('a\u0000b\u200bc\td'), ['abc', 'd']);
    assert.deepEqual(basicTokens('数据库index'), ['数', '据', '库', 'index']);
    assert.deepEqual(basicTokens("don't  stop—now"), ['don', "'", 't', 'stop', '—', 'now']);
    assert.deepEqual(basicTokens('   '), []);
  });

  it('splits words greedily (longest match first) and prefers a whole word in the vocabulary', () => {
    const m = StaticModel.load(makeModel(ROWS));
    const id = (t: string) => ROWS.findIndex((r) => r[0] === t);
    assert.deepEqual(m.tokenize('unwanted running'), [id('unwanted'), id('runn'), id('##ing')]);
    assert.deepEqual(m.tokenize('unwant'), [id('un'), id('##want')]);
    assert.deepEqual(
      m.tokenize('unzzz running'),
      [id('runn'), id('##ing')],
      'a word that cannot be split is [UNK] as a whole and left out',
    );
    assert.deepEqual(m.tokenize('getUser'), [id('get'), id('user')], 'identifiers are split before tokenizing');
    assert.equal(m.tokenize('running '.repeat(10)).length, 8, 'at most maxTokens');
  });

  it('remembers at most CACHE_WORDS words (a bulk import sees many once), with the same ids after a clear', () => {
    const m = StaticModel.load(makeModel(ROWS));
    const id = (t: string) => ROWS.findIndex((r) => r[0] === t);
    const cache = (m as unknown as { wordCache: Map<string, number[]> }).wordCache;
    let largest = 0;
    for (let i = 0; i < CACHE_WORDS * 1.5; i++) {
      m.tokenize(`running unwant${i}`); // a new word each time ("unwant" + digits: [UNK] as a whole)
      largest = Math.max(largest, cache.size);
    }
    assert.equal(largest, CACHE_WORDS, 'filled up to the cap, never past it');
    assert.ok(cache.size < CACHE_WORDS, 'cleared when full, then filled again');
    assert.deepEqual(m.tokenize('unwanted running'), [id('unwanted'), id('runn'), id('##ing')]);
  });

  it('embeds as the normalized weighted mean of token vectors', () => {
    const m = StaticModel.load(makeModel(ROWS));
    const v = m.embed('get, the user');
    // get (0,2) + user (2,0) + the (100,0)*0.01 = (3, 2); punctuation weight 0
    const n = Math.hypot(3, 2);
    assert.ok(Math.abs(v[0] - 3 / n) < 1e-6 && Math.abs(v[1] - 2 / n) < 1e-6, `${[...v]}`);
    const w = m.embed('unwanted');
    assert.ok(Math.abs(w[0] - 0.6) < 1e-6 && Math.abs(w[1] - 0.8) < 1e-6);
  });

  it('gives the zero vector, never NaN, when nothing counts', () => {
    const m = StaticModel.load(makeModel(ROWS));
    for (const t of ['', '  ', ',,,', 'zzz qqq', 'bad', 'bad ,']) {
      const v = m.embed(t);
      assert.deepEqual([...v], [0, 0], JSON.stringify(t));
    }
    // vectors that cancel out exactly: zero, not NaN
    const c = StaticModel.load(
      makeModel([
        ['[UNK]', [0, 0], 0],
        ['up', [5, 5], 1],
        ['down', [-5, -5], 1],
      ]),
    );
    assert.deepEqual([...c.embed('up down')], [0, 0]);
  });

  it('reads vector rows from disk on first use, and fails clearly when the file shrank or the model is closed', () => {
    const dir = makeModel(ROWS);
    const m = StaticModel.load(dir);
    // nothing read yet: the rows used first are the ones on disk at that moment
    fs.writeFileSync(
      path.join(dir, 'vectors.i8'),
      Buffer.from(Int8Array.from(ROWS.flatMap((r) => (r[0] === 'get' ? [5, 0] : r[1]))).buffer),
    );
    assert.deepEqual([...m.embed('get')], [1, 0]);
    fs.truncateSync(path.join(dir, 'vectors.i8'), 0);
    assert.deepEqual([...m.embed('get')], [1, 0], 'a block read once stays in memory');
    const fresh = StaticModel.load(makeModel(ROWS));
    fs.truncateSync(path.join(fresh.dir, 'vectors.i8'), 0);
    assert.throws(() => fresh.embed('user'), /vectors.i8: the file shrank while in use/);
    const closed = StaticModel.load(makeModel(ROWS));
    closed.close();
    assert.throws(() => closed.embed('user'), /closed/);
    assert.deepEqual([...closed.embed('zzz')], [0, 0], 'text with no known token needs no row');
  });

  it('refuses broken folders with a message naming the problem', () => {
    const broken = (mutate: (dir: string) => void) => {
      const dir = makeModel(ROWS);
      mutate(dir);
      return dir;
    };
    assert.throws(
      () => StaticModel.load(broken((d) => fs.writeFileSync(path.join(d, 'vocab.txt'), 'a\nb\n'))),
      /vocab.txt has 2 tokens, config.json says 12/,
    );
    assert.throws(
      () => StaticModel.load(broken((d) => fs.writeFileSync(path.join(d, 'vectors.i8'), Buffer.alloc(5)))),
      /vectors.i8 has 5 bytes, expected 12 x 2/,
    );
    assert.throws(
      () => StaticModel.load(broken((d) => fs.writeFileSync(path.join(d, 'scales.f32'), Buffer.alloc(4)))),
      /scales.f32 has 4 bytes/,
    );
    assert.throws(() => StaticModel.load(broken((d) => fs.rmSync(path.join(d, 'scales.f32')))), /ENOENT/);
    assert.throws(() => StaticModel.load(makeModel(ROWS, { dimension: 0 })), /positive integer cairn.dimension/);
    assert.throws(() => StaticModel.load(makeModel(ROWS, { format: 'other' })), /is not a cairn-static-1 static model/);
    assert.equal(readStaticConfig(path.join(makeModel(ROWS), 'nowhere')), null);
  });

  it('loads a static folder given as the model, without falling back, and reports what it is', async () => {
    const dir = makeModel(ROWS);
    const { provider, fallbackReason } = await loadWithFallback({
      model: dir,
      cacheDir: tempDir(),
      allowRemote: false,
      builtinPath: '/nonexistent',
    });
    assert.equal(fallbackReason, null);
    assert.ok(provider instanceof StaticProvider);
    assert.equal(provider.info.dimension, 2);
    assert.equal(provider.info.builtin, false);
    assert.equal(provider.info.maxTokens, 8);
    const [v] = await provider.embed(['unwanted']);
    assert.ok(Math.abs(v[1] - 0.8) < 1e-6);
  });

  it('a broken static folder falls back to the built-in model and says why', async () => {
    const dir = makeModel(ROWS);
    fs.writeFileSync(path.join(dir, 'vectors.i8'), Buffer.alloc(3));
    const { provider, fallbackReason } = await loadWithFallback({
      model: dir,
      cacheDir: tempDir(),
      allowRemote: false,
      builtinPath: path.join(__dirname, '..', '..', 'daemon', 'models', 'cairn-mpnet-static'),
    });
    assert.equal(provider.info.builtin, true);
    assert.match(fallbackReason ?? '', /vectors.i8 has 3 bytes/);
  });
});
