/**
 * `cairn team init|grant|status|history-cap` and `cairn daemon --team-url` through the
 * built CLI, against a real PostgreSQL + pgvector server. The password (from
 * PGPASSWORD, ~/.pgpass or even the URL) never appears in output or logs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { CAIRN_BIN, spawnDaemon, tempDir, type SpawnedDaemon } from '../helpers';
import { startPg, type PgServer } from './pg-server';

const run = promisify(execFile);

async function cairn(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CAIRN_BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

describe('cairn team (CLI) and a daemon with --team-url', () => {
  let pg: PgServer;
  let db: string;
  let password: string;
  let dir: string;
  before(async () => {
    pg = await startPg();
    db = `cli_${process.pid}`;
    await pg.admin('postgres').query(`CREATE DATABASE ${db}`);
    password = await pg.createRole('erin');
    dir = tempDir();
  });
  after(async () => {
    await pg?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('init creates the schema, a second init only checks it; grant and status', async () => {
    // grant before init, and grant to a role the database does not have: typed errors saying what to do
    const early = await cairn(['team', 'grant', 'erin', 'team.web', 'write', '--team-url', pg.adminUrl(db)]);
    assert.equal(early.code, 1);
    assert.match(early.stderr, /Unavailable.*run `cairn team init`/);
    const init = await cairn(['team', 'init', '--team-url', pg.adminUrl(db)]);
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /migrated from schema v0 to v4/);
    const again = await cairn(['team', 'init', '--json'], { CAIRN_TEAM_URL: pg.adminUrl(db) });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), { url: pg.adminUrl(db), from: 4, to: 4 });
    const g = await cairn(['team', 'grant', 'erin', 'team.web', 'write', '--team-url', pg.adminUrl(db)]);
    assert.equal(g.code, 0, g.stderr);
    const bad = await cairn(['team', 'grant', 'erin', 'team.%', 'write', '--team-url', pg.adminUrl(db)]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /InvalidNamespace/);
    const nobody = await cairn(['team', 'grant', 'nobody_here', 'team.web', 'write', '--team-url', pg.adminUrl(db)]);
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /InvalidParams.*no role "nobody_here": create it first/);
    const usage = await cairn(['team', 'grant', 'erin', 'team.web', 'owner', '--team-url', pg.adminUrl(db)]);
    assert.equal(usage.code, 2);

    // As erin, password from PGPASSWORD (not the test's PGPASSFILE).
    const env = { CAIRN_TEAM_URL: pg.url('erin', db), PGPASSWORD: password, PGPASSFILE: path.join(dir, 'none') };
    const s = await cairn(['team', 'status'], env);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /PostgreSQL 16\.\d+, pgvector 0\.\d+\.\d+/);
    assert.match(s.stdout, /schema {10}v4/);
    assert.match(s.stdout, /latency {9}[\d.]+ ms/);
    assert.match(s.stdout, /your grants {5}team\.web:write/);
    assert.ok(!s.stdout.includes(password) && !s.stderr.includes(password));
    const js = JSON.parse((await cairn(['team', 'status', '--json'], env)).stdout);
    assert.equal(js.user, 'erin');
    assert.equal(js.schemaVersion, 4);
    assert.deepEqual(js.roots, ['team']);
    assert.equal(typeof js.counts.memories, 'number');
    // Even a password written into the URL is never shown.
    const inUrl = await cairn(
      ['team', 'status', '--team-url', `postgres://erin:${encodeURIComponent(password)}@127.0.0.1:${pg.port}/${db}`],
      { PGPASSFILE: path.join(dir, 'none') },
    );
    assert.equal(inUrl.code, 0, inUrl.stderr);
    assert.ok(!inUrl.stdout.includes(password), inUrl.stdout);
    assert.match(inUrl.stdout, /erin:\*\*\*@/);
    const wrong = await cairn(['team', 'status'], { ...env, PGPASSWORD: 'wrong-password' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /Unavailable 1013/);
    assert.ok(!wrong.stderr.includes('wrong-password'));
    const none = await cairn(['team', 'status'], { CAIRN_TEAM_URL: '' });
    assert.equal(none.code, 2);
  });

  it('history-cap: the owner caps team history per memory; the versions of every writer are trimmed by the database; off keeps all', async () => {
    const admin = { CAIRN_TEAM_URL: pg.adminUrl(db) };
    const env = { CAIRN_TEAM_URL: pg.url('erin', db), PGPASSWORD: password, PGPASSFILE: path.join(dir, 'none') };
    const bad = await cairn(['team', 'history-cap', '0'], admin);
    assert.equal(bad.code, 2);
    const set = await cairn(['team', 'history-cap', '3'], admin);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /keeps the newest 3 rows per memory/);
    const b = await new PgBackend({ url: pg.url('erin', db) }).open(); // erin only writes team.web: she may not delete history herself
    try {
      for (let i = 1; i <= 5; i++) await b.upsert({ namespace: 'team.web.cap', key: 'k', value: `version ${i}` });
      const h = await b.history({ namespace: 'team.web.cap', key: 'k' });
      assert.deepEqual(
        h.entries.map((e) => e.version),
        [5, 4, 3],
      );
      assert.equal(h.capped, true);
      assert.match((await cairn(['team', 'status'], env)).stdout, /capped at 3 per memory/);
      const off = await cairn(['team', 'history-cap', 'off'], admin);
      assert.equal(off.code, 0, off.stderr);
      await b.upsert({ namespace: 'team.web.cap', key: 'k', value: 'version 6' });
      await b.upsert({ namespace: 'team.web.cap', key: 'k', value: 'version 7' });
      const all = await b.history({ namespace: 'team.web.cap', key: 'k' });
      assert.deepEqual(
        all.entries.map((e) => e.version),
        [7, 6, 5, 4, 3],
      );
      assert.equal(all.capped, false);
    } finally {
      await b.close();
    }
  });

  it('a daemon started with --team-url serves team namespaces from the database, tags hits, and never logs the password', async () => {
    let d: SpawnedDaemon | null = null;
    try {
      d = await spawnDaemon({
        args: ['--no-embeddings', '--team-url', pg.url('erin', db), '--team-roots', 'team.web'],
        env: { PGPASSWORD: password, PGPASSFILE: path.join(dir, 'none') },
      });
      const c = await d.client();
      let w;
      for (let i = 0; ; i++) {
        try {
          w = await c.call(R.upsert, { namespace: 'team.web', key: 'cdn', value: 'Static assets are served from the CDN edge' });
          break;
        } catch (e) {
          if (i > 100 || (e as { data?: { name?: string } }).data?.name !== 'Unavailable') throw e;
          await new Promise((r) => setTimeout(r, 100)); // the daemon opens the team database in the background
        }
      }
      await c.call(R.upsert, { namespace: 'project.web', key: 'cdn', value: 'Local note about the CDN edge' });
      const admin = pg.admin(db);
      assert.equal(
        (await admin.query(`SELECT count(*)::int AS c FROM cairn.memories WHERE id = $1`, [w!.memory.id])).rows[0].c,
        1,
        'stored in PostgreSQL',
      );
      const s = await c.call(R.search, { query: 'CDN edge', mode: 'fts' });
      assert.deepEqual(s.hits.map((h) => [h.memory.namespace, h.store]).sort(), [
        ['project.web', 'local'],
        ['team.web', 'team'],
      ]);
      assert.ok(!d.stderr().includes(password));
      assert.match(d.stderr(), /team memory: postgres:\/\/erin@127\.0\.0\.1:\d+\/\w+ as erin, roots team\.web/);
    } finally {
      await d?.stop();
    }
  });
});
