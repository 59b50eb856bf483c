/**
 * Deleting a memory and bringing it back: delete and forget (a soft delete; forget also rejects the value),
 * restore, purge (an admin removing a deleted memory from every table) and the TTL sweep. Deleted stays deleted:
 * only restore brings a memory back, and every step is a version with its actor and reason.
 */
import { CairnError } from '../protocol/errors';
import type { PurgeResult, SweepResult, WriteResult } from '../protocol/types';
import { stmt } from './db';
import { ftsCompact, ftsSecureDelete } from './full-text';
import { appendHistory } from './history';
import { resolveTarget, rowBy, type Target } from './reads';
import { liftRejection, rejectValue } from './rejected';
import { iso, toMemory, type MemoryRow } from './rows';
import type { Store } from './store';
import { DEAD_NAMESPACE_MEMORIES } from './sweep-sql';
import { SYSTEM_EXPIRE } from './write-rules';

export function forget(store: Store, t: Target): WriteResult {
  return store.transaction(() => {
    const r = softDelete(store, t, 'forget');
    const row = rowBy(store.db, 'm.id = ?', r.memory.id)!;
    rejectValue(store.db, store.keys!, row.ns_id, row.value, row.id, t.actor ?? 'user', store.now());
    return r;
  });
}

/** Mark a memory deleted (inside the caller's write): a new version, a history row and a change. */
export function softDelete(store: Store, t: Target, op: 'delete' | 'forget' | 'expire'): WriteResult {
  const db = store.db;
  const row = resolveTarget(db, t);
  if (row.deleted_at !== null) {
    if (op === 'forget') {
      // Forgetting an already-deleted memory still rejects its value.
      return { memory: toMemory(row), position: store.logChange('forget', row.id, row.ns_id, row.ns_path, row.key) };
    }
    throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
      field: t.id !== undefined ? 'id' : 'key',
      deletedAt: iso(row.deleted_at),
      deletedBy: row.deleted_by,
    });
  }
  const now = store.now();
  const actor = op === 'expire' ? SYSTEM_EXPIRE : (t.actor ?? 'user');
  const before = toMemory(row);
  stmt(
    db,
    'UPDATE memories SET deleted_at = ?, deleted_by = ?, delete_reason = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
  ).run(now, actor, t.reason ?? null, now, row.rowid);
  const after = toMemory(rowBy(db, 'm.rowid = ?', row.rowid)!);
  appendHistory(store, row.id, op, actor, t.reason, after.version, before, after);
  const position = store.logChange(op, row.id, row.ns_id, row.ns_path, row.key);
  return { memory: after, position };
}

export function restore(store: Store, t: Target): WriteResult {
  const db = store.db;
  return store.transaction(() => {
    const row = resolveTarget(db, t);
    if (row.deleted_at === null)
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is not deleted`, { field: t.id !== undefined ? 'id' : 'key' });
    const now = store.now();
    const before = toMemory(row);
    const lifted = liftRejection(db, store.keys, row.ns_id, row.value);
    // A memory that expired comes back without its expiry, or it would vanish again at once.
    const expires = row.expires_at !== null && row.expires_at <= now ? null : row.expires_at;
    stmt(
      db,
      'UPDATE memories SET deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, expires_at = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
    ).run(expires, now, row.rowid);
    const after = toMemory(rowBy(db, 'm.rowid = ?', row.rowid)!);
    appendHistory(
      store,
      row.id,
      'restore',
      t.actor ?? 'user',
      t.reason,
      after.version,
      before,
      after,
      lifted ? { unrejected: true } : undefined,
    );
    const position = store.logChange('restore', row.id, row.ns_id, row.ns_path, row.key);
    return { memory: after, position };
  });
}

/** Admin: remove a deleted memory from every table. History keeps one `purge` row (who, when, why) without content. */
export function purge(store: Store, t: Target): PurgeResult {
  return store.transaction(() => {
    const row = resolveTarget(store.db, t);
    if (row.deleted_at === null)
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is live; delete it before purging`, {
        field: t.id !== undefined ? 'id' : 'key',
      });
    const position = purgeRow(store, row, t.actor ?? 'user', t.reason);
    ftsCompact(store.db);
    return { id: row.id, position };
  });
}

