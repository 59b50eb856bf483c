/**
 * The compact vector index (issue 27, a million memories in 400 MiB): above VectorTables.compactAbove the index in
 * memory holds 4-bit vectors beside the signatures, a scan ranks rerankPool(limit) by them, and those are ranked
 * again by the int8 vectors read from disk. On a set no larger than the pool the answer is exactly the int8 ranking;
 * scope, visibility and filters decide the admitted set before anything is ranked or cut; writes, deletes and purges
 * reach it; an int8 index that grows past the limit turns compact in place; the 4-bit SIMD kernel and the JavaScript
 * loop rank alike; duplicate checks score exactly. And a store above Indexer.lazyAbove opens without its index in
 * memory: the first search answers from full text while it loads, and the vector arm answers once it is in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { Indexer } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { pack4, Q4_CLIP_RMS, q4Bytes, quantize } from '../../daemon/src/store/quantize';
import { rerankPool, runDuplicateScan } from '../../daemon/src/store/vector-scan';
import { DUP_RERANK } from '../../daemon/src/store/vector-tuning';
import type { VecModel } from '../../daemon/src/store/vectors';
import { tempCore, until } from '../helpers';

function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}
const normalized = (v: Float32Array) => {
  const n = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  return Float32Array.from(v, (x) => x / n);
};
type Hit = { rowid: number; score: number };

describe('pack4', () => {
  it("scales each int8 component by its vector's RMS, clips to -7..7, in the kernel layout, and returns 1/norm", () => {
    const q = Int8Array.from({ length: 40 }, (_, i) => (i === 0 ? 127 : ((i * 37) % 41) - 20));
    const out = new Uint8Array(q4Bytes(40) + 3);
    assert.equal(q4Bytes(40), 32, 'two blocks of 32 components');
    const inv = pack4(q, 40, out, 3);
    const k = 7 / (Q4_CLIP_RMS * Math.sqrt(q.reduce((a, x) => a + x * x, 0) / 40));
    const back = (i: number) => {
      const b = out[3 + (i >> 5) * 16 + (i & 15)];
      return ((i & 16 ? b >> 4 : b & 15) as number) - 8;
    };
    let ss = 0;
    let clipped = 0;
    for (let i = 0; i < 64; i++) {
      if (i < 40 && Math.abs(q[i] * k) > 7.5) clipped++;
      const want = i < 40 ? Math.max(-7, Math.min(7, Math.round(q[i] * k))) : 0; // padding components are zero
      assert.equal(back(i), want + 0, `component ${i}`); // + 0: no negative zero
      ss += want * want;
    }
    assert.ok(clipped > 0, 'the largest components are clipped');
    assert.ok(Math.abs(inv - 1 / Math.sqrt(ss)) < 1e-12);
    assert.equal(pack4(new Int8Array(40), 40, out, 0), 0, 'a zero vector');
  });
});

for (const DIM of [64, 24])
  describe(`compact vector index, ${DIM}-d (${DIM % 32 === 0 ? '4-bit SIMD kernel' : 'JavaScript loop'})`, () => {
    const c = tempCore();
    let model: VecModel;
    const rows = new Map<number, { v: Float32Array; ns: string }>();
    const r = rng(DIM);
    const nsOf = (i: number) => (i % 10 === 0 ? 'project.small' : i % 10 < 7 ? 'project.big' : 'user.x');
    const scopes: [string | undefined, (ns: string) => boolean][] = [
      [undefined, () => true],
      ['project.small', (ns) => ns === 'project.small'],
      ['project.big', (ns) => ns === 'project.big'],
    ];
    before(async () => {
      model = c.store.transaction(() => c.store.vectors.ensure('compact-model', DIM));
      c.store.vectors.compactAbove = 0;
      c.store.vectors.load(model);
      const items = Array.from({ length: 600 }, (_, i) => ({
        namespace: nsOf(i),
        key: `k${i}`,
        value: `memory ${i}`,
        tags: [i % 3 ? 'b' : 'a'],
      }));
      const res = await c.core.call(R.upsertBatch, { items });
      c.store.transaction(() =>
        res.results.forEach((x, i) => {
          if (!x.ok) throw new Error('write failed');
          const v = new Float32Array(DIM).map(() => r());
          const rowid = c.store.rowidOf(x.id)!;
          rows.set(rowid, { v, ns: items[i].namespace });
          c.store.vectors.put(model, rowid, v, i);
        }),
      );
    });
    after(() => c.close());

    /** Every admitted vector scored by its stored int8 vector (float64 sums, as the re-ranking does), sorted. */
    const reference = (q: Float32Array, ok: (rowid: number) => boolean, k: number): Hit[] => {
      const qn = normalized(q);
      return [...rows.entries()]
        .filter(([rowid]) => ok(rowid))
        .map(([rowid, e]) => {
          const z = quantize(e.v);
          let dot = 0,
            ss = 0;
          for (let i = 0; i < DIM; i++) {
            dot += z.q[i] * qn[i];
            ss += z.q[i] * z.q[i];
          }
          return { rowid, score: Math.fround(dot / Math.sqrt(ss)) };
        })
        .sort((a, b) => b.score - a.score || a.rowid - b.rowid)
        .slice(0, k);
    };
    const knn = (q: Float32Array, root: string | undefined, limit: number) =>
      c.store.vectors.knn(model, q, { ...(root ? { scope: { root, includeUser: false } } : {}), now: Date.now(), limit });

    it('is compact, and holds 4-bit vectors instead of int8 ones', () => {
      const bytes = c.store.vectors.memoryBytes();
      assert.ok(bytes > 0);
      // 600 int8 vectors alone would be DIM * 600 bytes more than their 4-bit copies.
      const v = c.store.vectors as unknown as { index: { q: Int8Array; q4: Uint8Array | null; compact: boolean } };
      assert.equal(v.index.compact, true);
      assert.equal(v.index.q.length, 0);
      assert.ok(v.index.q4 && v.index.q4.length >= 600 * q4Bytes(DIM));
    });

    it('on a set no larger than the re-ranking pool: exactly the int8 ranking, scores included, in every scope', () => {
      for (const [root, okNs] of scopes)
        for (let t = 0; t < 8; t++) {
          const q = new Float32Array(DIM).map(() => r());
          const ok = (rowid: number) => okNs(rows.get(rowid)!.ns);
          const admitted = [...rows.keys()].filter(ok).length;
          // The whole store (600) fits a pool of 4 × 150; a scope of 60 fits any pool.
          for (const limit of root === 'project.small' ? [1, 5, 40] : [150]) {
            assert.ok(admitted <= rerankPool(limit));
            assert.deepEqual(knn(q, root, limit), reference(q, ok, limit), `scope ${root} limit ${limit}`);
          }
        }
    });

    it('on a larger set: re-ranked scores are the int8 ones, and recall@10 against exact stays high', () => {
      let found = 0;
      const T = 30;
      for (let t = 0; t < T; t++) {
        const q = new Float32Array(DIM).map(() => r());
        const got = knn(q, undefined, 10);
        const exact = reference(q, () => true, 10);
        const all = new Map(reference(q, () => true, 1000).map((h) => [h.rowid, h.score]));
        assert.equal(got.length, 10);
        for (const h of got) assert.equal(h.score, all.get(h.rowid), 'a hit carries its int8 score');
        const want = new Set(exact.map((h) => h.rowid));
        found += got.filter((h) => want.has(h.rowid)).length;
      }
      assert.ok(found / (T * 10) >= 0.97, `recall@10 ${found / (T * 10)}`);
    });

    it('scope, visibility and filter decide the admitted set before the cut: nearer rows outside never take a place', async () => {
      // Twenty memories outside the scope (and ten deleted inside it) hold the query's own vector.
      const q = new Float32Array(DIM).map(() => r());
      const outside = await c.core.call(R.upsertBatch, {
        items: Array.from({ length: 20 }, (_, i) => ({ namespace: 'project.big', key: `near-${i}`, value: `near ${i}` })),
      });
      const inside = await c.core.call(R.upsertBatch, {
        items: Array.from({ length: 10 }, (_, i) => ({ namespace: 'project.small', key: `gone-${i}`, value: `gone ${i}` })),
      });
      const ids = [...outside.results, ...inside.results].map((x) => (x.ok ? x.id : ''));
      c.store.transaction(() => ids.forEach((id) => c.store.vectors.put(model, c.store.rowidOf(id)!, q, 0)));
      for (const x of inside.results) if (x.ok) await c.core.call(R.delete, { id: x.id });
      const small = (rowid: number) => rows.get(rowid)?.ns === 'project.small';
      const got = knn(q, 'project.small', 5);
      assert.deepEqual(got, reference(q, small, 5));
      const whole = knn(q, undefined, 20);
      assert.deepEqual(new Set(whole.map((h) => h.rowid)), new Set(outside.results.map((x) => (x.ok ? c.store.rowidOf(x.id)! : 0))));
      // A filter: only tag `a` of project.small.
      const tagged = c.store.vectors.knn(model, q, {
        scope: { root: 'project.small', includeUser: false },
        filter: { field: 'tags', op: 'has', value: 'a' },
        now: Date.now(),
        limit: 3,
      });
      const keys = [...rows.keys()].filter(small);
      const tagA = new Set(
        keys.filter((rowid) => {
          const i = [...rows.keys()].indexOf(rowid);
          return i % 3 === 0;
        }),
      );
      assert.deepEqual(
        tagged,
        reference(q, (rowid) => tagA.has(rowid), 3),
      );
      for (const x of outside.results) if (x.ok) await c.core.call(R.delete, { id: x.id });
      for (const id of ids) await c.core.call(R.purge, { id });
      assert.deepEqual(
        knn(q, undefined, 5),
        reference(q, () => true, 5),
        'purged: gone from the index',
      );
    });

    it('writes, replaced vectors, deletes and purges are reflected at the next query', async () => {
      const q = new Float32Array(DIM).map(() => r());
      const w = await c.core.call(R.upsert, { namespace: 'project.small', key: 'fresh', value: 'fresh' });
      const rowid = c.store.rowidOf(w.memory.id)!;
      c.store.transaction(() => c.store.vectors.put(model, rowid, q, 1));
      assert.equal(knn(q, 'project.small', 1)[0].rowid, rowid, 'a new vector is found at once');
      const other = new Float32Array(DIM).map(() => r());
      c.store.transaction(() => c.store.vectors.put(model, rowid, other, 2));
      const after = knn(q, 'project.small', 100).find((h) => h.rowid === rowid);
      rows.set(rowid, { v: other, ns: 'project.small' });
      assert.equal(after?.score, reference(q, (x) => x === rowid, 1)[0].score, 'a replaced vector is scored as replaced');
      await c.core.call(R.delete, { id: w.memory.id });
      assert.ok(!knn(other, 'project.small', 100).some((h) => h.rowid === rowid), 'deleted');
      await c.core.call(R.purge, { id: w.memory.id });
      rows.delete(rowid);
      assert.ok(!knn(other, undefined, 1000).some((h) => h.rowid === rowid), 'purged');
    });

    it('duplicate checks score by the int8 vectors', () => {
      const [rowid, e] = [...rows.entries()].find(([, x]) => x.ns === 'project.big')!;
      const nsRowid = (
        c.store.db.prepare('SELECT nn.rowid AS r FROM memories m JOIN namespaces nn ON nn.id = m.ns_id WHERE m.rowid = ?').get(rowid) as {
          r: number;
        }
      ).r;
      const got = c.store.vectors.similarInNamespace(model, e.v, nsRowid, rowid, -1, 5, Date.now());
      const want = reference(e.v, (x) => x !== rowid && rows.get(x)!.ns === 'project.big', 5);
      assert.deepEqual(got, want);
      // The scan hands DUP_RERANK of its candidates to that re-ranking (a search's pool would be rerankPool(5) = 64):
      // half the int8 vectors read per check, and the same 5 reported.
      assert.ok(DUP_RERANK < rerankPool(5));
      const scan = c.store.vectors.prepareDuplicateScan(model, [{ vector: e.v, nsRowid, exclude: rowid }], 5, Date.now());
      assert.equal(scan.rerank, DUP_RERANK);
      assert.equal(
        runDuplicateScan(scan).counts[0],
        DUP_RERANK,
        `${[...rows.values()].filter((x) => x.ns === 'project.big').length} in the namespace`,
      );
    });
  });

