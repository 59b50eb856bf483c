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

// Slots of the shared state.
const BUSY = 0; // 1 while the worker runs a checkpoint
const PAUSED = 1; // > 0 while the main thread checkpoints itself: the worker skips its turn
const CLOSED = 2; // 1 once the worker's connection is closed (or never opened)

/** Plain JavaScript, evaluated in the worker: no bundling, better-sqlite3 loaded from the path the main thread resolved. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const state = new Int32Array(workerData.state);
const done = () => { Atomics.store(state, ${CLOSED}, 1); Atomics.notify(state, ${CLOSED}); };
let db;
try {
  const Database = require(workerData.driver);
  db = new Database(workerData.file);
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -256'); // a checkpoint copies WAL frames; it reads almost nothing through the page cache
  db.pragma('synchronous = ' + workerData.synchronous);
} catch (e) {
  done();
  parentPort.postMessage({ failed: String((e && e.message) || e) });
  process.exit(0);
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
  let error = null;
  try {
    if (Atomics.load(state, ${PAUSED}) === 0) {
      // Frames written while a pass ran are left for another pass; a few short passes let the WAL be fully copied
      // (then the writer starts it over from the beginning) even under a steady stream of writes.
      for (let pass = 0; pass < ${PASSES}; pass++) {
        const before = r;
        r = db.pragma('wal_checkpoint(PASSIVE)')[0];
        if (!r || r.busy || r.log !== r.checkpointed || (before && before.log === r.log)) break;
      }
      if (m.truncate && r && r.busy === 0 && r.log === r.checkpointed) r = db.pragma('wal_checkpoint(TRUNCATE)')[0];
    }
  } catch (e) {
    error = String((e && e.message) || e);
  }
  Atomics.store(state, ${BUSY}, 0);
  Atomics.notify(state, ${BUSY});
  parentPort.postMessage({ result: r, error });
});
`;

export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
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

  constructor(
    private readonly file: string,
    private readonly driver: string,
    private readonly synchronous: 'NORMAL' | 'FULL',
    private readonly onFailure: (reason: string) => void,
    /** The worker (a V8 isolate, ~9 MiB resident) is started at the first request and ended after this long idle. */
    private readonly idleStopMs = IDLE_STOP_MS,
  ) {}

  get alive(): boolean {
    return !this.dead;
  }

  /** Whether a worker is running now (it starts on demand and ends when idle). */
  get running(): boolean {
    return this.run !== null;
  }

  /** A write transaction committed: ask for a checkpoint every CHECKPOINT_EVERY_COMMITS of them (never two at once). */
  committed(): void {
    if (++this.commits < CHECKPOINT_EVERY_COMMITS || this.inFlight || this.dead) return;
    this.request(false);
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
    this.stop();
    this.dead = true;
  }

  private start(): Run {
    const state = new Int32Array(new SharedArrayBuffer(12));
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: this.file, driver: this.driver, synchronous: this.synchronous, state: state.buffer },
      // A checkpoint allocates next to nothing in JavaScript: small heaps keep the thread's footprint small.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    const run: Run = { worker, state };
    worker.on('message', (m: { failed?: string; result?: CheckpointResult | null; error?: string | null }) => {
      if (m.failed !== undefined) return this.fail(`the checkpoint worker could not open the store: ${m.failed}`);
      this.inFlight = false;
      if (m.result) {
        this.completed++;
        this.lastResult = m.result;
      }
      this.clearIdle();
      this.idleTimer = setTimeout(() => this.stopIfIdle(), this.idleStopMs);
      this.idleTimer.unref();
    });
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
