/**
 * memory/get on the team store: one prepared read answers; the read's access statistics are recorded after the
 * answer (store/pg/access-stats.ts), so a get never waits on a write, and they still land, best effort, under
 * row-level security. Deleted stays deleted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { rejectsWith } from '../helpers';
import { startPg, type PgServer } from './pg-server';

describe('team memory/get: one read, access statistics after the answer', () => {
  let pg: PgServer;
  let db: string;
  let alice: PgBackend;
  let bob: PgBackend;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.createRole('bob');
    await pg.grant(db, 'alice', 'team', 'write');
    await pg.grant(db, 'bob', 'team', 'read');
    alice = await new PgBackend({ url: pg.url('alice', db) }).open();
    bob = await new PgBackend({ url: pg.url('bob', db) }).open();
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await pg?.stop();
  });

  it('counts every read, gets of the same row at once included, once the bumps are applied', async () => {
    const w = await alice.upsert({ namespace: 'team.docs', key: 'count', value: 'counted' });
    const first = await alice.get({ namespace: 'team.docs', key: 'count' });
    assert.equal(first.accessCount, 1);
    assert.ok(first.lastAccessedAt);
    await alice.bumps.flushed();
    assert.equal((await alice.get({ id: w.memory.id })).accessCount, 2);
    await Promise.all(Array.from({ length: 10 }, () => alice.get({ namespace: 'team.docs', key: 'count' })));
    await alice.bumps.flushed();
    const row = (await pg.admin(db).query('SELECT access_count, version FROM cairn.memories WHERE id = $1', [w.memory.id])).rows[0];
    assert.deepEqual(row, { access_count: 12, version: 1 }); // not a change of content: no new version
  });

  it('answers while a writer holds the row, and records the read once the row is free', async () => {
    const w = await alice.upsert({ namespace: 'team.docs', key: 'locked', value: 'held by a writer' });
    const holder = await pg.admin(db).connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM cairn.memories WHERE id = $1 FOR UPDATE', [w.memory.id]);
      let timer: NodeJS.Timeout | undefined;
      const got = await Promise.race([
        alice.get({ id: w.memory.id }),
        new Promise<'blocked'>((r) => (timer = setTimeout(() => r('blocked'), 10_000))),
      ]);
      clearTimeout(timer);
      assert.notEqual(got, 'blocked', 'the get waited on the writer');
      assert.equal((got as { value: string }).value, 'held by a writer');
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    await alice.bumps.flushed();
    assert.equal((await alice.get({ id: w.memory.id })).accessCount, 2);
  });

  it('a reader gets the row and leaves no trace (its bump is refused silently by row-level security)', async () => {
    const w = await alice.upsert({ namespace: 'team.docs', key: 'read-only', value: 'for readers' });
    const got = await bob.get({ id: w.memory.id });
    assert.equal(got.value, 'for readers');
    assert.equal(got.accessCount, 1);
    await bob.bumps.flushed();
    assert.equal((await alice.get({ id: w.memory.id })).accessCount, 1);
  });

  it('deleted stays deleted (and is not counted); includeDeleted reads it', async () => {
    const w = await alice.upsert({ namespace: 'team.docs', key: 'gone', value: 'deleted soon' });
    await alice.delete({ id: w.memory.id });
    await rejectsWith(alice.get({ id: w.memory.id }), 'NotFound', 'id');
    await rejectsWith(alice.get({ namespace: 'team.docs', key: 'gone' }), 'NotFound', 'key');
    await alice.bumps.flushed();
    const stats = (await pg.admin(db).query('SELECT access_count FROM cairn.memories WHERE id = $1', [w.memory.id])).rows[0];
    assert.equal(stats.access_count, 0);
    const seen = await alice.get({ id: w.memory.id, includeDeleted: true });
    assert.ok(seen.deletedAt);
  });

  it('out of scope is NotFound; closing the store applies the reads it still holds', async () => {
    const w = await alice.upsert({ namespace: 'team.docs', key: 'scoped', value: 'in team.docs' });
    await rejectsWith(alice.get({ id: w.memory.id, scope: { root: 'team.web' } }), 'NotFound', 'id');
    const gone = await new PgBackend({ url: pg.url('alice', db) }).open();
    await gone.get({ id: w.memory.id });
    await gone.close(); // applies the pending bump first, then ends the pool
    assert.equal((await alice.get({ id: w.memory.id })).accessCount, 2);
  });
});
