/**
 * Online backup and verified restore.
 *
 * `backup` copies the live store with SQLite's backup API (better-sqlite3's
 * db.backup(), a page-by-page copy that stays consistent while the daemon keeps
 * serving: it restarts if a write lands mid-copy, and yields to other requests
 * between steps), writes it under a temporary name, checks it (quick_check),
 * then renames it into place, and copies the store's key file beside it
 * (`<backup>.keys`, 0600: rejected-value hashes are keyed with it).
 *
 * `restore` never runs under a daemon: it refuses while one serves the store,
 * and holds the daemon lock while it works so none can start. It verifies the
 * copy first (integrity_check, quick_check, schema version, Cairn's tables,
 * foreign keys) and replaces nothing when any check fails. The replaced store
 * is kept as `<store>.pre-restore-<time>` (with its keys). Before the copy replaces the store, its full-text indexes
 * are rebuilt from its memories and its event log (reindexCopy), so a restored store misses nothing in a search.
 *
 * Neither writes over, nor restores from, a file of the store itself (its database, WAL, key file, lock, …) under
 * any spelling: store-files.ts compares file identities.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { CairnError } from '../protocol/errors';
import type { BackupParams, BackupResult, ProgressParams } from '../protocol/types';
import { keysPath } from './keys';
import { holdExclusiveLock } from './lock';
import { SCHEMA_VERSION } from './schema';
import { Store } from './store';
import { storeFileAt } from './store-files';
import { rebuildEventText, resetEventVectorsIfMissing } from './events-search';

const PAGES_PER_STEP = 256;

/**
 * Refuse a path that names one of the store's own files (store-files.ts: compared by device and inode after every
 * link is followed, not by spelling): writing a backup over it, or restoring from it, destroys the store or its keys.
 */
function refuseStoreFile(db: string, candidate: string, field: string, doing: string, opts: { keptCopies?: boolean } = {}): void {
  const what = storeFileAt(db, candidate, opts);
  if (what)
    throw new CairnError(
      'InvalidParams',
      `refusing to ${doing} ${candidate}: it is this store's ${what}, the same file as one beside ${db}; choose a path outside the store's own files`,
      { field, storeFile: what },
    );
}

export async function backup(store: Store, p: BackupParams, progress?: (p: ProgressParams) => void): Promise<BackupResult> {
  if (store.path === ':memory:') throw new CairnError('InvalidState', 'an in-memory store cannot be backed up to a file');
  const dest = p.path;
  if (!path.isAbsolute(dest))
    throw new CairnError('InvalidParams', 'path must be absolute (the daemon may run in another folder)', { field: 'path' });
  refuseStoreFile(store.path, dest, 'path', 'write the backup to');
  if (fs.existsSync(dest) && !p.overwrite)
    throw new CairnError('InvalidState', `${dest} exists; pass overwrite: true (--force) to replace it`, { field: 'path' });
  if (!fs.existsSync(path.dirname(dest)))
    throw new CairnError('NotFound', `folder ${path.dirname(dest)} does not exist`, { field: 'path' });
  const tmp = `${dest}.partial-${process.pid}`;
  const t0 = Date.now();
  fs.rmSync(tmp, { force: true });
  let pages = 0;
  try {
    const r = await store.db.backup(tmp, {
      progress: ({ totalPages, remainingPages }) => {
        pages = totalPages;
        progress?.({ operation: 'backup', done: totalPages - remainingPages, total: totalPages });
        return PAGES_PER_STEP;
      },
    });
    pages = r.totalPages;
    progress?.({ operation: 'backup', done: pages, total: pages });
    const check = verifyCopy(tmp, { full: false });
    if (check.problem) throw new CairnError('Internal', `the backup copy failed its check: ${check.problem}`);
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, dest);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    if (e instanceof CairnError) throw e;
    throw new CairnError('InvalidState', `backup failed: ${(e as Error).message}`, { field: 'path' });
  }
  let keys: string | null = null;
  if (fs.existsSync(keysPath(store.path))) {
    keys = keysPath(dest);
    fs.rmSync(keys, { force: true });
    fs.copyFileSync(keysPath(store.path), keys);
    fs.chmodSync(keys, 0o600);
  }
  return { path: dest, bytes: fs.statSync(dest).size, pages, keys, schemaVersion: store.schemaVersion, ms: Date.now() - t0 };
}

export interface CopyCheck {
  problem: string | null;
  schemaVersion: number;
  memories: number;
}

/** Open a copy read-only and check it: integrity (full) or quick_check, schema version, Cairn's tables, foreign keys. */
export function verifyCopy(file: string, opts: { full: boolean } = { full: true }): CopyCheck {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    return { problem: `cannot open ${file}: ${(e as Error).message}`, schemaVersion: 0, memories: 0 };
  }
  try {
    const bad = (problem: string, schemaVersion = 0): CopyCheck => ({ problem, schemaVersion, memories: 0 });
    let quick: string;
    try {
      quick = db.pragma('quick_check', { simple: true }) as string;
    } catch (e) {
      return bad(`not a SQLite database (${(e as Error).message})`);
    }
    if (quick !== 'ok') return bad(`quick_check: ${quick}`);
    if (opts.full) {
      const integrity = db.pragma('integrity_check', { simple: true }) as string;
      if (integrity !== 'ok') return bad(`integrity_check: ${integrity}`);
    }
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version < 1) return bad('not a Cairn store (schema version 0)');
    if (version > SCHEMA_VERSION)
      return bad(`schema version ${version} is newer than this Cairn build supports (${SCHEMA_VERSION})`, version);
    const tables = new Set(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[]);
    for (const t of ['namespaces', 'memories', 'history', 'links', 'rejected_values', 'changes', 'meta'])
      if (!tables.has(t)) return bad(`not a Cairn store (no ${t} table)`, version);
    const fk = db.pragma('foreign_key_check') as unknown[];
    if (fk.length > 0) return bad(`${fk.length} rows break foreign keys`, version);
    return { problem: null, schemaVersion: version, memories: db.prepare('SELECT count(*) FROM memories').pluck().get() as number };
  } finally {
    db.close();
  }
}

