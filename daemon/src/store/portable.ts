/**
 * Export and import as JSON Lines records (see ExportRecord in the protocol).
 * A round trip into an empty store is exact: ids, versions, times, deletion
 * state, history, links and rejected values all come back as they were.
 * Importing into a non-empty store skips memories whose id or (namespace, key)
 * already exists, so an import never overwrites anything.
 */
import { openDatabase, stmt, type DB } from './db';
import { CairnError } from '../protocol/errors';
import {
  ExportRecord,
  Limits,
  type Scope,
  type ExportPageParams,
  type ExportPageResult,
  type ExportParams,
  type ImportResult,
} from '../protocol/types';
import { fromIso, HISTORY_COLUMNS, MEMORY_COLUMNS, UNSTORED_VALUE_HASH, type MemoryRow } from './rows';
import { headerRecord, linkRecord, memoryRecord, namespaceRecord, rejectedRecord } from './export-records';
import { pathInScope, scopePredicate, type SqlFragment } from './scope';
import { historyEntry, type Store } from './store';
import { uuidv7 } from '../text/hash';
import { findRejection, rejectionHash } from './rejected';
import { pace, type RequestContext } from '../server/limits';
import { episodeRecords, importEpisode, importEvent, newEpisodeCursor, type EpisodeCounts } from './portable-episodes';
import { catchUpEventText } from './events-search';
import { branchRecords, importBranch, importBranchHistory, importBranchRow, newBranchCursor, type BranchCounts } from './portable-branches';

/** Work between two yields of a long request: about this many ms (and at most Limits.chunkRecords records). */
const CHUNK_MS = 20;
/** Work for one store/exportPage page: pages end early when reading is slow (the reply's serialization adds about as much). */
const PAGE_MS = 40;

type HistoryRow = Parameters<typeof historyEntry>[0];
type Phase = 'header' | 'namespaces' | 'memories' | 'orphans' | 'links' | 'rejected' | 'episodes' | 'branches' | 'done';
const PHASES: Phase[] = ['header', 'namespaces', 'memories', 'orphans', 'links', 'rejected', 'episodes', 'branches', 'done'];

/**
 * Walks an export in pages, memory-major: header, namespaces, then each memory
 * followed by its own history, then history rows whose memory is gone (purge
 * and erase rows; whole-store exports only), links with both ends in scope,
 * rejected values, then each episode in scope followed by its events (portable-episodes.ts). Keeping a memory's history right after it lets an importer
 * cut batches at memory boundaries. Each page is bounded in records and bytes.
 */
export class ExportWalker {
  phase: Phase = 'header';
  after = 0;
  done = 0;
  readonly total: number;
  private readonly scope: SqlFragment | null;
  private readonly inScope: string;
  private readonly params: unknown[];
  private readonly episodes = newEpisodeCursor();
  private readonly branches = newBranchCursor();

  constructor(
    private readonly db: DB,
    private readonly p: ExportParams,
    private readonly schemaVersion: number,
    private readonly now: number,
  ) {
    this.scope = scopePredicate(p.scope, 'n.path');
    this.inScope = this.scope ? this.scope.sql : '1';
    this.params = this.scope ? this.scope.params : [];
    this.total = (
      stmt(db, `SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${this.inScope}`).get(...this.params) as {
        c: number;
      }
    ).c;
  }

  get finished(): boolean {
    return this.phase === 'done';
  }

  private next(): void {
    this.phase = PHASES[PHASES.indexOf(this.phase) + 1];
    this.after = 0;
  }

  /**
   * Up to `limit` records (a memory's history may run past it), about `maxBytes` of JSON, and about `maxMs` of work
   * (at least one record), so one page never holds the daemon's thread for long.
   */
  /** JSON characters of the records of the last page (about its bytes). */
  lastBytes = 0;

