/**
 * The duplicate checks' LSH buckets (store/vector-lsh.ts, kept by VectorIndex when VectorTables.dupBands is set; off
 * by default): every live slot is listed under its namespace and each band of its signature, and nowhere else,
 * through inserts, re-written vectors, deletes, purges, slot reuse, namespace moves and growth; a duplicate check
 * above DUP_EXACT_MAX takes its candidates from its own namespace's buckets, visible ones only, and finds a near copy
 * there without listing the whole namespace.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { quantize, SIG_WORDS } from '../../daemon/src/store/quantize';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';
import { bandValue, bucketCandidates, newBucketScratch, type BandShape } from '../../daemon/src/store/vector-lsh';
import { DUP_EXACT_MAX, DUP_LSH_SHAPE, type VecModel } from '../../daemon/src/store/vectors';
import { cosine, tempCore } from '../helpers';

const DIM = 32;
function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}
const meta = (rowid: number, ns: number): MetaRow => ({
  rowid,
  ns,
  status: 'active',
  deleted_at: null,
  expires_at: null,
  valid_from: null,
  valid_to: null,
});

/** Every slot the buckets give for (namespace, band, value), against what the index's arrays say it should be. */
function assertBuckets(ix: VectorIndex, shape: BandShape, live: Map<number, number>): void {
  const b = ix.buckets!;
  const sc = newBucketScratch();
  const wantOf = (ns: number, k: number, v: number) =>
    [...live]
      .filter(([rowid, n]) => n === ns && bandValue(ix.sig, ix.slotOf.get(rowid)! * SIG_WORDS, k, shape.bits) === v)
      .map(([rowid]) => ix.slotOf.get(rowid)!)
      .sort((x, y) => x - y);
  for (const [rowid, ns] of live) {
    const s = ix.slotOf.get(rowid)!;
    for (let k = 0; k < shape.bands; k++) {
      const v = bandValue(ix.sig, s * SIG_WORDS, k, shape.bits);
      const out = new Int32Array(ix.size);
      sc.stamp++;
      if (sc.seen.length < ix.size) sc.seen = new Int32Array(ix.size);
      const n = b.probe(k, ns, v, ix.ns, ix.sig, sc.seen, sc.stamp, () => true, out, 0);
      assert.deepEqual(
        Array.from(out.subarray(0, n)).sort((x, y) => x - y),
        wantOf(ns, k, v),
        `row ${rowid} band ${k}`,
      );
    }
  }
}

describe('LSH buckets of the vector index', () => {
  for (const shape of [DUP_LSH_SHAPE, { bits: 8, bands: 32 }, { bits: 32, bands: 8 }])
    it(`${shape.bits}x${shape.bands}: list each live slot under its namespace and bands through writes, deletes, moves and growth`, () => {
      const r = rng(shape.bits);
      const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'none' }, false, Infinity, shape);
      const live = new Map<number, number>(); // rowid -> namespace
      const put = (rowid: number, ns: number, v = new Float32Array(DIM).map(() => r())) => {
        const z = quantize(v);
        ix.put(meta(rowid, ns), z.q, z.sig, z.inv);
        live.set(rowid, ns);
      };
      // Clusters of near copies (shared bands) in three namespaces; the index grows past its first capacity.
      const base = Array.from({ length: 20 }, () => new Float32Array(DIM).map(() => r()));
      for (let i = 1; i <= 1500; i++)
        put(
          i,
          1 + (i % 3),
          Float32Array.from(base[i % 20], (y) => y + 0.05 * r()),
        );
      assertBuckets(ix, shape, live);
      for (let i = 1; i <= 1500; i += 7) {
        ix.remove(i); // deleted: its slot is freed
        live.delete(i);
      }
      for (let i = 2; i <= 1500; i += 11) if (live.has(i)) put(i, live.get(i)!); // re-written vector, same namespace
      for (let i = 3; i <= 1500; i += 13)
        if (live.has(i)) {
          ix.setMeta(ix.slotOf.get(i)!, meta(i, 7)); // moved to another namespace
          live.set(i, 7);
        }
      for (let i = 1501; i <= 1700; i++) put(i, 1 + (i % 3)); // reuse the freed slots, then grow
      assertBuckets(ix, shape, live);
      // A removed memory is found under no namespace.
      const q = ix.sig.slice(ix.slotOf.get(1501)! * SIG_WORDS, (ix.slotOf.get(1501)! + 1) * SIG_WORDS);
      ix.remove(1501);
      live.delete(1501);
      for (const ns of [1, 2, 3, 7]) {
        const got = bucketCandidates(ix.buckets!, q, ns, ix.ns, ix.sig, 1, () => true, newBucketScratch(), ix.size);
        assert.ok(!Array.from(got).some((s) => ix.rowid[s] === 1501 && ix.status[s] !== 255));
        for (const s of got) assert.equal(ix.ns[s], ns, 'only slots of the namespace asked');
      }
      assertBuckets(ix, shape, live);
    });
});

