/**
 * The Store: every read and write of Cairn's SQLite file. Each write runs in one
 * BEGIN IMMEDIATE transaction that updates the memory and appends history and a
 * change-log row; listeners hear about the change only after it committed. The
 * full-text index follows the change log in batches (catchUpFullText), and every
 * full-text search and index/wait catches it up first, so a write is found at once.
 */
import * as fs from 'node:fs';
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem } from '../protocol/namespace';
import {
  type Anchor,
  type DidChangeParams,
  type GetParams,
  type HistoryEntry,
  type HistoryParams,
  type HistoryResult,
  type Include,
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
} from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { identifierCompounds, identifierIndexText } from '../text/identifiers';
import {
  contentColumns,
  mergeContent,
  refuseBadSupersede,
  refuseDeleted,
  refuseRejected,
  refuseStaleVersion,
  sameContent,
  summaryOf,
  SYSTEM_ANCHORS,
  SYSTEM_EXPIRE,
  validateContent,
} from './write-rules';
import { openDatabase, stmt, writeTx, WAL_CHECKPOINT_PAGES, type DB, type OpenOptions } from './db';
import { BackgroundCheckpointer, FALLBACK_AUTOCHECKPOINT_PAGES, type MergeResult } from './checkpointer';
import { compileFilter } from './filter';
import { and, HISTORY_COLUMNS, iso, isoReq, MEMORY_COLUMNS, toMemory, UNSTORED_VALUE_HASH, visibility, type MemoryRow } from './rows';
import { pathInScope, scopePredicate, type SqlFragment } from './scope';
import { excluded, ftsArm, namespaceToken, type ArmHit, type ArmQuery } from './search-fts';
import { recordGit } from './git-visibility';
import { SCHEMA_VERSION } from './schema';
import { decodePrevious, decodeState, encodePrevious, encodeState, inlineValue, ROW_VALUE_GLOB } from './history-codec';
import { IndexFeed } from './index-feed';
import { VectorTables } from './vectors';
import { loadStoreKeys, type StoreKeys } from './keys';
import { findRejection, liftRejection, rejectValue, rekeyLegacy } from './rejected';

export type ChangeListener = (change: DidChangeParams) => void;

/** A live memory's anchors, for re-checking them (server/anchor-check.ts). */
export interface AnchoredRow {
  rowid: number;
  id: string;
  namespace: string;
  key: string;
  anchors: Anchor[];
}

/**
 * Full text is indexed this long after the first write that leaves it behind, for every write since, in one
 * transaction: FTS5 writes a new segment (about 7 WAL pages) per committing transaction, so indexing each write
 * in its own commit cost about half of a single upsert. A search or index/wait does not wait for the timer: it
 * catches the index up first.
 */
export const FTS_DELAY_MS = 25;
/**
 * While the vector indexer runs (fullTextFollower), its passes catch the full text up in their own commit, every
 * KICK_DELAY_MS (50 ms) under a stream of writes: the store's own timer then only backs them up, this long after a
 * write (a pass delayed by a slow model or by searches).
 */
export const FTS_BACKUP_DELAY_MS = 100;
/** Change-log rows read per step while catching the full-text index up. */
const FTS_STEP = 1000;
/** Change-log ops that can change a memory's indexed text (the others change state only: deleted, superseded...). */
const TEXT_OPS = new Set(['create', 'update', 'restore', 'import']);

interface Target {
  id?: string;
  namespace?: string;
  key?: string;
  actor?: string;
  reason?: string;
  /** When given, the memory must lie in this scope (by id or by key), else NotFound. */
  scope?: Scope;
}

export class Store {
  readonly db: DB;
  readonly path: string;
  readonly vecAvailable: boolean;
  readonly vecError: string | null;
  /** Why the full-text arm ranks with FTS5's bm25() instead of cairn_bm25 (null: it uses cairn_bm25). */
  readonly rankingError: string | null;
  readonly schemaVersion: number;
  readonly vectors: VectorTables;
  /** The store's secrets (keyed hashes, receipt signing); null for a read-only open of a store that has none yet. */
  readonly keys: StoreKeys | null;
  /** The vector indexer's SQL (index/indexer.ts). */
  readonly feed: IndexFeed;
  private listeners = new Set<ChangeListener>();
  private pending: DidChangeParams[] = [];
  /** Injected clock, so tests can move time. */
  now: () => number = () => Date.now();

  private readonly log: (msg: string) => void;
  private readonly readonly: boolean;
  /** WAL checkpoints in a worker thread (checkpointInBackground), once the daemon asked for them. */
  private checkpointer: BackgroundCheckpointer | null = null;
  /** SQLite's total_changes() at the last checkpoint(): whether anything was written since. */
  private changesAtCheckpoint = -1;

  constructor(file: string, opts: OpenOptions = {}) {
    this.log = opts.log ?? ((m: string) => process.stderr.write(`[cairn] ${m}\n`));
    this.readonly = opts.readonly ?? false;
    const o = openDatabase(file, opts);
    this.db = o.db;
    this.path = file;
    this.vecAvailable = o.vec;
    this.vecError = o.vecError;
    this.rankingError = o.rankingError;
    this.schemaVersion = o.schemaVersion;
    this.vectors = new VectorTables(this.db, o.vec, () => this.position());
    this.feed = new IndexFeed(this.db);
    this.keys = loadStoreKeys(file, { create: !opts.readonly });
    if (!opts.readonly) {
      // Deleted content is overwritten with zeros, so purge, erase and retention leave no text in freed space.
      this.db.pragma('secure_delete = ON');
      this.healFts();
      writeTx(this.db, () => rekeyLegacy(this.db, this.keys!));
    }
  }

  close(): void {
    if (this.ftsTimer) clearTimeout(this.ftsTimer);
    this.ftsTimer = null;
    if (!this.db.open) return;
    try {
      this.catchUpFullText(); // the next opener finds the index current
    } catch {
      /* busy: the next writer, search or open catches up */
    }
    this.checkpointer?.close(); // its connection first: the last connection to close folds the WAL in and removes it
    this.checkpointer = null;
    this.db.close();
  }

