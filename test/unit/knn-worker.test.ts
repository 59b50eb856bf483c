/**
 * A search's vector arm runs in the embedding worker (Embedder.nearest: embed the query, rank the admitted slots of
 * the index's shared arrays), while the event loop runs the full-text arm. What it answers is exactly what the
 * event loop's own KNN (VectorTables.knn) answers on the same admitted set, bit for bit, on the exact and the
 * Hamming path, whole-store, scoped and filtered. Whatever stopped being admitted while it ran (a memory deleted,
 * or a purged memory's slot reused by a memory outside the scope) is dropped before fusion sees it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import type { WorkerKnn } from '../../daemon/src/embed/shared';
import { Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter, Scope } from '../../daemon/src/protocol/types';
import type { ArmHit } from '../../daemon/src/store/search-fts';
import { EXACT_MAX, SIMHASH_CANDIDATES, type KnnQuery } from '../../daemon/src/store/vectors';
import { tempCore } from '../helpers';

const TOPICS = [
  'the login session token is stored in redis with a one hour expiry',
  'database migrations run with knex before every deploy',
  'the api rate limit is 100 requests per minute per key',
  'deploy to staging with make release, then smoke test',
  'the frontend uses react with vite and vitest for unit tests',
  'postgres backups run nightly to the s3 bucket',
];

const FILTER: Filter = { field: 'tags', op: 'has', value: 'ops' };
const QUERIES = ['how do we ship a build to the test environment', 'where is the session kept', 'nightly database backup'];

/** Each query in each scope, without and with FILTER. */
function* cases(scopes: (Scope | undefined)[]): Generator<{ text: string; scope: Scope | undefined; f: Filter | undefined }> {
  for (const text of QUERIES) for (const scope of scopes) for (const f of [undefined, FILTER]) yield { text, scope, f };
}

/** `count` notes on TOPICS written to `c` (note i in `namespaceOf(i)`, every third tagged ops) and embedded by a new worker. */
async function indexNotes(c: ReturnType<typeof tempCore>, count: number, namespaceOf: (i: number) => string) {
  const e = await Embedder.start({ model: 'builtin', allowRemote: false });
  const ix = new Indexer(c.store, () => {});
  await ix.use(e);
  const items = Array.from({ length: count }, (_, i) => ({
    namespace: namespaceOf(i),
    key: `note-${i}`,
    value: `${TOPICS[i % TOPICS.length]} (note ${i}${i % 4 ? ', see the wiki' : ''})`,
    tags: i % 3 === 0 ? ['ops'] : ['dev'],
  }));
  const res = await c.core.call(R.upsertBatch, { items });
  assert.equal(res.results.filter((x) => x.ok).length, count);
  assert.ok((await ix.waitFor(c.store.position(), 60_000)).reached);
  return { e, ix };
}