  page(limit: number, maxBytes = 4 * 1024 * 1024, maxMs = Infinity): ExportRecord[] {
    const out: ExportRecord[] = [];
    const until = performance.now() + maxMs;
    let bytes = 0;
    const push = (r: ExportRecord) => {
      out.push(r);
      bytes += JSON.stringify(r).length;
      this.lastBytes = bytes;
    };
    this.lastBytes = 0;
    const db = this.db;
    const full = () => out.length >= limit || bytes >= maxBytes || (out.length > 0 && performance.now() > until);
    while (!this.finished && !full()) {
      const room = Math.max(1, limit - out.length);
      switch (this.phase) {
        case 'header':
          push(headerRecord(this.now, this.schemaVersion));
          this.next();
          break;
        case 'namespaces': {
          const rows = stmt(
            db,
            `SELECT n.rowid AS r, n.* FROM namespaces n WHERE ${this.inScope} AND n.rowid > ? ORDER BY n.rowid LIMIT ?`,
          ).all(...this.params, this.after, room) as {
            r: number;
            id: string;
            path: string;
            created_at: number;
            deleted_at: number | null;
            deleted_by: string | null;
          }[];
          for (const n of rows) push(namespaceRecord(n));
          if (rows.length < room) this.next();
          else this.after = rows[rows.length - 1].r;
          break;
        }
        case 'memories': {
          const rows = stmt(
            db,
            `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${this.inScope} AND m.rowid > ? ORDER BY m.rowid LIMIT ?`,
          ).all(...this.params, this.after, room) as MemoryRow[];
          for (const r of rows) {
            push(memoryRecord(r));
            if (this.p.includeHistory !== false) {
              for (const h of stmt(db, `SELECT ${HISTORY_COLUMNS} FROM history h WHERE h.memory_id = ? ORDER BY h.seq`).all(
                r.id,
              ) as HistoryRow[])
                push({ type: 'history', entry: historyEntry(h) });
            }
            this.after = r.rowid;
            this.done++;
            if (full()) break;
          }
          if (rows.length === 0 || (rows.length < room && !full())) this.next();
          break;
        }
        case 'orphans': {
          if (this.scope || this.p.includeHistory === false) {
            this.next();
            break;
          }
          const rows = stmt(
            db,
            `SELECT ${HISTORY_COLUMNS} FROM history h WHERE h.seq > ? AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = h.memory_id) ORDER BY h.seq LIMIT ?`,
          ).all(this.after, room) as HistoryRow[];
          for (const h of rows) push({ type: 'history', entry: historyEntry(h) });
          if (rows.length < room) this.next();
          else this.after = rows[rows.length - 1].seq;
          break;
        }
        case 'links': {
          const end = (col: string) =>
            this.scope
              ? ` AND EXISTS (SELECT 1 FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = l.${col} AND ${this.inScope})`
              : '';
          const rows = stmt(
            db,
            `SELECT l.rowid AS r, l.* FROM links l WHERE l.rowid > ?${end('src')}${end('dst')} ORDER BY l.rowid LIMIT ?`,
          ).all(this.after, ...(this.scope ? [...this.params, ...this.params] : []), room) as {
            r: number;
            src: string;
            dst: string;
            type: string;
            created_at: number;
            actor: string;
          }[];
          for (const l of rows) push(linkRecord(l));
          if (rows.length < room) this.next();
          else this.after = rows[rows.length - 1].r;
          break;
        }
        case 'rejected': {
          const ns = this.scope ? ` AND r.ns_id IN (SELECT n.id FROM namespaces n WHERE ${this.inScope})` : '';
          const rows = stmt(db, `SELECT r.rowid AS rr, r.* FROM rejected_values r WHERE r.rowid > ?${ns} ORDER BY r.rowid LIMIT ?`).all(
            this.after,
            ...this.params,
            room,
          ) as {
            rr: number;
            ns_id: string;
            value_hash: string;
            memory_id: string | null;
            actor: string;
            at: number;
          }[];
          for (const r of rows) push(rejectedRecord(r));
          if (rows.length < room) this.next();
          else this.after = rows[rows.length - 1].rr;
          break;
        }
        case 'episodes':
          if (episodeRecords(db, this.scope, this.episodes, room, push, full)) this.next();
          break;
        case 'branches':
          if (branchRecords(db, this.p, this.branches, room, push, full)) this.next();
          break;
        case 'done':
          break;
      }
    }
    return out;
  }
}

