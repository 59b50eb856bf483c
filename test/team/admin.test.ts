/**
 * What a team admin does with a team root, against a real PostgreSQL + pgvector server: the audit
 * (`store/audit` with a team scope, `cairn team audit`), the export (`store/exportPage`,
 * `store/export` with a team scope), for admins of what they cover only, under row-level security,
 * in the local store's JSON Lines records, paged on the server from one snapshot; and erasure with
 * a receipt the database signs with a key members cannot read.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Requests as R } from '../../daemon/src/protocol/methods';
import pgLib from 'pg';
import { teamContentHash } from '../../daemon/src/store/pg/erasure';
import { ExportRecord, HistoryEntry, type ExportPageResult, type ExportRecord as Rec } from '../../daemon/src/protocol/types';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CAIRN_BIN, rejectsWith, spawnDaemon } from '../helpers';
import { sessionConfig, startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

const run = promisify(execFile);

async function cairn(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CAIRN_BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

async function message(p: Promise<unknown>): Promise<{ name: string; message: string }> {
  return p.then(
    () => ({ name: 'ok', message: '' }),
    (e: { message: string; data: { name: string } }) => ({ name: e.data?.name, message: e.message }),
  );
}

describe('team admin: audit and export of a team root', () => {
  let pg: PgServer;
  let db: string;
  let alice: TeamDaemon; // administers team.web
  let bob: TeamDaemon; // writes team.web
  let carol: TeamDaemon; // administers team.docs
  const ids: Record<string, string> = {};
  let t0 = '';
  let t1 = '';
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    for (const r of ['alice', 'bob', 'carol']) await pg.createRole(r);
    await pg.grant(db, 'alice', 'team.web', 'admin');
    await pg.grant(db, 'bob', 'team.web', 'write');
    await pg.grant(db, 'carol', 'team.docs', 'admin');
    alice = await teamDaemon(pg.url('alice', db));
    bob = await teamDaemon(pg.url('bob', db));
    carol = await teamDaemon(pg.url('carol', db));
    const a = await alice.client.call(R.upsert, { namespace: 'team.web', key: 'cdn', value: 'Assets come from the CDN edge' });
    ids.cdn = a.memory.id;
    const b = await bob.client.call(R.upsert, { namespace: 'team.web.api', key: 'auth', value: 'The API takes bearer tokens' });
    ids.auth = b.memory.id;
    await alice.client.call(R.link, { from: ids.cdn, to: ids.auth, type: 'relates_to' });
    const s = await bob.client.call(R.upsert, { namespace: 'team.web', key: 'secret', value: 'a value to forget' });
    ids.secret = s.memory.id;
    await bob.client.call(R.forget, { id: ids.secret, reason: 'not for the team' });
    const d = await carol.client.call(R.upsert, { namespace: 'team.docs', key: 'runbook', value: 'Restart the worker' });
    ids.docs = d.memory.id;
    // The later changes happen an hour later (the stores' injected clocks), so a time range can hold only them.
    const hour = 3_600_000;
    const base = Date.now();
    for (const t of [alice, bob]) t.team.backend.now = () => Date.now() + hour;
    t0 = new Date(base + hour / 2).toISOString();
    await bob.client.call(R.upsert, { namespace: 'team.web', key: 'cdn', value: 'Assets come from the CDN edge, cached a day' });
    await alice.client.call(R.delete, { namespace: 'team.web.api', key: 'auth', reason: 'moved to the docs' });
    t1 = new Date(Date.now() + 2 * hour).toISOString();
    for (const t of [alice, bob]) t.team.backend.now = () => Date.now() + 3 * hour; // after the range
  });
  after(async () => {
    await alice?.stop();
    await bob?.stop();
    await carol?.stop();
    await pg?.stop();
  });

  it('store/audit with a team scope: the admin gets the history of the root, by time range, in pages; others are refused', async () => {
    const all = await alice.client.call(R.audit, { scope: { root: 'team.web', includeUser: false } });
    for (const e of all.entries) HistoryEntry.parse(e);
    const truth = await pg
      .admin(db)
      .query(`SELECT h.seq FROM cairn.history h JOIN cairn.namespaces n ON n.id = h.ns_id WHERE n.path LIKE 'team.web%' ORDER BY h.seq`);
    assert.deepEqual(
      all.entries.map((e) => e.seq),
      truth.rows.map((r) => Number(r.seq)),
    );
    assert.ok(all.entries.every((e) => e.memoryId !== ids.docs));
    assert.deepEqual(
      all.entries.map((e) => [e.memoryId, e.op, e.actor]),
      [
        [ids.cdn, 'create', 'alice'],
        [ids.auth, 'create', 'bob'],
        [ids.secret, 'create', 'bob'],
        [ids.secret, 'forget', 'bob'],
        [ids.cdn, 'update', 'bob'],
        [ids.auth, 'delete', 'alice'],
      ],
    );
    const later = await alice.client.call(R.audit, { scope: { root: 'team.web' }, from: t0, to: t1, content: false });
    assert.deepEqual(
      later.entries.map((e) => [e.op, e.state, e.previous]),
      [
        ['update', null, null],
        ['delete', null, null],
      ],
    );
    const paged: number[] = [];
    let cursor: string | undefined;
    do {
      const p = await alice.client.call(R.audit, { scope: { root: 'team.web' }, limit: 4, ...(cursor ? { cursor } : {}) });
      paged.push(...p.entries.map((e) => e.seq));
      cursor = p.nextCursor ?? undefined;
    } while (cursor);
    assert.deepEqual(
      paged,
      all.entries.map((e) => e.seq),
    );
    const writer = await message(bob.client.call(R.audit, { scope: { root: 'team.web' } }));
    assert.equal(writer.name, 'Forbidden');
    assert.match(writer.message, /database role bob may not audit team\.web: it needs admin.*`cairn team grant bob team\.web admin`/);
    const other = await message(alice.client.call(R.audit, { scope: { root: 'team.docs' } }));
    assert.equal(other.name, 'Forbidden');
    assert.match(other.message, /`cairn team grant alice team\.docs admin`/);
    await rejectsWith(alice.client.call(R.audit, { scope: { namespaces: ['team.web', 'project.x'] } }), 'InvalidState', 'scope');
    // Without a team scope store/audit stays the local store's.
    assert.ok((await alice.client.call(R.audit, {})).entries.every((e) => ![ids.cdn, ids.auth].includes(e.memoryId)));
  });

  it('cairn team audit writes the history of the roots the role administers as JSON Lines; a writer is refused', async () => {
    const env = { CAIRN_TEAM_URL: pg.url('alice', db) };
    const r = await cairn(['team', 'audit', '--from', t0], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => HistoryEntry.parse(JSON.parse(l)));
    assert.deepEqual(
      lines.map((e) => [e.memoryId, e.op]),
      [
        [ids.cdn, 'update'],
        [ids.auth, 'delete'],
      ],
    );
    const docs = await cairn(['team', 'audit'], { CAIRN_TEAM_URL: pg.url('carol', db) });
    assert.equal(docs.code, 0, docs.stderr);
    assert.deepEqual(
      docs.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).memoryId),
      [ids.docs],
    );
    const writer = await cairn(['team', 'audit'], { CAIRN_TEAM_URL: pg.url('bob', db) });
    assert.equal(writer.code, 1);
    assert.match(writer.stderr, /bob administers no team root.*`cairn team grant bob ROOT admin`[\s\S]*Forbidden/);
    const bad = await cairn(['team', 'audit', '--from', 'yesterday'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /InvalidParams/);
  });

  it('store/exportPage with a team scope: the admin exports the root in pages from one snapshot, as JSON Lines records', async () => {
    const first = await alice.client.call(R.exportPage, { scope: { root: 'team.web' }, limit: 3 });
    assert.equal(first.progress.total, 3);
    assert.ok(first.nextCursor);
    // Written after the export began: not in it (one snapshot), whatever page it would fall on.
    await bob.client.call(R.upsert, { namespace: 'team.web', key: 'late', value: 'written during the export' });
    const records: Rec[] = [...first.records];
    let cursor: string | null = first.nextCursor;
    while (cursor) {
      const p: ExportPageResult = await alice.client.call(R.exportPage, { cursor, limit: 3 });
      records.push(...p.records);
      cursor = p.nextCursor;
    }
    for (const r of records) ExportRecord.parse(r);
    assert.equal(records[0].type, 'header');
    const mems = records.filter((r) => r.type === 'memory');
    assert.deepEqual(mems.map((r) => r.memory.key).sort(), ['auth', 'cdn', 'secret']);
    assert.ok(mems.every((r) => r.memory.namespace.startsWith('team.web')));
    // Each memory is followed by its own history, oldest first.
    const cdnAt = records.findIndex((r) => r.type === 'memory' && r.memory.id === ids.cdn);
    assert.deepEqual(
      records.slice(cdnAt + 1, cdnAt + 3).map((r) => (r.type === 'history' ? [r.entry.memoryId, r.entry.op] : r.type)),
      [
        [ids.cdn, 'create'],
        [ids.cdn, 'update'],
      ],
    );
    assert.deepEqual(
      records
        .filter((r) => r.type === 'namespace')
        .map((r) => (r.type === 'namespace' ? r.path : ''))
        .sort(),
      ['team.web', 'team.web.api'],
    );
    assert.equal(records.filter((r) => r.type === 'link').length, 1);
    assert.equal(records.filter((r) => r.type === 'rejected').length, 1);
    assert.ok(!JSON.stringify(records).includes('Restart the worker'), 'nothing of team.docs');
    const whole = await alice.client.call(R.exportRecords, { scope: { root: 'team.web' }, includeHistory: false });
    assert.deepEqual(
      whole.records
        .filter((r) => r.type === 'memory')
        .map((r) => (r.type === 'memory' ? r.memory.key : ''))
        .sort(),
      ['auth', 'cdn', 'late', 'secret'],
    );
    assert.equal(whole.records.filter((r) => r.type === 'history').length, 0);
  });

  it('cairn export --root of a team root writes its JSON Lines through a daemon with --team-url', async () => {
    const d = await spawnDaemon({ args: ['--no-embeddings', '--team-url', pg.url('alice', db), '--team-roots', 'team'] });
    try {
      const c = await d.client();
      const end = Date.now() + 60_000;
      while ((await c.call(R.status, {})).team?.connected !== true) {
        if (Date.now() > end) throw new Error('the team database did not open');
        await new Promise((r) => setTimeout(r, 100));
      }
      const file = path.join(d.dir, 'web.jsonl');
      const r = await cairn(['--db', d.db, '--socket', d.socket, 'export', file, '--root', 'team.web'], {});
      assert.equal(r.code, 0, r.stderr);
      const recs = fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => ExportRecord.parse(JSON.parse(l)));
      assert.deepEqual(
        recs
          .filter((x) => x.type === 'memory')
          .map((x) => (x.type === 'memory' ? x.memory.key : ''))
          .sort(),
        ['auth', 'cdn', 'late', 'secret'],
      );
    } finally {
      await d.stop();
    }
  });

  it('export is refused to a role that does not administer the scope, and for a scope across both stores', async () => {
    const writer = await message(bob.client.call(R.exportPage, { scope: { root: 'team.web' } }));
    assert.equal(writer.name, 'Forbidden');
    assert.match(writer.message, /bob may not export team\.web.*`cairn team grant bob team\.web admin`/);
    const narrow = await message(alice.client.call(R.exportRecords, { scope: { namespaces: ['team.web', 'team.docs'] } }));
    assert.equal(narrow.name, 'Forbidden');
    assert.match(narrow.message, /needs admin on team\.docs/);
    await rejectsWith(alice.client.call(R.exportPage, { scope: { namespaces: ['team.web', 'project.mine'] } }), 'InvalidState', 'scope');
    await rejectsWith(alice.client.call(R.exportPage, {}), 'InvalidState', 'scope');
    await rejectsWith(
      alice.client.call(R.exportPage, { cursor: Buffer.from('team-export:nope').toString('base64url') }),
      'InvalidState',
      'cursor',
    );
  });

  it('an admin erases a team memory and a subtree with a receipt the database signed; nothing of them remains', async () => {
    const MARK = 'ERASE-ME-7f3a';
    const value = `${MARK} Ünïcode "quoted" \\ back\nslash`;
    const a = await alice.client.call(R.upsert, { namespace: 'team.web.gone', key: 'a', value, tags: ['pii'] });
    await alice.client.call(R.upsert, { namespace: 'team.web.gone', key: 'a', value: `${value} v2` });
    const b = await alice.client.call(R.upsert, { namespace: 'team.web.gone.sub', key: 'b', value: `${MARK} second` });
    await alice.client.call(R.link, { from: a.memory.id, to: ids.cdn, type: 'relates_to' });
    const f = await bob.client.call(R.upsert, { namespace: 'team.web.gone', key: 'f', value: `${MARK} forgotten` });
    await bob.client.call(R.forget, { id: f.memory.id });
    // Not an admin: Forbidden, naming the grant; not visible at all: NotFound. Nothing happens.
    const writer = await message(bob.client.call(R.erase, { id: a.memory.id }));
    assert.equal(writer.name, 'Forbidden');
    assert.match(writer.message, /bob may not erase in team\.web\.gone: it needs admin.*`cairn team grant bob team\.web\.gone admin`/);
    await rejectsWith(carol.client.call(R.erase, { id: a.memory.id }), 'NotFound');
    await rejectsWith(bob.client.call(R.erase, { root: 'team.web.gone' }), 'Forbidden');
    assert.equal((await alice.client.call(R.get, { id: a.memory.id })).version, 2);

    const r = await alice.client.call(R.erase, { id: a.memory.id, reason: 'right to erasure #12' });
    const rec = r.receipt;
    assert.ok('store' in rec && rec.store === 'team');
    assert.equal(r.erased, 1);
    assert.deepEqual(rec.memories, [{ id: a.memory.id, namespace: 'team.web.gone' }]);
    assert.deepEqual(rec.target, { id: a.memory.id });
    assert.equal(rec.actor, 'alice');
    assert.equal(rec.reason, 'right to erasure #12');
    assert.deepEqual(rec.removed, { history: 2, links: 1, vectors: 0, namespaces: 0 });
    assert.equal(
      rec.contentHash,
      teamContentHash(rec.salt, [{ id: a.memory.id, namespace: 'team.web.gone', key: 'a', value: `${value} v2` }]),
    );
    await bob.waitChange((c) => c.id === a.memory.id && c.op === 'erase');
    await rejectsWith(alice.client.call(R.get, { id: a.memory.id }), 'NotFound');

    const subtree = await alice.client.call(R.erase, { root: 'team.web.gone' });
    assert.equal(subtree.erased, 2);
    assert.deepEqual(subtree.receipt.memories.map((m) => m.id).sort(), [b.memory.id, f.memory.id].sort());
    assert.equal(subtree.receipt.removed.namespaces, 2);
    assert.equal((await alice.client.call(R.get, { id: ids.cdn })).key, 'cdn', 'nothing outside the target');

    // As the owner: not a byte of the erased text in any table; what is left is one `erase` row per memory.
    const owner = pg.admin(db);
    for (const [t, col] of [
      ['memories', 'value'],
      ['history', "coalesce(previous, '') || coalesce(state, '') || coalesce(detail, '')"],
      ['changes', "coalesce(key, '') || coalesce(ns_path, '')"],
      ['rejected_values', 'value_hash'],
    ])
      assert.equal((await owner.query(`SELECT count(*)::int AS c FROM cairn.${t} WHERE ${col} LIKE '%${MARK}%'`)).rows[0].c, 0, t);
    const left = await owner.query(`SELECT memory_id, op, actor, state FROM cairn.history WHERE memory_id = ANY($1) ORDER BY seq`, [
      [a.memory.id, b.memory.id, f.memory.id],
    ]);
    assert.deepEqual(
      left.rows.map((x) => [x.op, x.actor, x.state]),
      [
        ['erase', 'alice', null],
        ['erase', 'alice', null],
        ['erase', 'alice', null],
      ],
    );
    assert.equal((await owner.query(`SELECT count(*)::int AS c FROM cairn.links WHERE src = $1 OR dst = $1`, [a.memory.id])).rows[0].c, 0);
    assert.equal((await owner.query(`SELECT count(*)::int AS c FROM cairn.namespaces WHERE path LIKE 'team.web.gone%'`)).rows[0].c, 0);
    assert.equal(
      (await owner.query(`SELECT count(*)::int AS c FROM cairn.rejected_values WHERE memory_id = $1`, [f.memory.id])).rows[0].c,
      0,
    );

    // Any role verifies with the database; an altered receipt fails; members cannot read the key.
    const member = new pgLib.Client(sessionConfig(pg.url('bob', db)));
    member.on('error', () => undefined);
    await member.connect();
    try {
      const v = async (x: unknown) => (await member.query(`SELECT cairn.verify_receipt($1::jsonb) AS ok`, [JSON.stringify(x)])).rows[0].ok;
      // The MAC is HMAC-SHA256 (RFC 4231's construction; the well-known test vector).
      const mac = await member.query(`SELECT encode(cairn.hmac_sha256('key', 'The quick brown fox jumps over the lazy dog'), 'hex') AS h`);
      assert.equal(mac.rows[0].h, createHmac('sha256', 'key').update('The quick brown fox jumps over the lazy dog').digest('hex'));
      assert.equal(await v(rec), true);
      assert.equal(await v(subtree.receipt), true);
      assert.equal(await v({ ...rec, actor: 'mallory' }), false);
      assert.equal(await v({ ...rec, memories: [] }), false);
      await assert.rejects(member.query('SELECT * FROM cairn.signing_key'), /permission denied/);
      await assert.rejects(member.query(`SELECT cairn.erase(ARRAY[$1], NULL, '{}', NULL, 's', NULL)`, [ids.cdn]), /needs admin/);
    } finally {
      await member.end();
    }
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-receipt-')), 'r.json');
    fs.writeFileSync(file, JSON.stringify(rec));
    const ok = await cairn(['team', 'verify-receipt', file], { CAIRN_TEAM_URL: pg.url('bob', db) });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /valid: receipt/);
    fs.writeFileSync(file, JSON.stringify({ ...rec, reason: 'something else' }));
    const bad = await cairn(['team', 'verify-receipt', file], { CAIRN_TEAM_URL: pg.url('bob', db) });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /did not sign it/);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
