/** Rank fusion (retrieval/fusion.ts): the formula, K and the vector weight taken from the model kind. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FTS_WEIGHT, FUSION, fuseArms, rrf } from '../../daemon/src/retrieval/fusion';

const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`);

describe('rank fusion', () => {
  it('scores rank 1 as 1.0 and lower ranks by K', () => {
    assert.equal(rrf(1, 2), 1);
    assert.equal(rrf(1, 5), 1);
    assert.equal(rrf(3, 2), 3 / 5);
    assert.equal(rrf(3, 5), 6 / 8);
    assert.equal(rrf(3), rrf(3, 2), 'the default K merges store lists');
  });

  it('fuses both arms with the K and weight it is given, and drops weak vector-only candidates', () => {
    const fts = [
      { rowid: 1, score: 9 },
      { rowid: 2, score: 5 },
    ];
    const vec = [
      { rowid: 2, score: 0.8 },
      { rowid: 3, score: 0.6 },
      { rowid: 4, score: 0.1 },
    ];
    for (const f of [FUSION.builtin, FUSION.transformer, { k: 60, vectorWeight: 2 }]) {
      const out = fuseArms(fts, vec, f, 0.3);
      const wsum = FTS_WEIGHT + f.vectorWeight;
      assert.deepEqual([...out.keys()].sort(), [1, 2, 3], 'rowid 4 is vector-only below the floor');
      near(out.get(1)!.fused, (FTS_WEIGHT * 1) / wsum);
      near(out.get(2)!.fused, (FTS_WEIGHT * rrf(2, f.k) + f.vectorWeight * 1) / wsum);
      near(out.get(3)!.fused, (f.vectorWeight * rrf(2, f.k)) / wsum);
      assert.deepEqual(out.get(2)!.fts, { rank: 2, score: 5 });
      assert.deepEqual(out.get(2)!.vector, { rank: 1, score: 0.8 });
      assert.equal(out.get(1)!.vector, null);
    }
    // K changes the order: a full-text rank-1 alone against a candidate at rank 2 in both arms.
    const lowK = fuseArms(fts, vec, { k: 1, vectorWeight: 0.5 }, 0.3);
    const highK = fuseArms(fts, vec, { k: 60, vectorWeight: 0.5 }, 0.3);
    assert.ok(lowK.get(1)!.fused > lowK.get(3)!.fused);
    assert.ok(highK.get(2)!.fused > highK.get(1)!.fused);
    assert.ok(lowK.get(2)!.fused < highK.get(2)!.fused);
  });
});
