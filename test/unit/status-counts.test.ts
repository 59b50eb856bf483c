/** store/status counts: kept by the store as memories change, exact after every kind of write, and read without a scan of the memories. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Store } from '../../daemon/src/store/store';
import { tempCore } from '../helpers';

/** The counts recomputed from every memory row (what status did before it kept counters). */
function recount(store: Store) {
  return store.db
    .prepare(
      `SELECT count(*) AS memories,
         coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'active'), 0) AS active,
         coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'proposed'), 0) AS proposed,
         coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'superseded'), 0) AS superseded,
         coalesce(sum(m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL), 0) AS deleted
       FROM memories m JOIN namespaces n ON n.id = m.ns_id`,
    )
    .get();
}
const statusCounts = (store: Store) => {
  const { memories, active, proposed, superseded, deleted } = store.counts();
  return { memories, active, proposed, superseded, deleted };
};

describe('store/status counts', () => {
  it('stay exact through create, update, propose, supersede, delete, restore, namespace delete, purge, erase, rename and retention', async () => {
    const t = tempCore();
    try {
      const check = (what: string) => assert.deepEqual(statusCounts(t.store), recount(t.store), what);
      const items = Array.from({ length: 30 }, (_, i) => ({ namespace: `project.c${i % 3}`, key: `k${i}`, value: `value ${i}` }));
      await t.core.call(R.upsertBatch, { items });
      check('batch');
      await t.core.call(R.upsert, { namespace: 'project.c0', key: 'k0', value: 'changed' });
      const p = await t.core.call(R.upsert, { namespace: 'project.c1', key: 'prop', value: 'a proposal', status: 'proposed' });
      check('proposed');
      const old = await t.core.call(R.get, { namespace: 'project.c1', key: 'k1' });
      await t.core.call(R.upsert, { namespace: 'project.c1', key: 'newer', value: 'replaces k1', supersedes: old.id });
      check('superseded');
      await t.core.call(R.delete, { namespace: 'project.c2', key: 'k2' });
      await t.core.call(R.delete, { id: p.memory.id });
      check('deleted');
      await t.core.call(R.restore, { namespace: 'project.c2', key: 'k2' });
      check('restored');
      await t.core.call(R.namespacesDelete, { path: 'project.c2' });
      check('namespace deleted');
      await t.core.call(R.delete, { namespace: 'project.c0', key: 'k3' });
      await t.core.call(R.purge, { namespace: 'project.c0', key: 'k3' });
      await t.core.call(R.erase, { namespace: 'project.c0', key: 'k6' });
      check('purged and erased');
      await t.core.call(R.namespacesRename, { from: 'project.c1', to: 'project.moved' });
      await t.core.call(R.retention, { set: { root: 'project.c0', maxAgeDays: 1 } });
      const now = t.store.now;
      t.store.now = () => now() + 3 * 86_400_000;
      await t.core.call(R.sweep, {});
      check('renamed and swept');
      const c = statusCounts(t.store);
      assert.ok(c.active > 0 && c.proposed === 0 && c.superseded === 1 && c.deleted > 0, JSON.stringify(c));
    } finally {
      t.close();
    }
  });

  it('a store whose counters are missing (an older build, a dropped trigger) is recounted at open', async () => {
    const t = tempCore();
    try {
      await t.core.call(R.upsertBatch, {
        items: Array.from({ length: 12 }, (_, i) => ({ namespace: 'project.x', key: `k${i}`, value: `v${i}` })),
      });
      t.store.db.exec('DROP TRIGGER memory_counts_insert; DROP TABLE memory_counts');
      await t.core.call(R.upsert, { namespace: 'project.x', key: 'late', value: 'written with no trigger' });
      assert.equal(statusCounts(t.store).memories, 13, 'without the table, status counts the rows');
      const { Store } = await import('../../daemon/src/store/store');
      const path = t.store.path;
      t.store.close();
      const s = new Store(path);
      try {
        assert.deepEqual(statusCounts(s), recount(s));
        assert.equal(statusCounts(s).memories, 13);
      } finally {
        s.close();
      }
    } finally {
      t.close();
    }
  });

  it('reads no memory row: no statement behind the counts scans the memories table', () => {
    const t = tempCore();
    try {
      const seen: string[] = [];
      const prepare = t.store.db.prepare.bind(t.store.db);
      t.store.db.prepare = ((sql: string) => (seen.push(sql), prepare(sql))) as typeof t.store.db.prepare;
      t.store.counts();
      t.store.db.prepare = prepare;
      assert.ok(seen.length > 0, 'counts prepared its statements here (fresh store, empty statement cache)');
      for (const sql of seen) {
        const plan = (t.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail);
        // A count(*) over a covering index is SQLite's b-tree count, not a read of every row; a SCAN of the table is.
        const scans = plan.filter((d) => /^SCAN (m|memories)\b/.test(d) && !/COVERING INDEX/.test(d));
        assert.deepEqual(scans, [], `${sql}\n${plan.join('\n')}`);
      }
    } finally {
      t.close();
    }
  });
});
