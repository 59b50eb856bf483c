/**
 * The vector arm's ranking loops (issue 8, search latency): the typed-array scoring and top-k heap return exactly
 * what scoring every admitted vector and sorting (score, then rowid) returns, ties included; a scope visits only
 * its namespaces' slots (or scans the store when the scope is large) and both ways admit the same rows; the
 * Hamming pre-selection scores exactly `candidates` slots and never lets an out-of-scope row in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { quantize } from '../../daemon/src/store/quantize';
import type { VecModel } from '../../daemon/src/store/vectors';
import { tempCore } from '../helpers';

const DIM = 24;
function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}
const normalized = (v: Float32Array) => {
  const n = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  return Float32Array.from(v, (x) => x / n);
};

describe('vector arm ranking', () => {
  const c = tempCore();
  let model: VecModel;
  const rows = new Map<number, { v: Float32Array; ns: string }>();
  const r = rng(7);
  // project.small is under a quarter of the store (visited through its namespace list); project.big is not.
  const nsOf = (i: number) => (i % 10 === 0 ? 'project.small' : i % 10 < 6 ? 'project.big' : i % 10 < 8 ? 'project.big.sub' : 'user.x');
  before(async () => {
    model = c.store.transaction(() => c.store.vectors.ensure('arm-model', DIM));
    c.store.vectors.load(model);
    const items = Array.from({ length: 900 }, (_, i) => ({ namespace: nsOf(i), key: `k${i}`, value: `memory ${i}` }));
    const res = await c.core.call(R.upsertBatch, { items });
    const shared = new Float32Array(DIM).map(() => r());
    c.store.transaction(() => {
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        // Every 7th memory has the same vector: equal scores, so the cut and the order rest on the rowid.
        const v = i % 7 === 0 ? shared : new Float32Array(DIM).map(() => r());
        const rowid = c.store.rowidOf(x.id)!;
        rows.set(rowid, { v, ns: items[i].namespace });
        c.store.vectors.put(model, rowid, v, i);
      });
    });
  });
  after(() => c.close());

  /** The reference: every admitted vector scored as the store scores it (int8 × normalized query), sorted. */
  const reference = (q: Float32Array, ok: (ns: string) => boolean, k: number) => {
    const qn = normalized(q);
    return [...rows.entries()]
      .filter(([, e]) => ok(e.ns))
      .map(([rowid, e]) => {
        const z = quantize(e.v);
        let s = 0;
        for (let i = 0; i < DIM; i++) s += z.q[i] * qn[i];
        return { rowid, score: Math.fround(s * z.inv) };
      })
      .sort((a, b) => b.score - a.score || a.rowid - b.rowid)
      .slice(0, k);
  };
  const same = (got: { rowid: number; score: number }[], want: { rowid: number; score: number }[]) => {
    assert.equal(got.length, want.length);
    got.forEach((h, i) => {
      assert.ok(Math.abs(h.score - want[i].score) < 1e-5, `score ${i}: ${h.score} vs ${want[i].score}`);
      // Only a float-rounding near-tie may swap two rows; an exact tie is ordered by rowid.
      if (h.rowid !== want[i].rowid) assert.ok(Math.abs(want[i].score - (want[i + 1]?.score ?? -9)) < 1e-5, `rank ${i}`);
    });
    assert.deepEqual(new Set(got.map((h) => h.rowid)).size, got.length);
  };
  const scopes: [string | undefined, (ns: string) => boolean][] = [
    [undefined, () => true],
    ['project.small', (ns) => ns === 'project.small'],
    ['project.big', (ns) => ns === 'project.big' || ns === 'project.big.sub'],
  ];

  it('exact path: the same rows, scores and order as scoring everything and sorting, in every scope', () => {
    for (const [root, ok] of scopes)
      for (let t = 0; t < 15; t++) {
        const q = new Float32Array(DIM).map(() => r());
        for (const k of [1, 5, 40]) {
          const got = c.store.vectors.knn(model, q, {
            ...(root ? { scope: { root, includeUser: false } } : {}),
            now: Date.now(),
            limit: k,
          });
          same(got, reference(q, ok, k));
        }
      }
  });

  it('ties: equal vectors rank by rowid, and the cut keeps the smallest rowids', () => {
    const tied = [...rows.entries()].filter(([, e]) => e.v === rows.values().next().value!.v).map(([rowid]) => rowid);
    assert.ok(tied.length > 50);
    const q = rows.values().next().value!.v; // the shared vector itself: every tied row scores the maximum
    const got = c.store.vectors.knn(model, q, { now: Date.now(), limit: 10 });
    assert.deepEqual(
      got.map((h) => h.rowid),
      [...tied].sort((a, b) => a - b).slice(0, 10),
    );
    const small = c.store.vectors.knn(model, q, { scope: { root: 'project.small', includeUser: false }, now: Date.now(), limit: 3 });
    assert.deepEqual(
      small.map((h) => h.rowid),
      tied
        .filter((x) => rows.get(x)!.ns === 'project.small')
        .sort((a, b) => a - b)
        .slice(0, 3),
    );
  });

  it('Hamming pre-selection: with candidates covering the scope it is exact; with fewer, only in-scope rows, deterministically', () => {
    const v = c.store.vectors;
    const [em, cand] = [v.exactMax, v.candidates];
    try {
      v.exactMax = 10;
      for (const [root, ok] of scopes) {
        const q = new Float32Array(DIM).map(() => r());
        const arm = { ...(root ? { scope: { root, includeUser: false } } : {}), now: Date.now(), limit: 20 };
        v.candidates = 100_000;
        same(v.knn(model, q, arm), reference(q, ok, 20));
        v.candidates = 30;
        const a = v.knn(model, q, arm);
        assert.equal(a.length, 20);
        assert.ok(
          a.every((h) => ok(rows.get(h.rowid)!.ns)),
          `in scope ${root}`,
        );
        assert.deepEqual(v.knn(model, q, arm), a);
        // Each hit's score is its true (stored) score: the approximation only decides which rows are scored.
        const exact = new Map(reference(q, ok, 10_000).map((x) => [x.rowid, x.score]));
        for (const h of a) assert.ok(Math.abs(h.score - exact.get(h.rowid)!) < 1e-5);
      }
    } finally {
      v.exactMax = em;
      v.candidates = cand;
    }
  });

  it('a namespace deleted or renamed out of the scope leaves the small-scope path at once', async () => {
    const q = new Float32Array(DIM).map(() => r());
    const before = c.store.vectors.knn(model, q, { scope: { root: 'project.small', includeUser: false }, now: Date.now(), limit: 5 });
    assert.equal(before.length, 5);
    await c.core.call(R.namespacesRename, { from: 'project.small', to: 'archive.small' });
    assert.deepEqual(
      c.store.vectors.knn(model, q, { scope: { root: 'project.small', includeUser: false }, now: Date.now(), limit: 5 }),
      [],
    );
    same(
      c.store.vectors.knn(model, q, { scope: { root: 'archive.small', includeUser: false }, now: Date.now(), limit: 5 }),
      reference(q, (ns) => ns === 'project.small', 5),
    );
    await c.core.call(R.namespacesDelete, { path: 'archive.small' });
    assert.deepEqual(
      c.store.vectors.knn(model, q, { scope: { root: 'archive.small', includeUser: false }, now: Date.now(), limit: 5 }),
      [],
    );
    const whole = c.store.vectors.knn(model, q, { now: Date.now(), limit: 900 });
    assert.ok(whole.every((h) => rows.get(h.rowid)!.ns !== 'project.small'));
  });
});
