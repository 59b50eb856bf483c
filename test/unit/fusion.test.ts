/** Rank fusion (retrieval/fusion.ts): the formula, K and the vector weight taken from the model kind. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adjustment, FTS_WEIGHT, FUSION, fuseArms, MAX_ADJUSTMENT, rankFused, rankFusedLazy, rrf } from '../../daemon/src/retrieval/fusion';

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

  it('bounds the adjustment by MAX_ADJUSTMENT, also for values outside [0, 1]', () => {
    const now = Date.UTC(2026, 0, 1);
    assert.ok(Math.abs(adjustment(1, 1, now, now) - 0.15) < 1e-12);
    assert.ok(adjustment(1, 1, now, now) <= MAX_ADJUSTMENT);
    assert.equal(adjustment(7, 3, now + 1e9, now), adjustment(1, 1, now, now), 'clamped');
    assert.equal(adjustment(-2, -1, 0, now), adjustment(0, 0, 0, now));
  });

  it('ranks as rankFused does while reading the facts of fewer candidates', () => {
    // A deterministic generator: the same cases every run.
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const now = Date.UTC(2026, 0, 1);
    let read = 0;
    let offered = 0;
    for (let trial = 0; trial < 500; trial++) {
      const n = 1 + Math.floor(rnd() * 200);
      const ids = Array.from({ length: n }, (_, i) => i + 1);
      const fts = ids.filter(() => rnd() < 0.6).map((rowid) => ({ rowid, score: rnd() }));
      const vec = ids.filter(() => rnd() < 0.6).map((rowid) => ({ rowid, score: 0.2 + rnd() }));
      const fused = fuseArms(fts, vec, trial % 2 ? FUSION.builtin : FUSION.transformer, 0.3);
      // Every third case: fused scores in a narrow band, where the adjustment decides who reaches the top.
      if (trial % 3 === 0) for (const e of fused.values()) e.fused = 0.5 + rnd() * 0.1;
      // Facts with ties (few distinct values) and rows gone since the arms ran.
      const facts = new Map(
        ids
          .filter(() => rnd() > 0.05)
          .map((rowid) => [
            rowid,
            {
              id: `m${Math.floor(rnd() * 50)}`,
              importance: Math.round(rnd() * 4) / 4,
              confidence: Math.round(rnd() * 2) / 2,
              updated_at: now - Math.floor(rnd() * 3) * 86_400_000 * 30,
            },
          ]),
      );
      const limit = 1 + Math.floor(rnd() * 30);
      const asked: number[] = [];
      const lazy = rankFusedLazy(
        fused,
        (rowids) => {
          asked.push(...rowids);
          return new Map(rowids.flatMap((r) => (facts.has(r) ? [[r, facts.get(r)!] as const] : [])));
        },
        now,
        limit,
      );
      assert.deepEqual(lazy, rankFused(fused, facts, now, limit), `trial ${trial}`);
      assert.equal(new Set(asked).size, asked.length, 'each candidate read once');
      read += asked.length;
      offered += fused.size;
    }
    assert.ok(read < offered * 0.8, `read ${read} of ${offered} candidates`);
  });
});
