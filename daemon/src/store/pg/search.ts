/**
 * memory/search on the team store: a PostgreSQL text-search arm and a
 * pgvector arm, each with scope, visibility and filters inside the query that
 * takes its top-k, fused by the same code as the SQLite arms (retrieval/fusion.ts).
 *
 * Full text: each memory's tsvector weights key (A), tags (B), value plus
 * split code identifiers (C, text/identifiers.ts) and summary (D). The query
 * becomes the same terms as the FTS5 plan: plain words, camelCase as the
 * compound or the phrase of its parts, snake_case as a phrase, and a word
 * still being typed also as a prefix; first every term (AND), then any term
 * fills the rest. The matching rows come from cairn.text_matches
 * (text-matches.ts), which reads the GIN index under the same read rules as
 * row-level security (a member's own `@@` never reaches the index) and ranks
 * them like BM25 (each term's ts_rank weighted by its idf among the visible
 * matches the caller may read).
 *
 * Vectors: the HNSW index's top-k (vector-index.ts) with scope, visibility,
 * filter and model in the same WHERE, else (no index for the dimension, or a
 * scope too narrow for the index's candidate list) exact cosine distance over
 * the rows the WHERE admits; out-of-scope near-duplicates never occupy a slot.
 */
import type { SearchParams, SearchResult } from '../../protocol/types';
import { fuseArms, rankFused, type Fusion } from '../../retrieval/fusion';
import { armHits, CANDIDATE_FACTOR, DEFAULT_LIMIT, hit, HYBRID_MIN_SIMILARITY, MIN_CANDIDATES } from '../../retrieval/search';
import { splitIdentifier, STOPWORDS } from '../../text/identifiers';
import type { PgBackend } from './backend';
import { vectorLiteral } from './backend';
import { mapError, query } from './db';
import type { MemoryRow } from '../rows';
import { andSql, filterSql, MEMORY_COLUMNS, ownScopeRank, Params, scopeSql, visibilitySql } from './sql';
import { USER_ROOT } from '../../protocol/namespace';
import { effectiveIncludeUser } from '../scope';
import { RANK_WEIGHTS, scopeArgs } from './text-matches';
import { EXACT_SCOPE_ROWS, indexInfo, NarrowScopes } from './vector-index';

function rethrow(e: unknown): never {
  throw mapError(e);
}

export interface ArmHit {
  rowid: number;
  score: number;
}

/**
 * The most distinct terms of a query the team arm searches (the first ones): cairn.text_matches ranks each term in a
 * column of its own, and PostgreSQL allows 1,664 in a statement's target list; a 4,096-character query can hold
 * ~1,300 distinct words. (The SQLite store has no such bound.)
 */
export const TEAM_MAX_TERMS = 256;

/** The query's terms as tsquery SQL expressions (each term a bound parameter), at most TEAM_MAX_TERMS. */
function terms(q: Params, text: string): string[] {
  const words = [...text.matchAll(/[\p{L}\p{N}_$]+/gu)].map((m) => m[0]);
  const content = words.filter((w) => !STOPWORDS.has(w.toLowerCase()));
  const use = content.length > 0 ? content : words;
  const out: string[] = [];
  const seen = new Set<string>();
  use.forEach((w, i) => {
    if (out.length >= TEAM_MAX_TERMS) return;
    const lower = w.toLowerCase();
    const parts = splitIdentifier(w);
    const snake = lower.split(/[_$]+/).filter(Boolean);
    const key = parts.length ? parts.join(' ') : lower;
    if (seen.has(key)) return;
    seen.add(key);
    if (parts.length > 1 && snake.length === 1)
      out.push(`(plainto_tsquery('english', ${q.p(lower)}) || phraseto_tsquery('english', ${q.p(parts.join(' '))}))`);
    else if (snake.length > 1) out.push(`phraseto_tsquery('english', ${q.p(snake.join(' '))})`);
    else {
      const typing = i === use.length - 1 && /[\p{L}\p{N}]$/u.test(text) && lower.length >= 3 && /^[a-z0-9]+$/.test(lower);
      if (typing) out.push(`(plainto_tsquery('english', ${q.p(lower)}) || to_tsquery('simple', ${q.p(lower + ':*')}))`);
      else out.push(`plainto_tsquery('english', ${q.p(lower)})`);
    }
  });
  return out;
}

export interface ArmQuery {
  scope?: SearchParams['scope'];
  filter?: SearchParams['filter'];
  include?: SearchParams['include'];
  limit: number;
  now: number;
  /** Vector arm: exact distance even where an HNSW index could answer (the reference for recall; tests). */
  exact?: boolean;
  /** Full-text arm: every match handed to the arm's statement, none ranked out inside (the reference; tests). */
  allMatches?: boolean;
  /** When given, each hit's memory is read by the arm's own statement into this map. */
  rows?: Map<number, MemoryRow>;
}

