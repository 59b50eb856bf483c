/**
 * A search on a memory branch (retrieval/search.ts): what the branch changes about the base's arms (store/branches.ts).
 */
import { USER_ROOT } from '../protocol/namespace';
import type { Scope } from '../protocol/types';
import { STOPWORDS } from '../text/identifiers';
import { notShadowed, OWN_FROM } from './branch-common';
import type { Branches } from './branches';
import { stmt } from './db';
import { compileFilter } from './filter';
import { and, MEMORY_COLUMNS, visibility, type MemoryRow } from './rows';
import { effectiveIncludeUser, scopePredicate, type SqlFragment } from './scope';
import type { ArmHit, ArmQuery } from './search-fts';

/** A full-text query over branch rows: each word of the query, any of them (BM25 ranks rows with more first). */
function branchMatch(query: string): string | null {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const content = words.filter((w) => !STOPWORDS.has(w));
  const uniq = [...new Set(content.length ? content : words)].slice(0, 32);
  return uniq.length ? uniq.map((w) => `"${w.replace(/"/g, '""')}"`).join(' OR ') : null;
}

/**
 * A scope as a MATCH over the `ns` column (each path as a phrase at the column's start): a superset of the scope's
 * rows (the SQL scope predicate is exact), so FTS5 only scores rows near the scope. null: the whole store; '': nothing.
 */
function scopeMatch(scope: Scope | undefined): string | null {
  if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return null;
  const paths = [...(scope.namespaces ?? []), ...(scope.root !== undefined ? [scope.root] : [])];
  if (effectiveIncludeUser(scope)) paths.push(USER_ROOT);
  return paths.map((p) => `^"${p.split('.').join(' ').replace(/"/g, '""')}"`).join(' OR ');
}

/**
 * What a search on a branch needs (retrieval/search.ts): the base rows the branch shadows (left out inside both
 * base arms, before their limits), the branch rows' own full-text arm (scope, filter, visibility inside its query;
 * hits carry the negated branch rowid), and rows and ranking facts for either kind of hit.
 */
export function searchOverlay(
  br: Branches,
  name: string,
  vectors?: { search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]> },
): SearchOverlay {
  const b = br.open(name);
  const position = br.store.position();
  let cached = br.shadowCache.get(b.id);
  if (!cached || cached.generation !== b.generation || cached.position !== position) {
    // Base memories of the keys the branch wrote (a base change that could add one moves the change-log position).
    const rowids = stmt(
      br.db,
      `SELECT m.rowid AS rowid FROM branch_memories b JOIN namespaces n ON n.path = b.ns_path AND n.deleted_at IS NULL
         JOIN memories m ON m.ns_id = n.id AND m.key = b.key WHERE b.branch_id = ?`,
    )
      .all(b.id)
      .map((r) => (r as { rowid: number }).rowid);
    br.shadowCache.set(b.id, (cached = { generation: b.generation, position, rowids: new Set(rowids) }));
  }
  const shadowed = cached.rowids;
  const rowsOf = (rowids: number[]): Map<number, MemoryRow> => {
    const out = new Map<number, MemoryRow>();
    const own = rowids.filter((r) => r < 0).map((r) => -r);
    const base = br.store.byRowids(rowids.filter((r) => r > 0));
    for (const [k, v] of base) out.set(k, v);
    if (own.length) {
      const rows = stmt(
        br.db,
        // rowid lookups, not the branch's index (`+`: the branch id is only checked)
        `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid IN (SELECT value FROM json_each(?)) AND +m.branch_id = ?`,
      ).all(JSON.stringify(own), b.id) as MemoryRow[];
      for (const r of rows) out.set(-r.rowid, r);
    }
    return out;
  };
  return {
    exclude: shadowed,
    // The same rows for the base full-text arm, probed per candidate (a namespace deleted since is not the key's).
    excludeSql: { sql: `NOT (n.deleted_at IS NULL AND ${notShadowed(b.id).sql.slice(4)})`, params: [b.id] },
    fullText: (query, q) => {
      const words = branchMatch(query);
      if (!words) return [];
      const ns = scopeMatch(q.scope);
      if (ns === '') return [];
      const match = ns ? `(${words}) AND ns : (${ns})` : words;
      const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
      const rows = stmt(
        br.db,
        `SELECT m.rowid AS rowid, bm25(branch_fts, 4.0, 1.0, 0.5, 2.0, 0.0) AS bm FROM branch_fts f
           JOIN branch_memories m ON m.rowid = f.rowid JOIN branch_ns n ON n.rid = m.rowid
          WHERE branch_fts MATCH ? AND m.branch_id = ? AND ${where.sql} ORDER BY bm LIMIT ?`,
      ).all(match, b.id, ...where.params, q.limit) as { rowid: number; bm: number }[];
      return rows.map((r) => ({ rowid: -r.rowid, score: -r.bm }));
    },
    ...(vectors
      ? { vector: (query: string, q: ArmQuery, vector?: Promise<Float32Array | null>) => vectors.search(b.id, query, q, vector) }
      : {}),
    rows: rowsOf,
    rankFacts: (rowids) => {
      // Base rows: only the facts (Store.rankFacts); branch rows (negated rowids): whole rows, few per search.
      const out = new Map<number, { id: string; importance: number; confidence: number; updated_at: number }>(
        br.store.rankFacts(rowids.filter((r) => r > 0)),
      );
      for (const [k, r] of rowsOf(rowids.filter((r) => r < 0))) out.set(k, r);
      return out;
    },
  };
}

export interface SearchOverlay {
  /** Base rowids the branch shadows: no base arm admits them. */
  exclude: Set<number>;
  /** The same base rows as SQL over aliases m, n (ArmQuery.excludeSql): what the base full-text arm leaves out. */
  excludeSql: SqlFragment;
  /** The branch rows' full-text arm (hit rowids negated). */
  fullText(query: string, q: ArmQuery): ArmHit[];
  /**
   * The branch rows' vector arm (hit rowids negated; store/branch-vectors.ts), when a model serves. `vector`: the
   * query's embedding the base arm got from the worker (null when it got none: the arm embeds the query itself).
   */
  vector?(query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]>;
  rows(rowids: number[]): Map<number, MemoryRow>;
  rankFacts(rowids: number[]): Map<number, { id: string; importance: number; confidence: number; updated_at: number }>;
}
