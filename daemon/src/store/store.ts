/**
 * The Store: every read and write of Cairn's SQLite file. Each write runs in one BEGIN IMMEDIATE transaction that
 * updates the memory and appends history and a change-log row; listeners hear about the change only after it
 * committed. The full-text index follows the change log in batches (catchUpFullText), and every full-text search
 * and index/wait catches it up first, so a write is found at once.
 *
 * This class owns the connection, the write transaction and the connection's upkeep (checkpoints); the work is in
 * small files named for what it does: writes.ts (upsert), deletes.ts (delete, forget, restore, purge, sweep),
 * reads.ts, history.ts, namespaces.ts, anchors.ts, links.ts, change-log.ts (change log and events),
 * full-text.ts (the full-text index following the change log) and wal.ts (checkpoints).
 */
import type {
  Anchor,
  GetParams,
  HistoryEntry,
  HistoryParams,
  HistoryResult,
  Include,
  LinkParams,
  LinkResult,
  ListParams,
  ListResult,
  Memory,
  NamespaceInfo,
  NeighborsParams,
  NeighborsResult,
  PurgeResult,
  Scope,
  SweepResult,
  UnlinkResult,
  UpsertBatchResult,
  UpsertParams,
  UpsertResult,
  WriteResult,
} from '../protocol/types';
import { SYSTEM_EXPIRE } from './write-rules';
import { openDatabase, settleRanking, trimCHeap, writeTx, type DB, type OpenOptions } from './db';
import type { MemoryRow } from './rows';
import type { ArmHit, ArmQuery, BranchText } from './search-fts';
import { SCHEMA_VERSION } from './schema';
import { IndexFeed } from './index-feed';
import { VectorTables } from './vectors';
import { loadStoreKeys, type StoreKeys } from './keys';
import { rekeyLegacy } from './rejected';
import { derivedCommit } from './derived-commit';
import { ChangeLog, type ChangeListener } from './change-log';
import { FullText } from './full-text';
import * as namespaces from './namespaces';
import * as reads from './reads';
import * as history from './history';
import * as writes from './writes';
import * as deletes from './deletes';
import * as anchors from './anchors';
import * as links from './links';
import { Wal } from './wal';

