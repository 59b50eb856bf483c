/**
 * The sweep's query for the memories of deleted namespaces reaches them from the namespaces, never by scanning
 * every memory (issue 27: at a million memories that scan held the event loop for seconds on every sweep), and it
 * finds exactly the memories of deleted namespaces.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { DEAD_NAMESPACE_MEMORIES } from '../../daemon/src/store/sweep-sql';
import { tempCore, upsertItems } from '../helpers';

describe('sweep: memories of deleted namespaces', () => {
  const c = tempCore();
  after(() => c.close());

  it('is planned from the namespaces through memories_ns, with no scan of the memories', () => {
    const plan = (c.store.db.prepare(`EXPLAIN QUERY PLAN ${DEAD_NAMESPACE_MEMORIES}`).all(500) as { detail: string }[]).map(
      (r) => r.detail,
    );
    assert.ok(
      plan.some((d) => /^SEARCH m USING (COVERING )?INDEX memories_ns/.test(d)),
      plan.join('; '),
    );
    assert.ok(!plan.some((d) => /^SCAN m\b/.test(d)), plan.join('; '));
  });

  it('finds the memories of deleted namespaces and only those, and the sweep purges them', async () => {
    await upsertItems(
      c.core,
      Array.from({ length: 60 }, (_, i) => ({ namespace: i % 3 === 0 ? 'project.gone' : 'project.kept', key: `k${i}`, value: `v ${i}` })),
    );
    assert.equal(c.store.db.prepare(DEAD_NAMESPACE_MEMORIES).all(500).length, 0);
    await c.core.call(R.namespacesDelete, { path: 'project.gone' });
    const dead = c.store.db.prepare(DEAD_NAMESPACE_MEMORIES).all(500) as { ns_path: string }[];
    assert.equal(dead.length, 20);
    assert.ok(dead.every((d) => d.ns_path === 'project.gone'));
    assert.equal(c.store.sweep().purged, 20);
    assert.equal(c.store.db.prepare(DEAD_NAMESPACE_MEMORIES).all(500).length, 0);
    assert.equal((c.store.db.prepare(`SELECT count(*) AS n FROM memories`).get() as { n: number }).n, 40);
  });
});
