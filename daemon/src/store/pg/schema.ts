/**
 * The team database schema: numbered migrations (migrations.ts, run by `cairn team init`
 * under an advisory lock) and the invariants checked at every open (pgvector
 * present, schema version known, row-level security on every table).
 *
 * Everything lives in schema `cairn`. Times are integer milliseconds, JSON
 * columns are text (as in the SQLite store, so no-change detection compares
 * the same strings). Who may do what is enforced by the database:
 *  - `cairn.grants(root, role, level)`: members of `role` may read (1), write
 *    (2) or administer (3) the namespaces at or under `root`;
 *  - row-level security on every table admits only rows of namespaces the
 *    session's login role (session_user) was granted, through
 *    `cairn.ns_ids(level)`, a SECURITY DEFINER set evaluated once per query;
 *  - members use the tables through the group role `cairn_member`;
 *  - every policy requires the operation's level on the old row (USING) and the new row (WITH CHECK);
 *  - history and change-log rows are written only by SECURITY DEFINER functions (migration 4) that take the
 *    namespace from the memory itself; the recorded actor is the login role, a `system:` actor only inside them;
 *  - the schema owner is not subject to RLS: developers connect with their own member roles.
 */
import type pg from 'pg';
import { CairnError } from '../../protocol/errors';
import { mapError } from './db';
import { buildIndexesOnEmptyTable, finishIndexBuilds } from './index-builds';
import { MIGRATIONS } from './migrations';

export const PG_SCHEMA_VERSION = 12;
export const MEMBER_ROLE = 'cairn_member';
export const LEVELS = { read: 1, write: 2, admin: 3 } as const;
export type Level = keyof typeof LEVELS;

const TABLES = [
  'meta',
  'namespaces',
  'memories',
  'history',
  'links',
  'rejected_values',
  'changes',
  'grants',
  'idempotency_keys',
  'signing_key',
] as const;

/** The privileges of `cairn_member`, re-asserted (and everything else revoked) by every migrate. */
const MEMBER_PRIVILEGES: [string, (typeof TABLES)[number][]][] = [
  ['SELECT, INSERT, UPDATE', ['memories', 'namespaces']],
  ['SELECT, INSERT, DELETE', ['links', 'idempotency_keys']],
  ['SELECT, INSERT, UPDATE, DELETE', ['rejected_values']],
  ['SELECT', ['history', 'changes', 'meta', 'grants']],
];

/** What members could do up to schema v3 (kept for tests of upgrades). */
const V3_MEMBER_PRIVILEGES: typeof MEMBER_PRIVILEGES = [
  ['SELECT, INSERT, UPDATE, DELETE', ['memories', 'history', 'links', 'rejected_values', 'namespaces', 'changes', 'idempotency_keys']],
  ['SELECT', ['meta', 'grants']],
];

async function ensureMemberRole(c: pg.ClientBase): Promise<void> {
  await c.query(`DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${MEMBER_ROLE}') THEN CREATE ROLE ${MEMBER_ROLE} NOLOGIN; END IF;
  END $$`);
}

/** Privileges and RLS on every table (re-asserted by every migrate, so a restored dump cannot lose them). */
async function assertGrants(c: pg.ClientBase, version: number): Promise<void> {
  await c.query(`GRANT USAGE ON SCHEMA cairn TO ${MEMBER_ROLE}`);
  for (const t of TABLES) {
    // A table of a later version than the one migrated to (tests of upgrades stop at a version) is not there yet.
    if (!(await c.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [`cairn.${t}`])).rows[0].ok) continue;
    // Not FORCEd: the owner (who runs `cairn team init`) administers everything, and the SECURITY DEFINER
    // functions the policies call read grants and namespaces as the owner.
    await c.query(`ALTER TABLE cairn.${t} ENABLE ROW LEVEL SECURITY`);
  }
  // Exactly what the store's client side needs (ARCHITECTURE.md, "Team memory", the row-level-security matrix). History
  // and the change log are written only by the SECURITY DEFINER functions (record_write, purge_memory, expire_due, ...);
  // memories are purged only through purge_memory; namespaces are deleted softly (UPDATE).
  await c.query(`REVOKE ALL ON ALL TABLES IN SCHEMA cairn FROM ${MEMBER_ROLE}, PUBLIC`);
  for (const [privileges, tables] of version >= 4 ? MEMBER_PRIVILEGES : V3_MEMBER_PRIVILEGES)
    await c.query(`GRANT ${privileges} ON ${tables.map((t) => `cairn.${t}`).join(', ')} TO ${MEMBER_ROLE}`);
  await c.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA cairn TO ${MEMBER_ROLE}`);
  await c.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA cairn TO ${MEMBER_ROLE}`);
}

/**
 * Create or upgrade the schema (needs a role that may create the extension and
 * roles, e.g. the database owner). Returns the versions before and after.
 * `to` stops at an older version (3 or later), with that version's member
 * privileges: for tests of upgrades.
 */