describe("a search's KNN in the embedding worker", () => {
  const c = tempCore();
  let e: Embedder;
  let ix: Indexer;
  before(async () => {
    ({ e, ix } = await indexNotes(c, 300, (i) => (i < 200 ? 'project.a' : i < 270 ? 'project.b' : 'user')));
  });
  after(async () => {
    await ix?.stop();
    await e?.close();
    c.close();
  });

  const scopes: (Scope | undefined)[] = [undefined, { root: 'project.b', includeUser: false }, { root: 'project.a', includeUser: true }];

  for (const path of ['exact', 'Hamming'] as const)
    it(`${path} path: the worker ranks exactly as the event loop does`, async () => {
      const vs = c.store.vectors;
      const model = ix.model!;
      try {
        if (path === 'Hamming') {
          vs.exactMax = 20; // every scope here takes the Hamming pass
          vs.candidates = 30;
        }
        let compared = 0;
        for (const { text, scope, f } of cases(scopes)) {
          const q: KnnQuery = { scope, filter: f, now: c.store.now(), limit: 12 };
          const [v] = await e.embed([text], { priority: true });
          const here = vs.knn(model, v, q);
          const p = vs.prepareKnn(model, q);
          const { hits: there } = await e.nearest(text, { ...p, limit: q.limit });
          assert.deepEqual(there, here, `${text} / ${JSON.stringify(scope)} / ${JSON.stringify(f)}`);
          assert.deepEqual(vs.stillAdmitted(model, there, q, p), here, 'nothing changed: every hit is still admitted');
          assert.deepEqual(await ix.search(text, q), here, 'Indexer.search takes the worker path');
          assert.equal(here.length, 12);
          compared++;
        }
        assert.equal(compared, QUERIES.length * scopes.length * 2);
      } finally {
        vs.exactMax = EXACT_MAX;
        vs.candidates = SIMHASH_CANDIDATES;
      }
    });

  it('a blank text and an empty admitted set answer nothing', async () => {
    const p = c.store.vectors.prepareKnn(ix.model!, { now: c.store.now(), limit: 5 });
    assert.ok(p.admitted.length >= 300);
    assert.deepEqual((await e.nearest('   ', { ...p, limit: 5 })).hits, []);
    const none = c.store.vectors.prepareKnn(ix.model!, {
      scope: { root: 'project.none', includeUser: false },
      now: c.store.now(),
      limit: 5,
    });
    assert.equal(none.admitted.length, 0);
    assert.deepEqual((await e.nearest(QUERIES[0], { ...none, limit: 5 })).hits, []);
  });

  it('a cached admitted set is read by the worker where it is, in shared memory, never copied per search', async () => {
    const model = ix.model!;
    const whole: KnnQuery = { now: c.store.now(), limit: 5 };
    const first = c.store.vectors.prepareKnn(model, whole);
    assert.ok(first.admitted.buffer instanceof SharedArrayBuffer, 'the cached set, in shared memory');
    assert.equal(c.store.vectors.prepareKnn(model, whole).admitted.buffer, first.admitted.buffer, 'the same set again: no copy');
    const want = [...first.admitted];
    const r = await e.nearest(QUERIES[0], { ...first, limit: 5 });
    assert.equal(r.spare, null, 'nothing transferred, nothing given back');
    assert.deepEqual([...first.admitted], want, 'still here, unchanged');
    assert.deepEqual(
      r.hits.map((h) => h.rowid),
      c.store.vectors.knn(model, r.query, whole).map((h) => h.rowid),
    );
  });

  it("a set not cached (a filter's) is copied, transferred, and its buffer carries the next search's admitted set", async () => {
    const model = ix.model!;
    const filter: Filter = { field: 'kind', op: 'ne', value: 'procedure' };
    const whole: KnnQuery = { now: c.store.now(), limit: 5, filter };
    const first = c.store.vectors.prepareKnn(model, whole);
    assert.ok(!(first.admitted.buffer instanceof SharedArrayBuffer));
    const size = first.admitted.buffer.byteLength;
    const want = [...first.admitted];
    const r = await e.nearest(QUERIES[0], { ...first, limit: 5 });
    assert.equal(first.admitted.buffer.byteLength, 0, 'the buffer was transferred to the worker');
    assert.equal(r.spare!.buffer.byteLength, size, 'and given back whole');
    const scoped: KnnQuery = { scope: { root: 'project.b', includeUser: false }, now: c.store.now(), limit: 5, filter };
    const next = c.store.vectors.prepareKnn(model, scoped, r.spare!);
    assert.equal(next.admitted.buffer, r.spare!.buffer, 'a smaller admitted set is copied into the spare');
    assert.deepEqual([...next.admitted], [...c.store.vectors.prepareKnn(model, scoped).admitted]);
    assert.ok(next.admitted.length > 0 && next.admitted.length < want.length);
    const again = c.store.vectors.prepareKnn(model, whole, new Int32Array(3));
    assert.deepEqual([...again.admitted], want, 'a spare too small for the set is not used');
    assert.notEqual(again.admitted.length, 3);
  });

  it('a closed embedder refuses a knn instead of hanging', async () => {
    const closed = await Embedder.start({ model: 'builtin', allowRemote: false });
    await closed.close();
    const p = c.store.vectors.prepareKnn(ix.model!, { now: c.store.now(), limit: 5 });
    await assert.rejects(closed.nearest(QUERIES[0], { ...p, limit: 5 }), /closed/);
  });
});

