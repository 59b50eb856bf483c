/**
 * The scope and visibility facts the vector index admits by, read from the store (VectorTables): its memories'
 * facts, kept up to the change log; a scope's live namespaces; the rows a filter admits.
 */
import type { Filter, Include, Scope } from '../protocol/types';
import { stmt, type DB } from './db';
import { compileFilter } from './filter';
import { and, visibility } from './rows';
import { scopePredicate } from './scope';
import type { MetaRow, VectorIndex } from './vector-index';
import type { StoredAt } from './vector-rerank';
import type { SlotArrays } from './vector-scan';

/** What a KNN asks: its scope, filter and visibility at `now`, and how many hits. */
export interface KnnQuery {
  scope?: Scope;
  filter?: Filter;
  include?: Include;
  now: number;
  limit: number;
  /** Rowids not admitted (the base rows a memory branch shadows). */
  exclude?: Set<number>;
}

/** A KNN's admitted set and what its scan reads (VectorTables.prepareKnn). */
export interface PreparedKnn {
  arrays: SlotArrays;
  /**
   * Admitted slots: a cached set in shared memory (never written to), or a copy of its own (a view on its own buffer
   * or on the `spare` given), which is transferred to the worker.
   */
  admitted: Int32Array;
  /** The rows a filter admits, or null without a filter. */
  only: Set<number> | null;
  exactMax: number;
  candidates: number;
  /** Where a compact index's int8 vectors are stored, for the worker to rank its hits again (null: not compact). */
  stored: StoredAt | null;
}

/** The scope and visibility facts of these memories (a purged one has none). */
export function vectorMeta(db: DB, rowids: number[]): MetaRow[] {
  return stmt(
    db,
    `SELECT m.rowid, nn.rowid AS ns, m.status, m.deleted_at, m.expires_at, m.valid_from, m.valid_to
      FROM memories m CROSS JOIN namespaces nn ON nn.id = m.ns_id WHERE m.rowid IN (SELECT value FROM json_each(?))`,
  ).all(JSON.stringify(rowids)) as MetaRow[];
}

/**
 * Bring an index's visibility facts up to the change log at `pos`: every memory changed after the index's position
 * gets its current facts; purged memories leave the index.
 */
export function followChanges(db: DB, ix: VectorIndex, pos: number): void {
  if (pos <= ix.position) return;
  let purged = false;
  for (let after = ix.position; after < pos;) {
    const ch = stmt(
      db,
      'SELECT c.position, m.rowid, c.op FROM changes c LEFT JOIN memories m ON m.id = c.memory_id WHERE c.position > ? ORDER BY c.position LIMIT 2000',
    ).all(after) as { position: number; rowid: number | null; op: string }[];
    if (ch.length === 0) break;
    const rowids = [...new Set(ch.filter((c) => c.rowid !== null && ix.slotOf.has(c.rowid)).map((c) => c.rowid!))];
    for (const m of vectorMeta(db, rowids)) {
      const s = ix.slotOf.get(m.rowid);
      if (s !== undefined) ix.setMeta(s, m);
    }
    if (ch.some((c) => c.op === 'purge' || c.op === 'erase' || c.op === 'import')) purged = true;
    after = ch[ch.length - 1].position;
  }
  if (purged) {
    // Purges leave no memory row to find the slot by: drop the slots whose vector row is gone.
    const live = new Set((stmt(db, `SELECT rowid FROM ${ix.model.table}`).all() as { rowid: number }[]).map((r) => r.rowid));
    for (const r of ix.slotOf.keys()) if (!live.has(r)) ix.remove(r);
  }
  ix.position = pos;
}

/** The live namespaces of a scope: a mask by namespace rowid, and their rowids. */
export function scopeNamespaces(db: DB, scope: Scope | undefined): { mask: Uint8Array; ids: number[] } {
  const pred = scopePredicate(scope, 'path');
  const ns = stmt(db, `SELECT rowid FROM namespaces WHERE deleted_at IS NULL AND ${pred ? pred.sql : '1'}`).all(
    ...(pred ? pred.params : []),
  ) as { rowid: number }[];
  let max = 0;
  for (const r of ns) max = Math.max(max, r.rowid);
  const mask = new Uint8Array(max + 1);
  for (const r of ns) mask[r.rowid] = 1;
  return { mask, ids: ns.map((r) => r.rowid) };
}

/** The rows a filter admits inside the scope, visible at `now` (what the SQL WHERE of the full-text arm admits). */
export function filterRows(db: DB, filter: Filter, scope: Scope | undefined, include: Include | undefined, now: number): Set<number> {
  const where = and(visibility(include, now), scopePredicate(scope), compileFilter(filter));
  return new Set(
    (
      stmt(db, `SELECT m.rowid AS rowid FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.sql}`).all(...where.params) as {
        rowid: number;
      }[]
    ).map((r) => r.rowid),
  );
}
