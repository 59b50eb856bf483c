/**
 * The team database schema: numbered migrations (run by `cairn team init`
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
 *  - history's actor must be the login role (or a system actor), by trigger;
 *  - the schema owner is not subject to RLS: developers connect with their own member roles.
 */
import type pg from 'pg';
import { CairnError } from '../../protocol/errors';
import { mapError } from './db';
import { ERASURE_MIGRATION } from './erasure';

export const PG_SCHEMA_VERSION = 4;
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

const MIGRATIONS: string[] = [
  // 1: everything
  `
  CREATE TABLE cairn.meta (key text PRIMARY KEY, value text NOT NULL);
  CREATE TABLE cairn.grants (
    root text NOT NULL, role name NOT NULL, level smallint NOT NULL CHECK (level BETWEEN 1 AND 3),
    PRIMARY KEY (root, role));
  CREATE TABLE cairn.namespaces (
    id text PRIMARY KEY, path text NOT NULL, created_at bigint NOT NULL,
    deleted_at bigint, deleted_by text, delete_reason text);
  CREATE UNIQUE INDEX cairn_race_ns_path ON cairn.namespaces(path) WHERE deleted_at IS NULL;
  CREATE TABLE cairn.memories (
    rowid bigserial UNIQUE, id text PRIMARY KEY, ns_id text NOT NULL REFERENCES cairn.namespaces(id),
    key text NOT NULL, value text NOT NULL, value_hash text NOT NULL, summary text,
    kind text NOT NULL, tags text NOT NULL, importance double precision NOT NULL, confidence double precision NOT NULL,
    source text NOT NULL, properties text NOT NULL, anchors text NOT NULL,
    created_at bigint NOT NULL, updated_at bigint NOT NULL, valid_from bigint, valid_to bigint, expires_at bigint,
    last_accessed_at bigint, access_count integer NOT NULL DEFAULT 0, version integer NOT NULL,
    status text NOT NULL, superseded_by text, deleted_at bigint, deleted_by text, delete_reason text,
    fts tsvector NOT NULL, embedding vector, embed_model text, embed_hash text,
    CONSTRAINT cairn_race_memory_key UNIQUE (ns_id, key));
  CREATE INDEX memories_fts ON cairn.memories USING gin (fts);
  CREATE INDEX memories_updated ON cairn.memories(updated_at DESC, rowid DESC);
  CREATE INDEX memories_expiry ON cairn.memories(expires_at) WHERE deleted_at IS NULL AND expires_at IS NOT NULL;
  CREATE INDEX memories_embed_model ON cairn.memories(embed_model);
  CREATE TABLE cairn.history (
    seq bigserial PRIMARY KEY, memory_id text NOT NULL, ns_id text NOT NULL, op text NOT NULL, actor text NOT NULL,
    reason text, at bigint NOT NULL, version integer NOT NULL, previous text, state text, detail text);
  CREATE INDEX history_memory ON cairn.history(memory_id, seq DESC);
  CREATE TABLE cairn.links (
    src text NOT NULL, dst text NOT NULL, type text NOT NULL, ns_id text NOT NULL, created_at bigint NOT NULL, actor text NOT NULL,
    PRIMARY KEY (src, dst, type));
  CREATE INDEX links_dst ON cairn.links(dst);
  CREATE TABLE cairn.rejected_values (
    ns_id text NOT NULL, value_hash text NOT NULL, memory_id text, actor text NOT NULL, at bigint NOT NULL,
    PRIMARY KEY (ns_id, value_hash));
  CREATE TABLE cairn.changes (
    position bigserial PRIMARY KEY, memory_id text, ns_id text, ns_path text, key text, op text NOT NULL, at bigint NOT NULL);

  CREATE FUNCTION cairn.allowed(p text, lvl int) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
      SELECT EXISTS (SELECT 1 FROM cairn.grants g
        WHERE g.level >= lvl AND (p = g.root OR left(p, length(g.root) + 1) = g.root || '.')
          AND pg_has_role(session_user, g.role, 'MEMBER'))
    $$;
  CREATE FUNCTION cairn.ns_ids(lvl int) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
      SELECT n.id FROM cairn.namespaces n WHERE cairn.allowed(n.path, lvl)
    $$;
  CREATE FUNCTION cairn.check_actor() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.actor <> session_user AND NEW.actor NOT LIKE 'system:%' THEN
        RAISE EXCEPTION 'history actor must be the database user % (got %)', session_user, NEW.actor USING ERRCODE = '42501';
      END IF;
      RETURN NEW;
    END $$;
  CREATE TRIGGER history_actor BEFORE INSERT ON cairn.history FOR EACH ROW EXECUTE FUNCTION cairn.check_actor();
  CREATE FUNCTION cairn.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- Only the position: every listener reads the change row itself, through row-level security,
      -- so a role never learns names in roots it was not granted.
      PERFORM pg_notify('cairn_changes', NEW.position::text);
      RETURN NEW;
    END $$;
  CREATE TRIGGER changes_notify AFTER INSERT ON cairn.changes FOR EACH ROW EXECUTE FUNCTION cairn.notify_change();

  CREATE POLICY ns_read ON cairn.namespaces FOR SELECT USING (cairn.allowed(path, 1));
  CREATE POLICY ns_insert ON cairn.namespaces FOR INSERT WITH CHECK (cairn.allowed(path, 2));
  CREATE POLICY ns_admin ON cairn.namespaces FOR UPDATE USING (cairn.allowed(path, 3)) WITH CHECK (cairn.allowed(path, 3));
  CREATE POLICY m_read ON cairn.memories FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY m_insert ON cairn.memories FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY m_update ON cairn.memories FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(1))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY m_purge ON cairn.memories FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(3)));
  CREATE POLICY h_read ON cairn.history FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY h_insert ON cairn.history FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY h_purge ON cairn.history FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(3)));
  CREATE POLICY l_read ON cairn.links FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY l_insert ON cairn.links FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY l_delete ON cairn.links FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_read ON cairn.rejected_values FOR SELECT USING (ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY r_insert ON cairn.rejected_values FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_update ON cairn.rejected_values FOR UPDATE USING (ns_id IN (SELECT cairn.ns_ids(2))) WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY r_delete ON cairn.rejected_values FOR DELETE USING (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY c_read ON cairn.changes FOR SELECT USING (ns_id IS NULL OR ns_id IN (SELECT cairn.ns_ids(1)));
  CREATE POLICY c_insert ON cairn.changes FOR INSERT WITH CHECK (ns_id IN (SELECT cairn.ns_ids(2)));
  CREATE POLICY meta_read ON cairn.meta FOR SELECT USING (true);
  CREATE POLICY grants_own ON cairn.grants FOR SELECT USING (pg_has_role(session_user, role, 'MEMBER'));
  `,
  // 2: history cap. meta 'history_cap' (set by the schema owner: `cairn team history-cap N|off`) keeps at most N
  // history rows per memory; a trigger trims after every insert, as the owner, so every writer's daemon obeys it
  // whatever its grants (members may not delete history themselves).
  `
  CREATE FUNCTION cairn.cap_history() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
    DECLARE cap int;
    BEGIN
      SELECT value::int INTO cap FROM cairn.meta WHERE key = 'history_cap';
      IF cap IS NOT NULL THEN
        DELETE FROM cairn.history h WHERE h.memory_id = NEW.memory_id
          AND h.seq < (SELECT min(seq) FROM (SELECT seq FROM cairn.history WHERE memory_id = NEW.memory_id ORDER BY seq DESC LIMIT cap) keep);
      END IF;
      RETURN NULL;
    END $$;
  CREATE TRIGGER history_cap AFTER INSERT ON cairn.history FOR EACH ROW EXECUTE FUNCTION cairn.cap_history();
  `,
  // 3: idempotency keys (docs/protocol.md#idempotency), as in the SQLite store: key -> recorded result, written in the
  // write's own transaction. Keys belong to the login role that sent them (row-level security: a role sees and
  // replays only its own). A purged memory's records are blanked by trigger, as the owner (whatever role purged it):
  // they hold its text; the key stays taken, so a retry with it is refused instead of writing the memory again.
  `
  CREATE TABLE cairn.idempotency_keys (
    role name NOT NULL DEFAULT session_user, key text NOT NULL, method text NOT NULL, fingerprint text NOT NULL,
    result text NOT NULL, memory_id text, at bigint NOT NULL, PRIMARY KEY (role, key));
  CREATE INDEX idempotency_keys_at ON cairn.idempotency_keys(role, at);
  CREATE INDEX idempotency_keys_memory ON cairn.idempotency_keys(memory_id);
  CREATE POLICY idem_own ON cairn.idempotency_keys FOR ALL USING (role = session_user) WITH CHECK (role = session_user);
  CREATE FUNCTION cairn.blank_idempotency() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = cairn, pg_catalog AS $$
    BEGIN
      UPDATE cairn.idempotency_keys SET result = '{"erased":true}', fingerprint = 'erased', memory_id = NULL
        WHERE memory_id = OLD.id;
      RETURN NULL;
    END $$;
  CREATE TRIGGER memories_blank_idempotency AFTER DELETE ON cairn.memories FOR EACH ROW EXECUTE FUNCTION cairn.blank_idempotency();
  `,
  // 4: erasure with signed receipts (store/pg/erasure.ts): the team's signing key, readable by the owner only, and the
  // SECURITY DEFINER functions cairn.erase() and cairn.verify_receipt().
  ERASURE_MIGRATION,
];

