/**
 * Namespaces: checking a path, creating one on first write, listing, renaming a subtree and deleting one (the
 * sweep purges a deleted namespace's memories later).
 */
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem } from '../protocol/namespace';
import type { NamespaceInfo } from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { stmt, type DB } from './db';
import { isoReq, visibility } from './rows';
import { scopePredicate } from './scope';
import type { Store } from './store';

/** InvalidNamespace (naming `field`) unless `path` is a valid namespace path. */
export function checkNamespace(path: string, field = 'namespace'): void {
  const p = namespaceProblem(path);
  if (p) throw new CairnError('InvalidNamespace', p, { field });
}

function liveNamespace(db: DB, path: string): { id: string; path: string } | undefined {
  return stmt(db, 'SELECT id, path FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(path) as
    { id: string; path: string } | undefined;
}

/** The live namespace's id, created when there is none (inside the caller's write). */
export function ensureNamespace(store: Store, path: string): string {
  const existing = liveNamespace(store.db, path);
  if (existing) return existing.id;
  const id = uuidv7(store.now());
  stmt(store.db, 'INSERT INTO namespaces(id, path, created_at) VALUES (?, ?, ?)').run(id, path, store.now());
  return id;
}

export function listNamespaces(store: Store, root?: string): NamespaceInfo[] {
  if (root !== undefined) checkNamespace(root, 'root');
  const pred = root !== undefined ? scopePredicate({ root, includeUser: false }, 'n.path')! : { sql: '1', params: [] };
  const now = store.now();
  const vis = visibility(undefined, now);
  const rows = stmt(
    store.db,
    `SELECT n.id, n.path, n.created_at,
         (SELECT count(*) FROM memories m WHERE m.ns_id = n.id AND ${vis.sql}) AS cnt
       FROM namespaces n WHERE n.deleted_at IS NULL AND ${pred.sql} ORDER BY n.path`,
  ).all(...vis.params, ...pred.params) as { id: string; path: string; created_at: number; cnt: number }[];
  return rows.map((r) => ({ id: r.id, path: r.path, createdAt: isoReq(r.created_at), memoryCount: r.cnt }));
}

export function renameNamespace(store: Store, from: string, to: string, actor: string): { renamed: number; position: number } {
  checkNamespace(from, 'from');
  checkNamespace(to, 'to');
  if (from === to) throw new CairnError('InvalidState', 'from and to are the same namespace', { field: 'to' });
  if (isUnder(to, from)) throw new CairnError('InvalidState', `cannot move ${from} inside itself (${to})`, { field: 'to' });
  const db = store.db;
  return store.transaction(() => {
    const sub = scopePredicate({ root: from, includeUser: false }, 'path')!;
    const rows = stmt(db, `SELECT id, path FROM namespaces WHERE deleted_at IS NULL AND ${sub.sql}`).all(...sub.params) as {
      id: string;
      path: string;
    }[];
    if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${from}`, { field: 'from' });
    for (const r of rows) {
      const target = to + r.path.slice(from.length);
      const problem = namespaceProblem(target);
      if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'to' });
      const clash = liveNamespace(db, target);
      if (clash && !rows.some((x) => x.id === clash.id))
        throw new CairnError('InvalidState', `namespace ${target} already exists`, { field: 'to' });
    }
    // Two steps so intermediate states never collide on the unique live path index.
    const upd = stmt(db, 'UPDATE namespaces SET path = ? WHERE id = ?');
    for (const r of rows) upd.run(`\u0000${r.id}`, r.id);
    for (const r of rows) upd.run(to + r.path.slice(from.length), r.id);
    const position = store.logChange('namespace_rename', null, rows[0].id, to, null);
    void actor;
    return { renamed: rows.length, position };
  });
}

export function deleteNamespace(
  store: Store,
  path: string,
  actor: string,
  reason: string | undefined,
): { deleted: number; memories: number; position: number } {
  checkNamespace(path, 'path');
  const db = store.db;
  return store.transaction(() => {
    const sub = scopePredicate({ root: path, includeUser: false }, 'path')!;
    const rows = stmt(db, `SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${sub.sql}`).all(...sub.params) as {
      id: string;
    }[];
    if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${path}`, { field: 'path' });
    const now = store.now();
    const ids = rows.map((r) => r.id);
    const ph = ids.map(() => '?').join(',');
    const memories = (
      stmt(db, `SELECT count(*) AS c FROM memories WHERE ns_id IN (${ph}) AND deleted_at IS NULL`).get(...ids) as { c: number }
    ).c;
    stmt(db, `UPDATE namespaces SET deleted_at = ?, deleted_by = ?, delete_reason = ? WHERE id IN (${ph})`).run(
      now,
      actor,
      reason ?? null,
      ...ids,
    );
    const position = store.logChange('namespace_delete', null, ids[0], path, null);
    return { deleted: ids.length, memories, position };
  });
}
