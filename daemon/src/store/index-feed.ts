/**
 * The SQL the vector indexer needs (index/indexer.ts runs no statements of its
 * own): its watermark per model, the active model, the memories to embed, and
 * the possible duplicates it finds.
 */
import { stmt, type DB } from './db';
import type { VecModel } from './vectors';

const ACTIVE_MODEL_KEY = 'active_model';

export interface EmbedRow {
  rowid: number;
  id: string;
  key: string;
  value: string;
  tags: string;
  version: number;
  ns_rowid: number;
  deleted: number;
}

/** What a possible-duplicates notification names of a memory. */
export interface MemoryLabel {
  id: string;
  key: string;
  ns_path: string;
}

export interface DuplicateRow {
  memory_rowid: number;
  other_rowid: number;
  similarity: number;
  version: number;
}

export class IndexFeed {
  constructor(private readonly db: DB) {}

  watermark(model: string): number {
    return this.readState(`vec:${model}`) ?? 0;
  }

  setWatermark(model: VecModel, position: number): void {
    this.writeState(`vec:${model.model}`, model, position);
  }

  /** An `index_state` row's value (its `watermark` column), undefined when there is no such row. */
  private readState(name: string): number | undefined {
    return (stmt(this.db, 'SELECT watermark FROM index_state WHERE name = ?').get(name) as { watermark: number } | undefined)?.watermark;
  }

  private writeState(name: string, model: VecModel, value: number): void {
    stmt(
      this.db,
      `INSERT INTO index_state(name, watermark, model, dimension) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET watermark = excluded.watermark`,
    ).run(name, value, model.model, model.dimension);
  }

  /**
   * Live memories the active model's vector table has no row for although no change after its watermark explains it
   * (a copy taken under writers can hold such a gap). When there are any, the watermark goes to 0, so the indexer
   * re-embeds the store when a daemon next opens it (restore, store/backup.ts). Returns how many were missing.
   */
  resetIfVectorsMissing(models: VecModel[]): number {
    const active = this.activeModel();
    const model = models.find((m) => m.model === active);
    if (!model) return 0;
    const wm = this.watermark(model.model);
    const missing = (
      stmt(
        this.db,
        `SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id
          WHERE n.deleted_at IS NULL AND m.deleted_at IS NULL AND m.rowid NOT IN (SELECT rowid FROM ${model.table})
            AND m.id NOT IN (SELECT memory_id FROM changes WHERE position > ? AND memory_id IS NOT NULL)`,
      ).get(wm) as { c: number }
    ).c;
    if (missing > 0) this.setWatermark(model, 0);
    return missing;
  }

  activeModel(): string | null {
    return (stmt(this.db, 'SELECT value FROM meta WHERE key = ?').get(ACTIVE_MODEL_KEY) as { value: string } | undefined)?.value ?? null;
  }

  setActiveModel(model: string): void {
    stmt(this.db, 'INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(
      ACTIVE_MODEL_KEY,
      model,
    );
  }

  /** Every memory row (what a full re-embed queues). */
  memoryCount(): number {
    return (stmt(this.db, 'SELECT count(*) AS c FROM memories').get() as { c: number }).c;
  }

  /** Memories of live namespaces (what a backfill embeds), after `afterRowid` (a rebuild resumed). */
  liveMemoryCount(afterRowid = 0): number {
    return (
      stmt(
        this.db,
        'SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.deleted_at IS NULL AND m.rowid > ?',
      ).get(afterRowid) as { c: number }
    ).c;
  }

  /**
   * Where a rebuild of a model's vectors in place (index/rebuild with the model in use) has got to: the last rowid
   * re-embedded (0 when it has just begun), null when none is in progress. Kept in `index_state` as
   * `rebuild:<model>`, so a daemon stopped in the middle resumes it at its next start.
   */
  rebuildCursor(model: string): number | null {
    return this.readState(`rebuild:${model}`) ?? null;
  }

