/**
 * The team store's approximate vector index (schema v6, rebuilt by v8; both built by index-builds.ts with
 * CREATE INDEX CONCURRENTLY after the migration commits, so writes go on meanwhile): one pgvector HNSW
 * index per common embedding dimension, on a fixed-dimension cast of the
 * `embedding` column (the column itself has no dimension, since the model is
 * the team's choice), partial on that dimension:
 *
 *   CREATE INDEX memories_hnsw_384 ON cairn.memories
 *     USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384
 *
 * The vector arm (search.ts) asks the index for its top-k with scope,
 * visibility, model and filter in the same WHERE, so every row it returns is
 * in scope. The server's pgvector (0.6 in the pgserver wheel the tests use)
 * has no iterative index scans: a filtered HNSW scan looks at `hnsw.ef_search`
 * candidates and drops those out of scope, so for a narrow scope it can come
 * back with fewer than k rows. A scope with fewer than k × rows / ef_search
 * memories (counted through the (ns_id, key) index, search.ts) goes to exact
 * search directly; otherwise, when the pass comes back short, the arm runs the exact
 * query over the scoped rows (which reads only that scope's rows) and
 * remembers for a while that this scope is narrow, so the next search of it
 * goes exact directly. Scope is never applied after a cut: the ANN pass's
 * cut is the index's candidate list (its recall is measured in
 * bench/team.ts), and a short answer is never taken as the answer.
 * With pgvector 0.8 or later, `hnsw.iterative_scan = relaxed_order` is set on
 * each connection, so the index itself keeps walking until k in-scope rows.
 */
import type pg from 'pg';

/** Dimensions indexed by migration 6: the built-in static model (256), MiniLM (384), and common larger models. */
export const HNSW_DIMS = [256, 384, 512, 768, 1024, 1536] as const;

/**
 * Candidates each HNSW scan considers (set per connection, db.ts). Recall@10 over the whole team against exact search
 * (bench/team.ts --ef-search; picked on the first half of the queries, confirmed on the other half). At 100k, index of
 * migration 8, 200 queries: 0.905 at 200 (0.944 / 0.865 by half), 0.943 at 400 (0.972 / 0.913), 0.973 at 800 (0.992 /
 * 0.953). At 1M, 100 queries: 0.948 at 800 (0.92 / 0.976), 0.968 at 1,000 (0.96 / 0.976), p50 54 → 60 ms. 1,000 is
 * pgvector's largest value. Recall is bimodal on that corpus (a query finds all ten or none: the search enters the
 * wrong cluster), so a deeper search, not a longer LIMIT re-ranked exactly, is what raises it.
 */
export const EF_SEARCH = 1000;

/**
 * A scope with fewer memories than this is searched exactly when the scope-vector index of the query's dimension
 * exists (an index-only scan at ~0.7 µs a memory: 14.6 ms for a 20k-memory project at 1M, where one HNSW pass took
 * 45–60 ms and still missed some of the ten), whatever the HNSW candidate list could hold.
 */
export const EXACT_SCOPE_ROWS = 50_000;

export function hnswIndexName(dim: number): string {
  return `memories_hnsw_${dim}`;
}

/**
 * The index of one dimension (bench/team.ts drops and rebuilds it around its fixture load). m = 32: with pgvector's
 * default 16, recall@10 on the benchmark's corpus was 0.81-0.89 whatever hnsw.ef_search (the graph was the limit).
 * ef_construction = 256 (migration 8; migration 6 built with 128): at 100k, recall 0.905 / 0.973 at ef_search 200 / 800
 * against 0.737 / 0.806 for a 128 build, for ~1.7x the build time and the same disk (164 MB at 100k).
 */
export function hnswIndexSql(dim: number, efConstruction = 256, o: { name?: string; concurrently?: boolean } = {}): string {
  if (!Number.isInteger(dim) || dim <= 0 || dim > 2000) throw new Error(`no HNSW index for ${dim}-d vectors`);
  return `CREATE INDEX ${o.concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${o.name ?? hnswIndexName(dim)} ON cairn.memories
    USING hnsw ((embedding::vector(${dim})) vector_cosine_ops) WITH (m = 32, ef_construction = ${efConstruction})
    WHERE vector_dims(embedding) = ${dim}`;
}

