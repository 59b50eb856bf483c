/**
 * Memory branches: copy-on-write overlays of a namespace subtree (docs/branches.md).
 *
 * Creating a branch writes one `branches` row (nothing is copied). A write on a branch is a whole memory row in
 * `branch_memories`, keyed by (branch, namespace path, key), with the base memory's version when the branch first
 * wrote the key (`base_version`). A read on a branch sees its own rows over the base: its row of a key shadows the
 * base memory of that key, a deleted row hides it, and every key the branch has not written shows the base as it is
 * now. Branch rows are read through the `branch_ns` view, so the store's scope, filter and visibility SQL (aliases
 * `m`, `n`) applies to them unchanged, inside each query before its limit. Merge writes the branch's changes to the
 * base through the Store's own write path (history, change log, deletion sticks, forgotten values) in one
 * transaction, and refuses while a key changed on both sides has no resolution.
 *
 * This class holds the branches themselves (create, list, discard); reads, writes, diff and merge, and what a search
 * on a branch needs live beside it (branch-reads.ts, branch-writes.ts, branch-merge.ts, branch-overlay.ts, sharing
 * branch-common.ts).
 */
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem } from '../protocol/namespace';
import type {
  Branch,
  BranchCreateParams,
  BranchDiffResult,
  BranchDiscardResult,
  BranchMergeParams,
  BranchMergeResult,
  DeleteParams,
  GetParams,
  ListParams,
  ListResult,
  Memory,
  UpsertParams,
  UpsertResult,
  WriteResult,
} from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { bindGit, followerOf } from './branch-git';
import { CONTENT, type BranchRow } from './branch-common';
import { indexBranchRow, unindexBranch } from './branch-text';
import { deleteOnBranch, upsertOnBranch } from './branch-writes';
import { diffBranch, mergeBranch } from './branch-merge';
import { searchOverlay, type SearchOverlay } from './branch-overlay';
import { getOnBranch, listOnBranch } from './branch-reads';
import { stmt, type DB } from './db';
import { iso, isoReq } from './rows';
import type { ArmHit, ArmQuery } from './search-fts';
import type { Store } from './store';

export type { SearchOverlay } from './branch-overlay';

export class Branches {
  /** @internal The base rowids each branch shadows, valid while its generation and the change-log position are the same. */
  readonly shadowCache = new Map<string, { generation: number; position: number; rowids: Set<number> }>();

  /** Told after each write of branch rows (upsert, delete, a branch started from another): their vectors follow. */
  onWrite: () => void = () => {};

  constructor(readonly store: Store) {}

  /** @internal After a write of branch rows committed: tell onWrite. */
  wrote<T>(r: T): T {
    this.onWrite();
    return r;
  }

  /** @internal A write of a branch's rows: bump its generation (in the write's transaction). */
  touched(branchId: string): void {
    stmt(this.db, 'UPDATE branches SET generation = generation + 1 WHERE id = ?').run(branchId);
  }

  /** @internal The store's connection. */
  get db(): DB {
    return this.store.db;
  }

