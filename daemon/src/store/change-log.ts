/**
 * The change log and the change events: every write appends a `changes` row (its position), and listeners hear of
 * it only after the write committed (flush). Changes another process committed (the CLI's `--direct`, a script with
 * its own connection) are announced too (noticeExternalChanges), so a daemon broadcasts and embeds every write.
 */
import type { DidChangeParams } from '../protocol/types';
import { stmt, type DB } from './db';
import type { Store } from './store';

export type ChangeListener = (change: DidChangeParams) => void;

export class ChangeLog {
  private listeners = new Set<ChangeListener>();
  /** Events of the current write transaction, told to listeners after it commits. */
  private pending: DidChangeParams[] = [];
  /** Change-log position up to which listeners have heard of every change (own and external). */
  private emitted = -1;
  /** Own changes above `emitted`, already announced. */
  private readonly ownAhead = new Set<number>();
  private seenDataVersion = -1;

  constructor(private readonly store: Store) {}

  private get db(): DB {
    return this.store.db;
  }

  onChange(fn: ChangeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Append a change-log row; listeners hear of it after commit. */
  append(op: string, memoryId: string | null, nsId: string | null, nsPath: string | null, key: string | null): number {
    const at = this.store.now();
    const position = Number(
      stmt(this.db, 'INSERT INTO changes(memory_id, ns_id, op, at) VALUES (?, ?, ?, ?)').run(memoryId, nsId, op, at).lastInsertRowid,
    );
    // The vector arm applies the change log before its next query (VectorTables.refresh), so it sees this change at
    // once; the full-text index catches up before its next query (catchUpFullText).
    this.pending.push({ position, id: memoryId, namespace: nsPath, key, op });
    return position;
  }

  /** An event without a change-log row of its own (anchor moves), told to listeners after commit. */
  announce(ev: DidChangeParams): void {
    this.pending.push(ev);
  }

  position(): number {
    const r = stmt(this.db, 'SELECT max(position) AS p FROM changes').get() as { p: number | null };
    return r.p ?? 0;
  }

  /** The write rolled back: its events never happened. */
  discard(): void {
    this.pending = [];
  }

  /** The write committed: tell listeners about its events. */
  flush(): void {
    const events = this.pending;
    this.pending = [];
    this.fire(events);
    if (events.length === 0 || this.emitted < 0) return; // nobody watches for external changes
    // Own positions move the announced mark only while no other process committed in between (data_version
    // unchanged); otherwise noticeExternalChanges announces the others' rows and skips these.
    for (const ev of events) this.ownAhead.add(ev.position);
    if (this.dataVersion() === this.seenDataVersion) {
      this.emitted = Math.max(this.emitted, ...this.ownAhead);
      this.ownAhead.clear();
    }
  }

  private fire(events: DidChangeParams[]): void {
    if (events.length) this.store.fullText.schedule();
    for (const ev of events)
      for (const l of this.listeners) {
        try {
          l(ev);
        } catch {
          /* a listener's failure must not affect the store */
        }
      }
  }

  private dataVersion(): number {
    // A cached statement: db.pragma() prepares the statement again on every call (once per write here).
    return (stmt(this.db, 'PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  /**
   * Tell listeners about change-log rows another process appended. Cheap when nothing changed: SQLite's
   * data_version says whether another connection committed. Returns how many changes were announced.
   */
  noticeExternalChanges(limit: number): number {
    if (!this.db.open) return 0;
    const dv = this.dataVersion();
    if (this.emitted < 0) {
      this.emitted = this.position();
      this.seenDataVersion = dv;
      this.ownAhead.clear();
      return 0;
    }
    if (dv === this.seenDataVersion) return 0;
    const rows = stmt(
      this.db,
      `SELECT c.position AS position, c.memory_id AS id, n.path AS namespace, m.key AS key, c.op AS op
         FROM changes c LEFT JOIN memories m ON m.id = c.memory_id LEFT JOIN namespaces n ON n.id = c.ns_id
        WHERE c.position > ? ORDER BY c.position LIMIT ?`,
    ).all(this.emitted, limit) as DidChangeParams[];
    if (rows.length < limit) this.seenDataVersion = dv; // else: more to read on the next call
    if (rows.length === 0) return 0;
    this.emitted = rows[rows.length - 1].position;
    const external = rows.filter((r) => !this.ownAhead.delete(r.position));
    for (const p of this.ownAhead) if (p <= this.emitted) this.ownAhead.delete(p);
    this.fire(external);
    return external.length;
  }

  /** Changes after `position`, oldest first (the indexer's feed). */
  since(position: number, limit: number): { position: number; memoryId: string | null; op: string }[] {
    return stmt(this.db, 'SELECT position, memory_id AS memoryId, op FROM changes WHERE position > ? ORDER BY position LIMIT ?').all(
      position,
      limit,
    ) as {
      position: number;
      memoryId: string | null;
      op: string;
    }[];
  }
}
