/**
 * Memory branches in export and import (docs/branches.md): a `branch` record followed by its `branchMemory` rows and
 * its `branchHistory` entries, after the episodes. Every branch is exported, open or closed (a closed branch keeps only
 * its history); a scoped export holds the branches whose root lies inside the scope. Import writes a branch whose id is
 * not stored (an open one whose name an open branch here already has is skipped, with its rows), a row whose (branch,
 * namespace, key) is not stored, and a history entry not stored yet, so importing the same records again adds nothing;
 * stored ones are never changed. An imported branch forks at this store's change-log position (the exporting store's
 * has no meaning here); its rows keep the base versions they started from, so diff and merge judge them as before.
 */
import type * as T from '../protocol/types';
import { pathInScope } from './scope';
import { stmt, type DB } from './db';
import { IMPORTED_MEMORY_COLUMNS, IMPORTED_MEMORY_PLACEHOLDERS, importedMemoryValues } from './imported-memory';
import type { BranchRow } from './branch-common';
import { indexBranchRow } from './branch-text';
import { fromIso, iso, isoReq, MEMORY_COLUMNS, toMemory, type MemoryRow, type PgHistoryRow } from './rows';

type BranchRecord = Extract<T.ExportRecord, { type: 'branch' }>;
type RowRecord = Extract<T.ExportRecord, { type: 'branchMemory' }>;
type HistoryRecord = Extract<T.ExportRecord, { type: 'branchHistory' }>;

/** Where an export is in the branches phase: the branches still to write, and the current one's stage and place. */
export interface BranchCursor {
  ids: string[] | null;
  stage: 'branch' | 'rows' | 'history';
  after: number;
}

export const newBranchCursor = (): BranchCursor => ({ ids: null, stage: 'branch', after: 0 });

/**
 * Push up to `room` records of the branches phase; returns true when it is finished. A branch's rows and history may
 * span pages: the cursor keeps its place.
 */
export function branchRecords(
  db: DB,
  p: { scope?: T.Scope; includeHistory?: boolean },
  c: BranchCursor,
  room: number,
  push: (r: T.ExportRecord) => void,
  full: () => boolean,
): boolean {
  if (!c.ids) {
    const all = stmt(db, 'SELECT id, root, status FROM branches ORDER BY created_at, id').all() as {
      id: string;
      root: string;
      status: string;
    }[];
    // Without history a closed branch has nothing left to carry.
    c.ids = all
      .filter((b) => (!p.scope || pathInScope(b.root, p.scope)) && (b.status === 'open' || p.includeHistory !== false))
      .map((b) => b.id);
  }
  let left = room;
  while (left > 0 && !full()) {
    const id = c.ids[0];
    if (id === undefined) return true;
    if (c.stage === 'branch') {
      const b = stmt(db, 'SELECT * FROM branches WHERE id = ?').get(id) as BranchRow;
      push({
        type: 'branch',
        branch: {
          id: b.id,
          name: b.name,
          root: b.root,
          parent: b.parent,
          createdAt: isoReq(b.created_at),
          createdBy: b.created_by,
          status: b.status,
          closedAt: iso(b.closed_at),
          closedBy: b.closed_by,
          taskId: b.task_id,
          gitBranch: b.git_branch,
          gitRepo: b.git_repo,
          gitCommit: b.git_commit,
        },
      });
      left--;
      [c.stage, c.after] = ['rows', 0];
    } else if (c.stage === 'rows') {
      const want = left;
      const rows = stmt(
        db,
        `SELECT ${MEMORY_COLUMNS}, m.base_version, m.ns_id AS own_ns_id FROM branch_memories m JOIN branch_ns n ON n.rid = m.rowid
          WHERE m.branch_id = ? AND m.rowid > ? ORDER BY m.rowid LIMIT ?`,
      ).all(id, c.after, left) as (MemoryRow & { base_version: number | null; own_ns_id: string })[];
      for (const r of rows) {
        push({
          type: 'branchMemory',
          branchId: id,
          baseVersion: r.base_version,
          memory: toMemory(r),
          namespaceId: r.own_ns_id,
          deleteReason: r.delete_reason,
        });
        c.after = r.rowid;
      }
      left -= rows.length;
      if (rows.length < want) [c.stage, c.after] = [p.includeHistory === false ? 'branch' : 'history', 0];
      if (c.stage === 'branch') c.ids.shift();
    } else {
      const want = left;
      const rows = stmt(db, 'SELECT * FROM branch_history WHERE branch_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(
        id,
        c.after,
        left,
      ) as Omit<PgHistoryRow, 'detail'>[];
      for (const h of rows) {
        push({
          type: 'branchHistory',
          branchId: id,
          entry: {
            seq: h.seq,
            memoryId: h.memory_id,
            op: h.op,
            actor: h.actor,
            reason: h.reason,
            at: isoReq(h.at),
            version: h.version,
            previous: h.previous ? (JSON.parse(h.previous) as T.Memory) : null,
            state: h.state ? (JSON.parse(h.state) as T.Memory) : null,
            detail: null,
          },
        });
        c.after = h.seq;
      }
      left -= rows.length;
      if (rows.length < want) {
        [c.stage, c.after] = ['branch', 0];
        c.ids.shift();
      }
    }
  }
  return c.ids.length === 0;
}