  // ---------------------------------------------------------------- branches
  create(p: BranchCreateParams, taskId: string | null = null): Branch {
    const problem = namespaceProblem(p.root);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'root' });
    return this.wrote(
      this.store.transaction(() => {
        if (this.find(p.name)) throw new CairnError('InvalidState', `a branch named ${p.name} is already open`, { field: 'name' });
        const parent = p.from !== undefined ? this.open(p.from, 'from') : null;
        if (parent && !isUnder(p.root, parent.root))
          throw new CairnError('InvalidParams', `root ${p.root} is outside branch ${parent.name}'s root ${parent.root}`, { field: 'root' });
        if (p.gitBranch !== undefined) {
          const follower = followerOf(this.db, p.gitBranch, p.gitRepo ?? null);
          if (follower)
            throw new CairnError('InvalidState', `git branch ${p.gitBranch} is already followed by branch ${follower}`, {
              field: 'gitBranch',
            });
        } else if (p.gitRepo !== undefined || p.gitCommit !== undefined)
          throw new CairnError('InvalidParams', 'gitRepo and gitCommit need gitBranch', {
            field: p.gitRepo !== undefined ? 'gitRepo' : 'gitCommit',
          });
        const now = this.store.now();
        const id = uuidv7(now);
        stmt(
          this.db,
          `INSERT INTO branches(id, name, root, parent, fork_position, created_at, created_by, task_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(id, p.name, p.root, parent?.id ?? null, this.store.position(), now, p.actor ?? 'user', taskId);
        if (p.gitBranch !== undefined) bindGit(this.db, id, p.gitBranch, p.gitRepo ?? null, p.gitCommit ?? null);
        if (parent) {
          // A branch of a branch starts with its parent's writes under the root (copied: O(parent's writes), not of the subtree).
          const rows = stmt(
            this.db,
            `SELECT rowid FROM branch_memories WHERE branch_id = ? AND (ns_path = ? OR substr(ns_path, 1, ?) = ?)`,
          ).all(parent.id, p.root, p.root.length + 1, p.root + '.') as { rowid: number }[];
          for (const r of rows) {
            const rowid = Number(
              stmt(
                this.db,
                `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at,
                 last_accessed_at, access_count, version, superseded_by, deleted_at, deleted_by, delete_reason)
               SELECT ?, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at,
                 last_accessed_at, access_count, version, superseded_by, deleted_at, deleted_by, delete_reason
               FROM branch_memories WHERE rowid = ?`,
              ).run(id, r.rowid).lastInsertRowid,
            );
            this.indexRow(rowid);
          }
        }
        return this.toBranch(this.row(id)!);
      }),
    );
  }

  list(all = false): Branch[] {
    const rows = stmt(
      this.db,
      `SELECT * FROM branches ${all ? '' : "WHERE status = 'open'"} ORDER BY created_at DESC, id DESC`,
    ).all() as BranchRow[];
    return rows.map((r) => this.toBranch(r));
  }

  /** The open branch of this name (NotFound otherwise). */
  open(name: string, field = 'branch'): BranchRow {
    const b = this.find(name);
    if (!b) throw new CairnError('NotFound', `no open branch ${name}`, { field });
    return b;
  }

  private find(name: string): BranchRow | undefined {
    return stmt(this.db, `SELECT * FROM branches WHERE name = ? AND status = 'open'`).get(name) as BranchRow | undefined;
  }

  private row(id: string): BranchRow | undefined {
    return stmt(this.db, 'SELECT * FROM branches WHERE id = ?').get(id) as BranchRow | undefined;
  }

  /** The open branch of a task (tasks/create with branch: true), if any. */
  ofTask(taskId: string): Branch | null {
    const r = stmt(this.db, `SELECT * FROM branches WHERE task_id = ? AND status = 'open'`).get(taskId) as BranchRow | undefined;
    return r ? this.toBranch(r) : null;
  }

  /** @internal A branch row as the protocol's Branch (with its count of writes). */
  toBranch(r: BranchRow): Branch {
    const writes = (stmt(this.db, 'SELECT count(*) AS c FROM branch_memories WHERE branch_id = ?').get(r.id) as { c: number }).c;
    const parent = r.parent ? this.row(r.parent) : undefined;
    return {
      id: r.id,
      name: r.name,
      root: r.root,
      from: parent?.name ?? null,
      forkPosition: r.fork_position,
      createdAt: isoReq(r.created_at),
      createdBy: r.created_by,
      status: r.status,
      closedAt: iso(r.closed_at),
      closedBy: r.closed_by,
      taskId: r.task_id,
      writes,
      ...(r.git_branch !== null ? { gitBranch: r.git_branch } : {}),
      ...(r.git_conflicts !== null ? { gitConflicts: r.git_conflicts } : {}),
    };
  }

  discard(name: string, actor = 'user'): BranchDiscardResult {
    return this.store.transaction(() => {
      const b = this.open(name, 'name');
      const dropped = this.drop(b.id);
      this.close(b.id, 'discarded', actor);
      return { name, dropped };
    });
  }

  /** @internal Remove a branch's rows and their full-text rows (discard and merge). */
  drop(branchId: string): number {
    this.touched(branchId);
    unindexBranch(this.db, branchId);
    return stmt(this.db, 'DELETE FROM branch_memories WHERE branch_id = ?').run(branchId).changes;
  }

  /** @internal Mark a branch merged or discarded. */
  close(branchId: string, status: 'merged' | 'discarded', actor: string): void {
    stmt(this.db, 'UPDATE branches SET status = ?, closed_at = ?, closed_by = ? WHERE id = ?').run(
      status,
      this.store.now(),
      actor,
      branchId,
    );
  }

  /** @internal (Re)index one branch row's full text (in the memories' index: branch-text.ts). */
  indexRow(rowid: number): void {
    indexBranchRow(this.db, rowid);
    this.store.fullText.written = true; // a new full-text segment at commit: the background merge follows
  }

  // ---------------------------------------------------------------- reads (branch-reads.ts)
  /** memory/get on a branch: the branch's own row of the key or id, else the base's. */
  get(p: GetParams & { branch: string }): Memory {
    return getOnBranch(this, p);
  }

  /** memory/list on a branch: the base's rows the branch has not written and the branch's own, newest update first. */
  listMemories(p: ListParams & { branch: string }): ListResult {
    return listOnBranch(this, p);
  }

  /** What a search on a branch needs (branch-overlay.ts). */
  overlay(
    name: string,
    vectors?: { search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]> },
  ): SearchOverlay {
    return searchOverlay(this, name, vectors);
  }

  // ---------------------------------------------------------------- writes (branch-writes.ts)
  /** memory/upsert on a branch: the Store's write rules, the row written on the branch. */
  upsert(p: UpsertParams & { branch: string }): UpsertResult {
    return upsertOnBranch(this, p);
  }

  /** memory/delete on a branch: the branch's row of the memory is marked deleted (a base memory gets a deleted copy). */
  delete(p: DeleteParams & { branch: string }): WriteResult {
    return deleteOnBranch(this, p);
  }

  // ---------------------------------------------------------------- diff and merge (branch-merge.ts)
  diff(name: string): BranchDiffResult {
    return diffBranch(this, name);
  }

  merge(p: BranchMergeParams): BranchMergeResult {
    return mergeBranch(this, p);
  }
}
