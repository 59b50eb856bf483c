/** Retention per namespace root (enforced by the sweep, recorded in history) and the audit export of history. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function clocked() {
  const t = tempCore();
  let now = T0;
  t.store.now = () => now;
  return { ...t, at: (ms: number) => (now = ms) };
}

describe('retention', () => {
  it('maxVersions trims past versions only, records what it removed, and is idempotent', async () => {
    const t = clocked();
    try {
      for (let v = 1; v <= 6; v++) {
        t.at(T0 + v * 1000);
        await t.core.call(R.upsert, { namespace: 'project.r', key: 'k', value: `version ${v}` });
      }
      await t.core.call(R.upsert, { namespace: 'project.other', key: 'k', value: 'a' });
      await t.core.call(R.upsert, { namespace: 'project.other', key: 'k', value: 'b' });
      await t.core.call(R.retention, { set: { root: 'project.r', maxVersions: 2 } });
      const r = await t.core.call(R.sweep, {});
      assert.equal(r.retention!.removedVersions, 4);
      const m = await t.core.call(R.get, { namespace: 'project.r', key: 'k' });
      assert.equal(m.value, 'version 6');
      assert.equal(m.version, 6, 'the memory itself is untouched');
      const h = (await t.core.call(R.history, { id: m.id })).entries;
      assert.deepEqual(
        h.map((e) => [e.op, e.version]),
        [
          ['retention', 6],
          ['update', 6],
          ['update', 5],
        ],
      );
      assert.equal(h[0].actor, 'retention');
      assert.deepEqual(h[0].detail, { retention: 'project.r', removedVersions: [1, 2, 3, 4] });
      assert.equal((await t.core.call(R.history, { namespace: 'project.other', key: 'k' })).entries.length, 2, 'outside the root: kept');
      const again = await t.core.call(R.sweep, {});
      assert.equal(again.retention!.removedVersions, 0);
      assert.equal((await t.core.call(R.history, { id: m.id })).entries.length, 3);
    } finally {
      t.close();
    }
  });

  it('maxVersions and maxAgeDays trimming the same memory write one retention row with every removed version', async () => {
    const t = clocked();
    try {
      // Versions 1-3 are old (past maxAgeDays), 4-6 recent; maxVersions 2 would keep 5-6, maxAgeDays keeps 4-6.
      for (let v = 1; v <= 6; v++) {
        t.at(T0 + (v <= 3 ? v * 1000 : 40 * DAY + v * 1000));
        await t.core.call(R.upsert, { namespace: 'project.r', key: 'both', value: `version ${v}` });
      }
      t.at(T0 + 41 * DAY);
      await t.core.call(R.retention, { set: { root: 'project.r', maxVersions: 2, maxAgeDays: 30 } });
      const r = await t.core.call(R.sweep, {});
      assert.equal(r.retention!.removedVersions, 4);
      assert.deepEqual(
        r.retention!.actions.map((a) => [a.action, a.count]),
        [['versions', 4]],
      );
      const m = await t.core.call(R.get, { namespace: 'project.r', key: 'both' });
      const h = (await t.core.call(R.history, { id: m.id })).entries;
      assert.deepEqual(
        h.map((e) => [e.op, e.version]),
        [
          ['retention', 6],
          ['update', 6],
          ['update', 5],
        ],
      );
      assert.equal(h.filter((e) => e.op === 'retention').length, 1);
      assert.deepEqual(h[0].detail, { retention: 'project.r', removedVersions: [1, 2, 3, 4] });
      assert.equal(h[0].reason, 'retention: project.r keeps 2 versions and 30 days of history');
      assert.equal((await t.core.call(R.sweep, {})).retention!.removedVersions, 0);
    } finally {
      t.close();
    }
  });

  it("maxAgeDays drops old history (keeping each memory's newest entry) and purges long-deleted memories, never a live one", async () => {
    const t = clocked();
    try {
      const old = await t.core.call(R.upsert, { namespace: 'project.r', key: 'old-live', value: 'written long ago, never changed' });
      const edited = await t.core.call(R.upsert, { namespace: 'project.r', key: 'edited', value: 'v1' });
      t.at(T0 + 5 * DAY);
      await t.core.call(R.upsert, { namespace: 'project.r', key: 'edited', value: 'v2' });
      const dead = await t.core.call(R.upsert, { namespace: 'project.r', key: 'dead', value: 'deleted text' });
      await t.core.call(R.delete, { id: dead.memory.id });
      t.at(T0 + 30 * DAY);
      const recent = await t.core.call(R.upsert, { namespace: 'project.r', key: 'recently-deleted', value: 'x' });
      await t.core.call(R.delete, { id: recent.memory.id });
      await t.core.call(R.retention, { set: { root: 'project.r', maxAgeDays: 10 } });
      const r = (await t.core.call(R.sweep, {})).retention!;
      assert.equal(r.purged, 1);
      assert.equal(r.removedVersions, 1, 'only the first version of "edited"');
      assert.deepEqual(r.actions.map((a) => a.action).sort(), ['purge', 'versions']);
      assert.equal(
        (await t.core.call(R.get, { id: old.memory.id })).value,
        'written long ago, never changed',
        'a live memory is never removed by age',
      );
      assert.equal((await t.core.call(R.history, { id: old.memory.id })).entries.length, 1, 'its only (newest) history entry stays');
      assert.deepEqual(
        (await t.core.call(R.history, { id: edited.memory.id })).entries.map((e) => e.op),
        ['retention', 'update'],
      );
      await rejectsWith(t.core.call(R.get, { id: dead.memory.id, includeDeleted: true }), 'NotFound');
      const purgeRow = (await t.core.call(R.history, { id: dead.memory.id })).entries[0];
      assert.deepEqual([purgeRow.op, purgeRow.actor], ['purge', 'retention']);
      assert.equal(
        (await t.core.call(R.get, { id: recent.memory.id, includeDeleted: true })).key,
        'recently-deleted',
        'deleted 0 days ago: kept',
      );
    } finally {
      t.close();
    }
  });

  it('maxTtlDays sets a visible expiry (a new version by retention); the memory then expires, restorably', async () => {
    const t = clocked();
    try {
      const a = await t.core.call(R.upsert, { namespace: 'project.r', key: 'forever', value: 'no expiry' });
      const soon = await t.core.call(R.upsert, {
        namespace: 'project.r',
        key: 'soon',
        value: 'expires sooner',
        expiresAt: new Date(T0 + DAY).toISOString(),
      });
      t.at(T0 + 100 * DAY);
      await t.core.call(R.retention, { set: { root: 'project.r', maxTtlDays: 30 } });
      const r = (await t.core.call(R.sweep, {})).retention!;
      assert.equal(r.ttlCapped, 1);
      const m = await t.core.call(R.get, { id: a.memory.id });
      assert.equal(m.expiresAt, new Date(T0 + 130 * DAY).toISOString(), '30 days from when the rule was set, not at once');
      assert.equal(m.version, 2);
      const h = (await t.core.call(R.history, { id: a.memory.id })).entries[0];
      assert.deepEqual([h.op, h.actor], ['update', 'retention']);
      assert.equal((await t.core.call(R.sweep, {})).retention!.ttlCapped, 0);
      void soon;
      t.at(T0 + 131 * DAY);
      assert.equal((await t.core.call(R.sweep, {})).expired, 1);
      await rejectsWith(t.core.call(R.get, { id: a.memory.id }), 'NotFound');
      await t.core.call(R.restore, { id: a.memory.id });
      assert.equal((await t.core.call(R.get, { id: a.memory.id })).value, 'no expiry');
    } finally {
      t.close();
    }
  });

  it('maxTtlDays caps a memory updated later than the store clock once: the next steps leave it alone', async () => {
    const t = clocked();
    try {
      // Written by a clock ahead of this one (another machine, a clock set back since): updated_at is in the future.
      t.at(T0 + 10 * DAY);
      const a = await t.core.call(R.upsert, { namespace: 'project.r', key: 'ahead', value: 'written ahead of the clock' });
      await t.core.call(R.branchCreate, { name: 'b1', root: 'project.r' });
      await t.core.call(R.upsert, { namespace: 'project.r', key: 'branched', value: 'branch row ahead of the clock', branch: 'b1' });
      t.at(T0);
      await t.core.call(R.retention, { set: { root: 'project.r', maxTtlDays: 30 } });
      assert.equal((await t.core.call(R.sweep, {})).retention!.ttlCapped, 2, 'the memory and the branch row');
      const m = await t.core.call(R.get, { id: a.memory.id });
      assert.equal(m.expiresAt, new Date(T0 + 40 * DAY).toISOString(), '30 days from its last update');
      assert.equal(m.updatedAt, new Date(T0 + 10 * DAY).toISOString(), 'its last update does not move back to the slower clock');
      const branchRow = () =>
        t.store.db.prepare(`SELECT version, expires_at, updated_at FROM branch_memories WHERE key = 'branched'`).get() as Record<
          string,
          number
        >;
      const b = branchRow();
      assert.deepEqual([b.expires_at, b.updated_at], [T0 + 40 * DAY, T0 + 10 * DAY]);
      for (let step = 0; step < 3; step++) {
        t.at(T0 + step * 1000);
        assert.equal((await t.core.call(R.sweep, {})).retention!.ttlCapped, 0, `step ${step} caps nothing`);
      }
      assert.equal((await t.core.call(R.get, { id: a.memory.id })).version, m.version, 'no new version');
      assert.deepEqual(branchRow(), b);
      const byRetention = (await t.core.call(R.history, { id: a.memory.id })).entries.filter((e) => e.actor === 'retention');
      assert.equal(byRetention.length, 1);
    } finally {
      t.close();
    }
  });

  it('lists, replaces and clears rules; bad rules get typed errors', async () => {
    const t = clocked();
    try {
      assert.deepEqual((await t.core.call(R.retention, {})).rules, []);
      await t.core.call(R.retention, { set: { root: 'project.b', maxVersions: 3 } });
      await t.core.call(R.retention, { set: { root: 'project.a', maxAgeDays: 7 } });
      const rules = (await t.core.call(R.retention, { set: { root: 'project.b', maxVersions: 5 } })).rules;
      assert.deepEqual(
        rules.map((r) => [r.root, r.maxVersions ?? r.maxAgeDays]),
        [
          ['project.a', 7],
          ['project.b', 5],
        ],
      );
      assert.deepEqual(
        (await t.core.call(R.retention, { clear: 'project.a' })).rules.map((r) => r.root),
        ['project.b'],
      );
      await rejectsWith(t.core.call(R.retention, { clear: 'project.a' }), 'NotFound', 'clear');
      await rejectsWith(t.core.call(R.retention, { set: { root: 'project.c' } }), 'InvalidParams', 'set');
      await rejectsWith(t.core.call(R.retention, { set: { root: 'Bad Root', maxVersions: 1 } }), 'InvalidNamespace', 'set.root');
      await rejectsWith(t.core.call(R.retention, { set: { root: 'project.c', maxVersions: 0 } }), 'InvalidParams', 'set.maxVersions');
      await rejectsWith(
        t.core.call(R.retention, { set: { root: 'project.c', maxVersions: 1 }, clear: 'project.b' }),
        'InvalidParams',
        'clear',
      );
    } finally {
      t.close();
    }
  });
});

describe('store/audit', () => {
  it('pages history for a time range, optionally without content, scoped including erased memories', async () => {
    const t = clocked();
    try {
      for (let i = 0; i < 5; i++) {
        t.at(T0 + i * DAY);
        await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `value ${i}` });
      }
      await t.core.call(R.upsert, { namespace: 'project.b', key: 'k', value: 'elsewhere' });
      const e = await t.core.call(R.upsert, { namespace: 'project.a', key: 'gone', value: 'erase me' });
      await t.core.call(R.erase, { id: e.memory.id, reason: 'asked' });
      const range = await t.core.call(R.audit, { from: new Date(T0 + DAY).toISOString(), to: new Date(T0 + 3 * DAY).toISOString() });
      assert.deepEqual(
        range.entries.map((x) => x.state?.key),
        ['k1', 'k2'],
      );
      const bare = await t.core.call(R.audit, { content: false, limit: 3 });
      assert.equal(bare.entries.length, 3);
      assert.ok(bare.entries.every((x) => x.state === null && x.previous === null));
      assert.ok(bare.nextCursor);
      const all = [...bare.entries];
      let cursor: string | null | undefined = bare.nextCursor;
      while (cursor) {
        const p: { entries: typeof all; nextCursor?: string | null } = await t.core.call(R.audit, { content: false, limit: 3, cursor });
        all.push(...p.entries);
        cursor = p.nextCursor;
      }
      assert.equal(all.length, 7);
      assert.deepEqual(all.map((x) => x.op).slice(-1), ['erase']);
      const scoped = await t.core.call(R.audit, { scope: { root: 'project.a', includeUser: false } });
      assert.equal(scoped.entries.length, 6, 'project.b left out; the erase row kept through its namespace');
      assert.equal(scoped.entries[5].op, 'erase');
      await rejectsWith(t.core.call(R.audit, { cursor: 'zz' }), 'InvalidParams', 'cursor');
      await rejectsWith(t.core.call(R.audit, { from: new Date(T0).toISOString(), to: new Date(T0).toISOString() }), 'InvalidParams', 'to');
      await rejectsWith(t.core.call(R.audit, { from: 'yesterday' }), 'InvalidParams', 'from');
    } finally {
      t.close();
    }
  });
});
