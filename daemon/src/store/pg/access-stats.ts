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
  /** Batches applied (or dropped) so far: a read that began at epoch e saw every batch before e in its stored count. */
  private epoch = 0;
  /** Reads in flight by the epoch they began at, oldest first (epochs only grow, so insertion order is age order). */
  private reading = new Map<number, number>();
  /**
   * The count this daemon last answered for a row, and the epoch from which the stored count includes every read it
   * answered (Infinity while some are queued or being written). A second read before then answers one more than the
   * first, as on the SQLite store; a read that began later reads them stored (never counting a stored read twice).
   */
  private shown = new Map<string, { count: number; stored: number }>();

  constructor(private readonly pool: pg.Pool) {}

  /** Call before the read whose row will be passed to add; end(started) after it, whatever its outcome. */
  begin(): number {
    this.reading.set(this.epoch, (this.reading.get(this.epoch) ?? 0) + 1);
    return this.epoch;
  }

  end(started: number): void {
    const n = (this.reading.get(started) ?? 1) - 1;
    if (n > 0) this.reading.set(started, n);
    else this.reading.delete(started);
    this.prune();
  }

  /**
   * Record one read of the row at `now` (milliseconds), soon; returns the access count to answer with: the stored
   * count `stored` (read by a read that began at `started`) plus this read, or one more than this daemon's previous
   * answer while the read could not see that answer's reads stored.
   */
  add(rowid: number | string, now: number, stored: number, started: number): number {
    const k = String(rowid);
    const p = this.pending.get(k);
    this.pending.set(k, p ? [p[0] + 1, Math.max(p[1], now)] : [1, now]);
    const s = this.shown.get(k);
    const count = s && started < s.stored ? Math.max(stored + 1, s.count + 1) : stored + 1;
    this.shown.set(k, { count, stored: Infinity });
    this.running ??= this.drain().finally(() => (this.running = null));
    return count;
  }

  /** Resolves when every read recorded so far is applied (or dropped): before the pool closes, and in tests. */
  async flushed(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Rows tracked for answers not yet known stored (bounded by the reads in flight and queued; for tests). */
  get tracked(): number {
    return this.shown.size;
  }

  /** Forget the rows whose reads every read still in flight sees stored (a row read again since is Infinity: kept). */
  private prune(): void {
    const oldest = this.reading.size ? this.reading.keys().next().value! : this.epoch;
    for (const [k, s] of this.shown) if (s.stored <= oldest) this.shown.delete(k);
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
      // Stored now (or dropped): a read that begins from here on includes them in its stored count, unless the row
      // was read again meanwhile. A read already in flight may have read the row before the UPDATE committed.
      this.epoch++;
      for (const [k] of batch) {
        const s = this.shown.get(k);
        if (s && !this.pending.has(k)) s.stored = this.epoch;
      }
      this.prune();
    }
  }
}
