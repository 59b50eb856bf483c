/**
 * The history of memory branch writes (docs/branches.md): each upsert, delete and restore on a branch appends a row
 * to `branch_history` (schema 11) with the branch, actor, reason and the states before and after, in the write's
 * transaction. It is kept apart from the base's `history`: a branch row shares its base memory's id and both sides
 * count versions on from the fork, so mixing them would interleave two lines of versions in `memory/history`, in the
 * history cap and in retention's `maxVersions`. `memory/history {branch}` reads it; a merge still writes the base's
 * history as every write does. It outlives the branch: a merged or discarded branch's history stays readable by its
 * name; erase removes it with the memory (ids, keys, root) and retention's `maxAgeDays` trims it under a rule's root.
 */
import { CairnError } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import type { HistoryEntry, HistoryParams, HistoryResult, Memory } from '../protocol/types';
import { stmt, type DB } from './db';
import { pgHistoryEntry, type PgHistoryRow } from './rows';
import { pathInScope, scopePredicate } from './scope';

/** A branch_history row: a history row (no detail) with the branch and the memory's namespace and key. */
type BranchHistoryRow = Omit<PgHistoryRow, 'detail'> & { branch_id: string; ns_path: string; key: string };

/** Append one branch write's history row (inside the write's transaction). */
export function appendBranchHistory(
  db: DB,
  e: {
    branchId: string;
    op: 'create' | 'update' | 'delete' | 'restore';
    actor: string;
    reason: string | null | undefined;
    at: number;
    previous: Memory | null;
    state: Memory;
  },
): void {
  stmt(
    db,
    `INSERT INTO branch_history(branch_id, memory_id, ns_path, key, op, actor, reason, at, version, previous, state)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    e.branchId,
    e.state.id,
    e.state.namespace,
    e.state.key,
    e.op,
    e.actor,
    e.reason ?? null,
    e.at,
    e.state.version,
    e.previous ? JSON.stringify(e.previous) : null,
    JSON.stringify(e.state),
  );
}

/**
 * memory/history with `branch`: the branch's own writes of the memory (by id, or namespace and key), newest first. The
 * branch is the open one of that name, else the latest closed one (its history outlives a merge or discard).
 */
export function readBranchHistory(db: DB, p: HistoryParams & { branch: string }): HistoryResult {
  const b = stmt(db, `SELECT id, name FROM branches WHERE name = ? ORDER BY status = 'open' DESC, created_at DESC, id DESC LIMIT 1`).get(
    p.branch,
  ) as { id: string; name: string } | undefined;
  if (!b) throw new CairnError('NotFound', `no branch ${p.branch}`, { field: 'branch' });
  if (p.scope) scopePredicate(p.scope); // a bad scope is InvalidNamespace before anything is read
  let where: string;
  let params: unknown[];
  let what: string;
  if (p.id !== undefined) {
    if (p.namespace !== undefined || p.key !== undefined)
      throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
    [where, params, what] = ['memory_id = ?', [p.id], p.id];
  } else {
    if (p.namespace === undefined || p.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: p.namespace === undefined ? 'id' : 'key' });
    const problem = namespaceProblem(p.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    [where, params, what] = ['ns_path = ? AND key = ?', [p.namespace, p.key], `${p.namespace}/${p.key}`];
  }
  const rows = (
    stmt(db, `SELECT * FROM branch_history WHERE branch_id = ? AND ${where} ORDER BY seq DESC`).all(b.id, ...params) as BranchHistoryRow[]
  ).filter((r) => !p.scope || pathInScope(r.ns_path, p.scope));
  if (rows.length === 0)
    throw new CairnError('NotFound', `no history of ${what} on branch ${b.name}${p.scope ? ' in scope' : ''}`, {
      field: p.id !== undefined ? 'id' : 'key',
    });
  return { entries: rows.slice(0, p.limit ?? 100).map((r) => entry(r, b.name)), capped: false };
}

function entry(r: BranchHistoryRow, branch: string): HistoryEntry {
  return { ...pgHistoryEntry({ ...r, detail: null }), branch };
}

/** Whether any branch history names these ids, keys, or (with a root) a namespace under it (erase's targets). */
export function hasBranchHistory(db: DB, ids: string[], keys: { namespace: string; key: string }[], root?: string): boolean {
  const w = targetsWhere(ids, keys, root);
  return !!stmt(db, `SELECT 1 FROM branch_history WHERE ${w.sql} LIMIT 1`).get(...w.params);
}

/** The namespaces of the branch history of these ids, keys, or a root (erase's scope check). */
export function branchHistoryPaths(db: DB, ids: string[], keys: { namespace: string; key: string }[], root?: string): string[] {
  const w = targetsWhere(ids, keys, root);
  return (stmt(db, `SELECT DISTINCT ns_path FROM branch_history WHERE ${w.sql}`).all(...w.params) as { ns_path: string }[]).map(
    (r) => r.ns_path,
  );
}

/** Remove the branch history of these ids, keys, or everything under a root (in the erase's transaction). */
export function eraseBranchHistory(db: DB, ids: string[], keys: { namespace: string; key: string }[], root?: string): number {
  const w = targetsWhere(ids, keys, root);
  return stmt(db, `DELETE FROM branch_history WHERE ${w.sql}`).run(...w.params).changes;
}

function targetsWhere(ids: string[], keys: { namespace: string; key: string }[], root?: string): { sql: string; params: unknown[] } {
  const parts = [
    'memory_id IN (SELECT value FROM json_each(?))',
    `(ns_path, key) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))`,
  ];
  const params: unknown[] = [JSON.stringify(ids), JSON.stringify(keys.map((k) => [k.namespace, k.key]))];
  if (root !== undefined) {
    parts.push('ns_path = ? OR substr(ns_path, 1, ?) = ?');
    params.push(root, root.length + 1, root + '.');
  }
  return { sql: parts.join(' OR '), params };
}

/**
 * Retention's `maxAgeDays` over branch history under a root: rows older than `cutoff` go, except the newest of each
 * memory a branch still holds with its text (as the base keeps a memory's newest entry; a purged branch row's text
 * goes with all its entries). Returns how many went.
 */
export function trimBranchHistory(db: DB, root: string, cutoff: number): number {
  return stmt(
    db,
    `DELETE FROM branch_history AS h WHERE (h.ns_path = ? OR substr(h.ns_path, 1, ?) = ?) AND h.at < ?
       AND NOT (h.seq = (SELECT max(seq) FROM branch_history WHERE branch_id = h.branch_id AND memory_id = h.memory_id)
                AND EXISTS (SELECT 1 FROM branch_memories b WHERE b.branch_id = h.branch_id AND b.id = h.memory_id AND b.value != ''))`,
  ).run(root, root.length + 1, root + '.', cutoff).changes;
}
