/**
 * Full text of memory branch rows (docs/branches.md). Each branch row is indexed in the memories' own full-text index
 * (`memories_fts`, schema 12), written like a memory's row (full-text.ts putFullText) under its negated rowid and a
 * namespace token of its own, one per (branch, namespace path). A search on a branch is then one full-text query over
 * the base's rows and the branch's (search-fts.ts, `BranchText`): the scope's base namespace tokens and the branch's in
 * the same MATCH, one BM25 ranking with the same statistics, each kind of row checked against scope, visibility and
 * filter before the limit. A search of the base never admits a branch row: its MATCH names base namespace tokens, or
 * it asks for rowids from 0 up, and it checks every candidate against `memories`.
 */
import { createHash } from 'node:crypto';
import { stmt, type DB } from './db';
import { putFullText } from './full-text';

/** The namespace token of a branch's rows in one namespace (`ns` + hex is a base namespace's: never equal). */
export function branchNamespaceToken(branchId: string, path: string): string {
  return 'nb' + createHash('sha256').update(`${branchId}\u0000${path}`).digest('hex').slice(0, 24);
}

interface TextRow {
  rowid: number;
  branch_id: string;
  ns_path: string;
  key: string;
  value: string;
  summary: string | null;
  tags: string;
}

const TEXT_COLUMNS = 'rowid, branch_id, ns_path, key, value, summary, tags';

function put(db: DB, r: TextRow, fresh = false): void {
  putFullText(
    db,
    -r.rowid,
    {
      key: r.key,
      value: r.value,
      summary: r.summary,
      tags: JSON.parse(r.tags) as string[],
      ns: branchNamespaceToken(r.branch_id, r.ns_path),
    },
    fresh,
  );
}

/** (Re)index one branch row's text (a deleted row too: its text stays searchable with `include.deleted`). */
export function indexBranchRow(db: DB, rowid: number): void {
  const r = stmt(db, `SELECT ${TEXT_COLUMNS} FROM branch_memories WHERE rowid = ?`).get(rowid) as TextRow | undefined;
  if (r) put(db, r);
  else unindexBranchRows(db, [rowid]);
}

/** Index every branch row (the full-text index rebuilt from the memories: full-text.ts rebuild). Returns how many. */
export function indexAllBranchRows(db: DB): number {
  const page = stmt(db, `SELECT ${TEXT_COLUMNS} FROM branch_memories WHERE rowid > ? ORDER BY rowid LIMIT 1000`);
  let n = 0;
  for (let after = 0; ;) {
    const rows = page.all(after) as TextRow[];
    if (rows.length === 0) return n;
    for (const r of rows) put(db, r, true);
    n += rows.length;
    after = rows[rows.length - 1].rowid;
  }
}

/** Remove branch rows' text from the index (before the rows go). */
export function unindexBranchRows(db: DB, rowids: number[]): void {
  stmt(db, 'DELETE FROM memories_fts WHERE rowid IN (SELECT -value FROM json_each(?))').run(JSON.stringify(rowids));
}

/** Remove all of a branch's rows' text from the index (discard, merge). */
export function unindexBranch(db: DB, branchId: string): void {
  stmt(db, 'DELETE FROM memories_fts WHERE rowid IN (SELECT -rowid FROM branch_memories WHERE branch_id = ?)').run(branchId);
}

/**
 * Remove branch rows' text with FTS5's secure-delete, so their terms leave the index pages (erase; the erase then
 * merges the index, full-text.ts ftsCompact).
 */
export function eraseBranchText(db: DB, rowids: number[]): void {
  stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1)`).run();
  try {
    unindexBranchRows(db, rowids);
  } finally {
    stmt(db, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 0)`).run();
  }
}

/** Each branch's namespace paths and their tokens, per branch generation (bumped by every write of its rows). */
const pathCaches = new WeakMap<DB, Map<string, { generation: number; tokens: Map<string, string> }>>();

/** The namespace paths a branch has rows in, with their tokens (read once per branch generation). */
export function branchPathTokens(db: DB, branchId: string, generation: number): ReadonlyMap<string, string> {
  let byBranch = pathCaches.get(db);
  if (!byBranch) pathCaches.set(db, (byBranch = new Map()));
  const hit = byBranch.get(branchId);
  if (hit && hit.generation === generation) return hit.tokens;
  const paths = stmt(db, 'SELECT DISTINCT ns_path FROM branch_memories WHERE branch_id = ?')
    .raw()
    .all(branchId)
    .map((r) => (r as [string])[0]);
  const tokens = new Map(paths.map((p) => [p, branchNamespaceToken(branchId, p)]));
  byBranch.set(branchId, { generation, tokens });
  return tokens;
}
