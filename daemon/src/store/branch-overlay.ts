/**
 * A search on a memory branch (retrieval/search.ts): what the branch changes about the base's arms (store/branches.ts).
 */
import { notShadowed, OWN_FROM } from './branch-common';
import { branchPathTokens } from './branch-text';
import type { Branches } from './branches';
import { stmt } from './db';
import { MEMORY_COLUMNS, type MemoryRow } from './rows';
import type { SqlFragment } from './scope';
import type { ArmHit, ArmQuery, BranchText } from './search-fts';

/**
 * What a search on a branch needs (retrieval/search.ts): the base rows the branch shadows (left out inside both
 * base arms, before their limits), the branch rows' full text (matched and ranked with the base's in the full-text
 * arm's own queries: search-fts.ts BranchText; hits carry the negated branch rowid), their vector arm, and rows and
 * ranking facts for either kind of hit.
 */
export function searchOverlay(
  br: Branches,
  name: string,
  vectors?: { search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]> },
): SearchOverlay {
  const b = br.open(name);
  // The shadowed base rows as a list, for the vector arms only (the full-text arm probes them in SQL): read when first
  // asked, kept while the branch's generation and the change-log position stay the same.
  const shadowed = (): Set<number> => {
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
    return cached.rowids;
  };
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
    text: { id: b.id, tokens: branchPathTokens(br.db, b.id, b.generation) },
    ...(vectors
      ? { vector: (query: string, q: ArmQuery, vector?: Promise<Float32Array | null>) => vectors.search(b.id, query, q, vector) }
      : {}),
    rows: rowsOf,
    rankFacts: (rowids) => {
      // Only the facts fusion ranks on, of either kind of row (branch rows: negated rowids, a rowid lookup each).
      const base = rowids.filter((r) => r > 0);
      const own = rowids.filter((r) => r < 0).map((r) => -r);
      const out = new Map<number, { id: string; importance: number; confidence: number; updated_at: number }>(
        base.length ? br.store.rankFacts(base) : [],
      );
      if (own.length) {
        const rows = stmt(
          br.db,
          `SELECT -rowid AS rowid, id, importance, confidence, updated_at FROM branch_memories
            WHERE rowid IN (SELECT value FROM json_each(?)) AND +branch_id = ?`,
        ).all(JSON.stringify(own), b.id) as { rowid: number; id: string; importance: number; confidence: number; updated_at: number }[];
        for (const r of rows) out.set(r.rowid, r);
      }
      return out;
    },
  };
}

export interface SearchOverlay {
  /** Base rowids the branch shadows: no base arm admits them (the list, for the vector arms; read when first asked). */
  exclude(): Set<number>;
  /** The same base rows as SQL over aliases m, n (ArmQuery.excludeSql): what the base full-text arm leaves out. */
  excludeSql: SqlFragment;
  /** The branch's rows for the full-text arm, which matches and ranks them with the base's (hit rowids negated). */
  text: BranchText;
  /**
   * The branch rows' vector arm (hit rowids negated; store/branch-vectors.ts), when a model serves. `vector`: the
   * query's embedding the base arm got from the worker (null when it got none: the arm embeds the query itself).
   */
  vector?(query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]>;
  rows(rowids: number[]): Map<number, MemoryRow>;
  rankFacts(rowids: number[]): Map<number, { id: string; importance: number; confidence: number; updated_at: number }>;
}