export interface RestoreResult {
  restored: string;
  from: string;
  /** Where the replaced store was kept (null when there was none). */
  previous: string | null;
  schemaVersion: number;
  memories: number;
  keys: 'restored' | 'missing';
  /** Memories whose full text was indexed anew before the copy replaced the store (see reindexCopy). */
  fullTextIndexed: number;
  /** Live memories the copy's vector index missed: when any, the daemon re-embeds the store when it opens it. */
  vectorsMissing: number;
  /** Events whose full text was indexed anew (the events' index is rebuilt from the event log as the memories' is). */
  eventsIndexed: number;
  /** Events the copy's event vectors missed: when any, the daemon embeds the events again when it opens the store. */
  eventVectorsMissing: number;
}

/**
 * Open the copy as a store (migrating it when it is older) and rebuild its full-text index from the memories
 * themselves, so the restored store answers every search for what it holds from its first query: a copy taken under
 * writers can hold an index that lags or misses a memory while integrity_check passes, and its watermark cannot be
 * trusted to say so. The vector index needs the model: the daemon's indexer follows the change log from its own
 * watermark when it opens the store; when the copy's vector table misses a live memory that no later change
 * explains, its watermark is set to 0 so that the daemon re-embeds everything. Closing the store folds its WAL in.
 */
function reindexCopy(file: string): { fullText: number; vectorsMissing: number; events: number; eventVectorsMissing: number } {
  const s = new Store(file, { log: () => {} });
  try {
    const fullText = s.rebuildFullText();
    const vectorsMissing = s.transaction(() => s.feed.resetIfVectorsMissing(s.vectors.models()));
    // The events' indexes likewise (docs/episodes.md): full text rebuilt from the event log, vectors checked.
    const events = rebuildEventText(s.db);
    const eventVectorsMissing = resetEventVectorsIfMissing(s.db);
    return { fullText, vectorsMissing, events, eventVectorsMissing };
  } finally {
    s.close();
  }
}

/**
 * Replace the store at `db` with the backup at `from`, after verifying it.
 * `daemonRunning` is checked by the caller (the CLI), and again here through the lock.
 */
export function restore(db: string, from: string, now = Date.now()): RestoreResult {
  if (!fs.existsSync(from)) throw new CairnError('NotFound', `no backup at ${from}`, { field: 'from' });
  // A copy an earlier restore kept (`<store>.pre-restore-*`) may be restored, to go back: it is read before anything moves.
  refuseStoreFile(db, from, 'from', 'restore from', { keptCopies: false });
  refuseStoreFile(db, keysPath(from), 'from', "restore the backup's keys from", { keptCopies: false });
  const check = verifyCopy(from, { full: true });
  if (check.problem)
    throw new CairnError('InvalidState', `the backup failed verification, nothing was replaced: ${check.problem}`, { field: 'from' });
  const lock = holdExclusiveLock(db + '.lock', 3);
  if (!lock)
    throw new CairnError('InvalidState', 'a daemon serves this store; stop it (or close the editors using it) before restoring', {
      field: 'db',
    });
  try {
    const stamp = new Date(now).toISOString().replace(/[:.]/g, '-');
    const tmp = `${db}.restoring-${process.pid}`;
    const hasKeys = fs.existsSync(keysPath(from));
    fs.copyFileSync(from, tmp);
    fs.chmodSync(tmp, 0o600);
    if (hasKeys) {
      fs.copyFileSync(keysPath(from), keysPath(tmp));
      fs.chmodSync(keysPath(tmp), 0o600);
    }
    let indexed: ReturnType<typeof reindexCopy>;
    try {
      indexed = reindexCopy(tmp);
    } catch (e) {
      for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`, keysPath(tmp)]) fs.rmSync(f, { force: true });
      throw new CairnError('InvalidState', `the backup could not be opened to index it, nothing was replaced: ${(e as Error).message}`, {
        field: 'from',
      });
    }
    const fd = fs.openSync(tmp, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    let previous: string | null = null;
    if (fs.existsSync(db)) {
      // Fold the WAL into the old file first, so the kept copy is whole on its own.
      const old = new Database(db);
      try {
        old.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        old.close();
      }
      previous = `${db}.pre-restore-${stamp}`;
      fs.renameSync(db, previous);
      for (const ext of ['-wal', '-shm']) fs.rmSync(db + ext, { force: true });
      if (fs.existsSync(keysPath(db))) fs.renameSync(keysPath(db), keysPath(previous));
    }
    fs.renameSync(tmp, db);
    // Without the backup's keys, opening the copy made a new key (and keyed any legacy hashes with it): it goes along.
    if (fs.existsSync(keysPath(tmp))) fs.renameSync(keysPath(tmp), keysPath(db));
    const keys: RestoreResult['keys'] = hasKeys ? 'restored' : 'missing';
    return {
      restored: db,
      from,
      previous,
      schemaVersion: check.schemaVersion,
      memories: check.memories,
      keys,
      fullTextIndexed: indexed.fullText,
      vectorsMissing: indexed.vectorsMissing,
      eventsIndexed: indexed.events,
      eventVectorsMissing: indexed.eventVectorsMissing,
    };
  } finally {
    lock.release();
  }
}