describe('an int8 index that grows past compactAbove', () => {
  const c = tempCore();
  after(() => c.close());
  it('turns compact in place and keeps answering exactly on small sets', async () => {
    const DIM = 32;
    const r = rng(3);
    const model = c.store.transaction(() => c.store.vectors.ensure('grow-model', DIM));
    c.store.vectors.compactAbove = 100;
    c.store.vectors.load(model);
    const v = c.store.vectors as unknown as { index: { compact: boolean } };
    assert.equal(v.index.compact, false);
    const res = await c.core.call(R.upsertBatch, {
      items: Array.from({ length: 150 }, (_, i) => ({ namespace: 'project.a', key: `k${i}`, value: `m ${i}` })),
    });
    const vecs = new Map<number, Float32Array>();
    const q = new Float32Array(DIM).map(() => r());
    const before: Hit[][] = [];
    c.store.transaction(() =>
      res.results.slice(0, 100).forEach((x, i) => {
        const rowid = c.store.rowidOf(x.ok ? x.id : '')!;
        vecs.set(
          rowid,
          new Float32Array(DIM).map(() => r()),
        );
        c.store.vectors.put(model, rowid, vecs.get(rowid)!, i);
      }),
    );
    before.push(c.store.vectors.knn(model, q, { now: Date.now(), limit: 10 }));
    assert.equal(v.index.compact, false, 'at the limit: still int8');
    c.store.transaction(() =>
      res.results.slice(100).forEach((x, i) => {
        const rowid = c.store.rowidOf(x.ok ? x.id : '')!;
        vecs.set(
          rowid,
          new Float32Array(DIM).map(() => r()),
        );
        c.store.vectors.put(model, rowid, vecs.get(rowid)!, i);
      }),
    );
    assert.equal(v.index.compact, true, 'past it: compact');
    const now = c.store.vectors.knn(model, q, { now: Date.now(), limit: 40 });
    // The first hundred, ranked before by the int8 index, keep their scores and order among the 150.
    const first = new Set(before[0].map((h) => h.rowid));
    const kept = now.filter((h) => first.has(h.rowid));
    for (const h of before[0]) {
      const k = kept.find((x) => x.rowid === h.rowid);
      assert.ok(k, `rowid ${h.rowid} still found`);
      assert.ok(Math.abs(k.score - h.score) < 1e-5);
    }
    assert.equal(now.length, 40);
  });
});

