/**
 * Conformance: one memory lifecycle suite, run against the SQLite store and
 * against the PostgreSQL team store. A behaviour that differs is a bug.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Core } from '../../daemon/src/server/core';
import { rejectsWith } from '../helpers';
import { forEachBackend } from './harness';

forEachBackend('conformance: memories', {}, (get) => {
  const call: Core['call'] = (def, p) => get().core.call(def, p);

  it('content checks are the same on both stores: empty value, NUL in a value, empty tag, reversed validity', async () => {
    const base = { namespace: 'team.checks', key: 'k' };
    await rejectsWith(call(R.upsert, { ...base, value: '   ' }), 'InvalidParams', 'value');
    await rejectsWith(call(R.upsert, { ...base, value: 'a\u0000b' }), 'InvalidParams', 'value');
    await rejectsWith(call(R.upsert, { ...base, value: 'v', tags: ['ok', '  '] }), 'InvalidParams', 'tags[1]');
    await rejectsWith(
      call(R.upsert, { ...base, value: 'v', validFrom: '2026-02-01T00:00:00Z', validTo: '2026-01-01T00:00:00Z' }),
      'InvalidParams',
      'validTo',
    );
    await rejectsWith(call(R.get, { namespace: 'team.checks', key: 'k' }), 'NotFound', 'key');
  });

  it('versions, history with actor and reason, no-change writes, monotonic positions', async () => {
    const a = await call(R.upsert, {
      namespace: 'team.life',
      key: 'runner',
      value: 'We use node:test',
      kind: 'decision',
      tags: ['testing', 'node', 'node'],
      importance: 2,
      confidence: -1,
    });
    assert.equal(a.created, true);
    assert.equal(a.memory.version, 1);
    assert.equal(a.memory.namespace, 'team.life');
    assert.equal(a.memory.importance, 1);
    assert.equal(a.memory.confidence, 0);
    assert.deepEqual(a.memory.tags, ['node', 'testing']);
    assert.match(a.memory.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const b = await call(R.upsert, {
      namespace: 'team.life',
      key: 'runner',
      value: 'We use node:test with tsx',
      actor: 'agent:copilot',
      reason: 'tsx added',
    });
    assert.equal(b.created, false);
    assert.equal(b.memory.id, a.memory.id);
    assert.equal(b.memory.version, 2);
    assert.equal(b.memory.kind, 'decision', 'omitted fields keep their values');
    assert.ok(b.position > a.position, 'positions are monotonic');
    const same = await call(R.upsert, { namespace: 'team.life', key: 'runner', value: 'We use node:test with tsx' });
    assert.equal(same.changed, false);
    assert.equal(same.memory.version, 2);
    const h = await call(R.history, { id: a.memory.id });
    assert.deepEqual(
      h.entries.map((e) => e.op),
      ['update', 'create'],
    );
    assert.equal(h.entries[0].actor, get().actor('agent:copilot'));
    assert.equal(h.entries[0].reason, 'tsx added');
    assert.equal(h.entries[0].previous!.value, 'We use node:test');
    assert.equal(h.entries[0].state!.value, 'We use node:test with tsx');
    assert.equal(h.entries[0].version, 2);
    const byKey = await call(R.history, { namespace: 'team.life', key: 'runner', limit: 1 });
    assert.equal(byKey.entries.length, 1);
    const g1 = await call(R.get, { id: a.memory.id });
    const g2 = await call(R.get, { namespace: 'team.life', key: 'runner' });
    assert.equal(g1.value, 'We use node:test with tsx');
    assert.equal(g2.accessCount, 2);
    assert.ok(g2.lastAccessedAt);
    await rejectsWith(call(R.get, { id: 'nope' }), 'NotFound', 'id');
    await rejectsWith(call(R.get, { namespace: 'team.life', key: 'nope' }), 'NotFound', 'key');
    await rejectsWith(call(R.history, { id: 'nope' }), 'NotFound');
  });

  it('bad input gets the same typed errors', async () => {
    await rejectsWith(call(R.upsert, { namespace: 'team.life', key: 'k', value: '   ' }), 'InvalidParams', 'value');
    await rejectsWith(call(R.upsert, { namespace: 'team.life', key: 'k', value: 'x'.repeat(64 * 1024 + 1) }), 'ValueTooLarge', 'value');
    await rejectsWith(call(R.upsert, { namespace: 'team.Life', key: 'k', value: 'v' }), 'InvalidNamespace', 'namespace');
    await rejectsWith(
      call(R.upsert, { namespace: 'team.life', key: 'k', value: 'v', validFrom: '2030-01-02T00:00:00Z', validTo: '2030-01-01T00:00:00Z' }),
      'InvalidParams',
      'validTo',
    );
    await rejectsWith(
      call(R.upsert, { namespace: 'team.life', key: 'k', value: 'v', anchors: [{ path: 'a.ts', startLine: 5, endLine: 2 }] }),
      'InvalidParams',
      'anchors[0].endLine',
    );
    await rejectsWith(call(R.delete, { namespace: 'team.life' }), 'InvalidParams', 'key');
    await rejectsWith(call(R.delete, { id: 'x', namespace: 'team.life', key: 'k' }), 'InvalidParams', 'id');
  });

  it('ifVersion turns a concurrent edit into a conflict', async () => {
    const a = await call(R.upsert, { namespace: 'team.iv', key: 'k', value: 'v1' });
    await call(R.upsert, { namespace: 'team.iv', key: 'k', value: 'v2', ifVersion: 1 });
    const d = await rejectsWith(
      call(R.upsert, { namespace: 'team.iv', key: 'k', value: 'v3', ifVersion: 1 }),
      'VersionConflict',
      'ifVersion',
    );
    assert.equal(d.currentVersion, 2);
    await rejectsWith(call(R.upsert, { namespace: 'team.iv', key: 'new', value: 'x', ifVersion: 3 }), 'VersionConflict');
    await call(R.upsert, { namespace: 'team.iv', key: 'new', value: 'x', ifVersion: 0 });
    await rejectsWith(call(R.upsert, { namespace: 'team.iv', key: 'new', value: 'y', ifVersion: 0 }), 'VersionConflict');
    assert.equal((await call(R.get, { id: a.memory.id })).value, 'v2');
  });

  it('deletion sticks until restore; restore brings it back with history', async () => {
    const a = await call(R.upsert, { namespace: 'team.del', key: 'k', value: 'old fact' });
    const d = await call(R.delete, { id: a.memory.id, actor: 'bob', reason: 'wrong' });
    assert.ok(d.memory.deletedAt);
    assert.equal(d.memory.deletedBy, get().actor('bob'));
    assert.equal(d.memory.version, 2);
    const err = await rejectsWith(call(R.upsert, { namespace: 'team.del', key: 'k', value: 'new fact' }), 'Deleted', 'key');
    assert.equal(err.deletedBy, get().actor('bob'));
    assert.equal(err.reason, 'wrong');
    await rejectsWith(call(R.get, { id: a.memory.id }), 'NotFound', 'id');
    assert.equal((await call(R.get, { id: a.memory.id, includeDeleted: true })).deletedBy, get().actor('bob'));
    await rejectsWith(call(R.delete, { id: a.memory.id }), 'InvalidState', 'id');
    const w = await call(R.upsert, { namespace: 'team.del', key: 'k', value: 'new fact', restore: true });
    assert.equal(w.memory.deletedAt, null);
    assert.equal(w.memory.version, 3);
    const h = await call(R.history, { id: a.memory.id });
    assert.deepEqual(
      h.entries.map((e) => e.op),
      ['restore', 'delete', 'create'],
    );
    await call(R.delete, { id: a.memory.id });
    const r = await call(R.restore, { namespace: 'team.del', key: 'k' });
    assert.equal(r.memory.deletedAt, null);
    await rejectsWith(call(R.restore, { id: a.memory.id }), 'InvalidState', 'id');
    await rejectsWith(call(R.purge, { id: a.memory.id }), 'InvalidState', 'id');
    await call(R.delete, { id: a.memory.id });
    const pu = await call(R.purge, { id: a.memory.id, reason: 'cleanup' });
    assert.equal(pu.id, a.memory.id);
    await rejectsWith(call(R.get, { id: a.memory.id, includeDeleted: true }), 'NotFound');
    const ph = await call(R.history, { id: a.memory.id });
    assert.deepEqual(
      ph.entries.map((e) => [e.op, e.state, e.previous]),
      [['purge', null, null]],
    );
    assert.deepEqual(ph.entries[0].detail, { namespace: 'team.del', key: 'k' });
    const again = await call(R.upsert, { namespace: 'team.del', key: 'k', value: 'fresh start' });
    assert.equal(again.created, true, 'a purged key is free again');
  });

  it('a forgotten value is not re-learned unless forced; restore lifts the rejection', async () => {
    const a = await call(R.upsert, { namespace: 'team.fg', key: 'k', value: 'Deploys happen on Fridays' });
    await call(R.forget, { id: a.memory.id, actor: 'carol' });
    const e = await rejectsWith(
      call(R.upsert, { namespace: 'team.fg', key: 'other', value: '  deploys HAPPEN on fridays ' }),
      'RejectedValue',
      'value',
    );
    assert.equal(e.rejectedBy, get().actor('carol'));
    await call(R.upsert, { namespace: 'team.fg2', key: 'other', value: 'Deploys happen on Fridays' }); // another namespace: allowed
    const f = await call(R.upsert, { namespace: 'team.fg', key: 'other', value: 'Deploys happen on Fridays', force: true });
    assert.deepEqual((await call(R.history, { id: f.memory.id })).entries[0].detail?.forced, true);
    const b = await call(R.upsert, { namespace: 'team.fg', key: 'b', value: 'Lint before commit' });
    await call(R.forget, { id: b.memory.id });
    await call(R.forget, { id: b.memory.id }); // forgetting a deleted memory still works
    const r = await call(R.restore, { id: b.memory.id });
    assert.equal(r.memory.deletedAt, null);
    assert.deepEqual((await call(R.history, { id: b.memory.id })).entries[0].detail, { unrejected: true });
    await call(R.upsert, { namespace: 'team.fg', key: 'b2', value: 'Lint before commit' });
  });

  it('supersession: the old memory leaves default reads; chains are refused', async () => {
    const old = await call(R.upsert, { namespace: 'team.sup', key: 'db', value: 'We use MySQL' });
    const nu = await call(R.upsert, {
      namespace: 'team.sup',
      key: 'db2',
      value: 'We use PostgreSQL',
      supersedes: old.memory.id,
      reason: 'migrated',
    });
    const o = await call(R.get, { id: old.memory.id });
    assert.equal(o.status, 'superseded');
    assert.equal(o.supersededBy, nu.memory.id);
    const h = await call(R.history, { id: old.memory.id });
    assert.equal(h.entries[0].op, 'supersede');
    assert.deepEqual(h.entries[0].detail, { supersededBy: nu.memory.id });
    const list = await call(R.list, { scope: { root: 'team.sup', includeUser: false } });
    assert.deepEqual(
      list.items.map((m) => m.key),
      ['db2'],
    );
    const all = await call(R.list, { scope: { root: 'team.sup', includeUser: false }, include: { superseded: true } });
    assert.deepEqual(all.items.map((m) => m.key).sort(), ['db', 'db2']);
    await rejectsWith(
      call(R.upsert, { namespace: 'team.sup', key: 'db3', value: 'x', supersedes: old.memory.id }),
      'InvalidState',
      'supersedes',
    );
    await rejectsWith(
      call(R.upsert, { namespace: 'team.sup', key: 'db2', value: 'y', supersedes: nu.memory.id }),
      'InvalidState',
      'supersedes',
    );
    await rejectsWith(call(R.upsert, { namespace: 'team.sup', key: 'db4', value: 'y', supersedes: 'missing' }), 'NotFound', 'supersedes');
  });

  it('validity windows and TTL: hidden when outside, swept by expiry, rewritable after expiry', async () => {
    const b = get();
    const now = Date.parse('2031-06-01T00:00:00Z');
    b.setNow(now);
    try {
      await call(R.upsert, { namespace: 'team.time', key: 'future', value: 'Applies next year', validFrom: '2032-01-01T00:00:00Z' });
      await call(R.upsert, { namespace: 'team.time', key: 'past', value: 'Applied last year', validTo: '2031-01-01T00:00:00Z' });
      await call(R.upsert, {
        namespace: 'team.time',
        key: 'now',
        value: 'Applies now',
        validFrom: '2031-01-01T00:00:00Z',
        validTo: '2032-01-01T00:00:00Z',
      });
      const t = await call(R.upsert, { namespace: 'team.time', key: 'ttl', value: 'Short lived note', expiresAt: '2031-06-01T01:00:00Z' });
      const scope = { root: 'team.time', includeUser: false };
      assert.deepEqual((await call(R.list, { scope })).items.map((m) => m.key).sort(), ['now', 'ttl']);
      assert.deepEqual((await call(R.list, { scope, include: { outOfValidity: true } })).items.map((m) => m.key).sort(), [
        'future',
        'now',
        'past',
        'ttl',
      ]);
      assert.deepEqual(
        (
          await call(R.list, {
            scope,
            filter: { field: 'validAt', op: 'eq', value: '2032-06-01T00:00:00Z' },
            include: { outOfValidity: true },
          })
        ).items
          .map((m) => m.key)
          .sort(),
        ['future', 'ttl'],
        'no window: valid at any time',
      );
      b.setNow(now + 2 * 3600_000);
      assert.deepEqual(
        (await call(R.list, { scope })).items.map((m) => m.key),
        ['now'],
      );
      await rejectsWith(call(R.get, { id: t.memory.id }), 'NotFound', 'id');
      const sw = await call(R.sweep, {});
      assert.ok(sw.expired >= 1);
      const h = await call(R.history, { id: t.memory.id });
      assert.equal(h.entries[0].op, 'expire');
      assert.equal(h.entries[0].actor, 'system:expire');
      // An expired memory is not a rejection: writing it again needs no restore.
      const again = await call(R.upsert, { namespace: 'team.time', key: 'ttl', value: 'Back again' });
      assert.equal(again.memory.deletedAt, null);
      assert.equal(again.memory.expiresAt, null);
      assert.deepEqual((await call(R.history, { id: t.memory.id })).entries[0].detail, { afterExpire: true });
    } finally {
      b.setNow(null);
    }
  });

  it('links and neighbors, scoped', async () => {
    const a = await call(R.upsert, { namespace: 'team.ln', key: 'a', value: 'Service A calls B' });
    const b = await call(R.upsert, { namespace: 'team.ln', key: 'b', value: 'Service B owns billing' });
    const l = await call(R.link, { from: a.memory.id, to: b.memory.id, type: 'depends_on', actor: 'dana' });
    assert.equal(l.created, true);
    assert.equal(l.link.actor, get().actor('dana'));
    const again = await call(R.link, { from: a.memory.id, to: b.memory.id, type: 'depends_on' });
    assert.equal(again.created, false);
    await rejectsWith(call(R.link, { from: a.memory.id, to: a.memory.id, type: 'supports' }), 'InvalidState', 'to');
    await rejectsWith(call(R.link, { from: a.memory.id, to: 'missing', type: 'supports' }), 'NotFound', 'to');
    const out = await call(R.neighbors, { id: a.memory.id });
    assert.deepEqual(
      out.neighbors.map((n) => [n.memory.key, n.type, n.direction]),
      [['b', 'depends_on', 'out']],
    );
    const inn = await call(R.neighbors, { id: b.memory.id, direction: 'in' });
    assert.deepEqual(
      inn.neighbors.map((n) => n.memory.key),
      ['a'],
    );
    await rejectsWith(call(R.neighbors, { id: a.memory.id, scope: { root: 'team.other', includeUser: false } }), 'NotFound', 'id');
    await call(R.delete, { id: b.memory.id });
    assert.equal((await call(R.neighbors, { id: a.memory.id })).neighbors.length, 0, 'deleted neighbours are hidden');
    await call(R.restore, { id: b.memory.id });
    const u = await call(R.unlink, { from: a.memory.id, to: b.memory.id, type: 'depends_on' });
    assert.equal(u.removed, true);
    await rejectsWith(call(R.unlink, { from: a.memory.id, to: b.memory.id, type: 'depends_on' }), 'NotFound', 'type');
  });

  it('namespaces: list with counts, rename a subtree, delete hides and the sweep purges', async () => {
    await call(R.upsert, { namespace: 'team.ns.a', key: 'k1', value: 'one' });
    await call(R.upsert, { namespace: 'team.ns.a.deep', key: 'k2', value: 'two' });
    await call(R.upsert, { namespace: 'team.nsx', key: 'k3', value: 'sibling' });
    const ls = await call(R.namespacesList, { root: 'team.ns' });
    assert.deepEqual(
      ls.namespaces.map((n) => [n.path, n.memoryCount]),
      [
        ['team.ns.a', 1],
        ['team.ns.a.deep', 1],
      ],
    );
    const r = await call(R.namespacesRename, { from: 'team.ns.a', to: 'team.ns.b' });
    assert.equal(r.renamed, 2);
    assert.equal((await call(R.get, { namespace: 'team.ns.b.deep', key: 'k2' })).value, 'two');
    await rejectsWith(call(R.namespacesRename, { from: 'team.ns.b', to: 'team.ns.b.inner' }), 'InvalidState', 'to');
    await rejectsWith(call(R.namespacesRename, { from: 'team.ns.zz', to: 'team.ns.yy' }), 'NotFound', 'from');
    await rejectsWith(call(R.namespacesRename, { from: 'team.ns.b', to: 'team.nsx' }), 'InvalidState', 'to');
    const d = await call(R.namespacesDelete, { path: 'team.ns.b', reason: 'obsolete' });
    assert.deepEqual([d.deleted, d.memories], [2, 2]);
    await rejectsWith(call(R.get, { namespace: 'team.ns.b', key: 'k1' }), 'NotFound');
    assert.equal((await call(R.list, { scope: { root: 'team.ns', includeUser: false }, include: { deleted: true } })).items.length, 0);
    await rejectsWith(call(R.namespacesDelete, { path: 'team.ns.b' }), 'NotFound', 'path');
    const sw = await call(R.sweep, {});
    assert.ok(sw.purged >= 2);
    assert.equal((await call(R.get, { namespace: 'team.nsx', key: 'k3' })).value, 'sibling', 'the prefix sibling is untouched');
    const fresh = await call(R.upsert, { namespace: 'team.ns.b', key: 'k1', value: 'new life' });
    assert.equal(fresh.created, true, 'a deleted namespace can be created again');
  });

  it("by-id requests honour the caller's scope; tags are stored normalized; credentials are tagged secret", async () => {
    const a = await call(R.upsert, { namespace: 'team.sc.a', key: 'k', value: 'Scoped memory', tags: [' Node', 'node', 'CI '] });
    assert.deepEqual(a.memory.tags, ['ci', 'node']);
    const other = { root: 'team.sc.b', includeUser: false };
    await rejectsWith(call(R.history, { id: a.memory.id, scope: other }), 'NotFound', 'id');
    await rejectsWith(call(R.delete, { id: a.memory.id, scope: other }), 'NotFound', 'id');
    await rejectsWith(call(R.get, { namespace: 'team.sc.a', key: 'k', scope: other }), 'NotFound', 'key');
    await rejectsWith(call(R.upsert, { namespace: 'team.sc.a', key: 'x', value: 'v', scope: other }), 'InvalidParams', 'namespace');
    await rejectsWith(
      call(R.upsert, { namespace: 'team.sc.b', key: 'x', value: 'v', supersedes: a.memory.id, scope: other }),
      'NotFound',
      'supersedes',
    );
    assert.equal((await call(R.get, { id: a.memory.id })).deletedAt, null, 'nothing changed');
    assert.equal((await call(R.history, { id: a.memory.id, scope: { root: 'team.sc', includeUser: false } })).entries.length, 1);
    const f = await call(R.list, { scope: { root: 'team.sc', includeUser: false }, filter: { field: 'tags', op: 'has', value: 'NODE' } });
    assert.deepEqual(
      f.items.map((m) => m.key),
      ['k'],
    );
    const s = await call(R.upsert, {
      namespace: 'team.sc.a',
      key: 'token',
      value: 'The deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789',
    });
    assert.ok(s.memory.tags.includes('secret'), JSON.stringify(s));
    assert.ok((s.warnings ?? []).some((w) => w.code === 'credential'));
  });

  it('lists page by updatedAt with cursors; batches report per item', async () => {
    const items = Array.from({ length: 7 }, (_, i) => ({ namespace: 'team.page', key: `k${i}`, value: `value ${i}` }));
    const batch = await call(R.upsertBatch, { items: [...items, { namespace: 'team.page', key: 'bad', value: ' ' }] });
    assert.equal(batch.results.length, 8);
    assert.ok(batch.results.slice(0, 7).every((r) => r.ok));
    assert.equal(batch.results[7].ok, false);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await call(R.list, { scope: { root: 'team.page', includeUser: false }, limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((m) => m.key));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    assert.deepEqual([...seen].sort(), items.map((x) => x.key).sort());
    assert.equal(new Set(seen).size, 7);
    await rejectsWith(call(R.list, { cursor: 'garbage' }), 'InvalidParams', 'cursor');
  });
});
