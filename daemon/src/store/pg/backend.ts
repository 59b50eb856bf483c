/**
 * The team store: the same memory semantics as the SQLite Store (store.ts),
 * on PostgreSQL + pgvector. An upsert is one read and one guarded statement
 * (fastUpsert; a batch: one of each per run of items, bulkInTx) that writes the
 * row, history and change-log row together, or nothing when another writer
 * moved the row in between (then it is decided again); other writes are one
 * transaction that locks the memory row (SELECT ... FOR UPDATE). Either way
 * versions stay monotonic and `ifVersion` conflicts are exact with many daemons
 * writing at once, and the change-log trigger NOTIFYs every listening daemon on
 * commit.
 *
 * Rows are visible only as row-level security allows for the login role;
 * history's actor is that role (the claimed actor is kept as detail.onBehalfOf).
 */
import { EventEmitter } from 'node:events';
import { CairnError } from '../../protocol/errors';
import { isUnder, namespaceProblem } from '../../protocol/namespace';
import {
  type Anchor,
  type DidChangeParams,
  type GetParams,
  type HistoryEntry,
  type HistoryParams,
  type HistoryResult,
  type Link,
  type LinkParams,
  type LinkResult,
  type ListParams,
  type ListResult,
  type Memory,
  type NamespaceInfo,
  type NeighborsParams,
  type NeighborsResult,
  type PurgeResult,
  type Scope,
  type SweepResult,
  type UnlinkResult,
  type UpsertBatchResult,
  type UpsertParams,
  type UpsertResult,
  type WriteResult,
} from '../../protocol/types';
import { normalizedValueHash, sha256, uuidv7 } from '../../text/hash';
import { identifierWords } from '../../text/identifiers';
import { pathInScope } from '../scope';
import { iso, isoReq, pgHistoryEntry, toMemory, type MemoryRow, type PgHistoryRow } from '../rows';
import { isConnectionError, mapError, pg, poolConfig, query, redactUrl, transaction, type PgOptions } from './db';
import { checkSchema } from './schema';
import { pgGet } from './get';
import { explainOpenFailure } from './access';
import { IdempotencyWindow, fingerprint, replayOf, resultMemoryId } from '../idempotency';
import {
  contentColumns,
  mergeContent,
  refuseBadSupersede,
  refuseDeleted,
  refuseRejected,
  refuseStaleVersion,
  sameContent,
  summaryOf,
  validateContent,
  type NextContent,
} from '../write-rules';
import { andSql, filterSql, MEMORY_COLUMNS, Params, scopeSql, visibilitySql } from './sql';

type C = pg.PoolClient;

export interface Target {
  id?: string;
  namespace?: string;
  key?: string;
  actor?: string;
  reason?: string;
  /** When given, the memory must lie in this scope (by id or by key), else NotFound. */
  scope?: Scope;
  /** Applied at most once per key (keyed()). */
  idempotencyKey?: string;
}

/** What the team store needs of an embedding model (the daemon's Embedder fits). */
export interface PgEmbedder {
  readonly info: { model: string; dimension: number };
  embed(texts: string[], opts?: { priority?: boolean }): Promise<Float32Array[]>;
}

interface WritePlan {
  op: HistoryEntry['op'];
  detail: Record<string, unknown>;
  next: NextContent;
  warn: { warnings?: NonNullable<UpsertResult['warnings']> };
  /** The stored row already holds exactly this: nothing is written. */
  unchanged: boolean;
  summary: string | null;
}

/** A fast write lost a race with another writer (the row moved between its read and its write): read again. */
const LOST_RACE = Symbol('lost race');

/** Raised inside a batch transaction when the fast path hit a database error: the batch reruns with savepoints. */
class NeedsSavepoints extends Error {}

export function embeddingText(m: { key: string; value: string; tags: string[] }): string {
  return `${m.key.replace(/[._:/-]+/g, ' ')}\n${m.tags.join(' ')}\n${m.value}`;
}

