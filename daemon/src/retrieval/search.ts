/**
 * memory/search: runs the full-text and vector arms (each with scope, filters
 * and visibility inside its own query), fuses them, and builds hits.
 *
 * - mode 'fts': BM25 order (relevance leads; ties: own scope over `user`, newer, id).
 * - mode 'vector': cosine order from the vector arm.
 * - mode 'hybrid' (default): normalized RRF of both arms, then the bounded
 *   importance/confidence/recency adjustment of fusion.ts.
 * Search does not count as access (accessCount/lastAccessedAt move on memory/get
 * and on injection), so repeated searches return identical output.
 * When vectors are unavailable, 'hybrid' and 'vector' return exactly what
 * 'fts' returns, with `degraded` saying why.
 */
import type { SearchHit, SearchParams, SearchResult } from '../protocol/types';
import { toMemory, type MemoryRow } from '../store/rows';
import type { SearchOverlay } from '../store/branches';
import type { ArmHit, ArmQuery } from '../store/search-fts';
import type { Store } from '../store/store';
import { FUSION, fuseArms, rankFusedLazy, type Fusion } from './fusion';
import { snippet } from './snippet';

export interface VectorSearcher {
  /** null when the vector arm can serve; otherwise why not (shown as `degraded`). */
  unavailable(): string | null;
  /** Fusion constants (K, vector weight) for the model in use. */
  fusion(): Fusion;
  /** Told of every search, so background work can make room for searches. */
  noteQuery?(): void;
  /** `queryVector`, when given, is told the query's embedding once the arm has it (it may never be: nothing admitted). */
  search(query: string, q: ArmQuery, queryVector?: (v: Float32Array) => void): Promise<ArmHit[]>;
}

export const DEFAULT_LIMIT = 10;
/**
 * In hybrid mode a memory found by the vector arm alone must be at least this
 * cosine-similar to the query; below it, "nearest" means little (in a small
 * store every memory is someone's nearest neighbour) and would only add noise.
 */
export const HYBRID_MIN_SIMILARITY = 0.3;
/** Each arm fetches this many candidates per requested hit (at least MIN_CANDIDATES). */
export const CANDIDATE_FACTOR = 4;
export const MIN_CANDIDATES = 40;

export { FUSION };

/**
 * With `overlay` (a search on a memory branch, store/branch-overlay.ts): the base rows the branch shadows are left
 * out inside both arms before their limits; the branch's own rows are matched and ranked with the base's in the
 * full-text arm's queries (scope, filter and visibility checked for each kind of row before the limit); with a model,
 * its rows' vector arm (the same rules inside its query, scored exactly) is merged into the vector candidates by score.
 */
/**
 * With `hidden` (the rowids a reader's git checkout must not see, git/reader.ts): left out inside both arms before
 * their limits, like a branch's shadowed rows.
 */
