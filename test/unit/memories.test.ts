/** Memory lifecycle through the Core request path: validation, versions, history, deletion that sticks. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

describe('upsert and get', () => {
  it('creates, then updates with a new version and history row', async () => {
    const a = await t.core.call(R.upsert, {
      namespace: 'project.cairn',
      key: 'test-runner',
      value: 'We use node:test',
      kind: 'decision',
      tags: ['testing', 'node'],
      importance: 2,
      confidence: -1,
    });
    assert.equal(a.created, true);
    assert.equal(a.memory.version, 1);
    assert.equal(a.memory.importance, 1, 'importance clamped to 1');
    assert.equal(a.memory.confidence, 0, 'confidence clamped to 0');
    assert.deepEqual(a.memory.tags, ['node', 'testing']);
    assert.match(a.memory.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'UUIDv7 id');
    const b = await t.core.call(R.upsert, {
      namespace: 'project.cairn',
      key: 'test-runner',
      value: 'We use node:test with tsx',
      actor: 'agent:copilot',
      reason: 'tsx added',
    });
    assert.equal(b.created, false);
    assert.equal(b.memory.id, a.memory.id);
    assert.equal(b.memory.version, 2);
    assert.equal(b.memory.kind, 'decision', 'omitted fields keep their values');
    assert.ok(b.position > a.position, 'positions are monotonic');
    const h = await t.core.call(R.history, { id: a.memory.id });
    assert.deepEqual(
      h.entries.map((e) => e.op),
      ['update', 'create'],
    );
    assert.equal(h.entries[0].actor, 'agent:copilot');
    assert.equal(h.entries[0].reason, 'tsx added');
    assert.equal(h.entries[0].previous!.value, 'We use node:test');
    assert.equal(h.entries[0].state!.value, 'We use node:test with tsx');
    assert.equal(h.capped, false);
  });

  it('an identical write changes nothing', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'same' });
    const b = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'same' });
    assert.equal(b.changed, false);
    assert.equal(b.memory.version, 1);
    assert.equal(b.position, a.position);
    assert.equal((await t.core.call(R.history, { id: a.memory.id })).entries.length, 1);
  });

  it('gets by id and by namespace+key, counting access', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'user.preferences', key: 'editor', value: 'vim keybindings' });
    const g1 = await t.core.call(R.get, { id: a.memory.id });
    const g2 = await t.core.call(R.get, { namespace: 'user.preferences', key: 'editor' });
    assert.equal(g1.value, 'vim keybindings');
    assert.equal(g2.accessCount, 2);
    assert.ok(g2.lastAccessedAt);
    await rejectsWith(t.core.call(R.get, { id: 'nope' }), 'NotFound', 'id');
  });

  it('summarizes long values once, at write', async () => {
    const long =
      'The build uses esbuild to bundle the daemon. '.repeat(10) +
      'Native modules such as better-sqlite3 stay external. ' +
      'Tests run with node:test and tsx. '.repeat(10);
    const a = await t.core.call(R.upsert, { namespace: 'project.x', key: 'build', value: long });
    assert.ok(a.memory.summary && a.memory.summary.length <= 320 && a.memory.summary.length > 20);
    const short = await t.core.call(R.upsert, { namespace: 'project.x', key: 'short', value: 'short value' });
    assert.equal(short.memory.summary, null);
  });

  it('ifVersion turns a concurrent edit into a conflict', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'v1' });
    await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'v2', ifVersion: 1 });
    const d = await rejectsWith(
      t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'v3', ifVersion: 1 }),
      'VersionConflict',
      'ifVersion',
    );
    assert.equal(d.currentVersion, 2);
    await rejectsWith(t.core.call(R.upsert, { namespace: 'user', key: 'new', value: 'x', ifVersion: 3 }), 'VersionConflict');
    await t.core.call(R.upsert, { namespace: 'user', key: 'new', value: 'x', ifVersion: 0 });
    assert.equal((await t.core.call(R.get, { id: a.memory.id })).value, 'v2');
  });
});

describe('validation at the boundary', () => {
  const bad: [string, unknown, string, string][] = [
    ['unknown field', { namespace: 'user', key: 'k', value: 'v', colour: 'red' }, 'InvalidParams', 'colour'],
    ['missing value', { namespace: 'user', key: 'k' }, 'InvalidParams', 'value'],
    ['wrong type', { namespace: 'user', key: 'k', value: 42 }, 'InvalidParams', 'value'],
    ['bad kind', { namespace: 'user', key: 'k', value: 'v', kind: 'gossip' }, 'InvalidParams', 'kind'],
    ['empty value', { namespace: 'user', key: 'k', value: '   ' }, 'InvalidParams', 'value'],
    ['bad date', { namespace: 'user', key: 'k', value: 'v', expiresAt: 'tomorrow' }, 'InvalidParams', 'expiresAt'],
    [
      'validTo before validFrom',
      { namespace: 'user', key: 'k', value: 'v', validFrom: '2026-01-02T00:00:00Z', validTo: '2026-01-01T00:00:00Z' },
      'InvalidParams',
      'validTo',
    ],
    [
      'anchor endLine without startLine',
      { namespace: 'user', key: 'k', value: 'v', anchors: [{ path: 'a.ts', endLine: 3 }] },
      'InvalidParams',
      'anchors[0].startLine',
    ],
    [
      'anchor unknown field',
      { namespace: 'user', key: 'k', value: 'v', anchors: [{ path: 'a.ts', line: 3 }] },
      'InvalidParams',
      'anchors[0].line',
    ],
    ['empty segment', { namespace: 'project..x', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
    ['wildcard', { namespace: 'project.*', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
    ['percent', { namespace: 'project.%', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
    ['whitespace', { namespace: 'project. x', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
    ['uppercase', { namespace: 'Project', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
    ['trailing dot', { namespace: 'project.', key: 'k', value: 'v' }, 'InvalidNamespace', 'namespace'],
  ];
  for (const [name, params, code, field] of bad) {
    it(`rejects ${name} with ${code} naming ${field}`, async () => {
      await rejectsWith(t.core.request('memory/upsert', params), code, field);
    });
  }

  it('rejects values over 64 KiB (in UTF-8 bytes) with ValueTooLarge', async () => {
    const d = await rejectsWith(
      t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'é'.repeat(32 * 1024 + 1) }),
      'ValueTooLarge',
      'value',
    );
    assert.equal(d.limit, 65536);
    await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'a'.repeat(65536) });
  });

  it('rejects non-object params and unknown methods', async () => {
    await rejectsWith(t.core.request('memory/upsert', 'hello'), 'InvalidParams');
    await rejectsWith(t.core.request('memory/list', { limit: 0 }), 'InvalidParams', 'limit');
    await rejectsWith(t.core.request('memory/explode', {}), 'NotFound', 'method');
  });
});

describe('deletion sticks', () => {
  it('upsert on a deleted key fails with Deleted (who, when) until restore: true', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'db', value: 'Postgres 15' });
    await t.core.call(R.delete, { id: a.memory.id, actor: 'alice', reason: 'wrong' });
    const d = await rejectsWith(t.core.call(R.upsert, { namespace: 'project.p', key: 'db', value: 'Postgres 16' }), 'Deleted', 'key');
    assert.equal(d.deletedBy, 'alice');
    assert.ok(typeof d.deletedAt === 'string');
    await rejectsWith(t.core.call(R.get, { id: a.memory.id }), 'NotFound');
    assert.equal((await t.core.call(R.get, { id: a.memory.id, includeDeleted: true })).deletedBy, 'alice');
    const r = await t.core.call(R.upsert, { namespace: 'project.p', key: 'db', value: 'Postgres 16', restore: true, actor: 'bob' });
    assert.equal(r.memory.id, a.memory.id);
    assert.equal(r.memory.deletedAt, null);
    const h = await t.core.call(R.history, { id: a.memory.id });
    assert.deepEqual(
      h.entries.map((e) => [e.op, e.actor]),
      [
        ['restore', 'bob'],
        ['delete', 'alice'],
        ['create', 'user'],
      ],
    );
    assert.equal(h.entries[1].reason, 'wrong');
  });

  it('delete is not repeated silently and restore of a live memory is refused', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'v' });
    await rejectsWith(t.core.call(R.restore, { id: a.memory.id }), 'InvalidState');
    await t.core.call(R.delete, { namespace: 'user', key: 'k' });
    await rejectsWith(t.core.call(R.delete, { namespace: 'user', key: 'k' }), 'InvalidState');
    const r = await t.core.call(R.restore, { namespace: 'user', key: 'k' });
    assert.equal(r.memory.deletedAt, null);
  });

  it('forget rejects the value under any key in that namespace unless force: true', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'style', value: 'Use  TABS for indentation' });
    await t.core.call(R.forget, { id: a.memory.id, actor: 'alice', reason: 'we use spaces' });
    const d = await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.p', key: 'other-key', value: 'use tabs for   indentation' }),
      'RejectedValue',
      'value',
    );
    assert.equal(d.rejectedBy, 'alice');
    // another namespace is not affected
    await t.core.call(R.upsert, { namespace: 'project.q', key: 'style', value: 'Use tabs for indentation' });
    const f = await t.core.call(R.upsert, {
      namespace: 'project.p',
      key: 'other-key',
      value: 'Use tabs for indentation',
      force: true,
      actor: 'carol',
    });
    const h = await t.core.call(R.history, { id: f.memory.id });
    assert.deepEqual(h.entries[0].detail, { forced: true });
    assert.equal(h.entries[0].actor, 'carol');
    const fh = await t.core.call(R.history, { id: a.memory.id });
    assert.equal(fh.entries[0].op, 'forget');
  });

  it('restoring a forgotten memory lifts its rejection', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'forget me' });
    await t.core.call(R.forget, { id: a.memory.id });
    await t.core.call(R.restore, { id: a.memory.id });
    await t.core.call(R.upsert, { namespace: 'user', key: 'k2', value: 'forget me' });
    const h = await t.core.call(R.history, { id: a.memory.id });
    assert.deepEqual(h.entries[0].detail, { unrejected: true });
  });

  it('purge removes a deleted memory from every table, leaving one purge row', async () => {
    const a = await t.core.call(R.upsert, {
      namespace: 'user',
      key: 'secret',
      value: 'the password is hunter2',
      anchors: [{ path: 'a.ts', startLine: 1 }],
    });
    const b = await t.core.call(R.upsert, { namespace: 'user', key: 'other', value: 'unrelated' });
    await t.core.call(R.link, { from: a.memory.id, to: b.memory.id, type: 'relates_to' });
    await rejectsWith(t.core.call(R.purge, { id: a.memory.id }), 'InvalidState');
    await t.core.call(R.delete, { id: a.memory.id });
    await t.core.call(R.purge, { id: a.memory.id, reason: 'leaked secret' });
    const db = t.store.db;
    assert.equal((db.prepare('SELECT count(*) c FROM memories WHERE id = ?').get(a.memory.id) as { c: number }).c, 0);
    assert.equal((db.prepare(`SELECT count(*) c FROM memories_fts WHERE memories_fts MATCH 'hunter2'`).get() as { c: number }).c, 0);
    assert.equal((db.prepare('SELECT count(*) c FROM anchors').get() as { c: number }).c, 0);
    assert.equal((db.prepare('SELECT count(*) c FROM links').get() as { c: number }).c, 0);
    const h = db.prepare('SELECT op, previous, state, reason FROM history WHERE memory_id = ?').all(a.memory.id) as {
      op: string;
      previous: string | null;
      state: string | null;
      reason: string;
    }[];
    assert.deepEqual(h, [{ op: 'purge', previous: null, state: null, reason: 'leaked secret' }]);
    assert.ok(!JSON.stringify(db.prepare('SELECT * FROM history').all()).includes('hunter2'));
    // the key can be written again: it no longer exists at all
    await t.core.call(R.upsert, { namespace: 'user', key: 'secret', value: 'new' });
  });
});

describe('supersession, expiry, validity', () => {
  it('supersedes: the old memory stays readable by id but leaves search and list', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'node-version', value: 'Node 18 is required' });
    const b = await t.core.call(R.upsert, {
      namespace: 'project.p',
      key: 'node-version-2',
      value: 'Node 20 is required',
      supersedes: a.memory.id,
    });
    const old = await t.core.call(R.get, { id: a.memory.id });
    assert.equal(old.status, 'superseded');
    assert.equal(old.supersededBy, b.memory.id);
    const s = await t.core.call(R.search, { query: 'node required', mode: 'fts' });
    assert.deepEqual(
      s.hits.map((h) => h.memory.key),
      ['node-version-2'],
    );
    const s2 = await t.core.call(R.search, { query: 'node required', mode: 'fts', include: { superseded: true } });
    assert.equal(s2.hits.length, 2);
    assert.equal((await t.core.call(R.history, { id: a.memory.id })).entries[0].op, 'supersede');
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.p', key: 'x', value: 'y', supersedes: a.memory.id }),
      'InvalidState',
      'supersedes',
    );
    await rejectsWith(
      t.core.call(R.upsert, { namespace: 'project.p', key: 'x', value: 'y', supersedes: 'missing' }),
      'NotFound',
      'supersedes',
    );
  });

  it('expired memories drop out of reads; the sweep soft-deletes them with op expire', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    t.store.now = () => now;
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'tmp', value: 'temporary note', expiresAt: '2026-01-01T01:00:00Z' });
    assert.equal((await t.core.call(R.list, {})).items.length, 1);
    now += 2 * 3600_000;
    assert.equal((await t.core.call(R.list, {})).items.length, 0);
    assert.equal((await t.core.call(R.search, { query: 'temporary', mode: 'fts' })).hits.length, 0);
    await rejectsWith(t.core.call(R.get, { id: a.memory.id }), 'NotFound');
    assert.equal((await t.core.call(R.list, { include: { expired: true } })).items.length, 1);
    const sw = await t.core.call(R.sweep, {});
    assert.equal(sw.expired, 1);
    const h = await t.core.call(R.history, { id: a.memory.id });
    assert.equal(h.entries[0].op, 'expire');
    // A memory that merely expired may be written again without restore.
    const again = await t.core.call(R.upsert, { namespace: 'user', key: 'tmp', value: 'temporary note, renewed' });
    assert.equal(again.memory.expiresAt, null);
    assert.deepEqual((await t.core.call(R.history, { id: a.memory.id })).entries[0].detail, { afterExpire: true });
  });

  it('out-of-validity memories are excluded unless asked for', async () => {
    t.store.now = () => Date.parse('2026-06-01T00:00:00Z');
    await t.core.call(R.upsert, { namespace: 'user', key: 'old-job', value: 'works at Acme', validTo: '2026-01-01T00:00:00Z' });
    await t.core.call(R.upsert, { namespace: 'user', key: 'future', value: 'works at Initech', validFrom: '2027-01-01T00:00:00Z' });
    await t.core.call(R.upsert, { namespace: 'user', key: 'now', value: 'works at Globex', validFrom: '2026-01-01T00:00:00Z' });
    assert.deepEqual(
      (await t.core.call(R.search, { query: 'works', mode: 'fts' })).hits.map((h) => h.memory.key),
      ['now'],
    );
    assert.equal((await t.core.call(R.search, { query: 'works', mode: 'fts', include: { outOfValidity: true } })).hits.length, 3);
  });

  it('proposed memories are included only when asked', async () => {
    await t.core.call(R.upsert, { namespace: 'user', key: 'p', value: 'proposed fact', status: 'proposed' });
    assert.equal((await t.core.call(R.search, { query: 'proposed', mode: 'fts' })).hits.length, 0);
    assert.equal((await t.core.call(R.search, { query: 'proposed', mode: 'fts', include: { proposed: true } })).hits.length, 1);
    assert.equal((await t.core.call(R.list, { include: { proposed: true } })).items[0].status, 'proposed');
  });
});

describe('links', () => {
  it('links live memories, lists neighbors both ways, unlinks', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'a', value: 'A' });
    const b = await t.core.call(R.upsert, { namespace: 'project.p', key: 'b', value: 'B' });
    const l = await t.core.call(R.link, { from: a.memory.id, to: b.memory.id, type: 'depends_on' });
    assert.equal(l.created, true);
    assert.equal((await t.core.call(R.link, { from: a.memory.id, to: b.memory.id, type: 'depends_on' })).created, false);
    const n = await t.core.call(R.neighbors, { id: b.memory.id });
    assert.deepEqual(
      n.neighbors.map((x) => [x.memory.key, x.type, x.direction]),
      [['a', 'depends_on', 'in']],
    );
    await rejectsWith(t.core.call(R.link, { from: a.memory.id, to: a.memory.id, type: 'relates_to' }), 'InvalidState');
    await t.core.call(R.delete, { id: b.memory.id });
    await rejectsWith(t.core.call(R.link, { from: a.memory.id, to: b.memory.id, type: 'relates_to' }), 'NotFound', 'to');
    assert.equal((await t.core.call(R.neighbors, { id: a.memory.id })).neighbors.length, 0, 'deleted neighbours are hidden');
    await t.core.call(R.restore, { id: b.memory.id });
    await t.core.call(R.unlink, { from: a.memory.id, to: b.memory.id, type: 'depends_on' });
    await rejectsWith(t.core.call(R.unlink, { from: a.memory.id, to: b.memory.id, type: 'depends_on' }), 'NotFound');
  });

  it('both ends must be in the given scope', async () => {
    const a = await t.core.call(R.upsert, { namespace: 'project.p', key: 'a', value: 'A' });
    const b = await t.core.call(R.upsert, { namespace: 'project.q', key: 'b', value: 'B' });
    await rejectsWith(
      t.core.call(R.link, { from: a.memory.id, to: b.memory.id, type: 'relates_to', scope: { root: 'project.p' } }),
      'NotFound',
      'to',
    );
  });
});

describe('history cap', () => {
  it('is off by default, and when set trims old rows and is reported', async () => {
    assert.equal(t.core.status().historyCap, null);
    await t.core.call(R.configure, { historyCap: 2 });
    assert.equal(t.core.status().historyCap, 2);
    const a = await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: 'v1' });
    for (const v of ['v2', 'v3', 'v4']) await t.core.call(R.upsert, { namespace: 'user', key: 'k', value: v });
    const h = await t.core.call(R.history, { id: a.memory.id });
    assert.equal(h.entries.length, 2);
    assert.equal(h.capped, true);
    await t.core.call(R.configure, { historyCap: null });
    assert.equal(t.core.status().historyCap, null);
  });
});

describe('list', () => {
  it('pages with a cursor, newest first, and rejects forged cursors', async () => {
    let now = 1_000_000;
    t.store.now = () => (now += 1000);
    for (let i = 0; i < 7; i++) await t.core.call(R.upsert, { namespace: 'project.p', key: `k${i}`, value: `value ${i}` });
    const p1 = await t.core.call(R.list, { limit: 3 });
    assert.deepEqual(
      p1.items.map((m) => m.key),
      ['k6', 'k5', 'k4'],
    );
    const p2 = await t.core.call(R.list, { limit: 3, cursor: p1.nextCursor! });
    const p3 = await t.core.call(R.list, { limit: 3, cursor: p2.nextCursor! });
    assert.deepEqual(
      [...p2.items, ...p3.items].map((m) => m.key),
      ['k3', 'k2', 'k1', 'k0'],
    );
    assert.equal(p3.nextCursor, null);
    await rejectsWith(t.core.call(R.list, { cursor: 'garbage' }), 'InvalidParams', 'cursor');
  });
});