  onChange(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Run `fn` as one write transaction (BEGIN IMMEDIATE); change events are emitted after commit. */
  transaction<T>(fn: () => T): T {
    return this.write(fn);
  }

  /** For import: index a row inserted as-is (anchors; its full text follows its `import` change, see catchUpFullText). */
  reindexImported(rowid: number): void {
    const r = this.rowBy('m.rowid = ?', rowid)!;
    this.writeAnchors(rowid, JSON.parse(r.anchors));
  }

  /** For import: one change-log row per imported memory so derived indexes pick it up. */
  logImport(memoryId: string, nsId: string, nsPath: string, key: string): number {
    return this.logChange('import', memoryId, nsId, nsPath, key);
  }

  /** Run a write transaction and emit its change events after commit. */
  private write<T>(fn: () => T): T {
    const outer = !this.db.inTransaction;
    try {
      const r = writeTx(this.db, fn);
      if (outer) {
        this.vectors.settle(true);
        this.flushEvents();
        this.checkpointer?.committed(this.ftsWritten);
        this.ftsWritten = false;
      }
      return r;
    } catch (e) {
      if (outer) {
        this.ftsWritten = false;
        this.pending = [];
        this.vectors.settle(false);
      }
      throw e;
    } finally {
      if (outer && this.afterWrite.length) this.runAfterWrite();
    }
  }

  /** Upkeep that must survive the request's own rollback (re-keying a legacy rejection that refused a write). */
  private afterWrite: (() => void)[] = [];
  private runAfterWrite(): void {
    const fns = this.afterWrite;
    this.afterWrite = [];
    try {
      writeTx(this.db, () => fns.forEach((f) => f()));
    } catch {
      /* best effort: the next refusal tries again */
    }
  }

  private flushEvents(): void {
    const events = this.pending;
    this.pending = [];
    this.fire(events);
    if (events.length === 0 || this.emitted < 0) return; // nobody watches for external changes
    // Own positions move the announced mark only while no other process committed in between (data_version
    // unchanged); otherwise noticeExternalChanges announces the others' rows and skips these.
    for (const ev of events) this.ownAhead.add(ev.position);
    if (this.dataVersion() === this.seenDataVersion) {
      this.emitted = Math.max(this.emitted, ...this.ownAhead);
      this.ownAhead.clear();
    }
  }

  private fire(events: DidChangeParams[]): void {
    if (events.length) this.scheduleFullText();
    for (const ev of events)
      for (const l of this.listeners) {
        try {
          l(ev);
        } catch {
          /* a listener's failure must not affect the store */
        }
      }
  }

  // -------------------------------------------------------------------------
  // change log
  // -------------------------------------------------------------------------
  /** @internal (store modules): append a change-log row; listeners hear of it after commit. */
  logChange(op: string, memoryId: string | null, nsId: string | null, nsPath: string | null, key: string | null): number {
    const at = this.now();
    const position = Number(
      stmt(this.db, 'INSERT INTO changes(memory_id, ns_id, op, at) VALUES (?, ?, ?, ?)').run(memoryId, nsId, op, at).lastInsertRowid,
    );
    // The vector arm applies the change log before its next query (VectorTables.refresh), so it sees this change at
    // once; the full-text index catches up before its next query (catchUpFullText).
    this.pending.push({ position, id: memoryId, namespace: nsPath, key, op });
    return position;
  }

  position(): number {
    const r = stmt(this.db, 'SELECT max(position) AS p FROM changes').get() as { p: number | null };
    return r.p ?? 0;
  }

  /** Change-log position up to which listeners have heard of every change (own and external). */
  private emitted = -1;
  /** Own changes above `emitted`, already announced. */
  private readonly ownAhead = new Set<number>();
  private seenDataVersion = -1;

  private dataVersion(): number {
    // A cached statement: db.pragma() prepares the statement again on every call (once per write here).
    return (stmt(this.db, 'PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  /**
   * Tell listeners about change-log rows another process appended (the CLI's `--direct`, a script with its own
   * connection), so a daemon broadcasts and embeds every write, not only its own. Cheap when nothing changed:
   * SQLite's data_version says whether another connection committed. Returns how many changes were announced.
   */
  noticeExternalChanges(limit = 1000): number {
    if (!this.db.open) return 0;
    const dv = this.dataVersion();
    if (this.emitted < 0) {
      this.emitted = this.position();
      this.seenDataVersion = dv;
      this.ownAhead.clear();
      return 0;
    }
    if (dv === this.seenDataVersion) return 0;
    const rows = stmt(
      this.db,
      `SELECT c.position AS position, c.memory_id AS id, n.path AS namespace, m.key AS key, c.op AS op
         FROM changes c LEFT JOIN memories m ON m.id = c.memory_id LEFT JOIN namespaces n ON n.id = c.ns_id
        WHERE c.position > ? ORDER BY c.position LIMIT ?`,
    ).all(this.emitted, limit) as DidChangeParams[];
    if (rows.length < limit) this.seenDataVersion = dv; // else: more to read on the next call
    if (rows.length === 0) return 0;
    this.emitted = rows[rows.length - 1].position;
    const external = rows.filter((r) => !this.ownAhead.delete(r.position));
    for (const p of this.ownAhead) if (p <= this.emitted) this.ownAhead.delete(p);
    this.fire(external);
    return external.length;
  }

  /** Changes after `position`, oldest first (the indexer's feed). */
  changesSince(position: number, limit: number): { position: number; memoryId: string | null; op: string }[] {
    return stmt(this.db, 'SELECT position, memory_id AS memoryId, op FROM changes WHERE position > ? ORDER BY position LIMIT ?').all(
      position,
      limit,
    ) as {
      position: number;
      memoryId: string | null;
      op: string;
    }[];
  }

  // -------------------------------------------------------------------------
  // full-text index maintenance
  // -------------------------------------------------------------------------
  private ftsPut(
    rowid: number,
    m: { key: string; value: string; summary: string | null; tags: string[]; nsId: string },
    fresh = false,
  ): void {
    if (!fresh) stmt(this.db, 'DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
    this.ftsWritten = true;
    const idents = identifierIndexText(`${m.key} ${m.value}`);
    stmt(this.db, 'INSERT INTO memories_fts(rowid, key, value, summary, tags, idents, ns) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      rowid,
      `${m.key.replace(/[._/:-]+/g, ' ')} ${m.key} ${identifierCompounds(m.key)}`,
      m.value,
      m.summary ?? '',
      m.tags.join(' '),
      idents,
      namespaceToken(m.nsId),
    );
  }

  /** A full-text row was written in the current transaction (a new FTS5 segment at commit: the background merge). */
  private ftsWritten = false;
  private ftsTimer: NodeJS.Timeout | null = null;
  /**
   * Set by the vector indexer: true while its passes follow the change log and catch the full text up in their own
   * commit (Indexer.loop), one commit per pass instead of two; the timer below then waits FTS_BACKUP_DELAY_MS.
   */
  fullTextFollower: (() => boolean) | null = null;

  /** Index the full text of recent writes soon, in one batch (FTS_DELAY_MS, or FTS_BACKUP_DELAY_MS, see above). */
  private scheduleFullText(): void {
    if (this.ftsTimer || this.db.readonly) return;
    const delay = this.fullTextFollower?.() ? FTS_BACKUP_DELAY_MS : FTS_DELAY_MS;
    this.ftsTimer = setTimeout(() => {
      this.ftsTimer = null;
      try {
        this.catchUpFullText();
      } catch {
        /* busy or closed: the next write, search, index/wait or open catches up */
      }
    }, delay);
    this.ftsTimer.unref?.();
  }

  /**
   * Bring the full-text index up to the change log: re-index the text of every memory a change after the `fts`
   * watermark created, updated, restored or imported, in one transaction, and move the watermark. Cheap when
   * current. Every full-text query and index/wait runs it first, so a search right after a write finds the write.
   * Returns the watermark. A read-only connection cannot write the index: it answers from what is indexed.
   */
  catchUpFullText(): number {
    const wm = this.ftsWatermark();
    if (this.db.readonly || wm >= this.position()) return wm;
    if (this.db.inTransaction) return writeTx(this.db, () => this.indexFullTextAfter(this.ftsWatermark())); // committed by the outer write
    try {
      const r = writeTx(this.db, () => this.indexFullTextAfter(this.ftsWatermark()));
      this.checkpointer?.committed(this.ftsWritten);
      return r;
    } finally {
      this.ftsWritten = false;
    }
  }

  private indexFullTextAfter(wm: number): number {
    for (;;) {
      const changes = stmt(this.db, 'SELECT position, memory_id AS id, op FROM changes WHERE position > ? ORDER BY position LIMIT ?').all(
        wm,
        FTS_STEP,
      ) as { position: number; id: string | null; op: string }[];
      if (changes.length === 0) return wm;
      // Per memory: whether its text changed, and whether it was created here (no entry of it can be indexed yet).
      const touched = new Map<string, boolean>();
      for (const c of changes) if (c.id !== null && TEXT_OPS.has(c.op) && !touched.has(c.id)) touched.set(c.id, c.op === 'create');
      if (touched.size > 0) {
        const rows = stmt(
          this.db,
          'SELECT id, rowid, key, value, summary, tags, ns_id FROM memories WHERE id IN (SELECT value FROM json_each(?))',
        ).all(JSON.stringify([...touched.keys()])) as {
          id: string;
          rowid: number;
          key: string;
          value: string;
          summary: string | null;
          tags: string;
          ns_id: string;
        }[];
        // A memory purged since has no row; its entry (if any) was removed with it.
        for (const r of rows)
          this.ftsPut(
            r.rowid,
            { key: r.key, value: r.value, summary: r.summary, tags: JSON.parse(r.tags), nsId: r.ns_id },
            touched.get(r.id) === true,
          );
      }
      wm = changes[changes.length - 1].position;
      stmt(this.db, `UPDATE index_state SET watermark = ? WHERE name = 'fts'`).run(wm);
      if (changes.length < FTS_STEP) return wm;
    }
  }

  /**
   * At open: catch the FTS index up with the change log, or rebuild it whole when it was never built or was
   * dropped (older schema, fresh FTS table: watermark 0).
   */
  private healFts(): void {
    const wm = (stmt(this.db, `SELECT watermark FROM index_state WHERE name = 'fts'`).get() as { watermark: number }).watermark;
    const pos = this.position();
    if (wm >= pos && pos > 0) return;
    if (wm > 0) {
      writeTx(this.db, () => this.indexFullTextAfter(wm));
      return;
    }
    const count = (stmt(this.db, 'SELECT count(*) AS c FROM memories').get() as { c: number }).c;
    if (pos === 0 && count === 0) return;
    // An index dropped because an older Cairn wrote it in another format or shape (schema.ts FTS_FORMAT), or never built.
    if (count > 0) this.log(`rebuilding the full-text index of ${count} memories`);
    this.rebuildFullText();
  }

  /**
   * Rebuild the full-text index from the memories themselves, whatever its watermark says, and set the watermark to
   * the head of the change log (restore runs it on a copy before the copy replaces the store: store/backup.ts).
   * Returns how many memories were indexed.
   */
  rebuildFullText(): number {
    const pos = this.position();
    let n = 0;
    writeTx(this.db, () => {
      stmt(this.db, 'DELETE FROM memories_fts').run();
      const page = stmt(this.db, 'SELECT rowid, key, value, summary, tags, ns_id FROM memories WHERE rowid > ? ORDER BY rowid LIMIT 1000');
      for (let after = 0; ;) {
        const rows = page.all(after) as {
          rowid: number;
          key: string;
          value: string;
          summary: string | null;
          tags: string;
          ns_id: string;
        }[];
        if (rows.length === 0) break;
        for (const r of rows)
          this.ftsPut(r.rowid, { key: r.key, value: r.value, summary: r.summary, tags: JSON.parse(r.tags), nsId: r.ns_id });
        n += rows.length;
        after = rows[rows.length - 1].rowid;
      }
      stmt(this.db, `UPDATE index_state SET watermark = ? WHERE name = 'fts'`).run(pos);
    });
    return n;
  }

  // -------------------------------------------------------------------------
  // namespaces
  // -------------------------------------------------------------------------
  private checkNamespace(path: string, field = 'namespace'): void {
    const p = namespaceProblem(path);
    if (p) throw new CairnError('InvalidNamespace', p, { field });
  }

  private liveNamespace(path: string): { id: string; path: string } | undefined {
    return stmt(this.db, 'SELECT id, path FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(path) as
      { id: string; path: string } | undefined;
  }

  private ensureNamespace(path: string): string {
    const existing = this.liveNamespace(path);
    if (existing) return existing.id;
    const id = uuidv7(this.now());
    stmt(this.db, 'INSERT INTO namespaces(id, path, created_at) VALUES (?, ?, ?)').run(id, path, this.now());
    return id;
  }

  listNamespaces(root?: string): NamespaceInfo[] {
    if (root !== undefined) this.checkNamespace(root, 'root');
    const pred = root !== undefined ? scopePredicate({ root, includeUser: false }, 'n.path')! : { sql: '1', params: [] };
    const now = this.now();
    const vis = visibility(undefined, now);
    const rows = stmt(
      this.db,
      `SELECT n.id, n.path, n.created_at,
           (SELECT count(*) FROM memories m WHERE m.ns_id = n.id AND ${vis.sql}) AS cnt
         FROM namespaces n WHERE n.deleted_at IS NULL AND ${pred.sql} ORDER BY n.path`,
    ).all(...vis.params, ...pred.params) as { id: string; path: string; created_at: number; cnt: number }[];
    return rows.map((r) => ({ id: r.id, path: r.path, createdAt: isoReq(r.created_at), memoryCount: r.cnt }));
  }

  renameNamespace(from: string, to: string, actor = 'user'): { renamed: number; position: number } {
    this.checkNamespace(from, 'from');
    this.checkNamespace(to, 'to');
    if (from === to) throw new CairnError('InvalidState', 'from and to are the same namespace', { field: 'to' });
    if (isUnder(to, from)) throw new CairnError('InvalidState', `cannot move ${from} inside itself (${to})`, { field: 'to' });
    return this.write(() => {
      const sub = scopePredicate({ root: from, includeUser: false }, 'path')!;
      const rows = stmt(this.db, `SELECT id, path FROM namespaces WHERE deleted_at IS NULL AND ${sub.sql}`).all(...sub.params) as {
        id: string;
        path: string;
      }[];
      if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${from}`, { field: 'from' });
      for (const r of rows) {
        const target = to + r.path.slice(from.length);
        const problem = namespaceProblem(target);
        if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'to' });
        const clash = this.liveNamespace(target);
        if (clash && !rows.some((x) => x.id === clash.id))
          throw new CairnError('InvalidState', `namespace ${target} already exists`, { field: 'to' });
      }
      // Two steps so intermediate states never collide on the unique live path index.
      const upd = stmt(this.db, 'UPDATE namespaces SET path = ? WHERE id = ?');
      for (const r of rows) upd.run(`\u0000${r.id}`, r.id);
      for (const r of rows) upd.run(to + r.path.slice(from.length), r.id);
      const position = this.logChange('namespace_rename', null, rows[0].id, to, null);
      void actor;
      return { renamed: rows.length, position };
    });
  }

  deleteNamespace(path: string, actor = 'user', reason?: string): { deleted: number; memories: number; position: number } {
    this.checkNamespace(path, 'path');
    return this.write(() => {
      const sub = scopePredicate({ root: path, includeUser: false }, 'path')!;
      const rows = stmt(this.db, `SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${sub.sql}`).all(...sub.params) as {
        id: string;
      }[];
      if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${path}`, { field: 'path' });
      const now = this.now();
      const ids = rows.map((r) => r.id);
      const ph = ids.map(() => '?').join(',');
      const memories = (
        stmt(this.db, `SELECT count(*) AS c FROM memories WHERE ns_id IN (${ph}) AND deleted_at IS NULL`).get(...ids) as { c: number }
      ).c;
      stmt(this.db, `UPDATE namespaces SET deleted_at = ?, deleted_by = ?, delete_reason = ? WHERE id IN (${ph})`).run(
        now,
        actor,
        reason ?? null,
        ...ids,
      );
      const position = this.logChange('namespace_delete', null, ids[0], path, null);
      return { deleted: ids.length, memories, position };
    });
  }

  // -------------------------------------------------------------------------
  // reading memories
  // -------------------------------------------------------------------------
  private rowBy(where: string, ...params: unknown[]): MemoryRow | undefined {
    return stmt(this.db, `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where}`).get(...params) as
      MemoryRow | undefined;
  }

  private rowByKey(namespace: string, key: string): MemoryRow | undefined {
    return this.rowBy('n.path = ? AND n.deleted_at IS NULL AND m.key = ?', namespace, key);
  }

  private resolveTarget(t: Target): MemoryRow {
    let row: MemoryRow | undefined;
    if (t.id !== undefined) {
      if (t.namespace !== undefined || t.key !== undefined)
        throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
      const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [t.id] }, scopePredicate(t.scope));
      row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${t.id}${t.scope ? ' in scope' : ''}`, { field: 'id' });
    } else {
      if (t.namespace === undefined || t.key === undefined)
        throw new CairnError('InvalidParams', 'id or namespace+key is required', {
          field: t.namespace === undefined ? 'namespace' : 'key',
        });
      this.checkNamespace(t.namespace);
      const where = and(
        { sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [t.namespace, t.key] },
        scopePredicate(t.scope),
      );
      row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${t.namespace}/${t.key}${t.scope ? ' in scope' : ''}`, { field: 'key' });
    }
    return row;
  }

  private isExpired(r: MemoryRow, now: number): boolean {
    return r.expires_at !== null && r.expires_at <= now;
  }

  get(p: GetParams): Memory {
    const now = this.now();
    let row: MemoryRow | undefined;
    if ('id' in p) {
      const scope = scopePredicate(p.scope);
      const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.id] }, scope);
      row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${p.id}${p.scope ? ' in scope' : ''}`, { field: 'id' });
    } else {
      this.checkNamespace(p.namespace);
      const where = and(
        { sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [p.namespace, p.key] },
        scopePredicate(p.scope),
      );
      row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
    }
    if (!p.includeDeleted) {
      if (row.deleted_at !== null) {
        throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} was deleted at ${iso(row.deleted_at)} by ${row.deleted_by}`, {
          field: 'id' in p ? 'id' : 'key',
          deletedAt: iso(row.deleted_at),
          deletedBy: row.deleted_by,
        });
      }
      if (this.isExpired(row, now))
        throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} expired at ${iso(row.expires_at)}`, {
          field: 'id' in p ? 'id' : 'key',
          expiresAt: iso(row.expires_at),
        });
    }
    this.touch([row.rowid]);
    row.access_count += 1;
    row.last_accessed_at = now;
    return toMemory(row);
  }

  /** A live memory by id without counting it as an access (NotFound otherwise). */
  peek(id: string, scope?: Scope): Memory {
    const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL AND m.deleted_at IS NULL', params: [id] }, scopePredicate(scope));
    const row = this.rowBy(where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field: 'id' });
    return toMemory(row);
  }

  rowidOf(id: string): number | undefined {
    return (stmt(this.db, 'SELECT rowid FROM memories WHERE id = ?').get(id) as { rowid: number } | undefined)?.rowid;
  }

  /** Record reads (lastAccessedAt, accessCount). Not a change of content: no version, history or change-log row. */
  touch(rowids: number[]): void {
    if (rowids.length === 0 || this.db.readonly) return;
    const now = this.now();
    try {
      writeTx(this.db, () => {
        const st = stmt(this.db, 'UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1 WHERE rowid = ?');
        for (const r of rowids) st.run(now, r);
      });
    } catch {
      /* access statistics are best effort: a busy store must not fail a read */
    }
  }

  /** With `hidden`: rowids left out inside the query (a reader's git visibility, git/reader.ts). */
  list(p: ListParams, hidden?: Set<number> | null): ListResult {
    const limit = p.limit ?? 100;
    const now = this.now();
    let cursorSql: SqlFragment | null = null;
    if (p.cursor !== undefined) {
      const m = /^(\d+):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
      if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
      cursorSql = { sql: '(m.updated_at < ? OR (m.updated_at = ? AND m.rowid < ?))', params: [Number(m[1]), Number(m[1]), Number(m[2])] };
    }
    const where = and(
      visibility(p.include, now),
      scopePredicate(p.scope),
      compileFilter(p.filter),
      cursorSql,
      excluded({ exclude: hidden ?? undefined }),
    );
    const rows = stmt(
      this.db,
      `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.sql} ORDER BY m.updated_at DESC, m.rowid DESC LIMIT ?`,
    ).all(...where.params, limit + 1) as MemoryRow[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toMemory),
      nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.rowid}`).toString('base64url') : null,
    };
  }

  /** Memories by rowid (for search arms), in the order given. */
  /** What ranking a fused candidate needs (search fusion), without reading its value and JSON fields. */
  rankFacts(rowids: number[]): Map<number, { id: string; importance: number; confidence: number; updated_at: number }> {
    const rows = stmt(
      this.db,
      'SELECT rowid, id, importance, confidence, updated_at FROM memories WHERE rowid IN (SELECT value FROM json_each(?))',
    ).all(JSON.stringify(rowids)) as {
      rowid: number;
      id: string;
      importance: number;
      confidence: number;
      updated_at: number;
    }[];
    return new Map(rows.map((r) => [r.rowid, r]));
  }

  byRowids(rowids: number[]): Map<number, MemoryRow> {
    const out = new Map<number, MemoryRow>();
    if (rowids.length === 0) return out;
    // CROSS JOIN keeps memories as the outer loop (a rowid lookup each); one statement for any list length.
    const rows = stmt(
      this.db,
      `SELECT ${MEMORY_COLUMNS} FROM memories m CROSS JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(rowids)) as MemoryRow[];
    for (const r of rows) out.set(r.rowid, r);
    return out;
  }

  // -------------------------------------------------------------------------
  // history
  // -------------------------------------------------------------------------
  /** @internal (store modules): append a history row, applying the history cap. */
  appendHistory(
    memoryId: string,
    op: HistoryEntry['op'],
    actor: string,
    reason: string | null | undefined,
    version: number,
    previous: Memory | null,
    state: Memory | null,
    detail?: Record<string, unknown>,
    /** The write's time when the caller already took it (then the state's timestamps equal it and are not stored). */
    when?: number,
  ): void {
    const at = when ?? this.now();
    const facts = { memoryId, version, at };
    stmt(
      this.db,
      'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      memoryId,
      op,
      actor,
      reason ?? null,
      at,
      version,
      previous ? encodePrevious(previous, state, facts) : null,
      // A state is the memory row as just written, so it reads its value from the row (history-codec.ts).
      state ? encodeState(state, facts, true) : null,
      detail ? JSON.stringify(detail) : null,
    );
    const cap = this.historyCap();
    if (cap !== null) {
      stmt(
        this.db,
        'DELETE FROM history WHERE memory_id = ? AND seq NOT IN (SELECT seq FROM history WHERE memory_id = ? ORDER BY seq DESC LIMIT ?)',
      ).run(memoryId, memoryId, cap);
    }
  }

  /**
   * @internal (store modules): before a memory row's value changes, write its current value into the history
   * states that read it from the row, so every version stays readable exactly.
   */
  inlineRowValue(memoryId: string, value: string): void {
    const rows = stmt(this.db, `SELECT seq, state FROM history WHERE memory_id = ? AND state GLOB '${ROW_VALUE_GLOB}'`).all(memoryId) as {
      seq: number;
      state: string;
    }[];
    const put = stmt(this.db, 'UPDATE history SET state = ? WHERE seq = ?');
    for (const r of rows) put.run(inlineValue(r.state, value), r.seq);
  }

  historyCap(): number | null {
    const r = stmt(this.db, `SELECT value FROM meta WHERE key = 'history_cap'`).get() as { value: string } | undefined;
    return r ? Number(r.value) : null;
  }

  setHistoryCap(cap: number | null): void {
    this.write(() => {
      if (cap === null) stmt(this.db, `DELETE FROM meta WHERE key = 'history_cap'`).run();
      else
        stmt(this.db, `INSERT INTO meta(key, value) VALUES ('history_cap', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(
          String(cap),
        );
    });
  }

  history(p: HistoryParams): HistoryResult {
    let memoryId: string;
    if (p.id !== undefined && p.scope === undefined) memoryId = p.id;
    else if (p.id !== undefined) {
      // A scoped history by id: the memory must (still) live in a namespace of the scope. A purged memory has
      // no row left to check, so it has no history in any scope.
      const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.id] }, scopePredicate(p.scope));
      const row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${p.id} in scope`, { field: 'id' });
      memoryId = row.id;
    } else {
      if (p.namespace === undefined || p.key === undefined)
        throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: 'id' });
      this.checkNamespace(p.namespace);
      const where = and(
        { sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [p.namespace, p.key] },
        scopePredicate(p.scope),
      );
      const row = this.rowBy(where.sql, ...where.params);
      if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
      memoryId = row.id;
    }
    const rows = stmt(this.db, `SELECT ${HISTORY_COLUMNS} FROM history h WHERE h.memory_id = ? ORDER BY h.seq DESC LIMIT ?`).all(
      memoryId,
      p.limit ?? 100,
    ) as HistoryRow[];
    if (rows.length === 0) throw new CairnError('NotFound', `no history for ${memoryId}`, { field: 'id' });
    const cap = this.historyCap();
    return { entries: rows.map(historyEntry), capped: cap !== null };
  }

  // -------------------------------------------------------------------------
  // writing memories
  // -------------------------------------------------------------------------
  upsert(p: UpsertParams): UpsertResult {
    return this.write(() => this.upsertInTx(p));
  }

  upsertBatch(items: UpsertParams[], actor?: string): UpsertBatchResult {
    return this.write(() => {
      const results: UpsertBatchResult['results'] = items.map((it) => {
        try {
          const r = writeTx(this.db, () => this.upsertInTx(actor && !it.actor ? { ...it, actor } : it));
          return {
            ok: true as const,
            id: r.memory.id,
            created: r.created,
            position: r.position,
            version: r.memory.version,
            ...(r.warnings ? { warnings: r.warnings } : {}),
          };
        } catch (e) {
          if (e instanceof CairnError) return { ok: false as const, error: { code: e.code, message: e.message, data: e.data } };
          throw e;
        }
      });
      return { results, position: this.position() };
    });
  }

  private validateContent(p: UpsertParams): void {
    this.checkNamespace(p.namespace);
    if (p.scope) {
      scopePredicate(p.scope); // validates the scope's own paths (InvalidNamespace)
      if (!pathInScope(p.namespace, p.scope))
        throw new CairnError('InvalidParams', `namespace ${p.namespace} is outside the given scope`, { field: 'namespace' });
    }
    validateContent(p);
  }

  private upsertInTx(p: UpsertParams): UpsertResult {
    this.validateContent(p);
    const now = this.now();
    const actor = p.actor ?? p.source ?? 'user';
    const existing = this.rowByKey(p.namespace, p.key);
    const valueHash = UNSTORED_VALUE_HASH;
    const detail: Record<string, unknown> = {};

    // The rules (write-rules.ts), in order, with this store's lookups in between.
    const op = refuseDeleted(p, existing, detail);
    refuseStaleVersion(p, existing);
    const nsId = this.ensureNamespace(p.namespace);
    refuseRejected(
      p,
      findRejection(this.db, this.keys, nsId, p.value, (f) => this.afterWrite.push(f)),
      detail,
    );
    let superseded: MemoryRow | undefined;
    if (p.supersedes !== undefined) {
      const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.supersedes] }, scopePredicate(p.scope));
      superseded = this.rowBy(where.sql, ...where.params);
    }
    refuseBadSupersede(p, existing, superseded);
    const { next, warn } = mergeContent(p, existing, op, detail);

    // Nothing changed: no new version, no history, no change-log row.
    if (existing && op === 'update' && !superseded && sameContent(existing, next)) {
      return { memory: toMemory(existing), created: false, position: this.position(), changed: false, ...warn };
    }
    const summary = summaryOf(p.value);

    const previous = existing ? toMemory(existing) : null;
    let rowid: number;
    let id: string;
    let version: number;
    const cols = contentColumns(next, valueHash, summary);
    if (existing) {
      id = existing.id;
      rowid = existing.rowid;
      version = existing.version + 1;
      if (existing.value !== next.value) this.inlineRowValue(id, existing.value);
      stmt(
        this.db,
        `UPDATE memories SET value = ?, value_hash = ?, summary = ?, kind = ?, tags = ?, importance = ?, confidence = ?, source = ?, properties = ?, anchors = ?,
             valid_from = ?, valid_to = ?, expires_at = ?, status = ?, updated_at = ?, version = ?, superseded_by = NULL,
             deleted_at = NULL, deleted_by = NULL, delete_reason = NULL WHERE rowid = ?`,
      ).run(...cols, now, version, rowid);
    } else {
      id = uuidv7(now);
      version = 1;
      rowid = Number(
        stmt(
          this.db,
          `INSERT INTO memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors,
               valid_from, valid_to, expires_at, status, created_at, updated_at, version)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(id, nsId, p.key, ...cols, now, now, version).lastInsertRowid,
      );
    }
    const anchorsJson = cols[9] as string;
    if (existing ? existing.anchors !== anchorsJson : next.anchors.length > 0) this.writeAnchors(rowid, next.anchors);
    // The row as just written (what a re-read would return), without reading it back.
    const state = toMemory({
      rowid,
      id,
      ns_id: nsId,
      ns_path: p.namespace,
      key: p.key,
      value: next.value,
      value_hash: valueHash,
      summary,
      kind: next.kind,
      tags: cols[4] as string,
      importance: next.importance,
      confidence: next.confidence,
      source: next.source,
      properties: cols[8] as string,
      anchors: anchorsJson,
      created_at: existing ? existing.created_at : now,
      updated_at: now,
      valid_from: next.validFrom,
      valid_to: next.validTo,
      expires_at: next.expiresAt,
      last_accessed_at: existing ? existing.last_accessed_at : null,
      access_count: existing ? existing.access_count : 0,
      version,
      status: next.status,
      superseded_by: null,
      deleted_at: null,
      deleted_by: null,
      delete_reason: null,
    });
    this.appendHistory(id, op, actor, p.reason, version, previous, state, Object.keys(detail).length ? detail : undefined, now);
    if (p.git) recordGit(this.db, id, version, p.git, now); // git-aware memory: where this version was written
    let position = this.logChange(op, id, nsId, p.namespace, p.key);

    if (superseded) {
      const before = toMemory(superseded);
      stmt(
        this.db,
        `UPDATE memories SET status = 'superseded', superseded_by = ?, version = version + 1, updated_at = ? WHERE rowid = ?`,
      ).run(id, now, superseded.rowid);
      const after = toMemory(this.rowBy('m.rowid = ?', superseded.rowid)!);
      this.appendHistory(
        superseded.id,
        'supersede',
        actor,
        p.reason ?? `superseded by ${p.namespace}/${p.key}`,
        after.version,
        before,
        after,
        { supersededBy: id },
      );
      position = this.logChange('supersede', superseded.id, superseded.ns_id, superseded.ns_path, superseded.key);
    }
    return { memory: state, created: !existing, position, changed: true, ...warn };
  }

  private writeAnchors(rowid: number, anchors: Anchor[]): void {
    stmt(this.db, 'DELETE FROM anchors WHERE memory_rowid = ?').run(rowid);
    const ins = stmt(
      this.db,
      'INSERT INTO anchors(memory_rowid, idx, path, symbol, start_line, end_line, stale) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    anchors.forEach((a, i) => ins.run(rowid, i, a.path, a.symbol ?? null, a.startLine ?? null, a.endLine ?? null, a.stale ? 1 : 0));
  }

  delete(t: Target): WriteResult {
    return this.write(() => this.softDelete(t, 'delete'));
  }

  forget(t: Target): WriteResult {
    return this.write(() => {
      const r = this.softDelete(t, 'forget');
      const row = this.rowBy('m.id = ?', r.memory.id)!;
      rejectValue(this.db, this.keys!, row.ns_id, row.value, row.id, t.actor ?? 'user', this.now());
      return r;
    });
  }

  private softDelete(t: Target, op: 'delete' | 'forget' | 'expire'): WriteResult {
    const row = this.resolveTarget(t);
    if (row.deleted_at !== null) {
      if (op === 'forget') {
        // Forgetting an already-deleted memory still rejects its value.
        return { memory: toMemory(row), position: this.logChange('forget', row.id, row.ns_id, row.ns_path, row.key) };
      }
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
        field: t.id !== undefined ? 'id' : 'key',
        deletedAt: iso(row.deleted_at),
        deletedBy: row.deleted_by,
      });
    }
    const now = this.now();
    const actor = op === 'expire' ? SYSTEM_EXPIRE : (t.actor ?? 'user');
    const before = toMemory(row);
    stmt(
      this.db,
      'UPDATE memories SET deleted_at = ?, deleted_by = ?, delete_reason = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
    ).run(now, actor, t.reason ?? null, now, row.rowid);
    const after = toMemory(this.rowBy('m.rowid = ?', row.rowid)!);
    this.appendHistory(row.id, op, actor, t.reason, after.version, before, after);
    const position = this.logChange(op, row.id, row.ns_id, row.ns_path, row.key);
    return { memory: after, position };
  }

  restore(t: Target): WriteResult {
    return this.write(() => {
      const row = this.resolveTarget(t);
      if (row.deleted_at === null)
        throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is not deleted`, { field: t.id !== undefined ? 'id' : 'key' });
      const now = this.now();
      const before = toMemory(row);
      const lifted = liftRejection(this.db, this.keys, row.ns_id, row.value);
      // A memory that expired comes back without its expiry, or it would vanish again at once.
      const expires = row.expires_at !== null && row.expires_at <= now ? null : row.expires_at;
      stmt(
        this.db,
        'UPDATE memories SET deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, expires_at = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
      ).run(expires, now, row.rowid);
      const after = toMemory(this.rowBy('m.rowid = ?', row.rowid)!);
      this.appendHistory(
        row.id,
        'restore',
        t.actor ?? 'user',
        t.reason,
        after.version,
        before,
        after,
        lifted ? { unrejected: true } : undefined,
      );
      const position = this.logChange('restore', row.id, row.ns_id, row.ns_path, row.key);
      return { memory: after, position };
    });
  }

  /** Admin: remove a deleted memory from every table. History keeps one `purge` row (who, when, why) without content. */
  purge(t: Target): PurgeResult {
    return this.write(() => {
      const row = this.resolveTarget(t);
      if (row.deleted_at === null)
        throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is live; delete it before purging`, {
          field: t.id !== undefined ? 'id' : 'key',
        });
      const position = this.purgeRow(row, t.actor ?? 'user', t.reason);
      ftsCompact(this.db);
      return { id: row.id, position };
    });
  }

  /** @internal (store modules): remove a memory from every table, leaving one contentless purge row. */
  purgeRow(
    row: Pick<MemoryRow, 'rowid' | 'id' | 'ns_id' | 'key' | 'version'> & { ns_path: string | null },
    actor: string,
    reason?: string,
  ): number {
    ftsSecureDelete(this.db, row.rowid);
    this.deleteVectors(row.rowid);
    stmt(this.db, 'DELETE FROM links WHERE src = ? OR dst = ?').run(row.id, row.id);
    stmt(this.db, 'DELETE FROM anchors WHERE memory_rowid = ?').run(row.rowid);
    stmt(this.db, 'DELETE FROM history WHERE memory_id = ?').run(row.id);
    stmt(this.db, 'UPDATE rejected_values SET memory_id = NULL WHERE memory_id = ?').run(row.id);
    stmt(this.db, 'DELETE FROM memories WHERE rowid = ?').run(row.rowid);
    this.forgetDuplicatesOf([row.rowid]);
    this.appendHistory(row.id, 'purge', actor, reason, row.version + 1, null, null, { namespace: row.ns_path, key: row.key });
    return this.logChange('purge', row.id, row.ns_id, row.ns_path, row.key);
  }

  // -------------------------------------------------------------------------
  // code anchors (hover)
  // -------------------------------------------------------------------------
  /** Visible memories with an anchor on one of `paths`: one entry per matching anchor. Indexed lookup, no scoring. */
  anchoredAt(paths: string[], scope?: Scope): { memory: Memory; anchor: Anchor }[] {
    if (paths.length === 0) return [];
    const vis = and(visibility(undefined, this.now()), scopePredicate(scope));
    const rows = stmt(
      this.db,
      `SELECT ${MEMORY_COLUMNS}, a.idx AS anchor_idx FROM anchors a JOIN memories m ON m.rowid = a.memory_rowid JOIN namespaces n ON n.id = m.ns_id
         WHERE a.path IN (${paths.map(() => '?').join(',')}) AND ${vis.sql} ORDER BY m.importance DESC, m.updated_at DESC, m.id`,
    ).all(...paths, ...vis.params) as (MemoryRow & { anchor_idx: number })[];
    return rows
      .map((r) => {
        const memory = toMemory(r);
        return { memory, anchor: memory.anchors[r.anchor_idx] };
      })
      .filter((x) => x.anchor !== undefined);
  }

  /** Live memories anchored to one of `paths` (null: to any path), with all their anchors (for line tracking). */
  anchorsByPath(paths: string[] | null, scope?: Scope): AnchoredRow[] {
    if (paths !== null && paths.length === 0) return [];
    const sc = scopePredicate(scope) ?? { sql: '1', params: [] };
    const where = paths === null ? '1' : `a.path IN (SELECT value FROM json_each(?))`;
    const rows = stmt(
      this.db,
      `SELECT DISTINCT m.rowid AS rowid, m.id, n.path AS namespace, m.key, m.anchors FROM anchors a JOIN memories m ON m.rowid = a.memory_rowid JOIN namespaces n ON n.id = m.ns_id WHERE ${where} AND m.deleted_at IS NULL AND n.deleted_at IS NULL AND ${sc.sql}`,
    ).all(...(paths === null ? [] : [JSON.stringify(paths)]), ...sc.params) as (Omit<AnchoredRow, 'anchors'> & { anchors: string })[];
    return rows.map((r) => ({ ...r, anchors: JSON.parse(r.anchors) as Anchor[] }));
  }

  /** One live memory's anchors by id (the injection's citation check). */
  anchorsOf(id: string): AnchoredRow | null {
    const r = stmt(
      this.db,
      'SELECT m.rowid AS rowid, m.id, n.path AS namespace, m.key, m.anchors FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ? AND m.deleted_at IS NULL',
    ).get(id) as (Omit<AnchoredRow, 'anchors'> & { anchors: string }) | undefined;
    return r ? { ...r, anchors: JSON.parse(r.anchors) as Anchor[] } : null;
  }

  /**
   * Anchors whose code is gone or changed beyond recognition: a new version with the anchors marked stale, and an
   * active memory sent to review (status `proposed`), with a history row by `system:anchors` giving the reason — so
   * nothing changes silently and the previous state stays in history.
   */
  staleAnchors(rowid: number, anchors: Anchor[], reason: string): WriteResult | null {
    return this.write(() => {
      const r = this.rowBy('m.rowid = ? AND m.deleted_at IS NULL', rowid);
      if (!r) return null;
      const now = this.now();
      const before = toMemory(r);
      const status = r.status === 'active' ? 'proposed' : r.status;
      stmt(this.db, 'UPDATE memories SET anchors = ?, status = ?, version = version + 1, updated_at = ? WHERE rowid = ?').run(
        JSON.stringify(anchors),
        status,
        now,
        rowid,
      );
      this.writeAnchors(rowid, anchors);
      const after = toMemory(this.rowBy('m.rowid = ?', rowid)!);
      const stale = anchors.filter((a) => a.stale).map((a) => a.path);
      this.appendHistory(r.id, 'update', SYSTEM_ANCHORS, reason, after.version, before, after, { staleAnchors: stale }, now);
      const position = this.logChange('update', r.id, r.ns_id, r.ns_path, r.key);
      return { memory: after, position };
    });
  }

  /**
   * Move anchors with the code they point at (line shifts, stale marks). This
   * is positional bookkeeping, not a content change: no new version and no
   * history row, but clients hear of it (op `anchor`) to refresh their views.
   */
  updateAnchors(rowid: number, anchors: Anchor[]): void {
    this.write(() => {
      const r = this.rowBy('m.rowid = ?', rowid);
      if (!r) return;
      stmt(this.db, 'UPDATE memories SET anchors = ? WHERE rowid = ?').run(JSON.stringify(anchors), rowid);
      this.writeAnchors(rowid, anchors);
      this.pending.push({ position: this.position(), id: r.id, namespace: r.ns_path, key: r.key, op: 'anchor' });
    });
  }

  /** @internal */
  deleteVectors(rowid: number): void {
    this.vectors.deleteRow(rowid);
    stmt(this.db, 'DELETE FROM duplicate_candidates WHERE memory_rowid = ?').run(rowid);
  }

  /**
   * @internal (store modules), after memory rows were removed. A possible-duplicate row naming a removed memory as
   * the other joins no memory, so reads drop it and nothing needs an index to find it (schema 5) — except where its
   * rowid can name a new memory: SQLite gives a new row the largest rowid left plus one. So when the largest went,
   * the rows naming anything above the new largest go too (a scan, only then). `all` (erase): every row naming
   * these memories goes now.
   */
  forgetDuplicatesOf(rowids: number[], all = false): void {
    if (rowids.length === 0) return;
    if (all)
      stmt(this.db, 'DELETE FROM duplicate_candidates WHERE other_rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rowids));
    const top = (stmt(this.db, 'SELECT max(rowid) AS r FROM memories').get() as { r: number | null }).r ?? 0;
    if (rowids.some((r) => r > top)) stmt(this.db, 'DELETE FROM duplicate_candidates WHERE other_rowid > ?').run(top);
  }

  // -------------------------------------------------------------------------
  // TTL sweep and namespace purge
  // -------------------------------------------------------------------------
  sweep(batch = 500): SweepResult {
    const now = this.now();
    let expired = 0;
    let purged = 0;
    this.write(() => {
      const due = stmt(
        this.db,
        `SELECT m.id FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND m.expires_at IS NOT NULL AND m.expires_at <= ? AND n.deleted_at IS NULL LIMIT ?`,
      ).all(now, batch) as { id: string }[];
      for (const d of due) {
        this.softDelete({ id: d.id, reason: 'expired' }, 'expire');
        expired++;
      }
    });
    this.write(() => {
      const dead = stmt(
        this.db,
        `SELECT m.rowid, m.id, m.ns_id, m.key, m.version, n.path AS ns_path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.deleted_at IS NOT NULL LIMIT ?`,
      ).all(batch) as (Pick<MemoryRow, 'rowid' | 'id' | 'ns_id' | 'key' | 'version'> & { ns_path: string })[];
      for (const d of dead) {
        this.purgeRow(d, 'system:namespace-delete', 'namespace deleted');
        purged++;
      }
      if (purged > 0) ftsCompact(this.db);
    });
    return { expired, purged, position: this.position() };
  }

  // -------------------------------------------------------------------------
  // links
  // -------------------------------------------------------------------------
  private liveInScope(id: string, scope: Scope | undefined, field: string): MemoryRow {
    const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL AND m.deleted_at IS NULL', params: [id] }, scopePredicate(scope));
    const row = this.rowBy(where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field });
    if (this.isExpired(row, this.now())) throw new CairnError('NotFound', `memory ${id} has expired`, { field });
    return row;
  }

  link(p: LinkParams): LinkResult {
    if (p.from === p.to) throw new CairnError('InvalidState', 'a memory cannot link to itself', { field: 'to' });
    return this.write(() => {
      const a = this.liveInScope(p.from, p.scope, 'from');
      this.liveInScope(p.to, p.scope, 'to');
      const actor = p.actor ?? 'user';
      const now = this.now();
      const created =
        stmt(this.db, 'INSERT OR IGNORE INTO links(src, dst, type, created_at, actor) VALUES (?, ?, ?, ?, ?)').run(
          p.from,
          p.to,
          p.type,
          now,
          actor,
        ).changes > 0;
      const row = stmt(this.db, 'SELECT * FROM links WHERE src = ? AND dst = ? AND type = ?').get(p.from, p.to, p.type) as LinkRow;
      const position = created ? this.logChange('link', a.id, a.ns_id, a.ns_path, a.key) : this.position();
      return { link: toLink(row), created, position };
    });
  }

  unlink(p: LinkParams): UnlinkResult {
    return this.write(() => {
      const a = this.liveInScope(p.from, p.scope, 'from');
      this.liveInScope(p.to, p.scope, 'to');
      const removed = stmt(this.db, 'DELETE FROM links WHERE src = ? AND dst = ? AND type = ?').run(p.from, p.to, p.type).changes > 0;
      if (!removed) throw new CairnError('NotFound', `no ${p.type} link from ${p.from} to ${p.to}`, { field: 'type' });
      return { removed, position: this.logChange('unlink', a.id, a.ns_id, a.ns_path, a.key) };
    });
  }

  neighbors(p: NeighborsParams): NeighborsResult {
    this.liveInScope(p.id, p.scope, 'id');
    const dir = p.direction ?? 'both';
    const now = this.now();
    const where = and(visibility(undefined, now), scopePredicate(p.scope));
    const typeSql = p.type ? ' AND l.type = ?' : '';
    const typeParams = p.type ? [p.type] : [];
    const out: NeighborsResult['neighbors'] = [];
    const q = (join: string, match: string, direction: 'out' | 'in') => {
      const rows = stmt(
        this.db,
        `SELECT ${MEMORY_COLUMNS}, l.type AS link_type FROM links l JOIN memories m ON m.id = l.${join} JOIN namespaces n ON n.id = m.ns_id WHERE l.${match} = ?${typeSql} AND ${where.sql} ORDER BY l.created_at, m.id`,
      ).all(p.id, ...typeParams, ...where.params) as (MemoryRow & { link_type: Link['type'] })[];
      for (const r of rows) out.push({ memory: toMemory(r), type: r.link_type, direction });
    };
    if (dir !== 'in') q('dst', 'src', 'out');
    if (dir !== 'out') q('src', 'dst', 'in');
    return { neighbors: out };
  }

  // -------------------------------------------------------------------------
  // status
  // -------------------------------------------------------------------------
  counts() {
    const c = stmt(
      this.db,
      `SELECT count(*) AS memories,
           coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'active'), 0) AS active,
           coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'proposed'), 0) AS proposed,
           coalesce(sum(m.deleted_at IS NULL AND n.deleted_at IS NULL AND m.status = 'superseded'), 0) AS superseded,
           coalesce(sum(m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL), 0) AS deleted
         FROM memories m JOIN namespaces n ON n.id = m.ns_id`,
    ).get() as { memories: number; active: number; proposed: number; superseded: number; deleted: number };
    const one = (sql: string) => (stmt(this.db, sql).get() as { c: number }).c;
    return {
      ...c,
      namespaces: one('SELECT count(*) AS c FROM namespaces WHERE deleted_at IS NULL'),
      history: one('SELECT count(*) AS c FROM history'),
      links: one('SELECT count(*) AS c FROM links'),
      rejectedValues: one('SELECT count(*) AS c FROM rejected_values'),
    };
  }

  /**
   * Copy WAL pages into the database without waiting for readers (called from the daemon's periodic
   * sweep); when that copied everything, cut the WAL file to zero bytes.
   */
  checkpoint(): void {
    // In the background while writes come in; an idle store (no write since the last checkpoint, e.g. the daemon's
    // first sweep right after it opened) is checkpointed here: nothing waits, and no worker is started for it.
    // "No write" is counted in rows changed, not in transactions: the sweep itself commits one (usually changing
    // nothing) right before it asks for this checkpoint, so counting commits started the worker at every sweep.
    const changes = this.totalChanges();
    const wrote = changes !== this.changesAtCheckpoint;
    this.changesAtCheckpoint = changes;
    if (this.checkpointer?.alive && (this.checkpointer.running || wrote)) return this.checkpointer.request(true);
    try {
      const [r] = this.db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      if (r && r.busy === 0 && r.log === r.checkpointed) this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      /* busy: the next one will do */
    }
  }

  /**
   * Checkpoint the WAL from a worker thread with its own connection from now on (the daemon), instead of inside
   * the commit that crosses the threshold on this connection (store/checkpointer.ts). False when this store
   * cannot (in memory, read-only); if the worker fails later, automatic checkpoints come back on this connection.
   */
  checkpointInBackground(): boolean {
    if (this.checkpointer || this.readonly || this.path === ':memory:' || !this.db.open) return !!this.checkpointer;
    const synchronous = (this.db.pragma('synchronous', { simple: true }) as number) >= 2 ? 'FULL' : 'NORMAL';
    this.checkpointer = new BackgroundCheckpointer(this.path, require.resolve('better-sqlite3'), synchronous, (reason) => {
      this.log(`${reason}; checkpoints run in the write path again`);
      this.checkpointer = null;
      if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    });
    this.db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
    this.changesAtCheckpoint = this.totalChanges();
    return true;
  }

  /** Rows this connection has changed since it opened (SQLite's total_changes()). */
  private totalChanges(): number {
    return (stmt(this.db, 'SELECT total_changes() AS c').get() as { c: number }).c;
  }

  /**
   * Background checkpoints done so far, whether their worker runs now, and its merge runs of the full-text index
   * (runs, slices, the latest one) (null: none run in the background).
   */
  backgroundCheckpoints(): {
    completed: number;
    running: boolean;
    merges: number;
    mergeSlices: number;
    lastMerge: MergeResult | null;
  } | null {
    const c = this.checkpointer;
    return c ? { completed: c.completed, running: c.running, merges: c.merges, mergeSlices: c.mergeSlices, lastMerge: c.lastMerge } : null;
  }

  /** Run a checkpoint of this connection (`fn`) while the background one is held off (SQLite refuses two at once). */
  withoutBackgroundCheckpoint<T>(fn: () => T): T {
    return this.checkpointer ? this.checkpointer.paused(fn) : fn();
  }

  fileSize(): number {
    try {
      let size = fs.statSync(this.path).size;
      try {
        size += fs.statSync(this.path + '-wal').size;
      } catch {
        /* no WAL file */
      }
      return size;
    } catch {
      return 0;
    }
  }

  /** The full-text arm (search-fts.ts), over an index caught up with every write first (read-your-writes). */
  fullTextArm(query: string, q: ArmQuery): ArmHit[] {
    this.catchUpFullText();
    return ftsArm(this.db, query, q);
  }

  ftsWatermark(): number {
    return (stmt(this.db, `SELECT watermark FROM index_state WHERE name = 'fts'`).get() as { watermark: number }).watermark;
  }

  static readonly schemaVersion = SCHEMA_VERSION;
}

