/**
 * `cairn compact`: rewrite a store whose daemon is stopped with SQLite's VACUUM, giving every free page back and
 * turning on incremental auto-vacuum, so that a store created before it was the default gives back from now on what
 * a model switch, an erasure or a purge frees (the daemon's sweep, wal.ts). A store that already has it is rewritten
 * the same way (its free pages then go back at once, not at the next sweep). Local only, like restore: it takes the
 * store's lock, which a serving daemon holds.
 */
import * as fs from 'node:fs';
import Database from 'better-sqlite3';
import { CairnError } from '../protocol/errors';
import { holdExclusiveLock } from './lock';
import { storeFileBytes } from './wal';

export interface CompactResult {
  path: string;
  /** The database file (with its WAL) before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** Free pages' bytes before (all given back). */
  freeBytesBefore: number;
  /** Whether the store had incremental auto-vacuum before (after: always). */
  reclaimedBefore: boolean;
  ms: number;
}

export function compact(db: string, now: () => number = () => performance.now()): CompactResult {
  if (!fs.existsSync(db)) throw new CairnError('NotFound', `no store at ${db}`, { field: 'db' });
  const lock = holdExclusiveLock(db + '.lock', 3);
  if (!lock)
    throw new CairnError('InvalidState', 'a daemon serves this store; stop it (or close the editors using it) before compacting', {
      field: 'db',
    });
  try {
    const t0 = now();
    const bytesBefore = storeFileBytes(db);
    const conn = new Database(db, { fileMustExist: true });
    try {
      conn.pragma('busy_timeout = 5000');
      conn.pragma('secure_delete = ON'); // as on every connection to a store
      // VACUUM builds the new copy in a temporary database: on disk beside the store, not in memory (a million
      // memories are ~1.8 GB).
      conn.pragma('temp_store = FILE');
      const freeBytesBefore =
        (conn.pragma('freelist_count', { simple: true }) as number) * (conn.pragma('page_size', { simple: true }) as number);
      const reclaimedBefore = conn.pragma('auto_vacuum', { simple: true }) === 2;
      conn.pragma('auto_vacuum = INCREMENTAL'); // takes effect with the VACUUM
      try {
        conn.exec('VACUUM');
      } catch (e) {
        throw new CairnError('InvalidState', `the store could not be compacted, nothing was changed: ${(e as Error).message}`, {
          field: 'db',
        });
      }
      conn.pragma('wal_checkpoint(TRUNCATE)');
      if (conn.pragma('auto_vacuum', { simple: true }) !== 2)
        throw new CairnError('Internal', 'the store was rewritten but did not take incremental auto-vacuum');
      return { path: db, bytesBefore, bytesAfter: storeFileBytes(db), freeBytesBefore, reclaimedBefore, ms: Math.round(now() - t0) };
    } finally {
      conn.close();
    }
  } finally {
    lock.release();
  }
}
