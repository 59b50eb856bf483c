/** Namespaces: rename a subtree in one transaction, logical delete, purge in batches, re-creation. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

describe('namespaces', () => {
  it('rename moves a subtree (not prefix siblings) without touching memories', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.old', key: 'k', value: 'alpha' });
    await t.core.call(R.upsert, { namespace: 'project.old.branch.x', key: 'k', value: 'beta' });
    await t.core.call(R.upsert, { namespace: 'project.oldish', key: 'k', value: 'gamma' });
    const r = await t.core.call(R.namespacesRename, { from: 'project.old', to: 'project.new' });
    assert.equal(r.renamed, 2);
    const paths = (await t.core.call(R.namespacesList, {})).namespaces.map((n) => n.path);
    assert.deepEqual(paths, ['project.new', 'project.new.branch.x', 'project.oldish']);
    const m = await t.core.call(R.get, { id: a.memory.id });
    assert.equal(m.namespace, 'project.new');
    assert.equal(m.version, 1, 'memories are not rewritten');
    await rejectsWith(t.core.call(R.namespacesRename, { from: 'project.missing', to: 'project.z' }), 'NotFound', 'from');
    await rejectsWith(t.core.call(R.namespacesRename, { from: 'project.new', to: 'project.oldish' }), 'InvalidState', 'to');
    await rejectsWith(t.core.call(R.namespacesRename, { from: 'project.new', to: 'project.new.inner' }), 'InvalidState', 'to');
  });

  it('delete hides the subtree at once, purges in batches later, and the name can be reused', async () => {
    for (let i = 0; i < 5; i++) await t.core.call(R.upsert, { namespace: 'project.gone', key: `k${i}`, value: `doomed note ${i}` });
    await t.core.call(R.upsert, { namespace: 'project.gone.child', key: 'c', value: 'doomed child' });
    await t.core.call(R.upsert, { namespace: 'project.gonefishing', key: 'k', value: 'doomed? no, a sibling' });
    const d = await t.core.call(R.namespacesDelete, { path: 'project.gone', reason: 'project archived' });
    assert.deepEqual([d.deleted, d.memories], [2, 6]);
    assert.deepEqual(
      (await t.core.call(R.search, { query: 'doomed', mode: 'fts' })).hits.map((h) => h.memory.namespace),
      ['project.gonefishing'],
    );
    assert.equal(
      (await t.core.call(R.list, { include: { deleted: true } })).items.length,
      1,
      'even include.deleted does not reach a deleted namespace',
    );
    await rejectsWith(t.core.call(R.get, { namespace: 'project.gone', key: 'k0' }), 'NotFound');
    // the name is free again, as a new empty namespace
    await t.core.call(R.upsert, { namespace: 'project.gone', key: 'k0', value: 'fresh start' });
    assert.deepEqual(
      (await t.core.call(R.list, { scope: { root: 'project.gone', includeUser: false } })).items.map((m) => m.value),
      ['fresh start'],
    );
    // purge runs in bounded batches
    const s1 = t.store.sweep(4);
    const s2 = t.store.sweep(4);
    assert.deepEqual([s1.purged, s2.purged], [4, 2]);
    assert.equal((t.store.db.prepare('SELECT count(*) c FROM memories').get() as { c: number }).c, 2);
    assert.equal((t.store.db.prepare(`SELECT count(*) c FROM history WHERE op = 'purge'`).get() as { c: number }).c, 6);
  });
});
