/**
 * What an administrator of a team root does with it beyond memory requests:
 * the audit (history for a time range, `store/audit` / `cairn team audit`) and
 * the export (`store/exportPage` / `store/export` / `cairn export --root`), in
 * the local store's JSON Lines records (ExportRecord, HistoryEntry).
 *
 * Both need `admin` on what they cover (the schema owner may audit and export
 * everything); a role without it gets `Forbidden` naming the grant. Both run as
 * the login role, so row-level security applies to every row they read, and
 * both are paged on the server: the audit by history sequence (keyset), the
 * export from one REPEATABLE READ snapshot held per cursor (as the local export
 * holds a read transaction), so its pages are consistent while others write.
 */
import type pg from 'pg';
import { CairnError } from '../../protocol/errors';
import {
  Limits,
  type AuditParams,
  type AuditResult,
  type ExportPageParams,
  type ExportPageResult,
  type ExportParams,
  type ExportRecord,
  type Scope,
} from '../../protocol/types';
import { uuidv7 } from '../../text/hash';
import { headerRecord, linkRecord, memoryRecord, namespaceRecord, rejectedRecord } from '../export-records';
import { fromIso, pgHistoryEntry, type MemoryRow, type PgHistoryRow } from '../rows';
import { missingGrant } from './access';
import type { PgBackend } from './backend';
import { mapError, type Sql } from './db';
import { MEMORY_COLUMNS, Params, scopeSql } from './sql';

/** Is the session's role the owner of the Cairn schema (not subject to row-level security)? */
async function isOwner(db: Sql): Promise<boolean> {
  const r = await db.query(
    `SELECT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'cairn'), 'MEMBER') AS owner`,
  );
  return r.rows[0]?.owner === true;
}

/** The roots this role administers (its own grants: members see only those). */
async function adminRoots(db: Sql): Promise<string[]> {
  const r = await db.query(`SELECT DISTINCT root FROM grants WHERE level >= 3 AND pg_has_role(session_user, role, 'MEMBER') ORDER BY root`);
  return r.rows.map((x: { root: string }) => x.root);
}

/**
 * Refuse unless the role administers every namespace the scope names (or owns the schema). Returns whether it is the
 * owner. `scope` undefined: the role must administer at least one root (the request covers those).
 */
async function requireAdmin(b: PgBackend, db: Sql, scope: Scope | undefined, verb: string): Promise<boolean> {
  if (await isOwner(db)) return true;
  const targets = [...(scope?.root !== undefined ? [scope.root] : []), ...(scope?.namespaces ?? [])];
  if (targets.length === 0) {
    if ((await adminRoots(db)).length > 0) return false;
    throw new CairnError(
      'Forbidden',
      `the database role ${b.user} administers no team root, and to ${verb} needs admin: an admin runs \`cairn team grant ${b.user} ROOT admin\``,
      { store: 'team', role: b.user, level: 'admin' },
    );
  }
  const r = await db.query(`SELECT t, cairn.allowed(t, 3) AS ok FROM unnest($1::text[]) AS t`, [targets]);
  const lacking = (r.rows as { t: string; ok: boolean }[]).find((x) => !x.ok);
  if (lacking) throw missingGrant({ user: b.user, level: 'admin', verb, namespace: lacking.t, member: true });
  return false;
}

// ---------------------------------------------------------------------------
// audit
// ---------------------------------------------------------------------------

/**
 * History entries with `from <= at < to`, oldest first, in pages by sequence, of the namespaces in `scope` (all of
 * them must be administered by the role) or, without a scope, of every namespace the role administers.
 */