describe("indexer: what changed while the worker's knn ran", () => {
  it('a memory deleted meanwhile, and a purged slot reused by a memory outside the scope, never reach the result', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    let started!: () => void;
    const isStarted = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let hold = false;
    const raw: ArmHit[][] = [];
    // The worker scans only after the changes below committed (the gate), as a slow scan would see them.
    const held: EmbeddingModel = {
      info: e.info,
      embed: (t, o) => e.embed(t, o),
      embedWithSignatures: (t) => e.embedWithSignatures(t),
      scanDuplicates: (s) => e.scanDuplicates(s),
      nearest: async (text: string, knn: WorkerKnn) => {
        if (hold) {
          started();
          await gate;
        }
        const r = await e.nearest(text, knn);
        raw.push(r.hits);
        return r;
      },
      close: () => e.close(),
    };
    const ix = new Indexer(c.store, () => {});
    try {
      await ix.use(held);
      const text = 'the login session token is stored in redis with a one hour expiry';
      const res = await c.core.call(R.upsertBatch, {
        items: [
          { namespace: 'project.b', key: 'session-a', value: text },
          { namespace: 'project.b', key: 'session-b', value: `${text}, see the wiki` },
          { namespace: 'project.b', key: 'session-c', value: `${text} (ops notes)` },
          { namespace: 'project.b', key: 'deploys', value: 'deploy to staging with make release, then smoke test' },
        ],
      });
      const [a, b, cc, d] = res.results.map((x) => {
        if (!x.ok) throw new Error('write failed');
        return { id: x.id, rowid: c.store.rowidOf(x.id)! };
      });
      assert.ok((await ix.waitFor(c.store.position(), 30_000)).reached);
      const q: KnnQuery = { scope: { root: 'project.b', includeUser: false }, now: c.store.now(), limit: 10 };
      const before = await ix.search(text, q);
      assert.deepEqual(new Set(before.map((h) => h.rowid)), new Set([a.rowid, b.rowid, cc.rowid, d.rowid]));

      hold = true;
      const pending = ix.search(text, q); // admitted set decided now: a, b, c, d
      await isStarted;
      // Meanwhile: a is deleted; b is purged and its slot taken by a new memory in project.a (outside the scope).
      await c.core.call(R.delete, { id: a.id, reason: 'test' });
      await c.core.call(R.delete, { id: b.id, reason: 'test' });
      await c.core.call(R.purge, { id: b.id });
      const moved = await c.core.call(R.upsert, { namespace: 'project.a', key: 'session-elsewhere', value: text });
      const movedRowid = c.store.rowidOf(moved.memory.id)!;
      assert.equal(typeof movedRowid, 'number');
      assert.ok((await ix.waitFor(c.store.position(), 30_000)).reached);
      release();
      const got = await pending;

      const scanned = raw[raw.length - 1].map((h) => h.rowid);
      assert.ok(scanned.includes(a.rowid), 'the worker still scored the deleted memory');
      assert.ok(scanned.includes(movedRowid), "the worker read the reused slot's new memory (outside the scope)");
      assert.deepEqual(
        got.map((h) => h.rowid),
        before.filter((h) => h.rowid === cc.rowid || h.rowid === d.rowid).map((h) => h.rowid),
        'only what the scope still admits, in the same order',
      );
      assert.deepEqual(await ix.search(text, q), got, 'a search started after the changes agrees');
    } finally {
      release();
      await ix.stop();
      await e.close();
      c.close();
    }
  });
});