/**
 * The whole export in one reply (store/export): fine for small stores; large ones use exportPage. Read in chunks
 * of Limits.chunkRecords from one read transaction (one snapshot), yielding to other requests between chunks.
 */
export async function exportRecords(
  store: Store,
  p: ExportParams,
  ctx?: RequestContext,
  progress?: (done: number, total: number) => void,
  maxBytes: number = Limits.exportReplyBytes,
): Promise<ExportRecord[]> {
  const snapshot =
    store.path === ':memory:' || store.db.inTransaction ? null : openDatabase(store.path, { readonly: true, loadVec: false }).db;
  const db = snapshot ?? store.db;
  try {
    if (snapshot) snapshot.exec('BEGIN');
    const w = new ExportWalker(db, p, store.schemaVersion, store.now());
    const out: ExportRecord[] = [];
    let bytes = 0;
    while (!w.finished) {
      if (out.length > 0) await pace(ctx, { records: out.length, memories: w.done, total: w.total });
      for (const r of w.page(Limits.chunkRecords, Infinity)) out.push(r);
      bytes += w.lastBytes;
      // One reply holds the whole export in the daemon's memory: past the limit, page instead (bounded memory).
      if (bytes > maxBytes)
        throw new CairnError(
          'ValueTooLarge',
          `the export is larger than the ${maxBytes}-byte limit of one store/export reply; use store/exportPage (cairn export does), which pages it with bounded memory`,
          { limit: maxBytes, method: 'store/exportPage' },
        );
      progress?.(w.done, w.total);
    }
    return out;
  } finally {
    if (snapshot) {
      if (snapshot.inTransaction) snapshot.exec('COMMIT');
      snapshot.close();
    }
  }
}

/**
 * Paged export over a snapshot: the first page opens a read-only connection in
 * a read transaction, so every later page sees the store as it was when the
 * export began while the daemon keeps writing (WAL). The cursor names the
 * session; sessions idle for a minute are closed.
 */
interface Session {
  id: string;
  db: DB;
  walker: ExportWalker;
  timer: NodeJS.Timeout;
}
const sessions = new Map<string, Session>();
const SESSION_IDLE_MS = 60_000;
const MAX_SESSIONS = 8;

function closeSession(s: Session): void {
  clearTimeout(s.timer);
  sessions.delete(s.id);
  try {
    if (s.db.inTransaction) s.db.exec('COMMIT');
    s.db.close();
  } catch {
    /* already closed */
  }
}

function touch(s: Session): void {
  clearTimeout(s.timer);
  s.timer = setTimeout(() => closeSession(s), SESSION_IDLE_MS);
  s.timer.unref();
}

export function exportPage(store: Store, p: ExportPageParams): ExportPageResult {
  const limit = p.limit ?? 2000;
  let s: Session | undefined;
  if (p.cursor !== undefined) {
    const id = Buffer.from(p.cursor, 'base64url').toString('utf8');
    s = sessions.get(id);
    if (!s)
      throw new CairnError('InvalidState', 'this export cursor has expired or was never issued; start the export again', {
        field: 'cursor',
      });
  } else {
    if (sessions.size >= MAX_SESSIONS) {
      const oldest = sessions.values().next().value as Session;
      closeSession(oldest);
    }
    let db: DB;
    if (store.path === ':memory:') db = store.db;
    else {
      db = openDatabase(store.path, { readonly: true, loadVec: false }).db;
      db.exec('BEGIN');
    }
    const id = uuidv7(store.now());
    s = {
      id,
      db,
      walker: new ExportWalker(db, { scope: p.scope, includeHistory: p.includeHistory }, store.schemaVersion, store.now()),
      timer: setTimeout(() => {}, 0),
    };
    sessions.set(id, s);
  }
  touch(s);
  let records: ExportRecord[];
  try {
    records = s.walker.page(limit, 4 * 1024 * 1024, PAGE_MS);
  } catch (e) {
    closeSession(s);
    throw e;
  }
  const finished = s.walker.finished;
  const progress = { memories: s.walker.done, total: s.walker.total };
  if (finished) closeSession(s);
  return { records, nextCursor: finished ? null : Buffer.from(s.id).toString('base64url'), progress };
}

