/**
 * Memory branches that follow a git branch (schema 10; docs/branches.md#following-a-git-branch): the binding on the
 * `branches` row (git branch, repository, the commit it was bound at) and the conflicts count recorded when the git
 * branch was found merged but the memory merge could not be applied. Which git branches are merged is git's answer
 * (daemon/src/git/follow.ts).
 */
import { stmt, type DB } from './db';

export interface GitBinding {
  /** The memory branch's name. */
  name: string;
  gitBranch: string;
  gitRepo: string | null;
  gitCommit: string | null;
  gitConflicts: number | null;
}

/** Bind a branch (inside its creation's transaction). */
export function bindGit(db: DB, branchId: string, gitBranch: string, gitRepo: string | null, gitCommit: string | null): void {
  stmt(db, 'UPDATE branches SET git_branch = ?, git_repo = ?, git_commit = ? WHERE id = ?').run(gitBranch, gitRepo, gitCommit, branchId);
}

/** The open branch already following this git branch in this repository (or in any), if one is. */
export function followerOf(db: DB, gitBranch: string, gitRepo: string | null): string | null {
  const r = stmt(
    db,
    `SELECT name FROM branches WHERE status = 'open' AND git_branch = ? AND (git_repo IS NULL OR ? IS NULL OR git_repo = ?)`,
  ).get(gitBranch, gitRepo, gitRepo) as { name: string } | undefined;
  return r?.name ?? null;
}

/** Open branches following a git branch of this repository (or of any), oldest first. */
export function openBindings(db: DB, repo: string): GitBinding[] {
  return stmt(
    db,
    `SELECT name, git_branch AS gitBranch, git_repo AS gitRepo, git_commit AS gitCommit, git_conflicts AS gitConflicts
       FROM branches WHERE status = 'open' AND git_branch IS NOT NULL AND (git_repo IS NULL OR git_repo = ?)
      ORDER BY created_at, id`,
  ).all(repo) as GitBinding[];
}

/** Whether any open branch follows a git branch (the read path's cheap test before asking git). */
export function anyBinding(db: DB): boolean {
  return !!stmt(db, `SELECT 1 FROM branches WHERE status = 'open' AND git_branch IS NOT NULL LIMIT 1`).get();
}

/** Record that the followed git branch is merged but the memory merge has `conflicts` conflicts. */
export function recordGitConflicts(db: DB, name: string, conflicts: number): void {
  stmt(db, `UPDATE branches SET git_conflicts = ? WHERE name = ? AND status = 'open'`).run(conflicts, name);
}
