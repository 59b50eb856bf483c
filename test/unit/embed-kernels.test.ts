/**
 * The embedding worker's SIMD kernels (embed/embed-kernels.ts): the built-in model's vectors and the SimHash
 * signatures they compute are bit-identical to the JavaScript loops' (the stored vectors and signatures were made by
 * those), on real texts, on random and edge-case vectors, and at a dimension the token-sum kernel does not take.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { fastSignature, planeLayout, TokenSums } from '../../daemon/src/embed/embed-kernels';
import { StaticModel } from '../../daemon/src/embed/static-model';
import { hyperplanes, signature, SIG_BITS } from '../../daemon/src/store/quantize';
import { ROOT } from '../helpers';

function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
}

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('embed kernels', () => {
  const model = StaticModel.load(path.join(ROOT, 'daemon', 'models', 'cairn-mpnet-static'));
  const texts = [
    'Use pnpm, not npm, in this repository',
    'getUserById returns null when the HTTPServer cache misses; see src/cache/user_store.ts',
    'MAX_RETRY_COUNT=5 and RETRY_BACKOFF_MS=250 in .env.production',
    'Ünïcödé wörds, 日本語のテキスト, and emoji 🎉 mixed with ASCII',
    'a',
    '\u{20000}\u{20001}', // no known token: the zero vector
    Array.from({ length: 900 }, (_, i) => `word${i % 50} token`).join(' '), // longer than the kernel's token queue
  ];

  it('runs here (WebAssembly SIMD)', () => {
    assert.ok(TokenSums.create(10, 256), 'the token-sum kernel runs on this runtime');
  });

  it('a text embeds bit-identically with the kernel and with the loop', () => {
    for (const t of texts) {
      const loop = model.embed(t, true);
      const kernel = model.embed(t);
      assert.deepEqual(bits(kernel), bits(loop), t.slice(0, 40));
    }
    // and many texts in a row (the kernel's sum starts from zero for each)
    const r = rng(7);
    for (let i = 0; i < 200; i++) {
      const t = Array.from(
        { length: 5 + Math.floor(r() * 60) },
        () => texts[Math.floor(r() * 4)].split(' ')[Math.floor(r() * 6)] ?? 'x',
      ).join(' ');
      assert.deepEqual(bits(model.embed(t)), bits(model.embed(t, true)), t);
    }
  });

  it('the zero vector for text without a known token, and for blank text', () => {
    assert.ok(model.embed('\u{20000}\u{20001}').every((x) => x === 0));
    assert.ok(model.embed('   ').every((x) => x === 0));
  });

  it('a signature is bit-identical with the kernel and with the loop', () => {
    const r = rng(42);
    for (const dim of [256, 384, 24, 7]) {
      for (let n = 0; n < 300; n++) {
        const v = new Float32Array(dim);
        for (let i = 0; i < dim; i++) v[i] = (r() - 0.5) * (n % 3 === 0 ? 1e-6 : 1);
        if (n % 7 === 0) v.fill(0, 0, dim >> 1); // half zero
        if (n % 11 === 0) v.fill(-0); // negative zeros only: a zero vector
        assert.deepEqual(Array.from(fastSignature(v)), Array.from(signature(v)), `dim ${dim} #${n}`);
      }
    }
    // the model's own vectors
    for (const t of texts) {
      const v = model.embed(t);
      assert.deepEqual(Array.from(fastSignature(v)), Array.from(signature(v)), t.slice(0, 40));
    }
  });

  it('a product of exactly zero sets its bit, as the loop does', () => {
    // v orthogonal to plane 0 (exact zero product): bit 0 is set by both
    const dim = 32;
    const p = hyperplanes(dim);
    const v = new Float32Array(dim);
    v[0] = p[1];
    v[1] = -p[0];
    const expect = signature(v);
    assert.equal(fastSignature(v)[0] & 1, expect[0] & 1);
    assert.deepEqual(Array.from(fastSignature(v)), Array.from(expect));
  });

  it('the plane layout holds every plane component once, in groups of 8', () => {
    const dim = 16;
    const p = hyperplanes(dim);
    const l = planeLayout(dim);
    assert.equal(l.length, SIG_BITS * dim);
    // plane 8g + j, component i is at (g * dim + i) * 8 + j
    assert.equal(l[(3 * dim + 5) * 8 + 6], p[(8 * 3 + 6) * dim + 5]);
    assert.equal(l[0], p[0]);
    assert.equal(l[1], p[dim]);
  });

  it('more tokens than its queue holds are summed in several calls, as one sum', () => {
    const dim = 32;
    const sums = TokenSums.create(6, dim, 2)!;
    const r = rng(3);
    for (let i = 0; i < sums.rows.length; i++) sums.rows[i] = Math.round((r() - 0.5) * 250);
    const toks = [0, 5, 2, 2, 4, 1, 3];
    const scales = toks.map(() => Math.fround(r() * 0.1));
    const want = new Float32Array(dim);
    toks.forEach((id, t) => {
      for (let j = 0; j < dim; j++) want[j] += scales[t] * sums.rows[id * dim + j];
    });
    toks.forEach((id, t) => sums.add(id, scales[t]));
    assert.deepEqual(bits(sums.take()), bits(want));
    // and the next sum starts from zero
    sums.add(1, 0.5);
    assert.deepEqual(
      Array.from(sums.take()),
      Array.from(sums.rows.subarray(dim, 2 * dim), (x) => Math.fround(0.5 * x)),
    );
  });

  it('a dimension the token-sum kernel does not take has none (the loop runs)', () => {
    assert.equal(TokenSums.create(10, 24), null);
  });
});