export function vectorLiteral(v: Float32Array | number[]): string {
  return `[${Array.from(v, (x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;
}

export class PgBackend {
  readonly pool: pg.Pool;
  readonly url: string;
  private events = new EventEmitter();
  private listener: pg.Client | null = null;
  private listenTimer: NodeJS.Timeout | null = null;
  private closed = false;
  embedder: PgEmbedder | null = null;
  /** Injected clock, so tests can move time. */
  now: () => number = () => Date.now();
  /** The login role (history's actor), known after open(). */
  user = '';
  schemaVersion = 0;
  /**
   * How upserts reach the database. `fast` (default): one read, then one guarded statement that
   * writes the row (with its vector), its history and its change-log row, retried when another
   * writer moved the row in between: two round trips, no transaction held open. `locked`: the
   * transaction with row locks (BEGIN, SELECT ... FOR UPDATE, ..., COMMIT; about ten round trips),
   * still used for supersedes and after repeated lost races; kept selectable for bench/team.ts.
   */
  writePath: 'fast' | 'locked' = 'fast';

  constructor(readonly opts: PgOptions & { log?: (m: string) => void }) {
    this.url = redactUrl(opts.url);
    this.pool = new pg.Pool(poolConfig(opts));
    this.pool.on('error', (e) => this.log(`team database connection lost: ${mapError(e).message}`));
  }

  private log(m: string): void {
    this.opts.log?.(m);
  }

  /** Check the schema's invariants and learn who we are. Throws Unavailable when the server can't be reached. */
  async open(): Promise<this> {
    // A role that cannot use the schema is told which grant it lacks (store/pg/access.ts), not "not set up".
    this.schemaVersion = await checkSchema(this.pool).catch(async (e: unknown) => {
      throw await explainOpenFailure(this.pool, e);
    });
    this.user = (await query<{ u: string }>(this.pool, 'SELECT session_user AS u'))[0].u;
    return this;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.listenTimer) clearTimeout(this.listenTimer);
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }

  // -------------------------------------------------------------------------
  // live changes: LISTEN cairn_changes, reconnecting by itself
  // -------------------------------------------------------------------------
  onChange(fn: (c: DidChangeParams) => void): () => void {
    this.events.on('change', fn);
    if (!this.listener && !this.listenTimer) void this.listen();
    return () => this.events.off('change', fn);
  }

  /** Resolves once LISTEN is active (tests wait on it). */
  listening(): Promise<void> {
    if (this.listener) return Promise.resolve();
    return new Promise((r) => this.events.once('listening', r));
  }

  private async listen(delay = 0): Promise<void> {
    if (this.closed) return;
    this.listenTimer = null;
    const client = new pg.Client(poolConfig(this.opts));
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('LISTEN cairn_changes');
    } catch (e) {
      await client.end().catch(() => undefined);
      if (!this.closed) this.listenTimer = setTimeout(() => void this.listen(Math.min(5000, delay * 2 + 200)), delay);
      return;
    }
    if (this.closed) return void client.end().catch(() => undefined);
    this.listener = client;
    client.on('notification', (n) => {
      const position = Number(n.payload);
      if (Number.isSafeInteger(position)) void this.announce(position);
    });
    client.on('end', () => {
      if (this.listener === client) this.listener = null;
      if (!this.closed) {
        this.log('team change feed disconnected; reconnecting');
        this.listenTimer = setTimeout(() => void this.listen(200), 200);
      }
    });
    this.events.emit('listening');
  }

  /** Read a notified change through row-level security; changes in roots this role can't read stay unheard. */
  private async announce(position: number): Promise<void> {
    try {
      const r = (await this.pool.query(`SELECT position, memory_id, ns_path, key, op FROM changes WHERE position = $1`, [position]))
        .rows[0];
      if (r)
        this.events.emit('change', {
          position: r.position,
          id: r.memory_id,
          namespace: r.ns_path,
          key: r.key,
          op: r.op,
        } satisfies DidChangeParams);
    } catch {
      /* the database went away between the notification and the read: the change is in the log */
    }
  }

  // -------------------------------------------------------------------------
  // helpers
  // -------------------------------------------------------------------------
  private checkNamespace(path: string, field = 'namespace'): void {
    const p = namespaceProblem(path);
    if (p) throw new CairnError('InvalidNamespace', p, { field });
  }

  private async rowBy(c: C | pg.Pool, where: (q: Params) => string, lock = false): Promise<MemoryRow | undefined> {
    const q = new Params();
    const w = where(q);
    const rows = await c.query(
      `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${w}${lock ? ' FOR UPDATE OF m' : ''}`,
      q.values,
    );
    return rows.rows[0] as MemoryRow | undefined;
  }

  private rowByKey(c: C, namespace: string, key: string, lock = false) {
    return this.rowBy(c, (q) => `n.path = ${q.p(namespace)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, lock);
  }

  /**
   * The target row, locked for a write: SELECT ... FOR UPDATE admits only rows the role may write (the UPDATE policy),
   * so a row it can read but not write is Forbidden, and one it cannot read is NotFound.
   */
  private async resolveTarget(c: C, t: Target, lock = true): Promise<MemoryRow> {
    try {
      return await this.findTarget(c, t, lock);
    } catch (e) {
      if (!lock || !(e instanceof CairnError) || e.codeName !== 'NotFound') throw e;
      const row = await this.findTarget(c, t, false);
      throw new CairnError('Forbidden', `your database role may not change ${row.ns_path}`, { field: t.id !== undefined ? 'id' : 'key' });
    }
  }

  private async findTarget(c: C, t: Target, lock: boolean): Promise<MemoryRow> {
    let row: MemoryRow | undefined;
    if (t.id !== undefined) {
      if (t.namespace !== undefined || t.key !== undefined)
        throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
      row = await this.rowBy(c, (q) => andSql(`m.id = ${q.p(t.id)} AND n.deleted_at IS NULL`, scopeSql(q, t.scope)), lock);
      if (!row) throw new CairnError('NotFound', `no memory ${t.id}${t.scope ? ' in scope' : ''}`, { field: 'id' });
    } else {
      if (t.namespace === undefined || t.key === undefined)
        throw new CairnError('InvalidParams', 'id or namespace+key is required', {
          field: t.namespace === undefined ? 'namespace' : 'key',
        });
      this.checkNamespace(t.namespace);
      const ns = t.namespace;
      const key = t.key;
      row = await this.rowBy(
        c,
        (q) => andSql(`n.path = ${q.p(ns)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, scopeSql(q, t.scope)),
        lock,
      );
      if (!row) throw new CairnError('NotFound', `no memory ${t.namespace}/${t.key}${t.scope ? ' in scope' : ''}`, { field: 'key' });
    }
    return row;
  }

  private async refetch(c: C, rowid: number): Promise<MemoryRow> {
    return (await this.rowBy(c, (q) => `m.rowid = ${q.p(rowid)}`))!;
  }

  private async ensureNamespace(c: C | pg.Pool, path: string): Promise<string> {
    const id = uuidv7(this.now());
    await c.query(
      `INSERT INTO namespaces(id, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (path) WHERE deleted_at IS NULL DO NOTHING`,
      [id, path, this.now()],
    );
    const r = await c.query(`SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL`, [path]);
    if (!r.rows[0]) throw new CairnError('Forbidden', `your database role may not read namespace ${path}`, { field: 'namespace' });
    return r.rows[0].id as string;
  }

  /**
   * The history and change-log rows of a write just made to memory `memoryId` in this transaction, written by the
   * database's own `cairn.record_write` (members may not insert them): it takes namespace, version, time and the new
   * state from the row, records the database user as the actor (a different claimed actor as detail.onBehalfOf) and
   * refuses a record that does not match the row. Returns the change-log position.
   */
  private async record(
    c: C,
    memoryId: string,
    op: HistoryEntry['op'],
    claimed: string | undefined,
    reason: string | null | undefined,
    previous: Memory | null,
    detail?: Record<string, unknown>,
  ): Promise<number> {
    this.requireUser();
    const r = await c.query(`SELECT cairn.record_write($1, $2, $3, $4, $5, $6) AS position`, [
      memoryId,
      op,
      reason ?? null,
      claimed ?? null,
      previous ? JSON.stringify(previous) : null,
      detail && Object.keys(detail).length ? JSON.stringify(detail) : null,
    ]);
    return r.rows[0].position as number;
  }

  /** A change-log row without history (forget again, link, unlink), by `cairn.record_change`. */
  private async recordChange(c: C, op: 'forget' | 'link' | 'unlink', memoryId: string): Promise<number> {
    return (await c.query(`SELECT cairn.record_change($1, $2) AS position`, [memoryId, op])).rows[0].position as number;
  }

  /** The change-log row of a namespace rename or delete at `path` (namespace `nsId` is it or under it). */
  private async recordNamespaceChange(c: C, op: 'namespace_rename' | 'namespace_delete', nsId: string, path: string): Promise<number> {
    return (await c.query(`SELECT cairn.record_namespace_change($1, $2, $3) AS position`, [nsId, path, op])).rows[0].position as number;
  }

  /**
   * The actor a row records (deleted_by, a link's or a rejection's actor): always the login role. The database
   * checks it (check_actor); a claimed actor is kept in history as detail.onBehalfOf (cairn.record_write).
   */
  private requireUser(): string {
    // Before open() has checked the schema and learned the login role, no write may go through (it would have no actor).
    if (!this.user)
      throw new CairnError('Unavailable', 'the team database is still being opened; try again in a moment', { store: 'team' });
    return this.user;
  }

  private tx<T>(fn: (c: C) => Promise<T>): Promise<T> {
    return transaction(this.pool, fn);
  }

  /**
   * A write in one transaction, applied at most once per idempotency key of the login role (docs/protocol.md#idempotency,
   * the same rules as the SQLite store's store/idempotency.ts): the key -> result record commits with the write; the
   * same key again with the same request answers the recorded result (`replayed: true`) and writes nothing; with
   * another request, or after the memory was purged, it is InvalidState. Without a key, just the transaction.
   */
  private keyed<R extends object>(
    method: string,
    params: { idempotencyKey?: string },
    run: (c: C) => Promise<R>,
  ): Promise<R | (R & { replayed: true })> {
    const key = params.idempotencyKey;
    if (key === undefined) return this.tx(run);
    const fp = fingerprint(method, params as Record<string, unknown>);
    return this.tx(async (c) => {
      // Two retries of one key at once: the second waits for the first's commit, then replays it.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`cairn.idempotency:${key}`]);
      const seen = (
        await c.query<{ method: string; fingerprint: string; result: string }>(
          'SELECT method, fingerprint, result FROM idempotency_keys WHERE role = session_user AND key = $1',
          [key],
        )
      ).rows[0];
      if (seen) return replayOf<R>(key, method, fp, seen);
      const r = await run(c);
      const now = this.now();
      await c.query('INSERT INTO idempotency_keys(key, method, fingerprint, result, memory_id, at) VALUES ($1, $2, $3, $4, $5, $6)', [
        key,
        method,
        fp,
        JSON.stringify(r),
        resultMemoryId(r),
        now,
      ]);
      await c.query(
        `DELETE FROM idempotency_keys WHERE role = session_user AND (at < $1 OR key IN (
           SELECT key FROM idempotency_keys WHERE role = session_user ORDER BY at DESC, key OFFSET $2))`,
        [now - IdempotencyWindow.maxAgeMs, IdempotencyWindow.maxKeys],
      );
      return r;
    });
  }

  // -------------------------------------------------------------------------
  // namespaces
  // -------------------------------------------------------------------------
  async listNamespaces(root?: string): Promise<NamespaceInfo[]> {
    if (root !== undefined) this.checkNamespace(root, 'root');
    const q = new Params();
    const pred = root !== undefined ? scopeSql(q, { root, includeUser: false }, 'n.path') : 'true';
    const vis = visibilitySql(q, undefined, this.now());
    const rows = await query(
      this.pool,
      `SELECT n.id, n.path, n.created_at,
        (SELECT count(*) FROM memories m WHERE m.ns_id = n.id AND ${vis}) AS cnt
      FROM namespaces n WHERE n.deleted_at IS NULL AND ${pred} ORDER BY n.path`,
      q.values,
    );
    return rows.map((r) => ({ id: r.id, path: r.path, createdAt: isoReq(r.created_at), memoryCount: Number(r.cnt) }));
  }

  async renameNamespace(from: string, to: string, actor?: string): Promise<{ renamed: number; position: number }> {
    this.checkNamespace(from, 'from');
    this.checkNamespace(to, 'to');
    if (from === to) throw new CairnError('InvalidState', 'from and to are the same namespace', { field: 'to' });
    if (isUnder(to, from)) throw new CairnError('InvalidState', `cannot move ${from} inside itself (${to})`, { field: 'to' });
    void actor;
    return this.tx(async (c) => {
      const q = new Params();
      const sub = scopeSql(q, { root: from, includeUser: false }, 'path');
      const rows = (await c.query(`SELECT id, path FROM namespaces WHERE deleted_at IS NULL AND ${sub} ORDER BY path`, q.values)).rows as {
        id: string;
        path: string;
      }[];
      if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${from}`, { field: 'from' });
      // Locking needs admin (the UPDATE policy): fewer rows locked than read means the role may not rename them.
      const locked = (await c.query(`SELECT id FROM namespaces WHERE id = ANY($1::text[]) FOR UPDATE`, [rows.map((r) => r.id)])).rowCount;
      if (locked !== rows.length) throw new CairnError('Forbidden', `your database role may not administer ${from}`, { field: 'from' });
      for (const r of rows) {
        const target = to + r.path.slice(from.length);
        const problem = namespaceProblem(target);
        if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'to' });
        const clash = (await c.query(`SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL`, [target])).rows[0];
        if (clash && !rows.some((x) => x.id === clash.id))
          throw new CairnError('InvalidState', `namespace ${target} already exists`, { field: 'to' });
      }
      // Two steps so intermediate states never collide on the unique live path; the parked path stays under
      // its own root, so row-level security judges it like the original.
      for (const r of rows) await c.query(`UPDATE namespaces SET path = $1 WHERE id = $2`, [`${r.path}.\u0001${r.id}`, r.id]);
      for (const r of rows) {
        const n = await c.query(`UPDATE namespaces SET path = $1 WHERE id = $2`, [to + r.path.slice(from.length), r.id]);
        if (n.rowCount !== 1) throw new CairnError('Forbidden', `your database role may not administer ${to}`, { field: 'to' });
      }
      const position = await this.recordNamespaceChange(c, 'namespace_rename', rows[0].id, to);
      return { renamed: rows.length, position };
    });
  }

  async deleteNamespace(path: string, actor?: string, reason?: string): Promise<{ deleted: number; memories: number; position: number }> {
    this.checkNamespace(path, 'path');
    return this.tx(async (c) => {
      const q = new Params();
      const sub = scopeSql(q, { root: path, includeUser: false }, 'path');
      const rows = (await c.query(`SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${sub}`, q.values)).rows as { id: string }[];
      if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${path}`, { field: 'path' });
      const ids = rows.map((r) => r.id);
      const memories = Number(
        (await c.query(`SELECT count(*) AS c FROM memories WHERE ns_id = ANY($1::text[]) AND deleted_at IS NULL`, [ids])).rows[0].c,
      );
      const u = await c.query(`UPDATE namespaces SET deleted_at = $1, deleted_by = $2, delete_reason = $3 WHERE id = ANY($4::text[])`, [
        this.now(),
        this.requireUser(),
        reason ?? null,
        ids,
      ]);
      if (u.rowCount !== ids.length) throw new CairnError('Forbidden', `your database role may not administer ${path}`, { field: 'path' });
      const position = await this.recordNamespaceChange(c, 'namespace_delete', ids[0], path);
      return { deleted: ids.length, memories, position };
    });
  }

  // -------------------------------------------------------------------------
  // reading
  // -------------------------------------------------------------------------
  private isExpired(r: MemoryRow, now: number): boolean {
    return r.expires_at !== null && r.expires_at <= now;
  }

  get(p: GetParams): Promise<Memory> {
    return pgGet(this.pool, p, this.now()); // one round trip (store/pg/get.ts)
  }

  async list(p: ListParams, extra?: (q: Params) => string | null): Promise<ListResult> {
    const limit = p.limit ?? 100;
    const q = new Params();
    let cursor: string | null = null;
    if (p.cursor !== undefined) {
      const m = /^(\d+):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
      if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
      const u = q.p(Number(m[1]));
      cursor = `(m.updated_at < ${u} OR (m.updated_at = ${u} AND m.rowid < ${q.p(Number(m[2]))}))`;
    }
    const where = andSql(visibilitySql(q, p.include, this.now()), scopeSql(q, p.scope), filterSql(q, p.filter), cursor, extra?.(q));
    const rows = await query<MemoryRow>(
      this.pool,
      `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where} ORDER BY m.updated_at DESC, m.rowid DESC LIMIT ${q.p(limit + 1)}`,
      q.values,
    );
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toMemory),
      nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.rowid}`).toString('base64url') : null,
    };
  }

  /** Visible memories with an anchor on one of `paths`, each with that anchor (hovers; same order as the SQLite store). */
  async anchoredAt(paths: string[], scope: Scope | undefined): Promise<{ memory: Memory; anchor: Anchor }[]> {
    if (paths.length === 0) return [];
    const q = new Params();
    const where = andSql(`a.v->>'path' = ANY(${q.p(paths)}::text[])`, visibilitySql(q, undefined, this.now()), scopeSql(q, scope));
    const rows = await query(
      this.pool,
      `SELECT ${MEMORY_COLUMNS}, (a.idx - 1)::int AS anchor_idx FROM memories m JOIN namespaces n ON n.id = m.ns_id
        CROSS JOIN LATERAL jsonb_array_elements(m.anchors::jsonb) WITH ORDINALITY AS a(v, idx)
        WHERE ${where} ORDER BY m.importance DESC, m.updated_at DESC, m.id LIMIT 200`,
      q.values,
    );
    return rows
      .map((r) => {
        const memory = toMemory(r as MemoryRow);
        return { memory, anchor: memory.anchors[r.anchor_idx] };
      })
      .filter((x) => x.anchor !== undefined);
  }

  async byRowids(rowids: number[]): Promise<Map<number, MemoryRow>> {
    const out = new Map<number, MemoryRow>();
    if (rowids.length === 0) return out;
    const rows = await query<MemoryRow>(
      this.pool,
      `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ANY($1::bigint[])`,
      [rowids],
    );
    for (const r of rows) out.set(r.rowid, r);
    return out;
  }

  async history(p: HistoryParams): Promise<HistoryResult> {
    let memoryId: string;
    if (p.id !== undefined && p.scope === undefined) memoryId = p.id;
    else if (p.id !== undefined) {
      const id = p.id;
      const row = await this.rowBy(this.pool, (q) => andSql(`m.id = ${q.p(id)} AND n.deleted_at IS NULL`, scopeSql(q, p.scope))).catch(
        rethrow,
      );
      if (!row) throw new CairnError('NotFound', `no memory ${p.id} in scope`, { field: 'id' });
      memoryId = row.id;
    } else {
      if (p.namespace === undefined || p.key === undefined)
        throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: 'id' });
      this.checkNamespace(p.namespace);
      const ns = p.namespace;
      const key = p.key;
      const row = await this.rowBy(this.pool, (q) =>
        andSql(`n.path = ${q.p(ns)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, scopeSql(q, p.scope)),
      ).catch(rethrow);
      if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
      memoryId = row.id;
    }
    const rows = await query(
      this.pool,
      `SELECT *, (SELECT value FROM meta WHERE key = 'history_cap') AS cap FROM history WHERE memory_id = $1 ORDER BY seq DESC LIMIT $2`,
      [memoryId, p.limit ?? 100],
    );
    if (rows.length === 0) throw new CairnError('NotFound', `no history for ${memoryId}`, { field: 'id' });
    return {
      entries: rows.map((r) => pgHistoryEntry(r as PgHistoryRow)),
      capped: rows[0].cap !== null,
    };
  }

  async position(): Promise<number> {
    const r = await query<{ p: number | null }>(this.pool, 'SELECT max(position) AS p FROM changes');
    return r[0].p ?? 0;
  }

  // -------------------------------------------------------------------------
  // writing
  // -------------------------------------------------------------------------
  async upsert(p: UpsertParams): Promise<UpsertResult> {
    if (p.idempotencyKey !== undefined) {
      // Keyed: the locked path, in one transaction with the key's record.
      const r = await this.keyed('memory/upsert', p, (c) => this.upsertInTx(c, p));
      if (r.changed && !('replayed' in r)) await this.embedRows([r.memory]);
      return r;
    }
    if (this.writePath === 'fast' && p.supersedes === undefined) {
      const vectors = new Map<string, Float32Array | null>();
      for (let i = 0; i < 4; i++) {
        const r = await this.fastUpsert(this.pool, p, vectors).catch(rethrow);
        if (r !== LOST_RACE) return r;
      }
      // Contended: take the row lock instead of racing again.
    }
    const r = await this.tx((c) => this.upsertInTx(c, p));
    if (r.changed) await this.embedRows([r.memory]);
    return r;
  }

  /**
   * One upsert in two round trips: (1) read the stored row, the namespace and a rejected-value
   * record in one statement; decide in TypeScript exactly as upsertInTx does;
   * (2) one statement whose data-modifying CTEs update (guarded by the version read) or insert
   * (guarded by the unique key) the row, and, only if that row was written, append its history
   * and change-log rows. A single statement is atomic, so history, change log and row are never
   * apart; a guard that matched nothing means another writer got there first (LOST_RACE). A first
   * write into a new namespace costs one more statement (creating it). `vectors` (when given)
   * embeds before writing, so the vector lands in the same statement; its cache spares re-embedding
   * the same text on a retry.
   */
  private async fastUpsert(
    db: C | pg.Pool,
    p: UpsertParams,
    vectors: Map<string, Float32Array | null> | null,
  ): Promise<UpsertResult | typeof LOST_RACE> {
    this.validateContent(p);
    const now = this.now();
    const claimed = p.actor ?? p.source;
    const valueHash = normalizedValueHash(p.value);
    const read = (
      await db.query(
        `SELECT (SELECT row_to_json(x) FROM (SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = $1 AND n.deleted_at IS NULL AND m.key = $2) x) AS existing,
           (SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL) AS ns_id,
           (SELECT json_build_object('actor', r.actor, 'at', r.at) FROM rejected_values r JOIN namespaces n ON n.id = r.ns_id WHERE n.path = $1 AND n.deleted_at IS NULL AND r.value_hash = $3) AS rejected`,
        [p.namespace, p.key, valueHash],
      )
    ).rows[0] as { existing: MemoryRow | null; ns_id: string | null; rejected: { actor: string; at: number } | null };
    const existing = read.existing ?? undefined;
    const w = this.plan(p, existing, read.rejected ?? undefined, undefined);
    // (The position is read only for a write that changes nothing: under row-level security max(position) scans the log.)
    if (w.unchanged) return { memory: toMemory(existing!), created: false, position: await this.positionIn(db), changed: false, ...w.warn };
    const nsId = existing?.ns_id ?? read.ns_id ?? (await this.ensureNamespace(db, p.namespace));
    const version = existing ? existing.version + 1 : 1;
    const id = existing?.id ?? uuidv7(now);
    const state = this.stateRow(p, w, existing, nsId, id, version, now);
    const memory = toMemory(state);
    let vec: { v: string; model: string; hash: string } | null = null;
    const e = this.embedder;
    if (vectors && e) {
      const text = embeddingText(memory);
      let v = vectors.get(text);
      if (v === undefined) {
        try {
          v = (await e.embed([text], { priority: true }))[0];
        } catch (err) {
          v = null; // written without a vector; full-text finds it and backfill() embeds it later
          this.log(`team store: embedding before write failed: ${(err as Error).message}`);
        }
        vectors.set(text, v);
      }
      if (v && !v.every((x) => x === 0)) vec = { v: vectorLiteral(v), model: e.info.model, hash: sha256(e.info.model + '\u0000' + text) };
    }
    this.requireUser();
    const FTS = `setweight(to_tsvector('english', $15), 'A') || setweight(to_tsvector('english', $16), 'B') || setweight(to_tsvector('english', $17), 'C') || setweight(to_tsvector('english', $18), 'D')`;
    const values = [
      ...this.writeValues(p, w),
      now,
      version,
      vec?.v ?? null,
      vec?.model ?? null,
      vec?.hash ?? null,
      id,
      nsId,
      p.key,
      existing?.rowid ?? null,
      existing?.version ?? null,
    ];
    // $19 now, $20 version, $21-$23 vector, $24 id, $25 ns id, $26 key, $27 rowid, $28 version read; history and change log from $29
    // (written by cairn.record_write, which reads the row this statement wrote: a volatile function sees it).
    const tail = ` SELECT cairn.record_write(w.id, $29, $30, $31, $32, $33) AS position FROM w`;
    values.push(
      w.op,
      p.reason ?? null,
      claimed ?? null,
      existing ? JSON.stringify(toMemory(existing)) : null,
      Object.keys(w.detail).length ? JSON.stringify(w.detail) : null,
      p.namespace,
    );
    const live = `EXISTS (SELECT 1 FROM namespaces WHERE id = $25 AND path = $34 AND deleted_at IS NULL)`;
    const sql = existing
      ? `WITH w AS (UPDATE memories SET value = $1, value_hash = $2, summary = $3, kind = $4, tags = $5, importance = $6, confidence = $7, source = $8, properties = $9, anchors = $10,
             valid_from = $11, valid_to = $12, expires_at = $13, status = $14, fts = ${FTS}, updated_at = $19, version = $20, superseded_by = NULL,
             deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = $21::vector, embed_model = $22, embed_hash = $23
           WHERE rowid = $27 AND version = $28 AND id = $24 AND ns_id = $25 AND key = $26 AND ${live} RETURNING id, ns_id)${tail}`
      : `WITH w AS (INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
             fts, created_at, updated_at, version, embedding, embed_model, embed_hash, id, ns_id, key)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${FTS}, $19, $19, $20, $21::vector, $22, $23, $24, $25, $26
           WHERE $27::bigint IS NULL AND $28::int IS NULL AND ${live}
           ON CONFLICT ON CONSTRAINT cairn_race_memory_key DO NOTHING RETURNING id, ns_id)${tail}`;
    const r = (await db.query(sql, values)).rows[0] as { position: number } | undefined;
    if (!r) return LOST_RACE;
    if (vectors === null && this.embedder) this.pendingEmbeds?.push(memory);
    return { memory, created: !existing, position: r.position, changed: true, ...w.warn };
  }

  /** The row a planned write leaves (what a re-read would return), built without reading it back. */
  private stateRow(
    p: UpsertParams,
    w: WritePlan,
    existing: MemoryRow | undefined,
    nsId: string,
    id: string,
    version: number,
    now: number,
  ): MemoryRow {
    const n = w.next;
    return {
      rowid: existing?.rowid ?? 0,
      id,
      ns_id: nsId,
      ns_path: p.namespace,
      key: p.key,
      value: n.value,
      value_hash: normalizedValueHash(p.value),
      summary: w.summary,
      kind: n.kind,
      tags: JSON.stringify(n.tags),
      importance: n.importance,
      confidence: n.confidence,
      source: n.source,
      properties: JSON.stringify(n.properties),
      anchors: JSON.stringify(n.anchors),
      created_at: existing?.created_at ?? now,
      updated_at: now,
      valid_from: n.validFrom,
      valid_to: n.validTo,
      expires_at: n.expiresAt,
      last_accessed_at: existing?.last_accessed_at ?? null,
      access_count: existing?.access_count ?? 0,
      version,
      status: n.status,
      superseded_by: null,
      deleted_at: null,
      deleted_by: null,
      delete_reason: null,
    };
  }

  /**
   * A run of batch items with distinct keys and no supersedes, written together: one statement
   * reads every stored row, namespace and rejected-value record they need; refusals are decided
   * in TypeScript exactly as for one write (plan()); one statement writes every row with its
   * history and change-log row. An item whose row another writer moved in between comes back
   * undefined (the caller writes it alone). Runs inside the batch's transaction.
   */
  private async bulkInTx(c: C, list: UpsertParams[]): Promise<(UpsertResult | CairnError | undefined)[]> {
    const out: (UpsertResult | CairnError | undefined)[] = new Array(list.length).fill(undefined);
    const todo: number[] = [];
    list.forEach((p, i) => {
      try {
        this.validateContent(p);
        todo.push(i);
      } catch (e) {
        if (!(e instanceof CairnError)) throw e;
        out[i] = e;
      }
    });
    if (todo.length === 0) return out;
    const now = this.now();
    const hashes = todo.map((i) => normalizedValueHash(list[i].value));
    const read = (
      await c.query(
        `SELECT u.ord, (SELECT row_to_json(x) FROM (SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = u.ns AND n.deleted_at IS NULL AND m.key = u.key) x) AS existing,
           (SELECT id FROM namespaces WHERE path = u.ns AND deleted_at IS NULL) AS ns_id,
           (SELECT json_build_object('actor', r.actor, 'at', r.at) FROM rejected_values r JOIN namespaces n ON n.id = r.ns_id WHERE n.path = u.ns AND n.deleted_at IS NULL AND r.value_hash = u.h) AS rejected
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(ns, key, h, ord) ORDER BY u.ord`,
        [todo.map((i) => list[i].namespace), todo.map((i) => list[i].key), hashes],
      )
    ).rows as { ord: number; existing: MemoryRow | null; ns_id: string | null; rejected: { actor: string; at: number } | null }[];
    const nsIds = new Map<string, string>();
    const rows: Record<string, unknown>[] = [];
    const written = new Map<string, { i: number; memory: Memory; created: boolean; warn: WritePlan['warn'] }>();
    let unchangedPosition: number | null = null;
    for (const r of read) {
      const i = todo[r.ord - 1];
      const p = list[i];
      const existing = r.existing ?? undefined;
      let w: WritePlan;
      try {
        w = this.plan(p, existing, r.rejected ?? undefined, undefined);
      } catch (e) {
        if (!(e instanceof CairnError)) throw e;
        out[i] = e;
        continue;
      }
      if (w.unchanged) {
        unchangedPosition ??= await this.positionIn(c);
        out[i] = { memory: toMemory(existing!), created: false, position: unchangedPosition, changed: false, ...w.warn };
        continue;
      }
      let nsId = existing?.ns_id ?? r.ns_id ?? nsIds.get(p.namespace);
      if (!nsId) {
        nsId = await this.ensureNamespace(c, p.namespace);
        nsIds.set(p.namespace, nsId);
      }
      const version = existing ? existing.version + 1 : 1;
      const id = existing?.id ?? uuidv7(now);
      const state = this.stateRow(p, w, existing, nsId, id, version, now);
      const memory = toMemory(state);
      const [fa, fb, fc, fd] = ftsDocument(p.key, w.next.value, w.summary, w.next.tags);
      rows.push({
        ord: rows.length,
        rowid: existing?.rowid ?? null,
        oldver: existing?.version ?? null,
        id,
        ns_id: nsId,
        ns_path: p.namespace,
        key: p.key,
        value: state.value,
        value_hash: state.value_hash,
        summary: state.summary,
        kind: state.kind,
        tags: state.tags,
        importance: state.importance,
        confidence: state.confidence,
        source: state.source,
        properties: state.properties,
        anchors: state.anchors,
        valid_from: state.valid_from,
        valid_to: state.valid_to,
        expires_at: state.expires_at,
        status: state.status,
        fa,
        fb,
        fc,
        fd,
        version,
        op: w.op,
        claimed: p.actor ?? p.source ?? null,
        reason: p.reason ?? null,
        previous: existing ? JSON.stringify(toMemory(existing)) : null,
        detail: Object.keys(w.detail).length ? JSON.stringify(w.detail) : null,
      });
      written.set(id, { i, memory, created: !existing, warn: w.warn });
    }
    if (rows.length === 0) return out;
    const FTS = `setweight(to_tsvector('english', d.fa), 'A') || setweight(to_tsvector('english', d.fb), 'B') || setweight(to_tsvector('english', d.fc), 'C') || setweight(to_tsvector('english', d.fd), 'D')`;
    const live = `EXISTS (SELECT 1 FROM namespaces n WHERE n.id = d.ns_id AND n.path = d.ns_path AND n.deleted_at IS NULL)`;
    const res = await c.query(
      `WITH d AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS d(ord int, rowid bigint, oldver int, id text, ns_id text, ns_path text, key text,
           value text, value_hash text, summary text, kind text, tags text, importance double precision, confidence double precision, source text,
           properties text, anchors text, valid_from bigint, valid_to bigint, expires_at bigint, status text, fa text, fb text, fc text, fd text,
           version int, op text, claimed text, reason text, previous text, detail text)),
       up AS (UPDATE memories m SET value = d.value, value_hash = d.value_hash, summary = d.summary, kind = d.kind, tags = d.tags, importance = d.importance,
           confidence = d.confidence, source = d.source, properties = d.properties, anchors = d.anchors, valid_from = d.valid_from, valid_to = d.valid_to,
           expires_at = d.expires_at, status = d.status, fts = ${FTS}, updated_at = $2, version = d.version, superseded_by = NULL,
           deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = NULL, embed_model = NULL, embed_hash = NULL
         FROM d WHERE d.rowid IS NOT NULL AND m.rowid = d.rowid AND m.version = d.oldver AND m.id = d.id AND ${live} RETURNING d.ord),
       ins AS (INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
           fts, created_at, updated_at, version, id, ns_id, key)
         SELECT d.value, d.value_hash, d.summary, d.kind, d.tags, d.importance, d.confidence, d.source, d.properties, d.anchors, d.valid_from, d.valid_to, d.expires_at, d.status,
           ${FTS}, $2, $2, d.version, d.id, d.ns_id, d.key FROM d WHERE d.rowid IS NULL AND ${live} ORDER BY d.ord
         ON CONFLICT ON CONSTRAINT cairn_race_memory_key DO NOTHING RETURNING id),
       w AS (SELECT ord FROM up UNION ALL SELECT d.ord FROM ins JOIN d ON d.id = ins.id),
       x AS (SELECT d.* FROM w JOIN d USING (ord) ORDER BY d.ord OFFSET 0)
       SELECT cairn.record_write(x.id, x.op, x.reason, x.claimed, x.previous, x.detail) AS position, x.id AS memory_id FROM x`,
      [JSON.stringify(rows), now],
    );
    for (const r of res.rows as { position: number; memory_id: string }[]) {
      const x = written.get(r.memory_id)!;
      out[x.i] = { memory: x.memory, created: x.created, position: r.position, changed: true, ...x.warn };
    }
    return out;
  }

  /** Memories a batch wrote without vectors (embedded together after its commit). */
  private pendingEmbeds: Memory[] | null = null;

  async upsertBatch(items: UpsertParams[], actor?: string, idempotencyKey?: string): Promise<UpsertBatchResult> {
    const list = items.map((it) => (actor && !it.actor ? { ...it, actor } : it));
    const done: Memory[] = [];
    const itemResult = (r: UpsertResult): UpsertBatchResult['results'][number] => ({
      ok: true as const,
      id: r.memory.id,
      created: r.created,
      position: r.position,
      version: r.memory.version,
      ...(r.warnings ? { warnings: r.warnings } : {}),
    });
    const refused = (err: CairnError): UpsertBatchResult['results'][number] => ({
      ok: false as const,
      error: { code: err.code, message: err.message, data: err.data },
    });
    let results: UpsertBatchResult['results'] | null = null;
    const withSavepoints = async (c: C): Promise<UpsertBatchResult['results']> => {
      done.length = 0;
      const out: UpsertBatchResult['results'] = [];
      for (const it of list) {
        await c.query('SAVEPOINT item');
        try {
          const r = await this.upsertInTx(c, it);
          await c.query('RELEASE SAVEPOINT item');
          if (r.changed) done.push(r.memory);
          out.push(itemResult(r));
        } catch (e) {
          const err = mapError(e);
          if (!(err instanceof CairnError) || err.codeName === 'Unavailable') throw e;
          await c.query('ROLLBACK TO SAVEPOINT item');
          out.push(refused(err));
        }
      }
      return out;
    };
    if (idempotencyKey !== undefined) {
      // Keyed: the locked path with a savepoint per item, in one transaction with the key's record.
      const params: { items: UpsertParams[]; actor?: string; idempotencyKey: string } = {
        items,
        ...(actor !== undefined ? { actor } : {}),
        idempotencyKey,
      };
      const r = await this.keyed<UpsertBatchResult>('memory/upsertBatch', params, async (c) => {
        const out = await withSavepoints(c);
        return { results: out, position: out.reduce((m, x) => (x.ok ? Math.max(m, x.position) : m), 0) || (await this.positionIn(c)) };
      });
      if (!('replayed' in r)) await this.embedRows(done);
      return r;
    }
    if (this.writePath === 'fast') {
      // One transaction, no savepoints, two statements per run of items (bulkInTx; an item alone costs two):
      // refusals are decided before any statement writes, so they never abort the transaction. A database
      // error (say a row-level-security refusal) aborts it; the batch then reruns below with a savepoint per item.
      try {
        results = await this.tx(async (c) => {
          done.length = 0;
          this.pendingEmbeds = done;
          const out: UpsertBatchResult['results'] = new Array(list.length);
          const one = async (i: number): Promise<void> => {
            const it = list[i];
            let r: UpsertResult | typeof LOST_RACE = LOST_RACE;
            try {
              for (let k = 0; k < 4 && r === LOST_RACE; k++) r = await this.fastUpsert(c, it, null);
              if (r === LOST_RACE) {
                r = await this.upsertInTx(c, it); // contended: lock the row (same transaction)
                if (r.changed) done.push(r.memory);
              }
            } catch (e) {
              if (e instanceof CairnError && e.codeName !== 'Unavailable' && e.codeName !== 'Forbidden') {
                out[i] = refused(e);
                return;
              }
              throw e instanceof CairnError || isConnectionError(e) ? e : new NeedsSavepoints();
            }
            out[i] = itemResult(r);
          };
          // Runs of items with distinct keys and no supersedes go together (bulkInTx); an item that
          // repeats a key of its run starts the next run, so every key's writes keep the batch order.
          for (let i = 0; i < list.length;) {
            if (list[i].supersedes !== undefined) {
              await one(i++);
              continue;
            }
            const run: number[] = [];
            const keys = new Set<string>();
            for (; i < list.length && list[i].supersedes === undefined && !keys.has(`${list[i].namespace}\u0000${list[i].key}`); i++) {
              keys.add(`${list[i].namespace}\u0000${list[i].key}`);
              run.push(i);
            }
            if (run.length === 1) {
              await one(run[0]);
              continue;
            }
            let got: (UpsertResult | CairnError | undefined)[];
            try {
              got = await this.bulkInTx(
                c,
                run.map((j) => list[j]),
              );
            } catch (e) {
              throw e instanceof CairnError || isConnectionError(e) ? e : new NeedsSavepoints();
            }
            for (let k = 0; k < run.length; k++) {
              const r = got[k];
              if (r === undefined)
                await one(run[k]); // another writer moved the row: alone, retried
              else if (r instanceof CairnError) {
                if (r.codeName === 'Forbidden') throw r;
                out[run[k]] = refused(r);
              } else {
                if (r.changed) done.push(r.memory);
                out[run[k]] = itemResult(r);
              }
            }
          }
          return out;
        });
      } catch (e) {
        if (!(e instanceof NeedsSavepoints) && !(e instanceof CairnError && e.codeName === 'Forbidden')) throw e;
      } finally {
        this.pendingEmbeds = null;
      }
    }
    if (results === null) results = await this.tx(withSavepoints);
    await this.embedRows(done);
    return { results, position: results.reduce((m, r) => (r.ok ? Math.max(m, r.position) : m), 0) || (await this.position()) };
  }

  private validateContent(p: UpsertParams): void {
    this.checkNamespace(p.namespace);
    if (p.scope) {
      scopeSql(new Params(), p.scope); // validates the scope's own paths (InvalidNamespace)
      if (!pathInScope(p.namespace, p.scope))
        throw new CairnError('InvalidParams', `namespace ${p.namespace} is outside the given scope`, { field: 'namespace' });
    }
    validateContent(p);
  }

  /**
   * What a write does, decided from the stored row (or its absence), the rejected-value
   * record and the memory it supersedes. Throws the typed refusals (Deleted,
   * VersionConflict, RejectedValue, supersession errors) before anything is written.
   */
  private plan(
    p: UpsertParams,
    existing: MemoryRow | undefined,
    rejected: { actor: string; at: number } | undefined,
    superseded: MemoryRow | undefined,
  ): WritePlan {
    // The rules (write-rules.ts) in the same order as the SQLite store, on rows fetched beforehand.
    const detail: Record<string, unknown> = {};
    const op = refuseDeleted(p, existing, detail);
    refuseStaleVersion(p, existing);
    refuseRejected(p, rejected, detail);
    refuseBadSupersede(p, existing, superseded);
    const { next, warn } = mergeContent(p, existing, op, detail);
    const unchanged = !!existing && op === 'update' && !superseded && sameContent(existing, next);
    return { op, detail, next, warn, unchanged, summary: unchanged ? null : summaryOf(p.value) };
  }

  /** The column values of a planned write ($1..$18 of the write statements: 14 columns, then the four full-text parts). */
  private writeValues(p: UpsertParams, w: WritePlan): unknown[] {
    return [
      ...contentColumns(w.next, normalizedValueHash(p.value), w.summary),
      ...ftsDocument(p.key, w.next.value, w.summary, w.next.tags),
    ];
  }

  private async upsertInTx(c: C, p: UpsertParams): Promise<UpsertResult> {
    this.validateContent(p);
    const now = this.now();
    const claimed = p.actor ?? p.source;
    const existing = await this.rowByKey(c, p.namespace, p.key, true);
    const valueHash = normalizedValueHash(p.value);
    // Refused before the namespace is created (as the SQLite store does); the full plan runs below.
    refuseDeleted(p, existing, {});
    refuseStaleVersion(p, existing);
    const nsId = existing?.ns_id ?? (await this.ensureNamespace(c, p.namespace));
    const rejected = (await c.query(`SELECT actor, at FROM rejected_values WHERE ns_id = $1 AND value_hash = $2`, [nsId, valueHash]))
      .rows[0] as { actor: string; at: number } | undefined;
    let superseded: MemoryRow | undefined;
    if (p.supersedes !== undefined) {
      const sid = p.supersedes;
      superseded = await this.rowBy(c, (q) => andSql(`m.id = ${q.p(sid)} AND n.deleted_at IS NULL`, scopeSql(q, p.scope)), true);
    }
    const w = this.plan(p, existing, rejected, superseded);
    const { op, detail, warn } = w;
    if (w.unchanged) return { memory: toMemory(existing!), created: false, position: await this.positionIn(c), changed: false, ...warn };

    const previous = existing ? toMemory(existing) : null;
    const cols = this.writeValues(p, w);
    const FTS = `setweight(to_tsvector('english', $15), 'A') || setweight(to_tsvector('english', $16), 'B') || setweight(to_tsvector('english', $17), 'C') || setweight(to_tsvector('english', $18), 'D')`;
    let rowid: number;
    let id: string;
    let version: number;
    if (existing) {
      id = existing.id;
      rowid = existing.rowid;
      version = existing.version + 1;
      await c.query(
        `UPDATE memories SET value = $1, value_hash = $2, summary = $3, kind = $4, tags = $5, importance = $6, confidence = $7, source = $8, properties = $9, anchors = $10,
           valid_from = $11, valid_to = $12, expires_at = $13, status = $14, fts = ${FTS}, updated_at = $19, version = $20, superseded_by = NULL,
           deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, embedding = NULL, embed_model = NULL, embed_hash = NULL WHERE rowid = $21`,
        [...cols, now, version, rowid],
      );
    } else {
      id = uuidv7(now);
      version = 1;
      rowid = (
        await c.query(
          `INSERT INTO memories(value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status,
             fts, created_at, updated_at, version, id, ns_id, key)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, ${FTS}, $19, $19, $20, $21, $22, $23) RETURNING rowid`,
          [...cols, now, version, id, nsId, p.key],
        )
      ).rows[0].rowid;
    }
    let position = await this.record(c, id, op, claimed, p.reason, previous, detail);

    if (superseded) {
      const before = toMemory(superseded);
      await c.query(
        `UPDATE memories SET status = 'superseded', superseded_by = $1, version = version + 1, updated_at = $2 WHERE rowid = $3`,
        [id, now, superseded.rowid],
      );
      position = await this.record(c, superseded.id, 'supersede', claimed, p.reason ?? `superseded by ${p.namespace}/${p.key}`, before, {
        supersededBy: id,
      });
    }
    return { memory: toMemory(await this.refetch(c, rowid)), created: !existing, position, changed: true, ...warn };
  }

  private async positionIn(c: C | pg.Pool): Promise<number> {
    return ((await c.query('SELECT max(position) AS p FROM changes')).rows[0].p as number | null) ?? 0;
  }

  /** Vectors for freshly written memories, stored only if the memory has not changed since (version guard). */
  private async embedRows(ms: Memory[]): Promise<void> {
    const e = this.embedder;
    if (!e || ms.length === 0) return;
    try {
      const texts = ms.map(embeddingText);
      const vs = await e.embed(texts, { priority: true });
      const values = ms.map((m, i) => ({
        id: m.id,
        version: m.version,
        v: vectorLiteral(vs[i]),
        h: sha256(e.info.model + '\u0000' + texts[i]),
        zero: vs[i].every((x) => x === 0),
      }));
      for (let i = 0; i < values.length; i += 200) {
        const chunk = values.filter((x) => !x.zero).slice(i, i + 200);
        if (chunk.length === 0) continue;
        await this.pool.query(
          `UPDATE memories m SET embedding = u.v::vector, embed_model = $1, embed_hash = u.h
           FROM unnest($2::text[], $3::int[], $4::text[], $5::text[]) AS u(id, version, v, h) WHERE m.id = u.id AND m.version = u.version`,
          [e.info.model, chunk.map((x) => x.id), chunk.map((x) => x.version), chunk.map((x) => x.v), chunk.map((x) => x.h)],
        );
      }
    } catch (err) {
      // The write is committed; full-text finds it. backfill() embeds it later.
      this.log(`team store: embedding after write failed: ${(err as Error).message}`);
    }
  }

  /** Embed live memories that have no vector for the current model (after a model load or a failed embed). */
  async backfill(batch = 256): Promise<number> {
    const e = this.embedder;
    if (!e) return 0;
    let total = 0;
    for (;;) {
      const rows = await query<MemoryRow>(
        this.pool,
        `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND m.embed_model IS DISTINCT FROM $1 AND m.rowid > $2 ORDER BY m.rowid LIMIT $3`,
        [e.info.model, -1, batch],
      );
      if (rows.length === 0) return total;
      const ms = rows.map(toMemory);
      await this.embedRows(ms);
      total += rows.length;
      const still = await query<{ c: number }>(
        this.pool,
        `SELECT count(*)::int AS c FROM memories WHERE id = ANY($1::text[]) AND embed_model IS DISTINCT FROM $2`,
        [ms.map((m) => m.id), e.info.model],
      );
      if (still[0].c === rows.length) return total; // nothing moved (zero vectors, or no write access): stop
    }
  }

  delete(t: Target): Promise<WriteResult> {
    return this.keyed('memory/delete', t, (c) => this.softDelete(c, t, 'delete'));
  }

  forget(t: Target): Promise<WriteResult> {
    return this.keyed('memory/forget', t, async (c) => {
      const r = await this.softDelete(c, t, 'forget');
      const row = (await this.rowBy(c, (q) => `m.id = ${q.p(r.memory.id)}`))!;
      await c.query(
        `INSERT INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (ns_id, value_hash) DO UPDATE SET actor = excluded.actor, at = excluded.at, memory_id = excluded.memory_id`,
        [row.ns_id, row.value_hash, row.id, this.requireUser(), this.now()],
      );
      return r;
    });
  }

  private async softDelete(c: C, t: Target, op: 'delete' | 'forget'): Promise<WriteResult> {
    const row = await this.resolveTarget(c, t);
    if (row.deleted_at !== null) {
      if (op === 'forget') return { memory: toMemory(row), position: await this.recordChange(c, 'forget', row.id) };
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
        field: t.id !== undefined ? 'id' : 'key',
        deletedAt: iso(row.deleted_at),
        deletedBy: row.deleted_by,
      });
    }
    const now = this.now();
    const before = toMemory(row);
    const u = await c.query(
      `UPDATE memories SET deleted_at = $1, deleted_by = $2, delete_reason = $3, version = version + 1, updated_at = $1 WHERE rowid = $4`,
      [now, this.requireUser(), t.reason ?? null, row.rowid],
    );
    if (u.rowCount !== 1)
      throw new CairnError('Forbidden', `your database role may not change ${row.ns_path}`, { field: t.id !== undefined ? 'id' : 'key' });
    const position = await this.record(c, row.id, op, t.actor, t.reason, before);
    return { memory: toMemory(await this.refetch(c, row.rowid)), position };
  }

  restore(t: Target): Promise<WriteResult> {
    return this.keyed('memory/restore', t, async (c) => {
      const row = await this.resolveTarget(c, t);
      if (row.deleted_at === null)
        throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is not deleted`, { field: t.id !== undefined ? 'id' : 'key' });
      const now = this.now();
      const before = toMemory(row);
      const lifted =
        ((await c.query(`DELETE FROM rejected_values WHERE ns_id = $1 AND value_hash = $2`, [row.ns_id, row.value_hash])).rowCount ?? 0) >
        0;
      const expires = row.expires_at !== null && row.expires_at <= now ? null : row.expires_at;
      await c.query(
        `UPDATE memories SET deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, expires_at = $1, version = version + 1, updated_at = $2 WHERE rowid = $3`,
        [expires, now, row.rowid],
      );
      const position = await this.record(c, row.id, 'restore', t.actor, t.reason, before, lifted ? { unrejected: true } : undefined);
      return { memory: toMemory(await this.refetch(c, row.rowid)), position };
    });
  }

  purge(t: Target): Promise<PurgeResult> {
    return this.keyed('memory/purge', t, async (c) => {
      const row = await this.resolveTarget(c, t);
      if (row.deleted_at === null)
        throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is live; delete it before purging`, {
          field: t.id !== undefined ? 'id' : 'key',
        });
      // The database's own cairn.purge_memory removes the row, its links and history and records the purge
      // (members may not delete history or memories themselves); it needs admin on the memory's namespace.
      const r = await c.query(`SELECT cairn.purge_memory($1, $2, $3, $4) AS position`, [
        row.id,
        t.reason ?? null,
        t.actor ?? null,
        this.now(),
      ]);
      return { id: row.id, position: r.rows[0].position as number };
    });
  }

  // -------------------------------------------------------------------------
  // TTL sweep and namespace purge
  // -------------------------------------------------------------------------
  /**
   * Expiry and the purge of deleted namespaces are the database's own jobs (cairn.expire_due,
   * cairn.purge_deleted_namespaces), the only writers of `system:` actors; each covers the namespaces this role
   * may write (expiry) or administer (purge), and records the role as detail.sweptBy.
   */
  async sweep(batch = 500): Promise<SweepResult> {
    this.requireUser();
    const expired = (await query<{ n: number }>(this.pool, `SELECT cairn.expire_due($1, $2) AS n`, [this.now(), batch]))[0].n;
    const purged = (await query<{ n: number }>(this.pool, `SELECT cairn.purge_deleted_namespaces($1, $2) AS n`, [this.now(), batch]))[0].n;
    return { expired, purged, position: await this.position() };
  }

  // -------------------------------------------------------------------------
  // links
  // -------------------------------------------------------------------------
  private async liveInScope(c: C | pg.Pool, id: string, scope: Scope | undefined, field: string): Promise<MemoryRow> {
    const row = await this.rowBy(c, (q) =>
      andSql(`m.id = ${q.p(id)} AND n.deleted_at IS NULL AND m.deleted_at IS NULL`, scopeSql(q, scope)),
    ).catch(rethrow);
    if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field });
    if (this.isExpired(row, this.now())) throw new CairnError('NotFound', `memory ${id} has expired`, { field });
    return row;
  }

  link(p: LinkParams): Promise<LinkResult> {
    if (p.from === p.to) throw new CairnError('InvalidState', 'a memory cannot link to itself', { field: 'to' });
    return this.tx(async (c) => {
      const a = await this.liveInScope(c, p.from, p.scope, 'from');
      await this.liveInScope(c, p.to, p.scope, 'to');
      const actor = this.requireUser();
      const created =
        ((
          await c.query(
            `INSERT INTO links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
            [p.from, p.to, p.type, a.ns_id, this.now(), actor],
          )
        ).rowCount ?? 0) > 0;
      const row = (await c.query(`SELECT * FROM links WHERE src = $1 AND dst = $2 AND type = $3`, [p.from, p.to, p.type])).rows[0];
      const position = created ? await this.recordChange(c, 'link', a.id) : await this.positionIn(c);
      return {
        link: { from: row.src, to: row.dst, type: row.type, createdAt: isoReq(row.created_at), actor: row.actor } as Link,
        created,
        position,
      };
    });
  }

  unlink(p: LinkParams): Promise<UnlinkResult> {
    return this.tx(async (c) => {
      const a = await this.liveInScope(c, p.from, p.scope, 'from');
      await this.liveInScope(c, p.to, p.scope, 'to');
      const removed =
        ((await c.query(`DELETE FROM links WHERE src = $1 AND dst = $2 AND type = $3`, [p.from, p.to, p.type])).rowCount ?? 0) > 0;
      if (!removed) throw new CairnError('NotFound', `no ${p.type} link from ${p.from} to ${p.to}`, { field: 'type' });
      return { removed, position: await this.recordChange(c, 'unlink', a.id) };
    });
  }

  async neighbors(p: NeighborsParams): Promise<NeighborsResult> {
    await this.liveInScope(this.pool, p.id, p.scope, 'id');
    const dir = p.direction ?? 'both';
    const out: NeighborsResult['neighbors'] = [];
    const run = async (join: string, match: string, direction: 'out' | 'in') => {
      const q = new Params();
      const where = andSql(
        `l.${match} = ${q.p(p.id)}`,
        p.type ? `l.type = ${q.p(p.type)}` : null,
        visibilitySql(q, undefined, this.now()),
        scopeSql(q, p.scope),
      );
      const rows = await query(
        this.pool,
        `SELECT ${MEMORY_COLUMNS}, l.type AS link_type FROM links l JOIN memories m ON m.id = l.${join} JOIN namespaces n ON n.id = m.ns_id WHERE ${where} ORDER BY l.created_at, m.id`,
        q.values,
      );
      for (const r of rows) out.push({ memory: toMemory(r as MemoryRow), type: r.link_type, direction });
    };
    if (dir !== 'in') await run('dst', 'src', 'out');
    if (dir !== 'out') await run('src', 'dst', 'in');
    return { neighbors: out };
  }

  // -------------------------------------------------------------------------
  // status
  // -------------------------------------------------------------------------
  async counts(): Promise<{
    memories: number;
    active: number;
    proposed: number;
    superseded: number;
    deleted: number;
    namespaces: number;
    history: number;
    links: number;
    rejectedValues: number;
    vectors: number;
  }> {
    const r = (
      await query(
        this.pool,
        `SELECT count(*)::int AS memories,
        count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'active')::int AS active,
        count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'proposed')::int AS proposed,
        count(*) FILTER (WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'superseded')::int AS superseded,
        count(*) FILTER (WHERE m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL)::int AS deleted,
        count(m.embedding)::int AS vectors,
        (SELECT count(*)::int FROM namespaces WHERE deleted_at IS NULL) AS namespaces,
        (SELECT count(*)::int FROM history) AS history,
        (SELECT count(*)::int FROM links) AS links,
        (SELECT count(*)::int FROM rejected_values) AS "rejectedValues"
      FROM memories m JOIN namespaces n ON n.id = m.ns_id`,
      )
    )[0];
    return r;
  }

  /** Server facts for `cairn team status` (never the password). */
  async status(): Promise<{
    url: string;
    user: string;
    serverVersion: string;
    pgvectorVersion: string | null;
    schemaVersion: number;
    latencyMs: number;
    counts: Awaited<ReturnType<PgBackend['counts']>>;
    grants: { root: string; role: string; level: number }[];
    historyCap: number | null;
  }> {
    const t0 = performance.now();
    await query(this.pool, 'SELECT 1');
    const latencyMs = Math.round((performance.now() - t0) * 100) / 100;
    const v = (
      await query(
        this.pool,
        `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec, session_user AS u`,
      )
    )[0];
    const grants = await query(this.pool, `SELECT root, role::text AS role, level FROM grants ORDER BY root, role`);
    const cap = (await query<{ value: string }>(this.pool, `SELECT value FROM meta WHERE key = 'history_cap'`))[0];
    return {
      url: this.url,
      user: v.u,
      serverVersion: v.server,
      pgvectorVersion: v.vec,
      schemaVersion: await checkSchema(this.pool),
      latencyMs,
      counts: await this.counts(),
      grants,
      historyCap: cap ? Number(cap.value) : null,
    };
  }
}

/** The document a memory's full-text vector is built from: key (A), tags (B), value + split identifiers (C), summary (D). */
export function ftsDocument(key: string, value: string, summary: string | null, tags: string[]): [string, string, string, string] {
  return [key.replace(/[._/:-]+/g, ' ') + ' ' + key, tags.join(' '), `${value}\n${identifierWords(`${key} ${value}`)}`, summary ?? ''];
}

function rethrow(e: unknown): never {
  throw mapError(e);
}

export { isConnectionError };
