/**
 * The store connection's WAL: checkpoints from the daemon's periodic sweep, or from a background worker with its
 * own connection once the daemon asks for them (checkpointer.ts), told of every commit; the file's size; and the
 * free pages the sweep has that worker give back to the file system (a store with incremental auto-vacuum, db.ts).
 */
import * as fs from 'node:fs';
import { BackgroundCheckpointer, FALLBACK_AUTOCHECKPOINT_PAGES, type MergeResult, type ReclaimResult } from './checkpointer';
import { stmt, WAL_CHECKPOINT_PAGES, type DB } from './db';

/**
 * Free pages are given back once they are at least this many and this share of the file: below that SQLite's own
 * reuse of free pages for the next writes is cheaper than moving pages twice. A model switch at a million memories
 * frees ~14% of the file (the previous model's vectors), a large erasure or retention purge whatever it removed.
 */
export const RECLAIM_MIN_PAGES = 1024;
export const RECLAIM_MIN_SHARE = 1 / 16;
/** reclaimSoon: how often it asks again while free pages are left to give back, and for how long (40 times). */
export const RECLAIM_SOON_RETRY_MS = 250;
const RECLAIM_SOON_TRIES = 40;

export class Wal {
  /** WAL checkpoints in a worker thread (inBackground), once the daemon asked for them. */
  private checkpointer: BackgroundCheckpointer | null = null;
  /** SQLite's total_changes() at the last checkpoint(): whether anything was written since. */
  private changesAtCheckpoint = -1;

  constructor(
    private readonly db: DB,
    private readonly path: string,
    private readonly readonly: boolean,
    private readonly log: (msg: string) => void,
  ) {}

  /**
   * A write committed (`ftsWritten`: with a new full-text segment; `derived`: only derived data, the vector
   * indexer's): the background worker may checkpoint or merge.
   */
  committed(ftsWritten: boolean, derived = false): void {
    this.checkpointer?.committed(ftsWritten, derived);
  }

  /** Stop the background worker (its connection closes first: the last connection to close folds the WAL in). */
  close(): void {
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.soonTimer = null;
    this.checkpointer?.close();
    this.checkpointer = null;
  }