export async function teamAuditPage(b: PgBackend, p: AuditParams): Promise<AuditResult> {
  const limit = p.limit ?? Limits.pageSize;
  let after = 0;
  if (p.cursor !== undefined) {
    const m = /^ta(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
    if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
    after = Number(m[1]);
  }
  const from = fromIso(p.from) ?? -Number.MAX_SAFE_INTEGER;
  const to = fromIso(p.to) ?? Number.MAX_SAFE_INTEGER;
  if (to <= from) throw new CairnError('InvalidParams', 'to must be after from', { field: 'to' });
  try {
    const owner = await requireAdmin(b, b.pool, p.scope, 'audit');
    const q = new Params();
    const where = [`h.seq > ${q.p(after)}`, `h.at >= ${q.p(from)}`, `h.at < ${q.p(to)}`];
    const s = scopeSql(q, p.scope ? { ...p.scope, includeUser: false } : undefined);
    if (s) where.push(s);
    if (!owner) where.push(`h.ns_id IN (SELECT cairn.ns_ids(3))`);
    const rows = (
      await b.pool.query(
        `SELECT h.* FROM history h JOIN namespaces n ON n.id = h.ns_id WHERE ${where.join(' AND ')} ORDER BY h.seq LIMIT ${q.p(limit + 1)}`,
        q.values,
      )
    ).rows as PgHistoryRow[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit).map(pgHistoryEntry);
    return {
      entries: p.content === false ? page.map((e) => ({ ...e, previous: null, state: null })) : page,
      nextCursor: more ? Buffer.from(`ta${rows[limit - 1].seq}`).toString('base64url') : null,
    };
  } catch (e) {
    throw mapError(e);
  }
}

// ---------------------------------------------------------------------------
// export
// ---------------------------------------------------------------------------

type Phase = 'header' | 'namespaces' | 'memories' | 'links' | 'rejected' | 'done';
const PHASES: Phase[] = ['header', 'namespaces', 'memories', 'links', 'rejected', 'done'];

/** Walks a team export memory-major, as the local ExportWalker: header, namespaces, each memory then its history, links, rejected values. */
class TeamExportWalker {
  phase: Phase = 'header';
  /** Keyset position inside the phase (namespace id, memory rowid, link or rejected key). */
  private after: unknown[] | null = null;
  done = 0;
  total = 0;

  constructor(
    private readonly c: pg.ClientBase,
    private readonly scope: Scope,
    private readonly includeHistory: boolean,
    private readonly schemaVersion: number,
    private readonly now: number,
  ) {}

  get finished(): boolean {
    return this.phase === 'done';
  }

  async count(): Promise<void> {
    const q = new Params();
    const r = await this.c.query(
      `SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${this.inScope(q)}`,
      q.values,
    );
    this.total = Number(r.rows[0].c);
  }

  private inScope(q: Params, col = 'n.path'): string {
    return scopeSql(q, { ...this.scope, includeUser: false }, col) ?? 'false';
  }

  private next(): void {
    this.phase = PHASES[PHASES.indexOf(this.phase) + 1];
    this.after = null;
  }

  async page(limit: number, maxBytes = 4 * 1024 * 1024): Promise<ExportRecord[]> {
    const out: ExportRecord[] = [];
    let bytes = 0;
    const push = (r: ExportRecord) => {
      out.push(r);
      bytes += JSON.stringify(r).length;
    };
    const full = () => out.length >= limit || bytes >= maxBytes;
    while (!this.finished && !full()) {
      const room = Math.max(1, limit - out.length);
      const q = new Params();
      switch (this.phase) {
        case 'header':
          push(headerRecord(this.now, this.schemaVersion));
          this.next();
          break;
        case 'namespaces': {
          const rows = (
            await this.c.query(
              `SELECT n.* FROM namespaces n WHERE ${this.inScope(q)}${this.after ? ` AND n.id > ${q.p(this.after[0])}` : ''} ORDER BY n.id LIMIT ${q.p(room)}`,
              q.values,
            )
          ).rows as { id: string; path: string; created_at: number; deleted_at: number | null; deleted_by: string | null }[];
          for (const n of rows) push(namespaceRecord(n));
          if (rows.length < room) this.next();
          else this.after = [rows[rows.length - 1].id];
          break;
        }
        case 'memories': {
          const rows = (
            await this.c.query(
              `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${this.inScope(q)}${this.after ? ` AND m.rowid > ${q.p(this.after[0])}` : ''} ORDER BY m.rowid LIMIT ${q.p(room)}`,
              q.values,
            )
          ).rows as MemoryRow[];
          const history = new Map<string, PgHistoryRow[]>();
          if (this.includeHistory && rows.length) {
            const h = await this.c.query(`SELECT * FROM history WHERE memory_id = ANY($1::text[]) ORDER BY seq`, [rows.map((r) => r.id)]);
            for (const r of h.rows as PgHistoryRow[]) history.set(r.memory_id, [...(history.get(r.memory_id) ?? []), r]);
          }
          for (const r of rows) {
            push(memoryRecord(r));
            for (const h of history.get(r.id) ?? []) push({ type: 'history', entry: pgHistoryEntry(h) });
            this.after = [r.rowid];
            this.done++;
            if (full()) break;
          }
          if (rows.length === 0 || (rows.length < room && !full())) this.next();
          break;
        }
        case 'links': {
          const end = (col: string) =>
            `EXISTS (SELECT 1 FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = l.${col} AND ${this.inScope(q)})`;
          const where = [end('src'), end('dst')];
          if (this.after) where.push(`(l.src, l.dst, l.type) > (${q.p(this.after[0])}, ${q.p(this.after[1])}, ${q.p(this.after[2])})`);
          const rows = (
            await this.c.query(
              `SELECT l.* FROM links l WHERE ${where.join(' AND ')} ORDER BY l.src, l.dst, l.type LIMIT ${q.p(room)}`,
              q.values,
            )
          ).rows as { src: string; dst: string; type: string; created_at: number; actor: string }[];
          for (const l of rows) push(linkRecord(l));
          if (rows.length < room) this.next();
          else this.after = [rows[rows.length - 1].src, rows[rows.length - 1].dst, rows[rows.length - 1].type];
          break;
        }
        case 'rejected': {
          const where = [`r.ns_id IN (SELECT n.id FROM namespaces n WHERE ${this.inScope(q)})`];
          if (this.after) where.push(`(r.ns_id, r.value_hash) > (${q.p(this.after[0])}, ${q.p(this.after[1])})`);
          const rows = (
            await this.c.query(
              `SELECT r.* FROM rejected_values r WHERE ${where.join(' AND ')} ORDER BY r.ns_id, r.value_hash LIMIT ${q.p(room)}`,
              q.values,
            )
          ).rows as { ns_id: string; value_hash: string; memory_id: string | null; actor: string; at: number }[];
          for (const r of rows) push(rejectedRecord(r));
          if (rows.length < room) this.next();
          else this.after = [rows[rows.length - 1].ns_id, rows[rows.length - 1].value_hash];
          break;
        }
        case 'done':
          break;
      }
    }
    return out;
  }
}

interface Session {
  id: string;
  client: pg.PoolClient;
  walker: TeamExportWalker;
  timer: NodeJS.Timeout;
}

const CURSOR_PREFIX = 'team-export:';
const SESSION_IDLE_MS = 60_000;
/** Each open export holds a pooled connection (the pool has 8): at most this many at once, the oldest closed first. */
const MAX_SESSIONS = 2;

/** Is this exportPage cursor one of a team export? */
export function isTeamExportCursor(cursor: string): boolean {
  return Buffer.from(cursor, 'base64url').toString('utf8').startsWith(CURSOR_PREFIX);
}

/** The open team exports of one backend (a daemon has one): each a snapshot on its own connection. */
export class TeamExports {
  private sessions = new Map<string, Session>();

  constructor(private readonly b: PgBackend) {}

  private close(s: Session, broken = false): void {
    clearTimeout(s.timer);
    if (!this.sessions.delete(s.id)) return;
    void s.client
      .query('COMMIT')
      .catch(() => (broken = true))
      .finally(() => s.client.release(broken || undefined));
  }

  private touch(s: Session): void {
    clearTimeout(s.timer);
    s.timer = setTimeout(() => this.close(s), SESSION_IDLE_MS);
    s.timer.unref();
  }

  /** One page; the first opens the snapshot (after checking that the role administers the scope). */
  async page(p: ExportPageParams): Promise<ExportPageResult> {
    const limit = p.limit ?? 2000;
    let s: Session | undefined;
    if (p.cursor !== undefined) {
      s = this.sessions.get(Buffer.from(p.cursor, 'base64url').toString('utf8').slice(CURSOR_PREFIX.length));
      if (!s)
        throw new CairnError('InvalidState', 'this export cursor has expired or was never issued; start the export again', {
          field: 'cursor',
          store: 'team',
        });
    } else {
      if (!p.scope) throw new CairnError('InvalidParams', 'a team export needs a scope (a team root it administers)', { field: 'scope' });
      const scope = p.scope;
      let client: pg.PoolClient;
      try {
        client = await this.b.pool.connect();
      } catch (e) {
        throw mapError(e);
      }
      let walker: TeamExportWalker;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        await requireAdmin(this.b, client, scope, 'export');
        walker = new TeamExportWalker(client, scope, p.includeHistory !== false, this.b.schemaVersion, this.b.now());
        await walker.count();
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
        throw mapError(e);
      }
      if (this.sessions.size >= MAX_SESSIONS) this.close(this.sessions.values().next().value as Session);
      s = { id: uuidv7(this.b.now()), client, walker, timer: setTimeout(() => {}, 0) };
      this.sessions.set(s.id, s);
    }
    this.touch(s);
    let records: ExportRecord[];
    try {
      records = await s.walker.page(limit);
    } catch (e) {
      this.close(s, true);
      throw mapError(e);
    }
    const finished = s.walker.finished;
    const progress = { memories: s.walker.done, total: s.walker.total };
    if (finished) this.close(s);
    return { records, nextCursor: finished ? null : Buffer.from(CURSOR_PREFIX + s.id).toString('base64url'), progress };
  }

  /** The whole export in one reply (store/export), up to Limits.exportReplyBytes of records. */
  async all(p: ExportParams): Promise<{ records: ExportRecord[] }> {
    const records: ExportRecord[] = [];
    let bytes = 0;
    let cursor: string | undefined;
    do {
      const page = await this.page(cursor ? { cursor } : { scope: p.scope, includeHistory: p.includeHistory });
      for (const r of page.records) bytes += JSON.stringify(r).length;
      if (bytes > Limits.exportReplyBytes) {
        if (page.nextCursor) this.closeCursor(page.nextCursor);
        throw new CairnError('ValueTooLarge', 'the export is larger than one reply may be; use store/exportPage', {
          limit: Limits.exportReplyBytes,
          method: 'store/exportPage',
        });
      }
      records.push(...page.records);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return { records };
  }

  private closeCursor(cursor: string): void {
    const s = this.sessions.get(Buffer.from(cursor, 'base64url').toString('utf8').slice(CURSOR_PREFIX.length));
    if (s) this.close(s);
  }

  closeAll(): void {
    for (const s of [...this.sessions.values()]) this.close(s);
  }
}