/** Remove a memory from every table (inside the caller's write), leaving one contentless purge row. */
export function purgeRow(
  store: Store,
  row: Pick<MemoryRow, 'rowid' | 'id' | 'ns_id' | 'key' | 'version'> & { ns_path: string | null },
  actor: string,
  reason?: string,
): number {
  const db = store.db;
  ftsSecureDelete(db, row.rowid);
  deleteVectors(store, row.rowid);
  stmt(db, 'DELETE FROM links WHERE src = ? OR dst = ?').run(row.id, row.id);
  stmt(db, 'DELETE FROM anchors WHERE memory_rowid = ?').run(row.rowid);
  stmt(db, 'DELETE FROM history WHERE memory_id = ?').run(row.id);
  stmt(db, 'UPDATE rejected_values SET memory_id = NULL WHERE memory_id = ?').run(row.id);
  stmt(db, 'DELETE FROM memories WHERE rowid = ?').run(row.rowid);
  forgetDuplicatesOf(store, [row.rowid]);
  appendHistory(store, row.id, 'purge', actor, reason, row.version + 1, null, null, { namespace: row.ns_path, key: row.key });
  return store.logChange('purge', row.id, row.ns_id, row.ns_path, row.key);
}

export function deleteVectors(store: Store, rowid: number): void {
  store.vectors.deleteRow(rowid);
  stmt(store.db, 'DELETE FROM duplicate_candidates WHERE memory_rowid = ?').run(rowid);
}

/**
 * After memory rows were removed. A possible-duplicate row naming a removed memory as the other joins no memory,
 * so reads drop it and nothing needs an index to find it (schema 5) — except where its rowid can name a new
 * memory: SQLite gives a new row the largest rowid left plus one. So when the largest went, the rows naming
 * anything above the new largest go too (a scan, only then). `all` (erase): every row naming these memories goes now.
 */
export function forgetDuplicatesOf(store: Store, rowids: number[], all = false): void {
  if (rowids.length === 0) return;
  const db = store.db;
  if (all) stmt(db, 'DELETE FROM duplicate_candidates WHERE other_rowid IN (SELECT value FROM json_each(?))').run(JSON.stringify(rowids));
  const top = (stmt(db, 'SELECT max(rowid) AS r FROM memories').get() as { r: number | null }).r ?? 0;
  if (rowids.some((r) => r > top)) stmt(db, 'DELETE FROM duplicate_candidates WHERE other_rowid > ?').run(top);
}

/** Expire memories past their TTL, and purge the memories of deleted namespaces, `batch` of each at a time. */
export function sweep(store: Store, batch: number): SweepResult {
  const db = store.db;
  const now = store.now();
  let expired = 0;
  let purged = 0;
  store.transaction(() => {
    const due = stmt(
      db,
      `SELECT m.id FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND m.expires_at IS NOT NULL AND m.expires_at <= ? AND n.deleted_at IS NULL LIMIT ?`,
    ).all(now, batch) as { id: string }[];
    for (const d of due) {
      softDelete(store, { id: d.id, reason: 'expired' }, 'expire');
      expired++;
    }
  });
  store.transaction(() => {
    const dead = stmt(db, DEAD_NAMESPACE_MEMORIES).all(batch) as (Pick<MemoryRow, 'rowid' | 'id' | 'ns_id' | 'key' | 'version'> & {
      ns_path: string;
    })[];
    for (const d of dead) {
      purgeRow(store, d, 'system:namespace-delete', 'namespace deleted');
      purged++;
    }
    if (purged > 0) ftsCompact(db);
  });
  return { expired, purged, position: store.position() };
}