export async function ftsArm(b: PgBackend, text: string, a: ArmQuery): Promise<ArmHit[]> {
  const both = countTerms(text) >= 2;
  // Memories with every term rank above those with any (the ORDER BY below), so when at least `limit` of them
  // match, the any-term pass cannot change the answer: it is skipped. That pass is what costs on a large store (a
  // whole-team query of three common words at 1M ranked ~400k matches, 3 s, where the every-term ones were 89–847).
  // A small scope (under EXACT_SCOPE_ROWS memories, as the vector arm counts it) gets the one statement at once: its
  // any-term pass is bounded, and the every-term statement first cost a 20k-memory project at 1M 15 ms more p50
  // (most of its queries have fewer than `limit` every-term matches there).
  if (both && !(await scopeSmall(b, a.scope, b.opts.exactScopeRows ?? EXACT_SCOPE_ROWS))) {
    const every = await ftsPass(b, text, a, 'every');
    if (every.length >= a.limit) return every;
  }
  return ftsPass(b, text, a, both ? 'both' : 'any');
}

const smallScopes = new WeakMap<PgBackend, NarrowScopes>();
const largeScopes = new WeakMap<PgBackend, NarrowScopes>();

/** Whether `scope` holds fewer than `rows` memories (remembered for a while, as the vector arm's size checks are). */
async function scopeSmall(b: PgBackend, scope: ArmQuery['scope'], rows: number): Promise<boolean> {
  if (rows <= 0 || !scope || (scope.namespaces === undefined && scope.root === undefined)) return false;
  let small = smallScopes.get(b);
  if (!small) smallScopes.set(b, (small = new NarrowScopes()));
  let large = largeScopes.get(b);
  if (!large) largeScopes.set(b, (large = new NarrowScopes()));
  const key = JSON.stringify([scope, rows]);
  const now = Date.now();
  if (small.has(key, now)) return true;
  if (large.has(key, now)) return false;
  const isSmall = await scopeHoldsFewer(b, scope, (q) => `${q.p(rows)}::bigint`);
  (isSmall ? small : large).add(key, now);
  return isSmall;
}

/**
 * Whether `scope` holds fewer memories than `cap` (an SQL expression, its parameters in `q`): counted only up to
 * it, through the (ns_id, key) index. Without a scope, no.
 */
async function scopeHoldsFewer(b: PgBackend, scope: ArmQuery['scope'], cap: (q: Params) => string): Promise<boolean> {
  const q = new Params();
  const where = scopeSql(q, scope);
  if (!where) return false;
  const c = cap(q);
  const r = await query<{ fewer: boolean }>(
    b.pool,
    `SELECT (SELECT count(*) FROM (SELECT 1 FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where} LIMIT ${c}) x)
       < ${c} AS fewer`,
    q.values,
  );
  return r[0]?.fewer === true;
}

function countTerms(text: string): number {
  return terms(new Params(), text).length;
}

/**
 * One statement of the full-text arm: `every`: the memories with every term; `both`: those first, then those with
 * any term, as the FTS5 plan's AND pass topped up by its OR pass; `any`: a single term's matches. Each tier is ranked
 * with its own term statistics (text-matches.ts), so `every` alone ranks its rows as `both` does.
 */
async function ftsPass(b: PgBackend, text: string, a: ArmQuery, pass: 'every' | 'both' | 'any'): Promise<ArmHit[]> {
  const q = new Params();
  const ts = terms(q, text);
  if (ts.length === 0) return [];
  const where = andSql(visibilitySql(q, a.include, a.now), scopeSql(q, a.scope), filterSql(q, a.filter));
  const own = ownScopeRank(q, a.scope);
  const both = pass === 'both';
  // The matching rows come from cairn.text_matches (text-matches.ts: the GIN index under the caller's read rules, in
  // the scope's namespaces), each with its rank (the terms weighted by how rare they are among the scope's visible
  // matches); visibility, scope and filter are decided here, before the cut. With no filter and no include flag, the
  // function also returns only the rows that can still make the limit (same rank, tier and visibility as here, ties
  // included): a scope's walk then reads an index, not the table, and a whole-store search hands over tens of rows
  // instead of all its matches.
  const { paths, roots } = scopeArgs(a.scope);
  const ranked = !a.allMatches && !a.filter && !Object.values(a.include ?? {}).some(Boolean);
  const matches = `cairn.text_matches(t.tq, ${q.p(paths)}::text[], ${q.p(roots)}::text[], ${q.p(!!a.include?.deleted)},
    ARRAY[${ts.join(', ')}]::tsquery[], ${both ? 't.every' : 'NULL'}, '${RANK_WEIGHTS}'::float4[],
    ${ranked ? `${q.p(a.limit)}::integer` : 'NULL'}, ${q.p(a.now)}::bigint, ${q.p(own && a.scope && effectiveIncludeUser(a.scope) ? USER_ROOT : null)}::text)`;
  const tq = pass === 'every' ? ts.join(' && ') : ts.join(' || ');
  // Its rows carry their namespace's path (`n` below: a live namespace, as visibilitySql wants), so no join per row.
  const arm = `WITH t AS (SELECT ${tq} AS tq${both ? `, ${ts.join(' && ')} AS every` : ''})
       SELECT m.rowid, m.id, m.rank AS score
       FROM t, ${matches} m, LATERAL (SELECT m.ns_path AS path, NULL::bigint AS deleted_at) n
       WHERE numnode(t.tq) > 0 AND ${where}
       ORDER BY ${both ? '(m.fts @@ t.every) DESC, ' : ''}score DESC, ${own ? `${own} ASC, ` : ''}m.updated_at DESC, m.id ASC
       LIMIT ${q.p(a.limit)}`;
  return (await armRows(b, arm, q, a.rows)).map(({ rowid, score }) => ({ rowid, score }));
}