/** Close every export session (daemon stop). */
export function closeExportSessions(): void {
  for (const s of [...sessions.values()]) closeSession(s);
}

/**
 * Ids of memories this process imported lately, per store: a streamed import
 * arrives in many store/import calls, and a memory's history may come in a
 * later call than the memory itself. Bounded; cleared past 500k ids.
 */
const importedIds = new WeakMap<Store, Set<string>>();
function importedBy(store: Store): Set<string> {
  let set = importedIds.get(store);
  if (!set || set.size > 500_000) importedIds.set(store, (set = new Set()));
  return set;
}

/**
 * Import records in chunks of Limits.chunkRecords, each in its own transaction, yielding to the event loop
 * between chunks (server/limits.ts `pace`) so other clients are served while a large import runs. Every record
 * is validated (yielding too) before the first is written. Past the request's deadline it stops at a chunk
 * boundary with RequestTimeLimit; what was written stands, and sending the same records again skips it.
 */
/**
 * A namespace or memory record outside the caller's scope, as the InvalidParams to refuse the import with (before
 * anything is written); null when it is inside (or there is no scope). store/importPreview applies the same rule.
 */
export function outOfScope(rec: ExportRecord, i: number, scope: Scope | undefined): CairnError | null {
  if (!scope) return null;
  const path =
    rec.type === 'namespace'
      ? rec.path
      : rec.type === 'memory'
        ? rec.memory.namespace
        : rec.type === 'episode'
          ? rec.episode.namespace
          : rec.type === 'branch'
            ? rec.branch.root
            : rec.type === 'branchMemory'
              ? rec.memory.namespace
              : null;
  if (path === null || pathInScope(path, scope)) return null;
  return new CairnError('InvalidParams', `records[${i}]: namespace ${path} is outside the caller's scope`, { field: `records[${i}]` });
}

export async function importRecords(
  store: Store,
  raw: unknown[],
  actor = 'import',
  ctx?: RequestContext,
  progress?: (done: number, total: number) => void,
  scope?: Scope,
  /** Told when branch rows were written (their vectors follow: Branches.onWrite). */
  onBranchRows?: () => void,
): Promise<ImportResult> {
  const chunk = Limits.chunkRecords;
  const records: ExportRecord[] = [];
  let until = performance.now() + CHUNK_MS;
  for (let i = 0; i < raw.length; i++) {
    const parsed = ExportRecord.safeParse(raw[i]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CairnError('InvalidParams', `records[${i}]: ${issue.message}`, {
        field: `records[${i}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`,
      });
    }
    const refused = outOfScope(parsed.data, i, scope);
    if (refused) throw refused;
    records.push(parsed.data);
    // Validation yields too, but is bounded by the message size: the deadline is checked between written chunks.
    if (performance.now() > until && i + 1 < raw.length) {
      await pace(undefined, {});
      until = performance.now() + CHUNK_MS;
    }
  }
  const counts = { memories: 0, history: 0, links: 0, skipped: 0 };
  const episodeCounts: EpisodeCounts = { episodes: 0, events: 0, skipped: 0 };
  const branchCounts: BranchCounts = { branches: 0, branchRows: 0, history: 0, skipped: 0 };
  let position = 0;
  for (let at = 0; at < records.length;) {
    if (at > 0) await pace(ctx, { records: at, total: records.length, ...counts });
    const applied = applyRecords(
      store,
      records,
      at,
      Math.min(at + chunk, records.length),
      performance.now() + CHUNK_MS,
      actor,
      counts,
      scope,
      episodeCounts,
      branchCounts,
    );
    position = applied.position || position;
    at = applied.next;
    progress?.(at, records.length);
  }
  if (episodeCounts.events > 0) catchUpEventText(store.db); // the events' vectors follow (index/wait covers them)
  if (branchCounts.branchRows > 0) onBranchRows?.(); // their vectors follow (index/wait covers them)
  return {
    ...counts,
    history: counts.history + branchCounts.history,
    skipped: counts.skipped + episodeCounts.skipped + branchCounts.skipped,
    branches: branchCounts.branches,
    branchRows: branchCounts.branchRows,
    position: position || store.position(),
    episodes: episodeCounts.episodes,
    events: episodeCounts.events,
  };
}

