/**
 * Vectors of memory branch rows (docs/branches.md): one unit vector (float32) per branch row in `branch_vectors`, for
 * the model of the memory index, written by the branch embedder (index/branch-vectors.ts) through the same worker.
 * A branch holds few rows (thousands), so its vector arm scores every admitted row exactly instead of keeping an
 * in-memory index: the admitted set is the branch's rows under the scope, visibility and filter (the same SQL as the
 * full-text arm, over `branch_ns`), decided before anything is ranked or cut. Hits carry the negated branch rowid,
 * as the branch's full-text hits do, so search fuses them with the base arm's candidates (retrieval/search.ts).
 *
 * A row whose key, value or tags change loses its vector in the same statement (trigger `branch_vectors_stale`), and
 * a removed row takes it along (cascade): a stale vector never answers for new text.
 */
import { USER_ROOT } from '../protocol/namespace';
import type { Scope } from '../protocol/types';
import { compileFilter } from './filter';
import { stmt, type DB } from './db';
import { and, visibility } from './rows';
import { effectiveIncludeUser, scopePredicate, type SqlFragment } from './scope';
import type { ArmHit, ArmQuery } from './search-fts';

/** A branch row waiting for its vector (the fields its embedding text is made of). */
export interface BranchEmbedRow {
  rowid: number;
  key: string;
  value: string;
  tags: string;
}

/** Branch rows with no vector of `model` yet (blanked deletes have no text to embed), oldest first. */
export function branchRowsToEmbed(db: DB, model: string, limit: number): BranchEmbedRow[] {
  return stmt(
    db,
    `SELECT b.rowid, b.key, b.value, b.tags FROM branch_memories b
      WHERE b.value != '' AND NOT EXISTS (SELECT 1 FROM branch_vectors v WHERE v.rowid = b.rowid AND v.model = ?)
      ORDER BY b.rowid LIMIT ?`,
  ).all(model, limit) as BranchEmbedRow[];
}

/** Whether any branch row waits for a vector of `model`. */
export function branchVectorsPending(db: DB, model: string): boolean {
  return branchRowsToEmbed(db, model, 1).length > 0;
}

function unit(v: Float32Array): Float32Array {
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += v[i] * v[i];
  const n = Math.sqrt(ss);
  const out = new Float32Array(v.length);
  if (n > 0) for (let i = 0; i < v.length; i++) out[i] = v[i] / n;
  return out;
}

/**
 * Store the vectors of rows embedded from `rows`' text: a row whose text changed (or that went) meanwhile is skipped,
 * so it stays waiting for the vector of its new text. Returns how many were stored.
 */
export function putBranchVectors(db: DB, model: string, rows: BranchEmbedRow[], vectors: Float32Array[]): number {
  puts.set(db, (puts.get(db) ?? 0) + 1);
  const put = stmt(
    db,
    `INSERT INTO branch_vectors(rowid, model, v) SELECT rowid, ?, ? FROM branch_memories
      WHERE rowid = ? AND key = ? AND value = ? AND tags = ?
     ON CONFLICT(rowid) DO UPDATE SET model = excluded.model, v = excluded.v`,
  );
  let n = 0;
  rows.forEach((r, i) => {
    const u = unit(vectors[i]);
    n += put.run(model, Buffer.from(u.buffer, u.byteOffset, u.byteLength), r.rowid, r.key, r.value, r.tags).changes;
  });
  return n;
}

/** Vector writes per store: with a branch's generation (bumped by every write of its rows), what a cache is valid for. */
const puts = new WeakMap<DB, number>();
/** Each branch's vectors of one model, read once per (generation, vector writes): a search reads no blob. */
const cache = new WeakMap<DB, Map<string, { stamp: string; vectors: Map<number, Float32Array> }>>();

/** What a branch's vectors of `model` are valid for: its generation (bumped by every write of its rows) and the vector writes. */
export function branchVectorStamp(db: DB, branchId: string, model: string): string {
  const g = stmt(db, 'SELECT generation FROM branches WHERE id = ?').get(branchId) as { generation: number } | undefined;
  return `${g?.generation}:${puts.get(db) ?? 0}:${model}`;
}

