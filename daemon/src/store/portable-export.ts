/**
 * Export as JSON Lines records (see ExportRecord in the protocol): ExportWalker reads an export in pages from one
 * snapshot, exportRecords returns a whole one (store/export). Paged exports: export-sessions.ts; import: portable.ts.
 */
import { openDatabase, stmt, type DB } from './db';
import { CairnError } from '../protocol/errors';
import { ExportRecord, Limits, type ExportParams } from '../protocol/types';
import { HISTORY_COLUMNS, MEMORY_COLUMNS, type MemoryRow } from './rows';
import { headerRecord, linkRecord, memoryRecord, namespaceRecord, rejectedRecord } from './export-records';
import { scopePredicate, type SqlFragment } from './scope';
import { historyEntry, type Store } from './store';
import { pace, type RequestContext } from '../server/limits';
import { episodeRecords, newEpisodeCursor } from './portable-episodes';
import { branchRecords, newBranchCursor } from './portable-branches';

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