  /**
   * Copy WAL pages into the database without waiting for readers (called from the daemon's periodic
   * sweep); when that copied everything, cut the WAL file to zero bytes.
   */
  checkpoint(): void {
    // Free pages worth giving back: the worker moves the file's last pages into them, checkpoints and cuts the file.
    if (this.checkpointer?.alive && this.reclaimable() > 0 && this.checkpointer.reclaim()) return;
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
   * A large drop was just committed (a model switch's previous vectors): give the free pages back now rather than at
   * the next sweep (up to a minute later), when they pass RECLAIM_MIN_* and the background worker runs. It asks again
   * every RECLAIM_SOON_RETRY_MS while they still pass, for 10 s at most: while the worker is busy (a checkpoint or
   * merge), and after a run that stopped at a client's commit (searches commit their hits' access counts, so a run
   * under search load gives back a few slices at a time); then until a checkpoint has copied the whole WAL, which
   * cuts the file. After that the sweep does it as always.
   */
  reclaimSoon(tries = RECLAIM_SOON_TRIES, asked = false): void {
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.soonTimer = null;
    const c = this.checkpointer;
    if (!c?.alive || !this.db.open) return;
    if (this.reclaimable() > 0)
      asked = c.reclaim() || asked; // false while the worker is busy: asked again below
    else if (!c.working) {
      // The file is cut by a checkpoint that copies the whole WAL (the run's own last one, unless a reader's snapshot
      // held part of the WAL then): until one has, ask for it.
      const r = c.lastResult;
      if (!asked || (r && r.busy === 0 && r.log === r.checkpointed)) return;
      c.request(true);
    }
    if (tries > 1) {
      this.soonTimer = setTimeout(() => this.reclaimSoon(tries - 1, asked), RECLAIM_SOON_RETRY_MS);
      this.soonTimer.unref();
    }
  }

  private soonTimer: NodeJS.Timeout | null = null;

  /**
   * Checkpoint the WAL from a worker thread with its own connection from now on (the daemon), instead of inside
   * the commit that crosses the threshold on this connection (store/checkpointer.ts). False when this store
   * cannot (in memory, read-only); if the worker fails later, automatic checkpoints come back on this connection.
   */
  inBackground(): boolean {
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

  /**
   * Free pages (bytes) a sweep would give back now: 0 unless the store has incremental auto-vacuum (stores created
   * before it was the default keep their free pages for SQLite to reuse) and they pass RECLAIM_MIN_*, or the last
   * run stopped part way (then whatever is free).
   */
  reclaimable(): number {
    if (this.readonly || !this.reclaims()) return 0;
    const free = this.freePages();
    if (free === 0) return 0;
    // A run that stopped part way (at a client's commit, under search load often) is finished even once what is left
    // is under the share: else a switch's pages were given back only down to a sixteenth of the file (1,860 instead
    // of 1,768 MiB at a million).
    if (this.checkpointer?.lastReclaim?.complete === false) return free * this.pageSize();
    const pages = stmt(this.db, 'PRAGMA page_count').pluck().get() as number;
    return free >= RECLAIM_MIN_PAGES && free >= pages * RECLAIM_MIN_SHARE ? free * this.pageSize() : 0;
  }

  /** Whether the store has incremental auto-vacuum (its free pages can be given back a slice at a time). */
  reclaims(): boolean {
    if (!this.db.open) return false;
    return (this.autoVacuum ??= this.db.pragma('auto_vacuum', { simple: true }) as number) === 2;
  }

  /** The store's free pages in bytes: space the file holds that no table or index uses (SQLite reuses it first). */
  freeBytes(): number {
    return this.db.open ? this.freePages() * this.pageSize() : 0;
  }

  private freePages(): number {
    return stmt(this.db, 'PRAGMA freelist_count').pluck().get() as number;
  }

  private pageSize(): number {
    return (this.pageBytes ??= this.db.pragma('page_size', { simple: true }) as number);
  }

  private autoVacuum: number | undefined;
  private pageBytes: number | undefined;

  /** Rows this connection has changed since it opened (SQLite's total_changes()). */
  private totalChanges(): number {
    return (stmt(this.db, 'SELECT total_changes() AS c').get() as { c: number }).c;
  }

  /**
   * Background checkpoints done so far, whether their worker runs now, its merge runs of the full-text index
   * (runs, slices, the latest one) and its reclaim runs (runs, pages given back, the latest one) (null: none run in
   * the background).
   */
  backgroundCheckpoints(): {
    completed: number;
    running: boolean;
    merges: number;
    mergeSlices: number;
    lastMerge: MergeResult | null;
    reclaims: number;
    reclaimedPages: number;
    lastReclaim: ReclaimResult | null;
  } | null {
    const c = this.checkpointer;
    return c
      ? {
          completed: c.completed,
          running: c.running,
          merges: c.merges,
          mergeSlices: c.mergeSlices,
          lastMerge: c.lastMerge,
          reclaims: c.reclaims,
          reclaimedPages: c.reclaimedPages,
          lastReclaim: c.lastReclaim,
        }
      : null;
  }

  /** Run a checkpoint of this connection (`fn`) while the background one is held off (SQLite refuses two at once). */
  withoutBackgroundCheckpoint<T>(fn: () => T): T {
    return this.checkpointer ? this.checkpointer.paused(fn) : fn();
  }

  /** The database file's size plus its WAL's (0 when it cannot be read). */
  fileSize(): number {
    return storeFileBytes(this.path);
  }
}

/** A store file's size plus its WAL's (0 when it cannot be read; the store's status, `cairn compact`). */
export function storeFileBytes(file: string): number {
  try {
    let size = fs.statSync(file).size;
    try {
      size += fs.statSync(file + '-wal').size;
    } catch {
      /* no WAL file */
    }
    return size;
  } catch {
    return 0;
  }
}
