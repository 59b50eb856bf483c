/**
 * The full-text index follows the change log: a write only appends its change, and the text of every memory a
 * change created, updated, restored or imported is indexed in batches (catchUp, soon after writes, in one
 * transaction), watermarked in index_state. Every full-text search and index/wait catches the index up first, so
 * a write is found at once.
 */
import { identifierCompounds, identifierIndexText } from '../text/identifiers';
import { indexAllBranchRows } from './branch-text';
import { stmt, writeTx, type DB } from './db';
import { derivedCommit } from './derived-commit';
import { ftsArm, namespaceToken, type ArmHit, type ArmQuery, type BranchText } from './search-fts';
import type { Store } from './store';

/**
 * Full text is indexed this long after the first write that leaves it behind, for every write since, in one
 * transaction: FTS5 writes a new segment (about 7 WAL pages) per committing transaction, so indexing each write
 * in its own commit cost about half of a single upsert. A search or index/wait does not wait for the timer: it
 * catches the index up first.
 */
export const FTS_DELAY_MS = 25;
/**
 * While the vector indexer runs (fullTextFollower), its passes catch the full text up in their own commit, every
 * KICK_DELAY_MS (50 ms) under a stream of writes: the store's own timer then only backs them up, this long after a
 * write (a pass delayed by a slow model or by searches).
 */
export const FTS_BACKUP_DELAY_MS = 100;
/** Change-log rows read per step while catching the full-text index up. */
const FTS_STEP = 1000;
/** Change-log ops that can change a memory's indexed text (the others change state only: deleted, superseded...). */
const TEXT_OPS = new Set(['create', 'update', 'restore', 'import']);

interface TextRow {
  rowid: number;
  key: string;
  value: string;
  summary: string | null;
  tags: string;
  ns_id: string;
}

/**
 * Write one row of the full-text index (replacing the row of that rowid unless `fresh`): a memory's text under its rowid
 * and namespace token, or a memory branch row's under its negated rowid and branch namespace token (branch-text.ts).
 */