export async function migrate(pool: pg.Pool, o: { to?: number } = {}): Promise<{ from: number; to: number }> {
  const to = o.to ?? PG_SCHEMA_VERSION;
  if (to < 3 || to > PG_SCHEMA_VERSION) throw new CairnError('InvalidParams', `cannot migrate to schema version ${to}`, { field: 'to' });
  const c = await pool.connect().catch((e) => {
    throw mapError(e);
  });
  let from: number;
  try {
    await c.query('BEGIN');
    await c.query(`SELECT pg_advisory_xact_lock(hashtext('cairn.migrate'))`);
    await c.query('CREATE EXTENSION IF NOT EXISTS vector').catch((e) => {
      throw new CairnError(
        'InvalidState',
        `cannot create the pgvector extension (needs a role allowed to, e.g. the database owner): ${(e as Error).message}`,
      );
    });
    await c.query('CREATE SCHEMA IF NOT EXISTS cairn');
    const has = (await c.query(`SELECT to_regclass('cairn.meta') IS NOT NULL AS ok`)).rows[0].ok as boolean;
    from = has ? Number((await c.query(`SELECT value FROM cairn.meta WHERE key = 'schema_version'`)).rows[0]?.value ?? 0) : 0;
    if (from > PG_SCHEMA_VERSION)
      throw new CairnError(
        'InvalidState',
        `the team database has schema version ${from}; this Cairn knows up to ${PG_SCHEMA_VERSION} (upgrade Cairn)`,
      );
    if (from > to) throw new CairnError('InvalidState', `the team database has schema version ${from}, past ${to}`);
    await ensureMemberRole(c);
    for (let v = from; v < to; v++) await c.query(MIGRATIONS[v]);
    await c.query(
      `INSERT INTO cairn.meta(key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(to)],
    );
    await assertGrants(c, to);
    await buildIndexesOnEmptyTable(c);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw mapError(e);
  } finally {
    c.release();
  }
  // Indexes the migrations asked for (index-builds.ts), and any build an earlier run left unfinished: built without
  // blocking writes, after the commit (the schema version is already the new one; search works meanwhile).
  await finishIndexBuilds(pool).catch((e) => {
    throw mapError(e);
  });
  return { from, to };
}

/** Invariants checked at every open, with any role: pgvector present, schema known, RLS on every table. */
export async function checkSchema(pool: pg.Pool): Promise<number> {
  let rows: { version: string | null; vec: boolean; unsecured: string[] }[];
  try {
    rows = (
      await pool.query(`SELECT
        (SELECT value FROM cairn.meta WHERE key = 'schema_version') AS version,
        EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS vec,
        ARRAY(SELECT c.relname::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
              WHERE s.nspname = 'cairn' AND c.relkind = 'r' AND NOT c.relrowsecurity) AS unsecured`)
    ).rows;
  } catch (e) {
    throw mapError(e);
  }
  const r = rows[0];
  const version = Number(r.version ?? 0);
  if (!version) throw new CairnError('Unavailable', 'the team database has no Cairn schema yet: run `cairn team init`', { store: 'team' });
  if (version > PG_SCHEMA_VERSION)
    throw new CairnError('Unavailable', `the team database has schema version ${version}; this Cairn knows up to ${PG_SCHEMA_VERSION}`, {
      store: 'team',
    });
  if (version < PG_SCHEMA_VERSION)
    throw new CairnError(
      'Unavailable',
      `the team database has schema version ${version}; run \`cairn team init\` to migrate it to ${PG_SCHEMA_VERSION}`,
      { store: 'team' },
    );
  if (!r.vec)
    throw new CairnError('Unavailable', 'the team database lacks the pgvector extension: run `cairn team init`', { store: 'team' });
  if (r.unsecured.length)
    throw new CairnError('Unavailable', `row-level security is off on cairn.${r.unsecured.join(', cairn.')}: run \`cairn team init\``, {
      store: 'team',
    });
  return version;
}

/** Admin: let members of `role` read, write or administer `root` and everything under it. */
export async function grant(pool: pg.Pool, role: string, root: string, level: Level): Promise<void> {
  // Said in Cairn's terms, not as PostgreSQL's "role ... does not exist": no schema yet, or no such login role.
  await checkSchema(pool);
  const known = await pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]).catch((e) => {
    throw mapError(e);
  });
  if (known.rowCount === 0)
    throw new CairnError(
      'InvalidParams',
      `the team database has no role ${JSON.stringify(role)}: create it first (CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '…')`,
      { field: 'role', store: 'team' },
    );
  const c = await pool.connect().catch((e) => {
    throw mapError(e);
  });
  try {
    await c.query('BEGIN');
    await c.query(`GRANT ${MEMBER_ROLE} TO ${quoteIdent(role)}`);
    await c.query(
      `INSERT INTO cairn.grants(root, role, level) VALUES ($1, $2, $3) ON CONFLICT (root, role) DO UPDATE SET level = excluded.level`,
      [root, role, LEVELS[level]],
    );
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw mapError(e);
  } finally {
    c.release();
  }
}

/** Owner: keep at most `cap` history rows per memory on the team database (null: keep all), enforced by trigger. */
export async function setHistoryCap(pool: pg.Pool, cap: number | null): Promise<void> {
  try {
    if (cap === null) await pool.query(`DELETE FROM cairn.meta WHERE key = 'history_cap'`);
    else
      await pool.query(
        `INSERT INTO cairn.meta(key, value) VALUES ('history_cap', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(cap)],
      );
  } catch (e) {
    throw mapError(e);
  }
}

export function quoteIdent(s: string): string {
  return `"${s.replace(/"/g, '""')}"`;
}
