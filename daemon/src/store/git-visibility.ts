/**
 * Git-aware memory, the store's side (schema 8; docs/protocol.md#git-aware-memory): the git branch and commit each
 * memory version was written on (`memory_git`), the last commit seen on each git branch (`git_tips`), branches marked
 * merged (`git_merged`), and the SQL that turns "these (branch, commit) pairs are hidden from this reader" into the
 * rowids every retrieval arm leaves out before ranking. Which pairs are hidden is git's answer (daemon/src/git/).
 */
import type { GitWrite, Memory, Scope } from '../protocol/types';
import { stmt, writeTx, type DB } from './db';
import { and } from './rows';
import { scopePredicate, type SqlFragment } from './scope';

/** A (branch, commit) pair as recorded, for the current versions of the memories in a scope. */
export interface RecordedPair {
  branch: string;
  commit: string;
}

/** Record where a version was written (inside the write's transaction). */
export function recordGit(db: DB, memoryId: string, version: number, git: GitWrite, now: number): void {
  stmt(db, 'INSERT OR REPLACE INTO memory_git(memory_id, version, branch, commit_id) VALUES (?, ?, ?, ?)').run(
    memoryId,
    version,
    git.branch,
    git.commit,
  );
  noteTipInTx(db, git.branch, git.commit, now);
}

function noteTipInTx(db: DB, branch: string, tip: string, now: number): void {
  stmt(
    db,
    'INSERT INTO git_tips(branch, tip, seen_at) VALUES (?, ?, ?) ON CONFLICT(branch) DO UPDATE SET tip = excluded.tip, seen_at = excluded.seen_at WHERE tip != excluded.tip',
  ).run(branch, tip, now);
}

/** Note the commit a reader has checked out on a branch (best effort: a busy or read-only store skips it). */
export function noteTip(db: DB, branch: string, tip: string, now: number): void {
  if (db.readonly) return;
  const known = stmt(db, 'SELECT tip FROM git_tips WHERE branch = ?').get(branch) as { tip: string } | undefined;
  if (known?.tip === tip) return;
  try {
    writeTx(db, () => noteTipInTx(db, branch, tip, now));
  } catch {
    /* bookkeeping only: a busy store must not fail a read */
  }
}

/** The last commit seen checked out on a branch, or null. */
export function lastTip(db: DB, branch: string): string | null {
  return (stmt(db, 'SELECT tip FROM git_tips WHERE branch = ?').get(branch) as { tip: string } | undefined)?.tip ?? null;
}

/** Mark a git branch merged (its memories become visible everywhere) or take the mark back. */
export function markMerged(db: DB, branch: string, merged: boolean, actor: string, now: number): boolean {
  return writeTx(db, () => {
    const had = !!stmt(db, 'SELECT 1 FROM git_merged WHERE branch = ?').get(branch);
    if (merged) stmt(db, 'INSERT OR IGNORE INTO git_merged(branch, marked_at, marked_by) VALUES (?, ?, ?)').run(branch, now, actor);
    else stmt(db, 'DELETE FROM git_merged WHERE branch = ?').run(branch);
    return had;
  });
}

export function mergedBranches(db: DB): Set<string> {
  return new Set((stmt(db, 'SELECT branch FROM git_merged').all() as { branch: string }[]).map((r) => r.branch));
}

const FROM = 'memories m JOIN namespaces n ON n.id = m.ns_id JOIN memory_git g ON g.memory_id = m.id AND g.version = m.version';

/** The namespace subtree a reader's git checkout applies to (its project namespace). */
function under(root: string): SqlFragment {
  return scopePredicate({ root, includeUser: false })!;
}

/**
 * The distinct (branch, commit) pairs of the current versions of the memories in a scope, under `root` (deleted ones
 * too: a caller may include them). One pass over the scope's memories that have a git record.
 */
export function recordedPairs(db: DB, scope: Scope | undefined, root: string): RecordedPair[] {
  const where = and({ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(scope), under(root));
  return stmt(db, `SELECT DISTINCT g.branch AS branch, g.commit_id AS "commit" FROM ${FROM} WHERE ${where.sql}`).all(
    ...where.params,
  ) as RecordedPair[];
}

/** Rowids of the memories in a scope, under `root`, whose current version was written on one of the hidden pairs. */
export function hiddenRowids(db: DB, scope: Scope | undefined, root: string, hidden: RecordedPair[]): Set<number> {
  if (hidden.length === 0) return new Set();
  const where = and({ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(scope), under(root), {
    sql: `(g.branch, g.commit_id) IN (SELECT value ->> '$[0]', value ->> '$[1]' FROM json_each(?))`,
    params: [JSON.stringify(hidden.map((p) => [p.branch, p.commit]))],
  });
  const rows = stmt(db, `SELECT m.rowid AS rowid FROM ${FROM} WHERE ${where.sql}`).all(...where.params) as { rowid: number }[];
  return new Set(rows.map((r) => r.rowid));
}

/** The (branch, commit) of one memory's current version under `root`, by id or namespace and key; null without one. */
export function pairOf(db: DB, target: { id: string } | { namespace: string; key: string }, root: string): RecordedPair | null {
  const u = under(root);
  const sql = `SELECT g.branch AS branch, g.commit_id AS "commit" FROM ${FROM} WHERE ${u.sql} AND `;
  const r = (
    'id' in target
      ? stmt(db, sql + 'm.id = ?').get(...u.params, target.id)
      : stmt(db, sql + 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?').get(...u.params, target.namespace, target.key)
  ) as RecordedPair | undefined;
  return r ?? null;
}

/** Memories with the git branch and commit of their version (one lookup for all of them). */
export function withGit<M extends Memory>(db: DB, memories: M[]): M[] {
  if (memories.length === 0) return memories;
  const rows = stmt(
    db,
    `SELECT g.memory_id AS id, g.version AS version, g.branch AS branch, g.commit_id AS "commit" FROM memory_git g
      JOIN json_each(?) j ON g.memory_id = j.value ->> '$[0]' AND g.version = j.value ->> '$[1]'`,
  ).all(JSON.stringify(memories.map((m) => [m.id, m.version]))) as { id: string; version: number; branch: string; commit: string }[];
  if (rows.length === 0) return memories;
  const by = new Map(rows.map((r) => [`${r.id}\0${r.version}`, { branch: r.branch, commit: r.commit }]));
  return memories.map((m) => {
    const git = by.get(`${m.id}\0${m.version}`);
    return git ? { ...m, git } : m;
  });
}
