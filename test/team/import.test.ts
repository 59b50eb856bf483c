/**
 * Import into a team root, against a real PostgreSQL + pgvector server: the local import's JSON Lines records and
 * preview, written as the importing database role under row-level security (history by the database's own
 * functions, that role the actor), for a role with `write` on the namespaces the records name; deleted stays
 * deleted and forgotten values stay forgotten, as in the local import.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { HistoryEntry, type ExportRecord } from '../../daemon/src/protocol/types';
import { CAIRN_BIN, rejectsWith, spawnDaemon } from '../helpers';
import { startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

type MemoryRecord = Extract<ExportRecord, { type: 'memory' }>;

async function exportAll(t: TeamDaemon, root: string): Promise<ExportRecord[]> {
  const out: ExportRecord[] = [];
  let cursor: string | undefined;
  do {
    const p = await t.client.call(R.exportPage, cursor ? { cursor } : { scope: { root, includeUser: false } });
    out.push(...p.records);
    cursor = p.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

const memories = (rs: ExportRecord[]) => rs.filter((r): r is MemoryRecord => r.type === 'memory');

describe('team memory: import into a team root', () => {
  let pg: PgServer;
  let db1: string;
  let db2: string;
  let source: TeamDaemon; // alice on db1: administers team.web there
  let alice: TeamDaemon; // alice on db2: administers team.web
  let bob: TeamDaemon; // bob on db2: writes team.web
  let dave: TeamDaemon; // dave on db2: reads team.web
  let carol: TeamDaemon; // carol on db2: administers team.docs only
  let exported: ExportRecord[] = [];
  const ids: Record<string, string> = {};
  before(async () => {
    pg = await startPg();
    db1 = await pg.createDatabase();
    db2 = await pg.createDatabase();
    for (const r of ['alice', 'bob', 'dave', 'carol']) await pg.createRole(r);
    await pg.grant(db1, 'alice', 'team.web', 'admin');
    await pg.grant(db2, 'alice', 'team', 'admin');
    await pg.grant(db2, 'bob', 'team.web', 'write');
    await pg.grant(db2, 'dave', 'team.web', 'read');
    await pg.grant(db2, 'carol', 'team.docs', 'admin');
    source = await teamDaemon(pg.url('alice', db1));
    alice = await teamDaemon(pg.url('alice', db2));
    bob = await teamDaemon(pg.url('bob', db2));
    dave = await teamDaemon(pg.url('dave', db2));
    carol = await teamDaemon(pg.url('carol', db2));
    const s = source.client;
    ids.cdn = (
      await s.call(R.upsert, { namespace: 'team.web', key: 'cdn', value: 'Assets come from the CDN edge', tags: ['infra'] })
    ).memory.id;
    await s.call(R.upsert, { namespace: 'team.web', key: 'cdn', value: 'Assets come from the CDN edge, cached a day', tags: ['infra'] });
    ids.auth = (await s.call(R.upsert, { namespace: 'team.web.api', key: 'auth', value: 'The API takes bearer tokens' })).memory.id;
    await s.call(R.link, { from: ids.cdn, to: ids.auth, type: 'relates_to' });
    ids.old = (await s.call(R.upsert, { namespace: 'team.web', key: 'old', value: 'Deploys ran on Fridays' })).memory.id;
    await s.call(R.delete, { id: ids.old, reason: 'no longer true' });
    ids.secret = (await s.call(R.upsert, { namespace: 'team.web', key: 'secret', value: 'a value to forget' })).memory.id;
    await s.call(R.forget, { id: ids.secret, reason: 'not for the team' });
    exported = await exportAll(source, 'team.web');
  });
  after(async () => {
    for (const t of [source, alice, bob, dave, carol]) await t?.stop();
    await pg?.stop();
  });

  it('a role with only read on the root, or no grant on it, is refused with Forbidden naming the write grant; nothing is written', async () => {
    for (const [t, role] of [
      [dave, 'dave'],
      [carol, 'carol'],
    ] as const) {
      for (const call of [
        () => t.client.call(R.importRecords, { records: exported }),
        () => t.client.call(R.importPreview, { records: exported }),
      ]) {
        const e = await rejectsWith(call(), 'Forbidden');
        assert.equal(e.level, 'write');
        assert.equal(e.store, 'team');
        const msg = await call().then(
          () => '',
          (x: Error) => x.message,
        );
        assert.match(msg, new RegExp(`may not import into team\\.web: it needs write.*\`cairn team grant ${role} team\\.web write\``));
      }
    }
    const n = await pg
      .admin(db2)
      .query(`SELECT (SELECT count(*) FROM cairn.memories)::int AS m, (SELECT count(*) FROM cairn.namespaces)::int AS ns`);
    assert.deepEqual(n.rows[0], { m: 0, ns: 0 });
  });

  it('round trip: the preview counts, then the import writes the exported root into another database as the importing role', async () => {
    const preview = await alice.client.call(R.importPreview, { records: exported });
    assert.deepEqual(preview.counts, { new: 4, unchanged: 0, changed: 0, conflicting: 0, refusedDeleted: 0, refusedForgotten: 0 });
    const history = exported.filter((r) => r.type === 'history').length;
    assert.deepEqual(preview.records, { namespaces: 2, history, links: 1, rejected: 1 });
    assert.deepEqual(new Set(preview.items.map((i) => i.id)), new Set(Object.values(ids)));
    assert.ok(preview.items.every((i) => i.outcome === 'new' && i.storeVersion === null));

    const r = await alice.client.call(R.importRecords, { records: exported, actor: 'migration-script' });
    assert.equal(r.memories, 4);
    assert.equal(r.links, 1);
    assert.equal(r.skipped, 0);
    assert.equal(r.history, 0);
    assert.ok(r.position > 0);

    const back = await exportAll(alice, 'team.web');
    const before = new Map(memories(exported).map((m) => [m.memory.id, m]));
    const after = memories(back);
    assert.equal(after.length, 4);
    for (const a of after) {
      const b = before.get(a.memory.id)!;
      assert.ok(b, `memory ${a.memory.id} came from the export`);
      for (const k of ['namespace', 'key', 'value', 'tags', 'kind', 'importance', 'confidence', 'source', 'createdAt', 'status'] as const)
        assert.deepEqual(a.memory[k], b.memory[k], k);
      assert.equal(a.memory.deletedAt === null, b.memory.deletedAt === null);
      assert.equal(a.memory.version, b.memory.deletedAt === null ? 1 : 2);
      if (a.memory.deletedAt !== null) assert.equal(a.memory.deletedBy, 'alice');
    }
    assert.equal(after.find((m) => m.memory.id === ids.old)!.deleteReason, 'no longer true');
    // History is the database's: written by its own functions, the database user the actor, the claim kept aside.
    const entries = back.filter((x) => x.type === 'history').map((x) => HistoryEntry.parse((x as { entry: unknown }).entry));
    assert.deepEqual(entries.map((e) => e.op).sort(), ['create', 'create', 'create', 'create', 'delete', 'delete']);
    assert.ok(entries.every((e) => e.actor === 'alice' && e.detail?.onBehalfOf === 'migration-script'));
    const cdn = entries.find((e) => e.memoryId === ids.cdn)!;
    assert.deepEqual(cdn.detail?.imported, { version: 2, updatedAt: before.get(ids.cdn)!.memory.updatedAt });
    const links = back.filter((x) => x.type === 'link');
    assert.equal(links.length, 1);
    assert.deepEqual(links[0].type === 'link' && [links[0].link.from, links[0].link.to, links[0].link.actor], [ids.cdn, ids.auth, 'alice']);
    const rejected = back.filter((x) => x.type === 'rejected');
    const src = exported.find((x) => x.type === 'rejected')!;
    assert.equal(rejected.length, 1);
    assert.ok(rejected[0].type === 'rejected' && src.type === 'rejected');
    assert.equal(rejected[0].valueHash, src.valueHash);
    assert.equal(rejected[0].memoryId, ids.secret);

    // What came in behaves as team memory: found by search, deleted stays deleted, the forgotten value stays forgotten.
    const hits = await bob.client.call(R.search, { query: 'CDN edge cached', scope: { root: 'team.web', includeUser: false } });
    assert.equal(hits.hits[0]?.memory.id, ids.cdn);
    await rejectsWith(bob.client.call(R.get, { namespace: 'team.web', key: 'old' }), 'NotFound');
    await rejectsWith(bob.client.call(R.upsert, { namespace: 'team.web', key: 'again', value: 'a value to forget' }), 'RejectedValue');

    // The same records again: nothing new, nothing overwritten.
    const again = await alice.client.call(R.importPreview, { records: exported });
    assert.equal(again.counts.new, 0);
    assert.equal(again.counts.refusedDeleted + again.counts.changed + again.counts.unchanged + again.counts.conflicting, 4);
    const twice = await alice.client.call(R.importRecords, { records: exported });
    assert.deepEqual([twice.memories, twice.links, twice.skipped], [0, 0, 4]);
    assert.equal(memories(await exportAll(alice, 'team.web')).length, 4);
  });

  it('a deleted key and a forgotten value are refused, in the preview and the import, exactly as the local import refuses them', async () => {
    const del = await alice.client.call(R.upsert, { namespace: 'team.ops', key: 'runbook', value: 'Restart the worker by hand' });
    await alice.client.call(R.delete, { id: del.memory.id, reason: 'automated now' });
    const gone = await alice.client.call(R.upsert, { namespace: 'team.ops', key: 'pw', value: 'the staging password is hunter2' });
    await alice.client.call(R.forget, { id: gone.memory.id });
    const template = memories(exported).find((m) => m.memory.id === ids.auth)!;
    const mem = (id: string, key: string, value: string): MemoryRecord => ({
      ...template,
      namespaceId: 'ns-ops-file',
      memory: { ...template.memory, id, namespace: 'team.ops', key, value },
    });
    const records = [
      mem('01900000-0000-7000-8000-0000000000d1', 'runbook', 'Restart the worker by hand, again'),
      mem('01900000-0000-7000-8000-0000000000d2', 'pw2', 'the staging password is hunter2'),
      mem('01900000-0000-7000-8000-0000000000d3', 'fresh', 'A new memory the import may write'),
    ];
    const preview = await alice.client.call(R.importPreview, { records });
    assert.deepEqual(
      preview.items.map((i) => [i.key, i.outcome]),
      [
        ['runbook', 'refusedDeleted'],
        ['pw2', 'refusedForgotten'],
        ['fresh', 'new'],
      ],
    );
    const r = await alice.client.call(R.importRecords, { records });
    assert.deepEqual([r.memories, r.skipped], [1, 2]);
    const still = await alice.client.call(R.get, { namespace: 'team.ops', key: 'runbook', includeDeleted: true });
    assert.equal(still.id, del.memory.id);
    assert.equal(still.value, 'Restart the worker by hand');
    assert.ok(still.deletedAt !== null);
    await rejectsWith(alice.client.call(R.get, { namespace: 'team.ops', key: 'pw2' }), 'NotFound');
    assert.equal((await alice.client.call(R.get, { namespace: 'team.ops', key: 'fresh' })).value, 'A new memory the import may write');
  });

  it('write suffices: a writer imports into the namespaces it writes, as itself; records reaching both stores are refused', async () => {
    const template = memories(exported).find((m) => m.memory.id === ids.auth)!;
    const rec: MemoryRecord = {
      ...template,
      namespaceId: 'ns-bob-file',
      memory: {
        ...template.memory,
        id: '01900000-0000-7000-8000-0000000000e1',
        namespace: 'team.web.bob',
        key: 'note',
        value: 'Bob brought this in',
      },
    };
    const r = await bob.client.call(R.importRecords, { records: [rec] });
    assert.equal(r.memories, 1);
    const h = await bob.client.call(R.history, { namespace: 'team.web.bob', key: 'note' });
    assert.deepEqual(
      h.entries.map((e) => [e.op, e.actor]),
      [['create', 'bob']],
    );
    const local: MemoryRecord = {
      ...rec,
      memory: { ...rec.memory, id: '01900000-0000-7000-8000-0000000000e2', namespace: 'project.mine' },
    };
    for (const call of [
      () => bob.client.call(R.importRecords, { records: [local, rec] }),
      () => bob.client.call(R.importPreview, { records: [local, rec] }),
    ]) {
      const e = await rejectsWith(call(), 'InvalidState', 'records[1]');
      assert.equal(e.store, 'team');
    }
    await rejectsWith(bob.client.call(R.get, { namespace: 'project.mine', key: 'note' }), 'NotFound');
  });
  it('cairn import of a team root file writes it through a daemon with --team-url', async () => {
    const d = await spawnDaemon({ args: ['--no-embeddings', '--team-url', pg.url('alice', db2), '--team-roots', 'team'] });
    try {
      const c = await d.client();
      const end = Date.now() + 60_000;
      while ((await c.call(R.status, {})).team?.connected !== true) {
        if (Date.now() > end) throw new Error('the team database did not open');
        await new Promise((r) => setTimeout(r, 100));
      }
      const template = memories(exported).find((m) => m.memory.id === ids.auth)!;
      const recs = ['f1', 'f2'].map((key, i): MemoryRecord => ({
        ...template,
        namespaceId: 'ns-cli-file',
        memory: {
          ...template.memory,
          id: `01900000-0000-7000-8000-0000000000f${i}`,
          namespace: 'team.cli',
          key,
          value: `CLI import ${key}`,
        },
      }));
      const file = path.join(d.dir, 'cli.jsonl');
      fs.writeFileSync(file, recs.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const r = await promisify(execFile)(process.execPath, [CAIRN_BIN, '--db', d.db, '--socket', d.socket, 'import', file], {
        timeout: 60_000,
      });
      assert.match(r.stdout, /imported 2 memories/);
      const got = await alice.client.call(R.get, { namespace: 'team.cli', key: 'f2' });
      assert.equal(got.value, 'CLI import f2');
      assert.equal((await alice.client.call(R.history, { id: got.id })).entries[0].actor, 'alice');
    } finally {
      await d.stop();
    }
  });
});
