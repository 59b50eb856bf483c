/**
 * Idempotency keys for writes (docs/protocol.md#idempotency). A client that lost its connection before the reply
 * (`Unavailable` with `data.sent: true`) cannot know whether its write was applied; sending it again with the same
 * `idempotencyKey` is safe: the first time, the write and the key → result record commit in one transaction (so the
 * record survives a daemon crash exactly when the write does); a retry with the same key and the same request gets
 * the recorded result back (`replayed: true`) and applies nothing. The same key with a different request is
 * `InvalidState`. Records are kept for a bounded window (age and count), pruned on every recorded write; `memory/erase`
 * and `memory/purge` blank the records of what they remove (a recorded result holds the memory's text), and a retry
 * with such a key is `InvalidState` (`data.erased: true`): an erased memory is never written again by a retry.
 */
import { createHash } from 'node:crypto';
import { CairnError } from '../protocol/errors';
import { stmt, type DB } from './db';
import type { Store } from './store';

/** How long and how many key → result records are kept. */
export const IdempotencyWindow = { maxAgeMs: 24 * 60 * 60 * 1000, maxKeys: 10_000 };

/** The result of a record whose memory was erased or purged: the key stays taken, its text is gone. */
export const ERASED = '{"erased":true}';

/**
 * A key seen before (both stores): the recorded result with `replayed: true`, or InvalidState when the key came with
 * another request or what it wrote was erased since.
 */
export function replayOf<R extends object>(
  key: string,
  method: string,
  fp: string,
  seen: { method: string; fingerprint: string; result: string },
): R & { replayed: true } {
  if (seen.result === ERASED) {
    throw new CairnError(
      'InvalidState',
      `the write with idempotency key ${key} was applied, and what it wrote has been erased since (memory/erase or memory/purge): it is not applied again`,
      { field: 'idempotencyKey', erased: true },
    );
  }
  if (seen.method !== method || seen.fingerprint !== fp) {
    throw new CairnError(
      'InvalidState',
      `idempotency key ${key} was already used for a different request (${seen.method}); use a new key for a new request`,
      { field: 'idempotencyKey' },
    );
  }
  return { ...(JSON.parse(seen.result) as R), replayed: true as const };
}

/** The memory a write's result names (its record is blanked when that memory is erased or purged). */
export function resultMemoryId(r: object): string | null {
  const id = (r as { memory?: { id?: unknown } }).memory?.id ?? (r as { id?: unknown }).id;
  return typeof id === 'string' ? id : null;
}

const ready = new WeakSet<DB>();
/** The key → result table, created on first use. */
export function ensureIdempotencyTable(db: DB): void {
  if (ready.has(db)) return;
  db.exec(`CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT PRIMARY KEY, method TEXT NOT NULL, fingerprint TEXT NOT NULL, result TEXT NOT NULL, memory_id TEXT, at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS idempotency_keys_at ON idempotency_keys(at);
    CREATE INDEX IF NOT EXISTS idempotency_keys_memory ON idempotency_keys(memory_id)`);
  ready.add(db);
}

/** The request without its key, as a stable hash: the same key must come with the same request (both stores). */
export function fingerprint(method: string, params: Record<string, unknown>): string {
  const { idempotencyKey: _k, ...rest } = params;
  return createHash('sha256').update(method).update('\0').update(JSON.stringify(rest)).digest('hex');
}

/**
 * Run a write once per idempotency key. Without a key, just runs it. A write that fails records nothing (it was
 * rolled back), so a retry runs it again.
 */
export function onceByKey<R extends object>(
  store: Store,
  method: string,
  params: { idempotencyKey?: string },
  run: () => R,
): R | (R & { replayed: true }) {
  const key = params.idempotencyKey;
  if (key === undefined) return run();
  const db = store.db;
  ensureIdempotencyTable(db);
  const fp = fingerprint(method, params as Record<string, unknown>);
  return store.transaction(() => {
    const seen = stmt(db, 'SELECT method, fingerprint, result FROM idempotency_keys WHERE key = ?').get(key) as
      { method: string; fingerprint: string; result: string } | undefined;
    if (seen) return replayOf<R>(key, method, fp, seen);
    const r = run();
    const memoryId = resultMemoryId(r);
    const now = store.now();
    stmt(db, 'INSERT INTO idempotency_keys(key, method, fingerprint, result, memory_id, at) VALUES (?, ?, ?, ?, ?, ?)').run(
      key,
      method,
      fp,
      JSON.stringify(r),
      memoryId,
      now,
    );
    stmt(db, 'DELETE FROM idempotency_keys WHERE at < ?').run(now - IdempotencyWindow.maxAgeMs);
    stmt(db, 'DELETE FROM idempotency_keys WHERE rowid <= (SELECT max(rowid) FROM idempotency_keys) - ?').run(IdempotencyWindow.maxKeys);
    return r;
  });
}

/**
 * Replace a key's recorded result with the answer the client got, when the handler completed it after the write
 * committed (memory/upsert adds its duplicate check): a replay returns exactly the first answer. A record blanked by
 * an erase or purge meanwhile stays blank.
 */
export function recordAnswer(store: Store, key: string, method: string, answer: object): void {
  store.transaction(() => {
    stmt(store.db, 'UPDATE idempotency_keys SET result = ? WHERE key = ? AND method = ? AND result <> ?').run(
      JSON.stringify(answer),
      key,
      method,
      ERASED,
    );
  });
}

/**
 * Memory/erase and memory/purge: the recorded results of writes to these memories hold their text, so it is
 * dropped; the key itself stays recorded (without the request's fingerprint, which hashes the text) so that a
 * retry with it is refused (InvalidState, `data.erased: true`) instead of writing the erased memory again.
 */
export function dropIdempotencyRecords(db: DB, memoryIds: readonly string[]): number {
  const exists = stmt(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'").get();
  if (!exists || memoryIds.length === 0) return 0;
  let n = 0;
  const blank = stmt(db, "UPDATE idempotency_keys SET result = ?, fingerprint = 'erased', memory_id = NULL WHERE memory_id = ?");
  for (const id of memoryIds) n += blank.run(ERASED, id).changes;
  return n;
}

/** How many key records are kept (status, tests). */
export function idempotencyRecords(db: DB): number {
  const exists = stmt(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'").get();
  return exists ? (stmt(db, 'SELECT count(*) AS c FROM idempotency_keys').get() as { c: number }).c : 0;
}