async function ensureMemberRole(c: pg.ClientBase): Promise<void> {
  await c.query(`DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${MEMBER_ROLE}') THEN CREATE ROLE ${MEMBER_ROLE} NOLOGIN; END IF;
  END $$`);
}

/** Privileges and RLS on every table (re-asserted by every migrate, so a restored dump cannot lose them). */
async function assertGrants(c: pg.ClientBase): Promise<void> {
  await c.query(`GRANT USAGE ON SCHEMA cairn TO ${MEMBER_ROLE}`);
  for (const t of TABLES) {
    // Not FORCEd: the owner (who runs `cairn team init`) administers everything, and the SECURITY DEFINER
    // functions the policies call read grants and namespaces as the owner.
    await c.query(`ALTER TABLE cairn.${t} ENABLE ROW LEVEL SECURITY`);
  }
  await c.query(
    `GRANT SELECT, INSERT, UPDATE, DELETE ON cairn.memories, cairn.history, cairn.links, cairn.rejected_values, cairn.namespaces, cairn.changes, cairn.idempotency_keys TO ${MEMBER_ROLE}`,
  );
  await c.query(`GRANT SELECT ON cairn.meta, cairn.grants TO ${MEMBER_ROLE}`);
  await c.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA cairn TO ${MEMBER_ROLE}`);
  await c.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA cairn TO ${MEMBER_ROLE}`);
}

/**
 * Create or upgrade the schema (needs a role that may create the extension and
 * roles, e.g. the database owner). Returns the versions before and after.
 */
export async function migrate(pool: pg.Pool): Promise<{ from: number; to: number }> {
  const c = await pool.connect().catch((e) => {
    throw mapError(e);
  });
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
    const from = has ? Number((await c.query(`SELECT value FROM cairn.meta WHERE key = 'schema_version'`)).rows[0]?.value ?? 0) : 0;
    if (from > PG_SCHEMA_VERSION)
      throw new CairnError(
        'InvalidState',
        `the team database has schema version ${from}; this Cairn knows up to ${PG_SCHEMA_VERSION} (upgrade Cairn)`,
      );
    await ensureMemberRole(c);
    for (let v = from; v < PG_SCHEMA_VERSION; v++) await c.query(MIGRATIONS[v]);
    await c.query(
      `INSERT INTO cairn.meta(key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(PG_SCHEMA_VERSION)],
    );
    await assertGrants(c);
    await c.query('COMMIT');
    return { from, to: PG_SCHEMA_VERSION };
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw mapError(e);
  } finally {
    c.release();
  }
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
