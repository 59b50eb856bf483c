/**
 * WAL checkpoints off the event loop (the daemon's store). SQLite's automatic checkpoint runs inside the commit
 * that crosses the WAL threshold: it copies ~2,000 pages into the database file and fsyncs the WAL and the
 * database, a stall of several ms (tens on a loaded disk) in the middle of one client's request, about every
 * 170 single upserts. Here a worker thread holds a second connection to the same file and runs PASSIVE
 * checkpoints when the store asks (every `CHECKPOINT_EVERY_COMMITS` write transactions); the main connection's
 * automatic checkpoint stays on only as a fallback at a larger WAL size (a PASSIVE checkpoint never waits for
 * the writer, and the writer never waits for it).
 *
 * Durability is unchanged: a commit is durable as `cairn.store.synchronous` says (NORMAL: survives the process
 * dying, the newest commits may be lost on power loss; FULL: fsynced before the reply), and the checkpoint
 * connection syncs with the same setting. The main thread can pause the worker synchronously (`paused`), for
 * its own TRUNCATE checkpoints (memory/erase): SQLite answers busy at once, without waiting, to a checkpoint
 * started while another connection checkpoints. The worker runs only while there is something to checkpoint: it
 * starts with the first request and ends after 10 s without one, so an idle daemon carries no extra thread.
 *
 * The same worker compacts the full-text index once writes have stopped. Every indexing pass adds an FTS5 segment
 * and FTS5 merges them only four at a time (its `automerge`), so after a burst of writes a term is looked up in a
 * dozen or more segments: at 100k memories a merged index answers the side-by-side queries' full-text arm 10–20%
 * faster (bench/README.md, "Full-text segments merged after writes"). When no write transaction has committed for
 * `MERGE_QUIET_MS` (the vector indexer's commits that wrote no full text are not counted), the worker runs FTS5's
 * incremental `merge` in slices of `MERGE_SLICE_PAGES` pages, each its own short write transaction, with
 * `usermerge = 2` (any two segments of a level are merged: one segment per level, so the work stays logarithmic
 * in the writes, unlike a full `optimize` after every burst). Between slices it stops as soon as the main
 * connection commits a client write or full text again, or pauses it, and a slice never waits for the write lock
 * (busy: it stops); the next quiet period takes the merge up where FTS5 left it.
 *
 * And it gives freed pages back to the file system (`reclaim`, asked by the daemon's periodic sweep, wal.ts). A
 * store created by this version uses SQLite's incremental auto-vacuum: a dropped table (the previous model's vectors
 * after a model switch, ~300 MiB at a million memories), an erasure or a retention purge leaves free pages that the
 * file keeps until `PRAGMA incremental_vacuum` moves the pages at its end into them and cuts it. The worker does that
 * in slices of `RECLAIM_SLICE_PAGES`, each its own short write transaction (~2 ms, ~18 at most at 1M), with a
 * checkpoint every `RECLAIM_CHECKPOINT_EVERY` slices so the moved pages do not pile up in the WAL, and stops between
 * slices as a merge does.
 */
import { Worker } from 'node:worker_threads';

/** Write transactions between two background checkpoints (a single upsert adds ~12 WAL pages). */
export const CHECKPOINT_EVERY_COMMITS = 50;
/** The main connection's own automatic checkpoint, kept as a fallback if the worker falls behind. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4000;
/** Checkpoint passes per request at most (each copies what the previous one left). */
const PASSES = 4;
/** A worker idle this long is ended (started again by the next request). */
const IDLE_STOP_MS = 10_000;
/** How long the main thread waits for a checkpoint in progress to finish (pause, close). */
const WAIT_MS = 5000;
/** The full-text index is merged once no write transaction has committed for this long. */
export const MERGE_QUIET_MS = 500;
/** The worker thread's nice value (Linux): it yields the cores to the event loop and the embedding worker. */
const WORKER_NICE = 10;
/** Pages FTS5 writes per merge slice (one short write transaction, ~3–5 ms at 100k memories). */
export const MERGE_SLICE_PAGES = 64;
/** Free pages given back per reclaim slice (one short write transaction: ~2 ms, 18 ms at most, on the 1M store). */
export const RECLAIM_SLICE_PAGES = 256;
/** Reclaim slices between two checkpoints of the WAL the moved pages go to. */
const RECLAIM_CHECKPOINT_EVERY = 8;

// Slots of the shared state.
const BUSY = 0; // 1 while the worker runs a checkpoint
const PAUSED = 1; // > 0 while the main thread checkpoints itself: the worker skips its turn
const CLOSED = 2; // 1 once the worker's connection is closed (or never opened)
const WRITES = 3; // write transactions the main connection committed (a merge stops when it changes)