function branchVectors(db: DB, branchId: string, model: string): { stamp: string; vectors: Map<number, Float32Array> } {
  const stamp = branchVectorStamp(db, branchId, model);
  let byBranch = cache.get(db);
  if (!byBranch) cache.set(db, (byBranch = new Map()));
  const hit = byBranch.get(branchId);
  if (hit && hit.stamp === stamp) return hit;
  const rows = stmt(
    db,
    `SELECT v.rowid AS rowid, v.v AS v FROM branch_vectors v JOIN branch_memories m ON m.rowid = v.rowid
      WHERE m.branch_id = ? AND v.model = ?`,
  ).all(branchId, model) as { rowid: number; v: Buffer }[];
  // A blob's bytes may sit at any offset of Node's buffer pool: copied into a Float32Array of its own.
  const entry = { stamp, vectors: new Map(rows.map((r) => [r.rowid, new Float32Array(Uint8Array.from(r.v).buffer)])) };
  byBranch.set(branchId, entry);
  return entry;
}

/** A branch's admitted rows with their vectors, decided before the query's embedding is known (branchVectorCandidates). */
export interface BranchVectorCandidates {
  branchId: string;
  model: string;
  /** The branch generation and vector writes they were read at (sameCandidates). */
  stamp: string;
  rows: { rowid: number; v: Float32Array }[];
}

/**
 * The rows the vector arm over one branch admits (scope, visibility and filter in the query that admits them) that
 * have a vector of `model`, with those vectors.
 */
export function branchVectorCandidates(db: DB, branchId: string, model: string, q: ArmQuery): BranchVectorCandidates {
  const { stamp, vectors } = branchVectors(db, branchId, model);
  const rows: { rowid: number; v: Float32Array }[] = [];
  if (vectors.size === 0) return { branchId, model, stamp, rows };
  const where = and(nsPathBound(q.scope), visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
  const admitted = stmt(
    db,
    `SELECT m.rowid AS rowid FROM branch_memories m JOIN branch_ns n ON n.rid = m.rowid WHERE m.branch_id = ? AND ${where.sql}`,
  ).all(branchId, ...where.params) as { rowid: number }[];
  for (const { rowid } of admitted) {
    const v = vectors.get(rowid);
    if (v) rows.push({ rowid, v });
  }
  return { branchId, model, stamp, rows };
}

/**
 * Bounds on m.ns_path around the scope (its namespaces; its root's and the user tree's paths, `p` to `p/`: `p.`
 * sorts between them), so the query reads the branch's rows of the scope from its (branch_id, ns_path, key) index
 * instead of every row of the branch. A superset: the exact scope predicate still decides. null: no bound.
 */
function nsPathBound(scope: Scope | undefined): SqlFragment | null {
  if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return null;
  const ors: string[] = [];
  const params: unknown[] = [];
  for (const p of scope.namespaces ?? []) {
    ors.push('m.ns_path = ?');
    params.push(p);
  }
  for (const p of [...(scope.root !== undefined ? [scope.root] : []), ...(effectiveIncludeUser(scope) ? [USER_ROOT] : [])]) {
    ors.push('(m.ns_path >= ? AND m.ns_path < ?)');
    params.push(p, `${p}/`);
  }
  return ors.length ? { sql: ors.join(' OR '), params } : null;
}

/** Whether no write of the branch's rows or vectors happened since `c` was read. */
export function sameCandidates(db: DB, c: BranchVectorCandidates): boolean {
  return branchVectorStamp(db, c.branchId, c.model) === c.stamp;
}

/** Exact cosine of `query` with each candidate's vector, the best `limit` (ties: lower rowid first), rowids negated. */
export function scoreBranchVectors(c: BranchVectorCandidates, query: Float32Array, limit: number): ArmHit[] {
  const qu = unit(query);
  const hits: ArmHit[] = [];
  for (const { rowid, v } of c.rows) {
    if (v.length !== qu.length) continue;
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i] * qu[i];
    hits.push({ rowid: -rowid, score: s });
  }
  return hits.sort((a, b) => b.score - a.score || b.rowid - a.rowid).slice(0, limit);
}

/**
 * The vector arm over one branch's rows: exact cosine of `query` with each admitted row's vector of `model` (scope,
 * visibility and filter in the query that admits them), the best `q.limit` (ties: lower rowid first), rowids negated.
 */
export function branchVectorArm(db: DB, branchId: string, model: string, query: Float32Array, q: ArmQuery): ArmHit[] {
  return scoreBranchVectors(branchVectorCandidates(db, branchId, model, q), query, q.limit);
}
