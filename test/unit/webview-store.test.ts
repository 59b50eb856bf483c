/** The daemon methods the dashboard needs: store/overview and store/importPreview (and import refusing forgotten values). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

const DAY = 86_400_000;

describe('store/overview', () => {
  it('counts by namespace, kind and status inside the scope, and writes per day by source', async () => {
    const c = tempCore();
    try {
      let now = Date.parse('2026-03-10T12:00:00Z');
      c.store.now = () => now;
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'k1', value: 'one', kind: 'decision', source: 'cli' });
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'k2', value: 'two', source: 'agent', status: 'proposed' });
      await c.core.call(R.upsert, { namespace: 'project.ab', key: 'k3', value: 'sibling, out of scope', source: 'cli' });
      now += DAY;
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'k1', value: 'one, edited', source: 'cli' });
      const gone = await c.core.call(R.upsert, { namespace: 'project.a', key: 'k4', value: 'deleted one', source: 'cli' });
      await c.core.call(R.delete, { id: gone.memory.id });
      await c.core.call(R.upsert, { namespace: 'user', key: 'u', value: 'user pref', kind: 'preference', source: 'vscode' });

      const o = await c.core.call(R.overview, { scope: { root: 'project.a', includeUser: false }, days: 7 });
      assert.deepEqual(o.byNamespace, [{ name: 'project.a', count: 2 }]);
      assert.deepEqual(o.byKind, [
        { name: 'decision', count: 1 },
        { name: 'note', count: 1 },
      ]);
      assert.deepEqual(o.byStatus, [
        { name: 'active', count: 1 },
        { name: 'proposed', count: 1 },
        { name: 'deleted', count: 1 },
      ]);
      assert.deepEqual(o.writesPerDay, [
        { day: '2026-03-10', source: 'agent', count: 1 },
        { day: '2026-03-10', source: 'cli', count: 1 },
        { day: '2026-03-11', source: 'cli', count: 2 },
      ]);
      // one day back only sees today's writes; the whole store sees every namespace
      assert.deepEqual((await c.core.call(R.overview, { scope: { root: 'project.a', includeUser: false }, days: 1 })).writesPerDay, [
        { day: '2026-03-11', source: 'cli', count: 2 },
      ]);
      const all = await c.core.call(R.overview, {});
      assert.deepEqual(all.byNamespace.map((n) => n.name).sort(), ['project.a', 'project.ab', 'user']);
      assert.equal(all.days, 30);
      await rejectsWith(c.core.call(R.overview, { days: 0 }), 'InvalidParams', 'days');
      await rejectsWith(c.core.call(R.overview, { scope: { root: 'Bad Path' } }), 'InvalidNamespace', 'scope.root');
    } finally {
      c.close();
    }
  });
});

describe('store/importPreview', () => {
  it('classifies every memory record as import would treat it, and writes nothing', async () => {
    const src = tempCore();
    const dst = tempCore();
    try {
      const same = await src.core.call(R.upsert, { namespace: 'project.p', key: 'same', value: 'same everywhere' });
      const ch = await src.core.call(R.upsert, { namespace: 'project.p', key: 'changed', value: 'v1' });
      await src.core.call(R.upsert, { namespace: 'project.p', key: 'fresh', value: 'only in the file' });
      await src.core.call(R.upsert, { namespace: 'project.p', key: 'clash', value: 'file side' });
      await src.core.call(R.upsert, { namespace: 'project.p', key: 'gone', value: 'deleted in the target' });
      await src.core.call(R.upsert, { namespace: 'project.p', key: 'other-key', value: 'A forgotten claim' });
      // the target starts as a copy of the first two, then diverges
      const first = (await src.core.call(R.exportRecords, {})).records.filter(
        (r) => r.type !== 'memory' || ['same', 'changed'].includes(r.memory.key),
      );
      await dst.core.call(R.importRecords, { records: first });
      await src.core.call(R.upsert, { namespace: 'project.p', key: 'changed', value: 'v2', ifVersion: ch.memory.version });
      await dst.core.call(R.upsert, { namespace: 'project.p', key: 'clash', value: 'store side' });
      const g = await dst.core.call(R.upsert, { namespace: 'project.p', key: 'gone', value: 'here' });
      await dst.core.call(R.delete, { id: g.memory.id });
      const f = await dst.core.call(R.upsert, { namespace: 'project.p', key: 'forgotten', value: 'a forgotten   claim' });
      await dst.core.call(R.forget, { id: f.memory.id });

      const records = (await src.core.call(R.exportRecords, {})).records;
      const before = await dst.core.call(R.status, undefined);
      const p = await dst.core.call(R.importPreview, { records });
      assert.deepEqual(p.counts, { new: 1, unchanged: 1, changed: 1, conflicting: 1, refusedDeleted: 1, refusedForgotten: 1 });
      const by = Object.fromEntries(p.items.map((i) => [i.key, i]));
      assert.equal(by.same.outcome, 'unchanged');
      assert.equal(by.same.id, same.memory.id);
      assert.deepEqual([by.changed.outcome, by.changed.fileVersion, by.changed.storeVersion], ['changed', 2, 1]);
      assert.deepEqual([by.fresh.outcome, by.fresh.storeVersion], ['new', null]);
      assert.equal(by.clash.outcome, 'conflicting');
      assert.equal(by.gone.outcome, 'refusedDeleted');
      assert.equal(by['other-key'].outcome, 'refusedForgotten');
      assert.equal(p.truncated, false);
      assert.ok(p.records.history >= 6 && p.records.namespaces >= 1);
      assert.equal((await dst.core.call(R.status, undefined)).position, before.position, 'a preview writes nothing');

      // the import does what the preview said: only the new one is written; the forgotten value is not re-learned
      const imp = await dst.core.call(R.importRecords, { records });
      assert.equal(imp.memories, 1);
      assert.equal(imp.skipped, 5);
      await rejectsWith(dst.core.call(R.get, { namespace: 'project.p', key: 'other-key' }), 'NotFound');

      const small = await dst.core.call(R.importPreview, { records, sample: 2 });
      assert.equal(small.items.length, 2);
      assert.equal(small.truncated, true);
      await rejectsWith(dst.core.call(R.importPreview, { records: [{ type: 'memory', memory: { id: 1 } }] }), 'InvalidParams');
      await rejectsWith(dst.core.call(R.importPreview, { records: [], extra: 1 } as never), 'InvalidParams', 'extra');
    } finally {
      src.close();
      dst.close();
    }
  });
});