/** Plain JavaScript, evaluated in the worker: no bundling, better-sqlite3 loaded from the path the main thread resolved. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData.state);
const done = () => { Atomics.store(state, ${CLOSED}, 1); Atomics.notify(state, ${CLOSED}); };
let db;
// Below the event loop and the embedding worker: a checkpoint or a merge slice takes a core only when they leave
// one (Linux: a thread's nice value is its own; elsewhere it would be the whole process's, so it is left alone).
if (process.platform === 'linux') {
  try { require('node:os').setPriority(${WORKER_NICE}); } catch {}
}
try {
  const Database = require(workerData.driver);
  db = new Database(workerData.file);
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -256'); // a checkpoint copies WAL frames; it reads almost nothing through the page cache
  db.pragma('synchronous = ' + workerData.synchronous);
  db.pragma('secure_delete = ON'); // as on every connection to a store: the pages a merge frees are zeroed (erasure)
} catch (e) {
  done();
  parentPort.postMessage({ failed: String((e && e.message) || e) });
  process.exit(0);
}
// Frames written while a pass ran are left for another pass; a few short passes let the WAL be fully copied (then
// the writer starts it over from the beginning) even under a steady stream of writes.
function checkpoint(truncate) {
  let r = null;
  for (let pass = 0; pass < ${PASSES}; pass++) {
    const before = r;
    r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    if (!r || r.busy || r.log !== r.checkpointed || (before && before.log === r.log)) break;
  }
  if (truncate && r && r.busy === 0 && r.log === r.checkpointed) r = db.pragma('wal_checkpoint(TRUNCATE)')[0];
  return r;
}
// FTS5's incremental merge, slice by slice, until it finds nothing to merge (total_changes() moves by less than 2),
// the main connection commits (its count moves past the one the run was asked with) or pauses, or the write lock is
// taken (no waiting for it).
function merge(pages, writes) {
  const changes = db.prepare('SELECT total_changes() AS c');
  let slices = 0;
  let complete = false;
  db.pragma('busy_timeout = 0');
  try {
    const um = db.prepare("SELECT v FROM memories_fts_config WHERE k = 'usermerge'").get();
    if (!um || um.v !== 2) db.exec("INSERT INTO memories_fts(memories_fts, rank) VALUES('usermerge', 2)");
    const step = db.prepare("INSERT INTO memories_fts(memories_fts, rank) VALUES('merge', " + pages + ")");
    while (Atomics.load(state, ${PAUSED}) === 0 && Atomics.load(state, ${WRITES}) === writes) {
      const before = changes.get().c;
      step.run();
      slices++;
      if (changes.get().c - before < 2) {
        complete = true;
        break;
      }
    }
  } catch (e) {
    if (!(e && String(e.code).startsWith('SQLITE_BUSY'))) throw e;
  } finally {
    db.pragma('busy_timeout = 5000');
  }
  return { slices, complete };
}
// Free pages given back (incremental auto-vacuum), slice by slice, until none is left or the run stops as a merge
// does; the WAL is checkpointed between slices, and by the run's final checkpoint the file is cut.
function reclaim(pages, writes) {
  const free = db.prepare('PRAGMA freelist_count');
  const step = db.prepare('PRAGMA incremental_vacuum(' + pages + ')');
  const slice = db.transaction(() => step.run());
  const before = free.pluck().get();
  let slices = 0;
  db.pragma('busy_timeout = 0');
  try {
    while (free.pluck().get() > 0 && Atomics.load(state, ${PAUSED}) === 0 && Atomics.load(state, ${WRITES}) === writes) {
      slice.immediate();
      if (++slices % ${RECLAIM_CHECKPOINT_EVERY} === 0) db.pragma('wal_checkpoint(PASSIVE)');
    }
  } catch (e) {
    if (!(e && String(e.code).startsWith('SQLITE_BUSY'))) throw e;
  } finally {
    db.pragma('busy_timeout = 5000');
  }
  const left = free.pluck().get();
  return { slices, pages: before - left, complete: left === 0 };
}
parentPort.on('message', (m) => {
  if (m.op === 'close') {
    try { db.close(); } catch {}
    done();
    parentPort.close();
    return;
  }
  Atomics.store(state, ${BUSY}, 1);
  let r = null;
  let merged = null;
  let reclaimed = null;
  let error = null;
  try {
    if (Atomics.load(state, ${PAUSED}) === 0) {
      if (m.op === 'merge') merged = merge(m.pages, m.writes);
      if (m.op === 'reclaim') reclaimed = reclaim(m.pages, m.writes);
      if (Atomics.load(state, ${PAUSED}) === 0) r = checkpoint(m.truncate);
    }
  } catch (e) {
    error = String((e && e.message) || e);
  }
  Atomics.store(state, ${BUSY}, 0);
  Atomics.notify(state, ${BUSY});
  parentPort.postMessage({ op: m.op, result: r, merged, reclaimed, error });
});
`;

export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** What one merge run of the full-text index did: slices run, and whether FTS5 had nothing left to merge. */
export interface MergeResult {
  slices: number;
  complete: boolean;
}