/**
 * Dimensions that get a scope-vector index (migration 11): a btree entry holds at most ~2.7 kB, so vectors up to 512
 * dimensions (2 kB) fit beside the other columns; larger models' scoped exact search reads the table's rows instead.
 */
export const SCOPE_VECTOR_DIMS = [256, 384, 512] as const;

export function scopeVectorIndexName(dim: number): string {
  return `memories_scope_vec_${dim}`;
}

/**
 * The scope-vector index of one dimension: the live, current memories of each namespace with everything the exact
 * vector pass reads (search.ts), so a narrow scope's exact search is an index-only scan of that namespace's entries,
 * which lie together, instead of one table page per memory (the table is in write order, every project interleaved).
 * At 1M memories (bench/team.ts, a 20k-memory project, warm) the pass went from 56 to 15 ms, cold from 1.4 s to 28
 * ms; its disk is about that of the vectors themselves (1.66 GB at 1M, 256-d). Its predicate is spelled as the exact
 * pass's WHERE (visibilitySql's default, the dimension), so the planner can prove the query inside it: a search that
 * includes deleted, superseded or proposed memories reads the table instead.
 */
export function scopeVectorIndexSql(dim: number, o: { name?: string; concurrently?: boolean } = {}): string {
  if (!(SCOPE_VECTOR_DIMS as readonly number[]).includes(dim)) throw new Error(`no scope-vector index for ${dim}-d vectors`);
  return `CREATE INDEX ${o.concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${o.name ?? scopeVectorIndexName(dim)} ON cairn.memories
    (ns_id) INCLUDE (embed_model, embedding, rowid, id, expires_at, valid_from, valid_to)
    WHERE deleted_at IS NULL AND embedding IS NOT NULL AND vector_dims(embedding) = ${dim}
      AND status <> 'superseded' AND status <> 'proposed'`;
}

/** Per pool: the dimensions that have an index, and whether pgvector has iterative scans. Learned once. */
interface IndexInfo {
  dims: Set<number>;
  /** Dimensions with a scope-vector index. */
  scopeDims: Set<number>;
  iterative: boolean;
}
const known = new WeakMap<pg.Pool, Promise<IndexInfo>>();

export function indexInfo(pool: pg.Pool): Promise<IndexInfo> {
  let p = known.get(pool);
  if (!p) {
    p = pool
      .query<{ name: string; vec: string | null }>(
        `SELECT c.relname AS name, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec
         FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE s.nspname = 'cairn' AND c.relkind = 'i' AND (c.relname LIKE 'memories\\_hnsw\\_%' OR c.relname LIKE 'memories\\_scope\\_vec\\_%')
           AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indexrelid = c.oid AND i.indisvalid)`,
      )
      .then((r) => ({
        dims: dimsOf(r.rows, 'memories_hnsw_'),
        scopeDims: dimsOf(r.rows, 'memories_scope_vec_'),
        iterative: hasIterativeScans(r.rows[0]?.vec ?? null),
      }));
    p.catch(() => known.delete(pool)); // asked again next time
    known.set(pool, p);
  }
  return p;
}

function dimsOf(rows: { name: string }[], prefix: string): Set<number> {
  return new Set(
    rows
      .filter((x) => x.name.startsWith(prefix))
      .map((x) => Number(x.name.slice(prefix.length)))
      .filter((d) => Number.isInteger(d)),
  );
}

/** pgvector 0.8.0 added hnsw.iterative_scan. */
export function hasIterativeScans(version: string | null): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  return !!m && (Number(m[1]) > 0 || Number(m[2]) >= 8);
}

/**
 * Scopes the ANN pass came back short for (a scope narrow enough that exact search over it is the right plan),
 * keyed by the query's WHERE and its values; forgotten after a while, since scopes grow.
 */
export class NarrowScopes {
  private seen = new Map<string, number>();
  constructor(
    private ttlMs = 5 * 60_000,
    private max = 1000,
  ) {}
  has(key: string, now: number): boolean {
    const t = this.seen.get(key);
    if (t === undefined) return false;
    if (now - t > this.ttlMs) {
      this.seen.delete(key);
      return false;
    }
    return true;
  }
  add(key: string, now: number): void {
    if (this.seen.size >= this.max) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(key, now);
  }
}
