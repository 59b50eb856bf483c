/**
 * Opening the SQLite file: pragmas, the sqlite-vec and full-text ranking
 * extensions, migrations, and the write-transaction helper. This folder
 * (daemon/src/store/) is the only place in Cairn that imports better-sqlite3.
 */
import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CairnError } from '../protocol/errors';
import { envFlag, readEnv, Settings } from '../protocol/settings';
import { createPrivateFile, tightenFile } from '../private-files';
import { migrate } from './schema';

export type DB = Database.Database;

/** WAL pages after which SQLite checkpoints (and the size the WAL file is cut back to). */
export const WAL_CHECKPOINT_PAGES = 2000;

export interface OpenOptions {
  /** Busy timeout in ms for lock waits (default 5000). */
  busyTimeoutMs?: number;
  /** Load sqlite-vec (default true). When it fails, vectors are unavailable and search degrades to full-text. */
  loadVec?: boolean;
  /**
   * Load the full-text ranking extension, cairn_bm25 (default true). Without it, the full-text arm ranks with FTS5's
   * bm25(): the same order, slower (search-fts.ts).
   */
  loadRanking?: boolean;
  readonly?: boolean;
  /** Where notes about the open go (a store file made private); default stderr. */
  log?: (msg: string) => void;
  /**
   * Durability of a committed write (cairn.store.synchronous). `normal` (default): WAL with
   * synchronous=NORMAL, a commit survives the process dying but the newest commits may be lost
   * if the machine loses power; `full`: every commit is fsynced before it returns.
   */
  synchronous?: 'normal' | 'full';
}

export type Synchronous = NonNullable<OpenOptions['synchronous']>;

/** The configured durability: the option, else CAIRN_STORE_SYNCHRONOUS, else the declared default. */
export function synchronousSetting(opt?: string): Synchronous {
  const def = Settings['cairn.store.synchronous'];
  const v = (opt ?? readEnv('CAIRN_STORE_SYNCHRONOUS') ?? def.default).toLowerCase();
  if (v !== 'normal' && v !== 'full')
    throw new CairnError('InvalidParams', `${def.env} must be "normal" or "full", not "${v}"`, { field: 'synchronous' });
  return v;
}

/**
 * The durability in effect on a connection, read back from SQLite (`PRAGMA synchronous`: 0 OFF, 1 NORMAL, 2 FULL,
 * 3 EXTRA), so what store/status reports is what the connection does, not what was asked for.
 */
export function synchronousInEffect(db: DB): 'off' | 'normal' | 'full' | 'extra' {
  const v = db.pragma('synchronous', { simple: true }) as number;
  return v >= 3 ? 'extra' : v === 2 ? 'full' : v === 1 ? 'normal' : 'off';
}

export interface Opened {
  db: DB;
  vec: boolean;
  vecError: string | null;
  /** Why cairn_bm25 is not loaded (null when it is). */
  rankingError: string | null;
  schemaVersion: number;
}

/** Where the build puts the ranking extension (daemon/native/build.mjs): next to the bundle, or daemon/dist from src. */
function rankingExtension(): string | null {
  const file = process.platform === 'darwin' ? 'cairn_bm25.dylib' : 'cairn_bm25.so';
  for (const dir of [__dirname, path.join(__dirname, '..', '..', 'dist')]) {
    const p = path.join(dir, file);
    if (fs.existsSync(p)) return p;
  }
  return null;
}

/** Connections with cairn_bm25 loaded. */
const ranking = new WeakSet<DB>();
/** Whether `db` ranks full-text matches with cairn_bm25 (else FTS5's bm25()). */
export function hasRankingExtension(db: DB): boolean {
  return ranking.has(db);
}

/**
 * After a commit of this connection's that wrote the full-text index: cairn_bm25's remembered row lengths take the
 * index as this commit left it (native/cairn_bm25.c: its rows were forgotten as they were written), so a merge by
 * the checkpoint worker afterwards does not empty them. How many times they have been emptied so far (tests), null
 * without the extension or inside a transaction.
 */
export function settleRanking(db: DB): number | null {
  if (!ranking.has(db) || db.inTransaction || !db.open) return null;
  return (stmt(db, 'SELECT cairn_bm25_settle() AS resets').get() as { resets: number | null }).resets;
}

/**
 * Give the C heap's free memory back to the system (cairn_malloc_trim, native/malloc_trim.c: glibc's
 * malloc_trim). True when some was given back, false when none was, null when the extension is not loaded.
 */
export function trimCHeap(db: DB): boolean | null {
  if (!ranking.has(db)) return null;
  return (stmt(db, 'SELECT cairn_malloc_trim() AS given').get() as { given: number }).given === 1;
}