export async function search(
  store: Store,
  p: SearchParams,
  vectors?: VectorSearcher,
  overlay?: SearchOverlay,
  hidden?: Set<number> | null,
): Promise<SearchResult> {
  const limit = p.limit ?? DEFAULT_LIMIT;
  const mode = p.mode ?? 'hybrid';
  const now = store.now();
  const arm: ArmQuery = {
    scope: p.scope,
    filter: p.filter,
    include: p.include,
    now,
    limit,
    ...(hidden ? { exclude: hidden } : {}),
  };
  const rowsOf = (rowids: number[]) => (overlay ? overlay.rows(rowids) : store.byRowids(rowids));
  // On a branch: one full-text query over the base's rows and the branch's (search-fts.ts BranchText), the shadowed
  // base rows left out as SQL (one probe per candidate), the reader's hidden rows as a list.
  const fullText = (q: ArmQuery): ArmHit[] =>
    overlay ? store.fullTextArm(p.query, { ...q, excludeSql: overlay.excludeSql }, overlay.text) : store.fullTextArm(p.query, q);
  vectors?.noteQuery?.();

  if (mode === 'fts') return ftsOnly(p, arm, fullText, rowsOf);
  const why = vectors ? vectors.unavailable() : 'no embedding model is configured';
  if (why) return { ...ftsOnly(p, arm, fullText, rowsOf), degraded: why };
  if (p.query.trim().length === 0) return { hits: [], mode };

  const candidates = Math.max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES);
  // The query is embedded in the worker thread while the full-text arm runs here.
  // The vector arms leave the shadowed base rows out as a list (with the reader's hidden rows).
  const vq = { ...arm, limit: mode === 'vector' ? limit : candidates, ...(overlay ? { exclude: unionOf(overlay.exclude(), hidden) } : {}) };
  // On a branch, its own rows' vector arm (exact, store/branch-vectors.ts) joins the base arm's candidates by score.
  // It scores with the query embedding the base arm gets back from the worker (one embedding per search); when the
  // base arm gets none (it admitted nothing, or failed), the branch arm embeds the query itself.
  let shareVector: (v: Float32Array | null) => void = () => {};
  const queryVector = overlay?.vector ? new Promise<Float32Array | null>((resolve) => (shareVector = resolve)) : undefined;
  const base = vectors!.search(p.query, vq, overlay?.vector ? shareVector : undefined);
  const own = overlay?.vector?.(p.query, vq, queryVector);
  if (queryVector) {
    const none = () => shareVector(null); // a promise settles once: after the vector, this does nothing
    base.then(none, none);
  }
  const pending = own ? Promise.all([base, own]).then(([a, b]) => [...a, ...b].sort((x, y) => y.score - x.score).slice(0, vq.limit)) : base;
  if (mode === 'vector') {
    const vec = await pending;
    return { hits: armHits(vec, rowsOf(vec.map((h) => h.rowid)), p, 'vector'), mode };
  }

  let fts: ArmHit[];
  try {
    fts = fullText({ ...arm, limit: candidates });
  } catch (e) {
    pending.catch(() => {}); // the full-text error is the one reported
    throw e;
  }
  const vec = await pending;
  const fused = fuseArms(fts, vec, vectors!.fusion(), HYBRID_MIN_SIMILARITY);
  // Rank on the few facts fusion needs, of the candidates that can still reach the top; read whole rows (values,
  // JSON fields) only for the hits returned.
  const ranked = rankFusedLazy(fused, (rowids) => (overlay ? overlay.rankFacts(rowids) : store.rankFacts(rowids)), now, limit);
  const rows = rowsOf(ranked.map((x) => x.rowid));
  return {
    hits: ranked.flatMap((x) => {
      const r = rows.get(x.rowid);
      return r
        ? [hit(r, x.score, p.query, p.explain ? { fts: x.e.fts, vector: x.e.vector, fused: x.e.fused, boost: x.boost } : undefined)]
        : [];
    }),
    mode,
  };
}

function unionOf(a: Set<number> | undefined | null, b: Set<number> | undefined | null): Set<number> {
  if (!a || a.size === 0) return b ?? new Set();
  if (!b || b.size === 0) return a;
  return new Set([...a, ...b]);
}

function ftsOnly(
  p: SearchParams,
  arm: ArmQuery,
  fullText: (q: ArmQuery) => ArmHit[],
  rowsOf: (rowids: number[]) => Map<number, MemoryRow>,
): SearchResult {
  const fts = fullText(arm);
  return { hits: armHits(fts, rowsOf(fts.map((h) => h.rowid)), p, 'fts'), mode: 'fts' };
}

/**
 * One arm's candidates as search hits, in the arm's order, scored by the arm (a candidate whose row is gone drops
 * out); with `explain`, the arm's rank and score. Both stores' single-arm modes (fts, vector, degraded) use it.
 */
export function armHits(
  list: { rowid: number; score: number }[],
  rows: Map<number, MemoryRow>,
  p: SearchParams,
  arm: 'fts' | 'vector',
): SearchHit[] {
  return list.flatMap((h, i) => {
    const r = rows.get(h.rowid);
    if (!r) return [];
    const own = { rank: i + 1, score: h.score };
    return [
      hit(
        r,
        h.score,
        p.query,
        p.explain ? { fts: arm === 'fts' ? own : null, vector: arm === 'vector' ? own : null, fused: h.score, boost: 0 } : undefined,
      ),
    ];
  });
}

export function hit(r: MemoryRow, score: number, query: string, explain?: SearchHit['explain']): SearchHit {
  const m = toMemory(r);
  return { memory: m, score, snippet: snippet(m.value, query), ...(explain ? { explain } : {}) };
}
