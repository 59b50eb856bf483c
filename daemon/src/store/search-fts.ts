/**
 * The full-text arm: FTS5 + BM25 with column weights. Scope, visibility and
 * filters are part of the same query that takes the top-k, so an out-of-scope
 * memory never occupies a candidate slot.
 */
import type { Filter, Include, Scope } from '../protocol/types';
import { queryTokens, STOPWORDS } from '../text/identifiers';
import type { DB } from './db';
import { compileFilter } from './filter';
import { and, visibility } from './rows';
import { ownScopeRank, scopePredicate } from './scope';

/** BM25 column weights: key, value, summary, tags, split identifiers. */
export const BM25_WEIGHTS = [4.0, 1.0, 0.5, 2.0, 1.0] as const;

export interface ArmHit {
  rowid: number;
  /** Higher is better (negated BM25 for the full-text arm, cosine similarity for the vector arm). */
  score: number;
}

export interface ArmQuery {
  scope?: Scope;
  filter?: Filter;
  include?: Include;
  limit: number;
  now: number;
}

/**
 * Build an FTS5 MATCH expression: every distinct word (and the parts of split
 * identifiers) OR-ed, each quoted so no user text is parsed as FTS syntax.
 * Stopwords are dropped unless the query has nothing else. The last word is
 * also matched as a prefix while the user is still typing it.
 */
export function ftsExpression(query: string): string | null {
  const tokens = queryTokens(query);
  if (tokens.length === 0) return null;
  const content = tokens.filter((t) => !STOPWORDS.has(t));
  const use = content.length > 0 ? content : tokens;
  const terms = use.map((t) => `"${t.replace(/"/g, '""')}"`);
  const last = use[use.length - 1];
  const typing = /[\p{L}\p{N}]$/u.test(query);
  if (typing && last.length >= 3 && query.trim().toLowerCase().endsWith(last)) terms.push(`"${last.replace(/"/g, '""')}"*`);
  return terms.join(' OR ');
}

export function ftsArm(db: DB, query: string, q: ArmQuery): ArmHit[] {
  const expr = ftsExpression(query);
  if (!expr) return [];
  const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
  const own = ownScopeRank(q.scope);
  const sql = `SELECT f.rowid AS rowid, bm25(memories_fts, ${BM25_WEIGHTS.join(', ')}) AS bm
    FROM memories_fts f JOIN memories m ON m.rowid = f.rowid JOIN namespaces n ON n.id = m.ns_id
    WHERE memories_fts MATCH ? AND ${where.sql}
    ORDER BY bm ASC, ${own ? `${own.sql} ASC, ` : ''}m.updated_at DESC, m.id ASC
    LIMIT ?`;
  const rows = db.prepare(sql).all(expr, ...where.params, ...(own?.params ?? []), q.limit) as { rowid: number; bm: number }[];
  return rows.map((r) => ({ rowid: r.rowid, score: -r.bm }));
}