/** What one reclaim run did: slices run, free pages given back, and whether none is left. */
export interface ReclaimResult {
  slices: number;
  pages: number;
  complete: boolean;
}

/** One worker and its shared state (a new pair each time the worker is started). */
interface Run {
  worker: Worker;
  state: Int32Array;
}

export class BackgroundCheckpointer {
  private run: Run | null = null;
  private commits = 0;
  private inFlight = false;
  private dead = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Checkpoints the worker completed (for tests and status). */
  completed = 0;
  lastResult: CheckpointResult | null = null;
  /** Merge runs of the full-text index and their slices so far; `lastMerge` is the latest run. */
  merges = 0;
  mergeSlices = 0;
  lastMerge: MergeResult | null = null;
  /** Reclaim runs (free pages given back to the file system) and the pages they gave back; `lastReclaim` is the latest. */
  reclaims = 0;
  reclaimedPages = 0;
  lastReclaim: ReclaimResult | null = null;
  /** The worker's last checkpoint or merge error, if its last run failed. */
  lastError: string | null = null;
  /** A write committed since the last merge run that completed: the full-text index may have a new segment. */
  private mergeWanted = false;
  private lastCommitAt = 0;
  private mergeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly file: string,
    private readonly driver: string,
    private readonly synchronous: 'NORMAL' | 'FULL',
    private readonly onFailure: (reason: string) => void,
    /** The worker (a V8 isolate, ~9 MiB resident) is started at the first request and ended after this long idle. */
    private readonly idleStopMs = IDLE_STOP_MS,
    /** Merge the full-text index after this long without a commit (tests shorten it); 0: never. */
    private readonly mergeQuietMs = MERGE_QUIET_MS,
    private readonly mergeSlicePages = MERGE_SLICE_PAGES,
    private readonly reclaimSlicePages = RECLAIM_SLICE_PAGES,
  ) {}

  get alive(): boolean {
    return !this.dead;
  }

  /** Whether a worker is running now (it starts on demand and ends when idle). */
  get running(): boolean {
    return this.run !== null;
  }

  /** A checkpoint, merge or reclaim run asked of the worker has not reported yet. */
  get working(): boolean {
    return this.inFlight;
  }

  /**
   * A write transaction committed: ask for a checkpoint every CHECKPOINT_EVERY_COMMITS of them (never two at once)
   * and stop a merge in progress after its slice; `fullText`: it wrote full-text rows (a new FTS5 segment), so
   * merge the index once commits have stopped for a while. `derived` (the vector indexer's vectors, duplicates and
   * watermark) without full text neither stops a merge nor delays one: a vector catch-up commits every ~50 ms for
   * minutes after a large import, and counting it kept the import's merge waiting until the first searches came.
   * Such a commit waits for the merge slice in progress (it holds the write lock, a few ms); a slice that finds
   * the lock taken ends the run, and the next quiet period takes it up again.
   */
  committed(fullText = false, derived = false): void {
    if (this.dead) return;
    if (fullText || !derived) {
      if (this.run) Atomics.add(this.run.state, WRITES, 1);
      this.lastCommitAt = performance.now();
    }
    if (fullText && this.mergeQuietMs > 0) {
      this.mergeWanted = true;
      if (!this.mergeTimer) this.armMerge(this.mergeQuietMs);
    }
    if (++this.commits < CHECKPOINT_EVERY_COMMITS || this.inFlight) return;
    this.request(false);
  }

  private armMerge(ms: number): void {
    this.mergeTimer = setTimeout(() => this.mergeIfQuiet(), ms);
    this.mergeTimer.unref();
  }

  /** The quiet timer: merge when no commit came for mergeQuietMs and the worker is free, else look again later. */
  private mergeIfQuiet(): void {
    this.mergeTimer = null;
    if (this.dead || !this.mergeWanted) return;
    const quietFor = performance.now() - this.lastCommitAt;
    if (quietFor < this.mergeQuietMs || this.inFlight) return this.armMerge(Math.max(1, this.mergeQuietMs - quietFor));
    this.mergeWanted = false;
    this.commits = 0; // the run ends with a checkpoint
    this.inFlight = true;
    this.clearIdle();
    const run = (this.run ??= this.start());
    // The commits counted when the run was asked for: one after it stops the merge, even before its first slice.
    run.worker.postMessage({ op: 'merge', pages: this.mergeSlicePages, writes: Atomics.load(run.state, WRITES), truncate: false });
  }

  /**
   * Give the store's free pages back to the file system (incremental auto-vacuum), in slices, then checkpoint (which
   * cuts the file). False when the worker is busy with something else: the daemon's next sweep asks again.
   */
  reclaim(): boolean {
    if (this.dead || this.inFlight) return false;
    this.commits = 0; // the run ends with a checkpoint
    this.inFlight = true;
    this.clearIdle();
    const run = (this.run ??= this.start());
    run.worker.postMessage({ op: 'reclaim', pages: this.reclaimSlicePages, writes: Atomics.load(run.state, WRITES), truncate: true });
    return true;
  }

  /** Ask for a checkpoint now; `truncate`: when it copied everything, also cut the WAL file to zero bytes. */
  request(truncate: boolean): void {
    if (this.dead || this.inFlight) return;
    this.commits = 0;
    this.inFlight = true;
    this.clearIdle();
    (this.run ??= this.start()).worker.postMessage({ op: 'checkpoint', truncate });
  }

  /**
   * Run `fn` (a checkpoint of the main connection) while the worker checkpoints nothing: waits for a checkpoint in
   * progress to finish first, and makes the worker skip requests meanwhile.
   */
  paused<T>(fn: () => T): T {
    const run = this.run;
    if (!run) return fn();
    Atomics.add(run.state, PAUSED, 1);
    try {
      const until = Date.now() + WAIT_MS;
      while (Atomics.load(run.state, BUSY) === 1 && Date.now() < until) Atomics.wait(run.state, BUSY, 1, until - Date.now());
      return fn();
    } finally {
      Atomics.sub(run.state, PAUSED, 1);
    }
  }

  /** Close the worker's connection (synchronously, so the main connection closes last and removes the WAL), then end it. */
  close(): void {
    this.clearIdle();
    if (this.mergeTimer) clearTimeout(this.mergeTimer);
    this.mergeTimer = null;
    this.stop();
    this.dead = true;
  }

  private start(): Run {
    const state = new Int32Array(new SharedArrayBuffer(16));
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: this.file, driver: this.driver, synchronous: this.synchronous, state: state.buffer },
      // A checkpoint allocates next to nothing in JavaScript: small heaps keep the thread's footprint small.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    const run: Run = { worker, state };
    worker.on(
      'message',
      (m: {
        op?: string;
        failed?: string;
        result?: CheckpointResult | null;
        merged?: MergeResult | null;
        reclaimed?: ReclaimResult | null;
        error?: string | null;
      }) => {
        if (m.failed !== undefined) return this.fail(`the checkpoint worker could not open the store: ${m.failed}`);
        this.inFlight = false;
        if (m.result) {
          this.completed++;
          this.lastResult = m.result;
        }
        if (m.merged) {
          this.merges++;
          this.mergeSlices += m.merged.slices;
          this.lastMerge = m.merged;
        }
        if (m.reclaimed) {
          this.reclaims++;
          this.reclaimedPages += m.reclaimed.pages;
          this.lastReclaim = m.reclaimed;
        }
        this.lastError = m.error ?? null;
        // A merge stopped by a commit (which asked for the next run already), a pause or the write lock: go on after the
        // next quiet period. One that failed is left to the next commit.
        if (m.op === 'merge' && !m.error && !m.merged?.complete && !this.mergeWanted && this.mergeQuietMs > 0) {
          this.mergeWanted = true;
          if (!this.mergeTimer) this.armMerge(this.mergeQuietMs);
        }
        this.clearIdle();
        this.idleTimer = setTimeout(() => this.stopIfIdle(), this.idleStopMs);
        this.idleTimer.unref();
      },
    );
    worker.on('error', (e) => this.fail(`the checkpoint worker failed: ${e.message}`));
    worker.on('exit', () => {
      if (this.run === run && Atomics.load(state, CLOSED) === 0) this.fail('the checkpoint worker exited');
    });
    // After the listeners: adding a 'message' listener refs the worker again, and a ref'd worker kept every process
    // with a store open alive (a stdio daemon whose client had left never exited).
    worker.unref();
    return run;
  }

  private stopIfIdle(): void {
    this.idleTimer = null;
    if (!this.inFlight) this.stop();
  }

  /** End the current worker, if any, after its connection closed (waits for a checkpoint in progress). */
  private stop(): void {
    const run = this.run;
    if (!run) return;
    this.run = null;
    this.inFlight = false;
    if (Atomics.load(run.state, CLOSED) === 0) {
      Atomics.add(run.state, PAUSED, 1); // a merge in progress stops after its slice, so the close is not queued behind it
      run.worker.postMessage({ op: 'close' });
      const until = Date.now() + WAIT_MS;
      while (Atomics.load(run.state, CLOSED) === 0 && Date.now() < until) Atomics.wait(run.state, CLOSED, 0, until - Date.now());
    }
    void run.worker.terminate();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private fail(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    this.inFlight = false;
    this.clearIdle();
    const run = this.run;
    this.run = null;
    if (run) void run.worker.terminate();
    this.onFailure(reason);
  }
}