export { SYSTEM_EXPIRE };

/**
 * Merge the full-text index into one segment, which drops every entry of
 * deleted rows still held by older segments (a row's earlier versions, or a
 * term secure-delete left in place), so purged text leaves the index pages.
 * Costs about 150 ms per 20k memories; run once per purge, erase or sweep batch.
 */
export function ftsCompact(db: DB): void {
  stmt(db, `INSERT INTO memories_fts(memories_fts) VALUES ('optimize')`).run();
}

/** Delete a full-text row with FTS5's secure-delete, so its terms leave the index pages rather than stay behind a tombstone. */
export function ftsSecureDelete(db: DB, rowid: number): void {
  stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1)`).run();
  try {
    stmt(db, 'DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
  } finally {
    stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 0)`).run();
  }
}

interface HistoryRow {
  seq: number;
  memory_id: string;
  op: HistoryEntry['op'];
  actor: string;
  reason: string | null;
  at: number;
  version: number;
  previous: string | null;
  state: string | null;
  detail: string | null;
  /** The memory row's value, for a state that reads it from the row (selected by HISTORY_COLUMNS). */
  row_value?: string | null;
}

/** A history row as the protocol shows it (rows store states compactly: see history-codec.ts). */
export function historyEntry(r: HistoryRow): HistoryEntry {
  const facts = { memoryId: r.memory_id, version: r.version, at: r.at };
  const state = r.state ? decodeState(r.state, facts, r.row_value) : null;
  return {
    seq: r.seq,
    memoryId: r.memory_id,
    op: r.op,
    actor: r.actor,
    reason: r.reason,
    at: isoReq(r.at),
    version: r.version,
    previous: r.previous ? decodePrevious(r.previous, state, facts) : null,
    state,
    detail: r.detail ? JSON.parse(r.detail) : null,
  };
}

interface LinkRow {
  src: string;
  dst: string;
  type: Link['type'];
  created_at: number;
  actor: string;
}
const toLink = (r: LinkRow): Link => ({ from: r.src, to: r.dst, type: r.type, createdAt: isoReq(r.created_at), actor: r.actor });

export type { Include };
