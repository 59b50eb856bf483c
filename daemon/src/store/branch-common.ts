/**
 * What the memory branch modules share (store/branches.ts and its parts, export and import): a branch's row, the SQL names of branch and
 * base rows, and the reads of one key on either side.
 */
import { stmt, type DB } from './db';
import { MEMORY_COLUMNS, type MemoryRow } from './rows';
import type { SqlFragment } from './scope';

export interface BranchRow {
  id: string;
  name: string;
  root: string;
  parent: string | null;
  fork_position: number;
  created_at: number;
  created_by: string;
  status: 'open' | 'merged' | 'discarded';
  closed_at: number | null;
  closed_by: string | null;
  task_id: string | null;
  /** Bumped by every write of the branch's rows (the cache of shadowed base rows is keyed by it). */
  generation: number;
  /**
   * The git branch it follows, that branch's repository and tip when bound, and the conflicts found when it was
   * merged (store/branch-git.ts).
   */
  git_branch: string | null;
  git_repo: string | null;
  git_commit: string | null;
  git_conflicts: number | null;
}

export type OwnRow = MemoryRow & { base_version: number | null };

export const OWN_FROM = 'branch_memories m JOIN branch_ns n ON n.rid = m.rowid';
export const BASE_FROM = 'memories m JOIN namespaces n ON n.id = m.ns_id';
/** Content columns of branch_memories in contentColumns() order. */
export const CONTENT = `value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status`;

/** The base rows a branch shadows, as SQL over aliases m, n of the base (the overlay's exclusion, inside every query). */
export function notShadowed(branchId: string): SqlFragment {
  return {
    sql: 'NOT EXISTS (SELECT 1 FROM branch_memories b WHERE b.branch_id = ? AND b.ns_path = n.path AND b.key = m.key)',
    params: [branchId],
  };
}

/** The branch's own row of (namespace, key), deleted or not. */
export function ownRow(db: DB, branchId: string, namespace: string, key: string): OwnRow | undefined {
  return stmt(db, `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE m.branch_id = ? AND m.ns_path = ? AND m.key = ?`).get(
    branchId,
    namespace,
    key,
  ) as OwnRow | undefined;
}

/** The base memory of (namespace, key) in a live namespace, deleted or not. */
export function baseRow(db: DB, namespace: string, key: string): MemoryRow | undefined {
  return stmt(db, `SELECT ${MEMORY_COLUMNS} FROM ${BASE_FROM} WHERE n.path = ? AND n.deleted_at IS NULL AND m.key = ?`).get(
    namespace,
    key,
  ) as MemoryRow | undefined;
}