export { FTS_BACKUP_DELAY_MS, FTS_DELAY_MS, ftsCompact, ftsSecureDelete } from './full-text';
export { historyEntry } from './history';
export type { AnchoredRow } from './anchors';
export type { ChangeListener } from './change-log';

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
  /** @internal (store modules): the change log and its events (change-log.ts). */
  readonly changeLog: ChangeLog;
  /** @internal (store modules): the full-text index following the change log (full-text.ts). */
  readonly fullText: FullText;
  /** Injected clock, so tests can move time. */
  now: () => number = () => Date.now();
  /**
   * Set by the vector indexer: true while its passes follow the change log and catch the full text up in their own
   * commit (Indexer.loop), one commit per pass instead of two; the full-text timer then waits FTS_BACKUP_DELAY_MS.
   */
  fullTextFollower: (() => boolean) | null = null;

  /** WAL checkpoints (wal.ts). */
  private readonly wal: Wal;
  /** Upkeep that must survive the request's own rollback (re-keying a legacy rejection that refused a write). */
  private afterWriteFns: (() => void)[] = [];

  constructor(file: string, opts: OpenOptions = {}) {
    const log = opts.log ?? ((m: string) => process.stderr.write(`[cairn] ${m}\n`));
    const o = openDatabase(file, opts);
    this.db = o.db;
    this.path = file;
    this.vecAvailable = o.vec;
    this.vecError = o.vecError;
    this.rankingError = o.rankingError;
    this.schemaVersion = o.schemaVersion;
    this.wal = new Wal(this.db, file, opts.readonly ?? false, log);
    this.changeLog = new ChangeLog(this);
    this.fullText = new FullText(this, (written) => this.committedOwn(written, false));
    this.vectors = new VectorTables(this.db, o.vec, () => this.position());
    this.feed = new IndexFeed(this.db);
    this.keys = loadStoreKeys(file, { create: !opts.readonly });
    if (!opts.readonly) {
      // Deleted content is overwritten with zeros, so purge, erase and retention leave no text in freed space.
      this.db.pragma('secure_delete = ON');
      this.fullText.heal(log);
      writeTx(this.db, () => rekeyLegacy(this.db, this.keys!));
    }
  }

  close(): void {
    this.fullText.stop();
    if (!this.db.open) return;
    try {
      this.catchUpFullText(); // the next opener finds the index current
    } catch {
      /* busy: the next writer, search or open catches up */
    }
    this.wal.close(); // its connection first: the last connection to close folds the WAL in and removes it
    this.db.close();
  }

  onChange(fn: ChangeListener): () => void {
    return this.changeLog.onChange(fn);
  }

  /**
   * A transaction of derived data (the vector indexer's vectors, duplicates and watermark) that commits without an
   * fsync of its own when the store runs at synchronous=FULL (derived-commit.ts).
   */
  derivedTransaction<T>(fn: () => T): T {
    return derivedCommit(this.db, () => this.commit(fn, true));
  }

  /** Run `fn` as one write transaction (BEGIN IMMEDIATE); change events are emitted after commit. */
  transaction<T>(fn: () => T): T {
    return this.commit(fn, false);
  }

  /** transaction() and derivedTransaction(): `derived` tells the WAL's worker that no client write is in it. */
  private commit<T>(fn: () => T, derived: boolean): T {
    const outer = !this.db.inTransaction;
    try {
      const r = writeTx(this.db, fn);
      if (outer) {
        this.vectors.settle(true);
        this.changeLog.flush();
        this.committedOwn(this.fullText.written, derived);
        this.fullText.written = false;
      }
      return r;
    } catch (e) {
      if (outer) {
        this.fullText.written = false;
        this.changeLog.discard();
        this.vectors.settle(false);
      }
      throw e;
    } finally {
      if (outer && this.afterWriteFns.length) this.runAfterWrite();
    }
  }

  /**
   * After a commit of this connection's: the ranking's remembered row lengths take the full-text index as the commit
   * left it when it wrote the index (settleRanking), and the WAL's worker is told (a merge follows a full-text write).
   */
  private committedOwn(ftsWritten: boolean, derived: boolean): void {
    if (ftsWritten) settleRanking(this.db);
    this.wal.committed(ftsWritten, derived);
  }

  /** @internal (store modules): run `fn` after the current write, committed or not, in a transaction of its own. */
  afterWrite(fn: () => void): void {
    this.afterWriteFns.push(fn);
  }

  private runAfterWrite(): void {
    const fns = this.afterWriteFns;
    this.afterWriteFns = [];
    try {
      writeTx(this.db, () => fns.forEach((f) => f()));
    } catch {
      /* best effort: the next refusal tries again */
    }
  }

  /** For import: index a row inserted as-is (anchors; its full text follows its `import` change, see catchUpFullText). */
  reindexImported(rowid: number): void {
    const r = reads.rowBy(this.db, 'm.rowid = ?', rowid)!;
    anchors.writeAnchors(this.db, rowid, JSON.parse(r.anchors));
  }

  /** For import: one change-log row per imported memory so derived indexes pick it up. */
  logImport(memoryId: string, nsId: string, nsPath: string, key: string): number {
    return this.logChange('import', memoryId, nsId, nsPath, key);
  }

  // ---------------------------------------------------------------- change log (change-log.ts)
  /** @internal (store modules): append a change-log row; listeners hear of it after commit. */
  logChange(op: string, memoryId: string | null, nsId: string | null, nsPath: string | null, key: string | null): number {
    return this.changeLog.append(op, memoryId, nsId, nsPath, key);
  }

  position(): number {
    return this.changeLog.position();
  }

  /**
   * Tell listeners about change-log rows another process appended (the CLI's `--direct`, a script with its own
   * connection), so a daemon broadcasts and embeds every write, not only its own. Returns how many were announced.
   */
  noticeExternalChanges(limit = 1000): number {
    return this.changeLog.noticeExternalChanges(limit);
  }

  /** Changes after `position`, oldest first (the indexer's feed). */
  changesSince(position: number, limit: number): { position: number; memoryId: string | null; op: string }[] {
    return this.changeLog.since(position, limit);
  }

  // ---------------------------------------------------------------- full-text index (full-text.ts)
  /**
   * Bring the full-text index up to the change log, in one transaction; cheap when current. Every full-text query
   * and index/wait runs it first, so a search right after a write finds the write. Returns the watermark.
   */
  catchUpFullText(): number {
    return this.fullText.catchUp();
  }

  /**
   * Rebuild the full-text index from the memories themselves and set its watermark to the head of the change log
   * (restore runs it on a copy before the copy replaces the store: store/backup.ts). Returns how many were indexed.
   */
  rebuildFullText(): number {
    return this.fullText.rebuild();
  }

  /**
   * The full-text arm (search-fts.ts), over an index caught up with every write first (read-your-writes); with `branch`
   * a search on a memory branch (branch-overlay.ts).
   */
  fullTextArm(query: string, q: ArmQuery, branch?: BranchText): ArmHit[] {
    return this.fullText.arm(query, q, branch);
  }

  ftsWatermark(): number {
    return this.fullText.watermark();
  }

  // ---------------------------------------------------------------- namespaces (namespaces.ts)
  listNamespaces(root?: string): NamespaceInfo[] {
    return namespaces.listNamespaces(this, root);
  }

  renameNamespace(from: string, to: string, actor = 'user'): { renamed: number; position: number } {
    return namespaces.renameNamespace(this, from, to, actor);
  }

  deleteNamespace(path: string, actor = 'user', reason?: string): { deleted: number; memories: number; position: number } {
    return namespaces.deleteNamespace(this, path, actor, reason);
  }

  // ---------------------------------------------------------------- reads (reads.ts)
  get(p: GetParams): Memory {
    return reads.getMemory(this, p);
  }

  /** A live memory by id without counting it as an access (NotFound otherwise). */
  peek(id: string, scope?: Scope): Memory {
    return reads.peekMemory(this.db, id, scope);
  }

  rowidOf(id: string): number | undefined {
    return reads.rowidOf(this.db, id);
  }

  /** Record reads (lastAccessedAt, accessCount). Not a change of content: no version, history or change-log row. */
  touch(rowids: number[]): void {
    reads.touch(this, rowids);
  }

  /** With `hidden`: rowids left out inside the query (a reader's git visibility, git/reader.ts). */
  list(p: ListParams, hidden?: Set<number> | null): ListResult {
    return reads.listMemories(this, p, hidden);
  }

  /** What ranking a fused candidate needs (search fusion), without reading its value and JSON fields. */
  rankFacts(rowids: number[]): Map<number, { id: string; importance: number; confidence: number; updated_at: number }> {
    return reads.rankFacts(this.db, rowids);
  }

  /** Memories by rowid (for search arms). */
  byRowids(rowids: number[]): Map<number, MemoryRow> {
    return reads.byRowids(this.db, rowids);
  }

  counts() {
    return reads.counts(this.db);
  }

  // ---------------------------------------------------------------- history (history.ts)
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
    history.appendHistory(this, memoryId, op, actor, reason, version, previous, state, detail, when);
  }

  /**
   * @internal (store modules): before a memory row's value changes, write its current value into the history
   * states that read it from the row, so every version stays readable exactly.
   */
  inlineRowValue(memoryId: string, value: string): void {
    history.inlineRowValue(this.db, memoryId, value);
  }

  historyCap(): number | null {
    return history.historyCap(this.db);
  }

  setHistoryCap(cap: number | null): void {
    history.setHistoryCap(this, cap);
  }

  history(p: HistoryParams): HistoryResult {
    return history.readHistory(this.db, p);
  }

  // ---------------------------------------------------------------- writes (writes.ts, deletes.ts)
  upsert(p: UpsertParams): UpsertResult {
    return this.transaction(() => writes.upsertInTx(this, p));
  }

  upsertBatch(items: UpsertParams[], actor?: string): UpsertBatchResult {
    return writes.upsertBatch(this, items, actor);
  }

  delete(t: reads.Target): WriteResult {
    return this.transaction(() => deletes.softDelete(this, t, 'delete'));
  }

  forget(t: reads.Target): WriteResult {
    return deletes.forget(this, t);
  }

  restore(t: reads.Target): WriteResult {
    return deletes.restore(this, t);
  }

  /** Admin: remove a deleted memory from every table. History keeps one `purge` row (who, when, why) without content. */
  purge(t: reads.Target): PurgeResult {
    return deletes.purge(this, t);
  }

  /** @internal (store modules): remove a memory from every table, leaving one contentless purge row. */
  purgeRow(
    row: Pick<MemoryRow, 'rowid' | 'id' | 'ns_id' | 'key' | 'version'> & { ns_path: string | null },
    actor: string,
    reason?: string,
  ): number {
    return deletes.purgeRow(this, row, actor, reason);
  }

  /** @internal */
  deleteVectors(rowid: number): void {
    deletes.deleteVectors(this, rowid);
  }

  /** @internal (store modules), after memory rows were removed: see deletes.ts. `all` (erase): every row naming them. */
  forgetDuplicatesOf(rowids: number[], all = false): void {
    deletes.forgetDuplicatesOf(this, rowids, all);
  }

  /** TTL sweep and namespace purge, `batch` memories of each at a time. */
  sweep(batch = 500): SweepResult {
    return deletes.sweep(this, batch);
  }

  // ---------------------------------------------------------------- code anchors (anchors.ts)
  /** Visible memories with an anchor on one of `paths`: one entry per matching anchor. Indexed lookup, no scoring. */
  anchoredAt(paths: string[], scope?: Scope): { memory: Memory; anchor: Anchor }[] {
    return anchors.anchoredAt(this, paths, scope);
  }

  /** Live memories anchored to one of `paths` (null: to any path), with all their anchors (for line tracking). */
  anchorsByPath(paths: string[] | null, scope?: Scope): anchors.AnchoredRow[] {
    return anchors.anchorsByPath(this.db, paths, scope);
  }

  /** One live memory's anchors by id (the injection's citation check). */
  anchorsOf(id: string): anchors.AnchoredRow | null {
    return anchors.anchorsOf(this.db, id);
  }

  /** Anchors whose code is gone: a new version with them marked stale, an active memory sent to review. */
  staleAnchors(rowid: number, anchorList: Anchor[], reason: string): WriteResult | null {
    return anchors.staleAnchors(this, rowid, anchorList, reason);
  }

  /** Move anchors with the code they point at: no new version, but clients hear of it (op `anchor`). */
  updateAnchors(rowid: number, anchorList: Anchor[]): void {
    anchors.updateAnchors(this, rowid, anchorList);
  }

  // ---------------------------------------------------------------- links (links.ts)
  link(p: LinkParams): LinkResult {
    return links.link(this, p);
  }

  unlink(p: LinkParams): UnlinkResult {
    return links.unlink(this, p);
  }

  neighbors(p: NeighborsParams): NeighborsResult {
    return links.neighbors(this, p);
  }

  // ---------------------------------------------------------------- the connection's upkeep (wal.ts)
  /** Checkpoint the WAL (the daemon's periodic sweep); cut the WAL file to zero bytes when that copied everything. */
  checkpoint(): void {
    this.wal.checkpoint();
  }

  /** A large drop was committed: give its free pages back now, not at the next sweep (wal.ts reclaimSoon). */
  reclaimSoon(): void {
    this.wal.reclaimSoon();
  }

  /**
   * Checkpoint the WAL from a worker thread with its own connection from now on (the daemon). False when this
   * store cannot (in memory, read-only); if the worker fails later, checkpoints come back on this connection.
   */
  checkpointInBackground(): boolean {
    return this.wal.inBackground();
  }

  /** Background checkpoints and full-text merges done so far, and whether the worker runs now (null: no worker). */
  backgroundCheckpoints(): ReturnType<Wal['backgroundCheckpoints']> {
    return this.wal.backgroundCheckpoints();
  }

  /** Run a checkpoint of this connection (`fn`) while the background one is held off (SQLite refuses two at once). */
  withoutBackgroundCheckpoint<T>(fn: () => T): T {
    return this.wal.withoutBackgroundCheckpoint(fn);
  }

  fileSize(): number {
    return this.wal.fileSize();
  }

  /** The free pages' bytes, and whether this store gives them back (incremental auto-vacuum; wal.ts). */
  freeSpace(): { bytes: number; reclaims: boolean } {
    return { bytes: this.wal.freeBytes(), reclaims: this.wal.reclaims() };
  }

  /**
   * Give the memory the process freed back to the system (the C heap's, db.ts trimCHeap): after a bulk import
   * glibc keeps tens of MiB it freed. True when some was given back, null when this build cannot.
   */
  releaseFreedMemory(): boolean | null {
    return trimCHeap(this.db);
  }

  static readonly schemaVersion = SCHEMA_VERSION;
}

export { SYSTEM_EXPIRE };
export type { Include };
