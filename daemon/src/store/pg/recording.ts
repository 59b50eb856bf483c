/**
 * How a team write is recorded and committed: its history and change-log rows (written by the database's own
 * functions, never by members), the login role as actor, the transaction, and idempotency keys (keyed()).
 */
import { CairnError } from '../../protocol/errors';
import type { HistoryEntry, Memory } from '../../protocol/types';
import { IdempotencyWindow, fingerprint, replayOf, resultMemoryId } from '../idempotency';
import type { PgBackend } from './backend';
import { transaction, type pg } from './db';

type C = pg.PoolClient;

/**
 * The history and change-log rows of a write just made to memory `memoryId` in this transaction, written by the
 * database's own `cairn.record_write` (members may not insert them): it takes namespace, version, time and the new
 * state from the row, records the database user as the actor (a different claimed actor as detail.onBehalfOf) and
 * refuses a record that does not match the row. Returns the change-log position.
 */
export async function record(
  b: PgBackend,
  c: C,
  memoryId: string,
  op: HistoryEntry['op'],
  claimed: string | undefined,
  reason: string | null | undefined,
  previous: Memory | null,
  detail?: Record<string, unknown>,
): Promise<number> {
  requireUser(b);
  const r = await c.query(`SELECT cairn.record_write($1, $2, $3, $4, $5, $6) AS position`, [
    memoryId,
    op,
    reason ?? null,
    claimed ?? null,
    previous ? JSON.stringify(previous) : null,
    detail && Object.keys(detail).length ? JSON.stringify(detail) : null,
  ]);
  return r.rows[0].position as number;
}

/** A change-log row without history (forget again, link, unlink), by `cairn.record_change`. */
export async function recordChange(c: C, op: 'forget' | 'link' | 'unlink', memoryId: string): Promise<number> {
  return (await c.query(`SELECT cairn.record_change($1, $2) AS position`, [memoryId, op])).rows[0].position as number;
}

/** The change-log row of a namespace rename or delete at `path` (namespace `nsId` is it or under it). */
export async function recordNamespaceChange(
  c: C,
  op: 'namespace_rename' | 'namespace_delete',
  nsId: string,
  path: string,
): Promise<number> {
  return (await c.query(`SELECT cairn.record_namespace_change($1, $2, $3) AS position`, [nsId, path, op])).rows[0].position as number;
}

/**
 * The actor a row records (deleted_by, a link's or a rejection's actor): always the login role. The database
 * checks it (check_actor); a claimed actor is kept in history as detail.onBehalfOf (cairn.record_write).
 */
export function requireUser(b: PgBackend): string {
  // Before open() has checked the schema and learned the login role, no write may go through (it would have no actor).
  if (!b.user) throw new CairnError('Unavailable', 'the team database is still being opened; try again in a moment', { store: 'team' });
  return b.user;
}

export function tx<T>(b: PgBackend, fn: (c: C) => Promise<T>): Promise<T> {
  return transaction(b.pool, fn);
}

/**
 * A write in one transaction, applied at most once per idempotency key of the login role (docs/protocol.md#idempotency,
 * the same rules as the SQLite store's store/idempotency.ts): the key -> result record commits with the write; the
 * same key again with the same request answers the recorded result (`replayed: true`) and writes nothing; with
 * another request, or after the memory was purged, it is InvalidState. Without a key, just the transaction.
 */
export function keyed<R extends object>(
  b: PgBackend,
  method: string,
  params: { idempotencyKey?: string },
  run: (c: C) => Promise<R>,
): Promise<R | (R & { replayed: true })> {
  const key = params.idempotencyKey;
  if (key === undefined) return tx(b, run);
  const fp = fingerprint(method, params as Record<string, unknown>);
  return tx(b, async (c) => {
    // Two retries of one key at once: the second waits for the first's commit, then replays it.
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`cairn.idempotency:${key}`]);
    const seen = (
      await c.query<{ method: string; fingerprint: string; result: string }>(
        'SELECT method, fingerprint, result FROM idempotency_keys WHERE role = session_user AND key = $1',
        [key],
      )
    ).rows[0];
    if (seen) return replayOf<R>(key, method, fp, seen);
    const r = await run(c);
    const now = b.now();
    await c.query('INSERT INTO idempotency_keys(key, method, fingerprint, result, memory_id, at) VALUES ($1, $2, $3, $4, $5, $6)', [
      key,
      method,
      fp,
      JSON.stringify(r),
      resultMemoryId(r),
      now,
    ]);
    await c.query(
      `DELETE FROM idempotency_keys WHERE role = session_user AND (at < $1 OR key IN (
         SELECT key FROM idempotency_keys WHERE role = session_user ORDER BY at DESC, key OFFSET $2))`,
      [now - IdempotencyWindow.maxAgeMs, IdempotencyWindow.maxKeys],
    );
    return r;
  });
}

export async function positionIn(c: C | pg.Pool): Promise<number> {
  return ((await c.query('SELECT max(position) AS p FROM changes')).rows[0].p as number | null) ?? 0;
}