/**
 * Runs an arm's statement (rowid, score, best first); with `rows`, the same statement also reads each hit's memory
 * into it (no second round trip for the facts fusion and the answer need).
 */
async function armRows(b: PgBackend, arm: string, q: Params, rows: Map<number, MemoryRow> | undefined): Promise<RankedHit[]> {
  if (!rows) return (await query<RankedHit>(b.pool, arm, q.values)).map((r) => ({ rowid: r.rowid, id: r.id, score: r.score }));
  const got = await query<MemoryRow & { arm_score: number; arm_ord: number }>(
    b.pool,
    `SELECT h.score AS arm_score, h.ord AS arm_ord, ${MEMORY_COLUMNS}
     FROM (SELECT x.rowid, x.score, row_number() OVER () AS ord FROM (${arm}) x) h
       JOIN memories m ON m.rowid = h.rowid JOIN namespaces n ON n.id = m.ns_id
     ORDER BY h.ord`,
    q.values,
  );
  return got.map(({ arm_score, arm_ord: _, ...r }) => {
    rows.set(r.rowid, r as MemoryRow);
    return { rowid: r.rowid, id: r.id, score: arm_score };
  });
}

interface RankedHit extends ArmHit {
  id: string;
}

const narrow = new WeakMap<PgBackend, NarrowScopes>();
/** Scopes whose size admits an index pass (scopeTooNarrow said no), remembered as long as narrow ones. */
const broad = new WeakMap<PgBackend, NarrowScopes>();

/**
 * The vector arm's top-k, scope, visibility, model and filter inside the query. With an HNSW index for the query's
 * dimension (vector-index.ts), the index's ordered scan first; when that comes back short (a narrow scope, most of
 * the index's candidates filtered out), exact distance over the scoped rows, which is also the plan without an index.
 */
export async function vectorArm(b: PgBackend, v: Float32Array, a: ArmQuery): Promise<ArmHit[]> {
  if (!b.embedder || v.every((x) => x === 0)) return [];
  const q = new Params();
  const vec = q.p(vectorLiteral(v));
  const where = andSql(
    `m.embed_model = ${q.p(b.embedder.info.model)}`,
    'm.embedding IS NOT NULL',
    visibilitySql(q, a.include, a.now),
    scopeSql(q, a.scope),
    filterSql(q, a.filter),
  );
  const limit = q.p(a.limit);
  const dim = v.length;
  const info = await indexInfo(b.pool).catch(rethrow);
  let memo = narrow.get(b);
  if (!memo) narrow.set(b, (memo = new NarrowScopes()));
  const memoKey = JSON.stringify([dim, b.embedder.info.model, a.scope ?? null, a.filter ?? null, a.include ?? null, a.limit]);
  let wide = broad.get(b);
  if (!wide) broad.set(b, (wide = new NarrowScopes()));
  if (!a.exact && info.dims.has(dim) && !memo.has(memoKey, Date.now()) && !wide.has(memoKey, Date.now())) {
    if (await scopeTooNarrow(b, a, info.scopeDims.has(dim) ? (b.opts.exactScopeRows ?? EXACT_SCOPE_ROWS) : 0))
      memo.add(memoKey, Date.now());
    else wide.add(memoKey, Date.now());
  }
  if (!a.exact && info.dims.has(dim) && !memo.has(memoKey, Date.now())) {
    // The cast and the partial predicate are spelled as in the index (literal dimension), so the planner can use it;
    // the ORDER BY is the bare distance (what an index scan yields); ties are ordered below.
    const d = `(m.embedding::vector(${dim})) <=> ${vec}::vector(${dim})`;
    const got = new Map<number, MemoryRow>();
    const hits = await armRows(
      b,
      `SELECT m.rowid, m.id, 1 - (${d}) AS score FROM memories m JOIN namespaces n ON n.id = m.ns_id
       WHERE vector_dims(m.embedding) = ${dim} AND ${where} ORDER BY ${d} LIMIT ${limit}`,
      q,
      a.rows && got,
    );
    if (hits.length >= a.limit) {
      for (const [k, r] of got) a.rows?.set(k, r);
      hits.sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      return hits.map(({ rowid, score }) => ({ rowid, score }));
    }
    memo.add(memoKey, Date.now());
  }
  // Each row's distance computed once (the ORDER BY names the column; the same expression there would be a second one).
  // The literal dimension lets the planner use the scope-vector index of that dimension (vector-index.ts): an
  // index-only scan of the scope's namespaces (the same model embeds every vector at one dimension anyway).
  const hits = await armRows(
    b,
    `SELECT e.rowid, e.id, 1 - e.d AS score FROM (
       SELECT m.rowid, m.id, m.embedding <=> ${vec}::vector AS d FROM memories m JOIN namespaces n ON n.id = m.ns_id
       WHERE vector_dims(m.embedding) = ${dim} AND ${where} ORDER BY d ASC, m.id ASC LIMIT ${limit}) e ORDER BY e.d ASC, e.id ASC`,
    q,
    a.rows,
  );
  return hits.map(({ rowid, score }) => ({ rowid, score }));
}