export interface BranchCounts {
  branches: number;
  branchRows: number;
  history: number;
  skipped: number;
}

/** Import a branch record (inside the import's transaction). `position`: this store's change-log position. */
export function importBranch(db: DB, rec: BranchRecord, position: number, counts: BranchCounts): void {
  const b = rec.branch;
  if (stmt(db, 'SELECT 1 FROM branches WHERE id = ?').get(b.id)) return;
  if (b.status === 'open' && stmt(db, `SELECT 1 FROM branches WHERE name = ? AND status = 'open'`).get(b.name)) {
    counts.skipped++; // its rows follow it and are skipped too (their branch is not here)
    return;
  }
  stmt(
    db,
    `INSERT INTO branches(id, name, root, parent, fork_position, created_at, created_by, status, closed_at, closed_by, task_id,
       git_branch, git_repo, git_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    b.id,
    b.name,
    b.root,
    b.parent,
    position,
    fromIso(b.createdAt),
    b.createdBy,
    b.status,
    fromIso(b.closedAt),
    b.closedBy,
    b.taskId,
    b.gitBranch,
    b.gitRepo,
    b.gitCommit,
  );
  counts.branches++;
}

/** Import a branch row (its branch must be stored and open, and the row inside its root; else skipped). */
export function importBranchRow(db: DB, rec: RowRecord, counts: BranchCounts, inScope: (path: string) => boolean): void {
  const m = rec.memory;
  const b = stmt(db, 'SELECT root, status FROM branches WHERE id = ?').get(rec.branchId) as { root: string; status: string } | undefined;
  if (!b || b.status !== 'open' || !pathInScope(m.namespace, { root: b.root, includeUser: false }) || !inScope(m.namespace)) {
    counts.skipped++;
    return;
  }
  if (stmt(db, 'SELECT 1 FROM branch_memories WHERE branch_id = ? AND ns_path = ? AND key = ?').get(rec.branchId, m.namespace, m.key))
    return;
  const ns = stmt(db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(m.namespace) as { id: string } | undefined;
  const rowid = Number(
    stmt(
      db,
      `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, ${IMPORTED_MEMORY_COLUMNS})
       VALUES (?, ?, ?, ?, ?, ${IMPORTED_MEMORY_PLACEHOLDERS})`,
    ).run(rec.branchId, rec.baseVersion, m.namespace, m.id, ns?.id ?? rec.namespaceId, ...importedMemoryValues(m, rec.deleteReason))
      .lastInsertRowid,
  );
  indexBranchRow(db, rowid);
  stmt(db, 'UPDATE branches SET generation = generation + 1 WHERE id = ?').run(rec.branchId);
  counts.branchRows++;
}

/** Import a branch history entry (its branch must be stored; the same entry again is kept once). */
export function importBranchHistory(db: DB, rec: HistoryRecord, counts: BranchCounts, inScope: (path: string) => boolean): void {
  const h = rec.entry;
  const where = h.state ?? h.previous;
  if (!where || !stmt(db, 'SELECT 1 FROM branches WHERE id = ?').get(rec.branchId) || !inScope(where.namespace)) {
    counts.skipped++;
    return;
  }
  if (
    stmt(db, 'SELECT 1 FROM branch_history WHERE branch_id = ? AND memory_id = ? AND op = ? AND version = ? AND at = ?').get(
      rec.branchId,
      h.memoryId,
      h.op,
      h.version,
      fromIso(h.at),
    )
  )
    return;
  stmt(
    db,
    `INSERT INTO branch_history(branch_id, memory_id, ns_path, key, op, actor, reason, at, version, previous, state)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    rec.branchId,
    h.memoryId,
    where.namespace,
    where.key,
    h.op,
    h.actor,
    h.reason,
    fromIso(h.at),
    h.version,
    h.previous ? JSON.stringify(h.previous) : null,
    h.state ? JSON.stringify(h.state) : null,
  );
  counts.history++;
}