/**
 * Apply records[from, to) in one transaction, stopping early (after at least one) once `until` (performance.now())
 * has passed; adds to `counts`. Returns the index of the next record and the position of the last change (0: none).
 */
function applyRecords(
  store: Store,
  all: ExportRecord[],
  from: number,
  to: number,
  until: number,
  actor: string,
  counts: { memories: number; history: number; links: number; skipped: number },
  scope?: Scope,
  episodeCounts: EpisodeCounts = { episodes: 0, events: 0, skipped: 0 },
  branchCounts: BranchCounts = { branches: 0, branchRows: 0, history: 0, skipped: 0 },
): { next: number; position: number } {
  const db = store.db;
  let next = from;
  // With a scope, records that name stored memories or namespaces (history, links, rejected values) apply only to
  // those inside it; the others are skipped.
  const memoryInScope = (id: string) => {
    if (!scope) return true;
    const row = stmt(db, 'SELECT n.path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ?').get(id) as
      { path: string } | undefined;
    return !!row && pathInScope(row.path, scope);
  };
  const namespaceInScope = (id: string) => {
    if (!scope) return true;
    const row = stmt(db, 'SELECT path FROM namespaces WHERE id = ?').get(id) as { path: string } | undefined;
    return !!row && pathInScope(row.path, scope);
  };
  let memories = 0,
    history = 0,
    links = 0,
    skipped = 0;
  const position = store.transaction(() => {
    const nsById = stmt(db, 'SELECT id FROM namespaces WHERE id = ?');
    const nsLive = stmt(db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL');
    const localNs = (id: string, path: string, deleted: boolean): string => {
      if (nsById.get(id)) return id;
      const live = nsLive.get(path) as { id: string } | undefined;
      if (live && !deleted) return live.id;
      stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(
        id,
        path,
        store.now(),
        deleted ? store.now() : null,
        deleted ? actor : null,
      );
      return id;
    };
    const imported = importedBy(store);
    let last = 0;
    for (; next < to && (next === from || performance.now() < until); next++) {
      const rec = all[next];
      switch (rec.type) {
        case 'header':
          if (rec.format !== 'cairn-export') throw new CairnError('InvalidParams', 'not a Cairn export', { field: 'records' });
          break;
        case 'namespace': {
          if (nsById.get(rec.id)) break;
          const live = nsLive.get(rec.path);
          if (live && rec.deletedAt === null) break; // memories map onto the live namespace by path
          stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(
            rec.id,
            rec.path,
            fromIso(rec.createdAt),
            fromIso(rec.deletedAt),
            rec.deletedBy,
          );
          break;
        }
        case 'memory': {
          const m = rec.memory;
          const nsId = localNs(rec.namespaceId, m.namespace, false);
          const clash = stmt(db, 'SELECT 1 FROM memories WHERE id = ? OR (ns_id = ? AND key = ?)').get(m.id, nsId, m.key);
          if (clash) {
            skipped++;
            break;
          }
          // A value forgotten in this namespace is not re-learned by an import either.
          if (m.deletedAt === null && findRejection(db, store.keys, nsId, m.value, () => undefined)) {
            skipped++;
            break;
          }
          const rowid = Number(
            stmt(
              db,
              `INSERT INTO memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors,
               created_at, updated_at, valid_from, valid_to, expires_at, last_accessed_at, access_count, version, status, superseded_by, deleted_at, deleted_by, delete_reason)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            ).run(
              m.id,
              nsId,
              m.key,
              m.value,
              UNSTORED_VALUE_HASH,
              m.summary,
              m.kind,
              JSON.stringify(m.tags),
              m.importance,
              m.confidence,
              m.source,
              JSON.stringify(m.properties),
              JSON.stringify(m.anchors),
              fromIso(m.createdAt),
              fromIso(m.updatedAt),
              fromIso(m.validFrom),
              fromIso(m.validTo),
              fromIso(m.expiresAt),
              fromIso(m.lastAccessedAt),
              m.accessCount,
              m.version,
              m.status,
              m.supersededBy,
              fromIso(m.deletedAt),
              m.deletedBy,
              rec.deleteReason,
            ).lastInsertRowid,
          );
          store.reindexImported(rowid);
          imported.add(m.id);
          last = store.logImport(m.id, nsId, m.namespace, m.key);
          memories++;
          break;
        }
        case 'history': {
          const h = rec.entry;
          if (!memoryInScope(h.memoryId)) {
            skipped++;
            break;
          }
          if (!imported.has(h.memoryId) && stmt(db, 'SELECT 1 FROM memories WHERE id = ?').get(h.memoryId)) break; // history of a memory we kept as it was
          // the same entry again (an import repeated, or resumed): keep one
          if (
            stmt(db, 'SELECT 1 FROM history WHERE memory_id = ? AND op = ? AND version = ? AND at = ?').get(
              h.memoryId,
              h.op,
              h.version,
              fromIso(h.at),
            )
          )
            break;
          stmt(
            db,
            'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          ).run(
            h.memoryId,
            h.op,
            h.actor,
            h.reason,
            fromIso(h.at),
            h.version,
            h.previous ? JSON.stringify(h.previous) : null,
            h.state ? JSON.stringify(h.state) : null,
            h.detail ? JSON.stringify(h.detail) : null,
          );
          history++;
          break;
        }
        case 'link': {
          const l = rec.link;
          if (!memoryInScope(l.from) || !memoryInScope(l.to)) {
            skipped++;
            break;
          }
          const both = stmt(db, 'SELECT count(*) AS c FROM memories WHERE id IN (?, ?)').get(l.from, l.to) as { c: number };
          if (both.c < 2) {
            skipped++;
            break;
          }
          links += stmt(db, 'INSERT OR IGNORE INTO links(src, dst, type, created_at, actor) VALUES (?, ?, ?, ?, ?)').run(
            l.from,
            l.to,
            l.type,
            fromIso(l.createdAt),
            l.actor,
          ).changes;
          break;
        }
        case 'rejected': {
          if (!nsById.get(rec.namespaceId) || !namespaceInScope(rec.namespaceId)) {
            skipped++;
            break;
          }
          // Keyed hashes are keyed with the exporting store's secret: re-key from the memory's value when it came along.
          const owner =
            rec.memoryId !== null && store.keys
              ? (stmt(db, 'SELECT value FROM memories WHERE id = ? AND ns_id = ?').get(rec.memoryId, rec.namespaceId) as
                  { value: string } | undefined)
              : undefined;
          const hash = owner ? rejectionHash(store.keys!, owner.value) : rec.valueHash;
          stmt(db, 'INSERT OR IGNORE INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES (?, ?, ?, ?, ?)').run(
            rec.namespaceId,
            hash,
            rec.memoryId,
            rec.actor,
            fromIso(rec.at),
          );
          break;
        }
        case 'episode':
          importEpisode(db, rec, localNs(rec.namespaceId, rec.episode.namespace, false), episodeCounts);
          break;
        case 'event':
          importEvent(db, rec, episodeCounts, (path) => !scope || pathInScope(path, scope), store.now());
          break;
        case 'branch':
          importBranch(db, rec, store.position(), branchCounts);
          break;
        case 'branchMemory':
          importBranchRow(db, rec, branchCounts, (path) => !scope || pathInScope(path, scope));
          break;
        case 'branchHistory':
          importBranchHistory(db, rec, branchCounts, (path) => !scope || pathInScope(path, scope));
          break;
      }
    }
    return last;
  });
  counts.memories += memories;
  counts.history += history;
  counts.links += links;
  counts.skipped += skipped;
  return { next, position };
}
