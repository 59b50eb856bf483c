/**
 * cairn.text_matches (schema v9, store/pg/text-matches.ts), the SECURITY DEFINER function the full-text arm takes its
 * matching rows from so that the GIN index is used under row-level security. Called with plain SQL as each role (no
 * Cairn code in the calls): it returns only rows of namespaces the login role may read (a grant on a root, a grant
 * to a group role it belongs to), live namespaces only, deleted and forgotten memories only when asked, within the
 * scope given; it reads the GIN index where a member's own `@@` query cannot; and search as a reader stays inside
 * its grant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { FUSION } from '../../daemon/src/retrieval/fusion';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { pgSearch } from '../../daemon/src/store/pg/search';
import { ownerFixture, sessionConfig, startPg, type PgServer } from './pg-server';

const MATCHES = `SELECT ns_path || '/' || key AS k FROM cairn.text_matches(plainto_tsquery('english', $1), $2::text[], $3::text[], $4) ORDER BY 1`;

describe('team memory: cairn.text_matches, the full-text arm under the read rules', () => {
  let pg0: PgServer;
  let db: string;
  let alice: PgBackend;
  const clients = new Map<string, pg.Client>();

  /** A plain SQL session as `role` (psql's view: no Cairn code). */
  async function as(role: string): Promise<pg.Client> {
    let c = clients.get(role);
    if (!c) {
      c = new pg.Client(sessionConfig(pg0.url(role, db)));
      await c.connect();
      clients.set(role, c);
    }
    return c;
  }
  async function matches(role: string, text: string, paths: string[] | null = null, roots: string[] | null = null, deleted = false) {
    return (await (await as(role)).query<{ k: string }>(MATCHES, [text, paths, roots, deleted])).rows.map((r) => r.k);
  }

  before(async () => {
    pg0 = await startPg();
    db = await pg0.createDatabase();
    for (const r of ['alice', 'bob', 'carol', 'dave', 'eve']) await pg0.createRole(r);
    await pg0.grant(db, 'alice', 'team', 'admin');
    await pg0.grant(db, 'bob', 'team.a', 'read'); // one subtree
    await pg0.admin('postgres').query(`DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tm_readers') THEN
      CREATE ROLE tm_readers NOLOGIN; END IF; END $$`);
    await pg0.grant(db, 'tm_readers', 'team.b', 'read'); // a grant to a group role
    await pg0.admin('postgres').query('GRANT tm_readers TO carol');
    await pg0.grant(db, 'dave', 'other', 'write'); // a grant elsewhere only; eve has none at all
    alice = await new PgBackend({ url: pg0.url('alice', db), poolSize: 2 }).open();
    await alice.upsert({ namespace: 'team.a', key: 'one', value: 'alpha gateway in a' });
    await alice.upsert({ namespace: 'team.a.sub', key: 'nested', value: 'alpha nested under a' });
    await alice.upsert({ namespace: 'team.ab', key: 'sibling', value: 'alpha in a sibling whose name starts like a' });
    await alice.upsert({ namespace: 'team.b', key: 'two', value: 'alpha gateway in b' });
    await alice.upsert({ namespace: 'team.a', key: 'gone', value: 'alpha deleted' });
    await alice.delete({ namespace: 'team.a', key: 'gone' });
    await alice.upsert({ namespace: 'team.a', key: 'forgotten', value: 'alpha forgotten' });
    await alice.forget({ namespace: 'team.a', key: 'forgotten' });
    await alice.upsert({ namespace: 'team.d', key: 'dropped', value: 'alpha in a deleted namespace' });
    await alice.deleteNamespace('team.d');
  });
  after(async () => {
    for (const c of clients.values()) await c.end().catch(() => undefined);
    await alice?.close();
    await pg0?.stop();
  });

  it('returns only rows of namespaces the login role may read: its grant, a group role’s grant, nothing without one', async () => {
    assert.deepEqual(await matches('alice', 'alpha'), ['team.a.sub/nested', 'team.a/one', 'team.ab/sibling', 'team.b/two']);
    assert.deepEqual(await matches('bob', 'alpha'), ['team.a.sub/nested', 'team.a/one']);
    assert.deepEqual(await matches('carol', 'alpha'), ['team.b/two']);
    assert.deepEqual(await matches('dave', 'alpha'), []);
    // Asking for a scope outside the grant does not widen it.
    assert.deepEqual(await matches('bob', 'alpha', ['team.b'], ['team.b']), []);
    assert.deepEqual(await matches('bob', 'alpha', null, ['team']), ['team.a.sub/nested', 'team.a/one']);
    assert.deepEqual(await matches('carol', 'alpha', null, ['team.a']), []);
    // A role with no grant at all is not a member: the schema is closed to it.
    await assert.rejects(matches('eve', 'alpha'), (e: Error & { code?: string }) => e.code === '42501');
  });

  it('keeps to the scope (exact paths, subtrees by whole segments) and to live namespaces', async () => {
    assert.deepEqual(await matches('alice', 'alpha', [], ['team.a']), ['team.a.sub/nested', 'team.a/one']);
    assert.deepEqual(await matches('alice', 'alpha', ['team.a'], []), ['team.a/one']);
    assert.deepEqual(await matches('alice', 'alpha', ['team.b'], ['team.a.sub']), ['team.a.sub/nested', 'team.b/two']);
    assert.deepEqual(await matches('alice', 'alpha', [], []), []);
    assert.deepEqual(await matches('alice', 'alpha', null, ['team.d']), [], 'a deleted namespace');
    assert.deepEqual(await matches('alice', 'gateway'), ['team.a/one', 'team.b/two']);
    assert.deepEqual(await matches('alice', 'the'), [], 'a query of stopwords only');
  });

  it('leaves deleted and forgotten memories out unless asked for them (include.deleted)', async () => {
    assert.ok(!(await matches('alice', 'deleted')).length);
    assert.ok(!(await matches('bob', 'forgotten')).length);
    assert.deepEqual(await matches('alice', 'deleted', null, null, true), ['team.a/gone']);
    assert.deepEqual(await matches('bob', 'deleted', null, null, true), ['team.a/gone']);
    assert.deepEqual(await matches('carol', 'deleted', null, null, true), []);
  });

  it('search as a reader stays inside its grant and leaves deleted rows out', async () => {
    const bob = await new PgBackend({ url: pg0.url('bob', db), poolSize: 2 }).open();
    try {
      for (const scope of [undefined, { root: 'team', includeUser: false }, { root: 'team.b', includeUser: false }]) {
        const r = await pgSearch(bob, { query: 'alpha', mode: 'fts', limit: 20, scope }, FUSION.builtin);
        assert.ok(
          r.hits.every((h) => h.memory.namespace === 'team.a' || h.memory.namespace === 'team.a.sub'),
          JSON.stringify(scope),
        );
        assert.equal(r.hits.length, scope?.root === 'team.b' ? 0 : 2);
      }
      const all = await pgSearch(bob, { query: 'alpha', mode: 'fts', limit: 20, include: { deleted: true } }, FUSION.builtin);
      assert.deepEqual(all.hits.map((h) => h.memory.key).sort(), ['forgotten', 'gone', 'nested', 'one']);
    } finally {
      await bob.close();
    }
  });

  it('reads the GIN index (memories_fts) where the member’s own query cannot, and walks a small scope for a common term', async () => {
    // 3,000 rows in team.bulk, all with "common", three with "zebra" (written by the owner as a fixture, then vacuumed).
    const owner = pg0.admin(db);
    const ns = (await owner.query(`SELECT id FROM cairn.namespaces WHERE path = 'team.a'`)).rows[0].id as string;
    await ownerFixture(owner, async (c) => {
      await c.query(`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ('bulk-ns', 'team.bulk', 0)`);
      await c.query(
        `INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties, anchors,
           created_at, updated_at, version, status, fts)
         SELECT 'bulk-' || i, 'bulk-ns', 'k' || i, v, '', 'fact', '[]', 0.5, 0.5, 'sql', '{}', '[]', 0, 0, 1, 'active', to_tsvector('english', v)
         FROM (SELECT i, 'common words ' || CASE WHEN i % 1000 = 0 THEN 'zebra' ELSE 'filler' || i END AS v FROM generate_series(1, 3000) i) x`,
      );
      await c.query(
        `INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties,
          anchors, created_at, updated_at, version, status, fts)
        VALUES ('few-common', $1, 'c', 'common', '', 'fact', '[]', 0.5, 0.5, 'sql', '{}', '[]', 0, 0, 1, 'active', to_tsvector('english', 'common'))`,
        [ns],
      );
    });
    await owner.query('VACUUM ANALYZE cairn.memories'); // (VACUUM: the GIN index's pending list merged in, as a server's autovacuum does)
    const member = await as('alice');
    // Index scans of memories_fts by the statement: the session's not yet reported count, before and after, in one
    // transaction (the count is reported only between transactions).
    const scans = async (sql: string, params: unknown[]) => {
      const count = async () =>
        Number((await member.query(`SELECT pg_stat_get_xact_numscans('cairn.memories_fts'::regclass) AS n`)).rows[0].n);
      await member.query('BEGIN');
      try {
        const before = await count();
        const rows = (await member.query(sql, params)).rows.length;
        return { rows, scans: (await count()) - before };
      } finally {
        await member.query('ROLLBACK');
      }
    };
    // A rare term, whole store or a large scope: the index.
    assert.deepEqual(await scans(MATCHES, ['zebra', null, null, false]), { rows: 3, scans: 1 });
    assert.deepEqual(await scans(MATCHES, ['zebra', [], ['team.bulk'], false]), { rows: 3, scans: 1 });
    // The member's own query of the same rows: row-level security keeps the index out (why the function exists).
    assert.deepEqual(await scans(`SELECT 1 FROM cairn.memories WHERE fts @@ plainto_tsquery('english', 'zebra')`, []), {
      rows: 3,
      scans: 0,
    });
    // A term in every row of the table, in a scope of a few rows: those rows, one by one, not the index.
    assert.deepEqual(await scans(MATCHES, ['common', ['team.a'], [], false]), { rows: 1, scans: 0 });
    // The plan says so too: as the owner, the index for the rare term.
    const plan = (await owner.query(`EXPLAIN SELECT 1 FROM cairn.memories m WHERE m.fts @@ plainto_tsquery('english', 'zebra')`)).rows
      .map((r) => r['QUERY PLAN'] as string)
      .join('\n');
    assert.match(plan, /memories_fts/);
  });
});
