/**
 * Errors and recovery of team memory, against a real PostgreSQL + pgvector server:
 * - a role without the grant a request needs gets `Forbidden` naming that grant (root, level and the
 *   `cairn team grant` command), the CLI does not retry it, and the daemon logs the condition once;
 * - a daemon started while the database is down keeps trying (with back-off, `store/status` says when)
 *   and serves team memory once the server is back, without a restart;
 * - a normal run (a daemon, `cairn team` commands, passwords from a PGPASSFILE) prints no deprecation warning.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { callWriteOnce } from '../../daemon/src/cli/connect';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { CAIRN_BIN, rejectsWith, spawnDaemon, type SpawnedDaemon } from '../helpers';
import { startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

const run = promisify(execFile);

/** Poll `ok` until it holds (an await per round, so it may call the daemon); fail with `what` after `ms`. */
async function waitFor(what: string, ok: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('team memory: a role without the grant it needs', () => {
  let pg: PgServer;
  let db: string;
  let nobody: TeamDaemon;
  let reader: TeamDaemon;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('nogrant'); // a login role nobody ran `cairn team grant` for
    await pg.createRole('reader');
    await pg.grant(db, 'reader', 'team.docs', 'read');
    nobody = await teamDaemon(pg.url('nogrant', db), { waitReady: false });
    reader = await teamDaemon(pg.url('reader', db));
  });
  after(async () => {
    await nobody?.stop();
    await reader?.stop();
    await pg?.stop();
  });

  it('is Forbidden with the missing grant and the command that gives it, on every write, and the CLI does not retry it', async () => {
    for (let i = 0; i < 4; i++) {
      const e = await rejectsWith(nobody.client.call(R.upsert, { namespace: 'team.web', key: `k${i}`, value: 'a note' }), 'Forbidden');
      assert.equal(e.store, 'team');
    }
    const msg = await nobody.client.call(R.upsert, { namespace: 'team.web', key: 'k', value: 'x' }).then(
      () => '',
      (e: Error) => e.message,
    );
    assert.match(msg, /database role nogrant has no grant/);
    assert.match(msg, /needs write on team\.web/);
    assert.match(msg, /`cairn team grant nogrant team\.web write`/);
    await rejectsWith(nobody.client.call(R.delete, { namespace: 'team.web', key: 'k' }), 'Forbidden');
    const read = await nobody.client.call(R.get, { namespace: 'team.docs', key: 'k' }).then(
      () => null,
      (e: { message: string; data: { name: string } }) => e,
    );
    assert.equal(read?.data.name, 'Forbidden');
    assert.match(read!.message, /needs read on team\.docs.*`cairn team grant nogrant team\.docs read`/);
    // What `cairn add` does: one retry with the same key on Unavailable, none on Forbidden.
    let reconnects = 0;
    await rejectsWith(
      callWriteOnce(
        nobody.client,
        async () => {
          reconnects++;
          return nobody.client;
        },
        R.upsert,
        { namespace: 'team.web', key: 'cli', value: 'from the CLI' },
      ),
      'Forbidden',
    );
    assert.equal(reconnects, 0);
    // `cairn team status` says the same, once, with no retry.
    const status = await run(process.execPath, [CAIRN_BIN, 'team', 'status'], {
      env: { ...process.env, CAIRN_TEAM_URL: pg.url('nogrant', db) },
      timeout: 60_000,
    }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(status?.code, 1);
    assert.match(status!.stderr, /database role nogrant has no grant on the team database.*`cairn team grant nogrant ROOT[\s\S]*Forbidden/);
    // The local store still works for this daemon.
    assert.equal((await nobody.client.call(R.upsert, { namespace: 'project.x', key: 'k', value: 'local' })).memory.version, 1);
  });

  it('logs the condition once, not once per request, and no embedding backlog failure', async () => {
    for (let i = 0; i < 5; i++)
      await rejectsWith(nobody.client.call(R.upsert, { namespace: 'team.web', key: `again${i}`, value: 'a note' }), 'Forbidden');
    assert.equal(nobody.logs.filter((l) => /embedding backlog failed/.test(l)).length, 0, nobody.logs.join('\n'));
    assert.equal(nobody.logs.filter((l) => /has no grant/.test(l)).length, 1, nobody.logs.join('\n'));
    const st = await nobody.client.call(R.status, {});
    assert.equal(st.team?.connected, false);
    assert.match(st.team?.error ?? '', /has no grant/);
  });

  it('a role with another grant gets Forbidden naming the level it lacks on that namespace', async () => {
    const up = await reader.client.call(R.upsert, { namespace: 'team.docs', key: 'k', value: 'not mine to write' }).then(
      () => null,
      (e: { message: string; data: { name: string } }) => e,
    );
    assert.equal(up?.data.name, 'Forbidden');
    assert.match(up!.message, /database role reader may not write team\.docs: it needs write on team\.docs/);
    assert.match(up!.message, /`cairn team grant reader team\.docs write`/);
    const web = await reader.client.call(R.upsert, { namespace: 'team.web.x', key: 'k', value: 'nor this' }).then(
      () => null,
      (e: { message: string; data: { name: string } }) => e,
    );
    assert.equal(web?.data.name, 'Forbidden');
    assert.match(web!.message, /`cairn team grant reader team\.web\.x write`/);
    // A batch reports it per item, with the same sentence.
    const batch = await reader.client.call(R.upsertBatch, {
      items: [
        { namespace: 'team.docs', key: 'b1', value: 'one' },
        { namespace: 'team.docs.sub', key: 'b2', value: 'two' },
      ],
    });
    assert.deepEqual(
      batch.results.map((r) => (r.ok ? 'ok' : (r.error.data as { name: string }).name)),
      ['Forbidden', 'Forbidden'],
    );
    const second = batch.results[1];
    assert.ok(!second.ok);
    assert.match(second.error.message, /reader may not write team\.docs\.sub.*`cairn team grant reader team\.docs\.sub write`/);
  });
});

describe('team memory: a daemon started while the database is down', () => {
  let pg: PgServer;
  let t: TeamDaemon;
  before(async () => {
    pg = await startPg();
  });
  after(async () => {
    await t?.stop();
    await pg?.stop();
  });

  it('retries with back-off, says when it tries next, and serves team memory once the server is back', async () => {
    const db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'admin');
    pg.halt();
    t = await teamDaemon(pg.url('alice', db), { waitReady: false, connectTimeoutMs: 1000 });
    assert.equal(await t.team.ready, false);
    const st = await t.client.call(R.status, {});
    assert.equal(st.team?.connected, false);
    assert.match(st.team?.error ?? '', /cannot be reached/);
    assert.ok(st.team?.nextAttemptAt && Date.parse(st.team.nextAttemptAt) > Date.now() - 1000, JSON.stringify(st.team));
    await rejectsWith(t.client.call(R.upsert, { namespace: 'team.x', key: 'k', value: 'while down' }), 'Unavailable');
    // Back-off: attempts keep coming, further apart each time (the status shows a later next try).
    const first = Date.parse(st.team!.nextAttemptAt!);
    await waitFor('a later attempt', async () => {
      const s = await t.client.call(R.status, {});
      return Date.parse(s.team?.nextAttemptAt ?? '') > first;
    });
    pg.start();
    await waitFor('the daemon to connect', async () => (await t.client.call(R.status, {})).team?.connected === true);
    const w = await t.client.call(R.upsert, { namespace: 'team.x', key: 'k', value: 'after the server came back' });
    assert.equal(w.memory.version, 1);
    const s = await t.client.call(R.status, {});
    assert.equal(s.team?.user, 'alice');
    assert.equal(s.team?.nextAttemptAt ?? null, null);
    assert.equal(s.team?.error ?? null, null);
    // The change feed came up too: another writer's change reaches this daemon.
    await t.team.backend.listening();
    const other = await pg.admin(db).query(`SELECT id FROM cairn.memories WHERE key = 'k'`);
    assert.equal(other.rowCount, 1);
    await t.client.call(R.upsert, { namespace: 'team.x', key: 'k2', value: 'a second write' });
    await t.waitChange((c) => c.key === 'k2' && c.store === 'team');
  });
});

describe('team memory: no deprecation warnings', () => {
  let pg: PgServer;
  let db: string;
  let d: SpawnedDaemon | null = null;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('dora'); // password from the test's PGPASSFILE, as ~/.pgpass would hold it
    await pg.grant(db, 'dora', 'team', 'write');
  });
  after(async () => {
    await d?.stop();
    await pg?.stop();
  });

  it('`cairn team status` and a daemon connecting with a password from the pgpass file print none', async () => {
    assert.ok(process.env.PGPASSFILE && !process.env.PGPASSWORD);
    const env = { ...process.env, CAIRN_TEAM_URL: pg.url('dora', db) };
    const s = await run(process.execPath, [CAIRN_BIN, 'team', 'status'], { env, timeout: 60_000 });
    assert.match(s.stdout, /as dora/);
    assert.doesNotMatch(s.stderr, /deprecat|Warning/i, s.stderr);
    d = await spawnDaemon({ args: ['--no-embeddings', '--team-url', pg.url('dora', db)] });
    const c = await d.client();
    await waitFor('the team database to open', async () => (await c.call(R.status, {})).team?.connected === true);
    await c.call(R.upsert, { namespace: 'team.a', key: 'k', value: 'written through the pool' });
    assert.match(d.stderr(), /as dora/);
    assert.doesNotMatch(d.stderr(), /deprecat|Warning/i, d.stderr());
    assert.ok(!d.stderr().includes(path.basename(process.env.PGPASSFILE!)));
  });
});
