import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isZeroVector, normalizeInPlace, parseModulesJson, parsePoolingConfig, pool } from '../../daemon/src/embed/pooling';

// batch of 2, seq 3, hidden 2; second row has one padding position at the end
const data = Float32Array.from([1, 0, /**/ 3, 4, /**/ 5, -2, 2, 2, /**/ -4, 6, /**/ 100, 100]);
const dims = [2, 3, 2];
const mask = BigInt64Array.from([1n, 1n, 1n, 1n, 1n, 0n]);

describe('pooling configuration', () => {
  it('reads sentence-transformers 1_Pooling/config.json flags', () => {
    assert.deepEqual(parsePoolingConfig({ pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }), ['cls']);
    assert.deepEqual(parsePoolingConfig({ pooling_mode_mean_tokens: true }), ['mean']);
    assert.deepEqual(parsePoolingConfig({ pooling_mode_cls_token: true, pooling_mode_max_tokens: true }), ['cls', 'max']);
    assert.deepEqual(parsePoolingConfig({ pooling_mode_lasttoken: true }), ['lasttoken']);
    assert.deepEqual(parsePoolingConfig({ pooling_mode: 'cls' }), ['cls']);
    assert.deepEqual(parsePoolingConfig({ pooling_mode: 'mean_tokens' }), ['mean']);
    assert.equal(parsePoolingConfig({ pooling_mode_cls_token: false }), null);
    assert.equal(parsePoolingConfig(null), null);
    assert.equal(parsePoolingConfig('cls'), null);
  });

  it('finds the Pooling module and Normalize in modules.json', () => {
    const modules = [
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ];
    assert.deepEqual(parseModulesJson(modules), { poolingPath: '1_Pooling', normalize: true });
    assert.deepEqual(parseModulesJson(modules.slice(0, 1)), { poolingPath: null, normalize: false });
    assert.equal(parseModulesJson({}), null);
  });
});

describe('pool', () => {
  it('mean ignores padding', () => {
    const [a, b] = pool(data, dims, mask, ['mean']);
    assert.deepEqual([...a], [3, 2 / 3].map(Math.fround));
    assert.deepEqual([...b], [-1, 4]);
  });

  it('cls takes the first token, lasttoken the last unmasked one', () => {
    assert.deepEqual(
      pool(data, dims, mask, ['cls']).map((v) => [...v]),
      [
        [1, 0],
        [2, 2],
      ],
    );
    assert.deepEqual(
      pool(data, dims, mask, ['lasttoken']).map((v) => [...v]),
      [
        [5, -2],
        [-4, 6],
      ],
    );
  });

  it('max, mean_sqrt_len and weightedmean', () => {
    assert.deepEqual(
      pool(data, dims, mask, ['max']).map((v) => [...v]),
      [
        [5, 4],
        [2, 6],
      ],
    );
    const [s] = pool(data, dims, mask, ['mean_sqrt_len']);
    assert.ok(Math.abs(s[0] - 9 / Math.sqrt(3)) < 1e-5);
    const [w] = pool(data, dims, mask, ['weightedmean']);
    assert.ok(Math.abs(w[0] - (1 * 1 + 2 * 3 + 3 * 5) / 6) < 1e-5);
  });

  it('concatenates several modes in sentence-transformers order', () => {
    const [a] = pool(data, dims, mask, ['cls', 'mean']);
    assert.equal(a.length, 4);
    assert.deepEqual([...a.slice(0, 2)], [1, 0]);
  });

  it('a fully masked row pools to zeros', () => {
    const [a] = pool(data, dims, [0, 0, 0, 1, 1, 1], ['mean', 'max']);
    assert.ok(isZeroVector(a));
  });

  it('rejects mismatched shapes', () => {
    assert.throws(() => pool(data, [2, 2, 2], mask, ['mean']), /expected/);
    assert.throws(() => pool(data, dims, [1, 1], ['mean']), /mask/);
  });
});

describe('normalizeInPlace', () => {
  it('gives unit length', () => {
    const v = normalizeInPlace(Float32Array.from([3, 4]));
    assert.deepEqual([...v], [0.6, 0.8].map(Math.fround));
  });

  it('maps zero, tiny, NaN and infinite vectors to zeros, never NaN', () => {
    for (const bad of [
      [0, 0, 0],
      [1e-30, 0, 0],
      [NaN, 1, 2],
      [Infinity, 1, 0],
      [-Infinity, 0, 0],
    ]) {
      const v = normalizeInPlace(Float32Array.from(bad));
      assert.ok(isZeroVector(v), `${bad} -> ${[...v]}`);
      assert.ok(v.every((x) => !Number.isNaN(x)));
    }
  });
});
