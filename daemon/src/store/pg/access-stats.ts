/**
 * Access statistics of team memories (lastAccessedAt, accessCount), recorded
 * after the read that answers a `memory/get`, not inside it. Bumping a row is
 * an UPDATE: a new row version, the memories triggers, and (when the page has
 * no room for a heap-only update) an entry in every index of the table, the
 * vector index included; measured at 10k rows that is ~10 ms of a 12 ms get.
 * So a get is one prepared read, and its bump joins a queue that one UPDATE
 * per batch applies while the answer is already on its way (batches run one
 * after another, so reads of 20 ms share one statement).
 *
 * Best effort, as on the SQLite store: not a change of content (no version,
 * history or change row); a role that may only read the namespace gets no
 * bump (the UPDATE policy admits no row, silently); a failed batch is dropped.
 */
import type pg from 'pg';

/** Rows per UPDATE (a bigger queue is applied in several). */
const BATCH = 500;
/** How long reads gather before their batch is written: a get loop costs one UPDATE per window, not one per get. */
const WINDOW_MS = 20;

export class AccessBumps {
  /** rowid -> [reads not yet recorded, time of the latest]. */
  private pending = new Map<string, [number, number]>();
  private running: Promise<void> | null = null;

  constructor(private readonly pool: pg.Pool) {}

  /**
   * The count this daemon last answered for a row whose reads are still queued or being written: a second read before
   * the batch lands answers one more than the first, as on the SQLite store (never counting a stored read twice).
   */
  private shown = new Map<string, number>();

  /**
   * Record one read of the row at `now` (milliseconds), soon; returns the access count to answer with: the stored
   * count `stored` plus this read, or one more than this daemon's previous answer while its reads are not stored yet.
   */
  add(rowid: number | string, now: number, stored = 0): number {
    const k = String(rowid);
    const p = this.pending.get(k);
    this.pending.set(k, p ? [p[0] + 1, Math.max(p[1], now)] : [1, now]);
    const count = Math.max(stored + 1, (this.shown.get(k) ?? 0) + 1);
    this.shown.set(k, count);
    this.running ??= this.drain().finally(() => (this.running = null));
    return count;
  }

  /** Resolves when every read recorded so far is applied (or dropped): before the pool closes, and in tests. */
  async flushed(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    while (this.pending.size) {
      await new Promise((r) => setTimeout(r, WINDOW_MS)); // the answer goes first; the reads of the window join it
      const batch = [...this.pending].slice(0, BATCH);
      for (const [k] of batch) this.pending.delete(k);
      try {
        await this.pool.query({
          name: 'cairn_access_bumps',
          text: `UPDATE memories x SET access_count = x.access_count + u.n,
                   last_accessed_at = GREATEST(COALESCE(x.last_accessed_at, 0), u.at)
                 FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS u(rowid, n, at) WHERE x.rowid = u.rowid`,
          values: [batch.map(([k]) => k), batch.map(([, v]) => v[0]), batch.map(([, v]) => v[1])],
        });
      } catch {
        /* access statistics are best effort: a failed batch (read-only server, lost connection) is dropped */
      }
      // Stored now (or dropped): a later read's stored count includes them, unless it was read again meanwhile.
      for (const [k] of batch) if (!this.pending.has(k)) this.shown.delete(k);
    }
  }
}
