/** Export/import round trip is exact, including history, deletion state, links and rejected values. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

describe('export and import', () => {
  it('round-trips exactly into an empty store', async () => {
    const a = tempCore();
    const b = tempCore();
    try {
      const m1 = await a.core.call(R.upsert, {
        namespace: 'project.p',
        key: 'k1',
        value: 'first',
        tags: ['x'],
        anchors: [{ path: 'a.ts', startLine: 2, endLine: 4 }],
        properties: { n: 1 },
      });
      await a.core.call(R.upsert, { namespace: 'project.p', key: 'k1', value: 'first, edited', actor: 'bob' });
      const m2 = await a.core.call(R.upsert, { namespace: 'user', key: 'k2', value: 'second' });
      await a.core.call(R.link, { from: m1.memory.id, to: m2.memory.id, type: 'relates_to' });
      const m3 = await a.core.call(R.upsert, { namespace: 'project.p', key: 'k3', value: 'rejected thing' });
      await a.core.call(R.forget, { id: m3.memory.id, reason: 'nope' });
      const exported = (await a.core.call(R.exportRecords, {})).records;
      const imp = await b.core.call(R.importRecords, { records: exported });
      assert.deepEqual([imp.memories, imp.links, imp.skipped], [3, 1, 0]);
      const again = (await b.core.call(R.exportRecords, {})).records;
      // Rejected-value hashes are keyed with each store's own secret, so they differ between stores by design.
      const strip = (rs: typeof exported) =>
        rs
          .filter((r) => r.type !== 'header')
          .map((r) =>
            r.type === 'history' ? { ...r, entry: { ...r.entry, seq: 0 } } : r.type === 'rejected' ? { ...r, valueHash: '' } : r,
          );
      assert.deepEqual(strip(again), strip(exported));
      // semantics survive: the forgotten value is still rejected, the deleted key still deleted
      await rejectsWith(b.core.call(R.upsert, { namespace: 'project.p', key: 'new', value: 'rejected thing' }), 'RejectedValue');
      await rejectsWith(b.core.call(R.upsert, { namespace: 'project.p', key: 'k3', value: 'other' }), 'Deleted');
      assert.equal((await b.core.call(R.search, { query: 'edited', mode: 'fts' })).hits.length, 1, 'full-text index rebuilt on import');
      // importing again skips everything rather than overwriting
      const twice = await b.core.call(R.importRecords, { records: exported });
      assert.equal(twice.memories, 0);
      assert.equal(twice.skipped, 3);
      assert.equal(twice.history, 0, 'history is not duplicated');
    } finally {
      a.close();
      b.close();
    }
  });

  it('rejects malformed records naming the record', async () => {
    const c = tempCore();
    try {
      await rejectsWith(c.core.call(R.importRecords, { records: [{ type: 'memory', memory: { id: 1 } }] }), 'InvalidParams');
      const d = await rejectsWith(
        c.core.call(R.importRecords, {
          records: [{ type: 'header', format: 'cairn-export', version: 1, exportedAt: 'x', schemaVersion: 1 }, { type: 'bogus' }],
        }),
        'InvalidParams',
      );
      assert.match(String(d.field), /^records\[1\]/);
    } finally {
      c.close();
    }
  });
});