describe('the vector count of an index not in memory (store/status)', () => {
  const c = tempCore();
  after(() => c.close());
  it('is counted once, and again after a vector is written or purged', async () => {
    const model = c.store.transaction(() => c.store.vectors.ensure('count-model', 32));
    const put = async (key: string) => {
      const w = await c.core.call(R.upsert, { namespace: 'project.a', key, value: key });
      c.store.transaction(() => c.store.vectors.put(model, c.store.rowidOf(w.memory.id)!, new Float32Array(32).fill(0.5), 1));
      return w.memory.id;
    };
    await put('a');
    await put('b');
    c.store.vectors.unload();
    assert.equal(c.store.vectors.countQuick(model), 2);
    const id = await put('c');
    assert.equal(c.store.vectors.countQuick(model), 3);
    await c.core.call(R.delete, { id });
    await c.core.call(R.purge, { id });
    assert.equal(c.store.vectors.countQuick(model), 2);
    assert.equal(c.store.vectors.loaded(), null, 'counted without reading the index');
  });
});

describe('a store above lazyAbove opens without its vector index in memory', () => {
  const c = tempCore();
  let e: Embedder;
  let first: Indexer;
  let ix: Indexer | null = null;
  const TOPICS = ['the login session token is stored in redis', 'postgres backups run nightly to s3', 'deploy with make release'];
  before(async () => {
    first = new Indexer(c.store, () => {});
    await first.use(await Embedder.start({ model: 'builtin', allowRemote: false }));
    const res = await c.core.call(R.upsertBatch, {
      items: Array.from({ length: 400 }, (_, i) => ({ namespace: 'project.a', key: `n${i}`, value: `${TOPICS[i % 3]} (note ${i})` })),
    });
    assert.equal(res.results.filter((x) => x.ok).length, 400);
    assert.ok((await first.waitFor(c.store.position(), 60_000)).reached);
    await first.stop(); // closes its embedder: the restarted daemon starts its own
    e = await Embedder.start({ model: 'builtin', allowRemote: false });
  });
  after(async () => {
    await ix?.stop();
    await e?.close();
    c.close();
  });

  it('answers from full text while it loads on first use, then from the vector arm; writes meanwhile reach it', async () => {
    const want = c.store.vectors.knn(c.store.vectors.models()[0], (await e.embed(['where are backups kept']))[0], {
      now: Date.now(),
      limit: 5,
    });
    // A new indexer over the same store (a restarted daemon), with every store above its lazy limit.
    const logs: string[] = [];
    ix = new Indexer(c.store, (m) => logs.push(m));
    ix.lazyAbove = 0;
    c.store.vectors.loadSlice = 50;
    c.store.vectors.compactAbove = 0; // and compact, so the worker's KNN is ranked again from disk
    await ix.use(e);
    assert.equal(ix.state, 'ready');
    assert.equal(c.store.vectors.loaded(), null, 'not in memory after start');
    assert.deepEqual(ix.status().index, { bytes: 0, compact: false }, 'store/status: nothing in memory');
    c.core.hooks.vectors = ix;
    const during = await c.core.call(R.search, { query: 'backups nightly', mode: 'hybrid', limit: 3 });
    assert.match(during.degraded ?? '', /vector index is loading/);
    assert.ok(during.hits.length > 0, 'full text answers meanwhile');
    assert.ok(logs.some((m) => /first use/.test(m)));
    // A write while it loads: embedded, and in the index once it is in.
    const w = await c.core.call(R.upsert, { namespace: 'project.a', key: 'late', value: 'where are backups kept: the nightly s3 bucket' });
    await until('index in memory', () => ix!.unavailable() === null);
    assert.ok((await ix.waitFor(w.position, 60_000)).reached);
    const st = ix.status().index!;
    assert.ok(st.bytes > 400 * 16 && st.compact, `store/status: ${JSON.stringify(st)}`);
    const v = (await e.embed(['where are backups kept']))[0];
    const got = c.store.vectors.knn(ix.model!, v, { now: Date.now(), limit: 6 });
    const late = c.store.rowidOf(w.memory.id)!;
    assert.ok(
      got.some((h) => h.rowid === late),
      'the write made while loading is found',
    );
    // The same memories as the int8 index before the restart, scored alike (its kernel sums in float32).
    const others = got.filter((h) => h.rowid !== late).slice(0, 5);
    assert.deepEqual(
      others.map((h) => h.rowid),
      want.map((h) => h.rowid),
    );
    others.forEach((h, i) => assert.ok(Math.abs(h.score - want[i].score) < 1e-5));
    const after = await c.core.call(R.search, { query: 'backups nightly', mode: 'hybrid', limit: 3 });
    assert.equal(after.degraded, undefined);
    // The worker's KNN (Indexer.search) answers what the event loop's does.
    const viaWorker = await ix.search('where are backups kept', { now: Date.now(), limit: 6 });
    assert.deepEqual(
      viaWorker.map((h) => h.rowid),
      got.map((h) => h.rowid),
    );
  });
});