function loadRanking(db: DB): string | null {
  const ext = rankingExtension();
  if (!ext) return 'cairn_bm25 was not built (daemon/native/build.mjs needs a C compiler)';
  try {
    // better-sqlite3 takes the entry point as a second argument; its type declarations predate it
    (db as unknown as { loadExtension(file: string, entryPoint: string): void }).loadExtension(ext, 'sqlite3_cairnbm25_init');
    ranking.add(db);
    return null;
  } catch (e) {
    return `cairn_bm25 did not load: ${(e as Error).message}`;
  }
}

export function openDatabase(file: string, opts: OpenOptions = {}): Opened {
  if (file !== ':memory:' && !opts.readonly) {
    // Memories are private: a new folder is 0700 and every store file 0600 (SQLite gives -wal and -shm the
    // database file's mode). Files left readable by others by an older version are tightened, with a log line.
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
    createPrivateFile(file);
    const log = opts.log ?? ((m: string) => process.stderr.write(`[cairn] ${m}\n`));
    for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) tightenFile(f, log);
  }
  let db: DB;
  try {
    db = new Database(file, { readonly: opts.readonly ?? false });
  } catch (e) {
    throw new CairnError('Internal', `cannot open store ${file}: ${(e as Error).message}`);
  }
  db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  if (!opts.readonly) {
    // A new store keeps track of which page points to which (incremental auto-vacuum), so the pages a dropped table,
    // an erasure or a purge frees can be given back to the file system later, a slice at a time, without rewriting
    // the whole file (the daemon's sweep, wal.ts). It can only be chosen before the first table is created.
    if ((db.pragma('page_count', { simple: true }) as number) === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronousSetting(opts.synchronous) === 'full' ? 'FULL' : 'NORMAL'}`);
    // Checkpoint every ~8 MB of WAL (the default ~4 MB made checkpoints dominate small writes) and cut the
    // file back to that size after each one, so the WAL stays bounded; the daemon also truncates it when idle.
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${WAL_CHECKPOINT_PAGES * 4096}`);
  }
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  // 8 MB of page cache (was 32 MB): re-read pages come from the OS page cache, and on the 100k side-by-side
  // store the full-text arm's CPU per query was the same with 8 and 32 MB, while the larger cache added
  // ~25 MB to the daemon's resident memory under search.
  db.pragma('cache_size = -8000');
  let vec = false;
  let vecError: string | null = null;
  if (opts.loadVec !== false && !envFlag('CAIRN_DISABLE_VEC', false)) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const sqliteVec = require('sqlite-vec') as { load(db: DB): void };
      sqliteVec.load(db);
      vec = true;
    } catch (e) {
      vecError = (e as Error).message;
    }
  } else {
    vecError = 'sqlite-vec disabled';
  }
  const rankingError = opts.loadRanking === false ? 'cairn_bm25 not asked for' : loadRanking(db);
  const schemaVersion = opts.readonly ? (db.pragma('user_version', { simple: true }) as number) : withRetry(() => migrate(db, { vec }));
  return { db, vec, vecError, rankingError, schemaVersion };
}

function isBusy(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
}

const cache = new WeakMap<DB, Map<string, Database.Statement>>();
const CACHE_MAX = 2000;

/** A prepared statement, compiled once per connection and SQL text (better-sqlite3 does not cache). */
export function stmt(db: DB, text: string): Database.Statement {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let st = m.get(text);
  if (!st) {
    if (m.size >= CACHE_MAX) m.clear(); // dynamic IN-lists can grow the set; start over rather than grow without bound
    st = db.prepare(text);
    m.set(text, st);
  }
  return st;
}

/** Retry a whole operation when another process holds the write lock past the busy timeout. */
export function withRetry<T>(fn: () => T, attempts = 3): T {
  for (let i = 0; ; i++) {
    try {
      return fn();
    } catch (e) {
      if (!isBusy(e)) throw e;
      if (i + 1 >= attempts) throw new CairnError('StoreBusy', 'the store is locked by another process; try again');
      const until = Date.now() + 20 * (i + 1);
      while (Date.now() < until) {
        /* brief spin before retrying; the busy timeout already waited */
      }
    }
  }
}

/** Run `fn` inside BEGIN IMMEDIATE (so the write lock is taken up front), retrying on SQLITE_BUSY. */
export function writeTx<T>(db: DB, fn: () => T): T {
  // One transaction wrapper per connection, given the work as its argument: better-sqlite3 builds a wrapper (and
  // its BEGIN/COMMIT statements) on every db.transaction() call, which cost as much as a small statement per write.
  let tx = runners.get(db);
  if (!tx) runners.set(db, (tx = db.transaction((f: () => unknown) => f())));
  if (db.inTransaction) return tx(fn) as T; // nested: a savepoint
  return withRetry(() => tx.immediate(fn) as T);
}
const runners = new WeakMap<DB, Database.Transaction<(f: () => unknown) => unknown>>();
