/**
 * The vector store: int8 vectors ranked exactly up to EXACT_MAX admitted rows,
 * SimHash pre-selection above it, scope and visibility admitted before the cut,
 * and the in-memory facts following the change log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { hyperplanes, quantize, SIG_BITS } from '../../daemon/src/store/quantize';
import { DUP_CANDIDATES, DUP_EXACT_MAX, type VecModel } from '../../daemon/src/store/vectors';
import { cosine, tempCore } from '../helpers';

const DIM = 32;
function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}

describe('vector store', () => {
  const c = tempCore();
  let model: VecModel;
  const vecs = new Map<number, { v: Float32Array; ns: string; id: string }>();
  const r = rng(42);
  before(async () => {
    model = c.store.transaction(() => c.store.vectors.ensure('test-model', DIM));
    c.store.vectors.load(model);
    const items = Array.from({ length: 1200 }, (_, i) => ({
      namespace: i % 3 === 0 ? 'project.a' : i % 3 === 1 ? 'project.b' : 'user.notes',
      key: `k${i}`,
      value: `memory ${i}`,
    }));
    const res = await c.core.call(R.upsertBatch, { items });
    c.store.transaction(() => {
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        const v = new Float32Array(DIM).map(() => r());
        const rowid = c.store.rowidOf(x.id)!;
        vecs.set(rowid, { v, ns: items[i].namespace, id: x.id });
        c.store.vectors.put(model, rowid, v, i);
      });
    });
  });
  after(() => c.close());

  const brute = (q: Float32Array, ok: (e: { ns: string; id: string }) => boolean, k: number) =>
    [...vecs.entries()]
      .filter(([, e]) => ok(e))
      .map(([rowid, e]) => ({ rowid, s: cosine(q, e.v) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, k);

  it('ranks exactly (up to int8 rounding) inside a scope, never returning an out-of-scope row', () => {
    for (let t = 0; t < 20; t++) {
      const q = new Float32Array(DIM).map(() => r());
      const hits = c.store.vectors.knn(model, q, { scope: { root: 'project.a', includeUser: false }, now: Date.now(), limit: 10 });
      const want = brute(q, (e) => e.ns === 'project.a', 10);
      assert.equal(hits.length, 10);
      assert.ok(hits.every((h) => vecs.get(h.rowid)!.ns === 'project.a'));
      assert.equal(hits[0].rowid, want[0].rowid);
      hits.forEach((h, i) => assert.ok(Math.abs(h.score - cosine(q, vecs.get(h.rowid)!.v)) < 0.02, `score ${i} close to the true cosine`));
      const overlap = hits.filter((h) => want.some((w) => w.rowid === h.rowid)).length;
      assert.ok(overlap >= 9, `top-10 overlap ${overlap}`);
    }
  });

  it('above the exact limit, SimHash pre-selection keeps the true neighbours (whole store)', () => {
    c.store.vectors.exactMax = 100;
    try {
      let overlap = 0;
      for (let t = 0; t < 20; t++) {
        const q = new Float32Array(DIM).map(() => r());
        const hits = c.store.vectors.knn(model, q, { now: Date.now(), limit: 10 });
        const want = brute(q, () => true, 10);
        overlap += hits.filter((h) => want.some((w) => w.rowid === h.rowid)).length;
      }
      assert.ok(overlap >= 190, `recall@10 ${overlap / 200}`);
    } finally {
      c.store.vectors.exactMax = Infinity;
    }
  });

  it('sees deletes and deleted namespaces made through the store before the next query', async () => {
    const [rowid, e] = [...vecs.entries()].find(([, x]) => x.ns === 'project.b')!;
    const q = e.v;
    const first = c.store.vectors.knn(model, q, { scope: { root: 'project.b', includeUser: false }, now: Date.now(), limit: 1 });
    assert.equal(first[0].rowid, rowid);
    await c.core.call(R.delete, { id: e.id });
    const next = c.store.vectors.knn(model, q, { scope: { root: 'project.b', includeUser: false }, now: Date.now(), limit: 1 });
    assert.notEqual(next[0].rowid, rowid, 'the deleted memory left the arm');
    const withDeleted = c.store.vectors.knn(model, q, {
      scope: { root: 'project.b', includeUser: false },
      include: { deleted: true },
      now: Date.now(),
      limit: 1,
    });
    assert.equal(withDeleted[0].rowid, rowid);
    await c.core.call(R.namespacesDelete, { path: 'project.b' });
    assert.deepEqual(c.store.vectors.knn(model, q, { scope: { root: 'project.b', includeUser: false }, now: Date.now(), limit: 5 }), []);
    assert.ok(c.store.vectors.knn(model, q, { now: Date.now(), limit: 50 }).every((h) => vecs.get(h.rowid)!.ns !== 'project.b'));
  });

  it('finds duplicates in a namespace above the threshold only', () => {
    const [rowid, e] = [...vecs.entries()].find(([, x]) => x.ns === 'project.a')!;
    const near = Float32Array.from(e.v, (x, i) => x + (i === 0 ? 0.02 : 0));
    const nsRowid = (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = 'project.a'`).get() as { rowid: number }).rowid;
    const hits = c.store.vectors.similarInNamespace(model, near, nsRowid, -1, 0.93, 5, Date.now());
    assert.equal(hits[0].rowid, rowid);
    assert.ok(hits.every((h) => h.score >= 0.93));
    assert.deepEqual(
      c.store.vectors.similarInNamespace(model, near, nsRowid, rowid, 0.93, 5, Date.now()).filter((h) => h.rowid === rowid),
      [],
      'the memory itself is excluded',
    );
  });

  it('finds the same duplicates through the Hamming pass as by scoring the whole namespace', () => {
    const vs = c.store.vectors;
    const nsRowid = (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = 'project.a'`).get() as { rowid: number }).rowid;
    const inNs = [...vecs.entries()].filter(([, x]) => x.ns === 'project.a');
    assert.ok(inNs.length > 300);
    const exact = (q: Float32Array, exclude: number, t: number) =>
      inNs
        .filter(([rowid]) => rowid !== exclude)
        .map(([rowid, x]) => ({ rowid, s: cosine(q, x.v) }))
        .filter((h) => h.s >= t)
        .sort((a, b) => b.s - a.s)
        .slice(0, 5);
    try {
      vs.dupExactMax = 50; // the 400 memories of project.a take the Hamming path
      vs.dupCandidates = 64;
      let checked = 0;
      for (const [rowid, x] of inNs.slice(0, 40)) {
        // a near copy of this memory: its duplicate check must find it (as a whole-namespace scan does)
        const near = Float32Array.from(x.v, (y, i) => y + (i % 5 === 0 ? 0.05 : 0));
        const hits = vs.similarInNamespace(model, near, nsRowid, -1, 0.66, 5, Date.now());
        const want = exact(near, -1, 0.66);
        assert.ok(want.length > 0 && want[0].rowid === rowid);
        assert.deepEqual(
          hits.map((h) => h.rowid),
          want.map((h) => h.rowid),
          `memory ${rowid}`,
        );
        assert.ok(hits.every((h) => h.score >= 0.66));
        checked++;
      }
      assert.equal(checked, 40);
      // Excluded: the memory itself never reports itself.
      const [self, sx] = inNs[0];
      assert.ok(!vs.similarInNamespace(model, sx.v, nsRowid, self, 0.66, 5, Date.now()).some((h) => h.rowid === self));
    } finally {
      vs.dupExactMax = DUP_EXACT_MAX;
      vs.dupCandidates = DUP_CANDIDATES;
    }
  });

  it('a duplicate check visits exactly the visible memories of its namespace, after deletes and purges', async () => {
    const nsRowid = (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = 'user.notes'`).get() as { rowid: number }).rowid;
    const inNs = () => [...vecs.entries()].filter(([, x]) => x.ns === 'user.notes');
    const check = (q: Float32Array, gone: Set<number>) => {
      const hits = c.store.vectors.similarInNamespace(model, q, nsRowid, -1, 0.2, 1000, Date.now());
      assert.ok(hits.length > 0);
      assert.ok(
        hits.every((h) => vecs.get(h.rowid)!.ns === 'user.notes'),
        'only rows of the namespace',
      );
      assert.ok(
        hits.every((h) => !gone.has(h.rowid)),
        'no deleted or purged row',
      );
      assert.ok(
        hits.every((h) => cosine(q, vecs.get(h.rowid)!.v) > 0.15),
        'every hit is (up to int8 rounding) above the threshold',
      );
      const must = inNs().filter(([rowid, x]) => !gone.has(rowid) && cosine(q, x.v) >= 0.25);
      for (const [rowid] of must)
        assert.ok(
          hits.some((h) => h.rowid === rowid),
          `row ${rowid} (cosine ${cosine(q, vecs.get(rowid)!.v).toFixed(3)}) found`,
        );
      return hits;
    };
    const q = inNs()[0][1].v;
    const before = check(q, new Set());
    const [del, purge] = before.slice(0, 2).map((h) => h.rowid);
    await c.core.call(R.delete, { id: vecs.get(del)!.id });
    await c.core.call(R.delete, { id: vecs.get(purge)!.id });
    await c.core.call(R.purge, { id: vecs.get(purge)!.id });
    const after = check(q, new Set([del, purge]));
    assert.equal(after.length, before.length - 2);
    // A new memory takes the purged memory's slot and is found in its namespace, and only there.
    const w = await c.core.call(R.upsert, { namespace: 'user.notes', key: 'fresh', value: 'fresh memory' });
    const fresh = c.store.rowidOf(w.memory.id)!;
    c.store.transaction(() => c.store.vectors.put(model, fresh, q, 1));
    vecs.set(fresh, { v: q, ns: 'user.notes', id: w.memory.id });
    const again = check(q, new Set([del, purge]));
    assert.equal(again.length, after.length + 1);
    assert.ok(again.some((h) => h.rowid === fresh && h.score > 0.99));
    const other = (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = 'project.a'`).get() as { rowid: number }).rowid;
    assert.ok(!c.store.vectors.similarInNamespace(model, q, other, -1, 0.2, 1000, Date.now()).some((h) => h.rowid === fresh));
  });

  it('computes every SimHash bit exactly as one plane at a time (stored signatures stay comparable)', () => {
    for (const dim of [37, 100, 256, 384]) {
      const p = hyperplanes(dim);
      const rand = rng(dim);
      for (let t = 0; t < 200; t++) {
        const v = new Float32Array(dim).map(() => rand());
        if (t % 50 === 0) v.fill(0, 0, dim >> 1); // half zeros: sums near zero
        const want = new Int32Array(SIG_BITS / 32);
        for (let b = 0; b < SIG_BITS; b++) {
          let d = 0;
          for (let i = 0; i < dim; i++) d += p[b * dim + i] * v[i];
          if (d >= 0) want[b >>> 5] |= 1 << (b & 31);
        }
        assert.deepEqual([...quantize(v).sig], [...want], `dim ${dim}, vector ${t}`);
      }
    }
  });

  it('quantizes zero vectors to no signature', () => {
    assert.equal(quantize(new Float32Array(8)).inv, 0);
  });
});
