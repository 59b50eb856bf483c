/**
 * Code anchors: which memories point at a file (hover, line tracking), moving anchors with the code they point
 * at, and sending a memory whose code is gone to review. The `anchors` table indexes each memory's anchors by path.
 */
import type { Anchor, Memory, Scope, WriteResult } from '../protocol/types';
import { stmt, type DB } from './db';
import { appendHistory } from './history';
import { rowBy } from './reads';
import { and, MEMORY_COLUMNS, toMemory, visibility, type MemoryRow } from './rows';
import { scopePredicate } from './scope';
import type { Store } from './store';
import { SYSTEM_ANCHORS } from './write-rules';

/** A live memory's anchors, for re-checking them (server/anchor-check.ts). */
export interface AnchoredRow {
  rowid: number;
  id: string;
  namespace: string;
  key: string;
  anchors: Anchor[];
}

/** Index a memory's anchors by path (inside the caller's write). */
export function writeAnchors(db: DB, rowid: number, anchors: Anchor[]): void {
  stmt(db, 'DELETE FROM anchors WHERE memory_rowid = ?').run(rowid);
  const ins = stmt(db, 'INSERT INTO anchors(memory_rowid, idx, path, symbol, start_line, end_line, stale) VALUES (?, ?, ?, ?, ?, ?, ?)');
  anchors.forEach((a, i) => ins.run(rowid, i, a.path, a.symbol ?? null, a.startLine ?? null, a.endLine ?? null, a.stale ? 1 : 0));
}

/** Visible memories with an anchor on one of `paths`: one entry per matching anchor. Indexed lookup, no scoring. */
export function anchoredAt(store: Store, paths: string[], scope?: Scope): { memory: Memory; anchor: Anchor }[] {
  if (paths.length === 0) return [];
  const vis = and(visibility(undefined, store.now()), scopePredicate(scope));
  const rows = stmt(
    store.db,
    `SELECT ${MEMORY_COLUMNS}, a.idx AS anchor_idx FROM anchors a JOIN memories m ON m.rowid = a.memory_rowid JOIN namespaces n ON n.id = m.ns_id
       WHERE a.path IN (${paths.map(() => '?').join(',')}) AND ${vis.sql} ORDER BY m.importance DESC, m.updated_at DESC, m.id`,
  ).all(...paths, ...vis.params) as (MemoryRow & { anchor_idx: number })[];
  return rows
    .map((r) => {
      const memory = toMemory(r);
      return { memory, anchor: memory.anchors[r.anchor_idx] };
    })
    .filter((x) => x.anchor !== undefined);
}

/** Live memories anchored to one of `paths` (null: to any path), with all their anchors (for line tracking). */
export function anchorsByPath(db: DB, paths: string[] | null, scope?: Scope): AnchoredRow[] {
  if (paths !== null && paths.length === 0) return [];
  const sc = scopePredicate(scope) ?? { sql: '1', params: [] };
  const where = paths === null ? '1' : `a.path IN (SELECT value FROM json_each(?))`;
  const rows = stmt(
    db,
    `SELECT DISTINCT m.rowid AS rowid, m.id, n.path AS namespace, m.key, m.anchors FROM anchors a JOIN memories m ON m.rowid = a.memory_rowid JOIN namespaces n ON n.id = m.ns_id WHERE ${where} AND m.deleted_at IS NULL AND n.deleted_at IS NULL AND ${sc.sql}`,
  ).all(...(paths === null ? [] : [JSON.stringify(paths)]), ...sc.params) as (Omit<AnchoredRow, 'anchors'> & { anchors: string })[];
  return rows.map((r) => ({ ...r, anchors: JSON.parse(r.anchors) as Anchor[] }));
}

/** One live memory's anchors by id (the injection's citation check). */
export function anchorsOf(db: DB, id: string): AnchoredRow | null {
  const r = stmt(
    db,
    'SELECT m.rowid AS rowid, m.id, n.path AS namespace, m.key, m.anchors FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ? AND m.deleted_at IS NULL',
  ).get(id) as (Omit<AnchoredRow, 'anchors'> & { anchors: string }) | undefined;
  return r ? { ...r, anchors: JSON.parse(r.anchors) as Anchor[] } : null;
}

/**
 * Anchors whose code is gone or changed beyond recognition: a new version with the anchors marked stale, and an
 * active memory sent to review (status `proposed`), with a history row by `system:anchors` giving the reason — so
 * nothing changes silently and the previous state stays in history.
 */
export function staleAnchors(store: Store, rowid: number, anchors: Anchor[], reason: string): WriteResult | null {
  const db = store.db;
  return store.transaction(() => {
    const r = rowBy(db, 'm.rowid = ? AND m.deleted_at IS NULL', rowid);
    if (!r) return null;
    const now = store.now();
    const before = toMemory(r);
    const status = r.status === 'active' ? 'proposed' : r.status;
    stmt(db, 'UPDATE memories SET anchors = ?, status = ?, version = version + 1, updated_at = ? WHERE rowid = ?').run(
      JSON.stringify(anchors),
      status,
      now,
      rowid,
    );
    writeAnchors(db, rowid, anchors);
    const after = toMemory(rowBy(db, 'm.rowid = ?', rowid)!);
    const stale = anchors.filter((a) => a.stale).map((a) => a.path);
    appendHistory(store, r.id, 'update', SYSTEM_ANCHORS, reason, after.version, before, after, { staleAnchors: stale }, now);
    const position = store.logChange('update', r.id, r.ns_id, r.ns_path, r.key);
    return { memory: after, position };
  });
}

/**
 * Move anchors with the code they point at (line shifts, stale marks). This
 * is positional bookkeeping, not a content change: no new version and no
 * history row, but clients hear of it (op `anchor`) to refresh their views.
 */
export function updateAnchors(store: Store, rowid: number, anchors: Anchor[]): void {
  const db = store.db;
  store.transaction(() => {
    const r = rowBy(db, 'm.rowid = ?', rowid);
    if (!r) return;
    stmt(db, 'UPDATE memories SET anchors = ? WHERE rowid = ?').run(JSON.stringify(anchors), rowid);
    writeAnchors(db, rowid, anchors);
    store.changeLog.announce({ position: store.position(), id: r.id, namespace: r.ns_path, key: r.key, op: 'anchor' });
  });
}
