/**
 * Many writers and an unreachable team database.
 * - Three store instances (three daemons' worth of connections) write the same
 *   namespaces at once: versions stay monotonic without gaps, nothing
 *   acknowledged is lost, `ifVersion` races surface as VersionConflict.
 * - With the database down, local namespaces keep working, team requests fail
 *   at once with Unavailable (nothing acknowledged), and the daemon reconnects
 *   by itself, change feed included, when the database is back.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { rejectsWith } from '../helpers';
import { startPg, type PgServer } from './pg-server';
import { recordStatements } from './record-statements';
import { teamDaemon } from './team-daemon';

describe('team memory: concurrent writers', () => {
  let pg: PgServer;
  let writers: PgBackend[];
  let db: string;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'write');
    writers = await Promise.all([0, 1, 2].map(() => new PgBackend({ url: pg.url('alice', db), poolSize: 4 }).open()));
  });
  after(async () => {
    for (const w of writers ?? []) await w.close();
    await pg?.stop();
  });

  it('blind writes to one key from three writers: every acknowledged write is a version, in order, none lost', async () => {
    const acked: { version: number; value: string; position: number }[] = [];
    await Promise.all(
      writers.map(async (w, wi) => {
        for (let i = 0; i < 15; i++) {
          const r = await w.upsert({ namespace: 'team.race', key: 'shared', value: `writer ${wi} write ${i}` });
          acked.push({ version: r.memory.version, value: r.memory.value, position: r.position });
        }
      }),
    );
    const versions = acked.map((a) => a.version).sort((a, b) => a - b);
    assert.deepEqual(
      versions,
      Array.from({ length: 45 }, (_, i) => i + 1),
      'each write got its own version, no gaps, no repeats',
    );
    assert.equal(new Set(acked.map((a) => a.position)).size, 45, 'distinct change-log positions');
    const h = await writers[0].history({ namespace: 'team.race', key: 'shared', limit: 1000 });
    assert.equal(h.entries.length, 45);
    for (const a of acked) {
      const e = h.entries.find((x) => x.version === a.version)!;
      assert.equal(e.state!.value, a.value, `version ${a.version} holds what was acknowledged`);
    }
    const byVersion = [...h.entries].sort((a, b) => a.version - b.version);
    for (let i = 1; i < byVersion.length; i++)
      assert.equal(byVersion[i].previous!.value, byVersion[i - 1].state!.value, 'each version starts from the one before');
  });

  it('a new key in a known namespace is one statement; every guard that stops it falls back to the full decision', async () => {
    const [w0, w1] = writers;
    const statements: string[] = [];
    const stop = recordStatements(w0.pool, statements);
    try {
      await w0.upsert({ namespace: 'team.blind', key: 'a', value: 'first write learns the namespace' });
      statements.length = 0;
      const b = await w0.upsert({ namespace: 'team.blind', key: 'b', value: 'a new key', actor: 'agent:x' });
      assert.equal(statements.length, 1, 'no read before a new key');
      assert.deepEqual([b.created, b.memory.version], [true, 1]);
      const { accessCount: _a, lastAccessedAt: _l, ...stored } = await w1.get({ namespace: 'team.blind', key: 'b' });
      const { accessCount: _a0, lastAccessedAt: _l0, ...returned } = b.memory;
      assert.deepEqual(stored, returned, 'the returned memory is the stored one');
      const hb = await w1.history({ id: b.memory.id });
      assert.deepEqual(
        hb.entries.map((e) => [e.op, e.version, e.actor, e.detail]),
        [['create', 1, 'alice', { onBehalfOf: 'agent:x' }]],
      );

      // The key exists (another daemon wrote it): an update of it, not a second memory.
      const c1 = await w1.upsert({ namespace: 'team.blind', key: 'c', value: 'written by the other daemon' });
      const c2 = await w0.upsert({ namespace: 'team.blind', key: 'c', value: 'then changed here' });
      assert.deepEqual([c2.created, c2.memory.id, c2.memory.version], [false, c1.memory.id, 2]);
      assert.deepEqual(
        (await w0.history({ id: c1.memory.id })).entries.map((e) => [e.op, e.previous?.value ?? null]),
        [
          ['update', 'written by the other daemon'],
          ['create', null],
        ],
      );
      // ifVersion 0 on a key another daemon holds: VersionConflict.
      await w1.upsert({ namespace: 'team.blind', key: 'd', value: 'taken' });
      await rejectsWith(w0.upsert({ namespace: 'team.blind', key: 'd', value: 'mine?', ifVersion: 0 }), 'VersionConflict');
      // A deleted key stays deleted.
      await w1.upsert({ namespace: 'team.blind', key: 'e', value: 'to be deleted' });
      await w1.delete({ namespace: 'team.blind', key: 'e' });
      await rejectsWith(w0.upsert({ namespace: 'team.blind', key: 'e', value: 'back?' }), 'Deleted');
      // A value forgotten in the namespace is refused under a new key too.
      await w1.upsert({ namespace: 'team.blind', key: 'f', value: 'the staging password is hunter2' });
      await w1.forget({ namespace: 'team.blind', key: 'f' });
      await w0.upsert({ namespace: 'team.blind', key: 'f2', value: 'a write that learns the namespace again' });
      statements.length = 0;
      await rejectsWith(w0.upsert({ namespace: 'team.blind', key: 'g', value: 'the staging password is hunter2' }), 'RejectedValue');
      assert.equal(statements.length, 2, 'the blind create, then the read that decides');
      await rejectsWith(w0.get({ namespace: 'team.blind', key: 'g' }), 'NotFound');

      // The namespace was deleted (and its id with it): the write lands in the live namespace of that path.
      await pg.grant(db, 'alice', 'team.gone', 'admin');
      await w0.upsert({ namespace: 'team.gone', key: 'x', value: 'before the delete' });
      await w1.deleteNamespace('team.gone');
      const y = await w0.upsert({ namespace: 'team.gone', key: 'y', value: 'after the delete' });
      assert.deepEqual(
        (await w1.listNamespaces('team.gone')).map((n) => [n.path, n.memoryCount]),
        [['team.gone', 1]],
      );
      assert.equal((await w1.get({ namespace: 'team.gone', key: 'y' })).id, y.memory.id);
    } finally {
      stop();
    }
  });

  it('read-modify-write with ifVersion: conflicts surface as VersionConflict and retries lose no increment', async () => {
    await writers[0].upsert({ namespace: 'team.counter', key: 'n', value: '0' });
    let conflicts = 0;
    await Promise.all(
      writers.map(async (w) => {
        for (let i = 0; i < 10; i++) {
          for (;;) {
            const cur = await w.get({ namespace: 'team.counter', key: 'n' });
            try {
              await w.upsert({ namespace: 'team.counter', key: 'n', value: String(Number(cur.value) + 1), ifVersion: cur.version });
              break;
            } catch (e) {
              if (!(e instanceof CairnError) || e.codeName !== 'VersionConflict') throw e;
              conflicts++;
            }
          }
        }
      }),
    );
    const end = await writers[1].get({ namespace: 'team.counter', key: 'n' });
    assert.equal(end.value, '30', `all 30 increments kept (${conflicts} conflicts retried)`);
    assert.equal(end.version, 31);
  });

  it('creating many keys (and their namespaces) at once from three writers loses none', async () => {
    await Promise.all(
      writers.map((w, wi) =>
        Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            w.upsert({ namespace: `team.burst.n${i % 4}`, key: `w${wi}-k${i}`, value: `burst ${wi} ${i}` }),
          ),
        ),
      ),
    );
    const all = await writers[2].list({ scope: { root: 'team.burst', includeUser: false }, limit: 1000 });
    assert.equal(all.items.length, 60);
    assert.deepEqual(
      (await writers[0].listNamespaces('team.burst')).map((n) => [n.path, n.memoryCount]),
      [0, 1, 2, 3].map((i) => [`team.burst.n${i}`, 15]),
    );
    const same = await Promise.allSettled(
      writers.map((w) => w.upsert({ namespace: 'team.burst.once', key: 'only', value: `first ${Math.random()}`, ifVersion: 0 })),
    );
    assert.equal(same.filter((s) => s.status === 'fulfilled').length, 1, 'exactly one create wins');
    for (const s of same) if (s.status === 'rejected') assert.equal((s.reason as CairnError).codeName, 'VersionConflict');
  });

  it('the two-round-trip write stores exactly what the locked transaction stores, and returns what it stored', async () => {
    const fields = {
      kind: 'decision' as const,
      tags: ['Build', 'ci'],
      importance: 0.7,
      confidence: 0.9,
      properties: { n: 1, s: 'x' },
      anchors: [{ path: 'src/a.ts', startLine: 3, endLine: 5 }],
      validFrom: '2020-01-01T00:00:00.000Z',
      actor: 'agent:x',
      reason: 'why',
    };
    const seen: Record<string, unknown>[] = [];
    for (const path of ['fast', 'locked'] as const) {
      const w = writers[0];
      w.writePath = path;
      try {
        const ns = `team.paths.${path}`;
        const a = await w.upsert({ namespace: ns, key: 'k', value: 'The build runs on every push to main', ...fields });
        const b = await w.upsert({ namespace: ns, key: 'k', value: 'The build runs on every push and every tag', tags: ['build'] });
        const same = await w.upsert({ namespace: ns, key: 'k', value: 'The build runs on every push and every tag', tags: ['build'] });
        assert.equal(same.changed, false);
        assert.equal(same.memory.version, 2);
        const stored = (await w.list({ scope: { root: ns, includeUser: false } })).items[0];
        assert.deepEqual(b.memory, stored, `${path}: the returned memory is the stored one`);
        const h = await w.history({ id: a.memory.id });
        assert.deepEqual(
          h.entries.map((e) => [e.op, e.version, e.actor, e.reason]),
          [
            ['update', 2, 'alice', null],
            ['create', 1, 'alice', 'why'],
          ],
        );
        assert.deepEqual(h.entries[0].state, stored, `${path}: history holds the stored state`);
        assert.deepEqual(h.entries[0].previous, a.memory);
        assert.equal(h.entries[1].detail?.onBehalfOf, 'agent:x');
        const del = await w.delete({ namespace: ns, key: 'k' });
        await assert.rejects(w.upsert({ namespace: ns, key: 'k', value: 'again' }), (e: CairnError) => e.codeName === 'Deleted');
        const back = await w.upsert({ namespace: ns, key: 'k', value: 'again', restore: true });
        assert.equal(back.memory.version, del.memory.version + 1);
        const strip = (m: Record<string, unknown>) =>
          Object.fromEntries(Object.entries(m).filter(([k]) => !['id', 'namespace', 'createdAt', 'updatedAt'].includes(k)));
        seen.push(strip(stored as unknown as Record<string, unknown>), strip(back.memory as unknown as Record<string, unknown>));
      } finally {
        w.writePath = 'fast';
      }
    }
    assert.deepEqual(seen[0], seen[2], 'same stored memory on both paths');
    assert.deepEqual(seen[1], seen[3], 'same restored memory on both paths');
  });

  it('batches: refusals per item, the same key twice, versions in order; a racing writer loses nothing', async () => {
    await writers[0].upsert({ namespace: 'team.batch', key: 'gone', value: 'to be deleted' });
    await writers[0].delete({ namespace: 'team.batch', key: 'gone' });
    await writers[0].upsert({ namespace: 'team.batch', key: 'bad', value: 'a bad idea' });
    await writers[0].forget({ namespace: 'team.batch', key: 'bad' });
    const racing = Promise.all(
      Array.from({ length: 30 }, (_, i) => writers[1].upsert({ namespace: 'team.batch', key: 'twice', value: `racer ${i}` })),
    );
    const r = await writers[0].upsertBatch([
      { namespace: 'team.batch', key: 'twice', value: 'first' },
      { namespace: 'team.batch', key: 'gone', value: 'back?' },
      { namespace: 'team.batch', key: 'new', value: 'new', ifVersion: 3 },
      { namespace: 'team.batch', key: 'again', value: 'a bad idea' },
      { namespace: 'team.batch', key: 'twice', value: 'second' },
    ]);
    await racing;
    assert.deepEqual(
      r.results.map((x) => (x.ok ? 'ok' : x.error.code)),
      ['ok', 'Deleted', 'VersionConflict', 'RejectedValue', 'ok'].map((c) => (c === 'ok' ? 'ok' : new CairnError(c as 'Deleted', '').code)),
    );
    const [first, , , , second] = r.results;
    assert.ok(first.ok && second.ok);
    assert.ok(second.version > first.version && second.position > first.position);
    const h = await writers[2].history({ namespace: 'team.batch', key: 'twice', limit: 1000 });
    assert.equal(h.entries.length, 32, 'every acknowledged write is one version');
    assert.deepEqual(
      h.entries.map((e) => e.version),
      Array.from({ length: 32 }, (_, i) => 32 - i),
    );
    await rejectsWith(writers[2].get({ namespace: 'team.batch', key: 'new' }), 'NotFound');
    // What a batch writes in one statement is what history records and a read returns.
    const fresh = await writers[0].upsertBatch([
      {
        namespace: 'team.batch.fresh',
        key: 'a',
        value: 'Alpha is deployed by the release job',
        tags: ['Ops'],
        properties: { tier: 1 },
        anchors: [{ path: 'deploy.sh', startLine: 1 }],
      },
      { namespace: 'team.batch', key: 'twice', value: 'third', kind: 'decision' },
      {
        namespace: 'team.batch.fresh',
        key: 'b',
        value: 'Beta waits for the nightly run',
        validTo: '2999-01-01T00:00:00.000Z',
        actor: 'agent:y',
      },
    ]);
    assert.ok(
      fresh.results.every((x) => x.ok),
      JSON.stringify(fresh.results),
    );
    for (const x of fresh.results) {
      if (!x.ok) continue;
      const stored = (await writers[1].list({ scope: { root: 'team.batch', includeUser: false }, limit: 1000 })).items.find(
        (m) => m.id === x.id,
      );
      assert.ok(stored);
      const h = await writers[1].history({ id: x.id, limit: 1 });
      assert.deepEqual(h.entries[0].state, stored);
      assert.equal(h.entries[0].version, x.version);
      assert.equal(h.entries[0].actor, 'alice');
    }
  });
});

describe('team memory: the database goes away and comes back', () => {
  let pg: PgServer;
  let db: string;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'write');
  });
  after(async () => pg?.stop());

  it('nothing listening: local works, team fails with Unavailable, the daemon keeps serving', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const t = await teamDaemon(`postgres://alice@127.0.0.1:${port}/nowhere`, { waitReady: false });
    try {
      assert.equal(await t.team.ready, false);
      const local = await t.client.call(R.upsert, { namespace: 'project.x', key: 'k', value: 'local still works' });
      assert.equal(local.created, true);
      const e = await rejectsWith(t.client.call(R.upsert, { namespace: 'team.x', key: 'k', value: 'never stored' }), 'Unavailable');
      assert.equal(e.store, 'team');
      await rejectsWith(t.client.call(R.search, { query: 'x', scope: { root: 'team.x', includeUser: false } }), 'Unavailable');
      const mixed = await t.client.call(R.search, { query: 'local works', mode: 'fts' });
      assert.equal(mixed.hits[0].memory.key, 'k');
      assert.match(mixed.degraded ?? '', /team store unavailable/);
      assert.equal((await t.client.call(R.get, { id: local.memory.id })).value, 'local still works');
    } finally {
      await t.stop();
    }
  });

  it('the server stops and starts again: requests fail fast meanwhile, then work, and the change feed resumes', async () => {
    const t = await teamDaemon(pg.url('alice', db));
    const other = await new PgBackend({ url: pg.url('alice', db) }).open();
    try {
      await t.client.call(R.upsert, { namespace: 'team.up', key: 'before', value: 'written while up' });
      pg.halt();
      await rejectsWith(t.client.call(R.upsert, { namespace: 'team.up', key: 'during', value: 'never acknowledged' }), 'Unavailable');
      await rejectsWith(t.client.call(R.get, { namespace: 'team.up', key: 'before' }), 'Unavailable');
      assert.equal((await t.client.call(R.upsert, { namespace: 'project.y', key: 'k', value: 'local during the outage' })).created, true);
      pg.start();
      let back = false;
      for (let i = 0; i < 200 && !back; i++) {
        try {
          await t.client.call(R.get, { namespace: 'team.up', key: 'before' });
          back = true;
        } catch (e) {
          if ((e as { data?: { name?: string } }).data?.name !== 'Unavailable') throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      assert.ok(back, 'the daemon reconnected by itself');
      await rejectsWith(t.client.call(R.get, { namespace: 'team.up', key: 'during' }), 'NotFound');
      // The change feed reconnects too: a write by another daemon arrives as memory/didChange.
      let seen = false;
      for (let i = 0; i < 100 && !seen; i++) {
        const w = await other.upsert({ namespace: 'team.up', key: `after-${i}`, value: `written after the restart ${i}` });
        seen = await t
          .waitChange((c) => c.id === w.memory.id, 300)
          .then(
            () => true,
            () => false,
          );
      }
      assert.ok(seen, 'memory/didChange resumed after the restart');
    } finally {
      await other.close();
      await t.stop();
    }
  });
});