describe('reading the index on first use fails', () => {
  const c = tempCore();
  let e: Embedder;
  let ix: Indexer | null = null;
  after(async () => {
    await ix?.stop();
    await e?.close();
    c.close();
  });
  it('is logged, the search answers from full text, and the daemon goes on', async () => {
    e = await Embedder.start({ model: 'builtin', allowRemote: false });
    const first = new Indexer(c.store, () => {});
    await first.use(e);
    const w = await c.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'postgres backups run nightly' });
    assert.ok((await first.waitFor(w.position, 60_000)).reached);
    await first.stop();
    e = await Embedder.start({ model: 'builtin', allowRemote: false });
    const logs: string[] = [];
    ix = new Indexer(c.store, (m) => logs.push(m));
    ix.lazyAbove = 0;
    await ix.use(e);
    const model = ix.model!;
    // The vector table goes missing under the daemon: the load's first statement fails.
    c.store.db.exec(`ALTER TABLE ${model.table} RENAME TO gone`);
    c.core.hooks.vectors = ix;
    const r = await c.core.call(R.search, { query: 'backups nightly', mode: 'hybrid', limit: 3 });
    assert.match(r.degraded ?? '', /vector index is loading/);
    assert.equal(r.hits.length, 1, 'full text answers');
    await until('the failure logged', () => logs.some((m) => /reading the vector index failed/.test(m)));
    // Put back, the next search reads it.
    c.store.db.exec(`ALTER TABLE gone RENAME TO ${model.table}`);
    await c.core.call(R.search, { query: 'backups nightly', mode: 'hybrid', limit: 3 });
    await until('index in memory', () => ix!.unavailable() === null);
    const after = await c.core.call(R.search, { query: 'backups nightly', mode: 'hybrid', limit: 3 });
    assert.equal(after.degraded, undefined);
  });
});
