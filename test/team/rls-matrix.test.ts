/**
 * The row-level-security contract of the team database, as a matrix: one login role, granted admin on `team.adm`,
 * write on `team.wr`, read on `team.rd` and nothing on `team.no`, connects with plain SQL through the `pg` client
 * (no Cairn code in any access attempt; Cairn only sets up schema, grants and data) and tries SELECT, INSERT, UPDATE
 * and DELETE on every table of the `cairn` schema, for each of the four roots, and calls the server-side functions.
 * Every attempt runs in a transaction that is rolled back, so attempts never see each other's effects. The expected
 * outcomes are the table in ARCHITECTURE.md ("Team memory", "Permissions"); the attacks (a reader moving a
 * memory, forged history and change rows, `system:` actors) are spelled out at the end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { PgBackend } from '../../daemon/src/store/pg/backend';
import { migrate, PG_SCHEMA_VERSION } from '../../daemon/src/store/pg/schema';
import { sessionConfig, startPg, type PgServer } from './pg-server';

const LEVELS = ['adm', 'wr', 'rd', 'no'] as const;
type Root = (typeof LEVELS)[number];
/** A number: rows returned or affected. 'denied': no privilege. 'rls': a new row the policy refuses. 'refused': our trigger or function. */
type Outcome = number | 'all' | 'denied' | 'rls' | 'refused';
interface Ctx {
  path: string;
  ns: string;
  /** A live memory and a deleted (forgotten) one, linked a -> b; b's value is a rejected value. */
  a: string;
  b: string;
  /** Rows of the root's namespace in `table`, as the owner sees them ('all'). */
  count(table: string): number;
}
interface Cell {
  table: string;
  op: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';
  sql: (x: Ctx) => [string, unknown[]];
  /** Outcome for the root the role administers, writes, reads, and has no grant on. */
  expect: [Outcome, Outcome, Outcome, Outcome];
}

const NOW = 1_900_000_000_000;
const MEMORY_COLUMNS = `id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties, anchors, created_at, updated_at, version, status, fts`;
const newMemory = (x: Ctx): [string, unknown[]] => [
  `INSERT INTO cairn.memories(${MEMORY_COLUMNS}) VALUES ($1, $2, 'new', 'v', '', 'fact', '[]', 0.5, 0.5, 'sql', '{}', '[]', 0, 0, 1, 'active', ''::tsvector)`,
  [`m-${x.path}`, x.ns],
];

