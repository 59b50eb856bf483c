/**
 * An operating-system lock on `<db>.lock`: a tiny SQLite file held in an
 * exclusive transaction for the daemon's whole life. The OS releases it when
 * the process dies, so there is no stale lock to detect and no window in which
 * two daemons can both believe they own a store.
 */
import Database from 'better-sqlite3';
import { createPrivateFile, tightenFile } from '../private-files';

export interface HeldLock {
  release(): void;
}

/**
 * Take the lock, or return null when another process (or connection) holds it.
 * Two processes starting at the same instant can each hold a shared lock while
 * asking for the exclusive one, and both be refused; so a refusal is retried
 * with random back-off for about a second before the lock counts as held.
 */
export function holdExclusiveLock(lockFile: string, attempts = 25): HeldLock | null {
  for (let i = 0; i < attempts; i++) {
    const held = tryLock(lockFile);
    if (held) return held;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.floor(Math.random() * 60));
  }
  return null;
}

function tryLock(lockFile: string): HeldLock | null {
  createPrivateFile(lockFile); // 0600 before SQLite opens it
  tightenFile(lockFile);
  const db = new Database(lockFile);
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('journal_mode = DELETE');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (e) {
    db.close();
    const code = (e as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return null;
    throw e;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}
