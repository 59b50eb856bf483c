/**
 * How far a keyed `memory/upsertBatch` got (store/batch-chunks.ts), in work per transaction rather than per batch.
 * Each transaction used to rewrite the key's whole record with every result so far (and read it back): quadratic in
 * the batch size. Now the key's record holds only the count of items done (`{unfinished: true, done}`), and each
 * transaction appends its own items' results here as one row; the rows are read back only by a request that finds the
 * batch further along than it knows (a retry after a restart, or a second request with the same key), and removed when
 * the finished record (every result) is written. Rows whose key left the window go with the next recorded batch.
 */
import type { UpsertBatchResult } from '../protocol/types';
import { stmt, type DB } from './db';

type Results = UpsertBatchResult['results'];

const ready = new WeakSet<DB>();
/** The table of results per transaction, created on first use (as the key table is). */
export function ensureBatchProgressTable(db: DB): void {
  if (ready.has(db)) return;
  db.exec(`CREATE TABLE IF NOT EXISTS idempotency_progress (
    key TEXT NOT NULL, first INTEGER NOT NULL, results TEXT NOT NULL, PRIMARY KEY (key, first)) WITHOUT ROWID`);
  ready.add(db);
}

/** Record the results of items `first`… of a batch (inside the transaction that applied them). */
export function appendProgress(db: DB, key: string, first: number, results: Results): void {
  stmt(db, 'INSERT OR REPLACE INTO idempotency_progress(key, first, results) VALUES (?, ?, ?)').run(key, first, JSON.stringify(results));
}

/** Every result recorded for a batch so far, in item order. */
export function readProgress(db: DB, key: string): Results {
  const rows = stmt(db, 'SELECT results FROM idempotency_progress WHERE key = ? ORDER BY first').all(key) as { results: string }[];
  return rows.flatMap((r) => JSON.parse(r.results) as Results);
}

/** The batch finished (its record holds every result): its rows go. */
export function dropProgress(db: DB, key: string): void {
  stmt(db, 'DELETE FROM idempotency_progress WHERE key = ?').run(key);
}

/** Rows of batches whose key record left the window. */
export function pruneProgress(db: DB): void {
  stmt(db, 'DELETE FROM idempotency_progress WHERE key NOT IN (SELECT key FROM idempotency_keys)').run();
}
