/**
 * Rejected (forgotten) values, stored as keyed hashes: HMAC-SHA256 of the
 * normalized value under the store's secret key (store/keys.ts), written
 * `k1:<hex>`. A bare sha256 of a short value would confirm a guess to anyone
 * who can read the database; the keyed hash needs the 0600 key file too.
 *
 * Stores written before keyed hashes hold bare sha256 hex ("legacy"). Such a
 * hash cannot be re-keyed without the value, so:
 *  - at open, every legacy row whose memory still holds its value (a forgotten
 *    memory stays in the table, soft-deleted) is re-keyed at once;
 *  - the rest (their memory was purged) are still honoured, and re-keyed
 *    lazily the first time the same value is written again (and refused).
 * `legacyCount` reports how many remain.
 */
import { normalizedValueHash, normalizeValue } from '../text/hash';
import { stmt, type DB } from './db';
import { isLegacyHash, keyedHash, type StoreKeys } from './keys';

export function rejectionHash(keys: StoreKeys, value: string): string {
  return keyedHash(keys, normalizeValue(value));
}

/**
 * The rejection of `value` in a namespace, if any. A legacy match is re-keyed
 * through `later`, which runs it in its own transaction after the caller's
 * (the refused write rolls back).
 */
export function findRejection(
  db: DB,
  keys: StoreKeys | null,
  nsId: string,
  value: string,
  later: (f: () => void) => void,
): { actor: string; at: number } | undefined {
  // Most namespaces have no rejected value: one index probe instead of hashing the value twice.
  if (!stmt(db, 'SELECT 1 FROM rejected_values WHERE ns_id = ? LIMIT 1').get(nsId)) return undefined;
  const q = stmt(db, 'SELECT actor, at FROM rejected_values WHERE ns_id = ? AND value_hash = ?');
  if (keys) {
    const hit = q.get(nsId, rejectionHash(keys, value)) as { actor: string; at: number } | undefined;
    if (hit) return hit;
  }
  const legacy = normalizedValueHash(value);
  const old = q.get(nsId, legacy) as { actor: string; at: number } | undefined;
  if (old && keys && !db.readonly) {
    const keyed = rejectionHash(keys, value);
    later(() => rekey(db, nsId, legacy, keyed));
  }
  return old;
}

function rekey(db: DB, nsId: string, legacy: string, keyed: string): void {
  stmt(
    db,
    'INSERT OR IGNORE INTO rejected_values(ns_id, value_hash, memory_id, actor, at) SELECT ns_id, ?, memory_id, actor, at FROM rejected_values WHERE ns_id = ? AND value_hash = ?',
  ).run(keyed, nsId, legacy);
  stmt(db, 'DELETE FROM rejected_values WHERE ns_id = ? AND value_hash = ?').run(nsId, legacy);
}

export function rejectValue(db: DB, keys: StoreKeys, nsId: string, value: string, memoryId: string, actor: string, at: number): void {
  stmt(
    db,
    'INSERT INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(ns_id, value_hash) DO UPDATE SET actor = excluded.actor, at = excluded.at, memory_id = excluded.memory_id',
  ).run(nsId, rejectionHash(keys, value), memoryId, actor, at);
  stmt(db, 'DELETE FROM rejected_values WHERE ns_id = ? AND value_hash = ?').run(nsId, normalizedValueHash(value)); // a legacy twin is superseded
}

/** Remove the rejection of `value` (keyed or legacy). True when there was one. */
export function liftRejection(db: DB, keys: StoreKeys | null, nsId: string, value: string): boolean {
  let n = stmt(db, 'DELETE FROM rejected_values WHERE ns_id = ? AND value_hash = ?').run(nsId, normalizedValueHash(value)).changes;
  if (keys) n += stmt(db, 'DELETE FROM rejected_values WHERE ns_id = ? AND value_hash = ?').run(nsId, rejectionHash(keys, value)).changes;
  return n > 0;
}

/** Re-key every legacy rejection whose memory still holds its value. Returns [re-keyed, legacy rows left]. */
export function rekeyLegacy(db: DB, keys: StoreKeys): [number, number] {
  const rows = stmt(
    db,
    `SELECT r.ns_id, r.value_hash, m.value FROM rejected_values r JOIN memories m ON m.id = r.memory_id
                         WHERE length(r.value_hash) = 64 AND r.value_hash NOT LIKE 'k1:%'`,
  ).all() as { ns_id: string; value_hash: string; value: string }[];
  let done = 0;
  for (const r of rows) {
    if (!isLegacyHash(r.value_hash) || normalizedValueHash(r.value) !== r.value_hash) continue; // the memory was edited since: not the rejected value
    rekey(db, r.ns_id, r.value_hash, rejectionHash(keys, r.value));
    done++;
  }
  return [done, legacyCount(db)];
}

export function legacyCount(db: DB): number {
  return (stmt(db, `SELECT count(*) AS c FROM rejected_values WHERE value_hash NOT LIKE 'k1:%'`).get() as { c: number }).c;
}