/**
 * Whether the index's candidate list cannot hold `limit` rows of the scope: fewer than limit × rows / hnsw.ef_search
 * memories in it (the count stops there, through the (ns_id, key) index; the table's size is the planner's estimate),
 * or fewer than `exactRows` (a scope the scope-vector index searches exactly for less than one index pass costs).
 * Such a scope goes straight to exact search instead of an index pass. Without a scope, no.
 */
async function scopeTooNarrow(b: PgBackend, a: ArmQuery, exactRows: number): Promise<boolean> {
  const cap = (q: Params) =>
    `(SELECT greatest(ceil(${q.p(a.limit)} * greatest(c.reltuples, 1) / current_setting('hnsw.ef_search')::float8)::bigint,
       ${q.p(exactRows)}::bigint) FROM pg_class c WHERE c.oid = 'cairn.memories'::regclass)`;
  return scopeHoldsFewer(b, a.scope, cap);
}

/** Same contract as retrieval/search.ts's search(), on the team store. `fusion` holds the model's fusion constants. */
export async function pgSearch(b: PgBackend, p: SearchParams, fusion: Fusion | null): Promise<SearchResult> {
  const limit = p.limit ?? DEFAULT_LIMIT;
  const mode = p.mode ?? 'hybrid';
  const now = b.now();
  const arm: ArmQuery = { scope: p.scope, filter: p.filter, include: p.include, now, limit };
  // Validate scope and filter even when an arm has nothing to run.
  scopeSql(new Params(), p.scope);
  filterSql(new Params(), p.filter);
  const ftsOnly = async (): Promise<SearchResult> => {
    const rows = new Map<number, MemoryRow>();
    const fts = await ftsArm(b, p.query, { ...arm, rows });
    return { hits: armHits(fts, rows, p, 'fts'), mode: 'fts' };
  };
  if (mode === 'fts') return ftsOnly();
  if (!b.embedder || fusion === null) return { ...(await ftsOnly()), degraded: 'no embedding model is loaded for the team store' };
  if (p.query.trim().length === 0) return { hits: [], mode };
  const candidates = Math.max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES);
  const rows = new Map<number, MemoryRow>();
  // The full-text arm runs on its own pool connection while the query is embedded and the vector arm runs on another.
  const ftsRun = mode === 'vector' ? null : ftsArm(b, p.query, { ...arm, limit: candidates, rows });
  ftsRun?.catch(() => undefined); // awaited below; not an unhandled rejection while the vector arm runs
  const [qv] = await b.embedder.embed([p.query], { priority: true });
  const vec = await vectorArm(b, qv, { ...arm, limit: mode === 'vector' ? limit : candidates, rows });
  if (ftsRun === null) return { hits: armHits(vec, rows, p, 'vector'), mode };
  const fts = await ftsRun;
  const fused = fuseArms(fts, vec, fusion, HYBRID_MIN_SIMILARITY);
  const ranked = rankFused(fused, rows, now, limit);
  return {
    hits: ranked.map((x) =>
      hit(x.r, x.score, p.query, p.explain ? { fts: x.e.fts, vector: x.e.vector, fused: x.e.fused, boost: x.boost } : undefined),
    ),
    mode,
  };
}
