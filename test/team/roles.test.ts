/**
 * Two daemons, each with its own local store and its own database role, share
 * team namespaces through one real PostgreSQL + pgvector server. The database
 * (roles + row-level security per namespace root), not Cairn, decides who may
 * read and write what; history records the authenticated role.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith } from '../helpers';
import { sessionConfig, startPg, type PgServer } from './pg-server';
import { teamDaemon, type TeamDaemon } from './team-daemon';

describe('team memory: two daemons, two database roles', () => {
  let pg: PgServer;
  let alice: TeamDaemon;
  let bob: TeamDaemon;
  let db: string;
  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.createRole('bob');
    await pg.grant(db, 'alice', 'team', 'admin'); // alice administers the whole team tree
    await pg.grant(db, 'bob', 'team.shared', 'write'); // bob writes the shared root...
    await pg.grant(db, 'bob', 'team.docs', 'read'); // ...and only reads the docs
    alice = await teamDaemon(pg.url('alice', db));
    bob = await teamDaemon(pg.url('bob', db));
  });
  after(async () => {
    await alice?.stop();
    await bob?.stop();
    await pg?.stop();
  });

  it('share a namespace: a write by one is read by the other, with the author as the actor', async () => {
    const w = await alice.client.call(R.upsert, {
      namespace: 'team.shared.conventions',
      key: 'tabs',
      value: 'Indent with two spaces; no tabs in TypeScript',
      kind: 'decision',
      actor: 'agent:claude',
    });
    const got = await bob.client.call(R.get, { namespace: 'team.shared.conventions', key: 'tabs' });
    assert.equal(got.id, w.memory.id);
    const h = await bob.client.call(R.history, { id: w.memory.id });
    assert.equal(h.entries[0].actor, 'alice', 'the database user, not the claimed actor');
    assert.equal(h.entries[0].detail?.onBehalfOf, 'agent:claude');
    // A correction by bob fixes it for everybody.
    const fix = await bob.client.call(R.upsert, {
      namespace: 'team.shared.conventions',
      key: 'tabs',
      value: 'Indent with two spaces; tabs only in Makefiles',
      ifVersion: 1,
    });
    assert.equal(fix.memory.version, 2);
    assert.equal((await alice.client.call(R.get, { id: w.memory.id })).value, 'Indent with two spaces; tabs only in Makefiles');
    assert.deepEqual(
      (await alice.client.call(R.history, { id: w.memory.id })).entries.map((e) => e.actor),
      ['bob', 'alice'],
    );
    const s = await bob.client.call(R.search, {
      query: 'tabs in makefiles',
      mode: 'fts',
      scope: { root: 'team.shared', includeUser: false },
    });
    assert.deepEqual(
      s.hits.map((x) => [x.memory.key, x.store]),
      [['tabs', 'team']],
    );
  });

  it('a claimed system actor is only a claim: the database user is the actor, the claim is onBehalfOf', async () => {
    const w = await bob.client.call(R.upsert, {
      namespace: 'team.shared.spoof',
      key: 'k',
      value: 'Written by bob, claiming to be the expiry job',
      actor: 'system:expire',
    });
    await bob.client.call(R.delete, { id: w.memory.id, actor: 'system:retention', reason: 'claimed retention' });
    const h = await alice.client.call(R.history, { id: w.memory.id });
    assert.deepEqual(
      h.entries.map((e) => [e.op, e.actor, e.detail?.onBehalfOf]),
      [
        ['delete', 'bob', 'system:retention'],
        ['create', 'bob', 'system:expire'],
      ],
    );
    // Deleted by bob, not by the expiry job: writing the key again needs restore (an expired memory would not).
    assert.equal((await alice.client.call(R.get, { id: w.memory.id, includeDeleted: true })).deletedBy, 'bob');
    await rejectsWith(bob.client.call(R.upsert, { namespace: 'team.shared.spoof', key: 'k', value: 'Back without restore' }), 'Deleted');
  });

  it('a role cannot write a root it was only granted to read, nor read a root it was not granted', async () => {
    const doc = await alice.client.call(R.upsert, {
      namespace: 'team.docs',
      key: 'runbook',
      value: 'Restart the queue worker with systemctl restart worker',
    });
    assert.equal((await bob.client.call(R.get, { id: doc.memory.id })).value, doc.memory.value, 'bob reads docs');
    await rejectsWith(bob.client.call(R.upsert, { namespace: 'team.docs', key: 'runbook', value: 'Reboot the machine' }), 'Forbidden');
    await rejectsWith(bob.client.call(R.upsert, { namespace: 'team.docs', key: 'new', value: 'Something new' }), 'Forbidden');
    await rejectsWith(bob.client.call(R.delete, { id: doc.memory.id }), 'Forbidden');
    await rejectsWith(bob.client.call(R.forget, { id: doc.memory.id }), 'Forbidden');
    assert.equal((await alice.client.call(R.get, { id: doc.memory.id })).version, 1, 'nothing changed');
    const secret = await alice.client.call(R.upsert, { namespace: 'team.leads', key: 'budget', value: 'Hiring budget is frozen until Q3' });
    await rejectsWith(bob.client.call(R.get, { id: secret.memory.id }), 'NotFound');
    await rejectsWith(bob.client.call(R.history, { id: secret.memory.id }), 'NotFound');
    const all = await bob.client.call(R.list, { scope: { root: 'team', includeUser: false }, limit: 1000 });
    assert.ok(
      all.items.length >= 2 && all.items.every((m) => m.namespace.startsWith('team.shared') || m.namespace === 'team.docs'),
      all.items.map((m) => m.namespace).join(),
    );
    const ns = await bob.client.call(R.namespacesList, { root: 'team' });
    assert.ok(!ns.namespaces.some((n) => n.path === 'team.leads'));
    const found = await bob.client.call(R.search, {
      query: 'hiring budget frozen',
      mode: 'fts',
      scope: { root: 'team', includeUser: false },
    });
    assert.equal(found.hits.length, 0);
    await rejectsWith(bob.client.call(R.upsert, { namespace: 'team.leads', key: 'budget', value: 'Budget is unlimited' }), 'Forbidden');
    await rejectsWith(bob.client.call(R.namespacesDelete, { path: 'team.shared' }), 'Forbidden');
    await rejectsWith(bob.client.call(R.namespacesRename, { from: 'team.shared', to: 'team.shared2' }), 'Forbidden');
    assert.equal((await alice.client.call(R.get, { id: secret.memory.id })).value, 'Hiring budget is frozen until Q3');
  });

  it('a batch reports a refusal by the database per item and stores the rest', async () => {
    const r = await bob.client.call(R.upsertBatch, {
      items: [
        { namespace: 'team.shared.batch', key: 'a', value: 'Batch item a' },
        { namespace: 'team.docs', key: 'b', value: 'Batch item b (read-only root)' },
        { namespace: 'team.shared.batch', key: 'c', value: 'Batch item c' },
        { namespace: 'team.leads.new', key: 'd', value: 'Batch item d (no grant)' },
      ],
    });
    assert.deepEqual(
      r.results.map((x) => (x.ok ? 'ok' : x.error.code)),
      ['ok', 1014, 'ok', 1014],
    );
    const got = await alice.client.call(R.list, { scope: { root: 'team.shared.batch', includeUser: false } });
    assert.deepEqual(got.items.map((m) => m.key).sort(), ['a', 'c']);
    await rejectsWith(alice.client.call(R.get, { namespace: 'team.docs', key: 'b' }), 'NotFound');
    assert.ok(!(await alice.client.call(R.namespacesList, { root: 'team.leads' })).namespaces.some((n) => n.path === 'team.leads.new'));
  });

  it('the database refuses forged actors and rows outside the grant even to hand-written SQL', async () => {
    const bobPool = new (await import('pg')).default.Pool(sessionConfig(pg.url('bob', db), { options: '-c search_path=cairn,public' }));
    try {
      const m = await alice.client.call(R.upsert, { namespace: 'team.shared', key: 'forge', value: 'Original' });
      const ns = (await bobPool.query(`SELECT ns_id FROM memories WHERE id = $1`, [m.memory.id])).rows[0].ns_id;
      await assert.rejects(
        bobPool.query(`INSERT INTO history(memory_id, ns_id, op, actor, at, version) VALUES ($1, $2, 'update', 'alice', 0, 9)`, [
          m.memory.id,
          ns,
        ]),
        /permission denied for table history/, // members never write history themselves (cairn.record_write does)
      );
      const leads = await bobPool.query(
        `SELECT count(*)::int AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = 'team.leads'`,
      );
      assert.equal(leads.rows[0].c, 0, 'row-level security hides the rows');
      const upd = await bobPool.query(
        `UPDATE memories SET value = 'pwned' WHERE ns_id IN (SELECT id FROM cairn.namespaces) AND value LIKE 'Hiring%'`,
      );
      assert.equal(upd.rowCount, 0);
    } finally {
      await bobPool.end();
    }
  });

  it('changes reach the other daemon live as memory/didChange (store: team), only for readable roots', async () => {
    const w = await alice.client.call(R.upsert, { namespace: 'team.shared', key: 'live', value: 'Live change feed works' });
    const c = await bob.waitChange((x) => x.id === w.memory.id);
    assert.deepEqual(
      { ...c },
      { position: w.position, id: w.memory.id, namespace: 'team.shared', key: 'live', op: 'create', store: 'team' },
    );
    const hidden = await alice.client.call(R.upsert, { namespace: 'team.leads', key: 'live', value: 'Not for bob' });
    const marker = await alice.client.call(R.upsert, { namespace: 'team.shared', key: 'marker', value: 'After the hidden one' });
    await bob.waitChange((x) => x.id === marker.memory.id);
    assert.ok(!bob.changes.some((x) => x.id === hidden.memory.id), 'bob never hears of team.leads');
    await alice.waitChange((x) => x.id === marker.memory.id);
  });

  it("local namespaces stay local: neither daemon sees the other one's", async () => {
    const mine = await alice.client.call(R.upsert, { namespace: 'project.alice', key: 'k', value: 'Only on alice machine' });
    await rejectsWith(bob.client.call(R.get, { id: mine.memory.id }), 'NotFound');
    const both = await alice.client.call(R.search, { query: 'alice machine live change', mode: 'fts', limit: 20 });
    const stores = new Set(both.hits.map((h) => h.store));
    assert.deepEqual([...stores].sort(), ['local', 'team'], 'a whole-store search fuses both stores and tags each hit');
  });
});