describe('duplicate checks through the LSH buckets (VectorTables.dupBands)', () => {
  const c = tempCore();
  let model: VecModel;
  const r = rng(11);
  const vecs = new Map<number, { v: Float32Array; ns: string; id: string }>();
  let nsA = 0;
  let nsB = 0;
  before(async () => {
    c.store.vectors.dupBands = DUP_LSH_SHAPE;
    model = c.store.transaction(() => c.store.vectors.ensure('lsh-model', DIM));
    c.store.vectors.load(model);
    // project.a: 600 unrelated memories (above DUP_EXACT_MAX); project.b: 100.
    const items = Array.from({ length: 700 }, (_, i) => ({
      namespace: i < 600 ? 'project.a' : 'project.b',
      key: `k${i}`,
      value: `m ${i}`,
    }));
    const res = await c.core.call(R.upsertBatch, { items });
    c.store.transaction(() =>
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        const v = new Float32Array(DIM).map(() => r());
        const rowid = c.store.rowidOf(x.id)!;
        vecs.set(rowid, { v, ns: items[i].namespace, id: x.id });
        c.store.vectors.put(model, rowid, v, i);
      }),
    );
    const nsr = (p: string) => (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = ?`).get(p) as { rowid: number }).rowid;
    nsA = nsr('project.a');
    nsB = nsr('project.b');
  });
  after(() => c.close());

  const inA = () => [...vecs].filter(([, e]) => e.ns === 'project.a');
  const near = (v: Float32Array) => Float32Array.from(v, (y, i) => y + (i % 4 === 0 ? 0.03 : 0));
  /** The slots a check was given to rank (its group in the scan), as rowids. */
  const listed = (q: Float32Array, ns: number) => {
    const scan = c.store.vectors.prepareDuplicateScan(model, [{ vector: q, nsRowid: ns, exclude: -1 }], 5, Date.now());
    return Array.from(scan.slots.subarray(scan.starts[scan.group[0]], scan.starts[scan.group[0] + 1]), (s) => scan.arrays.rowid[s]);
  };

  it('finds a near copy above DUP_EXACT_MAX from its buckets, without listing the whole namespace', () => {
    assert.ok(inA().length > DUP_EXACT_MAX);
    for (const [rowid, e] of inA().slice(0, 30)) {
      const q = near(e.v);
      const got = c.store.vectors.similarInNamespace(model, q, nsA, -1, 0.9, 5, Date.now());
      assert.equal(got[0]?.rowid, rowid, `memory ${rowid}`);
      const l = listed(q, nsA);
      assert.ok(l.includes(rowid));
      assert.ok(l.length < inA().length / 4, `${l.length} listed of ${inA().length}: the buckets, not the namespace`);
      for (const x of l) assert.equal(vecs.get(x)!.ns, 'project.a');
    }
  });

  it("never lists another namespace's memories, even an identical vector", async () => {
    const [, e] = inA()[40];
    const w = await c.core.call(R.upsert, { namespace: 'project.b', key: 'twin', value: 'twin' });
    const twin = c.store.rowidOf(w.memory.id)!;
    c.store.transaction(() => c.store.vectors.put(model, twin, e.v, 1));
    vecs.set(twin, { v: e.v, ns: 'project.b', id: w.memory.id });
    assert.ok(!listed(e.v, nsA).includes(twin));
    assert.ok(!c.store.vectors.similarInNamespace(model, e.v, nsA, -1, 0.5, 5, Date.now()).some((h) => h.rowid === twin));
    // In its own namespace (100 memories + the twin: scored whole) it is found.
    assert.equal(c.store.vectors.similarInNamespace(model, e.v, nsB, -1, 0.99, 5, Date.now())[0].rowid, twin);
  });

  it('a deleted memory is not a candidate; a purged one leaves its buckets and its reused slot is found anew', async () => {
    const [[del, d], [pur, p]] = inA().slice(50, 52);
    await c.core.call(R.delete, { id: d.id, reason: 'test' });
    assert.ok(!listed(near(d.v), nsA).includes(del), 'deleted: not visible, not listed');
    assert.ok(!c.store.vectors.similarInNamespace(model, near(d.v), nsA, -1, 0.5, 5, Date.now()).some((h) => h.rowid === del));
    await c.core.call(R.delete, { id: p.id, reason: 'test' });
    await c.core.call(R.purge, { id: p.id });
    vecs.delete(pur);
    c.store.vectors.refresh();
    assert.ok(!listed(near(p.v), nsA).includes(pur));
    // A new memory (likely in the purged one's slot) with the purged one's vector is found by it.
    const w = await c.core.call(R.upsert, { namespace: 'project.a', key: 'fresh', value: 'fresh' });
    const fresh = c.store.rowidOf(w.memory.id)!;
    c.store.transaction(() => c.store.vectors.put(model, fresh, p.v, 2));
    vecs.set(fresh, { v: p.v, ns: 'project.a', id: w.memory.id });
    assert.equal(c.store.vectors.similarInNamespace(model, near(p.v), nsA, -1, 0.9, 5, Date.now())[0].rowid, fresh);
    // A re-written vector is found by its new value, not its old one.
    const [moved, m] = inA()[60];
    const other = new Float32Array(DIM).map(() => r());
    c.store.transaction(() => c.store.vectors.put(model, moved, other, 3));
    assert.ok(!listed(near(m.v), nsA).includes(moved) || cosine(near(m.v), other) > 0.5);
    assert.equal(c.store.vectors.similarInNamespace(model, near(other), nsA, -1, 0.9, 5, Date.now())[0].rowid, moved);
  });

  it('below DUP_EXACT_MAX a namespace is scored whole, as without buckets', () => {
    const inB = [...vecs].filter(([, e]) => e.ns === 'project.b');
    assert.ok(inB.length <= DUP_EXACT_MAX);
    const l = listed(
      new Float32Array(DIM).map(() => r()),
      nsB,
    );
    assert.deepEqual(
      [...l].sort((a, b) => a - b),
      inB.map(([x]) => x).sort((a, b) => a - b),
    );
  });
});