export function putFullText(
  db: DB,
  rowid: number,
  m: { key: string; value: string; summary: string | null; tags: string[]; ns: string },
  fresh = false,
): void {
  if (!fresh) stmt(db, 'DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
  const idents = identifierIndexText(`${m.key} ${m.value}`);
  stmt(db, 'INSERT INTO memories_fts(rowid, key, value, summary, tags, idents, ns) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    rowid,
    `${m.key.replace(/[._/:-]+/g, ' ')} ${m.key} ${identifierCompounds(m.key)}`,
    m.value,
    m.summary ?? '',
    m.tags.join(' '),
    idents,
    m.ns,
  );
}

export class FullText {
  /** A full-text row was written in the current transaction (a new FTS5 segment at commit: the background merge). */
  written = false;
  private timer: NodeJS.Timeout | null = null;

  /** `committed`: tell the background checkpointer about a commit of the index's own (catchUp outside a write). */
  constructor(
    private readonly store: Store,
    private readonly committed: (ftsWritten: boolean) => void,
  ) {}

  private get db(): DB {
    return this.store.db;
  }

  private put(rowid: number, m: { key: string; value: string; summary: string | null; tags: string[]; nsId: string }, fresh = false): void {
    this.written = true;
    putFullText(this.db, rowid, { ...m, ns: namespaceToken(m.nsId) }, fresh);
  }

  private putRow(r: TextRow, fresh = false): void {
    this.put(r.rowid, { key: r.key, value: r.value, summary: r.summary, tags: JSON.parse(r.tags), nsId: r.ns_id }, fresh);
  }

  /** Index the full text of recent writes soon, in one batch (FTS_DELAY_MS, or FTS_BACKUP_DELAY_MS, see above). */
  schedule(): void {
    if (this.timer || this.db.readonly) return;
    const delay = this.store.fullTextFollower?.() ? FTS_BACKUP_DELAY_MS : FTS_DELAY_MS;
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.catchUp();
      } catch {
        /* busy or closed: the next write, search, index/wait or open catches up */
      }
    }, delay);
    this.timer.unref?.();
  }

  /** At close: no more timer (the store catches up once more itself). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  watermark(): number {
    return (stmt(this.db, `SELECT watermark FROM index_state WHERE name = 'fts'`).get() as { watermark: number }).watermark;
  }

  /**
   * Bring the full-text index up to the change log: re-index the text of every memory a change after the `fts`
   * watermark created, updated, restored or imported, in one transaction, and move the watermark. Cheap when
   * current. Returns the watermark. A read-only connection cannot write the index: it answers from what is indexed.
   */
  catchUp(): number {
    const wm = this.watermark();
    if (this.db.readonly || wm >= this.store.position()) return wm;
    if (this.db.inTransaction) return writeTx(this.db, () => this.indexAfter(this.watermark())); // committed by the outer write
    try {
      // Derived data with its watermark: no fsync of its own at synchronous=FULL (derived-commit.ts).
      const r = derivedCommit(this.db, () => writeTx(this.db, () => this.indexAfter(this.watermark())));
      this.committed(this.written);
      return r;
    } finally {
      this.written = false;
    }
  }

  private indexAfter(wm: number): number {
    for (;;) {
      const changes = stmt(this.db, 'SELECT position, memory_id AS id, op FROM changes WHERE position > ? ORDER BY position LIMIT ?').all(
        wm,
        FTS_STEP,
      ) as { position: number; id: string | null; op: string }[];
      if (changes.length === 0) return wm;
      // Per memory: whether its text changed, and whether it was created here (no entry of it can be indexed yet).
      const touched = new Map<string, boolean>();
      for (const c of changes) if (c.id !== null && TEXT_OPS.has(c.op) && !touched.has(c.id)) touched.set(c.id, c.op === 'create');
      if (touched.size > 0) {
        const rows = stmt(
          this.db,
          'SELECT id, rowid, key, value, summary, tags, ns_id FROM memories WHERE id IN (SELECT value FROM json_each(?))',
        ).all(JSON.stringify([...touched.keys()])) as (TextRow & { id: string })[];
        // A memory purged since has no row; its entry (if any) was removed with it.
        for (const r of rows) this.putRow(r, touched.get(r.id) === true);
      }
      wm = changes[changes.length - 1].position;
      stmt(this.db, `UPDATE index_state SET watermark = ? WHERE name = 'fts'`).run(wm);
      if (changes.length < FTS_STEP) return wm;
    }
  }

  /**
   * At open: catch the FTS index up with the change log, or rebuild it whole when it was never built or was
   * dropped (older schema, fresh FTS table: watermark 0).
   */
  heal(log: (msg: string) => void): void {
    const wm = this.watermark();
    const pos = this.store.position();
    if (wm >= pos && pos > 0) return;
    if (wm > 0) {
      writeTx(this.db, () => this.indexAfter(wm));
      return;
    }
    const count = (
      stmt(this.db, 'SELECT (SELECT count(*) FROM memories) + (SELECT count(*) FROM branch_memories) AS c').get() as { c: number }
    ).c;
    if (pos === 0 && count === 0) return;
    // An index dropped because an older Cairn wrote it in another format or shape (schema.ts FTS_FORMAT), or never built.
    if (count > 0) log(`rebuilding the full-text index of ${count} memories`);
    this.rebuild();
  }

  /**
   * Rebuild the full-text index from the memories themselves (and memory branches' rows), whatever its watermark says,
   * and set the watermark to the head of the change log. Returns how many memories were indexed.
   */
  rebuild(): number {
    const pos = this.store.position();
    let n = 0;
    writeTx(this.db, () => {
      stmt(this.db, 'DELETE FROM memories_fts').run();
      const page = stmt(this.db, 'SELECT rowid, key, value, summary, tags, ns_id FROM memories WHERE rowid > ? ORDER BY rowid LIMIT 1000');
      for (let after = 0; ;) {
        const rows = page.all(after) as TextRow[];
        if (rows.length === 0) break;
        for (const r of rows) this.putRow(r);
        n += rows.length;
        after = rows[rows.length - 1].rowid;
      }
      indexAllBranchRows(this.db); // memory branches' rows live in the same index (branch-text.ts)
      stmt(this.db, `UPDATE index_state SET watermark = ? WHERE name = 'fts'`).run(pos);
    });
    return n;
  }

  /**
   * The full-text arm (search-fts.ts), over an index caught up with every write first (read-your-writes); with `branch`,
   * a search on that memory branch (its rows matched and ranked with the base's).
   */
  arm(query: string, q: ArmQuery, branch?: BranchText): ArmHit[] {
    this.catchUp();
    return ftsArm(this.db, query, q, branch ? { branch } : {});
  }
}

/**
 * Merge the full-text index into one segment, which drops every entry of
 * deleted rows still held by older segments (a row's earlier versions, or a
 * term secure-delete left in place), so purged text leaves the index pages.
 * Costs about 150 ms per 20k memories; run once per purge, erase or sweep batch.
 */
export function ftsCompact(db: DB): void {
  stmt(db, `INSERT INTO memories_fts(memories_fts) VALUES ('optimize')`).run();
}

/** Delete a full-text row with FTS5's secure-delete, so its terms leave the index pages rather than stay behind a tombstone. */
export function ftsSecureDelete(db: DB, rowid: number): void {
  stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1)`).run();
  try {
    stmt(db, 'DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
  } finally {
    stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 0)`).run();
  }
}