  setRebuildCursor(model: VecModel, afterRowid: number): void {
    this.writeState(`rebuild:${model.model}`, model, afterRowid);
  }

  clearRebuildCursor(model: string): void {
    stmt(this.db, 'DELETE FROM index_state WHERE name = ?').run(`rebuild:${model}`);
  }

  private static readonly COLS =
    'm.rowid, m.id, m.key, m.value, m.tags, m.version, n.rowid AS ns_rowid, (m.deleted_at IS NOT NULL) AS deleted';

  /** A page of memories of live namespaces after `afterRowid`, in rowid order (backfill). */
  pageAfter(afterRowid: number, limit: number): EmbedRow[] {
    return stmt(
      this.db,
      `SELECT ${IndexFeed.COLS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.deleted_at IS NULL AND m.rowid > ? ORDER BY m.rowid LIMIT ?`,
    ).all(afterRowid, limit) as EmbedRow[];
  }

  /** The memories of these ids that still exist. */
  byIds(ids: string[]): EmbedRow[] {
    if (ids.length === 0) return [];
    return stmt(
      this.db,
      `SELECT ${IndexFeed.COLS} FROM memories m CROSS JOIN namespaces n ON n.id = m.ns_id WHERE m.id IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(ids)) as EmbedRow[];
  }

  /**
   * Replace the possible duplicates recorded for a memory (call inside a write transaction, with memories that
   * exist: the indexer checks that with labels() in the same transaction).
   */
  setDuplicates(rowid: number, version: number, hits: { rowid: number; similarity: number }[]): void {
    stmt(this.db, 'DELETE FROM duplicate_candidates WHERE memory_rowid = ?').run(rowid);
    const ins = stmt(this.db, 'INSERT INTO duplicate_candidates(memory_rowid, other_rowid, similarity, version) VALUES (?, ?, ?, ?)');
    for (const h of hits) ins.run(rowid, h.rowid, h.similarity, version);
  }

  /** Clear the possible duplicates recorded for these memories (checks that found none), in one statement. */
  clearDuplicates(rowids: number[]): void {
    if (rowids.length === 0) return;
    stmt(this.db, 'DELETE FROM duplicate_candidates WHERE memory_rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rowids));
  }

  /**
   * What a possible-duplicates notification names of each memory (id, key, namespace path), for many memories in
   * one statement: the indexer records and reports a whole pass's checks at once. Purged memories are absent.
   */
  labels(rowids: number[]): Map<number, MemoryLabel> {
    const out = new Map<number, MemoryLabel>();
    if (rowids.length === 0) return out;
    const rows = stmt(
      this.db,
      'SELECT m.rowid AS rowid, m.id, m.key, n.path AS ns_path FROM memories m CROSS JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid IN (SELECT value FROM json_each(?))',
    ).all(JSON.stringify(rowids)) as { rowid: number; id: string; key: string; ns_path: string }[];
    for (const r of rows) out.set(r.rowid, { id: r.id, key: r.key, ns_path: r.ns_path });
    return out;
  }

  /** Possible duplicates recorded for a memory whose candidates are still live, most similar first. */
  duplicates(rowid: number): DuplicateRow[] {
    return stmt(
      this.db,
      `SELECT d.memory_rowid, d.other_rowid, d.similarity, d.version FROM duplicate_candidates d
      JOIN memories o ON o.rowid = d.other_rowid JOIN namespaces n ON n.id = o.ns_id
      WHERE d.memory_rowid = ? AND o.deleted_at IS NULL AND n.deleted_at IS NULL ORDER BY d.similarity DESC, d.other_rowid`,
    ).all(rowid) as DuplicateRow[];
  }

  /** Whether the change log holds a change of this memory after `position` (its duplicate check is then still pending). */
  changedAfter(memoryId: string, position: number): boolean {
    return !!stmt(this.db, 'SELECT 1 FROM changes WHERE position > ? AND memory_id = ? LIMIT 1').get(position, memoryId);
  }
}
