/**
 * Erase and retention of branch rows (docs/branches.md): what `memory/erase` and the retention sweep do to the
 * rows memory branches hold (store/branches.ts), so that neither leaves a copy of erased or expired text on a branch.
 *
 * - Erase: every branch's row of an erased memory (same id), of the same namespace and key (a key a branch added before
 *   the base wrote it has its own id), and with a root every branch row under it; the receipt lists and hashes them.
 * - Retention: `maxTtlDays` caps the expiry of a live branch row as of a base memory; `maxAgeDays` purges a branch row
 *   deleted (or expired) longer ago than that: removed when no live base memory shows through, else kept as a
 *   contentless delete (its value and summary blanked) so the delete still hides the base memory on the branch.
 */
import { eraseBranchText, indexBranchRow, unindexBranchRows } from './branch-text';
import { stmt, type DB } from './db';

export interface BranchTarget {
  rowid: number;
  id: string;
  ns_path: string;
  key: string;
  value: string;
  version: number;
  branch_id: string;
}

const TARGET_COLUMNS = 'rowid, id, ns_path, key, value, version, branch_id';

/** The branch rows an erase reaches: ids, (namespace, key) pairs, and with a root every row under it. */
export function branchTargets(db: DB, ids: string[], keys: { namespace: string; key: string }[], root?: string): BranchTarget[] {
  const parts = [
    'id IN (SELECT value FROM json_each(?))',
    `(ns_path, key) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))`,
  ];
  const params: unknown[] = [JSON.stringify(ids), JSON.stringify(keys.map((k) => [k.namespace, k.key]))];
  if (root !== undefined) {
    parts.push('ns_path = ? OR substr(ns_path, 1, ?) = ?');
    params.push(root, root.length + 1, root + '.');
  }
  return stmt(db, `SELECT ${TARGET_COLUMNS} FROM branch_memories WHERE ${parts.join(' OR ')} ORDER BY rowid`).all(
    ...params,
  ) as BranchTarget[];
}

/** Remove these branch rows and their full-text rows (in the erase's transaction). Returns how many went. */
export function eraseBranchRows(db: DB, rows: BranchTarget[]): number {
  if (rows.length === 0) return 0;
  const rowids = JSON.stringify(rows.map((r) => r.rowid));
  // Erased terms leave the index at once (secure-delete: only erase pays it; discard and merge delete plainly, leaving
  // old terms in segments until FTS5 merges them). The erase merges the index afterwards (ftsCompact).
  eraseBranchText(
    db,
    rows.map((r) => r.rowid),
  );
  for (const b of new Set(rows.map((r) => r.branch_id))) touch(db, b);
  return stmt(db, `DELETE FROM branch_memories WHERE rowid IN (SELECT value FROM json_each(?))`).run(rowids).changes;
}

/** A write of a branch's rows bumps its generation (the cache of base rows it shadows is keyed by it). */
function touch(db: DB, branchId: string): void {
  stmt(db, 'UPDATE branches SET generation = generation + 1 WHERE id = ?').run(branchId);
}

const under = (root: string) => ({ sql: '(b.ns_path = ? OR substr(b.ns_path, 1, ?) = ?)', params: [root, root.length + 1, root + '.'] });

/** Retention's TTL cap on the live branch rows under a root: the expiry a base memory would get. Returns their ids. */
export function capBranchTtl(db: DB, root: string, since: number, ttl: number, now: number, batch: number): string[] {
  const u = under(root);
  const rows = stmt(
    db,
    `SELECT b.rowid, b.id, b.branch_id, b.updated_at FROM branch_memories b
      WHERE ${u.sql} AND b.deleted_at IS NULL AND (b.expires_at IS NULL OR b.expires_at > max(b.updated_at, ?) + ?) LIMIT ?`,
  ).all(...u.params, since, ttl, batch) as { rowid: number; id: string; branch_id: string; updated_at: number }[];
  for (const r of rows) {
    stmt(db, 'UPDATE branch_memories SET expires_at = ?, version = version + 1, updated_at = max(updated_at, ?) WHERE rowid = ?').run(
      Math.max(r.updated_at, since) + ttl,
      now,
      r.rowid,
    );
    touch(db, r.branch_id);
  }
  return rows.map((r) => r.id);
}

/**
 * Retention's purge of branch rows under a root deleted or expired before `cutoff`: a row with no live base memory of
 * its key is removed; one that hides a live base memory keeps its delete with its text blanked. Returns their ids.
 */
export function purgeBranchRows(db: DB, root: string, cutoff: number, batch: number): string[] {
  const u = under(root);
  const rows = stmt(
    db,
    `SELECT b.rowid, b.id, b.branch_id, EXISTS (SELECT 1 FROM memories m JOIN namespaces n ON n.id = m.ns_id
        WHERE n.path = b.ns_path AND n.deleted_at IS NULL AND m.key = b.key AND m.deleted_at IS NULL) AS base_live
       FROM branch_memories b
      WHERE ${u.sql} AND ((b.deleted_at IS NOT NULL AND b.deleted_at < ?) OR (b.expires_at IS NOT NULL AND b.expires_at < ?))
        AND NOT (b.value = '' AND b.deleted_at IS NOT NULL) LIMIT ?`,
  ).all(...u.params, cutoff, cutoff, batch) as { rowid: number; id: string; branch_id: string; base_live: number }[];
  for (const r of rows) {
    unindexBranchRows(db, [r.rowid]);
    if (r.base_live) {
      stmt(
        db,
        `UPDATE branch_memories SET value = '', summary = NULL, deleted_at = coalesce(deleted_at, expires_at), deleted_by = coalesce(deleted_by, 'retention'),
             delete_reason = coalesce(delete_reason, 'retention: expired')
          WHERE rowid = ?`,
      ).run(r.rowid);
      indexBranchRow(db, r.rowid);
    } else stmt(db, 'DELETE FROM branch_memories WHERE rowid = ?').run(r.rowid);
    touch(db, r.branch_id);
  }
  return rows.map((r) => r.id);
}
