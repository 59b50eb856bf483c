/**
 * The vector arm on a memory branch (issue 26, docs/branches.md): branch rows are embedded by the same worker as
 * memories (index/branch-vectors.ts) and scored exactly on a search on their branch (store/branch-vectors.ts), with
 * scope, filters (the agents' "no secret tag"), visibility and deletion inside the arm's query, before its limit. A
 * branch write is found by a query that shares no word with it, on the branch only; a changed text loses its old
 * vector; a discard or an erase takes the vectors along.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { BranchVectors } from '../../daemon/src/index/branch-vectors';
import { Indexer } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter, SearchParams } from '../../daemon/src/protocol/types';
import { spawnDaemon, tempCore } from '../helpers';

const NO_SECRETS: Filter = { field: 'tags', op: 'hasNone', value: ['secret'] };
/** Shares no word with the branch write below; the built-in model puts them close (cosine about 0.5). */
const QUERY = 'container orchestration rollout';
const DEPLOY = 'releases ship through kubernetes clusters on friday';

describe('memory branches: the vector arm', () => {
  const c = tempCore();
  let e: Embedder;
  let ix: Indexer;
  let bv: BranchVectors;
  const count = (t: string) => (c.store.db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  const settle = async () => {
    assert.ok((await ix.waitFor(c.store.position(), 60_000)).reached);
    assert.ok(await bv.waitForAll(60_000), 'every branch row embedded');
  };
  const keys = async (p: Partial<SearchParams>) =>
    (await c.core.call(R.search, { query: QUERY, mode: 'vector', limit: 10, ...p })).hits.map(
      (h) => `${h.memory.namespace}/${h.memory.key}`,
    );

  before(async () => {
    e = await Embedder.start({ model: 'builtin', allowRemote: false });
    ix = new Indexer(c.store, () => {});
    bv = new BranchVectors(c.store, ix, () => {});
    c.store.onChange(() => ix.kick());
    c.core.hooks.vectors = ix;
    c.core.hooks.branchVectors = bv;
    await ix.use(e);
    await c.core.call(R.upsertBatch, {
      items: [
        { namespace: 'project.app', key: 'db', value: 'the database is postgres' },
        { namespace: 'project.app', key: 'style', value: 'tabs for indentation' },
        { namespace: 'project.app.api', key: 'auth', value: 'auth uses bearer tokens' },
      ],
    });
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'deploy', value: DEPLOY, branch: 'b1' });
    await settle();
  });
  after(async () => {
    await bv?.stop();
    await ix?.stop();
    await e?.close();
    c.close();
  });

  it('finds a branch write by meaning alone, on its branch only and inside the scope', async () => {
    assert.equal(count('branch_vectors'), 1, 'the branch write was embedded');
    assert.equal((await keys({ branch: 'b1' }))[0], 'project.app/deploy');
    assert.ok(!(await keys({})).includes('project.app/deploy'), 'not on the base');
    assert.equal((await keys({ branch: 'b1', mode: 'fts' })).length, 0, 'no word in common: the full-text arm finds nothing');
    // Hybrid: the vector arm's candidate is fused with the (empty) full-text arm's.
    assert.equal((await keys({ branch: 'b1', mode: 'hybrid' }))[0], 'project.app/deploy');
    assert.ok(!(await keys({ branch: 'b1', scope: { root: 'project.app.api', includeUser: false } })).includes('project.app/deploy'));
    assert.ok(!(await keys({ branch: 'b1', scope: { namespaces: ['project.other'] } })).includes('project.app/deploy'));
    assert.ok((await keys({ branch: 'b1', scope: { root: 'project.app' } })).includes('project.app/deploy'));
  });

  it('scores with the query embedding the base arm got: one embedding per search, the same hits', async () => {
    const calls = { embed: 0, nearest: 0 };
    const embed = e.embed.bind(e);
    const nearest = e.nearest.bind(e);
    e.embed = (texts, o) => (calls.embed++, embed(texts, o));
    e.nearest = (text, knn) => (calls.nearest++, nearest(text, knn));
    try {
      const branchId = (c.store.db.prepare(`SELECT id FROM branches WHERE name = 'b1'`).get() as { id: string }).id;
      const q = { scope: { root: 'project.app' }, now: c.store.now(), limit: 10 };
      let shared: Float32Array | null = null;
      await ix.search(QUERY, q, (v) => (shared = v));
      assert.ok(shared, 'the base arm hands its query embedding over');
      const own = await bv.search(branchId, QUERY, q);
      const given = await bv.search(branchId, QUERY, q, Promise.resolve(shared));
      assert.ok(own.length > 0);
      assert.deepEqual(given, own, 'the same hits and scores as with an embedding of its own');
      assert.deepEqual(await bv.search(branchId, QUERY, q, Promise.resolve(null)), own, 'none given: it embeds the query');

      calls.embed = calls.nearest = 0;
      assert.equal((await keys({ branch: 'b1', mode: 'hybrid' }))[0], 'project.app/deploy');
      assert.deepEqual(calls, { embed: 0, nearest: 1 }, 'one worker request for both vector arms');
      // A scope with no base rows: the base arm asks the worker for nothing, the branch arm embeds the query itself.
      await c.core.call(R.upsert, { namespace: 'project.app.fresh', key: 'rollout', value: DEPLOY, branch: 'b1' });
      await settle();
      calls.embed = calls.nearest = 0;
      assert.deepEqual(await keys({ branch: 'b1', scope: { root: 'project.app.fresh', includeUser: false } }), [
        'project.app.fresh/rollout',
      ]);
      assert.deepEqual(calls, { embed: 1, nearest: 0 });
      await c.core.call(R.delete, { namespace: 'project.app.fresh', key: 'rollout', branch: 'b1' });
    } finally {
      e.embed = embed;
      e.nearest = nearest;
    }
  });

  it('applies filters (no secret tag) and deletion inside the arm, before its limit', async () => {
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'deploy', value: DEPLOY, tags: ['secret'], branch: 'b1' });
    await settle();
    assert.equal((await keys({ branch: 'b1', limit: 1 }))[0], 'project.app/deploy');
    const filtered = await keys({ branch: 'b1', limit: 1, filter: NO_SECRETS });
    assert.equal(filtered.length, 1, 'the limit is filled from admitted rows');
    assert.notEqual(filtered[0], 'project.app/deploy');
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'deploy', value: DEPLOY, tags: [], branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'deploy', branch: 'b1' });
    await settle();
    assert.ok(!(await keys({ branch: 'b1' })).includes('project.app/deploy'), 'deleted on the branch');
    assert.ok((await keys({ branch: 'b1', include: { deleted: true } })).includes('project.app/deploy'));
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'deploy', value: DEPLOY, restore: true, branch: 'b1' });
    assert.equal((await keys({ branch: 'b1' }))[0], 'project.app/deploy', 'restored');
  });

  it('a changed text loses its vector at once and is embedded again', async () => {
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: DEPLOY, branch: 'b1' });
    await settle();
    assert.ok((await keys({ branch: 'b1' })).slice(0, 2).includes('project.app/style'));
    // The write and the search in one turn: no embedding ran in between, so the old vector must already be gone.
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'tabs for indentation, four wide', branch: 'b1' });
    const rowid = (c.store.db.prepare(`SELECT rowid FROM branch_memories WHERE key = 'style'`).get() as { rowid: number }).rowid;
    assert.equal(c.store.db.prepare('SELECT 1 FROM branch_vectors WHERE rowid = ?').get(rowid), undefined);
    await settle();
    assert.ok(c.store.db.prepare('SELECT 1 FROM branch_vectors WHERE rowid = ?').get(rowid), 're-embedded');
    const hits = (await c.core.call(R.search, { query: QUERY, mode: 'vector', limit: 10, branch: 'b1' })).hits;
    const style = hits.find((h) => h.memory.key === 'style');
    const deploy = hits.find((h) => h.memory.key === 'deploy');
    assert.ok(deploy && (!style || style.score < deploy.score - 0.1), 'scored by its new text');
  });

  it('erase and discard take branch vectors along', async () => {
    assert.ok(count('branch_vectors') >= 2);
    await c.core.call(R.erase, { namespace: 'project.app', key: 'deploy', reason: 'test' });
    assert.equal(
      (
        c.store.db
          .prepare(`SELECT count(*) AS n FROM branch_vectors v JOIN branch_memories b ON b.rowid = v.rowid WHERE b.key = 'deploy'`)
          .get() as { n: number }
      ).n,
      0,
    );
    assert.equal(count('branch_vectors'), count('branch_memories'), 'no vector of an erased row is left');
    await c.core.call(R.branchDiscard, { name: 'b1' });
    assert.equal(count('branch_vectors'), 0);
  });
});

describe('memory branches: the vector arm in a running daemon', () => {
  it('embeds a branch write after it (index/wait waits for it) and finds it on the branch by meaning', async () => {
    const d = await spawnDaemon({ args: [], env: { CAIRN_MODEL: 'builtin' } });
    try {
      const c = await d.client();
      const base = await c.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is postgres' });
      await c.call(R.branchCreate, { name: 'b1', root: 'project.app' });
      await c.call(R.upsert, { namespace: 'project.app', key: 'deploy', value: DEPLOY, branch: 'b1' });
      const w = await c.call(R.indexWait, { position: base.position, timeoutMs: 60_000 });
      assert.ok(w.reached, JSON.stringify(w));
      const hits = (await c.call(R.search, { query: QUERY, mode: 'vector', branch: 'b1' })).hits;
      assert.equal(hits[0]?.memory.key, 'deploy');
      assert.ok(!(await c.call(R.search, { query: QUERY, mode: 'vector' })).hits.some((h) => h.memory.key === 'deploy'));
    } finally {
      await d.stop();
    }
  });
});