describe('on a compact index the worker ranks its hits again from the stored int8 vectors', () => {
  const c = tempCore();
  let e: Embedder;
  let ix: Indexer;
  before(async () => {
    c.store.vectors.compactAbove = 0; // compact at any size: 4-bit vectors in memory, int8 ones on disk
    ({ e, ix } = await indexNotes(c, 400, (i) => (i < 300 ? 'project.a' : 'project.b')));
    assert.equal(ix.status().index?.compact, true);
  });
  after(async () => {
    await ix?.stop();
    await e?.close();
    c.close();
  });

  const scopes: (Scope | undefined)[] = [undefined, { root: 'project.b', includeUser: false }];

  it('answers exactly what the event loop ranks (scores from the int8 vectors), whole-store, scoped and filtered', async () => {
    const vs = c.store.vectors;
    const model = ix.model!;
    let compared = 0;
    for (const { text, scope, f } of cases(scopes)) {
      const q: KnnQuery = { scope, filter: f, now: c.store.now(), limit: 8 };
      const [v] = await e.embed([text], { priority: true });
      const here = vs.knn(model, v, q);
      const p = vs.prepareKnn(model, q);
      assert.deepEqual(p.stored, { file: c.store.path, table: model.table });
      const r = await e.nearest(text, { ...p, limit: q.limit });
      assert.equal(r.reranked, true);
      assert.ok(r.hits.length > q.limit, 'every hit of the pool comes back ranked again, for the event loop to admit and cut');
      assert.deepEqual(vs.stillAdmitted(model, r.hits, q, p).slice(0, q.limit), here, `${text} / ${JSON.stringify(scope)}`);
      assert.deepEqual(await ix.search(text, q), here, 'Indexer.search');
      assert.equal(here.length, q.limit);
      compared++;
    }
    assert.equal(compared, QUERIES.length * scopes.length * 2);
  });

  it('when the worker cannot read the stored vectors, the event loop ranks the hits again and answers the same', async () => {
    const vs = c.store.vectors;
    const model = ix.model!;
    const q: KnnQuery = { now: c.store.now(), limit: 8 };
    const [v] = await e.embed([QUERIES[0]], { priority: true });
    const here = vs.knn(model, v, q);
    for (const stored of [
      { file: c.store.path, table: 'vq_none' },
      { file: `${c.store.path}.missing`, table: model.table },
    ]) {
      const p = vs.prepareKnn(model, q);
      const r = await e.nearest(QUERIES[0], { ...p, limit: q.limit, stored });
      assert.equal(r.reranked, false, JSON.stringify(stored));
      assert.deepEqual(vs.rerank(model, p.arrays, r.query, vs.stillAdmitted(model, r.hits, q, p), q.limit), here);
    }
    // and the worker reads them again afterwards
    const p = vs.prepareKnn(model, q);
    assert.equal((await e.nearest(QUERIES[0], { ...p, limit: q.limit })).reranked, true);
  });

  it('duplicate checks scored in the worker come back ranked by the int8 vectors, as on the event loop', async () => {
    const vs = c.store.vectors;
    const model = ix.model!;
    const now = c.store.now();
    const nsRowid = (c.store.db.prepare("SELECT rowid AS r FROM namespaces WHERE path = 'project.a'").get() as { r: number }).r;
    const rowids = (
      c.store.db
        .prepare("SELECT m.rowid AS r FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = 'project.a' LIMIT 3")
        .all() as { r: number }[]
    ).map((x) => x.r);
    const vectors = await e.embed(
      rowids.map((r) => (c.store.db.prepare('SELECT value FROM memories WHERE rowid = ?').get(r) as { value: string }).value),
    );
    const checks = rowids.map((exclude, i) => ({ vector: vectors[i], nsRowid, exclude }));
    const scan = vs.prepareDuplicateScan(model, checks, 5, now);
    assert.ok(scan.stored);
    const result = await e.scanDuplicates(scan);
    assert.equal(result.reranked, true);
    const got = vs.duplicateResults(model, vs.prepareDuplicateScan(model, checks, 5, now), vectors, result);
    assert.deepEqual(
      got,
      checks.map((x) => vs.similarInNamespace(model, x.vector, nsRowid, x.exclude, -1, 5, now)),
    );
    assert.ok(got.every((h) => h.length === 5));
  });
});
