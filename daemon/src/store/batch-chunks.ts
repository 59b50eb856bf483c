/**
 * `memory/upsertBatch` on the local store, in transactions of bounded work (docs/protocol.md#memoryupsertbatch).
 *
 * A batch of 5,000 items (up to the 16 MiB message limit) took seconds in one transaction, on the one thread that
 * serves every client: nobody else got an answer meanwhile (issue 27: 4.9 s). Its items are now applied in order, in
 * transactions of about CHUNK_TARGET_MS of work each (the item count adapts to what the last one cost), each with
 * its items' full text, and other requests are served between them. Each item still succeeds or fails on its own, as
 * before.
 *
 * What a client can observe: another reader may see the batch's first items before the batch is answered; if the
 * daemon stops in the middle, the committed transactions' items stand (sending the batch again writes nothing new
 * for them: an unchanged upsert makes no version). With an `idempotencyKey`, each transaction records, with its
 * items, how far the batch got (store/idempotency.ts's table, an unfinished record) and their results
 * (store/batch-progress.ts: one row per transaction, so the work stays per transaction), so a retry
 * with the same key and batch goes on from there and answers the whole batch once; a finished record is replayed as
 * before. Two requests with the same key at once share the work: each transaction reads how far the batch got first.
 */
import type { UpsertBatchParams, UpsertBatchResult } from '../protocol/types';
import { stmt } from './db';
import { appendProgress, dropProgress, ensureBatchProgressTable, pruneProgress, readProgress } from './batch-progress';
import { ensureIdempotencyTable, fingerprint, IdempotencyWindow, replayOf } from './idempotency';
import type { Store } from './store';

/** Work of one transaction: the next transaction's item count is scaled towards this many milliseconds. */
export const CHUNK_TARGET_MS = 20;
/** The first transaction's items, and the bounds of the count (an item is a few statements; a large value costs more). */
export const CHUNK_FIRST_ITEMS = 64;
const CHUNK_MIN_ITEMS = 4;
const CHUNK_MAX_ITEMS = 1000;

const METHOD = 'memory/upsertBatch';

/**
 * An unfinished keyed batch's record: how many items are applied (their results are in store/batch-progress.ts's
 * table, one row per transaction; a record written by an older build holds them itself, in `results`).
 */
interface Progress {
  unfinished: true;
  done: number;
  results?: UpsertBatchResult['results'];
}

const yieldToOthers = () => new Promise<void>((r) => setImmediate(r));

/**
 * Apply a batch in transactions of bounded work, yielding between them. `hooks.afterChunk` (tests) runs after each
 * transaction committed, before the yield.
 */
export async function upsertBatchInChunks(
  store: Store,
  p: UpsertBatchParams,
  hooks: { afterChunk?: (done: number) => void } = {},
): Promise<UpsertBatchResult> {
  const key = p.idempotencyKey;
  const fp = key !== undefined ? fingerprint(METHOD, p as Record<string, unknown>) : '';
  if (key !== undefined) {
    ensureIdempotencyTable(store.db);
    ensureBatchProgressTable(store.db);
  }
  let results: UpsertBatchResult['results'] = [];
  let position = 0;
  let size = CHUNK_FIRST_ITEMS;
  for (;;) {
    const t0 = performance.now();
    // One transaction: (with a key) how far the batch got, the next items, and (with a key) the new progress.
    const step = store.transaction((): { replay?: UpsertBatchResult & { replayed: true }; finished: boolean; n: number } => {
      let done = results.length;
      if (key !== undefined) {
        const seen = stmt(store.db, 'SELECT method, fingerprint, result FROM idempotency_keys WHERE key = ?').get(key) as
          { method: string; fingerprint: string; result: string } | undefined;
        if (seen) {
          const rec = seen.method === METHOD && seen.fingerprint === fp ? (JSON.parse(seen.result) as Partial<Progress>) : null;
          if (!rec?.unfinished) return { replay: replayOf<UpsertBatchResult>(key, METHOD, fp, seen), finished: true, n: 0 };
          done = rec.done!;
          if (rec.results) {
            // An older build's record (results inline): move them to the table the next transactions append to.
            results = rec.results;
            appendProgress(store.db, key, 0, results);
          } else if (done !== results.length) results = readProgress(store.db, key); // another request (or one before a restart) got this far
        }
      }
      const chunk = p.items.slice(done, done + size);
      const r = chunk.length ? store.upsertBatch(chunk, p.actor) : { results: [], position: store.position() };
      // The chunk's full text in its own commit: left to the index's timer (or the vector indexer's next pass), a
      // whole batch's text was indexed in one piece (1.5 s of 15 MiB), holding everyone again.
      store.catchUpFullText();
      for (const x of r.results) results.push(x); // in place: copying every result so far per transaction is quadratic too
      position = r.position;
      const finished = results.length >= p.items.length;
      if (key !== undefined) {
        // Work per transaction: this chunk's results and a count, never the whole batch's results until it is finished.
        if (!finished) appendProgress(store.db, key, done, r.results);
        record(store, key, fp, finished ? { results, position } : { unfinished: true, done: results.length });
        if (finished) dropProgress(store.db, key);
      }
      return { finished, n: chunk.length };
    });
    if (step.replay) return step.replay;
    if (step.finished) return { results, position };
    hooks.afterChunk?.(results.length);
    const ms = performance.now() - t0;
    size = Math.max(CHUNK_MIN_ITEMS, Math.min(CHUNK_MAX_ITEMS, Math.round(step.n * (CHUNK_TARGET_MS / Math.max(ms, 1)))));
    await yieldToOthers();
  }
}

/** Insert or update a batch's key record (pruning the window on its first insert, as every keyed write does). */
function record(store: Store, key: string, fp: string, value: Progress | UpsertBatchResult): void {
  const json = JSON.stringify(value);
  const updated = stmt(store.db, 'UPDATE idempotency_keys SET result = ? WHERE key = ? AND method = ? AND fingerprint = ?').run(
    json,
    key,
    METHOD,
    fp,
  ).changes;
  if (updated > 0) return;
  const now = store.now();
  stmt(store.db, 'INSERT INTO idempotency_keys(key, method, fingerprint, result, memory_id, at) VALUES (?, ?, ?, ?, NULL, ?)').run(
    key,
    METHOD,
    fp,
    json,
    now,
  );
  stmt(store.db, 'DELETE FROM idempotency_keys WHERE at < ?').run(now - IdempotencyWindow.maxAgeMs);
  stmt(store.db, 'DELETE FROM idempotency_keys WHERE rowid <= (SELECT max(rowid) FROM idempotency_keys) - ?').run(
    IdempotencyWindow.maxKeys,
  );
  pruneProgress(store.db);
}
