/**
 * Commits of derived data without an fsync of their own. At `synchronous=FULL` (cairn.store.synchronous) every
 * commit fsyncs the WAL before it returns; that is what a client's write pays for. The full-text index catching up
 * (full-text.ts) and the vector indexer's vectors, duplicates and watermarks (index/indexer.ts) are derived from the
 * change log, each moved together with its watermark in one transaction: they commit at NORMAL. Their WAL frames are
 * made durable by the next client write's fsync (the WAL is one file, synced whole), and if the power fails before
 * that, the index is behind its watermark's change log after the restart, which the store catches up at open
 * (FullText.heal) and the indexer on its first pass. A client's write is never in such a commit: inside another
 * transaction (a batch indexing its own full text) nothing changes.
 *
 * Under single writes at FULL each of these commits was one more fsync on the event loop: about one per eight
 * writes, each waiting behind the disk's other work (bench/README.md, "synchronous=FULL").
 */
import { stmt, type DB } from './db';

/** PRAGMA synchronous: 2 is FULL, 3 EXTRA. */
const FULL = 2;

/** Run `fn` (which commits derived data in a transaction of its own) at synchronous=NORMAL, then restore the setting. */
export function derivedCommit<T>(db: DB, fn: () => T): T {
  if (db.inTransaction || db.readonly || !db.open) return fn();
  const level = (stmt(db, 'PRAGMA synchronous').get() as { synchronous: number }).synchronous;
  if (level < FULL) return fn();
  stmt(db, 'PRAGMA synchronous = NORMAL').run();
  try {
    return fn();
  } finally {
    stmt(db, `PRAGMA synchronous = ${level}`).run();
  }
}
