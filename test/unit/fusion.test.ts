/** Rank fusion (retrieval/fusion.ts): the formula, K and the vector weight taken from the model kind. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  adjustment,
  armConfidence,
  FTS_WEIGHT,
  FUSION,
  FUSION_RULES,
  fuseArms,
  MAX_ADJUSTMENT,
  minMax,
  rankFused,
  rankFusedLazy,
  rrf,
  type ArmCandidate,
  type FusionRuleName,
} from '../../daemon/src/retrieval/fusion';

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

describe('fusion rules compared by bench/locomo.ts (issue 27)', () => {
  const list = (...scores: number[]): ArmCandidate[] => scores.map((score, i) => ({ rowid: i + 1, score }));
  const rules = Object.keys(FUSION_RULES) as FusionRuleName[];
  // A deterministic generator: the same cases every run.
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  /** Two arms over rowids 1..n, each best first; BM25-like and cosine-like scores, ties included. */
  const arms = () => {
    const n = 1 + Math.floor(rnd() * 60);
    const pick = () =>
      Array.from({ length: n }, (_, i) => i + 1)
        .filter(() => rnd() < 0.6)
        .sort(() => rnd() - 0.5);
    const sorted = (ids: number[], s: () => number) => {
      const scores = ids.map(s).sort((a, b) => b - a);
      return ids.map((rowid, i) => ({ rowid, score: scores[i] }));
    };
    return { fts: sorted(pick(), () => Math.round(rnd() * 40) / 4), vec: sorted(pick(), () => rnd()) };
  };

  it('normalizes an arm min-max, and a flat or one-candidate arm to 1', () => {
    assert.deepEqual(minMax(list(9, 5, 1)), [1, 0.5, 0]);
    assert.deepEqual(minMax(list(0.4, 0.4)), [1, 1]);
    assert.deepEqual(minMax(list(3)), [1]);
    assert.deepEqual(minMax([]), []);
  });

  it('rates an arm confident when its top stands out from the rest, not when its list is flat', () => {
    assert.equal(armConfidence(list(10, 1, 1, 1)), 1);
    assert.equal(armConfidence(list(5, 5, 5, 5)), 0, 'all equal');
    assert.equal(armConfidence(list(5)), 0, 'one candidate ranks nothing');
    assert.equal(armConfidence([]), 0);
    near(armConfidence(list(5, 5, 5, 1)), 1 / 3);
    assert.equal(armConfidence(list(5, 5, 5, 5, 1), 5), 0, 'fewer than top + 1 below the top');
    near(armConfidence(list(10, 9, 9, 1, 1, 1), 2), 1 - 8 / 9 / 4);
    assert.ok(armConfidence(list(10, 2, 1.9, 1.8)) > armConfidence(list(10, 9.9, 9.8, 1)), 'scale-free: shape, not size');
    near(armConfidence(list(10, 2, 1)), armConfidence(list(1000, 200, 100)));
  });

  it('keeps every fused score in [0, 1] under every rule', () => {
    for (let trial = 0; trial < 300; trial++) {
      const { fts, vec } = arms();
      for (const rule of rules)
        for (const e of FUSION_RULES[rule](fts, vec, FUSION.builtin, 0.3).values())
          assert.ok(e.fused >= 0 && e.fused <= 1 + 1e-12, `${rule}: ${e.fused}`);
    }
    // The extremes: found first by both arms is 1, by one arm alone at most that arm's share.
    for (const rule of ['combsum', 'combmnz', 'confidence', 'confidence-rank'] as const) {
      const out = FUSION_RULES[rule](list(3, 2, 1), list(0.9, 0.5, 0.4), FUSION.builtin, 0.3);
      near(out.get(1)!.fused, 1);
    }
  });

  it('never lowers a candidate that moves up in one arm (scores stay, rowids swap)', () => {
    // `agreement` is left out: its vector weight depends on which rowids share the two top tens, so a move across
    // the tenth place can change every candidate's weights.
    const monotone = rules.filter((r) => r !== 'agreement');
    for (let trial = 0; trial < 300; trial++) {
      const { fts, vec } = arms();
      for (const which of ['fts', 'vec'] as const) {
        const arm = which === 'fts' ? fts : vec;
        if (arm.length < 2) continue;
        const i = 1 + Math.floor(rnd() * (arm.length - 1));
        const moved = arm.map((h) => ({ ...h }));
        [moved[i - 1].rowid, moved[i].rowid] = [moved[i].rowid, moved[i - 1].rowid];
        const up = arm[i].rowid;
        for (const rule of monotone) {
          const before = FUSION_RULES[rule](fts, vec, FUSION.builtin, 0).get(up)!.fused;
          const after = FUSION_RULES[rule](which === 'fts' ? moved : fts, which === 'vec' ? moved : vec, FUSION.builtin, 0).get(up)!.fused;
          assert.ok(after >= before - 1e-12, `${rule}, ${which}, trial ${trial}: ${before} -> ${after}`);
        }
      }
    }
  });

  it('weighs an arm with no confident ranking less than one with a clear top', () => {
    // Eight candidates each (the five-at-the-top rule needs a rest below its top five), disjoint.
    const clear = list(12, 2, 1.9, 1.8, 1.7, 1.6, 1.5, 1);
    const flat = list(0.61, 0.61, 0.61, 0.61, 0.61, 0.61, 0.6, 0.4).map((h) => ({ ...h, rowid: h.rowid + 10 }));
    for (const rule of ['confidence', 'confidence5', 'confidence-rank', 'confidence-rrf'] as const) {
      const a = FUSION_RULES[rule](clear, flat, FUSION.builtin, 0);
      assert.ok(a.get(1)!.fused > a.get(11)!.fused, `${rule}: the full-text arm's clear top leads`);
      const b = FUSION_RULES[rule](flat, clear, FUSION.builtin, 0);
      assert.ok(b.get(1)!.fused > b.get(11)!.fused, `${rule}: the vector arm's clear top leads`);
    }
    // CombSUM weighs both alike whatever their shape: the two tops tie.
    const c = FUSION_RULES.combsum(clear, flat, FUSION.builtin, 0);
    near(c.get(1)!.fused, c.get(11)!.fused);
    // `agreement`: a vector arm sharing nothing with the full-text top ten weighs nothing; each shared one adds a tenth.
    const apart = FUSION_RULES.agreement(clear, flat, FUSION.builtin, 0);
    assert.equal(apart.get(11)!.fused, 0);
    near(apart.get(1)!.fused, 1);
    const vecSame = clear.map((h, i) => ({ ...h, score: 0.9 - i / 10 }));
    const same = FUSION_RULES.agreement(clear, vecSame, FUSION.builtin, 0);
    near(same.get(1)!.fused, 1);
    // 8 of the vector arm's top ten are in full text's: weight 0.8 against full text's 1.
    near(same.get(2)!.fused, (minMax(clear)[1] + 0.8 * minMax(vecSame)[1]) / 1.8);
  });

  it('drops vector-only candidates under the floor under every rule', () => {
    for (const rule of rules) {
      const out = FUSION_RULES[rule](
        list(3, 2),
        [
          { rowid: 2, score: 0.1 },
          { rowid: 9, score: 0.1 },
          { rowid: 8, score: 0.5 },
        ],
        FUSION.builtin,
        0.3,
      );
      assert.deepEqual([...out.keys()].sort(), [1, 2, 8], rule);
      assert.deepEqual(out.get(2)!.vector, { rank: 1, score: 0.1 }, `${rule}: a full-text candidate keeps its vector rank`);
    }
  });
});