/** Per-root cells: every table whose rows belong to a namespace. */
const PER_ROOT: Cell[] = [
  { table: 'memories', op: 'SELECT', sql: (x) => ['SELECT * FROM cairn.memories WHERE ns_id = $1', [x.ns]], expect: [2, 2, 2, 0] },
  { table: 'memories', op: 'INSERT', sql: newMemory, expect: [1, 1, 'rls', 'rls'] },
  {
    table: 'memories',
    op: 'UPDATE',
    sql: (x) => [`UPDATE cairn.memories SET value = 'edited', version = version + 1 WHERE ns_id = $1`, [x.ns]],
    expect: [2, 2, 0, 0],
  },
  {
    table: 'memories',
    op: 'DELETE',
    sql: (x) => ['DELETE FROM cairn.memories WHERE ns_id = $1', [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  { table: 'namespaces', op: 'SELECT', sql: (x) => ['SELECT * FROM cairn.namespaces WHERE id = $1', [x.ns]], expect: [1, 1, 1, 0] },
  {
    table: 'namespaces',
    op: 'INSERT',
    sql: (x) => [`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ($1, $2, 0)`, [`n-${x.path}`, `${x.path}.child`]],
    expect: [1, 1, 'rls', 'rls'],
  },
  {
    table: 'namespaces',
    op: 'UPDATE',
    sql: (x) => ['UPDATE cairn.namespaces SET deleted_at = 1, deleted_by = session_user WHERE id = $1', [x.ns]],
    expect: [1, 0, 0, 0],
  },
  {
    table: 'namespaces',
    op: 'DELETE',
    sql: (x) => ['DELETE FROM cairn.namespaces WHERE id = $1', [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'history',
    op: 'SELECT',
    sql: (x) => ['SELECT * FROM cairn.history WHERE ns_id = $1', [x.ns]],
    expect: ['all', 'all', 'all', 0],
  },
  {
    table: 'history',
    op: 'INSERT',
    sql: (x) => [
      `INSERT INTO cairn.history(memory_id, ns_id, op, actor, at, version) VALUES ($1, $2, 'delete', session_user, 0, 9)`,
      [x.a, x.ns],
    ],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'history',
    op: 'UPDATE',
    sql: (x) => [`UPDATE cairn.history SET reason = 'rewritten' WHERE ns_id = $1`, [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'history',
    op: 'DELETE',
    sql: (x) => ['DELETE FROM cairn.history WHERE ns_id = $1', [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'changes',
    op: 'SELECT',
    sql: (x) => ['SELECT * FROM cairn.changes WHERE ns_id = $1', [x.ns]],
    expect: ['all', 'all', 'all', 0],
  },
  {
    table: 'changes',
    op: 'INSERT',
    sql: (x) => [
      `INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES ($1, $2, $3, 'a', 'purge', 0)`,
      [x.a, x.ns, x.path],
    ],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'changes',
    op: 'UPDATE',
    sql: (x) => [`UPDATE cairn.changes SET op = 'purge' WHERE ns_id = $1`, [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  {
    table: 'changes',
    op: 'DELETE',
    sql: (x) => ['DELETE FROM cairn.changes WHERE ns_id = $1', [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  { table: 'links', op: 'SELECT', sql: (x) => ['SELECT * FROM cairn.links WHERE ns_id = $1', [x.ns]], expect: [1, 1, 1, 0] },
  {
    table: 'links',
    op: 'INSERT',
    sql: (x) => [
      `INSERT INTO cairn.links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, 'supports', $3, 0, session_user)`,
      [x.a, x.b, x.ns],
    ],
    expect: [1, 1, 'rls', 'rls'],
  },
  {
    table: 'links',
    op: 'UPDATE',
    sql: (x) => [`UPDATE cairn.links SET type = 'contradicts' WHERE ns_id = $1`, [x.ns]],
    expect: ['denied', 'denied', 'denied', 'denied'],
  },
  { table: 'links', op: 'DELETE', sql: (x) => ['DELETE FROM cairn.links WHERE ns_id = $1', [x.ns]], expect: [1, 1, 0, 0] },
  {
    table: 'rejected_values',
    op: 'SELECT',
    sql: (x) => ['SELECT * FROM cairn.rejected_values WHERE ns_id = $1', [x.ns]],
    expect: [1, 1, 1, 0],
  },
  {
    table: 'rejected_values',
    op: 'INSERT',
    sql: (x) => [
      `INSERT INTO cairn.rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES ($1, 'k1:forged', NULL, session_user, 0)`,
      [x.ns],
    ],
    expect: [1, 1, 'rls', 'rls'],
  },
  {
    table: 'rejected_values',
    op: 'UPDATE',
    sql: (x) => ['UPDATE cairn.rejected_values SET at = at + 1 WHERE ns_id = $1', [x.ns]],
    expect: [1, 1, 0, 0],
  },
  {
    table: 'rejected_values',
    op: 'DELETE',
    sql: (x) => ['DELETE FROM cairn.rejected_values WHERE ns_id = $1', [x.ns]],
    expect: [1, 1, 0, 0],
  },
];

/** The server-side functions, called directly by the role (what the store's client code calls). */
const FUNCTIONS: { name: string; sql: (x: Ctx) => [string, unknown[]]; expect: [Outcome, Outcome, Outcome, Outcome] }[] = [
  {
    name: 'purge_memory (a deleted memory)',
    sql: (x) => ['SELECT cairn.purge_memory($1, NULL, NULL, 0)', [x.b]],
    expect: [1, 'refused', 'refused', 'refused'],
  },
  {
    name: 'record_write (a second history row for the current version)',
    sql: (x) => [`SELECT cairn.record_write($1, 'update', NULL, NULL, json_build_object('id', $1::text, 'version', 0)::text, NULL)`, [x.a]],
    expect: ['refused', 'refused', 'refused', 'refused'],
  },
  {
    name: "record_write ('delete' of a live memory)",
    sql: (x) => [`SELECT cairn.record_write($1, 'delete', NULL, NULL, json_build_object('id', $1::text, 'version', 0)::text, NULL)`, [x.a]],
    expect: ['refused', 'refused', 'refused', 'refused'],
  },
  { name: "record_change ('link')", sql: (x) => [`SELECT cairn.record_change($1, 'link')`, [x.a]], expect: [1, 1, 'refused', 'refused'] },
  {
    name: "record_namespace_change ('namespace_rename')",
    sql: (x) => [`SELECT cairn.record_namespace_change($1, $2, 'namespace_rename')`, [x.ns, x.path]],
    expect: [1, 'refused', 'refused', 'refused'],
  },
  {
    // A read function (schema v9): the root's live memories that match (b is deleted), none without a grant.
    name: 'text_matches (full text, scoped to the root)',
    sql: (x) => [`SELECT * FROM cairn.text_matches(plainto_tsquery('english', 'memory'), NULL, ARRAY[$1::text], false)`, [x.path]],
    expect: [1, 1, 1, 0],
  },
  {
    name: 'purge_row (internal)',
    sql: (x) => [`SELECT cairn.purge_row(m, 'x', 'system:forged', NULL, NULL, 0) FROM cairn.memories m WHERE m.id = $1`, [x.a]],
    // Members only see the rows they may read; called on one, the internal function refuses.
    expect: ['refused', 'refused', 'refused', 0],
  },
];

/** Tables without a namespace: the role's view of them. */
const GLOBAL: { table: string; op: Cell['op']; sql: [string, unknown[]]; expect: Outcome }[] = [
  { table: 'meta', op: 'SELECT', sql: [`SELECT * FROM cairn.meta WHERE key = 'schema_version'`, []], expect: 1 },
  { table: 'meta', op: 'INSERT', sql: [`INSERT INTO cairn.meta(key, value) VALUES ('history_cap', '1')`, []], expect: 'denied' },
  { table: 'meta', op: 'UPDATE', sql: [`UPDATE cairn.meta SET value = '99' WHERE key = 'schema_version'`, []], expect: 'denied' },
  { table: 'meta', op: 'DELETE', sql: [`DELETE FROM cairn.meta`, []], expect: 'denied' },
  { table: 'grants', op: 'SELECT', sql: [`SELECT * FROM cairn.grants`, []], expect: 3 },
  {
    table: 'grants',
    op: 'INSERT',
    sql: [`INSERT INTO cairn.grants(root, role, level) VALUES ('team', session_user, 3)`, []],
    expect: 'denied',
  },
  { table: 'grants', op: 'UPDATE', sql: [`UPDATE cairn.grants SET level = 3`, []], expect: 'denied' },
  { table: 'grants', op: 'DELETE', sql: [`DELETE FROM cairn.grants`, []], expect: 'denied' },
  { table: 'idempotency_keys', op: 'SELECT', sql: [`SELECT * FROM cairn.idempotency_keys`, []], expect: 1 },
  {
    table: 'idempotency_keys',
    op: 'INSERT',
    sql: [`INSERT INTO cairn.idempotency_keys(key, method, fingerprint, result, at) VALUES ('k2', 'm', 'f', '{}', 0)`, []],
    expect: 1,
  },
  {
    table: 'idempotency_keys',
    op: 'INSERT',
    sql: [
      `INSERT INTO cairn.idempotency_keys(role, key, method, fingerprint, result, at) VALUES ('rls_setup', 'k2', 'm', 'f', '{}', 0)`,
      [],
    ],
    expect: 'rls',
  },
  { table: 'idempotency_keys', op: 'UPDATE', sql: [`UPDATE cairn.idempotency_keys SET result = '{}'`, []], expect: 'denied' },
  { table: 'idempotency_keys', op: 'DELETE', sql: [`DELETE FROM cairn.idempotency_keys`, []], expect: 1 },
];

const MESSAGES: Record<'denied' | 'rls' | 'refused', RegExp> = {
  denied: /^permission denied for table /,
  rls: /violates row-level security policy/,
  refused: /this role|does not match|is internal|needs admin|never change|must be the database user|new version|goes up by one/,
};

describe('team memory: the row-level-security matrix, in plain SQL', () => {
  let server: PgServer;
  let db: string;
  let role: pg.Client;
  let owner: pg.Pool;
  const ctx = new Map<Root, Ctx>();

  /** Run one statement as the role in a transaction that is rolled back: rows returned/affected, or the error. */
  async function attempt(sql: string, params: unknown[]): Promise<number | Error> {
    await role.query('BEGIN');
    try {
      return (await role.query(sql, params)).rowCount ?? 0;
    } catch (e) {
      return e as Error;
    } finally {
      await role.query('ROLLBACK');
    }
  }

  function check(what: string, got: number | Error, want: Outcome, all: () => number): void {
    if (typeof want === 'number' || want === 'all') {
      const n = want === 'all' ? all() : want;
      assert.ok(!(got instanceof Error), `${what}: expected ${n} rows, got ${got instanceof Error ? got.message : ''}`);
      assert.equal(got, n, `${what}: rows`);
      if (want === 'all') assert.ok(n > 0, `${what}: the owner sees rows`);
    } else {
      assert.ok(got instanceof Error, `${what}: expected ${want}, got ${String(got)} rows`);
      assert.equal((got as Error & { code?: string }).code, '42501', `${what}: ${got.message}`);
      assert.match(got.message, MESSAGES[want], what);
    }
  }

  before(async () => {
    server = await startPg();
    db = await server.createDatabase('rls');
    owner = server.admin(db);
    const password = await server.createRole('rls_role');
    await server.createRole('rls_setup');
    await server.grant(db, 'rls_setup', 'team', 'admin');
    await server.grant(db, 'rls_role', 'team.adm', 'admin');
    await server.grant(db, 'rls_role', 'team.wr', 'write');
    await server.grant(db, 'rls_role', 'team.rd', 'read');
    // Data, written through Cairn by a role that administers everything.
    const setup = await new PgBackend({ url: server.url('rls_setup', db) }).open();
    try {
      for (const r of LEVELS) {
        const path = `team.${r}`;
        const a = await setup.upsert({ namespace: path, key: 'a', value: `Memory a of ${path}` });
        const b = await setup.upsert({ namespace: path, key: 'b', value: `Memory b of ${path}` });
        await setup.link({ from: a.memory.id, to: b.memory.id, type: 'depends_on' });
        await setup.forget({ id: b.memory.id, reason: 'wrong' });
        // Outside the cells' namespace (a child of the root): a memory that expires at NOW, and a keyed write.
        await setup.upsert({ namespace: `${path}.ttl`, key: 'ttl', value: 'Expires', expiresAt: new Date(NOW).toISOString() });
        const ns = (await owner.query(`SELECT id FROM cairn.namespaces WHERE path = $1`, [path])).rows[0].id as string;
        const counts = new Map<string, number>();
        for (const t of ['history', 'changes'])
          counts.set(t, Number((await owner.query(`SELECT count(*) AS c FROM cairn.${t} WHERE ns_id = $1`, [ns])).rows[0].c));
        ctx.set(r, { path, ns, a: a.memory.id, b: b.memory.id, count: (t) => counts.get(t)! });
      }
      await setup.upsert({ namespace: 'team.wr.keys', key: 'k', value: 'A keyed write by another role', idempotencyKey: 'k1' });
    } finally {
      await setup.close();
    }
    // The role's own idempotency key (the other one, k1, is rls_setup's).
    await owner.query(
      `INSERT INTO cairn.idempotency_keys(role, key, method, fingerprint, result, at) VALUES ('rls_role', 'mine', 'm', 'f', '{}', 0)`,
    );
    role = new pg.Client(sessionConfig(server.url('rls_role', db), { password }));
    await role.connect();
  });
  after(async () => {
    await role?.end().catch(() => undefined);
    await server?.stop();
  });

  it('every table, for a root the role administers, writes, reads and has no grant on', async () => {
    for (const cell of PER_ROOT)
      for (const [i, r] of LEVELS.entries()) {
        const x = ctx.get(r)!;
        const [sql, params] = cell.sql(x);
        check(`${cell.op} ${cell.table} in team.${r}`, await attempt(sql, params), cell.expect[i], () => x.count(cell.table));
      }
  });

  it('tables without a namespace: meta, grants (own rows), idempotency keys (own rows)', async () => {
    for (const g of GLOBAL) check(`${g.op} ${g.table}`, await attempt(...g.sql), g.expect, () => 0);
  });

  it('the server-side functions check the level on the memory itself', async () => {
    for (const f of FUNCTIONS)
      for (const [i, r] of LEVELS.entries()) {
        const [sql, params] = f.sql(ctx.get(r)!);
        check(`${f.name} in team.${r}`, await attempt(sql, params), f.expect[i], () => 0);
      }
  });

  it('attack: a reader moves a memory it may only read into a root it writes, and rewrites it', async () => {
    const rd = ctx.get('rd')!;
    const wr = ctx.get('wr')!;
    const adm = ctx.get('adm')!;
    const moved = await attempt(`UPDATE cairn.memories SET ns_id = $1, value = 'hijacked' WHERE id = $2`, [wr.ns, rd.a]);
    assert.equal(moved, 0, 'the reader changes no row');
    // Not even a role that may write both ends moves a memory: its history and links belong to its namespace.
    check(
      'move between two written roots',
      await attempt(`UPDATE cairn.memories SET ns_id = $1 WHERE id = $2`, [wr.ns, adm.a]),
      'refused',
      () => 0,
    );
    check(
      'a memory moved into the root',
      await attempt(`UPDATE cairn.memories SET ns_id = $1 WHERE id = $2`, [adm.ns, wr.a]),
      'refused',
      () => 0,
    );
    const row = (await owner.query(`SELECT ns_id, value FROM cairn.memories WHERE id = $1`, [rd.a])).rows[0];
    assert.deepEqual(row, { ns_id: rd.ns, value: 'Memory a of team.rd' });
  });

  it('attack: forged history and change rows for a memory of a root the role only reads', async () => {
    const rd = ctx.get('rd')!;
    const wr = ctx.get('wr')!;
    check(
      'history delete row naming the written root',
      await attempt(`INSERT INTO cairn.history(memory_id, ns_id, op, actor, at, version) VALUES ($1, $2, 'delete', session_user, 0, 2)`, [
        rd.a,
        wr.ns,
      ]),
      'denied',
      () => 0,
    );
    check(
      'purge change naming the written root',
      await attempt(`INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES ($1, $2, 'team.rd', 'a', 'purge', 0)`, [
        rd.a,
        wr.ns,
      ]),
      'denied',
      () => 0,
    );
    // Through the server-side path: the namespace comes from the memory, so the role's write grant elsewhere is no help.
    check(
      'record_write for the read-only memory',
      await attempt(`SELECT cairn.record_write($1, 'update', NULL, NULL, json_build_object('id', $1::text, 'version', 1)::text, NULL)`, [
        rd.a,
      ]),
      'refused',
      () => 0,
    );
    check('record_change purge', await attempt(`SELECT cairn.record_change($1, 'purge')`, [wr.a]), 'refused', () => 0);
    // A link from a read-only memory filed under the written root.
    check(
      'link filed under another root',
      await attempt(`INSERT INTO cairn.links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, 'supports', $3, 0, session_user)`, [
        rd.a,
        wr.a,
        wr.ns,
      ]),
      'rls',
      () => 0,
    );
    const forged = await owner.query(`SELECT count(*)::int AS c FROM cairn.history WHERE memory_id = $1 AND op <> 'create'`, [rd.a]);
    assert.equal(forged.rows[0].c, 0);
  });

  it('attack: a writer changes a memory without a new version, or without its history', async () => {
    const wr = ctx.get('wr')!;
    check(
      'same version, new value',
      await attempt(`UPDATE cairn.memories SET value = 'silently' WHERE id = $1`, [wr.a]),
      'refused',
      () => 0,
    );
    check('version jumps', await attempt(`UPDATE cairn.memories SET version = version + 5 WHERE id = $1`, [wr.a]), 'refused', () => 0);
    // Access statistics (memory/get) and vectors change in place.
    assert.equal(await attempt(`UPDATE cairn.memories SET access_count = access_count + 1, last_accessed_at = 1 WHERE id = $1`, [wr.a]), 1);
    // A new version committed without its history row is refused at commit.
    await role.query('BEGIN');
    const n = (await role.query(`UPDATE cairn.memories SET value = 'silently', version = version + 1 WHERE id = $1`, [wr.a])).rowCount;
    assert.equal(n, 1);
    await assert.rejects(role.query('COMMIT'), /has no history: changes go through cairn.record_write/);
    await role.query('BEGIN');
    await role.query(newMemory(wr)[0], newMemory(wr)[1]);
    await assert.rejects(role.query('COMMIT'), /has no history/);
    const row = (await owner.query(`SELECT value, version FROM cairn.memories WHERE id = $1`, [wr.a])).rows[0];
    assert.deepEqual(row, { value: 'Memory a of team.wr', version: 1 });
    assert.equal((await owner.query(`SELECT count(*)::int AS c FROM cairn.memories WHERE key = 'new'`)).rows[0].c, 0);
  });

  it('attack: system actors and other users come from nowhere but the server', async () => {
    const wr = ctx.get('wr')!;
    check(
      "a link by 'system:expire'",
      await attempt(
        `INSERT INTO cairn.links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, 'supports', $3, 0, 'system:expire')`,
        [wr.a, wr.b, wr.ns],
      ),
      'refused',
      () => 0,
    );
    check(
      'a link by another user',
      await attempt(`INSERT INTO cairn.links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, 'supports', $3, 0, 'rls_setup')`, [
        wr.a,
        wr.b,
        wr.ns,
      ]),
      'refused',
      () => 0,
    );
    check(
      "deleted by 'system:expire' (rewritable without restore)",
      await attempt(`UPDATE cairn.memories SET deleted_at = 1, deleted_by = 'system:expire' WHERE id = $1`, [wr.a]),
      'refused',
      () => 0,
    );
    check(
      "a rejection by 'system:retention'",
      await attempt(`UPDATE cairn.rejected_values SET actor = 'system:retention' WHERE ns_id = $1`, [wr.ns]),
      'refused',
      () => 0,
    );
    // A real write, recorded through the server-side path with a claimed system actor: the user is the actor.
    await role.query('BEGIN');
    try {
      const v = (
        await role.query(
          `UPDATE cairn.memories SET value = 'edited', version = version + 1, updated_at = $2 WHERE id = $1 RETURNING version`,
          [wr.a, NOW],
        )
      ).rows[0].version as number;
      await role.query(
        `SELECT cairn.record_write($1, 'update', 'edit', 'system:expire', json_build_object('id', $1::text, 'version', $2::int)::text, NULL)`,
        [wr.a, v - 1],
      );
      const h = (
        await role.query(`SELECT actor, detail, version, state FROM cairn.history WHERE memory_id = $1 ORDER BY seq DESC LIMIT 1`, [wr.a])
      ).rows[0];
      assert.equal(h.actor, 'rls_role');
      assert.deepEqual(JSON.parse(h.detail), { onBehalfOf: 'system:expire' });
      assert.equal(h.version, v);
      assert.equal(JSON.parse(h.state).value, 'edited', 'the state is the stored row');
      // Expiry is the server's job: system:expire, for the roots the role writes, with the role as sweptBy.
      const n = (await role.query(`SELECT cairn.expire_due($1, 100) AS n`, [NOW + 1])).rows[0].n as number;
      assert.equal(n, 2, 'team.adm and team.wr; not team.rd, not team.no');
      const ex = (
        await role.query(
          `SELECT n.path, h.actor, h.detail FROM cairn.history h JOIN cairn.namespaces n ON n.id = h.ns_id WHERE h.op = 'expire' ORDER BY n.path`,
        )
      ).rows;
      assert.deepEqual(
        ex.map((r) => [r.path, r.actor, JSON.parse(r.detail)]),
        [
          ['team.adm.ttl', 'system:expire', { sweptBy: 'rls_role' }],
          ['team.wr.ttl', 'system:expire', { sweptBy: 'rls_role' }],
        ],
      );
    } finally {
      await role.query('ROLLBACK');
    }
  });
});

describe('team memory: a schema v3 database upgraded by cairn team init', () => {
  let server: PgServer;
  after(async () => {
    await server?.stop();
  });

  it('keeps its data and history, loses the members v3 privileges and gets the v4 policies', async () => {
    server = await startPg();
    const db = `upgrade_${process.pid}`;
    await server.admin('postgres').query(`CREATE DATABASE ${db}`);
    const owner = server.admin(db);
    assert.deepEqual(await migrate(owner, { to: 3 }), { from: 0, to: 3 });
    const password = await server.createRole('old_member');
    await owner.query(`GRANT cairn_member TO old_member`);
    await owner.query(`INSERT INTO cairn.grants(root, role, level) VALUES ('team', 'old_member', 3)`);
    // What a v3 daemon wrote, in plain SQL as the member (v3 let members insert history and changes themselves).
    const member = new pg.Client(sessionConfig(server.url('old_member', db), { password }));
    await member.connect();
    try {
      await member.query(`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ('ns1', 'team.old', 0)`);
      const [sql, params] = newMemory({ path: 'team.old', ns: 'ns1', a: '', b: '', count: () => 0 });
      await member.query(sql, params);
      const state = JSON.stringify({ id: 'm-team.old', namespace: 'team.old', key: 'new', value: 'v', version: 1 });
      await member.query(
        `INSERT INTO cairn.history(memory_id, ns_id, op, actor, at, version, state) VALUES ('m-team.old', 'ns1', 'create', 'old_member', 0, 1, $1)`,
        [state],
      );
      await member.query(
        `INSERT INTO cairn.changes(memory_id, ns_id, ns_path, key, op, at) VALUES ('m-team.old', 'ns1', 'team.old', 'new', 'create', 0)`,
      );
      const privileges = async () =>
        (
          await owner.query(
            `SELECT t, p FROM unnest(ARRAY['memories', 'history', 'changes', 'namespaces', 'links']) t, unnest(ARRAY['INSERT', 'UPDATE', 'DELETE']) p
             WHERE has_table_privilege('old_member', 'cairn.' || t, p) ORDER BY t, p`,
          )
        ).rows.map((r) => `${r.p} ${r.t}`);
      assert.ok((await privileges()).includes('INSERT history'), 'v3: members wrote history');

      assert.deepEqual(await migrate(owner), { from: 3, to: PG_SCHEMA_VERSION });
      assert.deepEqual(await privileges(), [
        'DELETE links',
        'INSERT links',
        'INSERT memories',
        'UPDATE memories',
        'INSERT namespaces',
        'UPDATE namespaces',
      ]);
      const policy = (await owner.query(`SELECT qual FROM pg_policies WHERE schemaname = 'cairn' AND policyname = 'm_update'`)).rows[0]
        .qual;
      assert.match(policy, /ns_ids\(2\)/, 'the update policy needs write on the old row');
      await assert.rejects(
        member.query(
          `INSERT INTO cairn.history(memory_id, ns_id, op, actor, at, version) VALUES ('m-team.old', 'ns1', 'delete', 'old_member', 0, 2)`,
        ),
        /permission denied for table history/,
      );
    } finally {
      await member.end();
    }
    // The upgraded database serves Cairn: a write on top of v3 data, its history next to v3's.
    const b = await new PgBackend({ url: server.url('old_member', db) }).open();
    try {
      const w = await b.upsert({ namespace: 'team.old', key: 'new', value: 'Written after the upgrade', actor: 'agent:x' });
      assert.equal(w.memory.version, 2);
      const h = await b.history({ namespace: 'team.old', key: 'new' });
      assert.deepEqual(
        h.entries.map((e) => [e.version, e.op, e.actor, e.previous?.value ?? null, e.state?.value, e.detail]),
        [
          [2, 'update', 'old_member', 'v', 'Written after the upgrade', { onBehalfOf: 'agent:x' }],
          [1, 'create', 'old_member', null, 'v', null],
        ],
      );
    } finally {
      await b.close();
    }
  });
});
